"""Land LCR dicts straight into bronze (the contract parse and bronze row shape of the real
ingest, without files), as one ingest batch."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.bronze.ingest import bronze_rows, ensure_bronze_tables
from lakeapply.bronze.tables import INGEST_LOG_TABLE, LCR_TABLE, ingest_log_schema, lcr_table_schema
from lakeapply.bronze.validate import classify_lines
from lakeapply.runtime.catalog import Catalog


def land(spark: SparkSession, catalog: Catalog, lcrs: list[dict[str, Any]], name: str = "t") -> int:
    """Append ``lcrs`` (contract dicts, in arrival order) to bronze as a new batch; its id."""
    ensure_bronze_tables(spark, catalog)
    log_table = catalog.bronze_table(INGEST_LOG_TABLE)
    batch_id = (spark.table(log_table).agg(F.max("batch_id")).collect()[0][0] or 0) + 1
    source_file = f"/landing/{name}_{batch_id}.jsonl"
    lines = spark.createDataFrame(
        [(source_file, index + 1, index * 1000, json.dumps(lcr)) for index, lcr in enumerate(lcrs)],
        "source_file string, line_number long, byte_offset long, line string",
    )
    classified = classify_lines(lines)
    bad = classified.where(F.col("reason").isNotNull()).select("line", "reason").collect()
    assert not bad, bad
    now = datetime.now(UTC).replace(tzinfo=None)
    frame = bronze_rows(classified, batch_id, now)
    frame.select(
        *[F.col(f"`{f.name}`").cast(f.dataType) for f in lcr_table_schema().fields]
    ).write.format("delta").mode("append").saveAsTable(catalog.bronze_table(LCR_TABLE))
    spark.createDataFrame(
        [(batch_id, "COMMITTED", source_file, False, 0, 0, 1, 0, len(lcrs), len(lcrs), 0, now)],
        ingest_log_schema(),
    ).write.format("delta").mode("append").saveAsTable(log_table)
    return batch_id
