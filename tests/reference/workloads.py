"""Hypothesis workloads for the differential test (engine vs reference applier).

``workloads()`` draws a :class:`Workload` in the public formats only (lakeapply.yml entry, table
definition documents, contract LCRs), so that the engine reads it through its own loaders and the
reference applier through its own: one apply process over 1-3 small tables (with columns of every
contract type) and 1-2 source databases, and 1-15 source transactions written as contract-exact LCR dicts
(values as strings, as a capture writes them), in arrival order, sometimes with a transaction
delivered again or an LCR line twice (rule 11). The transactions are generated
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from .dml_handlers import EXAMPLES, STATEMENTS

Lcr = dict[str, Any]
SourceRow = dict[str, Any]  # column -> raw LCR value
# (source database, table name) -> source primary key (ID) -> row
SourceState = dict[tuple[str, str], dict[int, SourceRow]]
# (source database, table name) -> the column a column DDL added: (name, VARCHAR2 length)
Extras = dict[tuple[str, str], tuple[str, int]]


@dataclass
class Workload:
    """One generated apply run, in the public formats only: ``process`` is one
    ``apply_processes`` entry of lakeapply.yml whose tables name their definition files,
    ``definitions`` maps those file names to table-definition documents, ``lcrs`` are contract
    LCR dicts in arrival order, ``initial`` the initial copy of each silver table (raw LCR
    values); ``landing``: when set, the arrival positions where the ingest batches end
    (exclusive; the last is ``len(lcrs)``), a landing order that may break commit order (late
    input, D24); when empty, the batches are cut in commit order."""

    process: dict[str, Any]
    definitions: dict[str, dict[str, Any]]
    lcrs: list[Lcr]
    initial: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    landing: tuple[int, ...] = ()


SOURCES = ("DBA.EXAMPLE.COM", "DBB.EXAMPLE.COM")
FOREIGN_SOURCE = "DBZ.EXAMPLE.COM"  # a source database the apply does not read
OWNER = "APP"
UNMAPPED_TABLE = "UNMAPPED"  # captured, but no destination table: filtered by the rules
BASE_SCN = 1000
KEY_SPACE = range(1, 6)
ADDED_COLUMN = "ORIGIN"  # a destination column the source lacks: an add_column transformation
# Column DDL (rule 10) adds a VARCHAR2 column EXTRA, renames it EXTRA <-> EXTRA2, widens it from
# VARCHAR2(5) to VARCHAR2(9), or drops it; values a capture then sends for it, per length.
EXTRA_NAMES = ("EXTRA", "EXTRA2")
EXTRA_VALUES = {5: ("e1", "abcde", None), 9: ("e1", "abcde", "ninechars", None)}
# Column DDL the destination refuses (the source table is left as it was): error number ->
# statement on table T.
FAILING_COLUMN_DDL = {
    1430: "ADD (CODE VARCHAR2(3))",
    904: "DROP COLUMN NOPE",
    12991: "DROP COLUMN ID",
    957: "RENAME COLUMN CODE TO NOTE",
    1439: "MODIFY (CODE NUMBER)",
    1440: "MODIFY (AMOUNT NUMBER(4,2))",
}
# The refused MODIFYs that an empty column takes (every value NULL), and their column.
NEEDS_A_VALUE = {1439: "CODE", 1440: "AMOUNT"}


def _holds_a_value(rows: dict[int, SourceRow], column: str) -> bool:
    return any(row.get(column) is not None for row in rows.values())


@dataclass(frozen=True)
class _TypedColumn:
    """A column of one of the contract's types: its Oracle type, the LCR data_type, the values
    a capture sends for it, a value the generators never send (a stale old value) and values
    the destination cannot take (each with the error it raises, for the reader)."""

    type: str
    data_type: str
    values: tuple[Any, ...]
    stale: str
    bad: tuple[str, ...] = ()


# Every type of the contract, each with value forms that must convert to the same stored value.
TYPED_COLUMNS: dict[str, _TypedColumn] = {
    "PRICE": _TypedColumn(  # NUMBER(6,3): extra fraction digits round half up; no negative zero
        "NUMBER(6,3)",
        "NUMBER",
        ("1.23456", "2.0005", "-0.0004", " 7 ", "1e2", "-12.5", None),
        "555.555",
        ("abc", "1234.5"),  # 01722, 01438
    ),
    "RATIO": _TypedColumn(
        "BINARY_FLOAT", "BINARY_FLOAT", ("1.5", "0.1", "-2", "1e10", None), "9.75", ("x1", "1e39")
    ),
    "MEASURE": _TypedColumn(
        "BINARY_DOUBLE",
        "BINARY_DOUBLE",
        ("0.1", "1e-5", "-3.25", "123456789.125", None),
        "6.5",
        ("1.2.3",),
    ),
    "FLAG": _TypedColumn("CHAR(3)", "CHAR", ("a", "ab", "abc", None), "zzz", ("abcd",)),
    "INITIALS": _TypedColumn("NCHAR(2)", "NCHAR", ("\u00e9", "xy", None), "qq", ("xyz",)),
    "LABEL": _TypedColumn(
        "NVARCHAR2(5)", "NVARCHAR2", ("\u00fcber", "", "abc", None), "zzzzz", ("abcdef",)
    ),
    "DAY": _TypedColumn(
        "DATE",
        "DATE",
        ("2024-02-29T00:00:00", "2023-12-31T23:59:59", "2024-03-01", None),
        "1999-12-31T00:00:00",
        ("2024-13-01",),
    ),
    "STAMP": _TypedColumn(
        "TIMESTAMP(6)",
        "TIMESTAMP",
        ("2024-01-01T10:00:00.123456", "2024-01-01T10:00:00.1234569", "2024-06-01T12:30:00", None),
        "1999-12-31T00:00:00",
        ("yesterday",),
    ),
    "AT_TZ": _TypedColumn(
        "TIMESTAMP WITH TIME ZONE",
        "TIMESTAMP WITH TIME ZONE",
        ("2024-01-01T10:00:00+02:00", "2024-01-01T08:00:00+00:00", "2024-01-01T08:00:00", None),
        "1999-12-31T00:00:00+00:00",
        ("2024-01-01T25:00:00",),
    ),
    "AT_LTZ": _TypedColumn(
        "TIMESTAMP WITH LOCAL TIME ZONE",
        "TIMESTAMP WITH LOCAL TIME ZONE",
        ("2024-05-05T05:05:05-07:00", "2024-05-05T12:05:05", None),
        "1999-12-31T00:00:00",
        ("05/05/2024",),
    ),
    "TENURE": _TypedColumn(
        "INTERVAL YEAR(2) TO MONTH",
        "INTERVAL YEAR TO MONTH",
        ("+01-06", "P1Y6M", "-0-3", "P18M", None),
        "+99-11",
        ("P1D", "1-12"),
    ),
    "WAIT": _TypedColumn(
        "INTERVAL DAY(2) TO SECOND(6)",
        "INTERVAL DAY TO SECOND",
        ("+02 03:04:05.500000", "P2DT3H4M5.5S", "-PT30M", "0 00:00:01", None),
        "+99 00:00:00.000000",
        ("2 25:00:00", "soon"),
    ),
    "DIGEST": _TypedColumn(
        "RAW(4)", "RAW", ("00ff", "DEADBEEF", "0a", None), "0000", ("xyz", "0102030405")
    ),
    "BODY": _TypedColumn("CLOB", "CLOB", ("clob " * 40, "short", "", None), "stale clob"),
    "IMAGE": _TypedColumn("BLOB", "BLOB", ("0102", "ff" * 300, None), "fefe", ("0g",)),
}

DATA_TYPES = {
    "ID": "NUMBER",
    "CODE": "VARCHAR2",
    "AMOUNT": "NUMBER",
    "NOTE": "VARCHAR2",
    "VERSION": "NUMBER",
    "QTY": "NUMBER",
    "TS": "TIMESTAMP",
    **{name: column.data_type for name, column in TYPED_COLUMNS.items()},
}
VALUES: dict[str, tuple[Any, ...]] = {
    "CODE": (None, "A", "B"),
    "AMOUNT": ("0", "1.5", "12.25", "-3", "7.125", "99.99", "100", None),
    "NOTE": (None, "ab", "wxyz", "q"),
    "VERSION": tuple(str(v) for v in range(1, 10)),
    "QTY": tuple(str(v) for v in range(10)),
    "TS": (*tuple(f"2024-01-0{day}T10:00:00" for day in range(1, 10)), None),
    **{name: column.values for name, column in TYPED_COLUMNS.items()},
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
        *["bad_typed"] * 6,
    ),
    "UPDATE": (
        "unknown_column",
        "bad_number",
        "overflow",
        "too_long",
        "missing_key",
        "null_not_null",
        *["bad_typed"] * 4,
        "stale_old",
        "stale_old",
        "stale_old",
        "missing_row",
    ),
    "DELETE": ("unknown_column", "missing_key", "stale_old", "stale_old", "missing_row"),
}
# LOB pieces (rule 12) change these columns of TYPED_COLUMNS; a piece is text or hex.
LOB_COLUMNS = ("BODY", "IMAGE")
LOB_PIECES = {"BODY": ("x", "abc", "\u00e9t\u00e9"), "IMAGE": ("ff", "0a0b", "00")}
# Values the generators above never produce: a stale old value always conflicts.
STALE = {
    "AMOUNT": "555.55",
    "NOTE": "zz",
    "VERSION": "77",
    "QTY": "8.5",
    "TS": "1999-12-31",
    **{name: column.stale for name, column in TYPED_COLUMNS.items()},
}


@dataclass(frozen=True)
class _TableSpec:
    document: dict[str, Any]  # the table-definition document
    substitute_key: tuple[str, ...]
    handlers: tuple[dict[str, Any], ...]  # update_conflict_handlers entries of lakeapply.yml
    uncompared: tuple[dict[str, Any], ...]  # compare_old_values entries of lakeapply.yml
    # Column discrepancies (rule 6) and the declarative transformations that fix them or not:
    # the source also sends LEGACY (the destination lacks it), calls NOTE "REMARK", lacks ORIGIN.
    legacy_column: bool = False
    note_renamed: bool = False
    transformations: tuple[dict[str, Any], ...] = ()

    @property
    def name(self) -> str:
        return str(self.document["name"])

    @property
    def source_columns(self) -> tuple[str, ...]:
        """The destination's columns the source table has too."""
        return tuple(c for c in self.column_names if c != ADDED_COLUMN)

    def as_captured(self, command: str, images: dict[str, list[dict[str, Any]]]) -> None:
        """The images as the source table's capture writes them (in place)."""
        for name, values in images.items():
            for value in values:
                if self.note_renamed and value["column_name"] == "NOTE":
                    value["column_name"] = "REMARK"
            if self.legacy_column and name == "new_values" and command == "INSERT":
                values.append({"column_name": "LEGACY", "data_type": "VARCHAR2", "value": "old"})

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column["name"] for column in self.document["columns"])

    @property
    def key(self) -> tuple[str, ...]:
        return self.substitute_key or ("ID",)

    @property
    def handled_columns(self) -> list[str]:
        return [column for handler in self.handlers for column in handler["column_list"]]

    def has(self, column: str) -> bool:
        return column in self.column_names


