"""The apply engine: one apply cycle as a handful of DataFrame operations, exactly once.

A cycle (docs/silver-design.md has the why):

1. **Plan**: the bronze ingest batches to read (bounded by ``max_cycle_batches``), the spill version
   and every destination table's Delta version, appended to ``cycles`` (PLANNED) before anything
   else is written. A crashed cycle is re-run from its plan: same inputs, destination tables read
   ``VERSION AS OF`` the planned versions, every write idempotent (``txnAppId``/``txnVersion``).
2. **Assemble** transactions from new bronze LCRs plus the spill (open and deferred transactions).
3. **Stage** each row LCR of the committed ones (rules, instantiation SCN, keys, static errors).
4. **Fold** key groups against the current destination rows, in passes: a pass assumes every
   transaction outside the known-failed set succeeds, so only the earliest newly failing one is
   certain; it joins the set and the fold runs again (errors are rare, so usually one pass).
   With ``disable_on_error = Y`` the cycle is cut before the first error and the apply aborts.
5. **Write**: one MERGE per destination table with changes, the error queue (only with errors),
   transaction outcomes, the spill (only when its content changes), progress, the COMMITTED
   cycle row, and last the ABORTED status if the cycle aborts the apply (a kill just before it
   is repaired at the next start).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.ingest import ensure_bronze_tables
from lakeapply.bronze.tables import LCR_TABLE, lcr_table_schema
from lakeapply.contract.identifiers import quote, sql_string_literal
from lakeapply.contract.lcr import lcr_bronze_fields
from lakeapply.contract.oracle_types import TypeFamily
from lakeapply.contract.table_definitions import ColumnDefinition, TableDefinition
from lakeapply.errors import ApplyAbortedError, ApplyError
from lakeapply.runtime.catalog import (
    Catalog,
    TableToCreate,
    ensure_database,
    ensure_delta_table,
    ensure_delta_tables,
)
from lakeapply.runtime.retry import retry_on_concurrent_modification
from lakeapply.silver import dictionary
from lakeapply.silver.components import STATIC_GROUP, key_components, transaction_components
from lakeapply.silver.ddl import (
    CREATE_TABLE_AS_SELECT,
    NAME_IN_USE,
    NO_INSTANTIATION_SCN,
    TABLE_NOT_FOUND,
    UNIMPLEMENTED,
    DdlError,
    DdlStatement,
    created_silver_table,
    definition_from_json,
    definition_json,
    is_dropped_json,
    new_definition,
    parse_ddl,
)
from lakeapply.silver.dependent import held_transactions
from lakeapply.silver.fold import FOLD_OUTPUT_SCHEMA, FoldPlan, Position, fold_function
from lakeapply.silver.late import (
    ROLLED_BACK_FLAG,
    LateInput,
    find_late_input,
    late_lcr_errors,
    processed_before,
    rolled_back_before,
    without_redelivered_copies,
)
from lakeapply.silver.rules import apply_rule_actions, passes_rules
from lakeapply.silver.settings import ApplySettings, CommitSerialization, DestinationTable
from lakeapply.silver.stage import STAGED_COLUMNS, stage_function
from lakeapply.silver.transactions import TRANSACTION_KEY, assemble_transactions
from lakeapply.silver.transformations import transform_row_lcrs

TXN_APP_ID = "lakeapply-apply"
FOLD_ROWS_PER_BUCKET = 20_000
MERGE_THREADS = 4  # concurrent MERGEs (one per destination table) in a cycle
ARRIVED = "__arrived_this_cycle"  # a new bronze LCR, not one read back from the spill
STAGE_INPUT_COLUMNS = (
    "silver_table",
    "source_database_name",
    "transaction_id",
    "commit_scn",
    "message_number",
    "command_type",
    "object_owner",
    "object_name",
    "lob_offset",  # LOB pieces (rule 12)
    "lob_operation_size",
)
CRASH_POINTS = ("plan", "first_merge", "merges", "error_queue", "spill", "progress")
ABORT_STATUS_CRASH_POINT = "abort_status"  # only reached by a cycle that aborts the apply
DROP_RECORDED_CRASH_POINT = "ddl_recorded"  # only reached by a DROP TABLE's cycle
Progress = Callable[[str], None]
SPILL_KEY = "__spill__"
EXECUTE_KEY = "__execute_error__:"


class SimulatedApplyCrash(RuntimeError):
    """Raised by tests (``crash_after``) to stop a cycle between two of its writes."""


@dataclass(frozen=True)
class CycleReport:
    apply_name: str
    cycle_id: int
    resumed: bool
    received: int
    applied: int
    ignored: int
    rolled_back: int
    errors: int
    passes: int
    tables_merged: int
    aborted: bool
    low_watermarks: dict[str, int | None] = field(default_factory=dict)
    # Every bronze batch known at plan time is read and no committed transaction was deferred:
    # another cycle now would find nothing to do.
    caught_up: bool = False


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def ensure_apply_tables(spark: SparkSession, catalog: Catalog) -> None:
    ensure_bronze_tables(spark, catalog)
    ensure_database(spark, catalog.database(catalog.apply))
    ensure_delta_tables(
        spark,
        [
            TableToCreate(catalog.apply_table(name), schema, keep_not_null=True)
            for name, schema in dictionary.DICTIONARY_TABLES.items()
        ],
    )


def ensure_destination_tables(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> None:
    """Create every destination table from its definition (instantiation without a copy).
    A table a DROP TABLE DDL dropped stays dropped: a recorded drop counts even when its cycle
    has not committed yet (that cycle, resumed, finishes the drop)."""
    ensure_database(spark, catalog.database(catalog.silver))
    ensure_delta_tables(
        spark,
        [
            TableToCreate(
                catalog.silver_table(table.silver_table),
                table.definition.spark_schema(),
                keep_not_null=True,
            )
            for table in _latest_settings(spark, catalog, settings).tables
            if not table.dropped  # a dropped table is never created again from lakeapply.yml
        ],
    )


def _latest_version(spark: SparkSession, qualified: str) -> int:
    return int(DeltaTable.forName(spark, qualified).history(1).collect()[0]["version"])


def materialize(frame: DataFrame) -> DataFrame:
    """Compute ``frame`` once and keep it (memory, then disk) for the rest of the cycle.

    A local checkpoint rather than ``persist``: a cached plan that reads a Delta table is dropped
    from the cache when that table is written, and a cycle writes the spill and the destination
    tables it read, so persisted stages (the Python stage and fold among them) ran again after
    each write. A checkpoint keeps no reference to the tables; its blocks are freed once the
    cycle's DataFrames are garbage collected.
    """
    return frame.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def _append(frame: DataFrame, table: str, schema: T.StructType, app: str, version: int) -> None:
    frame.select(*[F.col(quote(f.name)).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).option("txnAppId", app).option("txnVersion", version).mode("append").saveAsTable(table)


# --------------------------------------------------------------------------------------------
# Spark <-> Python text forms of destination values
# --------------------------------------------------------------------------------------------


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


def _typed_key_columns(table: DestinationTable, key_json: Column) -> list[Column]:
    texts = F.from_json(key_json, T.ArrayType(T.StringType()))
    return [
        typed_value(table.definition.column(name), texts[index]).alias(name)
        for index, name in enumerate(table.effective_key)
    ]


def _null_safe_key_match(table: DestinationTable, left: str, right: str) -> str:
    return " AND ".join(
        f"{left}.{quote(name)} <=> {right}.{quote(name)}" for name in table.effective_key
    )


# --------------------------------------------------------------------------------------------
# Plan and state
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CyclePlan:
    cycle_id: int
    bronze_from_batch: int  # exclusive
    bronze_to_batch: int  # inclusive
    spill_version: int
    table_versions: dict[str, int]
    bronze_newest_batch: int | None = None  # when planned (None: a resumed plan)
    # EXECUTE_ERROR: the error transactions (local transaction ids) this cycle re-executes
    # instead of reading bronze, and the versions of the error queue it reads them at.
    execute_errors: tuple[str, ...] = ()
    error_queue_versions: dict[str, int] = field(default_factory=dict)

    def recorded_versions(self) -> dict[str, int]:
        """``table_versions_before`` of the cycle row: the destination tables' versions, plus
        the spill's and, for an EXECUTE_ERROR cycle, the error queue's and the transactions it
        re-executes (the cycle row keeps its schema; a resumed plan reads them back)."""
        return {
            **self.table_versions,
            SPILL_KEY: self.spill_version,
            **{f"__{name}__": version for name, version in self.error_queue_versions.items()},
            **{f"{EXECUTE_KEY}{local_id}": n for n, local_id in enumerate(self.execute_errors)},
        }


def _apply_rows(spark: SparkSession, catalog: Catalog, name: str, apply_name: str) -> DataFrame:
    return spark.table(catalog.apply_table(name)).where(F.col("apply_name") == apply_name)


def apply_status(spark: SparkSession, catalog: Catalog, apply_name: str) -> str:
    rows = _apply_rows(spark, catalog, dictionary.APPLY_PROCESSES, apply_name).collect()
    return str(rows[0]["status"]) if rows else "ENABLED"


def _set_status(
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


def _record_an_unrecorded_abort(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> None:
    """A cycle that aborts the apply commits, then sets the ABORTED status. A kill between the
    two leaves the last committed cycle's progress saying ABORTED under a status that was set
    before that cycle (no START_APPLY since): record the abort now, with the cycle's first
    error, so the apply stops where the uninterrupted run would have."""
    name = settings.apply_name
    last = (
        _apply_rows(spark, catalog, dictionary.CYCLES, name)
        .where(F.col("phase") == "COMMITTED")
        .orderBy(F.desc("cycle_id"))
        .select("cycle_id", "logged_at")
        .first()
    )
    if last is None:
        return
    aborted_there = (
        _apply_rows(spark, catalog, dictionary.PROGRESS, name)
        .where((F.col("cycle_id") == last.cycle_id) & (F.col("status") == "ABORTED"))
        .limit(1)
        .count()
    )
    if not aborted_there:
        return
    status = _apply_rows(spark, catalog, dictionary.APPLY_PROCESSES, name).first()
    if status is not None and (
        status.status != "ENABLED" or status.status_change_time >= last.logged_at
    ):
        return  # recorded, or started again after that cycle
    error = (
        _apply_rows(spark, catalog, dictionary.ERROR_QUEUE, name)
        .where(F.col("cycle_id") == last.cycle_id)
        .orderBy("source_commit_scn", "source_database", "source_transaction_id")
        .first()
    )
    _set_status(
        spark,
        catalog,
        settings,
        "ABORTED",
        (int(error.error_number), str(error.error_message)) if error is not None else None,
    )


def start_apply(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    """DBMS_APPLY_ADM.START_APPLY: enable (and resume after the failed transaction, if aborted)."""
    ensure_apply_tables(spark, catalog)
    _set_status(spark, catalog, settings, "ENABLED")


def stop_apply(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    ensure_apply_tables(spark, catalog)
    _set_status(spark, catalog, settings, "DISABLED")


def _cycle_state(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> tuple[int, CyclePlan | None, int]:
    """The last cycle id (0: none yet), its plan when it did not commit (it must be finished
    before any other cycle), and the last bronze batch a committed cycle read."""
    # One query: the last cycle's COMMITTED row sorts before its PLANNED row.
    last = (
        _apply_rows(spark, catalog, dictionary.CYCLES, settings.apply_name)
        .orderBy(F.desc("cycle_id"), F.asc("phase"))
        .first()
    )
    if last is None:
        return 0, None, 0
    if last.phase != "COMMITTED":
        return last.cycle_id, _resumed_plan(last.cycle_id, last), 0
    return last.cycle_id, None, int(last.bronze_to_batch)


def _destination_versions(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> dict[str, int]:
    tables = _latest_settings(spark, catalog, settings).tables
    silver_tables = sorted({table.silver_table for table in tables if not table.dropped})
    # Metadata reads only (driver side), one per table: concurrent, so 50 tables cost ~ one.
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(
            zip(
                silver_tables,
                pool.map(lambda t: _latest_version(spark, catalog.silver_table(t)), silver_tables),
                strict=True,
            )
        )


def _record_plan(
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
    _append(
        row,
        catalog.apply_table(dictionary.CYCLES),
        dictionary.CYCLES_SCHEMA,
        f"{TXN_APP_ID}:{settings.apply_name}:plan",
        plan.cycle_id,
    )


def _plan(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> tuple[CyclePlan, bool] | None:
    last, unfinished, from_batch = _cycle_state(spark, catalog, settings)
    if unfinished is not None:
        return unfinished, True
    newest = (
        spark.table(catalog.bronze_table("ingest_log"))
        .where(F.col("phase") == "COMMITTED")
        .agg(F.max("batch_id"))
        .collect()[0][0]
        or 0
    )
    to_batch = min(int(newest), from_batch + settings.max_cycle_batches)
    spill = _apply_rows(spark, catalog, dictionary.SPILL, settings.apply_name)
    if (
        to_batch == from_batch
        and spill.where(F.col("command_type") == "COMMIT").limit(1).count() == 0
    ):
        return None
    plan = CyclePlan(
        last + 1,
        from_batch,
        to_batch,
        _latest_version(spark, catalog.apply_table(dictionary.SPILL)),
        _destination_versions(spark, catalog, settings),
        int(newest),
    )
    _record_plan(spark, catalog, settings, plan)
    return plan, False


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


def _previous_progress(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, cycle_id: int
) -> dict[str, Any]:
    """source database -> the progress row of the last committed cycle before this one."""
    rows = (
        _apply_rows(spark, catalog, dictionary.PROGRESS, settings.apply_name)
        .where(F.col("cycle_id") < cycle_id)
        .withColumn(
            "rank",
            F.row_number().over(Window.partitionBy("source_database").orderBy(F.desc("cycle_id"))),
        )
        .where(F.col("rank") == 1)
        .collect()
    )
    return {r.source_database: r for r in rows}


# --------------------------------------------------------------------------------------------
# The cycle
# --------------------------------------------------------------------------------------------


def _settings_frame(spark: SparkSession, settings: ApplySettings) -> DataFrame:
    return spark.createDataFrame(
        [
            (t.source_database, t.definition.owner, t.definition.name, t.silver_table)
            for t in settings.tables
        ],
        "source_database_name string, object_owner string, object_name string, silver_table string",
    )


def without_copies(lcrs: DataFrame) -> DataFrame:
    """Rule 11: an LCR delivered twice (a line landed again, a file landed under two names) is
    one LCR. An LCR is identified by its content, every contract field (the same change, at the
    same SCN and position, of the same transaction); lineage is not part of it. The first
    arrival is kept, so message numbers do not depend on the copies."""
    identity = [F.col(quote(f.name)) for f in lcr_bronze_fields().fields]
    first = Window.partitionBy(*identity).orderBy("ingest_batch_id", "source_file", "line_number")
    return (
        lcrs.withColumn("__lakeapply_copy", F.row_number().over(first))
        .where(F.col("__lakeapply_copy") == 1)
        .drop("__lakeapply_copy")
    )


def _messages(
    lcrs: DataFrame, committed: DataFrame, settings: ApplySettings, spark: SparkSession
) -> DataFrame:
    """Row LCRs of committed transactions that pass the rules (D2), numbered in apply order."""
    rows = without_copies(lcrs.where((F.col("lcr_kind") == "ROW") & passes_rules(settings)))
    # Oracle's order: rules (with subset row migration), rule transformations (which may rename
    # the object, so before routing), the table's transformations, then keys and types.
    rows = apply_rule_actions(rows, settings)
    rows = transform_row_lcrs(rows, settings.tables)
    rows = (
        rows.drop("commit_scn")
        .join(
            F.broadcast(_settings_frame(spark, settings)),
            ["source_database_name", "object_owner", "object_name"],
        )
        .join(
            committed.select("source_database_name", "transaction_id", "commit_scn"),
            ["source_database_name", "transaction_id"],
        )
    )
    order = Window.partitionBy("source_database_name", "transaction_id").orderBy(
        "scn", F.coalesce("position", F.lit("")), "ingest_batch_id", "source_file", "line_number"
    )
    return rows.withColumn("message_number", F.row_number().over(order))


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
    """silver table -> bounds of the keys addressed in it; tables without changes are absent."""
    parts = []
    for table in tables:
        column = table.definition.column(table.effective_key[0])
        first = _typed_key_columns(table, F.col("key_text"))[0]
        ordered = column.oracle_type.family in RANGE_FAMILIES
        parts.append(
            keys.where(F.col("silver_table") == table.silver_table)
            .select(first.alias("k"))
            .agg(
                F.lit(table.silver_table).alias("silver_table"),
                (F.min("k") if ordered else F.lit(None)).cast("string").alias("low"),
                (F.max("k") if ordered else F.lit(None)).cast("string").alias("high"),
                F.count(F.when(F.col("k").isNull(), 1)).alias("nulls"),
                F.count(F.lit(1)).alias("keys"),
            )
        )
    if not parts:
        return {}
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    return {
        row.silver_table: KeyBounds(row.low, row.high, row.nulls > 0)
        for row in union.where(F.col("keys") > 0).collect()
    }


def _fold_input(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    staged: DataFrame,
    plan: CyclePlan,
) -> tuple[DataFrame, dict[str, KeyBounds]]:
    """Staged LCRs plus the current destination rows of every key they address, with group ids,
    and the key bounds of each table with changes.

    A group is one key, or one component of keys linked by key-changing updates.
    """
    links = staged.where(F.col("moved_key_text").isNotNull()).select(
        "silver_table", "key_text", "moved_key_text"
    )
    if links.limit(1).count() == 0:
        lcr_part = staged.withColumn("group_id", F.coalesce("key_text", F.lit(STATIC_GROUP)))
    else:
        components = key_components(links)
        lcr_part = (
            staged.join(components, ["silver_table", "key_text"], "left")
            .withColumn("group_id", F.coalesce("component", "key_text", F.lit(STATIC_GROUP)))
            .drop("component")
        )
    keys = (
        lcr_part.select("silver_table", "group_id", F.col("key_text"))
        .unionByName(
            lcr_part.select("silver_table", "group_id", F.col("moved_key_text").alias("key_text"))
        )
        .where(F.col("key_text").isNotNull())
        .distinct()
    )
    keys = materialize(keys)
    tables = list({table.silver_table: table for table in settings.tables}.values())
    bounds = key_bounds(keys, tables)
    current_parts = []
    for table in tables:
        if table.silver_table not in bounds:
            continue  # no change addresses this table: it is not read at all
        name = catalog.silver_table(table.silver_table)
        version = plan.table_versions[table.silver_table]
        destination = (
            spark.read.format("delta")
            .option("versionAsOf", version)
            .table(name)
            .alias("d")
            .where(bounds[table.silver_table].predicate(table, "d"))
        )
        wanted = keys.where(F.col("silver_table") == table.silver_table).select(
            "silver_table", "group_id", "key_text", *_typed_key_columns(table, F.col("key_text"))
        )
        matched = wanted.alias("k").join(
            destination.alias("d"),
            F.expr(_null_safe_key_match(table, "k", "d")),
        )
        row_map = F.to_json(
            F.create_map(
                *[
                    part
                    for column in table.definition.columns
                    for part in (
                        F.lit(column.name),
                        spark_text(column, F.col("d." + quote(column.name))),
                    )
                ]
            )
        )
        current_parts.append(
            matched.select(
                F.col("k.silver_table").alias("silver_table"),
                F.col("k.group_id").alias("group_id"),
                F.col("k.key_text").alias("key_text"),
                row_map.alias("row_json"),
            )
        )
    current = (
        current_parts[0]
        if current_parts
        else spark.createDataFrame(
            [], "silver_table string, group_id string, key_text string, row_json string"
        )
    )
    for part in current_parts[1:]:
        current = current.unionByName(part)
    lcr_rows = lcr_part.select(
        F.lit("LCR").alias("kind"),
        "silver_table",
        "group_id",
        "key_text",
        F.lit(None).cast("string").alias("row_json"),
        *[column for column in STAGE_INPUT_COLUMNS if column != "silver_table"],
        "old_json",
        "new_json",
        "discarded",
        "static_error_number",
        "static_error_message",
    )
    fold_input = lcr_rows.unionByName(
        current.select(F.lit("ROW").alias("kind"), "*"), allowMissingColumns=True
    )
    return fold_input, bounds


def _run_fold(fold_input: DataFrame, plan: FoldPlan, buckets: int) -> DataFrame:
    bucket = F.pmod(F.hash("silver_table", "group_id"), F.lit(buckets))
    return (
        fold_input.withColumn("bucket", bucket)
        .groupBy("bucket")
        .applyInPandas(fold_function(plan), FOLD_OUTPUT_SCHEMA)
    )


def _earliest(folded: DataFrame) -> dict[tuple[str, str], Any]:
    """transaction -> its first failing message (lowest message number) among fold errors,
    chosen in Spark: the driver receives one row per failing transaction, not one per error."""
    first = Window.partitionBy(*TRANSACTION_KEY).orderBy("message_number", "error_number")
    rows = (
        folded.where(F.col("kind") == "ERROR")
        .withColumn("_rank", F.row_number().over(first))
        .where(F.col("_rank") == 1)
        .drop("_rank")
        .collect()  # one row per failing transaction
    )
    return {(row.source_database_name, row.transaction_id): row for row in rows}


def _position(error: Any) -> Position:
    return (int(error.commit_scn), str(error.source_database_name), str(error.transaction_id))


@dataclass(frozen=True)
class _Cycle:
    """What every step of one cycle needs."""

    spark: SparkSession
    catalog: Catalog
    settings: ApplySettings
    plan: CyclePlan
    progress: Progress
    crash_after: str | None

    @property
    def apply_name(self) -> str:
        return self.settings.apply_name

    @property
    def app(self) -> str:
        """The txnAppId prefix of this apply process's writes."""
        return f"{TXN_APP_ID}:{self.settings.apply_name}"

    def crash_point(self, name: str, what: str) -> None:
        if self.crash_after == name:
            raise SimulatedApplyCrash(what)


