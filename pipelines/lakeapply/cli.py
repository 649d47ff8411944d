"""The ``lakeapply`` command line: thin wrappers over the pipeline functions.

Two audiences: a person at a terminal gets a spinner; an unattended run (a Databricks job, cron,
CI: stderr is not a terminal) gets plain timestamped progress lines a log can keep. Either way
every failure ends in one line on stderr and a non-zero exit code (1 error, 2 usage, 3 warehouse
busy); ``--debug`` (or LAKEAPPLY_DEBUG=1) adds the Python traceback.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from lakeapply.errors import ApplyAbortedError, ApplyError, LakeapplyError

console = Console(stderr=True)

ERROR_PREFIX = "lakeapply: error:"
EXIT_CODE_UNEXPECTED = 1
# Unattended progress: at most one line a second (faster steps are coalesced, the latest wins)
# and a "still running" line when a step has been quiet this long, so a log shows the run lives.
PROGRESS_MIN_INTERVAL_SECONDS = 1.0
PROGRESS_HEARTBEAT_SECONDS = 60.0


@dataclass(frozen=True)
class CliContext:
    warehouse: Path
    catalog_prefix: str
    wait_seconds: float = 0.0
    debug: bool = False
    catalog: str | None = None
    driver_memory: str = "4g"
    small_data: bool = False


def utc_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def interactive() -> bool:
    """A person is watching: stderr is a terminal (not a job log, a pipe or a file)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def _command_path() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx is not None else "lakeapply"


def log_line(text: str) -> None:
    """One notice on stderr: timestamped and prefixed with the command when unattended."""
    if interactive():
        console.print(text, highlight=False, soft_wrap=True)
    else:
        click.echo(f"{utc_timestamp()} {_command_path()}: {text}", err=True)


class TimestampedProgress:
    """Progress for logs: "<UTC time> lakeapply apply: applying X: cycle 3: fold pass 1" lines.

    A rich spinner written to a file is one frame per line; this prints the steps themselves, at
    most one line per ``min_interval`` (a faster step is held back and printed when the interval
    has passed, unless a newer one replaced it), and a heartbeat line when a step is quiet for
    ``heartbeat`` seconds.
    """

    def __init__(
        self,
        prefix: str,
        description: str,
        emit: Callable[[str], None],
        min_interval: float = PROGRESS_MIN_INTERVAL_SECONDS,
        heartbeat: float = PROGRESS_HEARTBEAT_SECONDS,
    ) -> None:
        self._prefix = prefix
        self._description = description
        self._emit = emit
        self._min_interval = min_interval
        self._heartbeat = heartbeat
        self._lock = threading.Lock()
        self._current = description
        self._pending: str | None = None
        self._last_printed_at = -math.inf
        self._started_at = time.monotonic()
        self._stopped = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="lakeapply-progress", daemon=True)

    def start(self) -> None:
        with self._lock:
            self._print(self._description)
        self._ticker.start()

    def step(self, text: str) -> None:
        line = f"{self._description}: {text}"
        with self._lock:
            if line == self._current:
                return
            self._current = line
            if time.monotonic() - self._last_printed_at >= self._min_interval:
                self._print(line)
            else:
                self._pending = line

    def finish(self, succeeded: bool) -> None:
        self._stopped.set()
        if self._ticker.is_alive():
            self._ticker.join()
        with self._lock:
            if self._pending is not None:
                self._print(self._pending)
            if succeeded:
                self._print(f"{self._description}: done in {self._elapsed():.1f}s")

    def _tick(self) -> None:
        while not self._stopped.wait(self._min_interval):
            with self._lock:
                quiet_for = time.monotonic() - self._last_printed_at
                if self._pending is not None and quiet_for >= self._min_interval:
                    self._print(self._pending)
                elif quiet_for >= self._heartbeat:
                    self._print(f"{self._current} (still running, {self._elapsed():.0f}s)")

    def _print(self, line: str) -> None:
        """Caller holds the lock."""
        self._pending = None
        self._last_printed_at = time.monotonic()
        self._emit(f"{utc_timestamp()} {self._prefix}: {line}")

    def _elapsed(self) -> float:
        return time.monotonic() - self._started_at


@contextmanager
def progress_steps(description: str) -> Iterator[Callable[[str], None]]:
    """Progress of long work, which reports its steps through the callback.

    A spinner with the current step at a terminal; timestamped lines otherwise.
    """
    if interactive():
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as spinner:
            task = spinner.add_task(description)
            yield lambda step: spinner.update(task, description=f"{description}: {step}")
        return
    progress = TimestampedProgress(
        _command_path(), description, emit=lambda line: click.echo(line, err=True)
    )
    progress.start()
    try:
        yield progress.step
    except BaseException:
        progress.finish(succeeded=False)
        raise
    progress.finish(succeeded=True)


def _hold_warehouse(ctx: CliContext) -> None:
    """Take the warehouse lease before a local Spark session starts (see runtime/lease.py).

    On Databricks the session and its metastore are shared and there is nothing to lock.
    """
    from lakeapply.runtime.lease import LeaseHolder, hold_warehouse_for_process
    from lakeapply.runtime.session import running_on_databricks

    if running_on_databricks():
        return

    def report_wait(holder: LeaseHolder | None) -> None:
        who = holder.describe() if holder is not None else "another process"
        log_line(
            f"waiting up to {ctx.wait_seconds:g}s for warehouse {ctx.warehouse}, held by {who}"
        )

    hold_warehouse_for_process(ctx.warehouse, wait_seconds=ctx.wait_seconds, on_wait=report_wait)


def _spark(ctx: CliContext) -> Any:
    from lakeapply.runtime.session import LocalSparkSettings, get_spark

    _hold_warehouse(ctx)
    with progress_steps("starting Spark"):
        return get_spark(
            LocalSparkSettings(
                ctx.warehouse,
                driver_memory=ctx.driver_memory,
                small_data=ctx.small_data,
                write_class_archive=True,
            ),
            notify=log_line,
        )


