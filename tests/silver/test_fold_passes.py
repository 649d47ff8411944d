"""Design-notes 1: a fold pass proves the earliest new failure of each component of
transactions that share rows, not only the earliest of the cycle.

Independent failures in one cycle used to cost one fold pass each, and ``max_error_passes``
then cut the cycle, so a workload with many scattered error transactions ran cycle after
cycle. The outcome must not change: a transaction that fails only because an earlier one in
its component failed is still found, in a later pass.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeapply.silver import fold_passes
from lakeapply.silver.fold import FoldPlan
from lakeapply.silver.fold_passes import run_fold
from lakeapply.testing import LakeapplyHarness, Transaction, apply_settings, table_definition

T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


def queued(lakeapply: LakeapplyHarness) -> dict[str, int]:
    return {
        row.source_transaction_id: row.error_number for row in lakeapply.error_queue().collect()
    }


def test_independent_failures_are_all_proven_in_one_pass_and_one_cycle(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False, max_error_passes=2))
    lakeapply.create_tables()
    missing = [
        lakeapply.txn(scn=100 + 10 * n, transaction_id=f"1.0.{n}")
        .update("HR.T", old={"ID": n}, new={"ID": n, "V": "x"})
        .commit(scn=101 + 10 * n)
        for n in (1, 2, 3)
    ]
    fine = lakeapply.txn(scn=200, transaction_id="1.0.9").insert("HR.T", ID=9, V="ok")

    reports = lakeapply.run(*missing, fine.commit(scn=201))

    # One pass finds the three, the next finds nothing new: within max_error_passes, no cut.
    assert [(r.passes, r.errors) for r in reports] == [(2, 3)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.2": 26787, "1.0.3": 26787}
    assert [r.ID for r in lakeapply.silver("HR.T").collect()] == [9]


def test_a_failure_caused_by_an_earlier_failure_in_its_component_is_found_in_a_later_pass(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False))
    lakeapply.create_tables()
    # 1.0.1 inserts key 5 and then fails on key 1; 1.0.2 updates key 5, which exists only if
    # 1.0.1 applied; 1.0.3 fails on its own, in another component.
    first = (
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .insert("HR.T", ID=5, V="a")
        .update("HR.T", old={"ID": 1}, new={"ID": 1, "V": "x"})
        .commit(scn=101)
    )
    second = (
        lakeapply.txn(scn=110, transaction_id="1.0.2")
        .update("HR.T", old={"ID": 5, "V": "a"}, new={"ID": 5, "V": "b"})
        .commit(scn=111)
    )
    third = (
        lakeapply.txn(scn=120, transaction_id="1.0.3")
        .update("HR.T", old={"ID": 7}, new={"ID": 7, "V": "x"})
        .commit(scn=121)
    )

    reports = lakeapply.run(first, second, third)

    # Pass 1 proves 1.0.1 and 1.0.3 (two components), pass 2 finds 1.0.2, pass 3 nothing.
    assert [(r.passes, r.errors) for r in reports] == [(3, 3)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.2": 26787, "1.0.3": 26787}
    assert lakeapply.silver("HR.T").count() == 0


def test_failures_of_one_component_that_do_not_reach_each_other_are_proven_in_one_pass(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False))
    lakeapply.create_tables()
    # 1.0.0 links keys 5 and 6, so all three share one component; but 1.0.2 touches nothing
    # 1.0.1 touched, so 1.0.1 failing cannot change what 1.0.2 sees.
    reports = lakeapply.run(
        lakeapply.txn(scn=90, transaction_id="1.0.0")
        .insert("HR.T", ID=5, V="a")
        .insert("HR.T", ID=6, V="a")
        .commit(scn=91),
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .update("HR.T", old={"ID": 5}, new={"ID": 5, "V": "b"})
        .update("HR.T", old={"ID": 1}, new={"ID": 1, "V": "x"})
        .commit(scn=101),
        lakeapply.txn(scn=110, transaction_id="1.0.2")
        .update("HR.T", old={"ID": 6}, new={"ID": 6, "V": "c"})
        .update("HR.T", old={"ID": 2}, new={"ID": 2, "V": "x"})
        .commit(scn=111),
    )

    # By component: 1.0.1 in pass 1, 1.0.2 in pass 2, nothing new in pass 3.
    assert [(r.passes, r.errors) for r in reports] == [(2, 2)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.2": 26787}
    assert sorted((r.ID, r.V) for r in lakeapply.silver("HR.T").collect()) == [(5, "a"), (6, "a")]


def chain_of_three(lakeapply: LakeapplyHarness) -> list[Transaction]:
    """Pass 1 applies 1.0.1's key 5, so 1.0.5 succeeds and inserts key 6, and 1.0.9 fails on
    key 6. But 1.0.1 fails (no key 1), so 1.0.5 fails too (no key 5) and 1.0.9 applies."""
    return [
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .insert("HR.T", ID=5, V="a")
        .update("HR.T", old={"ID": 1}, new={"ID": 1, "V": "x"})
        .commit(scn=101),
        lakeapply.txn(scn=105, transaction_id="1.0.5")
        .update("HR.T", old={"ID": 5, "V": "a"}, new={"ID": 5, "V": "b"})
        .insert("HR.T", ID=6, V="from 1.0.5")
        .commit(scn=106),
        lakeapply.txn(scn=110, transaction_id="1.0.9").insert("HR.T", ID=6, V="ok").commit(scn=111),
    ]


def test_a_failure_an_earlier_one_reaches_through_a_transaction_between_them_waits(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False))
    lakeapply.create_tables()

    reports = lakeapply.run(*chain_of_three(lakeapply))

    assert [(r.passes, r.errors) for r in reports] == [(3, 2)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.5": 26787}
    assert [(r.ID, r.V) for r in lakeapply.silver("HR.T").collect()] == [(6, "ok")]


def test_at_max_error_passes_the_cycle_ends_at_the_earliest_unproven_failure(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False, max_error_passes=2))
    lakeapply.create_tables()

    reports = lakeapply.run(*chain_of_three(lakeapply))

    # Pass 1 proves 1.0.1 (1.0.9 is reached from it), pass 2 finds 1.0.5 and stops there:
    # 1.0.9 waits for the next cycle, where it applies.
    assert [(r.passes, r.errors) for r in reports] == [(2, 2), (1, 0)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.5": 26787}
    assert [(r.ID, r.V) for r in lakeapply.silver("HR.T").collect()] == [(6, "ok")]


def test_a_failure_that_only_an_earlier_failure_caused_is_applied(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False, max_error_passes=2))
    lakeapply.create_tables()
    # 1.0.2's INSERT of key 5 collides with 1.0.1's only while 1.0.1 is assumed to apply.
    reports = lakeapply.run(
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .insert("HR.T", ID=5, V="a")
        .update("HR.T", old={"ID": 1}, new={"ID": 1, "V": "x"})
        .commit(scn=101),
        lakeapply.txn(scn=110, transaction_id="1.0.2").insert("HR.T", ID=5, V="b").commit(scn=111),
        lakeapply.txn(scn=120, transaction_id="1.0.3")
        .update("HR.T", old={"ID": 7}, new={"ID": 7, "V": "x"})
        .commit(scn=121),
    )

    # Pass 1 proves 1.0.1 and 1.0.3 (nothing reaches it), not 1.0.2; pass 2 applies 1.0.2.
    assert [(r.passes, r.errors) for r in reports] == [(2, 2)]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.3": 26787}
    assert [(r.ID, r.V) for r in lakeapply.silver("HR.T").collect()] == [(5, "b")]


def test_a_pass_after_a_failure_folds_only_the_groups_its_new_failures_touch(
    lakeapply: LakeapplyHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False))
    lakeapply.create_tables()
    folded_keys: list[list[str]] = []

    def recording_fold(fold_input: DataFrame, plan: FoldPlan, buckets: int) -> DataFrame:
        lcrs = fold_input.where(F.col("kind") == "LCR").select("key_text").distinct()
        folded_keys.append(sorted(json.loads(r.key_text)[0] for r in lcrs.collect()))
        return run_fold(fold_input, plan, buckets)

    monkeypatch.setattr(fold_passes, "run_fold", recording_fold)
    # 1.0.1 inserts key 5 and fails on key 1; 1.0.2 updates key 5, so it fails once 1.0.1 is
    # known failed; 1.0.3 and 1.0.4 touch other keys.
    lakeapply.land(
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .insert("HR.T", ID=5, V="a")
        .update("HR.T", old={"ID": 1}, new={"ID": 1, "V": "x"})
        .commit(scn=101),
        lakeapply.txn(scn=110, transaction_id="1.0.2")
        .update("HR.T", old={"ID": 5, "V": "a"}, new={"ID": 5, "V": "b"})
        .commit(scn=111),
        lakeapply.txn(scn=120, transaction_id="1.0.3").insert("HR.T", ID=8, V="c").commit(scn=121),
        lakeapply.txn(scn=130, transaction_id="1.0.4").insert("HR.T", ID=9, V="d").commit(scn=131),
    )

    reports = lakeapply.apply()

    assert [(r.passes, r.errors) for r in reports] == [(3, 2)]
    assert folded_keys == [["1", "5", "8", "9"], ["1", "5"], ["5"]]
    assert queued(lakeapply) == {"1.0.1": 26787, "1.0.2": 26787}
    assert sorted(r.ID for r in lakeapply.silver("HR.T").collect()) == [8, 9]


STATIC = table_definition("HR.S", {"ID": "NUMBER(3)", "V": "VARCHAR2(4)"}, primary_key=["ID"])


def test_transactions_with_static_errors_are_known_failed_before_the_first_pass(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(STATIC, disable_on_error=False))
    lakeapply.create_tables()

    reports = lakeapply.run(
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .insert("HR.S", ID="abc", V="x")  # the key cannot be read: ORA-01722 in any state
        .commit(scn=101),
        lakeapply.txn(scn=110, transaction_id="1.0.2")
        .insert("HR.S", ID=2, V="ok")
        .update("HR.S", old={"V": "ok"}, new={"V": "no"})  # no key column: ORA-26688
        .commit(scn=111),
        lakeapply.txn(scn=120, transaction_id="1.0.3").insert("HR.S", ID=4, V="ok").commit(scn=121),
    )

    # Without the static errors known up front: a pass to find them, one to prove nothing else.
    assert [(r.passes, r.errors, r.applied) for r in reports] == [(1, 2, 1)]
    assert queued(lakeapply) == {"1.0.1": 1722, "1.0.2": 26688}
    assert [r.ID for r in lakeapply.silver("HR.S").collect()] == [4]


def test_a_conflict_before_a_static_error_is_the_transactions_reported_error(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(STATIC, disable_on_error=False))
    lakeapply.create_tables()

    lakeapply.run(
        lakeapply.txn(scn=100, transaction_id="1.0.1")
        .update("HR.S", old={"ID": 9}, new={"ID": 9, "V": "x"})  # no row 9: ORA-26787
        .insert("HR.S", ID=1000, V="x")  # ORA-01438 on the key, known before the pass
        .commit(scn=101)
    )

    errors = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in errors] == [
        ("1.0.1", 26787, 1)
    ]


def test_with_disable_on_error_a_static_error_stops_the_apply_before_what_follows_it(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(STATIC, disable_on_error=True))
    lakeapply.create_tables()

    reports = lakeapply.run(
        lakeapply.txn(scn=100, transaction_id="1.0.1").insert("HR.S", ID=1, V="ok").commit(scn=101),
        lakeapply.txn(scn=110, transaction_id="1.0.2").insert("HR.S", ID="abc").commit(scn=111),
        lakeapply.txn(scn=120, transaction_id="1.0.3").insert("HR.S", ID=3, V="ok").commit(scn=121),
    )

    assert [(r.passes, r.errors, r.applied, r.aborted) for r in reports] == [(1, 1, 1, True)]
    assert queued(lakeapply) == {"1.0.2": 1722}
    assert lakeapply.apply_status() == "ABORTED"
    assert [r.ID for r in lakeapply.silver("HR.S").collect()] == [1]
