"""DEPENDENT_TRANSACTIONS: which later transactions an abort holds back (silver/dependent.py)."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from lakeapply.errors import ApplyAbortedError
from lakeapply.silver.cycle_state import ABORT_STATUS_CRASH_POINT, CRASH_POINTS, SimulatedApplyCrash
from lakeapply.silver.dependent import held_transactions
from lakeapply.silver.engine import apply_cycle
from lakeapply.silver.settings import CommitSerialization, ObjectDependency, ValueDependency
from lakeapply.testing import (
    LakeapplyHarness,
    Transaction,
    apply_settings,
    destination,
    table_definition,
)
from tests.reference.dml_handlers import STATEMENTS

COLUMNS = ["source_database_name", "transaction_id", "commit_scn", "silver_table", "group_id"]


def _held(spark: SparkSession, touches: list[tuple[str, str, int, str, str]]) -> set[str]:
    frame: DataFrame = spark.createDataFrame(touches, COLUMNS)
    aborting = spark.createDataFrame([("DB", "T1")], ["source_database_name", "transaction_id"])
    return {row.transaction_id for row in held_transactions(frame, aborting).collect()}


def test_a_later_transaction_on_another_table_is_not_held(spark: SparkSession) -> None:
    touches = [("DB", "T1", 10, "A", "k1"), ("DB", "T2", 20, "B", "k1")]
    assert _held(spark, touches) == {"T1"}


def test_a_later_transaction_on_the_same_key_is_held(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "k1"),
        ("DB", "T3", 30, "A", "k2"),
    ]
    assert _held(spark, touches) == {"T1", "T2"}


def test_dependence_is_transitive_through_a_held_transaction(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "k1"),
        ("DB", "T2", 20, "B", "k9"),
        ("DB", "T3", 30, "B", "k9"),
        ("DB", "T0", 5, "B", "k9"),  # earlier than the abort: never held
    ]
    assert _held(spark, touches) == {"T1", "T2", "T3"}


def test_a_held_ddl_barrier_holds_back_every_later_key_of_its_table(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "*"),
        ("DB", "T3", 30, "A", "k7"),
        ("DB", "T4", 40, "B", "k7"),
    ]
    assert _held(spark, touches) == {"T1", "T2", "T3"}


def test_keyless_and_discarded_lcrs_link_nothing(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "!static"),
        ("DB", "T2", 20, "A", "!static"),  # shares no row with T1: applied
        ("DB", "T3", 30, "A", "k1"),
    ]
    assert _held(spark, touches) == {"T1"}


def test_an_object_dependency_links_child_to_parent_but_not_child_to_child(
    spark: SparkSession,
) -> None:
    side = "object dependency 0"
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T1", 10, side, "CHILD"),
        ("DB", "T2", 20, side, "CHILD"),  # another child: independent
        ("DB", "T3", 30, side, "PARENT"),  # the parent: dependent
    ]
    assert _held(spark, touches) == {"T1", "T3"}


# Engine: an abort on table A under FULL and under DEPENDENT_TRANSACTIONS.
A = table_definition("HR.A", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
B = table_definition("HR.B", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


def _workload(lakeapply: LakeapplyHarness) -> list[Transaction]:
    """1.0.1 deletes A 2, which does not exist (ORA-26787, aborts, commit 110); 1.0.2 inserts A 2
    (same key: waits, commit 120); 1.0.3 inserts B 1 (independent, commit 130)."""
    return [
        lakeapply.txn(scn=100, transaction_id="1.0.1").delete("HR.A", ID=2, V="x").commit(scn=110),
        lakeapply.txn(scn=115, transaction_id="1.0.2").insert("HR.A", ID=2, V="y").commit(scn=120),
        lakeapply.txn(scn=125, transaction_id="1.0.3").insert("HR.B", ID=1, V="z").commit(scn=130),
    ]


def _ids(lakeapply: LakeapplyHarness, table: str) -> list[int]:
    return sorted(int(row.ID) for row in lakeapply.silver(table).collect())


def _marks(lakeapply: LakeapplyHarness) -> tuple[int, int]:
    row = lakeapply.latest_progress().select("low_watermark", "high_watermark").first()
    assert row is not None
    return int(row.low_watermark), int(row.high_watermark)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["FULL", "DEPENDENT_TRANSACTIONS"])
def test_an_abort_holds_back_the_same_key_in_both_modes_and_another_table_only_under_full(
    lakeapply: LakeapplyHarness, mode: str
) -> None:
    apply = lakeapply
    apply.configure(apply_settings(A, B, commit_serialization=CommitSerialization(mode)))

    apply.run(*_workload(apply))

    assert apply.apply_status() == "ABORTED"
    assert _ids(apply, "HR.A") == []
    if mode == "FULL":
        assert _ids(apply, "HR.B") == []
        assert _marks(apply) == (110, 110)
    else:
        assert _ids(apply, "HR.B") == [1]
        assert _marks(apply) == (110, 130)  # 1.0.2 (120) is the gap

    apply.start_apply()
    apply.apply()

    assert _ids(apply, "HR.A") == [2]
    assert _ids(apply, "HR.B") == [1]
    assert _marks(apply) == (130, 130)
    outcomes = sorted((row.transaction_id, row.outcome) for row in apply.transactions().collect())
    # Exactly once: every transaction has one outcome (1.0.3 was not applied again).
    assert [txn for txn, _ in outcomes] == ["1.0.1", "1.0.2", "1.0.3"]


@pytest.mark.slow
def test_under_dependent_an_aborting_cycle_crashed_at_every_step_applies_each_transaction_once(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = lakeapply
    apply.configure(
        apply_settings(A, B, commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS)
    )
    apply.create_tables()
    apply.land(*_workload(apply))

    # The same planned cycle crashes at each step in turn; each re-run resumes it.
    for point in (*CRASH_POINTS, ABORT_STATUS_CRASH_POINT):
        with pytest.raises(SimulatedApplyCrash):
            apply_cycle(apply.spark, apply.catalog, apply.apply_process, crash_after=point)
    with pytest.raises(ApplyAbortedError):
        apply.apply()  # the resumed cycle aborts the apply
    assert apply.apply_status() == "ABORTED"
    assert (_ids(apply, "HR.A"), _ids(apply, "HR.B")) == ([], [1])

    apply.start_apply()
    apply.apply()

    assert (_ids(apply, "HR.A"), _ids(apply, "HR.B")) == ([2], [1])
    outcomes = sorted((row.transaction_id, row.outcome) for row in apply.transactions().collect())
    assert [txn for txn, _ in outcomes] == ["1.0.1", "1.0.2", "1.0.3"]
    assert len(apply.error_queue().collect()) == 1


def test_virtual_dependencies_hold_back_what_the_destination_constraints_do_not_show(
    lakeapply: LakeapplyHarness,
) -> None:
    """A.V names a B row (value dependency A.V = B.V); C depends on A (object dependency). 1.0.1
    fails on A; 1.0.2 inserts B with V 'x', the value 1.0.1's A row names: held; 1.0.3 inserts
    C: held (child of A); 1.0.4 inserts B with another value: applied."""
    c = table_definition("HR.C", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
    apply = lakeapply
    apply.configure(
        apply_settings(
            A,
            B,
            c,
            commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS,
            value_dependencies=(
                ValueDependency("A_NAMES_B", "HR", "A", ("V",)),
                ValueDependency("A_NAMES_B", "HR", "B", ("V",)),
            ),
            object_dependencies=(ObjectDependency("HR", "C", "HR", "A"),),
        )
    )
    apply.run(
        apply.txn(scn=100, transaction_id="1.0.1").delete("HR.A", ID=2, V="x").commit(scn=110),
        apply.txn(scn=115, transaction_id="1.0.2").insert("HR.B", ID=7, V="x").commit(scn=120),
        apply.txn(scn=125, transaction_id="1.0.3").insert("HR.C", ID=1, V="z").commit(scn=130),
        apply.txn(scn=135, transaction_id="1.0.4").insert("HR.B", ID=8, V="y").commit(scn=140),
    )

    assert apply.apply_status() == "ABORTED"
    assert (_ids(apply, "HR.B"), _ids(apply, "HR.C")) == ([8], [])
    assert _marks(apply) == (110, 140)


def test_dependencies_are_those_of_the_lcrs_before_the_dml_handlers(
    lakeapply: LakeapplyHarness,
) -> None:
    """1.0.1 deletes A -2, which does not exist (ORA-26787: aborts). 1.0.2 inserts A 2, which
    two statement handlers execute as A 2 and A -2: as captured it shares no row with 1.0.1, so
    it is not held back (Oracle computes dependencies before the handlers)."""
    mirrored = [
        {"operation": "INSERT", "handler_name": name, "statement": STATEMENTS[name]}
        for name in ("MIRROR_NEGATIVE", "AS_CAPTURED")
    ]
    lakeapply.configure(
        apply_settings(
            destination(A, dml_handlers=mirrored),
            commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS,
        )
    )

    lakeapply.run(
        lakeapply.txn(scn=100, transaction_id="1.0.1").delete("HR.A", ID=-2).commit(scn=110),
        lakeapply.txn(scn=115, transaction_id="1.0.2").insert("HR.A", ID=2, V="y").commit(scn=120),
    )

    assert lakeapply.apply_status() == "ABORTED"
    assert _ids(lakeapply, "HR.A") == [-2, 2]
