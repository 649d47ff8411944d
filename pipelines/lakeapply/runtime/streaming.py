"""``lakeapply ingest --stream`` and ``lakeapply apply --stream``: Structured Streaming drivers.

The stream is a *wake-up*, never a second code path. Each micro-batch calls the one batch
function (``bronze.ingest.ingest`` or ``silver.engine.run_apply``) through ``foreachBatch``, and
that function's own log decides what is read and written: the ingest log's byte ranges and
PLANNED batches, the apply's recorded cycle plans and progress. Both are already exactly once on
replay (plan recorded first, every Delta write idempotent: ``silver/cycle_state.py``), so the
streaming checkpoint only has to remember how far the wake-up source was read: a micro-batch
that Spark replays after a crash (its offsets written, its commit not) calls the batch function
again, which resumes the unfinished batch or cycle and skips what already committed.

Wake-up sources:

* **apply**: the Delta table ``<prefix>_bronze.ingest_log``, read as a Delta stream. The engine
  plans by the ingest log's COMMITTED batches, and an ingest writes that row after its LCRs, so
  waking on the log (not on ``bronze.lcr``) never runs a cycle that misses the batch that woke it.
* **ingest**: ``lakeapply_landing``, a Python streaming data source whose offset is a digest of
  the landing folder's listing (path, size, mtime of every ``.jsonl``/``.jsonl.gz``). Spark's own
  file source only notices new file *names*; lakeapply's landing files grow line by line, which
  changes the listing and so wakes the ingest, which reads exactly the new complete lines.

On a restart (the checkpoint exists) the batch function runs once before the query starts: a
wake-up consumed by a micro-batch that was stopped (SIGINT, ``--max-batches``) or that failed
(an ABORTED apply, later started again with START_APPLY) must not wait for the next change.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import FrameType
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from lakeapply.bronze.formats import CaptureFormat, LandingFormats
from lakeapply.bronze.ingest import (
    LANDING_SUFFIXES,
    IngestReport,
    ensure_bronze_tables,
    ingest,
)
from lakeapply.bronze.tables import INGEST_LOG_TABLE
from lakeapply.errors import ConfigurationError, LakeapplyError
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver.cycle_state import CycleReport
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import ensure_apply_tables
from lakeapply.silver.settings import ApplySettings

log = logging.getLogger(__name__)

LANDING_SOURCE = "lakeapply_landing"
QUERY_POLL_SECONDS = 1  # how often the driver loop looks at signals and --max-batches
Progress = Callable[[str], None]


class StreamingError(LakeapplyError):
    """A streaming query cannot start or stopped with an error outside lakeapply's own."""


class TriggerKind(Enum):
    AVAILABLE_NOW = "available-now"
    PROCESSING_TIME = "processing-time"


_INTERVAL = re.compile(
    r"\s*(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|s|minutes?|min|m|hours?|h)\s*"
)


@dataclass(frozen=True)
class StreamTrigger:
    kind: TriggerKind
    interval: str | None = None  # processing-time only, Spark's form ("30 seconds")

    def __str__(self) -> str:
        if self.kind is TriggerKind.AVAILABLE_NOW:
            return str(self.kind.value)
        return f"{self.kind.value}={self.interval}"


def parse_trigger(text: str) -> StreamTrigger:
    """``available-now`` or ``processing-time=<interval>`` (``30 seconds``, ``500 ms``, ``2m``)."""
    kind, _, interval = text.strip().partition("=")
    kind = kind.strip().lower()
    if kind == TriggerKind.AVAILABLE_NOW.value and not interval:
        return StreamTrigger(TriggerKind.AVAILABLE_NOW)
    if kind == TriggerKind.PROCESSING_TIME.value:
        match = _INTERVAL.fullmatch(interval)
        if match is None:
            raise ConfigurationError(
                f"trigger {text!r}: processing-time needs an interval such as "
                "'processing-time=30 seconds' (units: ms, seconds, minutes, hours)"
            )
        number, unit = match.groups()
        if float(number) <= 0:
            raise ConfigurationError(f"trigger {text!r}: the interval must be positive")
        spark_unit = {"m": "minutes", "h": "hours", "s": "seconds", "ms": "milliseconds"}
        unit = spark_unit.get(unit, unit if unit.endswith("s") else f"{unit}s")
        unit = {"mins": "minutes", "min": "minutes"}.get(unit, unit)
        return StreamTrigger(TriggerKind.PROCESSING_TIME, f"{number} {unit}")
    raise ConfigurationError(
        f"trigger {text!r}: use 'available-now' or 'processing-time=<interval>'"
    )


