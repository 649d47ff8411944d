import random

import pytest
from pyspark.sql import SparkSession

from lakeapply.silver.components import TouchGraph, key_components, seeds_reached


def test_keys_linked_by_key_changes_share_the_smallest_key_as_component(
    spark: SparkSession,
) -> None:
    links = spark.createDataFrame(
        [("t1", "C", "D"), ("t1", "B", "C"), ("t1", "X", "Y"), ("t2", "C", "A")],
        "silver_table string, key_text string, moved_key_text string",
    )
    labels = {(r.silver_table, r.key_text): r.component for r in key_components(links).collect()}
    assert labels == {
        ("t1", "B"): "B",
        ("t1", "C"): "B",
        ("t1", "D"): "B",
        ("t1", "X"): "X",
        ("t1", "Y"): "X",
        ("t2", "A"): "A",
        ("t2", "C"): "A",
    }


def test_a_chain_longer_than_one_hop_converges(spark: SparkSession) -> None:
    chain = [("t", f"k{n:02d}", f"k{n + 1:02d}") for n in range(9, 0, -1)]
    links = spark.createDataFrame(
        chain, "silver_table string, key_text string, moved_key_text string"
    )
    assert {r.component for r in key_components(links).collect()} == {"k01"}


TOUCHES = "source_database_name string, transaction_id string, commit_scn long, silver_table string, group_id string"


# The walk in one task (small cycles) and as Spark joins (large ones).
WALKS = pytest.mark.parametrize("one_task_touches", [10_000, 0], ids=["one task", "spark joins"])


def _seeds_reached(
    spark: SparkSession,
    touches: list[tuple[str, str, int, str, str]],
    seeds: list[str],
    one_task_touches: int = 10_000,
    failed_in: dict[str, str] | None = None,
) -> set[str] | None:
    failed_in = failed_in or {}
    reached = seeds_reached(
        spark.createDataFrame(touches, TOUCHES),
        [("DB", s, "t" if s in failed_in else None, failed_in.get(s)) for s in seeds],
        max_iterations=16,
        one_task_touches=one_task_touches,
    )
    return None if reached is None else {transaction for _, transaction in reached}


@WALKS
def test_a_seed_is_reached_through_a_transaction_that_shares_a_group_with_each(
    spark: SparkSession, one_task_touches: int
) -> None:
    touches = [
        ("DB", "A", 1, "t", "g1"),
        ("DB", "X", 2, "t", "g1"),
        ("DB", "X", 2, "t", "g2"),
        ("DB", "B", 3, "t", "g2"),
        ("DB", "C", 4, "t", "g3"),
    ]
    assert _seeds_reached(spark, touches, ["A", "B", "C"], one_task_touches) == {"B"}


@WALKS
def test_only_a_seed_committing_later_is_reached(
    spark: SparkSession, one_task_touches: int
) -> None:
    touches = [("DB", "A", 5, "t", "g1"), ("DB", "B", 3, "t", "g1")]
    assert _seeds_reached(spark, touches, ["A", "B"], one_task_touches) == {"A"}


@WALKS
def test_a_transaction_committing_after_a_seed_links_nothing_back_to_it(
    spark: SparkSession, one_task_touches: int
) -> None:
    """D shares g1 with A and g3 with C, but commits after both: C's outcome cannot depend on
    A's through D."""
    touches = [
        ("DB", "A", 1, "t", "g1"),
        ("DB", "C", 4, "t", "g3"),
        ("DB", "D", 5, "t", "g1"),
        ("DB", "D", 5, "t", "g3"),
    ]
    assert _seeds_reached(spark, touches, ["A", "C"], one_task_touches) == set()


def test_a_chain_longer_than_the_iteration_limit_gives_no_answer(spark: SparkSession) -> None:
    chain = [("DB", f"T{i:02d}", i, "t", f"g{i}") for i in range(20)] + [
        ("DB", f"T{i:02d}", i, "t", f"g{i - 1}") for i in range(1, 20)
    ]
    reached = seeds_reached(
        spark.createDataFrame(chain, TOUCHES),
        [("DB", "T00", None, None), ("DB", "T19", None, None)],
        max_iterations=3,
        one_task_touches=0,  # the one-task walk has no limit
    )
    assert reached is None


def test_the_one_task_walk_follows_a_chain_of_any_length(spark: SparkSession) -> None:
    chain = [("DB", f"T{i:02d}", i, "t", f"g{i}") for i in range(20)] + [
        ("DB", f"T{i:02d}", i, "t", f"g{i - 1}") for i in range(1, 20)
    ]
    assert _seeds_reached(spark, chain, ["T00", "T10", "T19"]) == {"T10", "T19"}


