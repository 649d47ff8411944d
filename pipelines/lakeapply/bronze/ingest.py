"""Ingest landing files into bronze, exactly once.

A run is one *ingest batch*:

1. **Plan** (driver, file metadata only): for every landing file that is new or has grown, the byte
   range still to read, ``[start_offset, size_bound)``. A file whose ingested bytes changed (its
   fingerprint in the log no longer matches: rewritten in place) is read again from offset 0 as
   a new *file version*, and the log says why. The plan is appended to the ingest log
   (phase PLANNED) before any data is written. If the previous batch was planned but never
   committed (a crash), that plan is re-executed as it was instead.
2. **Read and classify** (Spark): the planned byte ranges are read by Python workers in bounded
   blocks, one file per task (``.gz`` files are decompressed as streams), split into lines with
   their line numbers and byte offsets, parsed against the contract. Only complete lines count: bytes after the last newline stay for the next run, like
   an Extract re-reading from its last complete block. A file that cannot be decompressed becomes
   one quarantine row (see ``bronze.lines``): it never stops the other files.
3. **Write**: valid LCRs to ``bronze.lcr``, the rest to ``bronze.quarantine``, each an idempotent
   Delta append (``txnAppId``/``txnVersion`` = the batch id), so re-running a crashed batch writes
   nothing twice.
4. **Commit**: a COMMITTED row per file, with the new end offset, closes the batch.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial, reduce
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.formats import (
    ADAPTER_COLUMNS,
    DEBEZIUM_JSON,
    CaptureFormat,
    LandingFormats,
    adapt_batches,
)
from lakeapply.bronze.lines import (
    FileLines,
    LandingLine,
    binary_opener,
    fingerprint,
    fingerprint_length,
    fingerprint_of_file,
)
from lakeapply.bronze.tables import (
    INGEST_LOG_TABLE,
    LCR_TABLE,
    QUARANTINE_TABLE,
    ingest_log_table_schema,
    lcr_table_schema,
    quarantine_table_schema,
)
from lakeapply.bronze.validate import classify_lines, lcr_kind
from lakeapply.contract.lcr import LCR_FIELDS, bronze_column_name
from lakeapply.errors import IngestError
from lakeapply.runtime.catalog import (
    Catalog,
    TableToCreate,
    compact_small_files,
    compaction_due,
    ensure_database,
    ensure_delta_tables,
)
from lakeapply.runtime.delta_state import log_states_computed

log = logging.getLogger(__name__)

LANDING_SUFFIXES = (".jsonl", ".jsonl.gz")
TXN_APP_ID = "lakeapply-ingest"
LCR_LINES = CaptureFormat()  # the default: lakeapply's own LCR lines

ProgressCallback = Callable[[str], None]


@dataclass(frozen=True)
class PlannedFile:
    source_file: str  # absolute path
    compressed: bool
    start_offset: int
    size_bound: int
    first_line_number: int
    # Which content of the file this is: 1, then +1 each time it is found rewritten in place.
    file_version: int = 1
    modified_ns: int | None = None  # the file's mtime when planned
    # The fingerprint of what is ingested before this batch ([0, start_offset); compressed: the
    # whole file). It is the file's fingerprint after the batch when the batch adds no line.
    planned_fingerprint: str | None = None
    note: str | None = None  # why the file is (re-)read, when it is not plain new or grown
    capture_format: CaptureFormat = LCR_LINES  # what the file holds (logged with the plan)


@dataclass(frozen=True)
class FileResult:
    source_file: str
    end_offset: int
    # Complete lines read. lcr-json: bronze_rows + quarantined_rows (a file that cannot be read
    # counts as one). A capture format's line lands one or more LCRs, or one quarantine row.
    lines: int
    bronze_rows: int
    quarantined_rows: int
    file_version: int = 1
    note: str | None = None


@dataclass(frozen=True)
class IngestReport:
    batch_id: int | None  # None: nothing new to ingest
    resumed: bool
    files: tuple[FileResult, ...]
    # Debezium END events quarantined by an earlier batch whose COMMIT landed in this one (their
    # change events have all landed now); not counted in ``files``, whose lines are this batch's.
    released_commits: int = 0

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def bronze_rows(self) -> int:
        return sum(f.bronze_rows for f in self.files)

    @property
    def quarantined_rows(self) -> int:
        return sum(f.quarantined_rows for f in self.files)


@dataclass(frozen=True)
class FileState:
    """What the committed batches say about one landing file (its latest version)."""

    end_offset: int  # the ingested prefix ends here (after the last complete line)
    lines: int  # lines of the latest version ingested so far
    size_bound: int  # the file's size when last planned
    file_version: int
    last_batch_id: int
    modified_ns: int | None  # None: logged before mtimes were recorded
    fingerprint: str | None  # None: logged before fingerprints were recorded


class SimulatedCrash(RuntimeError):
    """Raised by tests (``crash_after``) to stop an ingest between two of its writes."""


def ensure_bronze_tables(spark: SparkSession, catalog: Catalog) -> set[str]:
    """Create the bronze tables that do not exist; the names of those created."""
    ensure_database(spark, catalog.database(catalog.bronze))
    log_table = catalog.bronze_table(INGEST_LOG_TABLE)
    created = ensure_delta_tables(
        spark,
        [
            TableToCreate(catalog.bronze_table(LCR_TABLE), lcr_table_schema(), keep_not_null=True),
            TableToCreate(
                catalog.bronze_table(QUARANTINE_TABLE),
                quarantine_table_schema(),
                keep_not_null=True,
            ),
            TableToCreate(log_table, ingest_log_table_schema(), keep_not_null=True),
        ],
    )
    if log_table not in created:
        _add_missing_columns(spark, log_table, ingest_log_table_schema())
    return created


def _add_missing_columns(spark: SparkSession, table: str, schema: T.StructType) -> None:
    """Bring a table created by an older lakeapply up to ``schema`` (new columns are nullable;
    the rows written before hold NULL in them)."""
    existing = set(spark.table(table).columns)
    missing = [f for f in schema.fields if f.name not in existing]
    if missing:
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({columns})")


def list_landing_files(landing: Path) -> list[Path]:
    if not landing.is_dir():
        raise IngestError(f"landing folder {landing} does not exist or is not a folder")
    return sorted(
        path.resolve()
        for path in landing.rglob("*")
        if path.is_file() and path.name.endswith(LANDING_SUFFIXES)
    )


def _file_states(spark: SparkSession, catalog: Catalog) -> dict[str, FileState]:
    """source_file -> its state over the committed batches (rows of older lakeapply versions have
    no file_version: they are version 1)."""
    rows = (
        spark.table(catalog.bronze_table(INGEST_LOG_TABLE))
        .where(F.col("phase") == "COMMITTED")
        .withColumn("file_version", F.coalesce(F.col("file_version"), F.lit(1)))
        .groupBy("source_file", "file_version")
        .agg(
            F.sum("lines").alias("lines"),
            F.max_by(
                F.struct("batch_id", "end_offset", "size_bound", "modified_ns", "fingerprint"),
                "batch_id",
            ).alias("last"),
        )
        .collect()
    )
    states: dict[str, FileState] = {}
    for r in sorted(rows, key=lambda r: (r.source_file, r.file_version)):  # latest version wins
        states[r.source_file] = FileState(
            end_offset=r.last.end_offset,
            lines=r.lines,
            size_bound=r.last.size_bound,
            file_version=r.file_version,
            last_batch_id=r.last.batch_id,
            modified_ns=r.last.modified_ns,
            fingerprint=r.last.fingerprint,
        )
    return states


def _unfinished_batch(
    spark: SparkSession, catalog: Catalog, formats: LandingFormats, landing: Path
) -> tuple[int, list[PlannedFile]] | None:
    """The last batch, if it was planned but never committed. Each file keeps the capture
    format it was planned with; one planned before formats were logged takes ``formats``'."""
    log_table = spark.table(catalog.bronze_table(INGEST_LOG_TABLE))
    last = log_table.agg(F.max("batch_id")).collect()[0][0]
    if last is None:
        return None
    phases = {r.phase for r in log_table.where(F.col("batch_id") == last).select("phase").collect()}
    if "COMMITTED" in phases:
        return None
    planned = (
        log_table.where((F.col("batch_id") == last) & (F.col("phase") == "PLANNED"))
        .orderBy("source_file")
        .collect()
    )
    return last, [
        PlannedFile(
            r.source_file,
            r.compressed,
            r.start_offset,
            r.size_bound,
            r.first_line_number,
            file_version=r.file_version or 1,
            modified_ns=r.modified_ns,
            planned_fingerprint=r.fingerprint,
            note=r.note,
            capture_format=(
                CaptureFormat(r.capture_format, r.capture_source_database)
                if r.capture_format is not None
                else formats.of(r.source_file, landing)
            ),
        )
        for r in planned
    ]


