"""Declarative rule-based transformations: the documented fix for column discrepancies."""

from __future__ import annotations

import dataclasses
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from lakeapply.silver import admin
from lakeapply.silver.settings import (
    ColumnTransformation,
    DestinationTable,
    TransformationKind,
    ValueImage,
)
from lakeapply.silver.transformations import transform_row_lcrs
from lakeapply.testing import (
    LakeapplyHarness,
    Transaction,
    apply_settings,
    bronze_frame,
    destination,
    table_definition,
    txn,
)
from tests.silver.test_error_messages import ACCOUNT

Image = list[tuple[str, str | None]] | None
HOLDERS = table_definition(
    "APP.ACCOUNT", {"ID": "NUMBER(6)", "HOLDER": "VARCHAR2(5)"}, primary_key=["ID"]
)


def images_after(
    spark: SparkSession, table: DestinationTable, changes: Transaction
) -> list[tuple[Image, Image]]:
    """(old image, new image) of each row LCR after ``table``'s transformations, in SCN order."""
    rows = transform_row_lcrs(bronze_frame(spark, changes), [table]).orderBy("scn").collect()

    def image(values: Any) -> Image:
        return [(v.column_name, v.value) for v in values] if values else None

    return [(image(row.old_values), image(row.new_values)) for row in rows]


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
    changes = (
        txn("DB")
        .insert("APP.ACCOUNT", ID=1, NAME="Ann", LEGACY="x")
        .update("APP.ACCOUNT", old={"ID": 1, "NAME": "Ann"}, new={"NAME": "Bo"})
        .delete("APP.ACCOUNT", ID=1, LEGACY="x")
        .insert("APP.OTHER", ID=1, LEGACY="x")
        .open()
    )

    assert images_after(spark, table, changes) == [
        (None, [("ID", "1"), ("HOLDER", "Ann"), ("STATUS", "OPEN")]),
        ([("ID", "1"), ("HOLDER", "Ann")], [("HOLDER", "Bo"), ("STATUS", "OPEN")]),
        ([("ID", "1")], None),
        (None, [("ID", "1"), ("LEGACY", "x")]),  # another table: untouched
    ]


def test_keep_columns_then_add_a_column_computed_from_the_lcr(spark: SparkSession) -> None:
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
    changes = txn("DB", scn=7).insert("APP.ACCOUNT", ID=1, HOLDER="A", X="y").open()

    assert images_after(spark, table, changes) == [
        (None, [("ID", "1"), ("HOLDER", "A"), ("BALANCE", "70")])
    ]


def test_an_extra_source_column_fails_until_a_delete_column_step_drops_it(
    lakeapply: LakeapplyHarness,
) -> None:
    # One apply, two sources of the same table: one without the step, one with it.
    lakeapply.configure(
        apply_settings(
            destination(HOLDERS, source="PLAIN.DB", silver_table="plain"),
            destination(
                HOLDERS,
                source="STEP.DB",
                silver_table="with_step",
                transformations=[{"delete_column": "NICKNAME"}],
            ),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn("PLAIN.DB").insert("APP.ACCOUNT", ID=1, HOLDER="Ann", NICKNAME="A").commit(),
        lakeapply.txn("STEP.DB").insert("APP.ACCOUNT", ID=1, HOLDER="Ann", NICKNAME="A").commit(),
    )

    assert [
        (row.source_database, row.error_number)
        for row in lakeapply.error_queue().select("source_database", "error_number").collect()
    ] == [("PLAIN.DB", 904)]
    assert lakeapply.silver("plain").count() == 0
    assert_df_equality(lakeapply.silver("with_step"), lakeapply.expected("with_step", [(1, "Ann")]))


def test_transformations_are_published_in_the_dictionary_and_read_back(
    lakeapply: LakeapplyHarness,
) -> None:
    steps = [
        {"delete_column": "NICKNAME"},
        {"rename_column": {"from": "NAME", "to": "HOLDER"}, "value_type": "NEW"},
        {"add_column": {"column": "HOLDER", "expression": "upper(command_type)"}},
        {"keep_columns": ["ID", "HOLDER"]},
    ]
    settings = apply_settings(destination(HOLDERS, transformations=steps))

    admin.publish_settings(lakeapply.spark, lakeapply.catalog, settings)

    loaded = admin.load_settings(lakeapply.spark, lakeapply.catalog, settings.apply_name)
    assert loaded.tables[0].transformations == settings.tables[0].transformations
    assert [step.kind for step in loaded.tables[0].transformations] == list(TransformationKind)[:4]