def _catalog(ctx: CliContext) -> Any:
    from lakeapply.runtime.catalog import Catalog

    return Catalog(ctx.catalog_prefix, ctx.catalog)


# Errors whose own text does not say what to do, and what to do.
_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"Another instance of Derby|SessionHiveMetaStoreClient|XSDB6"),
        "the warehouse's Derby metastore is open in another process outside lakeapply's lease "
        "(a Spark shell, notebook or dbt?): stop it and rerun",
    ),
    (
        re.compile(r"JAVA_GATEWAY_EXITED|Java gateway process exited"),
        "Spark could not start: Java 17 must be on PATH",
    ),
    (
        # What Py4J reports when the JVM is gone mid-run; in local mode an OutOfMemoryError in
        # any task ends the whole JVM.
        re.compile(r"OutOfMemoryError|Answer from Java side is empty|Connection refused"),
        "the Spark JVM ended, most often out of memory (its log: <warehouse>/logs/spark.log): "
        "rerun with a larger --driver-memory",
    ),
)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def describe_unexpected_error(error: BaseException) -> str:
    """ "<type>: <first line of message>" and a hint; a Py4J error names the Java exception."""
    name, text = type(error).__name__, str(error)
    if name == "Py4JJavaError":
        # "An error occurred while calling o61.sql.\n: java.lang.X: message\n\tat ..."
        java = next((line[2:] for line in text.splitlines() if line.startswith(": ")), "")
        if java:
            java_class, _, java_message = java.partition(": ")
            name, text = f"{name} ({java_class.rsplit('.', 1)[-1]})", java_message or java_class
    lines = _lines(text)
    summary = f"{name}: {lines[0]}" if lines else name
    hints = [hint for pattern, hint in _HINTS if pattern.search(str(error))]
    return f"{summary} ({'; '.join([*hints, 'run with --debug for the traceback'])})"


# Our own messages are written for the user: keep all of one on its line unless it is huge.
_JOINED_MESSAGE_LIMIT = 400


def describe_lakeapply_error(error: LakeapplyError) -> str:
    lines = _lines(str(error)) or [type(error).__name__]
    joined = "; ".join(lines)
    if len(joined) <= _JOINED_MESSAGE_LIMIT:
        return joined
    return f"{lines[0]} (run with --debug for the full message)"


def _fail(error: BaseException, one_line: str, exit_code: int, debug: bool) -> None:
    """Print the traceback (with --debug), then the one error line, last, and exit."""
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    click.echo(f"{ERROR_PREFIX} {one_line}", err=True)
    sys.exit(exit_code)


