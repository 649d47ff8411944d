"""Design-notes 1: a fold pass proves the earliest new failure of each component of
transactions that share rows, not only the earliest of the cycle.

Independent failures in one cycle used to cost one fold pass each, and ``max_error_passes``
then cut the cycle, so a workload with many scattered error transactions ran cycle after
cycle. The outcome must not change: a transaction that fails only because an earlier one in
its component failed is still found, in a later pass.
"""

from __future__ import annotations

from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

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