def _chance(draw: st.DrawFn, one_in: int) -> bool:
    return draw(st.integers(0, one_in - 1)) == 0


def _handler(method: str, columns: list[str], resolution: str) -> dict[str, Any]:
    return {"method": method, "column_list": columns, "resolution_column": resolution}


def _table_spec(draw: st.DrawFn, name: str, typed: bool) -> _TableSpec:
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
    if typed:
        chosen = draw(
            st.lists(st.sampled_from(sorted(TYPED_COLUMNS)), min_size=2, max_size=6, unique=True)
        )
        columns += [{"name": c, "type": TYPED_COLUMNS[c].type} for c in sorted(chosen)]
    document = {"owner": OWNER, "name": name, "columns": columns, "primary_key": ["ID"]}
    # A substitute key holding a nullable column (rule 5), sometimes.
    substitute_key = ("ID", "CODE") if _chance(draw, 3) else ()
    handlers: tuple[dict[str, Any], ...] = draw(
        st.sampled_from(
            [
                (),
                (),
                (_handler("OVERWRITE", ["NOTE"], "NOTE"),),
                (_handler("DISCARD", ["NOTE"], "NOTE"),),
                (_handler("MAXIMUM", ["AMOUNT", "VERSION"], "VERSION"),),
                (
                    _handler("MINIMUM", ["AMOUNT", "VERSION"], "VERSION"),
                    _handler("DISCARD", ["NOTE"], "NOTE"),
                ),
            ]
        )
    )
    uncompared: tuple[dict[str, Any], ...] = draw(
        st.sampled_from(
            [
                (),
                (),
                ({"columns": ["NOTE"], "operations": ["UPDATE"], "compare": False},),
                ({"columns": ["AMOUNT"], "operations": ["UPDATE", "DELETE"], "compare": False},),
            ]
        )
    )
    legacy, renamed = _chance(draw, 4), _chance(draw, 5)
    transformations: list[dict[str, Any]] = []
    if legacy and draw(st.booleans()):  # else: ORA-00904 for every INSERT
        transformations.append({"delete_column": "LEGACY"})
    if renamed:
        transformations.append({"rename_column": {"from": "REMARK", "to": "NOTE"}})
    if _chance(draw, 5):  # a destination-only column, filled on INSERT and UPDATE
        columns.append({"name": ADDED_COLUMN, "type": "VARCHAR2(8)"})
        transformations.append({"add_column": {"column": ADDED_COLUMN, "value": "CDC"}})
    return _TableSpec(
        document, substitute_key, handlers, uncompared, legacy, renamed, tuple(transformations)
    )


