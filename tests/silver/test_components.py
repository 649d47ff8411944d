from pyspark.sql import SparkSession

from lakeapply.silver.components import key_components


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
