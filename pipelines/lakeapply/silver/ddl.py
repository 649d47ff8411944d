"""DDL LCRs (spec rules 9 and 10): parsed with sqlglot's Oracle dialect, turned into a new
version of the destination table's definition and the Delta changes that reproduce it.

A DDL transaction is a barrier (ddl_apply.py cuts a cycle before it and applies it alone), so
within one cycle every table has exactly one definition: the latest version recorded in the
``table_versions`` dictionary table by an earlier cycle. What the sink cannot apply raises
:class:`DdlError` with the error Oracle would report, and the transaction goes to the error
queue; what changes no column and no row is ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import ParseError, TokenError

from lakeapply.contract.oracle_types import OracleType, TypeFamily, parse_oracle_type
from lakeapply.contract.table_definitions import (
    ColumnDefinition,
    TableDefinition,
    table_definition_from_dict,
)
from lakeapply.errors import ConfigurationError

# Error numbers a DBA expects for a DDL that fails against the destination.
INVALID_STATEMENT = 900  # ORA-00900: invalid SQL statement
INVALID_IDENTIFIER = 904  # ORA-00904: invalid identifier (unknown column)
DUPLICATE_COLUMN = 957  # ORA-00957: duplicate column name
UNIMPLEMENTED = 3001  # ORA-03001: unimplemented feature
OWNER_IN_RENAME = 1765  # ORA-01765: specifying owner's name of the table is not allowed
TABLE_NOT_FOUND = 942  # ORA-00942: table or view does not exist
NAME_IN_USE = 955  # ORA-00955: name is already used by an existing object
RENAME_TABLE = "RENAME TABLE"  # ALTER TABLE t RENAME TO u: the destination follows the new name
NO_INSTANTIATION_SCN = 26687  # ORA-26687: no instantiation SCN provided for the object
COLUMN_EXISTS = 1430  # ORA-01430: column being added already exists in table
CANNOT_CHANGE_TYPE = 1439  # ORA-01439: column to be modified must be empty to change datatype
CANNOT_DECREASE_PRECISION = 1440  # ORA-01440: ... must be empty to decrease precision or scale
CANNOT_DECREASE = 1441  # ORA-01441: cannot decrease column length because some value is too big
INVALID_TYPE_ALTERATION = 22858  # ORA-22858: invalid alteration of datatype (to or from a LOB)
KEY_COLUMN = 12991  # ORA-12991: column is referenced in a multi-column constraint
DDL_ERROR_NUMBERS = (
    INVALID_STATEMENT,
    INVALID_IDENTIFIER,
    DUPLICATE_COLUMN,
    TABLE_NOT_FOUND,
    NAME_IN_USE,
    NO_INSTANTIATION_SCN,
    COLUMN_EXISTS,
    CANNOT_CHANGE_TYPE,
    CANNOT_DECREASE_PRECISION,
    CANNOT_DECREASE,
    INVALID_TYPE_ALTERATION,
    UNIMPLEMENTED,
    KEY_COLUMN,
)


class DdlError(Exception):
    """A DDL the destination cannot take: the Oracle error number and a precise message."""

    def __init__(self, number: int, message: str) -> None:
        super().__init__(f"ORA-{number:05d}: {message}")
        self.number = number
        self.message = f"ORA-{number:05d}: {message}"


@dataclass(frozen=True)
class AddColumn:
    column: ColumnDefinition
    default: str | None  # the DEFAULT literal's value as text, for the rows already there


@dataclass(frozen=True)
class DdlStatement:
    """What one DDL statement does to one table.

    ``kind``: ADD, DROP, RENAME, MODIFY, RENAME TABLE, TRUNCATE, DROP TABLE, CREATE TABLE,
    CREATE TABLE AS SELECT (not applied: the rows it copies are not in the LCR stream), or
    IGNORED (indexes, constraints, grants, comments: no column, no row changes).
    """

    kind: str
    owner: str | None
    table: str | None
    added: tuple[AddColumn, ...] = ()
    dropped: tuple[str, ...] = ()
    renamed: tuple[str, str] | None = None
    modified: tuple[ColumnDefinition, ...] = ()
    created: TableDefinition | None = None
    reason: str = ""  # IGNORED: why


def _name(identifier: Any) -> str:
    """An Oracle name as the dictionary stores it: quoted ones as written, others upper case."""
    if isinstance(identifier, exp.Column):
        identifier = identifier.this
    if isinstance(identifier, exp.Identifier):
        return str(identifier.this) if identifier.quoted else str(identifier.this).upper()
    return str(identifier).upper()


def _table_name(table: exp.Table, default_owner: str | None) -> tuple[str | None, str]:
    owner = _name(table.args["db"]) if table.args.get("db") else default_owner
    return owner, _name(table.this)


# Oracle types sqlglot's Oracle dialect misreads (BINARY_FLOAT as FLOAT, which is a NUMBER;
# BINARY_DOUBLE as DOUBLE PRECISION; TIMESTAMP WITH LOCAL TIME ZONE as TIMESTAMPLTZ) or cannot
# parse (LONG RAW; INTERVAL with precisions): before parsing, each such type's tokens are
# replaced by a stand-in type name, read back here as the Oracle type with its precisions.
_STAND_INS = {
    "LAKEAPPLY_BINARY_FLOAT": "BINARY_FLOAT",
    "LAKEAPPLY_BINARY_DOUBLE": "BINARY_DOUBLE",
    "LAKEAPPLY_LONG_RAW": "LONG RAW",
    "LAKEAPPLY_INTERVAL_DAY_TO_SECOND": "INTERVAL DAY TO SECOND",
    "LAKEAPPLY_INTERVAL_YEAR_TO_MONTH": "INTERVAL YEAR TO MONTH",
    "LAKEAPPLY_TIMESTAMP_WITH_TIME_ZONE": "TIMESTAMP WITH TIME ZONE",
    "LAKEAPPLY_TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP WITH LOCAL TIME ZONE",
}
_STAND_IN_OF = {oracle: stand_in for stand_in, oracle in _STAND_INS.items()}
_TEMPORAL_WORDS = {"DAY", "YEAR", "TO", "SECOND", "MONTH", "WITH", "LOCAL", "TIME", "ZONE"}


def _stand_in_at(tokens: list[Any], at: int) -> tuple[str, int] | None:
    """The stand-in of the type whose first token is ``tokens[at]`` and the index of its last
    token; None when sqlglot reads that type right. A TIMESTAMP or INTERVAL stand-in carries
    the type's precisions as ``P<n>`` words (``_oracle_text`` reads them back)."""
    if tokens[at].token_type == TokenType.STRING:
        return None
    word = tokens[at].text.upper()
    if word in ("BINARY_FLOAT", "BINARY_DOUBLE"):
        return _STAND_IN_OF[word], at
    following = tokens[at + 1].text.upper() if at + 1 < len(tokens) else ""
    if word == "LONG" and following == "RAW":
        return _STAND_IN_OF["LONG RAW"], at + 1
    if word not in ("INTERVAL", "TIMESTAMP"):
        return None
    words, with_precisions, end = [word], [word], at + 1
    while end < len(tokens):
        if tokens[end].token_type == TokenType.L_PAREN:  # a precision: ( n )
            while end < len(tokens) and tokens[end].token_type != TokenType.R_PAREN:
                if tokens[end].token_type == TokenType.NUMBER:
                    with_precisions.append(f"P{tokens[end].text}")
                end += 1
        elif tokens[end].text.upper() in _TEMPORAL_WORDS:
            words.append(tokens[end].text.upper())
            with_precisions.append(tokens[end].text.upper())
        else:
            break
        end += 1
    if " ".join(words) not in _STAND_IN_OF:
        return None
    return "LAKEAPPLY_" + "_".join(with_precisions), end - 1


