"""``make bench-memory``: the driver's memory as the batch grows (100k -> 1M LCRs).

In ``local[2]`` (the embedded default) the executors run inside the driver's JVM: a bigger
batch's cached blocks, shuffles and task buffers grow that one heap, so ``make bench``'s peak
driver memory grows with the batch whatever the driver itself keeps. Here Spark's
``local-cluster[1,2,MB]`` master gives the executor a JVM of its own, as a cluster does, and the
driver JVM holds only the driver's work: query plans, Delta's log state, broadcast copies, the
status store. Each size runs in fresh processes: one writes the landing files (the workload
generator's memory stays out of the measurement), another ingests them (not measured) and
applies them, measuring:

* the driver's Python process and JVM: resident high-water marks during the apply;
* the driver JVM's live heap: the most it held right after a full GC, sampled every
  ``--sample-seconds`` (the GCs slow the apply, so its time here is not a speed figure);
* the largest executor-side process (the executor JVM or a Python worker), for scale.

    .venv/bin/python benchmarks/driver_memory.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyspark
from apply_bench import RESULTS, apply_settings, write_results
from memory import live_heap, peak_memory

from lakeapply.bronze.ingest import ingest
from lakeapply.landing.generator import WorkloadSpec, synthetic_table_definitions, write_workload
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import hold_warehouse_for_process
from lakeapply.runtime.session import JVM_MEMORY_SIZE, LocalSparkSettings, get_spark
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import ensure_apply_tables, ensure_destination_tables

LINES_PER_TRANSACTION = 4.5  # the generator's defaults, as in apply_bench


@dataclass(frozen=True)
class DriverMemory:
    lcrs: int
    lines: int
    seconds: float
    python_mib: float | None
    driver_jvm_mib: float | None
    driver_live_heap_mib: float
    driver_storage_mib: float
    heap_samples: int
    executor_side_mib: float | None
    note: str


def generate(lcrs: int, tables: int, landing: Path) -> dict[str, int]:
    spec = WorkloadSpec(
        seed=lcrs + tables,
        transactions=max(1, int(lcrs / LINES_PER_TRANSACTION)),
        synthetic_tables=tables,
        include_sample_scenario=False,
        files_per_source=max(4, lcrs // 125_000),
    )
    workload = write_workload(spec, landing)
    return {"initial_scn": workload.initial_scn, "lines": workload.line_count}


def measure(args: argparse.Namespace) -> DriverMemory:
    # local-cluster starts the executor with Spark's launch scripts, which pip's pyspark ships.
    os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
    os.environ["SPARK_EXECUTOR_MEMORY"] = args.executor_memory
    executor_mib = _mib(args.executor_memory)
    hold_warehouse_for_process(args.work / "warehouse")  # as the CLI does (runtime/lease.py)
    spark = get_spark(
        LocalSparkSettings(
            args.work / "warehouse",
            master=f"local-cluster[1,2,{executor_mib + 512}]",
            driver_memory=args.driver_memory,
            app_name="lakeapply-driver-memory",
        )
    )
    catalog = Catalog("memory")
    lines = ingest(spark, catalog, args.work / "landing").lines
    settings = apply_settings(synthetic_table_definitions(args.tables), args.initial_scn)
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    with peak_memory(spark) as peak, live_heap(spark, args.sample_seconds) as heap:
        started = time.perf_counter()
        reports = run_apply(spark, catalog, settings)
        seconds = time.perf_counter() - started
    applied = sum(r.applied for r in reports)
    spark.stop()
    return DriverMemory(
        args.lcrs,
        lines,
        seconds,
        peak.python_mib,
        peak.jvm_mib,
        heap.peak_mib,
        heap.peak_storage_mib,
        heap.samples,
        peak.worker_mib,
        f"{len(reports)} cycle(s), {applied:,} transactions applied",
    )


def _jvm_size(text: str) -> str:
    if not JVM_MEMORY_SIZE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size such as 4g or 6144m")
    return text


def _mib(size: str) -> int:
    number, unit = int(size[:-1]), size[-1].lower()
    return number * 1024 if unit == "g" else number


def _child(role: str, args: argparse.Namespace, work: Path, lcrs: int, **extra: int) -> str:
    command = [
        sys.executable,
        __file__,
        "--role",
        role,
        "--lcrs",
        str(lcrs),
        "--tables",
        str(args.tables),
        "--work",
        str(work),
        "--driver-memory",
        args.driver_memory,
        "--executor-memory",
        args.executor_memory,
        "--sample-seconds",
        str(args.sample_seconds),
    ]
    for name, value in extra.items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-20:])
        raise SystemExit(f"the {role} step of {lcrs:,} LCRs failed ({done.returncode}):\n{tail}")
    return done.stdout.strip().splitlines()[-1]


def markdown(results: list[DriverMemory], args: argparse.Namespace) -> str:
    def mib(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    lines = [
        "# Driver memory as the batch grows",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores; "
        f"`local-cluster[1,2,...]` (one executor JVM of {args.executor_memory}, 2 cores), "
        f"driver heap {args.driver_memory}, {args.tables} table(s); live heap sampled after a "
        f"full GC every {args.sample_seconds:g} s (the apply's time includes those GCs).",
        "",
        "| LCRs | apply (s) | driver Python peak RSS (MiB) | driver JVM peak RSS (MiB) "
        "| driver JVM live heap, peak (MiB) | of it Spark storage (MiB) | heap samples "
        "| largest executor-side process, peak RSS (MiB) | note |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {r.lines:,} | {r.seconds:.1f} | {mib(r.python_mib)} | {mib(r.driver_jvm_mib)} "
        f"| {r.driver_live_heap_mib:,.0f} | {r.driver_storage_mib:,.0f} | {r.heap_samples} "
        f"| {mib(r.executor_side_mib)} | {r.note} |"
        for r in results
    ]
    if len(results) > 1:
        first, last = results[0], results[-1]
        lines += [
            "",
            f"From {first.lines:,} to {last.lines:,} lines: driver live heap "
            f"{last.driver_live_heap_mib / first.driver_live_heap_mib:.2f}x, driver JVM RSS "
            f"{_ratio(last.driver_jvm_mib, first.driver_jvm_mib)}, driver Python RSS "
            f"{_ratio(last.python_mib, first.python_mib)}, largest executor-side process "
            f"{_ratio(last.executor_side_mib, first.executor_side_mib)}.",
        ]
    return "\n".join(lines) + "\n"


def _ratio(last: float | None, first: float | None) -> str:
    return "-" if last is None or not first else f"{last / first:.2f}x"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000", help="LCR counts, comma separated")
    parser.add_argument("--tables", type=int, default=1)
    parser.add_argument("--driver-memory", type=_jvm_size, default="2g")
    parser.add_argument("--executor-memory", type=_jvm_size, default="4g")
    parser.add_argument("--sample-seconds", type=float, default=2.0)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    # One size's steps, each in a process of its own (run by the parent).
    parser.add_argument("--role", choices=("all", "generate", "measure"), default="all")
    parser.add_argument("--lcrs", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--initial-scn", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def main() -> None:
    args = _parser().parse_args()
    if args.role == "generate":
        print(json.dumps(generate(args.lcrs, args.tables, args.work / "landing")))
        return
    if args.role == "measure":
        print(json.dumps(asdict(measure(args))))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="lakeapply-bench-"))
    results = []
    for lcrs in [int(size) for size in args.sizes.split(",")]:
        size_work = work / str(lcrs)
        shutil.rmtree(size_work, ignore_errors=True)
        generated = json.loads(_child("generate", args, size_work, lcrs))
        print(f"{lcrs:,} LCRs: {generated['lines']:,} lines generated", flush=True)
        measured = DriverMemory(
            **json.loads(
                _child("measure", args, size_work, lcrs, initial_scn=generated["initial_scn"])
            )
        )
        print(f"  {measured}", flush=True)
        results.append(measured)
        shutil.rmtree(size_work, ignore_errors=True)
    write_results(args.out, "driver-memory", markdown(results, args))


if __name__ == "__main__":
    main()
