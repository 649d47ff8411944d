"""Source transactions as contract-valid LCRs: a fluent builder for tests.

.. code-block:: python

    from lakeapply.testing import txn

    changes = (
        txn(source="ORCL", scn=100)
        .insert("HR.EMP", ID=1, NAME="Ann", SAL=100)
        .update("HR.EMP", old={"ID": 1, "SAL": 100}, new={"SAL": 120})
        .delete("HR.EMP", ID=1, NAME="Ann", SAL=120)
        .commit()
    )  # SCNs 100, 101, 102; COMMIT at 103

Every LCR is checked against the LCR contract's JSON Schema when it is emitted: the schema
:func:`lakeapply.contract.lcr.lcr_json_schema` builds, which ``make schemas`` writes to
``schemas/lcr.schema.json`` (a test keeps the two identical; the wheel ships that file too).

Transactions end with :meth:`~TransactionBuilder.commit` or :meth:`~TransactionBuilder.rollback`;
:meth:`~TransactionBuilder.open` takes the LCRs added so far without an end (land them, apply, and
commit the same builder later: the apply keeps them in its spill meanwhile).

Row LCRs (INSERT, UPDATE, DELETE), piecewise LOB LCRs (:meth:`~TransactionBuilder.lob_write`,
:meth:`~TransactionBuilder.lob_trim`, :meth:`~TransactionBuilder.lob_erase`) and COMMIT/ROLLBACK.
DDL LCRs (:meth:`~TransactionBuilder.ddl`) are built as the contract describes them (a DDL is its
own transaction: end it with ``commit()``); the engine keeps them in bronze and counts them but does
not apply them to silver yet (README: "What is not built yet").

SCNs: a transaction started with ``scn=N`` numbers its LCRs N, N+1, ... and its COMMIT gets the
next one. Without ``scn`` the transaction draws SCNs from a shared :class:`ScnClock` at the moment
each LCR is added, so transactions built side by side interleave the way their calls do. Every
method also takes ``scn=`` for an exact value. ``position`` is the SCN and a per-clock sequence
number, zero-padded (increasing with the calls).

Oracle data types, per column, first match wins: a :func:`typed` value, the call's ``types``, the
transaction's ``types`` (``{"HR.EMP": {"HIRED": "DATE"}}``), the table definition (``tables=``:
table definitions or apply settings), else the Python type (``int``/``Decimal``/``float``/``bool``
-> NUMBER, ``str`` -> VARCHAR2, ``datetime`` -> TIMESTAMP, ``date`` -> DATE, ``bytes`` -> RAW,
``timedelta`` -> INTERVAL DAY TO SECOND, ``None`` -> VARCHAR2).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema

from lakeapply.contract.lcr import lcr_json_schema
from lakeapply.contract.oracle_types import LCR_DATA_TYPES, TypeFamily, parse_oracle_type
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.errors import ConfigurationError
from lakeapply.silver.settings import ApplySettings, DestinationTable

__all__ = [
    "DEFAULT_SOURCE",
    "InvalidLcrError",
    "ScnClock",
    "Transaction",
    "TransactionBuilder",
    "Typed",
    "oracle_data_type",
    "txn",
    "typed",
    "validate_lcr",
    "write_jsonl",
]

DEFAULT_SOURCE = "ORCL"
# Source times are derived from SCNs (one second per SCN from this instant) unless given.
SOURCE_TIME_EPOCH = datetime(2026, 1, 1)

LcrDict = dict[str, Any]
TypesByColumn = Mapping[str, str]
TransactionState = Literal["COMMITTED", "ROLLED_BACK", "OPEN"]
# Where the builder finds declared column types: an apply process, or tables of one.
TableSource = (
    ApplySettings
    | TableDefinition
    | DestinationTable
    | Iterable[TableDefinition | DestinationTable]
)


class InvalidLcrError(ValueError):
    """An LCR the builder produced (or was given) does not satisfy the LCR contract."""


@cache
def _lcr_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(lcr_json_schema())


def validate_lcr(lcr: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidLcrError` naming the field when ``lcr`` breaks the contract."""
    errors = sorted(
        _lcr_validator().iter_errors(dict(lcr)), key=lambda e: [str(p) for p in e.absolute_path]
    )
    if errors:
        error = errors[0]
        where = "/".join(str(part) for part in error.absolute_path) or "(record)"
        raise InvalidLcrError(f"LCR {where}: {error.message}: {json.dumps(lcr, default=str)}")


