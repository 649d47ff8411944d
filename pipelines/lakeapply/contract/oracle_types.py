"""Oracle column types and their Spark/Delta mapping.

The mapping (documented in the README and tested in tests/contract/test_oracle_types.py):

| Oracle                              | Spark / Delta                  | note                                   |
|-------------------------------------|--------------------------------|----------------------------------------|
| NUMBER(p,s)                         | DECIMAL(p,s)                   | p <= 38; extra fraction digits rounded |
| NUMBER(p)                           | DECIMAL(p,0)                   |                                        |
| NUMBER, FLOAT(b)                    | DECIMAL(38,10)                 | Oracle's floating NUMBER, 10 decimals  |
| INTEGER, INT, SMALLINT              | DECIMAL(38,0)                  | Oracle aliases of NUMBER(38)           |
| BINARY_FLOAT / BINARY_DOUBLE        | FLOAT / DOUBLE                 |                                        |
| CHAR, NCHAR, VARCHAR2, NVARCHAR2    | STRING                         | declared length enforced (ORA-12899)   |
| CLOB, NCLOB, LONG                   | STRING                         | LOB/LONG: never part of an all-column key |
| DATE, TIMESTAMP(n)                  | TIMESTAMP_NTZ                  | wall-clock time, no zone, as in Oracle |
| TIMESTAMP WITH (LOCAL) TIME ZONE    | TIMESTAMP                      | an instant (stored in UTC)             |
| INTERVAL YEAR TO MONTH              | STRING `+YY-MM`                | Delta has no interval types            |
| INTERVAL DAY TO SECOND              | STRING `+DD HH:MI:SS.FFFFFF`   | microsecond precision; likewise        |
| RAW(n), LONG RAW, BLOB              | BINARY                         | hex in LCRs                            |
| ROWID, UROWID                       | STRING                         |                                        |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pyspark.sql import types as T

from lakeapply.errors import ConfigurationError

UNCONSTRAINED_NUMBER_SCALE = 10
MAX_DECIMAL_PRECISION = 38


class TypeFamily(StrEnum):
    """How values of a type are converted and compared."""

    NUMBER = "NUMBER"
    FLOAT = "FLOAT"
    CHARACTER = "CHARACTER"
    LOB_CHARACTER = "LOB_CHARACTER"
    DATETIME = "DATETIME"
    DATETIME_TZ = "DATETIME_TZ"
    INTERVAL_YM = "INTERVAL_YM"
    INTERVAL_DS = "INTERVAL_DS"
    BINARY = "BINARY"
    LOB_BINARY = "LOB_BINARY"


@dataclass(frozen=True)
class OracleType:
    """A parsed Oracle column type."""

    name: str  # canonical Oracle name, e.g. "NUMBER", "VARCHAR2", "TIMESTAMP WITH TIME ZONE"
    family: TypeFamily
    precision: int | None = None  # NUMBER precision
    scale: int | None = None  # NUMBER scale
    length: int | None = None  # character / RAW length

    @property
    def is_lob_or_long(self) -> bool:
        """LOB, LONG and LONG RAW columns never take part in an all-columns key."""
        return self.family in (TypeFamily.LOB_CHARACTER, TypeFamily.LOB_BINARY)

    def spark_type(self) -> T.DataType:
        """The Spark/Delta type a destination column of this Oracle type gets."""
        family = self.family
        if family is TypeFamily.NUMBER:
            return T.DecimalType(
                self.precision or MAX_DECIMAL_PRECISION,
                UNCONSTRAINED_NUMBER_SCALE if self.precision is None else (self.scale or 0),
            )
        if family is TypeFamily.FLOAT:
            return T.FloatType() if self.name == "BINARY_FLOAT" else T.DoubleType()
        if family in (TypeFamily.CHARACTER, TypeFamily.LOB_CHARACTER):
            return T.StringType()
        if family is TypeFamily.DATETIME:
            return T.TimestampNTZType()
        if family is TypeFamily.DATETIME_TZ:
            return T.TimestampType()
        if family in (TypeFamily.INTERVAL_YM, TypeFamily.INTERVAL_DS):
            # Delta tables cannot hold Spark's interval types (DELTA_UNSUPPORTED_DATA_TYPES):
            # Oracle's display text, which CAST(... AS INTERVAL ...) reads back.
            return T.StringType()
        return T.BinaryType()

    def __str__(self) -> str:
        if self.family is TypeFamily.NUMBER and self.precision is not None:
            return f"NUMBER({self.precision},{self.scale or 0})"
        if self.length is not None:
            return f"{self.name}({self.length})"
        return self.name


_CHARACTER = {"CHAR", "NCHAR", "VARCHAR2", "NVARCHAR2", "VARCHAR", "ROWID", "UROWID"}
_DEFAULT_LENGTH = {"CHAR": 1, "NCHAR": 1}
_SIMPLE = {
    "CLOB": TypeFamily.LOB_CHARACTER,
    "NCLOB": TypeFamily.LOB_CHARACTER,
    "LONG": TypeFamily.LOB_CHARACTER,
    "BLOB": TypeFamily.LOB_BINARY,
    "LONG RAW": TypeFamily.LOB_BINARY,
    "BINARY_FLOAT": TypeFamily.FLOAT,
    "BINARY_DOUBLE": TypeFamily.FLOAT,
    "DATE": TypeFamily.DATETIME,
}
_TYPE = re.compile(
    r"^(?P<base>[A-Z_0-9 ]+?)\s*(\(\s*(?P<a>\*|\d+)\s*(?:(?:BYTE|CHAR)\s*)?(,\s*(?P<b>-?\d+)\s*)?\))?"
    r"(?P<rest>\s+WITH( LOCAL)? TIME ZONE|\s+TO\s+(MONTH|SECOND(\s*\(\s*\d+\s*\))?))?$"
)


def _number_type(text: str, first: str | None, second: str | None) -> OracleType:
    """NUMBER, NUMBER(p), NUMBER(p,s) and NUMBER(*,s)."""
    if first is None or first == "*":
        scale = int(second) if second is not None else None
        if first == "*" and scale is not None:
            return OracleType("NUMBER", TypeFamily.NUMBER, MAX_DECIMAL_PRECISION, scale)
        return OracleType("NUMBER", TypeFamily.NUMBER)
    precision = int(first)
    scale = int(second) if second is not None else 0
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise ConfigurationError(
            f"unsupported Oracle type {text!r}: precision must be 1-38 and scale 0-precision"
        )
    return OracleType("NUMBER", TypeFamily.NUMBER, precision, scale)


def parse_oracle_type(text: str) -> OracleType:
    """Parse an Oracle type such as ``NUMBER(8,2)``, ``VARCHAR2(30 CHAR)`` or
    ``TIMESTAMP(6) WITH TIME ZONE``. Raises ConfigurationError for anything else."""
    normalized = re.sub(r"\s+", " ", text.strip().upper())
    match = _TYPE.match(normalized)
    if not match:
        raise ConfigurationError(f"unsupported Oracle type {text!r}")
    base = match.group("base").strip()
    first = match.group("a")
    second = match.group("b")
    rest = (match.group("rest") or "").strip()

    if base in ("NUMBER", "NUMERIC", "DECIMAL") and not rest:
        return _number_type(text, first, second)
    if base in ("INTEGER", "INT", "SMALLINT") and first is None and not rest:
        return OracleType("NUMBER", TypeFamily.NUMBER, MAX_DECIMAL_PRECISION, 0)
    if base == "FLOAT" and not rest:
        return OracleType("NUMBER", TypeFamily.NUMBER)
    if base in ("VARCHAR2", "NVARCHAR2", "VARCHAR") and first is None:
        raise ConfigurationError(f"unsupported Oracle type {text!r}: {base} needs a length")
    if base in _CHARACTER and not rest:
        length = int(first) if first not in (None, "*") else _DEFAULT_LENGTH.get(base)
        return OracleType(base, TypeFamily.CHARACTER, length=length)
    if base == "RAW" and first is not None and not rest:
        return OracleType("RAW", TypeFamily.BINARY, length=int(first))
    if base in _SIMPLE and first is None and not rest:
        return OracleType(base, _SIMPLE[base])
    temporal = _temporal_type(base, rest)
    if temporal is None:
        raise ConfigurationError(f"unsupported Oracle type {text!r}")
    return temporal


def _temporal_type(base: str, rest: str) -> OracleType | None:
    """TIMESTAMP [WITH [LOCAL] TIME ZONE] and the two INTERVALs; None for anything else."""
    if base == "TIMESTAMP":
        if not rest:
            return OracleType("TIMESTAMP", TypeFamily.DATETIME)
        if rest == "WITH TIME ZONE":
            return OracleType("TIMESTAMP WITH TIME ZONE", TypeFamily.DATETIME_TZ)
        if rest == "WITH LOCAL TIME ZONE":
            return OracleType("TIMESTAMP WITH LOCAL TIME ZONE", TypeFamily.DATETIME_TZ)
    if base == "INTERVAL YEAR" and rest == "TO MONTH":
        return OracleType("INTERVAL YEAR TO MONTH", TypeFamily.INTERVAL_YM)
    if base == "INTERVAL DAY" and rest.startswith("TO SECOND"):
        return OracleType("INTERVAL DAY TO SECOND", TypeFamily.INTERVAL_DS)
    return None


# The data_type names an LCR column value may carry (lcr-contract.md).
LCR_DATA_TYPES = (
    "VARCHAR2",
    "NVARCHAR2",
    "CHAR",
    "NCHAR",
    "NUMBER",
    "BINARY_FLOAT",
    "BINARY_DOUBLE",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMP WITH LOCAL TIME ZONE",
    "INTERVAL YEAR TO MONTH",
    "INTERVAL DAY TO SECOND",
    "RAW",
    "LONG",
    "LONG RAW",
    "CLOB",
    "NCLOB",
    "BLOB",
    "UROWID",
)
