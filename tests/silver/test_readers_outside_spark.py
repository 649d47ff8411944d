"""Silver and dictionary tables are plain Delta tables: delta-rs (``deltalake``) opens them, and
DuckDB queries them through it, with the NOT NULL columns of the table definition."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import deltalake
import duckdb
from pyspark.sql import SparkSession

from lakeapply.bronze.tables import (
    LCR_TABLE,
    QUARANTINE_TABLE,
    lcr_table_schema,
    quarantine_table_schema,
)
from lakeapply.silver import dictionary
from lakeapply.silver.plan import ensure_dictionary_tables
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT",
    {
        "ID": "NUMBER(6)",
        "OWNER": "VARCHAR2(20)",
        "BALANCE": "NUMBER(10,2)",
        "OPENED": "TIMESTAMP",
    },
    primary_key=["ID"],
    not_null=["ID", "OWNER"],
)


def _location(spark: SparkSession, table: str) -> str:
    location: str = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"]
    return location.removeprefix("file:")


def _sorted_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(row.values()) for row in rows)


def test_a_silver_table_reads_the_same_in_delta_rs_duckdb_and_spark_with_its_not_null_columns(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    opened = datetime(2026, 5, 4, 9, 30)
    lakeapply.run(
        lakeapply.txn()
        .insert("BANK.ACCOUNT", ID=1, OWNER="Ann", BALANCE=Decimal("10.50"), OPENED=opened)
        .insert("BANK.ACCOUNT", ID=2, OWNER="Bob", BALANCE=None, OPENED=None)
        .commit(),
        lakeapply.txn()
        .update("BANK.ACCOUNT", old={"ID": 1, "BALANCE": Decimal("10.50")}, new={"BALANCE": 7})
        .commit(),
    )
    qualified = lakeapply.catalog.silver_table(lakeapply.silver_table_name("BANK.ACCOUNT"))

    table = deltalake.DeltaTable(_location(spark, qualified))
    from_delta_rs = table.to_pyarrow_table().to_pylist()
    from_spark = [row.asDict() for row in spark.table(qualified).collect()]

    assert _sorted_rows(from_delta_rs) == _sorted_rows(from_spark)
    assert _sorted_rows(from_delta_rs) == [
        (Decimal(1), "Ann", Decimal("7.00"), opened),
        (Decimal(2), "Bob", None, None),
    ]
    nullable = {field.name: field.nullable for field in table.schema().fields}
    assert nullable == {"ID": False, "OWNER": False, "BALANCE": True, "OPENED": True}
    assert {f.name: f.nullable for f in spark.table(qualified).schema.fields} == nullable

    account = table.to_pyarrow_dataset()
    connection = duckdb.connect()
    connection.register("account", account)
    assert connection.execute("SELECT OWNER, BALANCE FROM account WHERE ID = 1").fetchall() == [
        ("Ann", Decimal("7.00"))
    ]


def test_dictionary_and_bronze_tables_open_with_delta_rs_with_their_not_null_columns(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.run(lakeapply.txn().insert("BANK.ACCOUNT", ID=1, OWNER="Ann").commit())
    ensure_dictionary_tables(spark, lakeapply.catalog)  # the settings tables: publishing makes them
    tables = {
        **{lakeapply.catalog.apply_table(n): s for n, s in dictionary.DICTIONARY_TABLES.items()},
        lakeapply.catalog.bronze_table(LCR_TABLE): lcr_table_schema(),
        lakeapply.catalog.bronze_table(QUARANTINE_TABLE): quarantine_table_schema(),
    }
    for qualified, schema in tables.items():
        table = deltalake.DeltaTable(_location(spark, qualified))
        assert table.to_pyarrow_table().num_rows == spark.table(qualified).count(), qualified
        not_null = {field.name for field in table.schema().fields if not field.nullable}
        assert not_null == {f.name for f in schema.fields if not f.nullable}, qualified


def test_a_null_for_a_not_null_column_goes_to_the_error_queue_not_into_a_failed_write(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, OWNER=None).commit(),
        lakeapply.txn().insert("BANK.ACCOUNT", ID=2, OWNER="Bob").commit(),
    )

    errors = [row.error_number for row in lakeapply.error_queue().collect()]
    assert errors == [1400]
    assert [row.ID for row in lakeapply.silver("BANK.ACCOUNT").collect()] == [Decimal(2)]
