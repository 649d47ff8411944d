"""Hand-written contract LCRs for one table HR.T (ID, V) of source WM.DB, and readers of the
apply tables: for engine tests that land exact LCR dicts (tests/silver/test_late_input.py)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.engine import ensure_apply_tables, ensure_destination_tables, start_apply
from lakeapply.silver.settings import ApplySettings, DestinationTable

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
