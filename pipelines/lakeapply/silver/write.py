"""Step 5 of a cycle: write what the fold decided (rules 8 and 11).

* One MERGE per destination table with changes (``merge_destinations``), several at a time,
  each idempotent for the cycle and pruned to the cycle's key range; an append instead where
  every change inserts a key the table did not hold and the table is still at the version the
  cycle read it at.
* Transaction outcomes and the error queue (DBA_APPLY_ERROR, DBA_APPLY_ERROR_MESSAGES; only
  when there are errors), the late LCRs reported as errors (``record_outcomes``).
* The spill: open transactions and those deferred by a cut or held back, rewritten only when
  its content changes (``write_spill``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.tables import lcr_table_schema
from lakeapply.contract.identifiers import quote
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.assemble import routed_row_lcrs
from lakeapply.silver.cycle_state import (
    ARRIVED,
    Cycle,
    CycleInput,
    FoldOutcome,
    SimulatedApplyCrash,
    append_rows,
    at_or_before,
    is_one_of,
    latest_version,
    materialize,
)
from lakeapply.silver.keys import KeyBounds, null_safe_key_match, typed_value
from lakeapply.silver.late import late_lcr_errors
from lakeapply.silver.plan import ensure_error_tables
from lakeapply.silver.rules import passes_rules
from lakeapply.silver.settings import DestinationTable
from lakeapply.silver.transactions import TRANSACTION_KEY

MERGE_THREADS = 4  # concurrent MERGEs (one per destination table) in a cycle


def merge_destinations(
    cycle: Cycle, final_rows: DataFrame, bounds: dict[str, KeyBounds]
) -> tuple[dict[str, int], int]:
    """Step 5a: one write per destination table with changes, idempotent per cycle; the Delta
    version of every destination table after the cycle, and how many were written.

    A table whose changes all insert keys it did not hold when the cycle read it gets a plain
    append, provided it is still at the version the cycle read (``plan.table_versions``): then
    no row can match, and the MERGE's scan for matches and its snapshot statistics (~9 Spark
    jobs a table) are saved. Any other table, or one written since (a resumed cycle whose
    append already landed, another writer), is MERGEd. Both use the same transaction id, so
    a resumed cycle skips the table either way; under the warehouse lease the append goes
    without it (``_append_inserts``)."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    inserts_only = {
        r.silver_table: bool(r.inserts_only)
        for r in final_rows.groupBy("silver_table")
        .agg(F.bool_and(F.col("action") == "INSERT").alias("inserts_only"))
        .collect()
    }
    versions_after = dict(plan.table_versions)
    sole_writer = cycle.sole_writer
    to_merge = [
        table
        for table in {t.silver_table: t for t in settings.tables}.values()
        if table.silver_table in inserts_only
    ]

    def merge(table: DestinationTable) -> tuple[str, int]:
        # Its own session: the idempotence confs (txnAppId/txnVersion) are per session, so
        # tables merge concurrently, each MERGE still idempotent per cycle.
        session = spark.newSession()
        name = catalog.silver_table(table.silver_table)
        app_id = f"{cycle.app}:{table.silver_table}"
        source = _source_rows(table, final_rows)
        if (
            inserts_only[table.silver_table]
            and latest_version(session, name) == plan.table_versions[table.silver_table]
        ):
            _append_inserts(name, source, None if sole_writer else app_id, plan.cycle_id)
        else:
            _merge_table(
                session, name, table, source, bounds[table.silver_table], app_id, plan.cycle_id
            )
        return table.silver_table, latest_version(session, name)

    if cycle.crash_after == "first_merge" and to_merge:
        merge(to_merge[0])
        raise SimulatedApplyCrash("after the first MERGE")
    with ThreadPoolExecutor(max_workers=MERGE_THREADS) as pool:
        versions_after.update(pool.map(merge, to_merge))
    cycle.crash_point("merges", "after the MERGEs")
    cycle.progress("merged")
    return versions_after, len(to_merge)


def held_frame(cycle: Cycle, fold: FoldOutcome) -> DataFrame:
    return cycle.spark.createDataFrame(
        [(db, txn, scn) for (db, txn), scn in sorted(fold.held.items())],
        "source_database_name string, transaction_id string, held_scn long",
    )