def plan_batch(files: list[Path], states: dict[str, FileState]) -> list[PlannedFile]:
    """Which bytes of which files are new. Reads file metadata, and for a file that changed since
    its last batch the head and tail of its ingested prefix (at most 128 KiB): nothing else.

    A file is skipped while its size and mtime are what the last batch saw. Otherwise its
    ingested prefix is compared with the fingerprint of what was ingested: unchanged, a plain file
    has grown (read on from the end offset) or was only touched (skipped); changed, the file was
    rewritten in place and is read whole again as a new version (its lines land again with their
    new line numbers; silver, not bronze, deduplicates a transaction seen twice).
    """
    planned = []
    for path in files:
        stat = path.stat()
        size, modified_ns = stat.st_size, stat.st_mtime_ns
        compressed = path.name.endswith(".gz")
        state = states.get(str(path))
        if state is None:
            planned.append(
                PlannedFile(
                    str(path),
                    compressed,
                    0,
                    size,
                    1,
                    modified_ns=modified_ns,
                    planned_fingerprint=_whole_file_fingerprint(path, size)
                    if compressed
                    else fingerprint(b"", 0),
                )
            )
            continue
        if size == state.size_bound and modified_ns == state.modified_ns:
            continue  # untouched (at most an incomplete last line we already saw)
        if state.modified_ns is None and size == state.size_bound:
            continue  # logged before mtimes were recorded: the size is all there is to compare
        rewritten = _rewrite_of(path, size, compressed, state)
        if rewritten is not None:
            version = state.file_version + 1
            note = (
                f"{rewritten} since batch {state.last_batch_id}: "
                f"read again from offset 0 as version {version}"
            )
            log.warning("%s: %s", path, note)
            planned.append(
                PlannedFile(
                    str(path),
                    compressed,
                    0,
                    size,
                    1,
                    file_version=version,
                    modified_ns=modified_ns,
                    planned_fingerprint=_whole_file_fingerprint(path, size)
                    if compressed
                    else fingerprint(b"", 0),
                    note=note,
                )
            )
        elif not compressed and size > state.size_bound:
            planned.append(
                PlannedFile(
                    str(path),
                    compressed,
                    state.end_offset,
                    size,
                    state.lines + 1,
                    file_version=state.file_version,
                    modified_ns=modified_ns,
                    planned_fingerprint=state.fingerprint,
                )
            )
        # else: touched only (mtime changed, content the same): nothing new to read.
    return planned


