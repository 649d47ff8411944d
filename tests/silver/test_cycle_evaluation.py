"""Issue 16 item 4: a small cycle does not pay for compiling generated code.

Spark compiles each query's generated Java code before its first row; on a cycle of a few
thousand LCRs that compilation is most of the time. The engine runs a cycle planned over at
most ``INTERPRETED_CYCLE_MAX_LCRS`` LCRs interpreted, and a larger one as the session is set
(``engine.is_small_cycle``, ``runtime.session.interpreted_evaluation``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from lakeapply.silver import engine
from lakeapply.silver.engine import apply_cycle
from lakeapply.silver.plan import plan_cycle
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])
FACTORY_MODE = "spark.sql.codegen.factoryMode"
WHOLE_STAGE = "spark.sql.codegen.wholeStage"


@pytest.fixture
def generated_code(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with Spark's default evaluation (the tests' session is interpreted)."""
    before = {key: spark.conf.get(key) for key in (FACTORY_MODE, WHOLE_STAGE)}
    spark.conf.set(FACTORY_MODE, "FALLBACK")
    spark.conf.set(WHOLE_STAGE, "true")
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def factory_modes_seen_by_a_cycle(lakeapply: LakeapplyHarness) -> set[str]:
    """The evaluation mode each of the cycle's steps ran under."""
    spark, seen = lakeapply.spark, set()
    apply_cycle(
        spark,
        lakeapply.catalog,
        lakeapply.apply_process,
        progress=lambda _: seen.add(spark.conf.get(FACTORY_MODE)),
    )
    return seen


def test_a_small_cycle_runs_interpreted_and_leaves_the_session_as_it_was(
    lakeapply: LakeapplyHarness, generated_code: SparkSession
) -> None:
    lakeapply.configure(apply_settings(T))
    lakeapply.create_tables()
    lakeapply.land(lakeapply.txn().insert("HR.T", ID=1, V="a").commit())

    assert factory_modes_seen_by_a_cycle(lakeapply) == {"NO_CODEGEN"}
    assert (generated_code.conf.get(FACTORY_MODE), generated_code.conf.get(WHOLE_STAGE)) == (
        "FALLBACK",
        "true",
    )
    assert [(int(r.ID), r.V) for r in lakeapply.silver("HR.T").collect()] == [(1, "a")]


def test_a_cycle_over_more_lcrs_than_the_limit_runs_with_generated_code(
    lakeapply: LakeapplyHarness, generated_code: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "INTERPRETED_CYCLE_MAX_LCRS", 1)
    lakeapply.configure(apply_settings(T))
    lakeapply.create_tables()
    lakeapply.land(lakeapply.txn().insert("HR.T", ID=1, V="a").commit())

    assert factory_modes_seen_by_a_cycle(lakeapply) == {"FALLBACK"}


def test_the_plan_counts_the_lcrs_of_the_batches_it_reads_and_no_more(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T, max_cycle_batches=1))
    lakeapply.create_tables()
    lakeapply.land(lakeapply.txn().insert("HR.T", ID=1, V="a").commit())  # 2 LCRs
    lakeapply.land(lakeapply.txn().insert("HR.T", ID=2, V="b").insert("HR.T", ID=3).commit())
    settings = lakeapply.apply_process

    planned = plan_cycle(lakeapply.spark, lakeapply.catalog, settings, settings)

    assert planned is not None
    plan, resumed = planned
    assert (plan.bronze_to_batch - plan.bronze_from_batch, plan.lcrs_to_read, resumed) == (
        1,
        2,
        False,
    )


def test_the_plan_counts_the_lcrs_of_the_open_transactions_the_spill_carries(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(apply_settings(T))
    lakeapply.create_tables()
    opened = lakeapply.txn(scn=100, transaction_id="1.0.1")
    lakeapply.run(opened.insert("HR.T", ID=1, V="a").insert("HR.T", ID=2, V="b").open())
    lakeapply.land(lakeapply.txn(scn=105, transaction_id="1.0.1").commit(scn=110))
    settings = lakeapply.apply_process

    planned = plan_cycle(lakeapply.spark, lakeapply.catalog, settings, settings)

    assert planned is not None
    assert planned[0].lcrs_to_read == 3  # the COMMIT, and the two spilled INSERTs
