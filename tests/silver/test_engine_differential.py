"""The set-based engine against the independent row-at-a-time reference applier, on generated
workloads (hypothesis, derandomized): same silver tables (every contract type), error queue and
its messages, transaction outcomes, counters, low and high watermarks, oldest SCN, abort state.

Workloads that carry on after errors (disable_on_error = N) share apply processes, many at a
time (one per combination of apply parameters), which keeps hundreds of them affordable; those
whose first error stops the apply (Y) run one apply each. With several batches, each cycle reads
one ingest batch (transactions stay open across cycles), and the first cycle crashes at a
seeded step and is resumed. Each test has databases of its own (the ``catalog`` fixture): a new
apply process reads every bronze batch ever landed, so over shared databases it would also cycle
through the batches of every earlier test.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lakeapply.gold import run_gold, session_warehouse
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver.cycle_state import CRASH_POINTS, SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle
from tests.reference.workloads import Workload, workloads
from tests.silver import differential
from tests.silver.differential import compare, engine_outcomes, isolate, reference_outcome

_numbers = itertools.count(1)


def drawn(count: int, strategy: st.SearchStrategy[Workload], seeded: int) -> list[Workload]:
    """``count`` workloads from hypothesis for a given ``seeded``, other ones for another: the
    same ones in every run, alone or in the whole suite (hypothesis draws some values from the
    literals of loaded local modules; tests/conftest.py loads every lakeapply module first)."""
    collected: list[Workload] = []

    @seed(seeded)
    @given(strategy)
    @hypothesis_settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def collect(workload: Workload) -> None:
        collected.append(workload)

    collect()
    return [isolate(w, next(_numbers)) for w in collected]


def sharing_one_apply(batch: list[Workload]) -> list[Workload]:
    """The batch under its first workload's apply parameters and rules, so that it runs as one
    apply process (fold passes, not applies, are what many error transactions cost)."""
    first = batch[0].process
    return [
        differential.with_parameters(
            workload,
            commit_serialization=first["parameters"]["commit_serialization"],
            discard_tagged=first["rules"]["discard_tagged"],
        )
        for workload in batch
    ]


def _groups(batch: list[Workload]) -> list[list[Workload]]:
    """Workloads with the same apply parameters and tag rule, which can share an apply process
    (:func:`differential.merge` unites their rule sets: each rule names its own workload's
    source database)."""
    groups: dict[str, list[Workload]] = {}
    for workload in batch:
        rules = workload.process.get("rules", {})
        assert set(rules) <= {"discard_tagged", "negative", "positive"}, (
            rules
        )  # merge() knows these
        key = repr((workload.process["parameters"], rules.get("discard_tagged", False)))
        groups.setdefault(key, []).append(workload)
    return list(groups.values())


def run_and_compare(
    spark: SparkSession,
    catalog: Catalog,
    tmp_path: Path,
    batch: list[Workload],
    batches: int,
    run: Callable[..., list[differential.Comparable]] = engine_outcomes,
    shared: bool = True,
) -> None:
    """Run ``batch`` through the engine, workloads that can share an apply process in one
    (``shared=False``: one apply process each), and compare each with the reference."""
    groups = _groups(batch) if shared else [[workload] for workload in batch]
    for number, group in enumerate(groups):
        actual = run(spark, catalog, group, tmp_path / f"group{number}", batches)
        for workload, outcome in zip(group, actual, strict=True):
            compare(reference_outcome(workload, batches), outcome, batches)


def engine_outcomes_with_a_crash(
    spark: SparkSession, catalog: Catalog, group: list[Workload], folder: Path, batches: int
) -> list[differential.Comparable]:
    """As :func:`engine_outcomes`, but the first cycle crashes after a seeded step first."""
    run = (
        group[0]
        if len(group) == 1
        else differential.merge(group, f"{group[0].process['apply_name']}_MERGED")
    )
    run = differential.with_parameters(run, max_cycle_batches=1)
    settings = differential.prepare(spark, catalog, group, run, folder, batches)
    point = random.Random(len(group)).choice(CRASH_POINTS)
    # (A step the first cycle has nothing to do for, e.g. the first MERGE, never crashes.)
    with contextlib.suppress(SimulatedApplyCrash):
        apply_cycle(spark, catalog, settings, crash_after=point)
    differential.run_apply(spark, catalog, settings)
    return differential.read_outcomes(spark, catalog, settings.apply_name, group)


def test_engine_matches_the_reference_on_workloads_that_carry_on_after_errors(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    # 22 workloads: with the three below, 25 differential workloads in make test; make
    # test-slow draws 300 and more.
    batch = sharing_one_apply(drawn(22, workloads(disable_on_error=False), seeded=1))
    run_and_compare(spark, catalog, tmp_path, batch, batches=1)
    # The gold views of the final state: one dbt build over the test's databases.
    report = run_gold(spark, session_warehouse(spark), catalog.prefix)
    assert report.success, report.failures
    golds = differential.gold_outcomes(spark, f"{catalog.prefix}_gold", batch)
    for workload, gold in zip(batch, golds, strict=True):
        differential.compare_gold(reference_outcome(workload), gold)


@pytest.mark.slow  # ~9 min on 2 cores (LOB pieces, redeliveries, three cycles)
def test_engine_matches_the_reference_across_cycles_with_a_crash_between_them(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    batch = sharing_one_apply(drawn(6, workloads(disable_on_error=False), seeded=2))
    run_and_compare(spark, catalog, tmp_path, batch, batches=3, run=engine_outcomes_with_a_crash)


@pytest.mark.parametrize("batches", [1, 3])
def test_engine_matches_the_reference_when_the_first_error_stops_the_apply(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, batches: int
) -> None:
    # The second draw of each seed: its first is 5 LCRs without an error (seed 4: 50 LCRs under
    # DEPENDENT_TRANSACTIONS; seed 6: 18 under FULL).
    for number, workload in enumerate(
        drawn(2, workloads(disable_on_error=True), seeded=3 + batches)[1:]
    ):
        actual = engine_outcomes(spark, catalog, [workload], tmp_path / f"w{number}", batches)
        compare(reference_outcome(workload, batches), actual[0], batches)


# Seeds whose second workload is DEPENDENT_TRANSACTIONS, aborts, and has later independent
# transactions the abort applies: seed 11 applies 3 (LWM < HWM on both sources); seed 29
# applies 2 in one batch, 1 in three (the batch of the aborting COMMIT bounds what it sees).
# Seed 5: the aborting transaction and 2.6.147 (all its LCRs discarded by the instantiation
# SCN) have keyless LCRs on one table, which share no row: 2.6.147 is processed (DISCARDED).
@pytest.mark.parametrize(
    ("seeded", "batches"),
    [
        pytest.param(11, 1, marks=pytest.mark.slow),  # make test: seed 29 alone (CI time)
        (29, 3),
        pytest.param(5, 1, marks=pytest.mark.slow),
    ],
)
def test_engine_matches_the_reference_when_a_dependent_abort_applies_independent_transactions(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int, batches: int
) -> None:
    workload = drawn(2, workloads(disable_on_error=True), seeded=seeded)[1]
    assert workload.process["parameters"]["commit_serialization"] == "DEPENDENT_TRANSACTIONS"
    expected = reference_outcome(workload, batches)
    assert expected["aborted"]
    (aborting,) = expected["errors"]
    assert any(o[2] > aborting[2] for o in expected["outcomes"]), "nothing applied after it"
    actual = engine_outcomes(spark, catalog, [workload], tmp_path, batches)
    compare(expected, actual[0], batches)


@pytest.mark.slow  # each TRUNCATE is a DDL barrier: a cycle of its own
def test_engine_matches_the_reference_on_workloads_that_truncate_tables(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    # Seed 4: the third workload draws 2 TRUNCATE TABLE transactions, the fifth 3.
    batch = drawn(6, workloads(disable_on_error=False, truncates=True), seeded=4)
    truncating = [
        w for w in batch if any(lcr["command_type"] == "TRUNCATE TABLE" for lcr in w.lcrs)
    ]
    assert len(truncating) == 2
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(truncating), batches=1)


# Seeds whose second workload, under DEPENDENT_TRANSACTIONS, aborts and has virtual dependencies
# that hold back transactions sharing no row with the aborting one (the reference without them
# applies more): seed 26 (a value dependency on two tables and an object dependency; 4
# transactions applied after the abort), seed 35 (2 applied after it).
@pytest.mark.slow  # one aborting apply per seed
@pytest.mark.parametrize("seeded", [26, 35])
def test_engine_matches_the_reference_when_virtual_dependencies_hold_transactions_back(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    drawn_workload = drawn(2, workloads(disable_on_error=True, virtual_dependencies=True), seeded)[
        1
    ]
    workload = differential.with_parameters(
        drawn_workload, commit_serialization="DEPENDENT_TRANSACTIONS"
    )
    expected = reference_outcome(workload)
    assert expected["aborted"]
    actual = engine_outcomes(spark, catalog, [workload], tmp_path, batches=1)
    compare(expected, actual[0], batches=1)


@pytest.mark.slow  # each column DDL is a barrier: a cycle of its own
def test_engine_matches_the_reference_on_workloads_that_add_rename_widen_and_drop_columns(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    # Seed 25: ten column DDL transactions, every kind, one the destination refuses (00957).
    batch = drawn(4, workloads(disable_on_error=False, column_ddl=True), seeded=25)
    changing = [w for w in batch if any(lcr["command_type"] == "ALTER TABLE" for lcr in w.lcrs)]
    assert len(changing) >= 2
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(changing), batches=1)


def _shortens_a_column(workload: Workload) -> bool:
    return any(
        lcr["command_type"] == "ALTER TABLE"
        and "MODIFY (EXTRA" in lcr["ddl_text"]
        and lcr["ddl_text"].endswith("VARCHAR2(5))")
        for lcr in workload.lcrs
    )


@pytest.mark.slow  # each column DDL is a barrier: a cycle of its own
def test_engine_matches_the_reference_when_a_column_ddl_shortens_a_column(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    # Seed 82: one of ten workloads adds EXTRA, widens it to 9, then shortens it back to 5
    # (every value fits: applied), a rare draw (ADD, MODIFY and the shortening on one table).
    batch = drawn(10, workloads(disable_on_error=False, column_ddl=True), seeded=82)
    shortening = [w for w in batch if _shortens_a_column(w)]
    assert len(shortening) == 1
    run_and_compare(spark, catalog, tmp_path, shortening, batches=1)


def _modifies_code_or_amount(workload: Workload) -> bool:
    return any(
        lcr["command_type"] == "ALTER TABLE"
        and ("MODIFY (CODE NUMBER)" in lcr["ddl_text"] or "MODIFY (AMOUNT" in lcr["ddl_text"])
        for lcr in workload.lcrs
    )


# Seed 56: AMOUNT NUMBER(5,2) -> NUMBER(4,2) on a column that holds no value (applied: the
# Delta column dropped and added again), and CODE VARCHAR2 -> NUMBER refused (01439). Seed 29:
# both applied to empty columns, CODE twice, then values CODE can no longer take (01722).
@pytest.mark.slow  # each column DDL is a barrier: a cycle of its own
@pytest.mark.parametrize("seeded", [56, 29])
def test_engine_matches_the_reference_when_a_modify_needs_an_empty_column(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = drawn(4, workloads(disable_on_error=False, column_ddl=True), seeded=seeded)
    modifying = [w for w in batch if _modifies_code_or_amount(w)]
    assert modifying
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(modifying), batches=1)


# Seed 20: a table's LCRs renamed to another table (both write its destination) and the
# schema renamed to one without destinations after a rule for one table; seed 3: a rename and
# CODE deleted from one table's LCRs (D19).
@pytest.mark.slow  # one apply process per workload (each has its own rules)
@pytest.mark.parametrize("seeded", [20, 3])
def test_engine_matches_the_reference_with_rule_transformations(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = drawn(3, workloads(disable_on_error=False, rule_transformations=True), seeded)
    run_and_compare(spark, catalog, tmp_path, batch, batches=1, shared=False)


# Seeds 6 and 7: every example handler combination of D21 over six workloads sharing one
# apply (deletes ignored, negative amounts refused with ORA-20000 twice, NOTE set by an UPDATE
# handler, inserts checked with every other operation ignored).
@pytest.mark.slow
@pytest.mark.parametrize("seeded", [6, 7])
def test_engine_matches_the_reference_with_dml_handlers(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = drawn(6, workloads(disable_on_error=False, dml_handlers=True), seeded)
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(batch), batches=1)


# Seeds 7 and 12: record_changes (D23) executes every change of some tables and records it in
# CHANGES, another destination of each source, beside the combinations of D21 (the reference
# records 5 and 6 changes; the other transactions that reach it are queued or discarded).
@pytest.mark.slow
@pytest.mark.parametrize("seeded", [7, 12])
def test_engine_matches_the_reference_when_handlers_write_another_table(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    strategy = workloads(disable_on_error=False, dml_handlers=True, history_handlers=True)
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(drawn(6, strategy, seeded)), 1)


# Seeds 30 and 33: the example error handlers of D22 over six workloads sharing one apply;
# with them the reference queues 6 (seed 30) and 3 (seed 33) error transactions fewer than
# without, and 1 and 3 get ORA-20000 from a handler refusing the LCR.
@pytest.mark.slow
@pytest.mark.parametrize("seeded", [30, 33])
def test_engine_matches_the_reference_with_error_handlers(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = drawn(6, workloads(disable_on_error=False, error_handlers=True), seeded)
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(batch), batches=1)


# Seed 1: DML handlers and error handlers together (never a procedure DML handler and an error
# handler of one operation); the reference queues 3 error transactions fewer with them.
@pytest.mark.slow
def test_engine_matches_the_reference_with_dml_and_error_handlers(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    strategy = workloads(disable_on_error=False, dml_handlers=True, error_handlers=True)
    batch = drawn(6, strategy, seeded=1)
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(batch), batches=1)


# Seed 21: two workloads rename a table (ALTER TABLE ... RENAME TO, D16), and twenty row LCRs
# then name it by its new name.
@pytest.mark.slow  # each DDL is a cycle of its own
def test_engine_matches_the_reference_when_a_table_is_renamed(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    batch = drawn(4, workloads(disable_on_error=False, rename_tables=True), seeded=21)
    renaming = [
        w for w in batch if any("RENAME TO" in (lcr.get("ddl_text") or "") for lcr in w.lcrs)
    ]
    assert len(renaming) == 2
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(renaming), batches=1)


# Seed 5: two workloads drop a table, then create it again (D20: empty, with the columns of
# the CREATE TABLE), and write it after.
@pytest.mark.slow  # each DDL is a cycle of its own
def test_engine_matches_the_reference_when_a_dropped_table_is_created_again(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    strategy = workloads(disable_on_error=False, drop_tables=True, create_tables=True)
    batch = drawn(4, strategy, seeded=5)
    creating = [w for w in batch if any(lcr["command_type"] == "CREATE TABLE" for lcr in w.lcrs)]
    assert len(creating) >= 2
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(creating), batches=1)


# Seed 44: two workloads drop tables (one drops its only table); row LCRs of every kind then
# reach a dropped table (00942), among other errors. Seed 56: three drop tables, one with two
# 00942s. Seed 57: one drops every table; seven transactions then fail with 00942.
@pytest.mark.slow  # each DROP TABLE is a DDL barrier: a cycle of its own
@pytest.mark.parametrize(("seeded", "dropping_workloads"), [(44, 2), (56, 3), (57, 1)])
def test_engine_matches_the_reference_on_workloads_that_drop_tables(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int, dropping_workloads: int
) -> None:
    batch = drawn(4, workloads(disable_on_error=False, drop_tables=True), seeded=seeded)
    dropping = [w for w in batch if any(lcr["command_type"] == "DROP TABLE" for lcr in w.lcrs)]
    assert len(dropping) == dropping_workloads
    run_and_compare(spark, catalog, tmp_path, sharing_one_apply(dropping), batches=1)


@pytest.mark.slow  # three workloads end to end per seed
@pytest.mark.parametrize("seeded", [13, 27])  # seeds whose workloads migrate rows both ways
def test_engine_matches_the_reference_with_subset_rules(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = drawn(3, workloads(disable_on_error=False, subset_rules=True), seeded=seeded)
    run_and_compare(spark, catalog, tmp_path, batch, batches=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_engine_matches_the_reference_on_many_workloads(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seed: int
) -> None:
    """make test-slow: 4 x (70 that carry on + 5 that stop, each run twice) = 300 workloads."""
    carrying_on = sharing_one_apply(drawn(70, workloads(disable_on_error=False), 100 + seed))
    run_and_compare(spark, catalog, tmp_path, carrying_on, batches=1 + seed % 2 * 2)
    for number, workload in enumerate(drawn(5, workloads(disable_on_error=True), 200 + seed)):
        for batches in (1, 3):
            again = isolate(workload, next(_numbers))  # its own apply and tables per run
            folder = tmp_path / f"w{number}-{batches}"
            actual = engine_outcomes(spark, catalog, [again], folder, batches)
            compare(reference_outcome(again, batches), actual[0], batches)


# Late input (reference D24): at each of three cuts a COMMIT lands after a later COMMIT of its
# source was processed (ORA-20002) and a row LCR after its transaction's COMMIT was processed
# (ORA-20001). Seed 45: 6 late-LCR and 6 late-COMMIT error transactions; seed 44: 4 and 4 (the
# same alone and in a full run since every lakeapply module is loaded before the first draw;
# before that, a run of this file alone drew 10 and 5, 5 and 4). At least 3 of each.
@pytest.mark.slow  # four ingest batches, one cycle each
@pytest.mark.parametrize("seeded", [45, 44])
def test_engine_matches_the_reference_when_commits_and_lcrs_land_late(
    spark: SparkSession, catalog: Catalog, tmp_path: Path, seeded: int
) -> None:
    batch = [
        # No pass limit: the reference processes every batch's transactions in that batch.
        differential.with_late_input(differential.with_parameters(w, max_error_passes=100), 4)
        for w in drawn(8, workloads(disable_on_error=False), seeded)
    ]
    batch = sharing_one_apply(batch)
    late = [
        error[4]
        for workload in batch
        for error in reference_outcome(workload, batches=4)["errors"]
        if error[4] in (20001, 20002)
    ]
    assert late.count(20001) >= 3 and late.count(20002) >= 3, late
    run_and_compare(spark, catalog, tmp_path, batch, batches=4)
