"""The row-at-a-time reference applier: the test oracle of the silver apply.

It follows ../shared/spec/apply-semantics.md rule by rule ("rule N" below): it applies committed
transactions one at a time in commit-SCN order, and the LCRs of a transaction one at a time, to
plain Python dictionaries. Nothing here is fast; everything here should be obviously right. The
engine (set-based, on Delta) must end in the same tables, error queue, counters and watermarks.

It is independent of the package: it imports nothing from ``lakeapply``. Configuration (types,
keys, instantiation SCNs, handlers) is read from the public formats by ./config.py, and values
are converted here (D8); tests/silver/differential.py compares both results as test-owned
canonical values.

Decisions taken where the spec is silent; the code marks each place with its number:

D1  A transaction is committed when its COMMIT has landed; its CSCN is the COMMIT's ``scn``. A
    transaction made only of DDL LCRs that carry ``commit_scn`` is committed at that SCN without a
    COMMIT (lcr-contract, "DDL LCRs"). Row LCRs carrying ``commit_scn`` still wait for their COMMIT.
    A ROLLBACK wins over a COMMIT of the same transaction.
D2  The *messages* of a transaction (the rows of DBA_APPLY_ERROR_MESSAGES, MESSAGE_NUMBER and
    MESSAGE_COUNT) are its row LCRs that pass the rules of rule 2 (source database, destination
    table, tag), in apply order, including those the instantiation SCN then discards. Directives,
    DDL LCRs and LCRs the rules filter out are not messages: Oracle moves "the LCRs in the
    transaction that should be applied according to the apply process rule sets" to the error queue.
D3  Every committed transaction processed ends as exactly one of: an error transaction;
    discarded (at least one message discarded by the instantiation SCN, nothing applied, no
    DDL); ignored (rule 10: only DDL LCRs, each of a kind that changes no column and no row,
    ``NO_CHANGE_DDL``); applied (everything else, including a transaction left empty by the
    rules and another DDL transaction). Discarded and ignored ones are processed and counted as
    applied: rule 11 counts only transactions delivered again as ignored (D14).
D4  ``received`` counts every LCR (row, DDL, directive) of the apply's source databases, open and
    rolled-back transactions included. ``rolled_back`` counts every rolled-back transaction of
    those sources, also when the apply aborted before reaching its SCN.
D5  Checks on one row LCR, in this order: 26687 no instantiation SCN (rule 3); 26688 key column
    absent from the key image (rule 5); 00904 unknown column, old image then new image (rule 6);
    conversions, old image then new image, in LCR order (rule 6); then per command: INSERT:
    defaults, 01400, 00001; UPDATE: 26787, 26786 unless handled, 01407, 00001 when the row moves
    onto an existing key; DELETE: 26787, 26786 (rule 7). A command reads only the images it uses:
    INSERT ``new_values``, DELETE ``old_values``, UPDATE both.
D6  Uniqueness is checked on the effective key only (substitute key, else primary key, else ...):
    other primary/unique keys of the definition are not enforced, and the effective key is unique
    even when it is a substitute or all-columns key (where Oracle itself enforces nothing).
D7  Update conflict handlers: a conflicting column triggers the handler whose column list holds it;
    the handler decides for its whole group. MAXIMUM/MINIMUM take the LCR's values only when the
    LCR's resolution value is strictly greater/smaller than the destination's; equal or NULL on
    either side keeps the destination's values (a SQL comparison that is not TRUE). A
    resolution column found in neither ``new_values`` nor ``old_values`` leaves the conflict
    unresolved (26786). The 26786 message lists every conflicting column.
D8  Conversions (``convert_value``): NUMBER text may have blanks around it and an exponent; a
    JSON number is read through its shortest repr. Unconstrained NUMBER is DECIMAL(38,10), so
    more than 28 integer digits is 01438. BINARY_FLOAT/DOUBLE accept finite numbers only; an
    overflow is 01426. CHAR/NCHAR(n) are blank-padded to n, as Oracle stores them; lengths count
    characters (code points). Numbers into character columns become their plain decimal text.
    DATE/TIMESTAMP: Python's ISO-8601 parser, fractions beyond microseconds truncated; a value with
    an offset keeps its wall-clock time (CAST to TIMESTAMP); bad text is 01858. TIMESTAMP WITH
    (LOCAL) TIME ZONE: a value without an offset is UTC; stored as an aware UTC datetime. INTERVAL
    values are kept as canonical text: YEAR TO MONTH ``+YY-MM``, DAY TO SECOND
    ``+DD HH:MI:SS.FFFFFF`` (Oracle's display format), from Oracle literals (``-1-6``,
    ``2 03:04:05.5``) or ISO-8601 durations (``P1Y6M``, ``-P2DT3H``); bad text is 01867. RAW/BLOB:
    an even number of hex digits, else 01465; RAW(n) longer than n bytes is 12899.
D9  ``initial_rows``: a missing column is NULL (a copy, not an insert: no default); a duplicate
    key or an unknown column or silver table is a ValueError.
D10 DDL LCRs obey the tag rule and the rule sets only (no table rule) and are recorded in
    ``ddl`` when their transaction is applied. Only ``TRUNCATE TABLE`` of a destination table
    (named by the LCR's ``object_owner`` / ``object_name``) changes a table here: every row of
    its silver table goes, unless the transaction committed at or below the table's
    instantiation SCN (rule 3: discarded, so it changes nothing; no SCN set: applied). A TRUNCATE of a table the apply has no destination for changes
    nothing, like the NO_CHANGE_DDL kinds (D3).
D11 LOB pieces (rule 12: LOB WRITE, LOB TRIM, LOB ERASE) read ``new_values`` only: the key
    columns (which row) and exactly one other column, the LOB (which column; for WRITE its value
    is the piece, for TRIM and ERASE it is not read). ``lob_offset`` is 1-based, in characters
    for CLOB/NCLOB and bytes for BLOB; ``lob_operation_size`` is TRIM's new length and ERASE's
    amount (WRITE's amount is the piece). Checks in this order: 26688, 00904, conversions (as
    D5; a BLOB piece is hex, else 01465); 21560 when new_values names no other column or more
    than one; 00932 when that column is not a CLOB, NCLOB or BLOB (LONG included); 26787 when
    the row does not exist; 22275 when the LOB is NULL; 21560 for an offset below 1, a missing
    operand, an empty piece, a TRIM size below 0, an ERASE amount below 1, or a WRITE that
    would end beyond 2^31 - 1 (the longest value a Delta STRING/BINARY holds); 22926 for a TRIM
    beyond the current length. WRITE pads a gap with spaces (CLOB) or zero bytes (BLOB);
    ERASE overwrites with them and never changes the length (past the end it stops at the end).
D12 Malformed input beyond the JSON Schema's reach (a column twice in one image, two COMMITs
    with different SCNs) is a ValueError, not a guess.
D14 Redelivery (rule 11). An LCR is identified by its content (every contract field): a copy of
    an LCR already received for its transaction (a line landed twice, a file landed under two
    names, a transaction resent by a restarted capture) is received but dropped, so it is
    applied at most once. Each COMMIT copy beyond the first of a transaction is one transaction
    seen again: it counts as ``ignored`` (TOTAL_IGNORED) when it is received, whether or not the
    transaction was processed yet, and changes nothing.
D13 Declarative transformations (lakeapply.yml ``transformations``) run on each row LCR of
    their table after the rules, before every check of D5, in their declared order.
D19 Rule transformations (a positive rule's ``transformations``): on a row LCR the rules let
    through, after a subset rule's row migration, the steps of the first positive rule in
    declared order that selects it run in their order: ``rename_schema`` (the LCR's owner
    ``from`` -> ``to``) and ``rename_table`` (``OWNER.TABLE`` ``from`` -> ``to``) change the
    object the LCR names, so the destination it is routed to (an LCR renamed to no destination
    is not a message, like one no table rule routes), and the column steps act as D13's; then
    the destination table's own D13 steps. DDL LCRs are not transformed.

D21 DML handlers (a table's ``dml_handlers``): a row LCR that passed D2, D13/D19, rule 3 (not
    discarded, an instantiation SCN exists) and whose table is not dropped goes to the handlers
    of its operation (INSERT, UPDATE, DELETE; LOB WRITE/TRIM/ERASE are LOB_UPDATE), else to the
    table's DEFAULT handlers, by their registered names (``dml_handlers.py``: this module's own
    row versions; a statement handler's by its handler_name). Each gets the original LCR; what
    each returns is applied in the LCR's place, the procedure handler's first, then the
    statement handlers' by name; None applies nothing (the transaction goes on); an
    ``error_message`` makes the transaction an error transaction failing at that message with
    ORA-20000. The transaction's messages stay the
    LCRs as they were before the handler. Dependencies (D15, D17) are those of the LCRs before
    the handler.

D22 Error handlers (a table's ``error_handlers``): a row LCR of D21 that raises an error (D21's
    ORA-20000 included, and any error an update conflict handler did not resolve; never 26687
    nor 00942, raised before it) goes to the error handler of its operation, else the table's
    DEFAULT error handler, by its registered name (``dml_handlers.py`` ``ROW_ERROR_HANDLERS``),
    as it was before any DML handler, with ``raised_error_number`` and
    ``raised_error_message``, after what the LCR's DML handlers executed before the error is
    rolled back. What it returns is applied in the LCR's place as it is (no DML handler); None
    applies nothing (the transaction goes on); an error it raises, or an ``error_message`` it
    sets (ORA-20000), makes the transaction an error transaction failing at that message.

D23 What a DML or error handler returns may name another table of the apply (a history or
    audit table, as an Oracle handler's SQL writes other tables in the apply's transaction):
    each LCR is executed on the destination of the object it names, the handled table's or
    another's, where that table's instantiation SCN discards it like a captured LCR (its
    absence is 26687); an object with no destination, or a dropped one, is 00942. What one
    message's handlers executed is rolled back together on an error (one savepoint).

D24 Late input (``late_input``, with ``batch_ends``): the apply reads the arrival sequence in
    ingest batches and processes, at the end of each batch, every transaction whose end (D1, D15)
    arrived in it; within a batch a COMMIT that lands before some of its LCRs groups with them.
    Modelled without disable_on_error (no abort; a ValueError) and where every batch's
    transactions are processed in it (no DDL barrier, no pass limit: the differential sees to
    that). Per source database, the low watermark before a batch is the highest CSCN processed
    in the batches before it. *Late COMMIT*: a transaction ended by a COMMIT whose CSCN is below
    the low watermark before its batch is an error transaction, ORA-20002, whatever its LCRs
    would do: its messages (D2), failing at message 1 (0 when it has none); it changes nothing
    and moves no watermark. *Late LCRs*: LCRs of a committed transaction arriving in a batch
    after the one its COMMIT arrived in are not part of it (it was applied or queued without
    them); each such batch's late LCRs that are messages (D2, in their own apply order) are one
    error transaction, ORA-20001, under the transaction's id and CSCN, failing at message 1; it
    has no outcome of its own and counts as an error. A copy of an LCR received before is no
    late LCR (D14). The engine's messages for late input are tested in
    tests/silver/test_late_input.py; without ``late_input`` the differential cuts batches in
    commit order, so that neither occurs.

D16 Column DDL (rule 10), in the narrow grammar the workloads draw (anything else under
    ``ALTER TABLE`` is a ValueError, D12): ``ALTER TABLE o.t ADD (c type)``, ``DROP COLUMN c``,
    ``RENAME COLUMN c TO d``, ``MODIFY (c type)``, ``RENAME TO u`` (the table's new name: a
    live destination of that name already is 00955, else the destination's definition takes
    the name, so later row LCRs route by it; rows unchanged). It changes the destination named by the
    statement's ``o.t`` like a TRUNCATE (D10): no destination, or committed at or below the
    instantiation SCN, and it changes nothing (ignored). Otherwise, in Oracle's order of
    checks: ADD of an existing column 01430, else a new nullable column, NULL in every row;
    DROP of an unknown column 00904, of a key column (the effective key, rule 5) 12991, else
    the column leaves the definition and every row; RENAME of an unknown column 00904, onto an
    existing name 00957, else renamed in the definition and every row; MODIFY of an unknown
    column 00904; to another type: LONG to CLOB/NCLOB and LONG RAW to BLOB applied, to or
    from any other LOB 22858, else 01439 unless every value of the column is NULL; the same
    NUMBER with fewer integer digits or a smaller scale, and the same TIMESTAMP or INTERVAL
    with fewer fractional-second or leading digits, 01440 unless every value is NULL; a
    shorter character or RAW length 01441 when a value of the column is longer; else the new
    type (rows unchanged). The transactions after it are applied under the new
    definition (conversions, unknown columns). A failing DDL makes its transaction an error
    transaction whose messages are its DDL LCRs (the failing one's position, their count).
D17 Virtual dependencies (rule 9, DEPENDENT_TRANSACTIONS; lakeapply.yml
    ``virtual_dependencies``). A message that touches a row (D15) also touches, for each value
    dependency naming its destination object (``OWNER.NAME`` of the definition), the tuple of
    converted values of the dependency's columns in each of its images that carries them all,
    none NULL and every one converting (INSERT: new; DELETE: old; UPDATE: old, and old
    overlaid with new); and, for each object dependency naming its object as child or parent,
    that side of the dependency. Two transactions depend on each other when they touch the
    same row or value tuple, or opposite sides of one object dependency (child with parent,
    never child with child).
D18 DROP TABLE (rule 10) of a destination table (the LCR's ``object_owner`` / ``object_name``)
    committed above its instantiation SCN drops it: its rows and its silver table are gone (not
    in the result's tables or definitions). At or below the SCN, or of a table without a
    destination, it changes nothing (ignored, like a TRUNCATE, D10). After it, every row LCR
    for the table, and any DDL on it (a second DROP TABLE, a TRUNCATE, a column DDL), is 00942:
    its routing rules are still declared, so the LCRs reach a table that does not exist.
D20 CREATE TABLE (rule 10), in the narrow grammar the workloads draw: ``CREATE TABLE o.t (c
    type [NOT NULL], ..., [PRIMARY KEY (c, ...)])``. Of a live destination 00955. Of a table
    with no destination: routed only by a positive rule set (without one, only the declared
    tables are: ignored). Its instantiation SCN (a dropped destination's, else the schema's,
    else the global one): none 26687; committed at or below it, ignored (rule 3). The silver
    table: a dropped destination's, else ``<database>_<owner>_<table>`` in lower case with every
    other character ``_``; one a live destination already writes 00955. The new destination
    (a dropped one keeps what lakeapply.yml declared: keys, handlers, transformations) starts
    empty; later LCRs for it apply.
D15 Commit serialization (rule 9). Without an abort both settings apply one transaction at a
    time in CSCN order (one valid DEPENDENT_TRANSACTIONS schedule): same tables, low = high
    watermark. When a transaction aborts the apply (disable_on_error = Y), FULL processes
    nothing after it. DEPENDENT_TRANSACTIONS walks the later committed transactions in CSCN
    order, each against the state without the held ones: one that touches a row touched by the
    aborting transaction or by an already held one is held; one that fails itself is held too
    (not queued: only the aborting one is in the error queue); the others are processed as
    usual. A transaction touches, per message (D2), its destination table and its key (rule 5
    precedence, after conversion), the old and the new key for an update that moves the row; a
    message without an instantiation SCN, or whose key is missing or does not convert, touches
    nothing (it fails: its transaction is held for that), nor does one the instantiation SCN
    discards (it changes no row). A DDL transaction that is not ignored (D3) is a barrier: it and
    everything after it, on every table, are held. The walk covers only the transactions whose
    end (COMMIT, or last DDL LCR per D1) arrived in the ingest batch of the aborting one's
    COMMIT or before (``batch_ends``; by default one batch): an aborted apply stops reading.
    Held transactions are not processed: no outcome, no counter, the oldest SCN stays at or
    below their first SCN. Per source database, the low watermark is the highest commit SCN
    processed below that source's first held transaction (no gap below it), the high watermark
    the highest commit SCN processed.
"""

