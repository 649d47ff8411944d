"""Step 1 of a cycle: the apply process's state and the cycle's plan (rule 11: exactly-once
restart; rule 9: ABORTED and START_APPLY).

* The apply tables and destination tables exist before anything is read
  (``ensure_apply_tables``, ``ensure_destination_tables``).
* The apply status (ENABLED / DISABLED / ABORTED: START_APPLY, STOP_APPLY, and the abort of
  ``disable_on_error = Y``, repaired by ``record_an_unrecorded_abort`` when a kill came between
  the cycle's commit and its status row).
* The plan (``plan_cycle``): the bronze batches to read, the spill's version and every
  destination table's version, appended to ``cycles`` (PLANNED) before anything else is
  written; a cycle that did not commit is re-run from its plan (``recorded_cycles``).
* The settings a cycle applies under (``versioned_settings``): table definitions as versioned by
  DDL (rule 10) up to the cycle.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.ingest import ensure_bronze_tables
from lakeapply.runtime.catalog import (
    Catalog,
    TableToCreate,
    ensure_database,
    ensure_delta_tables,
)
from lakeapply.silver import dictionary
from lakeapply.silver.cycle_state import (
    EXECUTE_KEY,
    SPILL_KEY,
    TXN_APP_ID,
    CyclePlan,
    append_rows,
    apply_rows,
    error_rows,
    latest_version,
)
from lakeapply.silver.ddl import (
    definition_from_json,
    is_dropped_json,
)
from lakeapply.silver.layout import clustering_columns
from lakeapply.silver.settings import ApplySettings, DestinationTable


def ensure_apply_tables(spark: SparkSession, catalog: Catalog) -> None:
    """The bronze tables and the dictionary tables every cycle reads or writes (the error
    tables are created by the first error: ``ensure_error_tables``; the settings tables when
    settings are published: ``ensure_dictionary_tables``)."""
    _ensure_apply_database(spark, catalog, dictionary.CYCLE_TABLES)


def ensure_error_tables(spark: SparkSession, catalog: Catalog) -> None:
    """The error queue's tables (DBA_APPLY_ERROR and its messages), before the first error."""
    ensure_delta_tables(
        spark,
        [
            TableToCreate(catalog.apply_table(name), schema, keep_not_null=True)
            for name, schema in dictionary.ERROR_TABLES.items()
        ],
    )


def ensure_dictionary_tables(spark: SparkSession, catalog: Catalog) -> set[str]:
    """The bronze tables and every dictionary table, the settings tables included; the names
    of the dictionary tables this call created (empty: nothing to read in them)."""
    return _ensure_apply_database(spark, catalog, dictionary.DICTIONARY_TABLES)


def _ensure_apply_database(
    spark: SparkSession, catalog: Catalog, tables: dict[str, T.StructType]
) -> set[str]:
    ensure_bronze_tables(spark, catalog)
    ensure_database(spark, catalog.database(catalog.apply))
    return ensure_delta_tables(
        spark,
        [
            TableToCreate(catalog.apply_table(name), schema, keep_not_null=True)
            for name, schema in tables.items()
        ],
    )


