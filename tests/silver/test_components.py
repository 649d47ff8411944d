from pyspark.sql import SparkSession

from lakeapply.silver.components import key_components, seeds_reached


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


def _seeds_reached(
    spark: SparkSession, touches: list[tuple[str, str, int, str, str]], seeds: list[str]
) -> set[str] | None:
    reached = seeds_reached(
        spark.createDataFrame(touches, TOUCHES),
        spark.createDataFrame(
            [("DB", s) for s in seeds], "source_database_name string, transaction_id string"
        ),
        max_iterations=16,
    )
    return None if reached is None else {r.transaction_id for r in reached.collect()}


def test_a_seed_is_reached_through_a_transaction_that_shares_a_group_with_each(
    spark: SparkSession,
) -> None:
    touches = [
        ("DB", "A", 1, "t", "g1"),
        ("DB", "X", 2, "t", "g1"),
        ("DB", "X", 2, "t", "g2"),
        ("DB", "B", 3, "t", "g2"),
        ("DB", "C", 4, "t", "g3"),
    ]
    assert _seeds_reached(spark, touches, ["A", "B", "C"]) == {"B"}


def test_only_a_seed_committing_later_is_reached(spark: SparkSession) -> None:
    touches = [("DB", "A", 5, "t", "g1"), ("DB", "B", 3, "t", "g1")]
    assert _seeds_reached(spark, touches, ["A", "B"]) == {"A"}


def test_a_transaction_committing_after_a_seed_links_nothing_back_to_it(
    spark: SparkSession,
) -> None:
    """D shares g1 with A and g3 with C, but commits after both: C's outcome cannot depend on
    A's through D."""
    touches = [
        ("DB", "A", 1, "t", "g1"),
        ("DB", "C", 4, "t", "g3"),
        ("DB", "D", 5, "t", "g1"),
        ("DB", "D", 5, "t", "g3"),
    ]
    assert _seeds_reached(spark, touches, ["A", "C"]) == set()


def test_a_chain_longer_than_the_iteration_limit_gives_no_answer(spark: SparkSession) -> None:
    chain = [("DB", f"T{i:02d}", i, "t", f"g{i}") for i in range(20)] + [
        ("DB", f"T{i:02d}", i, "t", f"g{i - 1}") for i in range(1, 20)
    ]
    reached = seeds_reached(
        spark.createDataFrame(chain, TOUCHES),
        spark.createDataFrame(
            [("DB", "T00"), ("DB", "T19")], "source_database_name string, transaction_id string"
        ),
        max_iterations=3,
    )
    assert reached is None