@dataclass(frozen=True)
class _CycleInput:
    lcrs: DataFrame  # new bronze LCRs and the spill
    transactions: DataFrame
    committed: DataFrame
    messages: DataFrame
    staged: DataFrame
    fold_input: DataFrame
    bounds: dict[str, KeyBounds]
    buckets: int
    late: LateInput | None = None  # late LCRs and late COMMITs (silver/late.py)
    redelivered: DataFrame | None = None  # committed transactions processed by an earlier cycle
    # source database -> progress row of the last committed cycle (read once per cycle)
    previous: dict[str, Any] = field(default_factory=dict)
    # Rule 9 (DDL barrier): the DDL transaction this cycle applies alone, and whether a DDL
    # barrier held committed transactions back for a later cycle.
    ddl: Position | None = None
    barrier: bool = False
    ignored_ddl: frozenset[tuple[str, str]] = frozenset()  # DDL-only, changing nothing


@dataclass(frozen=True)
class _FoldOutcome:
    final_rows: DataFrame
    failed: dict[tuple[str, str], Any]  # transaction -> its first failing message
    cut: Position | None  # the last transaction this cycle processes; None: all
    passes: int
    aborted_error: Any  # the error that aborts the apply (disable_on_error = Y), or None
    ddl_outcome: str | None = None  # a DDL cycle's transaction: APPLIED or IGNORED (no error)
    # DEPENDENT_TRANSACTIONS: transactions held back by the abort -> commit SCN (in the spill)
    held: dict[tuple[str, str], int] = field(default_factory=dict)


def apply_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> CycleReport | None:
    """Run one apply cycle (see the module docstring); None when there is nothing to apply."""
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    if settings.disable_on_error:
        _record_an_unrecorded_abort(spark, catalog, settings)
    status_now = apply_status(spark, catalog, settings.apply_name)
    if status_now in ("ABORTED", "DISABLED"):
        raise ApplyAbortedError(
            f"apply process {settings.apply_name} is "
            f"{status_now}: fix the cause, then start it "
            "(lakeapply admin start-apply)"
        )
    planned = _plan(spark, catalog, settings)
    if planned is None:
        return None
    plan, resumed = planned
    if plan.execute_errors:  # an EXECUTE_ERROR cycle that did not finish: finish it first
        _execute_cycle(spark, catalog, settings, plan, progress, crash_after)
        return _execution_report(settings.apply_name, plan)
    return _bronze_cycle(spark, catalog, settings, plan, resumed, progress, crash_after)