def ensure_destination_tables(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> None:
    """Create every destination table from its definition (instantiation without a copy).
    A table a DROP TABLE DDL dropped stays dropped: a recorded drop counts even when its cycle
    has not committed yet (that cycle, resumed, finishes the drop)."""
    create_destination_tables(spark, catalog, latest_settings(spark, catalog, settings))


def create_destination_tables(spark: SparkSession, catalog: Catalog, latest: ApplySettings) -> None:
    """``ensure_destination_tables`` for settings ``latest_settings`` already resolved."""
    ensure_database(spark, catalog.database(catalog.silver))
    ensure_delta_tables(
        spark,
        [
            TableToCreate(
                catalog.silver_table(table.silver_table),
                table.definition.spark_schema(),
                keep_not_null=True,
                cluster_by=clustering_columns(table),
            )
            for table in latest.tables
            if not table.dropped  # a dropped table is never created again from lakeapply.yml
        ],
    )


def apply_status(spark: SparkSession, catalog: Catalog, apply_name: str) -> str:
    rows = apply_rows(spark, catalog, dictionary.APPLY_PROCESSES, apply_name).collect()
    return str(rows[0]["status"]) if rows else "ENABLED"


def set_status(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    status: str,
    error: tuple[int, str] | None = None,
) -> None:
    row = spark.createDataFrame(
        [
            (
                settings.apply_name,
                status,
                datetime.now(UTC).replace(tzinfo=None),
                error[0] if error else None,
                error[1] if error else None,
                settings.commit_serialization.value,
                "Y" if settings.disable_on_error else "N",
                list(settings.source_databases),
            )
        ],
        dictionary.APPLY_PROCESSES_SCHEMA,
    )
    (
        DeltaTable.forName(spark, catalog.apply_table(dictionary.APPLY_PROCESSES))
        .alias("t")
        .merge(row.alias("s"), "t.apply_name = s.apply_name")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )


def record_an_unrecorded_abort(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> None:
    """A cycle that aborts the apply commits, then sets the ABORTED status. A kill between the
    two leaves the last committed cycle's progress saying ABORTED under a status that was set
    before that cycle (no START_APPLY since): record the abort now, with the cycle's first
    error, so the apply stops where the uninterrupted run would have."""
    name = settings.apply_name
    if never_written(spark, catalog.apply_table(dictionary.CYCLES)):
        return  # no cycle ever committed here
    last = (
        apply_rows(spark, catalog, dictionary.CYCLES, name)
        .where(F.col("phase") == "COMMITTED")
        .orderBy(F.desc("cycle_id"))
        .select("cycle_id", "logged_at")
        .first()
    )
    if last is None:
        return
    aborted_there = (
        apply_rows(spark, catalog, dictionary.PROGRESS, name)
        .where((F.col("cycle_id") == last.cycle_id) & (F.col("status") == "ABORTED"))
        .limit(1)
        .count()
    )
    if not aborted_there:
        return
    status = apply_rows(spark, catalog, dictionary.APPLY_PROCESSES, name).first()
    if status is not None and (
        status.status != "ENABLED" or status.status_change_time >= last.logged_at
    ):
        return  # recorded, or started again after that cycle
    error = (
        error_rows(spark, catalog, dictionary.ERROR_QUEUE, name)
        .where(F.col("cycle_id") == last.cycle_id)
        .orderBy("source_commit_scn", "source_database", "source_transaction_id")
        .first()
    )
    set_status(
        spark,
        catalog,
        settings,
        "ABORTED",
        (int(error.error_number), str(error.error_message)) if error is not None else None,
    )


def start_apply(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    """DBMS_APPLY_ADM.START_APPLY: enable (and resume after the failed transaction, if aborted)."""
    ensure_apply_tables(spark, catalog)
    set_status(spark, catalog, settings, "ENABLED")


def stop_apply(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    ensure_apply_tables(spark, catalog)
    set_status(spark, catalog, settings, "DISABLED")


def change_status(spark: SparkSession, catalog: Catalog, apply_name: str, status: str) -> bool:
    """START_APPLY / STOP_APPLY by name: the published apply's status row changes, its settings
    columns stay; False when no apply of that name is published. (An admin command needs no
    settings: loading them reads every dictionary table, ~20 s in a fresh process.)"""
    ensure_dictionary_tables(spark, catalog)
    if apply_rows(spark, catalog, dictionary.APPLY_PROCESSES, apply_name).limit(1).count() == 0:
        return False
    changed = [
        ("apply_name", apply_name),
        ("status", status),
        ("status_change_time", datetime.now(UTC).replace(tzinfo=None)),
        ("error_number", None),
        ("error_message", None),
    ]
    schema = dictionary.APPLY_PROCESSES_SCHEMA
    row = spark.createDataFrame(
        [tuple(value for _, value in changed)],
        T.StructType([schema[name] for name, _ in changed]),
    )
    (
        DeltaTable.forName(spark, catalog.apply_table(dictionary.APPLY_PROCESSES))
        .alias("t")
        .merge(row.alias("s"), "t.apply_name = s.apply_name")
        .whenMatchedUpdate(set={name: F.col(f"s.{name}") for name, _ in changed[1:]})
        .execute()
    )
    return True


def recorded_cycles(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> tuple[int, CyclePlan | None, int]:
    """The last cycle id (0: none yet), its plan when it did not commit (it must be finished
    before any other cycle), and the last bronze batch a committed cycle read."""
    if never_written(spark, catalog.apply_table(dictionary.CYCLES)):
        return 0, None, 0
    # One query: the last cycle's COMMITTED row sorts before its PLANNED row.
    last = (
        apply_rows(spark, catalog, dictionary.CYCLES, settings.apply_name)
        .orderBy(F.desc("cycle_id"), F.asc("phase"))
        .first()
    )
    if last is None:
        return 0, None, 0
    if last.phase != "COMMITTED":
        return last.cycle_id, _resumed_plan(last.cycle_id, last), 0
    return last.cycle_id, None, int(last.bronze_to_batch)


def destination_versions(
    spark: SparkSession, catalog: Catalog, latest: ApplySettings
) -> dict[str, int]:
    """Each existing destination table's Delta version, for ``latest_settings``."""
    tables = latest.tables
    silver_tables = sorted({table.silver_table for table in tables if not table.dropped})
    # Metadata reads only (driver side), one per table: concurrent, so 50 tables cost ~ one.
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(
            zip(
                silver_tables,
                pool.map(lambda t: latest_version(spark, catalog.silver_table(t)), silver_tables),
                strict=True,
            )
        )


def record_plan(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, plan: CyclePlan
) -> None:
    row = spark.createDataFrame(
        [
            (
                settings.apply_name,
                plan.cycle_id,
                "PLANNED",
                plan.bronze_from_batch,
                plan.bronze_to_batch,
                plan.recorded_versions(),
                None,
                datetime.now(UTC).replace(tzinfo=None),
            )
        ],
        dictionary.CYCLES_SCHEMA,
    )
    append_rows(
        row,
        catalog.apply_table(dictionary.CYCLES),
        dictionary.CYCLES_SCHEMA,
        f"{TXN_APP_ID}:{settings.apply_name}:plan",
        plan.cycle_id,
    )


def plan_cycle(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, latest: ApplySettings
) -> tuple[CyclePlan, bool] | None:
    """The unfinished cycle's recorded plan (resumed: True), else a new plan recorded now,
    else None when nothing is new. ``latest`` is ``latest_settings``: a new cycle applies
    under it (every table version recorded so far belongs to a committed cycle)."""
    last, unfinished, from_batch = recorded_cycles(spark, catalog, settings)
    if unfinished is not None:
        return unfinished, True
    last_readable = from_batch + settings.max_cycle_batches
    batch = F.col("batch_id")
    newest, bronze_rows = (
        spark.table(catalog.bronze_table("ingest_log"))
        .where(F.col("phase") == "COMMITTED")
        .agg(
            F.max(batch),
            F.sum(F.when((batch > from_batch) & (batch <= last_readable), F.col("bronze_rows"))),
        )
        .collect()[0]
    )
    newest = newest or 0
    to_batch = min(int(newest), last_readable)
    spill = apply_rows(spark, catalog, dictionary.SPILL, settings.apply_name)
    spill_version = latest_version(spark, catalog.apply_table(dictionary.SPILL))
    if to_batch == from_batch and (
        spill_version == 0 or spill.where(F.col("command_type") == "COMMIT").limit(1).count() == 0
    ):
        return None
    spill_rows = 0 if spill_version == 0 else _spill_rows(spark, catalog, spill_version)
    plan = CyclePlan(
        last + 1,
        from_batch,
        to_batch,
        spill_version,
        destination_versions(spark, catalog, latest),
        int(newest),
        int(bronze_rows or 0) + spill_rows,
        spill_rows=spill_rows,
    )
    record_plan(spark, catalog, settings, plan)
    return plan, False


def never_written(spark: SparkSession, qualified: str) -> bool:
    """Whether a dictionary table is still at its creating version, so holds no row: each one
    is created empty (``runtime.catalog.ensure_delta_tables``) and a version-0 check costs a
    log listing (~0.05 s) where the read it saves costs a query (0.15-0.4 s, more while
    another query runs: ~1 s in the demo)."""
    return latest_version(spark, qualified) == 0


def _spill_rows(spark: SparkSession, catalog: Catalog, version: int) -> int:
    """The spill's rows at ``version`` (after its creating version 0), every apply process's
    (Delta answers a count from the files' statistics, without reading them)."""
    return int(
        spark.read.format("delta")
        .option("versionAsOf", version)
        .table(catalog.apply_table(dictionary.SPILL))
        .count()
    )


def _resumed_plan(cycle_id: int, planned: Any) -> CyclePlan:
    recorded: dict[str, int] = dict(planned.table_versions_before)
    executed = sorted(
        (n, key[len(EXECUTE_KEY) :]) for key, n in recorded.items() if key.startswith(EXECUTE_KEY)
    )
    return CyclePlan(
        cycle_id,
        planned.bronze_from_batch,
        planned.bronze_to_batch,
        int(recorded[SPILL_KEY]),
        {k: v for k, v in recorded.items() if not k.startswith("__")},
        execute_errors=tuple(local_id for _, local_id in executed),
        error_queue_versions={
            name: recorded[f"__{name}__"]
            for name in (dictionary.ERROR_QUEUE, dictionary.ERROR_MESSAGES)
            if f"__{name}__" in recorded
        },
    )


def previous_progress(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, cycle_id: int
) -> dict[str, Any]:
    """source database -> the progress row of the last committed cycle before this one."""
    if cycle_id == 1:  # cycle ids count this apply process's cycles: none before the first
        return {}
    rows = (
        apply_rows(spark, catalog, dictionary.PROGRESS, settings.apply_name)
        .where(F.col("cycle_id") < cycle_id)
        .withColumn(
            "rank",
            F.row_number().over(Window.partitionBy("source_database").orderBy(F.desc("cycle_id"))),
        )
        .where(F.col("rank") == 1)
        .collect()
    )
    return {r.source_database: r for r in rows}


def versioned_settings(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, cycle_id: int
) -> ApplySettings:
    """``settings`` with each destination table's definition as the DDL transactions applied
    by the cycles before ``cycle_id`` left it (a resumed cycle sees what it saw first)."""
    latest = (
        apply_rows(spark, catalog, dictionary.TABLE_VERSIONS, settings.apply_name)
        .where(F.col("cycle_id") < cycle_id)
        .withColumn(
            "rank",
            F.row_number().over(
                Window.partitionBy("silver_table").orderBy(F.desc("cycle_id"), F.desc("commit_scn"))
            ),
        )
        .where(F.col("rank") == 1)
        .select("silver_table", "source_database", "definition_json")
        .collect()  # one row per table a DDL changed
    )
    if not latest:
        return settings
    versions = {
        row.silver_table: (
            row.source_database,
            definition_from_json(row.definition_json),
            is_dropped_json(row.definition_json),
        )
        for row in latest
    }
    tables = [
        replace(
            table,
            definition=versions[table.silver_table][1],
            dropped=versions[table.silver_table][2],
        )
        if table.silver_table in versions
        else table
        for table in settings.tables
    ]
    declared = {table.silver_table for table in settings.tables}
    # Tables a CREATE TABLE made (rule 10): no table-level settings, so the schema or global
    # instantiation SCN applies, and the definition's key (primary key, else the fallback).
    tables += [
        DestinationTable(database, definition, silver, dropped=dropped)
        for silver, (database, definition, dropped) in sorted(versions.items())
        if silver not in declared
    ]
    return replace(settings, tables=tuple(tables))


def latest_settings(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> ApplySettings:
    """``settings`` after every DDL recorded so far, committed cycle or not (before the
    dictionary exists: as declared)."""
    table_versions = catalog.apply_table(dictionary.TABLE_VERSIONS)
    # Most apply processes never apply a column or table DDL: no row to read, every cycle.
    if not spark.catalog.tableExists(table_versions) or never_written(spark, table_versions):
        return settings
    return versioned_settings(spark, catalog, settings, 2**62)
