"""Chains that need no fold (rules 5-8 where no row-by-row state decides): their outcome in Spark.

A key group whose only change is one row LCR, whose values Spark converts exactly as ``rowops``
does, is decided by Spark Column expressions instead of the Python fold:

* a lone INSERT of a key the destination does not hold: the row is the LCR's new values, a
  declared default (else NULL) for the columns it lacks (rule 6);
* a lone UPDATE or DELETE of a key the destination holds, whose compared old values (rule 7:
  the non-key old values the LCR carries, less the columns COMPARE_OLD_VALUES switched off)
  equal the current row's: the row with the new values, or no row.

Anything else reaches the fold unchanged: a second LCR for the key, a key move, a conflict (a
missing or existing row, a compared value that differs: handlers may resolve those), a value
that does not convert (its error is raised by the fold), NOT NULL violations (01400, 01407),
unknown or repeated columns (00904, 00957), LOB pieces, types other than NUMBER, character and
DATE/TIMESTAMP columns, tables with virtual dependencies.

Two halves: the stage (``direct_layers``) reads each LCR's values as the destination types and
checks what the LCR alone decides, into one ``direct`` struct per LCR (NULL when the LCR cannot be
decided here); the fold (``split_fold``) finds the lone chains among the fold's input, with the
destination row of their key, and writes their outcome under the pass's plan (a transaction known
to fail, held back or after the cut changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.table_definitions import ColumnDefinition
from lakeapply.silver.cycle_state import at_or_before, is_one_of
from lakeapply.silver.keys import spark_text
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.silver.spark_values import (
    SparkReading,
    converted,
    known_names,
    spark_reading,
    value_of,
)
from lakeapply.silver.virtual_dependencies import dependencies_of

DIRECT = "direct"  # the stage's struct per LCR
ROW_VALUES = "row_values"  # a destination row's values as text, in column order (ROW records)
DIRECT_TYPE = T.StructType(
    [
        T.StructField("values", T.ArrayType(T.StringType())),  # INSERT: the row; UPDATE: new
        T.StructField("sent", T.ArrayType(T.BooleanType())),  # UPDATE: the columns it sets
        T.StructField("old", T.ArrayType(T.StringType())),  # the compared old values
        T.StructField("compared", T.ArrayType(T.BooleanType())),
    ]
)


@dataclass(frozen=True)
class RowColumn:
    """How Spark reads one destination column of an LCR (a ``RowReading`` has one per column):
    hashable, so that tables with the same columns and settings share one reading."""

    reading: SparkReading
    definition: ColumnDefinition
    key: bool
    compared_on_update: bool
    compared_on_delete: bool

    @property
    def name(self) -> str:
        return self.reading.name


RowReading = tuple[RowColumn, ...]


def row_reading(settings: ApplySettings, table: DestinationTable) -> RowReading | None:
    """The table's columns as Spark reads them, or None when its LCRs always reach the fold."""
    silver = next(t for t in settings.tables if t.silver_table == table.silver_table)
    if dependencies_of(settings, table) or (
        silver.definition.column_names != table.definition.column_names
    ):
        return None
    columns = []
    for column in table.definition.columns:
        reading = spark_reading(column, datetimes=True)
        if reading is None:
            return None
        uncompared = {
            operation for name, operation in table.uncompared_columns if name == column.name
        }
        columns.append(
            RowColumn(
                reading,
                column,
                column.name in table.effective_key,
                not uncompared & {"UPDATE", "*"},
                not uncompared & {"DELETE", "*"},
            )
        )
    return tuple(columns)


Layer = dict[str, Column]


def _all(conditions: list[Column]) -> Column:
    result = F.lit(True)
    for condition in conditions:
        result = result & condition
    return result


