"""The engine against the independent reference as a hypothesis state machine: ingest batches
land one at a time, apply cycles run, some crash at a drawn step (before or after later batches
land), and whenever the apply has caught up with what has landed its state must be the
reference's after exactly those batches: silver tables, error queue and its messages,
transaction outcomes, counters, low and high watermarks, oldest SCN.

A crashed cycle is resumed by the next one from its recorded plan, so a batch landed while a
cycle lies crashed is read by the cycle after it; hypothesis interleaves landing, crashing,
resuming and comparing in the orders a fixed scenario would not try.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog
from lakeapply.silver.cycle_state import CRASH_POINTS, SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle, run_apply
from lakeapply.silver.plan import start_apply
from lakeapply.silver.settings import ApplySettings
from tests.reference.workloads import Workload, workloads
from tests.silver import differential
from tests.silver.bronze_fixture import land

BATCHES = 3
_numbers = itertools.count(1)
# What the runs did, so the test can show the interleavings it claims were tried.
seen: Counter[str] = Counter()


class CyclesWithCrashes(RuleBasedStateMachine):
    """One workload (carrying on after errors) per run, in a catalog of its own. Cycles and
    crashes are only tried when a landed batch waits or a crashed cycle does, and comparisons
    only when something ran since the last one: each step costs an apply cycle."""

    def __init__(self, spark: SparkSession, folder: Path) -> None:
        super().__init__()
        self.spark = spark
        self.folder = folder
        self.parts: list[list[dict[str, object]]] = []
        self.landed = 0
        self.read = 0  # batches a finished cycle has read (one each: max_cycle_batches = 1)
        self.crashed = False  # a cycle crashed and no cycle ran since
        self.compared = True  # nothing ran since the last comparison

    def _work_waits(self) -> bool:
        return self.read < self.landed or self.crashed

    @initialize(drawn=workloads(disable_on_error=False))
    def configure_the_apply(self, drawn: Workload) -> None:
        number = next(_numbers)
        self.catalog = Catalog(f"sm{number}")
        self.workload = differential.with_parameters(
            differential.isolate(drawn, number), max_cycle_batches=1
        )
        self.parts = differential.landing_parts(self.workload, BATCHES)
        self.settings: ApplySettings = differential.configure(
            self.spark, self.catalog, self.workload, self.folder / f"run{number}"
        )
        start_apply(self.spark, self.catalog, self.settings)

    @precondition(lambda self: self.landed < len(self.parts))
    @rule()
    def land_the_next_batch(self) -> None:
        land(self.spark, self.catalog, self.parts[self.landed], self.settings.apply_name)
        self.landed += 1
        self.compared = False
        if self.crashed:
            seen["batches landed while a cycle lay crashed"] += 1

    @precondition(_work_waits)
    @rule()
    def run_one_cycle(self) -> None:
        report = apply_cycle(self.spark, self.catalog, self.settings)
        seen["resumed cycles" if self.crashed else "cycles"] += 1
        if report is not None and not report.resumed:
            self.read += 1
        self.crashed = False
        self.compared = False

    @precondition(_work_waits)
    @rule(point=st.sampled_from(CRASH_POINTS))
    def crash_a_cycle(self, point: str) -> None:
        try:
            apply_cycle(self.spark, self.catalog, self.settings, crash_after=point)
        except SimulatedApplyCrash:
            seen[f"crashes after {point}" + (" again" if self.crashed else "")] += 1
            self.crashed = True
        else:  # the cycle had none of that step's work (e.g. no MERGE): it finished
            seen[f"cycles with no {point} step"] += 1
            self.read += 0 if self.crashed else 1
            self.crashed = False
        self.compared = False

    @precondition(lambda self: self.landed > 0 and not self.compared)
    @rule()
    def catch_up_and_compare(self) -> None:
        run_apply(self.spark, self.catalog, self.settings)
        seen["comparisons after a crash" if self.crashed else "comparisons"] += 1
        self.read, self.crashed, self.compared = self.landed, False, True
        expected = differential.reference_outcome(self.workload, BATCHES, received=self.landed)
        actual = differential.read_outcome(
            self.spark, self.catalog, self.settings.apply_name, self.workload
        )
        differential.compare(expected, actual, BATCHES)

    @precondition(lambda self: self.landed == len(self.parts) and self.compared)
    @rule()
    def everything_is_applied_and_compared(self) -> None:
        """The end of a run: hypothesis fills its remaining steps with this (no cost)."""


@pytest.mark.slow  # each step is an apply cycle (~5-15 s on 2 cores)
def test_engine_matches_the_reference_through_landings_cycles_and_crashes(
    spark: SparkSession, tmp_path: Path
) -> None:
    run_state_machine_as_test(
        lambda: CyclesWithCrashes(spark, tmp_path),
        settings=hypothesis_settings(
            max_examples=10,
            stateful_step_count=10,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    print(dict(seen))
    assert seen["comparisons after a crash"] and seen["batches landed while a cycle lay crashed"]