@dataclass(frozen=True)
class Typed:
    """A value with an explicit Oracle data type (``typed("CLOB", "...")``)."""

    data_type: str
    value: Any


def typed(data_type: str, value: Any) -> Typed:
    """``value`` sent as Oracle type ``data_type`` (e.g. ``NVARCHAR2``, ``DATE``, ``BLOB``)."""
    return Typed(oracle_data_type(data_type), value)


# The conversion family of each LCR data type name. parse_oracle_type reads column types, in which
# VARCHAR2 and RAW need a length; an LCR names the bare type.
_FAMILY_OF_LCR_TYPE: dict[str, TypeFamily] = {
    **dict.fromkeys(("VARCHAR2", "NVARCHAR2", "CHAR", "NCHAR", "UROWID"), TypeFamily.CHARACTER),
    "NUMBER": TypeFamily.NUMBER,
    **dict.fromkeys(("BINARY_FLOAT", "BINARY_DOUBLE"), TypeFamily.FLOAT),
    **dict.fromkeys(("DATE", "TIMESTAMP"), TypeFamily.DATETIME),
    **dict.fromkeys(
        ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE"), TypeFamily.DATETIME_TZ
    ),
    "INTERVAL YEAR TO MONTH": TypeFamily.INTERVAL_YM,
    "INTERVAL DAY TO SECOND": TypeFamily.INTERVAL_DS,
    "RAW": TypeFamily.BINARY,
    **dict.fromkeys(("LONG RAW", "BLOB"), TypeFamily.LOB_BINARY),
    **dict.fromkeys(("LONG", "CLOB", "NCLOB"), TypeFamily.LOB_CHARACTER),
}
if set(_FAMILY_OF_LCR_TYPE) != set(LCR_DATA_TYPES):  # the contract grew a type: map it here
    raise RuntimeError(
        f"LCR data types without a family: {set(LCR_DATA_TYPES) ^ set(_FAMILY_OF_LCR_TYPE)}"
    )


def oracle_data_type(type_text: str) -> str:
    """The LCR ``data_type`` of an Oracle type: an LCR type name as it is (``RAW``,
    ``VARCHAR2``), a column type reduced to it (``VARCHAR2(30)`` -> ``VARCHAR2``,
    ``NUMBER(10,2)``/``FLOAT``/``INTEGER`` -> ``NUMBER``)."""
    normalized = " ".join(type_text.upper().split())
    if normalized in _FAMILY_OF_LCR_TYPE:
        return normalized
    try:
        parsed = parse_oracle_type(type_text)
    except ConfigurationError as error:
        raise InvalidLcrError(f"{type_text!r} has no LCR data type: {error}") from error
    if parsed.name in _FAMILY_OF_LCR_TYPE:
        return parsed.name
    if parsed.family is TypeFamily.NUMBER:
        return "NUMBER"
    raise InvalidLcrError(f"{type_text!r} has no LCR data type (one of {list(LCR_DATA_TYPES)})")


def _inferred_data_type(value: Any) -> str:
    if isinstance(value, bool | int | Decimal | float):
        return "NUMBER"
    if isinstance(value, datetime):
        return "TIMESTAMP"
    if isinstance(value, date):
        return "DATE"
    if isinstance(value, bytes | bytearray):
        return "RAW"
    if isinstance(value, timedelta):
        return "INTERVAL DAY TO SECOND"
    return "VARCHAR2"  # str, and None when nothing else says


def _interval_text(value: timedelta) -> str:
    sign = "-" if value < timedelta(0) else "+"
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{value.days} {hours:02d}:{minutes:02d}:{seconds:02d}.{value.microseconds:06d}"


