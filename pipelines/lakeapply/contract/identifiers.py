"""Identifiers are data: validate owners, tables and columns, and quote them for Spark SQL."""

from __future__ import annotations

import re

from lakeapply.errors import InvalidIdentifierError

# Oracle quoted identifiers may hold almost anything; we refuse only what no sane schema uses and
# what could break out of a quoted name or a log line: control characters and double quotes.
_ORACLE_IDENTIFIER = re.compile(r'^[^\x00-\x1f\x7f"]{1,128}$')
# Spark/Delta column and table names we create ourselves: a conservative portable subset.
_SPARK_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

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
    """Quote one identifier for Spark SQL: backticks around it, inner backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def quote_qualified(*parts: str) -> str:
    """Quote a multi-part name such as database.table."""
    return ".".join(quote(part) for part in parts)
