import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog, ensure_database
from lakeapply.silver.cycle_state import latest_version


def _log_folder(spark: SparkSession, qualified: str) -> Path:
    location = spark.sql(f"DESCRIBE DETAIL {qualified}").first()
    assert location is not None
    return Path(str(location["location"]).removeprefix("file:")) / "_delta_log"


def test_the_version_follows_the_commits_of_this_session_and_of_another_writer(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.database(catalog.silver))
    name = catalog.silver_table("versions")
    spark.range(3).write.format("delta").saveAsTable(name)
    assert latest_version(spark, name) == 0
    spark.range(2).write.format("delta").mode("append").saveAsTable(name)
    assert latest_version(spark, name) == 1
    # Another writer's commit: a file this JVM did not write appears in the log.
    log = _log_folder(spark, name)
    shutil.copy(log / "00000000000000000001.json", log / "00000000000000000002.json")
    assert latest_version(spark, name) == 2
