import shutil
from datetime import datetime
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog, ensure_database
from lakeapply.runtime.delta_state import log_states_computed
from lakeapply.silver import dictionary
from lakeapply.silver.cycle_state import latest_version
from lakeapply.silver.plan import ensure_apply_tables, never_written, recorded_cycles
from lakeapply.testing import apply_settings


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


def test_a_dictionary_table_counts_as_never_written_until_its_first_commit_after_creation(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_apply_tables(spark, catalog)
    cycles = catalog.apply_table(dictionary.CYCLES)
    assert never_written(spark, cycles)
    assert recorded_cycles(spark, catalog, apply_settings()) == (0, None, 0)
    spark.createDataFrame(
        [("APPLY_A", 1, "COMMITTED", 0, 3, {}, {}, datetime(2026, 12, 7))], dictionary.CYCLES_SCHEMA
    ).write.format("delta").mode("append").saveAsTable(cycles)
    assert not never_written(spark, cycles)
    # Another apply process's cycle is not this one's: read, not assumed.
    assert recorded_cycles(spark, catalog, apply_settings(apply_name="APPLY_B")) == (0, None, 0)
    assert recorded_cycles(spark, catalog, apply_settings(apply_name="APPLY_A")) == (1, None, 3)


def test_computing_log_states_ahead_leaves_them_on_the_snapshot_the_next_write_starts_from(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_database(spark, catalog.database(catalog.silver))
    name = catalog.silver_table("ahead")
    spark.range(3).write.format("delta").saveAsTable(name)

    def computed() -> bool:
        snapshot = DeltaTable.forName(spark, name)._jdt.deltaLog().unsafeVolatileSnapshot()
        return bool(snapshot._computedStateTriggered())

    assert not computed()
    # A table that does not exist yet is left to its first write, not an error.
    with log_states_computed(spark, [catalog.silver_table("not_created"), name]):
        pass
    assert computed()
    spark.range(2).write.format("delta").mode("append").saveAsTable(name)
    assert not computed()  # a new snapshot: its state is computed when first asked