def _column_values(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"column_name": column, "data_type": DATA_TYPES.get(column, "VARCHAR2"), "value": value}
        for column, value in row.items()
    ]


def _key_text(draw: st.DrawFn, key: int) -> str | int:
    """The same NUMBER key, written the ways a capture may write it."""
    forms: list[str | int] = [str(key), str(key), f"{key}.0", key]
    return draw(st.sampled_from(forms))


def _new_row(
    draw: st.DrawFn, spec: _TableSpec, key: int, extra: tuple[str, int] | None = None
) -> SourceRow:
    row: SourceRow = {"ID": str(key)}
    for column in spec.source_columns:
        if column != "ID":
            row[column] = draw(st.sampled_from(VALUES[column]))
    if extra is not None:
        row[extra[0]] = draw(st.sampled_from(EXTRA_VALUES[extra[1]]))
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
        extras: Extras | None = None,
    ) -> None:
        self.draw = draw
        self.database = database
        self.transaction_id = transaction_id
        self.specs = specs
        self.state = state  # the transaction's working copy: it may be thrown away
        self.extras = extras or {}  # columns added by column DDL, committed before
        self.lcrs: list[Lcr] = []

    def _extra(self, spec: _TableSpec) -> tuple[str, int] | None:
        return self.extras.get((self.database, spec.name))

    def _lcr(self, command: str, table: str, **images: list[dict[str, Any]]) -> None:
        record: Lcr = {
            "source_database_name": self.database,
            "command_type": command,
            "transaction_id": self.transaction_id,
            "object_owner": OWNER,
            "object_name": table,
        }
        for spec in self.specs:
            if spec.name == table:
                spec.as_captured(command, images)
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
        if rows and any(spec.has(c) for c in LOB_COLUMNS) and _chance(draw, 4):
            self._lob_piece(spec, rows)
            return
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
        elif fault == "bad_typed":
            typed = [c for c in TYPED_COLUMNS if c in image and TYPED_COLUMNS[c].bad]
            if typed:
                column = self.draw(st.sampled_from(typed))
                image[column] = self.draw(st.sampled_from(TYPED_COLUMNS[column].bad))

    def _insert(self, spec: _TableSpec, rows: dict[int, SourceRow], fault: str | None) -> None:
        draw = self.draw
        free = [key for key in KEY_SPACE if key not in rows]
        if free and not _chance(draw, 8):
            key = draw(st.sampled_from(free))
        else:
            key = draw(st.sampled_from(KEY_SPACE))  # the destination may hold it: ORA-00001
        row = _new_row(draw, spec, key, self._extra(spec))
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
        handled = [c for c in spec.handled_columns if c in STALE]
        sent = [c for c in old if c in STALE and c not in spec.key]
        candidates = (handled if self.draw(st.booleans()) else []) or sent or ["AMOUNT"]
        column = self.draw(st.sampled_from(candidates))
        old[column] = STALE[column]

    def _update(self, spec: _TableSpec, rows: dict[int, SourceRow], fault: str | None) -> None:
        draw = self.draw
        key = draw(st.sampled_from(sorted(rows)))
        row = rows[key]
        candidates = [c for c in spec.source_columns if c not in ("ID",)]
        extra = self._extra(spec)
        values = dict(VALUES)
        if extra is not None:
            candidates.append(extra[0])
            values[extra[0]] = EXTRA_VALUES[extra[1]]
        changed = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
        new_row = dict(row)
        for column in changed:
            if column == "VERSION" and not _chance(draw, 4):  # versions mostly go up
                new_row[column] = str(int(row[column]) + 1)
            else:
                new_row[column] = draw(st.sampled_from(values[column]))
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
            column = draw(st.sampled_from(spec.handled_columns))
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

    def _lob_piece(self, spec: _TableSpec, rows: dict[int, SourceRow]) -> None:
        """A LOB WRITE, TRIM or ERASE (rule 12) on a CLOB or BLOB column of a source row,
        sometimes damaged: a row the destination lacks (26787), an offset of 0 (21560), a trim
        beyond the length (22926), a column that is not a LOB (00932); a NULL LOB is 22275."""
        draw = self.draw
        column = draw(st.sampled_from([c for c in LOB_COLUMNS if spec.has(c)]))
        key = draw(st.sampled_from(sorted(rows)))
        row = rows[key]
        command = draw(st.sampled_from(["LOB WRITE", "LOB WRITE", "LOB TRIM", "LOB ERASE"]))
        fault = (
            draw(st.sampled_from(["missing_row", "offset_zero", "trim_beyond", "not_a_lob"]))
            if _chance(draw, 4)
            else None
        )
        binary = column == "IMAGE"
        raw = row[column]
        # The value as a list of units (characters, or byte values), so one code serves both.
        current: list[Any] | None = (
            None if raw is None else list(bytes.fromhex(raw)) if binary else list(raw)
        )
        filler: Any = 0 if binary else " "
        length = 0 if current is None else len(current)
        piece: str | None = None
        fields: dict[str, Any] = {"lob_information": "LAST_LOB_CHUNK"}
        updated = current
        if command == "LOB WRITE":
            piece = draw(st.sampled_from(LOB_PIECES[column]))
            offset = 0 if fault == "offset_zero" else draw(st.integers(1, length + 3))
            fields["lob_offset"] = offset
            if current is not None and offset > 0:
                chunk = list(bytes.fromhex(piece)) if binary else list(piece)
                padded = current + [filler] * max(0, offset - 1 - length)
                updated = padded[: offset - 1] + chunk + padded[offset - 1 + len(chunk) :]
        elif command == "LOB TRIM":
            size = length + 1 if fault == "trim_beyond" else draw(st.integers(0, length))
            fields["lob_operation_size"] = size
            updated = None if current is None else current[:size]
        else:
            offset = 0 if fault == "offset_zero" else draw(st.integers(1, length + 2))
            amount = draw(st.integers(1, 4))
            fields.update(lob_offset=offset, lob_operation_size=amount)
            if current is not None and offset > 0:
                begin, end = min(offset - 1, length), min(offset - 1 + amount, length)
                updated = current[:begin] + [filler] * (end - begin) + current[end:]
        if fault == "missing_row":
            missing = [k for k in KEY_SPACE if k not in rows]
            key = draw(st.sampled_from(missing)) if missing else key
        image = {c: row[c] for c in spec.key}
        image["ID"] = _key_text(draw, key)
        image["NOTE" if fault == "not_a_lob" else column] = piece
        self._lcr(command, spec.name, new_values=_column_values(image))
        self.lcrs[-1].update(fields)
        if key in rows and updated is not None and fault != "not_a_lob":
            row[column] = bytes(updated).hex() if binary else "".join(updated)

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
def workloads(
    draw: st.DrawFn,
    disable_on_error: bool | None = None,
    typed: bool = True,
    subset_rules: bool = False,
    truncates: bool = False,
    column_ddl: bool = False,
    virtual_dependencies: bool = False,
    drop_tables: bool = False,
    rule_transformations: bool = False,
    create_tables: bool = False,
    dml_handlers: bool = False,
    rename_tables: bool = False,
    error_handlers: bool = False,
    history_handlers: bool = False,
) -> Workload:
    """One differential-test workload. ``disable_on_error`` fixes that parameter (None: drawn);
    ``typed`` adds columns of every contract type to the tables, a few per table;
    ``subset_rules`` makes the positive rule set a subset rule per source; ``truncates`` makes
    half of the DDL transactions of the apply's sources a ``TRUNCATE TABLE`` (rule 10, applied)
    instead of a ``COMMENT`` (ignored); ``column_ddl`` makes half of them an ``ALTER TABLE``
    that adds, renames, widens or drops a column (or one the destination refuses), and gives
    each source its own silver tables; ``virtual_dependencies`` declares a value dependency on
    CODE over some tables and, with two tables or more, sometimes an object dependency (drawn
    last); ``drop_tables`` makes some DDL transactions a ``DROP TABLE`` of a source table (each
    source has its own silver tables), after which that source's transactions write the other
    tables, or (when none is left, or one time in four) the dropped one too: LCRs for a table
    that no longer exists at the destination (00942); ``rule_transformations`` gives the
    positive rule set rule transformations (D19: a table renamed to another one, the schema
    renamed to one without destinations, or a column deleted), drawn last; ``create_tables``
    (with ``drop_tables``) makes a third of the DDL transactions, once a table was dropped, a
    ``CREATE TABLE`` of a dropped one (D20: its destination made again, empty; later
    transactions write it again); ``dml_handlers`` gives each table one of the example DML
    handlers' combinations (D21: deletes ignored, negative amounts refused, NOTE set by an
    UPDATE handler, inserts checked with the rest ignored, inserts copied under -ID by a
    statement handler beside one executing them as captured), drawn last; ``error_handlers`` gives
    each table one of the example error handlers' combinations (D22, none sharing an operation
    with its DML handler), drawn after them; ``history_handlers`` (with ``dml_handlers``) adds
    a handler that executes every change and records it in CHANGES, another destination of
    each source (D23). All off by default, so the other callers' derandomized draws
    do not move."""
    sources = SOURCES[: draw(st.integers(1, 2))]
    specs = [
        _table_spec(draw, f"T{index}", typed) for index in range(1, draw(st.integers(1, 3)) + 1)
    ]
    # Both sources feed the same silver tables (not with column DDL: one source's DDL would
    # change the other's rows).
    shared = (
        not column_ddl
        and not drop_tables
        and not rename_tables
        and len(sources) == 2
        and draw(st.booleans())
    )

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
    extras: Extras = {}  # the columns column DDL added, as committed
    extras_snapshots = [dict(extras)]
    commit_scns: list[int] = []  # of the committed transactions, in commit order
    dropped: set[tuple[str, str]] = set()  # (source database, table) a DROP TABLE dropped
    names: dict[tuple[str, str], str] = {}  # (source database, table) -> its name after RENAME TO

    use_positions = draw(st.booleans())
    commit_scn_per_record = _chance(draw, 4)  # GoldenGate style
    transactions: list[list[Lcr]] = []
    next_scn = BASE_SCN + 10
    last_commit_scn = next_scn
    for number in range(1, draw(st.integers(1, 15)) + 1):
        database = FOREIGN_SOURCE if _chance(draw, 20) else draw(st.sampled_from(sources))
        transaction_id = f"{number}.{draw(st.integers(0, 30))}.{draw(st.integers(1, 9999))}"
        outcome = draw(
            st.sampled_from(
                ["commit"] * 7
                + ["rollback", "open", "ddl"]
                + ["ddl"] * (4 if column_ddl else 0)
                + ["ddl"] * (2 if drop_tables else 0)
            )
        )
        working = copy.deepcopy(state)
        working_extras = dict(extras)
        writing = specs
        if drop_tables:
            live = [s for s in specs if (database, s.name) not in dropped]
            writing = live if live and not (dropped and _chance(draw, 4)) else specs
        writer = _TransactionWriter(draw, database, transaction_id, writing, working, extras)
        gone = [s for s in specs if (database, s.name) in dropped]
        # (create_tables first: without it, nothing more is drawn.)
        if create_tables and gone and outcome == "ddl" and database in sources and _chance(draw, 3):
            spec = draw(st.sampled_from(gone))
            writer.lcrs.append(_create_table(database, transaction_id, spec))
            dropped.discard((database, spec.name))  # created again, empty
            working[(database, spec.name)] = {}
        elif outcome == "ddl" and drop_tables and database in sources and draw(st.booleans()):
            spec = draw(st.sampled_from(specs))  # sometimes one dropped before: 00942
            writer.lcrs.append(
                {
                    "source_database_name": database,
                    "command_type": "DROP TABLE",
                    "transaction_id": transaction_id,
                    "object_owner": OWNER,
                    "object_name": spec.name,
                    "object_type": "TABLE",
                    "ddl_text": f"DROP TABLE {OWNER}.{spec.name}",
                }
            )
            dropped.add((database, spec.name))  # a DDL commits: the source table is gone
        elif outcome == "ddl" and column_ddl and database in sources and draw(st.booleans()):
            # Mostly a table with a column added before, so that it is renamed, widened, dropped.
            altered = [s for s in specs if (database, s.name) in working_extras]
            spec = draw(st.sampled_from(altered if altered and not _chance(draw, 4) else specs))
            writer.lcrs.append(
                _column_ddl(draw, database, transaction_id, spec, working, working_extras)
            )
        elif outcome == "ddl" and truncates and database in sources and draw(st.booleans()):
            spec = draw(st.sampled_from(specs))
            writer.lcrs.append(
                {
                    "source_database_name": database,
                    "command_type": "TRUNCATE TABLE",
                    "transaction_id": transaction_id,
                    "object_owner": OWNER,
                    "object_name": spec.name,
                    "object_type": "TABLE",
                    "ddl_text": f"TRUNCATE TABLE {OWNER}.{spec.name}",
                }
            )
            working[(database, spec.name)] = {}  # the source table is empty after it
        elif outcome == "ddl" and rename_tables and database in sources and draw(st.booleans()):
            spec = draw(st.sampled_from(specs))
            current = names.get((database, spec.name), spec.name)
            writer.lcrs.append(
                {
                    "source_database_name": database,
                    "command_type": "ALTER TABLE",
                    "transaction_id": transaction_id,
                    "object_owner": OWNER,
                    "object_name": current,
                    "object_type": "TABLE",
                    "ddl_text": f"ALTER TABLE {OWNER}.{current} RENAME TO {current}R",
                }
            )
            names[(database, spec.name)] = f"{current}R"  # the LCRs after it carry the new name
        elif outcome == "ddl":
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
            for lcr in writer.lcrs:  # a table renamed before: its LCRs name it as it is now
                lcr["object_name"] = names.get((database, lcr["object_name"]), lcr["object_name"])
        # SCNs: a transaction may start before the previous one committed (interleaving).
        scn = max(BASE_SCN + 1, next_scn - draw(st.integers(0, 6)))
        for index, lcr in enumerate(writer.lcrs):
            if index and not (use_positions and _chance(draw, 4)):  # equal SCNs need positions
                scn += 1
            lcr["scn"] = scn
            if use_positions:
                lcr["position"] = f"{scn:012d}{index:04d}"
            if _chance(draw, 12):
                lcr["tag"] = draw(st.sampled_from(["01", "02", "0a"]))
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
                state, extras = working, working_extras
                snapshots.append(copy.deepcopy(state))
                extras_snapshots.append(dict(extras))
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
    tables: list[dict[str, Any]] = []
    extra_definitions: dict[str, dict[str, Any]] = {}
    schema_scns: list[dict[str, Any]] = []
    global_scns: list[dict[str, Any]] = []
    points: dict[tuple[str, str], int] = {}
    for database in sources:
        database_point = draw_point()
        if level == "schema":
            schema_scns.append(
                {"source_database": database, "owner": OWNER, "scn": instantiation(database_point)}
            )
        elif level == "global":
            global_scns.append({"source_database": database, "scn": instantiation(database_point)})
        for spec in specs:
            table: dict[str, Any] = {
                "source_database": database,
                "source_object": f"{OWNER}.{spec.name}",
                "silver_table": silver_table(database, spec),
                "definition": f"{spec.name.lower()}.json",
            }
            point = database_point
            if level == "table" or _chance(draw, 4):  # a table-level SCN overrides the others
                point = draw_point()
                table["instantiation_scn"] = instantiation(point)
                if level == "table" and _chance(draw, 40):
                    del table["instantiation_scn"]  # no instantiation SCN at all: ORA-26687
                    point = 0
            points[(database, spec.name)] = point
            extra = extras_snapshots[point].get((database, spec.name))
            if extra is not None:  # instantiated after a column DDL: the copy has the column
                name = f"{silver_table(database, spec)}.json"
                document = copy.deepcopy(spec.document)
                document["columns"].append({"name": extra[0], "type": f"VARCHAR2({extra[1]})"})
                extra_definitions[name] = document
                table["definition"] = name
            if spec.substitute_key:
                table["key_columns"] = list(spec.substitute_key)
            if spec.handlers:
                table["update_conflict_handlers"] = list(spec.handlers)
            if spec.uncompared:
                table["compare_old_values"] = list(spec.uncompared)
            if spec.transformations:
                table["transformations"] = list(spec.transformations)
            tables.append(table)

    # The initial copy of each silver table: the source rows at its instantiation SCN. A table
    # both sources feed keeps the first row of each destination key.
    initial_rows: dict[str, list[dict[str, Any]]] = {}
    for table in tables:
        spec = next(s for s in specs if table["source_object"] == f"{OWNER}.{s.name}")
        snapshot = snapshots[points[(table["source_database"], spec.name)]]
        rows = initial_rows.setdefault(table["silver_table"], [])
        seen = {_destination_key(spec, row) for row in rows}
        for _, row in sorted(snapshot[(table["source_database"], spec.name)].items()):
            if _destination_key(spec, row) not in seen:
                seen.add(_destination_key(spec, row))
                rows.append(dict(row))

    abort = draw(st.booleans()) if disable_on_error is None else disable_on_error
    process: dict[str, Any] = {
        "apply_name": "DIFF_APPLY",
        "parameters": {
            "commit_serialization": draw(st.sampled_from(["FULL", "DEPENDENT_TRANSACTIONS"])),
            "disable_on_error": "Y" if abort else "N",
        },
        "source_databases": list(sources),
        "rules": {
            "discard_tagged": draw(st.booleans()),
            **_rule_sets(draw, sources, specs),
            **(_subset_rule_set(draw, sources, specs) if subset_rules else {}),
        },
        "tables": tables,
    }
    if rule_transformations:
        process["rules"].update(_transforming_rule_set(draw, sources, specs))
    if schema_scns or global_scns:
        process["instantiation"] = {
            **({"schemas": schema_scns} if schema_scns else {}),
            **({"global": global_scns} if global_scns else {}),
        }
    definitions = {f"{spec.name.lower()}.json": spec.document for spec in specs}
    definitions.update(extra_definitions)

    # Arrival order: transaction after transaction, or transactions shuffled, or every LCR
    # shuffled (the apply orders by CSCN, then scn, position and arrival).
    arrival = draw(st.sampled_from(["in order", "transactions shuffled", "lcrs shuffled"]))
    if arrival == "transactions shuffled":
        transactions = draw(st.permutations(transactions))
    lcrs = [lcr for transaction in transactions for lcr in transaction]
    if arrival == "lcrs shuffled":
        lcrs = draw(st.permutations(lcrs))
    lcrs = _redelivered(draw, list(lcrs), transactions)
    if virtual_dependencies:
        process["virtual_dependencies"] = _virtual_dependencies(draw, specs)
    if dml_handlers:
        for table in list(tables):
            chosen = draw(
                st.sampled_from(
                    HISTORY_HANDLER_CHOICES if history_handlers else DML_HANDLER_CHOICES
                )
            )
            if chosen:
                table["dml_handlers"] = [dict(handler) for handler in chosen]
        if any(_records_changes(table) for table in tables):
            # D23: the handler writes CHANGES, a destination of each source (its own table).
            definitions["changes.json"] = CHANGES_DEFINITION
            for database in sources:
                changes: dict[str, Any] = {
                    "source_database": database,
                    "source_object": f"{OWNER}.CHANGES",
                    "silver_table": f"{database.split('.', maxsplit=1)[0].lower()}_changes",
                    "definition": "changes.json",
                }
                if level == "table":  # else the schema's or the database's SCN applies
                    changes["instantiation_scn"] = 0
                tables.append(changes)
    if error_handlers:
        for table in tables:
            choices = [
                choice
                for choice in ERROR_HANDLER_CHOICES
                if not _share_an_operation(table.get("dml_handlers", ()), choice)
            ]
            chosen = draw(st.sampled_from(choices))
            if chosen:
                table["error_handlers"] = [dict(handler) for handler in chosen]
    return Workload(process, definitions, lcrs, initial_rows)


