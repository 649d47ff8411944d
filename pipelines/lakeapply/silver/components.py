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

Finer, and tried first: ``seeds_reached`` follows the shared groups forward in commit order only
(a failure changes nothing that committed before it), so failures of one component that do
not reach each other are proven in the same pass. Up to ``ONE_TASK_TOUCHES`` touches that walk
is one pandas task (numpy per hop); above, one Spark join per hop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

TABLE = "silver_table"
# Up to this many (transaction, group) touches up to the last seed, the reachability walk runs
# in one Python task, each hop a few numpy operations; above it, as Spark joins. A hop as Spark
# jobs costs ~0.75 s whatever its size (measured 2026-12-06: 9-13 hops per fold pass of a 100k-LCR
# cycle with 1% error transactions, 10-12 s a pass); 2M touches are ~50 MB of numpy arrays.
ONE_TASK_TOUCHES = 2_000_000
STATIC_GROUP = "!static"  # LCRs without a key: their errors need no state, they link nothing
TRANSACTION = ["source_database_name", "transaction_id"]
# A seed: a new failure of a fold pass, (source database, transaction id), and the group where
# the pass rolled it back (silver table, group id), or None twice.
Seed = tuple[str, str, str | None, str | None]


def driver_rows(
    spark: SparkSession, rows: Iterable[Sequence[str | None]], columns: Sequence[str]
) -> DataFrame:
    """String rows the driver holds (a fold pass's failures: a few thousand at most) as a frame
    the planner can size and broadcast: sent as one Arrow batch, a local relation. (A frame of
    Python rows is an RDD scan of unknown size: a shuffle to meet it, a job to send it; the
    same rows as literals of an IN list cost ~0.7 ms each to build, 1 s per 1,500.)"""
    schema = T.StructType([T.StructField(column, T.StringType()) for column in columns])
    listed = [tuple(row) for row in rows]
    if not listed:  # pandas sends an empty frame as an RDD scan: one row, filtered out
        return spark.createDataFrame(
            pd.DataFrame([(None,) * len(columns)], columns=list(columns), dtype=object), schema
        ).where(F.lit(False))
    return spark.createDataFrame(pd.DataFrame(listed, columns=list(columns), dtype=object), schema)


def commit_order(prefix: str) -> list[str]:
    """The columns of a transaction's apply position, in order (rule 4)."""
    return [f"{prefix}commit_scn", f"{prefix}source_database_name", f"{prefix}transaction_id"]


def commits_after(earlier: str, later: str) -> Column:
    """``later`` commits after ``earlier`` (commit order: commit SCN, database, transaction)."""

    # Same field names on both sides: struct comparison needs equal types, names included.
    def position(prefix: str) -> Column:
        return F.struct(*[F.col(c).alias(f"p{i}") for i, c in enumerate(commit_order(prefix))])

    return position(later) > position(earlier)


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


