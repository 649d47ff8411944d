"""Rules 9 and 10 in the engine: a DDL transaction is a barrier applied alone; ALTER TABLE
ADD / DROP / RENAME / MODIFY and TRUNCATE change the destination and its versioned definition;
a DDL that changes no column or row is IGNORED; one that fails goes to the error queue."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.silver import dictionary
from lakeapply.silver.cycle_state import SimulatedApplyCrash
from lakeapply.silver.ddl import DdlError, parse_ddl, stored_values_checks
from lakeapply.silver.ddl_apply import DdlChange, _ddl_steps
from lakeapply.silver.engine import apply_cycle
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(6,2)"}, primary_key=["ID"]
)


def _rows(lakeapply: LakeapplyHarness) -> list[tuple[object, ...]]:
    frame = lakeapply.silver("BANK.ACCOUNT")
    return sorted(tuple(row) for row in frame.select(*sorted(frame.columns)).collect())


def _outcomes(lakeapply: LakeapplyHarness) -> list[tuple[str, str]]:
    return [
        (r.transaction_id, r.outcome)
        for r in lakeapply.transactions().orderBy("commit_scn").collect()
    ]


def test_an_update_before_an_add_column_and_an_insert_using_it_after_apply_in_order(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    insert = lakeapply.txn(transaction_id="1.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10)
    update = lakeapply.txn(transaction_id="1.1.2").update(
        "BANK.ACCOUNT", old={"ID": 1, "BALANCE": 10}, new={"BALANCE": 20}
    )
    add = lakeapply.txn(transaction_id="1.1.3").ddl(
        "BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT ADD (STATUS VARCHAR2(10) DEFAULT 'OPEN')"
    )
    after = lakeapply.txn(transaction_id="1.1.4").insert(
        "BANK.ACCOUNT", ID=2, BALANCE=5, STATUS="NEW"
    )

    # One landing batch: the barrier, not the batches, orders them.
    lakeapply.run(insert.commit(), update.commit(), add.commit(), after.commit())

    assert _rows(lakeapply) == [(5, 2, "NEW"), (20, 1, "OPEN")]
    assert _outcomes(lakeapply) == [
        ("1.1.1", "APPLIED"),
        ("1.1.2", "APPLIED"),
        ("1.1.3", "APPLIED"),
        ("1.1.4", "APPLIED"),
    ]
    versions = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert [v.transaction_id for v in versions] == ["1.1.3"]
    assert "STATUS" in versions[0].definition_json
    progress = lakeapply.latest_progress().collect()[0]
    assert progress.total_applied == 4
    assert lakeapply.error_queue().count() == 0


@pytest.mark.slow  # five DDL barriers: six cycles (~210 s measured on 2 loaded cores)
def test_rename_widen_and_drop_column_change_the_destination_and_later_lcrs_follow(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.run(
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit(),
        lakeapply.txn()
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT ADD (NOTE VARCHAR2(5), EXTRA NUMBER)")
        .commit(),
        lakeapply.txn()
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT RENAME COLUMN NOTE TO REMARK")
        .commit(),
        lakeapply.txn()
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT MODIFY (BALANCE NUMBER(12,2))")
        .commit(),
        lakeapply.txn().ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT DROP COLUMN EXTRA").commit(),
        # 123456.5 needs NUMBER(8,2): ORA-01438 before the MODIFY.
        lakeapply.txn().insert("BANK.ACCOUNT", ID=2, BALANCE=123456.5, REMARK="hello").commit(),
    )

    assert lakeapply.error_queue().count() == 0
    assert set(lakeapply.silver("BANK.ACCOUNT").columns) == {"ID", "BALANCE", "REMARK"}
    rows = sorted(
        (int(r.ID), float(r.BALANCE), r.REMARK) for r in lakeapply.silver("BANK.ACCOUNT").collect()
    )
    assert rows == [(1, 10.0, None), (2, 123456.5, "hello")]


@pytest.mark.slow  # MODIFY end to end; make test keeps its unit tests below (CI time)
def test_a_varchar2_holding_values_becomes_a_char_of_its_size_with_the_values_padded(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    holder = table_definition(
        "BANK.HOLDER", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(5)"}, primary_key=["ID"]
    )
    lakeapply.configure(apply_settings(holder))
    lakeapply.run(
        lakeapply.txn().insert("BANK.HOLDER", ID=1, NAME="ab").insert("BANK.HOLDER", ID=2).commit(),
        lakeapply.txn()
        .ddl("BANK.HOLDER", "ALTER TABLE BANK.HOLDER MODIFY (NAME CHAR(5))")
        .commit(),
        lakeapply.txn().insert("BANK.HOLDER", ID=3, NAME="cd").commit(),
    )

    assert lakeapply.error_queue().count() == 0
    rows = sorted((int(r.ID), r.NAME) for r in lakeapply.silver("BANK.HOLDER").collect())
    assert rows == [(1, "ab   "), (2, None), (3, "cd   ")]


def test_renaming_makes_the_destination_follow_the_new_name_unless_it_is_taken(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    ledger = table_definition("BANK.LEDGER", {"ID": "NUMBER(6)"}, primary_key=["ID"])
    lakeapply.configure(apply_settings(ACCOUNT, ledger, disable_on_error=False))

    def rename(transaction_id: str, ddl: str) -> Any:
        return lakeapply.txn(transaction_id=transaction_id).ddl("BANK.ACCOUNT", ddl).commit()

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit(),
        # another destination's name: ORA-00955
        rename("1.1.2", "ALTER TABLE BANK.ACCOUNT RENAME TO LEDGER"),
        rename("1.1.3", "RENAME ACCOUNT TO ACCOUNTS"),  # Oracle's statement: the LCR's schema
        lakeapply.txn(transaction_id="1.1.4").insert("BANK.ACCOUNTS", ID=2, BALANCE=5).commit(),
        # The old name names no destination any more: not routed, like an unmapped table.
        lakeapply.txn(transaction_id="1.1.5").insert("BANK.ACCOUNT", ID=3, BALANCE=1).commit(),
    )

    assert _rows(lakeapply) == [(5, 2), (10, 1)]
    errors = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number) for e in errors] == [("1.1.2", 955)]
    assert _outcomes(lakeapply)[2:] == [
        ("1.1.3", "APPLIED"),
        ("1.1.4", "APPLIED"),
        ("1.1.5", "APPLIED"),
    ]
    versions = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert ['"name": "ACCOUNTS"' in v.definition_json for v in versions] == [True]


@pytest.mark.slow  # MODIFY end to end; make test keeps its unit tests below (CI time)
def test_modify_shortens_a_character_column_only_when_every_value_fits(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    holder = table_definition(
        "BANK.HOLDER", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(10)"}, primary_key=["ID"]
    )
    lakeapply.configure(apply_settings(holder, disable_on_error=False))
    too_short = lakeapply.txn(transaction_id="2.2.2").ddl(
        "BANK.HOLDER", "ALTER TABLE BANK.HOLDER MODIFY (NAME VARCHAR2(4))"
    )
    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("BANK.HOLDER", ID=1, NAME="Alice").commit(),
        too_short.commit(),  # "Alice" is longer: ORA-01441, nothing changes
        lakeapply.txn(transaction_id="3.3.3")
        .ddl("BANK.HOLDER", "ALTER TABLE BANK.HOLDER MODIFY (NAME VARCHAR2(5))")
        .commit(),
        lakeapply.txn(transaction_id="4.4.4").insert("BANK.HOLDER", ID=2, NAME="Robert").commit(),
    )

    errors = sorted(
        (r.source_transaction_id, r.error_number) for r in lakeapply.error_queue().collect()
    )
    assert errors == [("2.2.2", 1441), ("4.4.4", 12899)]
    assert [tuple(r) for r in lakeapply.silver("BANK.HOLDER").collect()] == [(1, "Alice")]
    versions = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert [v.transaction_id for v in versions] == ["3.3.3"]
    assert '"VARCHAR2(5)"' in versions[0].definition_json


@pytest.mark.slow  # MODIFY end to end; make test keeps its unit tests below (CI time)
def test_a_type_change_or_a_smaller_precision_applies_only_to_an_empty_column(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    item = table_definition(
        "SHOP.ITEM",
        {
            "ID": "NUMBER(6)",
            "PRICE": "NUMBER(6,2)",
            "TAG": "VARCHAR2(10)",
            "NOTE": "VARCHAR2(9)",
            "AT": "TIMESTAMP(6)",
        },
        primary_key=["ID"],
    )
    lakeapply.configure(apply_settings(item, disable_on_error=False))

    def modify(transaction_id: str, change: str) -> Any:
        ddl = f"ALTER TABLE SHOP.ITEM MODIFY ({change})"
        return lakeapply.txn(transaction_id=transaction_id).ddl("SHOP.ITEM", ddl).commit()

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1")
        .insert("SHOP.ITEM", ID=1, PRICE=10.5, TAG=None, NOTE="x", AT="2026-11-27T10:00:00.5")
        .commit(),
        modify("2.2.2", "PRICE NUMBER(4,1)"),  # PRICE holds 10.5: ORA-01440
        modify("2.2.3", "AT TIMESTAMP(3)"),  # AT holds a value: fewer fractional digits, 01440
        modify("3.3.3", "TAG NUMBER(3)"),  # every TAG is NULL: applied, in its place
        modify("4.4.4", "NOTE NUMBER(3)"),  # NOTE holds 'x': ORA-01439
        modify("5.5.5", "NOTE CLOB"),  # never to a LOB: ORA-22858
        lakeapply.txn(transaction_id="6.6.6")
        .insert("SHOP.ITEM", ID=2, PRICE=1, TAG=7, NOTE="y")
        .commit(),
    )

    errors = sorted(
        (r.source_transaction_id, r.error_number) for r in lakeapply.error_queue().collect()
    )
    assert errors == [("2.2.2", 1440), ("2.2.3", 1440), ("4.4.4", 1439), ("5.5.5", 22858)]
    silver = lakeapply.silver("SHOP.ITEM")
    assert [(f.name, f.dataType.simpleString()) for f in silver.schema.fields] == [
        ("ID", "decimal(6,0)"),
        ("PRICE", "decimal(6,2)"),
        ("TAG", "decimal(3,0)"),
        ("NOTE", "string"),
        ("AT", "timestamp_ntz"),
    ]
    rows = sorted((int(r.ID), float(r.PRICE), r.TAG, r.NOTE) for r in silver.collect())
    assert rows == [(1, 10.5, None, "x"), (2, 1.0, 7, "y")]


def test_truncate_table_empties_the_destination_between_the_inserts_around_it(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.run(
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit(),
        lakeapply.txn().ddl("BANK.ACCOUNT", "TRUNCATE TABLE BANK.ACCOUNT").commit(),
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=30).commit(),
    )

    assert _rows(lakeapply) == [(30, 1)]
    assert lakeapply.error_queue().count() == 0


def test_a_ddl_committed_at_or_below_the_instantiation_scn_is_discarded_like_a_row_lcr(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(destination(ACCOUNT, instantiation_scn=200)))
    lakeapply.run(
        lakeapply.txn(scn=150, transaction_id="5.1.1")
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT ADD (STATUS VARCHAR2(10))")
        .commit(scn=160),
        lakeapply.txn(scn=300, transaction_id="5.1.2")
        .insert("BANK.ACCOUNT", ID=1, BALANCE=2)
        .commit(),
    )

    # The copy instantiated at SCN 200 already has what committed at 160 (rule 3).
    assert _outcomes(lakeapply) == [("5.1.1", "IGNORED"), ("5.1.2", "APPLIED")]
    assert _rows(lakeapply) == [(2, 1)]
    assert lakeapply._apply_table(dictionary.TABLE_VERSIONS).count() == 0
    assert lakeapply.error_queue().count() == 0


def test_an_index_ddl_is_ignored_and_a_failing_ddl_goes_to_the_error_queue(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="4.1.1")
        .ddl("BANK.ACCOUNT", "CREATE INDEX BANK.ACCOUNT_IX ON BANK.ACCOUNT (BALANCE)")
        .commit(),
        lakeapply.txn(transaction_id="4.1.2")
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT DROP COLUMN NOSUCH")
        .commit(),
        lakeapply.txn(transaction_id="4.1.3").insert("BANK.ACCOUNT", ID=1, BALANCE=1).commit(),
    )

    assert _outcomes(lakeapply) == [
        ("4.1.1", "IGNORED"),
        ("4.1.2", "ERROR"),
        ("4.1.3", "APPLIED"),
    ]
    error = lakeapply.error_queue().collect()[0]
    assert error.source_transaction_id == "4.1.2"
    assert error.error_number == 904
    assert error.error_message.startswith('ORA-00904: "NOSUCH": invalid identifier')
    messages = lakeapply.error_messages().collect()
    assert [m.ddl_text for m in messages] == ["ALTER TABLE BANK.ACCOUNT DROP COLUMN NOSUCH"]
    assert _rows(lakeapply) == [(1, 1)]

    # EXECUTE_ERROR re-runs the DDL against the destination as it is now: it fails again.
    execution = lakeapply.execute_error(error.local_transaction_id)
    assert not execution.succeeded
    assert execution.error_number == 904
    assert lakeapply.error_queue().count() == 1


@pytest.mark.slow  # MODIFY end to end; make test keeps its unit tests below (CI time)
def test_the_dba_empties_a_column_then_execute_all_errors_applies_the_queued_modify_in_order(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    item = table_definition(
        "SHOP.ITEM", {"ID": "NUMBER(6)", "TAG": "VARCHAR2(5)"}, primary_key=["ID"]
    )
    lakeapply.configure(apply_settings(item, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("SHOP.ITEM", ID=1, TAG="a").commit(),
        lakeapply.txn(transaction_id="2.2.2")
        .ddl("SHOP.ITEM", "ALTER TABLE SHOP.ITEM MODIFY (TAG NUMBER(3))")
        .commit(),  # TAG holds 'a': ORA-01439
        lakeapply.txn(transaction_id="3.3.3").insert("SHOP.ITEM", ID=2, TAG="7").commit(),
    )
    errors = sorted(
        (r.source_transaction_id, r.error_number) for r in lakeapply.error_queue().collect()
    )
    assert errors == [("2.2.2", 1439)]
    # The DBA's fix: the column emptied with Spark SQL (the values are kept elsewhere).
    table = lakeapply.catalog.silver_table(lakeapply.silver_table_name("SHOP.ITEM"))
    spark.sql(f"UPDATE {table} SET TAG = NULL")

    executions = lakeapply.execute_all_errors()

    assert [(e.source_transaction_id, e.succeeded) for e in executions] == [("2.2.2", True)]
    assert lakeapply.error_queue().count() == 0
    silver = lakeapply.silver("SHOP.ITEM")
    assert silver.schema["TAG"].dataType.simpleString() == "decimal(3,0)"
    versions = lakeapply._apply_table(dictionary.TABLE_VERSIONS).collect()
    assert [v.transaction_id for v in versions] == ["2.2.2"]
    assert '"NUMBER(3,0)"' in versions[0].definition_json
    # Later LCRs apply under the new type.
    lakeapply.run(lakeapply.txn(transaction_id="5.5.5").insert("SHOP.ITEM", ID=3, TAG="8").commit())
    rows = sorted((int(r.ID), r.TAG) for r in lakeapply.silver("SHOP.ITEM").collect())
    assert rows == [(1, None), (2, None), (3, 8)]


def test_a_crash_after_the_ddl_then_a_rerun_applies_it_once(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT))
    lakeapply.run(lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=10).commit())
    lakeapply.land(
        lakeapply.txn()
        .ddl("BANK.ACCOUNT", "ALTER TABLE BANK.ACCOUNT ADD (STATUS VARCHAR2(4) DEFAULT 'OK')")
        .commit(),
        lakeapply.txn().insert("BANK.ACCOUNT", ID=2, BALANCE=2, STATUS="NEW").commit(),
    )

    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(spark, lakeapply.catalog, lakeapply.apply_process, crash_after="merges")
    lakeapply.apply()  # resumes the DDL cycle from its plan, then the insert

    assert lakeapply.error_queue().count() == 0  # ADD again would be ORA-01430
    assert _rows(lakeapply) == [(2, 2, "NEW"), (10, 1, "OK")]
    assert lakeapply.transactions().count() == 3


def test_char_and_varchar2_of_the_same_size_swap_whatever_the_column_holds() -> None:
    item = table_definition("SHOP.ITEM", {"ID": "NUMBER(6)", "TAG": "VARCHAR2(10)"})
    to_char = parse_ddl("ALTER TABLE SHOP.ITEM MODIFY (TAG CHAR(10))", "SHOP")
    wider = parse_ddl("ALTER TABLE SHOP.ITEM MODIFY (TAG CHAR(12))", "SHOP")
    current = T.StructType(
        [T.StructField("ID", T.DecimalType(6, 0)), T.StructField("TAG", T.StringType())]
    )

    assert stored_values_checks(item, to_char) == ()  # no condition on the stored values
    # Values are blank-padded, as a CHAR stores them; the Spark type stays STRING.
    assert _ddl_steps(DdlChange(destination(item), to_char, None), current, {}) == [
        "UPDATE {table} SET `TAG` = rpad(`TAG`, 10, ' ') WHERE char_length(`TAG`) < 10"
    ]
    # Another size as well: the column must be empty (ORA-01439).
    assert [check.error for check in stored_values_checks(item, wider)] == [1439]


def test_a_date_becomes_a_timestamp_whatever_it_holds_but_not_back() -> None:
    event = table_definition("SHOP.EVENT", {"ID": "NUMBER(6)", "AT": "DATE"})
    widened = table_definition("SHOP.EVENT", {"ID": "NUMBER(6)", "AT": "TIMESTAMP(6)"})
    to_timestamp = parse_ddl("ALTER TABLE SHOP.EVENT MODIFY (AT TIMESTAMP(6))", "SHOP")
    back = parse_ddl("ALTER TABLE SHOP.EVENT MODIFY (AT DATE)", "SHOP")
    current = T.StructType(
        [T.StructField("ID", T.DecimalType(6, 0)), T.StructField("AT", T.TimestampNTZType())]
    )

    assert stored_values_checks(event, to_timestamp) == ()
    assert _ddl_steps(DdlChange(destination(event), to_timestamp, None), current, {}) == []
    assert [check.error for check in stored_values_checks(widened, back)] == [1439]


@pytest.mark.parametrize(
    ("declared", "modified"),
    [
        ("TIMESTAMP(6)", "TIMESTAMP(3)"),
        ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP(0) WITH TIME ZONE"),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE"),
        ("INTERVAL DAY(2) TO SECOND(6)", "INTERVAL DAY(2) TO SECOND(3)"),
        ("INTERVAL DAY(4) TO SECOND", "INTERVAL DAY TO SECOND"),
        ("INTERVAL YEAR(3) TO MONTH", "INTERVAL YEAR(2) TO MONTH"),
    ],
)
def test_a_smaller_fractional_second_or_leading_precision_needs_an_empty_column(
    declared: str, modified: str
) -> None:
    event = table_definition("SHOP.EVENT", {"ID": "NUMBER(6)", "AT": declared})
    lowered = parse_ddl(f"ALTER TABLE SHOP.EVENT MODIFY (AT {modified})", "SHOP")
    raised = parse_ddl(f"ALTER TABLE SHOP.EVENT MODIFY (AT {declared})", "SHOP")

    (check,) = stored_values_checks(event, lowered)
    assert (check.column, check.error, check.max_length) == ("AT", 1440, None)
    assert "decrease fractional second or leading field precision" in check.reason
    assert stored_values_checks(table_definition("SHOP.EVENT", {"AT": modified}), raised) == ()


def test_a_resumed_modify_runs_only_the_steps_its_table_still_lacks() -> None:
    item = table_definition(
        "SHOP.ITEM", {"ID": "NUMBER(6)", "TAG": "VARCHAR2(10)", "NOTE": "VARCHAR2(9)"}
    )
    statement = parse_ddl("ALTER TABLE SHOP.ITEM MODIFY (TAG NUMBER(3))", "SHOP")
    change = DdlChange(destination(item), statement, None)
    mapped = {"delta.columnMapping.mode": "name"}

    def state(**columns: T.DataType) -> T.StructType:
        return T.StructType([T.StructField(name, kind) for name, kind in columns.items()])

    before = state(ID=T.DecimalType(6, 0), TAG=T.StringType(), NOTE=T.StringType())
    assert _ddl_steps(change, before, {}) == [
        "ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE {table} DROP COLUMNS (`TAG`)",
        "ALTER TABLE {table} ADD COLUMNS (`TAG` decimal(3,0) AFTER `ID`)",
    ]
    # Killed after the DROP: the rerun adds the column back, in its place.
    dropped = state(ID=T.DecimalType(6, 0), NOTE=T.StringType())
    assert _ddl_steps(change, dropped, mapped) == [
        "ALTER TABLE {table} ADD COLUMNS (`TAG` decimal(3,0) AFTER `ID`)"
    ]
    done = state(ID=T.DecimalType(6, 0), TAG=T.DecimalType(3, 0), NOTE=T.StringType())
    assert _ddl_steps(change, done, mapped) == []


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("ALTER TABLE X ADD (D DATE DEFAULT SYSDATE)", 3001),
        ("ALTER TABLE (", 900),
        ("ALTER SESSION SET NLS_DATE_FORMAT = 'YYYY'", 3001),
        ("RENAME HR.EMP TO STAFF", 1765),  # Oracle: RENAME is for the session's own schema
        ("RENAME EMP", 900),
    ],
)
def test_ddl_the_sink_cannot_apply_raises_the_oracle_error(text: str, number: int) -> None:
    with pytest.raises(DdlError) as raised:
        parse_ddl(text, "HR")
    assert raised.value.number == number


@pytest.mark.parametrize(
    "text", ["RENAME EMP TO STAFF", "rename emp to staff", 'RENAME "EMP" TO "STAFF"']
)
def test_a_standalone_rename_renames_a_table_of_the_lcrs_schema_like_alter_table(
    text: str,
) -> None:
    assert parse_ddl(text, "HR") == parse_ddl("ALTER TABLE HR.EMP RENAME TO STAFF", "HR")


def test_constraints_grants_and_comments_are_ignored() -> None:
    for text in (
        "ALTER TABLE HR.EMP ADD CONSTRAINT C1 UNIQUE (NAME)",
        "GRANT SELECT ON HR.EMP TO SCOTT",
        "COMMENT ON TABLE HR.EMP IS 'x'",
        "ALTER TABLE HR.EMP MODIFY (NAME NOT NULL)",
    ):
        assert parse_ddl(text, "HR").kind == "IGNORED", text


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("BINARY_FLOAT", "BINARY_FLOAT"),  # sqlglot reads FLOAT, which is a NUMBER
        ("BINARY_DOUBLE", "BINARY_DOUBLE"),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE"),
        ("INTERVAL DAY(2) TO SECOND(6)", "INTERVAL DAY TO SECOND"),  # sqlglot cannot parse
        ("INTERVAL YEAR(4) TO MONTH", "INTERVAL YEAR(4) TO MONTH"),  # precisions kept
        ("INTERVAL DAY(3) TO SECOND(2)", "INTERVAL DAY(3) TO SECOND(2)"),
        ("TIMESTAMP(3) WITH TIME ZONE", "TIMESTAMP(3) WITH TIME ZONE"),
        ("TIMESTAMP(0)", "TIMESTAMP(0)"),
        ("LONG RAW", "LONG RAW"),
        ("FLOAT", "NUMBER"),
        ("VARCHAR2(12) DEFAULT 'BINARY_FLOAT'", "VARCHAR2(12)"),  # a literal stays a literal
    ],
)
def test_every_oracle_type_of_a_ddl_is_read_as_oracle_means_it(written: str, read: str) -> None:
    added = parse_ddl(f"ALTER TABLE SHOP.ITEM ADD (C {written})", "SHOP").added[0]
    assert str(added.column.oracle_type) == read
    created = parse_ddl(f"CREATE TABLE SHOP.ITEM (ID NUMBER(3), C {written})", "SHOP").created
    assert created is not None
    assert str(created.column("C").oracle_type) == read
