"""Issue 16 item 4: a cycle writes only what changed (fixed cost per cycle).

Each Delta commit costs a cycle a write and a log entry, so a cycle skips the ones that would
change nothing: destination tables without changes, the error queue without errors, the spill
when its content stays the same. Exactly once is kept by test_engine_restart.py; here, which
tables get a commit, and which tables a run creates.
"""

from __future__ import annotations

import pytest
from delta.tables import DeltaTable

from lakeapply.errors import ConfigurationError
from lakeapply.gold import run_gold, session_warehouse
from lakeapply.runtime.catalog import existing_tables
from lakeapply.silver import admin, dictionary
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
U = table_definition("HR.U", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
APPLY_TABLES = (
    dictionary.CYCLES,
    dictionary.PROGRESS,
    dictionary.TRANSACTIONS,
    dictionary.SPILL,
)


def versions(lakeapply: LakeapplyHarness) -> dict[str, int]:
    """Delta version of each dictionary table and each destination table."""
    spark, catalog = lakeapply.spark, lakeapply.catalog
    names = {name: catalog.apply_table(name) for name in APPLY_TABLES} | {
        table: catalog.silver_table(lakeapply.silver_table_name(table))
        for table in ("HR.T", "HR.U")
    }
    return {
        key: int(DeltaTable.forName(spark, name).history(1).collect()[0]["version"])
        for key, name in names.items()
    }


def commits(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in before if after[name] != before[name]}


def configured(lakeapply: LakeapplyHarness) -> LakeapplyHarness:
    lakeapply.configure(apply_settings(T, U, disable_on_error=False))
    lakeapply.create_tables()
    return lakeapply


def test_a_clean_cycle_commits_only_its_plan_the_changed_table_outcomes_and_progress(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    before = versions(apply)

    apply.run(apply.txn(scn=100).insert("HR.T", ID=1, V="a").commit(scn=101))

    # HR.U (no change) and the spill (empty before and after) get no commit; the error queue
    # (no error) does not even exist.
    assert commits(before, versions(apply)) == {
        dictionary.CYCLES: 2,  # PLANNED, then COMMITTED
        dictionary.PROGRESS: 1,
        dictionary.TRANSACTIONS: 1,
        "HR.T": 1,
    }
    assert existing_tables(apply.spark, error_tables(apply)) == set()


def error_tables(lakeapply: LakeapplyHarness) -> list[str]:
    return [lakeapply.catalog.apply_table(name) for name in dictionary.ERROR_TABLES]


def test_the_first_error_transaction_creates_the_error_queue_and_a_clean_cycle_leaves_it_alone(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    assert apply.error_queue().count() == 0  # read before it exists: no rows
    apply.run(apply.txn(scn=100).insert("HR.T", ID=1, V="a").commit(scn=101))
    apply.run(apply.txn(scn=110).insert("HR.T", ID=1, V="b").commit(scn=111))  # ORA-00001
    created = versions(apply) | {
        name: int(DeltaTable.forName(apply.spark, table).history(1).collect()[0]["version"])
        for name, table in zip(dictionary.ERROR_TABLES, error_tables(apply), strict=True)
    }

    apply.run(apply.txn(scn=120).insert("HR.U", ID=2, V="c").commit(scn=121))

    assert [r.error_number for r in apply.error_queue().collect()] == [1]
    assert apply.error_messages().count() == 1
    after = versions(apply) | {
        name: int(DeltaTable.forName(apply.spark, table).history(1).collect()[0]["version"])
        for name, table in zip(dictionary.ERROR_TABLES, error_tables(apply), strict=True)
    }
    assert not set(commits(created, after)) & set(dictionary.ERROR_TABLES)


def test_the_spill_is_written_when_a_transaction_stays_open_and_not_while_it_stays_the_same(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    before = versions(apply)

    apply.run(apply.txn(scn=100, transaction_id="1.0.1").insert("HR.T", ID=1, V="a").open())
    opened = versions(apply)
    apply.run(apply.txn(scn=110).insert("HR.U", ID=2, V="b").commit(scn=111))
    still_open = versions(apply)

    assert commits(before, opened)[dictionary.SPILL] == 1
    assert dictionary.SPILL not in commits(opened, still_open)
    assert [r.ID for r in apply.silver("HR.U").collect()] == [2]
    assert apply.silver("HR.T").count() == 0


def test_an_apply_from_unpublished_settings_creates_no_settings_table_and_gold_adds_them(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    apply.run(apply.txn(scn=100).insert("HR.T", ID=1, V="a").commit(scn=101))
    spark, catalog = apply.spark, apply.catalog
    settings_tables = [catalog.apply_table(name) for name in dictionary.SETTINGS_TABLES]

    assert existing_tables(spark, settings_tables) == set()
    with pytest.raises(ConfigurationError, match="publish its settings first"):
        admin.load_settings(spark, catalog, apply.apply_process.apply_name)

    run_gold(spark, session_warehouse(spark), catalog.prefix, select=["+dba_apply_key_columns"])
    assert existing_tables(spark, settings_tables) == set(settings_tables)


def test_every_few_cycles_the_tables_cycles_append_to_are_compacted(
    lakeapply: LakeapplyHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply = configured(lakeapply)
    monkeypatch.setattr("lakeapply.runtime.catalog.BOOKKEEPING_COMPACTION_INTERVAL", 1)

    apply.run(apply.txn(scn=100).insert("HR.T", ID=1, V="a").commit(scn=101))

    # Cycle 1 is due: its PLANNED and COMMITTED rows, two appends, end up in one file.
    cycles = apply.catalog.apply_table(dictionary.CYCLES)
    assert apply.spark.sql(f"DESCRIBE DETAIL {cycles}").collect()[0].numFiles == 1
    assert sorted(r.phase for r in apply.spark.table(cycles).collect()) == ["COMMITTED", "PLANNED"]
    assert [r.ID for r in apply.silver("HR.T").collect()] == [1]
