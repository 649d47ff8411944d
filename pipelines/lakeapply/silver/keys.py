"""Destination values and keys on the Spark side (rule 5: keys; rule 6: values).

Values travel between Spark and the per-LCR fold as JSON text (``contract/oracle_types``'s text
forms): ``spark_text`` renders a destination column as that text, ``typed_value`` turns the text
back into the column's Spark type. ``key_bounds`` measures the range of each table's keys in a
cycle so the MERGE can prune the destination files it reads (cost grows with the changes, not
with the table).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote
from lakeapply.contract.oracle_types import TypeFamily
from lakeapply.contract.table_definitions import ColumnDefinition
from lakeapply.silver.settings import DestinationTable


def spark_text(column: ColumnDefinition, value: Column) -> Column:
    """A destination value as text that rowops.from_spark_text reads back exactly."""
    family = column.oracle_type.family
    if family in (TypeFamily.DATETIME, TypeFamily.DATETIME_TZ):
        return F.date_format(value, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if family in (TypeFamily.BINARY, TypeFamily.LOB_BINARY):
        return F.hex(value)
    return value.cast("string")


def typed_value(column: ColumnDefinition, text: Column) -> Column:
    """Canonical text (rowops.to_canonical_text) back to the destination type."""
    if column.oracle_type.family in (TypeFamily.BINARY, TypeFamily.LOB_BINARY):
        return F.unhex(text)
    return text.cast(column.oracle_type.spark_type())


def typed_key_columns(table: DestinationTable, key_json: Column) -> list[Column]:
    texts = F.from_json(key_json, T.ArrayType(T.StringType()))
    return [
        typed_value(table.definition.column(name), texts[index]).alias(name)
        for index, name in enumerate(table.effective_key)
    ]


def null_safe_key_match(table: DestinationTable, left: str, right: str) -> str:
    return " AND ".join(
        f"{left}.{quote(name)} <=> {right}.{quote(name)}" for name in table.effective_key
    )


RANGE_FAMILIES = (TypeFamily.NUMBER, TypeFamily.FLOAT, TypeFamily.CHARACTER, TypeFamily.DATETIME)


@dataclass(frozen=True)
class KeyBounds:
    """The range of the first key column over the keys a cycle addresses in one table.

    As a literal predicate on the destination it lets Delta skip every file whose column
    statistics fall outside the range, so reading the current rows (and the MERGE) costs what
    the changes touch, not the table size, when the table's files are laid out by key.
    """

    low: str | None  # None: no range (a type without a useful order, or only NULL keys)
    high: str | None
    has_null: bool

    def predicate(self, table: DestinationTable, alias: str) -> Column:
        column = table.definition.column(table.effective_key[0])
        value = F.col(f"{alias}.{quote(column.name)}")
        if self.low is None or self.high is None:
            return F.lit(True)
        spark_type = column.oracle_type.spark_type()
        in_range = (value >= F.lit(self.low).cast(spark_type)) & (
            value <= F.lit(self.high).cast(spark_type)
        )
        return in_range | value.isNull() if self.has_null else in_range


def key_bounds(keys: DataFrame, tables: list[DestinationTable]) -> dict[str, KeyBounds]:
    """silver table -> bounds of the keys addressed in it; tables without changes are absent.

    One aggregation over the cycle's keys with four measures per table (each typed as its
    table's first key column), not one aggregation per table: 50 tables measured apart cost
    51 Spark jobs and ~28 s of a 20k-LCR cycle on 2 cores."""
    if not tables:
        return {}
    measures = []
    for index, table in enumerate(tables):
        column = table.definition.column(table.effective_key[0])
        in_table = F.col("silver_table") == table.silver_table
        first = F.when(in_table, typed_key_columns(table, F.col("key_text"))[0])
        ordered = column.oracle_type.family in RANGE_FAMILIES
        measures.append(
            F.struct(
                (F.min(first) if ordered else F.lit(None)).cast("string").alias("low"),
                (F.max(first) if ordered else F.lit(None)).cast("string").alias("high"),
                F.count(F.when(in_table & first.isNull(), 1)).alias("nulls"),
                F.count(F.when(in_table, 1)).alias("keys"),
            ).alias(f"t{index}")
        )
    measured = keys.agg(*measures).first()
    assert measured is not None  # a global aggregation has one row, even over no keys
    return {
        table.silver_table: KeyBounds(bounds.low, bounds.high, bounds.nulls > 0)
        for table, bounds in zip(tables, measured, strict=True)
        if bounds.keys > 0
    }