def _whole_file_fingerprint(path: Path, size: int) -> str | None:
    return fingerprint_of_file(path, size)


def _rewrite_of(path: Path, size: int, compressed: bool, state: FileState) -> str | None:
    """Why the file is not the one its last batch read (it was rewritten in place), or None when
    what was ingested of it is unchanged."""
    if state.fingerprint is None:  # logged before fingerprints were recorded
        if compressed:
            return "compressed file changed (size or mtime) after it was ingested"
        if size < state.end_offset:
            return f"file shrank to {size} bytes, below the {state.end_offset} bytes ingested"
        return None
    covered = fingerprint_length(state.fingerprint)
    if size < covered:
        return f"file shrank to {size} bytes, below the {covered} bytes ingested"
    if fingerprint_of_file(path, covered) != state.fingerprint:
        if compressed:
            return "compressed file rewritten (its content differs from what was ingested)"
        return f"file rewritten in place (its first {covered} bytes differ from what was ingested)"
    if compressed and size != covered:
        return f"compressed file changed size from {covered} to {size} bytes after it was ingested"
    return None


LINES_SCHEMA = (
    "source_file string, line_number long, byte_offset long, line string, line_bytes long, "
    "read_problem string, prefix_fingerprint string"
)
LINES_PER_ARROW_BATCH = 50_000


