"""Assemble source transactions from bronze LCRs (apply-semantics rule 1).

Pure DataFrame -> DataFrame. A transaction is ``(source_database_name, transaction_id)``:

* COMMITTED: a COMMIT has landed; its ``scn`` is the commit SCN (CSCN). A DDL-only transaction
  whose LCRs carry ``commit_scn`` is committed without a COMMIT (a DDL LCR is its own transaction).
* ROLLED_BACK: a ROLLBACK has landed; none of its LCRs may ever be applied (it wins over COMMIT).
* OPEN: neither yet; its LCRs wait (possibly across many cycles) and count toward the oldest SCN.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import quote
from lakeapply.contract.lcr import lcr_bronze_fields

TRANSACTION_KEY = ("source_database_name", "transaction_id")


def assemble_transactions(lcrs: DataFrame) -> DataFrame:
    """One row per transaction: state, commit_scn, first_scn, LCR counts, commit source time."""
    command = F.col("command_type")
    is_commit = command == "COMMIT"
    is_ddl = F.col("lcr_kind") == "DDL"
    summary = lcrs.groupBy(*TRANSACTION_KEY).agg(
        F.max(F.when(is_commit, F.col("scn"))).alias("commit_directive_scn"),
        F.max(F.when(is_ddl, F.col("commit_scn"))).alias("ddl_commit_scn"),
        F.max((command == "ROLLBACK").cast("int")).alias("rolled_back"),
        F.count(F.when(F.col("lcr_kind") == "ROW", 1)).alias("row_lcr_count"),
        F.count(F.when(is_ddl, 1)).alias("ddl_lcr_count"),
        F.count(F.lit(1)).alias("lcr_count"),
        F.min(F.when(F.col("lcr_kind") != "DIRECTIVE", F.col("scn"))).alias("first_change_scn"),
        F.min("scn").alias("first_any_scn"),
        F.max(F.when(is_commit, F.col("source_time"))).alias("commit_source_time"),
    )
    ddl_only = (F.col("row_lcr_count") == 0) & (F.col("ddl_lcr_count") > 0)
    commit_scn = F.coalesce(
        F.col("commit_directive_scn"), F.when(ddl_only, F.col("ddl_commit_scn"))
    )
    state = (
        F.when(F.col("rolled_back") == 1, F.lit("ROLLED_BACK"))
        .when(commit_scn.isNotNull(), F.lit("COMMITTED"))
        .otherwise(F.lit("OPEN"))
    )
    return summary.select(
        *TRANSACTION_KEY,
        state.alias("state"),
        F.when(state == "COMMITTED", commit_scn).alias("commit_scn"),
        F.coalesce("first_change_scn", "first_any_scn").alias("first_scn"),
        "lcr_count",
        "row_lcr_count",
        "ddl_lcr_count",
        "commit_source_time",
    )


def without_copies(lcrs: DataFrame) -> DataFrame:
    """Rule 11: an LCR delivered twice (a line landed again, a file landed under two names) is
    one LCR. An LCR is identified by its content, every contract field (the same change, at the
    same SCN and position, of the same transaction); lineage is not part of it. The first
    arrival is kept, so message numbers do not depend on the copies."""
    identity = [F.col(quote(f.name)) for f in lcr_bronze_fields().fields]
    first = Window.partitionBy(*identity).orderBy("ingest_batch_id", "source_file", "line_number")
    return (
        lcrs.withColumn("__lakeapply_copy", F.row_number().over(first))
        .where(F.col("__lakeapply_copy") == 1)
        .drop("__lakeapply_copy")
    )
