"""Names Oracle accepts as quoted identifiers are data end to end: owners, tables and columns
with spaces, backticks, semicolons, parentheses, commas, equals signs, dots, keywords and
unicode apply like any other, and no name changes the SQL that runs (a sentinel table survives).
"""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog, ensure_database
from lakeapply.silver import admin
from lakeapply.silver.plan import ensure_apply_tables
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

DB = "EVIL.DB`; DROP TABLE x; --"
OWNER = "MY SCHEMA`)"
TABLE_NAME = "T;DROP TABLE sentinel"
TABLE = f"{OWNER}.{TABLE_NAME}"
KEY = "K`EY; DROP TABLE sentinel; --"
VALUE = "FIRST NAME,(=)"
KEYWORD = "select"
UNICODE = "名前"
DEFINITION = table_definition(
    TABLE,
    {KEY: "NUMBER(10)", VALUE: "VARCHAR2(20)", KEYWORD: "VARCHAR2(20)", UNICODE: "VARCHAR2(20)"},
    primary_key=[KEY],
)
SETTINGS = apply_settings(
    destination(DEFINITION, source=DB, silver_table="hostile_t", instantiation_scn=1),
    apply_name="APPLY `x'; --",
    disable_on_error=False,
)
INJECTION = "' OR '1'='1"


def row(key: int, value: str) -> dict[str, object]:
    return {KEY: key, VALUE: value, KEYWORD: INJECTION, UNICODE: value}


def test_hostile_names_apply_like_any_other_and_the_sentinel_survives(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(SETTINGS)
    sentinel = lakeapply.catalog.silver_table("sentinel")
    lakeapply.spark.sql(f"CREATE TABLE {sentinel} (id INT) USING delta")

    [report] = lakeapply.run(
        lakeapply.txn().insert(TABLE, row(1, "a")).insert(TABLE, row(2, "b")).commit(),
        lakeapply.txn()
        .update(TABLE, old=row(1, "a"), new=row(1, "c"))
        .delete(TABLE, row(2, "b"))
        .commit(),
    )

    assert (report.applied, report.errors) == (2, 0)
    assert_df_equality(lakeapply.silver(TABLE), lakeapply.expected(TABLE, [row(1, "c")]))
    assert lakeapply.spark.catalog.tableExists(sentinel)


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
    admin.set_dml_handler(spark, catalog, name, DB, obj, "DELETE", user_procedure="a.b:c")
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
    assert [h.user_procedure for h in table.dml_handlers] == ["a.b:c"]
    assert loaded.disable_on_error
    assert spark.catalog.tableExists(sentinel)
