"""Rule 9: a transaction moved to the error queue is processed, in both ``disable_on_error`` modes.

The low watermark passes it (a restart never runs it again, only EXECUTE_ERROR does); the oldest
SCN is the first SCN of the earliest transaction not yet processed. Issue 16 item 7: measured
with Y, everything up to SCN 1146 applied, the error transaction committed at 1162, and the
progress said 1146.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.errors import ApplyAbortedError
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.engine import (
    ABORT_STATUS_CRASH_POINT,
    SimulatedApplyCrash,
    apply_cycle,
    apply_status,
    ensure_apply_tables,
    ensure_destination_tables,
    run_apply,
    start_apply,
)
from lakeapply.silver.settings import ApplySettings, DestinationTable
from tests.silver.bronze_fixture import land

DB = "WM.DB"
TABLE = table_definition_from_dict(
    {
        "owner": "HR",
        "name": "T",
        "columns": [{"name": "ID", "type": "NUMBER(10)"}, {"name": "V", "type": "VARCHAR2(10)"}],
        "primary_key": ["ID"],
    },
    "test",
)


def settings(disable_on_error: bool) -> ApplySettings:
    return ApplySettings(
        apply_name=f"WM_{'Y' if disable_on_error else 'N'}",
        source_databases=(DB,),
        tables=(DestinationTable(DB, TABLE, "wm_t", instantiation_scn=100),),
        disable_on_error=disable_on_error,
    )


def row(command: str, txn: str, scn: int, key: int, value: str = "x") -> dict[str, Any]:
    image = [
        {"column_name": "ID", "data_type": "NUMBER", "value": str(key)},
        {"column_name": "V", "data_type": "VARCHAR2", "value": value},
    ]
    lcr: dict[str, Any] = {
        "source_database_name": DB,
        "command_type": command,
        "transaction_id": txn,
        "scn": scn,
        "object_owner": "HR",
        "object_name": "T",
    }
    if command == "INSERT":
        lcr["new_values"] = image
    else:
        lcr["old_values"] = image
    return lcr


def commit(txn: str, scn: int) -> dict[str, Any]:
    return {"source_database_name": DB, "command_type": "COMMIT", "transaction_id": txn, "scn": scn}


def start(spark: SparkSession, catalog: Catalog, apply: ApplySettings) -> None:
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, apply)
    start_apply(spark, catalog, apply)


def latest_progress(spark: SparkSession, catalog: Catalog, apply: ApplySettings) -> Any:
    return (
        spark.table(catalog.apply_table(dictionary.PROGRESS))
        .where((F.col("apply_name") == apply.apply_name) & (F.col("source_database") == DB))
        .orderBy(F.desc("cycle_id"))
        .first()
    )


def error_queue(spark: SparkSession, catalog: Catalog, apply: ApplySettings) -> list[Any]:
    return (
        spark.table(catalog.apply_table(dictionary.ERROR_QUEUE))
        .where(F.col("apply_name") == apply.apply_name)
        .select("source_transaction_id", "source_commit_scn", "error_number", "error_message")
        .collect()
    )


# 1.0.1 inserts 1 (commit 1146); 1.0.2 deletes 2, which does not exist (ORA-26787, commit 1162);
# 1.0.3 inserts 3 (first SCN 1150, commit 1170); 1.0.4 is still open (first SCN 1155).
WORKLOAD = [
    row("INSERT", "1.0.1", 1140, 1),
    commit("1.0.1", 1146),
    row("INSERT", "1.0.3", 1150, 3),
    row("INSERT", "1.0.4", 1155, 4),
    row("DELETE", "1.0.2", 1160, 2),
    commit("1.0.2", 1162),
    commit("1.0.3", 1170),
]


@pytest.mark.parametrize("disable_on_error", [True, False], ids=["Y", "N"])
def test_the_error_transaction_is_processed_and_below_the_low_watermark(
    spark: SparkSession, catalog: Catalog, disable_on_error: bool
) -> None:
    apply = settings(disable_on_error)
    start(spark, catalog, apply)
    land(spark, catalog, WORKLOAD)

    run_apply(spark, catalog, apply)

    assert [
        (e.source_transaction_id, e.error_number) for e in error_queue(spark, catalog, apply)
    ] == [("1.0.2", 26787)]
    progress = latest_progress(spark, catalog, apply)
    if disable_on_error:
        # Aborted at 1.0.2: it is in the queue and below the low watermark; 1.0.3 is not
        # processed, so it and the open 1.0.4 hold the oldest SCN (1.0.3's first SCN, 1150).
        assert apply_status(spark, catalog, apply.apply_name) == "ABORTED"
        assert (progress.low_watermark, progress.high_watermark) == (1162, 1162)
        assert (progress.oldest_scn, progress.oldest_transaction_id) == (1150, "1.0.3")
    else:
        assert (progress.low_watermark, progress.high_watermark) == (1170, 1170)
        assert (progress.oldest_scn, progress.oldest_transaction_id) == (1155, "1.0.4")


def test_after_start_apply_the_error_transaction_is_not_run_again(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(True)
    start(spark, catalog, apply)
    land(spark, catalog, WORKLOAD)
    run_apply(spark, catalog, apply)

    start_apply(spark, catalog, apply)
    run_apply(spark, catalog, apply)

    assert len(error_queue(spark, catalog, apply)) == 1  # not re-run, not queued twice
    progress = latest_progress(spark, catalog, apply)
    assert (progress.low_watermark, progress.oldest_scn) == (1170, 1155)
    assert progress.total_errors == 1
    assert sorted(r.ID for r in spark.table(catalog.silver_table("wm_t")).collect()) == [1, 3]


@pytest.mark.parametrize("disable_on_error", [True, False], ids=["Y", "N"])
def test_a_cycle_whose_only_transaction_is_an_error_keeps_a_low_watermark(
    spark: SparkSession, catalog: Catalog, disable_on_error: bool
) -> None:
    apply = settings(disable_on_error)
    start(spark, catalog, apply)
    land(spark, catalog, [row("INSERT", "2.0.1", 200, 1), commit("2.0.1", 201)])
    run_apply(spark, catalog, apply)
    land(spark, catalog, [row("DELETE", "2.0.2", 210, 9), commit("2.0.2", 211)])

    run_apply(spark, catalog, apply)

    progress = latest_progress(spark, catalog, apply)
    assert progress.low_watermark == 211
    assert progress.oldest_scn is None


def test_a_lob_piece_on_a_column_that_is_not_a_lob_is_ora_00932_not_a_missing_key(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(False)
    start(spark, catalog, apply)
    lob = {
        "source_database_name": DB,
        "command_type": "LOB WRITE",
        "transaction_id": "3.0.1",
        "scn": 300,
        "object_owner": "HR",
        "object_name": "T",
        "new_values": [
            {"column_name": "ID", "data_type": "NUMBER", "value": "1"},
            {"column_name": "V", "data_type": "VARCHAR2", "value": "piece"},
        ],
        "lob_information": "LAST_LOB_CHUNK",
        "lob_offset": 1,
        "lob_operation_size": 5,
    }
    land(spark, catalog, [row("INSERT", "3.0.1", 299, 1), lob, commit("3.0.1", 301)])

    run_apply(spark, catalog, apply)

    [error] = error_queue(spark, catalog, apply)
    assert error.error_number == 932
    assert error.error_message.startswith(
        "ORA-00932: inconsistent datatypes: expected CLOB, NCLOB or BLOB got VARCHAR2"
    )
    assert "HR.T" in error.error_message


def test_a_crash_between_the_cycle_commit_and_the_abort_status_still_aborts_once(
    spark: SparkSession, catalog: Catalog
) -> None:
    apply = settings(True)
    start(spark, catalog, apply)
    land(spark, catalog, WORKLOAD)
    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(spark, catalog, apply, crash_after=ABORT_STATUS_CRASH_POINT)

    with pytest.raises(ApplyAbortedError):  # the next start records the abort it missed
        run_apply(spark, catalog, apply)
    assert apply_status(spark, catalog, apply.apply_name) == "ABORTED"
    start_apply(spark, catalog, apply)  # one START_APPLY for one error transaction
    run_apply(spark, catalog, apply)

    assert apply_status(spark, catalog, apply.apply_name) == "ENABLED"
    assert len(error_queue(spark, catalog, apply)) == 1
    assert sorted(r.ID for r in spark.table(catalog.silver_table("wm_t")).collect()) == [1, 3]
