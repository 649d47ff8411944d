"""The engine against the independent reference as a hypothesis state machine: ingest batches
land one at a time, apply cycles run, most crash at a drawn step (before or after later batches
land), and whenever the cycles have read every landed batch, and at the end of each run, the
state must be the reference's after exactly those batches: silver tables, error queue and its
messages, transaction outcomes, counters, low and high watermarks, oldest SCN.

A crashed cycle is resumed by the next one from its recorded plan, so a batch landed while a
cycle lies crashed is read by the cycle after it; hypothesis interleaves landing, crashing,
resuming and comparing in the orders a fixed scenario would not try.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase
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
# Hypothesis's max_examples: it does not count partial attempts, so it makes more runs (8 made
# 24 when measured, 15 min on 2 cores); a wider run: LAKEAPPLY_STATE_MACHINE_RUNS.
RUNS = int(os.environ.get("LAKEAPPLY_STATE_MACHINE_RUNS", "8"))
_numbers = itertools.count(1)
# What the runs did, so the test can show the interleavings it claims were tried.
seen: Counter[str] = Counter()


def step(method: Callable[..., None]) -> Callable[..., None]:
    """A rule's body; ``failed`` stays set when it raises, so teardown adds no second error."""

    @functools.wraps(method)
    def run(self: CyclesWithCrashes, *args: Any, **kwargs: Any) -> None:
        self.failed = True
        method(self, *args, **kwargs)
        self.failed = False

    return run


class CyclesWithCrashes(RuleBasedStateMachine):
    """One workload (carrying on after errors) per run, in a catalog of its own. Each step
    costs an apply cycle, so cycles only run when a landed batch or a crashed cycle waits, and
    comparisons only when something ran since the last one."""

    def __init__(self, spark: SparkSession, folder: Path) -> None:
        super().__init__()
        self.spark = spark
        self.folder = folder
        self.parts: list[list[dict[str, object]]] = []
        self.landed = 0
        self.read = 0  # batches a finished cycle has read (one each: max_cycle_batches = 1)
        self.crashed = False  # a cycle crashed and no cycle ran since
        self.compared = True  # nothing ran since the last comparison
        self.failed = False  # a step raised

    def _work_waits(self) -> bool:
        return self.read < self.landed or self.crashed

    @initialize(drawn=workloads(disable_on_error=False))
    @step
    def configure_the_apply(self, drawn: Workload) -> None:
        number = next(_numbers)
        seen["runs"] += 1
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
    @step
    def land_the_next_batch(self) -> None:
        land(self.spark, self.catalog, self.parts[self.landed], self.settings.apply_name)
        self.landed += 1
        self.compared = False
        if self.crashed:
            seen["batches landed while a cycle lay crashed"] += 1

    @precondition(_work_waits)
    @rule(crash=st.sampled_from((None, *CRASH_POINTS)))
    @step
    def run_a_cycle(self, crash: str | None) -> None:
        """One cycle, which crashes after the drawn step (None: it does not crash)."""
        resuming = self.crashed
        try:
            report = apply_cycle(self.spark, self.catalog, self.settings, crash_after=crash)
        except SimulatedApplyCrash:
            seen[f"crashes after {crash}" + (" of a resumed cycle" if resuming else "")] += 1
            self.crashed = True
        else:  # no crash drawn, or the cycle had none of that step's work (e.g. no MERGE)
            seen["resumed cycles" if resuming else "cycles"] += 1
            if report is not None and not report.resumed:
                self.read += 1
            self.crashed = False
        self.compared = False

    @precondition(
        lambda self: (
            self.landed > 0 and self.read == self.landed and not self.crashed and not self.compared
        )
    )
    @rule()
    @step
    def compare_with_the_reference(self) -> None:
        """Once the cycles have read every landed batch (and no cycle lies crashed)."""
        self._catch_up_and_compare()
        seen["comparisons"] += 1

    def _catch_up_and_compare(self) -> None:
        run_apply(self.spark, self.catalog, self.settings)
        self.read, self.crashed, self.compared = self.landed, False, True
        expected = differential.reference_outcome(self.workload, BATCHES, received=self.landed)
        actual = differential.read_outcome(
            self.spark, self.catalog, self.settings.apply_name, self.workload
        )
        differential.compare(expected, actual, BATCHES)

    def teardown(self) -> None:
        """A run that ended before its last comparison lands the rest, catches up and compares
        (not after a failed step: its failure is the one to report)."""
        if self.failed or not self.parts or (self.compared and self.landed == len(self.parts)):
            return
        label = "comparisons at the end of a run" + (" after a crash" if self.crashed else "")
        while self.landed < len(self.parts):
            self.land_the_next_batch()
        self._catch_up_and_compare()
        seen[label] += 1

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
            max_examples=RUNS,
            stateful_step_count=12,
            deadline=None,
            database=None,
            derandomize=True,
            # No shrinking: each step is an apply cycle. A failure prints its steps as drawn.
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        ),
    )
    print(dict(seen))
    assert seen["resumed cycles"] and seen["batches landed while a cycle lay crashed"]
