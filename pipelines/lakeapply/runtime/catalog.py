"""Where lakeapply's tables live: database names and the thin helpers that create them."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote, quote_qualified, validate_spark_name


@dataclass(frozen=True)
class Catalog:
    """The databases lakeapply writes. A prefix lets several environments share one metastore."""

    prefix: str = "lakeapply"

    def __post_init__(self) -> None:
        validate_spark_name(self.prefix, "catalog prefix")

    @property
    def bronze(self) -> str:
        return f"{self.prefix}_bronze"

    @property
    def silver(self) -> str:
        return f"{self.prefix}_silver"

    @property
    def apply(self) -> str:
        """The apply dictionary: settings, progress, error queue, cycles."""
        return f"{self.prefix}_apply"

    def bronze_table(self, name: str) -> str:
        return quote_qualified(self.bronze, name)

    def silver_table(self, name: str) -> str:
        return quote_qualified(self.silver, validate_spark_name(name, "silver table"))

    def apply_table(self, name: str) -> str:
        return quote_qualified(self.apply, name)


def ensure_database(spark: SparkSession, database: str) -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")


def ensure_delta_table(
    spark: SparkSession, qualified_name: str, schema: T.StructType, comment: str = ""
) -> None:
    """Create an empty Delta table with ``schema`` unless it exists."""
    if spark.catalog.tableExists(qualified_name.replace("`", "")):
        return
    (
        spark.createDataFrame([], schema)
        .write.format("delta")
        .option("description", comment)
        .mode("ignore")
        .saveAsTable(qualified_name)
    )
