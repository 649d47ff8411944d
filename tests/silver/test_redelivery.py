"""Rule 11 in the engine: a transaction seen again after it was applied or queued is ignored
(TOTAL_IGNORED) and changes nothing; copies of one LCR line apply once; a transaction the
instantiation SCN discards is processed, not ignored."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(10,2)"}, primary_key=["ID"]
)


def _accounts(lakeapply: LakeapplyHarness) -> list[tuple[int, int]]:
    return sorted((int(r.ID), int(r.BALANCE)) for r in lakeapply.silver("BANK.ACCOUNT").collect())


def _counters(lakeapply: LakeapplyHarness) -> tuple[int, int, int]:
    row = lakeapply.latest_progress().collect()[0]
    return int(row.total_applied), int(row.total_ignored), int(row.total_errors)


def test_a_transaction_delivered_again_in_a_later_cycle_is_ignored_and_changes_nothing(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    first = lakeapply.txn(transaction_id="1.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit()
    failing = lakeapply.txn(transaction_id="1.1.2").delete("BANK.ACCOUNT", ID=9, BALANCE=9).commit()
    later = (
        lakeapply.txn(transaction_id="1.1.3")
        .update("BANK.ACCOUNT", old={"ID": 1, "BALANCE": 10}, new={"BALANCE": 20})
        .commit()
    )
    lakeapply.run(first, failing, later)

    # A restarted capture sends the applied insert and the queued delete again.
    lakeapply.run(first, failing)

    assert _accounts(lakeapply) == [(1, 20)]  # the insert again would be ORA-00001
    assert _counters(lakeapply) == (2, 2, 1)
    assert lakeapply.error_queue().count() == 1
    assert lakeapply.transactions().count() == 3


def test_the_same_file_landed_twice_under_another_name_applies_once(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    transaction = (
        lakeapply.txn(transaction_id="2.1.1")
        .insert("BANK.ACCOUNT", ID=1, BALANCE=10)
        .insert("BANK.ACCOUNT", ID=2, BALANCE=20)
        .commit()
    )
    lakeapply.land_files(transaction)
    lakeapply.land_files(transaction)  # a second file name, the same lines

    lakeapply.apply()

    assert lakeapply.bronze().count() == 6  # bronze keeps both copies
    assert _accounts(lakeapply) == [(1, 10), (2, 20)]
    assert _counters(lakeapply) == (1, 1, 0)
    assert lakeapply.apply_status() == "ENABLED"


def test_two_copies_of_one_lcr_line_do_not_fail_the_transaction(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    insert, commit = (
        lakeapply.txn(transaction_id="3.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit().lcrs
    )

    lakeapply.run(insert, dict(insert), commit)

    assert _accounts(lakeapply) == [(1, 10)]
    assert lakeapply.error_queue().count() == 0
    assert _counters(lakeapply) == (1, 0, 0)


def test_a_transaction_the_instantiation_scn_discards_is_processed_not_ignored(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(destination(ACCOUNT, instantiation_scn=500)))

    lakeapply.run(
        lakeapply.txn(transaction_id="4.1.1", scn=100)
        .insert("BANK.ACCOUNT", ID=1, BALANCE=10)
        .commit(scn=101),
    )

    assert _accounts(lakeapply) == []
    assert _counters(lakeapply) == (1, 0, 0)
    assert [r.outcome for r in lakeapply.transactions().collect()] == ["DISCARDED"]
