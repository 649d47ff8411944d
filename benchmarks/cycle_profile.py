"""Where one apply cycle's time goes: seconds, Spark jobs and Delta commits per step.

One seeded workload (``--lcrs`` LCRs into ``--tables`` tables) is generated and ingested into
bronze, then applied ``--repeat`` times, each time into a fresh catalog (the same bronze rows,
copied, so every repetition is a first cycle over the same input). For each repetition the
engine's progress steps are timed; the Spark jobs started between two steps are counted from the
status tracker, and the Delta commits of every table from the ``_delta_log`` folders. Writes
``benchmarks/results/cycle-profile-<timestamp>.md`` and ``cycle-profile-latest.md``.

    .venv/bin/python benchmarks/cycle_profile.py --lcrs 10000 --tables 1 --repeat 3

``--actions`` adds the last repetition's Spark actions one by one (``action_timer.py``): each
collect, count, checkpoint, append and MERGE with its time and the line that started it.
``--jfr FILE`` records the driver JVM with Java Flight Recorder during the last repetition's
cycle (``jcmd``, from the JDK); read it with e.g. ``jfr print --events jdk.ExecutionSample``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

from action_timer import Action, timed_actions
from apply_bench import (
    CHANGES_PER_TRANSACTION,
    LINES_PER_TRANSACTION,
    RESULTS,
    _machine,
    apply_settings,
    write_results,
)
from pyspark.sql import SparkSession

from lakeapply.bronze.ingest import ingest
from lakeapply.bronze.tables import LCR_TABLE
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import hold_warehouse_for_process
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import ensure_apply_tables, ensure_destination_tables


def _workload(
    lcrs: int, tables: int, open_ratio: float, work: Path, error_transactions: float = 0.0
) -> tuple[Path, tuple[TableDefinition, ...], int]:
    """apply_bench's workload, with chosen shares of transactions left open and planted to
    fail (each error pass shows as a step: "fold pass N")."""
    landing = work / "landing"
    spec = WorkloadSpec(
        seed=lcrs + tables,
        transactions=max(1, int(lcrs / LINES_PER_TRANSACTION)),
        synthetic_tables=tables,
        include_sample_scenario=False,
        files_per_source=max(4, lcrs // 125_000),
        open_ratio=open_ratio,
        # The generator's conflicts are per change: about this share of transactions fails.
        conflict_ratio=error_transactions / CHANGES_PER_TRANSACTION,
    )
    workload = write_workload(spec, landing)
    return landing, workload.tables, workload.initial_scn


def _retained_jobs(spark: SparkSession) -> list[tuple[int, str]]:
    """(job id, call site) of the jobs Spark's status store still keeps (the newest
    ``spark.ui.retainedJobs``), by id."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    return sorted(
        (int(jobs.apply(i).jobId()), str(jobs.apply(i).name())) for i in range(jobs.size())
    )


def _jobs(spark: SparkSession) -> int:
    """Spark jobs started so far in this application (every thread, every job group). Job ids
    count from 0 and the status store keeps only the newest jobs (the local session keeps 50),
    so this is the newest id + 1, not the number of jobs listed."""
    return max((job_id for job_id, _ in _retained_jobs(spark)), default=-1) + 1


