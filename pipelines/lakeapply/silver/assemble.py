"""Steps 2-3 of a cycle: assemble transactions, route, identify keys and convert.

* Read the planned bronze batches and the spill (open and deferred transactions) and assemble
  transactions (rule 1, ``silver/transactions.py``); copies of an LCR are one LCR (rule 11).
* Late and out-of-order input (rule 11, ``silver/late.py``): LCRs of transactions processed
  before, COMMITs below the low watermark, ROLLBACKs of applied transactions.
* DDL barriers (rule 10, ``silver/ddl_apply.py``): the cycle is cut before a DDL transaction.
* Route the committed row LCRs (rules 2-3: positive and negative rules, subset rules, rule and
  table transformations, ``routed_row_lcrs``) and number them in apply order (rule 4).
* DML handlers (``silver/dml_handlers.py``) replace the LCRs they handle with what they return.
* Stage each row LCR (``silver/stage.py``: instantiation-SCN discard, keys, conversion, static
  errors) and join it with the destination rows it addresses (``fold_input``), the input of the
  fold passes (``silver/fold_passes.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeapply.bronze.tables import LCR_TABLE
from lakeapply.contract.identifiers import quote
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.concurrency import side_by_side
from lakeapply.silver import dictionary
from lakeapply.silver.components import STATIC_GROUP, key_components
from lakeapply.silver.cycle_state import (
    ARRIVED,
    SEEN_KEY,
    Cycle,
    CycleInput,
    CyclePlan,
    apply_rows,
    materialize,
)
from lakeapply.silver.ddl_apply import ddl_barrier
from lakeapply.silver.dml_handlers import HANDLER_ERROR, HANDLER_SEQUENCE, run_dml_handlers
from lakeapply.silver.keys import (
    KeyBounds,
    key_bounds,
    null_safe_key_match,
    spark_text,
    typed_key_columns,
)
from lakeapply.silver.late import (
    ROLLED_BACK_FLAG,
    LateInput,
    find_late_input,
    processed_before,
    rolled_back_before,
    without_redelivered_copies,
)
from lakeapply.silver.plan import previous_progress
from lakeapply.silver.rules import apply_rule_actions, passes_rules, routing_frame
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.silver.stage import stage_lcrs
from lakeapply.silver.transactions import TRANSACTION_KEY, assemble_transactions, without_copies
from lakeapply.silver.transformations import transform_row_lcrs

FOLD_ROWS_PER_BUCKET = 20_000
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


def routed_row_lcrs(
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
            F.broadcast(routing_frame(spark, settings)),
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


def with_group_ids(staged: DataFrame) -> DataFrame:
    """The staged LCRs with their fold group: one key, or one component of keys linked by
    key-changing updates (keyless LCRs: the static group)."""
    links = staged.where(F.col("moved_key_text").isNotNull()).select(
        "silver_table", "key_text", "moved_key_text"
    )
    if links.limit(1).count() == 0:
        return staged.withColumn("group_id", F.coalesce("key_text", F.lit(STATIC_GROUP)))
    components = key_components(links)
    return (
        staged.join(components, ["silver_table", "key_text"], "left")
        .withColumn("group_id", F.coalesce("component", "key_text", F.lit(STATIC_GROUP)))
        .drop("component")
    )


def unhandled_staged(settings: ApplySettings, messages: DataFrame) -> DataFrame:
    """The messages staged as if no DML handler ran: what dependencies are computed from
    (Oracle computes them before the handlers)."""
    executed = messages.select(
        *STAGE_INPUT_COLUMNS,
        "old_values",
        "new_values",
        F.lit(None).cast("string").alias(HANDLER_ERROR),
        F.lit(0).alias(HANDLER_SEQUENCE),
    )
    return stage_messages(settings, executed)


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
    lcr_part = with_group_ids(staged)
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
    reads = [
        functools.partial(
            _current_rows,
            spark,
            catalog,
            table,
            plan.table_versions[table.silver_table],
            keys,
            bounds,
        )
        for table in tables
        if table.silver_table in bounds  # no change addresses a table: it is not read at all
    ]
    # Several tables: each read runs on its own, a few side by side, so one table's planning
    # (Delta's file filtering jobs, the driver's work) overlaps another's scan.
    current_parts = (
        side_by_side([functools.partial(_materialized, read) for read in reads])
        if len(reads) > 1
        else [read() for read in reads]
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
        HANDLER_SEQUENCE,
    )
    fold_input = lcr_rows.unionByName(
        current.select(F.lit("ROW").alias("kind"), "*"), allowMissingColumns=True
    )
    return fold_input, bounds


def _materialized(read: Callable[[], DataFrame]) -> DataFrame:
    return materialize(read())


def _current_rows(
    spark: SparkSession,
    catalog: Catalog,
    table: DestinationTable,
    version: int,
    keys: DataFrame,
    bounds: dict[str, KeyBounds],
) -> DataFrame:
    """The rows of one destination table, at the planned version, that the cycle's keys
    address (the key range prunes the files read; the join picks the rows)."""
    name = catalog.silver_table(table.silver_table)
    destination = (
        spark.read.format("delta")
        .option("versionAsOf", version)
        .table(name)
        .alias("d")
        .where(bounds[table.silver_table].predicate(table, "d"))
    )
    wanted = keys.where(F.col("silver_table") == table.silver_table).select(
        "silver_table", "group_id", "key_text", *typed_key_columns(table, F.col("key_text"))
    )
    matched = wanted.alias("k").join(
        destination.alias("d"),
        F.expr(null_safe_key_match(table, "k", "d")),
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
    return matched.select(
        F.col("k.silver_table").alias("silver_table"),
        F.col("k.group_id").alias("group_id"),
        F.col("k.key_text").alias("key_text"),
        row_map.alias("row_json"),
    )


def read_and_stage(cycle: Cycle) -> CycleInput:
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
    # An apply process's first cycle has no earlier one: nothing redelivered, nothing late.
    first = plan.cycle_id == 1
    committed = transactions.where(F.col("state") == "COMMITTED")
    redelivered = None
    if not first:
        seen = processed_before_cycle(cycle)
        redelivered = materialize(committed.join(seen, list(SEEN_KEY), "left_semi"))
        committed = committed.join(seen, list(SEEN_KEY), "left_anti")
    committed, ddl, barrier, ignored_ddl = ddl_barrier(cycle, lcrs, committed)

    messages = routed_row_lcrs(lcrs, committed, settings, spark)
    messages, staged, fold_input, bounds, buckets = stage_row_lcrs(cycle, messages)
    previous = previous_progress(spark, catalog, settings, plan.cycle_id)
    late = None if first else _late_input(cycle, lcrs, transactions, staged, previous)
    return CycleInput(
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


def stage_row_lcrs(
    cycle: Cycle, messages: DataFrame
) -> tuple[DataFrame, DataFrame, DataFrame, dict[str, KeyBounds], int]:
    """Stage the messages and join them with the destination rows they address: the messages
    (materialized when handlers read them), the staged LCRs, the fold input, the key bounds of
    each table with changes and the fold's buckets."""
    settings = cycle.settings
    # DML handlers execute their LCRs in place of the ones they were given (rule 7); error
    # handlers get the messages of failing LCRs. Each handler and the unhandled rest read the
    # messages: computed once, not once per reader.
    if any(table.dml_handlers or table.error_handlers for table in settings.tables):
        messages = materialize(messages)
    executed = run_dml_handlers(
        messages, settings, (*STAGE_INPUT_COLUMNS, "old_values", "new_values")
    )
    staged = stage_messages(settings, executed)
    fold_input, bounds, buckets = fold_input_for(cycle, staged)
    cycle.progress("staged")
    return messages, staged, fold_input, bounds, buckets


