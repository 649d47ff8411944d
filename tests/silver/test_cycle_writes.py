"""Issue 16 item 4: a cycle writes only what changed (fixed cost per cycle).

Each Delta commit costs a cycle a write and a log entry, so a cycle skips the ones that would
change nothing: destination tables without changes, the error queue without errors, the spill
when its content stays the same. Exactly once is kept by test_engine_restart.py; here, which
tables get a commit, and which tables a run creates.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from delta.tables import DeltaTable

from lakeapply.errors import ConfigurationError
from lakeapply.gold import run_gold, session_warehouse
from lakeapply.runtime.catalog import existing_tables
from lakeapply.runtime.lease import acquire_warehouse_lease
from lakeapply.silver import admin, dictionary
from lakeapply.silver.cycle_state import SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle
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


def last_operation(lakeapply: LakeapplyHarness, table: str) -> str:
    name = lakeapply.catalog.silver_table(lakeapply.silver_table_name(table))
    return str(DeltaTable.forName(lakeapply.spark, name).history(1).collect()[0]["operation"])


def test_a_table_whose_changes_only_insert_new_keys_gets_an_append_and_others_a_merge(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)

    apply.run(
        apply.txn().insert("HR.T", ID=1, V="a").insert("HR.T", ID=2, V="b").commit(),
        apply.txn().insert("HR.U", ID=1, V="u").commit(),
    )
    assert (last_operation(apply, "HR.T"), last_operation(apply, "HR.U")) == ("WRITE", "WRITE")

    # HR.T: an update and a new key (a MERGE); HR.U: a new key only (an append again).
    apply.run(
        apply.txn().update("HR.T", old={"ID": 1, "V": "a"}, new={"V": "a2"}).commit(),
        apply.txn().insert("HR.T", ID=3, V="c").insert("HR.U", ID=2, V="v").commit(),
    )
    assert (last_operation(apply, "HR.T"), last_operation(apply, "HR.U")) == ("MERGE", "WRITE")
    assert sorted((int(r.ID), r.V) for r in apply.silver("HR.T").collect()) == [
        (1, "a2"),
        (2, "b"),
        (3, "c"),
    ]
    assert sorted((int(r.ID), r.V) for r in apply.silver("HR.U").collect()) == [(1, "u"), (2, "v")]


def test_a_key_inserted_and_deleted_in_one_cycle_writes_nothing_and_a_reinsert_is_an_upsert(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    apply.run(apply.txn().insert("HR.T", ID=1, V="a").commit())

    apply.run(
        apply.txn().insert("HR.T", ID=2, V="b").commit(),
        apply.txn().delete("HR.T", ID=2, V="b").commit(),
        apply.txn().delete("HR.T", ID=1, V="a").insert("HR.T", ID=1, V="again").commit(),
    )

    # Key 1 was there when the cycle read it: replaced in a MERGE, not appended next to itself.
    assert last_operation(apply, "HR.T") == "MERGE"
    assert [(int(r.ID), r.V) for r in apply.silver("HR.T").collect()] == [(1, "again")]


def test_a_table_written_after_the_cycle_read_it_is_merged_so_no_key_is_doubled(
    lakeapply: LakeapplyHarness,
) -> None:
    """The append is only for a table still at the version the cycle's fold read: here
    another writer adds key 1 between the plan and the resumed cycle's write."""
    apply = configured(lakeapply)
    apply.land(apply.txn().insert("HR.T", ID=1, V="source").commit())
    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(apply.spark, apply.catalog, apply.apply_process, crash_after="plan")
    name = apply.catalog.silver_table(apply.silver_table_name("HR.T"))
    apply.spark.sql(f"INSERT INTO {name} (ID, V) VALUES (1, 'other')")

    apply.apply()  # resumes the planned cycle: its fold read the table before that insert

    assert last_operation(apply, "HR.T") == "MERGE"
    assert [(int(r.ID), r.V) for r in apply.silver("HR.T").collect()] == [(1, "source")]


def test_a_cycle_resumed_after_its_append_landed_does_not_append_again(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = configured(lakeapply)
    apply.land(apply.txn().insert("HR.T", ID=1, V="a").insert("HR.U", ID=1, V="u").commit())
    with pytest.raises(SimulatedApplyCrash):
        apply_cycle(apply.spark, apply.catalog, apply.apply_process, crash_after="merges")

    apply.apply()

    assert [(int(r.ID), r.V) for r in apply.silver("HR.T").collect()] == [(1, "a")]
    assert [(int(r.ID), r.V) for r in apply.silver("HR.U").collect()] == [(1, "u")]
    assert apply.transactions().count() == 1


def last_commit_actions(lakeapply: LakeapplyHarness, table: str) -> set[str]:
    """The kinds of action (``add``, ``txn``, ``commitInfo``, ...) in a table's newest commit."""
    name = lakeapply.catalog.silver_table(lakeapply.silver_table_name(table))
    detail = lakeapply.spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]
    log = Path(unquote(urlparse(detail["location"]).path)) / "_delta_log"
    newest = log / f"{int(detail_version(lakeapply, name)):020d}.json"
    return {kind for line in newest.read_text().splitlines() for kind in json.loads(line)}