def direct_layers(reading: RowReading, index: int) -> tuple[list[Layer], Column]:
    """The layers of intermediate columns that read an LCR of a table read by ``reading``
    (number ``index`` of the stage's ``_direct`` column), and its ``direct`` struct over them
    (NULL when the fold must decide it)."""
    prefix = f"_d{index}_"

    def col(name: str) -> Column:
        return F.col(prefix + name)

    command = F.col("command_type")
    mine = F.col("_direct") == index
    names = tuple(c.name for c in reading)
    images: Layer = {
        prefix + "new": F.when(mine & command.isin("INSERT", "UPDATE"), F.col("new_values")),
        prefix + "old": F.when(mine & command.isin("UPDATE", "DELETE"), F.col("old_values")),
    }
    lookups: Layer = {
        prefix + "names_ok": (
            (~command.isin("INSERT", "UPDATE") | known_names(col("new"), names))
            & (~command.isin("UPDATE", "DELETE") | known_names(col("old"), names))
        )
    }
    for number, column in enumerate(reading):
        sent, raw = value_of(col("new"), column.name)
        had, old_raw = value_of(col("old"), column.name)
        lookups |= {
            f"{prefix}sent{number}": sent,
            f"{prefix}raw{number}": raw,
            f"{prefix}had{number}": had,
            f"{prefix}old_raw{number}": old_raw,
        }
    conversions: Layer = {}
    for number, column in enumerate(reading):
        clean, value = converted(column.reading, col(f"raw{number}"))
        old_clean, old_value = converted(column.reading, col(f"old_raw{number}"))
        default_clean, default_value = converted(
            column.reading, F.lit(column.definition.default).cast("string")
        )
        conversions |= {
            f"{prefix}clean{number}": clean,
            f"{prefix}value{number}": value,
            f"{prefix}old_clean{number}": old_clean,
            f"{prefix}old_value{number}": old_value,
            f"{prefix}default_clean{number}": default_clean,
            f"{prefix}default_value{number}": default_value,
        }
    return [images, lookups, conversions], _direct_struct(reading, col)


def _direct_struct(reading: RowReading, col: Callable[[str], Column]) -> Column:
    command = F.col("command_type")
    inserted, updated, compared_update, compared_delete = [], [], [], []
    insert_ok, update_ok, delete_ok = [col("names_ok")], [col("names_ok")], [col("names_ok")]
    for number, column in enumerate(reading):
        sent, had = col(f"sent{number}"), col(f"had{number}")
        value, old_value = col(f"value{number}"), col(f"old_value{number}")
        text = spark_text(column.definition, value)
        default_text = spark_text(column.definition, col(f"default_value{number}"))
        inserted.append(F.when(sent, text).otherwise(default_text))
        updated.append(F.when(sent, text))
        old_text = spark_text(column.definition, old_value)
        compared_update.append(F.when(had & F.lit(column.compared_on_update), old_text))
        compared_delete.append(F.when(had & F.lit(column.compared_on_delete), old_text))
        sent_clean = ~sent | col(f"clean{number}")
        insert_ok += [sent_clean, sent | col(f"default_clean{number}")]
        old_clean = ~had | col(f"old_clean{number}")
        update_ok += [sent_clean, old_clean]
        delete_ok.append(old_clean)
        if not column.definition.nullable:
            insert_ok.append(F.when(sent, value.isNotNull()).otherwise(default_text.isNotNull()))
            update_ok.append(~sent | value.isNotNull())  # 01407 is the fold's
    compare_flags = {
        "UPDATE": [
            F.lit(not c.key and c.compared_on_update) & col(f"had{n}")
            for n, c in enumerate(reading)
        ],
        "DELETE": [
            F.lit(not c.key and c.compared_on_delete) & col(f"had{n}")
            for n, c in enumerate(reading)
        ],
    }
    sent_flags = [col(f"sent{number}") for number in range(len(reading))]
    return (
        F.when(
            (command == "INSERT") & _all(insert_ok),
            F.struct(
                F.array(*inserted).alias("values"),
                F.lit(None).cast("array<boolean>").alias("sent"),
                F.lit(None).cast("array<string>").alias("old"),
                F.lit(None).cast("array<boolean>").alias("compared"),
            ),
        )
        .when(
            (command == "UPDATE") & _all(update_ok),
            F.struct(
                F.array(*updated).alias("values"),
                F.array(*sent_flags).alias("sent"),
                F.array(*compared_update).alias("old"),
                F.array(*compare_flags["UPDATE"]).alias("compared"),
            ),
        )
        .when(
            (command == "DELETE") & _all(delete_ok),
            F.struct(
                F.lit(None).cast("array<string>").alias("values"),
                F.lit(None).cast("array<boolean>").alias("sent"),
                F.array(*compared_delete).alias("old"),
                F.array(*compare_flags["DELETE"]).alias("compared"),
            ),
        )
    )


# -- the fold's side -------------------------------------------------------------------------

_GROUP = ["silver_table", "group_id"]
_HELPERS = ("_lcrs", "_rows", "_current", "_direct_lcr", "_direct_group")


