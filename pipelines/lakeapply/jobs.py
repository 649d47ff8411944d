"""Jobs: the end-to-end runs behind ``make run`` and the Databricks bundle's tasks."""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import Row, SparkSession, Window
from pyspark.sql import functions as F
from rich.console import Console
from rich.table import Table

from lakeapply.bronze.ingest import ensure_bronze_tables, ingest
from lakeapply.gold.runner import SUMMARY_COLUMNS, render_sqlplus, run_gold, summary_select
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.resources import DEMO_CONFIG, resource_path
from lakeapply.runtime.catalog import Catalog, existing_tables
from lakeapply.runtime.session import (
    LocalSparkSettings,
    get_spark,
    isolated_session,
)
from lakeapply.silver import dictionary
from lakeapply.silver.admin import load_settings, publish_settings
from lakeapply.silver.config import load_config
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import ensure_destination_tables, ensure_dictionary_tables
from lakeapply.silver.settings import ApplySettings
from lakeapply.status import collect_status, render_status


def progress_table(apply_name: str, rows: list[Row]) -> Table:
    """The latest progress row per source database of one apply process.

    No borders, the source database never wrapped, headings that wrap onto two lines and
    numbers folded rather than cut: it fits 80 columns with SCNs of up to 16 digits."""
    table = Table(
        title=f"{apply_name}: apply progress (latest cycle)",
        box=None,
        pad_edge=False,
        collapse_padding=True,
        header_style="bold",
    )
    table.add_column("source database", no_wrap=True)
    for heading in ("low watermark", "oldest SCN"):
        table.add_column(heading, overflow="fold", min_width=9)
    for heading in ("applied", "ignored", "errors", "rolled back"):
        table.add_column(heading, justify="right", overflow="fold", max_width=9)
    table.add_column("status", overflow="fold")
    for row in rows:
        table.add_row(
            row.source_database,
            str(row.low_watermark),
            "" if row.oldest_scn is None else str(row.oldest_scn),
            str(row.total_applied),
            str(row.total_ignored),
            str(row.total_errors),
            str(row.total_rolled_back),
            row.status,
        )
    return table


def render_apply_summary(spark: SparkSession, catalog: Catalog, console: Console) -> None:
    """Progress per apply process and source database, and the error queue."""
    latest = Window.partitionBy("apply_name", "source_database").orderBy(F.desc("cycle_id"))
    rows = (
        spark.table(catalog.apply_table(dictionary.PROGRESS))
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .orderBy("apply_name", "source_database")
        .collect()
    )
    for apply_name in dict.fromkeys(row.apply_name for row in rows):
        console.print(progress_table(apply_name, [r for r in rows if r.apply_name == apply_name]))
    console.print("[bold]error queue (DBA_APPLY_ERROR)[/bold]")
    for row in (
        spark.table(catalog.apply_table(dictionary.ERROR_QUEUE))
        .orderBy("apply_name", "source_commit_scn")
        .limit(20)
        .collect()
    ):
        console.print(
            f"  {row.apply_name} {row.local_transaction_id} source txn "
            f"{row.source_transaction_id} (commit SCN {row.source_commit_scn}) message "
            f"{row.message_number}/{row.message_count}: {row.error_message}",
            soft_wrap=False,
        )


def step_printer(console: Console, stage: str) -> Callable[[str], None]:
    """Where a stage reports its steps: indented for a person, timestamped for a job log.

    A Databricks job, cron or CI captures the output (not a terminal); there each line carries
    its UTC time so a slow step can be found in the log.
    """
    if console.is_terminal:
        return lambda step: console.print(f"  {stage}: {step}", highlight=False)

    def timestamped(step: str) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        console.print(f"{now} lakeapply run: {stage}: {step}", highlight=False, soft_wrap=True)

    return timestamped


def _configured(spark: SparkSession, catalog: Catalog, declared: ApplySettings) -> ApplySettings:
    """The dictionary's settings; lakeapply.yml seeds them the first time (admin changes stay)."""
    processes = catalog.apply_table(dictionary.APPLY_PROCESSES)
    # Only a check: the first publish creates the dictionary tables itself, and knows then that
    # they hold nothing (creating them here first made it probe the dozen tables: ~4.4 s).
    fresh = processes not in existing_tables(spark, [processes])
    known = set() if fresh else {r.apply_name for r in spark.table(processes).collect()}
    if declared.apply_name not in known:
        publish_settings(spark, catalog, declared)
        # What loading would read back (the round trip is tests/silver/test_admin.py's), without
        # reading the dozen tables just written.
        return declared
    return load_settings(spark, catalog, declared.apply_name)


