"""What a first run pays to create its empty tables: the old way against the current one.

A first ``lakeapply`` run (and every test with its own databases) creates the bronze and apply
dictionary tables, about twenty empty Delta tables. Measured in one session, ``--repeat`` times,
each time into new databases:

* baseline: one after the other, each by writing an empty DataFrame (``saveAsTable``), which
  plans and runs a Spark job besides the Delta commit and the metastore entry (lakeapply's way
  until 2026-11-26);
* current: :func:`lakeapply.silver.plan.ensure_dictionary_tables` (what a first publish
  creates), a ``CREATE TABLE`` with a column list per table (a commit and a metastore entry,
  no job), several side by side.

Writes ``benchmarks/results/table-creation-<timestamp>.md`` and ``table-creation-latest.md``.

    .venv/bin/python benchmarks/table_creation.py --repeat 3
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from apply_bench import RESULTS, _machine, write_results
from pyspark.sql import SparkSession

from lakeapply.bronze.tables import (
    INGEST_LOG_TABLE,
    LCR_TABLE,
    QUARANTINE_TABLE,
    ingest_log_table_schema,
    lcr_table_schema,
    quarantine_table_schema,
)
from lakeapply.runtime.catalog import Catalog, ensure_database
from lakeapply.runtime.lease import hold_warehouse_for_process
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from lakeapply.silver import dictionary
from lakeapply.silver.plan import ensure_dictionary_tables


def _one_by_one_with_empty_writes(spark: SparkSession, catalog: Catalog) -> int:
    """The baseline; returns the number of tables created."""
    for database in (catalog.bronze, catalog.apply):
        ensure_database(spark, catalog.database(database))
    tables = [
        (catalog.bronze_table(LCR_TABLE), lcr_table_schema()),
        (catalog.bronze_table(QUARANTINE_TABLE), quarantine_table_schema()),
        (catalog.bronze_table(INGEST_LOG_TABLE), ingest_log_table_schema()),
        *[(catalog.apply_table(n), s) for n, s in dictionary.DICTIONARY_TABLES.items()],
    ]
    for name, schema in tables:
        if not spark.catalog.tableExists(name):
            spark.createDataFrame([], schema).write.format("delta").mode("ignore").saveAsTable(name)
    return len(tables)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="lakeapply-creation-"))
    hold_warehouse_for_process(work / "warehouse")  # as the CLI does (runtime/lease.py)
    spark = get_spark(LocalSparkSettings(work / "warehouse", app_name="lakeapply-creation"))
    rows = []
    for n in range(args.repeat):
        started = time.perf_counter()
        count = _one_by_one_with_empty_writes(spark, Catalog(f"baseline{n}"))
        baseline = time.perf_counter() - started
        started = time.perf_counter()
        ensure_dictionary_tables(spark, Catalog(f"current{n}"))
        current = time.perf_counter() - started
        rows.append(
            f"| {n + 1} | {count} | {baseline:.1f} | {current:.1f} | {baseline / current:.1f}x |"
        )
        print(rows[-1])
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    text = [
        "# Creating a first run's empty tables",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}, local[2], one session "
        "(the first repetition also warms the JVM up).",
        "",
        "| repetition | tables | one by one, empty DataFrame writes (s) | "
        "CREATE TABLE, side by side (s) | ratio |",
        "|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    write_results(args.out, "table-creation", "\n".join(text))


if __name__ == "__main__":
    main()
