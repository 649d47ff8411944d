"""DEPENDENT_TRANSACTIONS: which later transactions an abort holds back (silver/dependent.py)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from lakeapply.silver.dependent import held_transactions

COLUMNS = ["source_database_name", "transaction_id", "commit_scn", "silver_table", "group_id"]


def _held(spark: SparkSession, touches: list[tuple[str, str, int, str, str]]) -> set[str]:
    frame: DataFrame = spark.createDataFrame(touches, COLUMNS)
    aborting = spark.createDataFrame([("DB", "T1")], ["source_database_name", "transaction_id"])
    return {row.transaction_id for row in held_transactions(frame, aborting).collect()}


def test_a_later_transaction_on_another_table_is_not_held(spark: SparkSession) -> None:
    touches = [("DB", "T1", 10, "A", "k1"), ("DB", "T2", 20, "B", "k1")]
    assert _held(spark, touches) == {"T1"}


def test_a_later_transaction_on_the_same_key_is_held(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "k1"),
        ("DB", "T3", 30, "A", "k2"),
    ]
    assert _held(spark, touches) == {"T1", "T2"}


def test_dependence_is_transitive_through_a_held_transaction(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "k1"),
        ("DB", "T2", 20, "B", "k9"),
        ("DB", "T3", 30, "B", "k9"),
        ("DB", "T0", 5, "B", "k9"),  # earlier than the abort: never held
    ]
    assert _held(spark, touches) == {"T1", "T2", "T3"}


def test_a_held_ddl_barrier_holds_back_every_later_key_of_its_table(spark: SparkSession) -> None:
    touches = [
        ("DB", "T1", 10, "A", "k1"),
        ("DB", "T2", 20, "A", "*"),
        ("DB", "T3", 30, "A", "k7"),
        ("DB", "T4", 40, "B", "k7"),
    ]
    assert _held(spark, touches) == {"T1", "T2", "T3"}
