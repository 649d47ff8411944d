"""Step 6 of a cycle: progress (rule 9) and the cycle's commit.

``record_progress`` writes one progress row per source database: the low watermark (every
transaction at or below it is processed: applied, ignored, rolled back or moved to the error
queue), the high watermark (nothing above it applied), the oldest SCN still needed (the first
SCN of the earliest transaction not processed yet) and the counters (TOTAL_RECEIVED,
TOTAL_APPLIED, TOTAL_IGNORED (redelivered transactions), TOTAL_ROLLBACKS, TOTAL_ERRORS). This is
the one low-watermark computation; the gold views read its result. ``commit_cycle`` appends the
COMMITTED cycle row last: until it lands, the cycle is re-run from its plan.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeapply.silver import dictionary
from lakeapply.silver.assemble import processed_before_cycle
from lakeapply.silver.cycle_state import (
    ARRIVED,
    SEEN_KEY,
    Cycle,
    CycleInput,
    FoldOutcome,
    append_rows,
    parse_time,
)
from lakeapply.silver.transactions import TRANSACTION_KEY
from lakeapply.silver.write import held_frame


def record_progress(
    cycle: Cycle,
    inputs: CycleInput,
    processed: DataFrame,
    keep: DataFrame,
    fold: FoldOutcome,
    versions_after: dict[str, int],
    now: datetime,
    late_errors: dict[str, int] | None = None,
) -> tuple[dict[str, int], dict[str, int | None]]:
    """Step 5d (rule 9): a progress row per source database, with the watermarks, the oldest
    SCN and the counters; returns the cycle's counters and low watermarks."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    previous = inputs.previous
    rows = _cycle_figures_per_source(cycle, inputs, processed, keep, fold)
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
    append_rows(
        spark.createDataFrame(progress_rows, dictionary.PROGRESS_SCHEMA),
        catalog.apply_table(dictionary.PROGRESS),
        dictionary.PROGRESS_SCHEMA,
        f"{cycle.app}:progress",
        plan.cycle_id,
    )
    cycle.crash_point("progress", "after progress")
    return totals, watermarks


def _cycle_figures_per_source(
    cycle: Cycle, inputs: CycleInput, processed: DataFrame, keep: DataFrame, fold: FoldOutcome
) -> dict[str, Any]:
    """What this cycle did per source database, in one collect: the watermark candidates and
    outcome counts of its processed transactions, the LCRs and ROLLBACKs received, the
    redelivered transactions ignored, and the earliest transaction not yet processed."""
    # DEPENDENT_TRANSACTIONS: the low watermark stops before the first held transaction (no
    # gap below it); the high watermark is the highest commit SCN applied.
    first_held = (
        held_frame(cycle, fold)
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
    return {
        r.source_database_name: r
        for r in counted.join(received, "source_database_name", "full")
        .join(_redeliveries(cycle, inputs), "source_database_name", "full")
        .join(oldest, "source_database_name", "full")
        .collect()
    }


def _record_rollbacks(cycle: Cycle, inputs: CycleInput) -> None:
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
    append_rows(
        rows,
        cycle.catalog.apply_table(dictionary.ROLLED_BACK),
        dictionary.ROLLED_BACK_SCHEMA,
        f"{cycle.app}:rolled_back",
        cycle.plan.cycle_id,
    )


def _redeliveries(cycle: Cycle, inputs: CycleInput) -> DataFrame:
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
        .unionByName(processed_before_cycle(cycle))
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
        parse_time(now_source.lwm_time)
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
        candidates.append((int(now_source.hwm), parse_time(now_source.hwm_time)))
    if before is not None and before.high_watermark is not None:
        candidates.append((int(before.high_watermark), before.high_watermark_time))
    if not candidates:
        return None, None
    return max(candidates, key=lambda c: c[0])


def commit_cycle(cycle: Cycle, versions_after: dict[str, int], now: datetime) -> None:
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
    append_rows(
        commit_row,
        cycle.catalog.apply_table(dictionary.CYCLES),
        dictionary.CYCLES_SCHEMA,
        f"{cycle.app}:commit",
        plan.cycle_id,
    )