def _number_text(value: Any, data_type: str) -> str:
    """Exact decimal text (the contract never sends a float's binary approximation)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        value = Decimal(repr(value))  # repr is the shortest text that reads back as this float
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int):
        return str(value)
    raise InvalidLcrError(f"cannot send {value!r} ({type(value).__name__}) as {data_type}")


def _value_text(data_type: str, value: Any) -> str | None:
    """The contract form of ``value`` as ``data_type``: strings, exact decimal text for numbers,
    ISO-8601 for dates and times, hex for binary types. A ``str`` is passed through as written."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    family = _FAMILY_OF_LCR_TYPE[data_type]
    if family in (TypeFamily.NUMBER, TypeFamily.FLOAT):
        return _number_text(value, data_type)
    if family in (TypeFamily.DATETIME, TypeFamily.DATETIME_TZ):
        if isinstance(value, datetime):
            return value.isoformat()
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day).isoformat()
    if family is TypeFamily.INTERVAL_DS and isinstance(value, timedelta):
        return _interval_text(value)
    if family in (TypeFamily.BINARY, TypeFamily.LOB_BINARY) and isinstance(
        value, bytes | bytearray
    ):
        return bytes(value).hex().upper()
    if isinstance(value, int | Decimal | float):  # a number in a character column, say
        return _number_text(value, data_type)
    raise InvalidLcrError(f"cannot send {value!r} ({type(value).__name__}) as {data_type}")


class ScnClock:
    """Hands out increasing SCNs, positions and transaction ids (one per test, or shared)."""

    def __init__(self, start: int = 1000) -> None:
        self.last_scn = start - 1
        self._positions = itertools.count(1)
        self._transactions = itertools.count(1)

    def tick(self) -> int:
        self.last_scn += 1
        return self.last_scn

    def observe(self, scn: int) -> None:
        """An SCN was given explicitly: later automatic SCNs come after it."""
        self.last_scn = max(self.last_scn, scn)

    def position(self, scn: int) -> str:
        return f"{scn:020d}{next(self._positions):08d}"

    def transaction_id(self) -> str:
        return f"1.{next(self._transactions)}.1"


DEFAULT_CLOCK = ScnClock()


@dataclass(frozen=True)
class Transaction:
    """The LCRs of one source transaction (or the part of it emitted by one call of
    :meth:`TransactionBuilder.open`), in capture order, with how it ended."""

    source: str
    transaction_id: str
    state: TransactionState
    lcrs: tuple[LcrDict, ...]
    commit_scn: int | None = None

    def __iter__(self) -> Iterator[LcrDict]:
        return iter(self.lcrs)

    def __len__(self) -> int:
        return len(self.lcrs)

    def to_jsonl(self) -> str:
        return "".join(json.dumps(lcr) + "\n" for lcr in self.lcrs)


LcrSource = Transaction | Mapping[str, Any] | Iterable["LcrSource"]


def flatten(items: Iterable[LcrSource]) -> list[LcrDict]:
    """Transactions, LCR dicts and (nested) iterables of them -> LCR dicts in order."""
    found: list[LcrDict] = []
    for item in items:
        if isinstance(item, Transaction):
            found.extend(item.lcrs)
        elif isinstance(item, Mapping):
            found.append(dict(item))
        else:
            found.extend(flatten(item))
    return found


def write_jsonl(path: Path, *items: LcrSource) -> Path:
    """Write LCRs as one JSON Lines landing file (validated); returns ``path``."""
    lcrs = flatten(items)
    for lcr in lcrs:
        validate_lcr(lcr)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(lcr) + "\n" for lcr in lcrs))
    return path


def _definitions(tables: TableSource | None) -> dict[tuple[str, str], TableDefinition]:
    """Table definitions by (owner, name): the first one declared for an object wins, as in
    :meth:`ApplySettings.table_for`."""
    if tables is None:
        return {}
    if isinstance(tables, ApplySettings):
        tables = tables.tables
    if isinstance(tables, TableDefinition | DestinationTable):
        tables = [tables]
    found: dict[tuple[str, str], TableDefinition] = {}
    for table in tables:
        definition = table.definition if isinstance(table, DestinationTable) else table
        if not isinstance(definition, TableDefinition):
            raise TypeError(f"not a table definition or destination table: {table!r}")
        found.setdefault((definition.owner, definition.name), definition)
    return found


