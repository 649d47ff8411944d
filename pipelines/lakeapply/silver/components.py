"""Connected components of destination keys linked by key-changing updates.

An UPDATE that changes a row's key links its old key and its new key: every change to either key
must be folded in one sequence. Keys are labelled with the smallest key of their component by
min-label propagation, one small join per iteration; iterations follow the longest chain of key
changes in the cycle, not the number of LCRs, and a cycle without key changes runs none.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TABLE = "silver_table"


def key_components(links: DataFrame) -> DataFrame:
    """(silver_table, key_text, moved_key_text) -> (silver_table, key_text, component)."""
    edges = links.select(
        TABLE, F.col("key_text").alias("node"), F.col("moved_key_text").alias("peer")
    )
    both_ways = (
        edges.unionByName(
            edges.select(TABLE, F.col("peer").alias("node"), F.col("node").alias("peer"))
        )
        .where(F.col("node").isNotNull() & F.col("peer").isNotNull())
        .distinct()
        .localCheckpoint()
    )
    labels = (
        both_ways.groupBy(TABLE, "node")
        .agg(F.least(F.col("node"), F.min("peer")).alias("label"))
        .localCheckpoint()
    )
    while True:
        from_peers = (
            both_ways.join(
                labels.select(TABLE, F.col("node").alias("peer"), F.col("label").alias("offered")),
                [TABLE, "peer"],
            )
            .groupBy(TABLE, "node")
            .agg(F.min("offered").alias("offered"))
        )
        updated = (
            labels.join(from_peers, [TABLE, "node"], "left")
            .select(
                TABLE,
                "node",
                F.least("label", F.coalesce("offered", "label")).alias("label"),
                (F.col("offered") < F.col("label")).alias("changed"),
            )
            .localCheckpoint()
        )
        labels = updated.drop("changed")
        if updated.where(F.col("changed")).limit(1).count() == 0:
            return labels.select(
                TABLE, F.col("node").alias("key_text"), F.col("label").alias("component")
            )