@dataclass(frozen=True)
class StreamSettings:
    """How a stream runs: its trigger, its checkpoint folder and (for tests and bounded runs)
    how many micro-batches to run before stopping."""

    trigger: StreamTrigger
    checkpoint: str
    max_batches: int | None = None

    def __post_init__(self) -> None:
        if self.max_batches is not None and self.max_batches < 1:
            raise ConfigurationError(f"max batches must be at least 1, not {self.max_batches}")


def default_checkpoint(warehouse: Path, catalog: Catalog, kind: str, name: str) -> Path:
    """``<warehouse>/_checkpoints/<prefix>/<kind>/<name>-<digest>``: one folder per catalog
    prefix and landing folder or apply process. Names are data (an apply name may hold any
    character Oracle accepts in a quoted identifier), so only a sanitized part of the name is
    used, and a digest of the whole name keeps two names apart."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:40] or "stream"
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return warehouse.resolve() / "_checkpoints" / catalog.prefix / kind / f"{safe}-{digest}"


@dataclass
class StreamReport:
    """What one run of a stream did: its micro-batches (Spark's batch ids; a replayed one appears
    with the id it had) and the reports of the batch function, the restart catch-up first."""

    micro_batches: list[int] = field(default_factory=list)
    ingest_reports: list[IngestReport] = field(default_factory=list)
    cycle_reports: list[CycleReport] = field(default_factory=list)
    stopped_by: str | None = None  # "signal", "max-batches"; None: the trigger ended it


# ------------------------------------------------------------------------------------------
# The landing-folder wake-up source
# ------------------------------------------------------------------------------------------


def landing_listing(landing: Path) -> list[tuple[str, int, int]]:
    """(absolute path, size, mtime_ns) of every landing file, sorted: what the ingest plans by."""
    listing = []
    for path in sorted(landing.rglob("*")):
        if path.name.endswith(LANDING_SUFFIXES):
            try:
                stat = path.stat()
            except FileNotFoundError:  # removed while listing
                continue
            if path.is_file():
                listing.append((str(path.resolve()), stat.st_size, stat.st_mtime_ns))
    return listing


def listing_offset(landing: Path) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps(landing_listing(landing)).encode()).hexdigest()
    return {"listing": digest}


class LandingListingReader(SimpleDataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are listing digests: a new or grown file is a new offset, hence a micro-batch.
    The rows (the current listing) only inform; the ingest reads the files itself."""

    def __init__(self, landing: Path) -> None:
        self.landing = landing
        self.target: dict[str, Any] | None = None

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's name)
        return {"listing": None}  # differs from every digest: micro-batch 0 always runs

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark's name)
        # Available-now ends at the listing seen when the query starts (the ingest of that
        # micro-batch still reads whatever complete lines the files hold when it runs).
        self.target = listing_offset(self.landing)

    def read(self, start: dict[str, Any]) -> tuple[Iterator[tuple[Any, ...]], dict[str, Any]]:
        end = self.target if self.target is not None else listing_offset(self.landing)
        if end == start:
            return iter(()), start
        return iter(landing_listing(self.landing)), end

    def readBetweenOffsets(  # noqa: N802 (Spark's name)
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Iterator[tuple[Any, ...]]:
        return iter(landing_listing(self.landing))


class LandingListingSource(DataSource):
    """``spark.readStream.format("lakeapply_landing").load(<landing folder>)``."""

    @classmethod
    def name(cls) -> str:
        return LANDING_SOURCE

    def schema(self) -> str:
        return "source_file string, size long, modified_ns long"

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:  # noqa: N802
        path = self.options.get("path")
        if not path:
            raise StreamingError(f"{LANDING_SOURCE}: no landing folder given")
        return LandingListingReader(Path(str(path)))


# ------------------------------------------------------------------------------------------
# Running a query
# ------------------------------------------------------------------------------------------


class _StopRequested(Exception):
    """Raised by a micro-batch that starts after a stop was requested: it stays uncommitted."""


class _QueryDriver:
    """Runs one foreachBatch query to its end, stopping it between micro-batches on SIGINT,
    SIGTERM or ``max_batches``, and re-raising the micro-batch's own exception (so a
    LakeapplyError keeps its message and exit code through Spark's wrapping)."""

    def __init__(self, settings: StreamSettings, work: Callable[[int], None]) -> None:
        self.settings = settings
        self.work = work
        self.done: list[int] = []
        self.stop_reason: str | None = None
        self.failure: BaseException | None = None
        self.in_batch = threading.Event()

    def for_each_batch(self, frame: DataFrame, batch_id: int) -> None:
        if self.stop_reason is not None:
            self.failure = _StopRequested(self.stop_reason)
            raise self.failure
        self.in_batch.set()
        try:
            self.work(batch_id)
        except BaseException as error:
            self.failure = error
            raise
        finally:
            self.in_batch.clear()
        self.done.append(batch_id)
        if self.settings.max_batches is not None and len(self.done) >= self.settings.max_batches:
            self.stop_reason = "max-batches"

    def run(self, stream: DataFrame, progress: Progress) -> None:
        writer = stream.writeStream.foreachBatch(self.for_each_batch).option(
            "checkpointLocation", self.settings.checkpoint
        )
        trigger = self.settings.trigger
        if trigger.kind is TriggerKind.AVAILABLE_NOW:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=trigger.interval or "0 seconds")
        with _stop_on_signals(self._request_stop):
            query = writer.start()
            progress(f"stream started ({trigger}, checkpoint {self.settings.checkpoint})")
            self._wait(query)

    def _request_stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    def _wait(self, query: StreamingQuery) -> None:
        try:
            while not query.awaitTermination(QUERY_POLL_SECONDS):
                # Stop between micro-batches: a batch in flight finishes (or, if it starts
                # meanwhile, raises _StopRequested and stays uncommitted for the next run).
                if self.stop_reason is not None and not self.in_batch.is_set():
                    query.stop()
        except Exception as error:
            if isinstance(self.failure, _StopRequested):
                return
            if self.failure is not None:
                raise self.failure from error
            raise StreamingError(f"streaming query failed: {error}") from error
        if self.failure is not None and not isinstance(self.failure, _StopRequested):
            raise self.failure