class OneLineUsageError(click.UsageError):
    """A usage error (a bad path, a missing option) as one line, not usage + blank + error."""

    def show(self, file: IO[Any] | None = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else "lakeapply"
        click.echo(f"{ERROR_PREFIX} {self.format_message()} (see `{command} --help`)", err=True)


def _one_line_usage(error: click.UsageError) -> click.UsageError:
    if isinstance(error, (OneLineUsageError, click.exceptions.NoArgsIsHelpError)):
        return error
    return OneLineUsageError(error.format_message(), error.ctx)


class LakeapplyGroup(click.Group):
    """Every failure as one line on stderr and a non-zero exit code, never a traceback.

    A LakeapplyError exits with its ``exit_code``; anything else is a bug or an environment
    problem and exits 1 naming the exception type. --debug prints the traceback first.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:
            raise _one_line_usage(error) from error

    def invoke(self, ctx: click.Context) -> Any:
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise _one_line_usage(error) from error
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except LakeapplyError as error:
            _fail(error, describe_lakeapply_error(error), error.exit_code, debug)
        except Exception as error:
            _fail(error, describe_unexpected_error(error), EXIT_CODE_UNEXPECTED, debug)
        return None


def stream_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """--stream, --trigger, --checkpoint, --max-batches (runtime/streaming.py)."""
    options = (
        click.option(
            "--stream",
            is_flag=True,
            help="Run as a Structured Streaming query (see --trigger); exactly once across "
            "restarts through its checkpoint and lakeapply's own logs.",
        ),
        click.option(
            "--trigger",
            default="available-now",
            show_default=True,
            metavar="available-now|processing-time=INTERVAL",
            help="With --stream: process what is there and stop, or run every INTERVAL "
            "(e.g. 'processing-time=30 seconds') until SIGINT/SIGTERM.",
        ),
        click.option(
            "--checkpoint",
            default=None,
            metavar="PATH",
            help="With --stream: the streaming checkpoint folder "
            "(default: <warehouse>/_checkpoints/<prefix>/...).",
        ),
        click.option(
            "--max-batches",
            type=click.IntRange(min=1),
            default=None,
            help="With --stream: stop after this many micro-batches.",
        ),
    )
    for option in reversed(options):
        function = option(function)
    return function


@click.group(cls=LakeapplyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--warehouse",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("warehouse"),
    envvar="LAKEAPPLY_WAREHOUSE",
    show_default=True,
    help="Local warehouse folder (Delta tables and the Derby metastore). Env: LAKEAPPLY_WAREHOUSE.",
)
@click.option(
    "--catalog-prefix",
    default="lakeapply",
    envvar="LAKEAPPLY_CATALOG_PREFIX",
    show_default=True,
    help="Prefix of the databases: <prefix>_bronze, <prefix>_silver, <prefix>_apply.",
)
@click.option(
    "--catalog",
    default=None,
    envvar="LAKEAPPLY_CATALOG",
    help="Unity Catalog (or any Spark catalog) holding the databases: tables are then named "
    "catalog.<prefix>_silver.table. Default: the session's current catalog (local: the Hive "
    "metastore under --warehouse). Env: LAKEAPPLY_CATALOG.",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=click.FloatRange(min=0),
    default=0.0,
    envvar="LAKEAPPLY_WAIT",
    metavar="SECONDS",
    show_default=True,
    help="If another process holds the local warehouse, wait up to SECONDS for it instead of "
    "exiting with code 3. Env: LAKEAPPLY_WAIT.",
)
@click.option(
    "--driver-memory",
    default="4g",
    envvar="LAKEAPPLY_DRIVER_MEMORY",
    show_default=True,
    metavar="SIZE",
    help="Heap of the local Spark driver, e.g. 8g (ignored on Databricks). Every Delta table "
    "a run touches stays cached with its query plans (measured: ~2.2 GB live heap with ~840 "
    "tables open). Env: LAKEAPPLY_DRIVER_MEMORY.",
)
@click.option(
    "--small-data",
    is_flag=True,
    envvar="LAKEAPPLY_SMALL_DATA",
    help="Spark's small-data profile for tiny tables (tests, demos): no generated code, no "
    "adaptive re-planning, no Delta data skipping or checksum files, and a JVM that compiles "
    "with its client compiler only. Each costs more than a few hundred rows do; on real "
    "tables data skipping keeps a MERGE from reading the whole table, so leave it off there. "
    "Env: LAKEAPPLY_SMALL_DATA=1.",
)
@click.option(
    "--debug",
    is_flag=True,
    envvar="LAKEAPPLY_DEBUG",
    help="Show the Python traceback of an error. Env: LAKEAPPLY_DEBUG=1.",
)
@click.pass_context
def main(
    ctx: click.Context,
    warehouse: Path,
    catalog_prefix: str,
    catalog: str | None,
    wait_seconds: float,
    driver_memory: str,
    small_data: bool,
    debug: bool,
) -> None:
    """lakeapply: Oracle Streams apply semantics for Delta Lake (landing -> bronze -> silver -> gold)."""
    ctx.obj = CliContext(
        warehouse, catalog_prefix, wait_seconds, debug, catalog or None, driver_memory, small_data
    )


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Landing folder to write LCR files into.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--transactions", type=int, default=1000, show_default=True)
@click.option("--synthetic-tables", type=int, default=2, show_default=True)
@click.option(
    "--sources",
    default="DBS1.EXAMPLE.COM",
    show_default=True,
    help="Comma-separated source database names.",
)
@click.option("--files-per-source", type=int, default=4, show_default=True)
@click.option("--bad-line-ratio", type=float, default=0.0, show_default=True)
@click.option("--conflict-ratio", type=float, default=0.0, show_default=True)
@click.option(
    "--sample-scenario/--no-sample-scenario",
    default=True,
    show_default=True,
    help="Include the STUDENT/COURSE scenario of the GoldenGate redo document.",
)
@click.option("--gzip", "compress", is_flag=True, help="Write .jsonl.gz files.")
def generate(
    out: Path,
    seed: int,
    transactions: int,
    synthetic_tables: int,
    sources: str,
    files_per_source: int,
    bad_line_ratio: float,
    conflict_ratio: float,
    sample_scenario: bool,
    compress: bool,
) -> None:
    """Write a deterministic OLTP-like LCR workload (JSON Lines, the LCR contract)."""
    from lakeapply.landing.generator import WorkloadSpec, write_workload

    spec = WorkloadSpec(
        seed=seed,
        transactions=transactions,
        synthetic_tables=synthetic_tables,
        source_databases=tuple(s.strip() for s in sources.split(",") if s.strip()),
        files_per_source=files_per_source,
        bad_line_ratio=bad_line_ratio,
        conflict_ratio=conflict_ratio,
        include_sample_scenario=sample_scenario,
    )
    with progress_steps("generating"):
        workload = write_workload(spec, out, compress=compress)
    click.echo(
        f"wrote {workload.line_count} lines ({workload.bad_line_count} bad) in "
        f"{len(workload.files)} files under {out}: {workload.committed_transactions} committed, "
        f"{workload.rolled_back_transactions} rolled back, {workload.open_transactions} open "
        "transactions"
    )


@main.command()
@click.option(
    "--landing",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="Folder of .jsonl / .jsonl.gz LCR files (searched recursively).",
)
@click.option(
    "--format",
    "capture_format",
    type=click.Choice(["lcr-json", "ogg-json", "debezium-json"]),
    default="lcr-json",
    show_default=True,
    help="What the files hold: lakeapply's LCR lines, GoldenGate for Big Data JSON "
    "(operation model), or Debezium Oracle connector events (README: Capture formats).",
)
@click.option(
    "--source-database",
    default=None,
    help="The source database (lakeapply.yml's source_database) of every record; needed for "
    "GoldenGate two-part table names, and overrides what a record names.",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="A lakeapply.yml whose landing_folders give the capture format per folder of the "
    "landing folder; --format is the format of the files in no named folder.",
)
@stream_options
@click.pass_obj
def ingest(
    obj: CliContext,
    landing: Path,
    capture_format: str = "lcr-json",
    source_database: str | None = None,
    config: Path | None = None,
    stream: bool = False,
    trigger: str = "available-now",
    checkpoint: str | None = None,
    max_batches: int | None = None,
) -> None:
    """Land new LCR lines into bronze, exactly once (bad lines go to the quarantine)."""
    from lakeapply.bronze.formats import CaptureFormat, LandingFormats
    from lakeapply.bronze.ingest import ingest as run_ingest
    from lakeapply.silver.config import load_landing_formats

    _check_stream_options(stream, trigger, checkpoint, max_batches)
    default = CaptureFormat(capture_format, source_database)
    fmt: CaptureFormat | LandingFormats = (
        default if config is None else load_landing_formats(config, default)
    )
    if stream:
        _stream_ingest(obj, landing, fmt, (trigger, checkpoint, max_batches))
        return
    spark = _spark(obj)
    with progress_steps("ingesting") as step:
        reports = [run_ingest(spark, _catalog(obj), landing, progress=step, capture_format=fmt)]
        # A resumed batch reads only the byte ranges its killed run planned; what landed since
        # is new, and a completed `ingest` has ingested everything landed before it started.
        # (At most once more: batches run one after the other, so only one can be unfinished.)
        while reports[-1].resumed:
            reports.append(
                run_ingest(spark, _catalog(obj), landing, progress=step, capture_format=fmt)
            )
    ingested = [report for report in reports if report.batch_id is not None]
    if not ingested:
        click.echo("nothing new to ingest")
    for report in ingested:
        click.echo(_describe_ingest(report))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: CliContext, as_json: bool) -> None:
    """Show what bronze (and, once applied, silver) holds."""
    from lakeapply.status import collect_status, render_status

    report = collect_status(_spark(obj), _catalog(obj))
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2, default=str))
    else:
        render_status(report, Console())


@main.command()
@click.option(
    "--landing",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("landing"),
    show_default=True,
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--transactions", type=int, default=2000, show_default=True)
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Apply processes to seed the dictionary with. Default: the demo lakeapply.yml that "
    "ships in the package.",
)
@click.pass_obj
def run(obj: CliContext, landing: Path, seed: int, transactions: int, config: Path | None) -> None:
    """The demo job: generate sample LCRs (if the landing folder is empty), ingest, summarize."""
    from lakeapply.jobs import run_demo

    _hold_warehouse(obj)
    run_demo(
        obj.warehouse,
        obj.catalog_prefix,
        landing,
        seed,
        transactions,
        Console(),
        config=config,
        catalog=obj.catalog,
    )


def _apply_settings(spark: Any, catalog: Any, apply_name: str | None) -> Any:
    """The effective settings from the dictionary tables (the only apply, if none is named)."""
    from lakeapply.errors import ConfigurationError
    from lakeapply.silver import dictionary
    from lakeapply.silver.admin import load_settings
    from lakeapply.silver.plan import ensure_dictionary_tables

    # Every dictionary table, the settings tables included: a standalone `dbt build` (the
    # bundle's gold job) reads them all, and a warehouse of an older lakeapply gains new ones.
    ensure_dictionary_tables(spark, catalog)
    if apply_name is None:
        names = [
            r.apply_name
            for r in spark.table(catalog.apply_table(dictionary.APPLY_PROCESSES))
            .select("apply_name")
            .orderBy("apply_name")
            .collect()
        ]
        if len(names) != 1:
            raise ConfigurationError(
                f"{len(names)} apply processes are configured ({', '.join(names) or 'none'}): "
                "name one with --apply-name, or run `lakeapply configure` first"
            )
        apply_name = names[0]
    return load_settings(spark, catalog, apply_name)


@main.command()
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=Path("lakeapply.yml"),
    show_default=True,
)
@click.pass_obj
def configure(obj: CliContext, config: Path) -> None:
    """Publish the apply processes of lakeapply.yml into the dictionary tables (replaces them)."""
    from lakeapply.silver.admin import publish_settings
    from lakeapply.silver.config import load_config

    processes = load_config(config)
    spark = _spark(obj)
    for settings in processes:
        publish_settings(spark, _catalog(obj), settings)
        click.echo(f"configured {settings.apply_name}: {len(settings.tables)} destination tables")


@main.command()
@click.option("--apply-name", default=None, help="Which apply process (default: the only one).")
@stream_options
@click.pass_obj
def apply(
    obj: CliContext,
    apply_name: str | None,
    stream: bool = False,
    trigger: str = "available-now",
    checkpoint: str | None = None,
    max_batches: int | None = None,
) -> None:
    """Apply committed transactions from bronze to the silver tables (Oracle apply semantics)."""
    from lakeapply.silver.engine import run_apply

    _check_stream_options(stream, trigger, checkpoint, max_batches)
    if stream:
        _stream_apply(obj, apply_name, (trigger, checkpoint, max_batches))
        return
    spark = _spark(obj)
    settings = _apply_settings(spark, _catalog(obj), apply_name)
    with progress_steps(f"applying {settings.apply_name}") as step:
        reports = run_apply(spark, _catalog(obj), settings, progress=step)
    if not reports:
        click.echo(f"{settings.apply_name}: nothing new to apply")
    for report in reports:
        click.echo(
            f"{report.apply_name} cycle {report.cycle_id}{' (resumed)' if report.resumed else ''}: "
            f"{report.applied} applied, {report.ignored} ignored, {report.errors} errors, "
            f"{report.rolled_back} rolled back; low watermarks {report.low_watermarks}"
            + (
                "; ABORTED (see DBA_APPLY_ERROR, then `lakeapply admin start-apply`)"
                if report.aborted
                else ""
            )
        )
    aborted = next((report for report in reports if report.aborted), None)
    if aborted is not None:
        # The reports above are the record; the exit code tells the scheduler a person is needed.
        raise ApplyAbortedError(
            f"apply process {aborted.apply_name} ABORTED in cycle {aborted.cycle_id} "
            f"({aborted.errors} error transaction(s), see DBA_APPLY_ERROR): fix the cause, then "
            f"`lakeapply admin start-apply {aborted.apply_name}`"
        )


@main.command()
@click.option("--apply-name", default=None, help="Which apply process (default: the only one).")
@click.pass_obj
def optimize(obj: CliContext, apply_name: str | None) -> None:
    """Lay the destination tables out by key: liquid clustering on the first key column, then
    OPTIMIZE (only the files written since the last run are rewritten)."""
    from lakeapply.silver.layout import optimize_destinations

    spark = _spark(obj)
    settings = _apply_settings(spark, _catalog(obj), apply_name)
    with progress_steps(f"optimizing the tables of {settings.apply_name}"):
        layouts = optimize_destinations(spark, _catalog(obj), settings)
    for layout in layouts:
        clustering = ", ".join(layout.clustering) or "none"
        click.echo(
            f"{layout.silver_table}: clustered by {clustering}"
            + (" (changed)" if layout.reclustered else "")
            + ("; optimized" if layout.optimized else f"; {layout.note}")
        )


@main.command()
@click.option("--apply-name", required=True)
@click.option("--source-database", required=True)
@click.option("--object", "object_name", required=True, help="OWNER.NAME of the source table.")
@click.option("--scn", type=int, required=True, help="Instantiation SCN (the SCN of the copy).")
@click.option(
    "--export",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="Initial copy of the source table to load.",
)
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["parquet", "csv", "json"]),
    default="parquet",
    show_default=True,
)
@click.pass_obj
def instantiate(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    scn: int,
    export: Path | None,
    export_format: str,
) -> None:
    """Create a destination table, load an initial copy, set its instantiation SCN."""
    from lakeapply.silver import admin

    admin.instantiate(
        _spark(obj),
        _catalog(obj),
        apply_name,
        source_database,
        object_name,
        scn,
        export,
        export_format,
    )
    click.echo(f"instantiated {source_database} {object_name} at SCN {scn}")


@main.group(name="admin")
def admin_group() -> None:
    """DBMS_APPLY_ADM: change an apply process's settings at run time (dictionary tables)."""


def _admin_call(obj: CliContext, name: str, *args: Any) -> None:
    from lakeapply.silver import admin

    getattr(admin, name)(_spark(obj), _catalog(obj), *args)
    click.echo(f"{name.upper()} done")


def _columns(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@admin_group.command("start-apply")
@click.argument("apply_name")
@click.pass_obj
def start_apply_command(obj: CliContext, apply_name: str) -> None:
    """START_APPLY (after an abort: resumes after the failed transaction)."""
    _admin_call(obj, "start_apply", apply_name)


@admin_group.command("stop-apply")
@click.argument("apply_name")
@click.pass_obj
def stop_apply_command(obj: CliContext, apply_name: str) -> None:
    """STOP_APPLY."""
    _admin_call(obj, "stop_apply", apply_name)


@admin_group.command("execute-error")
@click.argument("apply_name")
@click.argument("local_transaction_id")
@click.pass_obj
def execute_error_command(obj: CliContext, apply_name: str, local_transaction_id: str) -> None:
    """EXECUTE_ERROR: re-execute one error transaction (DBA_APPLY_ERROR.LOCAL_TRANSACTION_ID)."""
    from lakeapply.silver import admin

    result = admin.execute_error(_spark(obj), _catalog(obj), apply_name, local_transaction_id)
    if not result.succeeded:
        raise ApplyError(
            f"error transaction {local_transaction_id} failed again and stays in the error "
            f"queue: ORA-{result.error_number:05d}: {result.error_message}"
        )
    click.echo(f"EXECUTE_ERROR done: {local_transaction_id} applied")


@admin_group.command("execute-all-errors")
@click.argument("apply_name")
@click.pass_obj
def execute_all_errors_command(obj: CliContext, apply_name: str) -> None:
    """EXECUTE_ALL_ERRORS: re-execute every error transaction, in commit-SCN order."""
    from lakeapply.silver import admin

    results = admin.execute_all_errors(_spark(obj), _catalog(obj), apply_name)
    for result in results:
        outcome = (
            "applied"
            if result.succeeded
            else f"failed again: ORA-{result.error_number:05d}: {result.error_message}"
        )
        click.echo(f"{result.local_transaction_id}: {outcome}")
    failed = sum(1 for result in results if not result.succeeded)
    if failed:
        raise ApplyError(f"{failed} of {len(results)} error transaction(s) stay in the error queue")
    click.echo(f"EXECUTE_ALL_ERRORS done: {len(results)} applied")


@admin_group.command("delete-error")
@click.argument("apply_name")
@click.argument("local_transaction_id")
@click.pass_obj
def delete_error_command(obj: CliContext, apply_name: str, local_transaction_id: str) -> None:
    """DELETE_ERROR: drop one error transaction from the queue, unapplied."""
    _admin_call(obj, "delete_error", apply_name, local_transaction_id)


@admin_group.command("delete-all-errors")
@click.argument("apply_name")
@click.pass_obj
def delete_all_errors_command(obj: CliContext, apply_name: str) -> None:
    """DELETE_ALL_ERRORS: drop every error transaction of the apply, unapplied."""
    _admin_call(obj, "delete_all_errors", apply_name)


@admin_group.command("set-parameter")
@click.argument("apply_name")
@click.argument("parameter")
@click.argument("value")
@click.pass_obj
def set_parameter_command(obj: CliContext, apply_name: str, parameter: str, value: str) -> None:
    """SET_PARAMETER: COMMIT_SERIALIZATION, DISABLE_ON_ERROR, MAX_CYCLE_BATCHES, ..."""
    _admin_call(obj, "set_parameter", apply_name, parameter, value)


@admin_group.command("set-key-columns")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns", default="")
@click.pass_obj
def set_key_columns_command(
    obj: CliContext, apply_name: str, source_database: str, object_name: str, columns: str
) -> None:
    """SET_KEY_COLUMNS: comma-separated substitute key; empty removes it."""
    _admin_call(
        obj, "set_key_columns", apply_name, source_database, object_name, _columns(columns) or None
    )


@admin_group.command("set-table-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("scn", type=int)
@click.pass_obj
def set_table_scn_command(
    obj: CliContext, apply_name: str, source_database: str, object_name: str, scn: int
) -> None:
    """SET_TABLE_INSTANTIATION_SCN."""
    _admin_call(obj, "set_table_instantiation_scn", apply_name, source_database, object_name, scn)


@admin_group.command("set-schema-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("source_schema")
@click.argument("scn", type=int)
@click.pass_obj
def set_schema_scn_command(
    obj: CliContext, apply_name: str, source_database: str, source_schema: str, scn: int
) -> None:
    """SET_SCHEMA_INSTANTIATION_SCN."""
    _admin_call(
        obj, "set_schema_instantiation_scn", apply_name, source_database, source_schema, scn
    )


@admin_group.command("set-global-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("scn", type=int)
@click.pass_obj
def set_global_scn_command(
    obj: CliContext, apply_name: str, source_database: str, scn: int
) -> None:
    """SET_GLOBAL_INSTANTIATION_SCN."""
    _admin_call(obj, "set_global_instantiation_scn", apply_name, source_database, scn)


@admin_group.command("compare-old-values")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns")
@click.option(
    "--operation", type=click.Choice(["UPDATE", "DELETE", "*"]), default="UPDATE", show_default=True
)
@click.option("--compare/--no-compare", default=False, show_default=True)
@click.pass_obj
def compare_old_values_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    columns: str,
    operation: str,
    compare: bool,
) -> None:
    """COMPARE_OLD_VALUES: switch conflict detection for columns on or off."""
    _admin_call(
        obj,
        "compare_old_values",
        apply_name,
        source_database,
        object_name,
        _columns(columns),
        operation,
        compare,
    )


@admin_group.command("set-update-conflict-handler")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns")
@click.option(
    "--method",
    type=click.Choice(["OVERWRITE", "DISCARD", "MAXIMUM", "MINIMUM"]),
    default=None,
    help="Omit to remove the handler of this column list.",
)
@click.option("--resolution-column", default=None)
@click.pass_obj
def set_update_conflict_handler_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    columns: str,
    method: str | None,
    resolution_column: str | None,
) -> None:
    """SET_UPDATE_CONFLICT_HANDLER: a prebuilt handler for a column group."""
    _admin_call(
        obj,
        "set_update_conflict_handler",
        apply_name,
        source_database,
        object_name,
        method,
        resolution_column,
        _columns(columns),
    )


@admin_group.command("set-dml-handler")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument(
    "operation", type=click.Choice(["INSERT", "UPDATE", "DELETE", "LOB_UPDATE", "DEFAULT"])
)
@click.option("--user-procedure", default=None, help="A Python callable, package.module:function.")
@click.option("--statement", default=None, help="A Spark SQL query over the LCRs, {lcrs}.")
@click.option("--handler-name", default=None, help="A statement handler's name.")
@click.option(
    "--error-handler",
    is_flag=True,
    help="Set the operation's error handler (a --user-procedure) instead of its DML handler.",
)
@click.pass_obj
def set_dml_handler_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    operation: str,
    user_procedure: str | None,
    statement: str | None,
    handler_name: str | None,
    error_handler: bool,
) -> None:
    """SET_DML_HANDLER: the procedure handler of one operation of a table, or (--statement
    with --handler-name) one of its statement handlers; neither --user-procedure nor
    --statement removes the statement handler named by --handler-name, or every handler of the
    operation; with --error-handler, its error handler."""
    _admin_call(
        obj,
        "set_dml_handler",
        apply_name,
        source_database,
        object_name,
        operation,
        user_procedure,
        statement,
        handler_name,
        error_handler,
    )


def _rule_options(function: Any) -> Any:
    for option in reversed(
        (
            click.option("--source-database", default=None, help="Match this source database."),
            click.option("--schema", default=None, help="Match this object_owner (schema rule)."),
            click.option("--table", default=None, help="Match this object_name (needs --schema)."),
            click.option("--tag", default=None, help="NULL, 'NOT NULL' or a tag value in hex."),
            click.option(
                "--condition",
                default=None,
                help="Subset rule (positive table rule): a condition on column values, "
                "e.g. \"REGION = 'EU'\".",
            ),
            click.option(
                "--transformations",
                "transformations_json",
                default=None,
                metavar="JSON",
                help="Rule transformations: a JSON list of lakeapply.yml steps, e.g. "
                '\'[{"rename_schema": {"from": "HR", "to": "HR2"}}]\'.',
            ),
        )
    ):
        function = option(function)
    return function


def _rule(
    source_database: str | None,
    schema: str | None,
    table: str | None,
    tag: str | None,
    condition: str | None = None,
    transformations_json: str | None = None,
) -> Any:
    fields: dict[str, Any] = {
        "source_database": source_database,
        "schema": schema,
        "table": table,
        "tag": tag,
        "condition": condition,
    }
    if transformations_json is not None:
        try:
            fields["transformations"] = json.loads(transformations_json)
        except json.JSONDecodeError as error:
            raise click.BadParameter(f"not JSON: {error}", param_hint="--transformations") from None
    return {name: value for name, value in fields.items() if value is not None}


@admin_group.command("add-rule")
@click.argument("apply_name")
@click.argument("rule_set", type=click.Choice(["positive", "negative"], case_sensitive=False))
@_rule_options
@click.pass_obj
def add_rule_command(
    obj: CliContext,
    apply_name: str,
    rule_set: str,
    source_database: str | None,
    schema: str | None,
    table: str | None,
    tag: str | None,
    condition: str | None,
    transformations_json: str | None,
) -> None:
    """ADD_GLOBAL/SCHEMA/TABLE/SUBSET_RULES: add a rule to the positive or negative rule set."""
    rule = _rule(source_database, schema, table, tag, condition, transformations_json)
    _admin_call(obj, "add_rule", apply_name, rule_set, rule)


@admin_group.command("remove-rule")
@click.argument("apply_name")
@click.argument("rule_set", type=click.Choice(["positive", "negative"], case_sensitive=False))
@_rule_options
@click.option("--all", "every_rule", is_flag=True, help="Remove every rule of the set.")
@click.pass_obj
def remove_rule_command(
    obj: CliContext,
    apply_name: str,
    rule_set: str,
    source_database: str | None,
    schema: str | None,
    table: str | None,
    tag: str | None,
    condition: str | None,
    transformations_json: str | None,
    every_rule: bool,
) -> None:
    """REMOVE_RULE: remove one rule (the same options as add-rule), or --all of the set."""
    rule = (
        None
        if every_rule
        else _rule(source_database, schema, table, tag, condition, transformations_json)
    )
    if rule == {}:
        raise click.UsageError("name the rule (--source-database/--schema/--table/--tag) or --all")
    _admin_call(obj, "remove_rule", apply_name, rule_set, rule)


@admin_group.command("add-transformation")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.option("--delete-column", default=None, metavar="COLUMN")
@click.option("--rename-column", default=None, metavar="FROM:TO")
@click.option("--keep-columns", default=None, metavar="A,B,...")
@click.option("--add-column", default=None, metavar="COLUMN")
@click.option("--value", default=None, help="--add-column: a constant value.")
@click.option("--expression", default=None, help="--add-column: Spark SQL over the LCR.")
@click.option("--data-type", default=None, help="--add-column: the value's data_type.")
@click.option("--value-type", type=click.Choice(["NEW", "OLD", "*"]), default=None)
@click.option("--step", type=click.IntRange(min=1), default=None, help="1-based; default: last.")
@click.pass_obj
def add_transformation_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    delete_column: str | None,
    rename_column: str | None,
    keep_columns: str | None,
    add_column: str | None,
    value: str | None,
    expression: str | None,
    data_type: str | None,
    value_type: str | None,
    step: int | None,
) -> None:
    """DELETE_COLUMN / RENAME_COLUMN / ADD_COLUMN / KEEP_COLUMNS (operation ADD) on a table."""
    kinds = [k for k in (delete_column, rename_column, keep_columns, add_column) if k is not None]
    if len(kinds) != 1:
        raise click.UsageError(
            "give exactly one of --delete-column, --rename-column, --keep-columns, --add-column"
        )
    transformation: dict[str, Any] = {}
    if delete_column is not None:
        transformation["delete_column"] = delete_column
    elif rename_column is not None:
        source, colon, target = rename_column.partition(":")
        if not colon:
            raise click.UsageError("--rename-column takes FROM:TO")
        transformation["rename_column"] = {"from": source, "to": target}
    elif keep_columns is not None:
        transformation["keep_columns"] = _columns(keep_columns)
    else:
        added = {"column": add_column, "value": value, "expression": expression}
        added["data_type"] = data_type
        transformation["add_column"] = {k: v for k, v in added.items() if v is not None}
    if value_type is not None:
        transformation["value_type"] = value_type
    _admin_call(
        obj,
        "add_transformation",
        apply_name,
        source_database,
        object_name,
        transformation,
        step,
    )


@admin_group.command("remove-transformation")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.option("--step", type=click.IntRange(min=1), default=None, help="Default: every step.")
@click.pass_obj
def remove_transformation_command(
    obj: CliContext, apply_name: str, source_database: str, object_name: str, step: int | None
) -> None:
    """The same procedures with operation REMOVE: one step, or every step of the table."""
    _admin_call(obj, "remove_transformation", apply_name, source_database, object_name, step)


@admin_group.command("add-rule-transformation")
@click.argument("apply_name")
@click.argument("rule_number", type=click.IntRange(min=1))
@click.argument("step_json", metavar="STEP")
@click.option("--step", type=click.IntRange(min=1), default=None, help="1-based; default: last.")
@click.pass_obj
def add_rule_transformation_command(
    obj: CliContext, apply_name: str, rule_number: int, step_json: str, step: int | None
) -> None:
    """A rule-based transformation (RENAME_SCHEMA, RENAME_TABLE, the column procedures) on
    positive rule RULE_NUMBER (DBA_STREAMS_RULES' <apply>_POSITIVE_<n>). STEP is one
    lakeapply.yml step as JSON, e.g. '{"rename_schema": {"from": "HR", "to": "HR2"}}'."""
    try:
        transformation = json.loads(step_json)
    except json.JSONDecodeError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="STEP") from None
    if not isinstance(transformation, dict):
        raise click.BadParameter("one step: a JSON object", param_hint="STEP")
    _admin_call(obj, "add_rule_transformation", apply_name, rule_number, transformation, step)


