"""The operator's error loop (apply-semantics rule 8): EXECUTE_ERROR, EXECUTE_ALL_ERRORS,
DELETE_ERROR, DELETE_ALL_ERRORS, through the admin API, the CLI and the engine."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from click.testing import CliRunner
from pyspark.sql import SparkSession

from lakeapply import cli
from lakeapply.errors import ApplyError
from lakeapply.silver import admin
from lakeapply.silver.cycle_state import SimulatedApplyCrash
from lakeapply.silver.engine import execute_errors
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(10,2)"}, primary_key=["ID"]
)


def _insert_directly(lakeapply: LakeapplyHarness, row_id: int, balance: int) -> None:
    """What the operator does to fix the cause: a row into the silver table, with Spark SQL."""
    table = lakeapply.catalog.silver_table(lakeapply.silver_table_name("BANK.ACCOUNT"))
    lakeapply.spark.sql(f"INSERT INTO {table} VALUES ({row_id}, {balance})")


def _accounts(lakeapply: LakeapplyHarness, rows: list[tuple[int, int]]) -> None:
    assert_df_equality(
        lakeapply.silver("BANK.ACCOUNT"),
        lakeapply.expected("BANK.ACCOUNT", rows),
        ignore_row_order=True,
    )


def _errors(lakeapply: LakeapplyHarness) -> list[tuple[Any, ...]]:
    return sorted(
        (r.source_transaction_id, r.message_number, r.error_number)
        for r in lakeapply.error_queue().collect()
    )


def test_the_documented_loop_fix_the_row_execute_error_and_the_queue_is_empty(
    spark: SparkSession, lakeapply: LakeapplyHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = lakeapply.configure(apply_settings(ACCOUNT))  # disable_on_error = Y
    admin.publish_settings(spark, lakeapply.catalog, settings)
    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=100).commit(),
        # Account 2 never reached silver: ORA-26787, and the apply aborts.
        lakeapply.txn(transaction_id="1.1.2")
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 50}, new={"BALANCE": 70})
        .commit(),
        lakeapply.txn(transaction_id="1.1.3").insert("BANK.ACCOUNT", ID=3, BALANCE=30).commit(),
    )
    assert lakeapply.apply_status() == "ABORTED"
    assert _errors(lakeapply) == [("1.1.2", 1, 26787)]
    local_id = lakeapply.local_transaction_id("1.1.2")

    _insert_directly(lakeapply, 2, 50)
    monkeypatch.setattr(cli, "_spark", lambda _: spark)
    monkeypatch.setattr(cli, "_catalog", lambda _: lakeapply.catalog)
    result = CliRunner().invoke(cli.main, ["admin", "execute-error", settings.apply_name, local_id])

    assert result.exit_code == 0, result.output
    assert f"{local_id} applied" in result.output
    _accounts(lakeapply, [(1, 100), (2, 70)])
    assert lakeapply.error_queue().count() == 0  # DBA_APPLY_ERROR
    assert lakeapply.error_messages().count() == 0  # DBA_APPLY_ERROR_MESSAGES
    # The rest of the loop: start the apply; it resumes after the failed transaction.
    lakeapply.start_apply()
    lakeapply.apply()
    _accounts(lakeapply, [(1, 100), (2, 70), (3, 30)])


def test_a_transaction_that_fails_again_stays_queued_with_its_new_error(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="2.1.1")
        .insert("BANK.ACCOUNT", ID=5, BALANCE=5)
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 50}, new={"BALANCE": 70})
        .commit(),
    )
    assert _errors(lakeapply) == [("2.1.1", 2, 26787)]
    local_id = lakeapply.local_transaction_id("2.1.1")
    # A wrong fix: row 2 is there now, but so is row 5, which the transaction inserts.
    _insert_directly(lakeapply, 2, 50)
    _insert_directly(lakeapply, 5, 5)

    result = lakeapply.execute_error(local_id)

    assert not result.succeeded
    assert (result.error_number, result.message_number) == (1, 1)
    assert "ORA-00001" in str(result.error_message)
    assert _errors(lakeapply) == [("2.1.1", 1, 1)]
    assert lakeapply.error_messages().count() == 2  # the LCRs stay for the next attempt
    _accounts(lakeapply, [(2, 50), (5, 5)])  # nothing of it applied


def test_execute_all_errors_runs_in_commit_order_each_seeing_the_previous_ones(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="3.1.1")
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 50}, new={"BALANCE": 70})
        .commit(),
        # Its old value is what the first one writes: in the other order it conflicts (26786).
        lakeapply.txn(transaction_id="3.1.2")
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 70}, new={"BALANCE": 90})
        .commit(),
    )
    assert _errors(lakeapply) == [("3.1.1", 1, 26787), ("3.1.2", 1, 26787)]
    _insert_directly(lakeapply, 2, 50)

    results = lakeapply.execute_all_errors()

    assert [(r.source_transaction_id, r.succeeded) for r in results] == [
        ("3.1.1", True),
        ("3.1.2", True),
    ]
    _accounts(lakeapply, [(2, 90)])
    assert lakeapply.error_queue().count() == 0


def test_delete_error_and_delete_all_errors_drop_transactions_unapplied(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    settings = lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    admin.publish_settings(spark, lakeapply.catalog, settings)
    lakeapply.run(
        *[
            lakeapply.txn(transaction_id=f"4.1.{n}")
            .delete("BANK.ACCOUNT", ID=n, BALANCE=n)
            .commit()
            for n in (1, 2, 3)
        ]
    )
    assert len(_errors(lakeapply)) == 3

    admin.delete_error(
        spark, lakeapply.catalog, settings.apply_name, lakeapply.local_transaction_id("4.1.2")
    )
    assert [e[0] for e in _errors(lakeapply)] == ["4.1.1", "4.1.3"]
    assert lakeapply.error_messages().count() == 2
    with pytest.raises(ApplyError, match=r"has no error transaction 9\.9 in its error queue"):
        admin.execute_error(spark, lakeapply.catalog, settings.apply_name, "9.9")
    with pytest.raises(ApplyError, match=r"has no error transaction 9\.9"):
        admin.delete_error(spark, lakeapply.catalog, settings.apply_name, "9.9")

    deleted = admin.delete_all_errors(spark, lakeapply.catalog, settings.apply_name)

    assert len(deleted) == 2
    assert lakeapply.error_queue().count() == 0
    assert lakeapply.error_messages().count() == 0
    assert lakeapply.silver("BANK.ACCOUNT").count() == 0


def test_a_re_execution_killed_midway_is_finished_once_by_the_next_call(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    settings = lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="5.1.1")
        .insert("BANK.ACCOUNT", ID=7, BALANCE=7)
        .update("BANK.ACCOUNT", old={"ID": 2, "BALANCE": 50}, new={"BALANCE": 70})
        .commit(),
    )
    local_id = lakeapply.local_transaction_id("5.1.1")
    _insert_directly(lakeapply, 2, 50)
    table = lakeapply.catalog.silver_table(lakeapply.silver_table_name("BANK.ACCOUNT"))

    with pytest.raises(SimulatedApplyCrash):
        execute_errors(spark, lakeapply.catalog, settings, [local_id], crash_after="merges")
    _accounts(lakeapply, [(2, 70), (7, 7)])  # the MERGE committed; the queue not yet
    assert lakeapply.error_queue().count() == 1
    merges_before = spark.sql(f"DESCRIBE HISTORY {table}").where("operation = 'MERGE'").count()

    result = lakeapply.execute_error(local_id)

    assert result.succeeded
    assert spark.sql(f"DESCRIBE HISTORY {table}").where("operation = 'MERGE'").count() == (
        merges_before
    )
    _accounts(lakeapply, [(2, 70), (7, 7)])
    assert lakeapply.error_queue().count() == 0