def _example(operation: str, function: str) -> dict[str, str]:
    return {"operation": operation, "user_procedure": f"{EXAMPLES}:{function}"}


def _statement(operation: str, name: str) -> dict[str, str]:
    return {"operation": operation, "handler_name": name, "statement": STATEMENTS[name]}


# D23: CHANGES, the table the record_changes handler writes beside the one it handles.
CHANGES_DEFINITION: dict[str, Any] = {
    "owner": OWNER,
    "name": "CHANGES",
    "columns": [
        {"name": "TRANSACTION_ID", "type": "VARCHAR2(30)", "nullable": False},
        {"name": "MESSAGE_NUMBER", "type": "NUMBER", "nullable": False},
        {"name": "ID", "type": "NUMBER"},
        {"name": "OPERATION", "type": "VARCHAR2(12)"},
    ],
    "primary_key": ["TRANSACTION_ID", "MESSAGE_NUMBER"],
}


def _records_changes(table: Mapping[str, Any]) -> bool:
    return any(
        handler.get("user_procedure") == f"{EXAMPLES}:record_changes"
        for handler in table.get("dml_handlers", ())
    )


DML_HANDLER_CHOICES: tuple[tuple[dict[str, str], ...], ...] = (
    (),
    (_example("DELETE", "ignore"),),
    (_example("DEFAULT", "refuse_negative_amounts"),),
    (_example("UPDATE", "note_handled"),),
    (_example("INSERT", "refuse_negative_amounts"), _example("DEFAULT", "ignore")),
    # Two statement handlers of one operation: each gets the original INSERT.
    (_statement("INSERT", "MIRROR_NEGATIVE"), _statement("INSERT", "AS_CAPTURED")),
)
# D23 (``workloads(dml_handlers=True, history_handlers=True)``; a separate list keeps the draws
# of the seeds chosen for the choices above): every change executed and recorded in CHANGES.
HISTORY_HANDLER_CHOICES = (*DML_HANDLER_CHOICES, (_example("DEFAULT", "record_changes"),))