from __future__ import annotations

import bisect
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Context, Decimal
from typing import Any

from . import config as kinds
from .config import (
    UNCONSTRAINED_PRECISION,
    UNCONSTRAINED_SCALE,
    ApplyProcess,
    Column,
    ColumnType,
    ConflictHandler,
    Definition,
    Destination,
    definition_from_document,
)
from .config import column_type as kinds_column_type
from .dml_handlers import ROW_ERROR_HANDLERS, ROW_HANDLERS, ROW_STATEMENT_HANDLERS

ROW_COMMANDS = ("INSERT", "UPDATE", "DELETE")
LOB_COMMANDS = ("LOB WRITE", "LOB ERASE", "LOB TRIM")
DIRECTIVES = ("COMMIT", "ROLLBACK")

Key = tuple[Any, ...]
Row = dict[str, Any]
Tables = dict[str, dict[Key, Row]]


class ApplyRowError(Exception):
    """A row LCR cannot be applied: ``error_number`` is the Oracle error (1 for ORA-00001) and
    ``text`` the full message, ``ORA-nnnnn: ...``."""

    def __init__(self, error_number: int, text: str) -> None:
        super().__init__(text)
        self.error_number = error_number
        self.text = text


def _ora(error_number: int, text: str) -> ApplyRowError:
    return ApplyRowError(error_number, f"ORA-{error_number:05d}: {text}")


@dataclass(frozen=True)
class ErrorTransaction:
    """One error transaction (DBA_APPLY_ERROR and its DBA_APPLY_ERROR_MESSAGES)."""

    source_database: str
    source_transaction_id: str
    source_commit_scn: int
    message_number: int  # 1-based position of the failing message (D2)
    error_number: int  # 1 for ORA-00001, 26786 for ORA-26786, ...
    error_message: str  # "ORA-00001: unique constraint (US03.STUDENT) violated, key (...)=(...)"
    message_count: int  # number of messages of the transaction (D2)
    lcrs: tuple[dict[str, Any], ...]  # the messages, in apply order


@dataclass
class ReferenceResult:
    """Everything an apply run leaves behind."""

    tables: Tables  # silver_table -> key tuple -> row {column: python value}
    errors: list[ErrorTransaction]  # in apply (CSCN) order
    applied_transactions: list[tuple[str, str]]  # (source_database, transaction_id)
    counters: dict[str, int]  # received, applied, ignored, rolled_back, errors
    low_watermark: dict[str, int | None]  # per source database
    high_watermark: dict[str, int | None]
    oldest_scn: dict[str, int | None]
    aborted: bool = False  # disable_on_error = Y stopped the apply at an error
    # (source_database, transaction_id) -> (commit SCN, APPLIED | DISCARDED | ERROR), for every
    # committed transaction processed
    outcomes: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    ddl: list[dict[str, Any]] = field(default_factory=list)  # DDL LCRs of applied transactions
    # silver_table -> its definition after the last applied DDL (D16)
    definitions: dict[str, Definition] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Type conversion (rule 6: "convert when the value converts exactly ... when it does not, error")
# --------------------------------------------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_HEX_TEXT = re.compile(r"([0-9A-Fa-f]{2})*")
# Wide enough that parsing and quantizing never round or overflow by themselves.
_DECIMAL_CONTEXT = Context(prec=200, rounding=ROUND_HALF_UP, Emax=MAX_EMAX, Emin=MIN_EMIN)