def _bronze_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    plan: CyclePlan,
    resumed: bool,
    progress: Progress,
    crash_after: str | None,
) -> CycleReport:
    """One cycle over new bronze batches and the spill, from its recorded plan."""
    settings = versioned_settings(spark, catalog, settings, plan.cycle_id)
    cycle = _Cycle(spark, catalog, settings, plan, progress, crash_after)
    cycle.crash_point("plan", "after plan")
    batches = (
        f"bronze batches {plan.bronze_from_batch + 1}..{plan.bronze_to_batch}"
        if plan.bronze_to_batch > plan.bronze_from_batch
        else "no new bronze batch"
    )
    progress(f"cycle {plan.cycle_id}: {batches} + spill")

    inputs = _read_and_stage(cycle)
    if inputs.ddl is not None:  # a DDL transaction, alone in its cycle (rule 9)
        inputs, fold, versions_after, merged = _apply_ddl_transaction(cycle, inputs)
    else:
        fold = _fold_passes(cycle, inputs)
        versions_after, merged = _merge_destinations(cycle, fold.final_rows, inputs.bounds)
    now = datetime.now(UTC).replace(tzinfo=None)
    processed, late_errors = _record_outcomes(cycle, inputs, fold, now)
    keep = _write_spill(cycle, inputs, processed)
    totals, watermarks = _record_progress(
        cycle, inputs, processed, keep, fold, versions_after, now, late_errors
    )
    _commit_cycle(cycle, versions_after, now)
    # After the commit: a resumed cycle must never re-derive an abort that START_APPLY has
    # already cleared. A kill between the two is repaired by _record_an_unrecorded_abort.
    if fold.aborted_error is not None:
        cycle.crash_point(ABORT_STATUS_CRASH_POINT, "after the cycle commit, before ABORTED")
        _set_status(
            spark,
            catalog,
            settings,
            "ABORTED",
            (int(fold.aborted_error.error_number), str(fold.aborted_error.error_message)),
        )
    return CycleReport(
        cycle.apply_name,
        plan.cycle_id,
        resumed,
        totals["received"],
        totals["applied"],
        totals["ignored"],
        totals["rolled_back"],
        totals["errors"],
        fold.passes,
        merged,
        fold.aborted_error is not None,
        watermarks,
        caught_up=fold.cut is None
        and not fold.held
        and not inputs.barrier
        and plan.bronze_to_batch == plan.bronze_newest_batch,
    )


