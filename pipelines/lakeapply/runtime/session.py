"""The one place a SparkSession is built. Everything else receives the session as an argument."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lakeapply.errors import EnvironmentSetupError

DELTA_SCALA_VERSION = "2.13"


@dataclass(frozen=True)
class LocalSparkSettings:
    """Settings of the embedded local session (ignored on Databricks)."""

    warehouse: Path
    master: str = "local[2]"
    shuffle_partitions: int = 4
    snapshot_partitions: int = 2
    driver_memory: str = "4g"
    app_name: str = "lakeapply"


def running_on_databricks() -> bool:
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def delta_maven_coordinate() -> str:
    """The Delta jar matching the installed delta-spark and pyspark (e.g. delta-spark_4.2_2.13)."""
    spark_major_minor = ".".join(version("pyspark").split(".")[:2])
    return (
        f"io.delta:delta-spark_{spark_major_minor}_{DELTA_SCALA_VERSION}:{version('delta-spark')}"
    )


def get_spark(settings: LocalSparkSettings) -> SparkSession:
    """Return the active session on Databricks (Delta is built in), else build the local one.

    The local session has the Delta extension and catalog, a Hive metastore in Derby kept under the
    warehouse folder (so the pipeline and dbt see the same tables), few shuffle partitions, no UI.
    The Delta jars are resolved by Ivy from Maven Central on first use and cached in ~/.ivy2.5.2.
    """
    if running_on_databricks():
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        return SparkSession.builder.getOrCreate()

    # Python workers must run this interpreter (the one lakeapply and pyarrow are installed in).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = settings.warehouse.resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    metastore = warehouse / "metastore_db"
    builder = (
        SparkSession.builder.master(settings.master)
        .appName(settings.app_name)
        .config("spark.jars.packages", delta_maven_coordinate())
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.sql.warehouse.dir", str(warehouse / "tables"))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={metastore};create=true",
        )
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        .config("spark.default.parallelism", str(settings.shuffle_partitions))
        .config("spark.databricks.delta.snapshotPartitions", str(settings.snapshot_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.databricks.delta.schema.autoMerge.enabled", "false")
        .config("spark.sql.sources.partitionOverwriteMode", "static")
        .enableHiveSupport()
    )
    try:
        spark = builder.getOrCreate()
    except PySparkException as error:
        raise EnvironmentSetupError(_explain_startup_failure(str(error))) from error
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _explain_startup_failure(message: str) -> str:
    if re.search(r"JAVA_GATEWAY_EXITED|unresolved dependency|not found", message):
        return (
            "Spark could not start. The usual cause on a first run is that the Delta jars "
            f"({delta_maven_coordinate()}) could not be downloaded from Maven Central: check the "
            "network, or pre-fetch them with `mvn dependency:get "
            f"-Dartifact={delta_maven_coordinate()}` (Ivy looks in ~/.m2 first). Java 17 must be on "
            f"PATH. Original error: {message.splitlines()[0] if message else '?'}"
        )
    return f"Spark could not start: {message}"
