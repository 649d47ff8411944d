"""Subset rules (DBMS_STREAMS_ADM.ADD_SUBSET_RULES): a table rule with a condition on column values.

The condition is a small language, parsed with sqlglot (Oracle dialect) and checked node by node:
comparisons (``= <> != < <= > >=``) of one column with one literal (a string, a number or NULL),
``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT`` and parentheses. Anything else (functions, subqueries,
two columns compared, arithmetic, ...) is rejected with a message naming it. Unquoted column names
are upper-cased as Oracle does; ``"quoted"`` ones keep their case and may hold any character an
Oracle identifier may.

A condition never becomes SQL text: it is translated into a Spark Column over the LCR's
``old_values`` / ``new_values`` arrays, a column name being a literal matched against each value's
``column_name``. A number literal compares the value as DECIMAL(38,10); a string literal compares
the value's text. A comparison with a missing or NULL value is unknown, and unknown is outside.

Row migration (Oracle's subset rules): a row LCR is in the subset by its image: an INSERT by its
new values, a DELETE by its old ones; an UPDATE whose old values are outside and new values inside
becomes an INSERT of the full new row, inside -> outside becomes a DELETE, both inside stays an
UPDATE, both outside is discarded. The new image of an UPDATE is its new values, completed by its
old values for the columns it did not change (GET_VALUE's ``use_old => 'Y'``).
"""

from __future__ import annotations

from functools import reduce

import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.errors import ParseError

from lakeapply.contract.identifiers import validate_oracle_identifier
from lakeapply.errors import ConfigurationError, InvalidIdentifierError

COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
# A comparison read right to left: 5 < X is X > 5.
MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NUMBER_TYPE = "decimal(38,10)"