def _lines_of_files(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """mapInPandas: planned file rows -> line rows, in bounded Arrow batches. Each file is read
    from its path here, block by block (``FileLines``): neither the JVM nor this worker ever
    holds a whole file. The fingerprint of what was read rides on the last line row of each file
    (known once its lines are read; NULL on the others)."""
    columns = [*LandingLine._fields, "prefix_fingerprint"]
    for files in batches:
        for source_file, compressed, start_offset, size_bound, first_line in zip(
            files["source_file"].tolist(),
            files["compressed"].tolist(),
            files["start_offset"].tolist(),
            files["size_bound"].tolist(),
            files["first_line_number"].tolist(),
            strict=True,
        ):
            reader = FileLines(
                binary_opener(Path(str(source_file))),
                str(source_file),
                bool(compressed),
                int(start_offset),
                int(size_bound),
                int(first_line),
            )
            rows = iter(reader)
            held: list[LandingLine] = []
            while chunk := list(itertools.islice(rows, LINES_PER_ARROW_BATCH)):
                if held:
                    yield pd.DataFrame.from_records([(*row, None) for row in held], columns=columns)
                held = chunk
            if held:
                records: list[tuple[object, ...]] = [(*row, None) for row in held]
                records[-1] = (*held[-1], reader.fingerprint)
                yield pd.DataFrame.from_records(records, columns=columns)


def read_planned_lines(spark: SparkSession, plan: list[PlannedFile]) -> DataFrame:
    """One row per complete line in the planned ranges: source_file, line_number, byte_offset,
    line, line_bytes, read_problem, prefix_fingerprint (see ``bronze.lines``).

    The plan's rows are spread over tasks (one file per task, so files are split in parallel),
    and each task's Python worker reads its files by path in bounded blocks, splitting lines with
    running byte offsets (linear; no window over the file's lines). The landing folder is a
    local or mounted path (a Unity Catalog volume on Databricks), as for planning.
    """
    plan_df = spark.createDataFrame(
        [
            (p.source_file, p.compressed, p.start_offset, p.size_bound, p.first_line_number)
            for p in plan
        ],
        "source_file string, compressed boolean, start_offset long, size_bound long, "
        "first_line_number long",
    )
    return plan_df.repartition(max(1, len(plan)), "source_file").mapInPandas(
        _lines_of_files, LINES_SCHEMA
    )


def _raw(classified: DataFrame) -> str:
    """The landed text: the capture record for an adapted line, else the line itself."""
    return "raw_line" if "raw_line" in classified.columns else "line"


def bronze_rows(classified: DataFrame, batch_id: int, ingested_at: datetime) -> DataFrame:
    valid = classified.where(F.col("reason").isNull())
    lcr_columns = [F.col("lcr")[f.name].alias(bronze_column_name(f.name)) for f in LCR_FIELDS]
    return valid.select(
        *lcr_columns,
        lcr_kind(F.col("lcr.command_type")).alias("lcr_kind"),
        F.col(_raw(classified)).alias("raw_lcr"),
        "source_file",
        "line_number",
        "byte_offset",
        F.lit(batch_id).cast("long").alias("ingest_batch_id"),
        F.lit(ingested_at).alias("ingested_at"),
    )


def _quarantine_rows(classified: DataFrame, batch_id: int, ingested_at: datetime) -> DataFrame:
    return classified.where(F.col("reason").isNotNull()).select(
        F.col(_raw(classified)).alias("raw_line"),
        "field",
        "reason",
        "source_file",
        "line_number",
        "byte_offset",
        F.lit(batch_id).cast("long").alias("ingest_batch_id"),
        F.lit(ingested_at).alias("ingested_at"),
    )


_ADAPTER_ONLY = ("txn_database", "txn_id", "txn_commit_scn", "txn_scn", "pending_event_count")
RELEASED_END = "released_end"
# How a Debezium END event waiting for its change events is quarantined; a later batch finds it
# by this prefix and lands its COMMIT once they have all landed.
WAITING_END_REASON = "debezium-json: END event of transaction "


def classify_landed_lines(
    spark: SparkSession,
    catalog: Catalog,
    lines: DataFrame,
    capture_format: CaptureFormat,
    batch_id: int,
) -> DataFrame:
    """Line rows (``read_planned_lines``) -> classified rows (``classify_lines``) with
    ``raw_line`` (what lands as the raw text), ``lcr_index`` (0 for a line's first LCR) and
    ``released_end`` (True for the COMMIT of an END event quarantined by an earlier batch, which
    is not a line of this batch).

    For a capture format the adapter turns each line into LCR lines first; a line whose LCRs
    are not all valid is quarantined once, with the first reason, and lands none of them."""
    if capture_format.is_contract:
        return classify_lines(lines).withColumns(
            {"raw_line": F.col("line"), "lcr_index": F.lit(0), RELEASED_END: F.lit(False)}
        )
    adapted = lines.mapInPandas(
        partial(adapt_batches, fmt=capture_format, line_columns=lines.columns),
        f"{LINES_SCHEMA}, {ADAPTER_COLUMNS}",
    )
    classified = _whole_lines(classify_lines(adapted.where(~F.col("pending_commit")))).withColumn(
        RELEASED_END, F.lit(False)
    )
    if capture_format.name == DEBEZIUM_JSON:
        pending = adapted.where("pending_commit").withColumn(RELEASED_END, F.lit(False))
        waiting = _waiting_end_events(spark, catalog, capture_format, batch_id)
        if waiting is not None:
            pending = pending.unionByName(
                waiting.join(
                    # an END landed again in this batch is examined as this batch's line
                    pending.select("txn_database", "txn_id"),
                    ["txn_database", "txn_id"],
                    "left_anti",
                )
            )
        resolved = _resolve_end_events(spark, catalog, pending, classified, batch_id).where(
            ~F.col(RELEASED_END) | F.col("read_problem").isNull()
        )
        classified = classified.unionByName(classify_lines(resolved))
    return classified.drop(*_ADAPTER_ONLY, "pending_commit")


def _classified_plan(
    spark: SparkSession, catalog: Catalog, plan: list[PlannedFile], batch_id: int
) -> DataFrame:
    """The classified lines of a batch's files, each read in the capture format it was planned
    with (one read per format in the batch)."""
    by_format: dict[CaptureFormat, list[PlannedFile]] = {}
    for planned in plan:
        by_format.setdefault(planned.capture_format, []).append(planned)
    parts = [
        classify_landed_lines(spark, catalog, read_planned_lines(spark, files), fmt, batch_id)
        for fmt, files in by_format.items()
    ]
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)


