"""Rule 10 for whole tables: CREATE TABLE makes a destination table when the apply's rules route
it and a schema or global instantiation SCN covers it (else ORA-26687, or discarded when not
routed); DROP TABLE drops it, and row LCRs after that get ORA-00942. Both are versioned in the
``table_versions`` dictionary and applied exactly once across a crash."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from lakeapply.silver import dictionary
from lakeapply.silver.cycle_state import DROP_RECORDED_CRASH_POINT, SimulatedApplyCrash
from lakeapply.silver.ddl import is_dropped_json, parse_ddl
from lakeapply.silver.engine import apply_cycle
from lakeapply.silver.settings import ApplyRule
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(6,2)"}, primary_key=["ID"]
)
LOAN = "orcl_bank_loan"  # the silver table a CREATE TABLE of BANK.LOAN from ORCL makes
CREATE_LOAN = (
    "CREATE TABLE BANK.LOAN (ID NUMBER(6), AMOUNT NUMBER(8,2), STATUS VARCHAR2(8) DEFAULT 'OPEN', "
    "CONSTRAINT LOAN_PK PRIMARY KEY (ID))"
)
BANK_SCHEMA = (ApplyRule(schema="BANK"),)


def _outcomes(lakeapply: LakeapplyHarness) -> list[tuple[str, str]]:
    return [
        (r.transaction_id, r.outcome)
        for r in lakeapply.transactions().orderBy("commit_scn").collect()
    ]


def _errors(lakeapply: LakeapplyHarness) -> list[tuple[str, int]]:
    return [
        (r.source_transaction_id, int(r.error_number))
        for r in lakeapply.error_queue().orderBy("source_commit_scn").collect()
    ]


def _exists(lakeapply: LakeapplyHarness, silver: str) -> bool:
    return bool(lakeapply.spark.catalog.tableExists(lakeapply.catalog.silver_table(silver)))


@pytest.mark.slow  # ~70-110 s measured on 2 loaded cores (the crash test below creates too)
def test_a_created_table_takes_the_inserts_and_updates_that_follow_with_its_key_and_defaults(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(
        apply_settings(
            ACCOUNT,
            positive_rules=BANK_SCHEMA,
            schema_instantiation_scns=(("ORCL", "BANK", 0),),
        )
    )
    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").ddl("BANK.LOAN", CREATE_LOAN).commit(),
        # One transaction: each DDL barrier costs a cycle, a row transaction more costs none.
        lakeapply.txn(transaction_id="1.1.2")
        .insert("BANK.LOAN", ID=1, AMOUNT=100)
        .update("BANK.LOAN", old={"ID": 1, "AMOUNT": 100}, new={"AMOUNT": 250.5})
        .commit(),
    )

    assert _errors(lakeapply) == []
    # The insert lacks STATUS: the created definition's default (rule 6).
    assert [(int(r.ID), float(r.AMOUNT), r.STATUS) for r in lakeapply.silver(LOAN).collect()] == [
        (1, 250.5, "OPEN")
    ]
    assert _outcomes(lakeapply) == [("1.1.1", "APPLIED"), ("1.1.2", "APPLIED")]
    version = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert [(v.silver_table, v.object_name, v.transaction_id) for v in version] == [
        (LOAN, "LOAN", "1.1.1")
    ]
    assert '"primary_key": ["ID"]' in version[0].definition_json


def test_create_table_of_a_table_the_rules_do_not_route_is_ignored_and_creates_nothing(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    # No positive rule set: the declared tables are the apply's only table rules.
    lakeapply.configure(apply_settings(ACCOUNT, global_instantiation_scns=(("ORCL", 0),)))
    lakeapply.run(lakeapply.txn(transaction_id="2.1.1").ddl("BANK.LOAN", CREATE_LOAN).commit())

    assert _outcomes(lakeapply) == [("2.1.1", "IGNORED")]
    assert _errors(lakeapply) == []
    assert not _exists(lakeapply, LOAN)


def test_create_table_without_a_schema_or_global_instantiation_scn_is_ora_26687(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, positive_rules=BANK_SCHEMA, disable_on_error=False))
    lakeapply.run(lakeapply.txn(transaction_id="3.1.1").ddl("BANK.LOAN", CREATE_LOAN).commit())

    assert _errors(lakeapply) == [("3.1.1", 26687)]
    message = lakeapply.error_queue().collect()[0].error_message
    assert message.startswith('ORA-26687: no instantiation SCN provided for "BANK"."LOAN"')
    assert not _exists(lakeapply, LOAN)


def test_create_table_of_a_table_that_exists_is_ora_00955_and_leaves_it_as_it_was(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(
        apply_settings(
            ACCOUNT,
            positive_rules=BANK_SCHEMA,
            schema_instantiation_scns=(("ORCL", "BANK", 0),),
            disable_on_error=False,
        )
    )
    lakeapply.run(
        lakeapply.txn(transaction_id="4.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit(),
        lakeapply.txn(transaction_id="4.1.2")
        .ddl("BANK.ACCOUNT", "CREATE TABLE BANK.ACCOUNT (ID NUMBER PRIMARY KEY)")
        .commit(),
    )

    assert _errors(lakeapply) == [("4.1.2", 955)]
    assert (
        lakeapply.error_queue()
        .collect()[0]
        .error_message.startswith(
            'ORA-00955: name is already used by an existing object: "BANK"."ACCOUNT"'
        )
    )
    assert [(int(r.ID), float(r.BALANCE)) for r in lakeapply.silver("BANK.ACCOUNT").collect()] == [
        (1, 10.0)
    ]


@pytest.mark.slow  # two DDL barriers: four cycles (~78 s measured on 2 loaded cores)
def test_a_dropped_table_is_gone_and_a_later_insert_into_it_is_ora_00942(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, positive_rules=BANK_SCHEMA, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="5.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit(),
        lakeapply.txn(transaction_id="5.1.2")
        .ddl("BANK.ACCOUNT", "DROP TABLE BANK.ACCOUNT PURGE")
        .commit(),
        lakeapply.txn(transaction_id="5.1.3").insert("BANK.ACCOUNT", ID=2, BALANCE=20).commit(),
        # Routed by the schema rule, but no such table at the destination.
        lakeapply.txn(transaction_id="5.1.4").ddl("BANK.NOSUCH", "DROP TABLE BANK.NOSUCH").commit(),
    )

    assert not _exists(lakeapply, "orcl_bank_account")
    assert _outcomes(lakeapply) == [
        ("5.1.1", "APPLIED"),
        ("5.1.2", "APPLIED"),
        ("5.1.3", "ERROR"),
        ("5.1.4", "ERROR"),
    ]
    assert _errors(lakeapply) == [("5.1.3", 942), ("5.1.4", 942)]
    versions = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert [(v.transaction_id, is_dropped_json(v.definition_json)) for v in versions] == [
        ("5.1.2", True)
    ]


@pytest.mark.parametrize(
    "crash_after",
    [DROP_RECORDED_CRASH_POINT, pytest.param("merges", marks=pytest.mark.slow)],  # CI time
)
def test_a_crash_during_a_drop_table_then_a_rerun_drops_it_once(
    spark: SparkSession, lakeapply: LakeapplyHarness, crash_after: str
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.run(lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit())
    lakeapply.land(
        lakeapply.txn().ddl("BANK.ACCOUNT", "DROP TABLE BANK.ACCOUNT").commit(),
    )

    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(spark, lakeapply.catalog, lakeapply.apply_process, crash_after=crash_after)
    lakeapply.apply()  # resumes the DDL cycle from its plan; the declared table is not remade

    assert _errors(lakeapply) == []  # a second DROP would be ORA-00942
    assert not _exists(lakeapply, "orcl_bank_account")
    assert [o for _, o in _outcomes(lakeapply)] == ["APPLIED", "APPLIED"]
    assert lakeapply._apply_table(dictionary.TABLE_VERSIONS).count() == 1


def test_a_crash_after_a_create_table_then_a_rerun_creates_it_once_and_applies_what_follows(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(
        apply_settings(
            ACCOUNT, positive_rules=BANK_SCHEMA, global_instantiation_scns=(("ORCL", 0),)
        )
    )
    lakeapply.land(
        lakeapply.txn().ddl("BANK.LOAN", CREATE_LOAN).commit(),
        lakeapply.txn().insert("BANK.LOAN", ID=7, AMOUNT=1).commit(),
    )

    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(spark, lakeapply.catalog, lakeapply.apply_process, crash_after="merges")
    lakeapply.apply()

    assert _errors(lakeapply) == []  # a second CREATE would be ORA-00955
    assert [int(r.ID) for r in lakeapply.silver(LOAN).collect()] == [7]
    assert lakeapply._apply_table(dictionary.TABLE_VERSIONS).count() == 1
    assert lakeapply.transactions().count() == 2


def test_create_table_reads_an_out_of_line_primary_key_and_literal_defaults() -> None:
    created = parse_ddl(CREATE_LOAN, "HR").created
    assert created is not None
    assert created.qualified_name == "BANK.LOAN"
    assert created.primary_key == ("ID",)
    assert not created.column("ID").nullable  # a primary key column is NOT NULL
    assert created.column("STATUS").default == "OPEN"


def test_create_table_reads_inline_and_out_of_line_unique_constraints_as_unique_keys() -> None:
    created = parse_ddl(
        "CREATE TABLE BANK.CARD (ID NUMBER, PAN VARCHAR2(19) CONSTRAINT CARD_PAN UNIQUE, "
        "HOLDER NUMBER NOT NULL, SEQ NUMBER, UNIQUE (HOLDER, SEQ))",
        "BANK",
    ).created
    assert created is not None
    assert [(k.name, k.columns) for k in created.unique_keys] == [
        ("CARD_PAN", ("PAN",)),
        ("CARD_UK2", ("HOLDER", "SEQ")),
    ]
    # no primary key: the key is the unique key with a NOT NULL column (rule 5), not every column
    assert (created.primary_key, created.key_columns()) == ((), ("HOLDER", "SEQ"))


def test_create_table_as_select_of_a_routed_table_goes_to_the_error_queue_not_ignored(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(
        apply_settings(
            ACCOUNT,
            positive_rules=BANK_SCHEMA,
            schema_instantiation_scns=(("ORCL", "BANK", 0),),
            disable_on_error=False,
        )
    )
    ctas = "CREATE TABLE BANK.LOAN AS SELECT ID, BALANCE AS AMOUNT FROM BANK.ACCOUNT"
    lakeapply.run(lakeapply.txn(transaction_id="4.1.1").ddl("BANK.LOAN", ctas).commit())

    assert _errors(lakeapply) == [("4.1.1", 3001)]
    message = lakeapply.error_queue().collect()[0].error_message
    assert message.startswith(
        'ORA-03001: CREATE TABLE "BANK"."LOAN" AS SELECT is not applied: the rows it copies are '
        "not in the LCR stream"
    )
    assert not _exists(lakeapply, LOAN)


def test_a_default_literal_is_kept_as_its_value_not_as_its_sql_text() -> None:
    statement = parse_ddl("ALTER TABLE BANK.ACCOUNT ADD (NOTE VARCHAR2(9) DEFAULT 'it''s')", "BANK")
    assert statement.added[0].column.default == "it's"
