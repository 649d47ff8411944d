"""Virtual dependencies (SET_VALUE_DEPENDENCY, CREATE_OBJECT_DEPENDENCY): what a transaction
involves beyond the rows its keys address, for the DEPENDENT_TRANSACTIONS hold-back (rule 9,
``silver/dependent.py``).

* A **value dependency** names columns of one or more destination objects. A row LCR involves
  the value tuple of each of its images that carries every one of those columns, none NULL (the
  old image for UPDATE and DELETE, the old image overlaid with the new one for UPDATE, the new
  image for INSERT): two transactions involving the same tuple of the same dependency are
  dependent, like two touching the same row (a foreign key the destination does not declare).
  Values are compared converted to the column's type (``'10'`` and ``10.0`` are one NUMBER).
* An **object dependency** makes every transaction with a row LCR of the child object
  dependent on every transaction with a row LCR of the parent object (not child on child).

A message that touches no row (discarded by the instantiation SCN, or whose key cannot be read)
involves nothing here either. The value tuples are computed per LCR where the key is (the stage,
``dependency_values``); the touches are joined set-based (``virtual_touches``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.table_definitions import ColumnDefinition
from lakeapply.silver.rowops import ApplyRowError, convert_value, to_canonical_text
from lakeapply.silver.settings import ApplySettings, DestinationTable, ValueDependency
from lakeapply.silver.transactions import TRANSACTION_KEY

# Touch "tables" of the hold-back: never a silver table name (those have no space).
VALUE_DEPENDENCY = "value dependency "
OBJECT_DEPENDENCY = "object dependency "
CHILD, PARENT = "CHILD", "PARENT"
TOUCH_COLUMNS = (*TRANSACTION_KEY, "commit_scn", "silver_table", "group_id")


def dependencies_of(
    settings: ApplySettings, table: DestinationTable
) -> tuple[ValueDependency, ...]:
    definition = table.definition
    return tuple(
        d
        for d in settings.value_dependencies
        if (d.owner, d.object_name) == (definition.owner, definition.name)
    )


def _images(lcr: dict[str, Any]) -> list[dict[str, Any]]:
    old = {v["column_name"]: v["value"] for v in lcr.get("old_values") or []}
    new = {v["column_name"]: v["value"] for v in lcr.get("new_values") or []}
    command = lcr["command_type"]
    if command == "INSERT":
        return [new]
    if command == "DELETE":
        return [old]
    if command == "UPDATE":
        return [old, {**old, **new}]
    return []  # LOB pieces change a LOB column, never a dependency's value


def _comparable(column: ColumnDefinition, value: Any) -> str | None:
    """One text per value whatever the column's scale: 10, 10.0 and 10.00 are one NUMBER."""
    if isinstance(value, Decimal):
        return "0" if value == 0 else format(value.normalize(), "f")
    return to_canonical_text(column, value)


def dependency_values(
    settings: ApplySettings, table: DestinationTable, lcr: dict[str, Any]
) -> str | None:
    """The value tuples a row LCR involves, as JSON ``[[dependency, [canonical values]], ...]``
    (None: none). A value that does not convert involves nothing (its error comes later)."""
    found: set[str] = set()
    for dependency in dependencies_of(settings, table):
        columns = [table.definition.column(c) for c in dependency.columns]
        for image in _images(lcr):
            if not all(c.name in image for c in columns):
                continue
            try:
                values = [convert_value(c, image[c.name]) for c in columns]
            except ApplyRowError:
                continue
            if any(value is None for value in values):
                continue
            texts = [_comparable(c, v) for c, v in zip(columns, values, strict=True)]
            found.add(json.dumps([dependency.name, texts]))
    return json.dumps([json.loads(text) for text in sorted(found)]) if found else None


def virtual_touches(staged: DataFrame, settings: ApplySettings) -> DataFrame | None:
    """The dependency tuples and object sides each transaction of the cycle involves, in the
    form of ``held_transactions``'s touches (None: the apply declares no virtual dependency)."""
    if not settings.value_dependencies and not settings.object_dependencies:
        return None
    involved = staged.where(~F.col("discarded") & F.col("static_error_number").isNull())
    parts: list[DataFrame] = []
    if settings.value_dependencies:
        dependency = F.explode(
            F.from_json("value_dependencies", T.ArrayType(T.StringType()))
        ).alias("dependency")
        parts.append(
            involved.where(F.col("value_dependencies").isNotNull())
            .select(*TRANSACTION_KEY, "commit_scn", dependency)
            .select(
                *TRANSACTION_KEY,
                "commit_scn",
                F.concat(F.lit(VALUE_DEPENDENCY), F.get_json_object("dependency", "$[0]")).alias(
                    "silver_table"
                ),
                F.col("dependency").alias("group_id"),
            )
        )
    for number, dependency_of in enumerate(settings.object_dependencies):
        for side, owner, name in (
            (CHILD, dependency_of.owner, dependency_of.object_name),
            (PARENT, dependency_of.parent_owner, dependency_of.parent_name),
        ):
            tables = sorted(
                t.silver_table
                for t in settings.tables
                if (t.definition.owner, t.definition.name) == (owner, name)
            )
            parts.append(
                involved.where(F.col("silver_table").isin(tables)).select(
                    *TRANSACTION_KEY,
                    "commit_scn",
                    F.lit(f"{OBJECT_DEPENDENCY}{number}").alias("silver_table"),
                    F.lit(side).alias("group_id"),
                )
            )
    touches = parts[0]
    for part in parts[1:]:
        touches = touches.unionByName(part)
    return touches.distinct()
