"""LCR values read by Spark exactly as ``rowops.convert_value`` reads them (rules 5 and 6).

The stage reads keys with it (``stage.py``) and the lone chains their whole rows (``direct.py``).
A value Spark cannot be sure to read the same way is not *clean*: its LCR goes to the Python
path, which converts it or names its error, so every value has one reading whichever path reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.oracle_types import (
    MAX_DECIMAL_PRECISION,
    UNCONSTRAINED_NUMBER_SCALE,
    TypeFamily,
)
from lakeapply.contract.table_definitions import ColumnDefinition

# The subset of rowops' number syntax Spark is sure to read the same way: ASCII digits, no
# blanks (Python's \d and \s also match other scripts' digits and blanks: those go to Python).
_PLAIN_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
# Spark's JSON writer escapes control characters as \u001F, Python's as \u001f: keys holding
# one are read in Python only, so that one key has one text.
_CONTROL_CHARACTER = r"[\x00-\x1f]"
# The subset of datetime.fromisoformat's syntax Spark's cast reads the same way: ASCII digits,
# no zone, at most microseconds (rowops keeps a DATE's or TIMESTAMP's wall-clock time).
_PLAIN_DATETIME = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?)?$"
)


@dataclass(frozen=True)
class SparkReading:
    """How Spark reads one column from an LCR value (None from ``spark_reading``: it cannot,
    and Python reads the LCR)."""

    name: str
    decimal: T.DecimalType | None  # NUMBER columns
    length: int | None  # character columns: the declared length, if any
    blank_padded: bool  # CHAR, NCHAR
    datetime: bool = False  # DATE, TIMESTAMP (no zone)


def spark_reading(column: ColumnDefinition, datetimes: bool = False) -> SparkReading | None:
    """NUMBER and character columns; DATE and TIMESTAMP too with ``datetimes`` (not for keys,
    whose text the stage writes as ``fold.key_text`` does)."""
    oracle_type = column.oracle_type
    if oracle_type.family is TypeFamily.NUMBER:
        precision, scale = oracle_type.precision, oracle_type.scale or 0
        if precision is None:  # rowops._to_number: stored as DECIMAL(38,10)
            precision, scale = MAX_DECIMAL_PRECISION, UNCONSTRAINED_NUMBER_SCALE
        if not 0 <= scale <= precision <= MAX_DECIMAL_PRECISION:
            return None
        if oracle_type.spark_type() != T.DecimalType(precision, scale):
            return None
        return SparkReading(column.name, T.DecimalType(precision, scale), None, False)
    if oracle_type.family is TypeFamily.CHARACTER:
        padded = oracle_type.name in ("CHAR", "NCHAR") and oracle_type.length is not None
        return SparkReading(column.name, None, oracle_type.length, padded)
    if datetimes and oracle_type.family is TypeFamily.DATETIME:
        return SparkReading(column.name, None, None, False, datetime=True)
    return None


def names_of(image: Column) -> Column:
    """The column names of an image, in order (no lambda: Spark compiles the whole stage)."""
    return F.coalesce(image, F.array())["column_name"]


def unique_names(image: Column) -> Column:
    """No column twice in the image (rowops raises ORA-00957 for that: Python names it)."""
    names = names_of(image)
    return F.size(F.array_distinct(names)) == F.size(names)


def known_names(image: Column, columns: tuple[str, ...]) -> Column:
    """No column twice and every column a destination column (else 00957, 00904: Python)."""
    unknown = F.array_except(names_of(image), F.array(*[F.lit(name) for name in columns]))
    return unique_names(image) & (F.size(unknown) == 0)


def value_of(image: Column, name: str) -> tuple[Column, Column]:
    """(present, raw value) of one column in an image whose names are unique (the stage checks
    that first). ``array_position`` and ``get`` instead of a ``filter`` lambda: a higher-order
    function is interpreted row by row and turns off code generation for the whole projection."""
    position = F.array_position(names_of(image), F.lit(name))
    # get: NULL, not an error, for the index -1 of an absent column (whatever ANSI says)
    return position > 0, F.get(F.coalesce(image, F.array())["value"], position - 1)


def converted(column: SparkReading, raw: Column) -> tuple[Column, Column]:
    """(clean, value): the value as the destination type holds it, and whether Spark read it
    exactly as ``rowops.convert_value`` does (otherwise Python reads it)."""
    if column.decimal is not None:
        # Spark's cast rounds half up to the scale and is NULL when the rounded value has more
        # integer digits than the precision allows: rowops' rounding and its ORA-01438.
        value = raw.try_cast(column.decimal)
        return raw.isNull() | (raw.rlike(_PLAIN_NUMBER) & value.isNotNull()), value
    if column.datetime:
        value = raw.try_cast(T.TimestampNTZType())
        return raw.isNull() | (raw.rlike(_PLAIN_DATETIME) & value.isNotNull()), value
    fits = F.lit(True) if column.length is None else F.char_length(raw) <= column.length
    clean = raw.isNull() | (fits & ~raw.rlike(_CONTROL_CHARACTER))
    if column.blank_padded and column.length is not None:
        return clean, F.rpad(raw, column.length, " ")  # D8: CHAR is blank-padded
    return clean, raw
