"""Connected components, by min-label propagation: one small join per iteration.

Two graphs of a cycle need them:

- **Keys linked by key-changing updates.** An UPDATE that changes a row's key links its old key
  and its new key: every change to either key must be folded in one sequence. Iterations follow
  the longest chain of key changes in the cycle, not the number of LCRs, and a cycle without key
  changes runs none.
- **Transactions linked by the fold groups they touch** (design-notes 1). A failing transaction
  changes what later transactions see only in the groups it touches, and so, transitively, only
  in its component. The earliest new failure of each component is therefore as certain as the
  earliest of the whole cycle, and one fold pass can take one failure per component instead of
  one per cycle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TABLE = "silver_table"
STATIC_GROUP = "!static"  # LCRs without a key: their errors need no state, they link nothing


def _labels(edges: DataFrame, by: list[str], max_iterations: int | None) -> DataFrame | None:
    """(*by, node, peer) -> (*by, node, label): the smallest node of each node's component
    within ``by``; None when ``max_iterations`` pass before the labels settle."""
    both_ways = (
        edges.unionByName(
            edges.select(*by, F.col("peer").alias("node"), F.col("node").alias("peer"))
        )
        .where(F.col("node").isNotNull() & F.col("peer").isNotNull())
        .distinct()
        .localCheckpoint()
    )
    labels = (
        both_ways.groupBy(*by, "node")
        .agg(F.least(F.col("node"), F.min("peer")).alias("label"))
        .localCheckpoint()
    )
    iterations = 0
    while True:
        iterations += 1
        from_peers = (
            both_ways.join(
                labels.select(*by, F.col("node").alias("peer"), F.col("label").alias("offered")),
                [*by, "peer"],
            )
            .groupBy(*by, "node")
            .agg(F.min("offered").alias("offered"))
        )
        updated = (
            labels.join(from_peers, [*by, "node"], "left")
            .select(
                *by,
                "node",
                F.least("label", F.coalesce("offered", "label")).alias("label"),
                (F.col("offered") < F.col("label")).alias("changed"),
            )
            .localCheckpoint()
        )
        labels = updated.drop("changed")
        if updated.where(F.col("changed")).limit(1).count() == 0:
            return labels
        if max_iterations is not None and iterations >= max_iterations:
            return None


def key_components(links: DataFrame) -> DataFrame:
    """(silver_table, key_text, moved_key_text) -> (silver_table, key_text, component)."""
    edges = links.select(
        TABLE, F.col("key_text").alias("node"), F.col("moved_key_text").alias("peer")
    )
    labels = _labels(edges, [TABLE], max_iterations=None)
    assert labels is not None  # no iteration limit
    return labels.select(TABLE, F.col("node").alias("key_text"), F.col("label").alias("component"))


def transaction_components(lcrs: DataFrame, max_iterations: int) -> DataFrame | None:
    """(source_database_name, transaction_id, silver_table, group_id) of the fold's LCRs ->
    (source_database_name, transaction_id, component) for transactions with keyed LCRs; None
    when the graph is too long to label in ``max_iterations`` joins (the caller then takes one
    failure per pass, which is always right)."""
    transaction_node = F.concat_ws("\u0000", F.lit("T"), "source_database_name", "transaction_id")
    edges = (
        lcrs.where(F.col("group_id") != STATIC_GROUP)
        .select(
            transaction_node.alias("node"),
            F.concat_ws("\u0000", F.lit("G"), TABLE, "group_id").alias("peer"),
        )
        .distinct()
    )
    labels = _labels(edges, [], max_iterations)
    if labels is None:
        return None
    transactions = (
        lcrs.select("source_database_name", "transaction_id")
        .distinct()
        .withColumn("node", transaction_node)
    )
    return transactions.join(labels, ["node"]).select(
        "source_database_name", "transaction_id", F.col("label").alias("component")
    )