@admin_group.command("remove-rule-transformation")
@click.argument("apply_name")
@click.argument("rule_number", type=click.IntRange(min=1))
@click.option("--step", type=click.IntRange(min=1), default=None, help="Default: every step.")
@click.pass_obj
def remove_rule_transformation_command(
    obj: CliContext, apply_name: str, rule_number: int, step: int | None
) -> None:
    """The same with operation REMOVE: one step, or every step of the positive rule."""
    _admin_call(obj, "remove_rule_transformation", apply_name, rule_number, step)


@admin_group.command("set-value-dependency")
@click.argument("apply_name")
@click.argument("dependency_name")
@click.argument("object_name")
@click.argument("columns", required=False)
@click.option("--remove", is_flag=True, help="Remove the object from the dependency.")
@click.pass_obj
def set_value_dependency_command(
    obj: CliContext,
    apply_name: str,
    dependency_name: str,
    object_name: str,
    columns: str | None,
    remove: bool,
) -> None:
    """SET_VALUE_DEPENDENCY: OBJECT_NAME (OWNER.NAME) COL1,COL2 in the value dependency."""
    if (columns is None) != remove:
        raise click.UsageError("give COLUMNS, or --remove without them")
    _admin_call(
        obj,
        "set_value_dependency",
        apply_name,
        dependency_name,
        object_name,
        None if remove else _columns(columns or ""),
    )


