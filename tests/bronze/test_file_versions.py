"""A landing file that changes after it was ingested: grown, touched, rewritten in place (same or
another length), a compressed file replaced; and an ingest log written by an older lakeapply."""

from __future__ import annotations

import gzip
import os
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.bronze.ingest import ingest
from lakeapply.bronze.tables import ingest_log_schema
from lakeapply.runtime.catalog import Catalog, ensure_database, ensure_delta_table

INSERT = (
    '{"source_database_name":"ORCL","command_type":"INSERT","object_owner":"US03",'
    '"object_name":"STUDENT","transaction_id":"4.11.854","scn":1621214,"new_values":'
    '[{"column_name":"STUDENT_KEY","data_type":"NUMBER","value":"1011"}]}\n'
)
COMMIT = '{"source_database_name":"ORCL","command_type":"COMMIT","transaction_id":"4.11.854","scn":1621215}\n'


def later_mtime(path: Path) -> None:
    """Move the file's mtime on by a second: a rewrite within the file system's timestamp
    granularity must not depend on luck here."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def landed(spark: SparkSession, catalog: Catalog, batch_id: int) -> list[tuple[str, int]]:
    rows = (
        spark.table(catalog.bronze_table("lcr"))
        .where(F.col("ingest_batch_id") == batch_id)
        .orderBy("line_number")
        .collect()
    )
    return [(r.transaction_id, r.line_number) for r in rows]


def committed_log(spark: SparkSession, catalog: Catalog, batch_id: int) -> list[object]:
    return (
        spark.table(catalog.bronze_table("ingest_log"))
        .where((F.col("batch_id") == batch_id) & (F.col("phase") == "COMMITTED"))
        .collect()
    )


def test_a_file_rewritten_in_place_is_ingested_again_as_a_new_version(
    spark: SparkSession, catalog: Catalog, landing: Path
) -> None:
    path, touched = landing / "a.jsonl", landing / "touched.jsonl"
    path.write_text(INSERT + COMMIT)
    touched.write_text(COMMIT)
    first = ingest(spark, catalog, landing)

    # Same length, other content (the next transaction), and a file only touched.
    path.write_text((INSERT + COMMIT).replace("4.11.854", "4.11.855"))
    later_mtime(path)
    later_mtime(touched)
    same_length = ingest(spark, catalog, landing)
    # Shorter than what was ingested.
    path.write_text(COMMIT.replace("4.11.854", "4.11.856"))
    shorter = ingest(spark, catalog, landing)
    # The new version then grows: read on from where it was, with its own line numbers.
    with path.open("a") as handle:
        handle.write(COMMIT.replace("4.11.854", "4.11.857"))
    grown = ingest(spark, catalog, landing)

    assert first.lines == 3
    assert same_length.batch_id is not None and shorter.batch_id is not None
    assert grown.batch_id is not None
    assert [Path(f.source_file).name for f in same_length.files] == ["a.jsonl"]  # touched: skipped
    assert landed(spark, catalog, same_length.batch_id) == [("4.11.855", 1), ("4.11.855", 2)]
    assert landed(spark, catalog, shorter.batch_id) == [("4.11.856", 1)]
    assert landed(spark, catalog, grown.batch_id) == [("4.11.857", 2)]
    (log_same_length,) = committed_log(spark, catalog, same_length.batch_id)
    (log_shorter,) = committed_log(spark, catalog, shorter.batch_id)
    (log_grown,) = committed_log(spark, catalog, grown.batch_id)
    assert (log_same_length.file_version, log_same_length.start_offset) == (2, 0)
    assert "rewritten in place" in log_same_length.note
    assert "read again from offset 0 as version 2" in log_same_length.note
    assert (log_shorter.file_version, log_shorter.start_offset) == (3, 0)
    assert "shrank" in log_shorter.note
    assert (log_grown.file_version, log_grown.start_offset, log_grown.note) == (
        3,
        len(COMMIT),
        None,
    )
    assert spark.table(catalog.bronze_table("lcr")).count() == 3 + 2 + 1 + 1


def test_an_unreadable_gzip_file_is_not_read_again_until_it_is_replaced(
    spark: SparkSession, catalog: Catalog, landing: Path
) -> None:
    whole = gzip.compress((INSERT + COMMIT).encode())
    path = landing / "a.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    (landing / "b.jsonl").write_text(INSERT)

    broken = ingest(spark, catalog, landing)
    again = ingest(spark, catalog, landing)
    path.write_bytes(whole)
    later_mtime(path)
    replaced = ingest(spark, catalog, landing)

    assert (broken.bronze_rows, broken.quarantined_rows) == (1, 1)  # b.jsonl is not blocked
    assert again.batch_id is None
    assert (replaced.bronze_rows, replaced.quarantined_rows) == (2, 0)
    (result,) = replaced.files
    assert result.file_version == 2
    assert result.note is not None and "compressed file" in result.note


def test_an_ingest_log_of_an_older_lakeapply_gets_the_new_columns_and_is_resumed(
    spark: SparkSession, catalog: Catalog, landing: Path
) -> None:
    path = landing / "a.jsonl"
    path.write_text(INSERT)
    ensure_database(spark, catalog.bronze)
    log_table = catalog.bronze_table("ingest_log")
    ensure_delta_table(spark, log_table, ingest_log_schema())  # the columns before this change
    spark.createDataFrame(
        [
            (
                1,
                "COMMITTED",
                str(path.resolve()),
                False,
                0,
                len(INSERT),
                1,
                len(INSERT),
                1,
                1,
                0,
                datetime(2024, 1, 1),
            )
        ],
        ingest_log_schema(),
    ).write.format("delta").mode("append").saveAsTable(log_table)
    with path.open("a") as handle:
        handle.write(COMMIT)

    report = ingest(spark, catalog, landing)

    assert report.batch_id == 2
    assert landed(spark, catalog, 2) == [("4.11.854", 2)]  # line 1 was ingested by batch 1
    (row,) = committed_log(spark, catalog, 2)
    assert (row.file_version, row.start_offset) == (1, len(INSERT))
    assert row.fingerprint == f"{len(INSERT + COMMIT)}:" + row.fingerprint.split(":")[1]
