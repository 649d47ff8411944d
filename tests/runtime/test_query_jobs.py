"""Issue 17 item 5 (bounded memory over many cycles): the jobs Spark's scheduler keeps for a
query that has ended are released.

A job registered under a query's execution id after the query ended is the leak measured in
a long-running apply; it is planted here by running a job under an execution id that no query
has, exactly the state the scheduler is left in.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from lakeapply.runtime.query_jobs import (
    EXECUTION_ID_PROPERTY,
    release_finished_query_jobs,
    tracked_query_ids,
)
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

ORPHAN_EXECUTION_ID = 987_654_321


@contextmanager
def execution_id(spark: SparkSession, value: int) -> Iterator[None]:
    context = spark.sparkContext
    before = context.getLocalProperty(EXECUTION_ID_PROPERTY)
    context.setLocalProperty(EXECUTION_ID_PROPERTY, str(value))
    try:
        yield
    finally:
        context.setLocalProperty(EXECUTION_ID_PROPERTY, before)  # type: ignore[arg-type]


def plant_orphaned_job(spark: SparkSession, value: int = ORPHAN_EXECUTION_ID) -> None:
    """A finished job the scheduler keeps under an execution id whose query is over."""
    with execution_id(spark, value):
        spark.sparkContext.parallelize([1, 2, 3], 1).count()
    wait_until(lambda: value in tracked_query_ids(spark))


def wait_until(condition: object, seconds: float = 30.0) -> None:
    """The scheduler handles submissions and clean-ups on its own event thread."""
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def test_the_jobs_of_an_ended_query_are_released(spark: SparkSession) -> None:
    plant_orphaned_job(spark)

    assert release_finished_query_jobs(spark) >= 1

    wait_until(lambda: ORPHAN_EXECUTION_ID not in tracked_query_ids(spark))


def test_the_jobs_of_the_callers_own_running_query_are_kept(spark: SparkSession) -> None:
    running = ORPHAN_EXECUTION_ID + 1
    with execution_id(spark, running):
        spark.sparkContext.parallelize([1], 1).count()
        wait_until(lambda: running in tracked_query_ids(spark))

        release_finished_query_jobs(spark)
        time.sleep(0.5)  # a clean-up would be handled by now

        assert running in tracked_query_ids(spark)
    release_finished_query_jobs(spark)
    wait_until(lambda: running not in tracked_query_ids(spark))


T = table_definition("HR.T", {"ID": "NUMBER(10)", "V": "VARCHAR2(10)"}, primary_key=["ID"])


def test_an_apply_cycle_leaves_no_ended_query_s_jobs_behind(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(apply_settings(T, disable_on_error=False))
    lakeapply.create_tables()
    plant_orphaned_job(lakeapply.spark)

    lakeapply.run(lakeapply.txn(scn=100).insert("HR.T", ID=1, V="a").commit(scn=101))

    wait_until(lambda: ORPHAN_EXECUTION_ID not in tracked_query_ids(lakeapply.spark))


class SessionWithoutJvm:
    """What Spark Connect gives: no SparkContext."""

    @property
    def sparkContext(self) -> object:
        raise NotImplementedError("sparkContext is not supported with Spark Connect")


def test_a_session_without_a_reachable_scheduler_releases_nothing_and_does_not_fail() -> None:
    assert release_finished_query_jobs(SessionWithoutJvm()) == 0  # type: ignore[arg-type]
