"""Names Oracle accepts as quoted identifiers are data end to end: owners, tables and columns
with spaces, backticks, semicolons, parentheses, commas, equals signs, dots, keywords and
unicode apply like any other, and no name changes the SQL that runs (a sentinel table survives).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.runtime.catalog import Catalog, ensure_database
from lakeapply.silver import admin
from lakeapply.silver.engine import (
    ensure_apply_tables,
    ensure_destination_tables,
    run_apply,
    start_apply,
)
from lakeapply.silver.settings import ApplySettings, DestinationTable
from tests.silver.bronze_fixture import land

DB = "EVIL.DB`; DROP TABLE x; --"
OWNER = "MY SCHEMA`)"
TABLE_NAME = "T;DROP TABLE sentinel"
KEY = "K`EY; DROP TABLE sentinel; --"
VALUE = "FIRST NAME,(=)"
KEYWORD = "select"
UNICODE = "名前"
DEFINITION = table_definition_from_dict(
    {
        "owner": OWNER,
        "name": TABLE_NAME,
        "columns": [
            {"name": KEY, "type": "NUMBER(10)"},
            {"name": VALUE, "type": "VARCHAR2(20)"},
            {"name": KEYWORD, "type": "VARCHAR2(20)"},
            {"name": UNICODE, "type": "VARCHAR2(20)"},
        ],
        "primary_key": [KEY],
    },
    "test",
)
SETTINGS = ApplySettings(
    apply_name="APPLY `x'; --",
    source_databases=(DB,),
    tables=(DestinationTable(DB, DEFINITION, "hostile_t", instantiation_scn=1),),
    disable_on_error=False,
)


def image(key: int, value: str) -> list[dict[str, Any]]:
    return [
        {"column_name": KEY, "data_type": "NUMBER", "value": str(key)},
        {"column_name": VALUE, "data_type": "VARCHAR2", "value": value},
        {"column_name": KEYWORD, "data_type": "VARCHAR2", "value": "' OR '1'='1"},
        {"column_name": UNICODE, "data_type": "VARCHAR2", "value": value},
    ]


def lcr(command: str, txn: str, scn: int, **images: Any) -> dict[str, Any]:
    return {
        "source_database_name": DB,
        "command_type": command,
        "transaction_id": txn,
        "scn": scn,
        "object_owner": OWNER,
        "object_name": TABLE_NAME,
        **images,
    }


def commit(txn: str, scn: int) -> dict[str, Any]:
    return {"source_database_name": DB, "command_type": "COMMIT", "transaction_id": txn, "scn": scn}


def test_hostile_names_apply_like_any_other_and_the_sentinel_survives(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.silver)
    sentinel = catalog.silver_table("sentinel")
    spark.sql(f"CREATE TABLE {sentinel} (id INT) USING delta")
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, SETTINGS)
    start_apply(spark, catalog, SETTINGS)
    land(
        spark,
        catalog,
        [
            lcr("INSERT", "1.0.1", 10, new_values=image(1, "a")),
            lcr("INSERT", "1.0.1", 11, new_values=image(2, "b")),
            commit("1.0.1", 12),
            lcr("UPDATE", "1.0.2", 20, old_values=image(1, "a"), new_values=image(1, "c")),
            lcr("DELETE", "1.0.2", 21, old_values=image(2, "b")),
            commit("1.0.2", 22),
        ],
    )

    [report] = run_apply(spark, catalog, SETTINGS)

    assert (report.applied, report.errors) == (2, 0)
    rows = [row.asDict() for row in spark.table(catalog.silver_table("hostile_t")).collect()]
    assert rows == [{KEY: 1, VALUE: "c", KEYWORD: "' OR '1'='1", UNICODE: "c"}]
    assert spark.catalog.tableExists(sentinel)


def test_every_admin_command_takes_hostile_names_as_data(
    spark: SparkSession, catalog: Catalog
) -> None:
    # Each command rewrites its dictionary rows with replaceWhere on the apply name, and the
    # settings it reads back must be the hostile names unchanged.
    ensure_database(spark, catalog.silver)
    sentinel = catalog.silver_table("sentinel_admin")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {sentinel} (id INT) USING delta")
    ensure_apply_tables(spark, catalog)
    admin.publish_settings(spark, catalog, SETTINGS)
    name, obj = SETTINGS.apply_name, f"{OWNER}.{TABLE_NAME}"

    admin.set_key_columns(spark, catalog, name, DB, obj, [VALUE, UNICODE])
    admin.set_table_instantiation_scn(spark, catalog, name, DB, obj, 5)
    admin.set_schema_instantiation_scn(spark, catalog, name, DB, OWNER, 4)
    admin.set_global_instantiation_scn(spark, catalog, name, DB, 3)
    admin.set_parameter(spark, catalog, name, "disable_on_error", "Y")
    admin.compare_old_values(spark, catalog, name, DB, obj, [KEYWORD], compare=False)
    admin.set_update_conflict_handler(spark, catalog, name, DB, obj, "MAXIMUM", KEY, [KEY, VALUE])
    admin.stop_apply(spark, catalog, name)
    admin.start_apply(spark, catalog, name)

    loaded = admin.load_settings(spark, catalog, name)
    [table] = loaded.tables
    assert (loaded.apply_name, loaded.source_databases) == (SETTINGS.apply_name, (DB,))
    assert (table.definition.owner, table.definition.name) == (OWNER, TABLE_NAME)
    assert table.key_columns == (VALUE, UNICODE)
    assert (KEYWORD, "UPDATE") in table.uncompared_columns
    assert table.handler_for(VALUE) is not None
    assert table.instantiation_scn == 5
    assert loaded.disable_on_error
    assert spark.catalog.tableExists(sentinel)