def stage_messages(settings: ApplySettings, executed: DataFrame) -> DataFrame:
    """Each LCR to execute (``STAGE_INPUT_COLUMNS``, the value images, ``HANDLER_ERROR`` and
    ``HANDLER_SEQUENCE``) staged: instantiation-SCN discard, keys, conversion, static errors
    (``silver/stage.py``, materialized)."""
    # Only what the stage and the fold read is kept (not the raw line, not lineage); the value
    # arrays serve the stage's Spark path, their JSON text the Python one and the fold.
    to_stage = executed.select(
        *STAGE_INPUT_COLUMNS,
        HANDLER_ERROR,
        HANDLER_SEQUENCE,
        "old_values",
        "new_values",
        # A NULL column value is data ("value": null), not an absent field.
        F.to_json("old_values", {"ignoreNullFields": "false"}).alias("old_json"),
        F.to_json("new_values", {"ignoreNullFields": "false"}).alias("new_json"),
    )
    return stage_lcrs(settings, to_stage)


def fold_input_for(cycle: Cycle, staged: DataFrame) -> tuple[DataFrame, dict[str, KeyBounds], int]:
    """The staged LCRs joined with the destination rows they address (materialized), the key
    bounds of each table with changes and the fold's buckets."""
    spark = cycle.spark
    unmaterialized, bounds = _fold_input(spark, cycle.catalog, cycle.settings, staged, cycle.plan)
    fold_input = materialize(unmaterialized)
    # Each bucket is one pandas frame in a Python worker: enough buckets to bound its size.
    buckets = max(
        int(spark.conf.get("spark.sql.shuffle.partitions") or 4),
        -(-fold_input.count() // FOLD_ROWS_PER_BUCKET),
    )
    return fold_input, bounds, buckets


def processed_before_cycle(cycle: Cycle) -> DataFrame:
    """(source database, transaction id, commit SCN) of every transaction an earlier cycle
    processed (a resumed cycle must not see its own outcomes)."""
    return (
        apply_rows(cycle.spark, cycle.catalog, dictionary.TRANSACTIONS, cycle.apply_name)
        .where(F.col("cycle_id") < cycle.plan.cycle_id)
        .select(F.col("source_database").alias("source_database_name"), *SEEN_KEY[1:])
        .distinct()
    )


def _late_input(
    cycle: Cycle,
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