class TouchGraph:
    """A cycle's touches, walked once per fold pass by ``seeds_reached``.

    touches: (source_database_name, transaction_id, commit_scn, silver_table, group_id), one
    row per keyed fold group a transaction touches. Up to ``one_task_touches`` touches the
    transactions and groups are numbered once (in Spark; a transaction's number is its place in
    commit order) and every walk is one pandas task over the numbers; above, Spark joins, one
    per hop, at most ``max_iterations``."""

    def __init__(
        self, touches: DataFrame, max_iterations: int, one_task_touches: int = ONE_TASK_TOUCHES
    ) -> None:
        self.touches, self.max_iterations = touches, max_iterations
        self.one_task_touches = one_task_touches
        self._numbered: tuple[DataFrame, DataFrame, DataFrame] | None = None
        self._small: bool | None = None

    def seeds_reached(self, seeds: Sequence[Seed]) -> set[tuple[str, str]] | None:
        """The seeds whose outcome another seed's can change, followed forward in commit order.

        seeds: (source_database_name, transaction_id, silver_table, group_id), the last two a
        group where the pass already rolled the seed back (where it failed), or None: so
        that it changes nothing there if it fails, and a seed reaches nothing through it unless
        it is reached itself. A transaction is reached when it commits after a seed, or after a
        reached transaction, and touches a group that one touches: only then can what it sees
        differ. Returns (source_database_name, transaction_id) of the seeds reached this way. Finer than the components, which ignore
        commit order: a failure is certain when no other failure of its pass reaches it. None
        when the chains need more than ``max_iterations`` joins (the one-task walk has no limit).

        Only the way to a seed matters, so the walk keeps to transactions committing no later
        than the last seed, and stops once every seed but the first is reached (nothing commits
        before the first seed to reach it)."""
        if self._small is None:
            self._small = self.touches.count() <= self.one_task_touches
        if self._small:
            return self._reached_in_one_task(seeds)
        frame = driver_rows(self.touches.sparkSession, seeds, [*TRANSACTION, TABLE, "group_id"])
        rolled_back = frame.where(F.col("group_id").isNotNull())
        distinct_seeds = frame.select(*TRANSACTION).distinct()
        reached = _reached_by_joins(self.touches, distinct_seeds, rolled_back, self.max_iterations)
        return None if reached is None else {(row[0], row[1]) for row in reached.collect()}

    def _reached_in_one_task(self, seeds: Sequence[Seed]) -> set[tuple[str, str]]:
        if self._numbered is None:
            ranked = self.touches.select(
                *TRANSACTION,
                TABLE,
                "group_id",
                F.dense_rank().over(Window.orderBy(*commit_order(""))).alias("t"),
                F.dense_rank().over(Window.orderBy(TABLE, "group_id")).alias("g"),
            ).localCheckpoint()
            self._numbered = (
                # One partition: every walk is one task, with no shuffle to gather the touches.
                ranked.select("t", "g").repartition(1).localCheckpoint(),
                ranked.select(*TRANSACTION, "t").distinct().localCheckpoint(),
                ranked.select(TABLE, "group_id", "g").distinct().localCheckpoint(),
            )
        edges, numbers, groups = self._numbered
        spark = numbers.sparkSession
        number_of = {
            (row[0], row[1]): int(row.t)
            for row in numbers.join(
                F.broadcast(driver_rows(spark, {(s[0], s[1]) for s in seeds}, TRANSACTION)),
                TRANSACTION,
            )
            .select(*TRANSACTION, "t")
            .collect()  # one row per seed with keyed touches (the others reach nothing)
        }
        if len(number_of) < 2:  # one seed (or none) with keyed touches: nothing to reach
            return set()
        rolled_back_in = [
            (source, transaction, table, group)
            for source, transaction, table, group in seeds
            if table is not None and group is not None
        ]
        group_number_of = {
            (row[0], row[1]): int(row.g)
            for row in groups.join(
                F.broadcast(
                    driver_rows(spark, {(s[2], s[3]) for s in rolled_back_in}, [TABLE, "group_id"])
                ),
                [TABLE, "group_id"],
            )
            .select(TABLE, "group_id", "g")
            .collect()  # one row per group where a seed failed
        }
        rolled_back = [
            (number_of[(source, transaction)], group_number_of[(table, group)])
            for source, transaction, table, group in rolled_back_in
            if (source, transaction) in number_of and (table, group) in group_number_of
        ]
        transaction_of = {t: transaction for transaction, t in number_of.items()}
        seed_numbers = np.array(sorted(transaction_of))
        walked = edges.where(F.col("t") <= int(seed_numbers[-1])).mapInPandas(
            _walk_from(seed_numbers, rolled_back), "t int"
        )
        return {transaction_of[row.t] for row in walked.collect()}  # seeds only


def seeds_reached(
    touches: DataFrame,
    seeds: Sequence[Seed],
    max_iterations: int,
    one_task_touches: int = ONE_TASK_TOUCHES,
) -> set[tuple[str, str]] | None:
    """``TouchGraph.seeds_reached`` for one walk."""
    return TouchGraph(touches, max_iterations, one_task_touches).seeds_reached(seeds)


