"""The reference applier's own reading of an apply configuration.

Independent of ``pipelines/`` on purpose: this module reads the *public* formats (an apply
process as written in lakeapply.yml, table definitions as in schemas/table-definition.schema.json)
and resolves everything the spec leaves to configuration (types, keys, instantiation SCNs, rules,
handlers) with its own code. A mistake the engine makes in any of these cannot be copied here.

The type mapping follows the README's table ("Oracle types in silver"): unconstrained NUMBER
and FLOAT(b) are DECIMAL(38,10); CHAR/NCHAR without a length hold one character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp

# Value kinds: how a column's values are converted and compared.
NUMBER = "number"
FLOATING = "floating"
CHARACTER = "character"  # CHAR, NCHAR, VARCHAR2, NVARCHAR2, ROWID, UROWID
TEXT_LOB = "text_lob"  # CLOB, NCLOB, LONG
DATETIME = "datetime"  # DATE, TIMESTAMP: wall-clock time
DATETIME_TZ = "datetime_tz"  # TIMESTAMP WITH (LOCAL) TIME ZONE: an instant
YEAR_MONTH = "year_month"
DAY_SECOND = "day_second"
RAW = "raw"  # RAW(n)
BINARY_LOB = "binary_lob"  # BLOB, LONG RAW

LOB_KINDS = (TEXT_LOB, BINARY_LOB)
UNCONSTRAINED_PRECISION, UNCONSTRAINED_SCALE = 38, 10  # README: NUMBER -> DECIMAL(38,10)


@dataclass(frozen=True)
class ColumnType:
    name: str  # e.g. "NUMBER", "BINARY_FLOAT", "NCHAR", "TIMESTAMP WITH TIME ZONE"
    kind: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    # TIMESTAMP's and INTERVAL DAY TO SECOND's fractional digits, the INTERVALs' leading
    # digits (Oracle's defaults: 6 and 2); they bound no stored value here, only a MODIFY.
    fraction_digits: int = 6
    leading_digits: int = 2


_SIMPLE_TYPES = {
    "BINARY_FLOAT": FLOATING,
    "BINARY_DOUBLE": FLOATING,
    "DATE": DATETIME,
    "TIMESTAMP": DATETIME,
    "TIMESTAMP WITH TIME ZONE": DATETIME_TZ,
    "TIMESTAMP WITH LOCAL TIME ZONE": DATETIME_TZ,
    "INTERVAL YEAR TO MONTH": YEAR_MONTH,
    "INTERVAL DAY TO SECOND": DAY_SECOND,
    "CLOB": TEXT_LOB,
    "NCLOB": TEXT_LOB,
    "LONG": TEXT_LOB,
    "BLOB": BINARY_LOB,
    "LONG RAW": BINARY_LOB,
    "ROWID": CHARACTER,
    "UROWID": CHARACTER,
}
_LENGTHED = {"CHAR": CHARACTER, "NCHAR": CHARACTER, "VARCHAR2": CHARACTER, "NVARCHAR2": CHARACTER}


def column_type(text: str) -> ColumnType:
    """``NUMBER(5,2)``, ``VARCHAR2(10 CHAR)``, ``TIMESTAMP(3) WITH TIME ZONE``, ``RAW(4)``..."""
    upper = " ".join(text.upper().split())
    precisions = dict(re.findall(r"(TIMESTAMP|YEAR|DAY|SECOND)\s*\(\s*(\d+)\s*\)", upper))
    without_precisions = re.sub(r"(TIMESTAMP|YEAR|DAY|SECOND)\s*\(\s*\d+\s*\)", r"\1", upper)
    if without_precisions in _SIMPLE_TYPES:
        fraction = precisions.get("TIMESTAMP", precisions.get("SECOND", 6))
        leading = precisions.get("YEAR", precisions.get("DAY", 2))
        kind = _SIMPLE_TYPES[without_precisions]
        return ColumnType(
            without_precisions, kind, fraction_digits=int(fraction), leading_digits=int(leading)
        )
    match = re.fullmatch(
        r"(\w+)(?:\s*\(\s*(\*|\d+)\s*(?:BYTE|CHAR)?\s*(?:,\s*(-?\d+)\s*)?\))?", upper
    )
    if not match:
        raise ValueError(f"reference: unknown Oracle type {text!r}")
    name, first, second = match.groups()
    if name in ("NUMBER", "NUMERIC", "DECIMAL"):
        if first is None:
            return ColumnType("NUMBER", NUMBER)
        precision = UNCONSTRAINED_PRECISION if first == "*" else int(first)
        return ColumnType("NUMBER", NUMBER, precision, int(second or 0))
    if name in ("INTEGER", "INT", "SMALLINT"):
        return ColumnType("NUMBER", NUMBER, 38, 0)
    if name == "FLOAT":
        return ColumnType("NUMBER", NUMBER)
    if name in _LENGTHED:
        return ColumnType(name, _LENGTHED[name], length=int(first) if first else 1)
    if name == "RAW" and first:
        return ColumnType("RAW", RAW, length=int(first))
    raise ValueError(f"reference: unknown Oracle type {text!r}")


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    nullable: bool = True
    default: str | int | float | None = None

    @property
    def kind(self) -> str:
        return self.type.kind


@dataclass(frozen=True)
class Definition:
    owner: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (constraint name, columns)

    @property
    def qualified_name(self) -> str:
        return f"{self.owner}.{self.name}"

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def column(self, name: str) -> Column:
        return next(column for column in self.columns if column.name == name)


def definition_from_document(document: Mapping[str, Any]) -> Definition:
    """A table definition document (the public file format). As in Oracle, the columns of a
    primary key are NOT NULL whatever the document says."""
    primary_key = tuple(document.get("primary_key", ()))
    return Definition(
        owner=document["owner"],
        name=document["name"],
        columns=tuple(
            Column(
                name=column["name"],
                type=column_type(column["type"]),
                nullable=column.get("nullable", True) and column["name"] not in primary_key,
                default=column.get("default"),
            )
            for column in document["columns"]
        ),
        primary_key=primary_key,
        unique_keys=tuple(
            (key["name"], tuple(key["columns"])) for key in document.get("unique_keys", ())
        ),
    )


@dataclass(frozen=True)
class ConflictHandler:
    method: str  # OVERWRITE, DISCARD, MAXIMUM, MINIMUM
    columns: tuple[str, ...]
    resolution_column: str


def _of_operation(
    handlers: tuple[Mapping[str, Any], ...], command_type: str
) -> Mapping[str, Any] | None:
    operation = "LOB_UPDATE" if command_type.startswith("LOB ") else command_type
    by_operation = {handler["operation"]: handler for handler in handlers}
    return by_operation.get(operation, by_operation.get("DEFAULT"))


@dataclass(frozen=True)
class Destination:
    source_database: str
    definition: Definition
    silver_table: str
    substitute_key: tuple[str, ...] = ()
    instantiation_scn: int | None = None
    uncompared: frozenset[tuple[str, str]] = frozenset()  # (column, INSERT/UPDATE/DELETE/*)
    handlers: tuple[ConflictHandler, ...] = ()
    # Declarative transformations, as lakeapply.yml writes them ({"delete_column": "X"}, ...).
    transformations: tuple[Mapping[str, Any], ...] = ()
    # DML handlers, as lakeapply.yml writes them ({"operation": "DELETE", "user_procedure": ...}).
    dml_handlers: tuple[Mapping[str, Any], ...] = ()
    # Error handlers, likewise ({"operation": "INSERT", "user_procedure": ...}).
    error_handlers: tuple[Mapping[str, Any], ...] = ()
    dropped: bool = False  # D18: a DROP TABLE applied; its rows and silver table are gone

    @property
    def key(self) -> tuple[str, ...]:
        """Rule 5, in order of precedence: substitute key, primary key, smallest unique key with
        a NOT NULL column, every column but LOB, LONG and LONG RAW."""
        if self.substitute_key:
            return self.substitute_key
        if self.definition.primary_key:
            return self.definition.primary_key
        usable = [
            (len(columns), name, columns)
            for name, columns in self.definition.unique_keys
            if any(not self.definition.column(c).nullable for c in columns)
        ]
        if usable:
            return min(usable)[2]
        return tuple(c.name for c in self.definition.columns if c.kind not in LOB_KINDS)

    def dml_handlers_for(self, command_type: str) -> list[Mapping[str, Any]]:
        """D21: the handlers of the LCR's operation, else the DEFAULT ones: the procedure
        handler first, then the statement handlers by name."""
        operation = "LOB_UPDATE" if command_type.startswith("LOB ") else command_type
        own = [h for h in self.dml_handlers if h["operation"] == operation]
        chosen = own or [h for h in self.dml_handlers if h["operation"] == "DEFAULT"]
        return sorted(
            chosen,
            key=lambda h: (0, "") if "statement" not in h else (1, h.get("handler_name", "")),
        )

    def error_handler(self, command_type: str) -> Mapping[str, Any] | None:
        """D22: the error handler of the LCR's operation, else the DEFAULT one."""
        return _of_operation(self.error_handlers, command_type)

    def handler_for(self, column: str) -> ConflictHandler | None:
        return next((h for h in self.handlers if column in h.columns), None)

    def compares(self, column: str, operation: str) -> bool:
        return not {(column, operation), (column, "*")} & self.uncompared


