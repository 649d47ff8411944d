"""``make bench-big``: big and long transactions, with the driver's peak memory.

Three cases, each against a baseline measured in the same run on the same session:

* **one big transaction**: N INSERTs in one source transaction, against the same N INSERTs as
  N/4 transactions of 4 (sizes ``--big-lcrs``, e.g. 100k and 1M: the peak memory must stay flat);
* **open transactions**: K transactions of one INSERT each whose COMMITs land one cycle later
  (the first cycle only spills them), against the same K transactions committed at once;
* **a long transaction**: one transaction that gets one LCR per cycle over C cycles (each cycle
  also applies 1,000 other LCRs) and commits in the last: the cycle time must not grow with the
  cycles the spill has been carried over, and the transaction is applied once.

Writes ``benchmarks/results/big-<timestamp>.md`` and ``big-latest.md``.

    .venv/bin/python benchmarks/big_transactions.py --big-lcrs 100000,1000000 --open 100000
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apply_bench import RESULTS, SOURCE, _machine, apply_settings, write_results
from memory import dump_live_heap, peak_memory
from pyspark.sql import SparkSession

from lakeapply.bronze.ingest import ingest
from lakeapply.landing.generator import synthetic_table_definitions
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import hold_warehouse_for_process
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from lakeapply.silver import dictionary
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import ensure_apply_tables, ensure_destination_tables

TABLE = synthetic_table_definitions(1)[0]  # SYNTH.T001: ID NUMBER(10) key, NAME VARCHAR2(40)
FIRST_SCN = 1_000


@dataclass(frozen=True)
class Result:
    case: str
    lcrs: int
    seconds: float
    note: str
    driver_peak_mib: float | None
    jvm_heap_mib: float | None
    worker_peak_mib: float | None = None


def _insert(transaction: str, scn: int, key: int) -> dict[str, Any]:
    return {
        "source_database_name": SOURCE,
        "command_type": "INSERT",
        "object_owner": TABLE.owner,
        "object_name": TABLE.name,
        "transaction_id": transaction,
        "scn": scn,
        "new_values": [
            {"column_name": "ID", "data_type": "NUMBER", "value": str(key)},
            {"column_name": "NAME", "data_type": "VARCHAR2", "value": f"row {key}"},
        ],
    }


def _commit(transaction: str, scn: int) -> dict[str, Any]:
    return {
        "source_database_name": SOURCE,
        "command_type": "COMMIT",
        "transaction_id": transaction,
        "scn": scn,
    }


# A capture tool rotates its files (GoldenGate trail files by size). Until 2026-12-02 ingest read
# each landing file whole in one task (``binaryFile``), and one file of 1.25M lines (~315 MB) ran
# the 4g driver out of heap; the "one landing file" case measures that limit since it was lifted.
LINES_PER_FILE = 100_000


def _write(stem: Path, lines: Iterator[dict[str, Any]], per_file: int = LINES_PER_FILE) -> int:
    """Write ``lines`` to ``<stem>-NNN.jsonl`` files of at most ``per_file`` lines each."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    while chunk := list(itertools.islice(lines, per_file)):
        path = stem.with_name(f"{stem.name}-{count // per_file:03d}.jsonl")
        with path.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in chunk)
        count += len(chunk)
    return count


class Case:
    """One catalog, one landing folder, one apply process over SYNTH.T001."""

    def __init__(self, spark: SparkSession, work: Path, name: str) -> None:
        self.spark = spark
        self.catalog = Catalog(f"big_{name}")
        self.landing = work / name
        shutil.rmtree(self.landing, ignore_errors=True)
        self.settings = apply_settings((TABLE,), FIRST_SCN - 1)
        self.files = 0
        ensure_apply_tables(spark, self.catalog)
        ensure_destination_tables(spark, self.catalog, self.settings)

    def land(self, lines: Iterator[dict[str, Any]]) -> int:
        self.files += 1
        written = _write(self.landing / f"batch{self.files:05d}", lines)
        ingest(self.spark, self.catalog, self.landing)
        return written

    def apply(self) -> str:
        reports = run_apply(self.spark, self.catalog, self.settings)
        applied = sum(r.applied for r in reports)
        return f"{len(reports)} cycle(s), {applied:,} transactions applied"

    def rows(self) -> int:
        return self.spark.table(self.catalog.silver_table("synth_t001")).count()

    def spill_rows(self) -> int:
        return self.spark.table(self.catalog.apply_table(dictionary.SPILL)).count()


