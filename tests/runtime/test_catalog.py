"""Tables are created crash-safe, and with column mapping when a column name needs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.runtime.catalog import (
    Catalog,
    TableLocationError,
    ensure_database,
    ensure_delta_table,
    remove_interrupted_creation,
)

ORACLE_QUOTED_NAMES = ["FIRST NAME", "A;B", "F(X)", "K=V", "A,B", "TAB\tX", "名前", "it's"]


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