def _split_object(table: str) -> tuple[str, str]:
    owner, dot, name = table.partition(".")
    if not dot or not owner or not name:
        raise InvalidLcrError(f"table {table!r} must be written OWNER.NAME")
    return owner, name


@dataclass
class TransactionBuilder:
    """Builds one source transaction; see the module docstring. Use :func:`txn`."""

    source: str = DEFAULT_SOURCE
    scn: int | None = None
    transaction_id: str | None = None
    clock: ScnClock = field(default_factory=lambda: DEFAULT_CLOCK)
    tables: TableSource | None = None  # declared column types
    types: Mapping[str, TypesByColumn] | None = None  # {"HR.EMP": {"HIRED": "DATE"}}
    tag: str | None = None
    source_time: datetime | str | None = None  # of every LCR; default: derived from the SCN
    attributes: Mapping[str, Any] | None = None  # extra fields of every row LCR (username, ...)
    commit_scn_on_records: bool = False  # GoldenGate style: every LCR carries commit_scn

    def __post_init__(self) -> None:
        self._definitions = _definitions(self.tables)
        self._local_scn = None if self.scn is None else self.scn - 1
        if self.transaction_id is None:
            self.transaction_id = self.clock.transaction_id()
        self._pending: list[LcrDict] = []
        self._ended: TransactionState | None = None

    # --- SCNs, types, values -------------------------------------------------------------------
    def _next_scn(self, exact: int | None) -> int:
        if exact is not None:
            self.clock.observe(exact)
            if self._local_scn is not None:
                self._local_scn = max(self._local_scn, exact)
            return exact
        if self._local_scn is not None:
            self._local_scn += 1
            self.clock.observe(self._local_scn)
            return self._local_scn
        return self.clock.tick()

    def _declared_type(self, table: str, column: str, types: TypesByColumn | None) -> str | None:
        if types and column in types:
            return oracle_data_type(types[column])
        declared = (self.types or {}).get(table, {})
        if column in declared:
            return oracle_data_type(declared[column])
        definition = self._definitions.get(_split_object(table))
        if definition is not None and column in definition.column_names:
            return oracle_data_type(str(definition.column(column).oracle_type))
        return None

    def _data_type(self, table: str, column: str, value: Any, types: TypesByColumn | None) -> str:
        if isinstance(value, Typed):
            return oracle_data_type(value.data_type)  # also when built as Typed(...) directly
        return self._declared_type(table, column, types) or _inferred_data_type(value)

    def _columns(
        self, table: str, values: Mapping[str, Any], types: TypesByColumn | None
    ) -> list[dict[str, Any]]:
        columns = []
        for name, value in values.items():
            data_type = self._data_type(table, name, value, types)
            raw = value.value if isinstance(value, Typed) else value
            columns.append(
                {"column_name": name, "data_type": data_type, "value": _value_text(data_type, raw)}
            )
        return columns

    def _time(self, scn: int) -> str:
        if isinstance(self.source_time, str):
            return self.source_time
        if isinstance(self.source_time, datetime):
            return self.source_time.isoformat()
        return (SOURCE_TIME_EPOCH + timedelta(seconds=scn)).isoformat()

    def _common(self, command_type: str, scn: int | None) -> LcrDict:
        if self._ended is not None:
            raise InvalidLcrError(
                f"transaction {self.transaction_id} already ended ({self._ended})"
            )
        at = self._next_scn(scn)
        lcr: LcrDict = {
            "source_database_name": self.source,
            "command_type": command_type,
            "transaction_id": self.transaction_id,
            "scn": at,
            "position": self.clock.position(at),
            "source_time": self._time(at),
        }
        if self.tag is not None:
            lcr["tag"] = self.tag
        return lcr

    def _row(self, command_type: str, table: str, scn: int | None, **fields: Any) -> LcrDict:
        owner, name = _split_object(table)
        lcr = self._common(command_type, scn)
        lcr.update(object_owner=owner, object_name=name)
        lcr.update(fields)
        lcr.update(self.attributes or {})
        return self._emit(lcr)

    def _emit(self, lcr: LcrDict) -> LcrDict:
        validate_lcr(lcr)
        self._pending.append(lcr)
        return lcr

    # --- row LCRs --------------------------------------------------------------------------------
    def insert(
        self,
        table: str,
        values: Mapping[str, Any] | None = None,
        /,
        *,
        types: TypesByColumn | None = None,
        scn: int | None = None,
        **columns: Any,
    ) -> TransactionBuilder:
        """INSERT into ``table`` (``OWNER.NAME``): every column of the new row.
        Columns as keywords, or a dict for names that are not Python identifiers."""
        row = {**(values or {}), **columns}
        self._row("INSERT", table, scn, new_values=self._columns(table, row, types))
        return self

    def update(
        self,
        table: str,
        *,
        old: Mapping[str, Any],
        new: Mapping[str, Any],
        types: TypesByColumn | None = None,
        scn: int | None = None,
    ) -> TransactionBuilder:
        """UPDATE: ``old`` is the before image (key columns plus the changed columns, as
        supplemental logging captures it), ``new`` the changed columns' new values."""
        self._row(
            "UPDATE",
            table,
            scn,
            old_values=self._columns(table, old, types),
            new_values=self._columns(table, new, types),
        )
        return self

    def delete(
        self,
        table: str,
        values: Mapping[str, Any] | None = None,
        /,
        *,
        types: TypesByColumn | None = None,
        scn: int | None = None,
        **columns: Any,
    ) -> TransactionBuilder:
        """DELETE: the before image (usually every column)."""
        row = {**(values or {}), **columns}
        self._row("DELETE", table, scn, old_values=self._columns(table, row, types))
        return self

    # --- piecewise LOB LCRs (rule 12) -------------------------------------------------------------
    def _lob(
        self,
        command_type: str,
        table: str,
        key: Mapping[str, Any],
        column: str,
        piece: Any,
        types: TypesByColumn | None,
        scn: int | None,
        **fields: Any,
    ) -> TransactionBuilder:
        """new_values: the key columns and the LOB column (whose value is the piece, or NULL for
        TRIM and ERASE). A LOB column's type: declared, else BLOB for bytes and CLOB otherwise."""
        if isinstance(piece, Typed):
            lob_type = oracle_data_type(piece.data_type)
            piece = piece.value
        else:
            declared = self._declared_type(table, column, types)
            lob_type = declared or ("BLOB" if isinstance(piece, bytes | bytearray) else "CLOB")
        values = self._columns(table, key, types)
        values.append(
            {"column_name": column, "data_type": lob_type, "value": _value_text(lob_type, piece)}
        )
        self._row(command_type, table, scn, new_values=values, **fields)
        return self

    def lob_write(
        self,
        table: str,
        key: Mapping[str, Any],
        column: str,
        piece: str | bytes | Typed,
        *,
        offset: int,
        types: TypesByColumn | None = None,
        scn: int | None = None,
    ) -> TransactionBuilder:
        """LOB WRITE: ``piece`` (text for a CLOB/NCLOB, bytes for a BLOB) written into ``column``
        of the row ``key`` names, at the 1-based ``offset`` (characters, or bytes)."""
        return self._lob(
            "LOB WRITE",
            table,
            key,
            column,
            piece,
            types,
            scn,
            lob_information="LAST_LOB_CHUNK",
            lob_offset=offset,
        )

    def lob_trim(
        self,
        table: str,
        key: Mapping[str, Any],
        column: str,
        *,
        size: int,
        types: TypesByColumn | None = None,
        scn: int | None = None,
    ) -> TransactionBuilder:
        """LOB TRIM: ``column`` of the row ``key`` names cut to ``size`` characters or bytes."""
        return self._lob("LOB TRIM", table, key, column, None, types, scn, lob_operation_size=size)

    def lob_erase(
        self,
        table: str,
        key: Mapping[str, Any],
        column: str,
        *,
        offset: int,
        size: int,
        types: TypesByColumn | None = None,
        scn: int | None = None,
    ) -> TransactionBuilder:
        """LOB ERASE: ``size`` characters (spaces) or bytes (zeros) of ``column`` overwritten
        from the 1-based ``offset``; the length does not change."""
        return self._lob(
            "LOB ERASE",
            table,
            key,
            column,
            None,
            types,
            scn,
            lob_offset=offset,
            lob_operation_size=size,
        )

    # --- DDL -------------------------------------------------------------------------------------
    def ddl(
        self,
        table: str,
        ddl_text: str,
        *,
        command_type: str | None = None,
        object_type: str = "TABLE",
        logon_user: str | None = None,
        scn: int | None = None,
    ) -> TransactionBuilder:
        """A DDL LCR on ``table`` (``OWNER.NAME``) with its statement text. ``command_type``
        defaults to the statement's first two words (``ALTER TABLE``, ``TRUNCATE TABLE``, ...),
        or to ``RENAME`` for Oracle's ``RENAME t TO u``."""
        owner, _ = _split_object(table)
        words = ddl_text.split()
        one_word = words[:1] if words[:1] and words[0].upper() == "RENAME" else words[:2]
        kind = command_type or " ".join(one_word).upper()
        if not kind:
            raise InvalidLcrError("a DDL LCR needs its statement text or a command_type")
        self._row(
            kind,
            table,
            scn,
            object_type=object_type,
            ddl_text=ddl_text,
            logon_user=logon_user or owner,
            current_schema=owner,
        )
        return self

    # --- ends -------------------------------------------------------------------------------------
    def _take(self, state: TransactionState, commit_scn: int | None) -> Transaction:
        lcrs = tuple(self._pending)
        if self.commit_scn_on_records and commit_scn is not None:
            for lcr in lcrs:
                lcr["commit_scn"] = commit_scn
                validate_lcr(lcr)
        self._pending = []
        assert self.transaction_id is not None
        return Transaction(self.source, self.transaction_id, state, lcrs, commit_scn)

    def commit(self, *, scn: int | None = None) -> Transaction:
        """End with COMMIT (its SCN is the commit SCN): the LCRs not yet taken, plus the COMMIT."""
        lcr = self._common("COMMIT", scn)
        self._emit(lcr)
        self._ended = "COMMITTED"
        return self._take("COMMITTED", int(lcr["scn"]))

    def rollback(self, *, scn: int | None = None) -> Transaction:
        """End with ROLLBACK: none of the transaction's LCRs may ever be applied."""
        self._emit(self._common("ROLLBACK", scn))
        self._ended = "ROLLED_BACK"
        return self._take("ROLLED_BACK", None)

    def open(self) -> Transaction:
        """The LCRs added so far, without an end: the transaction stays open (land them now,
        keep adding, and :meth:`commit` later lands the rest and the COMMIT)."""
        return self._take("OPEN", None)


def txn(
    source: str = DEFAULT_SOURCE,
    scn: int | None = None,
    *,
    transaction_id: str | None = None,
    clock: ScnClock | None = None,
    tables: TableSource | None = None,
    types: Mapping[str, TypesByColumn] | None = None,
    tag: str | None = None,
    source_time: datetime | str | None = None,
    attributes: Mapping[str, Any] | None = None,
    commit_scn_on_records: bool = False,
) -> TransactionBuilder:
    """Start a source transaction on ``source`` (see the module docstring)."""
    return TransactionBuilder(
        source=source,
        scn=scn,
        transaction_id=transaction_id,
        clock=clock or DEFAULT_CLOCK,
        tables=tables,
        types=types,
        tag=tag,
        source_time=source_time,
        attributes=attributes,
        commit_scn_on_records=commit_scn_on_records,
    )