def _whole_lines(classified: DataFrame) -> DataFrame:
    """A line lands all its LCRs or none: the first problem (by lcr_index) of any LCR of the
    line quarantines the line once (its lcr_index 0 row) and drops its other rows."""
    line = Window.partitionBy("source_file", "line_number")
    problem = F.min(
        F.when(
            F.col("reason").isNotNull(),
            F.struct(F.col("lcr_index"), F.col("field").alias("f"), F.col("reason").alias("r")),
        )
    ).over(line)
    return (
        classified.withColumn("_problem", problem)
        .where(F.col("_problem").isNull() | (F.col("lcr_index") == 0))
        .withColumn("field", F.coalesce(F.col("_problem.f"), F.col("field")))
        .withColumn("reason", F.coalesce(F.col("_problem.r"), F.col("reason")))
        .drop("_problem")
    )


def _waiting_end_events(
    spark: SparkSession, catalog: Catalog, capture_format: CaptureFormat, batch_id: int
) -> DataFrame | None:
    """END events quarantined by earlier batches while their change events had not all landed,
    whose transaction has no COMMIT in bronze yet: adapted again from their raw line, as
    pending-commit rows (``released_end`` True), one per transaction (its first END line).
    None when the quarantine holds no waiting END event (bronze is then not read)."""
    quarantined = (
        spark.table(catalog.bronze_table(QUARANTINE_TABLE))
        .where(
            (F.col("ingest_batch_id") < batch_id)
            & (F.col("field") == "id")
            & F.col("reason").startswith(WAITING_END_REASON)
        )
        .select(
            "source_file",
            "line_number",
            "byte_offset",
            F.col("raw_line").alias("line"),
            F.lit(0).cast("long").alias("line_bytes"),
            F.lit(None).cast("string").alias("read_problem"),
            F.lit(None).cast("string").alias("prefix_fingerprint"),
        )
    )
    # Files read in this format (NULL: logged before formats were logged, so possibly this one),
    # whatever source database the run named: an END event names its own, else this run's holds.
    log = spark.table(catalog.bronze_table(INGEST_LOG_TABLE))
    same_format = (
        log.where(
            F.col("capture_format").isNull() | (F.col("capture_format") == capture_format.name)
        )
        .select("source_file")
        .distinct()
    )
    if quarantined.isEmpty():
        return None
    quarantined = quarantined.join(same_format, "source_file", "left_semi")
    committed = (
        spark.table(catalog.bronze_table(LCR_TABLE))
        .where((F.col("command_type") == "COMMIT") & (F.col("ingest_batch_id") < batch_id))
        .select(
            F.col("source_database_name").alias("txn_database"),
            F.col("transaction_id").alias("txn_id"),
        )
    )
    first_line = Window.partitionBy("txn_database", "txn_id").orderBy("source_file", "line_number")
    return (
        quarantined.mapInPandas(
            partial(adapt_batches, fmt=capture_format, line_columns=quarantined.columns),
            f"{LINES_SCHEMA}, {ADAPTER_COLUMNS}",
        )
        .where("pending_commit")
        .join(committed, ["txn_database", "txn_id"], "left_anti")
        .withColumn("_first", F.row_number().over(first_line))
        .where(F.col("_first") == 1)
        .drop("_first")
        .withColumn(RELEASED_END, F.lit(True))
    )