def _with_stand_ins(sql: str) -> str:
    """``sql`` with each type sqlglot misreads replaced by its stand-in (see ``_STAND_INS``)."""
    tokens = sqlglot.tokenize(sql, read="oracle")
    pieces: list[str] = []
    copied = index = 0
    while index < len(tokens):
        found = _stand_in_at(tokens, index)
        if found is None:
            index += 1
            continue
        stand_in, last = found
        pieces += [sql[copied : tokens[index].start], stand_in]
        copied, index = tokens[last].end + 1, last + 1
    return "".join([*pieces, sql[copied:]])


def _oracle_text(type_text: str) -> str:
    """The Oracle type a stand-in names (``LAKEAPPLY_INTERVAL_DAY_P3_TO_SECOND_P2`` is
    ``INTERVAL DAY(3) TO SECOND(2)``); any other type text as it is."""
    upper = type_text.upper()
    if upper in _STAND_INS:
        return _STAND_INS[upper]
    if not upper.startswith("LAKEAPPLY_"):
        return type_text
    pieces: list[str] = []
    for word in upper.removeprefix("LAKEAPPLY_").split("_"):
        if re.fullmatch(r"P\d+", word) and pieces:
            pieces[-1] += f"({word[1:]})"
        else:
            pieces.append(word)
    return " ".join(pieces)