def _read_and_stage(cycle: _Cycle) -> _CycleInput:
    """Steps 2-3: the new bronze LCRs and the spill, assembled into transactions; the row LCRs
    of the committed ones staged and joined with the destination rows they address."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    new_lcrs = (
        spark.table(catalog.bronze_table(LCR_TABLE))
        .where(
            (F.col("ingest_batch_id") > plan.bronze_from_batch)
            & (F.col("ingest_batch_id") <= plan.bronze_to_batch)
            & F.col("source_database_name").isin(*settings.source_databases)
        )
        .withColumn(ARRIVED, F.lit(True))
    )
    spill = (
        spark.read.format("delta")
        .option("versionAsOf", plan.spill_version)
        .table(catalog.apply_table(dictionary.SPILL))
        .where(F.col("apply_name") == cycle.apply_name)
        .drop("apply_name")
        .withColumn(ARRIVED, F.lit(False))
    )
    # Not cached: each use reads only the columns it needs (the raw line and the images are wide),
    # and the bronze scan prunes files by ingest batch.
    lcrs = new_lcrs.unionByName(spill)
    transactions = materialize(assemble_transactions(lcrs))
    # Rule 11: a transaction processed by an earlier cycle (applied, discarded or queued) and
    # delivered again changes nothing; only its COMMIT copies are counted (TOTAL_IGNORED).
    seen = _processed_before(cycle)
    committed_now = transactions.where(F.col("state") == "COMMITTED")
    redelivered = materialize(committed_now.join(seen, list(SEEN_KEY), "left_semi"))
    committed = committed_now.join(seen, list(SEEN_KEY), "left_anti")
    committed, ddl, barrier, ignored_ddl = _ddl_barrier(cycle, lcrs, committed)

    messages = _messages(lcrs, committed, settings, spark)
    staged, fold_input, bounds, buckets = _stage(cycle, messages)
    previous = _previous_progress(spark, catalog, settings, plan.cycle_id)
    late = _late_input(cycle, lcrs, transactions, staged, previous)
    return _CycleInput(
        lcrs,
        transactions,
        committed,
        messages,
        staged,
        fold_input,
        bounds,
        buckets,
        late=late,
        redelivered=redelivered,
        previous=previous,
        ddl=ddl,
        barrier=barrier,
        ignored_ddl=ignored_ddl,
    )


def _stage(
    cycle: _Cycle, messages: DataFrame
) -> tuple[DataFrame, DataFrame, dict[str, KeyBounds], int]:
    """Stage the messages and join them with the destination rows they address: the staged
    LCRs, the fold input, the key bounds of each table with changes and the fold's buckets."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    # Only what the stage and the fold read crosses into Python (not the raw line, not lineage).
    to_stage = messages.select(
        *STAGE_INPUT_COLUMNS,
        # A NULL column value is data ("value": null), not an absent field.
        F.to_json("old_values", {"ignoreNullFields": "false"}).alias("old_json"),
        F.to_json("new_values", {"ignoreNullFields": "false"}).alias("new_json"),
    )
    staged_schema = T.StructType(
        to_stage.schema.fields + T._parse_datatype_string(STAGED_COLUMNS).fields  # type: ignore[attr-defined]
    )
    staged = materialize(to_stage.mapInPandas(stage_function(settings), staged_schema))
    unmaterialized, bounds = _fold_input(spark, catalog, settings, staged, plan)
    fold_input = materialize(unmaterialized)
    # Each bucket is one pandas frame in a Python worker: enough buckets to bound its size.
    buckets = max(
        int(spark.conf.get("spark.sql.shuffle.partitions") or 4),
        -(-fold_input.count() // FOLD_ROWS_PER_BUCKET),
    )
    cycle.progress("staged")
    return staged, fold_input, bounds, buckets


SEEN_KEY = ("source_database_name", "transaction_id", "commit_scn")


def _processed_before(cycle: _Cycle) -> DataFrame:
    """(source database, transaction id, commit SCN) of every transaction an earlier cycle
    processed (a resumed cycle must not see its own outcomes)."""
    return (
        _apply_rows(cycle.spark, cycle.catalog, dictionary.TRANSACTIONS, cycle.apply_name)
        .where(F.col("cycle_id") < cycle.plan.cycle_id)
        .select(F.col("source_database").alias("source_database_name"), *SEEN_KEY[1:])
        .distinct()
    )


def _late_input(
    cycle: _Cycle,
    lcrs: DataFrame,
    transactions: DataFrame,
    staged: DataFrame,
    previous: dict[str, Any],
) -> LateInput:
    """Input that arrived after the apply passed the point it belonged to (silver/late.py):
    LCRs of a transaction processed in an earlier cycle, and COMMITs below the low watermark
    of the cycle before. Both derive from state as of the plan, so a resumed cycle finds the
    same."""
    spark, plan = cycle.spark, cycle.plan
    processed = processed_before(
        spark.table(cycle.catalog.apply_table(dictionary.TRANSACTIONS)),
        cycle.apply_name,
        plan.cycle_id,
    ).unionByName(
        rolled_back_before(
            spark.table(cycle.catalog.apply_table(dictionary.ROLLED_BACK)),
            cycle.apply_name,
            plan.cycle_id,
        )
    )
    late = find_late_input(
        spark,
        lcrs,
        transactions,
        processed,
        staged,
        {source: row.low_watermark for source, row in previous.items()},
        ARRIVED,
    )
    settled = materialize(late.late_lcr_transactions)
    if settled.isEmpty():
        return LateInput(settled, late.late_commits)
    # LCRs of a transaction whose ROLLBACK was processed: settled (out of the spill), never
    # applied nor queued, like the rest of the transaction.
    after_rollback = settled.where(F.col(ROLLED_BACK_FLAG))
    missed = settled.where(~F.col(ROLLED_BACK_FLAG)).drop(ROLLED_BACK_FLAG)
    if not after_rollback.isEmpty():
        discarded = lcrs.where(F.col(ARRIVED)).join(
            after_rollback.select(*TRANSACTION_KEY), list(TRANSACTION_KEY), "left_semi"
        )
        cycle.progress(
            f"{discarded.count()} LCR(s) landed after their transaction's ROLLBACK was "
            "processed: settled as rolled back (kept in bronze, not applied)"
        )
        if missed.isEmpty():
            return LateInput(missed, late.late_commits, settled_transactions=settled)
    settled, all_settled = missed, settled
    # Rare (a transaction's LCRs landing after its COMMIT was processed): only then is the
    # earlier bronze of those transactions read, to tell copies from changes the apply missed.
    landed_before = spark.table(cycle.catalog.bronze_table(LCR_TABLE)).where(
        F.col("ingest_batch_id") <= plan.bronze_from_batch
    )
    late_lcrs = materialize(
        without_redelivered_copies(
            lcrs.join(settled.select(*TRANSACTION_KEY), list(TRANSACTION_KEY), "left_semi"),
            landed_before,
            ARRIVED,
        )
    )
    return LateInput(
        settled.join(
            late_lcrs.select(*TRANSACTION_KEY).distinct(), list(TRANSACTION_KEY), "left_semi"
        ),
        late.late_commits,
        settled_transactions=all_settled,
        late_lcrs=late_lcrs,
    )


def _fold_passes(cycle: _Cycle, inputs: _CycleInput) -> _FoldOutcome:
    """Step 4 (design-notes 1): only the earliest newly failing transaction is certain, and so
    is everything before it. A pass that finds no new failure is already the final fold: its
    rows are kept, not re-run."""
    settings = cycle.settings
    fold_input, buckets = inputs.fold_input, inputs.buckets
    # A late COMMIT (silver/late.py) fails from the start, with its own error whatever its
    # LCRs would do; with disable_on_error = Y it stops the apply like any error.
    late = dict(inputs.late.late_commits) if inputs.late is not None else {}
    failed: dict[tuple[str, str], Any] = dict(late)
    cut: Position | None = None
    if settings.disable_on_error and late:
        cut = min(_position(error) for error in late.values())
    passes = 0
    components: DataFrame | _Unlabelled | None = None
    while True:
        passes += 1
        cycle.progress(f"fold pass {passes}")
        folded = _run_fold(fold_input, FoldPlan(settings, frozenset(failed), cut), buckets)
        folded = materialize(folded)
        errors = _earliest(folded)
        failed = {  # exact state
            key: known if key in late else errors.get(key, known) for key, known in failed.items()
        }
        new_failures = sorted(
            (error for key, error in errors.items() if key not in failed), key=_position
        )
        if not new_failures:
            break
        first = new_failures[0]
        if settings.disable_on_error or passes >= settings.max_error_passes:
            failed[(first.source_database_name, first.transaction_id)] = first
            cut = _position(first)  # what follows it waits (Y: until start_apply)
            # Failures proven in other components after the cut wait too: the next cycle
            # finds them again.
            failed = {
                key: error
                for key, error in failed.items()
                if key in late or _position(error) <= cut
            }
            folded = materialize(
                _run_fold(fold_input, FoldPlan(settings, frozenset(failed), cut), buckets)
            )
            break
        if components is None and len(new_failures) > 1:
            components = _transaction_components(cycle, fold_input)
        failed.update(_certain_failures(cycle.spark, new_failures, components))
    aborted_error = None
    if settings.disable_on_error and failed:
        aborted_error = failed[min(failed, key=lambda key: _position(failed[key]))]
    held: dict[tuple[str, str], int] = {}
    if (
        aborted_error is not None
        and settings.commit_serialization is CommitSerialization.DEPENDENT_TRANSACTIONS
    ):
        folded, held, passes = _dependent_fold(cycle, inputs, failed, passes)
        cut = None
    cycle.progress(
        f"cycle {cycle.plan.cycle_id}: {passes} fold pass(es), {len(failed)} error transaction(s)"
        f", {len(held)} held back"
    )
    return _FoldOutcome(
        folded.where(F.col("kind") == "ROW"), failed, cut, passes, aborted_error, held=held
    )


def _dependent_fold(
    cycle: _Cycle, inputs: _CycleInput, failed: dict[tuple[str, str], Any], passes: int
) -> tuple[DataFrame, dict[tuple[str, str], int], int]:
    """DEPENDENT_TRANSACTIONS after an abort: instead of cutting the cycle after the aborting
    transaction, hold back only what depends on it (silver/dependent.py) and apply the rest.
    A later independent transaction that fails is held back too (not queued): the apply is
    already aborting, and it retries after START_APPLY, like it would under FULL."""
    fold_input, buckets = inputs.fold_input, inputs.buckets
    touches = materialize(
        fold_input.where(F.col("kind") == "LCR")
        .select(*TRANSACTION_KEY, "commit_scn", "silver_table", "group_id")
        .distinct()
    )
    stopping = set(failed)
    while True:
        passes += 1
        cycle.progress(f"fold pass {passes} (dependent transactions)")
        blockers = cycle.spark.createDataFrame(
            sorted(stopping), "source_database_name string, transaction_id string"
        )
        held_rows = (
            held_transactions(touches, blockers)
            .join(touches.select(*TRANSACTION_KEY, "commit_scn").distinct(), list(TRANSACTION_KEY))
            .collect()
        )
        held = {
            (r.source_database_name, r.transaction_id): int(r.commit_scn)
            for r in held_rows
            if (r.source_database_name, r.transaction_id) not in failed
        }
        plan = FoldPlan(cycle.settings, frozenset(failed), None, frozenset(held))
        folded = materialize(_run_fold(fold_input, plan, buckets))
        errors = _earliest(folded)
        new_failures = set(errors) - set(failed) - set(held)
        if not new_failures:
            return folded, held, passes
        stopping |= new_failures


class _Unlabelled:
    """The transaction graph was too long to label: one failure per pass."""


# Labelling joins are cheap next to a fold pass, but a pathological chain of transactions
# sharing keys one by one would need as many joins as transactions.
MAX_COMPONENT_ITERATIONS = 16


def _transaction_components(cycle: _Cycle, fold_input: DataFrame) -> DataFrame | _Unlabelled:
    labelled = transaction_components(
        fold_input.where(F.col("kind") == "LCR"), MAX_COMPONENT_ITERATIONS
    )
    if labelled is None:
        cycle.progress("transactions too entangled to label: one new failure per fold pass")
        return _Unlabelled()
    return materialize(labelled)


def _certain_failures(
    spark: SparkSession, new_failures: list[Any], components: DataFrame | _Unlabelled | None
) -> dict[tuple[str, str], Any]:
    """The new failures a pass has proven (``new_failures`` in apply order): the earliest of
    each component of transactions that share fold groups (silver/components.py), or only the
    earliest of all when there is one failure or the components are unknown."""
    first = new_failures[0]
    if not isinstance(components, DataFrame):
        return {(first.source_database_name, first.transaction_id): first}
    wanted = spark.createDataFrame(
        [(e.source_database_name, e.transaction_id) for e in new_failures],
        "source_database_name string, transaction_id string",
    )
    component_of = {
        (r.source_database_name, r.transaction_id): r.component
        for r in wanted.join(components, ["source_database_name", "transaction_id"]).collect()
    }
    certain: dict[tuple[str, str], Any] = {}
    seen: set[str] = set()
    for error in new_failures:  # the failures of a pass, not LCRs: few
        key = (error.source_database_name, error.transaction_id)
        # A transaction with only keyless LCRs shares no rows: its failure is certain alone.
        component = component_of.get(key, "\u0000" + repr(key))
        if component not in seen:
            seen.add(component)
            certain[key] = error
    return certain


def _merge_destinations(
    cycle: _Cycle, final_rows: DataFrame, bounds: dict[str, KeyBounds]
) -> tuple[dict[str, int], int]:
    """Step 5a: one MERGE per destination table with changes, idempotent per cycle; the Delta
    version of every destination table after the cycle, and how many were merged."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    changed_tables = {
        r.silver_table for r in final_rows.select("silver_table").distinct().collect()
    }
    versions_after = dict(plan.table_versions)
    to_merge = [
        table
        for table in {t.silver_table: t for t in settings.tables}.values()
        if table.silver_table in changed_tables
    ]

    def merge(table: DestinationTable) -> tuple[str, int]:
        # Its own session: the idempotence confs (txnAppId/txnVersion) are per session, so
        # tables merge concurrently, each MERGE still idempotent per cycle.
        session = spark.newSession()
        name = catalog.silver_table(table.silver_table)
        _merge_table(
            session,
            name,
            table,
            final_rows,
            bounds[table.silver_table],
            f"{cycle.app}:{table.silver_table}",
            plan.cycle_id,
        )
        return table.silver_table, _latest_version(session, name)

    if cycle.crash_after == "first_merge" and to_merge:
        merge(to_merge[0])
        raise SimulatedApplyCrash("after the first MERGE")
    with ThreadPoolExecutor(max_workers=MERGE_THREADS) as pool:
        versions_after.update(pool.map(merge, to_merge))
    cycle.crash_point("merges", "after the MERGEs")
    cycle.progress("merged")
    return versions_after, len(to_merge)


def _held_frame(cycle: _Cycle, fold: _FoldOutcome) -> DataFrame:
    return cycle.spark.createDataFrame(
        [(db, txn, scn) for (db, txn), scn in sorted(fold.held.items())],
        "source_database_name string, transaction_id string, held_scn long",
    )


def _before(cut: Position | None) -> Column:
    """Transactions at or before ``cut`` in commit order (all when there is no cut)."""
    if cut is None:
        return F.lit(True)
    scn, database, txn = cut
    return (F.col("commit_scn") < scn) | (
        (F.col("commit_scn") == scn)
        & (
            (F.col("source_database_name") < database)
            | ((F.col("source_database_name") == database) & (F.col("transaction_id") <= txn))
        )
    )


def _record_outcomes(
    cycle: _Cycle, inputs: _CycleInput, fold: _FoldOutcome, now: datetime
) -> tuple[DataFrame, dict[str, int]]:
    """Step 5b: the outcome of every processed transaction (APPLIED, DISCARDED, ERROR) and the
    error queue; returns the processed transactions, and per source database the error
    transactions made of late LCRs (queued, but no transaction of this cycle)."""
    spark, settings, plan = cycle.spark, cycle.settings, cycle.plan
    committed_rows = inputs.committed.select(
        "source_database_name", "transaction_id", "commit_scn", "first_scn", "commit_source_time"
    )
    failed_frame = spark.createDataFrame(
        [
            (k[0], k[1], int(e.message_number), int(e.error_number), str(e.error_message))
            for k, e in fold.failed.items()
        ],
        "source_database_name string, transaction_id string, failing_message long, "
        "error_number long, error_message string",
    )
    message_counts = inputs.staged.groupBy("source_database_name", "transaction_id").agg(
        F.count(F.lit(1)).alias("message_count"),
        F.count(F.when(F.col("discarded"), 1)).alias("discarded"),
    )
    ddl_counts = (
        inputs.lcrs.where(F.col("lcr_kind") == "DDL")
        .where(passes_rules(settings))
        .groupBy("source_database_name", "transaction_id")
        .agg(F.count(F.lit(1)).alias("ddl_count"))
    )
    processed = (
        committed_rows.join(failed_frame, ["source_database_name", "transaction_id"], "left")
        .join(message_counts, ["source_database_name", "transaction_id"], "left")
        .join(ddl_counts, ["source_database_name", "transaction_id"], "left")
        .where(_before(fold.cut))
        .join(_held_frame(cycle, fold), list(TRANSACTION_KEY), "left_anti")
        .select(
            "*",
            F.when(F.col("error_number").isNotNull(), F.lit("ERROR"))
            .when(F.lit(fold.ddl_outcome is not None), F.lit(fold.ddl_outcome))
            .when(
                _is_one_of(inputs.ignored_ddl) & (F.coalesce("message_count", F.lit(0)) == 0),
                F.lit("IGNORED"),
            )
            .when(
                (F.coalesce("discarded", F.lit(0)) > 0)
                & (F.coalesce("message_count", F.lit(0)) == F.coalesce("discarded", F.lit(0)))
                & (F.coalesce("ddl_count", F.lit(0)) == 0),
                # Rule 11: discarded (instantiation SCN) is processed, not ignored: only a
                # transaction delivered again counts as TOTAL_IGNORED.
                F.lit("DISCARDED"),
            )
            .otherwise(F.lit("APPLIED"))
            .alias("outcome"),
        )
    )
    processed = materialize(processed)
    transactions_rows = processed.select(
        F.lit(cycle.apply_name).alias("apply_name"),
        F.col("source_database_name").alias("source_database"),
        "transaction_id",
        "commit_scn",
        "first_scn",
        F.try_to_timestamp("commit_source_time").alias("commit_time"),
        "outcome",
        F.coalesce("message_count", "ddl_count", F.lit(0)).alias("message_count"),
        F.lit(plan.cycle_id).alias("cycle_id"),
        F.lit(now).alias("applied_at"),
    )
    _append(
        transactions_rows,
        cycle.catalog.apply_table(dictionary.TRANSACTIONS),
        dictionary.TRANSACTIONS_SCHEMA,
        f"{cycle.app}:transactions",
        plan.cycle_id,
    )
    error_rows = (
        processed.where(F.col("outcome") == "ERROR")
        .withColumn("message_count", F.coalesce("message_count", "ddl_count"))
        .select(*ERROR_ROW_COLUMNS)
    )
    messages = inputs.messages
    late_lcrs = _late_lcr_messages(cycle, inputs)
    late_errors: dict[str, int] = {}
    if late_lcrs is not None:  # late LCRs: an error transaction each (silver/late.py)
        late_rows = late_lcr_errors(late_lcrs).select(*ERROR_ROW_COLUMNS)
        late_errors = {
            r.source_database_name: int(r.n)
            for r in late_rows.groupBy("source_database_name")
            .agg(F.count(F.lit(1)).alias("n"))
            .collect()
        }
        error_rows = error_rows.unionByName(late_rows)
        messages = messages.unionByName(late_lcrs.drop("applied_cycle"), allowMissingColumns=True)
    if fold.failed or late_lcrs is not None:  # rare: skip two empty Delta commits otherwise
        errors_rows = materialize(
            error_rows.withColumn(
                "local_transaction_id",
                F.concat_ws(
                    ".",
                    F.lit(str(plan.cycle_id)),
                    F.row_number()
                    .over(Window.orderBy("commit_scn", "source_database_name", "transaction_id"))
                    .cast("string"),
                ),
            )
        )
        _append_errors(
            cycle.catalog,
            cycle.apply_name,
            cycle.app,
            plan.cycle_id,
            now,
            messages,
            errors_rows,
        )
    cycle.crash_point("error_queue", "after the error queue")
    cycle.progress("error queue written")
    return processed, late_errors


ERROR_ROW_COLUMNS = (
    "source_database_name",
    "transaction_id",
    "commit_scn",
    "failing_message",
    "error_number",
    "error_message",
    "message_count",
)


def _late_lcr_messages(cycle: _Cycle, inputs: _CycleInput) -> DataFrame | None:
    """The messages (D2) of late LCRs, numbered as a transaction's, with the commit SCN and
    cycle of the transaction they came late for; None when there are none."""
    if inputs.late is None:
        return None
    late = inputs.late.late_lcr_transactions
    if late.limit(1).count() == 0:
        return None
    lcrs = inputs.late.late_lcrs if inputs.late.late_lcrs is not None else inputs.lcrs
    messages = _messages(lcrs, late, cycle.settings, cycle.spark).join(
        late.select(*TRANSACTION_KEY, "applied_cycle"), list(TRANSACTION_KEY)
    )
    return materialize(messages) if messages.limit(1).count() else None


def _write_spill(cycle: _Cycle, inputs: _CycleInput, processed: DataFrame) -> DataFrame:
    """Step 5c: the LCRs of open transactions and of committed ones not processed (after the
    cut) replace this apply's spill; returns those transactions."""
    processed_keys = processed.select("source_database_name", "transaction_id")
    keep = (
        inputs.transactions.where(F.col("state").isin("OPEN", "COMMITTED"))
        .select("source_database_name", "transaction_id")
        .join(processed_keys, ["source_database_name", "transaction_id"], "left_anti")
    )
    if inputs.late is not None:  # late LCRs leave the spill (for the error queue, or dropped
        # when the rules filter all of them out: they would never have applied, or when they
        # are copies of LCRs landed before: redelivered)
        settled = inputs.late.settled_transactions
        keep = keep.join(
            (settled if settled is not None else inputs.late.late_lcr_transactions).select(
                *TRANSACTION_KEY
            ),
            list(TRANSACTION_KEY),
            "left_anti",
        )
    if inputs.redelivered is not None:  # copies of processed transactions: nothing to keep
        keep = keep.join(
            inputs.redelivered.select(*TRANSACTION_KEY), list(TRANSACTION_KEY), "left_anti"
        )
    keep = materialize(keep)
    if _spill_changes(inputs.lcrs, keep):
        new_spill = inputs.lcrs.join(
            keep, ["source_database_name", "transaction_id"], "left_semi"
        ).select(
            F.lit(cycle.apply_name).alias("apply_name"),
            *[F.col(quote(f.name)) for f in lcr_table_schema().fields],
        )
        # A data write (replaceWhere), not saveAsTable's replace-table path: see
        # admin._replace_rows.
        new_spill.writeTo(cycle.catalog.apply_table(dictionary.SPILL)).option(
            "txnAppId", f"{cycle.app}:spill"
        ).option("txnVersion", str(cycle.plan.cycle_id)).overwrite(
            F.col("apply_name") == F.lit(cycle.apply_name)
        )
        cycle.progress("spill written")
    else:
        cycle.progress("spill unchanged, not written")
    cycle.crash_point("spill", "after the spill")
    return keep


def _spill_changes(lcrs: DataFrame, keep: DataFrame) -> bool:
    """Whether the new spill (the LCRs of ``keep``'s transactions) differs from the spill read
    at the plan's version (the LCRs that did not arrive this cycle): it does when an arrived
    LCR is kept or a spilled one is not. Unchanged (the usual case once every transaction has
    committed, with an empty spill before and after), it is not rewritten: a commit and a
    full write saved. Decided from the plan's inputs alone, so a resumed cycle decides the
    same."""
    kept = keep.select(*TRANSACTION_KEY).distinct().withColumn("__kept", F.lit(True))
    differing = (
        lcrs.select(*TRANSACTION_KEY, ARRIVED)
        .join(kept, list(TRANSACTION_KEY), "left")
        .where(F.col(ARRIVED) == F.col("__kept").isNotNull())
    )
    return differing.limit(1).count() > 0


def _record_progress(
    cycle: _Cycle,
    inputs: _CycleInput,
    processed: DataFrame,
    keep: DataFrame,
    fold: _FoldOutcome,
    versions_after: dict[str, int],
    now: datetime,
    late_errors: dict[str, int] | None = None,
) -> tuple[dict[str, int], dict[str, int | None]]:
    """Step 5d (rule 9): a progress row per source database, with the watermarks, the oldest
    SCN and the counters; returns the cycle's counters and low watermarks."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    previous = inputs.previous
    # DEPENDENT_TRANSACTIONS: the low watermark stops before the first held transaction (no
    # gap below it); the high watermark is the highest commit SCN applied.
    first_held = (
        _held_frame(cycle, fold)
        .groupBy("source_database_name")
        .agg(F.min("held_scn").alias("first_held"))
    )
    below_gap = F.col("first_held").isNull() | (F.col("commit_scn") < F.col("first_held"))
    counted = (
        processed.join(first_held, "source_database_name", "left")
        .groupBy("source_database_name")
        .agg(
            # Rule 9: every processed transaction, error ones included (a restart never runs
            # a queued transaction again, so the watermark passes it in both modes).
            F.max(F.when(below_gap, F.col("commit_scn"))).alias("lwm"),
            F.max_by(
                F.when(below_gap, F.col("commit_source_time")),
                F.when(below_gap, F.col("commit_scn")),
            ).alias("lwm_time"),
            F.max("commit_scn").alias("hwm"),
            F.max_by("commit_source_time", "commit_scn").alias("hwm_time"),
            # An IGNORED DDL transaction (rule 10) was applied: it had nothing to change.
            F.count(F.when(F.col("outcome").isin("APPLIED", "DISCARDED", "IGNORED"), 1)).alias(
                "applied"
            ),
            F.count(F.when(F.col("outcome") == "ERROR", 1)).alias("errors"),
            F.lit(True).alias("__processed"),
        )
    )
    received = (
        inputs.lcrs.where(F.col(ARRIVED))
        .groupBy("source_database_name")
        .agg(
            F.count(F.lit(1)).alias("received"),
            F.count_distinct(
                F.when(F.col("command_type") == "ROLLBACK", F.col("transaction_id"))
            ).alias("rolled_back"),
        )
    )
    # Oldest SCN: the earliest transaction not yet processed (open, or after the cut).
    pending = inputs.transactions.join(
        keep, ["source_database_name", "transaction_id"], "left_semi"
    )
    oldest = pending.groupBy("source_database_name").agg(
        F.min(F.struct("first_scn", "transaction_id")).alias("oldest")
    )
    # One collect for the four (their scans and shuffles run as one query, not four).
    rows = {
        r.source_database_name: r
        for r in counted.join(received, "source_database_name", "full")
        .join(_redeliveries(cycle, inputs), "source_database_name", "full")
        .join(oldest, "source_database_name", "full")
        .collect()
    }
    per_source = {s: r for s, r in rows.items() if r["__processed"]}
    received_counts = {s: (r.received or 0, r.rolled_back or 0) for s, r in rows.items()}
    ignored = {s: int(r.ignored or 0) for s, r in rows.items()}
    oldest_rows = {s: r for s, r in rows.items() if r.oldest is not None}
    status = "ABORTED" if fold.aborted_error is not None else "ENABLED"
    progress_rows = []
    watermarks: dict[str, int | None] = {}
    totals = {"applied": 0, "ignored": 0, "errors": 0, "received": 0, "rolled_back": 0}
    for source in settings.source_databases:
        before = previous.get(source)
        now_source = per_source.get(source)
        lwm, lwm_time = _low_watermark(before, now_source)
        hwm, hwm_time = _high_watermark(before, now_source, lwm, lwm_time)
        if not any(db == source for db, _ in fold.held):
            # No gap left open by this cycle: the transactions held back below the previous
            # high watermark are processed now, and everything up to it is.
            lwm, lwm_time = hwm, hwm_time
        got, rolled = received_counts.get(source, (0, 0))
        counts = {
            "received": got,
            "applied": now_source.applied if now_source else 0,
            "ignored": ignored.get(source, 0),
            "rolled_back": rolled,
            # Late LCRs queued as error transactions count as errors too (silver/late.py).
            "errors": (now_source.errors if now_source else 0) + (late_errors or {}).get(source, 0),
        }
        for name, value in counts.items():
            totals[name] += value
        oldest_row = oldest_rows.get(source)
        watermarks[source] = lwm
        progress_rows.append(
            (
                cycle.apply_name,
                source,
                plan.cycle_id,
                lwm,
                lwm_time,
                hwm,
                hwm_time,
                oldest_row.oldest.first_scn if oldest_row else None,
                oldest_row.oldest.transaction_id if oldest_row else None,
                oldest_row.oldest.first_scn if oldest_row else None,
                now,
                (before.total_received if before else 0) + counts["received"],
                (before.total_applied if before else 0) + counts["applied"],
                (before.total_ignored if before else 0) + counts["ignored"],
                (before.total_rolled_back if before else 0) + counts["rolled_back"],
                (before.total_errors if before else 0) + counts["errors"],
                status,
                versions_after,
            )
        )
    if totals["rolled_back"]:
        _record_rollbacks(cycle, inputs)
    cycle.progress("watermarks computed")
    _append(
        spark.createDataFrame(progress_rows, dictionary.PROGRESS_SCHEMA),
        catalog.apply_table(dictionary.PROGRESS),
        dictionary.PROGRESS_SCHEMA,
        f"{cycle.app}:progress",
        plan.cycle_id,
    )
    cycle.crash_point("progress", "after progress")
    return totals, watermarks


def _record_rollbacks(cycle: _Cycle, inputs: _CycleInput) -> None:
    """The transactions whose ROLLBACK arrived this cycle, so that a later cycle settles LCRs
    of theirs that land after it (silver/late.py) instead of keeping them in the spill."""
    rows = (
        inputs.lcrs.where(F.col(ARRIVED) & (F.col("command_type") == "ROLLBACK"))
        .groupBy(*TRANSACTION_KEY)
        .agg(F.max("scn").alias("rollback_scn"))
        .select(
            F.lit(cycle.apply_name).alias("apply_name"),
            F.col("source_database_name").alias("source_database"),
            "transaction_id",
            "rollback_scn",
            F.lit(cycle.plan.cycle_id).cast("long").alias("cycle_id"),
        )
    )
    _append(
        rows,
        cycle.catalog.apply_table(dictionary.ROLLED_BACK),
        dictionary.ROLLED_BACK_SCHEMA,
        f"{cycle.app}:rolled_back",
        cycle.plan.cycle_id,
    )


def _redeliveries(cycle: _Cycle, inputs: _CycleInput) -> DataFrame:
    """Per source database, ``ignored``: the COMMITs received this cycle for a transaction
    already delivered (rule 11, TOTAL_IGNORED): every copy beyond the first, counted when it is
    received, whether the first came in the same cycle, sits in the spill or was processed by
    an earlier cycle."""
    commits = inputs.lcrs.where(F.col("command_type") == "COMMIT").select(
        "source_database_name", "transaction_id", F.col("scn").alias("commit_scn"), ARRIVED
    )
    earlier = (
        commits.where(~F.col(ARRIVED))
        .drop(ARRIVED)
        .unionByName(_processed_before(cycle))
        .distinct()
        .withColumn("__known", F.lit(1))
    )
    arrived = (
        commits.where(F.col(ARRIVED))
        .groupBy(*SEEN_KEY)
        .agg(F.count(F.lit(1)).alias("copies"))
        .join(earlier, list(SEEN_KEY), "left")
    )
    return arrived.groupBy("source_database_name").agg(
        F.sum(F.col("copies") - F.when(F.col("__known").isNull(), 1).otherwise(0)).alias("ignored")
    )


def _low_watermark(before: Any, now_source: Any) -> tuple[int | None, datetime | None]:
    """This cycle's low watermark of a source (FULL: the last processed commit SCN); the previous
    one when this cycle processed nothing there. A low watermark never moves back."""
    lwm = now_source.lwm if now_source else (before.low_watermark if before else None)
    lwm_time = (
        _parse_time(now_source.lwm_time)
        if now_source
        else (before.low_watermark_time if before else None)
    )
    if (
        before is not None
        and before.low_watermark is not None
        and (lwm is None or lwm < before.low_watermark)
    ):
        return before.low_watermark, before.low_watermark_time
    return lwm, lwm_time


def _high_watermark(
    before: Any, now_source: Any, lwm: int | None, lwm_time: datetime | None
) -> tuple[int | None, datetime | None]:
    """The highest commit SCN applied so far: never below the low watermark, never moving back
    (held transactions applied after START_APPLY are below the previous high watermark)."""
    candidates: list[tuple[int, datetime | None]] = []
    if lwm is not None:
        candidates.append((lwm, lwm_time))
    if now_source is not None and now_source.hwm is not None:
        candidates.append((int(now_source.hwm), _parse_time(now_source.hwm_time)))
    if before is not None and before.high_watermark is not None:
        candidates.append((int(before.high_watermark), before.high_watermark_time))
    if not candidates:
        return None, None
    return max(candidates, key=lambda c: c[0])


def _commit_cycle(cycle: _Cycle, versions_after: dict[str, int], now: datetime) -> None:
    """Last: the COMMITTED cycle row; a re-run after it plans a new cycle."""
    plan = cycle.plan
    commit_row = cycle.spark.createDataFrame(
        [
            (
                cycle.apply_name,
                plan.cycle_id,
                "COMMITTED",
                plan.bronze_from_batch,
                plan.bronze_to_batch,
                plan.recorded_versions(),
                versions_after,
                now,
            )
        ],
        dictionary.CYCLES_SCHEMA,
    )
    _append(
        commit_row,
        cycle.catalog.apply_table(dictionary.CYCLES),
        dictionary.CYCLES_SCHEMA,
        f"{cycle.app}:commit",
        plan.cycle_id,
    )


def _append_errors(
    catalog: Catalog,
    apply_name: str,
    app: str,
    cycle_id: int,
    now: datetime,
    messages: DataFrame,
    errors_rows: DataFrame,
) -> None:
    """DBA_APPLY_ERROR rows and, for each, every message of its transaction (D2)."""
    _append(
        errors_rows.select(
            F.lit(apply_name).alias("apply_name"),
            F.lit(f"{apply_name}_QUEUE").alias("queue_name"),
            "local_transaction_id",
            F.col("source_database_name").alias("source_database"),
            F.col("transaction_id").alias("source_transaction_id"),
            F.col("commit_scn").alias("source_commit_scn"),
            F.col("failing_message").alias("message_number"),
            "error_number",
            "error_message",
            F.lit(0).alias("recipient_id"),
            F.lit("LAKEAPPLY").alias("recipient_name"),
            F.coalesce("message_count", F.lit(0)).alias("message_count"),
            F.lit(now).alias("error_creation_time"),
            F.lit(cycle_id).alias("cycle_id"),
        ),
        catalog.apply_table(dictionary.ERROR_QUEUE),
        dictionary.ERROR_QUEUE_SCHEMA,
        f"{app}:error_queue",
        cycle_id,
    )
    error_messages = messages.join(
        errors_rows.select("source_database_name", "transaction_id", "local_transaction_id"),
        ["source_database_name", "transaction_id"],
    ).select(
        F.lit(apply_name).alias("apply_name"),
        "local_transaction_id",
        "message_number",
        *[F.col(quote(f.name)) for f in lcr_table_schema().fields],
    )
    _append(
        error_messages,
        catalog.apply_table(dictionary.ERROR_MESSAGES),
        dictionary.ERROR_MESSAGES_SCHEMA,
        f"{app}:error_messages",
        cycle_id,
    )


def _parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        return None


def _merge_table(
    spark: SparkSession,
    name: str,
    table: DestinationTable,
    final_rows: DataFrame,
    bounds: KeyBounds,
    app_id: str,
    cycle_id: int,
) -> None:
    """One MERGE of the cycle's final rows into one destination table, idempotent per cycle.

    The key bounds are a target-only predicate of the merge condition: Delta prunes the files
    the MERGE scans for matches with it."""
    values = F.from_json(F.col("row_json"), "map<string,string>")
    source = final_rows.where(F.col("silver_table") == table.silver_table).select(
        F.col("action").alias("__lakeapply_action"),
        *[
            F.coalesce(
                typed_value(column, values[column.name]),
                typed_value(
                    column,
                    F.from_json("key_text", T.ArrayType(T.StringType()))[
                        table.effective_key.index(column.name)
                    ],
                )
                if column.name in table.effective_key
                else F.lit(None).cast(column.oracle_type.spark_type()),
            ).alias(column.name)
            for column in table.definition.columns
        ],
    )
    columns: dict[str, str | Column] = {
        quote(c.name): F.col("s." + quote(c.name)) for c in table.definition.columns
    }
    spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(cycle_id))
    try:
        (
            DeltaTable.forName(spark, name)
            .alias("t")
            .merge(
                source.alias("s"),
                F.expr(_null_safe_key_match(table, "t", "s")) & bounds.predicate(table, "t"),
            )
            .whenMatchedDelete(condition="s.__lakeapply_action = 'DELETE'")
            .whenMatchedUpdate(set=columns)
            .whenNotMatchedInsert(condition="s.__lakeapply_action = 'UPSERT'", values=columns)
            .execute()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")


def run_apply(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> list[CycleReport]:
    """Apply cycles until bronze has nothing new for this apply process, or it aborts.
    ``crash_after`` (tests) is passed to the first cycle."""
    reports: list[CycleReport] = []
    while True:
        crash, crash_after = crash_after, None
        # A cycle is idempotent on replay (plan recorded first, writes tagged txnAppId/txnVersion),
        # so a Delta commit race (OPTIMIZE, another writer) is retried as a whole cycle.
        report = retry_on_concurrent_modification(
            lambda: apply_cycle(spark, catalog, settings, progress, crash),  # noqa: B023
            attempts=3,
            backoff=2.0,
        )
        if report is None:
            return reports
        reports.append(report)
        if report.aborted or report.caught_up:
            return reports


def load_initial_copy(
    spark: SparkSession, catalog: Catalog, table: DestinationTable, rows: DataFrame
) -> None:
    """Instantiation: append an initial copy (typed like the destination) to an empty table."""
    schema = table.definition.spark_schema()
    rows.select(*[F.col(quote(f.name)).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).mode("append").saveAsTable(catalog.silver_table(table.silver_table))


# --------------------------------------------------------------------------------------------
# The error queue: EXECUTE_ERROR, EXECUTE_ALL_ERRORS, DELETE_ERROR, DELETE_ALL_ERRORS
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorExecution:
    """What re-executing one error transaction did: applied (and gone from the queue), or
    failed again (kept in the queue with this new error)."""

    local_transaction_id: str
    source_database: str
    source_transaction_id: str
    source_commit_scn: int
    succeeded: bool
    error_number: int | None = None
    error_message: str | None = None
    message_number: int | None = None


def _queued_in_commit_order(
    spark: SparkSession, catalog: Catalog, apply_name: str, wanted: list[str] | None
) -> list[str]:
    """Local transaction ids of the error queue (all, or those of ``wanted`` that are there),
    in commit-SCN order."""
    queue = _apply_rows(spark, catalog, dictionary.ERROR_QUEUE, apply_name)
    if wanted is not None:
        queue = queue.where(F.col("local_transaction_id").isin(*wanted))
    rows = (
        queue.select(
            "local_transaction_id", "source_commit_scn", "source_database", "source_transaction_id"
        )
        .orderBy("source_commit_scn", "source_database", "source_transaction_id")
        .collect()
    )
    return [str(row.local_transaction_id) for row in rows]


def _unknown_errors(apply_name: str, unknown: list[str]) -> ApplyError:
    return ApplyError(
        f"apply process {apply_name} has no error transaction "
        f"{', '.join(unknown)} in its error queue (see DBA_APPLY_ERROR.LOCAL_TRANSACTION_ID)"
    )


def _finish_unfinished(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress,
    execute_only: bool = False,
) -> list[ErrorExecution]:
    """Cycles are sequential: a cycle that did not commit (killed) is finished before another
    one starts, from its recorded plan. Returns what an unfinished EXECUTE_ERROR cycle did."""
    _, unfinished, _ = _cycle_state(spark, catalog, settings)
    if unfinished is None:
        return []
    if unfinished.execute_errors:
        return _execute_cycle(spark, catalog, settings, unfinished, progress)
    if not execute_only:
        # A bronze cycle is finished whatever the status: it was planned while enabled.
        _bronze_cycle(spark, catalog, settings, unfinished, True, progress, None)
    return []


def execute_errors(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    local_transaction_ids: list[str] | None = None,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> list[ErrorExecution]:
    """EXECUTE_ERROR (the given error transactions) or EXECUTE_ALL_ERRORS (None: every one),
    in commit-SCN order, each against the destination state the previous ones left.

    A re-execution is an apply cycle whose input is the queued transactions' messages (the
    LCRs as queued, after rules and transformations) instead of bronze: the same stage, fold
    (keys, conversions, conflict handlers) and MERGE, recorded in ``cycles`` first and written
    idempotently, so a crash midway is finished by the next run and nothing applies twice.
    Errors do not stop it (as with ``disable_on_error = N``): a transaction that fails again
    stays in the queue with its new error; one that succeeds leaves the queue. The apply
    process's status does not matter (an ABORTED apply is the usual case) and is not changed.
    """
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    if settings.disable_on_error:
        _record_an_unrecorded_abort(spark, catalog, settings)
    results = _finish_unfinished(spark, catalog, settings, progress)
    finished = {result.local_transaction_id for result in results}
    wanted = _queued_in_commit_order(spark, catalog, settings.apply_name, local_transaction_ids)
    if local_transaction_ids is not None:
        unknown = [
            local_id
            for local_id in dict.fromkeys(local_transaction_ids)
            if local_id not in wanted and local_id not in finished
        ]
        if unknown:
            raise _unknown_errors(settings.apply_name, unknown)
    while wanted:
        last, _, from_batch = _cycle_state(spark, catalog, settings)
        plan = CyclePlan(
            last + 1,
            from_batch,
            from_batch,  # reads no bronze: the next bronze cycle starts where the last one ended
            _latest_version(spark, catalog.apply_table(dictionary.SPILL)),
            _destination_versions(spark, catalog, settings),
            execute_errors=tuple(wanted),
            error_queue_versions={
                name: _latest_version(spark, catalog.apply_table(name))
                for name in (dictionary.ERROR_QUEUE, dictionary.ERROR_MESSAGES)
            },
        )
        _record_plan(spark, catalog, settings, plan)
        executed = _execute_cycle(spark, catalog, settings, plan, progress, crash_after)
        results += executed
        done = {result.local_transaction_id for result in executed}
        # max_error_passes may cut a cycle: what follows the cut runs in the next one.
        wanted = [local_id for local_id in wanted if local_id not in done]
    return results


def _execution_report(apply_name: str, plan: CyclePlan) -> CycleReport:
    """An EXECUTE_ERROR cycle finished by an apply run: it received and counted nothing."""
    return CycleReport(apply_name, plan.cycle_id, True, 0, 0, 0, 0, 0, 1, 0, False)


def _execute_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    plan: CyclePlan,
    progress: Progress,
    crash_after: str | None = None,
) -> list[ErrorExecution]:
    """One EXECUTE_ERROR cycle from its recorded plan: the error transactions it names, read
    from the error queue as it was when planned, folded against the destination tables as
    they were when planned, MERGEd, then the queue updated; last, the COMMITTED cycle row."""
    # Re-execution carries on after a failure, whatever disable_on_error says.
    settings = versioned_settings(spark, catalog, settings, plan.cycle_id)
    cycle = _Cycle(
        spark, catalog, replace(settings, disable_on_error=False), plan, progress, crash_after
    )
    cycle.crash_point("plan", "after plan")
    progress(f"cycle {plan.cycle_id}: re-executing {len(plan.execute_errors)} error transaction(s)")
    inputs = _read_error_transactions(cycle)
    fold = _fold_passes(cycle, inputs)
    fold = replace(fold, failed={**fold.failed, **_queued_ddl_failures(inputs)})
    versions_after, _ = _merge_destinations(cycle, fold.final_rows, inputs.bounds)
    now = datetime.now(UTC).replace(tzinfo=None)
    executions = _record_executions(cycle, inputs, fold, now)
    _commit_cycle(cycle, versions_after, now)
    return executions


def _error_table_at(cycle: _Cycle, name: str) -> DataFrame:
    return (
        cycle.spark.read.format("delta")
        .option("versionAsOf", cycle.plan.error_queue_versions[name])
        .table(cycle.catalog.apply_table(name))
        .where(
            (F.col("apply_name") == cycle.apply_name)
            & F.col("local_transaction_id").isin(*cycle.plan.execute_errors)
        )
    )


def _read_error_transactions(cycle: _Cycle) -> _CycleInput:
    """The messages of the planned error transactions, numbered as queued, staged like a bronze
    cycle's (rules and transformations already ran before they were queued)."""
    queue = _error_table_at(cycle, dictionary.ERROR_QUEUE).select(
        F.col("source_database").alias("source_database_name"),
        F.col("source_transaction_id").alias("transaction_id"),
        F.col("source_commit_scn").alias("commit_scn"),
        "local_transaction_id",
    )
    committed = materialize(queue)
    stored = _error_table_at(cycle, dictionary.ERROR_MESSAGES).drop(
        "apply_name", "local_transaction_id", "commit_scn"
    )
    messages = (
        stored.where(F.col("lcr_kind") != "DDL")
        .join(
            F.broadcast(_settings_frame(cycle.spark, cycle.settings)),
            ["source_database_name", "object_owner", "object_name"],
        )
        .join(
            committed.select("source_database_name", "transaction_id", "commit_scn"),
            ["source_database_name", "transaction_id"],
        )
    )
    staged, fold_input, bounds, buckets = _stage(cycle, messages)
    return _CycleInput(stored, committed, committed, messages, staged, fold_input, bounds, buckets)