def _resolve_end_events(
    spark: SparkSession,
    catalog: Catalog,
    pending: DataFrame,
    classified: DataFrame,
    batch_id: int,
) -> DataFrame:
    """Debezium END events -> COMMIT lines at the transaction's commit SCN.

    An END event has no SCN: the commit SCN is the highest ``commit_scn`` (else ``scn``) of the
    transaction's change events that are valid and landed in this batch or an earlier one. Until
    ``event_count`` of them have landed the END event is quarantined (never a partial commit).
    Earlier batches only: the batch's own rows may already be in bronze (a resumed batch, or
    this plan recomputed after the LCR append), and counting them twice would commit early."""
    keys = pending.select(
        F.col("txn_database").alias("_db"), F.col("txn_id").alias("_tx")
    ).distinct()
    in_batch = classified.where(
        F.col("reason").isNull() & F.col("txn_id").isNotNull() & F.col("txn_scn").isNotNull()
    ).select(
        F.col("txn_database").alias("_db"),
        F.col("txn_id").alias("_tx"),
        F.col("txn_commit_scn").alias("_commit_scn"),
        F.col("txn_scn").alias("_scn"),
    )
    before = (
        spark.table(catalog.bronze_table(LCR_TABLE))
        .where((F.col("lcr_kind") != "DIRECTIVE") & (F.col("ingest_batch_id") < batch_id))
        .select(
            F.col("source_database_name").alias("_db"),
            F.col("transaction_id").alias("_tx"),
            F.col("commit_scn").alias("_commit_scn"),
            F.col("scn").alias("_scn"),
        )
    )
    landed = (
        in_batch.unionByName(before)
        .join(keys, ["_db", "_tx"], "left_semi")
        .groupBy("_db", "_tx")
        .agg(
            F.coalesce(F.max("_commit_scn"), F.max("_scn")).alias("_commit"),
            F.count(F.lit(1)).alias("_landed"),
        )
    )
    joined = pending.join(
        landed,
        (F.col("txn_database") == F.col("_db")) & (F.col("txn_id") == F.col("_tx")),
        "left",
    )
    landed_count = F.coalesce(F.col("_landed"), F.lit(0))
    complete = F.col("_commit").isNotNull() & (
        F.col("pending_event_count").isNull() | (landed_count >= F.col("pending_event_count"))
    )
    waiting = F.format_string(
        WAITING_END_REASON + "%s: %d of its %s change events have landed (in this ingest batch "
        "or before), so it cannot commit yet; its COMMIT lands with the batch that lands the "
        "last of them",
        F.col("txn_id"),
        landed_count,
        F.coalesce(F.col("pending_event_count").cast("string"), F.lit("(unknown)")),
    )
    with_scn = F.concat(
        F.lit('{"scn":'), F.col("_commit").cast("string"), F.lit(","), F.expr("substring(line, 2)")
    )
    return joined.select(
        *[
            F.when(complete, with_scn).otherwise(F.col("raw_line")).alias(c)
            if c == "line"
            else F.when(complete, F.lit(None).cast("string")).otherwise(waiting).alias(c)
            if c == "read_problem"
            else F.when(complete, F.lit(None).cast("string")).otherwise(F.lit("id")).alias(c)
            if c == "read_problem_field"
            else F.col(c)
            for c in pending.columns
        ]
    )