def _job_sites(spark: SparkSession, first: int) -> list[tuple[str, float]]:
    """(call site, seconds) of the jobs numbered ``first`` and up, as far as the status store
    still keeps them: the Python file:line of the action (with the job's description), and the
    job's time from submission to completion (jobs of one action may overlap: broadcasts run beside the query)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    sites = []
    for i in range(jobs.size()):
        job = jobs.apply(i)
        if int(job.jobId()) < first:
            continue
        submitted, completed = job.submissionTime(), job.completionTime()
        seconds = (
            (completed.get().getTime() - submitted.get().getTime()) / 1000
            if submitted.isDefined() and completed.isDefined()
            else 0.0
        )
        # The description names Delta's own jobs ("Delta: Filtering files for query",
        # "MERGE operation - scanning files for matches"), which share one call site.
        description = job.description()
        what = f" | {str(description.get())[:60]}" if description.isDefined() else ""
        sites.append((str(job.name()) + what, seconds))
    return sites


def _commits(warehouse: Path, databases: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for database in databases:
        for log in (warehouse / "tables" / f"{database}.db").glob("*/_delta_log"):
            counts[f"{database}.{log.parent.name}"] = len(list(log.glob("*.json")))
    return counts


@contextmanager
def flight_recording(spark: SparkSession, recording: Path) -> Iterator[None]:
    """Java Flight Recorder on the driver JVM for the block (its "profile" settings: a Java
    stack sample every 10 ms), written to ``recording``."""
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        raise SystemExit("--jfr needs jcmd (from a JDK) on the PATH")
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a local session's driver JVM
    pid = str(jvm.java.lang.ProcessHandle.current().pid())
    subprocess.run([jcmd, pid, "JFR.start", "name=cycle", "settings=profile"], check=True)
    try:
        yield
    finally:
        dump = f"filename={recording.resolve()}"
        subprocess.run([jcmd, pid, "JFR.dump", "name=cycle", dump], check=True)
        subprocess.run([jcmd, pid, "JFR.stop", "name=cycle"], check=True)


def profile_once(
    spark: SparkSession,
    warehouse: Path,
    source: Catalog,
    prefix: str,
    definitions: tuple[TableDefinition, ...],
    initial_scn: int,
    job_sites: bool = False,
    actions: list[Action] | None = None,
    recording: Path | None = None,
) -> tuple[float, list[tuple[str, float, int]], Counter[str], int]:
    """One first cycle into fresh tables: its seconds, its steps (name, seconds, Spark jobs),
    its Delta commits by table and its Spark jobs; ``actions`` (given) gets its actions, and
    ``recording`` (given) its flight recording."""
    catalog = Catalog(prefix)
    ensure_apply_tables(spark, catalog)
    settings = apply_settings(definitions, initial_scn)
    ensure_destination_tables(spark, catalog, settings)
    spark.table(source.bronze_table(LCR_TABLE)).write.format("delta").mode("append").saveAsTable(
        catalog.bronze_table(LCR_TABLE)
    )
    spark.table(source.bronze_table("ingest_log")).write.format("delta").mode("append").saveAsTable(
        catalog.bronze_table("ingest_log")
    )
    databases = [catalog.apply, catalog.silver]
    before = _commits(warehouse, databases)
    steps: list[tuple[str, float, int]] = []
    jobs_before = _jobs(spark)
    started = time.perf_counter()
    last: dict[str, float] = {"time": started, "jobs": jobs_before}

    def step(name: str) -> None:
        now, jobs = time.perf_counter(), _jobs(spark)
        steps.append((name, now - last["time"], int(jobs - last["jobs"])))
        if job_sites:
            counts: Counter[str] = Counter()
            seconds: dict[str, float] = {}
            for site, took in _job_sites(spark, int(last["jobs"])):
                counts[site] += 1
                seconds[site] = seconds.get(site, 0.0) + took
            for site, count in counts.items():
                print(f"        {count:3d} x {seconds[site]:6.2f} s {site}   [{name}]")
        last["time"], last["jobs"] = now, jobs

    recorder = flight_recording(spark, recording) if recording else nullcontext()
    with recorder, timed_actions() as timed:
        reports = run_apply(spark, catalog, settings, step)
    seconds = time.perf_counter() - started
    if actions is not None:
        actions.extend(timed)
    step("end (commit, status)")
    after = _commits(warehouse, databases)
    commits = Counter(
        {t: after[t] - before.get(t, 0) for t in after if after[t] - before.get(t, 0)}
    )
    assert len(reports) == 1, reports
    return seconds, steps, commits, _jobs(spark) - jobs_before


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lcrs", type=int, default=10_000)
    parser.add_argument("--tables", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--open-ratio",
        type=float,
        default=0.02,
        help="transactions left open (0: the spill stays empty, a cycle without a spill write)",
    )
    parser.add_argument(
        "--error-transactions",
        type=float,
        default=0.0,
        help="share of transactions planted to fail, as in apply_bench's errors case",
    )
    parser.add_argument("--label", default="", help="a word for the results title")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a runtime Spark SQL setting for the experiment (repeatable)",
    )
    parser.add_argument(
        "--job-sites", action="store_true", help="print each step's Spark jobs by call site"
    )
    parser.add_argument(
        "--actions",
        action="store_true",
        help="list the last repetition's Spark actions, each with its time and call site",
    )
    parser.add_argument(
        "--jfr",
        type=Path,
        metavar="FILE",
        help="record the driver JVM (Java Flight Recorder) during the last repetition's cycle",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="lakeapply-profile-"))
    warehouse = work / "warehouse"
    hold_warehouse_for_process(warehouse)  # as the CLI does (runtime/lease.py)
    spark = get_spark(
        LocalSparkSettings(
            warehouse,
            app_name="lakeapply-profile",
            # --job-sites names every job of a cycle: the status store must still hold them.
            retained_jobs=5000 if args.job_sites else 50,
        )
    )
    for setting in args.conf:
        key, _, value = setting.partition("=")
        spark.conf.set(key, value)
    landing, definitions, initial_scn = _workload(
        args.lcrs, args.tables, args.open_ratio, work, args.error_transactions
    )
    source = Catalog("profile_src")
    lines = ingest(spark, source, landing).lines
    runs = []
    last_actions: list[Action] = []
    for n in range(args.repeat):
        runs.append(
            profile_once(
                spark,
                warehouse,
                source,
                f"profile{n}",
                definitions,
                initial_scn,
                job_sites=args.job_sites and n == args.repeat - 1,
                actions=last_actions if args.actions and n == args.repeat - 1 else None,
                recording=args.jfr if n == args.repeat - 1 else None,
            )
        )
        seconds, steps, commits, jobs = runs[-1]
        print(f"run {n + 1}: {seconds:.1f} s, {jobs} Spark jobs, {sum(commits.values())} commits")
        for name, step_seconds, step_jobs in steps:
            print(f"    {step_seconds:6.2f} s {step_jobs:4d} jobs  {name}")
        print("    commits:", dict(commits))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    times = [r[0] for r in runs]
    _, last_steps, last_commits, _ = runs[-1]
    text = [
        f"# One apply cycle, step by step{': ' + args.label if args.label else ''}",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}: {lines:,} LCRs into "
        f"{args.tables} table(s), {args.open_ratio:.0%} of transactions left open, "
        f"{args.error_transactions:.0%} planted to fail, one cycle, "
        f"{args.repeat} repetition(s) in one session.",
        "",
        f"Cycle wall time (s): {', '.join(f'{t:.1f}' for t in times)} "
        f"(median {statistics.median(times):.1f}); Spark jobs: "
        f"{', '.join(str(r[3]) for r in runs)}; Delta commits: "
        f"{', '.join(str(sum(r[2].values())) for r in runs)}.",
        "",
        "Last repetition by step (time and jobs up to the step's progress message):",
        "",
        "| step | seconds | Spark jobs |",
        "|---|---:|---:|",
        *[f"| {name} | {s:.2f} | {j} |" for name, s, j in last_steps],
        "",
        "Delta commits of the last repetition, by table:",
        "",
        "| table | commits |",
        "|---|---:|",
        *[f"| {table} | {count} |" for table, count in sorted(last_commits.items())],
        "",
    ]
    if last_actions:
        text += [
            f"Spark actions of the last repetition, in order ({len(last_actions)}, "
            f"{sum(a.seconds for a in last_actions):.2f} s; an action's time includes its "
            "planning and Delta's snapshot reads):",
            "",
            "| seconds | action | started at |",
            "|---:|---|---|",
            *[f"| {a.seconds:.3f} | {a.kind} | `{a.call_site}` |" for a in last_actions],
            "",
        ]
    write_results(args.out, "cycle-profile", "\n".join(text))


if __name__ == "__main__":
    main()
