"""Late and out-of-order input is reported, never silently lost (silver/late.py): LCRs that land
after their transaction's COMMIT was processed (ORA-20001), and a COMMIT that lands after the
low watermark passed its commit SCN (ORA-20002), go to the error queue."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.engine import apply_status, run_apply
from tests.silver.bronze_fixture import land
from tests.silver.hand_lcrs import (
    DB,
    commit,
    error_queue,
    latest_progress,
    row,
    settings,
    start,
)


def silver_keys(spark: SparkSession, catalog: Catalog) -> list[int]:
    return sorted(r.ID for r in spark.table(catalog.silver_table("wm_t")).collect())


def test_lcrs_landing_after_their_commit_was_processed_are_queued_as_late_lcrs(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(False)
    start(spark, catalog, apply)
    # The COMMIT lands with the first insert only: the transaction applies without the rest.
    land(spark, catalog, [row("INSERT", "5.0.1", 500, 1), commit("5.0.1", 510)])
    run_apply(spark, catalog, apply)
    land(spark, catalog, [row("INSERT", "5.0.1", 501, 2), row("INSERT", "5.0.1", 502, 3)])

    run_apply(spark, catalog, apply)

    assert silver_keys(spark, catalog) == [1]
    [error] = error_queue(spark, catalog, apply)
    assert (error.source_transaction_id, error.source_commit_scn, error.error_number) == (
        "5.0.1",
        510,
        20001,
    )
    assert error.error_message.startswith(
        f"ORA-20001: late LCRs: 2 LCR(s) of transaction 5.0.1 from {DB} arrived after its "
        "COMMIT was processed (commit SCN 510, apply cycle 1)"
    )
    messages = (
        spark.table(catalog.apply_table(dictionary.ERROR_MESSAGES))
        .where(F.col("apply_name") == apply.apply_name)
        .orderBy("message_number")
        .select("message_number", "scn")
        .collect()
    )
    assert [(m.message_number, m.scn) for m in messages] == [(1, 501), (2, 502)]
    progress = latest_progress(spark, catalog, apply)
    # Out of the spill (no oldest SCN held back forever), counted as an error transaction.
    assert progress.oldest_scn is None
    assert progress.total_errors == 1
    assert progress.low_watermark == 510
    assert spark.table(catalog.apply_table(dictionary.SPILL)).count() == 0


def test_a_commit_landing_below_the_low_watermark_is_queued_not_applied_out_of_order(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(False)
    start(spark, catalog, apply)
    land(spark, catalog, [row("INSERT", "6.0.1", 600, 1), commit("6.0.1", 620)])
    run_apply(spark, catalog, apply)
    # 6.0.2 committed at 610, before 6.0.1, but lands after the apply passed 620.
    land(
        spark,
        catalog,
        [
            row("INSERT", "6.0.2", 605, 2),
            commit("6.0.2", 610),
            row("INSERT", "6.0.3", 630, 3),
            commit("6.0.3", 640),
        ],
    )

    run_apply(spark, catalog, apply)

    assert silver_keys(spark, catalog) == [1, 3]
    [error] = error_queue(spark, catalog, apply)
    assert (error.source_transaction_id, error.source_commit_scn, error.error_number) == (
        "6.0.2",
        610,
        20002,
    )
    assert error.error_message.startswith(
        f"ORA-20002: late COMMIT: transaction 6.0.2 from {DB} committed at SCN 610, below the "
        "low watermark 620 the apply had already passed; not applied"
    )
    assert latest_progress(spark, catalog, apply).low_watermark == 640


def test_a_late_commit_stops_an_apply_that_disables_on_error(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(True)
    start(spark, catalog, apply)
    land(spark, catalog, [row("INSERT", "7.0.1", 700, 1), commit("7.0.1", 720)])
    run_apply(spark, catalog, apply)
    land(
        spark,
        catalog,
        [
            row("INSERT", "7.0.2", 705, 2),
            commit("7.0.2", 710),
            row("INSERT", "7.0.3", 730, 3),
            commit("7.0.3", 740),
        ],
    )

    run_apply(spark, catalog, apply)

    assert apply_status(spark, catalog, apply.apply_name) == "ABORTED"
    assert [e.error_number for e in error_queue(spark, catalog, apply)] == [20002]
    assert silver_keys(spark, catalog) == [1]  # 7.0.3 waits for START_APPLY