def _append_idempotent(frame: DataFrame, table: str, batch_id: int, schema: T.StructType) -> None:
    frame.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).option("txnAppId", f"{TXN_APP_ID}:{table}").option("txnVersion", batch_id).mode(
        "append"
    ).saveAsTable(table)


def _log_rows(
    spark: SparkSession,
    batch_id: int,
    phase: str,
    plan: list[PlannedFile],
    results: list[FileResult] | None,
    fingerprints: dict[str, str | None],
    logged_at: datetime,
) -> DataFrame:
    """The ingest log rows of a batch: PLANNED (``results`` None) or COMMITTED."""
    rows = []
    for index, p in enumerate(plan):
        result = results[index] if results is not None else None
        rows.append(
            (
                batch_id,
                phase,
                p.source_file,
                p.compressed,
                p.start_offset,
                p.size_bound,
                p.first_line_number,
                result.end_offset if result else None,
                result.lines if result else None,
                result.bronze_rows if result else None,
                result.quarantined_rows if result else None,
                logged_at,
                p.file_version,
                p.modified_ns,
                fingerprints.get(p.source_file, p.planned_fingerprint),
                p.note,
                p.capture_format.name,
                p.capture_format.source_database,
            )
        )
    return spark.createDataFrame(rows, ingest_log_table_schema())


def ingest(
    spark: SparkSession,
    catalog: Catalog,
    landing: Path,
    progress: ProgressCallback = lambda _: None,
    crash_after: str | None = None,
    capture_format: CaptureFormat | LandingFormats = LCR_LINES,
    bronze_tables_created: Collection[str] | None = None,
) -> IngestReport:
    """Ingest what is new in ``landing`` (see the module docstring). ``capture_format`` says what
    the files hold: one format for all, or one per landing folder (see ``lakeapply.bronze.formats``;
    each planned file's format is logged with the plan, and a resumed batch keeps it).
    ``bronze_tables_created``: the caller has just run :func:`ensure_bronze_tables`, which
    created these (so an empty ingest log needs no read); None: ingest ensures them itself.
    ``crash_after`` is for tests: one of ``plan``, ``lcr``, ``quarantine`` raises SimulatedCrash
    after that step."""
    formats = (
        capture_format
        if isinstance(capture_format, LandingFormats)
        else LandingFormats(capture_format)
    )
    log_table = catalog.bronze_table(INGEST_LOG_TABLE)
    # A log this call created is empty: no batch to resume, no file ingested before.
    if bronze_tables_created is None:
        bronze_tables_created = ensure_bronze_tables(spark, catalog)
    first_batch = log_table in bronze_tables_created
    now = datetime.now(UTC).replace(tzinfo=None)
    unfinished = None if first_batch else _unfinished_batch(spark, catalog, formats, landing)
    resumed = unfinished is not None
    if unfinished is not None:
        batch_id, plan = unfinished
        progress(f"resuming ingest batch {batch_id} ({len(plan)} files)")
    else:
        progress("planning")
        planned = _plan_new_batch(spark, catalog, landing, formats, now, first_batch)
        if planned is None:
            return IngestReport(None, False, ())
        batch_id, plan = planned
    if crash_after == "plan":
        raise SimulatedCrash("after plan")

    progress(f"reading {len(plan)} files")
    # While the lines are read and classified: the two tables every batch appends to.
    with log_states_computed(spark, [catalog.bronze_table(LCR_TABLE), log_table]):
        by_file, released = _write_batch_rows(
            spark, catalog, plan, batch_id, now, progress, crash_after
        )
        results = _file_results(plan, by_file)
        # A file with no new complete line keeps the fingerprint it was planned with.
        fingerprints = {
            source_file: row.prefix_fingerprint
            for source_file, row in by_file.items()
            if row.prefix_fingerprint is not None
        }
        commit_rows = _log_rows(spark, batch_id, "COMMITTED", plan, results, fingerprints, now)
        _append_idempotent(commit_rows, log_table, batch_id * 2 + 1, ingest_log_table_schema())
    progress(f"batch {batch_id} committed")
    if compaction_due(batch_id):  # every batch reads its log whole (two files per batch)
        progress("compacting the ingest log")
        compact_small_files(spark, [log_table])
    return IngestReport(batch_id, resumed, tuple(results), released_commits=released)