def _record_executions(
    cycle: _Cycle, inputs: _CycleInput, fold: _FoldOutcome, now: datetime
) -> list[ErrorExecution]:
    """Successes leave the error queue (DBA_APPLY_ERROR and their messages); failures keep
    their messages and get the new error. One idempotent MERGE of the queue per cycle."""
    spark, plan = cycle.spark, cycle.plan
    failed_frame = spark.createDataFrame(
        [
            (k[0], k[1], int(e.message_number), int(e.error_number), str(e.error_message))
            for k, e in fold.failed.items()
        ],
        "source_database_name string, transaction_id string, failing_message long, "
        "error_number long, error_message string",
    )
    processed = materialize(
        inputs.committed.join(failed_frame, ["source_database_name", "transaction_id"], "left")
        .where(_before(fold.cut))
        .withColumn("succeeded", F.col("error_number").isNull())
    )
    # One row per error transaction re-executed (not per LCR): small enough for the driver.
    rows = processed.orderBy("commit_scn", "source_database_name", "transaction_id").collect()
    session = spark.newSession()
    session.conf.set("spark.databricks.delta.write.txnAppId", f"{cycle.app}:error_queue")
    session.conf.set("spark.databricks.delta.write.txnVersion", str(plan.cycle_id))
    (
        DeltaTable.forName(session, cycle.catalog.apply_table(dictionary.ERROR_QUEUE))
        .alias("t")
        .merge(
            processed.alias("s"),
            f"t.apply_name = {sql_string_literal(cycle.apply_name)} "
            "AND t.local_transaction_id = s.local_transaction_id",
        )
        .whenMatchedDelete(condition="s.succeeded")
        .whenMatchedUpdate(
            set={
                "message_number": F.col("s.failing_message"),
                "error_number": F.col("s.error_number"),
                "error_message": F.col("s.error_message"),
                "error_creation_time": F.lit(now),
            }
        )
        .execute()
    )
    cycle.crash_point("error_queue", "after the error queue")
    succeeded = [str(row.local_transaction_id) for row in rows if row.succeeded]
    if succeeded:  # idempotent by itself: a re-run deletes nothing more
        DeltaTable.forName(spark, cycle.catalog.apply_table(dictionary.ERROR_MESSAGES)).delete(
            (F.col("apply_name") == cycle.apply_name)
            & F.col("local_transaction_id").isin(*succeeded)
        )
    cycle.progress(f"{len(succeeded)} of {len(rows)} error transaction(s) applied")
    return [
        ErrorExecution(
            str(row.local_transaction_id),
            str(row.source_database_name),
            str(row.transaction_id),
            int(row.commit_scn),
            bool(row.succeeded),
            None if row.succeeded else int(row.error_number),
            None if row.succeeded else str(row.error_message),
            None if row.succeeded else int(row.failing_message),
        )
        for row in rows
    ]