@dataclass(frozen=True)
class ApplyProcess:
    apply_name: str
    source_databases: tuple[str, ...]
    tables: tuple[Destination, ...]
    disable_on_error: bool = True  # Oracle's default
    discard_tagged: bool = False
    schema_scns: Mapping[tuple[str, str], int] = field(default_factory=dict)
    global_scns: Mapping[str, int] = field(default_factory=dict)
    commit_serialization: str = "FULL"
    # Rule sets as lakeapply.yml writes them ({"schema": "APP", "tag": "01"}, ...); positive:
    # None when the apply process declares none.
    negative_rules: tuple[Mapping[str, Any], ...] = ()
    positive_rules: tuple[Mapping[str, Any], ...] | None = None
    # Virtual dependencies as lakeapply.yml writes them: value ({"name", "object": "O.T",
    # "columns"}) and object ({"object": "O.CHILD", "parent": "O.PARENT"}).
    value_dependencies: tuple[Mapping[str, Any], ...] = ()
    object_dependencies: tuple[Mapping[str, Any], ...] = ()

    def passes_rules(self, lcr: Mapping[str, Any]) -> bool:
        """Rule 2: the tag rule, the negative rule set, then the positive one (if declared);
        a subset rule (``condition``) selects a row LCR by the image its command is judged by."""
        if self.discard_tagged and lcr.get("tag") is not None:
            return False
        if any(_matches(rule, lcr) for rule in self.negative_rules):
            return False
        if self.positive_rules is None:
            return True
        if any(_matches(r, lcr) for r in self.positive_rules if "condition" not in r):
            return True
        return _judged(lcr, *self._subset_images(lcr))

    def selecting_rule(self, lcr: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """D19: the first positive rule, in declared order, that selects the LCR (a subset rule
        by the image its command is judged by)."""
        for rule in self.positive_rules or ():
            if "condition" not in rule and _matches(rule, lcr):
                return rule
            if "condition" in rule and _judged(lcr, *self._subset_images(lcr, [rule])):
                return rule
        return None

    def _subset_images(
        self, lcr: Mapping[str, Any], among: Sequence[Mapping[str, Any]] | None = None
    ) -> tuple[bool, bool]:
        """Whether the LCR's old / new image is inside one of the subset rules matching it."""
        rules = [
            r
            for r in (self.positive_rules or () if among is None else among)
            if "condition" in r and lcr.get("lcr_kind", "ROW") == "ROW" and _matches(r, lcr)
        ]
        old = dict(_values(lcr.get("old_values")))
        new = {**old, **dict(_values(lcr.get("new_values")))}  # use_old => 'Y'
        return (
            any(_inside(r["condition"], old) for r in rules),
            any(_inside(r["condition"], new) for r in rules),
        )

    def migrated(self, lcr: dict[str, Any]) -> dict[str, Any]:
        """Row migration: an UPDATE only subset rules select, crossing the subset's border,
        becomes an INSERT of its full new row or a DELETE of its old one."""
        if lcr.get("command_type") != "UPDATE" or any(
            _matches(r, lcr) for r in self.positive_rules or () if "condition" not in r
        ):
            return lcr
        if not any("condition" in r for r in self.positive_rules or ()):
            return lcr
        old, new = self._subset_images(lcr)
        if old == new:
            return lcr
        if new:
            changed = {v["column_name"] for v in lcr.get("new_values") or []}
            full = list(lcr.get("new_values") or []) + [
                v for v in lcr.get("old_values") or [] if v["column_name"] not in changed
            ]
            return {**lcr, "command_type": "INSERT", "old_values": None, "new_values": full}
        return {**lcr, "command_type": "DELETE", "new_values": None}

    def destination(self, database: str, owner: str, name: str) -> Destination | None:
        """Rule 2: the destination table of a source table, if the apply routes it (a live
        one before a dropped one of the same name: D16's RENAME TO)."""
        named = [
            t
            for t in self.tables
            if (t.source_database, t.definition.owner, t.definition.name) == (database, owner, name)
        ]
        return next((t for t in named if not t.dropped), named[0] if named else None)

    def instantiation_scn(self, database: str, owner: str, name: str) -> int | None:
        """Rule 3: the table's instantiation SCN, else its schema's, else its database's."""
        table = self.destination(database, owner, name)
        if table is not None and table.instantiation_scn is not None:
            return table.instantiation_scn
        if (database, owner) in self.schema_scns:
            return self.schema_scns[(database, owner)]
        return self.global_scns.get(database)


def _judged(lcr: Mapping[str, Any], old: bool, new: bool) -> bool:
    """A subset rule judges an INSERT (and a LOB piece) by its new image, a DELETE by its old
    one, an UPDATE by either."""
    command = lcr.get("command_type")
    if command == "INSERT" or str(command).startswith("LOB"):
        return new
    if command == "DELETE":
        return old
    return command == "UPDATE" and (old or new)


def _values(values: Any) -> list[tuple[str, Any]]:
    return [(v["column_name"], v.get("value")) for v in values or []]


def _inside(condition: str, row: Mapping[str, Any]) -> bool:
    """A subset condition on one image: only TRUE is inside (unknown is outside)."""
    return _truth(sqlglot.parse_one(condition, read="oracle"), row) is True


def _truth(node: exp.Expr, row: Mapping[str, Any]) -> bool | None:
    """SQL three-valued logic, walked here rather than borrowed from the engine."""
    if isinstance(node, exp.Paren):
        return _truth(node.this, row)
    if isinstance(node, exp.Not):
        inner = _truth(node.this, row)
        return None if inner is None else not inner
    if isinstance(node, (exp.And, exp.Or)):
        left, right = _truth(node.args["this"], row), _truth(node.args["expression"], row)
        if isinstance(node, exp.And):
            if left is False or right is False:
                return False
            return None if left is None or right is None else True
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if isinstance(node, exp.Is):
        return _operand(node.this, row)[0] is None
    left, left_number = _operand(node.args["this"], row)
    right, right_number = _operand(node.args["expression"], row)
    if left is None or right is None:
        return None
    if left_number or right_number:
        try:
            left, right = Decimal(left), Decimal(right)
        except InvalidOperation:
            return None
        if not (left.is_finite() and right.is_finite()):
            return None  # NaN and Infinity are no Oracle NUMBER
    compare = {
        exp.EQ: lambda a, b: a == b,
        exp.NEQ: lambda a, b: a != b,
        exp.LT: lambda a, b: a < b,
        exp.LTE: lambda a, b: a <= b,
        exp.GT: lambda a, b: a > b,
        exp.GTE: lambda a, b: a >= b,
    }
    return bool(compare[type(node)](left, right))


def _operand(node: exp.Expr, row: Mapping[str, Any]) -> tuple[Any, bool]:
    """(value, is a number literal) of a column or a literal."""
    if isinstance(node, exp.Column):
        identifier = node.this
        name = identifier.name if identifier.quoted else identifier.name.upper()
        return row.get(name), False
    if isinstance(node, exp.Null):
        return None, False
    if isinstance(node, exp.Neg):
        return "-" + node.this.name, True
    return node.name, bool(node.is_number)


def _matches(rule: Mapping[str, Any], lcr: Mapping[str, Any]) -> bool:
    """A rule matches an LCR when every field it names equals the LCR's (a tag in any case)."""
    fields = {
        "source_database": "source_database_name",
        "schema": "object_owner",
        "table": "object_name",
    }
    for name, lcr_field in fields.items():
        if name in rule and lcr.get(lcr_field) != rule[name]:
            return False
    tag, condition = lcr.get("tag"), rule.get("tag")
    if condition == "NULL":
        return tag is None
    if condition == "NOT NULL":
        return tag is not None
    return condition is None or (tag is not None and tag.upper() == condition.upper())


def apply_process_from_config(
    process: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]
) -> ApplyProcess:
    """One ``apply_processes`` entry of lakeapply.yml; ``definitions`` maps each table's
    ``definition`` (its file name) to the document that file holds."""
    parameters = process.get("parameters", {})
    instantiation = process.get("instantiation", {})
    return ApplyProcess(
        apply_name=process["apply_name"],
        source_databases=tuple(process["source_databases"]),
        tables=tuple(_destination(table, definitions) for table in process["tables"]),
        disable_on_error=parameters.get("disable_on_error", "Y") == "Y",
        discard_tagged=process.get("rules", {}).get("discard_tagged", False),
        negative_rules=tuple(process.get("rules", {}).get("negative", ())),
        positive_rules=(
            tuple(process["rules"]["positive"]) if "positive" in process.get("rules", {}) else None
        ),
        schema_scns={
            (e["source_database"], e["owner"]): e["scn"] for e in instantiation.get("schemas", ())
        },
        global_scns={e["source_database"]: e["scn"] for e in instantiation.get("global", ())},
        commit_serialization=parameters.get("commit_serialization", "FULL"),
        value_dependencies=tuple(process.get("virtual_dependencies", {}).get("value", ())),
        object_dependencies=tuple(process.get("virtual_dependencies", {}).get("object", ())),
    )


