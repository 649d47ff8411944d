"""Ingest throughput: lakeapply's bronze ingest against a plain ``spark.read.json().write.delta``
of the same files, measured in one run on the same session.

    .venv/bin/python benchmarks/ingest_throughput.py --lines 1000000

Prints a Markdown table (wall time, lines/s, ratio to the plain baseline).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from lakeapply.bronze.ingest import ingest
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.session import LocalSparkSettings, get_spark

AVERAGE_LINES_PER_TRANSACTION = 4.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch folder (default: a temp dir)"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="lakeapply-bench-"))
    shutil.rmtree(work, ignore_errors=True)
    landing = work / "landing"

    started = time.perf_counter()
    workload = write_workload(
        WorkloadSpec(
            seed=1,
            transactions=int(args.lines / AVERAGE_LINES_PER_TRANSACTION),
            synthetic_tables=4,
            files_per_source=8,
            include_sample_scenario=False,
        ),
        landing,
    )
    generated = time.perf_counter() - started
    spark = get_spark(LocalSparkSettings(work / "warehouse"))

    started = time.perf_counter()
    files = [str(path) for path in workload.files]
    spark.read.json(files).write.format("delta").mode("overwrite").save(str(work / "plain"))
    plain = time.perf_counter() - started

    started = time.perf_counter()
    report = ingest(spark, Catalog("bench"), landing)
    lakeapply = time.perf_counter() - started

    lines = workload.line_count
    print(f"\n{lines} lines in {len(files)} files (generated in {generated:.1f}s)\n")
    print("| method | wall time (s) | lines/s | ratio to plain |")
    print("|---|---:|---:|---:|")
    print(f"| plain spark.read.json -> Delta | {plain:.1f} | {lines / plain:,.0f} | 1.00 |")
    print(
        f"| lakeapply ingest (validate, lineage, quarantine, exactly-once) | {lakeapply:.1f} | "
        f"{lines / lakeapply:,.0f} | {lakeapply / plain:.2f} |"
    )
    assert report.lines == lines, (report.lines, lines)
    spark.stop()


if __name__ == "__main__":
    main()