def _configured_all(
    spark: SparkSession, catalog: Catalog, declared: Sequence[ApplySettings]
) -> list[ApplySettings]:
    """Each declared apply process as configured (:func:`_configured`), with its destination
    tables created."""
    configured = [_configured(spark, catalog, settings) for settings in declared]
    for settings in configured:
        ensure_destination_tables(spark, catalog, settings)
    # Every dictionary table, before the apply and gold run side by side: both would create
    # the missing ones, and two creations of one table conflict in Delta's log.
    ensure_dictionary_tables(spark, catalog)
    return configured


def _import_dbt_in_the_background() -> None:
    """dbt's import takes seconds of one core; the JVM's start mostly waits, so do both at once.
    The gold step's own import then finds the module loaded (or waits for this one)."""

    def load() -> None:
        with contextlib.suppress(ImportError):  # the gold step reports a missing `gold` extra
            importlib.import_module("dbt.cli.main")

    threading.Thread(target=load, name="import-dbt", daemon=True).start()


def run_demo(
    warehouse: Path,
    catalog_prefix: str,
    landing: Path,
    seed: int,
    transactions: int,
    console: Console,
    config: Path | None = None,
    catalog: str | None = None,
) -> None:
    """landing -> bronze -> silver on the embedded default, then a summary.

    ``config`` defaults to the demo ``lakeapply.yml`` packaged with lakeapply, so the demo runs
    from an installed wheel in any folder."""
    started = time.monotonic()
    config = config if config is not None else resource_path(DEMO_CONFIG)
    if not landing.exists() or not any(landing.rglob("*.jsonl*")):
        spec = WorkloadSpec(
            seed=seed, transactions=transactions, bad_line_ratio=0.001, conflict_ratio=0.002
        )
        workload = write_workload(spec, landing)
        console.print(f"generated {workload.line_count} LCR lines into {landing}")
    console.print("starting Spark", highlight=False)
    _import_dbt_in_the_background()
    # The demo's tables are small: the small-data profile (no codegen, no data-skipping jobs).
    spark = get_spark(
        LocalSparkSettings(warehouse, small_data=True, write_class_archive=True),
        notify=lambda line: console.print(line, highlight=False),
    )
    # Gold's `dbt run` builds views, which need the tables and not their rows, so it runs
    # beside the apply. dbt-spark runs on the session it finds (the first one: ``spark``) and
    # changes its settings (ANSI mode off, the current database) while it runs: everything
    # else runs on a session of its own.
    work = isolated_session(spark)
    names = Catalog(catalog_prefix, catalog)
    declared_applies = load_config(config)
    # Work beside the main line (ingest, then the apply), on the cores it leaves idle:
    # publishing the settings and creating the destination tables (a score of Delta tables on
    # a first run) needs nothing ingest writes; the status (bronze only) and gold's views (they
    # need the tables, not their rows) need nothing the apply writes. The bronze tables come
    # first: both sides would create them, and two creations of one table conflict in Delta's
    # log.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="background") as background:
        bronze_created = ensure_bronze_tables(work, names)
        configuring = background.submit(_configured_all, work, names, declared_applies)
        report = ingest(
            work,
            names,
            landing,
            progress=step_printer(console, "ingest"),
            bronze_tables_created=bronze_created,
        )
        if report.batch_id is None:
            console.print("bronze: nothing new to ingest")
        else:
            console.print(
                f"bronze: batch {report.batch_id} ingested {report.lines} lines "
                f"({report.bronze_rows} LCRs, {report.quarantined_rows} quarantined)"
            )
        status = background.submit(collect_status, work, names)
        configured = configuring.result()
        # The demo builds the views only (`dbt run`); `lakeapply gold` and the gold job run
        # `dbt build`, whose 50-odd data and unit tests read the rows, after the apply.
        building_gold = background.submit(
            run_gold, spark, warehouse.resolve(), catalog_prefix, "run", catalog=catalog
        )
        for settings in configured:
            for cycle in run_apply(work, names, settings, step_printer(console, "apply")):
                console.print(
                    f"silver: {cycle.apply_name} cycle {cycle.cycle_id}: {cycle.applied} "
                    f"applied, {cycle.ignored} ignored, {cycle.errors} errors"
                    + (" - ABORTED" if cycle.aborted else "")
                )
        render_status(status.result(), console)
        gold = building_gold.result()
    render_apply_summary(work, names, console)
    console.print(f"gold: {gold.summary()}")
    for view in ("DBA_APPLY_PROGRESS", "DBA_APPLY_ERROR"):
        console.print(f"\nSQL> {summary_select(view)}", highlight=False)
        text = render_sqlplus(
            spark, catalog_prefix, view, catalog=catalog, select=SUMMARY_COLUMNS[view.lower()]
        )
        console.print(text, highlight=False, soft_wrap=True)
    console.print(f"done in {time.monotonic() - started:.1f}s")
