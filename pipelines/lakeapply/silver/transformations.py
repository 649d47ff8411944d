"""Declarative rule-based transformations of row LCRs (spec rule 6, column discrepancies).

Oracle runs a rule-based transformation on an LCR after its rules pass it and before the apply
computes keys, converts values and detects conflicts (reference 002: "dequeue, rule-based
transformations, dependency computation, handlers"). lakeapply's declarative steps are Oracle's
DBMS_STREAMS_ADM ones, per destination table, run in their declared order:

* DELETE COLUMN: the column leaves the LCR (an extra source column no longer fails with
  ORA-00904);
* RENAME COLUMN: the source name becomes the destination's;
* ADD COLUMN: a value (a constant, or a Spark SQL expression over the LCR's fields) is added,
  by default to ``new_values`` of INSERTs and UPDATEs;
* KEEP COLUMNS: every other column leaves the LCR;
* RENAME SCHEMA / RENAME TABLE (attached to a positive rule only, since they decide the
  destination): the LCR's ``object_owner`` / ``object_name`` become the destination's, before
  the LCR is routed to a destination table and before that table's own steps.

Each step is a Spark Column expression over the ``old_values``/``new_values`` arrays (higher-order
``filter``/``transform``): nothing leaves the JVM, whatever the number of LCRs.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeapply.silver.settings import (
    ColumnTransformation,
    DestinationTable,
    TransformationKind,
    ValueImage,
)

IMAGES = {"old_values": ValueImage.OLD, "new_values": ValueImage.NEW}
# Which images exist for each command (an INSERT has no old values, a DELETE no new ones).
COMMANDS_WITH = {"old_values": ("UPDATE", "DELETE"), "new_values": ("INSERT", "UPDATE")}
OBJECT_RENAMES = (TransformationKind.RENAME_SCHEMA, TransformationKind.RENAME_TABLE)


def transform_row_lcrs(rows: DataFrame, tables: Iterable[DestinationTable]) -> DataFrame:
    """Run each table's transformations on its row LCRs (``rows`` holds the LCR columns
    ``source_database_name``, ``object_owner``, ``object_name``, ``command_type``,
    ``old_values``, ``new_values``); LCRs of other tables pass unchanged."""
    # Live tables last, so their steps win over a dropped table's of the same source name
    # (a table renamed to it); a dropped table's LCRs are still transformed (then ORA-00942).
    transformed = sorted(
        (table for table in tables if table.transformations), key=lambda t: not t.dropped
    )
    if not transformed:
        return rows
    columns: dict[str, Column] = {}
    for image in IMAGES:
        value: Column = F.col(image)
        for table in transformed:
            database, owner, name = table.source_object
            is_table = (
                (F.col("source_database_name") == database)
                & (F.col("object_owner") == owner)
                & (F.col("object_name") == name)
            )
            value = F.when(is_table, _image_after(table.transformations, image)).otherwise(value)
        columns[image] = value
    return rows.withColumns(columns)


def transformed_lcr_columns(steps: tuple[ColumnTransformation, ...]) -> dict[str, Column]:
    """The LCR fields after ``steps`` (a rule's transformations), as Column expressions."""
    columns = {image: _image_after(steps, image) for image in IMAGES}
    owner: Column = F.col("object_owner")
    name: Column = F.col("object_name")
    for step in steps:
        if step.kind is TransformationKind.RENAME_SCHEMA:
            source, target = step.columns
            owner = F.when(owner == source, F.lit(target)).otherwise(owner)
        elif step.kind is TransformationKind.RENAME_TABLE:
            from_owner, from_name, to_owner, to_name = step.columns
            renamed = (owner == from_owner) & (name == from_name)
            owner, name = (
                F.when(renamed, F.lit(to_owner)).otherwise(owner),
                F.when(renamed, F.lit(to_name)).otherwise(name),
            )
    columns["object_owner"] = owner
    columns["object_name"] = name
    return columns


def _image_after(steps: tuple[ColumnTransformation, ...], image: str) -> Column:
    value: Column = F.col(image)
    for step in steps:
        if step.kind in OBJECT_RENAMES:
            continue
        if step.value_type in (IMAGES[image], ValueImage.BOTH):
            value = _step(step, value, image)
    return value


def _step(step: ColumnTransformation, values: Column, image: str) -> Column:
    if step.kind is TransformationKind.DELETE_COLUMN:
        return F.filter(values, lambda v: v["column_name"] != step.columns[0])
    if step.kind is TransformationKind.KEEP_COLUMNS:
        return F.filter(values, lambda v: v["column_name"].isin(*step.columns))
    if step.kind is TransformationKind.RENAME_COLUMN:
        source, target = step.columns
        return F.transform(
            values,
            lambda v: F.when(
                v["column_name"] == source, v.withField("column_name", F.lit(target))
            ).otherwise(v),
        )
    return _add_column(step, values, image)


def _add_column(step: ColumnTransformation, values: Column, image: str) -> Column:
    """ADD COLUMN replaces a value the LCR already has for the column (as Oracle's does)."""
    column = step.columns[0]
    value = F.expr(step.expression) if step.expression is not None else F.lit(step.value)
    added = F.struct(
        F.lit(column).alias("column_name"),
        F.lit(step.data_type).alias("data_type"),
        value.cast("string").alias("value"),
    )
    kept = F.filter(values, lambda v: v["column_name"] != column)
    with_value = F.when(values.isNull(), F.array(added)).otherwise(F.concat(kept, F.array(added)))
    return F.when(F.col("command_type").isin(*COMMANDS_WITH[image]), with_value).otherwise(values)
