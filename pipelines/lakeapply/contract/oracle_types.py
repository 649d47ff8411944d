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
    # Datetime precisions, None for Oracle's default (6 fractional digits, 2 leading digits):
    # values are kept to the microsecond whatever they say, but a MODIFY that lowers one needs
    # an empty column, as in Oracle (ddl.py).
    fractional_precision: int | None = None  # TIMESTAMP*(n), INTERVAL DAY TO SECOND(n)
    leading_precision: int | None = None  # INTERVAL YEAR(n) / DAY(n)

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

    @property
    def effective_fractional_precision(self) -> int:
        return (
            DEFAULT_FRACTIONAL_PRECISION
            if self.fractional_precision is None
            else self.fractional_precision
        )

    @property
    def effective_leading_precision(self) -> int:
        return (
            DEFAULT_LEADING_PRECISION if self.leading_precision is None else self.leading_precision
        )

    def __str__(self) -> str:
        if self.family is TypeFamily.NUMBER and self.precision is not None:
            return f"NUMBER({self.precision},{self.scale or 0})"
        if self.length is not None:
            return f"{self.name}({self.length})"
        return _temporal_text(self)


DEFAULT_FRACTIONAL_PRECISION = 6
DEFAULT_LEADING_PRECISION = 2
_DATETIME_PRECISION_RANGE = range(10)  # Oracle: 0-9 for fractional and leading precisions


def _temporal_text(oracle_type: OracleType) -> str:
    """``TIMESTAMP(3) WITH TIME ZONE``, ``INTERVAL DAY(4) TO SECOND(2)``: the name with each
    precision that is not the default; any other type's name as it is."""
    fraction = oracle_type.fractional_precision
    leading = oracle_type.leading_precision
    if oracle_type.name.startswith("TIMESTAMP") and fraction is not None:
        return oracle_type.name.replace("TIMESTAMP", f"TIMESTAMP({fraction})", 1)
    if oracle_type.name.startswith("INTERVAL"):
        _, first, _, last = oracle_type.name.split(" ")
        first_text = f"{first}({leading})" if leading is not None else first
        last_text = f"{last}({fraction})" if fraction is not None else last
        return f"INTERVAL {first_text} TO {last_text}"
    return oracle_type.name


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
    temporal = _temporal_type(base, rest, first, second)
    if temporal is None:
        raise ConfigurationError(f"unsupported Oracle type {text!r}")
    return _with_checked_precisions(temporal, text)


def _temporal_type(
    base: str, rest: str, first: str | None, second: str | None
) -> OracleType | None:
    """TIMESTAMP[(n)] [WITH [LOCAL] TIME ZONE] and the two INTERVALs with their precisions;
    None for anything else."""
    if second is not None or first == "*":
        return None
    given = int(first) if first is not None else None
    if base == "TIMESTAMP":
        name = {"": "TIMESTAMP", "WITH TIME ZONE": "TIMESTAMP WITH TIME ZONE"}.get(rest)
        name = name or (
            "TIMESTAMP WITH LOCAL TIME ZONE" if rest == "WITH LOCAL TIME ZONE" else None
        )
        if name is None:
            return None
        family = TypeFamily.DATETIME if name == "TIMESTAMP" else TypeFamily.DATETIME_TZ
        return OracleType(name, family, fractional_precision=given)
    if base == "INTERVAL YEAR" and rest == "TO MONTH":
        return OracleType("INTERVAL YEAR TO MONTH", TypeFamily.INTERVAL_YM, leading_precision=given)
    second_precision = re.fullmatch(r"TO SECOND(?:\s*\(\s*(\d+)\s*\))?", rest)
    if base == "INTERVAL DAY" and second_precision is not None:
        fraction = second_precision.group(1)
        return OracleType(
            "INTERVAL DAY TO SECOND",
            TypeFamily.INTERVAL_DS,
            fractional_precision=int(fraction) if fraction is not None else None,
            leading_precision=given,
        )
    return None


def _with_checked_precisions(oracle_type: OracleType, text: str) -> OracleType:
    """Precisions checked against Oracle's range; one equal to the default is stored as None,
    so that ``TIMESTAMP(6)`` and ``TIMESTAMP`` are one type."""
    fraction, leading = oracle_type.fractional_precision, oracle_type.leading_precision
    for precision in (fraction, leading):
        if precision is not None and precision not in _DATETIME_PRECISION_RANGE:
            raise ConfigurationError(
                f"unsupported Oracle type {text!r}: a datetime precision must be 0-9"
            )
    return OracleType(
        oracle_type.name,
        oracle_type.family,
        fractional_precision=None if fraction == DEFAULT_FRACTIONAL_PRECISION else fraction,
        leading_precision=None if leading == DEFAULT_LEADING_PRECISION else leading,
    )


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
