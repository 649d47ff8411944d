from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.landing.generator import synthetic_table_definitions
from lakeapply.silver.keys import KeyBounds, key_bounds
from lakeapply.silver.settings import DestinationTable

T001, T002 = (
    DestinationTable("DB", definition, f"synth_{definition.name.lower()}")
    for definition in synthetic_table_definitions(2)
)


def test_bounds_span_the_addressed_keys_numerically_and_skip_untouched_tables(
    spark: SparkSession,
) -> None:
    keys = spark.createDataFrame(
        [("synth_t001", '["9"]'), ("synth_t001", '["10"]'), ("synth_t001", '["-3"]')],
        "silver_table string, key_text string",
    )
    assert key_bounds(keys, [T001, T002]) == {"synth_t001": KeyBounds("-3", "10", False)}


def test_each_table_gets_its_own_bounds_and_a_null_key_is_counted(spark: SparkSession) -> None:
    keys = spark.createDataFrame(
        [
            ("synth_t001", '["7"]'),
            ("synth_t002", "[null]"),
            ("synth_t002", '["5"]'),
            ("synth_t002", '["40"]'),
            ("not_configured", '["1"]'),
        ],
        "silver_table string, key_text string",
    )
    assert key_bounds(keys, [T001, T002]) == {
        "synth_t001": KeyBounds("7", "7", False),
        "synth_t002": KeyBounds("5", "40", True),
    }


def test_the_range_predicate_keeps_only_rows_inside_the_bounds(spark: SparkSession) -> None:
    rows = spark.range(1, 12, 5).select(F.col("id").cast("decimal(10,0)").alias("ID")).alias("d")
    kept = rows.where(KeyBounds("2", "11", False).predicate(T001, "d"))
    assert sorted(int(r.ID) for r in kept.collect()) == [6, 11]
    assert rows.where(KeyBounds(None, None, True).predicate(T001, "d")).count() == 3