def detail_version(lakeapply: LakeapplyHarness, name: str) -> int:
    return int(DeltaTable.forName(lakeapply.spark, name).history(1).collect()[0]["version"])


def test_an_append_is_idempotent_by_transaction_id_without_the_warehouse_lease(
    lakeapply: LakeapplyHarness,
) -> None:
    """Without the lease (Databricks: a retried job beside a slow one) two runs of one cycle
    could both find the table at the version the cycle read: the transaction id makes the
    second one conflict instead of appending again."""
    apply = configured(lakeapply)
    apply.run(apply.txn().insert("HR.T", ID=1, V="a").commit())
    assert last_operation(apply, "HR.T") == "WRITE"
    assert "txn" in last_commit_actions(apply, "HR.T")


def test_under_the_warehouse_lease_an_append_skips_the_transaction_id_and_a_resume_merges(
    lakeapply: LakeapplyHarness,
) -> None:
    """The lease keeps a second run out, and the version check sends a resumed cycle whose
    append landed to a MERGE of the same rows: the transaction id (a read of the table's whole
    log state) is not needed."""
    apply = configured(lakeapply)
    apply.land(apply.txn().insert("HR.T", ID=1, V="a").insert("HR.U", ID=1, V="u").commit())
    with acquire_warehouse_lease(session_warehouse(apply.spark)):
        with pytest.raises(SimulatedApplyCrash):
            apply_cycle(apply.spark, apply.catalog, apply.apply_process, crash_after="merges")
        assert (last_operation(apply, "HR.T"), last_operation(apply, "HR.U")) == ("WRITE", "WRITE")
        assert "txn" not in last_commit_actions(apply, "HR.T")

        apply.apply()

    assert (last_operation(apply, "HR.T"), last_operation(apply, "HR.U")) == ("MERGE", "MERGE")
    assert [(int(r.ID), r.V) for r in apply.silver("HR.T").collect()] == [(1, "a")]
    assert [(int(r.ID), r.V) for r in apply.silver("HR.U").collect()] == [(1, "u")]
    assert apply.transactions().count() == 1


def test_updates_to_two_tables_in_one_cycle_are_compared_with_each_tables_own_rows(
    lakeapply: LakeapplyHarness,
) -> None:
    """Each table's addressed rows are read on their own (side by side when there are
    several): an update is compared with its own table's row, never the other's."""
    apply = configured(lakeapply)
    apply.run(apply.txn().insert("HR.T", ID=1, V="a").insert("HR.U", ID=1, V="b").commit())

    apply.run(
        apply.txn(transaction_id="5.5.5")
        .update("HR.T", old={"ID": 1, "V": "a"}, new={"V": "a2"})
        .commit(),
        # HR.U holds "b": the compared old value conflicts (ORA-26786).
        apply.txn(transaction_id="6.6.6")
        .update("HR.U", old={"ID": 1, "V": "a"}, new={"V": "b2"})
        .commit(),
    )

    assert [(int(r.ID), r.V) for r in apply.silver("HR.T").collect()] == [(1, "a2")]
    assert [(int(r.ID), r.V) for r in apply.silver("HR.U").collect()] == [(1, "b")]
    errors = apply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number) for e in errors] == [("6.6.6", 26786)]


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
    # Each way the decision is made: from the plan's empty spill (open, clean) or by joining the
    # cycle's LCRs with the kept transactions (still open, committed).
    apply = configured(lakeapply)
    before = versions(apply)
    long_running = apply.txn(scn=100, transaction_id="1.0.1").insert("HR.T", ID=1, V="a")

    apply.run(long_running.open())
    opened = versions(apply)
    apply.run(apply.txn(scn=110).insert("HR.U", ID=2, V="b").commit(scn=111))
    still_open = versions(apply)
    apply.run(long_running.commit(scn=121))
    committed = versions(apply)
    apply.run(apply.txn(scn=130).insert("HR.U", ID=3, V="c").commit(scn=131))
    clean = versions(apply)

    assert commits(before, opened)[dictionary.SPILL] == 1
    assert dictionary.SPILL not in commits(opened, still_open)
    assert commits(still_open, committed)[dictionary.SPILL] == 1
    assert apply.spill().count() == 0
    assert dictionary.SPILL not in commits(committed, clean)
    assert sorted(r.ID for r in apply.silver("HR.U").collect()) == [2, 3]
    assert [r.ID for r in apply.silver("HR.T").collect()] == [1]


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