# D22: a DEFAULT handler skipping missing rows; duplicate inserts turned into updates and
# conflicting updates and deletes applied without comparing; duplicates turned into updates
# with every other error refused; updates refused.
ERROR_HANDLER_CHOICES: tuple[tuple[dict[str, str], ...], ...] = (
    (),
    (_example("DEFAULT", "skip_missing_rows"),),
    (
        _example("INSERT", "insert_duplicate_as_update"),
        _example("UPDATE", "apply_without_comparing"),
        _example("DELETE", "apply_without_comparing"),
    ),
    (
        _example("INSERT", "insert_duplicate_as_update"),
        _example("DEFAULT", "refuse_with_the_error"),
    ),
    (_example("UPDATE", "refuse_with_the_error"),),
)
OPERATIONS = ("INSERT", "UPDATE", "DELETE", "LOB_UPDATE")


def _share_an_operation(
    dml_handlers: Sequence[Mapping[str, str]], error_handlers: Sequence[Mapping[str, str]]
) -> bool:
    """A procedure DML handler and an error handler for the same operation: Oracle refuses it
    (a statement handler may share it)."""

    def covered(handlers: Sequence[Mapping[str, str]]) -> set[str]:
        named = {handler["operation"] for handler in handlers}
        return set(OPERATIONS) if "DEFAULT" in named else named

    procedures = [handler for handler in dml_handlers if "user_procedure" in handler]
    return bool(covered(procedures) & covered(error_handlers))