def _oracle_type(kind: exp.DataType | None, column: str, text: str) -> OracleType:
    if kind is None:
        raise DdlError(INVALID_STATEMENT, f"column {column} has no data type in: {text}")
    type_text = _oracle_text(kind.sql(dialect="oracle"))
    try:
        return parse_oracle_type(type_text)
    except ConfigurationError as error:
        raise DdlError(
            UNIMPLEMENTED, f"column {column}: type {type_text} is not supported ({error})"
        ) from None


def _default_value(value: exp.Expression, column: str, text: str) -> str | None:
    if isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
        return f"-{value.this.this}"
    if isinstance(value, exp.Null):
        return None
    if isinstance(value, exp.Literal):
        return str(value.this)
    raise DdlError(
        UNIMPLEMENTED,
        f"column {column}: DEFAULT {value.sql(dialect='oracle')} is not a literal "
        f"(only literal defaults are applied to existing rows) in: {text}",
    )


def _column(definition: exp.ColumnDef, text: str) -> tuple[ColumnDefinition, str | None]:
    name = _name(definition.this)
    oracle_type = _oracle_type(definition.args.get("kind"), name, text)
    nullable = True
    default: str | None = None
    for constraint in definition.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            nullable = False
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = _default_value(kind.this, name, text)
    # The definition's default is an LCR value (table-definition schema), as the literal's value
    # is: 'OPEN' gives OPEN, not the SQL text with its quotes.
    return ColumnDefinition(name, oracle_type, nullable, default), default


def _column_defs(inner: str, text: str) -> list[exp.ColumnDef]:
    """Column definitions written as in CREATE TABLE (MODIFY's list, which sqlglot's
    ALTER TABLE grammar does not read), parsed by sqlglot as a CREATE TABLE column list."""
    inner = inner.strip()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    parsed = _parse(f"CREATE TABLE T ({inner})", text)
    schema = parsed.this if isinstance(parsed, exp.Create) else None
    if not isinstance(schema, exp.Schema):
        raise DdlError(INVALID_STATEMENT, f"cannot read the column list of: {text}")
    return [c for c in schema.expressions if isinstance(c, exp.ColumnDef)]