def _measure(spark: SparkSession, case: str, lcrs: int, run: Callable[[], str]) -> Result:
    with peak_memory(spark) as peak:
        started = time.perf_counter()
        note = run()
        seconds = time.perf_counter() - started
    print(f"  {case:<44} {seconds:8.1f} s  {note}", flush=True)
    return Result(case, lcrs, seconds, note, peak.driver_mib, peak.jvm_heap_mib, peak.worker_mib)


def one_big_transaction(spark: SparkSession, work: Path, lcrs: int) -> list[Result]:
    print(f"\none transaction of {lcrs:,} LCRs", flush=True)
    big = Case(spark, work, f"one_{lcrs}")
    big.land(
        line
        for lines in (
            (_insert("1.1.1", FIRST_SCN + key, key) for key in range(lcrs)),
            iter([_commit("1.1.1", FIRST_SCN + lcrs)]),
        )
        for line in lines
    )
    many = Case(spark, work, f"many_{lcrs}")

    def small_transactions() -> Iterator[dict[str, Any]]:
        for key in range(lcrs):
            transaction = f"1.{key // 4}.1"
            yield _insert(transaction, FIRST_SCN + 2 * key, key)
            if key % 4 == 3 or key == lcrs - 1:
                yield _commit(transaction, FIRST_SCN + 2 * key + 1)

    many.land(small_transactions())
    results = [
        _measure(spark, f"{lcrs:,} LCRs as transactions of 4 (baseline)", lcrs, many.apply),
        _measure(spark, f"{lcrs:,} LCRs in one transaction", lcrs, big.apply),
    ]
    assert big.rows() == many.rows() == lcrs, "every INSERT applied once"
    return results


def open_transactions(spark: SparkSession, work: Path, count: int) -> list[Result]:
    print(f"\n{count:,} transactions open for one cycle", flush=True)
    later = Case(spark, work, f"open_{count}")
    later.land(_insert(f"2.{key}.1", FIRST_SCN + key, key) for key in range(count))
    at_once = Case(spark, work, f"closed_{count}")
    at_once.land(
        line
        for key in range(count)
        for line in (
            _insert(f"2.{key}.1", FIRST_SCN + key, key),
            _commit(f"2.{key}.1", FIRST_SCN + count + key),
        )
    )
    results = [
        _measure(spark, f"{count:,} committed at once (baseline)", count, at_once.apply),
        _measure(spark, f"{count:,} open: cycle that spills them", count, later.apply),
    ]
    spilled = later.spill_rows()
    later.land(_commit(f"2.{key}.1", FIRST_SCN + count + key) for key in range(count))
    results.append(_measure(spark, f"{count:,} open: cycle that commits them", count, later.apply))
    assert spilled == count, f"{spilled} LCRs spilled, expected {count}"
    assert later.rows() == at_once.rows() == count
    return results