def _virtual_dependencies(draw: st.DrawFn, specs: list[_TableSpec]) -> dict[str, Any]:
    """A value dependency on CODE (values A, B or NULL: often shared) over one or more tables,
    and with two tables or more sometimes an object dependency of one on another."""
    named = draw(st.lists(st.sampled_from(specs), min_size=1, unique_by=lambda spec: spec.name))
    dependencies: dict[str, Any] = {
        "value": [
            {"name": "BY_CODE", "object": f"{OWNER}.{spec.name}", "columns": ["CODE"]}
            for spec in named
        ]
    }
    if len(specs) > 1 and draw(st.booleans()):
        child, parent = draw(st.permutations(specs))[:2]
        dependencies["object"] = [
            {"object": f"{OWNER}.{child.name}", "parent": f"{OWNER}.{parent.name}"}
        ]
    return dependencies


def _column_ddl(
    draw: st.DrawFn,
    database: str,
    transaction_id: str,
    spec: _TableSpec,
    state: SourceState,
    extras: Extras,
) -> Lcr:
    """An ALTER TABLE of one source table (rule 10), applied to the working copy of the source
    (``state``, ``extras``): add EXTRA, then rename, widen, shorten or drop it; sometimes one
    the destination refuses (FAILING_COLUMN_DDL), which leaves the source as it was."""
    key = (database, spec.name)
    rows = state.setdefault(key, {})
    current = extras.get(key)
    if _chance(draw, 6):
        # A DDL the source refuses, so the destination must too; a MODIFY that needs an empty
        # column only where the source's holds a value. Where it holds none, the source takes
        # that MODIFY, and so does the destination when its column holds none either (the
        # source's model keeps the old type: the workloads go on sending the values they draw,
        # which the destination may then refuse with 01722 or 01438).
        empty = [n for n, column in NEEDS_A_VALUE.items() if not _holds_a_value(rows, column)]
        refused = [n for n in sorted(FAILING_COLUMN_DDL) if n not in empty]
        number = draw(st.sampled_from(empty if empty and _chance(draw, 3) else refused))
        statement = FAILING_COLUMN_DDL[number]
    elif current is None:
        statement = f"ADD ({EXTRA_NAMES[0]} VARCHAR2(5))"
        extras[key] = (EXTRA_NAMES[0], 5)
        for row in rows.values():
            row[EXTRA_NAMES[0]] = None
    else:
        name, length = current
        action = draw(
            st.sampled_from(["RENAME", "DROP", *(["MODIFY"] if length == 5 else ["SHORTEN"])])
        )
        if action == "RENAME":
            other = EXTRA_NAMES[1 - EXTRA_NAMES.index(name)]
            statement = f"RENAME COLUMN {name} TO {other}"
            extras[key] = (other, length)
            for row in rows.values():
                row[other] = row.pop(name, None)
        elif action == "MODIFY":
            statement = f"MODIFY ({name} VARCHAR2(9))"
            extras[key] = (name, 9)
        elif action == "SHORTEN":
            # Back to 5: the source refuses it (01441, and stays as it was) when a value is
            # longer, and so must the destination.
            statement = f"MODIFY ({name} VARCHAR2(5))"
            if all(len(row.get(name) or "") <= 5 for row in rows.values()):
                extras[key] = (name, 5)
        else:
            statement = f"DROP COLUMN {name}"
            del extras[key]
            for row in rows.values():
                row.pop(name, None)
    return {
        "source_database_name": database,
        "command_type": "ALTER TABLE",
        "transaction_id": transaction_id,
        "object_owner": OWNER,
        "object_name": spec.name,
        "object_type": "TABLE",
        "ddl_text": f"ALTER TABLE {OWNER}.{spec.name} {statement}",
    }


