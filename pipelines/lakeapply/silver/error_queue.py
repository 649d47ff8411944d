"""The error queue's re-execution steps: EXECUTE_ERROR and EXECUTE_ALL_ERRORS (rule 8).

An EXECUTE_ERROR cycle (``silver/engine.py`` ``execute_cycle``) reads the queued transactions'
LCRs from the error queue at the planned versions instead of bronze
(``read_error_transactions``), folds them against the current destination rows under the same
rules, and records each outcome (``record_executions``): success removes the transaction from the
queue, failure keeps it with its new error. A queued DDL transaction is re-executed alone in its
cycle (``next_execution``), by the DDL step of a bronze cycle (``silver/ddl_apply.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import sql_string_literal
from lakeapply.errors import ApplyError
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.assemble import stage_row_lcrs
from lakeapply.silver.cycle_state import (
    Cycle,
    CycleInput,
    FoldOutcome,
    at_or_before,
    error_rows,
    materialize,
)
from lakeapply.silver.rules import routing_frame


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


def queued_in_commit_order(
    spark: SparkSession, catalog: Catalog, apply_name: str, wanted: list[str] | None
) -> list[str]:
    """Local transaction ids of the error queue (all, or those of ``wanted`` that are there),
    in commit-SCN order."""
    queue = error_rows(spark, catalog, dictionary.ERROR_QUEUE, apply_name)
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


def queued_ddl_transactions(
    spark: SparkSession, catalog: Catalog, apply_name: str, wanted: list[str]
) -> frozenset[str]:
    """Local transaction ids of the ``wanted`` error transactions that are DDL transactions."""
    if not wanted:
        return frozenset()
    rows = (
        error_rows(spark, catalog, dictionary.ERROR_MESSAGES, apply_name)
        .where((F.col("lcr_kind") == "DDL") & F.col("local_transaction_id").isin(*wanted))
        .select("local_transaction_id")
        .distinct()
        .collect()
    )
    return frozenset(str(row.local_transaction_id) for row in rows)


def next_execution(wanted: list[str], ddl: frozenset[str]) -> list[str]:
    """The error transactions (in commit-SCN order) the next EXECUTE_ERROR cycle re-executes: a
    DDL transaction alone, as in a bronze cycle (rule 9: a barrier), else every one before the
    next DDL transaction."""
    if wanted[0] in ddl:
        return wanted[:1]
    return wanted[: next((i for i, t in enumerate(wanted) if t in ddl), len(wanted))]


def executes_ddl(cycle: Cycle, inputs: CycleInput) -> bool:
    """True when the cycle re-executes a DDL transaction (then it is the cycle's only one:
    :func:`next_execution`)."""
    if len(cycle.plan.execute_errors) != 1:
        return False
    return not inputs.lcrs.where(F.col("lcr_kind") == "DDL").isEmpty()


def unknown_errors(apply_name: str, unknown: list[str]) -> ApplyError:
    return ApplyError(
        f"apply process {apply_name} has no error transaction "
        f"{', '.join(unknown)} in its error queue (see DBA_APPLY_ERROR.LOCAL_TRANSACTION_ID)"
    )


def _error_table_at(cycle: Cycle, name: str) -> DataFrame:
    return (
        cycle.spark.read.format("delta")
        .option("versionAsOf", cycle.plan.error_queue_versions[name])
        .table(cycle.catalog.apply_table(name))
        .where(
            (F.col("apply_name") == cycle.apply_name)
            & F.col("local_transaction_id").isin(*cycle.plan.execute_errors)
        )
    )


def read_error_transactions(cycle: Cycle) -> CycleInput:
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
            F.broadcast(routing_frame(cycle.spark, cycle.settings)),
            ["source_database_name", "object_owner", "object_name"],
        )
        .join(
            committed.select("source_database_name", "transaction_id", "commit_scn"),
            ["source_database_name", "transaction_id"],
        )
    )
    messages, staged, fold_input, bounds, buckets = stage_row_lcrs(cycle, messages)
    return CycleInput(stored, committed, committed, messages, staged, fold_input, bounds, buckets)


def record_executions(
    cycle: Cycle, inputs: CycleInput, fold: FoldOutcome, now: datetime
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
        .where(at_or_before(fold.cut))
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
