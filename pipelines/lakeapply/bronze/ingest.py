"""Ingest landing files into bronze, exactly once.

A run is one *ingest batch*:

1. **Plan** (driver, file metadata only): for every landing file that is new or has grown, the byte
   range still to read, ``[start_offset, size_bound)``. The plan is appended to the ingest log
   (phase PLANNED) before any data is written. If the previous batch was planned but never
   committed (a crash), that plan is re-executed as it was instead.
2. **Read and classify** (Spark): the planned byte ranges are read (``binaryFile``; ``.gz`` files are
   decompressed per file), split into lines with their line numbers and byte offsets, parsed against
   the contract. Only complete lines count: bytes after the last newline stay for the next run, like
   an Extract re-reading from its last complete block.
3. **Write**: valid LCRs to ``bronze.lcr``, the rest to ``bronze.quarantine``, each an idempotent
   Delta append (``txnAppId``/``txnVersion`` = the batch id), so re-running a crashed batch writes
   nothing twice.
4. **Commit**: a COMMITTED row per file, with the new end offset, closes the batch.
"""

from __future__ import annotations

import gzip
import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.tables import (
    INGEST_LOG_TABLE,
    LCR_TABLE,
    QUARANTINE_TABLE,
    ingest_log_schema,
    lcr_table_schema,
    quarantine_table_schema,
)
from lakeapply.bronze.validate import classify_lines, lcr_kind
from lakeapply.contract.lcr import LCR_FIELDS, bronze_column_name
from lakeapply.errors import IngestError
from lakeapply.runtime.catalog import Catalog, ensure_database, ensure_delta_table

log = logging.getLogger(__name__)

LANDING_SUFFIXES = (".jsonl", ".jsonl.gz")
TXN_APP_ID = "lakeapply-ingest"

ProgressCallback = Callable[[str], None]


@dataclass(frozen=True)
class PlannedFile:
    source_file: str  # absolute path
    compressed: bool
    start_offset: int
    size_bound: int
    first_line_number: int


@dataclass(frozen=True)
class FileResult:
    source_file: str
    end_offset: int
    lines: int
    bronze_rows: int
    quarantined_rows: int


@dataclass(frozen=True)
class IngestReport:
    batch_id: int | None  # None: nothing new to ingest
    resumed: bool
    files: tuple[FileResult, ...]

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def bronze_rows(self) -> int:
        return sum(f.bronze_rows for f in self.files)

    @property
    def quarantined_rows(self) -> int:
        return sum(f.quarantined_rows for f in self.files)


class SimulatedCrash(RuntimeError):
    """Raised by tests (``crash_after``) to stop an ingest between two of its writes."""


def ensure_bronze_tables(spark: SparkSession, catalog: Catalog) -> None:
    ensure_database(spark, catalog.bronze)
    ensure_delta_table(spark, catalog.bronze_table(LCR_TABLE), lcr_table_schema())
    ensure_delta_table(spark, catalog.bronze_table(QUARANTINE_TABLE), quarantine_table_schema())
    ensure_delta_table(spark, catalog.bronze_table(INGEST_LOG_TABLE), ingest_log_schema())


def list_landing_files(landing: Path) -> list[Path]:
    if not landing.is_dir():
        raise IngestError(f"landing folder {landing} does not exist or is not a folder")
    return sorted(
        path.resolve()
        for path in landing.rglob("*")
        if path.is_file() and path.name.endswith(LANDING_SUFFIXES)
    )


def _file_states(spark: SparkSession, catalog: Catalog) -> dict[str, tuple[int, int, int]]:
    """source_file -> (end offset, lines so far, size when last planned) over committed batches."""
    rows = (
        spark.table(catalog.bronze_table(INGEST_LOG_TABLE))
        .where(F.col("phase") == "COMMITTED")
        .groupBy("source_file")
        .agg(
            F.max("end_offset").alias("end_offset"),
            F.sum("lines").alias("lines"),
            F.max("size_bound").alias("size_bound"),
        )
        .collect()
    )
    return {r.source_file: (r.end_offset, r.lines, r.size_bound) for r in rows}


def _unfinished_batch(
    spark: SparkSession, catalog: Catalog
) -> tuple[int, list[PlannedFile]] | None:
    """The last batch, if it was planned but never committed."""
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
        PlannedFile(r.source_file, r.compressed, r.start_offset, r.size_bound, r.first_line_number)
        for r in planned
    ]


