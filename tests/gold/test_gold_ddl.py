"""The gold views follow the DDL the engine applied (rule 10): a table made by CREATE TABLE is a
destination table there, keyed by its created definition; a dropped one is no live destination
any more; DBA_APPLY_TABLE_VERSIONS lists every definition version. One engine run (with a crash
at the recorded DROP TABLE, then the rerun), one publish of lakeapply.yml after it, and one
``dbt build`` serve the whole module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from lakeapply.gold import GoldError, GoldReport, run_gold, session_warehouse
from lakeapply.silver.admin import publish_settings
from lakeapply.silver.cycle_state import DROP_RECORDED_CRASH_POINT, SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle
from lakeapply.silver.settings import ApplyRule
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`: its module-scoped
# fixture is built once. Slow: four DDL and row cycles, a crashed one and its rerun, a publish
# and a dbt build (130-235 s measured with the session start on 2 loaded cores); the
# dbt unit tests of int_destination_table_versions and apply_lag cover the logic in `make test`.
pytestmark = [pytest.mark.xdist_group(__name__), pytest.mark.slow]

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(6,2)"}, primary_key=["ID"]
)
CREATE_LOAN = (
    "CREATE TABLE BANK.LOAN (ID NUMBER(6), AMOUNT NUMBER(8,2) NOT NULL, "
    "CONSTRAINT LOAN_PK PRIMARY KEY (ID))"
)
ADD_NOTE = "ALTER TABLE BANK.ACCOUNT ADD (NOTE VARCHAR2(5))"
DROP_ACCOUNT = "DROP TABLE BANK.ACCOUNT"


@dataclass(frozen=True)
class Gold:
    lakeapply: LakeapplyHarness
    report: GoldReport

    def view(self, name: str) -> list[Row]:
        frame = self.lakeapply.spark.table(f"{self.lakeapply.catalog.prefix}_gold.{name}")
        return sorted(frame.collect(), key=lambda row: tuple(str(value) for value in row))


@pytest.fixture(scope="module")
def gold(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gold]:
    lakeapply = LakeapplyHarness.temporary(spark, Path(tmp_path_factory.mktemp("ddlgold")))
    settings = lakeapply.configure(
        apply_settings(
            ACCOUNT,
            positive_rules=(ApplyRule(schema="BANK"),),
            schema_instantiation_scns=(("ORCL", "BANK", 0),),
        )
    )
    lakeapply.run(
        lakeapply.txn(scn=10, transaction_id="1.1.1").ddl("BANK.LOAN", CREATE_LOAN).commit(scn=11),
        lakeapply.txn(scn=20, transaction_id="1.1.2")
        .insert("BANK.LOAN", ID=1, AMOUNT=100)
        .insert("BANK.ACCOUNT", ID=1, BALANCE=10)
        .commit(scn=21),
        lakeapply.txn(scn=30, transaction_id="1.1.3").ddl("BANK.ACCOUNT", ADD_NOTE).commit(scn=31),
    )
    lakeapply.land(
        lakeapply.txn(scn=40, transaction_id="1.1.4")
        .ddl("BANK.ACCOUNT", DROP_ACCOUNT)
        .commit(scn=41)
    )
    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(spark, lakeapply.catalog, settings, crash_after=DROP_RECORDED_CRASH_POINT)
    lakeapply.apply()  # the resumed DDL cycle finishes the drop
    # The DBA publishes lakeapply.yml after the DDL: it declares ACCOUNT only, as before.
    publish_settings(spark, lakeapply.catalog, settings)
    report = run_gold(spark, session_warehouse(spark), lakeapply.catalog.prefix)
    yield Gold(lakeapply, report)


def test_the_gold_build_passes_every_test_over_the_engine_s_ddl(gold: Gold) -> None:
    assert gold.report.success, gold.report.failures
    assert (gold.report.tests_failed, gold.report.errors) == (0, 0)
    assert gold.lakeapply.error_queue().count() == 0


def test_dba_apply_table_versions_lists_each_definition_with_its_ddl_scn_and_keys(
    gold: Gold,
) -> None:
    versions = [
        (
            r.SOURCE_OBJECT_NAME,
            r.OBJECT_NAME,
            r.VERSION,
            r.STATUS,
            r.CURRENT_VERSION,
            r.SOURCE_COMMIT_SCN,
            r.SOURCE_TRANSACTION_ID,
            r.DDL_TEXT,
            r.COLUMNS,
            r.KEY_COLUMNS,
        )
        for r in gold.view("dba_apply_table_versions")
    ]
    account = "orcl_bank_account"
    declared = "ID NUMBER(6,0) NOT NULL, BALANCE NUMBER(6,2)"
    added = f"{declared}, NOTE VARCHAR2(5)"
    assert versions == [
        ("ACCOUNT", account, 0, "VALID", "NO", None, None, None, declared, "ID"),
        ("ACCOUNT", account, 1, "VALID", "NO", 31, "1.1.3", ADD_NOTE, added, "ID"),
        # The crash after recording the drop and the rerun leave one version for it.
        ("ACCOUNT", account, 2, "DROPPED", "YES", 41, "1.1.4", DROP_ACCOUNT, added, "ID"),
        (
            "LOAN",
            "orcl_bank_loan",
            1,
            "VALID",
            "YES",
            11,
            "1.1.1",
            CREATE_LOAN,
            "ID NUMBER(6,0) NOT NULL, AMOUNT NUMBER(8,2) NOT NULL",
            "ID",
        ),
    ]


def test_a_created_table_is_a_live_destination_and_a_dropped_one_is_not(gold: Gold) -> None:
    # apply_lag lists the live destination tables: LOAN, made by CREATE TABLE and never
    # declared, survives the later publish of lakeapply.yml; ACCOUNT, dropped, is gone.
    lag = [(r.OBJECT_NAME, r.SILVER_TABLE, r.LAST_APPLIED_SCN) for r in gold.view("apply_lag")]
    assert lag == [("LOAN", "orcl_bank_loan", 21)]


def test_the_declared_settings_views_keep_what_lakeapply_yml_set(gold: Gold) -> None:
    # DBA_APPLY_INSTANTIATED_OBJECTS lists the table-level instantiation SCNs that were set
    # (lakeapply.yml): a dropped table keeps its row, as Oracle's view does; a created table
    # has none (its schema-level SCN is in DBA_APPLY_INSTANTIATED_SCHEMAS).
    objects = [r.SOURCE_OBJECT_NAME for r in gold.view("dba_apply_instantiated_objects")]
    assert objects == ["ACCOUNT"]
    schemas = [
        (r.SOURCE_SCHEMA, r.INSTANTIATION_SCN) for r in gold.view("dba_apply_instantiated_schemas")
    ]
    assert schemas == [("BANK", 0)]


def test_a_duplicate_key_in_a_created_table_fails_the_duplicate_keys_test(
    spark: SparkSession, gold: Gold
) -> None:
    # LOAN's key is its created definition's primary key: a second ID 1 is a duplicate.
    loan = gold.lakeapply.catalog.silver_table("orcl_bank_loan")
    spark.sql(f"INSERT INTO {loan} (ID, AMOUNT) VALUES (1, 5)")
    try:
        with pytest.raises(GoldError, match="assert_no_duplicate_keys_in_silver_tables") as raised:
            run_gold(
                spark,
                session_warehouse(spark),
                gold.lakeapply.catalog.prefix,
                "test",
                select=["assert_no_duplicate_keys_in_silver_tables"],
            )
        assert raised.value.report is not None
        assert raised.value.report.tests_failed == 1
    finally:
        spark.sql(f"DELETE FROM {loan} WHERE AMOUNT = 5")
