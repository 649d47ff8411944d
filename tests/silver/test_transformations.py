"""Declarative rule-based transformations: the documented fix for column discrepancies."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import admin
from lakeapply.silver.settings import (
    ColumnTransformation,
    DestinationTable,
    TransformationKind,
    ValueImage,
)
from lakeapply.silver.transformations import transform_row_lcrs
from tests.reference.workloads import Workload
from tests.silver.differential import engine_outcomes, engine_settings, isolate
from tests.silver.test_error_messages import ACCOUNT

CATALOG = Catalog("transform")
LCR_COLUMNS = (
    "source_database_name string, object_owner string, object_name string, command_type string, "
    "scn long, old_values array<struct<column_name:string,data_type:string,value:string>>, "
    "new_values array<struct<column_name:string,data_type:string,value:string>>"
)


def _values(**columns: Any) -> list[tuple[str, str, Any]]:
    return [(name, "VARCHAR2", value) for name, value in columns.items()]


def _images(spark: SparkSession, table: DestinationTable, *lcrs: tuple[Any, ...]) -> list[Any]:
    frame = spark.createDataFrame(list(lcrs), LCR_COLUMNS)
    rows = transform_row_lcrs(frame, [table]).orderBy("scn").collect()
    return [
        (
            [(v.column_name, v.value) for v in row.old_values or []] or None,
            [(v.column_name, v.value) for v in row.new_values or []] or None,
        )
        for row in rows
    ]


def test_each_step_reshapes_the_images_of_its_table_in_order(spark: SparkSession) -> None:
    table = dataclasses.replace(
        ACCOUNT,
        transformations=(
            ColumnTransformation(TransformationKind.DELETE_COLUMN, ("LEGACY",)),
            ColumnTransformation(TransformationKind.RENAME_COLUMN, ("NAME", "HOLDER")),
            ColumnTransformation(
                TransformationKind.ADD_COLUMN, ("STATUS",), ValueImage.NEW, value="OPEN"
            ),
        ),
    )
    images = _images(
        spark,
        table,
        ("DB", "APP", "ACCOUNT", "INSERT", 1, None, _values(ID="1", NAME="Ann", LEGACY="x")),
        ("DB", "APP", "ACCOUNT", "UPDATE", 2, _values(ID="1", NAME="Ann"), _values(NAME="Bo")),
        ("DB", "APP", "ACCOUNT", "DELETE", 3, _values(ID="1", LEGACY="x"), None),
        ("DB", "APP", "OTHER", "INSERT", 4, None, _values(ID="1", LEGACY="x")),
    )
    assert images == [
        (None, [("ID", "1"), ("HOLDER", "Ann"), ("STATUS", "OPEN")]),
        ([("ID", "1"), ("HOLDER", "Ann")], [("HOLDER", "Bo"), ("STATUS", "OPEN")]),
        ([("ID", "1")], None),
        (None, [("ID", "1"), ("LEGACY", "x")]),  # another table: untouched
    ]


def test_keep_columns_and_an_expression_over_the_lcr(spark: SparkSession) -> None:
    table = dataclasses.replace(
        ACCOUNT,
        transformations=(
            ColumnTransformation(TransformationKind.KEEP_COLUMNS, ("ID", "HOLDER")),
            ColumnTransformation(
                TransformationKind.ADD_COLUMN,
                ("BALANCE",),
                ValueImage.NEW,
                expression="scn * 10",
                data_type="NUMBER",
            ),
        ),
    )
    images = _images(
        spark,
        table,
        ("DB", "APP", "ACCOUNT", "INSERT", 7, None, _values(ID="1", HOLDER="A", X="y")),
    )
    assert images == [(None, [("ID", "1"), ("HOLDER", "A"), ("BALANCE", "70")])]


def _workload(transformations: list[dict[str, Any]]) -> Workload:
    document = {
        "owner": "APP",
        "name": "ACCOUNT",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)"},
            {"name": "HOLDER", "type": "VARCHAR2(5)"},
        ],
        "primary_key": ["ID"],
    }
    table: dict[str, Any] = {
        "source_database": "DB",
        "source_object": "APP.ACCOUNT",
        "silver_table": "account",
        "definition": "account.json",
        "instantiation_scn": 0,
    }
    if transformations:
        table["transformations"] = transformations
    insert = {
        "source_database_name": "DB",
        "command_type": "INSERT",
        "transaction_id": "1.1.1",
        "scn": 10,
        "object_owner": "APP",
        "object_name": "ACCOUNT",
        "new_values": [
            {"column_name": c, "data_type": "VARCHAR2", "value": v}
            for c, v in (("ID", "1"), ("HOLDER", "Ann"), ("NICKNAME", "A"))
        ],
    }
    commit = {
        "source_database_name": "DB",
        "command_type": "COMMIT",
        "transaction_id": "1.1.1",
        "scn": 11,
    }
    process = {
        "apply_name": "APPLY_T",
        "parameters": {"disable_on_error": "N"},
        "source_databases": ["DB"],
        "tables": [table],
    }
    return Workload(process, {"account.json": document}, [insert, commit])


def test_an_extra_source_column_fails_until_a_delete_column_step_drops_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    without = isolate(_workload([]), 9001)
    (failed,) = engine_outcomes(spark, CATALOG, [without], tmp_path / "without")
    assert [error[4] for error in failed["errors"]] == [904]

    with_step = isolate(_workload([{"delete_column": "NICKNAME"}]), 9002)
    (applied,) = engine_outcomes(spark, CATALOG, [with_step], tmp_path / "with")
    assert applied["errors"] == []
    assert applied["tables"] == {"e9002_account": [("1", "Ann")]}


def test_transformations_are_published_in_the_dictionary_and_read_back(
    spark: SparkSession, tmp_path: Path
) -> None:
    steps = [
        {"delete_column": "NICKNAME"},
        {"rename_column": {"from": "NAME", "to": "HOLDER"}, "value_type": "NEW"},
        {"add_column": {"column": "HOLDER", "expression": "upper(command_type)"}},
        {"keep_columns": ["ID", "HOLDER"]},
    ]
    settings = engine_settings(isolate(_workload(steps), 9003), tmp_path)
    admin.publish_settings(spark, CATALOG, settings)
    loaded = admin.load_settings(spark, CATALOG, settings.apply_name)
    assert loaded.tables[0].transformations == settings.tables[0].transformations
    assert [step.kind for step in loaded.tables[0].transformations] == list(TransformationKind)
