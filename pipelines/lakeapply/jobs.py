"""Jobs: the end-to-end runs behind ``make run`` and the Databricks bundle's tasks."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from lakeapply.bronze.ingest import ingest
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from lakeapply.status import collect_status, render_status


def run_demo(
    warehouse: Path,
    catalog_prefix: str,
    landing: Path,
    seed: int,
    transactions: int,
    console: Console,
) -> None:
    """landing -> bronze on the embedded default, then a summary."""
    started = time.monotonic()
    if not landing.exists() or not any(landing.rglob("*.jsonl*")):
        spec = WorkloadSpec(seed=seed, transactions=transactions, bad_line_ratio=0.001)
        workload = write_workload(spec, landing)
        console.print(f"generated {workload.line_count} LCR lines into {landing}")
    spark = get_spark(LocalSparkSettings(warehouse))
    catalog = Catalog(catalog_prefix)
    report = ingest(
        spark, catalog, landing, progress=lambda step: console.print(f"  ingest: {step}")
    )
    if report.batch_id is None:
        console.print("bronze: nothing new to ingest")
    else:
        console.print(
            f"bronze: batch {report.batch_id} ingested {report.lines} lines "
            f"({report.bronze_rows} LCRs, {report.quarantined_rows} quarantined)"
        )
    render_status(collect_status(spark, catalog), console)
    console.print(f"done in {time.monotonic() - started:.1f}s")