def convert_value(column: Column, raw: str | int | float | None) -> Any:
    """Convert one LCR value (contract form) to the Python value of the destination column.

    Raises ApplyRowError with the Oracle error when the value does not convert exactly (D8)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise TypeError(f"column {column.name}: {raw!r} is not an LCR value (string or number)")
    kind = column.kind
    if kind == kinds.NUMBER:
        return _to_number(column, raw)
    if kind == kinds.FLOATING:
        return _to_float(column, raw)
    if kind in (kinds.CHARACTER, kinds.TEXT_LOB):
        return _to_character(column, raw)
    if kind in (kinds.DATETIME, kinds.DATETIME_TZ):
        return _to_datetime(column, raw)
    if kind == kinds.YEAR_MONTH:
        return _to_interval_year_to_month(column, raw)
    if kind == kinds.DAY_SECOND:
        return _to_interval_day_to_second(column, raw)
    return _to_binary(column, raw)  # RAW, BLOB, LONG RAW


def _number_text(raw: str | int | float) -> str:
    return raw if isinstance(raw, str) else repr(raw)


def _to_number(column: Column, raw: str | int | float) -> Decimal:
    text = _number_text(raw)
    if not _NUMBER_TEXT.fullmatch(text):
        raise _ora(1722, f"invalid number: column {column.name} value {text!r}")
    value = Decimal(text.strip())
    precision = column.type.precision
    scale = column.type.scale or 0
    if precision is None:  # NUMBER, FLOAT(b): stored as DECIMAL(38,10) (README type mapping)
        precision, scale = UNCONSTRAINED_PRECISION, UNCONSTRAINED_SCALE
    too_large = _ora(
        1438,
        f"value larger than specified precision allowed for this column: column {column.name} "
        f"value {text.strip()!r} (precision {precision}, scale {scale})",
    )
    # At most precision - scale digits before the point; checked before rounding (so that
    # quantize never works on absurd exponents) and after it (9.995 -> 10.00).
    if value != 0 and value.adjusted() >= precision - scale:
        raise too_large
    rounded = value.quantize(Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    if rounded != 0 and rounded.adjusted() >= precision - scale:
        raise too_large
    return rounded.copy_abs() if rounded == 0 else rounded  # no negative zero


def _to_float(column: Column, raw: str | int | float) -> float:
    text = _number_text(raw)
    if not _NUMBER_TEXT.fullmatch(text):
        raise _ora(1722, f"invalid number: column {column.name} value {text!r}")
    value = float(text.strip())
    overflow = _ora(1426, f"numeric overflow: column {column.name} value {text.strip()!r}")
    if column.type.name == "BINARY_FLOAT":  # a 32-bit float, as the Delta FLOAT column
        try:
            value = float(struct.unpack("f", struct.pack("f", value))[0])
        except OverflowError:  # (older Pythons raise; newer ones round to infinity)
            raise overflow from None
    if value in (float("inf"), float("-inf")):
        raise overflow
    return value


def _plain_decimal_text(value: Decimal) -> str:
    """1E+2 -> '100', 1.50 -> '1.5': how Oracle shows a number converted to text."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _to_character(column: Column, raw: str | int | float) -> str:
    text = raw if isinstance(raw, str) else _plain_decimal_text(Decimal(repr(raw)))
    length = column.type.length
    if column.kind == kinds.CHARACTER and length is not None:
        if len(text) > length:
            raise _ora(
                12899,
                f'value too large for column "{column.name}" (actual: {len(text)}, '
                f"maximum: {length})",
            )
        if column.type.name in ("CHAR", "NCHAR"):
            text = text.ljust(length)  # D8: CHAR is blank-padded
    return text


def _to_datetime(column: Column, raw: str | int | float) -> datetime:
    bad = _ora(
        1858,
        "a non-numeric character was found where a numeric was expected: "
        f"column {column.name} value {raw!r} is not an ISO-8601 date/time",
    )
    if not isinstance(raw, str):
        raise bad
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise bad from None
    if column.kind == kinds.DATETIME:
        return value.replace(tzinfo=None)  # D8: wall-clock time, as CAST(... AS TIMESTAMP)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # D8: no offset means UTC
    return value.astimezone(UTC)


_YM_LITERAL = re.compile(r"([+-])?(\d+)-(\d+)")
_YM_ISO = re.compile(r"(-)?P(?=\d)(?:(\d+)Y)?(?:(\d+)M)?")
_DS_LITERAL = re.compile(r"([+-])?(\d+) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?")
_DS_ISO = re.compile(
    r"(-)?P(?=\d|T\d)(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?"
)


def _invalid_interval(column: Column, raw: str | int | float) -> ApplyRowError:
    return _ora(1867, f"the interval is invalid: column {column.name} value {raw!r}")


def _to_interval_year_to_month(column: Column, raw: str | int | float) -> str:
    text = raw.strip() if isinstance(raw, str) else ""
    literal = _YM_LITERAL.fullmatch(text)
    iso = _YM_ISO.fullmatch(text)
    if literal:
        negative = literal.group(1) == "-"
        years, months = int(literal.group(2)), int(literal.group(3))
        if months > 11:
            raise _invalid_interval(column, raw)
    elif iso:
        negative = iso.group(1) == "-"
        total = int(iso.group(2) or 0) * 12 + int(iso.group(3) or 0)
        years, months = divmod(total, 12)
    else:
        raise _invalid_interval(column, raw)
    sign = "-" if negative and (years or months) else "+"
    return f"{sign}{years:02d}-{months:02d}"