def _create_table(database: str, transaction_id: str, spec: _TableSpec) -> Lcr:
    """D20: a CREATE TABLE of the source table ``spec`` (its columns and primary key)."""
    document = spec.document
    parts = [
        f"{c['name']} {c['type']}" + ("" if c.get("nullable", True) else " NOT NULL")
        for c in document["columns"]
    ]
    if document.get("primary_key"):
        parts.append(f"PRIMARY KEY ({', '.join(document['primary_key'])})")
    return {
        "source_database_name": database,
        "command_type": "CREATE TABLE",
        "transaction_id": transaction_id,
        "object_owner": OWNER,
        "object_name": spec.name,
        "object_type": "TABLE",
        "ddl_text": f"CREATE TABLE {OWNER}.{spec.name} ({', '.join(parts)})",
    }


def _redelivered(draw: st.DrawFn, lcrs: list[Lcr], transactions: list[list[Lcr]]) -> list[Lcr]:
    """Rule 11: what a restarted capture or a file landed twice sends: a committed transaction
    again (anywhere after its first copy: the same batch, or a later one when it comes last),
    or one row LCR line twice."""
    committed = [t for t in transactions if t and t[-1]["command_type"] == "COMMIT"]
    if committed and _chance(draw, 3):
        again = copy.deepcopy(draw(st.sampled_from(committed)))
        first_end = max(i for i, lcr in enumerate(lcrs) if lcr in again) + 1
        at = len(lcrs) if draw(st.booleans()) else draw(st.integers(first_end, len(lcrs)))
        lcrs = lcrs[:at] + again + lcrs[at:]
    rows = [
        i for i, lcr in enumerate(lcrs) if lcr["command_type"] in ("INSERT", "UPDATE", "DELETE")
    ]
    if rows and _chance(draw, 4):
        index = draw(st.sampled_from(rows))
        lcrs.insert(index + 1, copy.deepcopy(lcrs[index]))
    return lcrs


