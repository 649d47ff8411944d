"""Exactly once: a cycle that crashes between any two of its writes, then runs again, ends in the
same silver tables, error queue and progress as an uninterrupted apply (here: the reference)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from lakeapply.landing.generator import WorkloadSpec, generate_lcrs, synthetic_table_definitions
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver.engine import CRASH_POINTS, SimulatedApplyCrash, apply_cycle, run_apply
from lakeapply.silver.settings import ApplySettings, DestinationTable
from tests.silver.differential import Workload, prepare, read_outcome, reference_outcome


def generated_workload() -> Workload:
    spec = WorkloadSpec(
        seed=11,
        transactions=40,
        synthetic_tables=2,
        conflict_ratio=0.15,
        include_sample_scenario=False,
        source_databases=("RESTART.DB",),
    )
    lcrs = [lcr for _, lcr in generate_lcrs(spec) if isinstance(lcr, dict)]
    settings = ApplySettings(
        apply_name="APPLY_RESTART",
        source_databases=("RESTART.DB",),
        tables=tuple(
            DestinationTable(
                "RESTART.DB",
                definition,
                f"restart_{definition.name.lower()}",
                instantiation_scn=spec.start_scn - 1,
            )
            for definition in synthetic_table_definitions(2)
        ),
        disable_on_error=False,
    )
    return settings, lcrs, {}


def test_a_cycle_crashed_at_every_step_then_resumed_equals_an_uninterrupted_apply(
    spark: SparkSession,
) -> None:
    workload = generated_workload()
    catalog = Catalog("restart")
    prepare(spark, catalog, workload)
    settings = workload[0]

    # The same planned cycle crashes at each step in turn; each re-run resumes it.
    for point in CRASH_POINTS:
        with pytest.raises(SimulatedApplyCrash):
            apply_cycle(spark, catalog, settings, crash_after=point)
    reports = run_apply(spark, catalog, settings)

    assert reports[0].resumed
    expected = reference_outcome(workload)
    assert expected["errors"], "the workload should exercise the error queue"
    assert read_outcome(spark, catalog, settings) == expected
