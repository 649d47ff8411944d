"""Hypothesis workloads for the differential test (engine vs reference applier).

``workloads()`` draws ``(settings, lcrs, initial_rows)``: one apply process over 1-3 small tables
and 1-2 source databases, and 1-15 source transactions written as contract-exact LCR dicts
(values as strings, as a capture writes them), in arrival order. The transactions are generated
against a model of each source table, so most of them apply cleanly; a few LCRs are then damaged
on purpose (stale old values, unknown columns, bad numbers, over-long strings, missing keys, NULLs
into NOT NULL columns, rows the destination lacks) so that every error path is reached, and the
small key space makes conflicts between transactions and sources likely.

The initial rows of each destination table are the source rows at its instantiation SCN (raw
strings, as an initial copy would give them); transactions committed at or before that SCN are
then discarded by the apply.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from lakeapply.contract.table_definitions import TableDefinition, table_definition_from_dict
from lakeapply.silver.settings import (
    ApplySettings,
    CommitSerialization,
    ConflictResolution,
    DestinationTable,
    UpdateConflictHandler,
)

Lcr = dict[str, Any]
Workload = tuple[ApplySettings, list[Lcr], dict[str, list[dict[str, Any]]]]
SourceRow = dict[str, Any]  # column -> raw LCR value
# (source database, table name) -> source primary key (ID) -> row
SourceState = dict[tuple[str, str], dict[int, SourceRow]]

SOURCES = ("DBA.EXAMPLE.COM", "DBB.EXAMPLE.COM")
FOREIGN_SOURCE = "DBZ.EXAMPLE.COM"  # a source database the apply does not read
OWNER = "APP"
UNMAPPED_TABLE = "UNMAPPED"  # captured, but no destination table: filtered by the rules
BASE_SCN = 1000
KEY_SPACE = range(1, 6)

DATA_TYPES = {
    "ID": "NUMBER",
    "CODE": "VARCHAR2",
    "AMOUNT": "NUMBER",
    "NOTE": "VARCHAR2",
    "VERSION": "NUMBER",
    "QTY": "NUMBER",
    "TS": "TIMESTAMP",
}
VALUES: dict[str, tuple[Any, ...]] = {
    "CODE": (None, "A", "B"),
    "AMOUNT": ("0", "1.5", "12.25", "-3", "7.125", "99.99", "100", None),
    "NOTE": (None, "ab", "wxyz", "q"),
    "VERSION": tuple(str(v) for v in range(1, 10)),
    "QTY": tuple(str(v) for v in range(10)),
    "TS": (*tuple(f"2024-01-0{day}T10:00:00" for day in range(1, 10)), None),
}
# The damage an LCR of each command may carry, on purpose (about one operation in six).
FAULTS = {
    "INSERT": (
        "unknown_column",
        "bad_number",
        "overflow",
        "too_long",
        "missing_key",
        "null_not_null",
    ),
    "UPDATE": (
        "unknown_column",
        "bad_number",
        "overflow",
        "too_long",
        "missing_key",
        "null_not_null",
        "stale_old",
        "stale_old",
        "stale_old",
        "missing_row",
    ),
    "DELETE": ("unknown_column", "missing_key", "stale_old", "stale_old", "missing_row"),
}
# Values the generators above never produce: a stale old value always conflicts.
STALE = {"AMOUNT": "555.55", "NOTE": "zz", "VERSION": "77", "QTY": "8.5", "TS": "1999-12-31"}


@dataclass(frozen=True)
class _TableSpec:
    definition: TableDefinition
    substitute_key: tuple[str, ...]
    handlers: tuple[UpdateConflictHandler, ...]
    uncompared: frozenset[tuple[str, str]]

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def key(self) -> tuple[str, ...]:
        return self.definition.key_columns(self.substitute_key)

    def has(self, column: str) -> bool:
        return column in self.definition.column_names


def _chance(draw: st.DrawFn, one_in: int) -> bool:
    return draw(st.integers(0, one_in - 1)) == 0


def _table_spec(draw: st.DrawFn, name: str) -> _TableSpec:
    columns: list[dict[str, Any]] = [
        {"name": "ID", "type": "NUMBER(3)", "nullable": False},
        {"name": "CODE", "type": "VARCHAR2(3)"},
        {"name": "AMOUNT", "type": "NUMBER(5,2)"},
        {"name": "NOTE", "type": "VARCHAR2(4)"},
        {"name": "VERSION", "type": "NUMBER"},
    ]
    if draw(st.booleans()):
        columns.append({"name": "QTY", "type": "NUMBER(3)", "nullable": False, "default": "0"})
    if _chance(draw, 3):
        columns.append({"name": "TS", "type": "TIMESTAMP"})
    definition = table_definition_from_dict(
        {"owner": OWNER, "name": name, "columns": columns, "primary_key": ["ID"]},
        f"workload table {name}",
    )
    # A substitute key holding a nullable column (rule 5), sometimes.
    substitute_key = ("ID", "CODE") if _chance(draw, 3) else ()
    handlers: tuple[UpdateConflictHandler, ...] = draw(
        st.sampled_from(
            [
                (),
                (),
                (UpdateConflictHandler(ConflictResolution.OVERWRITE, ("NOTE",), "NOTE"),),
                (UpdateConflictHandler(ConflictResolution.DISCARD, ("NOTE",), "NOTE"),),
                (
                    UpdateConflictHandler(
                        ConflictResolution.MAXIMUM, ("AMOUNT", "VERSION"), "VERSION"
                    ),
                ),
                (
                    UpdateConflictHandler(
                        ConflictResolution.MINIMUM, ("AMOUNT", "VERSION"), "VERSION"
                    ),
                    UpdateConflictHandler(ConflictResolution.DISCARD, ("NOTE",), "NOTE"),
                ),
            ]
        )
    )
    uncompared: frozenset[tuple[str, str]] = draw(
        st.sampled_from(
            [
                frozenset(),
                frozenset(),
                frozenset({("NOTE", "UPDATE")}),
                frozenset({("AMOUNT", "*")}),
            ]
        )
    )
    return _TableSpec(definition, substitute_key, handlers, uncompared)


def _column_values(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"column_name": column, "data_type": DATA_TYPES.get(column, "VARCHAR2"), "value": value}
        for column, value in row.items()
    ]


def _key_text(draw: st.DrawFn, key: int) -> str | int:
    """The same NUMBER key, written the ways a capture may write it."""
    forms: list[str | int] = [str(key), str(key), f"{key}.0", key]
    return draw(st.sampled_from(forms))


def _new_row(draw: st.DrawFn, spec: _TableSpec, key: int) -> SourceRow:
    row: SourceRow = {"ID": str(key)}
    for column in spec.definition.column_names:
        if column != "ID":
            row[column] = draw(st.sampled_from(VALUES[column]))
    return row


class _TransactionWriter:
    """Writes the row LCRs of one source transaction against a working copy of the source."""

    def __init__(
        self,
        draw: st.DrawFn,
        database: str,
        transaction_id: str,
        specs: list[_TableSpec],
        state: SourceState,
    ) -> None:
        self.draw = draw
        self.database = database
        self.transaction_id = transaction_id
        self.specs = specs
        self.state = state  # the transaction's working copy: it may be thrown away
        self.lcrs: list[Lcr] = []

    def _lcr(self, command: str, table: str, **images: list[dict[str, Any]]) -> None:
        record: Lcr = {
            "source_database_name": self.database,
            "command_type": command,
            "transaction_id": self.transaction_id,
            "object_owner": OWNER,
            "object_name": table,
        }
        record.update(images)
        self.lcrs.append(record)

    def write_operation(self) -> None:
        draw = self.draw
        if _chance(draw, 10):
            key = draw(st.sampled_from(KEY_SPACE))
            self._lcr(
                "INSERT",
                UNMAPPED_TABLE,
                new_values=_column_values({"ID": str(key), "X": "whatever"}),
            )
            return
        spec = draw(st.sampled_from(self.specs))
        rows = self.state.setdefault((self.database, spec.name), {})
        operation = draw(st.sampled_from(["INSERT", "INSERT", "UPDATE", "UPDATE", "DELETE"]))
        if not rows:
            operation = "INSERT"
        fault = draw(st.sampled_from(FAULTS[operation])) if _chance(draw, 6) else None
        if fault == "missing_row":
            missing = [key for key in KEY_SPACE if key not in rows]
            if missing:
                self._missing_row(spec, operation, draw(st.sampled_from(missing)))
                return
            fault = None
        if operation == "INSERT":
            self._insert(spec, rows, fault)
        elif operation == "UPDATE":
            self._update(spec, rows, fault)
        else:
            self._delete(spec, rows, fault)

    def _damage(self, image: dict[str, Any], fault: str | None) -> None:
        """The faults any image can carry (rule 6), applied in place."""
        if fault == "unknown_column":
            image["NICKNAME"] = "x"
        elif fault == "bad_number":
            image["AMOUNT"] = "1x"
        elif fault == "overflow":
            image["AMOUNT"] = "12345.6"  # NUMBER(5,2): three integer digits at most
        elif fault == "too_long":
            image["NOTE"] = "toolong"

    def _insert(self, spec: _TableSpec, rows: dict[int, SourceRow], fault: str | None) -> None:
        draw = self.draw
        free = [key for key in KEY_SPACE if key not in rows]
        if free and not _chance(draw, 8):
            key = draw(st.sampled_from(free))
        else:
            key = draw(st.sampled_from(KEY_SPACE))  # the destination may hold it: ORA-00001
        row = _new_row(draw, spec, key)
        image = dict(row)
        image["ID"] = _key_text(draw, key)
        # A column left out of the INSERT gets its default (QTY) or NULL (NOTE).
        if spec.has("QTY") and _chance(draw, 4):
            del image["QTY"]
            row["QTY"] = "0"
        if _chance(draw, 6):
            del image["NOTE"]
            row["NOTE"] = None
        self._damage(image, fault)
        if fault == "missing_key":
            del image[draw(st.sampled_from(spec.key))]
        elif fault == "null_not_null":
            image["QTY" if spec.has("QTY") else "ID"] = None
        rows[key] = row
        self._lcr("INSERT", spec.name, new_values=_column_values(image))

    def _old_image(self, spec: _TableSpec, row: SourceRow, changed: list[str]) -> dict[str, Any]:
        """Key columns (supplemental logging) and changed columns; sometimes every column."""
        columns = list(row) if _chance(self.draw, 3) else [*spec.key, *changed]
        image = {column: row[column] for column in dict.fromkeys(columns)}
        image["ID"] = _key_text(self.draw, int(row["ID"]))
        return image

    def _stale(self, spec: _TableSpec, old: dict[str, Any]) -> None:
        """An old value the destination does not hold (rule 7), often in a handler's group."""
        handled = [c for handler in spec.handlers for c in handler.column_list if c in STALE]
        sent = [c for c in old if c in STALE and c not in spec.key]
        candidates = (handled if self.draw(st.booleans()) else []) or sent or ["AMOUNT"]
        column = self.draw(st.sampled_from(candidates))
        old[column] = STALE[column]

    def _update(self, spec: _TableSpec, rows: dict[int, SourceRow], fault: str | None) -> None:
        draw = self.draw
        key = draw(st.sampled_from(sorted(rows)))
        row = rows[key]
        candidates = [c for c in spec.definition.column_names if c not in ("ID",)]
        changed = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
        new_row = dict(row)
        for column in changed:
            if column == "VERSION" and not _chance(draw, 4):  # versions mostly go up
                new_row[column] = str(int(row[column]) + 1)
            else:
                new_row[column] = draw(st.sampled_from(VALUES[column]))
        new_key = key
        free = [k for k in KEY_SPACE if k not in rows]
        if free and _chance(draw, 5):  # a key-changing update: the row moves
            new_key = draw(st.sampled_from(free))
            new_row["ID"] = str(new_key)
            changed.append("ID")
        old = self._old_image(spec, row, changed)
        new = {column: new_row[column] for column in changed}
        if "ID" in new:
            new["ID"] = _key_text(draw, new_key)
        self._damage(new, fault)
        if fault == "missing_key":
            del old[draw(st.sampled_from(spec.key))]
        elif fault == "null_not_null":
            new["QTY" if spec.has("QTY") else "ID"] = None
        elif fault == "stale_old":
            self._stale(spec, old)
        elif spec.handlers and _chance(draw, 3):  # a conflict a handler should resolve
            column = draw(st.sampled_from([c for h in spec.handlers for c in h.column_list]))
            old[column] = STALE[column]
        del rows[key]
        rows[new_key] = new_row
        self._lcr(
            "UPDATE", spec.name, old_values=_column_values(old), new_values=_column_values(new)
        )

    def _delete(self, spec: _TableSpec, rows: dict[int, SourceRow], fault: str | None) -> None:
        draw = self.draw
        key = draw(st.sampled_from(sorted(rows)))
        old = dict(rows.pop(key))
        old["ID"] = _key_text(draw, key)
        if fault == "missing_key":
            del old[draw(st.sampled_from(spec.key))]
        elif fault == "stale_old":
            self._stale(spec, old)
        elif fault == "unknown_column":
            old["NICKNAME"] = "x"
        self._lcr("DELETE", spec.name, old_values=_column_values(old))

    def _missing_row(self, spec: _TableSpec, operation: str, key: int) -> None:
        """An UPDATE or DELETE of a row the source does not have either: ORA-26787."""
        row = _new_row(self.draw, spec, key)
        old = {column: row[column] for column in spec.key}
        if operation == "UPDATE":
            new = {"NOTE": "q"}
            self._lcr(
                "UPDATE", spec.name, old_values=_column_values(old), new_values=_column_values(new)
            )
        else:
            self._lcr("DELETE", spec.name, old_values=_column_values(row))


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    """One differential-test workload: ``(settings, lcrs in arrival order, initial_rows)``."""
    sources = SOURCES[: draw(st.integers(1, 2))]
    specs = [_table_spec(draw, f"T{index}") for index in range(1, draw(st.integers(1, 3)) + 1)]
    shared = len(sources) == 2 and draw(st.booleans())  # both sources feed the same silver tables

    def silver_table(database: str, spec: _TableSpec) -> str:
        if shared:
            return spec.name.lower()
        return f"{database.split('.', maxsplit=1)[0].lower()}_{spec.name.lower()}"

    # The source tables before the first transaction: in every initial copy.
    state: SourceState = {}
    for database in sources:
        for spec in specs:
            keys = draw(st.lists(st.sampled_from(KEY_SPACE), max_size=3, unique=True))
            state[(database, spec.name)] = {key: _new_row(draw, spec, key) for key in keys}
    snapshots = [copy.deepcopy(state)]  # snapshots[i]: after the first i commits
    commit_scns: list[int] = []  # of the committed transactions, in commit order

    use_positions = draw(st.booleans())
    commit_scn_per_record = _chance(draw, 4)  # GoldenGate style
    transactions: list[list[Lcr]] = []
    next_scn = BASE_SCN + 10
    last_commit_scn = next_scn
    for number in range(1, draw(st.integers(1, 15)) + 1):
        database = FOREIGN_SOURCE if _chance(draw, 20) else draw(st.sampled_from(sources))
        transaction_id = f"{number}.{draw(st.integers(0, 30))}.{draw(st.integers(1, 9999))}"
        outcome = draw(st.sampled_from(["commit"] * 7 + ["rollback", "open", "ddl"]))
        working = copy.deepcopy(state)
        writer = _TransactionWriter(draw, database, transaction_id, specs, working)
        if outcome == "ddl":
            writer.lcrs.append(
                {
                    "source_database_name": database,
                    "command_type": "COMMENT",
                    "transaction_id": transaction_id,
                    "object_owner": OWNER,
                    "object_name": specs[0].name,
                    "object_type": "TABLE",
                    "ddl_text": f"COMMENT ON TABLE {OWNER}.{specs[0].name} IS 'workload'",
                }
            )
        else:
            for _ in range(draw(st.integers(1, 4))):
                writer.write_operation()
        # SCNs: a transaction may start before the previous one committed (interleaving).
        scn = max(BASE_SCN + 1, next_scn - draw(st.integers(0, 6)))
        for index, lcr in enumerate(writer.lcrs):
            if index and not (use_positions and _chance(draw, 4)):  # equal SCNs need positions
                scn += 1
            lcr["scn"] = scn
            if use_positions:
                lcr["position"] = f"{scn:012d}{index:04d}"
            if _chance(draw, 12):
                lcr["tag"] = "01"
            if _chance(draw, 3):
                lcr["source_time"] = "2024-01-01T00:00:00"
        lcrs = writer.lcrs
        if outcome in ("commit", "ddl"):
            commit_scn = max(last_commit_scn + draw(st.integers(0, 3)), scn + 1)
            last_commit_scn = commit_scn
            ddl_by_commit_scn = outcome == "ddl" and draw(st.booleans())
            if commit_scn_per_record or ddl_by_commit_scn:
                for lcr in lcrs:
                    lcr["commit_scn"] = commit_scn
            if not ddl_by_commit_scn:
                lcrs.append(_directive(database, transaction_id, "COMMIT", commit_scn))
            if database in sources:
                state = working
                snapshots.append(copy.deepcopy(state))
                commit_scns.append(commit_scn)
            next_scn = commit_scn + 1
        else:
            if outcome == "rollback":
                lcrs.append(_directive(database, transaction_id, "ROLLBACK", scn + 1))
            next_scn = max(next_scn, scn + 2)
        transactions.append(lcrs)

    # Instantiation SCNs: each destination table, or its schema, or its database (rule 3).
    def instantiation(point: int) -> int:
        return BASE_SCN if point == 0 else commit_scns[point - 1]

    def draw_point() -> int:
        return draw(st.integers(0, len(commit_scns))) if _chance(draw, 3) else 0

    level = draw(st.sampled_from(["table", "table", "schema", "global"]))
    tables: list[DestinationTable] = []
    schema_scns: list[tuple[str, str, int]] = []
    global_scns: list[tuple[str, int]] = []
    points: dict[tuple[str, str], int] = {}
    for database in sources:
        database_point = draw_point()
        if level == "schema":
            schema_scns.append((database, OWNER, instantiation(database_point)))
        elif level == "global":
            global_scns.append((database, instantiation(database_point)))
        for spec in specs:
            table_scn: int | None = None
            point = database_point
            if level == "table" or _chance(draw, 4):  # a table-level SCN overrides the others
                point = draw_point()
                table_scn = instantiation(point)
                if level == "table" and _chance(draw, 40):
                    table_scn, point = None, 0  # no instantiation SCN at all: ORA-26687
            points[(database, spec.name)] = point
            tables.append(
                DestinationTable(
                    source_database=database,
                    definition=spec.definition,
                    silver_table=silver_table(database, spec),
                    key_columns=spec.substitute_key,
                    instantiation_scn=table_scn,
                    update_conflict_handlers=spec.handlers,
                    uncompared_columns=spec.uncompared,
                )
            )

    # The initial copy of each silver table: the source rows at its instantiation SCN. A table
    # both sources feed keeps the first row of each destination key.
    initial_rows: dict[str, list[dict[str, Any]]] = {}
    for table in tables:
        spec = next(s for s in specs if s.definition is table.definition)
        snapshot = snapshots[points[(table.source_database, spec.name)]]
        rows = initial_rows.setdefault(table.silver_table, [])
        seen = {_destination_key(spec, row) for row in rows}
        for _, row in sorted(snapshot[(table.source_database, spec.name)].items()):
            if _destination_key(spec, row) not in seen:
                seen.add(_destination_key(spec, row))
                rows.append(dict(row))

    settings = ApplySettings(
        apply_name="DIFF_APPLY",
        source_databases=sources,
        tables=tuple(tables),
        commit_serialization=draw(st.sampled_from(list(CommitSerialization))),
        disable_on_error=draw(st.booleans()),
        discard_tagged=draw(st.booleans()),
        schema_instantiation_scns=tuple(schema_scns),
        global_instantiation_scns=tuple(global_scns),
    )

    # Arrival order: transaction after transaction, or transactions shuffled, or every LCR
    # shuffled (the apply orders by CSCN, then scn, position and arrival).
    arrival = draw(st.sampled_from(["in order", "transactions shuffled", "lcrs shuffled"]))
    if arrival == "transactions shuffled":
        transactions = draw(st.permutations(transactions))
    lcrs = [lcr for transaction in transactions for lcr in transaction]
    if arrival == "lcrs shuffled":
        lcrs = draw(st.permutations(lcrs))
    return settings, list(lcrs), initial_rows


def _destination_key(spec: _TableSpec, row: SourceRow) -> tuple[Any, ...]:
    return tuple(int(row[c]) if c == "ID" else row[c] for c in spec.key)


def _directive(database: str, transaction_id: str, command: str, scn: int) -> Lcr:
    return {
        "source_database_name": database,
        "command_type": command,
        "transaction_id": transaction_id,
        "scn": scn,
    }