@admin_group.command("create-object-dependency")
@click.argument("apply_name")
@click.argument("object_name")
@click.argument("parent_object_name")
@click.pass_obj
def create_object_dependency_command(
    obj: CliContext, apply_name: str, object_name: str, parent_object_name: str
) -> None:
    """CREATE_OBJECT_DEPENDENCY: OBJECT_NAME (child) depends on PARENT_OBJECT_NAME."""
    _admin_call(obj, "create_object_dependency", apply_name, object_name, parent_object_name)


@admin_group.command("drop-object-dependency")
@click.argument("apply_name")
@click.argument("object_name")
@click.argument("parent_object_name")
@click.pass_obj
def drop_object_dependency_command(
    obj: CliContext, apply_name: str, object_name: str, parent_object_name: str
) -> None:
    """DROP_OBJECT_DEPENDENCY."""
    _admin_call(obj, "drop_object_dependency", apply_name, object_name, parent_object_name)


@main.command()
@click.option(
    "--command",
    "dbt_command",
    type=click.Choice(["build", "run", "test"]),
    default="build",
    show_default=True,
    help="The dbt command to run in-process.",
)
@click.option(
    "--show",
    multiple=True,
    default=("DBA_APPLY_PROGRESS", "DBA_APPLY_ERROR"),
    show_default=True,
    help="Gold views to print, the way SQL*Plus shows them.",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Print every column of the views (default: the columns that fit 80 characters).",
)
@click.pass_obj
def gold(obj: CliContext, dbt_command: str, show: tuple[str, ...], wide: bool) -> None:
    """Build the gold dbt views (DBA_APPLY_PROGRESS, DBA_APPLY_ERROR, ...) in-process."""
    from lakeapply.gold.runner import SUMMARY_COLUMNS, render_sqlplus, run_gold

    spark = _spark(obj)
    with progress_steps(f"dbt {dbt_command}"):
        report = run_gold(
            spark, obj.warehouse.resolve(), obj.catalog_prefix, dbt_command, catalog=obj.catalog
        )
    click.echo(report.summary())
    for view in show:
        columns = None if wide else SUMMARY_COLUMNS.get(view.strip().lower())
        click.echo(
            render_sqlplus(spark, obj.catalog_prefix, view, catalog=obj.catalog, select=columns)
        )