def delete_errors(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    local_transaction_ids: list[str] | None = None,
    progress: Progress = lambda _: None,
) -> list[str]:
    """DELETE_ERROR (the given error transactions) or DELETE_ALL_ERRORS (None): they leave the
    queue unapplied. An unfinished re-execution is finished first (it was planned with them).
    Messages go first: a kill between the two deletes leaves the queue row, and a re-run
    removes it."""
    ensure_apply_tables(spark, catalog)
    _finish_unfinished(spark, catalog, settings, progress, execute_only=True)
    wanted = _queued_in_commit_order(spark, catalog, settings.apply_name, local_transaction_ids)
    if local_transaction_ids is not None:
        unknown = [i for i in dict.fromkeys(local_transaction_ids) if i not in wanted]
        if unknown:
            raise _unknown_errors(settings.apply_name, unknown)
    if not wanted:
        return []
    mine = (F.col("apply_name") == settings.apply_name) & F.col("local_transaction_id").isin(
        *wanted
    )
    for name in (dictionary.ERROR_MESSAGES, dictionary.ERROR_QUEUE):
        DeltaTable.forName(spark, catalog.apply_table(name)).delete(mine)
    return wanted


# --------------------------------------------------------------------------------------------
# DDL (rules 9 and 10): barriers, versioned table definitions, the DDL cycle
# --------------------------------------------------------------------------------------------


