"""`lakeapply status`: what bronze holds, counted from the bronze tables."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from lakeapply.bronze.ingest import ingest
from lakeapply.runtime.catalog import Catalog
from lakeapply.status import SourceCounts, collect_status


def _lcr(command: str, transaction: str, scn: int, **fields: object) -> str:
    record: dict[str, object] = {
        "source_database_name": "ORCL",
        "command_type": command,
        "transaction_id": transaction,
        "scn": scn,
        **fields,
    }
    return json.dumps(record) + "\n"


def _insert(transaction: str, scn: int) -> str:
    return _lcr(
        "INSERT",
        transaction,
        scn,
        object_owner="US03",
        object_name="STUDENT",
        new_values=[{"column_name": "ID", "data_type": "NUMBER", "value": "1"}],
    )


def test_status_counts_sources_quarantined_lines_batches_and_files(
    spark: SparkSession, catalog: Catalog, landing: Path
) -> None:
    (landing / "a.jsonl").write_text(
        _insert("1.1.1", 10)
        + _lcr("COMMIT", "1.1.1", 11)
        + _insert("2.2.2", 12)
        + _lcr("ROLLBACK", "2.2.2", 13)
        + "not json\n"
        + _lcr("COMMIT", "bad id", 14)
        + _lcr("COMMIT", "also bad", 15)
    )
    ingest(spark, catalog, landing)
    (landing / "b.jsonl").write_text(_lcr("COMMIT", "3.3.3", 16) + "{}\n")
    ingest(spark, catalog, landing)

    report = collect_status(spark, catalog)

    assert report.sources == [SourceCounts("ORCL", 5, 3, 2, 1)]
    assert report.bronze_lcrs == 5
    assert report.quarantined_lines == 4
    assert (report.ingest_batches, report.landing_files) == (2, 2)
    # The commonest offending field first; a tie in the order of the fields' names.
    assert report.quarantine_reasons[0] == ("transaction_id", 2)
    assert sum(n for _, n in report.quarantine_reasons) == 4


def test_status_of_a_warehouse_without_bronze_is_empty(
    spark: SparkSession, catalog: Catalog
) -> None:
    report = collect_status(spark, catalog)

    assert (report.bronze_lcrs, report.quarantined_lines, report.sources) == (0, 0, [])