def _stream_settings(
    obj: CliContext,
    kind: str,
    name: str,
    trigger: str,
    checkpoint: str | None,
    max_batches: int | None,
) -> Any:
    from lakeapply.runtime.streaming import StreamSettings, default_checkpoint, parse_trigger

    location = checkpoint or str(default_checkpoint(obj.warehouse, _catalog(obj), kind, name))
    return StreamSettings(parse_trigger(trigger), location, max_batches)


def _check_stream_options(
    stream: bool, trigger: str, checkpoint: str | None, max_batches: int | None
) -> None:
    """Before Spark starts: the stream options need --stream, and the trigger must parse."""
    from lakeapply.runtime.streaming import parse_trigger

    if not stream and (trigger != "available-now" or checkpoint or max_batches):
        raise click.UsageError("--trigger, --checkpoint and --max-batches need --stream")
    parse_trigger(trigger)


def _describe_ingest(report: Any) -> str:
    released = (
        f"; {report.released_commits} waiting END event(s) released as COMMITs"
        if report.released_commits
        else ""
    )
    return (
        f"ingest batch {report.batch_id}{' (resumed)' if report.resumed else ''}: "
        f"{report.lines} lines from {len(report.files)} files -> {report.bronze_rows} bronze, "
        f"{report.quarantined_rows} quarantined{released}"
    )