def plan_batch(files: list[Path], states: dict[str, tuple[int, int, int]]) -> list[PlannedFile]:
    """Which bytes of which files are new. Pure: the file sizes are read here, nothing else."""
    planned = []
    for path in files:
        size = path.stat().st_size
        compressed = path.name.endswith(".gz")
        end_offset, lines, last_size = states.get(str(path), (0, 0, -1))
        if size == last_size:
            continue  # nothing new (at most an incomplete last line we already saw)
        if compressed and last_size >= 0:
            log.warning("%s: a compressed landing file changed after ingest; ignored", path)
            continue
        if not compressed and size < end_offset:
            log.warning("%s: landing file shrank below what was ingested; ignored", path)
            continue
        planned.append(PlannedFile(str(path), compressed, end_offset, size, lines + 1))
    return planned


LINES_SCHEMA = (
    "source_file string, line_number long, byte_offset long, line string, line_bytes long"
)
LINES_PER_ARROW_BATCH = 50_000


def split_lines(
    data: bytes, source_file: str, start_offset: int, first_line_number: int, compressed: bool
) -> Iterator[tuple[str, int, int, str, int]]:
    """The complete lines of ``data`` (read from ``start_offset``) with line numbers and offsets.

    Bytes after the last newline are an incomplete line, kept for the next run; a compressed file
    is complete by construction, so its last line counts even without a newline. Offsets count
    raw bytes (a line that is not valid UTF-8 still moves the offset by its true length).
    """
    pieces = data.split(b"\n")
    last = pieces.pop()
    if compressed and last:
        pieces.append(last)
    offset = start_offset
    for index, raw in enumerate(pieces):
        text = raw.decode("utf-8", errors="replace")
        yield (
            source_file,
            first_line_number + index,
            offset,
            text[:-1] if text.endswith("\r") else text,
            len(raw) + 1,
        )
        offset += len(raw) + 1


def _lines_of_files(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """mapInPandas: planned file rows -> line rows, in bounded Arrow batches."""
    columns = ["source_file", "line_number", "byte_offset", "line", "line_bytes"]
    for files in batches:
        for source_file, compressed, start_offset, size_bound, first_line, content in zip(
            files["source_file"].tolist(),
            files["compressed"].tolist(),
            files["start_offset"].tolist(),
            files["size_bound"].tolist(),
            files["first_line_number"].tolist(),
            files["content"].tolist(),
            strict=True,
        ):
            whole = bytes(content)
            data = gzip.decompress(whole) if compressed else whole[start_offset:size_bound]
            start = 0 if compressed else int(start_offset)
            rows = split_lines(data, str(source_file), start, int(first_line), bool(compressed))
            while chunk := list(itertools.islice(rows, LINES_PER_ARROW_BATCH)):
                yield pd.DataFrame.from_records(chunk, columns=columns)


def read_planned_lines(spark: SparkSession, plan: list[PlannedFile]) -> DataFrame:
    """One row per complete line in the planned ranges: source_file, line_number, byte_offset, line.

    Each file is split once, in a Python worker, into lines with running byte offsets (linear; no
    window over the file's lines). Plain files are cut to the planned byte range (a file may have
    grown since it was planned); compressed files are decompressed whole.
    """
    plan_df = spark.createDataFrame(
        [
            (
                p.source_file,
                "file:" + p.source_file,
                p.compressed,
                p.start_offset,
                p.size_bound,
                p.first_line_number,
            )
            for p in plan
        ],
        "source_file string, hadoop_path string, compressed boolean, start_offset long, "
        "size_bound long, first_line_number long",
    )
    files = (
        spark.read.format("binaryFile")
        .load([p.source_file for p in plan])
        .select(F.col("path").alias("hadoop_path"), "content")
        .join(F.broadcast(plan_df), "hadoop_path")
        .drop("hadoop_path")
        # One file per task, so files are split in parallel however the file source grouped them.
        .repartition(max(1, len(plan)), "source_file")
    )
    return files.mapInPandas(_lines_of_files, LINES_SCHEMA)


def bronze_rows(classified: DataFrame, batch_id: int, ingested_at: datetime) -> DataFrame:
    valid = classified.where(F.col("reason").isNull())
    lcr_columns = [F.col("lcr")[f.name].alias(bronze_column_name(f.name)) for f in LCR_FIELDS]
    return valid.select(
        *lcr_columns,
        lcr_kind(F.col("lcr.command_type")).alias("lcr_kind"),
        F.col("line").alias("raw_lcr"),
        "source_file",
        "line_number",
        "byte_offset",
        F.lit(batch_id).cast("long").alias("ingest_batch_id"),
        F.lit(ingested_at).alias("ingested_at"),
    )


def _quarantine_rows(classified: DataFrame, batch_id: int, ingested_at: datetime) -> DataFrame:
    return classified.where(F.col("reason").isNotNull()).select(
        F.col("line").alias("raw_line"),
        "field",
        "reason",
        "source_file",
        "line_number",
        "byte_offset",
        F.lit(batch_id).cast("long").alias("ingest_batch_id"),
        F.lit(ingested_at).alias("ingested_at"),
    )


def _append_idempotent(frame: DataFrame, table: str, batch_id: int, schema: T.StructType) -> None:
    frame.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).option("txnAppId", f"{TXN_APP_ID}:{table}").option("txnVersion", batch_id).mode(
        "append"
    ).saveAsTable(table)


