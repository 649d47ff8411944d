"""Deterministic workload generator: landing files of LCRs as a capture process would write them.

The generator simulates one or more source databases. For each it runs a small transactional
engine over synthetic tables ``SYNTH.T001``... (a NUMBER(10) primary key ``ID`` plus columns of
varied types) and writes the captured row LCRs and COMMIT/ROLLBACK directives as JSON Lines
(``lcr-contract.md``). Optionally it also writes the fixed STUDENT/COURSE scenario transcribed
from ``003_*.txt`` as source database ``ORCL``.

What it guarantees, so that tests can rely on it:

* **Deterministic.** The same :class:`WorkloadSpec` gives byte-identical files (plain and gzip).
* **Contract-exact.** Every good line validates against ``lcr_json_schema()``. INSERT carries all
  columns in ``new_values``; UPDATE carries the key columns plus the changed columns' before
  values in ``old_values`` and only the changed columns in ``new_values`` (a key update puts the
  new key there); DELETE carries all columns in ``old_values``. NUMBER values are exact decimal
  strings, DATE/TIMESTAMP ISO-8601 strings, RAW upper-case hex.
* **Ordered.** Per source, ``scn`` never decreases in write order (the row LCRs of one
  multi-row statement share one ``scn``; every other line gets a new, greater one), ``position``
  (20-digit zero-padded) strictly increases, ``source_time`` advances one second per SCN, and a
  ``COMMIT`` has an ``scn`` greater than every LCR of its transaction.
* **Valid when applied.** The engine tracks the source state and locks the rows an in-flight
  transaction touches (two-phase locking, like Oracle's row locks), so with ``conflict_ratio``
  0 every committed transaction applies cleanly in commit-SCN order on an empty destination
  instantiated at :attr:`GeneratedWorkload.initial_scn`. Rolled-back and open transactions never
  change the tracked state. Key ranges of different sources are disjoint (source ``i`` uses IDs
  ``i * 10**8 + 1`` ...), so sources never conflict with each other either.
* **Conflicts on request.** With ``conflict_ratio`` > 0 some single-row changes conflict at
  apply: INSERT of an existing key (ORA-00001), UPDATE/DELETE of a key that never existed
  (ORA-26787), UPDATE/DELETE with a stale old ``NAME`` (ORA-26786). A transaction holding one is
  left out of the tracked state (it is expected to go to the error queue), and the rows it
  touches stay locked until it ends, so every such change does conflict.
* **Bad lines on request.** With ``bad_line_ratio`` > 0 extra lines that violate the contract are
  inserted (they never replace a good LCR): invalid JSON, truncated JSON, a missing required
  field, a wrong type, an unknown ``command_type``, a malformed ``transaction_id``, a column value
  without ``column_name``, a JSON value that is not an object. Bad lines use transaction ids
  ``0.0.n`` that no real transaction uses, carry no ``position``, and go to every source's
  files (the sample scenario's included).

Files: ``<source>/<source>_<nnnn>.jsonl`` (or ``.jsonl.gz``), ``<source>`` being the source
database name with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``. The lines of one
source go to its files in chunks of 1-64 lines, round robin, so one transaction's LCRs (and its
COMMIT) are usually spread over several files.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import random
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any, Final, TypeAlias, TypeVar

from lakeapply.contract.table_definitions import (
    TableDefinition,
    sample_table_definitions,
    table_definition_from_dict,
)
from lakeapply.errors import ConfigurationError

LcrDict: TypeAlias = dict[str, Any]
GeneratedLine: TypeAlias = tuple[str, LcrDict | str]
"""One line in write order: the file stem it goes to (``<source>/<source>_<nnnn>``, relative to
the output folder, no extension) and either the LCR (a dict, serialized with ``json.dumps``) or,
for a bad line, its raw text (no trailing newline)."""

ColumnValue: TypeAlias = dict[str, str | None]
Row: TypeAlias = tuple[str | None, ...]

SAMPLE_SOURCE_DATABASE: Final = "ORCL"
SAMPLE_START_SCN: Final = 1621200
SYNTHETIC_OWNER: Final = "SYNTH"
KEY_SPACE_PER_SOURCE: Final = 100_000_000  # source i uses IDs i * 10**8 + 1 ... (i + 1) * 10**8 - 1
MAX_SOURCES: Final = 99  # NUMBER(10) holds 99 key spaces
MAX_SYNTHETIC_TABLES: Final = 999
MAX_ROWS_PER_STATEMENT: Final = 5
MAX_LINES_PER_CHUNK: Final = 64

_COMMIT: Final = "COMMIT"
_ROLLBACK: Final = "ROLLBACK"
_OPEN: Final = "OPEN"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate. Ratios are probabilities per transaction, statement or line."""

    seed: int = 0
    transactions: int = 1000  # committed + rolled back + open, synthetic part (all sources)
    synthetic_tables: int = 2  # tables SYNTH.T001..; 0 allowed (then no synthetic transactions)
    source_databases: tuple[str, ...] = ("DBS1.EXAMPLE.COM",)
    files_per_source: int = 4  # LCRs of one source spread round-robin-ish over this many files
    max_changes_per_transaction: int = 5  # row LCRs per transaction: 1..this
    rollback_ratio: float = 0.05
    open_ratio: float = 0.02  # transactions left without COMMIT at the end (long-running)
    key_update_ratio: float = 0.02  # UPDATEs that change the primary key
    multi_row_ratio: float = 0.1  # multi-row statements (several row LCRs with the same scn)
    bad_line_ratio: float = 0.0  # share of lines that violate the contract (added lines)
    conflict_ratio: float = 0.0  # single-row changes that will conflict at apply
    interleave: int = 4  # transactions open at once (their LCRs interleave)
    include_sample_scenario: bool = True  # the fixed STUDENT/COURSE scenario, source "ORCL"
    start_scn: int = 1_000_000
    start_time: str = "2026-01-01T00:00:00"
    long_running_ratio: float = 0.01  # committed/rolled back ones kept open across 20-200 others

    def __post_init__(self) -> None:  # noqa: PLR0912 (one flat check per field reads best)
        def fail(message: str) -> None:
            raise ConfigurationError(f"workload spec: {message}")

        if self.transactions < 0:
            fail("transactions must be >= 0")
        if not 0 <= self.synthetic_tables <= MAX_SYNTHETIC_TABLES:
            fail(f"synthetic_tables must be 0-{MAX_SYNTHETIC_TABLES}")
        if not 1 <= len(self.source_databases) <= MAX_SOURCES:
            fail(f"source_databases must name 1-{MAX_SOURCES} databases")
        if any(not name for name in self.source_databases):
            fail("a source database name is empty")
        safe = [_safe_name(name) for name in self.source_databases]
        if len(set(safe)) != len(safe):
            fail(f"source database names collide once sanitized for paths: {safe}")
        if self.include_sample_scenario and _safe_name(SAMPLE_SOURCE_DATABASE) in safe:
            fail(f"{SAMPLE_SOURCE_DATABASE!r} is the sample scenario's source database")
        if self.files_per_source < 1:
            fail("files_per_source must be >= 1")
        if self.max_changes_per_transaction < 1:
            fail("max_changes_per_transaction must be >= 1")
        if self.interleave < 1:
            fail("interleave must be >= 1")
        for name in (
            "rollback_ratio",
            "open_ratio",
            "key_update_ratio",
            "multi_row_ratio",
            "conflict_ratio",
            "long_running_ratio",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                fail(f"{name} must be between 0 and 1")
        if self.rollback_ratio + self.open_ratio > 1.0:
            fail("rollback_ratio + open_ratio must be <= 1")
        if not 0.0 <= self.bad_line_ratio < 1.0:
            fail("bad_line_ratio must be >= 0 and < 1")
        if self.start_scn < 1:
            fail("start_scn must be >= 1")
        try:
            datetime.fromisoformat(self.start_time)
        except ValueError:
            fail(f"start_time {self.start_time!r} is not an ISO-8601 date-time")


@dataclass(frozen=True)
class GeneratedWorkload:
    """What :func:`write_workload` wrote."""

    files: tuple[Path, ...]  # sorted
    tables: tuple[TableDefinition, ...]  # every table of the workload (sample + synthetic)
    line_count: int  # lines written, bad ones included
    bad_line_count: int
    committed_transactions: int  # sample scenario included
    rolled_back_transactions: int
    open_transactions: int
    initial_scn: int  # below every generated change: a valid instantiation SCN
    conflicting_transactions: int = 0  # committed transactions holding a conflicting change


def synthetic_table_definitions(count: int) -> tuple[TableDefinition, ...]:
    """``SYNTH.T001`` ... ``SYNTH.T<count>``: a NUMBER(10) primary key ``ID`` plus VARCHAR2,
    NUMBER(p,s), CHAR, DATE, TIMESTAMP and nullable columns (one with a default); even-numbered
    tables also have an unconstrained NUMBER and a RAW column."""
    if not 0 <= count <= MAX_SYNTHETIC_TABLES:
        raise ConfigurationError(f"synthetic table count must be 0-{MAX_SYNTHETIC_TABLES}")
    return tuple(
        table_definition_from_dict(_synthetic_table_document(number), f"synthetic table {number}")
        for number in range(1, count + 1)
    )


def generate_lcrs(spec: WorkloadSpec) -> Iterator[GeneratedLine]:
    """Every line of the workload in write order: ``(file stem, LCR dict or bad line text)``.

    The sample scenario (if included) comes first, then each synthetic source in turn. Writing
    the items to ``<stem>.jsonl`` in this order gives the files :func:`write_workload` writes.
    """
    return _Workload(spec).lines()


def write_workload(spec: WorkloadSpec, out_dir: Path, compress: bool = False) -> GeneratedWorkload:
    """Write the workload under ``out_dir`` (created if missing) as ``.jsonl`` or, with
    ``compress``, ``.jsonl.gz`` files (gzip header without name and time: deterministic).

    Existing files are never overwritten (ConfigurationError). Each file is written under a
    hidden temporary name (``.<name>.tmp``) and renamed into place when complete.
    """
    workload = _Workload(spec)
    out_dir = Path(out_dir)
    suffix = ".jsonl.gz" if compress else ".jsonl"
    writers: dict[str, _FileWriter] = {}
    line_count = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with ExitStack() as stack:
        # The engine builds no reference cycles, but keeps a large live state (every row of
        # every table) that the cyclic GC would rescan over and over: about a fifth of the time.
        if gc.isenabled():
            gc.disable()
            stack.callback(gc.enable)
        for stem, item in workload.lines():
            writer = writers.get(stem)
            if writer is None:
                writer = _FileWriter(out_dir / f"{stem}{suffix}", compress)
                stack.callback(writer.abort)
                writers[stem] = writer
            writer.add(item if isinstance(item, str) else dumps(item))
            line_count += 1
        for writer in writers.values():
            writer.close()
    return GeneratedWorkload(
        files=tuple(sorted(writer.path for writer in writers.values())),
        tables=workload.tables,
        line_count=line_count,
        bad_line_count=workload.bad_lines,
        committed_transactions=workload.committed,
        rolled_back_transactions=workload.rolled_back,
        open_transactions=workload.open,
        initial_scn=workload.initial_scn,
        conflicting_transactions=workload.conflicting,
    )


def sample_scenario_lcrs(
    source_database: str = SAMPLE_SOURCE_DATABASE, start_scn: int = SAMPLE_START_SCN
) -> list[LcrDict]:
    """The STUDENT/COURSE examples of ``003_*.txt`` as the LCRs a capture writes, in order.

    1. the initial COURSE rows, then the initial STUDENT rows (two committed transactions);
    2. single-row insert of student 1011 (``4.11.854``, scn 1621214, commit 1621215);
    3. single-row update: student 1010 TUITION_FEE 9000 -> 6000 (``3.6.1012``);
    4. single-row delete of student 1004 (``1.33.830``);
    5. multi-row update: the preparation (TUITION_FEE 8000 for 1007, 1008, 1009), then
       ``UPDATE ... SET tuition_fee = 7500 WHERE tuition_fee = 8000`` (``6.27.1204``);
    6. multi-row delete: the preparation (8000 again), then
       ``DELETE ... WHERE tuition_fee = 8000`` (``3.23.1016``) removing 1007, 1008, 1009;
    7. array insert of 1007, 1008, 1009 from STUDENT_TEMP (``7.13.846``: three INSERTs, one scn).
       Its preparation's ``DELETE ... IN (1007,1008,1009)`` finds no row at this point of the
       sequence (step 6 removed them), so it produces no LCR; STUDENT_TEMP is not captured;
    8. direct-path insert: the preparation deletes 1007, 1008, 1009 (one statement, three
       DELETEs), then ``INSERT /*+ APPEND */`` re-inserts them (``4.21.865``). The
       ``ALTER TABLE ... DISABLE CONSTRAINT`` around it is not emitted.

    Transaction ids, SCNs, times and ROWIDs are the document's where it gives them, invented
    (usn 9, increasing) otherwise. ``start_scn`` shifts every SCN by ``start_scn - 1621200``.
    Final STUDENT: 1001-1003 and 1005-1011, 1010 paying 6000, 1007-1009 back at 9000.
    """
    return _sample_scenario(source_database, start_scn)


# --------------------------------------------------------------------------------------------
# Synthetic tables and values
# --------------------------------------------------------------------------------------------


def _synthetic_table_document(number: int) -> dict[str, Any]:
    columns: list[dict[str, Any]] = [
        {"name": "ID", "type": "NUMBER(10)", "nullable": False},
        {"name": "NAME", "type": "VARCHAR2(40)", "nullable": False},
        {"name": "AMOUNT", "type": "NUMBER(12,2)"},
        {"name": "QUANTITY", "type": "NUMBER(5)"},
        {"name": "FLAG", "type": "CHAR(1)"},
        {"name": "CREATED_DATE", "type": "DATE"},
        {"name": "UPDATED_AT", "type": "TIMESTAMP(6)"},
        {"name": "STATUS", "type": "VARCHAR2(10)", "default": "NEW"},
        {"name": "NOTE", "type": "VARCHAR2(100)"},
    ]
    if number % 2 == 0:
        columns += [{"name": "SCORE", "type": "NUMBER"}, {"name": "TOKEN", "type": "RAW(8)"}]
    return {
        "owner": SYNTHETIC_OWNER,
        "name": f"T{number:03d}",
        "description": f"Synthetic workload table {number}.",
        "columns": columns,
        "primary_key": ["ID"],
    }


_FIRST_NAMES: Final = (
    "Ada", "Alan", "Barbara", "Dennis", "Edsger", "Frances", "Grace", "Jean", "John", "Ken",
    "Margaret", "Niklaus", "Radia", "Sophie", "Tony", "Zoë", "Łukasz", "Renée", "José", "Ingrid",
)  # fmt: skip
_SURNAMES: Final = (
    "Lovelace", "Turing", "Liskov", "Ritchie", "Dijkstra", "Allen", "Hopper", "Sammet",
    "Backus", "Thompson", "Hamilton", "Wirth", "Perlman", "Wilson", "Hoare", "O'Brien",
    "Müller", "García", "Ng", "Smith-Jones",
)  # fmt: skip
_STATUSES: Final = ("NEW", "NEW", "OPEN", "CLOSED", "HOLD", None)
_NOTES: Final = (
    "call back",
    "priority customer",
    'said "urgent"',
    "path C:\\temp\\in",
    "tab\there",
    "multi\nline",
    "ünïcödé ✓",
    "",
)
_DATE_ORIGIN: Final = datetime(2020, 1, 1)
_DATE_RANGE_SECONDS: Final = 6 * 365 * 86400

ValueMaker: TypeAlias = Callable[[random.Random], str | None]
T = TypeVar("T")


# random.Random.randrange/randint/choice cost ~0.5 us each; these cost a fifth of that, and the
# generator draws several numbers per line. (Deterministic too: they only use rng.random().)
def _below(rng: random.Random, n: int) -> int:
    """A number in ``range(n)``."""
    return int(rng.random() * n)


def _between(rng: random.Random, low: int, high: int) -> int:
    """A number in ``low..high`` (both included)."""
    return low + int(rng.random() * (high - low + 1))


def _pick(rng: random.Random, items: Sequence[T]) -> T:
    return items[int(rng.random() * len(items))]


def _name(rng: random.Random) -> str | None:
    return f"{_pick(rng, _FIRST_NAMES)} {_pick(rng, _SURNAMES)}"


def _amount(rng: random.Random) -> str | None:
    cents = _below(rng, 1_000_100_000) - 100_000
    magnitude = abs(cents)
    return f"{'-' if cents < 0 else ''}{magnitude // 100}.{magnitude % 100:02d}"


def _quantity(rng: random.Random) -> str | None:
    return None if rng.random() < 0.05 else str(_below(rng, 100_000))


def _flag(rng: random.Random) -> str | None:
    return "Y" if rng.random() < 0.5 else "N"


# ISO-8601 pieces, precomputed: formatting datetimes costs more than the rest of a row.
_DAYS: Final = tuple(
    (_DATE_ORIGIN + timedelta(days=day)).date().isoformat() + "T"
    for day in range(_DATE_RANGE_SECONDS // 86400)
)
_HOURS: Final = tuple(f"{hour:02d}:" for hour in range(24))
_MINUTES_SECONDS: Final = tuple(f"{second // 60:02d}:{second % 60:02d}" for second in range(3600))


def _date(rng: random.Random) -> str | None:
    """A DATE (second precision) in 2020-2025."""
    day, second = divmod(_below(rng, _DATE_RANGE_SECONDS), 86400)
    hour, second = divmod(second, 3600)
    return _DAYS[day] + _HOURS[hour] + _MINUTES_SECONDS[second]


def _timestamp(rng: random.Random) -> str | None:
    """A TIMESTAMP(6) in 2020-2025, always with six fraction digits."""
    day, second = divmod(_below(rng, _DATE_RANGE_SECONDS), 86400)
    hour, second = divmod(second, 3600)
    return f"{_DAYS[day]}{_HOURS[hour]}{_MINUTES_SECONDS[second]}.{_below(rng, 1_000_000):06d}"


def _status(rng: random.Random) -> str | None:
    return _pick(rng, _STATUSES)


def _note(rng: random.Random) -> str | None:
    return None if rng.random() < 0.6 else _pick(rng, _NOTES)


def _score(rng: random.Random) -> str | None:
    value = _below(rng, 2 * 10**9) - 10**9
    magnitude = abs(value)
    return f"{'-' if value < 0 else ''}{magnitude // 10_000}.{magnitude % 10_000:04d}"


def _token(rng: random.Random) -> str | None:
    return None if rng.random() < 0.2 else f"{rng.getrandbits(64):016X}"


_VALUE_MAKERS: Final[dict[str, ValueMaker]] = {
    "NAME": _name,
    "AMOUNT": _amount,
    "QUANTITY": _quantity,
    "FLAG": _flag,
    "CREATED_DATE": _date,
    "UPDATED_AT": _timestamp,
    "STATUS": _status,
    "NOTE": _note,
    "SCORE": _score,
    "TOKEN": _token,
}

_ROWID_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _rowid_part(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        number, digit = divmod(number, 64)
        chars.append(_ROWID_ALPHABET[digit])
    return "".join(reversed(chars))


_ROWS_PER_BLOCK: Final = 128
_ROWID_SLOTS: Final = tuple(_rowid_part(slot, 3) for slot in range(_ROWS_PER_BLOCK))


class _TableMeta:
    """A synthetic table as the engine uses it."""

    def __init__(self, definition: TableDefinition, index: int) -> None:
        if definition.primary_key != ("ID",) or definition.columns[0].name != "ID":
            raise ConfigurationError(f"{definition.qualified_name}: synthetic tables key on ID")
        self.owner = definition.owner
        self.name = definition.name
        self.columns: tuple[tuple[str, str], ...] = tuple(
            (column.name, column.oracle_type.name) for column in definition.columns
        )
        self.makers: tuple[ValueMaker, ...] = tuple(
            _VALUE_MAKERS[name] for name, _ in self.columns[1:]
        )
        self.non_key: tuple[int, ...] = tuple(range(1, len(self.columns)))
        self.name_index = self.column_index("NAME")
        # ROWID = object (6) + file (3) + block (6) + row (3), Oracle's base-64 digits.
        self.rowid_prefix = _rowid_part(76_500 + index, 6) + _rowid_part(4, 3)
        self.block = -1
        self.block_prefix = ""

    def column_index(self, name: str) -> int:
        return next(i for i, (column, _) in enumerate(self.columns) if column == name)

    def new_row(self, key: int, rng: random.Random) -> Row:
        return (str(key), *[make(rng) for make in self.makers])

    def values(self, row: Row, indexes: Sequence[int]) -> list[ColumnValue]:
        columns = self.columns
        return [
            {"column_name": columns[i][0], "data_type": columns[i][1], "value": row[i]}
            for i in indexes
        ]

    def all_values(self, row: Row) -> list[ColumnValue]:
        return [
            {"column_name": name, "data_type": data_type, "value": value}
            for (name, data_type), value in zip(self.columns, row, strict=True)
        ]

    def rowid(self, sequence: int) -> str:
        block, slot = divmod(sequence, _ROWS_PER_BLOCK)
        if block != self.block:
            self.block = block
            self.block_prefix = self.rowid_prefix + _rowid_part(1_024 + block, 6)
        return self.block_prefix + _ROWID_SLOTS[slot]


class _TableState:
    """The committed source state of one table in one source database."""

    def __init__(self, first_key: int) -> None:
        self.rows: dict[int, tuple[str, Row]] = {}  # key -> (rowid, values)
        self.keys: list[int] = []  # the keys of rows, for uniform random choice
        self.slot: dict[int, int] = {}  # key -> index in keys
        self.free: list[int] = []  # deleted keys, free to insert again
        self.next_key = first_key
        self.key_limit = first_key - 1 + KEY_SPACE_PER_SOURCE
        self.inserted = 0  # rows ever inserted: gives row ids

    def fresh_key(self) -> int:
        """A key never used before in this table."""
        key = self.next_key
        if key > self.key_limit:
            raise ConfigurationError(
                f"workload too large: more than {KEY_SPACE_PER_SOURCE - 1} keys in one table"
            )
        self.next_key += 1
        return key

    def put(self, key: int, row: tuple[str, Row]) -> None:
        if key not in self.rows:
            self.slot[key] = len(self.keys)
            self.keys.append(key)
        self.rows[key] = row

    def remove(self, key: int) -> None:
        if self.rows.pop(key, None) is None:
            return
        index = self.slot.pop(key)
        last = self.keys.pop()
        if last != key:
            self.keys[index] = last
            self.slot[last] = index


Overlay: TypeAlias = dict[tuple[int, int], tuple[str, Row] | None]


@dataclass
class _Transaction:
    number: int
    transaction_id: str
    outcome: str  # _COMMIT, _ROLLBACK or _OPEN
    changes_left: int
    long_running: bool
    due: int  # ended-transaction count after which a long-running one may end
    overlay: Overlay = field(default_factory=dict)  # its changes, not yet committed
    locks: list[tuple[int, int]] = field(default_factory=list)
    reused: list[tuple[int, int]] = field(default_factory=list)  # keys taken from free lists
    poisoned: bool = False  # holds a conflicting change


# --------------------------------------------------------------------------------------------
# Streams, files and bad lines
# --------------------------------------------------------------------------------------------


def _safe_name(source_database: str) -> str:
    return _SAFE_NAME.sub("_", source_database)


class _Stream:
    """The lines of one source database: positions, file rotation, bad lines."""

    def __init__(self, source: str, files: int, rng: random.Random, bad_line_ratio: float) -> None:
        safe = _safe_name(source)
        self.source = source
        self.stems = tuple(f"{safe}/{safe}_{number:04d}" for number in range(files))
        self.rng = rng
        self.file = 0
        self.chunk_left = _between(rng, 1, MAX_LINES_PER_CHUNK)
        self.position = 0
        self.out: list[GeneratedLine] = []
        # After each good line, bad lines follow while a draw is < bad_line_ratio: on average
        # ratio / (1 - ratio) bad lines per good one, i.e. bad lines are that share of all lines.
        self.bad_probability = bad_line_ratio
        self.bad_lines = 0

    def next_position(self) -> str:
        self.position += 1
        return f"{self.position:020d}"

    def _stem(self) -> str:
        if self.chunk_left == 0:
            self.file = (self.file + 1) % len(self.stems)
            self.chunk_left = _between(self.rng, 1, MAX_LINES_PER_CHUNK)
        self.chunk_left -= 1
        return self.stems[self.file]

    def put(self, lcr: LcrDict) -> None:
        if self.chunk_left:  # the common case of _stem(), inline
            self.chunk_left -= 1
            self.out.append((self.stems[self.file], lcr))
        else:
            self.out.append((self._stem(), lcr))
        while self.bad_probability and self.rng.random() < self.bad_probability:
            self.bad_lines += 1
            self.out.append((self._stem(), _bad_line(lcr, self.bad_lines, self.rng)))

    def drain(self) -> list[GeneratedLine]:
        out = self.out
        self.out = []
        return out


_BAD_KINDS: Final = 8
_REQUIRED_FIELDS: Final = ("source_database_name", "command_type", "transaction_id", "scn")


def _bad_line(template: LcrDict, number: int, rng: random.Random) -> str:
    """A line violating the contract, modelled on a good LCR (never a valid LCR itself)."""
    record = {key: value for key, value in template.items() if key != "position"}
    record["transaction_id"] = f"0.0.{number}"
    kind = _below(rng, _BAD_KINDS)
    if kind == 0:  # invalid JSON: a member without its colon
        return _dump(record).replace('":', '" ', 1)
    if kind == 1:  # truncated JSON
        text = _dump(record)
        return text[: max(1, len(text) // 2)]
    if kind == 2:  # a required field missing
        del record[_REQUIRED_FIELDS[_below(rng, len(_REQUIRED_FIELDS))]]
    elif kind == 3:  # wrong type
        record["scn"] = "abc"
    elif kind == 4:  # unknown command type
        record["command_type"] = "UPSERT"
    elif kind == 5:  # malformed transaction id
        record["transaction_id"] = f"0-0-{number}"
    elif kind == 6:  # a column value without column_name
        values = record.get("new_values") or record.get("old_values")
        broken = [{"data_type": "NUMBER", "value": "1"}]
        if values:
            broken = [{k: v for k, v in values[0].items() if k != "column_name"}, *values[1:]]
        record["new_values" if "new_values" in record or not values else "old_values"] = broken
    else:  # valid JSON, not an object
        return _dump([record["source_database_name"], record["command_type"], number])
    return _dump(record)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _FileWriter:
    """Buffered, deterministic writer of one landing file (temporary name until closed)."""

    _FLUSH_LINES = 2048

    def __init__(self, path: Path, compress: bool) -> None:
        if path.exists():
            raise ConfigurationError(f"{path} exists: a landing file is never overwritten")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.temporary = path.with_name(f".{path.name}.tmp")
        self.raw: IO[bytes] = open(self.temporary, "wb")  # noqa: SIM115 - closed in close/abort
        self.gzip: gzip.GzipFile | None = None
        self.sink: IO[bytes] | gzip.GzipFile = self.raw
        if compress:
            self.gzip = gzip.GzipFile(
                filename="", mode="wb", fileobj=self.raw, mtime=0, compresslevel=1
            )
            self.sink = self.gzip
        self.buffer: list[str] = []
        self.closed = False

    def add(self, line: str) -> None:
        self.buffer.append(line)
        if len(self.buffer) >= self._FLUSH_LINES:
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            self.buffer.append("")
            self.sink.write("\n".join(self.buffer).encode("utf-8"))
            self.buffer = []

    def close(self) -> None:
        self._flush()
        if self.gzip is not None:
            self.gzip.close()
        self.raw.close()
        os.replace(self.temporary, self.path)
        self.closed = True

    def abort(self) -> None:
        if self.closed:
            return
        if self.gzip is not None:
            self.gzip.close()
        self.raw.close()
        self.temporary.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class _Workload:
    """Generates the lines and keeps the counts."""

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        synthetic = synthetic_table_definitions(spec.synthetic_tables)
        sample = sample_table_definitions() if spec.include_sample_scenario else ()
        self.tables: tuple[TableDefinition, ...] = (*sample, *synthetic)
        self.synthetic = synthetic
        starts = [spec.start_scn] if synthetic and spec.transactions else []
        if spec.include_sample_scenario:
            starts.append(SAMPLE_START_SCN)
        self.initial_scn = min(starts, default=spec.start_scn) - 1
        self.committed = 0
        self.rolled_back = 0
        self.open = 0
        self.conflicting = 0
        self.bad_lines = 0

    def lines(self) -> Iterator[GeneratedLine]:
        spec = self.spec
        if spec.include_sample_scenario:
            stream = self._stream(SAMPLE_SOURCE_DATABASE)
            for lcr in sample_scenario_lcrs(SAMPLE_SOURCE_DATABASE, SAMPLE_START_SCN):
                stream.put(lcr)
                if lcr["command_type"] == _COMMIT:
                    self.committed += 1
            yield from stream.drain()
            self.bad_lines += stream.bad_lines
        sources = spec.source_databases
        if not self.synthetic:
            return
        for index, source in enumerate(sources):
            share = spec.transactions // len(sources) + (index < spec.transactions % len(sources))
            stream = self._stream(source)
            engine = _SourceEngine(self, index, stream, share)
            yield from engine.run()
            self.bad_lines += stream.bad_lines

    def _stream(self, source: str) -> _Stream:
        rng = random.Random(f"lakeapply-workload/{self.spec.seed}/{source}")
        return _Stream(source, self.spec.files_per_source, rng, self.spec.bad_line_ratio)


class _SourceEngine:
    """The transactions of one synthetic source database."""

    def __init__(self, workload: _Workload, index: int, stream: _Stream, transactions: int) -> None:
        spec = workload.spec
        self.workload = workload
        self.spec = spec
        self.stream = stream
        self.rng = stream.rng
        self.source = stream.source
        self.transactions = transactions
        self.meta = [_TableMeta(table, i) for i, table in enumerate(workload.synthetic)]
        self.states = [_TableState(index * KEY_SPACE_PER_SOURCE + 1) for _ in self.meta]
        self.locks: dict[tuple[int, int], int] = {}
        self.start_scn = spec.start_scn
        self.scn = spec.start_scn - 1
        start = datetime.fromisoformat(spec.start_time)
        self.start_time = start
        self.whole_seconds = start.tzinfo is None and start.microsecond == 0
        self.start_second = start.hour * 3600 + start.minute * 60 + start.second
        self.days: dict[int, str] = {}  # day number -> "YYYY-MM-DDT"
        self.ended = 0
        self.sequences: dict[tuple[int, int], int] = {}

    # ---- scheduling ------------------------------------------------------------------------

    def run(self) -> Iterator[GeneratedLine]:  # noqa: PLR0912 (the scheduler's one loop)
        rng = self.rng
        stream = self.stream
        interleave = self.spec.interleave
        active: list[_Transaction] = []
        background: list[_Transaction] = []  # long-running and open ones
        created = 0
        while created < self.transactions or active:
            while len(active) < interleave and created < self.transactions:
                transaction = self._begin(created)
                created += 1
                (background if transaction.long_running else active).append(transaction)
            if background and rng.random() < min(0.5, 0.05 * len(background)):
                index = _below(rng, len(background))
                transaction = background[index]
                if transaction.changes_left > 0:
                    self._statement(transaction)
                elif transaction.outcome == _OPEN or self.ended >= transaction.due:
                    if transaction.outcome != _OPEN:
                        self._end(transaction)
                    background[index] = background[-1]
                    background.pop()
            elif active:
                index = _below(rng, len(active))
                transaction = active[index]
                if transaction.changes_left > 0:
                    self._statement(transaction)
                else:
                    self._end(transaction)
                    active[index] = active[-1]
                    active.pop()
            if stream.out:
                yield from stream.drain()
        for transaction in background:
            while transaction.changes_left > 0:
                self._statement(transaction)
            if transaction.outcome != _OPEN:
                self._end(transaction)
            yield from stream.drain()

    def _begin(self, number: int) -> _Transaction:
        rng = self.rng
        spec = self.spec
        draw = rng.random()
        if draw < spec.open_ratio:
            outcome = _OPEN
        elif draw < spec.open_ratio + spec.rollback_ratio:
            outcome = _ROLLBACK
        else:
            outcome = _COMMIT
        long_running = outcome == _OPEN or rng.random() < spec.long_running_ratio
        due = self.ended + _between(rng, 20, 200) if long_running else 0
        if outcome == _OPEN:
            self.workload.open += 1
        return _Transaction(
            number=number,
            transaction_id=self._transaction_id(),
            outcome=outcome,
            changes_left=_between(rng, 1, spec.max_changes_per_transaction),
            long_running=long_running,
            due=due,
        )

    def _transaction_id(self) -> str:
        """``usn.slot.sqn``, unique in this source: the sequence grows per undo slot."""
        rng = self.rng
        slot = (_between(rng, 1, 10), _below(rng, 48))
        sequence = self.sequences.get(slot)
        sequence = _between(rng, 100, 3000) if sequence is None else sequence + 1
        self.sequences[slot] = sequence
        return f"{slot[0]}.{slot[1]}.{sequence}"

    def _next_scn(self) -> int:
        self.scn += 1 if self.rng.random() < 0.75 else 2
        return self.scn

    def _time(self, scn: int) -> str:
        """``start_time`` + one second per SCN, as ISO-8601 (what ``isoformat()`` gives)."""
        if not self.whole_seconds:
            return (self.start_time + timedelta(seconds=scn - self.start_scn)).isoformat()
        day, second = divmod(self.start_second + scn - self.start_scn, 86400)
        prefix = self.days.get(day)
        if prefix is None:
            prefix = (self.start_time.date() + timedelta(days=day)).isoformat() + "T"
            self.days[day] = prefix
        hour, second = divmod(second, 3600)
        return prefix + _HOURS[hour] + _MINUTES_SECONDS[second]

    def _end(self, transaction: _Transaction) -> None:
        scn = self._next_scn()
        command = _COMMIT if transaction.outcome == _COMMIT else _ROLLBACK
        self.stream.put(
            {
                "source_database_name": self.source,
                "command_type": command,
                "transaction_id": transaction.transaction_id,
                "scn": scn,
                "position": self.stream.next_position(),
                "source_time": self._time(scn),
            }
        )
        if command == _COMMIT and not transaction.poisoned:
            for (table, key), row in transaction.overlay.items():
                state = self.states[table]
                if row is None:
                    state.remove(key)
                    state.free.append(key)
                else:
                    state.put(key, row)
        else:
            for table, key in transaction.reused:
                self.states[table].free.append(key)
        for lock in transaction.locks:
            del self.locks[lock]
        self.ended += 1
        if command == _COMMIT:
            self.workload.committed += 1
            self.workload.conflicting += transaction.poisoned
        else:
            self.workload.rolled_back += 1

    # ---- rows and keys ---------------------------------------------------------------------

    def _view(self, transaction: _Transaction, table: int, key: int) -> tuple[str, Row] | None:
        overlay = transaction.overlay
        if (table, key) in overlay:
            return overlay[(table, key)]
        return self.states[table].rows.get(key)

    def _lock(self, transaction: _Transaction, table: int, key: int) -> None:
        if (table, key) not in self.locks:
            self.locks[(table, key)] = transaction.number
            transaction.locks.append((table, key))

    def _new_key(self, transaction: _Transaction, table: int) -> int:
        state = self.states[table]
        rng = self.rng
        if state.free and rng.random() < 0.2:
            index = _below(rng, len(state.free))
            key = state.free[index]
            state.free[index] = state.free[-1]
            state.free.pop()
            transaction.reused.append((table, key))
        else:
            key = state.fresh_key()
        self._lock(transaction, table, key)
        return key

    def _pick_keys(self, transaction: _Transaction, table: int, count: int) -> list[int]:
        """Up to ``count`` distinct keys of rows the transaction sees and may lock."""
        rng = self.rng
        state = self.states[table]
        own = [
            key
            for (owner_table, key), row in transaction.overlay.items()
            if owner_table == table and row is not None
        ]
        picked: list[int] = []
        for _ in range(count * 4):
            if len(picked) == count:
                break
            if own and rng.random() < 0.25:
                key = own[_below(rng, len(own))]
            elif state.keys:
                key = state.keys[_below(rng, len(state.keys))]
            else:
                continue
            if key in picked:
                continue
            holder = self.locks.get((table, key))
            if holder is not None and holder != transaction.number:
                continue
            if self._view(transaction, table, key) is None:
                continue
            picked.append(key)
        for key in picked:
            self._lock(transaction, table, key)
        return picked

    def _free_committed_key(self, table: int) -> int | None:
        """A committed row no transaction has locked (for a conflicting change)."""
        state = self.states[table]
        for _ in range(8):
            if not state.keys:
                return None
            key = state.keys[_below(self.rng, len(state.keys))]
            if (table, key) not in self.locks:
                return key
        return None

    # ---- statements ------------------------------------------------------------------------

    def _row_lcr(
        self,
        command: str,
        meta: _TableMeta,
        transaction: _Transaction,
        scn: int,
        row_id: str,
        *,
        old: list[ColumnValue] | None = None,
        new: list[ColumnValue] | None = None,
    ) -> None:
        stream = self.stream
        stream.position += 1
        lcr: LcrDict = {
            "source_database_name": self.source,
            "command_type": command,
            "object_owner": meta.owner,
            "object_name": meta.name,
            "transaction_id": transaction.transaction_id,
            "scn": scn,
            "position": f"{stream.position:020d}",
            "source_time": self._time(scn),
            "row_id": row_id,
        }
        if old is not None:
            lcr["old_values"] = old
        if new is not None:
            lcr["new_values"] = new
        stream.put(lcr)

    def _statement(self, transaction: _Transaction) -> None:
        """One statement of the transaction: one row LCR, or several with the same scn."""
        rng = self.rng
        spec = self.spec
        table = _below(rng, len(self.meta))
        meta = self.meta[table]
        state = self.states[table]
        rows = 1
        if transaction.changes_left >= 2 and rng.random() < spec.multi_row_ratio:
            rows = _between(rng, 2, min(transaction.changes_left, MAX_ROWS_PER_STATEMENT))
        scn = self._next_scn()
        if rows == 1 and spec.conflict_ratio and rng.random() < spec.conflict_ratio:
            self._conflict(transaction, table, scn)
            transaction.changes_left -= 1
            return
        draw = rng.random()
        keys: list[int] = []
        if len(state.keys) >= 8 and draw >= 0.4:
            keys = self._pick_keys(transaction, table, rows)
        overlay = transaction.overlay
        if not keys:  # INSERT (a single row, or an array insert)
            for _ in range(rows):
                key = self._new_key(transaction, table)
                row = meta.new_row(key, rng)
                row_id = meta.rowid(state.inserted)
                state.inserted += 1
                overlay[(table, key)] = (row_id, row)
                self._row_lcr("INSERT", meta, transaction, scn, row_id, new=meta.all_values(row))
        elif draw < 0.85:  # UPDATE: the same SET clause on every row
            if len(keys) == 1 and rng.random() < spec.key_update_ratio:
                self._key_update(transaction, table, keys[0], scn)
            else:
                pool = list(meta.non_key)
                changed = sorted(
                    pool.pop(_below(rng, len(pool))) for _ in range(_between(rng, 1, 3))
                )
                new_values = {index: meta.makers[index - 1](rng) for index in changed}
                for key in keys:
                    current = self._view(transaction, table, key)
                    assert current is not None
                    row_id, before = current
                    after_list = list(before)
                    for index, value in new_values.items():
                        after_list[index] = value
                    after = tuple(after_list)
                    overlay[(table, key)] = (row_id, after)
                    self._row_lcr(
                        "UPDATE",
                        meta,
                        transaction,
                        scn,
                        row_id,
                        old=meta.values(before, [0, *changed]),
                        new=meta.values(after, changed),
                    )
        else:  # DELETE
            for key in keys:
                current = self._view(transaction, table, key)
                assert current is not None
                row_id, before = current
                overlay[(table, key)] = None
                self._row_lcr("DELETE", meta, transaction, scn, row_id, old=meta.all_values(before))
        transaction.changes_left -= len(keys) if keys else rows

    def _key_update(self, transaction: _Transaction, table: int, key: int, scn: int) -> None:
        rng = self.rng
        meta = self.meta[table]
        current = self._view(transaction, table, key)
        assert current is not None
        row_id, before = current
        new_key = self._new_key(transaction, table)
        changed = [0]
        if rng.random() < 0.5:
            changed.append(meta.non_key[_below(rng, len(meta.non_key))])
        after_list = list(before)
        after_list[0] = str(new_key)
        for index in changed[1:]:
            after_list[index] = meta.makers[index - 1](rng)
        after = tuple(after_list)
        transaction.overlay[(table, key)] = None
        transaction.overlay[(table, new_key)] = (row_id, after)
        self._row_lcr(
            "UPDATE",
            meta,
            transaction,
            scn,
            row_id,
            old=meta.values(before, changed),
            new=meta.values(after, changed),
        )

    def _conflict(self, transaction: _Transaction, table: int, scn: int) -> None:
        """A single-row change that conflicts when applied (the transaction is poisoned)."""
        rng = self.rng
        meta = self.meta[table]
        state = self.states[table]
        transaction.poisoned = True
        kind = _below(rng, 5)
        existing = self._free_committed_key(table) if kind in (0, 3, 4) else None
        if existing is None and kind in (0, 3, 4):
            kind = 1 + kind % 2
        name = meta.name_index
        if existing is not None:
            self._lock(transaction, table, existing)
            row_id, current = state.rows[existing]
            if kind == 0:  # INSERT of an existing key: ORA-00001
                row = meta.new_row(existing, rng)
                self._row_lcr("INSERT", meta, transaction, scn, row_id, new=meta.all_values(row))
                return
            stale = list(current)
            stale[name] = f"{current[name]} (stale)"
            if kind == 3:  # UPDATE with a stale old value: ORA-26786
                after = list(current)
                after[name] = f"{current[name]} (new)"
                self._row_lcr(
                    "UPDATE",
                    meta,
                    transaction,
                    scn,
                    row_id,
                    old=meta.values(tuple(stale), [0, name]),
                    new=meta.values(tuple(after), [name]),
                )
            else:  # DELETE with a stale old value: ORA-26786
                self._row_lcr(
                    "DELETE", meta, transaction, scn, row_id, old=meta.all_values(tuple(stale))
                )
            return
        # A key that never existed and never will (taken from the counter, never inserted).
        missing = state.fresh_key()
        row = meta.new_row(missing, rng)
        row_id = meta.rowid(state.inserted)
        state.inserted += 1
        if kind == 1:  # UPDATE of a missing key: ORA-26787
            after = list(row)
            after[name] = f"{row[name]} (new)"
            self._row_lcr(
                "UPDATE",
                meta,
                transaction,
                scn,
                row_id,
                old=meta.values(row, [0, name]),
                new=meta.values(tuple(after), [name]),
            )
        else:  # DELETE of a missing key: ORA-26787
            self._row_lcr("DELETE", meta, transaction, scn, row_id, old=meta.all_values(row))


# --------------------------------------------------------------------------------------------
# The STUDENT/COURSE scenario of 003_*.txt
# --------------------------------------------------------------------------------------------

_COURSE_ROWS: Final = (
    ("Oxford", "Theology", 2013),
    ("Oxford", "Biology", 2013),
    ("Oxford", "Biology", 2014),
    ("Cambridge", "Economics", 2013),
    ("Cambridge", "Physics", 2013),
    ("Cambridge", "Chemistry", 2013),
    ("Manchester", "Chemistry", 2013),
    ("Manchester", "Computer Science", 2013),
    ("Manchester", "Art History", 2013),
    ("Manchester", "Media Studies", 2013),
)
_STUDENT_ROWS: Final = (
    (1001, "Lucy", "Brotherton", "F", "Cambridge", "Chemistry", 2013, 9000),
    (1002, "Rebecca", "Brown", "F", "Oxford", "Biology", 2013, 9000),
    (1003, "Simon", "Campbell", "M", "Cambridge", "Physics", 2013, 7500),
    (1004, "Jason", "Robinson", "M", "Oxford", "Biology", 2013, 7500),
    (1005, "Stuart", "Overy", "M", "Manchester", "Art History", 2013, 9000),
    (1006, "Tom", "Homer", "M", "Manchester", "Computer Science", 2013, 9000),
    (1007, "Victoria", "Evans", "F", "Oxford", "Theology", 2013, 9000),
    (1008, "Katy", "Pierce", "F", "Oxford", "Theology", 2013, 9000),
    (1009, "Shane", "Thomas", "M", "Manchester", "Media Studies", 2013, 9000),
    (1010, "Sarah", "McCloud", "F", "Oxford", "Biology", 2014, 9000),
)
_JORDAN: Final = (1011, "Jordan", "Sherwood", "M", "Manchester", "Chemistry", 2013, 9000)
_STUDENT_ROWID: Final = "AAASrPAAEAAAAQ2AA"  # + slot letter (1001 -> A ... 1011 -> K)
_COURSE_ROWID: Final = "AAASrKAAEAAAAQuAA"  # invented: the document never shows COURSE rows


class _Scenario:
    """Writes the scenario's LCRs, keeping the STUDENT rows to build before images."""

    def __init__(self, source: str, scn_offset: int) -> None:
        tables = {table.name: table for table in sample_table_definitions()}
        self.course = tables["COURSE"]
        self.student = tables["STUDENT"]
        self.source = source
        self.offset = scn_offset
        self.position = 0
        self.lcrs: list[LcrDict] = []
        self.students: dict[int, tuple[str | None, ...]] = {}

    @staticmethod
    def text(values: tuple[str | int, ...]) -> tuple[str | None, ...]:
        return tuple(str(value) for value in values)

    def _values(
        self, table: TableDefinition, row: tuple[str | None, ...], names: tuple[str, ...]
    ) -> list[ColumnValue]:
        return [
            {
                "column_name": name,
                "data_type": table.column(name).oracle_type.name,
                "value": row[table.column_names.index(name)],
            }
            for name in names
        ]

    def _lcr(
        self, command: str, table: TableDefinition | None, txid: str, scn: int, time: str
    ) -> LcrDict:
        self.position += 1
        lcr: LcrDict = {"source_database_name": self.source, "command_type": command}
        if table is not None:
            lcr["object_owner"] = table.owner
            lcr["object_name"] = table.name
        lcr["transaction_id"] = txid
        lcr["scn"] = scn + self.offset
        lcr["position"] = f"{self.position:020d}"
        lcr["source_time"] = time
        self.lcrs.append(lcr)
        return lcr

    def insert(
        self,
        table: TableDefinition,
        row: tuple[str | None, ...],
        *,
        txid: str,
        scn: int,
        time: str,
        row_id: str,
    ) -> None:
        lcr = self._lcr("INSERT", table, txid, scn, time)
        lcr["row_id"] = row_id
        lcr["new_values"] = self._values(table, row, table.column_names)
        if table is self.student:
            self.students[int(str(row[0]))] = row

    def update_fee(
        self, key: int, fee: int, *, txid: str, scn: int, time: str, row_id: str
    ) -> None:
        before = self.students[key]
        after = (*before[:-1], str(fee))
        lcr = self._lcr("UPDATE", self.student, txid, scn, time)
        lcr["row_id"] = row_id
        lcr["old_values"] = self._values(self.student, before, ("STUDENT_KEY", "TUITION_FEE"))
        lcr["new_values"] = self._values(self.student, after, ("TUITION_FEE",))
        self.students[key] = after

    def delete(self, key: int, *, txid: str, scn: int, time: str, row_id: str) -> None:
        before = self.students.pop(key)
        lcr = self._lcr("DELETE", self.student, txid, scn, time)
        lcr["row_id"] = row_id
        lcr["old_values"] = self._values(self.student, before, self.student.column_names)

    def commit(self, txid: str, scn: int, time: str) -> None:
        self._lcr(_COMMIT, None, txid, scn, time)


_STUDENT_ROW_IDS: Final = {
    1001 + slot: f"{_STUDENT_ROWID}{chr(ord('A') + slot)}" for slot in range(11)
}
_MOVED_ROW_IDS: Final = ("AAASrPAAEAAAAQ2AAD", "AAASrPAAEAAAAQ2AAL", "AAASrPAAEAAAAQ2AAM")
_DIRECT_PATH_ROW_IDS: Final = ("AAASrPAAEAAAARgAAA", "AAASrPAAEAAAARgAAB", "AAASrPAAEAAAARgAAC")
_MULTI_ROW_KEYS: Final = (1007, 1008, 1009)


def _sample_scenario(source: str, start_scn: int) -> list[LcrDict]:
    """The reference document's scenario, in its order: initial data, single-row changes,
    multi-row changes, array and direct-path inserts."""
    if start_scn < 1:
        raise ConfigurationError("start_scn must be >= 1")
    s = _Scenario(source, start_scn - SAMPLE_START_SCN)
    _initial_data(s)
    _single_row_changes(s)
    _multi_row_changes(s)
    _bulk_inserts(s)
    return s.lcrs


def _initial_data(s: _Scenario) -> None:
    """The COURSE rows (COMMIT), then the STUDENT rows (COMMIT)."""
    time = "2013-03-31T23:50:00"
    for index, course in enumerate(_COURSE_ROWS):
        row_id = f"{_COURSE_ROWID}{chr(ord('A') + index)}"
        s.insert(
            s.course,
            s.text(course),
            txid="9.1.501",
            scn=1621200 + index // 2,
            time=time,
            row_id=row_id,
        )
    s.commit("9.1.501", 1621205, time)
    time = "2013-03-31T23:55:00"
    for index, student in enumerate(_STUDENT_ROWS):
        s.insert(
            s.student,
            s.text(student),
            txid="9.2.502",
            scn=1621206 + index // 2,
            time=time,
            row_id=_STUDENT_ROW_IDS[student[0]],
        )
    s.commit("9.2.502", 1621211, time)


def _single_row_changes(s: _Scenario) -> None:
    # Single row insertion (the contract's example).
    time = "2013-03-31T23:59:58"
    s.insert(
        s.student,
        s.text(_JORDAN),
        txid="4.11.854",
        scn=1621214,
        time=time,
        row_id=_STUDENT_ROW_IDS[1011],
    )
    s.commit("4.11.854", 1621215, time)

    time = "2013-04-01T00:55:00"
    s.update_fee(1010, 6000, txid="3.6.1012", scn=1622899, time=time, row_id=_STUDENT_ROW_IDS[1010])
    s.commit("3.6.1012", 1622900, time)

    time = "2013-04-01T02:35:47"
    s.delete(1004, txid="1.33.830", scn=1625892, time=time, row_id=_STUDENT_ROW_IDS[1004])
    s.commit("1.33.830", 1625893, time)


def _multi_row_changes(s: _Scenario) -> None:
    # Multi-row update: preparation, then UPDATE ... WHERE tuition_fee = 8000.
    time = "2013-04-01T05:10:00"
    for key in _MULTI_ROW_KEYS:
        s.update_fee(
            key, 8000, txid="9.3.503", scn=1630500, time=time, row_id=_STUDENT_ROW_IDS[key]
        )
    s.commit("9.3.503", 1630501, time)
    time = "2013-04-01T05:14:37"
    for key in _MULTI_ROW_KEYS:
        s.update_fee(
            key, 7500, txid="6.27.1204", scn=1630606, time=time, row_id=_STUDENT_ROW_IDS[key]
        )
    s.commit("6.27.1204", 1630607, time)

    # Multi-row delete: preparation, then DELETE ... WHERE tuition_fee = 8000.
    time = "2013-04-01T09:45:00"
    for key, row_id in zip(_MULTI_ROW_KEYS, _MOVED_ROW_IDS, strict=True):
        s.update_fee(key, 8000, txid="9.4.504", scn=1638300, time=time, row_id=row_id)
    s.commit("9.4.504", 1638301, time)
    time = "2013-04-01T09:49:28"
    for key, row_id in zip(_MULTI_ROW_KEYS, _MOVED_ROW_IDS, strict=True):
        s.delete(key, txid="3.23.1016", scn=1638366, time=time, row_id=row_id)
    s.commit("3.23.1016", 1638367, time)


def _bulk_inserts(s: _Scenario) -> None:
    # Array insert: INSERT INTO student SELECT * FROM student_temp (one scn, one LCR per row).
    rows = {row[0]: s.text(row) for row in _STUDENT_ROWS}
    time = "2013-04-01T11:38:17"
    for key in _MULTI_ROW_KEYS:
        s.insert(
            s.student,
            rows[key],
            txid="7.13.846",
            scn=1641682,
            time=time,
            row_id=_STUDENT_ROW_IDS[key],
        )
    s.commit("7.13.846", 1641683, time)

    # Direct-path insert: preparation (DELETE ... IN (1007,1008,1009)), then INSERT /*+ APPEND */.
    time = "2013-04-01T18:00:00"
    for key in _MULTI_ROW_KEYS:
        s.delete(key, txid="9.5.505", scn=1652700, time=time, row_id=_STUDENT_ROW_IDS[key])
    s.commit("9.5.505", 1652701, time)
    time = "2013-04-01T18:04:53"
    for key, row_id in zip(_MULTI_ROW_KEYS, _DIRECT_PATH_ROW_IDS, strict=True):
        s.insert(s.student, rows[key], txid="4.21.865", scn=1652768, time=time, row_id=row_id)
    s.commit("4.21.865", 1652769, time)