def _stream_ingest(
    obj: CliContext, landing: Path, capture_format: Any, settings_args: tuple[Any, ...]
) -> None:
    from lakeapply.runtime.streaming import stream_ingest

    spark = _spark(obj)
    settings = _stream_settings(obj, "ingest", str(landing.resolve()), *settings_args)

    def report(result: Any) -> None:
        if result.batch_id is not None:
            log_line(_describe_ingest(result))

    with progress_steps(f"streaming ingest ({settings.trigger})") as step:
        done = stream_ingest(
            spark,
            _catalog(obj),
            landing,
            settings,
            step,
            on_report=report,
            capture_format=capture_format,
        )
    click.echo(
        f"stream stopped ({done.stopped_by or settings.trigger}): {len(done.micro_batches)} "
        f"micro-batches, {sum(r.lines for r in done.ingest_reports)} lines ingested"
    )


def _stream_apply(obj: CliContext, apply_name: str | None, settings_args: tuple[Any, ...]) -> None:
    from lakeapply.runtime.streaming import stream_apply

    spark = _spark(obj)
    apply_settings = _apply_settings(spark, _catalog(obj), apply_name)
    settings = _stream_settings(obj, "apply", apply_settings.apply_name, *settings_args)
    with progress_steps(
        f"streaming apply {apply_settings.apply_name} ({settings.trigger})"
    ) as step:
        done = stream_apply(
            spark,
            _catalog(obj),
            apply_settings,
            settings,
            step,
            on_report=lambda cycle: log_line(_describe_cycle(cycle)),
        )
    click.echo(
        f"stream stopped ({done.stopped_by or settings.trigger}): {len(done.micro_batches)} "
        f"micro-batches, {len(done.cycle_reports)} cycles"
    )


def _describe_cycle(report: Any) -> str:
    return (
        f"{report.apply_name} cycle {report.cycle_id}{' (resumed)' if report.resumed else ''}: "
        f"{report.applied} applied, {report.ignored} ignored, {report.errors} errors, "
        f"{report.rolled_back} rolled back; low watermarks {report.low_watermarks}"
    )
