"""The Oracle-to-Spark type mapping."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from lakeapply.contract.oracle_types import TypeFamily, parse_oracle_type
from lakeapply.errors import ConfigurationError

# Delta tables cannot hold Spark's interval types: intervals are stored as Oracle's display text.
DS = YM = T.StringType()


@pytest.mark.parametrize(
    ("oracle", "spark"),
    [
        ("NUMBER(8,2)", T.DecimalType(8, 2)),
        ("NUMBER(10)", T.DecimalType(10, 0)),
        ("number ( 5 , 1 )", T.DecimalType(5, 1)),
        ("NUMBER", T.DecimalType(38, 10)),
        ("NUMBER(*,2)", T.DecimalType(38, 2)),
        ("INTEGER", T.DecimalType(38, 0)),
        ("FLOAT(126)", T.DecimalType(38, 10)),
        ("BINARY_FLOAT", T.FloatType()),
        ("BINARY_DOUBLE", T.DoubleType()),
        ("VARCHAR2(30)", T.StringType()),
        ("VARCHAR2(30 CHAR)", T.StringType()),
        ("NCHAR(2)", T.StringType()),
        ("CLOB", T.StringType()),
        ("DATE", T.TimestampNTZType()),
        ("TIMESTAMP(6)", T.TimestampNTZType()),
        ("TIMESTAMP WITH TIME ZONE", T.TimestampType()),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", T.TimestampType()),
        ("INTERVAL YEAR(2) TO MONTH", YM),
        ("INTERVAL DAY(3) TO SECOND(6)", DS),
        ("RAW(16)", T.BinaryType()),
        ("LONG RAW", T.BinaryType()),
        ("BLOB", T.BinaryType()),
        ("UROWID", T.StringType()),
    ],
)
def test_oracle_type_maps_to_spark_type(oracle: str, spark: T.DataType) -> None:
    assert parse_oracle_type(oracle).spark_type() == spark


def test_character_length_is_kept_for_the_ora_12899_check() -> None:
    assert parse_oracle_type("VARCHAR2(30)").length == 30
    assert parse_oracle_type("CHAR").length == 1


def test_lobs_and_longs_are_flagged_so_they_never_join_an_all_column_key() -> None:
    assert parse_oracle_type("CLOB").is_lob_or_long
    assert parse_oracle_type("LONG").family is TypeFamily.LOB_CHARACTER
    assert not parse_oracle_type("VARCHAR2(4000)").is_lob_or_long


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("TIMESTAMP(6)", "TIMESTAMP"),  # Oracle's default precision: the same type
        ("TIMESTAMP(3)", "TIMESTAMP(3)"),
        ("timestamp(0) with local time zone", "TIMESTAMP(0) WITH LOCAL TIME ZONE"),
        ("INTERVAL YEAR(2) TO MONTH", "INTERVAL YEAR TO MONTH"),
        ("INTERVAL DAY(5) TO SECOND(2)", "INTERVAL DAY(5) TO SECOND(2)"),
    ],
)
def test_datetime_precisions_are_kept_and_the_defaults_are_the_plain_type(
    written: str, shown: str
) -> None:
    assert str(parse_oracle_type(written)) == shown
    assert parse_oracle_type(shown) == parse_oracle_type(written)


@pytest.mark.parametrize(
    "bad",
    ["NUMBER(40)", "NUMBER(5,6)", "VARCHAR2", "XMLTYPE", "RAW", "TIMESTAMP(10)", "TIMESTAMP(*)"],
)
def test_unsupported_types_are_rejected(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="unsupported Oracle type"):
        parse_oracle_type(bad)
