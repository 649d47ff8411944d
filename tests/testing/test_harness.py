"""The harness and the pytest plugin of lakeapply.testing on the suite's SparkSession."""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace
from typing import cast

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.bronze.tables import lcr_table_schema
from lakeapply.errors import ConfigurationError, EnvironmentSetupError
from lakeapply.testing import (
    InvalidLcrError,
    LakeapplyHarness,
    apply_settings,
    bronze_frame,
    destination,
    table_definition,
    txn,
)
from lakeapply.testing.plugin import require_delta

EMP = table_definition(
    "HR.EMP", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(20)"}, primary_key=["ID"], not_null=["ID"]
)


def test_the_lakeapply_fixture_runs_on_the_suites_session_in_its_own_databases(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    assert lakeapply.spark.sparkContext is spark.sparkContext  # no second SparkSession
    databases = {row.namespace for row in spark.sql("SHOW DATABASES").collect()}
    assert {
        lakeapply.catalog.bronze,
        lakeapply.catalog.silver,
        lakeapply.catalog.apply,
    } <= databases
    assert lakeapply.catalog.prefix.startswith("lakeapply_test_")


def test_expected_rows_get_the_silver_tables_schema(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(apply_settings(destination(EMP, silver_table="emp")))

    expected = lakeapply.expected("HR.EMP", [(1, "Ann"), {"ID": 2}])

    assert lakeapply.silver_table_name("HR.EMP") == "emp"
    assert expected.schema == T.StructType(
        [
            T.StructField("ID", T.DecimalType(6, 0), False),  # the primary key: NOT NULL
            T.StructField("NAME", T.StringType(), True),
        ]
    )
    assert [tuple(row) for row in expected.collect()] == [(Decimal(1), "Ann"), (Decimal(2), None)]
    with pytest.raises(ConfigurationError, match=r"HR\.DEPT is not a table"):
        lakeapply.silver("HR.DEPT")


def test_an_open_transaction_waits_in_the_spill_and_a_rollback_never_applies(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(EMP))
    long_running = lakeapply.txn().insert("HR.EMP", ID=2, NAME="Bo")
    first_part = long_running.open()

    lakeapply.run(
        first_part,
        lakeapply.txn().insert("HR.EMP", ID=1, NAME="Ann").commit(),
        lakeapply.txn().insert("HR.EMP", ID=3, NAME="Cy").rollback(),
    )

    assert_df_equality(lakeapply.silver("HR.EMP"), lakeapply.expected("HR.EMP", [(1, "Ann")]))
    progress = lakeapply.latest_progress().select("oldest_scn", "total_rolled_back").first()
    assert progress is not None
    assert (progress.oldest_scn, progress.total_rolled_back) == (first_part.lcrs[0]["scn"], 1)
    assert [row.scn for row in lakeapply.spill().collect()] == [first_part.lcrs[0]["scn"]]

    lakeapply.run(long_running.commit())

    assert_df_equality(
        lakeapply.silver("HR.EMP"),
        lakeapply.expected("HR.EMP", [(1, "Ann"), (2, "Bo")]),
        ignore_row_order=True,
    )
    assert lakeapply.apply_status() == "ENABLED"
    assert lakeapply.spill().count() == 0


def test_a_reused_session_without_delta_is_refused_with_the_reason() -> None:
    no_delta = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: default))

    with pytest.raises(EnvironmentSetupError, match="no Delta extension"):
        require_delta(cast(SparkSession, no_delta))


def test_land_lines_goes_through_ingest_and_quarantines_what_breaks_the_contract(
    lakeapply: LakeapplyHarness,
) -> None:
    [good] = lakeapply.txn(scn=5).insert("HR.EMP", ID=1).open()

    lakeapply.land_lines(json.dumps(good), '{"command_type": "INSERT"}')

    assert [row.scn for row in lakeapply.bronze().collect()] == [5]
    assert [row.line_number for row in lakeapply.quarantine().collect()] == [2]


def test_bronze_frame_gives_lcrs_as_bronze_rows_without_landing_them(spark: SparkSession) -> None:
    changes = txn("ORCL", scn=7).insert("HR.EMP", ID=1, NAME="Ann").commit()

    frame = bronze_frame(spark, changes)

    assert [(f.name, f.dataType) for f in frame.schema] == [
        (f.name, f.dataType) for f in lcr_table_schema()
    ]
    rows = frame.orderBy("line_number").collect()
    assert [(row.command_type, row.scn, row.lcr_kind) for row in rows] == [
        ("INSERT", 7, "ROW"),
        ("COMMIT", 8, "DIRECTIVE"),
    ]
    assert [(v.column_name, v.value) for v in rows[0].new_values] == [("ID", "1"), ("NAME", "Ann")]
    with pytest.raises(InvalidLcrError, match="command_type"):
        bronze_frame(spark, {"command_type": "INSERT"})