def ingest(
    spark: SparkSession,
    catalog: Catalog,
    landing: Path,
    progress: ProgressCallback = lambda _: None,
    crash_after: str | None = None,
) -> IngestReport:
    """Ingest what is new in ``landing`` (see the module docstring). ``crash_after`` is for tests:
    one of ``plan``, ``lcr``, ``quarantine`` raises SimulatedCrash after that step."""
    ensure_bronze_tables(spark, catalog)
    log_table = catalog.bronze_table(INGEST_LOG_TABLE)
    unfinished = _unfinished_batch(spark, catalog)
    resumed = unfinished is not None
    now = datetime.now(UTC).replace(tzinfo=None)
    if unfinished is not None:
        batch_id, plan = unfinished
        progress(f"resuming ingest batch {batch_id} ({len(plan)} files)")
    else:
        progress("planning")
        plan = plan_batch(list_landing_files(landing), _file_states(spark, catalog))
        if not plan:
            return IngestReport(None, False, ())
        last = spark.table(log_table).agg(F.max("batch_id")).collect()[0][0]
        batch_id = (last or 0) + 1
        plan_rows = spark.createDataFrame(
            [
                (
                    batch_id,
                    "PLANNED",
                    p.source_file,
                    p.compressed,
                    p.start_offset,
                    p.size_bound,
                    p.first_line_number,
                    None,
                    None,
                    None,
                    None,
                    now,
                )
                for p in plan
            ],
            ingest_log_schema(),
        )
        _append_idempotent(plan_rows, log_table, batch_id * 2, ingest_log_schema())
    if crash_after == "plan":
        raise SimulatedCrash("after plan")

    progress(f"reading {len(plan)} files")
    lines = classify_lines(read_planned_lines(spark, plan)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        stats = (
            lines.groupBy("source_file")
            .agg(
                F.count(F.lit(1)).alias("lines"),
                F.max(F.col("byte_offset") + F.col("line_bytes")).alias("end_offset"),
                F.count(F.when(F.col("reason").isNull(), 1)).alias("bronze_rows"),
                F.count(F.when(F.col("reason").isNotNull(), 1)).alias("quarantined_rows"),
            )
            .collect()
        )
        by_file = {r.source_file: r for r in stats}
        progress("writing bronze LCRs")
        _append_idempotent(
            bronze_rows(lines, batch_id, now),
            catalog.bronze_table(LCR_TABLE),
            batch_id,
            lcr_table_schema(),
        )
        if crash_after == "lcr":
            raise SimulatedCrash("after lcr")
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
            )
        )
    commit_rows = spark.createDataFrame(
        [
            (
                batch_id,
                "COMMITTED",
                p.source_file,
                p.compressed,
                p.start_offset,
                p.size_bound,
                p.first_line_number,
                r.end_offset,
                r.lines,
                r.bronze_rows,
                r.quarantined_rows,
                now,
            )
            for p, r in zip(plan, results, strict=True)
        ],
        ingest_log_schema(),
    )
    _append_idempotent(commit_rows, log_table, batch_id * 2 + 1, ingest_log_schema())
    progress(f"batch {batch_id} committed")
    return IngestReport(batch_id, resumed, tuple(results))