def _reached_by_joins(
    touches: DataFrame, seeds: DataFrame, rolled_back: DataFrame, max_iterations: int
) -> DataFrame | None:
    last_seed = (
        touches.join(seeds, TRANSACTION, "left_semi")
        .select(F.max(F.struct(*[F.col(c) for c in commit_order("")])).alias("last"))
        .select(*[F.col(f"last.{c}").alias(f"l_{c}") for c in commit_order("")])
    )
    bounded = (
        touches.crossJoin(F.broadcast(last_seed))
        .where(~commits_after("l_", ""))
        .select(*touches.columns)
    ).localCheckpoint()
    reachable_seeds = (
        bounded.join(seeds, TRANSACTION, "left_semi").select(*TRANSACTION).distinct().count() - 1
    )
    reached = seeds.limit(0)
    if reachable_seeds <= 0:
        return reached
    reached_seed_count = 0
    frontier = seeds
    for hop in range(max_iterations):
        frontier_touches = bounded.join(frontier, TRANSACTION, "left_semi")
        if hop == 0:
            frontier_touches = frontier_touches.join(
                F.broadcast(rolled_back), [*TRANSACTION, TABLE, "group_id"], "left_anti"
            )
        earlier = frontier_touches.select(
            *[F.col(c).alias(f"h_{c}") for c in commit_order("")], TABLE, "group_id"
        )
        newly = (
            bounded.join(earlier, [TABLE, "group_id"])
            .where(commits_after("h_", ""))
            .select(*TRANSACTION)
            .distinct()
            .join(reached, TRANSACTION, "left_anti")
            .localCheckpoint()
        )
        counted = (
            newly.join(seeds.withColumn("seed", F.lit(True)), TRANSACTION, "left")
            .agg(F.count(F.lit(1)).alias("newly"), F.count("seed").alias("seeds"))
            .first()
        )
        if counted is None or counted["newly"] == 0:
            return reached.join(seeds, TRANSACTION, "left_semi")
        reached_seed_count += counted["seeds"]
        reached = reached.unionByName(newly).localCheckpoint()
        if reached_seed_count >= reachable_seeds:
            return reached.join(seeds, TRANSACTION, "left_semi")
        frontier = newly
    return None


def _walk_from(
    seed_numbers: np.ndarray, rolled_back: list[tuple[int, int]]
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """``_walk_forward`` over (t, g) touches, the seeds and their rolled-back touches given by
    their numbers."""

    def pair_codes(t: np.ndarray, g: np.ndarray) -> np.ndarray:
        return (t.astype(np.int64) << 32) | g.astype(np.int64)

    rolled_back_codes = pair_codes(*np.array(rolled_back, dtype=np.int64).reshape(-1, 2).T)

    def walk(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        touches = pd.concat(list(batches), ignore_index=True)  # one partition: all of them
        if touches.empty:
            return
        codes = pair_codes(touches["t"].to_numpy(), touches["g"].to_numpy())
        yield _walk_forward(
            touches.assign(
                seed=np.isin(touches["t"].to_numpy(), seed_numbers),
                rolled_back=np.isin(codes, rolled_back_codes),
            )
        )

    return walk


def _walk_forward(touches: pd.DataFrame) -> pd.DataFrame:
    """(t, g, seed) touches -> t of the seeds another seed reaches: from the seeds, each hop
    adds the transactions that commit after the earliest frontier transaction of a group they
    touch (t is the commit order), until a hop adds none or every seed but the first is
    reached."""
    t = touches["t"].to_numpy(dtype=np.int64)
    g = touches["g"].to_numpy(dtype=np.int64)
    transactions, groups = int(t.max()) + 1, int(g.max()) + 1
    seed = np.zeros(transactions, dtype=bool)
    seed[t[touches["seed"].to_numpy(dtype=bool)]] = True
    reachable = int(seed.sum()) - 1
    reached = np.zeros(transactions, dtype=bool)
    frontier = seed
    # A seed's own failing group: the pass rolled it back there already.
    first_hop = ~touches["rolled_back"].to_numpy(dtype=bool) if "rolled_back" in touches else None
    while True:
        in_frontier = frontier[t]
        if first_hop is not None:
            in_frontier, first_hop = in_frontier & first_hop, None
        earliest = np.full(groups, transactions, dtype=np.int64)
        np.minimum.at(earliest, g[in_frontier], t[in_frontier])
        newly = np.zeros(transactions, dtype=bool)
        newly[t[t > earliest[g]]] = True
        newly &= ~reached
        if not newly.any():
            break
        reached |= newly
        if int((reached & seed).sum()) >= reachable:
            break
        frontier = newly
    return pd.DataFrame({"t": np.flatnonzero(reached & seed).astype(np.int32)})
