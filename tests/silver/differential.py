"""Run one workload through the engine and through the reference applier, in comparable form."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import quote
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.engine import (
    apply_status,
    ensure_apply_tables,
    ensure_destination_tables,
    load_initial_copy,
    run_apply,
    spark_text,
    start_apply,
    typed_value,
)
from lakeapply.silver.fold import key_text
from lakeapply.silver.rowops import convert_value, from_spark_text, to_canonical_text
from lakeapply.silver.settings import ApplySettings, DestinationTable
from tests.reference.applier import ReferenceResult, reference_apply
from tests.silver.bronze_fixture import land

Workload = tuple[ApplySettings, list[dict[str, Any]], dict[str, list[dict[str, Any]]]]
Comparable = dict[str, Any]


def isolate(workload: Workload, number: int) -> Workload:
    """Give a workload its own apply name, source names and silver tables, so many workloads
    share one catalog without seeing each other."""
    settings, lcrs, initial = workload
    source = {name: f"E{number}_{name}" for name in {t.source_database for t in settings.tables}}
    source.update({name: f"E{number}_{name}" for name in settings.source_databases})
    for lcr in lcrs:
        source.setdefault(lcr["source_database_name"], f"E{number}_{lcr['source_database_name']}")
    silver = lambda name: f"e{number}_{name}"  # noqa: E731
    renamed = dataclasses.replace(
        settings,
        apply_name=f"APPLY_E{number}",
        source_databases=tuple(source[s] for s in settings.source_databases),
        tables=tuple(
            dataclasses.replace(
                t, source_database=source[t.source_database], silver_table=silver(t.silver_table)
            )
            for t in settings.tables
        ),
        schema_instantiation_scns=tuple(
            (source[d], o, s) for d, o, s in settings.schema_instantiation_scns
        ),
        global_instantiation_scns=tuple(
            (source[d], s) for d, s in settings.global_instantiation_scns
        ),
    )
    return (
        renamed,
        [{**lcr, "source_database_name": source[lcr["source_database_name"]]} for lcr in lcrs],
        {silver(name): rows for name, rows in initial.items()},
    )


def split_in_commit_order(lcrs: list[dict[str, Any]], parts: int) -> list[list[dict[str, Any]]]:
    """Cut the arrival sequence into at most ``parts`` ingest batches, only where every COMMIT
    before the cut has a lower SCN than every COMMIT after it: a capture delivers commits of a
    source in commit order, so an incremental apply never meets a commit below its watermark."""
    commits = [(i, lcr["scn"]) for i, lcr in enumerate(lcrs) if lcr["command_type"] == "COMMIT"]
    # A transaction's COMMIT/ROLLBACK never arrives before its own LCRs (one capture stream).
    ends: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], int] = {}
    for i, lcr in enumerate(lcrs):
        key = (lcr["source_database_name"], lcr["transaction_id"])
        last[key] = i
        if lcr["command_type"] in ("COMMIT", "ROLLBACK"):
            ends.setdefault(key, i)

    def valid(cut: int) -> bool:
        in_order = all(
            scn < after for i, scn in commits if i < cut for j, after in commits if j >= cut
        )
        complete = all(last[key] < cut for key, end in ends.items() if end < cut)
        return in_order and complete

    cuts = [cut for cut in range(1, len(lcrs)) if valid(cut)]
    step = max(1, len(cuts) // parts)
    chosen = sorted(set(cuts[step - 1 :: step][: parts - 1])) if parts > 1 else []
    bounds = [0, *chosen, len(lcrs)]
    return [lcrs[a:b] for a, b in itertools.pairwise(bounds) if lcrs[a:b]]


def _tables_by_silver_name(settings: ApplySettings) -> dict[str, DestinationTable]:
    tables: dict[str, DestinationTable] = {}
    for table in settings.tables:
        tables.setdefault(table.silver_table, table)
    return tables


def reference_outcome(workload: Workload) -> Comparable:
    settings, lcrs, initial = workload
    result: ReferenceResult = reference_apply(settings, lcrs, initial)
    tables = {}
    for name, table in _tables_by_silver_name(settings).items():
        tables[name] = {
            key_text(table, key): {
                c.name: to_canonical_text(c, row[c.name]) for c in table.definition.columns
            }
            for key, row in result.tables[name].items()
        }
    return {
        "tables": tables,
        "errors": sorted(
            (
                e.source_database,
                e.source_transaction_id,
                e.source_commit_scn,
                e.message_number,
                e.error_number,
                e.error_message,
                e.message_count,
            )
            for e in result.errors
        ),
        "counters": {
            k: result.counters[k]
            for k in ("applied", "ignored", "rolled_back", "errors", "received")
        },
        "low_watermark": result.low_watermark,
        "oldest_scn": result.oldest_scn,
        "aborted": result.aborted,
    }


def _load_initial(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    initial: dict[str, list[dict[str, Any]]],
) -> None:
    tables = _tables_by_silver_name(settings)
    for name, rows in initial.items():
        if not rows:
            continue
        table = tables[name]
        columns = table.definition.columns
        texts = [
            tuple(to_canonical_text(c, convert_value(c, row.get(c.name))) for c in columns)
            for row in rows
        ]
        frame = spark.createDataFrame(texts, ", ".join(f"{quote(c.name)} string" for c in columns))
        load_initial_copy(
            spark,
            catalog,
            table,
            frame.select(*[typed_value(c, F.col(quote(c.name))).alias(c.name) for c in columns]),
        )


def prepare(spark: SparkSession, catalog: Catalog, workload: Workload, batches: int = 1) -> None:
    """Destination tables with their initial copy, the LCRs landed in ``batches`` ingest batches."""
    settings, lcrs, initial = workload
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    _load_initial(spark, catalog, settings, initial)
    for part in split_in_commit_order(lcrs, batches):
        land(spark, catalog, part, settings.apply_name)
    start_apply(spark, catalog, settings)


def engine_outcome(
    spark: SparkSession, catalog: Catalog, workload: Workload, batches: int = 1
) -> Comparable:
    prepare(spark, catalog, workload, batches)
    run_apply(spark, catalog, workload[0])
    return read_outcome(spark, catalog, workload[0])


def read_outcome(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> Comparable:
    tables = {}
    for name, table in _tables_by_silver_name(settings).items():
        columns = table.definition.columns
        rows = (
            spark.table(catalog.silver_table(name))
            .select(*[spark_text(c, F.col(quote(c.name))).alias(c.name) for c in columns])
            .collect()
        )
        converted = [{c.name: from_spark_text(c, row[c.name]) for c in columns} for row in rows]
        tables[name] = {
            key_text(table, tuple(row[k] for k in table.effective_key)): {
                c.name: to_canonical_text(c, row[c.name]) for c in columns
            }
            for row in converted
        }
    apply = settings.apply_name
    errors = sorted(
        (
            r.source_database,
            r.source_transaction_id,
            r.source_commit_scn,
            r.message_number,
            r.error_number,
            r.error_message,
            r.message_count,
        )
        for r in spark.table(catalog.apply_table(dictionary.ERROR_QUEUE))
        .where(F.col("apply_name") == apply)
        .collect()
    )
    progress = {
        r.source_database: r
        for r in spark.table(catalog.apply_table(dictionary.PROGRESS))
        .where(F.col("apply_name") == apply)
        .orderBy("cycle_id")
        .collect()
    }
    totals = {"applied": 0, "ignored": 0, "rolled_back": 0, "errors": 0, "received": 0}
    for row in progress.values():
        totals["applied"] += row.total_applied
        totals["ignored"] += row.total_ignored
        totals["rolled_back"] += row.total_rolled_back
        totals["errors"] += row.total_errors
        totals["received"] += row.total_received
    return {
        "tables": tables,
        "errors": errors,
        "counters": totals,
        "low_watermark": {
            s: progress[s].low_watermark if s in progress else None
            for s in settings.source_databases
        },
        "oldest_scn": {
            s: progress[s].oldest_scn if s in progress else None for s in settings.source_databases
        },
        "aborted": apply_status(spark, catalog, apply) == "ABORTED",
    }