def _rule_sets(
    draw: st.DrawFn, sources: tuple[str, ...], specs: list[_TableSpec]
) -> dict[str, list[dict[str, Any]]]:
    """Sometimes a negative and/or a positive rule set (rule 2); each rule names a source
    database, as rules written for one source would."""
    source = draw(st.sampled_from(sources))
    table = draw(st.sampled_from(specs)).name
    negative = draw(
        st.sampled_from(
            [
                [],
                [],
                [{"source_database": source, "schema": OWNER, "table": table}],
                [{"source_database": source, "tag": "02"}],
                [{"source_database": source, "schema": OWNER, "tag": "NOT NULL"}],
            ]
        )
    )
    positive = draw(
        st.sampled_from(
            [
                None,
                None,
                [{"source_database": s, "schema": OWNER} for s in sources],
                [{"source_database": s, "schema": OWNER, "table": table} for s in sources],
                [{"source_database": s, "tag": "NULL"} for s in sources],
            ]
        )
    )
    return {
        **({"negative": negative} if negative else {}),
        **({"positive": positive} if positive is not None else {}),
    }


# Subset conditions over the columns every table has; those over columns UPDATEs change make
# rows migrate.
SUBSET_CONDITIONS = (
    "ID < 3",
    "ID >= 2 AND NOT (ID = 4)",
    "AMOUNT >= 50 OR AMOUNT IS NULL",
    "VERSION < 3",
    "CODE = 'A' OR (ID > 1 AND NOTE IS NOT NULL)",
)


def _subset_rule_set(
    draw: st.DrawFn, sources: tuple[str, ...], specs: list[_TableSpec]
) -> dict[str, list[dict[str, Any]]]:
    """A positive rule set of one subset rule per source on one table, sometimes with an
    unconditional schema rule for another source (which then applies without migration)."""
    table = draw(st.sampled_from(specs)).name
    condition = draw(st.sampled_from(SUBSET_CONDITIONS))
    positive: list[dict[str, Any]] = [
        {"source_database": s, "schema": OWNER, "table": table, "condition": condition}
        for s in sources
    ]
    if len(sources) > 1 and _chance(draw, 2):
        positive[-1] = {"source_database": sources[-1], "schema": OWNER}
    return {"positive": positive}


def _transforming_rule_set(
    draw: st.DrawFn, sources: tuple[str, ...], specs: list[_TableSpec]
) -> dict[str, list[dict[str, Any]]]:
    """A positive rule set whose rules carry rule transformations (D19), per source: one
    table's LCRs renamed to another table (both then write the second one's destination), or
    the schema renamed to one without destinations after a plain rule for one table (only that
    table is routed), or CODE deleted from one table's LCRs; then a rule for the whole schema."""
    table = draw(st.sampled_from(specs)).name
    other = draw(st.sampled_from(specs)).name
    kind = draw(st.sampled_from(["rename_table", "rename_schema", "delete_column"]))
    positive: list[dict[str, Any]] = []
    for source in sources:
        schema = {"source_database": source, "schema": OWNER}
        if kind == "rename_schema":
            renamed = {"rename_schema": {"from": OWNER, "to": "ELSEWHERE"}}
            positive += [{**schema, "table": other}, {**schema, "transformations": [renamed]}]
            continue
        step = (
            {"rename_table": {"from": f"{OWNER}.{table}", "to": f"{OWNER}.{other}"}}
            if kind == "rename_table"
            else {"delete_column": "CODE"}
        )
        positive += [{**schema, "table": table, "transformations": [step]}, schema]
    return {"positive": positive}


def _destination_key(spec: _TableSpec, row: SourceRow) -> tuple[Any, ...]:
    return tuple(int(row[c]) if c == "ID" else row[c] for c in spec.key)


def _directive(database: str, transaction_id: str, command: str, scn: int) -> Lcr:
    return {
        "source_database_name": database,
        "command_type": command,
        "transaction_id": transaction_id,
        "scn": scn,
    }
