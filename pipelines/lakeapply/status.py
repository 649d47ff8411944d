"""What the warehouse holds, for ``lakeapply status`` and the end of ``make run``."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.table import Table

from lakeapply.bronze.tables import INGEST_LOG_TABLE, LCR_TABLE, QUARANTINE_TABLE
from lakeapply.runtime.catalog import Catalog


@dataclass(frozen=True)
class SourceCounts:
    source_database: str
    lcrs: int
    transactions: int
    commits: int
    rollbacks: int


@dataclass(frozen=True)
class StatusReport:
    bronze_lcrs: int = 0
    quarantined_lines: int = 0
    ingest_batches: int = 0
    landing_files: int = 0
    sources: list[SourceCounts] = field(default_factory=list)
    quarantine_reasons: list[tuple[str, int]] = field(default_factory=list)


def _exists(spark: SparkSession, qualified: str) -> bool:
    return bool(spark.catalog.tableExists(qualified))


def collect_status(spark: SparkSession, catalog: Catalog) -> StatusReport:
    lcr = catalog.bronze_table(LCR_TABLE)
    if not _exists(spark, lcr):
        return StatusReport()
    quarantine = spark.table(catalog.bronze_table(QUARANTINE_TABLE))
    ingest_log = spark.table(catalog.bronze_table(INGEST_LOG_TABLE)).where(
        F.col("phase") == "COMMITTED"
    )
    sources = [
        SourceCounts(r.source_database_name, r.lcrs, r.transactions, r.commits, r.rollbacks)
        for r in spark.table(lcr)
        .groupBy("source_database_name")
        .agg(
            F.count(F.lit(1)).alias("lcrs"),
            F.count_distinct("transaction_id").alias("transactions"),
            F.count(F.when(F.col("command_type") == "COMMIT", 1)).alias("commits"),
            F.count(F.when(F.col("command_type") == "ROLLBACK", 1)).alias("rollbacks"),
        )
        .orderBy("source_database_name")
        .collect()
    ]
    # Every offending field at once (a few dozen at most: the contract's and the adapters'
    # field names): their sum is the quarantine's count, without a query of its own.
    by_field = sorted(
        (
            (r.reason_kind, r.n)
            for r in quarantine.groupBy(
                F.coalesce("field", F.lit("(whole line)")).alias("reason_kind")
            )
            .agg(F.count(F.lit(1)).alias("n"))
            .collect()
        ),
        key=lambda reason: (-reason[1], reason[0]),
    )
    logged = ingest_log.agg(
        F.count_distinct("batch_id").alias("batches"),
        F.count_distinct("source_file").alias("files"),
    ).collect()[0]
    return StatusReport(
        bronze_lcrs=sum(s.lcrs for s in sources),
        quarantined_lines=sum(n for _, n in by_field),
        ingest_batches=logged.batches,
        landing_files=logged.files,
        sources=sources,
        quarantine_reasons=by_field[:10],
    )


def render_status(report: StatusReport, console: Console) -> None:
    console.print(
        f"[bold]bronze[/bold]: {report.bronze_lcrs} LCRs, {report.quarantined_lines} quarantined "
        f"lines, {report.ingest_batches} ingest batches over {report.landing_files} files"
    )
    table = Table("source database", "LCRs", "transactions", "commits", "rollbacks")
    for source in report.sources:
        table.add_row(
            source.source_database,
            str(source.lcrs),
            str(source.transactions),
            str(source.commits),
            str(source.rollbacks),
        )
    console.print(table)
    if report.quarantine_reasons:
        reasons = Table("quarantined: offending field", "lines")
        for reason, count in report.quarantine_reasons:
            reasons.add_row(reason, str(count))
        console.print(reasons)