def _write_batch_rows(
    spark: SparkSession,
    catalog: Catalog,
    plan: list[PlannedFile],
    batch_id: int,
    now: datetime,
    progress: ProgressCallback,
    crash_after: str | None,
) -> tuple[dict[str, Row], int]:
    """The batch's lines classified once, then its bronze and quarantine appends (each
    idempotent per batch): the per-file counts, and how many Debezium END events it released."""
    lines = _classified_plan(spark, catalog, plan, batch_id).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        by_file = _per_file_counts(lines)
        totals = lines.agg(
            F.count(F.when(F.col(RELEASED_END) & F.col("reason").isNull(), 1)).alias("released"),
            F.count(F.when(F.col("reason").isNull(), 1)).alias("valid"),
            F.count(F.when(F.col("reason").isNotNull(), 1)).alias("quarantined"),
        ).collect()[0]
        # An empty write would still be a Delta commit (a re-run of the batch skips it too).
        if totals.valid:
            progress("writing bronze LCRs")
            _append_idempotent(
                bronze_rows(lines, batch_id, now),
                catalog.bronze_table(LCR_TABLE),
                batch_id,
                lcr_table_schema(),
            )
        if crash_after == "lcr":
            raise SimulatedCrash("after lcr")
        if totals.quarantined:
            progress("writing quarantine")
            _append_idempotent(
                _quarantine_rows(lines, batch_id, now),
                catalog.bronze_table(QUARANTINE_TABLE),
                batch_id,
                quarantine_table_schema(),
            )
        if crash_after == "quarantine":
            raise SimulatedCrash("after quarantine")
    finally:
        lines.unpersist()
    return by_file, int(totals.released)


def _per_file_counts(lines: DataFrame) -> dict[str, Row]:
    """Per planned file: its lines, end offset, bronze and quarantined rows, and prefix
    fingerprint (a few rows, one per file, whatever the number of LCRs)."""
    stats = (
        lines.where(~F.col(RELEASED_END))
        .groupBy("source_file")
        .agg(
            F.count(F.when(F.col("lcr_index") == 0, 1)).alias("lines"),
            F.max(F.col("byte_offset") + F.col("line_bytes")).alias("end_offset"),
            F.count(F.when(F.col("reason").isNull(), 1)).alias("bronze_rows"),
            F.count(F.when(F.col("reason").isNotNull(), 1)).alias("quarantined_rows"),
            F.max("prefix_fingerprint").alias("prefix_fingerprint"),
        )
        .collect()
    )
    return {r.source_file: r for r in stats}


def _plan_new_batch(
    spark: SparkSession,
    catalog: Catalog,
    landing: Path,
    formats: LandingFormats,
    now: datetime,
    first_batch: bool,
) -> tuple[int, list[PlannedFile]] | None:
    """The next batch's files and byte ranges, each with its capture format, logged as PLANNED
    before anything is read (a crash after it resumes this plan); None when nothing is new.
    ``first_batch``: the ingest log is empty (it was just created)."""
    states = {} if first_batch else _file_states(spark, catalog)
    plan = [
        replace(p, capture_format=formats.of(p.source_file, landing))
        for p in plan_batch(list_landing_files(landing), states)
    ]
    if not plan:
        return None
    log_table = catalog.bronze_table(INGEST_LOG_TABLE)
    last = None if first_batch else spark.table(log_table).agg(F.max("batch_id")).collect()[0][0]
    batch_id = (last or 0) + 1
    plan_rows = _log_rows(spark, batch_id, "PLANNED", plan, None, {}, now)
    _append_idempotent(plan_rows, log_table, batch_id * 2, ingest_log_table_schema())
    return batch_id, plan


def _file_results(plan: list[PlannedFile], by_file: dict[str, Any]) -> list[FileResult]:
    """Per planned file: where the next batch starts and its lines in = rows out."""
    results = []
    for p in plan:
        row = by_file.get(p.source_file)
        results.append(
            FileResult(
                p.source_file,
                end_offset=row.end_offset if row else p.start_offset,
                lines=row.lines if row else 0,
                bronze_rows=row.bronze_rows if row else 0,
                quarantined_rows=row.quarantined_rows if row else 0,
                file_version=p.file_version,
                note=p.note,
            )
        )
    return results
