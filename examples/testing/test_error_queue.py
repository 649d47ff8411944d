"""An error transaction: a DELETE of a row that does not exist fails (ORA-26787), its whole
transaction goes to the error queue (DBA_APPLY_ERROR), and with ``disable_on_error=N`` the apply
carries on with the transactions after it. Then the operator's loop: fix the cause, re-execute
the queued transaction (DBMS_APPLY_ADM.EXECUTE_ERROR, ``lakeapply admin execute-error``), and the
queue is empty.
"""

from __future__ import annotations

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(10,2)"}, primary_key=["ID"]
)


def test_a_failing_transaction_waits_in_the_error_queue_and_the_rest_applies(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))

    lakeapply.run(
        lakeapply.txn(transaction_id="7.1.100").insert("BANK.ACCOUNT", ID=1, BALANCE=100).commit(),
        # Account 2 was never inserted: nothing to delete. The insert of 3 fails with it.
        lakeapply.txn(transaction_id="7.2.200")
        .insert("BANK.ACCOUNT", ID=3, BALANCE=30)
        .delete("BANK.ACCOUNT", ID=2, BALANCE=50)
        .commit(),
        lakeapply.txn(transaction_id="7.3.300")
        .update("BANK.ACCOUNT", old={"ID": 1, "BALANCE": 100}, new={"BALANCE": 150})
        .commit(),
    )

    assert_df_equality(
        lakeapply.silver("BANK.ACCOUNT"),
        lakeapply.expected("BANK.ACCOUNT", [(1, 150)]),
        ignore_row_order=True,
    )
    errors = lakeapply.error_queue().select("source_transaction_id", "error_number")
    expected_errors = lakeapply.spark.createDataFrame(
        [("7.2.200", 26787)], "source_transaction_id string, error_number long"
    )
    assert_df_equality(errors, expected_errors, ignore_nullable=True)


def test_an_error_transaction_applies_when_re_executed_after_the_fix(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="8.1.100")
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 50}, new={"BALANCE": 75})
        .commit(),
    )
    # The fix: the row the update expects, written straight into the silver table.
    silver = lakeapply.catalog.silver_table(lakeapply.silver_table_name("BANK.ACCOUNT"))
    lakeapply.expected("BANK.ACCOUNT", [(2, 50)]).write.format("delta").mode("append").saveAsTable(
        silver
    )

    result = lakeapply.execute_error(lakeapply.local_transaction_id("8.1.100"))

    assert result.succeeded
    assert_df_equality(
        lakeapply.silver("BANK.ACCOUNT"),
        lakeapply.expected("BANK.ACCOUNT", [(2, 75)]),
        ignore_row_order=True,
    )
    assert lakeapply.error_queue().count() == 0
