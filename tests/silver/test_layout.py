"""Destination tables laid out by key: liquid clustering on the first key column (the column
the cycle's key range prunes files on), kept through DDL and realigned by ``lakeapply optimize``."""

from __future__ import annotations

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.runtime.catalog import ensure_database, ensure_delta_table
from lakeapply.silver.ddl import parse_ddl
from lakeapply.silver.ddl_apply import DdlChange, _ddl_steps
from lakeapply.silver.layout import clustering_columns, optimize_destinations, unquoted_column
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(20)"}, primary_key=["ID"]
)


def _clustering(spark: SparkSession, qualified: str) -> list[str]:
    detail = DeltaTable.forName(spark, qualified).detail().collect()[0]
    return [unquoted_column(column) for column in detail.clusteringColumns]


def _silver(lakeapply: LakeapplyHarness, definition: TableDefinition) -> str:
    return lakeapply.catalog.silver_table(destination(definition).silver_table)


@pytest.mark.parametrize(
    ("key_type", "clustered"),
    [
        ("NUMBER(6)", True),
        ("VARCHAR2(10)", True),
        ("DATE", True),
        ("BINARY_DOUBLE", True),
        ("RAW(16)", False),  # no statistics on BINARY: Delta refuses to cluster on it
        ("TIMESTAMP WITH TIME ZONE", False),  # the key range does not prune on it
        ("INTERVAL DAY TO SECOND", False),
    ],
)
def test_the_first_key_column_is_clustered_when_a_key_range_prunes_on_it(
    key_type: str, clustered: bool
) -> None:
    table = table_definition("S.T", {"K": key_type, "V": "NUMBER"}, primary_key=["K"])
    assert clustering_columns(destination(table)) == (("K",) if clustered else ())


def test_a_substitute_key_is_clustered_unless_delta_keeps_no_statistics_for_it() -> None:
    columns = {f"C{n:02d}": "NUMBER" for n in range(40)}
    wide = table_definition("S.WIDE", columns, primary_key=["C00"])
    assert clustering_columns(destination(wide, key_columns=["C05", "C00"])) == ("C05",)
    assert clustering_columns(destination(wide, key_columns=["C35"])) == ()


def test_new_destination_tables_are_clustered_on_their_first_key_column(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    keyless = table_definition("BANK.NOTE", {"TEXT": "VARCHAR2(9)", "AT": "DATE"})
    lakeapply.configure(apply_settings(ACCOUNT, keyless))
    lakeapply.create_tables()

    assert _clustering(spark, _silver(lakeapply, ACCOUNT)) == ["ID"]
    # All non-LOB columns are the key (rule 5): the first of them.
    assert _clustering(spark, _silver(lakeapply, keyless)) == ["TEXT"]


def test_optimize_follows_a_key_change_and_clusters_a_table_made_unclustered(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    older = table_definition("BANK.LEDGER", {"ENTRY": "NUMBER(9)"}, primary_key=["ENTRY"])
    ledger = _silver(lakeapply, older)
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.create_tables()
    ensure_delta_table(spark, ledger, older.spark_schema(), keep_not_null=True)
    lakeapply.run(lakeapply.txn().insert("BANK.ACCOUNT", ID=1, NAME="Ann").commit())

    renamed_key = apply_settings(destination(ACCOUNT, key_columns=["NAME"]), older)
    layouts = optimize_destinations(spark, lakeapply.catalog, renamed_key)

    assert [(t.clustering, t.reclustered, t.optimized) for t in layouts] == [
        (("NAME",), True, True),
        (("ENTRY",), True, True),
    ]
    assert _clustering(spark, _silver(lakeapply, ACCOUNT)) == ["NAME"]
    assert _clustering(spark, ledger) == ["ENTRY"]
    assert [tuple(r) for r in lakeapply.silver("BANK.ACCOUNT").collect()] == [(1, "Ann")]
    again = optimize_destinations(spark, lakeapply.catalog, renamed_key)
    assert [t.reclustered for t in again] == [False, False]


def test_optimize_leaves_a_partitioned_table_alone(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    name = _silver(lakeapply, ACCOUNT)
    ensure_database(spark, lakeapply.catalog.database(lakeapply.catalog.silver))
    spark.sql(
        f"CREATE TABLE {name} (ID DECIMAL(6,0), NAME STRING) USING delta PARTITIONED BY (NAME)"
    )

    (layout,) = optimize_destinations(spark, lakeapply.catalog, apply_settings(ACCOUNT))

    assert (layout.optimized, layout.note) == (False, "partitioned: not clustered")
    assert _clustering(spark, name) == []


def test_a_modify_that_replaces_the_clustered_column_unclusters_it_first() -> None:
    item = table_definition(
        "SHOP.ITEM", {"ID": "NUMBER(6)", "TAG": "VARCHAR2(9)"}, primary_key=["ID"]
    )
    statement = parse_ddl("ALTER TABLE SHOP.ITEM MODIFY (ID VARCHAR2(6))", "SHOP")
    modified = table_definition(
        "SHOP.ITEM", {"ID": "VARCHAR2(6)", "TAG": "VARCHAR2(9)"}, primary_key=["ID"]
    )
    change = DdlChange(destination(item), statement, modified)
    mapped = {"delta.columnMapping.mode": "name"}
    before = T.StructType(
        [T.StructField("ID", T.DecimalType(6, 0)), T.StructField("TAG", T.StringType())]
    )

    assert _ddl_steps(change, before, mapped, ("ID",)) == [
        "ALTER TABLE {table} CLUSTER BY NONE",
        "ALTER TABLE {table} DROP COLUMNS (`ID`)",
        "ALTER TABLE {table} ADD COLUMNS (`ID` string FIRST)",
        "ALTER TABLE {table} CLUSTER BY (`ID`)",
    ]
    # An unclustered table (made before lakeapply clustered its tables) is left unclustered.
    assert _ddl_steps(change, before, mapped)[0] == "ALTER TABLE {table} DROP COLUMNS (`ID`)"
    # A rename carries the clustering along (Delta renames it with the column).
    rename = parse_ddl("ALTER TABLE SHOP.ITEM RENAME COLUMN ID TO CODE", "SHOP")
    renamed = table_definition(
        "SHOP.ITEM", {"CODE": "NUMBER(6)", "TAG": "VARCHAR2(9)"}, primary_key=["CODE"]
    )
    assert "CLUSTER BY" not in " ".join(
        _ddl_steps(DdlChange(destination(item), rename, renamed), before, mapped, ("ID",))
    )


def test_the_clustered_key_column_of_an_empty_table_takes_a_new_type(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    modify = lakeapply.txn(transaction_id="1.1.1").ddl(
        "BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT MODIFY (ID VARCHAR2(8))"
    )
    insert = lakeapply.txn(transaction_id="1.1.2").insert("BANK.ACCOUNT", ID="A-1", NAME="Ann")

    lakeapply.run(modify.commit(), insert.commit())

    assert sorted((r.transaction_id, r.outcome) for r in lakeapply.transactions().collect()) == [
        ("1.1.1", "APPLIED"),
        ("1.1.2", "APPLIED"),
    ]
    assert [tuple(r) for r in lakeapply.silver("BANK.ACCOUNT").collect()] == [("A-1", "Ann")]
    assert _clustering(spark, _silver(lakeapply, ACCOUNT)) == ["ID"]