class _stop_on_signals:  # noqa: N801 (used as a context manager)
    """SIGINT/SIGTERM ask the query to stop between micro-batches (main thread only: Python
    installs signal handlers there; elsewhere, e.g. under a test runner's thread, nothing)."""

    def __init__(self, request_stop: Callable[[str], None]) -> None:
        self.request_stop = request_stop
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGINT, signal.SIGTERM):
            self.previous[number] = signal.signal(number, self._handle)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        log.warning("signal %d: stopping the stream after the current micro-batch", number)
        self.request_stop("signal")

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def _checkpoint_exists(checkpoint: str) -> bool:
    # A local path; a remote one (a Databricks volume, dbfs:, s3:) is treated as existing,
    # which costs at most one batch call that finds nothing to do.
    if re.match(r"^[a-z][a-z0-9+.-]*:", checkpoint) and not checkpoint.startswith("file:"):
        return True
    local = checkpoint.removeprefix("file:")
    return os.path.isdir(os.path.join(local, "offsets"))


# ------------------------------------------------------------------------------------------
# The two streams
# ------------------------------------------------------------------------------------------


def stream_ingest(
    spark: SparkSession,
    catalog: Catalog,
    landing: Path,
    settings: StreamSettings,
    progress: Progress = lambda _: None,
    on_report: Callable[[IngestReport], None] = lambda _: None,
    crash_after: str | None = None,
    capture_format: CaptureFormat | LandingFormats | None = None,
) -> StreamReport:
    """Ingest the landing folder as a stream: one ``ingest`` per micro-batch of the landing
    listing source. ``crash_after`` (tests) is passed to the first ingest of the first
    micro-batch."""
    landing = landing.resolve()
    if not landing.is_dir():
        raise StreamingError(f"landing folder {landing} does not exist or is not a folder")
    ensure_bronze_tables(spark, catalog)
    spark.dataSource.register(LandingListingSource)
    report = StreamReport()
    crash = [crash_after]

    def ingest_once(batch_id: int | None) -> None:
        label = "restart catch-up" if batch_id is None else f"micro-batch {batch_id}"
        result = ingest(
            spark,
            catalog,
            landing,
            progress=lambda step: progress(f"{label}: {step}"),
            crash_after=crash.pop() if crash else None,
            capture_format=capture_format or CaptureFormat(),
        )
        report.ingest_reports.append(result)
        on_report(result)

    if _checkpoint_exists(settings.checkpoint):
        ingest_once(None)
    stream = spark.readStream.format(LANDING_SOURCE).load(str(landing))
    driver = _QueryDriver(settings, ingest_once)
    driver.run(stream, progress)
    report.micro_batches = driver.done
    report.stopped_by = driver.stop_reason
    return report