def _to_interval_day_to_second(column: Column, raw: str | int | float) -> str:
    text = raw.strip() if isinstance(raw, str) else ""
    literal = _DS_LITERAL.fullmatch(text)
    iso = _DS_ISO.fullmatch(text)
    if literal:
        negative = literal.group(1) == "-"
        days, hours, minutes, seconds = (int(literal.group(i)) for i in range(2, 6))
        fraction = literal.group(6) or ""
        if hours > 23 or minutes > 59 or seconds > 59:
            raise _invalid_interval(column, raw)
    elif iso:
        negative = iso.group(1) == "-"
        days, hours, minutes, seconds = (int(iso.group(i) or 0) for i in range(2, 6))
        fraction = iso.group(6) or ""
    else:
        raise _invalid_interval(column, raw)
    micros = int(fraction[:6].ljust(6, "0"))  # microsecond precision, extra digits truncated
    total = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    days, rest = divmod(total, 86_400 * 1_000_000)
    hours, rest = divmod(rest, 3_600 * 1_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    sign = "-" if negative and total else "+"
    return f"{sign}{days:02d} {hours:02d}:{minutes:02d}:{seconds:02d}.{micros:06d}"


def _to_binary(column: Column, raw: str | int | float) -> bytes:
    if not isinstance(raw, str) or not _HEX_TEXT.fullmatch(raw):
        raise _ora(1465, f"invalid hex number: column {column.name} value {raw!r}")
    value = bytes.fromhex(raw)
    length = column.type.length
    if column.kind == kinds.RAW and length is not None and len(value) > length:
        raise _ora(
            12899,
            f'value too large for column "{column.name}" (actual: {len(value)}, maximum: {length})',
        )
    return value


# --------------------------------------------------------------------------------------------
# Transactions (rules 1 and 4)
# --------------------------------------------------------------------------------------------


@dataclass
class _Transaction:
    source_database: str
    transaction_id: str
    lcrs: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (arrival, LCR)
    first_scn: int | None = None  # the smallest scn of any of its LCRs
    commit_scns: set[int] = field(default_factory=set)  # scn of its COMMIT(s)
    rolled_back: bool = False
    redeliveries: int = 0  # COMMIT copies beyond the first (D14)
    end_arrival: int | None = None  # arrival of its first COMMIT (D15)

    @property
    def commit_scn(self) -> int | None:
        """The CSCN, or None while the transaction is open or when it rolled back (D1)."""
        if self.rolled_back:
            return None
        if len(self.commit_scns) > 1:
            raise ValueError(
                f"transaction {self.source_database}/{self.transaction_id}: COMMITs at "
                f"different SCNs {sorted(self.commit_scns)}"
            )
        if self.commit_scns:
            return next(iter(self.commit_scns))
        # D1: a DDL-only transaction whose LCRs carry their commit_scn needs no COMMIT.
        ddl_commit_scns: set[int | None] = {lcr.get("commit_scn") for _, lcr in self.lcrs}
        if not self.lcrs or not all(_is_ddl(lcr) for _, lcr in self.lcrs):
            return None
        if len(ddl_commit_scns) > 1:
            raise ValueError(
                f"transaction {self.source_database}/{self.transaction_id}: DDL LCRs with "
                f"different commit_scn {ddl_commit_scns}"
            )
        return ddl_commit_scns.pop()

    @property
    def ended_at(self) -> int:
        """Arrival of its end: its first COMMIT, or its last LCR for a DDL-only one (D1, D15)."""
        if self.end_arrival is not None:
            return self.end_arrival
        return max(arrival for arrival, _ in self.lcrs)

    def lcrs_passing(self, settings: ApplyProcess) -> list[dict[str, Any]]:
        """Its LCRs that pass the rules (rule 2), in apply order."""
        return [
            lcr for lcr in self.ordered_lcrs() if _passes_rules(settings, self.source_database, lcr)
        ]

    def ordered_lcrs(self) -> list[dict[str, Any]]:
        """Rule 4: within a transaction, LCRs in (scn, position, arrival) order."""
        ordered = sorted(
            self.lcrs, key=lambda item: (item[1]["scn"], item[1].get("position") or "", item[0])
        )
        return [lcr for _, lcr in ordered]


def _is_ddl(lcr: dict[str, Any]) -> bool:
    return lcr["command_type"] not in ROW_COMMANDS + LOB_COMMANDS + DIRECTIVES


def _group_transactions(
    settings: ApplyProcess, lcrs: Iterable[dict[str, Any]]
) -> tuple[list[_Transaction], int]:
    """Rule 1: group the apply's LCRs by (source database, transaction id). Returns the
    transactions (in first-arrival order) and the number of LCRs received (D4)."""
    transactions: dict[tuple[str, str], _Transaction] = {}
    received = 0
    distinct: dict[tuple[str, str], list[dict[str, Any]]] = {}  # per transaction (D14)
    for arrival, lcr in enumerate(lcrs):
        database = lcr["source_database_name"]
        if database not in settings.source_databases:
            continue  # another apply's source: never received by this one
        received += 1
        key = (database, lcr["transaction_id"])
        transaction = transactions.setdefault(key, _Transaction(*key))
        seen = distinct.setdefault(key, [])
        if lcr in seen:
            # D14: a copy; a COMMIT copy is the transaction seen again.
            transaction.redeliveries += lcr["command_type"] == "COMMIT"
            continue
        seen.append(lcr)
        scn: int = lcr["scn"]
        transaction.first_scn = (
            scn if transaction.first_scn is None else min(transaction.first_scn, scn)
        )
        if lcr["command_type"] == "COMMIT":
            transaction.commit_scns.add(scn)
            if transaction.end_arrival is None:
                transaction.end_arrival = arrival
        elif lcr["command_type"] == "ROLLBACK":
            transaction.rolled_back = True
        else:
            transaction.lcrs.append((arrival, lcr))
    return list(transactions.values()), received


# --------------------------------------------------------------------------------------------
# The apply
# --------------------------------------------------------------------------------------------


def reference_apply(
    settings: ApplyProcess,
    lcrs: Iterable[dict[str, Any]],
    initial_rows: Mapping[str, Iterable[dict[str, Any]]] | None = None,
    batch_ends: Sequence[int] = (),
    late_input: bool = False,
) -> ReferenceResult:
    """Apply ``lcrs`` (contract dicts, in arrival order) to destination tables that start with
    ``initial_rows`` (silver table -> rows, raw LCR text or Python values), as one apply run.
    ``batch_ends``: arrival positions where ingest batches end (exclusive), read by a
    DEPENDENT_TRANSACTIONS abort (D15) and, with ``late_input``, to find late input (D24)."""
    transactions, received = _group_transactions(settings, lcrs)
    late_lcrs: list[ErrorTransaction] = []
    late_commits: set[tuple[str, str]] = set()
    if late_input:
        if settings.disable_on_error:
            raise ValueError("late input (D24) is modelled without disable_on_error")
        late_lcrs = _late_lcr_errors(settings, transactions, batch_ends)
        late_commits = _late_commits(transactions, batch_ends)
    databases = settings.source_databases
    result = ReferenceResult(
        tables=_initial_tables(settings, initial_rows or {}),
        errors=[],
        applied_transactions=[],
        counters={
            "received": received,
            "applied": 0,
            "ignored": sum(t.redeliveries for t in transactions),  # D14
            "rolled_back": sum(1 for t in transactions if t.rolled_back),  # D4
            "errors": 0,
        },
        low_watermark=dict.fromkeys(databases),
        high_watermark=dict.fromkeys(databases),
        oldest_scn=dict.fromkeys(databases),
    )
    # Rule 1: only committed transactions; rule 4: one by one in CSCN order.
    committed = sorted(
        (t for t in transactions if t.commit_scn is not None),
        key=lambda t: (t.commit_scn, t.source_database, t.transaction_id),
    )
    not_fully_applied = [t for t in transactions if not t.rolled_back and t.commit_scn is None]
    dependent = settings.commit_serialization == "DEPENDENT_TRANSACTIONS"
    for index, transaction in enumerate(committed):
        if (transaction.source_database, transaction.transaction_id) in late_commits:
            _record(result, transaction, _late_commit_error(settings, transaction))  # D24
            continue  # below the low watermark already: it moves no watermark
        outcome = _apply_transaction(settings, result.tables, transaction)
        if isinstance(outcome, _Applied):
            settings = outcome.settings  # D16: the next transactions see its column DDL
        assert transaction.commit_scn is not None
        if isinstance(outcome, ErrorTransaction) and settings.disable_on_error:
            # Rule 9: the aborting transaction is processed (queued; below the watermark).
            _record(result, transaction, outcome)
            result.aborted = True
            result.low_watermark[transaction.source_database] = transaction.commit_scn
            result.high_watermark[transaction.source_database] = transaction.commit_scn
            later = committed[index + 1 :]
            if dependent:
                later = _dependent_walk(settings, result, transaction, later, batch_ends)
            # FULL: nothing after it is processed; DEPENDENT: the held ones are not.
            not_fully_applied += later
            break
        _record(result, transaction, outcome)
        # Rule 9, FULL: applied transactions are a prefix of CSCN order, low = high watermark.
        result.low_watermark[transaction.source_database] = transaction.commit_scn
        result.high_watermark[transaction.source_database] = transaction.commit_scn
    for late in late_lcrs:  # D24: error transactions of their own, no outcome
        result.errors.append(late)
        result.counters["errors"] += 1
    for table in settings.tables:
        if not table.dropped:  # D18: a dropped table has no definition left
            result.definitions.setdefault(table.silver_table, table.definition)
    # Rule 9: oldest SCN = the earliest SCN of transactions not yet processed (open ones, and
    # after an abort everything committed after the failing one).
    for transaction in not_fully_applied:
        database, first_scn = transaction.source_database, transaction.first_scn
        assert first_scn is not None
        oldest = result.oldest_scn[database]
        result.oldest_scn[database] = first_scn if oldest is None else min(oldest, first_scn)
    return result


def _batch_of(arrival: int, batch_ends: Sequence[int]) -> int:
    """The ingest batch (0-based) an arrival position lands in (D24)."""
    return bisect.bisect_right(sorted(batch_ends), arrival)


def _late_lcr_errors(
    settings: ApplyProcess, transactions: list[_Transaction], batch_ends: Sequence[int]
) -> list[ErrorTransaction]:
    """D24: takes the late LCRs out of their committed transactions; returns one ORA-20001
    error transaction per transaction and batch of late LCRs that holds messages."""
    errors: list[ErrorTransaction] = []
    for transaction in transactions:
        commit_scn = transaction.commit_scn
        if commit_scn is None or transaction.end_arrival is None:
            continue  # open, rolled back, or ended by its DDL (no COMMIT to come before them)
        ended_in = _batch_of(transaction.end_arrival, batch_ends)
        late_by_batch: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        for arrival, lcr in transaction.lcrs:
            if _batch_of(arrival, batch_ends) > ended_in:
                late_by_batch.setdefault(_batch_of(arrival, batch_ends), []).append((arrival, lcr))
        late = {arrival for pieces in late_by_batch.values() for arrival, _ in pieces}
        transaction.lcrs = [(a, lcr) for a, lcr in transaction.lcrs if a not in late]
        for batch in sorted(late_by_batch):
            pieces = sorted(
                late_by_batch[batch],
                key=lambda item: (item[1]["scn"], item[1].get("position") or "", item[0]),
            )
            database = transaction.source_database
            messages = [
                _message(settings, database, lcr)
                for _, lcr in pieces
                if not _is_ddl(lcr) and _passes_rules(settings, database, lcr)
            ]
            if messages:
                errors.append(
                    ErrorTransaction(
                        source_database=database,
                        source_transaction_id=transaction.transaction_id,
                        source_commit_scn=commit_scn,
                        message_number=1,
                        error_number=20001,
                        error_message=f"ORA-20001: late LCRs of {transaction.transaction_id}",
                        message_count=len(messages),
                        lcrs=tuple(messages),
                    )
                )
    return errors


def _late_commits(
    transactions: list[_Transaction], batch_ends: Sequence[int]
) -> set[tuple[str, str]]:
    """D24: the transactions ended by a COMMIT below the low watermark before its batch."""
    by_batch: dict[int, list[_Transaction]] = {}
    for transaction in transactions:
        if transaction.commit_scn is not None:
            by_batch.setdefault(_batch_of(transaction.ended_at, batch_ends), []).append(transaction)
    watermark: dict[str, int] = {}
    late: set[tuple[str, str]] = set()
    for batch in sorted(by_batch):
        processed: dict[str, int] = {}
        for transaction in by_batch[batch]:
            database, commit_scn = transaction.source_database, transaction.commit_scn
            assert commit_scn is not None
            if transaction.end_arrival is not None and commit_scn < watermark.get(
                database, commit_scn
            ):
                late.add((database, transaction.transaction_id))
            else:
                processed[database] = max(processed.get(database, commit_scn), commit_scn)
        for database, highest in processed.items():
            watermark[database] = max(watermark.get(database, highest), highest)
    return late


def _late_commit_error(settings: ApplyProcess, transaction: _Transaction) -> ErrorTransaction:
    """D24: a late COMMIT's transaction, queued with ORA-20002 whatever its LCRs would do."""
    database = transaction.source_database
    assert transaction.commit_scn is not None
    messages = [
        _message(settings, database, lcr)
        for lcr in transaction.lcrs_passing(settings)
        if not _is_ddl(lcr)
    ]
    return ErrorTransaction(
        source_database=database,
        source_transaction_id=transaction.transaction_id,
        source_commit_scn=transaction.commit_scn,
        message_number=1 if messages else 0,
        error_number=20002,
        error_message=f"ORA-20002: late COMMIT of {transaction.transaction_id}",
        message_count=len(messages),
        lcrs=tuple(messages),
    )


def _record(
    result: ReferenceResult, transaction: _Transaction, outcome: _Applied | ErrorTransaction
) -> None:
    """One committed transaction processed: its outcome, counters, tables and DDL."""
    assert transaction.commit_scn is not None
    result.outcomes[(transaction.source_database, transaction.transaction_id)] = (
        transaction.commit_scn,
        "ERROR"
        if isinstance(outcome, ErrorTransaction)
        else "DISCARDED"
        if outcome.discarded
        else "IGNORED"
        if outcome.ignored
        else "APPLIED",
    )
    if isinstance(outcome, ErrorTransaction):
        # Rule 8: none of it is applied (its staged tables are dropped); it goes to the queue.
        result.errors.append(outcome)
        result.counters["errors"] += 1
    elif outcome.discarded:
        result.counters["applied"] += 1  # D3: processed, not ignored
    else:
        result.tables = outcome.tables
        result.counters["applied"] += 1
        result.applied_transactions.append(
            (transaction.source_database, transaction.transaction_id)
        )
        result.ddl += outcome.ddl


def _dependent_walk(
    settings: ApplyProcess,
    result: ReferenceResult,
    aborting: _Transaction,
    later: list[_Transaction],
    batch_ends: Sequence[int],
) -> list[_Transaction]:
    """D15: after ``aborting`` stopped a DEPENDENT_TRANSACTIONS apply, process the ``later``
    transactions (CSCN order) that do not depend on it; returns the held ones."""
    # The apply stops reading at the end of the batch its aborting COMMIT arrived in.
    batch = bisect.bisect_right(sorted(batch_ends), aborting.ended_at)
    horizon = sorted(batch_ends)[batch] if batch < len(batch_ends) else None
    touched = _touches(settings, aborting)
    held: list[_Transaction] = []
    for position, transaction in enumerate(later):
        if (horizon is not None and transaction.ended_at >= horizon) or _is_barrier(
            settings, transaction
        ):
            return held + later[position:]  # not received yet, or a DDL barrier (rule 9)
        touches = _touches(settings, transaction)
        outcome = (
            None
            if _depends(touches, touched)
            else _apply_transaction(settings, result.tables, transaction)
        )
        if outcome is None or isinstance(outcome, ErrorTransaction):
            held.append(transaction)
            touched |= touches
            continue
        _record(result, transaction, outcome)
        assert transaction.commit_scn is not None
        source = transaction.source_database
        high = result.high_watermark[source]
        result.high_watermark[source] = max(high or 0, transaction.commit_scn)
        if not any(h.source_database == source for h in held):
            result.low_watermark[source] = transaction.commit_scn  # no gap below it
    return held


def _is_barrier(settings: ApplyProcess, transaction: _Transaction) -> bool:
    """Rule 9: a DDL transaction that is not ignored (D3)."""
    ddl = [lcr for lcr in transaction.lcrs_passing(settings) if _is_ddl(lcr)]
    return any(_ddl_changes(settings, transaction, lcr) for lcr in ddl)


def _truncated(
    settings: ApplyProcess, transaction: _Transaction, lcr: dict[str, Any]
) -> Destination | None:
    """D10: the destination a TRUNCATE TABLE empties (None: not a TRUNCATE, no destination, or
    committed at or below the table's instantiation SCN)."""
    if lcr["command_type"] != "TRUNCATE TABLE":
        return None
    database, owner, name = transaction.source_database, lcr["object_owner"], lcr["object_name"]
    instantiation_scn = settings.instantiation_scn(database, owner, name)
    assert transaction.commit_scn is not None
    if instantiation_scn is not None and transaction.commit_scn <= instantiation_scn:
        return None  # rule 3: discarded like any LCR of the table at or below it
    return settings.destination(database, owner, name)


def _dropped(
    settings: ApplyProcess, transaction: _Transaction, lcr: dict[str, Any]
) -> Destination | None:
    """D18: the destination a DROP TABLE drops (None: not a DROP TABLE, no destination, or
    committed at or below the table's instantiation SCN)."""
    if lcr["command_type"] != "DROP TABLE":
        return None
    database, owner, name = transaction.source_database, lcr["object_owner"], lcr["object_name"]
    instantiation_scn = settings.instantiation_scn(database, owner, name)
    assert transaction.commit_scn is not None
    if instantiation_scn is not None and transaction.commit_scn <= instantiation_scn:
        return None
    return settings.destination(database, owner, name)


def _ddl_changes(settings: ApplyProcess, transaction: _Transaction, lcr: dict[str, Any]) -> bool:
    """D3, D10: whether a DDL LCR changes a column or a row (else the DDL is ignored)."""
    if lcr["command_type"] == "TRUNCATE TABLE":
        return _truncated(settings, transaction, lcr) is not None
    if lcr["command_type"] == "DROP TABLE":
        return _dropped(settings, transaction, lcr) is not None
    if lcr["command_type"] in ALTERING:
        return _altered(settings, transaction, lcr) is not None
    if lcr["command_type"] == "CREATE TABLE":
        try:
            return _created(settings, transaction, lcr) is not None
        except ApplyRowError:
            return True  # it fails: an error transaction
    return lcr["command_type"] not in NO_CHANGE_DDL


def _touches(settings: ApplyProcess, transaction: _Transaction) -> set[tuple[Any, ...]]:
    """D15: (silver table, key) of every row a transaction's messages address."""
    touched: set[tuple[Any, ...]] = set()
    database = transaction.source_database
    for lcr in transaction.lcrs_passing(settings):
        if _is_ddl(lcr):
            continue
        message = _message(settings, database, lcr)
        table = settings.destination(database, message["object_owner"], message["object_name"])
        assert table is not None
        instantiation_scn = settings.instantiation_scn(
            database, message["object_owner"], message["object_name"]
        )
        assert transaction.commit_scn is not None
        if instantiation_scn is None or transaction.commit_scn <= instantiation_scn:
            continue  # rule 3: it fails, or it is discarded; either way it changes no row
        if table.dropped:
            continue  # D18: it fails (00942)
        command = message["command_type"]
        images = (
            ["old_values", "new_values"]
            if command == "UPDATE"
            else ["old_values"]
            if command == "DELETE"
            else ["new_values"]
        )
        key = _key_of(table, message.get(images[0]) or [])
        if key is not None:
            touched |= _virtual_touches(settings, table, message)
            touched.add((table.silver_table, key))
            if command == "UPDATE":
                # Rule 5: the row moves to its new key (key columns absent from new_values keep
                # their old value).
                moved = _key_of(
                    table, (message.get("new_values") or []) + (message.get("old_values") or [])
                )
                if moved is not None:
                    touched.add((table.silver_table, moved))
    return touched


def _depends(touches: set[tuple[Any, ...]], touched: set[tuple[Any, ...]]) -> bool:
    """D15, D17: a shared row or value tuple, or the other side of an object dependency."""
    shared = {t for t in touches & touched if t[0] != "object dependency"}
    sides = {(t[1], t[2]) for t in touched if t[0] == "object dependency"}
    return bool(shared) or any(
        t[0] == "object dependency" and (t[1], "PARENT" if t[2] == "CHILD" else "CHILD") in sides
        for t in touches
    )


def _virtual_touches(
    settings: ApplyProcess, table: Destination, message: dict[str, Any]
) -> set[tuple[Any, ...]]:
    """D17: the value tuples and object-dependency sides a message that touches a row adds."""
    found: set[tuple[Any, ...]] = set()
    definition = table.definition
    obj = f"{definition.owner}.{definition.name}"
    for number, dependency in enumerate(settings.object_dependencies):
        for side, named in (("CHILD", dependency["object"]), ("PARENT", dependency["parent"])):
            if named == obj:
                found.add(("object dependency", number, side))
    old = {v["column_name"]: v["value"] for v in message.get("old_values") or []}
    new = {v["column_name"]: v["value"] for v in message.get("new_values") or []}
    images = {"INSERT": [new], "DELETE": [old], "UPDATE": [old, {**old, **new}]}
    for dependency in settings.value_dependencies:
        if dependency["object"] != obj:
            continue
        for image in images.get(message["command_type"], []):
            try:
                values = tuple(
                    convert_value(definition.column(c), image[c]) for c in dependency["columns"]
                )
            except (KeyError, StopIteration, ApplyRowError):
                continue  # a column absent from the image, or a value that does not convert
            if None not in values:
                found.add(("value dependency", dependency["name"], values))
    return found


def _key_of(table: Destination, image: list[dict[str, Any]]) -> Key | None:
    """The converted key values of an image (the first value of each key column wins), or None
    when a key column is absent or does not convert."""
    values = []
    for name in table.key:
        value = next((v for v in image if v["column_name"] == name), None)
        if value is None or name not in table.definition.column_names:
            return None
        try:
            values.append(convert_value(table.definition.column(name), value["value"]))
        except ApplyRowError:
            return None
    return tuple(values)


@dataclass
class _Applied:
    tables: Tables
    discarded: bool
    ddl: list[dict[str, Any]]
    settings: ApplyProcess  # after its column DDL (D16): what later transactions apply under
    ignored: bool = False  # D3: a DDL transaction that changes nothing


# D3, rule 10: DDL command types that change no column and no row of a table.
NO_CHANGE_DDL = frozenset(
    {"COMMENT", "GRANT", "REVOKE", "CREATE INDEX", "DROP INDEX", "ALTER INDEX", "ANALYZE"}
)


def _passes_rules(settings: ApplyProcess, database: str, lcr: dict[str, Any]) -> bool:
    """Rule 2: the tag rule and the rule sets, then the table rules (a row LCR needs a
    destination table)."""
    if not settings.passes_rules(lcr):
        return False
    if _is_ddl(lcr):
        return True  # D10
    routed = _rule_transformed(settings, settings.migrated(lcr))  # D19: renames route it
    return settings.destination(database, routed["object_owner"], routed["object_name"]) is not None


def _apply_transaction(
    settings: ApplyProcess, tables: Tables, transaction: _Transaction
) -> _Applied | ErrorTransaction:
    """Apply one committed transaction to a copy of ``tables``: the copy, or the error."""
    database = transaction.source_database
    commit_scn = transaction.commit_scn
    assert commit_scn is not None
    passed = [lcr for lcr in transaction.ordered_lcrs() if _passes_rules(settings, database, lcr)]
    # D2; rule 6: subset rules migrate UPDATEs, then the selecting rule's transformations
    # (D19) and each table's (D13) run on its row LCRs after the rules.
    messages = [_message(settings, database, lcr) for lcr in passed if not _is_ddl(lcr)]
    ddl = [lcr for lcr in passed if _is_ddl(lcr)]
    # Copy-on-write: rows are never changed in place, so copying each table's dict is enough.
    staged = {name: dict(rows) for name, rows in tables.items()}
    discarded = applied = 0
    for number, lcr in enumerate(messages, start=1):
        table = settings.destination(database, lcr["object_owner"], lcr["object_name"])
        assert table is not None  # rule 2 let it through
        try:
            # Rule 3: instantiation SCN (table, else schema, else global level).
            instantiation_scn = settings.instantiation_scn(
                database, lcr["object_owner"], lcr["object_name"]
            )
            if instantiation_scn is None:
                raise _ora(
                    26687,
                    f'no instantiation SCN provided for "{lcr["object_owner"]}".'
                    f'"{lcr["object_name"]}" in source database "{database}"',
                )
            if commit_scn <= instantiation_scn:
                discarded += 1  # already contained in the initial copy
                continue
            if table.dropped:
                raise _no_such_table(table)
            if not (table.dml_handlers or table.error_handlers):
                _apply_row_lcr(table, staged[table.silver_table], lcr)
                applied += 1
                continue
            # A savepoint before the LCR: what its handlers executed before an error is
            # rolled back before the error handler (D22) gets the LCR.
            savepoint = _Savepoint(staged)
            message = {**lcr, "message_number": number}
            try:
                for executed in _handled(table, message):  # D21: the table's DML handlers
                    _execute(settings, database, commit_scn, table, savepoint, executed)  # D23
            except ApplyRowError as error:
                savepoint = _Savepoint(staged)
                replacement = _error_handled(table, message, error)  # D22
                for executed in replacement:
                    _execute(settings, database, commit_scn, table, savepoint, executed)
            staged.update(savepoint.changed)
            applied += 1
        except ApplyRowError as error:
            # Rule 8: the first failing LCR makes the whole transaction an error transaction.
            return ErrorTransaction(
                source_database=database,
                source_transaction_id=transaction.transaction_id,
                source_commit_scn=commit_scn,
                message_number=number,
                error_number=error.error_number,
                error_message=error.text,
                message_count=len(messages),
                lcrs=tuple(messages),
            )
    ignored = (
        bool(ddl) and not messages and not any(_ddl_changes(settings, transaction, d) for d in ddl)
    )
    for number, lcr in enumerate(ddl, start=1):
        try:
            settings = _drop_or_truncate(settings, staged, transaction, lcr)
            settings = _alter_table(settings, staged, transaction, lcr)
            settings = _create_table(settings, staged, transaction, lcr)
        except ApplyRowError as error:
            # D16: the DDL LCRs are the messages of a failing DDL transaction.
            return ErrorTransaction(
                source_database=database,
                source_transaction_id=transaction.transaction_id,
                source_commit_scn=commit_scn,
                message_number=number,
                error_number=error.error_number,
                error_message=error.text,
                message_count=len(ddl),
                lcrs=tuple(ddl),
            )
    return _Applied(
        staged,
        discarded=discarded > 0 and applied == 0 and not ddl,
        ddl=ddl,
        settings=settings,
        ignored=ignored,
    )


class _Savepoint:
    """The tables a handled message changed, copied on first change (rolled back by dropping)."""

    def __init__(self, staged: Tables) -> None:
        self.staged = staged
        self.changed: Tables = {}

    def rows(self, silver_table: str) -> dict[Key, Row]:
        if silver_table not in self.changed:
            self.changed[silver_table] = dict(self.staged[silver_table])
        return self.changed[silver_table]


def _execute(
    settings: ApplyProcess,
    database: str,
    commit_scn: int,
    handled: Destination,
    savepoint: _Savepoint,
    lcr: dict[str, Any],
) -> None:
    """D23: an LCR a handler returned, on the destination of the object it names (the handled
    table's, or another table of the apply: a history table); that table's instantiation SCN
    discards it as any other LCR; no destination, or a dropped one, is 00942."""
    owner, name = lcr["object_owner"], lcr["object_name"]
    target = (
        handled
        if (owner, name) == (handled.definition.owner, handled.definition.name)
        else settings.destination(database, owner, name)
    )
    if target is None or target.dropped:
        raise _ora(942, f'table or view does not exist: "{owner}"."{name}"')
    if target is not handled:
        instantiation_scn = settings.instantiation_scn(database, owner, name)
        if instantiation_scn is None:
            raise _ora(26687, f'no instantiation SCN provided for "{owner}"."{name}"')
        if commit_scn <= instantiation_scn:
            return
    _apply_row_lcr(target, savepoint.rows(target.silver_table), lcr)


def _handled(table: Destination, lcr: dict[str, Any]) -> list[dict[str, Any]]:
    """D21: the LCRs to execute in place of ``lcr``: itself without a handler, else what each
    of its operation's handlers returns for it, in their order (None: nothing)."""
    handlers = table.dml_handlers_for(lcr["command_type"])
    if not handlers:
        return [lcr]
    executed: list[dict[str, Any]] = []
    for handler in handlers:
        if "statement" in handler:
            name = handler.get("handler_name")
            row_version = ROW_STATEMENT_HANDLERS.get(name or "")
        else:
            name = handler.get("user_procedure")
            row_version = ROW_HANDLERS.get(name or "")
        if row_version is None:
            raise ValueError(f"the reference has no row version of DML handler {handler}")  # D12
        for result in _as_list(row_version(dict(lcr))):
            if result.get("error_message") is not None:
                raise _ora(20000, str(result["error_message"]))
            executed.append(result)
    return executed


def _as_list(returned: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """What a row handler returned: nothing, one LCR, or several (D23: other tables too)."""
    if returned is None:
        return []
    return returned if isinstance(returned, list) else [returned]


def _error_handled(
    table: Destination, lcr: dict[str, Any], error: ApplyRowError
) -> list[dict[str, Any]]:
    """D22: the table's error handler of the LCR's operation gets the LCR as it was before any
    DML handler, with the error; what it returns is executed as it is (no DML handler), nothing
    executes nothing. Without a handler, for 26687 or 00942 (D23: a handler's LCR naming a
    table the apply cannot write), or when what it returns carries an ``error_message``, the
    error stands."""
    handler = table.error_handler(lcr["command_type"])
    if handler is None or error.error_number in (26687, 942):
        raise error
    procedure = handler["user_procedure"]
    if procedure not in ROW_ERROR_HANDLERS:
        raise ValueError(f"the reference has no row version of error handler {handler}")  # D12
    executed = _as_list(
        ROW_ERROR_HANDLERS[procedure](
            {**lcr, "raised_error_number": error.error_number, "raised_error_message": error.text}
        )
    )
    for result in executed:
        if result.get("error_message") is not None:
            raise _ora(20000, str(result["error_message"]))
    return executed


def _no_such_table(table: Destination) -> ApplyRowError:
    return _ora(942, f"table or view does not exist: {table.definition.qualified_name}")


def _drop_or_truncate(
    settings: ApplyProcess, staged: Tables, transaction: _Transaction, lcr: dict[str, Any]
) -> ApplyProcess:
    """D10, D18: a TRUNCATE TABLE empties its destination's rows, a DROP TABLE drops them and
    marks the destination dropped (``staged`` in place); either on a dropped table is 00942."""
    target = _truncated(settings, transaction, lcr) or _dropped(settings, transaction, lcr)
    if target is None:
        return settings
    if target.dropped:
        raise _no_such_table(target)
    if lcr["command_type"] == "TRUNCATE TABLE":
        staged[target.silver_table] = {}
        return settings
    del staged[target.silver_table]
    gone = replace(target, dropped=True)
    return replace(settings, tables=tuple(gone if t is target else t for t in settings.tables))


# D20: the CREATE TABLE the workloads draw.
_CREATE_STATEMENT = re.compile(r"CREATE TABLE (\w+)\.(\w+) \((.*)\)", re.DOTALL)
_CREATED_COLUMN = re.compile(r"(\w+) (.+?)( NOT NULL)?")
_PRIMARY_KEY = re.compile(r"PRIMARY KEY \(([\w, ]+)\)")


def _top_level_parts(body: str) -> list[str]:
    """The comma-separated parts of a column list, commas inside parentheses kept."""
    parts, depth, current = [], 0, ""
    for character in body:
        depth += {"(": 1, ")": -1}.get(character, 0)
        if character == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += character
    return [*parts, current.strip()]


def _created_definition(ddl_text: str) -> Definition:
    """D20: the definition a CREATE TABLE statement gives its table."""
    match = _CREATE_STATEMENT.fullmatch(ddl_text.strip())
    if match is None:
        raise ValueError(f"reference: a CREATE TABLE it does not model: {ddl_text!r}")
    owner, name, body = match.groups()
    columns: list[dict[str, Any]] = []
    primary_key: list[str] = []
    for part in _top_level_parts(body):
        key = _PRIMARY_KEY.fullmatch(part)
        column = _CREATED_COLUMN.fullmatch(part)
        if key is not None:
            primary_key = [c.strip() for c in key.group(1).split(",")]
        elif column is not None:
            columns.append({"name": column[1], "type": column[2], "nullable": column[3] is None})
        else:
            raise ValueError(f"reference: a CREATE TABLE part it does not model: {part!r}")
    document = {"owner": owner, "name": name, "columns": columns}
    return definition_from_document(
        {**document, "primary_key": primary_key} if primary_key else document
    )


def _created(
    settings: ApplyProcess, transaction: _Transaction, lcr: dict[str, Any]
) -> Destination | None:
    """D20: the destination a CREATE TABLE makes (None: not routed, or committed at or below
    its instantiation SCN); raises 00955 or 26687."""
    definition = _created_definition(lcr["ddl_text"])
    database, owner, name = transaction.source_database, definition.owner, definition.name
    where = f'"{owner}"."{name}" from {database}'
    existing = settings.destination(database, owner, name)
    if existing is not None and not existing.dropped:
        raise _ora(955, f"name is already used by an existing object: {where}")
    if existing is None and settings.positive_rules is None:
        return None
    instantiation_scn = settings.instantiation_scn(database, owner, name)
    if instantiation_scn is None:
        raise _ora(26687, f"no instantiation SCN provided for {where}")
    assert transaction.commit_scn is not None
    if transaction.commit_scn <= instantiation_scn:
        return None
    if existing is not None:
        return replace(existing, definition=definition, dropped=False)
    silver = re.sub(r"[^a-z0-9_]", "_", f"{database}_{owner}_{name}".lower())
    return Destination(database, definition, silver)


def _create_table(
    settings: ApplyProcess, staged: Tables, transaction: _Transaction, lcr: dict[str, Any]
) -> ApplyProcess:
    """D20: a CREATE TABLE adds (or makes again) its destination, empty (``staged`` in place)."""
    if lcr["command_type"] != "CREATE TABLE":
        return settings
    created = _created(settings, transaction, lcr)
    if created is None:
        return settings
    if any(t.silver_table == created.silver_table and not t.dropped for t in settings.tables):
        raise _ora(
            955,
            f"name is already used by an existing object: silver table {created.silver_table}",
        )
    staged[created.silver_table] = {}
    others = tuple(
        t
        for t in settings.tables
        if (t.source_database, t.definition.owner, t.definition.name)
        != (created.source_database, created.definition.owner, created.definition.name)
    )
    return replace(settings, tables=(*others, created))


# D16: the column DDL the workloads draw, one statement per LCR.
_ALTER_STATEMENTS = (
    re.compile(r"ALTER TABLE (\w+)\.(\w+) (ADD|MODIFY) \((\w+) (\w+(?:\(\d+(?:,\d+)?\))?)\)"),
    re.compile(r"ALTER TABLE (\w+)\.(\w+) (DROP) COLUMN (\w+)()"),
    re.compile(r"ALTER TABLE (\w+)\.(\w+) (RENAME) COLUMN (\w+) TO (\w+)"),
    re.compile(r"ALTER TABLE (\w+)\.(\w+) (RENAME TO) (\w+)()"),  # the table's new name
)


ALTERING = ("ALTER TABLE", "RENAME")
_RENAME = re.compile(r"RENAME (\w+) TO (\w+)", re.IGNORECASE)


def _alter_text(lcr: dict[str, Any]) -> str:
    """D16: Oracle's ``RENAME t TO u`` renames a table of the LCR's schema (the session's own):
    the same as ``ALTER TABLE owner.t RENAME TO u``."""
    if lcr["command_type"] != "RENAME":
        return str(lcr["ddl_text"])
    match = _RENAME.fullmatch(lcr["ddl_text"].strip())
    if match is None:
        raise ValueError(f"reference: a RENAME it does not model: {lcr['ddl_text']!r}")
    old, new = (name.upper() for name in match.groups())
    return f"ALTER TABLE {lcr['object_owner']}.{old} RENAME TO {new}"


def _alter_statement(ddl_text: str) -> tuple[str, str, str, str, str]:
    """(owner, table, ADD | MODIFY | DROP | RENAME, column, type or new name) (D16, D12)."""
    for pattern in _ALTER_STATEMENTS:
        match = pattern.fullmatch(ddl_text.strip())
        if match:
            owner, table, action, column, argument = match.groups()
            return owner, table, action, column, argument
    raise ValueError(f"reference: an ALTER TABLE it does not model: {ddl_text!r}")


def _altered(
    settings: ApplyProcess, transaction: _Transaction, lcr: dict[str, Any]
) -> Destination | None:
    """D16: the destination an ALTER TABLE changes (None: no destination, or committed at or
    below its instantiation SCN)."""
    owner, table, *_ = _alter_statement(_alter_text(lcr))
    database = transaction.source_database
    instantiation_scn = settings.instantiation_scn(database, owner, table)
    assert transaction.commit_scn is not None
    if instantiation_scn is not None and transaction.commit_scn <= instantiation_scn:
        return None
    return settings.destination(database, owner, table)


def _alter_table(
    settings: ApplyProcess, staged: Tables, transaction: _Transaction, lcr: dict[str, Any]
) -> ApplyProcess:
    """D16: one column DDL applied to the destination's definition and rows (``staged``, in
    place); returns the settings with the new definition."""
    if lcr["command_type"] not in ALTERING:
        return settings
    destination = _altered(settings, transaction, lcr)
    if destination is None:
        return settings
    if destination.dropped:
        raise _no_such_table(destination)
    _, _, action, column, argument = _alter_statement(_alter_text(lcr))
    definition = destination.definition
    names = definition.column_names
    where = f"table {definition.qualified_name}"
    if action == "RENAME TO":  # ``column`` is the new table name
        taken = settings.destination(transaction.source_database, definition.owner, column)
        if taken is not None and not taken.dropped:
            raise _ora(955, f"name is already used by an existing object: {column}")
        renamed = replace(destination, definition=replace(definition, name=column))
        return replace(
            settings, tables=tuple(renamed if t is destination else t for t in settings.tables)
        )
    if action == "ADD" and column in names:
        raise _ora(1430, f"column being added already exists in {where}: {column}")
    if action != "ADD" and column not in names:
        raise _ora(904, f'"{column}": invalid identifier ({where})')
    rows = staged[destination.silver_table]
    if action == "ADD":
        columns = (*definition.columns, Column(column, kinds_column_type(argument)))
        staged[destination.silver_table] = {k: {**row, column: None} for k, row in rows.items()}
    elif action == "DROP":
        if column in destination.key:
            raise _ora(12991, f"column {column} is a key column of {where}")
        columns = tuple(c for c in definition.columns if c.name != column)
        staged[destination.silver_table] = {
            k: {name: value for name, value in row.items() if name != column}
            for k, row in rows.items()
        }
    elif action == "RENAME":
        if argument in names:
            raise _ora(957, f"duplicate column name {argument} in {where}")
        columns = tuple(
            Column(argument, c.type, c.nullable, c.default) if c.name == column else c
            for c in definition.columns
        )
        staged[destination.silver_table] = {
            k: {(argument if name == column else name): value for name, value in row.items()}
            for k, row in rows.items()
        }
    else:  # MODIFY
        old, new = definition.column(column).type, kinds_column_type(argument)
        _check_modify(old, new, column, rows)
        if new.name in ("CHAR", "NCHAR") and old.name != new.name and new.length is not None:
            staged[destination.silver_table] = {  # D8: a CHAR is stored blank-padded
                k: {**row, column: None if row[column] is None else row[column].ljust(new.length)}
                for k, row in rows.items()
            }
        columns = tuple(
            Column(c.name, new, c.nullable, c.default) if c.name == column else c
            for c in definition.columns
        )
    changed = replace(destination, definition=replace(definition, columns=columns))
    return replace(
        settings, tables=tuple(changed if t is destination else t for t in settings.tables)
    )


_LONG_TO_LOB = {("LONG", "CLOB"), ("LONG", "NCLOB"), ("LONG RAW", "BLOB")}


def _check_modify(old: ColumnType, new: ColumnType, column: str, rows: dict[Key, Row]) -> None:
    """D16: MODIFY (column new) as Oracle checks it against the stored values. Another type:
    LONG to a LOB is converted; to or from a LOB otherwise 22858; else the column must be empty
    (every value NULL) or 01439, but CHAR <-> VARCHAR2 (NCHAR <-> NVARCHAR2) of the same size
    keeps its values, and DATE -> TIMESTAMP keeps them. The same NUMBER with fewer integer
    digits or a smaller scale, the same TIMESTAMP or INTERVAL with fewer fractional or leading
    digits: empty, or 01440. The same character or RAW type, shorter: every value fits, or
    01441."""
    values = [row[column] for row in rows.values() if row[column] is not None]
    if {old.name, new.name} in ({"CHAR", "VARCHAR2"}, {"NCHAR", "NVARCHAR2"}):
        if old.length == new.length or not values:
            return  # the same size: the values stay (a CHAR's padded by the caller)
        raise _ora(1439, f"column to be modified must be empty to change datatype: {column}")
    if (old.name, old.kind) != (new.name, new.kind):
        if (old.name, new.name) in _LONG_TO_LOB or (old.name, new.name) == ("DATE", "TIMESTAMP"):
            return  # converted: a DATE is a TIMESTAMP with no fraction
        if old.kind in kinds.LOB_KINDS or new.kind in kinds.LOB_KINDS:
            raise _ora(22858, f"invalid alteration of datatype: {column}")
        if values:
            raise _ora(1439, f"column to be modified must be empty to change datatype: {column}")
    elif old.kind == kinds.NUMBER:
        if values and not _number_keeps_every_digit(old, new):
            raise _ora(
                1440,
                f"column to be modified must be empty to decrease precision or scale: {column}",
            )
    elif old.kind in _DATETIMES_WITH_DIGITS:
        fewer_fraction_digits = new.fraction_digits < old.fraction_digits
        if values and (fewer_fraction_digits or new.leading_digits < old.leading_digits):
            raise _ora(
                1440,
                "column to be modified must be empty to decrease fractional second or leading "
                f"field precision: {column}",
            )
    elif new.length is not None and any(len(value) > new.length for value in values):
        raise _ora(1441, f"cannot decrease column length because some value is too big: {column}")


_DATETIMES_WITH_DIGITS = (kinds.DATETIME, kinds.DATETIME_TZ, kinds.YEAR_MONTH, kinds.DAY_SECOND)


def _number_keeps_every_digit(old: ColumnType, new: ColumnType) -> bool:
    """D16: integer digits and scale that do not shrink (an unconstrained NUMBER stays
    unconstrained)."""
    if old.precision is None or new.precision is None:
        return new.precision is None
    assert old.scale is not None and new.scale is not None
    return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale


def _message(settings: ApplyProcess, database: str, lcr: dict[str, Any]) -> dict[str, Any]:
    """A row LCR that passed the rules as its transaction's message (D2): subset rules' row
    migration (rule 2), the selecting rule's transformations (D19), then its table's (D13)."""
    return _transformed(settings, database, _rule_transformed(settings, settings.migrated(lcr)))


def _rule_transformed(settings: ApplyProcess, lcr: dict[str, Any]) -> dict[str, Any]:
    """D19: the transformations of the positive rule that selects the row LCR, in their
    declared order: RENAME_SCHEMA / RENAME_TABLE change the LCR's object (so where it is
    routed), the column steps act as D13's."""
    rule = settings.selecting_rule(lcr)
    steps = rule.get("transformations", ()) if rule is not None else ()
    if not steps:
        return lcr
    lcr = dict(lcr)
    for step in steps:
        if "rename_schema" in step:
            if lcr["object_owner"] == step["rename_schema"]["from"]:
                lcr["object_owner"] = step["rename_schema"]["to"]
        elif "rename_table" in step:
            if f"{lcr['object_owner']}.{lcr['object_name']}" == step["rename_table"]["from"]:
                lcr["object_owner"], lcr["object_name"] = step["rename_table"]["to"].split(".")
        else:
            lcr = _column_step(step, lcr)
    return lcr


def _transformed(settings: ApplyProcess, database: str, lcr: dict[str, Any]) -> dict[str, Any]:
    """D13: a table's declarative transformations, step by step, on a copy of the LCR."""
    table = settings.destination(database, lcr["object_owner"], lcr["object_name"])
    if table is None or not table.transformations:
        return lcr
    for step in table.transformations:
        lcr = _column_step(step, lcr)
    return lcr


def _column_step(step: Mapping[str, Any], lcr: dict[str, Any]) -> dict[str, Any]:
    """D13: one column step on a copy of the LCR. A step acts on old values, new values or both
    (``value_type``: OLD, NEW, *; ADD COLUMN defaults to NEW, the others to both); ADD COLUMN
    only on the images its command has, replacing a value the LCR already has for the column;
    constants only (expressions are the engine's)."""
    lcr = dict(lcr)
    images = {"old_values": "OLD", "new_values": "NEW"}
    acts_on = step.get("value_type", "NEW" if "add_column" in step else "*")
    for image, name in images.items():
        if acts_on not in (name, "*"):
            continue
        values = [dict(v) for v in lcr.get(image) or []]
        if "delete_column" in step:
            values = [v for v in values if v["column_name"] != step["delete_column"]]
        elif "keep_columns" in step:
            values = [v for v in values if v["column_name"] in step["keep_columns"]]
        elif "rename_column" in step:
            rename = step["rename_column"]
            for v in values:
                if v["column_name"] == rename["from"]:
                    v["column_name"] = rename["to"]
        else:
            add = step["add_column"]
            has_image = lcr["command_type"] in (
                ("INSERT", "UPDATE") if image == "new_values" else ("UPDATE", "DELETE")
            )
            if not has_image:
                continue
            values = [v for v in values if v["column_name"] != add["column"]]
            values.append(
                {
                    "column_name": add["column"],
                    "data_type": add.get("data_type", "VARCHAR2"),
                    "value": add.get("value"),
                }
            )
        if image in lcr or values:
            lcr[image] = values
    return lcr


# --------------------------------------------------------------------------------------------
# One row LCR (rules 5, 6 and 7)
# --------------------------------------------------------------------------------------------


def _image(lcr: dict[str, Any], name: str) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = lcr.get(name) or []
    names = [value["column_name"] for value in values]
    if len(set(names)) != len(names):
        raise ValueError(f"LCR {name} name a column twice: {names}")  # D12
    return values


def _key_text(columns: tuple[str, ...], *images: list[dict[str, Any]]) -> str:
    """``(A, B)=(1, x)`` from the LCR's raw values: the first image holding each column wins."""
    values = []
    for column in columns:
        raw = next(
            (v["value"] for image in images for v in image if v["column_name"] == column), None
        )
        values.append("NULL" if raw is None else str(raw))
    return f"({', '.join(columns)})=({', '.join(values)})"


def _apply_row_lcr(table: Destination, rows: dict[Key, Row], lcr: dict[str, Any]) -> None:
    """Apply one row LCR to ``rows`` (one destination table), or raise ApplyRowError."""
    command = lcr["command_type"]
    definition = table.definition
    key_columns = table.key
    old_image = _image(lcr, "old_values") if command in ("UPDATE", "DELETE") else []  # D5
    new_image = _image(lcr, "new_values") if command != "DELETE" else []  # D5, D11
    key_image = old_image if command in ("UPDATE", "DELETE") else new_image
    where = f"table {definition.qualified_name}, key {_key_text(key_columns, key_image)}"

    # Rule 5: every key column needs a value: INSERT from new_values, UPDATE/DELETE from old.
    for column in key_columns:
        if not any(value["column_name"] == column for value in key_image):
            raise _ora(26688, f"missing key in LCR: column {column} of {definition.qualified_name}")
    # Rule 6: an LCR column the destination lacks.
    for value in old_image + new_image:
        if value["column_name"] not in definition.column_names:
            raise _ora(904, f'"{value["column_name"]}": invalid identifier, {where}')
    # Rule 6: datatype conversion, before any key is compared (design-notes 4).
    old = _convert_image(definition, old_image, where)
    new = _convert_image(definition, new_image, where)

    if command == "INSERT":
        _insert(table, rows, new, key_image)
    elif command == "UPDATE":
        _update(table, rows, old, new, old_image, new_image)
    elif command == "DELETE":
        _delete(table, rows, old, old_image)
    else:
        _lob_piece(table, rows, lcr, new, key_image)


LONGEST_LOB = 2**31 - 1  # D11


def _lob_piece(
    table: Destination,
    rows: dict[Key, Row],
    lcr: dict[str, Any],
    new: dict[str, Any],
    key_image: list[dict[str, Any]],
) -> None:
    """Rule 12 (D11): one LOB WRITE, TRIM or ERASE on one LOB column of an existing row."""
    command = lcr["command_type"]
    definition = table.definition
    where = f"key {_key_text(table.key, key_image)}"
    others = [name for name in new if name not in table.key]
    if len(others) != 1:
        raise _ora(
            21560,
            f"argument new_values is null, invalid, or out of range: {command} needs one LOB "
            f"column, got {others}, {where}",
        )
    column = definition.column(others[0])
    if column.type.name not in ("CLOB", "NCLOB", "BLOB"):
        raise _ora(
            932,
            f"inconsistent datatypes: expected CLOB, NCLOB or BLOB got {column.type.name}, {where}",
        )
    key = tuple(new[name] for name in table.key)
    if key not in rows:
        raise _ora(
            26787, f"The row with {where} does not exist in table {definition.qualified_name}"
        )
    value = rows[key][column.name]
    if value is None:
        raise _ora(22275, f"invalid LOB locator specified, {where}")
    offset, size = lcr.get("lob_offset"), lcr.get("lob_operation_size")

    def out_of_range(argument: str) -> ApplyRowError:
        return _ora(21560, f"argument {argument} is null, invalid, or out of range, {where}")

    blank = b"\x00" if column.kind == kinds.BINARY_LOB else " "
    if command == "LOB WRITE":
        piece = new[column.name]
        if offset is None or offset < 1:
            raise out_of_range("offset")
        if not piece:
            raise out_of_range("amount")
        if offset - 1 + len(piece) > LONGEST_LOB:
            raise out_of_range("offset")
        if len(value) < offset - 1:
            value = value + blank * (offset - 1 - len(value))
        value = value[: offset - 1] + piece + value[offset - 1 + len(piece) :]
    elif command == "LOB TRIM":
        if size is None or size < 0:
            raise out_of_range("newlen")
        if size > len(value):
            raise _ora(
                22926, f"specified trim length is greater than current LOB value's length, {where}"
            )
        value = value[:size]
    else:  # LOB ERASE
        if offset is None or offset < 1:
            raise out_of_range("offset")
        if size is None or size < 1:
            raise out_of_range("amount")
        for position in range(offset - 1, min(offset - 1 + size, len(value))):
            value = value[:position] + blank + value[position + 1 :]
    rows[key] = {**rows[key], column.name: value}


def _convert_image(
    definition: Definition, image: list[dict[str, Any]], where: str
) -> dict[str, Any]:
    converted = {}
    for value in image:
        column = definition.column(value["column_name"])
        try:
            converted[column.name] = convert_value(column, value["value"])
        except ApplyRowError as error:
            raise ApplyRowError(error.error_number, f"{error.text}, {where}") from None
    return converted


def _insert(
    table: Destination,
    rows: dict[Key, Row],
    new: dict[str, Any],
    key_image: list[dict[str, Any]],
) -> None:
    definition = table.definition
    key_columns = table.key
    where = f"key {_key_text(key_columns, key_image)}"
    # Rule 6: a destination column the LCR lacks gets its declared default, else NULL.
    row: Row = {}
    for column in definition.columns:
        if column.name in new:
            row[column.name] = new[column.name]
        elif column.default is not None:
            row[column.name] = convert_value(column, column.default)
        else:
            row[column.name] = None
    # Rule 6: NULL into NOT NULL.
    for column in definition.columns:
        if not column.nullable and row[column.name] is None:
            raise _ora(
                1400,
                f'cannot insert NULL into ("{definition.owner}"."{definition.name}".'
                f'"{column.name}"), {where}',
            )
    # Rule 7: uniqueness conflict.
    key = tuple(row[column] for column in key_columns)
    if key in rows:
        raise _ora(1, f"unique constraint ({definition.qualified_name}) violated, {where}")
    rows[key] = row


def _conflicting_columns(
    table: Destination, operation: str, current: Row, old: dict[str, Any]
) -> list[str]:
    """Rule 7: the non-key old values sent in the LCR that differ (NULL-safely) from the current
    row, except the columns whose comparison is switched off for this operation."""
    conflicting = []
    for column, old_value in old.items():
        if column in table.key:
            continue
        if not table.compares(column, operation):
            continue
        if old_value != current[column]:
            conflicting.append(column)
    return conflicting


def _conflict(definition: Definition, where: str, conflicting: list[str]) -> ApplyRowError:
    return _ora(
        26786,
        f"A row with {where} exists but has conflicting column(s) {', '.join(conflicting)} "
        f"in table {definition.qualified_name}",
    )


def _update(
    table: Destination,
    rows: dict[Key, Row],
    old: dict[str, Any],
    new: dict[str, Any],
    old_image: list[dict[str, Any]],
    new_image: list[dict[str, Any]],
) -> None:
    definition = table.definition
    key_columns = table.key
    where = f"key {_key_text(key_columns, old_image)}"
    old_key = tuple(old[column] for column in key_columns)
    # Rule 7: the row must exist ...
    current = rows.get(old_key)
    if current is None:
        raise _ora(
            26787,
            f"The row with {where} does not exist in table {definition.qualified_name}",
        )
    # ... and its compared old values must match, unless update conflict handlers resolve it:
    # every conflicting column must belong to a handler's column group.
    conflicting = _conflicting_columns(table, "UPDATE", current, old)
    handlers: list[ConflictHandler] = []
    for column in conflicting:
        handler = table.handler_for(column)
        if handler is None:
            raise _conflict(definition, where, conflicting)
        if handler not in handlers:
            handlers.append(handler)
    handled = {column for handler in handlers for column in handler.columns}
    written: dict[str, Any] = {}  # the columns this update writes, and their values
    for column, value in new.items():
        if column not in handled:
            written[column] = value  # no conflict in its group: applied normally
    for handler in handlers:
        lcr_wins = _lcr_wins(handler, current, old, new)
        if lcr_wins is None:  # D7: no resolution value
            raise _conflict(definition, where, conflicting)
        if lcr_wins:
            for column in handler.columns:
                if column in new:
                    written[column] = new[column]
        # else: the destination keeps its values for the whole group
    # Rule 6: NOT NULL columns cannot be set to NULL.
    for column_name, value in written.items():
        if value is None and not definition.column(column_name).nullable:
            raise _ora(
                1407,
                f'cannot update ("{definition.owner}"."{definition.name}".'
                f'"{column_name}") to NULL, {where}',
            )
    # Rule 5: an update may change the key: the row moves to its new key.
    new_row = {**current, **written}
    new_key = tuple(new_row[column] for column in key_columns)
    if new_key != old_key and new_key in rows:
        raise _ora(
            1,
            f"unique constraint ({definition.qualified_name}) violated, "
            f"key {_key_text(key_columns, new_image, old_image)}",
        )
    del rows[old_key]
    rows[new_key] = new_row


def _lcr_wins(
    handler: ConflictHandler, current: Row, old: dict[str, Any], new: dict[str, Any]
) -> bool | None:
    """Whether a prebuilt update conflict handler takes the LCR's values for its column group;
    None when it cannot decide (D7)."""
    if handler.method == "OVERWRITE":
        return True
    if handler.method == "DISCARD":
        return False
    column = handler.resolution_column
    if column in new:
        candidate = new[column]
    elif column in old:
        candidate = old[column]
    else:
        return None
    destination = current[column]
    if candidate is None or destination is None:
        return False  # D7: a comparison with NULL is not TRUE
    if handler.method == "MAXIMUM":
        return bool(candidate > destination)
    return bool(candidate < destination)  # MINIMUM


def _delete(
    table: Destination,
    rows: dict[Key, Row],
    old: dict[str, Any],
    old_image: list[dict[str, Any]],
) -> None:
    definition = table.definition
    where = f"key {_key_text(table.key, old_image)}"
    key = tuple(old[column] for column in table.key)
    # Rule 7: the row must exist and its compared old values match; no handler for deletes.
    current = rows.get(key)
    if current is None:
        raise _ora(
            26787,
            f"The row with {where} does not exist in table {definition.qualified_name}",
        )
    conflicting = _conflicting_columns(table, "DELETE", current, old)
    if conflicting:
        raise _conflict(definition, where, conflicting)
    del rows[key]


# --------------------------------------------------------------------------------------------
# Instantiation: the initial copy
# --------------------------------------------------------------------------------------------


def _initial_value(column: Column, value: Any) -> Any:
    """An initial-copy value: raw LCR text/numbers are converted; Python values are normalised
    the same way (Decimal through its text, aware datetimes to UTC, naive ones kept)."""
    if value is None or isinstance(value, str | int | float):  # (a bool is refused there)
        return convert_value(column, value)
    if isinstance(value, Decimal):
        return convert_value(column, str(value))
    if isinstance(value, datetime):
        if column.kind == kinds.DATETIME_TZ:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None)
    if isinstance(value, bytes):
        return convert_value(column, value.hex())
    raise TypeError(f"column {column.name}: unsupported initial value {value!r}")


def _initial_tables(
    settings: ApplyProcess, initial_rows: Mapping[str, Iterable[dict[str, Any]]]
) -> Tables:
    """Every silver table of the settings, loaded with its initial copy (D9)."""
    tables: Tables = {}
    destination: dict[str, Destination] = {}
    for table in settings.tables:
        tables.setdefault(table.silver_table, {})
        destination.setdefault(table.silver_table, table)
    for silver_table, rows in initial_rows.items():
        if silver_table not in destination:
            raise ValueError(f"initial rows for {silver_table!r}, which no destination table has")
        table = destination[silver_table]
        definition = table.definition
        for given in rows:
            unknown = set(given) - set(definition.column_names)
            if unknown:
                raise ValueError(
                    f"initial row of {silver_table}: unknown column(s) {sorted(unknown)}"
                )
            row = {c.name: _initial_value(c, given.get(c.name)) for c in definition.columns}
            key = tuple(row[column] for column in table.key)
            if key in tables[silver_table]:
                raise ValueError(f"initial rows of {silver_table}: duplicate key {key}")
            tables[silver_table][key] = row
    return tables
