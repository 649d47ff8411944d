"""An error transaction: a DELETE of a row that does not exist fails (ORA-26787), its whole
transaction goes to the error queue (DBA_APPLY_ERROR), and with ``disable_on_error=N`` the apply
carries on with the transactions after it.

Re-executing the queued transaction (DBMS_APPLY_ADM.EXECUTE_ERROR) is not built yet, so there is
no example of it here.
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