def versioned_settings(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, cycle_id: int
) -> ApplySettings:
    """``settings`` with each destination table's definition as the DDL transactions applied
    by the cycles before ``cycle_id`` left it (a resumed cycle sees what it saw first)."""
    latest = (
        _apply_rows(spark, catalog, dictionary.TABLE_VERSIONS, settings.apply_name)
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


def _latest_settings(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> ApplySettings:
    """``settings`` after every DDL recorded so far, committed cycle or not (before the
    dictionary exists: as declared)."""
    if not spark.catalog.tableExists(catalog.apply_table(dictionary.TABLE_VERSIONS)):
        return settings
    return versioned_settings(spark, catalog, settings, 2**62)


_ORDER = ("commit_scn", "source_database_name", "transaction_id")


def _is_position(position: Position) -> Column:
    scn, database, txn = position
    return (
        (F.col("commit_scn") == scn)
        & (F.col("source_database_name") == database)
        & (F.col("transaction_id") == txn)
    )


def _routed_ddl(lcrs: DataFrame, settings: ApplySettings) -> DataFrame:
    return lcrs.where((F.col("lcr_kind") == "DDL") & passes_rules(settings))


def _is_one_of(keys: frozenset[tuple[str, str]]) -> Column:
    if not keys:
        return F.lit(False)
    return F.concat_ws("\u0000", *TRANSACTION_KEY).isin(*["\u0000".join(key) for key in keys])


def _ddl_barrier(
    cycle: _Cycle, lcrs: DataFrame, committed: DataFrame
) -> tuple[DataFrame, Position | None, bool, frozenset[tuple[str, str]]]:
    """Rule 9: a DDL transaction is a barrier. The cycle keeps the committed transactions
    before the first DDL one; when that DDL transaction comes first, it is kept alone (and
    returned). The rest stays in the spill for the next cycle: a loop over DDL barriers,
    which are rare, never over row transactions.

    A transaction made only of DDL that changes no column and no row (rule 10: an index, a
    grant, a comment, a table the apply does not route) is no barrier: nothing can be
    ordered around it. It is processed in the cycle, as IGNORED (the last value returned).
    Classifying needs the statement parsed: the DDL LCRs of the cycle's committed
    transactions (a few; DDL is rare) are read on the driver."""
    committed = materialize(committed)
    ddl_lcrs = (
        _routed_ddl(lcrs, cycle.settings)
        .drop("commit_scn")
        .join(committed.select(*TRANSACTION_KEY, "commit_scn"), list(TRANSACTION_KEY))
        .select(
            *TRANSACTION_KEY,
            "commit_scn",
            "ddl_text",
            "current_schema",
            "object_owner",
            "object_name",
            "base_table_owner",
            "base_table_name",
        )
        .distinct()
        .collect()
    )
    if not ddl_lcrs:
        return committed, None, False, frozenset()
    changes: dict[tuple[str, str], bool] = {}
    positions: dict[tuple[str, str], Position] = {}
    for lcr in ddl_lcrs:
        key = (str(lcr.source_database_name), str(lcr.transaction_id))
        positions[key] = (int(lcr.commit_scn), key[0], key[1])
        try:
            changes_something = not isinstance(_ddl_change(cycle.settings, lcr), str)
        except DdlError:
            changes_something = True  # it goes to the error queue, in its own cycle
        changes[key] = changes.get(key, False) or changes_something
    barriers = [positions[key] for key, changes_something in changes.items() if changes_something]
    ignored = frozenset(key for key, changes_something in changes.items() if not changes_something)
    if not barriers:
        return committed, None, False, ignored
    position = min(barriers)
    first = committed.agg(F.min(F.struct(*_ORDER)).alias("first")).collect()[0]["first"]
    if (int(first.commit_scn), str(first.source_database_name), str(first.transaction_id)) == (
        position
    ):
        return materialize(committed.where(_is_position(position))), position, True, frozenset()
    before = committed.where(_before(position) & ~_is_position(position))
    return materialize(before), None, True, ignored


@dataclass(frozen=True)
class _DdlFailure:
    """A DDL transaction's error, shaped like a fold error row."""

    source_database_name: str
    transaction_id: str
    commit_scn: int
    message_number: int
    error_number: int
    error_message: str


@dataclass(frozen=True)
class _DdlChange:
    """What one DDL LCR does to one destination table."""

    table: DestinationTable
    statement: DdlStatement
    definition: TableDefinition | None  # the new definition (None: no column changes)


def _ddl_change(settings: ApplySettings, lcr: Any) -> _DdlChange | str:
    """The change a DDL LCR makes, or why it is ignored; raises DdlError as Oracle would."""
    default_owner = lcr.current_schema or lcr.base_table_owner or lcr.object_owner
    statement = parse_ddl(str(lcr.ddl_text or ""), default_owner)
    if statement.kind == "IGNORED":
        return statement.reason
    owner = statement.owner or lcr.base_table_owner or lcr.object_owner
    name = statement.table or lcr.base_table_name or lcr.object_name
    database = str(lcr.source_database_name)
    table = settings.table_for(database, str(owner), str(name))
    if statement.kind == "CREATE TABLE":
        return _create_table_change(settings, lcr, statement, table, database)
    if statement.kind == CREATE_TABLE_AS_SELECT:
        if table is None and settings.positive_rules is None:
            return (
                f"CREATE TABLE {owner}.{name} AS SELECT: not routed (apply "
                f"{settings.apply_name} has no positive rule set; only its declared tables are "
                "applied)"
            )
        scn = settings.instantiation_scn_for(database, str(owner), str(name))
        if scn is not None and int(lcr.commit_scn) <= scn:
            return f"CREATE TABLE {owner}.{name} AS SELECT: commit SCN {lcr.commit_scn} <= {scn}"
        raise DdlError(
            UNIMPLEMENTED,
            f'CREATE TABLE "{owner}"."{name}" AS SELECT is not applied: the rows it copies are '
            "not in the LCR stream (create and load the destination table, declare it in "
            f"lakeapply.yml, then DELETE_ERROR): {lcr.ddl_text}",
        )
    # Without a positive rule set, the declared tables are the apply's only table rules.
    routed = settings.positive_rules is not None
    if table is None and not (routed and statement.kind == "DROP TABLE"):
        return f"{owner}.{name} is not a destination table of apply {settings.apply_name}"
    if table is None or table.dropped:
        raise DdlError(
            TABLE_NOT_FOUND,
            f'table or view does not exist: "{owner}"."{name}" from {database} has no '
            f"destination table in apply {settings.apply_name}"
            + (" (dropped by an earlier DROP TABLE)" if table is not None else ""),
        )
    instantiation_scn = settings.instantiation_scn_for(database, str(owner), str(name))
    if instantiation_scn is not None and int(lcr.commit_scn) <= instantiation_scn:
        # Rule 3 holds for every LCR of the object, DDL included: the copy the destination was
        # instantiated from already has the change.
        return (
            f"{statement.kind} {owner}.{name}: commit SCN {lcr.commit_scn} <= instantiation SCN "
            f"{instantiation_scn}, discarded"
        )
    if statement.kind == "DROP TABLE":
        return _DdlChange(table, statement, None)
    if statement.kind == "TRUNCATE":
        return _DdlChange(table, statement, None)
    definition = new_definition(table.definition, statement, table.effective_key)
    return _DdlChange(table, statement, definition)


def _create_table_change(
    settings: ApplySettings,
    lcr: Any,
    statement: DdlStatement,
    table: DestinationTable | None,
    database: str,
) -> _DdlChange | str:
    """CREATE TABLE (rule 10): a new destination table when the apply's rules route it (the
    DDL LCR passed them; without a positive rule set only declared tables are routed) and an
    instantiation SCN covers it (schema or global level for a new table), as Oracle's apply
    does. Committed at or below that SCN: already in the instantiation, discarded (rule 3)."""
    created = statement.created
    assert created is not None
    owner, name = created.owner, created.name
    if table is not None and not table.dropped:
        raise DdlError(
            NAME_IN_USE,
            f'name is already used by an existing object: "{owner}"."{name}" from {database} '
            f"is destination table {table.silver_table} of apply {settings.apply_name}",
        )
    if table is None and settings.positive_rules is None:
        return (
            f"CREATE TABLE {owner}.{name}: not routed (apply {settings.apply_name} has no "
            "positive rule set; only its declared tables are applied)"
        )
    scn = settings.instantiation_scn_for(database, owner, name)
    if scn is None:
        raise DdlError(
            NO_INSTANTIATION_SCN,
            f'no instantiation SCN provided for "{owner}"."{name}" in source database '
            f'"{database}" (set a schema or global instantiation SCN for a table created by DDL)',
        )
    if int(lcr.commit_scn) <= scn:
        return (
            f"CREATE TABLE {owner}.{name}: commit SCN {lcr.commit_scn} <= instantiation SCN {scn}"
        )
    silver = (
        table.silver_table if table is not None else created_silver_table(database, owner, name)
    )
    used = next((t for t in settings.tables if t.silver_table == silver and t is not table), None)
    if used is not None and not used.dropped:
        raise DdlError(
            NAME_IN_USE,
            f'name is already used by an existing object: silver table {silver} (for "{owner}".'
            f'"{name}") is the destination of {used.definition.qualified_name}',
        )
    if table is None:
        table = DestinationTable(database, created, silver)
    return _DdlChange(table, statement, created)


def _ddl_steps(change: _DdlChange, current: T.StructType, properties: dict[str, str]) -> list[str]:
    """The Delta statements that take the destination table to the new definition."""
    statement, table = change.statement, change.table
    if statement.kind == "TRUNCATE":
        return ["DELETE FROM {table}"]
    steps: list[str] = []
    mapping = properties.get("delta.columnMapping.mode") == "name"
    if statement.kind in ("DROP", "RENAME") and not mapping:
        steps.append("ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    if statement.kind == "ADD":
        added = ", ".join(
            f"{quote(add.column.name)} {add.column.oracle_type.spark_type().simpleString()}"
            for add in statement.added
        )
        steps.append(f"ALTER TABLE {{table}} ADD COLUMNS ({added})")
        for add in statement.added:
            if add.default is not None:
                spark_type = add.column.oracle_type.spark_type().simpleString()
                steps.append(
                    f"UPDATE {{table}} SET {quote(add.column.name)} = "  # noqa: S608 (quoted)
                    f"CAST({sql_string_literal(add.default)} AS {spark_type})"
                )
    elif statement.kind == "DROP":
        dropped = ", ".join(quote(name) for name in statement.dropped)
        steps.append(f"ALTER TABLE {{table}} DROP COLUMNS ({dropped})")
    elif statement.kind == "RENAME":
        assert statement.renamed is not None
        old, new = statement.renamed
        steps.append(f"ALTER TABLE {{table}} RENAME COLUMN {quote(old)} TO {quote(new)}")
    elif statement.kind == "MODIFY":
        types = {f.name: f.dataType for f in current.fields}
        for column in statement.modified:
            wanted = column.oracle_type.spark_type()
            if types.get(column.name) != wanted:
                if properties.get("delta.enableTypeWidening") != "true":
                    steps.append(
                        "ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
                    )
                steps.append(
                    f"ALTER TABLE {{table}} ALTER COLUMN {quote(column.name)} "
                    f"TYPE {wanted.simpleString()}"
                )
    del table
    return steps


def _run_ddl_steps(cycle: _Cycle, qualified: str, steps: list[str], planned: int) -> None:
    """Each step once: a step is tagged (Delta commit userMetadata) with the cycle and its
    number, and a resumed cycle skips the steps its first run committed."""
    done = {
        str(row.userMetadata)
        for row in DeltaTable.forName(cycle.spark, qualified)
        .history()
        .where((F.col("version") > planned) & F.col("userMetadata").isNotNull())
        .select("userMetadata")
        .collect()
    }
    session = cycle.spark.newSession()
    for number, step in enumerate(steps):
        marker = f"{cycle.app}:ddl:{cycle.plan.cycle_id}:{number}"
        if marker in done:
            continue
        session.conf.set("spark.databricks.delta.commitInfo.userMetadata", marker)
        try:
            session.sql(step.format(table=qualified))
        finally:
            session.conf.unset("spark.databricks.delta.commitInfo.userMetadata")


def _apply_ddl_transaction(
    cycle: _Cycle, inputs: _CycleInput
) -> tuple[_CycleInput, _FoldOutcome, dict[str, int], int]:
    """A DDL transaction, alone in its cycle: its DDL LCRs change the destination tables
    (Delta ALTER TABLE / DELETE, each step once), then a new definition version is recorded.
    A DDL that fails is an error transaction (with Y, it aborts the apply); one that changes
    no column and no row is IGNORED. Returns the inputs with the DDL LCRs as the transaction's
    messages (for the error queue), the outcome, and the destination versions after it."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    assert inputs.ddl is not None
    ddl_lcrs = without_copies(
        _routed_ddl(inputs.lcrs, settings)
        .drop("commit_scn")  # the COMMIT's, as in a row transaction's messages
        .join(inputs.committed.select(*TRANSACTION_KEY, "commit_scn"), list(TRANSACTION_KEY))
    )
    order = Window.partitionBy(*TRANSACTION_KEY).orderBy(
        "scn", F.coalesce("position", F.lit("")), "ingest_batch_id", "source_file", "line_number"
    )
    messages = materialize(ddl_lcrs.withColumn("message_number", F.row_number().over(order)))
    lcrs = messages.orderBy("message_number").collect()  # one transaction's DDL LCRs
    versions_after = dict(plan.table_versions)
    failed: dict[tuple[str, str], Any] = {}
    outcome = "IGNORED"
    version_rows = []
    current_settings = settings
    for lcr in lcrs:
        try:
            change = _ddl_change(current_settings, lcr)
            if isinstance(change, str):
                cycle.progress(f"DDL ignored ({change}): {lcr.ddl_text}")
                continue
            silver = change.table.silver_table
            qualified = catalog.silver_table(silver)
            if change.statement.kind in ("CREATE TABLE", "DROP TABLE"):
                dropped = _create_or_drop_table(cycle, change, lcr)
                if dropped:
                    versions_after.pop(silver, None)
                else:
                    versions_after[silver] = _latest_version(spark, qualified)
                    version_rows.append(_version_row(cycle, change.table, lcr, change.definition))
                outcome = "APPLIED"
                current_settings = _with_table(
                    current_settings,
                    replace(
                        change.table,
                        definition=change.definition or change.table.definition,
                        dropped=dropped,
                    ),
                )
                continue
            detail = DeltaTable.forName(spark, qualified).detail().collect()[0]
            steps = _ddl_steps(change, spark.table(qualified).schema, dict(detail.properties or {}))
            try:
                _run_ddl_steps(cycle, qualified, steps, plan.table_versions[silver])
            except Exception as error:  # Delta's refusal, reported as an Oracle error
                raise DdlError(
                    UNIMPLEMENTED,
                    f"{lcr.ddl_text}: the destination {silver} did not take it "
                    f"({type(error).__name__}: {str(error).splitlines()[0]})",
                ) from None
            versions_after[silver] = _latest_version(spark, qualified)
            outcome = "APPLIED"
            if change.definition is not None:
                version_rows.append(_version_row(cycle, change.table, lcr, change.definition))
                current_settings = replace(
                    current_settings,
                    tables=tuple(
                        replace(t, definition=change.definition) if t.silver_table == silver else t
                        for t in current_settings.tables
                    ),
                )
        except DdlError as error:
            failed[(str(lcr.source_database_name), str(lcr.transaction_id))] = _DdlFailure(
                str(lcr.source_database_name),
                str(lcr.transaction_id),
                int(lcr.commit_scn),
                int(lcr.message_number),
                error.number,
                error.message,
            )
            break
    if version_rows and not failed:
        _append(
            spark.createDataFrame(version_rows, dictionary.TABLE_VERSIONS_SCHEMA),
            catalog.apply_table(dictionary.TABLE_VERSIONS),
            dictionary.TABLE_VERSIONS_SCHEMA,
            f"{cycle.app}:table_versions",
            plan.cycle_id,
        )
    cycle.crash_point("merges", "after the DDL")
    aborted = next(iter(failed.values())) if failed and settings.disable_on_error else None
    empty = spark.createDataFrame([], FOLD_OUTPUT_SCHEMA).where(F.lit(False))
    fold = _FoldOutcome(empty, failed, None, 0, aborted, None if failed else outcome)
    return replace(inputs, messages=messages), fold, versions_after, len(version_rows)


def _version_row(
    cycle: _Cycle,
    table: DestinationTable,
    lcr: Any,
    definition: TableDefinition | None,
    dropped: bool = False,
) -> tuple[Any, ...]:
    """A ``table_versions`` row: the table's definition after the DDL LCR."""
    return (
        cycle.apply_name,
        table.source_database,
        table.definition.owner,
        table.definition.name,
        table.silver_table,
        int(lcr.commit_scn),
        str(lcr.transaction_id),
        str(lcr.ddl_text),
        definition_json(definition or table.definition, dropped),
        cycle.plan.cycle_id,
    )


def _with_table(settings: ApplySettings, table: DestinationTable) -> ApplySettings:
    """``settings`` with ``table`` in place of the one with its silver table, or added."""
    tables = [t for t in settings.tables if t.silver_table != table.silver_table]
    at = next(
        (i for i, t in enumerate(settings.tables) if t.silver_table == table.silver_table),
        len(tables),
    )
    return replace(settings, tables=(*tables[:at], table, *tables[at:]))


def _create_or_drop_table(cycle: _Cycle, change: _DdlChange, lcr: Any) -> bool:
    """CREATE TABLE / DROP TABLE on the destination, each safe to run again when a resumed
    cycle repeats it (the dictionary, read as before the cycle, still says what it said).
    A drop is recorded in ``table_versions`` before the Delta table goes: a crash between the
    two leaves a recorded drop that no restart undoes (ensure_destination_tables skips it) and
    the resumed cycle finishes. A create makes the Delta table first; its version row follows
    with the cycle's others. Returns True for a drop."""
    table = change.table
    qualified = cycle.catalog.silver_table(table.silver_table)
    if change.statement.kind == "CREATE TABLE":
        assert change.definition is not None
        ensure_delta_table(
            cycle.spark, qualified, change.definition.spark_schema(), keep_not_null=True
        )
        return False
    _append(
        cycle.spark.createDataFrame(
            [_version_row(cycle, table, lcr, None, dropped=True)], dictionary.TABLE_VERSIONS_SCHEMA
        ),
        cycle.catalog.apply_table(dictionary.TABLE_VERSIONS),
        dictionary.TABLE_VERSIONS_SCHEMA,
        f"{cycle.app}:table_versions:drop:{table.silver_table}",
        cycle.plan.cycle_id,
    )
    cycle.crash_point(DROP_RECORDED_CRASH_POINT, "after recording the DROP TABLE, before the drop")
    cycle.spark.sql(f"DROP TABLE IF EXISTS {qualified}")
    return True


def _queued_ddl_failures(inputs: _CycleInput) -> dict[tuple[str, str], Any]:
    """EXECUTE_ERROR does not re-run a queued DDL transaction: it stays in the queue with a
    message saying so (the DBA applies the change, then DELETE_ERROR)."""
    rows = (
        inputs.lcrs.where(F.col("lcr_kind") == "DDL")
        .join(inputs.committed.select(*TRANSACTION_KEY, "commit_scn"), list(TRANSACTION_KEY))
        .select(*TRANSACTION_KEY, "commit_scn", "message_number", "ddl_text")
        .collect()  # the DDL LCRs of the re-executed error transactions: a few
    )
    return {
        (str(r.source_database_name), str(r.transaction_id)): _DdlFailure(
            str(r.source_database_name),
            str(r.transaction_id),
            int(r.commit_scn),
            int(r.message_number),
            UNIMPLEMENTED,
            f"ORA-03001: unimplemented feature: EXECUTE_ERROR does not re-execute DDL "
            f"({r.ddl_text}); apply it to the destination, then DELETE_ERROR",
        )
        for r in rows
    }
