"""Transaction assembly from bronze LCRs: committed, rolled back, open (rule 1)."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from lakeapply.silver.transactions import assemble_transactions

BRONZE_COLUMNS = (
    "source_database_name string, transaction_id string, command_type string, lcr_kind string, "
    "scn long, commit_scn long, source_time string"
)


def bronze(spark: SparkSession, rows: list[tuple[object, ...]]):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(rows, BRONZE_COLUMNS)


def test_commit_rollback_and_open_transactions_are_told_apart(spark: SparkSession) -> None:
    lcrs = bronze(
        spark,
        [
            ("DB", "1.1.1", "INSERT", "ROW", 10, None, None),
            ("DB", "1.1.1", "COMMIT", "DIRECTIVE", 12, None, "2026-01-01T00:00:00"),
            ("DB", "1.1.2", "UPDATE", "ROW", 11, None, None),
            ("DB", "1.1.2", "ROLLBACK", "DIRECTIVE", 13, None, None),
            ("DB", "1.1.3", "DELETE", "ROW", 9, None, None),
            ("DB", "1.1.4", "ALTER TABLE", "DDL", 20, 21, None),
        ],
    )

    actual = assemble_transactions(lcrs).select(
        "transaction_id", "state", "commit_scn", "first_scn"
    )

    expected = spark.createDataFrame(
        [
            ("1.1.1", "COMMITTED", 12, 10),
            ("1.1.2", "ROLLED_BACK", None, 11),
            ("1.1.3", "OPEN", None, 9),
            ("1.1.4", "COMMITTED", 21, 20),
        ],
        "transaction_id string, state string, commit_scn long, first_scn long",
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_rollback_wins_over_a_commit_and_the_same_id_in_two_sources_is_two_transactions(
    spark: SparkSession,
) -> None:
    lcrs = bronze(
        spark,
        [
            ("A", "1.1.1", "INSERT", "ROW", 10, None, None),
            ("A", "1.1.1", "ROLLBACK", "DIRECTIVE", 11, None, None),
            ("A", "1.1.1", "COMMIT", "DIRECTIVE", 12, None, None),
            ("B", "1.1.1", "INSERT", "ROW", 5, None, None),
        ],
    )

    states = {(r.source_database_name, r.state) for r in assemble_transactions(lcrs).collect()}

    assert states == {("A", "ROLLED_BACK"), ("B", "OPEN")}
