"""Rule 9: a transaction moved to the error queue is processed, in both ``disable_on_error`` modes.

The low watermark passes it (a restart never runs it again, only EXECUTE_ERROR does); the oldest
SCN is the first SCN of the earliest transaction not yet processed. Issue 16 item 7: measured
with Y, everything up to SCN 1146 applied, the error transaction committed at 1162, and the
progress said 1146.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame

from lakeapply.errors import ApplyAbortedError
from lakeapply.silver.cycle_state import ABORT_STATUS_CRASH_POINT, SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle
from lakeapply.testing import LakeapplyHarness, Transaction, apply_settings, table_definition

T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


def configured(lakeapply: LakeapplyHarness, disable_on_error: bool) -> LakeapplyHarness:
    lakeapply.configure(apply_settings(T, disable_on_error=disable_on_error))
    return lakeapply


def workload(lakeapply: LakeapplyHarness) -> list[Transaction]:
    """1.0.1 inserts 1 (commit 1146); 1.0.2 deletes 2, which does not exist (ORA-26787, commit
    1162); 1.0.3 inserts 3 (first SCN 1150, commit 1170); 1.0.4 is still open (first SCN 1155)."""
    return [
        lakeapply.txn(scn=1140, transaction_id="1.0.1")
        .insert("HR.T", ID=1, V="x")
        .commit(scn=1146),
        lakeapply.txn(scn=1150, transaction_id="1.0.3")
        .insert("HR.T", ID=3, V="x")
        .commit(scn=1170),
        lakeapply.txn(scn=1155, transaction_id="1.0.4").insert("HR.T", ID=4, V="x").open(),
        lakeapply.txn(scn=1160, transaction_id="1.0.2")
        .delete("HR.T", ID=2, V="x")
        .commit(scn=1162),
    ]


def watermarks(lakeapply: LakeapplyHarness) -> DataFrame:
    return lakeapply.latest_progress().select(
        "low_watermark", "high_watermark", "oldest_scn", "oldest_transaction_id"
    )


def queued(lakeapply: LakeapplyHarness) -> list[tuple[str, int]]:
    rows = lakeapply.error_queue().select("source_transaction_id", "error_number").collect()
    return [(row.source_transaction_id, row.error_number) for row in rows]


def silver_keys(lakeapply: LakeapplyHarness) -> list[int]:
    return sorted(int(row.ID) for row in lakeapply.silver("HR.T").collect())


def expected_watermarks(
    lakeapply: LakeapplyHarness, low: int, high: int, oldest: int | None, oldest_id: str | None
) -> DataFrame:
    return lakeapply.spark.createDataFrame(
        [(low, high, oldest, oldest_id)],
        "low_watermark long, high_watermark long, oldest_scn long, oldest_transaction_id string",
    )


def test_with_y_the_aborting_error_transaction_is_below_the_low_watermark(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=True)

    apply.run(*workload(apply))

    assert queued(apply) == [("1.0.2", 26787)]
    assert apply.apply_status() == "ABORTED"
    # Aborted at 1.0.2: it is in the queue and below the low watermark; 1.0.3 is not processed,
    # so it and the open 1.0.4 hold the oldest SCN (1.0.3's first SCN, 1150).
    assert_df_equality(
        watermarks(apply),
        expected_watermarks(apply, 1162, 1162, 1150, "1.0.3"),
        ignore_nullable=True,
    )


def test_with_n_the_error_transaction_is_passed_and_the_open_one_is_the_oldest(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=False)

    apply.run(*workload(apply))

    assert queued(apply) == [("1.0.2", 26787)]
    assert_df_equality(
        watermarks(apply),
        expected_watermarks(apply, 1170, 1170, 1155, "1.0.4"),
        ignore_nullable=True,
    )


def test_after_start_apply_the_error_transaction_is_not_run_again(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=True)
    apply.run(*workload(apply))

    apply.start_apply()
    apply.apply()

    assert len(queued(apply)) == 1  # not re-run, not queued twice
    [progress] = apply.latest_progress().collect()
    assert (progress.low_watermark, progress.oldest_scn, progress.total_errors) == (1170, 1155, 1)
    assert silver_keys(apply) == [1, 3]


@pytest.mark.parametrize("disable_on_error", [True, False], ids=["Y", "N"])
def test_a_cycle_whose_only_transaction_is_an_error_keeps_a_low_watermark(
    lakeapply: LakeapplyHarness, disable_on_error: bool
) -> None:
    apply = configured(lakeapply, disable_on_error)
    apply.run(
        apply.txn(scn=200, transaction_id="2.0.1").insert("HR.T", ID=1, V="x").commit(scn=201)
    )

    apply.run(
        apply.txn(scn=210, transaction_id="2.0.2").delete("HR.T", ID=9, V="x").commit(scn=211)
    )

    [progress] = apply.latest_progress().collect()
    assert (progress.low_watermark, progress.oldest_scn) == (211, None)


def test_a_crash_between_the_cycle_commit_and_the_abort_status_still_aborts_once(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=True)
    apply.land(*workload(apply))
    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(
            apply.spark, apply.catalog, apply.apply_process, crash_after=ABORT_STATUS_CRASH_POINT
        )

    with pytest.raises(ApplyAbortedError):  # the next start records the abort it missed
        apply.apply()
    assert apply.apply_status() == "ABORTED"
    apply.start_apply()  # one START_APPLY for one error transaction
    apply.apply()

    assert apply.apply_status() == "ENABLED"
    assert len(queued(apply)) == 1
    assert silver_keys(apply) == [1, 3]