def parse_condition(text: str) -> exp.Expr:
    """The checked syntax tree of a subset condition; ConfigurationError saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError("a subset condition must be a non-empty string")
    try:
        parsed = sqlglot.parse(text, read="oracle")
    except (ParseError, sqlglot.errors.TokenError) as error:
        first = str(error).splitlines()[0]
        raise ConfigurationError(f"subset condition {text!r} does not parse: {first}") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise ConfigurationError(f"subset condition {text!r} must be one expression")
    tree = parsed[0]
    _check(tree, text)
    return tree


def _check(node: exp.Expr, text: str) -> None:
    if isinstance(node, exp.Paren):
        _check(node.this, text)
    elif isinstance(node, (exp.And, exp.Or)):
        _check(node.left, text)
        _check(node.right, text)
    elif isinstance(node, exp.Not):
        _check(node.this, text)
    elif isinstance(node, exp.Is):
        _column_name(node.this, text)
        if not isinstance(node.expression, exp.Null):
            raise _unsupported(node, text, "IS takes NULL or NOT NULL only")
    elif type(node) in COMPARISONS:
        _comparison(node, text)
    else:
        raise _unsupported(node, text, None)


def _unsupported(node: exp.Expr, text: str, why: str | None) -> ConfigurationError:
    allowed = (
        "allowed: a column compared (= <> != < <= > >=) with a string or number literal, "
        "column IS [NOT] NULL, AND, OR, NOT, parentheses"
    )
    return ConfigurationError(
        f"subset condition {text!r}: {node.sql(dialect='oracle')!r} is not allowed "
        f"({why or allowed})"
    )


def _column_name(node: exp.Expr, text: str) -> str:
    if not isinstance(node, exp.Column) or node.table or not isinstance(node.this, exp.Identifier):
        raise _unsupported(node, text, "expected a column name")
    identifier: exp.Identifier = node.this
    name = identifier.name if identifier.quoted else identifier.name.upper()
    try:
        return validate_oracle_identifier(name, "subset condition column")
    except InvalidIdentifierError as error:
        raise ConfigurationError(f"subset condition {text!r}: {error}") from None


def _literal(node: exp.Expr, text: str) -> tuple[str | None, bool]:
    """(value, is_number) of a literal operand."""
    if isinstance(node, exp.Null):
        return None, False
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_number:
        return "-" + node.this.name, True
    if isinstance(node, exp.Literal):
        return node.name, node.is_number
    raise _unsupported(node, text, "expected a string or number literal")


def _comparison(node: exp.Expr, text: str) -> tuple[str, str, str | None, bool]:
    """(column, operator, literal, is_number) with the column on the left."""
    operator = COMPARISONS[type(node)]
    left, right = node.args["this"], node.args["expression"]
    if isinstance(left, exp.Column) and isinstance(right, exp.Column):
        raise _unsupported(node, text, "a comparison needs one column and one literal")
    if isinstance(left, exp.Column):
        return (_column_name(left, text), operator, *_literal(right, text))
    if isinstance(right, exp.Column):
        return (_column_name(right, text), MIRRORED[operator], *_literal(left, text))
    literal_left = isinstance(left, (exp.Literal, exp.Null, exp.Neg))
    raise _unsupported(right if literal_left else left, text, "expected a column name")


def condition_text(text: str) -> str:
    """The condition as Oracle SQL with every column name double-quoted, for the gold views."""
    tree = parse_condition(text).copy()
    for column in tree.find_all(exp.Column):
        name = _column_name(column, text)
        column.set("this", exp.Identifier(this=name, quoted=True))
    return tree.sql(dialect="oracle")


def _value(image: str, column: str) -> Column:
    """The column's value in the LCR's ``old`` or ``new`` image (NULL when it has none)."""

    def lookup(values: str) -> Column:
        found = F.filter(F.col(values), lambda v: v["column_name"] == F.lit(column))
        return F.get(found, 0)["value"]

    if image == "old":
        return lookup("old_values")
    in_new = F.exists(F.col("new_values"), lambda v: v["column_name"] == F.lit(column))
    return F.when(F.coalesce(in_new, F.lit(False)), lookup("new_values")).otherwise(
        lookup("old_values")
    )


def _column(node: exp.Expr, image: str, text: str) -> Column:
    if isinstance(node, exp.Paren):
        return _column(node.this, image, text)
    if isinstance(node, exp.And):
        return _column(node.left, image, text) & _column(node.right, image, text)
    if isinstance(node, exp.Or):
        return _column(node.left, image, text) | _column(node.right, image, text)
    if isinstance(node, exp.Not):
        return ~_column(node.this, image, text)
    if isinstance(node, exp.Is):
        value = _value(image, _column_name(node.this, text))
        return value.isNull()
    column, operator, literal, is_number = _comparison(node, text)
    value = _value(image, column)
    if literal is None:
        return F.lit(None).cast("boolean")  # a comparison with NULL is unknown
    if is_number:
        value, bound = value.try_cast(NUMBER_TYPE), F.lit(literal).try_cast(NUMBER_TYPE)
    else:
        bound = F.lit(literal)
    compared = {
        "=": value == bound,
        "<>": value != bound,
        "<": value < bound,
        "<=": value <= bound,
        ">": value > bound,
        ">=": value >= bound,
    }
    return compared[operator]


def in_subset(conditions: tuple[tuple[Column, str], ...], image: str) -> Column:
    """True when one of the (rule match, condition) pairs holds for the LCR's ``image``
    (``old`` or ``new``); unknown counts as outside."""
    terms = [
        match & F.coalesce(_column(parse_condition(text), image, text), F.lit(False))
        for match, text in conditions
    ]
    return F.coalesce(reduce(Column.__or__, terms, F.lit(False)), F.lit(False))


def subset_passes(in_old: Column, in_new: Column) -> Column:
    """Whether a subset rule selects the row LCR, by its command."""
    command = F.col("command_type")
    return (
        F.when(command == "INSERT", in_new)
        .when(command == "DELETE", in_old)
        .when(command == "UPDATE", in_old | in_new)
        .when(command.startswith("LOB"), in_new)
        .otherwise(F.lit(False))
    )


def full_new_image() -> Column:
    """An UPDATE's new values completed by its old values for the columns it did not change:
    the row a migrated INSERT carries."""
    new, old = F.col("new_values"), F.col("old_values")
    unchanged = F.filter(
        old, lambda o: ~F.exists(new, lambda n: n["column_name"] == o["column_name"])
    )
    return F.when(old.isNull(), new).when(new.isNull(), old).otherwise(F.concat(new, unchanged))


def migrated(in_old: Column, in_new: Column, migrates: Column) -> dict[str, Column]:
    """The ``command_type`` / ``old_values`` / ``new_values`` of LCRs after row migration;
    ``migrates``: the LCR was selected by a subset rule alone (not by an unconditional rule)."""
    update = migrates & (F.col("command_type") == "UPDATE")
    to_insert = update & ~in_old & in_new
    to_delete = update & in_old & ~in_new
    return {
        "command_type": F.when(to_insert, F.lit("INSERT"))
        .when(to_delete, F.lit("DELETE"))
        .otherwise(F.col("command_type")),
        "new_values": F.when(to_insert, full_new_image())
        .when(to_delete, F.lit(None))
        .otherwise(F.col("new_values")),
        "old_values": F.when(to_insert, F.lit(None)).otherwise(F.col("old_values")),
    }
