"""Schemas of the bronze tables."""

from __future__ import annotations

from pyspark.sql import types as T

from lakeapply.contract.lcr import lcr_bronze_fields

LCR_TABLE = "lcr"
QUARANTINE_TABLE = "quarantine"
INGEST_LOG_TABLE = "ingest_log"

LINEAGE_FIELDS = [
    T.StructField("source_file", T.StringType(), False),
    T.StructField("line_number", T.LongType(), False),
    T.StructField("byte_offset", T.LongType(), False),
    T.StructField("ingest_batch_id", T.LongType(), False),
    T.StructField("ingested_at", T.TimestampType(), False),
]


def lcr_table_schema() -> T.StructType:
    """Every valid LCR: the contract's fields, the raw line (nothing an LCR carries is lost), lineage."""
    return T.StructType(
        [
            *lcr_bronze_fields().fields,
            T.StructField("lcr_kind", T.StringType(), False),  # ROW, DIRECTIVE or DDL
            T.StructField("raw_lcr", T.StringType(), False),
            *LINEAGE_FIELDS,
        ]
    )


def quarantine_table_schema() -> T.StructType:
    return T.StructType(
        [
            T.StructField("raw_line", T.StringType(), False),
            T.StructField("field", T.StringType(), True),
            T.StructField("reason", T.StringType(), False),
            *LINEAGE_FIELDS,
        ]
    )


def ingest_log_schema() -> T.StructType:
    """The ingest progress: a PLANNED row per file before any data is written, a COMMITTED row after.

    These are the columns every writer of the log supplies; the table also has the nullable
    :func:`ingest_log_file_identity_fields` (see :func:`ingest_log_table_schema`)."""
    return T.StructType(
        [
            T.StructField("batch_id", T.LongType(), False),
            T.StructField("phase", T.StringType(), False),  # PLANNED | COMMITTED
            T.StructField("source_file", T.StringType(), False),
            T.StructField("compressed", T.BooleanType(), False),
            T.StructField("start_offset", T.LongType(), False),  # bytes already ingested
            T.StructField("size_bound", T.LongType(), False),  # file size when planned
            T.StructField("first_line_number", T.LongType(), False),
            T.StructField("end_offset", T.LongType(), True),  # COMMITTED: after the last full line
            T.StructField("lines", T.LongType(), True),  # COMMITTED: complete lines ingested
            T.StructField("bronze_rows", T.LongType(), True),
            T.StructField("quarantined_rows", T.LongType(), True),
            T.StructField("logged_at", T.TimestampType(), False),
        ]
    )


def ingest_log_file_identity_fields() -> list[T.StructField]:
    """How the ingest tells a grown file from one rewritten in place. Added after the first
    release: NULL in rows logged before (a table created then gets them by ALTER TABLE)."""
    return [
        # 1 for the first content seen under a file name, +1 each time it is found rewritten
        T.StructField("file_version", T.LongType(), True),
        T.StructField("modified_ns", T.LongType(), True),  # the file's mtime when planned
        # "<length>:<sha256>" of the first and last 64 KiB of the ingested prefix (COMMITTED:
        # [0, end_offset); compressed files: the whole file). See lakeapply.bronze.lines.
        T.StructField("fingerprint", T.StringType(), True),
        T.StructField("note", T.StringType(), True),  # e.g. why a file was read again from 0
        # What the file holds (lakeapply.bronze.formats; NULL in rows logged before: lcr-json), so
        # a resumed batch reads each file as it was planned, whatever the resuming run was told.
        T.StructField("capture_format", T.StringType(), True),
        T.StructField("capture_source_database", T.StringType(), True),
    ]


def ingest_log_table_schema() -> T.StructType:
    return T.StructType([*ingest_log_schema().fields, *ingest_log_file_identity_fields()])