def _hops_by_hand(
    touches: list[tuple[str, str, int, str, str]],
    seeds: list[str],
    failed_in: dict[str, str] | None = None,
) -> set[str]:
    """The definition, transaction by transaction in commit order: a transaction is reached
    when a group it touches was touched before it by a seed or a reached transaction; a seed
    that is not reached changes nothing in the group it failed in."""
    failed_in = failed_in or {}
    tainted: set[str] = set()
    reached: set[str] = set()
    order = sorted({(scn, txn) for _, txn, scn, _, _ in touches})
    for _, txn in order:
        groups = {group for _, t, _, _, group in touches if t == txn}
        if groups & tainted:
            reached.add(txn)
        if txn in reached:
            tainted |= groups
        elif txn in seeds:
            tainted |= groups - {failed_in.get(txn)}
    return reached & set(seeds)


def test_both_walks_find_what_the_definition_finds_on_drawn_graphs(spark: SparkSession) -> None:
    rng = random.Random(7)
    for _ in range(4):
        transactions = rng.randint(5, 14)
        touches = [
            ("DB", f"T{n:02d}", 100 + n, "t", f"g{rng.randint(0, 6)}")
            for n in range(transactions)
            for _ in range(rng.randint(1, 3))
        ]
        touches = list(dict.fromkeys(touches))
        seeds = rng.sample([f"T{n:02d}" for n in range(transactions)], 3)
        last = max(int(seed[1:]) for seed in seeds)
        bounded = [touch for touch in touches if int(touch[1][1:]) <= last]
        expected = _hops_by_hand(bounded, seeds)
        assert _seeds_reached(spark, touches, seeds) == expected
        assert _seeds_reached(spark, touches, seeds, one_task_touches=0) == expected


def test_a_graph_numbered_once_answers_the_seeds_of_every_pass(spark: SparkSession) -> None:
    rng = random.Random(11)
    touches = list(
        dict.fromkeys(
            ("DB", f"T{n:02d}", 100 + n, "t", f"g{rng.randint(0, 8)}")
            for n in range(16)
            for _ in range(rng.randint(1, 3))
        )
    )
    graph = TouchGraph(spark.createDataFrame(touches, TOUCHES), max_iterations=16)
    for _ in range(3):
        seeds = rng.sample([f"T{n:02d}" for n in range(16)], 4)
        last = max(int(seed[1:]) for seed in seeds)
        bounded = [touch for touch in touches if int(touch[1][1:]) <= last]
        reached = graph.seeds_reached([("DB", s, None, None) for s in seeds])
        assert reached is not None
        assert {transaction for _, transaction in reached} == _hops_by_hand(bounded, seeds)


@WALKS
def test_a_seed_reaches_nothing_through_the_group_it_failed_in(
    spark: SparkSession, one_task_touches: int
) -> None:
    # A failed in g1, where the pass rolled it back: B, after it in g1, sees the same either way.
    touches = [("DB", "A", 1, "t", "g1"), ("DB", "A", 1, "t", "g2"), ("DB", "B", 2, "t", "g1")]
    reached = _seeds_reached(spark, touches, ["A", "B"], one_task_touches, {"A": "g1"})
    assert reached == set()
    assert _seeds_reached(spark, touches, ["A", "B"], one_task_touches, {"A": "g2"}) == {"B"}


@WALKS
def test_a_reached_seed_reaches_on_through_the_group_it_failed_in(
    spark: SparkSession, one_task_touches: int
) -> None:
    # B may apply after all once A fails (A reaches it through g1), and then it changes g2.
    touches = [
        ("DB", "A", 1, "t", "g1"),
        ("DB", "B", 2, "t", "g1"),
        ("DB", "B", 2, "t", "g2"),
        ("DB", "C", 3, "t", "g2"),
    ]
    reached = _seeds_reached(spark, touches, ["A", "B", "C"], one_task_touches, {"B": "g2"})
    assert reached == {"B", "C"}


def test_both_walks_skip_the_failed_group_as_the_definition_does_on_drawn_graphs(
    spark: SparkSession,
) -> None:
    rng = random.Random(13)
    for _ in range(4):
        transactions = rng.randint(5, 14)
        touches = list(
            dict.fromkeys(
                ("DB", f"T{n:02d}", 100 + n, "t", f"g{rng.randint(0, 6)}")
                for n in range(transactions)
                for _ in range(rng.randint(1, 3))
            )
        )
        seeds = rng.sample([f"T{n:02d}" for n in range(transactions)], 4)
        failed_in = {
            seed: rng.choice([g for _, t, _, _, g in touches if t == seed]) for seed in seeds[:3]
        }
        last = max(int(seed[1:]) for seed in seeds)
        bounded = [touch for touch in touches if int(touch[1][1:]) <= last]
        expected = _hops_by_hand(bounded, seeds, failed_in)
        assert _seeds_reached(spark, touches, seeds, 10_000, failed_in) == expected
        assert _seeds_reached(spark, touches, seeds, 0, failed_in) == expected
