"""Late and out-of-order input is reported, never silently lost (silver/late.py): LCRs that land
after their transaction's COMMIT was processed (ORA-20001), and a COMMIT that lands after the
low watermark passed its commit SCN (ORA-20002), go to the error queue."""

from __future__ import annotations

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

DB = "WM.DB"
T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


def configured(lakeapply: LakeapplyHarness, disable_on_error: bool) -> LakeapplyHarness:
    lakeapply.configure(
        apply_settings(
            destination(T, source=DB, instantiation_scn=100), disable_on_error=disable_on_error
        )
    )
    return lakeapply


def assert_silver_keys(lakeapply: LakeapplyHarness, *keys: int) -> None:
    assert_df_equality(
        lakeapply.silver("HR.T"),
        lakeapply.expected("HR.T", [(key, "x") for key in keys]),
        ignore_row_order=True,
    )


def assert_queued(lakeapply: LakeapplyHarness, *errors: tuple[str, int, int]) -> None:
    """(source transaction id, source commit SCN, error number) of every error transaction."""
    assert_df_equality(
        lakeapply.error_queue().select(
            "source_transaction_id", "source_commit_scn", "error_number"
        ),
        lakeapply.spark.createDataFrame(
            list(errors),
            "source_transaction_id string, source_commit_scn long, error_number long",
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def error_message(lakeapply: LakeapplyHarness) -> str:
    [error] = lakeapply.error_queue().select("error_message").collect()
    return str(error.error_message)


def test_lcrs_landing_after_their_commit_was_processed_are_queued_as_late_lcrs(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=False)
    # The COMMIT lands with the first insert only: the transaction applies without the rest.
    apply.run(
        apply.txn(scn=500, transaction_id="5.0.1").insert("HR.T", ID=1, V="x").commit(scn=510)
    )

    apply.run(
        apply.txn(scn=501, transaction_id="5.0.1")
        .insert("HR.T", ID=2, V="x")
        .insert("HR.T", ID=3, V="x")
        .open()
    )

    assert_silver_keys(apply, 1)
    assert_queued(apply, ("5.0.1", 510, 20001))
    assert error_message(apply).startswith(
        f"ORA-20001: late LCRs: 2 LCR(s) of transaction 5.0.1 from {DB} arrived after its "
        "COMMIT was processed (commit SCN 510, apply cycle 1)"
    )
    assert_df_equality(
        apply.error_messages().select("message_number", "scn"),
        apply.spark.createDataFrame([(1, 501), (2, 502)], "message_number long, scn long"),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    # Out of the spill (no oldest SCN held back forever), counted as an error transaction.
    assert_df_equality(
        apply.latest_progress().select("oldest_scn", "total_errors", "low_watermark"),
        apply.spark.createDataFrame(
            [(None, 1, 510)], "oldest_scn long, total_errors long, low_watermark long"
        ),
        ignore_nullable=True,
    )
    assert apply.spill().count() == 0


def test_lcrs_landing_after_their_transactions_rollback_was_processed_leave_the_spill(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=False)
    apply.run(
        apply.txn(scn=600, transaction_id="6.0.1").insert("HR.T", ID=1, V="x").rollback(scn=610),
        apply.txn(scn=605, transaction_id="6.0.2").insert("HR.T", ID=2, V="x").commit(scn=620),
    )

    # the capture sends more of 6.0.1 after its ROLLBACK was processed
    apply.run(apply.txn(scn=601, transaction_id="6.0.1").insert("HR.T", ID=3, V="x").open())

    assert_silver_keys(apply, 2)
    assert_queued(apply)
    assert apply.spill().count() == 0
    assert_df_equality(
        apply.latest_progress().select("oldest_scn", "total_rolled_back", "low_watermark"),
        apply.spark.createDataFrame(
            [(None, 1, 620)], "oldest_scn long, total_rolled_back long, low_watermark long"
        ),
        ignore_nullable=True,
    )


def late_commit_workload(lakeapply: LakeapplyHarness) -> None:
    """8.0.1 (commit 820) is applied; then 8.0.2, committed at 810 before it, lands together
    with 8.0.3 (commit 840)."""
    lakeapply.run(
        lakeapply.txn(scn=800, transaction_id="8.0.1").insert("HR.T", ID=1, V="x").commit(scn=820)
    )
    lakeapply.run(
        lakeapply.txn(scn=805, transaction_id="8.0.2").insert("HR.T", ID=2, V="x").commit(scn=810),
        lakeapply.txn(scn=830, transaction_id="8.0.3").insert("HR.T", ID=3, V="x").commit(scn=840),
    )


def test_a_commit_landing_below_the_low_watermark_is_queued_not_applied_out_of_order(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=False)

    late_commit_workload(apply)

    assert_silver_keys(apply, 1, 3)
    assert_queued(apply, ("8.0.2", 810, 20002))
    assert error_message(apply).startswith(
        f"ORA-20002: late COMMIT: transaction 8.0.2 from {DB} committed at SCN 810, below the "
        "low watermark 820 the apply had already passed; not applied"
    )
    [progress] = apply.latest_progress().collect()
    assert progress.low_watermark == 840


def test_a_late_commit_stops_an_apply_that_disables_on_error(lakeapply: LakeapplyHarness) -> None:
    apply = configured(lakeapply, disable_on_error=True)

    late_commit_workload(apply)

    assert apply.apply_status() == "ABORTED"
    assert_queued(apply, ("8.0.2", 810, 20002))
    assert_silver_keys(apply, 1)  # 8.0.3 waits for START_APPLY


def test_redelivered_copies_of_processed_lcrs_change_nothing_and_only_unseen_ones_are_late(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply, disable_on_error=False)
    resent = (
        apply.txn(scn=600, transaction_id="6.0.1")
        .insert("HR.T", ID=1, V="x")
        .insert("HR.T", ID=2, V="x")
        .commit(scn=610)
    )
    completed = (
        apply.txn(scn=700, transaction_id="7.0.1").insert("HR.T", ID=3, V="x").commit(scn=710)
    )
    apply.run(resent, completed)
    *changes, commit = resent.lcrs

    # A restarted capture sends 6.0.1's LCRs again, their COMMIT in a later batch; and a copy of
    # 7.0.1's insert with one LCR of it the apply never saw, without a COMMIT.
    missed = apply.txn(scn=705, transaction_id="7.0.1").insert("HR.T", ID=4, V="x").open()
    apply.run(*changes, completed.lcrs[0], missed)
    apply.run(commit)

    assert_silver_keys(apply, 1, 2, 3)
    assert_queued(apply, ("7.0.1", 710, 20001))
    assert error_message(apply).startswith("ORA-20001: late LCRs: 1 LCR(s) of transaction 7.0.1")
    assert apply.spill().count() == 0
    assert_df_equality(
        apply.latest_progress().select("oldest_scn", "total_ignored", "low_watermark"),
        apply.spark.createDataFrame(
            [(None, 1, 710)], "oldest_scn long, total_ignored long, low_watermark long"
        ),
        ignore_nullable=True,
    )