def record_outcomes(
    cycle: Cycle, inputs: CycleInput, fold: FoldOutcome, now: datetime
) -> tuple[DataFrame, dict[str, int]]:
    """Step 5b: the outcome of every processed transaction (APPLIED, DISCARDED, ERROR) and the
    error queue; returns the processed transactions, and per source database the error
    transactions made of late LCRs (queued, but no transaction of this cycle)."""
    plan = cycle.plan
    processed = _processed_transactions(cycle, inputs, fold)
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
    append_rows(
        transactions_rows,
        cycle.catalog.apply_table(dictionary.TRANSACTIONS),
        dictionary.TRANSACTIONS_SCHEMA,
        f"{cycle.app}:transactions",
        plan.cycle_id,
    )
    late_errors = _queue_errors(cycle, inputs, fold, processed, now)
    return processed, late_errors


def _processed_transactions(cycle: Cycle, inputs: CycleInput, fold: FoldOutcome) -> DataFrame:
    """The transactions this cycle processed (up to a cut, without the held-back ones), each
    with its outcome: ERROR, the DDL's outcome, IGNORED, DISCARDED or APPLIED."""
    spark, settings = cycle.spark, cycle.settings
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
    if any(table.dml_handlers or table.error_handlers for table in settings.tables):
        # An LCR a DML or error handler left out was not staged, but it is a message of its
        # transaction (and was not discarded): count the messages as routed.
        # (materialized: the messages share their lineage with ``committed``, joined below)
        message_counts = message_counts.drop("message_count").join(
            materialize(
                inputs.messages.groupBy("source_database_name", "transaction_id").agg(
                    F.count(F.lit(1)).alias("message_count")
                )
            ),
            ["source_database_name", "transaction_id"],
            "right",
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
        .where(at_or_before(fold.cut))
        .join(held_frame(cycle, fold), list(TRANSACTION_KEY), "left_anti")
        .select(
            "*",
            F.when(F.col("error_number").isNotNull(), F.lit("ERROR"))
            .when(F.lit(fold.ddl_outcome is not None), F.lit(fold.ddl_outcome))
            .when(
                is_one_of(inputs.ignored_ddl) & (F.coalesce("message_count", F.lit(0)) == 0),
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
    return materialize(processed)


def _queue_errors(
    cycle: Cycle, inputs: CycleInput, fold: FoldOutcome, processed: DataFrame, now: datetime
) -> dict[str, int]:
    """The error queue (rule 8): the failed transactions and the late LCRs, each an error
    transaction; returns per source database the error transactions made of late LCRs."""
    plan = cycle.plan
    error_rows = (
        processed.where(F.col("outcome") == "ERROR")
        .withColumn("message_count", F.coalesce("message_count", "ddl_count"))
        .select(*ERROR_ROW_COLUMNS)
    )
    # Only the failed transactions' messages: a predicate on the transaction id, which Spark
    # pushes below the routing's windows to the bronze scan, so the cycle's other LCRs are not
    # routed again (~4 s at 100k LCRs with 1% error transactions; a semi join stays above the
    # windows). The source database is matched by the join with the error rows (append_errors):
    # a second literal set cost ~1.2 s per 1,700 failures to build.
    messages = inputs.messages.where(
        F.col("transaction_id").isin(*sorted({txn for _, txn in fold.failed}))
    )
    late_lcrs = late_lcr_messages(cycle, inputs)
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
        ensure_error_tables(cycle.spark, cycle.catalog)
        append_errors(
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
    return late_errors


ERROR_ROW_COLUMNS = (
    "source_database_name",
    "transaction_id",
    "commit_scn",
    "failing_message",
    "error_number",
    "error_message",
    "message_count",
)


def late_lcr_messages(cycle: Cycle, inputs: CycleInput) -> DataFrame | None:
    """The messages (D2) of late LCRs, numbered as a transaction's, with the commit SCN and
    cycle of the transaction they came late for; None when there are none."""
    if inputs.late is None:
        return None
    late = inputs.late.late_lcr_transactions
    if late.limit(1).count() == 0:
        return None
    lcrs = inputs.late.late_lcrs if inputs.late.late_lcrs is not None else inputs.lcrs
    messages = routed_row_lcrs(lcrs, late, cycle.settings, cycle.spark).join(
        late.select(*TRANSACTION_KEY, "applied_cycle"), list(TRANSACTION_KEY)
    )
    return materialize(messages) if messages.limit(1).count() else None


# Kept (open or deferred) transactions up to this many are sent whole to every task that
# reads the cycle's LCRs (two short strings each: a few MB).
BROADCAST_KEPT_TRANSACTIONS = 200_000


def write_spill(cycle: Cycle, inputs: CycleInput, processed: DataFrame) -> DataFrame:
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
    kept = keep.count()
    if kept <= BROADCAST_KEPT_TRANSACTIONS:
        # The planner cannot size a checkpoint: without the hint the cycle's LCRs (every
        # column) are shuffled to meet a few kept transactions (1M LCRs, 4k kept: 4-6 s -> 1.6-1.9 s).
        keep = F.broadcast(keep)
    if _spill_changes(inputs.lcrs, keep, kept, cycle.plan.spill_rows):
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


def _spill_changes(
    lcrs: DataFrame, keep: DataFrame, kept_transactions: int, spill_rows: int | None
) -> bool:
    """Whether the new spill (the LCRs of ``keep``'s transactions) differs from the spill read
    at the plan's version (the LCRs that did not arrive this cycle): it does when an arrived
    LCR is kept or a spilled one is not. Unchanged (the usual case once every transaction has
    committed, with an empty spill before and after), it is not rewritten: a commit and a
    full write saved. Decided from the plan's inputs alone, so a resumed cycle decides the
    same.

    With an empty spill before (``spill_rows`` 0, every apply process's) every LCR arrived
    this cycle, so the spill changes exactly when a transaction is kept: known without joining
    the cycle's LCRs (~0.5 s of a small cycle). A resumed plan does not know the spill's rows
    and joins: the same answer."""
    if spill_rows == 0:
        return kept_transactions > 0
    kept = keep.select(*TRANSACTION_KEY).distinct().withColumn("__kept", F.lit(True))
    differing = (
        lcrs.select(*TRANSACTION_KEY, ARRIVED)
        .join(kept, list(TRANSACTION_KEY), "left")
        .where(F.col(ARRIVED) == F.col("__kept").isNotNull())
    )
    return differing.limit(1).count() > 0


def append_errors(
    catalog: Catalog,
    apply_name: str,
    app: str,
    cycle_id: int,
    now: datetime,
    messages: DataFrame,
    errors_rows: DataFrame,
) -> None:
    """DBA_APPLY_ERROR rows and, for each, every message of its transaction (D2)."""
    append_rows(
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
    append_rows(
        error_messages,
        catalog.apply_table(dictionary.ERROR_MESSAGES),
        dictionary.ERROR_MESSAGES_SCHEMA,
        f"{app}:error_messages",
        cycle_id,
    )


def _source_rows(table: DestinationTable, final_rows: DataFrame) -> DataFrame:
    """The cycle's final rows of one destination table, typed as its columns, with the
    fold's action (INSERT, UPSERT, DELETE) in ``__lakeapply_action``."""
    values = F.from_json(F.col("row_json"), "map<string,string>")
    return final_rows.where(F.col("silver_table") == table.silver_table).select(
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


def _append_inserts(name: str, source: DataFrame, app_id: str | None, cycle_id: int) -> None:
    """The rows of keys the table does not hold, appended; with ``app_id``, idempotent per
    cycle (the same transaction id as the MERGE's).

    Without it (``Cycle.sole_writer``) the append is still written once: it only runs while the
    table is at the version the cycle read, so a resumed cycle whose append landed MERGEs the
    same rows instead, and the warehouse lease keeps a second run of the cycle out. The
    transaction id costs each append a read of the table's whole log state (two Spark jobs,
    ~0.5 s: ``Snapshot.transactions``), the largest per-table cost of a cycle into many tables."""
    writer = source.drop("__lakeapply_action").writeTo(name)
    if app_id is not None:
        writer = writer.option("txnAppId", app_id).option("txnVersion", str(cycle_id))
    writer.append()


def _merge_table(
    spark: SparkSession,
    name: str,
    table: DestinationTable,
    source: DataFrame,
    bounds: KeyBounds,
    app_id: str,
    cycle_id: int,
) -> None:
    """One MERGE of the cycle's final rows (``_source_rows``) into one destination table,
    idempotent per cycle.

    The key bounds are a target-only predicate of the merge condition: Delta prunes the files
    the MERGE scans for matches with it."""
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
                F.expr(null_safe_key_match(table, "t", "s")) & bounds.predicate(table, "t"),
            )
            .whenMatchedDelete(condition="s.__lakeapply_action = 'DELETE'")
            .whenMatchedUpdate(set=columns)
            .whenNotMatchedInsert(condition="s.__lakeapply_action <> 'DELETE'", values=columns)
            .execute()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")
