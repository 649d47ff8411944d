"""The gold views over a real DEPENDENT_TRANSACTIONS abort: the low watermark stays below the
held-back transaction while the high watermark passes the independent one after it."""

from __future__ import annotations

import contextlib

import pytest

from lakeapply.errors import ApplyAbortedError
from lakeapply.gold.runner import run_gold
from lakeapply.runtime.session import session_warehouse
from lakeapply.silver.settings import CommitSerialization
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

A = table_definition("HR.A", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
B = table_definition("HR.B", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


@pytest.mark.slow  # make test keeps the sample-dictionary gap test in test_gold.py (CI time)
def test_gold_shows_the_gap_a_dependent_abort_leaves_between_the_watermarks(
    lakeapply: LakeapplyHarness,
) -> None:
    apply = lakeapply
    apply.configure(
        apply_settings(A, B, commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS)
    )
    # 1.0.1 deletes a missing row (ORA-26787: aborts the apply, commit 110); 1.0.2 touches the
    # same key (held back, 120); 1.0.3 is on another table (applied, 130).
    apply.create_tables()
    apply.land(
        apply.txn(scn=100, transaction_id="1.0.1").delete("HR.A", ID=2, V="x").commit(scn=110),
        apply.txn(scn=115, transaction_id="1.0.2").insert("HR.A", ID=2, V="y").commit(scn=120),
        apply.txn(scn=125, transaction_id="1.0.3").insert("HR.B", ID=1, V="z").commit(scn=130),
    )
    with contextlib.suppress(ApplyAbortedError):  # the abort is the point
        apply.apply()
    assert apply.apply_status() == "ABORTED"

    report = run_gold(apply.spark, session_warehouse(apply.spark), apply.catalog.prefix)
    assert report.success, report.failures

    gold = f"{apply.catalog.prefix}_gold"
    progress = apply.spark.table(f"{gold}.dba_apply_progress").collect()
    assert [(row.APPLIED_MESSAGE_NUMBER, row.OLDEST_TRANSACTION_ID) for row in progress] == [
        (110, "1.0.2")  # processed through 1.0.1 (queued); 1.0.2 waits in the spill
    ]
    (coordinator,) = apply.spark.table(f"{gold}.v_streams_apply_coordinator").collect()
    assert (coordinator.STATE, coordinator.LWM_MESSAGE_NUMBER, coordinator.HWM_MESSAGE_NUMBER) == (
        "ABORTED",
        110,
        130,
    )
    errors = apply.spark.table(f"{gold}.dba_apply_error").collect()
    assert [(row.ERROR_NUMBER, row.SOURCE_TRANSACTION_ID) for row in errors] == [(26787, "1.0.1")]
