"""Exactly once: a cycle that crashes between any two of its writes, then runs again, ends in the
same silver tables, error queue and progress as an uninterrupted apply (here: the reference)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lakeapply.landing.generator import WorkloadSpec, generate_lcrs
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import acquire_warehouse_lease
from lakeapply.runtime.session import session_warehouse
from lakeapply.silver.cycle_state import CRASH_POINTS, SimulatedApplyCrash
from lakeapply.silver.engine import apply_cycle, run_apply
from tests.reference.workloads import Workload
from tests.silver.differential import compare, prepare, read_outcome, reference_outcome

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "tables"


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
    files = ("synth.t001.yml", "synth.t002.yml")
    process = {
        "apply_name": "APPLY_RESTART",
        "parameters": {"disable_on_error": "N"},
        "source_databases": ["RESTART.DB"],
        "tables": [
            {
                "source_database": "RESTART.DB",
                "source_object": f"SYNTH.T00{number}",
                "silver_table": f"restart_t00{number}",
                "definition": file,
                "instantiation_scn": spec.start_scn - 1,
            }
            for number, file in enumerate(files, start=1)
        ],
    }
    definitions = {file: yaml.safe_load((SCHEMAS / file).read_text()) for file in files}
    return Workload(process, definitions, lcrs)


@pytest.mark.parametrize("under_the_lease", [False, True], ids=["no lease", "under the lease"])
def test_a_cycle_crashed_at_every_step_then_resumed_equals_an_uninterrupted_apply(
    spark: SparkSession, tmp_path: Path, under_the_lease: bool
) -> None:
    """Under the warehouse lease (every local command) a destination append goes without
    Delta's transaction id, so its resume relies on the table's planned version alone."""
    workload = generated_workload()
    catalog = Catalog("restart_lease" if under_the_lease else "restart")
    settings = prepare(spark, catalog, [workload], workload, tmp_path)

    with (
        acquire_warehouse_lease(session_warehouse(spark))
        if under_the_lease
        else contextlib.nullcontext()
    ):
        # The same planned cycle crashes at each step in turn; each re-run resumes it.
        for point in CRASH_POINTS:
            with pytest.raises(SimulatedApplyCrash):
                apply_cycle(spark, catalog, settings, crash_after=point)
        reports = run_apply(spark, catalog, settings)

    operations = {
        str(row.operation)
        for row in DeltaTable.forName(spark, catalog.silver_table("restart_t001"))
        .history()
        .collect()
    }
    assert "WRITE" in operations, "the first crash after the writes should follow an append"

    assert reports[0].resumed
    expected = reference_outcome(workload)
    assert expected["errors"], "the workload should exercise the error queue"
    compare(expected, read_outcome(spark, catalog, settings.apply_name, workload), batches=1)