def _destination(
    table: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]
) -> Destination:
    return Destination(
        source_database=table["source_database"],
        definition=definition_from_document(definitions[table["definition"]]),
        silver_table=table["silver_table"],
        substitute_key=tuple(table.get("key_columns", ())),
        instantiation_scn=table.get("instantiation_scn"),
        uncompared=frozenset(
            (column, operation)
            for entry in table.get("compare_old_values", ())
            for column in entry["columns"]
            for operation in entry["operations"]
        ),
        handlers=tuple(
            ConflictHandler(h["method"], tuple(h["column_list"]), h["resolution_column"])
            for h in table.get("update_conflict_handlers", ())
        ),
        transformations=tuple(table.get("transformations", ())),
        dml_handlers=tuple(table.get("dml_handlers", ())),
        error_handlers=tuple(table.get("error_handlers", ())),
    )


def apply_process(
    tables: Iterable[Destination], apply_name: str = "APPLY1", **parameters: Any
) -> ApplyProcess:
    """For hand-written tests: an apply process over ``tables`` reading their source databases."""
    tables = tuple(tables)
    parameters.setdefault(
        "source_databases", tuple(dict.fromkeys(t.source_database for t in tables))
    )
    return ApplyProcess(apply_name=apply_name, tables=tables, **parameters)
