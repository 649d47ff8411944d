"""The session factory: the Delta jar it asks for and the message when it cannot be had."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from lakeapply.runtime.session import _explain_startup_failure, delta_maven_coordinate


def test_the_delta_jar_matches_the_installed_pyspark_and_delta_spark() -> None:
    spark_minor = ".".join(version("pyspark").split(".")[:2])
    assert delta_maven_coordinate() == (
        f"io.delta:delta-spark_{spark_minor}_2.13:{version('delta-spark')}"
    )


def test_an_unresolvable_jar_explains_how_to_fetch_it_and_names_the_log() -> None:
    log = Path("/warehouse/logs/spark.log")
    message = _explain_startup_failure(
        "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.", log
    )
    assert "could not be downloaded from Maven Central" in message
    assert f"mvn dependency:get -Dartifact={delta_maven_coordinate()}" in message
    assert str(log) in message


def test_the_spark_session_has_delta_and_a_metastore_under_the_warehouse(spark) -> None:
    assert spark.conf.get("spark.sql.extensions") == "io.delta.sql.DeltaSparkSessionExtension"
    assert "metastore_db" in spark.conf.get("spark.hadoop.javax.jdo.option.ConnectionURL")
    assert spark.conf.get("spark.ui.enabled") == "false"
