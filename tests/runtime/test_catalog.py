"""Tables are created crash-safe, and with column mapping when a column name needs it."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.cli import CliContext, _catalog, main
from lakeapply.errors import InvalidIdentifierError
from lakeapply.runtime.catalog import (
    BOOKKEEPING_COMPACTION_INTERVAL,
    Catalog,
    TableLocationError,
    TableToCreate,
    compact_small_files,
    compaction_due,
    ensure_database,
    ensure_delta_table,
    ensure_delta_tables,
    remove_interrupted_creation,
)

ORACLE_QUOTED_NAMES = ["FIRST NAME", "A;B", "F(X)", "K=V", "A,B", "TAB\tX", "名前", "it's"]


def test_tables_created_side_by_side_include_one_named_twice_created_once(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.silver)
    first = T.StructType([T.StructField("ID", T.LongType(), False)])
    second = T.StructType([T.StructField("OTHER", T.StringType())])
    shared = catalog.silver_table("shared")

    ensure_delta_tables(
        spark,
        [
            TableToCreate(shared, first, keep_not_null=True),
            TableToCreate(catalog.silver_table("alone"), second),
            TableToCreate(shared.upper(), second),  # several sources into one silver table
        ],
    )

    assert spark.table(shared).schema == first
    assert spark.table(catalog.silver_table("alone")).schema == second


def test_ensuring_tables_again_creates_only_the_one_dropped_meanwhile_and_says_so(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.silver)
    schema = T.StructType([T.StructField("ID", T.LongType())])
    tables = [TableToCreate(catalog.silver_table(name), schema) for name in ("kept", "dropped")]
    assert ensure_delta_tables(spark, tables) == {t.qualified_name for t in tables}
    spark.createDataFrame([(1,)], schema).write.format("delta").mode("append").saveAsTable(
        catalog.silver_table("kept")
    )
    spark.sql(f"DROP TABLE {catalog.silver_table('dropped')}")

    # The names of the tables created (callers skip reading those: they are empty).
    assert ensure_delta_tables(spark, tables) == {catalog.silver_table("dropped")}

    assert spark.table(catalog.silver_table("kept")).count() == 1  # not created again
    assert spark.table(catalog.silver_table("dropped")).schema == schema


def test_compaction_bin_packs_a_tables_small_files_keeps_its_rows_and_skips_missing_tables(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.silver)
    schema = T.StructType([T.StructField("ID", T.LongType())])
    table, missing = catalog.silver_table("appended"), catalog.silver_table("missing")
    ensure_delta_table(spark, table, schema)
    for row in range(3):
        spark.createDataFrame([(row,)], schema).write.format("delta").mode("append").saveAsTable(
            table
        )

    assert compact_small_files(spark, [missing, table]) == [table]

    assert spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].numFiles == 1
    assert sorted(r.ID for r in spark.table(table).collect()) == [0, 1, 2]


def test_compaction_is_due_every_interval_cycles_not_at_zero() -> None:
    due = [n for n in range(0, 3 * BOOKKEEPING_COMPACTION_INTERVAL + 1) if compaction_due(n)]
    assert due == [BOOKKEEPING_COMPACTION_INTERVAL * k for k in (1, 2, 3)]


def test_tables_in_a_database_that_does_not_exist_fail_with_the_metastore_error(
    spark: SparkSession, catalog: Catalog
) -> None:
    schema = T.StructType([T.StructField("ID", T.LongType())])
    with pytest.raises(AnalysisException, match=r"(?i)schema|database|namespace"):
        ensure_delta_tables(spark, [TableToCreate(catalog.silver_table("t"), schema)])


def test_a_table_with_names_oracle_allows_quoted_is_created_and_written(
    spark: SparkSession, catalog: Catalog
) -> None:
    schema = T.StructType([T.StructField(n, T.StringType()) for n in ORACLE_QUOTED_NAMES])
    ensure_database(spark, catalog.silver)
    table = catalog.silver_table("hostile_names")

    ensure_delta_table(spark, table, schema)
    spark.createDataFrame([tuple(ORACLE_QUOTED_NAMES)], schema).write.format("delta").mode(
        "append"
    ).saveAsTable(table)

    [row] = spark.table(table).collect()
    assert row.asDict() == dict(zip(ORACLE_QUOTED_NAMES, ORACLE_QUOTED_NAMES, strict=True))


def commit_file(log: Path, version: int, actions: list[dict[str, object]]) -> None:
    log.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(action) for action in actions)
    (log / f"{version:020d}.json").write_text(text + "\n", encoding="utf-8")


def test_a_folder_left_by_a_killed_creation_without_a_commit_is_removed(tmp_path: Path) -> None:
    location = tmp_path / "t"
    (location / "_delta_log").mkdir(parents=True)
    (location / "_delta_log" / ".00000000000000000000.json.tmp").write_text("{")

    assert remove_interrupted_creation(location, "db.t")
    assert not location.exists()


def test_an_empty_committed_table_the_metastore_never_heard_of_is_removed(tmp_path: Path) -> None:
    location = tmp_path / "t"
    commit_file(location / "_delta_log", 0, [{"protocol": {}}, {"metaData": {}}])

    assert remove_interrupted_creation(location, "db.t")
    assert not location.exists()


def test_a_folder_holding_data_is_never_deleted(tmp_path: Path) -> None:
    location = tmp_path / "t"
    commit_file(location / "_delta_log", 0, [{"metaData": {}}])
    commit_file(location / "_delta_log", 1, [{"add": {"path": "part-0.parquet"}}])

    with pytest.raises(TableLocationError, match="holds a Delta table with data"):
        remove_interrupted_creation(location, "db.t")
    assert (location / "_delta_log").exists()


def test_a_missing_location_needs_nothing(tmp_path: Path) -> None:
    assert not remove_interrupted_creation(tmp_path / "absent", "db.t")


def test_a_rerun_after_a_killed_creation_creates_the_table(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.silver)
    database_folder = Path(
        spark.catalog.getDatabase(catalog.silver).locationUri.removeprefix("file:")
    )
    leftover = database_folder / "killed" / "_delta_log"
    leftover.mkdir(parents=True)
    (leftover / "part-of-nothing.crc").write_text("")
    schema = T.StructType([T.StructField("ID", T.LongType())])

    ensure_delta_table(spark, catalog.silver_table("killed"), schema)

    assert spark.table(catalog.silver_table("killed")).schema.names == ["ID"]


# --- Unity Catalog: three-part names when a catalog is given ---------------------------------


def test_without_a_catalog_table_names_are_two_part_as_before() -> None:
    names = Catalog("lakeapply")
    assert names.silver_table("orcl_us03_student") == "`lakeapply_silver`.`orcl_us03_student`"
    assert names.bronze_table("lcr") == "`lakeapply_bronze`.`lcr`"
    assert names.apply_table("progress") == "`lakeapply_apply`.`progress`"
    assert names.database(names.silver) == "`lakeapply_silver`"


def test_with_a_catalog_every_table_name_is_three_part() -> None:
    names = Catalog("lakeapply", catalog="main")
    assert names.silver_table("t") == "`main`.`lakeapply_silver`.`t`"
    assert names.bronze_table("lcr") == "`main`.`lakeapply_bronze`.`lcr`"
    assert names.apply_table("progress") == "`main`.`lakeapply_apply`.`progress`"
    assert names.gold_table("dba_apply") == "`main`.`lakeapply_gold`.`dba_apply`"
    assert names.database(names.apply) == "`main`.`lakeapply_apply`"
    assert names.silver == "lakeapply_silver"  # schema names stay unqualified


def test_a_catalog_name_that_is_not_a_spark_name_is_refused() -> None:
    with pytest.raises(InvalidIdentifierError, match="catalog"):
        Catalog("lakeapply", catalog="main; DROP")


def test_the_cli_catalog_option_and_environment_variable_name_the_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Catalog] = []

    @main.command("show-catalog")
    @click.pass_obj
    def show_catalog(obj: CliContext) -> None:
        seen.append(_catalog(obj))

    try:
        runner = CliRunner()
        assert runner.invoke(main, ["--catalog", "main", "show-catalog"]).exit_code == 0
        monkeypatch.setenv("LAKEAPPLY_CATALOG", "uc")
        assert runner.invoke(main, ["show-catalog"]).exit_code == 0
        monkeypatch.delenv("LAKEAPPLY_CATALOG")
        assert runner.invoke(main, ["show-catalog"]).exit_code == 0
    finally:
        main.commands.pop("show-catalog")
    assert [c.catalog for c in seen] == ["main", "uc", None]


def test_three_part_names_create_write_and_read_tables_in_a_named_catalog(
    spark: SparkSession, catalog: Catalog
) -> None:
    names = Catalog(catalog.prefix, catalog="spark_catalog")  # the local session's catalog
    schema = T.StructType([T.StructField("ID", T.LongType())])
    ensure_database(spark, names.database(names.silver))
    ensure_delta_table(spark, names.silver_table("three_part"), schema)
    spark.createDataFrame([(1,)], schema).write.format("delta").mode("append").saveAsTable(
        names.silver_table("three_part")
    )

    assert [r.ID for r in spark.table(catalog.silver_table("three_part")).collect()] == [1]