def _parse(sql: str, text: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse_one(_with_stand_ins(sql), read="oracle")
    except (ParseError, TokenError) as error:
        first = str(error).splitlines()[0]
        raise DdlError(INVALID_STATEMENT, f"cannot parse DDL ({first}): {text}") from None
    assert isinstance(parsed, exp.Expression)
    return parsed


CREATE_TABLE_AS_SELECT = "CREATE TABLE AS SELECT"
IGNORED_COMMANDS = ("CREATE", "COMMENT", "GRANT", "REVOKE", "ANALYZE", "AUDIT", "NOAUDIT")


def parse_ddl(text: str, default_owner: str | None) -> DdlStatement:
    """The statement's effect on its table; raises DdlError when it cannot be read."""
    import logging

    # sqlglot logs a warning for each statement it keeps as an opaque Command.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    parsed = _parse(text, text)
    if isinstance(parsed, exp.TruncateTable):
        owner, table = _table_name(parsed.expressions[0], default_owner)
        return DdlStatement("TRUNCATE", owner, table)
    if isinstance(parsed, exp.Drop):
        kind = str(parsed.args.get("kind") or "").upper()
        if kind == "TABLE":
            owner, table = _table_name(parsed.args["tables"][0], default_owner)
            return DdlStatement("DROP TABLE", owner, table)
        return DdlStatement("IGNORED", None, None, reason=f"DROP {kind} changes no table rows")
    if isinstance(parsed, exp.Create):
        kind = str(parsed.args.get("kind") or "").upper()
        schema = parsed.this
        if kind == "TABLE" and isinstance(schema, exp.Schema):
            owner, table = _table_name(schema.this, default_owner)
            columns = [
                _column(c, text)[0] for c in schema.expressions if isinstance(c, exp.ColumnDef)
            ]
            primary = [
                _name(c.this)
                for c in schema.expressions
                if isinstance(c, exp.ColumnDef)
                and any(
                    isinstance(k.args.get("kind"), exp.PrimaryKeyColumnConstraint)
                    for k in c.args.get("constraints") or []
                )
            ]
            primary += _table_primary_key(schema)
            unique = _unique_keys(schema, table)
            document = {
                "owner": owner,
                "name": table,
                "columns": [
                    {
                        "name": c.name,
                        "type": str(c.oracle_type),
                        # A primary key column is NOT NULL whichever way the key is declared.
                        "nullable": c.nullable and c.name not in primary,
                        **({"default": c.default} if c.default is not None else {}),
                    }
                    for c in columns
                ],
                **({"primary_key": primary} if primary else {}),
                **({"unique_keys": unique} if unique else {}),
            }
            try:
                created = table_definition_from_dict(document, f"DDL {text}")
            except ConfigurationError as error:
                raise DdlError(INVALID_STATEMENT, str(error)) from None
            return DdlStatement("CREATE TABLE", owner, table, created=created)
        if kind == "TABLE" and isinstance(schema, exp.Table):
            owner, table = _table_name(schema, default_owner)
            return DdlStatement(CREATE_TABLE_AS_SELECT, owner, table)
        return DdlStatement("IGNORED", None, None, reason=f"CREATE {kind} changes no table rows")
    if isinstance(parsed, exp.Command):
        return _command(parsed, text, default_owner)
    if isinstance(parsed, exp.Grant | exp.Comment):
        return DdlStatement("IGNORED", None, None, reason="changes no table rows")
    if isinstance(parsed, exp.Alter):
        return _alter(parsed, text, default_owner)
    raise DdlError(UNIMPLEMENTED, f"this statement is not applied: {text}")


def _command(parsed: exp.Command, text: str, default_owner: str | None) -> DdlStatement:
    """A statement sqlglot keeps as an opaque Command: ALTER TABLE ... MODIFY, RENAME, and
    statements that change no rows or are not applied."""
    verb = str(parsed.this).upper()
    expression = parsed.args.get("expression") or ""
    # The rest of the text: a plain string, or a string Literal (its text, not its SQL).
    rest = str(expression.this if isinstance(expression, exp.Literal) else expression).strip()
    if verb == "ALTER" and rest.upper().startswith("TABLE"):
        return _alter_modify(rest, text, default_owner)
    if verb == "RENAME":
        return _rename(rest, text, default_owner)
    if verb in IGNORED_COMMANDS:
        return DdlStatement("IGNORED", None, None, reason=f"{verb} changes no table rows")
    raise DdlError(UNIMPLEMENTED, f"{verb} statements are not applied: {text}")


def _unique_keys(schema: exp.Schema, table: str) -> list[dict[str, Any]]:
    """The table's UNIQUE constraints, inline (``A VARCHAR2(9) [CONSTRAINT n] UNIQUE``) and
    out of line (``[CONSTRAINT n] UNIQUE (A, B)``), as table-definition ``unique_keys``; an
    unnamed one is called ``<table>_UK<n>`` (Oracle's SYS_C name is not in the DDL text)."""
    keys: list[dict[str, Any]] = []

    def add(name: Any, columns: list[str]) -> None:
        keys.append(
            {"name": _name(name) if name else f"{table}_UK{len(keys) + 1}", "columns": columns}
        )

    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            for constraint in item.args.get("constraints") or []:
                if isinstance(constraint.args.get("kind"), exp.UniqueColumnConstraint):
                    add(constraint.this, [_name(item.this)])
            continue
        name = item.this if isinstance(item, exp.Constraint) else None
        inner = item.expressions if isinstance(item, exp.Constraint) else [item]
        for constraint in inner:
            if isinstance(constraint, exp.UniqueColumnConstraint) and isinstance(
                constraint.this, exp.Schema
            ):
                add(name, [_name(column) for column in constraint.this.expressions])
    return keys


def _table_primary_key(schema: exp.Schema) -> list[str]:
    """The columns of an out-of-line ``[CONSTRAINT name] PRIMARY KEY (...)``."""
    for item in schema.expressions:
        inner = item.expressions if isinstance(item, exp.Constraint) else [item]
        for constraint in inner:
            if isinstance(constraint, exp.PrimaryKey):
                return [_name(column) for column in constraint.expressions]
    return []


def _alter(parsed: exp.Alter, text: str, default_owner: str | None) -> DdlStatement:  # noqa: PLR0912
    owner, table = _table_name(parsed.this, default_owner)
    actions = parsed.args.get("actions") or []
    added: list[AddColumn] = []
    dropped: list[str] = []
    for action in actions:
        if isinstance(action, exp.Schema | exp.ColumnDef):
            definitions = action.expressions if isinstance(action, exp.Schema) else [action]
            for definition in definitions:
                if not isinstance(definition, exp.ColumnDef):
                    raise DdlError(UNIMPLEMENTED, f"ALTER TABLE ... ADD is not applied: {text}")
                column, default = _column(definition, text)
                added.append(AddColumn(column, default))
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
            dropped += [_name(column) for column in action.args.get("tables") or []]
        elif isinstance(action, exp.Command) and str(action.this).upper() == "DROP":
            tuple_ = _parse(f"SELECT {action.expression}", text)
            values = tuple_.expressions[0] if isinstance(tuple_, exp.Select) else None
            items = values.expressions if isinstance(values, exp.Tuple | exp.Paren) else [values]
            if isinstance(values, exp.Paren):
                items = [values.this]
            if not items or not all(isinstance(i, exp.Column) for i in items):
                return DdlStatement("IGNORED", owner, table, reason="drops no column")
            dropped += [_name(i) for i in items]
        elif isinstance(action, exp.AlterRename):  # ALTER TABLE t RENAME TO u
            renamed_to = _table_name(action.this, owner)[1]
            return DdlStatement(RENAME_TABLE, owner, table, renamed=(table, renamed_to))
        elif isinstance(action, exp.RenameColumn):
            return DdlStatement(
                "RENAME", owner, table, renamed=(_name(action.this), _name(action.args["to"]))
            )
        elif isinstance(action, exp.AddConstraint | exp.Drop):
            return DdlStatement("IGNORED", owner, table, reason="a constraint changes no rows")
        else:
            raise DdlError(UNIMPLEMENTED, f"ALTER TABLE action is not applied: {text}")
    if added and dropped:
        raise DdlError(UNIMPLEMENTED, f"ADD and DROP in one statement are not applied: {text}")
    if added:
        return DdlStatement("ADD", owner, table, added=tuple(added))
    if dropped:
        return DdlStatement("DROP", owner, table, dropped=tuple(dropped))
    return DdlStatement("IGNORED", owner, table, reason="no column change")


def _rename(rest: str, text: str, default_owner: str | None) -> DdlStatement:
    """RENAME t TO u (sqlglot keeps it as a Command): Oracle's statement for an object of the
    session's own schema, for a table the same as ALTER TABLE t RENAME TO u."""
    tokens = sqlglot.tokenize(rest, read="oracle")
    to = [
        number
        for number, token in enumerate(tokens)
        if token.text.upper() == "TO" and token.token_type is not TokenType.IDENTIFIER
    ]
    if len(to) != 1 or to[0] == 0 or to[0] == len(tokens) - 1:
        raise DdlError(INVALID_STATEMENT, f"expected RENAME old_name TO new_name: {text}")
    at = to[0]
    old, new = rest[: tokens[at].start].strip(), rest[tokens[at].end + 1 :].strip()
    if any(token.token_type is TokenType.DOT for token in tokens[:at]):
        raise DdlError(
            OWNER_IN_RENAME, f"specifying owner's name of the table is not allowed: {text}"
        )
    parsed = _parse(f"ALTER TABLE {old} RENAME TO {new}", text)
    if not isinstance(parsed, exp.Alter):
        raise DdlError(INVALID_STATEMENT, f"expected RENAME old_name TO new_name: {text}")
    return _alter(parsed, text, default_owner)


def _alter_modify(rest: str, text: str, default_owner: str | None) -> DdlStatement:
    """ALTER TABLE t MODIFY ... (sqlglot keeps it as a Command): the table name and the
    column list are each parsed by sqlglot."""
    tokens = sqlglot.tokenize(rest, read="oracle")
    words = [token.text.upper() for token in tokens]
    if "MODIFY" not in words:
        raise DdlError(UNIMPLEMENTED, f"ALTER TABLE action is not applied: {text}")
    at = words.index("MODIFY")
    name = _parse(
        "SELECT * FROM " + rest[tokens[1].start : tokens[at - 1].end + 1],  # noqa: S608 (parsed only)
        text,
    ).find(exp.Table)
    if name is None:
        raise DdlError(INVALID_STATEMENT, f"no table name in: {text}")
    owner, table = _table_name(name, default_owner)
    inner = rest[tokens[at].end + 1 :]
    if any(word in ("CONSTRAINT", "PRIMARY", "UNIQUE") for word in words[at + 1 : at + 3]):
        return DdlStatement("IGNORED", owner, table, reason="a constraint changes no rows")
    modified = []
    for definition in _column_defs(inner, text):
        if definition.args.get("kind") is None:
            continue  # MODIFY (c NOT NULL) and friends: a constraint, no rows change
        modified.append(_column(definition, text)[0])
    if not modified:
        return DdlStatement("IGNORED", owner, table, reason="a constraint changes no rows")
    return DdlStatement("MODIFY", owner, table, modified=tuple(modified))


def _number_widens(old: OracleType, new: OracleType) -> bool:
    """No integer digit and no decimal lost: every stored value fits, and Delta widens the
    decimal in place (to an unconstrained NUMBER, DECIMAL(38,10), only from a scale of at most
    10; Delta refuses the others: ORA-03001)."""
    if new.precision is None:
        return True
    if old.precision is None:
        return False
    return (new.scale or 0) >= (old.scale or 0) and (new.precision - (new.scale or 0)) >= (
        old.precision - (old.scale or 0)
    )


# Type changes Oracle makes whatever the column holds (it converts the values).
_CONVERTIBLE_LONGS = {("LONG", "CLOB"), ("LONG", "NCLOB"), ("LONG RAW", "BLOB")}


@dataclass(frozen=True)
class StoredValuesCheck:
    """What the destination's stored values must allow for a MODIFY of one column to apply,
    as Oracle checks them: with ``max_length`` no value longer than it (characters, or bytes
    for RAW), else no value at all (every row NULL in the column); ``error`` otherwise."""

    column: str
    error: int
    reason: str
    max_length: int | None = None


def _modify_check(
    old: OracleType, new: OracleType, table: str, column: str
) -> StoredValuesCheck | None:
    """The stored-values condition of ``MODIFY (column new)`` on a column of type ``old``;
    None when Oracle applies it whatever the column holds. Raises ORA-22858 for a change to or
    from a LOB that Oracle never makes. (Oracle also turns a non-empty CHAR column into a
    VARCHAR2 of no smaller length, and back, padding the values; here only of the same
    length, as the Oracle SQL reference allows it: another length needs an empty column.)"""
    change = f"{table}.{column} {old} to {new}"
    if frozenset((old.name, new.name)) in BLANK_PADDING_PAIRS and old.length == new.length:
        return None  # CHAR <-> VARCHAR2 of the same size: values kept (padded to a CHAR)
    if (old.name, new.name) == ("DATE", "TIMESTAMP"):
        return None  # every DATE is a TIMESTAMP (both TIMESTAMP_NTZ here): values kept
    if old.family in (TypeFamily.CHARACTER, TypeFamily.BINARY) and old.name == new.name:
        if new.length is None or (old.length is not None and new.length >= old.length):
            return None
        return StoredValuesCheck(
            column,
            CANNOT_DECREASE,
            f"cannot decrease column length because some value is too big: {change}",
            max_length=new.length,
        )
    if old.name != new.name or old.family != new.family:
        if (old.name, new.name) in _CONVERTIBLE_LONGS:
            return None
        if old.is_lob_or_long or new.is_lob_or_long:
            raise DdlError(
                INVALID_TYPE_ALTERATION,
                f"invalid alteration of datatype: {change} is not applied",
            )
        return StoredValuesCheck(
            column,
            CANNOT_CHANGE_TYPE,
            f"column to be modified must be empty to change datatype: {change}",
        )
    if old.family == TypeFamily.NUMBER and not _number_widens(old, new):
        return StoredValuesCheck(
            column,
            CANNOT_DECREASE_PRECISION,
            f"column to be modified must be empty to decrease precision or scale: {change}",
        )
    if _datetime_precision_decreases(old, new):
        # Oracle raises its own datetime-precision number here; the spec files every decrease
        # under 01440, so the queue keeps one number for "a smaller precision needs an empty column".
        return StoredValuesCheck(
            column,
            CANNOT_DECREASE_PRECISION,
            "column to be modified must be empty to decrease fractional second or leading "
            f"field precision: {change}",
        )
    return None


def _datetime_precision_decreases(old: OracleType, new: OracleType) -> bool:
    """A TIMESTAMP's or INTERVAL's fractional-second or leading-field precision lowered."""
    if old.family not in _DATETIME_FAMILIES_WITH_PRECISIONS:
        return False
    return (
        new.effective_fractional_precision < old.effective_fractional_precision
        or new.effective_leading_precision < old.effective_leading_precision
    )


_DATETIME_FAMILIES_WITH_PRECISIONS = (
    TypeFamily.DATETIME,
    TypeFamily.DATETIME_TZ,
    TypeFamily.INTERVAL_YM,
    TypeFamily.INTERVAL_DS,
)


# CHAR <-> VARCHAR2 (NCHAR <-> NVARCHAR2): a column holding values changes type when its size
# stays the same (Oracle SQL reference, ALTER TABLE ... MODIFY).
BLANK_PADDING_PAIRS = (frozenset(("CHAR", "VARCHAR2")), frozenset(("NCHAR", "NVARCHAR2")))


def stored_values_checks(
    definition: TableDefinition, statement: DdlStatement
) -> tuple[StoredValuesCheck, ...]:
    """What a MODIFY needs of the destination's stored values (only its rows can tell)."""
    if statement.kind != "MODIFY":
        return ()
    checks = (
        _modify_check(
            definition.column(column.name).oracle_type,
            column.oracle_type,
            definition.qualified_name,
            column.name,
        )
        for column in statement.modified
    )
    return tuple(check for check in checks if check is not None)


def new_definition(  # noqa: PLR0912 (one branch per DDL kind)
    definition: TableDefinition, statement: DdlStatement, key: tuple[str, ...]
) -> TableDefinition:
    """The table's definition after ``statement``; raises DdlError as Oracle would."""
    table = definition.qualified_name
    names = definition.column_names
    if statement.kind == "ADD":
        columns = list(definition.columns)
        for add in statement.added:
            if add.column.name in [c.name for c in columns]:
                raise DdlError(
                    COLUMN_EXISTS,
                    f"column being added already exists in table {table}: {add.column.name}",
                )
            columns.append(add.column)
        return replace(definition, columns=tuple(columns))
    if statement.kind == "DROP":
        for name in statement.dropped:
            if name not in names:
                raise DdlError(INVALID_IDENTIFIER, f'"{name}": invalid identifier (table {table})')
            if name in key:
                raise DdlError(
                    KEY_COLUMN,
                    f"column {name} of {table} is a key column of the destination "
                    f"(key {', '.join(key)}); dropping it is not applied",
                )
        if len(statement.dropped) >= len(names):
            raise DdlError(UNIMPLEMENTED, f"cannot drop all columns of {table}")
        return replace(
            definition,
            columns=tuple(c for c in definition.columns if c.name not in statement.dropped),
        )
    if statement.kind == RENAME_TABLE:
        assert statement.renamed is not None
        return replace(definition, name=statement.renamed[1])
    if statement.kind == "RENAME":
        assert statement.renamed is not None
        old, new = statement.renamed
        if old not in names:
            raise DdlError(INVALID_IDENTIFIER, f'"{old}": invalid identifier (table {table})')
        if new in names:
            raise DdlError(DUPLICATE_COLUMN, f"duplicate column name {new} in table {table}")
        rename = {old: new}
        return replace(
            definition,
            columns=tuple(replace(c, name=rename.get(c.name, c.name)) for c in definition.columns),
            primary_key=tuple(rename.get(c, c) for c in definition.primary_key),
            unique_keys=tuple(
                replace(k, columns=tuple(rename.get(c, c) for c in k.columns))
                for k in definition.unique_keys
            ),
        )
    if statement.kind == "MODIFY":
        changed = {c.name: c for c in statement.modified}
        for name, column in changed.items():
            if name not in names:
                raise DdlError(INVALID_IDENTIFIER, f'"{name}": invalid identifier (table {table})')
            # Raises ORA-22858 now; the other conditions need the rows (ddl_apply.py).
            _modify_check(definition.column(name).oracle_type, column.oracle_type, table, name)
        return replace(
            definition,
            columns=tuple(
                replace(c, oracle_type=changed[c.name].oracle_type) if c.name in changed else c
                for c in definition.columns
            ),
        )
    return definition


def created_silver_table(source_database: str, owner: str, name: str) -> str:
    """The silver table a CREATE TABLE makes: the name lakeapply.yml's examples and the testing
    harness give a declared table (``source_owner_name``, lower case, other characters ``_``)."""
    return re.sub(r"[^a-z0-9_]", "_", f"{source_database}_{owner}_{name}".lower())


# A DROP TABLE's row in ``table_versions``: the table's last definition with this key set, so
# later row LCRs for it still resolve to a table (and get ORA-00942) and a later CREATE TABLE
# of the same name may replace it.
DROPPED_KEY = "dropped"


def definition_json(definition: TableDefinition, dropped: bool = False) -> str:
    """The definition as a table-definition document (schemas/table-definition.schema.json)."""
    document: dict[str, Any] = {
        "owner": definition.owner,
        "name": definition.name,
        "columns": [
            {
                "name": c.name,
                "type": str(c.oracle_type),
                "nullable": c.nullable,
                **({"default": c.default} if c.default is not None else {}),
            }
            for c in definition.columns
        ],
    }
    if definition.primary_key:
        document["primary_key"] = list(definition.primary_key)
    if definition.unique_keys:
        document["unique_keys"] = [
            {"name": k.name, "columns": list(k.columns)} for k in definition.unique_keys
        ]
    if dropped:
        document[DROPPED_KEY] = True
    return json.dumps(document, sort_keys=True)


def definition_from_json(text: str) -> TableDefinition:
    document = json.loads(text)
    document.pop(DROPPED_KEY, None)
    return table_definition_from_dict(document, "table_versions")


def is_dropped_json(text: str) -> bool:
    """True for the ``table_versions`` row of a DROP TABLE."""
    return bool(json.loads(text).get(DROPPED_KEY, False))
