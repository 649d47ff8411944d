"""Real-process crash harness: SIGKILL ``lakeapply ingest`` / ``lakeapply apply`` at seeded instants.

The crash run drives the CLI as real subprocesses on its own warehouse (``.venv/bin/lakeapply
--warehouse <tmp>``), each in a new session so that ``os.killpg`` kills the whole process group
(Python, the JVM and the Python workers) with SIGKILL, restarts it, and repeats until a run
completes. The reference run applies the same landing states uninterrupted, in-process, through
the same entry points the CLI calls (``ingest``, ``publish_settings``, ``load_settings`` +
``run_apply``, ``start_apply``), in the test session's own warehouse. Both runs share the landing
folder, so lineage paths are identical. At the end every table is read with the test session
(the crash warehouse by path: its Derby metastore admits one process) and compared.

A scenario is a list of *stages*. Each stage grows the landing files (part before ingest starts,
the rest appended in random byte chunks while ingest runs; a stage may end in the middle of a
line, completed by the next), ingests until a run completes after the last append, then applies
(``disable_on_error = Y``: an operator loop of ``apply`` and ``admin start-apply`` until the
apply finishes without an abort). One transaction stays open from the first stage to the last,
committed by a hand-written COMMIT at the very end.

Kill points (:class:`KillPoint`) are drawn from ``random.Random(seed)``:

* ``time``: a fraction of the command's expected duration (the last completed run of that
  command; kills start 2 s in), so kills land inside the work on a fast or a loaded machine;
* ``commits``: a delay after the n-th new Delta commit file in the warehouse (load-independent);
* ``path``: a delay after a folder appears (the first run's databases: a kill while the first
  run creates its tables);
* ``abort``: a delay after the error queue's next commit (a kill while an apply with
  ``disable_on_error = Y`` records its abort).

A kill point the process outran (it finished first) is recorded as missed; the kill counts
reported are the SIGKILLs actually sent.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.bronze.ingest import ingest
from lakeapply.landing.generator import WorkloadSpec, generate_lcrs
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import admin
from lakeapply.silver.config import load_config
from lakeapply.silver.engine import run_apply

REPO = Path(__file__).resolve().parents[2]
SOURCE = "CRASH.DB"
APPLY_NAME = "APPLY_CRASH"
PREFIX = "lakeapply"  # the crash warehouse's catalog prefix (the CLI default)
SILVER_TABLES = {"SYNTH.T001": "crash_synth_t001", "SYNTH.T002": "crash_synth_t002"}
RUN_TIMEOUT_S = 1800.0  # one subprocess run (a loaded 2-core machine is slow)
POLL_S = 0.05
_COMMIT_FILE = re.compile(r"^\d{20}\.json$")
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def lakeapply_executable() -> Path:
    for candidate in (
        REPO / ".venv" / "bin" / "lakeapply",
        Path(sys.executable).parent / "lakeapply",
    ):
        if candidate.exists():
            return candidate
    raise RuntimeError("lakeapply is not installed in .venv: run `make setup`")


class HarnessFailure(AssertionError):
    """A rerun that cannot recover, or a run that diverges from the uninterrupted one."""


# --------------------------------------------------------------------------------------------
# The workload: one byte stream per landing file, cut into stages
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CrashWorkload:
    contents: dict[str, bytes]  # landing file (relative path) -> final content
    boundaries: tuple[dict[str, int], ...]  # per stage: bytes of each file written by its end
    long_transaction: str  # open from the first stage, committed by the last line
    lines: int  # complete lines in the final files

    def config(self, path: Path) -> Path:
        """Write the apply process (disable_on_error = Y) to ``path``."""
        document = {
            "apply_processes": [
                {
                    "apply_name": APPLY_NAME,
                    "parameters": {
                        "commit_serialization": "FULL",
                        "disable_on_error": "Y",
                        "max_cycle_batches": 100,
                    },
                    "source_databases": [SOURCE],
                    "tables": [
                        {
                            "source_database": SOURCE,
                            "source_object": source_object,
                            "silver_table": silver_table,
                            "definition": str(
                                REPO / "schemas" / "tables" / f"{source_object.lower()}.yml"
                            ),
                            "instantiation_scn": 999_999,
                        }
                        for source_object, silver_table in SILVER_TABLES.items()
                    ],
                }
            ]
        }
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path


def build_workload(
    seed: int, transactions: int, stages: int, conflict_ratio: float = 0.004
) -> CrashWorkload:
    """The generator's LCRs of one source (bad lines, rollbacks, open transactions, a few
    conflicts), plus a COMMIT for the open transaction that starts first, written last."""
    spec = WorkloadSpec(
        seed=seed,
        transactions=transactions,
        synthetic_tables=2,
        source_databases=(SOURCE,),
        files_per_source=3,
        conflict_ratio=conflict_ratio,
        bad_line_ratio=0.02,
        open_ratio=0.03,
        include_sample_scenario=False,
    )
    items = list(generate_lcrs(spec))
    ended = {
        lcr["transaction_id"]
        for _, lcr in items
        if isinstance(lcr, dict) and lcr["command_type"] in ("COMMIT", "ROLLBACK")
    }
    first_open = next(
        lcr
        for _, lcr in items
        if isinstance(lcr, dict) and "object_name" in lcr and lcr["transaction_id"] not in ended
    )
    good = [lcr for _, lcr in items if isinstance(lcr, dict)]
    last_time = max(datetime.fromisoformat(lcr["source_time"]) for lcr in good)
    commit = {
        "source_database_name": SOURCE,
        "command_type": "COMMIT",
        "transaction_id": first_open["transaction_id"],
        "scn": max(int(lcr["scn"]) for lcr in good) + 1,
        "position": f"{max(int(lcr['position']) for lcr in good if 'position' in lcr) + 1:020d}",
        "source_time": (last_time + timedelta(seconds=1)).isoformat(),
    }
    items.append((items[-1][0], commit))

    encoded = [
        (f"{stem}.jsonl", ((item if isinstance(item, str) else _DUMPS(item)) + "\n").encode())
        for stem, item in items
    ]
    contents: dict[str, bytearray] = {}
    boundaries: list[dict[str, int]] = []
    cuts = {len(encoded) * k // stages for k in range(1, stages)}
    first_open_index = next(i for i, (_, item) in enumerate(items) if item is first_open)
    if min(cuts, default=len(encoded)) <= first_open_index:
        raise ValueError("the long transaction must start in the first stage: more transactions")
    for index, (name, data) in enumerate(encoded):
        if index in cuts:
            boundary = {file: len(content) for file, content in contents.items()}
            # The stage ends in the middle of the line just written: completed by the next.
            last_name, last_data = encoded[index - 1]
            boundary[last_name] -= len(last_data) // 2
            boundaries.append(boundary)
        contents.setdefault(name, bytearray()).extend(data)
    boundaries.append({file: len(content) for file, content in contents.items()})
    return CrashWorkload(
        {file: bytes(content) for file, content in contents.items()},
        tuple({file: boundary.get(file, 0) for file in contents} for boundary in boundaries),
        first_open["transaction_id"],
        len(encoded),
    )


class Landing:
    """Grows the landing files towards a stage boundary (append only, like a capture tool)."""

    def __init__(self, folder: Path, workload: CrashWorkload) -> None:
        self.folder = folder
        self.workload = workload
        self.written = dict.fromkeys(workload.contents, 0)
        folder.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, upto: int) -> None:
        if upto <= self.written[name]:
            return
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            handle.write(self.workload.contents[name][self.written[name] : upto])
            handle.flush()
            os.fsync(handle.fileno())
        self.written[name] = upto

    def write_to(self, boundary: dict[str, int]) -> None:
        for name, upto in boundary.items():
            self.write(name, upto)

    def pieces(
        self, boundary: dict[str, int], rng: random.Random, count: int
    ) -> list[tuple[float, str, int]]:
        """A seeded append schedule towards ``boundary``: (sleep before, file, size after); the
        cuts fall anywhere, inside lines and UTF-8 sequences included; files interleave."""
        pending: dict[str, list[int]] = {}
        for name, upto in sorted(boundary.items()):
            start = self.written[name]
            if upto > start:
                cuts = {rng.randint(start + 1, upto) for _ in range(count - 1)} | {upto}
                pending[name] = sorted(cuts)
        schedule = []
        while pending:
            name = rng.choice(sorted(pending))
            schedule.append((rng.uniform(0.2, 2.0), name, pending[name].pop(0)))
            if not pending[name]:
                del pending[name]
        return schedule


class Appender(threading.Thread):
    """Appends a schedule of pieces while ingest runs."""

    def __init__(self, landing: Landing, schedule: list[tuple[float, str, int]]) -> None:
        super().__init__(daemon=True)
        self.landing = landing
        self.schedule = schedule
        self.finished_at: float | None = None
        self.error: BaseException | None = None

    def done_at(self) -> float | None:
        """When the last piece was written (monotonic); None while appending."""
        return None if self.is_alive() else self.finished_at

    def run(self) -> None:
        try:
            for sleep, name, upto in self.schedule:
                time.sleep(sleep)
                self.landing.write(name, upto)
        except BaseException as error:  # reported by the driver
            self.error = error
        finally:
            self.finished_at = time.monotonic()


# --------------------------------------------------------------------------------------------
# Kill points and the process driver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    kind: str  # time | commits | path | abort | output
    value: float  # time: fraction of the expected duration; commits: n; others: unused
    delay: float = 0.0  # seconds after the event
    # path: a folder under the warehouse; commits: tables/<path> (default all); output: a text
    # the command's console (stderr) prints
    path: str = ""

    def describe(self) -> str:
        if self.kind == "time":
            return f"time {self.value:.3f} of the expected duration"
        if self.kind == "commits":
            where = f" of {self.path}" if self.path else ""
            return f"{self.delay:.2f} s after the {int(self.value)}th new Delta commit{where}"
        if self.kind == "path":
            return f"{self.delay:.2f} s after {self.path} appears"
        if self.kind == "output":
            return f"{self.delay:.2f} s after the console prints {self.path!r}"
        return (
            f"{self.delay:.2f} s after the {int(self.value)}th apply dictionary commit after "
            "the error queue's next one (an abort being recorded)"
        )


@dataclass
class RunRecord:
    command: str
    started: float  # seconds since the driver started
    duration: float
    returncode: int
    kill: KillPoint | None  # the kill point of this run
    killed_at: float | None  # seconds after start when SIGKILL was sent (None: ran to its end)
    stdout: str = ""
    stderr_tail: str = ""

    def describe(self) -> str:
        if self.kill is None:
            how = "no kill point"
        elif self.killed_at is None:
            how = f"missed kill point ({self.kill.describe()})"
        else:
            how = f"SIGKILL at {self.killed_at:.2f} s ({self.kill.describe()})"
        return (
            f"[{self.started:8.1f}s] {self.command}: {how}, rc={self.returncode}, "
            f"{self.duration:.1f} s"
        )


def _delta_commits(root: Path, table_glob: str) -> int:
    count = 0
    for log in root.glob(f"tables/{table_glob}/_delta_log"):
        try:
            count += sum(1 for name in os.listdir(log) if _COMMIT_FILE.match(name))
        except FileNotFoundError:
            continue
    return count


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CrashDriver:
    """Runs the CLI on one warehouse, one process at a time, killing at the given points."""

    def __init__(self, warehouse: Path, logs: Path, seed: int) -> None:
        self.warehouse = warehouse
        self.logs = logs
        self.seed = seed
        self.records: list[RunRecord] = []
        self.expected: dict[str, float] = {"ingest": 25.0, "apply": 45.0}
        self.completed: dict[str, list[float]] = {}
        self.clock = time.monotonic()
        self.executable = lakeapply_executable()
        logs.mkdir(parents=True, exist_ok=True)

    @property
    def kills(self) -> int:
        return sum(1 for r in self.records if r.killed_at is not None)

    def history(self) -> str:
        return "\n".join(r.describe() for r in self.records)

    def _trigger(
        self, point: KillPoint, command: str, console: Path
    ) -> Callable[[float], float | None]:
        """A predicate on the seconds since start: the instant to kill at, once known."""
        if point.kind == "output":
            return lambda now: (
                now + point.delay if point.path in console.read_text(errors="replace") else None
            )
        if point.kind == "time":
            expected = self.expected.get(command, 30.0)
            instant = 2.0 + point.value * max(expected - 2.0, 1.0)
            return lambda _: instant
        if point.kind == "path":
            target = self.warehouse / point.path
            return lambda now: now + point.delay if target.exists() else None
        if point.kind == "abort":
            return self._abort_trigger(point)
        table_glob = point.path or "*/*"
        baseline = _delta_commits(self.warehouse, table_glob)
        return lambda now: (
            now + point.delay
            if _delta_commits(self.warehouse, table_glob) - baseline >= int(point.value)
            else None
        )

    def _abort_trigger(self, point: KillPoint) -> Callable[[float], float | None]:
        """After the error queue's next commit, ``value`` more commits of the apply dictionary
        (error messages, spill, progress, the ABORTED status, the cycle's commit)."""
        queue, dictionary = f"{PREFIX}_apply.db/error_queue", f"{PREFIX}_apply.db/*"
        queue_baseline = _delta_commits(self.warehouse, queue)
        after_queue: list[int] = []

        def trigger(now: float) -> float | None:
            if not after_queue:
                if _delta_commits(self.warehouse, queue) <= queue_baseline:
                    return None
                after_queue.append(_delta_commits(self.warehouse, dictionary))
            if _delta_commits(self.warehouse, dictionary) - after_queue[0] >= int(point.value):
                return now + point.delay
            return None

        return trigger

    def run_once(self, args: Sequence[str], point: KillPoint | None) -> RunRecord:
        number = len(self.records) + 1
        command = args[0]
        out_path = self.logs / f"{number:03d}-{command}.out"
        err_path = self.logs / f"{number:03d}-{command}.err"
        started = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(
                # Small-data profile: the workloads are a few hundred LCRs, and every run is a
                # cold JVM (where generated code and adaptive planning cost the most).
                [str(self.executable), "--warehouse", str(self.warehouse), "--small-data", *args],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.warehouse.parent,
            )
            trigger = self._trigger(point, command, err_path) if point is not None else None
            kill_at: float | None = None
            killed_at: float | None = None
            while process.poll() is None:
                now = time.monotonic() - started
                if now > RUN_TIMEOUT_S:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    raise HarnessFailure(
                        f"{' '.join(args)} ran over {RUN_TIMEOUT_S} s (seed {self.seed})"
                    )
                if trigger is not None and kill_at is None:
                    kill_at = trigger(now)
                if kill_at is not None and now >= kill_at:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    # The leader may have exited between the poll and the signal: then the run
                    # ended by itself and is no kill (its exit code says so).
                    if process.returncode == -signal.SIGKILL:
                        killed_at = now
                    break
                time.sleep(POLL_S)
            # Whatever survived the leader (the JVM, Python workers) goes too: nothing of a
            # killed run may keep writing while the next one starts.
            deadline = time.monotonic() + 30
            while _group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
                if time.monotonic() > deadline:
                    raise HarnessFailure(f"process group {process.pid} survived SIGKILL")
                time.sleep(0.1)
        record = RunRecord(
            " ".join(args),
            started - self.clock,
            time.monotonic() - started,
            process.returncode,
            point,
            killed_at,
            out_path.read_text(errors="replace"),
            err_path.read_text(errors="replace")[-3000:],
        )
        self.records.append(record)
        print(record.describe(), flush=True)
        if killed_at is None and process.returncode == 0 and command in self.expected:
            # The shortest completed run: time kills then land inside the work, not after it.
            known = self.completed.setdefault(command, [])
            known.append(record.duration)
            self.expected[command] = min(known)
        return record

    def run(
        self,
        args: Sequence[str],
        kill_points: list[KillPoint],
        accept: Callable[[RunRecord], bool] = lambda r: r.returncode == 0,
        started_after: Callable[[], float | None] = lambda: 0.0,
    ) -> RunRecord:
        """Run until a run ends by itself (taking a kill point per run from ``kill_points``),
        and, if ``started_after`` gives an instant (monotonic), one started after it."""
        while True:
            point = kill_points.pop(0) if kill_points else None
            begun = time.monotonic()
            record = self.run_once(args, point)
            if record.killed_at is not None:
                continue
            if not accept(record):
                raise HarnessFailure(
                    f"`lakeapply {' '.join(args)}` failed after a restart (seed {self.seed}):\n"
                    f"{self.history()}\n--- stdout\n{record.stdout}\n--- stderr (tail)\n"
                    f"{record.stderr_tail}"
                )
            after = started_after()
            if after is not None and begun >= after:
                return record


def aborted(record: RunRecord) -> bool:
    """The apply aborted (this run), or a killed run had already recorded the abort."""
    return "ABORTED" in record.stdout or (
        record.returncode == 1 and "ABORTED" in record.stderr_tail
    )


# --------------------------------------------------------------------------------------------
# Scenario: the crash run and the uninterrupted reference, stage by stage
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """How much of a scenario: workload size, stages, kill points per step."""

    transactions: int = 200
    stages: int = 3
    ingest_kills: int = 1  # random kill points per ingest step (the first gets an early one too)
    apply_kills: int = 1  # random kill points per apply step (plus an early one, an abort one)
    append_pieces: int = 3  # appends per file while an ingest runs
    conflict_ratio: float = 0.004


@dataclass
class ScenarioResult:
    seed: int
    driver: CrashDriver
    crash_aborts: int
    reference_aborts: int
    long_transaction: str
    lines: int
    kill_plan: list[str] = field(default_factory=list)

    def header(self) -> str:
        return (
            f"crash scenario seed {self.seed} (reproduce: LAKEAPPLY_CRASH_SEED={self.seed}): "
            f"{self.driver.kills} SIGKILLs\nkill plan:\n  " + "\n  ".join(self.kill_plan) + "\n"
            "runs:\n" + self.driver.history()
        )


def _random_point(rng: random.Random, max_commits: int) -> KillPoint:
    if rng.random() < 0.5:
        return KillPoint("time", rng.random())
    return KillPoint("commits", rng.randint(1, max_commits), rng.uniform(0.0, 0.5))


def run_scenario(
    spark: SparkSession, workdir: Path, seed: int, shape: Shape, reference_prefix: str
) -> ScenarioResult:
    rng = random.Random(seed)
    workload = build_workload(seed, shape.transactions, shape.stages, shape.conflict_ratio)
    landing = Landing(workdir / "landing", workload)
    config = workload.config(workdir / "crash.yml")
    driver = CrashDriver(workdir / "crash-warehouse", workdir / "logs", seed)
    reference = Catalog(reference_prefix)
    kill_plan: list[str] = []
    crash_aborts = reference_aborts = 0
    carried: list[KillPoint] = []

    def planned(step: str, points: list[KillPoint]) -> list[KillPoint]:
        kill_plan.extend(f"{step}: {p.describe()}" for p in points)
        return points

    for stage, boundary in enumerate(workload.boundaries, start=1):
        # --- ingest: the crash run while the files grow, then the reference ----------------
        points = [_random_point(rng, 4) for _ in range(shape.ingest_kills)]
        if stage == 1:
            points.insert(
                0, KillPoint("path", 0, rng.uniform(0.0, 2.0), f"tables/{PREFIX}_bronze.db")
            )
            landing.write_to(boundary)
            appender: Appender | None = None
        else:
            half = {
                name: landing.written[name] + (upto - landing.written[name]) // 2
                for name, upto in boundary.items()
            }
            landing.write_to(half)
            appender = Appender(landing, landing.pieces(boundary, rng, shape.append_pieces))
            appender.start()
        driver.run(
            ["ingest", "--landing", str(landing.folder)],
            planned(f"stage {stage} ingest", points),
            started_after=appender.done_at if appender is not None else lambda: 0.0,
        )
        if appender is not None:
            appender.join()
            if appender.error is not None:
                raise appender.error
        assert landing.written == boundary
        ingest(spark, reference, landing.folder)

        # --- configure once, then apply: crash run, then the reference ---------------------
        if stage == 1:
            driver.run(["configure", "--config", str(config)], [])
            for settings in load_config(config):
                admin.publish_settings(spark, reference, settings)
        # Random points first; the abort point goes to the run that gets past them.
        points = [_random_point(rng, 10) for _ in range(shape.apply_kills)]
        abort_point = KillPoint("abort", rng.randint(0, 4), rng.uniform(0.0, 0.3))
        points.extend([*carried, abort_point])
        if stage == 1:
            points.insert(
                0, KillPoint("path", 0, rng.uniform(0.0, 2.0), f"tables/{PREFIX}_silver.db")
            )
        points = planned(f"stage {stage} apply", points)
        points_of_stage = list(points)
        while True:
            record = driver.run(
                ["apply", "--apply-name", APPLY_NAME],
                points,
                accept=lambda r: r.returncode == 0 or aborted(r),
            )
            if not aborted(record):
                break
            crash_aborts += 1
            driver.run(["admin", "start-apply", APPLY_NAME], [])
        # An abort point no run used (no error transaction in this stage) waits for the next.
        used = {id(r.kill) for r in driver.records if r.killed_at is not None or aborted(r)}
        carried = [p for p in points_of_stage if p.kind == "abort" and id(p) not in used]
        while True:
            reports = run_apply(spark, reference, admin.load_settings(spark, reference, APPLY_NAME))
            if not (reports and reports[-1].aborted):
                break
            reference_aborts += 1
            admin.start_apply(spark, reference, APPLY_NAME)
    return ScenarioResult(
        seed,
        driver,
        crash_aborts,
        reference_aborts,
        workload.long_transaction,
        workload.lines,
        kill_plan,
    )


# --------------------------------------------------------------------------------------------
# Outcomes: every table, as sorted rows, from either warehouse
# --------------------------------------------------------------------------------------------

Loader = Callable[[str, str], DataFrame]  # (layer: bronze | silver | apply, table) -> frame


def path_loader(spark: SparkSession, warehouse: Path, prefix: str = PREFIX) -> Loader:
    def load(layer: str, table: str) -> DataFrame:
        return spark.read.format("delta").load(
            str(warehouse / "tables" / f"{prefix}_{layer}.db" / table)
        )

    return load


def catalog_loader(spark: SparkSession, catalog: Catalog) -> Loader:
    def load(layer: str, table: str) -> DataFrame:
        return spark.table(
            {
                "bronze": catalog.bronze_table,
                "silver": catalog.silver_table,
                "apply": catalog.apply_table,
            }[layer](table)
        )

    return load


def _rows(frame: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    selected = frame.select(*columns) if columns else frame
    return sorted(
        (tuple(row) for row in selected.collect()),
        key=lambda row: tuple((value is None, str(value)) for value in row),
    )


def read_outcome(load: Loader) -> dict[str, list[tuple[Any, ...]]]:
    """What must be identical after any crash: bronze lines, silver rows, the error queue,
    transaction outcomes, the spill, the final progress per source and the apply status."""
    mine = F.col("apply_name") == APPLY_NAME
    progress = load("apply", "progress").where(mine)
    last_cycle = progress.agg(F.max("cycle_id")).collect()[0][0]
    outcome = {
        "bronze lcr": _rows(
            load("bronze", "lcr"), "source_file", "line_number", "byte_offset", "raw_lcr"
        ),
        "bronze quarantine": _rows(
            load("bronze", "quarantine"), "source_file", "line_number", "field", "reason"
        ),
        "error queue": _rows(
            load("apply", "error_queue").where(mine),
            "source_database",
            "source_transaction_id",
            "source_commit_scn",
            "message_number",
            "error_number",
            "error_message",
            "message_count",
        ),
        "error messages": _rows(
            load("apply", "error_messages").where(mine),
            "transaction_id",
            "message_number",
            "position",
            "scn",
        ),
        "transactions": _rows(
            load("apply", "transactions").where(mine),
            "source_database",
            "transaction_id",
            "commit_scn",
            "outcome",
            "message_count",
        ),
        "spill": _rows(load("apply", "spill").where(mine), "transaction_id", "scn", "position"),
        "progress": _rows(
            progress.where(F.col("cycle_id") == last_cycle),
            "source_database",
            "low_watermark",
            "high_watermark",
            "oldest_scn",
            "oldest_transaction_id",
            "spill_scn",
            "total_received",
            "total_applied",
            "total_ignored",
            "total_rolled_back",
            "total_errors",
            "status",
        ),
        "apply status": _rows(
            load("apply", "apply_processes").where(mine), "status", "error_number", "error_message"
        ),
    }
    for silver_table in SILVER_TABLES.values():
        outcome[f"silver {silver_table}"] = _rows(load("silver", silver_table))
    return outcome


def check_lines(outcome: dict[str, list[tuple[Any, ...]]], landing: Path, lines: int) -> None:
    """Landing lines = bronze rows + quarantine rows, each line exactly once."""
    seen = [(row[0], row[1]) for row in outcome["bronze lcr"] + outcome["bronze quarantine"]]
    duplicates = len(seen) - len(set(seen))
    assert duplicates == 0, f"{duplicates} landing lines are in bronze twice"
    expected = {
        (str(path.resolve()), number)
        for path in landing.rglob("*.jsonl")
        for number in range(1, path.read_bytes().count(b"\n") + 1)
    }
    assert len(expected) == lines
    missing = expected - set(seen)
    extra = set(seen) - expected
    assert not missing and not extra, (
        f"lines missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}"
    )


def diff_outcomes(
    crashed: dict[str, list[tuple[Any, ...]]], reference: dict[str, list[tuple[Any, ...]]]
) -> list[str]:
    """One line per table that differs: sizes and the first rows only one side has."""
    problems = []
    for name in sorted(reference):
        mine, theirs = crashed.get(name, []), reference[name]
        if mine != theirs:
            only_crash = [row for row in mine if row not in theirs][:3]
            only_reference = [row for row in theirs if row not in mine][:3]
            problems.append(
                f"{name}: crash run {len(mine)} rows, uninterrupted {len(theirs)}; "
                f"only in the crash run {only_crash}; only uninterrupted {only_reference}"
            )
    return problems
