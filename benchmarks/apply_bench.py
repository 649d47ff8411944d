"""``make bench``: lakeapply's apply against the floor and against what users write instead.

For every size (LCRs) and destination-table count, one seeded workload is generated with the
workload generator and ingested into bronze once (not timed; its time is reported). Then, on the
same bronze rows, the same session and the same Spark settings, each method runs against empty
Delta targets:

* ``floor``: a plain Delta append of the same row changes (writing them at minimum);
* ``lakeapply``: the apply engine, full semantics, FULL commit serialization;
* ``keyed dedupe MERGE``: latest change per key by (commit_scn, scn, position), one MERGE per table;
* ``per-transaction MERGE``: one MERGE per transaction, on the first N transactions only (its
  rate is extrapolated to the size, and the table says so);
* ``SDP AUTO CDC``: ``create_auto_cdc_flow`` SCD type 1 into a Delta streaming table, or the error
  that stops it on this Spark.

Writes ``benchmarks/results/<timestamp>.md`` and ``latest.md`` (Markdown table: wall time, LCRs/s,
ratio to the floor, peak driver memory) and ``latest.png`` (time vs size per method).

    .venv/bin/python benchmarks/apply_bench.py --sizes 10000,100000,1000000 --tables 1,50
    .venv/bin/python benchmarks/apply_bench.py --scaling      # 100k changes into 100k vs 10M rows
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import alternatives
from memory import peak_memory
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.bronze.ingest import ingest
from lakeapply.bronze.tables import LCR_TABLE
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.landing.generator import (
    WorkloadSpec,
    synthetic_table_definitions,
    write_workload,
)
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import hold_warehouse_for_process
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from lakeapply.silver.engine import load_initial_copy, run_apply
from lakeapply.silver.layout import optimize_destinations
from lakeapply.silver.plan import ensure_apply_tables, ensure_destination_tables
from lakeapply.silver.settings import ApplySettings, CommitSerialization, DestinationTable

RESULTS = Path(__file__).parent / "results"
LINES_PER_TRANSACTION = 4.5  # measured average of the generator's defaults (COMMIT included)
CHANGES_PER_TRANSACTION = 3.0  # the generator's defaults: 1-5 row LCRs, multi-row statements
ERRORS_METHOD = "lakeapply with error transactions"
SOURCE = "DBS1.EXAMPLE.COM"
PREFIXES = {"floor": "floor_", "keyed dedupe MERGE": "dedupe_", "per-transaction MERGE": "txn_"}
METHODS = (
    "floor",
    "lakeapply",
    ERRORS_METHOD,
    "keyed dedupe MERGE",
    "per-transaction MERGE",
    "SDP AUTO CDC",
)


@dataclass(frozen=True)
class Measurement:
    method: str
    lcrs: int
    tables: int
    seconds: float | None
    note: str = ""
    driver_peak_mib: float | None = None
    jvm_heap_mib: float | None = None
    existing_rows: int = 0


def _workload(
    lcrs: int, tables: int, work: Path, error_transactions: float = 0.0
) -> tuple[Path, tuple[TableDefinition, ...], int]:
    landing = work / "landing"
    shutil.rmtree(landing, ignore_errors=True)
    spec = WorkloadSpec(
        seed=lcrs + tables,
        transactions=max(1, int(lcrs / LINES_PER_TRANSACTION)),
        synthetic_tables=tables,
        include_sample_scenario=False,
        files_per_source=max(4, lcrs // 125_000),
        # The generator's conflicts are per change: about this share of transactions fails.
        conflict_ratio=error_transactions / CHANGES_PER_TRANSACTION,
    )
    workload = write_workload(spec, landing)
    return landing, workload.tables, workload.initial_scn


def apply_settings(tables: tuple[TableDefinition, ...], initial_scn: int) -> ApplySettings:
    return ApplySettings(
        apply_name="BENCH",
        source_databases=(SOURCE,),
        tables=tuple(
            DestinationTable(
                SOURCE, d, f"{d.owner.lower()}_{d.name.lower()}", instantiation_scn=initial_scn
            )
            for d in tables
        ),
        commit_serialization=CommitSerialization.FULL,
        disable_on_error=False,
    )


def _timed(
    spark: SparkSession, method: str, lcrs: int, tables: int, run: Callable[[], str | None]
) -> Measurement:
    with peak_memory(spark) as peak:
        started = time.perf_counter()
        note = run() or ""
        seconds = time.perf_counter() - started
    print(f"  {method:<24} {seconds:8.1f} s  {note}", flush=True)
    return Measurement(
        method,
        lcrs,
        tables,
        seconds,
        "; ".join([note, *peak.notes]).strip("; "),
        peak.driver_mib,
        peak.jvm_heap_mib,
    )


def run_case(
    spark: SparkSession,
    work: Path,
    lcrs: int,
    tables: int,
    methods: tuple[str, ...],
    per_transaction_sample: int,
    auto_cdc_error: dict[str, str],
    error_transactions: float = 0.01,
    label: str = "bench",
) -> list[Measurement]:
    print(f"\n{lcrs:,} LCRs into {tables} table(s)", flush=True)
    started = time.perf_counter()
    landing, definitions, initial_scn = _workload(lcrs, tables, work)
    generated = time.perf_counter() - started
    catalog = Catalog(f"{label}_{lcrs}_{tables}")
    started = time.perf_counter()
    report = ingest(spark, catalog, landing)
    ingested = time.perf_counter() - started
    lines = report.lines
    print(f"  generated {lines:,} lines in {generated:.0f} s, bronze ingest {ingested:.0f} s")
    bronze: DataFrame = spark.table(catalog.bronze_table(LCR_TABLE))
    results = [
        Measurement(
            "bronze ingest (not part of the apply)",
            lines,
            tables,
            ingested,
            "landing files -> bronze",
        )
    ]
    database = f"{label}_alt_{lcrs}_{tables}"

    def lakeapply_run() -> str:
        started = time.perf_counter()
        reports = run_apply(
            spark,
            catalog,
            settings,
            lambda step: print(f"    {time.perf_counter() - started:7.1f} s  {step}", flush=True),
        )
        applied = sum(r.applied for r in reports)
        errors = sum(r.errors for r in reports)
        return f"{len(reports)} cycle(s), {applied:,} transactions applied, {errors} errors"

    sampled_lcrs: list[int] = []

    def per_transaction_run() -> str:
        applied = alternatives.per_transaction_merge(
            spark, bronze, definitions, database, per_transaction_sample
        )
        sampled_lcrs.append(applied)
        return f"first {per_transaction_sample} transactions ({applied} LCRs)"

    runners: dict[str, Callable[[], str | None]] = {
        "floor": lambda: alternatives.plain_append(spark, bronze, definitions, database),
        "lakeapply": lakeapply_run,
        "keyed dedupe MERGE": lambda: alternatives.keyed_dedupe_merge(
            spark, bronze, definitions, database
        ),
        "per-transaction MERGE": per_transaction_run,
    }
    # Setup is not timed: empty targets (lakeapply: `lakeapply configure` creates its tables).
    settings = apply_settings(definitions, initial_scn)
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    for method, prefix in PREFIXES.items():
        if method in methods:
            alternatives.create_targets(spark, database, definitions, prefix)
    for method in methods:
        if method == ERRORS_METHOD:
            results.append(
                _with_error_transactions(
                    spark, work, lcrs, tables, error_transactions, results, label
                )
            )
        elif method in runners:
            measurement = _timed(spark, method, lines, tables, runners[method])
            if method == "per-transaction MERGE" and measurement.seconds is not None:
                sampled = max(1, sampled_lcrs[-1])
                measurement = Measurement(
                    method,
                    lines,
                    tables,
                    measurement.seconds * lines / sampled,
                    f"extrapolated from the {measurement.note}, measured "
                    f"{measurement.seconds:.1f} s",
                    measurement.driver_peak_mib,
                    measurement.jvm_heap_mib,
                )
            results.append(measurement)
        elif method == "SDP AUTO CDC":
            if "error" in auto_cdc_error:
                results.append(
                    Measurement(
                        method, lines, tables, None, f"not run again: {auto_cdc_error['error']}"
                    )
                )
                continue
            outcome = alternatives.auto_cdc(spark, bronze, definitions[0], work)
            if outcome.error:
                auto_cdc_error["error"] = outcome.error
                print(f"  {method:<24} failed after {outcome.seconds:.0f} s: {outcome.error}")
                results.append(Measurement(method, lines, tables, None, outcome.error))
            else:
                results.append(
                    Measurement(method, lines, tables, outcome.seconds, "one table only")
                )
    return results


def _with_error_transactions(
    spark: SparkSession,
    work: Path,
    lcrs: int,
    tables: int,
    share: float,
    so_far: list[Measurement],
    label: str = "bench",
) -> Measurement:
    """The same size with about ``share`` of the transactions failing at apply (conflicts the
    generator plants), timed against the error-free apply measured just before."""
    landing, definitions, initial_scn = _workload(lcrs, tables, work / "errors", share)
    catalog = Catalog(f"{label}_errors_{lcrs}_{tables}")
    lines = ingest(spark, catalog, landing).lines
    settings = apply_settings(definitions, initial_scn)
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)

    def run() -> str:
        reports = run_apply(spark, catalog, settings)
        errors = sum(r.errors for r in reports)
        passes = sum(r.passes for r in reports)
        return f"{len(reports)} cycle(s), {errors:,} error transactions, {passes} fold passes"

    measured = _timed(spark, ERRORS_METHOD, lines, tables, run)
    error_free = next((m for m in so_far if m.method == "lakeapply" and m.seconds), None)
    if error_free is None or error_free.seconds is None or measured.seconds is None:
        return measured
    ratio = measured.seconds / error_free.seconds
    note = (
        f"{share:.0%} of transactions planted to fail: {measured.note}; "
        f"{ratio:.2f}x the error-free apply"
    )
    return Measurement(
        measured.method,
        lines,
        tables,
        measured.seconds,
        note,
        measured.driver_peak_mib,
        measured.jvm_heap_mib,
    )


def _warm_up(
    spark: SparkSession, work: Path, lcrs: int, tables: int, methods: tuple[str, ...]
) -> None:
    """Runs each in-session method once on a small workload, untimed. Measured on 2026-12-07:
    the same 100k-LCR apply into one table took 35.6 s as the session's first case and 25.5 s
    after a 50-table case, so whichever case ran first carried ~10 s of the JVM's warm-up
    (class loading, JIT) and a ratio between two cases depended on their order."""
    print(f"\nwarm-up (not reported): {lcrs:,} LCRs into {tables} table(s)", flush=True)
    in_session = tuple(m for m in methods if m not in ("per-transaction MERGE", "SDP AUTO CDC"))
    run_case(spark, work, lcrs, tables, in_session, 0, {}, label="warmup")


def _apply_cycles(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> str:
    return f"{len(run_apply(spark, catalog, settings))} cycle(s)"


SCALING_LAYOUTS = ("appended", "spread", "ranged")
DELETION_VECTORS_DEFAULT = "spark.databricks.delta.properties.defaults.enableDeletionVectors"


def _spread_updates(
    landing: Path, definition: TableDefinition, rows: int, changes: int, window: int | None = None
) -> int:
    """``changes`` UPDATEs of existing rows whose keys are drawn uniformly from the whole table
    (``0 <= ID < rows``, each at most once), four per transaction, as landing lines; returns an
    instantiation SCN below them. Each UPDATE carries the key and the changed NAME's before image,
    which matches the existing row, so no change conflicts. ``window``: the keys are drawn from
    that many consecutive keys in the middle of the table instead (recent rows, a region...)."""
    span = min(rows, window or rows)
    first = (rows - span) // 2
    keys = random.Random(rows + changes).sample(range(first, first + span), min(changes, span))
    landing.mkdir(parents=True)
    first_scn = 1_000_000
    scn = first_scn
    lines = []
    for start in range(0, len(keys), 4):
        transaction = f"9.{start // 4}.1"
        for key in keys[start : start + 4]:
            scn += 1
            lines.append(
                {
                    "source_database_name": SOURCE,
                    "command_type": "UPDATE",
                    "object_owner": definition.owner,
                    "object_name": definition.name,
                    "transaction_id": transaction,
                    "scn": scn,
                    "old_values": [
                        {"column_name": "ID", "data_type": "NUMBER", "value": str(key)},
                        {
                            "column_name": "NAME",
                            "data_type": "VARCHAR2",
                            "value": f"existing {key}",
                        },
                    ],
                    "new_values": [
                        {"column_name": "NAME", "data_type": "VARCHAR2", "value": f"changed {key}"}
                    ],
                }
            )
        scn += 1
        lines.append(
            {
                "source_database_name": SOURCE,
                "command_type": "COMMIT",
                "transaction_id": transaction,
                "scn": scn,
            }
        )
    with (landing / "spread-updates.jsonl").open("w") as out:
        out.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    return first_scn - 1


def run_scaling(
    spark: SparkSession,
    work: Path,
    changes: int,
    existing: list[int],
    layout: str,
    optimize_file_mib: int | None = None,
) -> list[Measurement]:
    """Fixed ``changes`` LCRs into one table that already holds each of ``existing`` rows.

    ``appended``: the generator's workload, whose keys lie above the existing rows' (an initial
    copy the changes never touch). ``spread``: UPDATEs of existing rows with keys drawn uniformly
    from the whole table, so every file of the table holds rows the changes address. ``ranged``:
    the initial copy written in no key order (every file spans every key) and UPDATEs of keys
    drawn from ``2 * changes`` consecutive keys. ``optimize_file_mib``: before the apply, the
    table is laid out by key (``lakeapply optimize``: liquid clustering) into files of at most
    that size (untimed; its time is in the note)."""
    results = []
    for rows in existing:
        print(f"\n{changes:,} LCRs ({layout} keys) into 1 table of {rows:,} rows", flush=True)
        if layout in ("spread", "ranged"):
            definitions: tuple[TableDefinition, ...] = (synthetic_table_definitions(1)[0],)
            landing = work / f"landing-{layout}-{rows}"
            shutil.rmtree(landing, ignore_errors=True)
            window = 2 * changes if layout == "ranged" else None
            initial_scn = _spread_updates(landing, definitions[0], rows, changes, window)
            first_key = 0
        else:
            landing, definitions, initial_scn = _workload(changes, 1, work)
            first_key = -rows
        catalog = Catalog(f"scale_{layout}_{rows}{'_optimized' if optimize_file_mib else ''}")
        ingest(spark, catalog, landing)
        settings = apply_settings(definitions, initial_scn)
        ensure_destination_tables(spark, catalog, settings)
        table = settings.tables[0]
        # Written in key order like an initial copy, so the files' key ranges are disjoint.
        copy = (
            spark.range(first_key, first_key + rows)
            .select(
                F.col("id").alias("ID"),
                F.concat(F.lit("existing "), F.col("id").cast("string")).alias("NAME"),
                F.lit(1).alias("AMOUNT"),
                F.lit(1).alias("QUANTITY"),
                F.lit("Y").alias("FLAG"),
                F.lit(None).alias("CREATED_DATE"),
                F.lit(None).alias("UPDATED_AT"),
                F.lit("NEW").alias("STATUS"),
                F.lit(None).alias("NOTE"),
            )
            .orderBy(F.rand(rows) if layout == "ranged" else F.col("ID"))
        )
        load_initial_copy(spark, catalog, table, copy)
        laid_out = _laid_out_by_key(spark, catalog, settings, optimize_file_mib)
        results.append(
            _timed(spark, "lakeapply", changes, 1, partial(_apply_cycles, spark, catalog, settings))
        )
        results[-1] = Measurement(
            **{
                **asdict(results[-1]),
                "existing_rows": rows,
                "note": f"{layout} keys{laid_out}, {results[-1].note}",
            }
        )
    return results


def _laid_out_by_key(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, file_mib: int | None
) -> str:
    """``lakeapply optimize`` on the destination with files of at most ``file_mib`` MiB (OSS
    Delta's OPTIMIZE writes files up to 1 GiB: a smaller table would become one file); the
    note's words on it."""
    if not file_mib:
        return ""
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(file_mib * 2**20))
    started = time.perf_counter()
    optimize_destinations(spark, catalog, settings)
    seconds = time.perf_counter() - started
    spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    name = catalog.silver_table(settings.tables[0].silver_table)
    files = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].numFiles
    return f", laid out by key first (lakeapply optimize: {seconds:.0f} s, {files} files)"