def stream_apply(
    spark: SparkSession,
    catalog: Catalog,
    apply_settings: ApplySettings,
    settings: StreamSettings,
    progress: Progress = lambda _: None,
    on_report: Callable[[CycleReport], None] = lambda _: None,
    crash_after: str | None = None,
) -> StreamReport:
    """Apply as a stream: ``run_apply`` per micro-batch of the ingest log's Delta stream. An
    apply that aborts raises ApplyAbortedError from its micro-batch, which stays uncommitted:
    after START_APPLY the restarted stream carries on from there. ``crash_after`` (tests) is
    passed to the first cycle of the first micro-batch."""
    ensure_apply_tables(spark, catalog)
    report = StreamReport()
    crash = [crash_after]

    def apply_once(batch_id: int | None) -> None:
        label = "restart catch-up" if batch_id is None else f"micro-batch {batch_id}"
        cycles = run_apply(
            spark,
            catalog,
            apply_settings,
            progress=lambda step: progress(f"{label}: {step}"),
            crash_after=crash.pop() if crash else None,
        )
        for cycle in cycles:
            report.cycle_reports.append(cycle)
            on_report(cycle)
        aborted = next((cycle for cycle in cycles if cycle.aborted), None)
        if aborted is not None:
            from lakeapply.errors import ApplyAbortedError

            raise ApplyAbortedError(
                f"apply process {aborted.apply_name} ABORTED in cycle {aborted.cycle_id} "
                f"({aborted.errors} error transaction(s), see DBA_APPLY_ERROR): fix the cause, "
                f"then `lakeapply admin start-apply {aborted.apply_name}` and restart the stream"
            )

    if _checkpoint_exists(settings.checkpoint):
        apply_once(None)
    stream = (
        spark.readStream.format("delta")
        # The log is append-only; should anything rewrite it (an OPTIMIZE with data change, a
        # manual DELETE), those commits are not wake-ups.
        .option("skipChangeCommits", "true")
        .table(catalog.bronze_table(INGEST_LOG_TABLE))
    )
    driver = _QueryDriver(settings, apply_once)
    driver.run(stream, progress)
    report.micro_batches = driver.done
    report.stopped_by = driver.stop_reason
    return report