def split_fold(
    fold_input: DataFrame,
    settings: ApplySettings,
    applies: Column,
    buckets: int,
    fold_rest: Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]],
    output_schema: str,
) -> DataFrame:
    """The fold's output: lone chains decided here, every other group folded by ``fold_rest``
    (a ``mapInPandas`` function given whole groups: the input is partitioned by group).
    ``applies``: whether an LCR's transaction is applied in this pass (not known to fail, not
    held back, not after the cut)."""
    group = Window.partitionBy(*_GROUP)
    is_lcr = F.col("kind") == "LCR"
    flagged = (
        fold_input.repartition(buckets, *_GROUP)
        .withColumns(
            {
                "_lcrs": F.count(F.when(is_lcr, 1)).over(group),
                "_rows": F.count(F.when(~is_lcr, 1)).over(group),
                "_current": F.first(ROW_VALUES, ignorenulls=True).over(group),
            }
        )
        .withColumn("_direct_lcr", _decided_here())
    )
    flagged = flagged.withColumn(
        "_direct_group", F.max(F.coalesce("_direct_lcr", F.lit(False))).over(group)
    )
    rest = flagged.where(~F.col("_direct_group")).drop(*_HELPERS, DIRECT, ROW_VALUES)
    folded = rest.mapInPandas(fold_rest, output_schema)
    decided = flagged.where(F.col("_direct_lcr") & applies)
    return folded.unionByName(_outcome(decided, settings, output_schema))


def _indices(array: Column) -> Column:
    return F.sequence(F.lit(0), F.size(array) - 1)


def _decided_here() -> Column:
    direct, current, command = F.col(DIRECT), F.col("_current"), F.col("command_type")
    no_conflict = F.forall(
        _indices(direct["compared"]),
        lambda i: (
            ~F.get(direct["compared"], i) | F.get(direct["old"], i).eqNullSafe(F.get(current, i))
        ),
    )
    return (
        (F.col("kind") == "LCR")
        & (F.col("_lcrs") == 1)
        & direct.isNotNull()
        & ~F.col("discarded")
        & F.col("static_error_number").isNull()
        & (F.col("key_text") == F.col("group_id"))
        & (
            ((command == "INSERT") & (F.col("_rows") == 0))
            | (command.isin("UPDATE", "DELETE") & (F.col("_rows") == 1) & no_conflict)
        )
    )


def _outcome(decided: DataFrame, settings: ApplySettings, output_schema: str) -> DataFrame:
    """The fold's output rows of the lone chains: the row after the LCR (UPSERT) or its DELETE;
    an UPDATE that changes no value writes nothing, as in the fold."""
    direct, current, command = F.col(DIRECT), F.col("_current"), F.col("command_type")
    updated = F.transform(
        _indices(current),
        lambda i: F.when(F.get(direct["sent"], i), F.get(direct["values"], i)).otherwise(
            F.get(current, i)
        ),
    )
    row = F.when(command == "INSERT", direct["values"]).when(command == "UPDATE", updated)
    columns: Column = F.lit(None).cast("array<string>")
    for table in {t.silver_table: t for t in settings.tables}.values():
        table_columns = F.array(*[F.lit(name) for name in table.definition.column_names])
        columns = F.when(F.col("silver_table") == table.silver_table, table_columns).otherwise(
            columns
        )
    types = {field.split()[0]: field.split()[1] for field in output_schema.split(", ")}
    decided_columns: dict[str, Column] = {
        "kind": F.lit("ROW"),
        "action": F.when(command == "DELETE", F.lit("DELETE")).otherwise(F.lit("UPSERT")),
        "row_json": F.when(command != "DELETE", F.to_json(F.map_from_arrays(columns, row))),
    }
    changed = (command != "UPDATE") | ~updated.eqNullSafe(current)

    def output(name: str) -> Column:
        if name in decided_columns:
            return decided_columns[name].alias(name)
        if name in ("silver_table", "key_text", "group_id"):
            return F.col(name)
        return F.lit(None).cast(types[name]).alias(name)

    return decided.where(changed).select(*[output(name) for name in types])


def applied_in(failed: frozenset[Any], held: frozenset[Any], cut: Any) -> Column:
    """Whether a transaction's changes are applied under a pass's plan (``fold.FoldPlan``)."""
    return ~is_one_of(failed) & ~is_one_of(held) & at_or_before(cut)