def _machine() -> str:
    cores = os.cpu_count()
    memory = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    return f"{platform.machine()}, {cores} cores, {memory} RAM, {platform.system()}, local[2]"


def write_results(out: Path, name: str, text: str) -> None:
    """``text`` as ``<out>/<name>-<timestamp>.md`` and ``<out>/<name>-latest.md``, and printed."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%S}"
    (out / f"{name}-{stamp}.md").write_text(text)
    (out / f"{name}-latest.md").write_text(text)
    print(text)


def markdown(results: list[Measurement], title: str) -> str:
    floors = {(m.lcrs, m.tables): m.seconds for m in results if m.method == "floor"}
    lines = [
        f"# {title}",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}; pyspark "
        f"{__import__('pyspark').__version__}, delta-spark {__import__('importlib.metadata').metadata.version('delta-spark')}.",
        "",
        "| LCRs | tables | existing rows | method | wall time (s) | LCRs/s | ratio to floor | "
        "driver peak RSS (MiB) | JVM heap after GC (MiB) | note |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for m in results:
        floor = floors.get((m.lcrs, m.tables))
        ratio = f"{m.seconds / floor:.2f}" if m.seconds and floor else "-"
        rate = f"{m.lcrs / m.seconds:,.0f}" if m.seconds else "-"
        seconds = f"{m.seconds:.1f}" if m.seconds is not None else "did not run"
        memory = f"{m.driver_peak_mib:,.0f}" if m.driver_peak_mib else "-"
        # The local JVM grows toward its heap limit whatever it holds: what the run keeps live
        # (the heap in use after a GC at its end) is what must stay flat from 100k to 1M.
        live = f"{m.jvm_heap_mib:,.0f}" if m.jvm_heap_mib else "-"
        lines.append(
            f"| {m.lcrs:,} | {m.tables} | {m.existing_rows:,} | {m.method} | {seconds} | {rate} | "
            f"{ratio} | {memory} | {live} | {m.note.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def plot(results: list[Measurement], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for axis, tables in zip(axes, (1, 50), strict=True):
        for method in METHODS:
            points = sorted(
                (m.lcrs, m.seconds)
                for m in results
                if m.method == method and m.tables == tables and m.seconds and not m.existing_rows
            )
            if points:
                axis.plot(*zip(*points, strict=True), marker="o", label=method)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("LCRs")
        axis.set_title(f"{tables} destination table(s)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("wall time (s)")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="LCR counts, comma separated"
    )
    parser.add_argument("--tables", default="1,50", help="destination table counts")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="subset of: " + ", ".join(METHODS)
    )
    parser.add_argument("--per-transaction-sample", type=int, default=30)
    parser.add_argument(
        "--error-transactions",
        type=float,
        default=0.01,
        help=f"share of transactions planted to fail in the {ERRORS_METHOD!r} workload",
    )
    parser.add_argument(
        "--per-transaction-max-lcrs",
        type=int,
        default=100_000,
        help="run the per-transaction MERGE only up to this size",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="instead: fixed --scaling-changes LCRs into tables of --scaling-rows rows",
    )
    parser.add_argument("--scaling-changes", type=int, default=100_000)
    parser.add_argument("--scaling-rows", default="100000,10000000")
    parser.add_argument(
        "--deletion-vectors",
        action="store_true",
        help="new Delta tables get deletion vectors (Spark's default table property conf)",
    )
    parser.add_argument(
        "--scaling-layout",
        choices=SCALING_LAYOUTS,
        default="spread",
        help="spread: UPDATEs of existing keys drawn from the whole table; appended: new keys",
    )
    parser.add_argument(
        "--optimize-file-mib",
        type=int,
        default=None,
        help="scaling: lay the table out by key (lakeapply optimize) into files of this size",
    )
    parser.add_argument(
        "--warmup-lcrs",
        type=int,
        default=10_000,
        help="an untimed run of this many LCRs into the largest table count first, so that the "
        "first measured case does not pay the JVM's warm-up alone (0: none)",
    )
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="lakeapply-bench-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hold_warehouse_for_process(work / "warehouse")  # as the CLI does (runtime/lease.py)
    spark = get_spark(LocalSparkSettings(work / "warehouse", app_name="lakeapply-bench"))
    if args.deletion_vectors:  # what Databricks does for new tables by default
        spark.conf.set(DELETION_VECTORS_DEFAULT, "true")
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}")
    results: list[Measurement] = []
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%S}"
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scaling:
        rows = [int(r) for r in args.scaling_rows.split(",")]
        results = run_scaling(
            spark, work, args.scaling_changes, rows, args.scaling_layout, args.optimize_file_mib
        )
        if args.deletion_vectors:
            results = [
                Measurement(**{**asdict(r), "note": f"{r.note}, deletion vectors"}) for r in results
            ]
        text = markdown(results, "lakeapply apply: fixed changes into tables of growing size")
        write_results(args.out, "scaling", text)
    else:
        auto_cdc_error: dict[str, str] = {}
        table_counts = [int(t) for t in args.tables.split(",")]
        if args.warmup_lcrs:
            _warm_up(spark, work / "warmup", args.warmup_lcrs, max(table_counts), methods)
        for tables in table_counts:
            for lcrs in [int(s) for s in args.sizes.split(",")]:
                chosen = tuple(
                    m for m in methods
                    if m != "per-transaction MERGE" or lcrs <= args.per_transaction_max_lcrs
                )  # fmt: skip
                results += run_case(
                    spark,
                    work,
                    lcrs,
                    tables,
                    chosen,
                    args.per_transaction_sample,
                    auto_cdc_error,
                    args.error_transactions,
                )
                text = markdown(results, "lakeapply apply against the floor and the alternatives")
                (args.out / f"{stamp}.md").write_text(text)
                (args.out / f"{stamp}.json").write_text(
                    json.dumps([asdict(m) for m in results], indent=1)
                )
        shutil.copy(args.out / f"{stamp}.md", args.out / "latest.md")
        plot(results, args.out / "latest.png")
    print("\n" + text)
    spark.stop()


if __name__ == "__main__":
    main()
