"""Identifiers are data: validate owners, tables and columns, and quote them for Spark SQL.

The package builds SQL text in as few places as it can (DataFrame and DeltaTable APIs take names
and values as data). Where text is unavoidable (MERGE and join conditions, ``replaceWhere``,
DDL), every name goes through :func:`quote` and every value through :func:`sql_string_literal`:
the only identifier quoter and the only string-literal quoter of the package. The dbt project has
the same two as macros (``dbt/macros/lakeapply_quoting.sql``).
"""

from __future__ import annotations

import re

from lakeapply.errors import InvalidIdentifierError

# Oracle quoted identifiers may hold almost anything; we refuse only what no sane schema uses and
# what could break out of a quoted name or a log line: control characters and double quotes.
_ORACLE_IDENTIFIER = re.compile(r'^[^\x00-\x1f\x7f"]{1,128}$')
# Spark/Delta column and table names we create ourselves: a conservative portable subset.
_SPARK_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# A column name Delta stores as-is in Parquet without column mapping: anything else (spaces,
# ; ( ) = , { } . backticks, unicode, ...) makes the table use column mapping (name mode).
_PLAIN_COLUMN = re.compile(r"^[A-Za-z0-9_]+$")

ORACLE_IDENTIFIER_PATTERN = _ORACLE_IDENTIFIER.pattern


def validate_oracle_identifier(name: str, what: str) -> str:
    """Return ``name`` if it is a valid Oracle identifier, else raise InvalidIdentifierError."""
    if not isinstance(name, str) or not _ORACLE_IDENTIFIER.match(name):
        raise InvalidIdentifierError(
            f"{what} {name!r} is not a valid identifier "
            "(1-128 characters, no control characters, no double quote)"
        )
    return name


def validate_spark_name(name: str, what: str) -> str:
    """Return ``name`` if it is a safe Spark database/table name, else raise."""
    if not isinstance(name, str) or not _SPARK_NAME.match(name):
        raise InvalidIdentifierError(
            f"{what} {name!r} is not a valid Spark name (letters, digits, underscore; "
            "not starting with a digit; at most 128 characters)"
        )
    return name


def quote(name: str) -> str:
    """Quote one identifier for Spark SQL: backticks around it, inner backticks doubled.

    Inside backticks Spark's parser gives nothing but the backtick a meaning, so any name
    (spaces, quotes, semicolons, dots, keywords, unicode) stays one identifier."""
    return "`" + name.replace("`", "``") + "`"


def quote_qualified(*parts: str) -> str:
    """Quote a multi-part name such as database.table."""
    return ".".join(quote(part) for part in parts)


def split_qualified(text: str) -> tuple[str, ...]:
    """The parts of a name built by :func:`quote_qualified` (or of plain dotted parts):
    ``split_qualified(quote_qualified(*parts)) == parts``."""
    parts: list[str] = []
    index = 0
    while True:
        if text.startswith("`", index):
            part: list[str] = []
            index += 1
            while True:
                end = text.find("`", index)
                if end < 0:
                    raise InvalidIdentifierError(f"unterminated quoted name in {text!r}")
                part.append(text[index:end])
                if text.startswith("``", end):
                    part.append("`")
                    index = end + 2
                else:
                    index = end + 1
                    break
            parts.append("".join(part))
        else:
            end = text.find(".", index)
            end = len(text) if end < 0 else end
            if end == index or "`" in text[index:end]:
                raise InvalidIdentifierError(f"malformed qualified name {text!r}")
            parts.append(text[index:end])
            index = end
        if index == len(text):
            return tuple(parts)
        if text[index] != ".":
            raise InvalidIdentifierError(f"malformed qualified name {text!r}")
        index += 1


def sql_string_literal(value: str) -> str:
    """A Spark SQL string literal holding ``value`` exactly: single quotes around it, backslashes
    and single quotes backslash-escaped (the default parser, where backslash escapes apply;
    lakeapply never sets ``spark.sql.parser.escapedStringLiterals``)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def needs_column_mapping(name: str) -> bool:
    """True when a column named ``name`` needs Delta column mapping (name mode): Delta rejects
    `` ,;{}()\\n\\t=`` in physical column names, and anything beyond [A-Za-z0-9_] is kept out of
    Parquet names on purpose."""
    return not _PLAIN_COLUMN.match(name)