def long_transaction(
    spark: SparkSession, work: Path, cycles: int, heap_dumps: frozenset[int] = frozenset()
) -> list[Result]:
    print(f"\none transaction open across {cycles} cycles (1,000 other LCRs per cycle)")
    case = Case(spark, work, f"long_{cycles}")
    long_id = "3.0.1"
    scn = FIRST_SCN
    seconds: list[float] = []
    spill: list[int] = []
    results: list[Result] = []
    for cycle in range(cycles):
        lines: list[dict[str, Any]] = []
        scn += 1
        lines.append(_insert(long_id, scn, 10_000_000 + cycle))
        for other in range(250):
            key = cycle * 1_000 + other * 4
            transaction = f"4.{cycle}.{other}"
            for offset in range(4):
                scn += 1
                lines.append(_insert(transaction, scn, key + offset))
            scn += 1
            lines.append(_commit(transaction, scn))
        if cycle == cycles - 1:
            scn += 1
            lines.append(_commit(long_id, scn))
        case.land(iter(lines))
        result = _measure(spark, f"cycle {cycle + 1} of {cycles}", 1_001, case.apply)
        seconds.append(result.seconds)
        spill.append(case.spill_rows())
        if cycle in (0, cycles // 2, cycles - 1):
            results.append(result)
        if cycle + 1 in heap_dumps:
            dump = dump_live_heap(spark, work / f"heap-cycle-{cycle + 1}.hprof")
            print(f"  heap dump after cycle {cycle + 1}: {dump}", flush=True)
    long_rows = (
        case.spark.table(case.catalog.silver_table("synth_t001"))
        .where(f"ID >= {10_000_000}")
        .count()
    )
    outcomes = (
        case.spark.table(case.catalog.apply_table(dictionary.TRANSACTIONS))
        .where(f"transaction_id = '{long_id}'")
        .count()
    )
    assert long_rows == cycles, f"the long transaction's {cycles} rows: {long_rows} applied"
    assert outcomes == 1, f"the long transaction has {outcomes} outcomes"
    first, last = statistics.median(seconds[:5]), statistics.median(seconds[-5:])
    results.append(
        Result(
            f"long transaction: last 5 / first 5 cycles (median), over {cycles}",
            cycles,
            last / first,
            f"ratio; spill rows {spill[0]} -> {spill[-2] if cycles > 1 else spill[0]} -> "
            f"{spill[-1]}; applied once",
            None,
            None,
        )
    )
    print(f"  cycle time median first 5 {first:.1f} s, last 5 {last:.1f} s ({last / first:.2f}x)")
    return results


def one_landing_file(spark: SparkSession, work: Path, lines: int) -> list[Result]:
    """Ingest one landing file of ``lines`` lines (INSERTs in transactions of 4): the driver's
    peak memory must not follow the size of the file."""
    case = Case(spark, work, f"file{lines}")

    def transactions() -> Iterator[dict[str, Any]]:
        for start in range(0, lines, 5):
            transaction = f"1.{start // 5}.0"
            scn = FIRST_SCN + start
            for offset in range(min(4, lines - start - 1)):
                yield _insert(transaction, scn + offset, start + offset)
            yield _commit(transaction, scn + 4)

    written = _write(case.landing / "trail", transactions(), per_file=lines)
    size_mib = sum(p.stat().st_size for p in case.landing.iterdir()) / 2**20

    def run() -> str:
        report = ingest(spark, case.catalog, case.landing)
        return f"{written:,} lines in one {size_mib:,.0f} MiB file: {report.bronze_rows:,} rows"

    return [_measure(spark, "one landing file, ingest only", written, run)]


def markdown(results: list[Result], driver_memory: str) -> str:
    lines = [
        "# Big and long transactions",
        "",
        f"{_machine()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, driver heap {driver_memory}.",
        "Peak driver memory: Python + JVM resident high-water marks during the case (local mode:",
        "the JVM is driver and executors). Peak worker: the largest high-water mark among the",
        "Python worker processes (shared pages counted in each).",
        "",
        "| case | LCRs | seconds | peak driver MiB | JVM heap after GC MiB | peak worker MiB "
        "| note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        peak = "" if r.driver_peak_mib is None else f"{r.driver_peak_mib:,.0f}"
        heap = "" if r.jvm_heap_mib is None else f"{r.jvm_heap_mib:,.0f}"
        worker = "" if r.worker_peak_mib is None else f"{r.worker_peak_mib:,.0f}"
        lines.append(
            f"| {r.case} | {r.lcrs:,} | {r.seconds:.2f} | {peak} | {heap} | {worker} | {r.note} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--big-lcrs", default="100000,1000000", help="sizes of the one transaction")
    parser.add_argument("--open", type=int, default=100_000, help="open transactions")
    parser.add_argument("--cycles", type=int, default=100, help="cycles of the long transaction")
    parser.add_argument(
        "--file-lines", default="", help="sizes of one landing file, ingested alone (e.g. 1250000)"
    )
    parser.add_argument(
        "--heap-dumps",
        default="",
        help="cycles of the long transaction after which to dump the JVM's live heap "
        "(e.g. 4,16; read them with benchmarks/heap_paths)",
    )
    parser.add_argument(
        "--driver-memory",
        default=LocalSparkSettings.driver_memory,
        help="the driver JVM's heap (default %(default)s): a smaller one shows what the cases "
        "need at most",
    )
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="lakeapply-big-"))
    hold_warehouse_for_process(work / "warehouse")  # as the CLI does (runtime/lease.py)
    spark = get_spark(LocalSparkSettings(work / "warehouse", driver_memory=args.driver_memory))
    results: list[Result] = []
    for size in (int(part) for part in args.file_lines.split(",") if part):
        results += one_landing_file(spark, work, size)
    for size in (int(part) for part in args.big_lcrs.split(",") if part):
        results += one_big_transaction(spark, work, size)
    if args.open:
        results += open_transactions(spark, work, args.open)
    if args.cycles:
        dumps = frozenset(int(part) for part in args.heap_dumps.split(",") if part)
        results += long_transaction(spark, work, args.cycles, dumps)
    text = markdown(results, args.driver_memory)
    write_results(args.out, "big", "\n" + text)


if __name__ == "__main__":
    main()
