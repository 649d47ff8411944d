"""The session factory: the Delta jar it asks for and the message when it cannot be had."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from lakeapply.runtime.session import (
    LocalSparkSettings,
    _explain_startup_failure,
    delta_maven_coordinate,
    interpreted_evaluation,
    isolated_session,
    local_session_options,
)


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


@pytest.mark.parametrize(
    ("small_data", "short_process", "client_compiler_only", "throughput_collector"),
    [
        (True, True, True, True),
        (True, False, False, True),
        (False, True, False, False),
        (False, False, False, False),
    ],
)
def test_small_data_picks_the_throughput_collector_and_the_client_compiler_for_a_short_process(
    tmp_path: Path,
    small_data: bool,
    short_process: bool,
    client_compiler_only: bool,
    throughput_collector: bool,
) -> None:
    settings = LocalSparkSettings(
        tmp_path, small_data=small_data, write_class_archive=short_process
    )
    java_options = local_session_options(settings, tmp_path)["spark.driver.extraJavaOptions"]
    assert java_options.startswith(f"-Dderby.system.home={tmp_path}")
    assert ("-XX:TieredStopAtLevel=1" in java_options.split()) == client_compiler_only
    assert ("-XX:+UseParallelGC" in java_options.split()) == throughput_collector


def test_a_short_process_keeps_the_code_cache_of_both_compilers(tmp_path: Path) -> None:
    # The client compiler alone gives the JVM a 48 MB code cache by default; a crash-soak apply
    # filled it in 19 s and the JVM's VirtualMachineError stopped the SparkContext.
    settings = LocalSparkSettings(tmp_path, small_data=True, write_class_archive=True)
    java_options = local_session_options(settings, tmp_path)["spark.driver.extraJavaOptions"]
    vm_options = [option for option in java_options.split() if option.startswith("-XX:")]
    flags = subprocess.run(
        [_java(), *vm_options, "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    code_cache = re.search(r"\bReservedCodeCacheSize\s*=\s*(\d+)", flags)
    assert code_cache is not None, flags[-2000:]
    assert int(code_cache.group(1)) >= 240 * 1024 * 1024


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home) / "bin" / "java" if java_home else shutil.which("java")
    assert java is not None, "no java on PATH and no JAVA_HOME"
    return str(java)


def test_the_local_session_keeps_only_the_last_few_queries_in_its_status_store(
    tmp_path: Path,
) -> None:
    # The UI is off, yet Spark's status store keeps 1000 queries' plans by default: a
    # long-running apply's heap grew with every cycle until it held them all.
    options = local_session_options(LocalSparkSettings(tmp_path), tmp_path)
    assert int(options["spark.sql.ui.retainedExecutions"]) <= 50
    assert int(options["spark.ui.retainedJobs"]) <= 100
    assert int(options["spark.ui.retainedStages"]) <= 100
    assert int(options["spark.ui.retainedTasks"]) <= 10_000


def test_an_isolated_session_starts_with_the_settings_and_is_not_changed_with_them(spark) -> None:
    before = {key: spark.conf.get(key) for key in ("spark.sql.shuffle.partitions", ANSI)}
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        isolated = isolated_session(spark)
        assert isolated.conf.get("spark.sql.shuffle.partitions") == "3"
        spark.conf.set(ANSI, "false")  # what dbt-spark does to the session it runs on
        assert isolated.conf.get(ANSI) == "true"
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            isolated.sql("SELECT CAST('x' AS INT)").collect()
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


ANSI = "spark.sql.ansi.enabled"


CODEGEN_SETTINGS = ("spark.sql.codegen.factoryMode", "spark.sql.codegen.wholeStage")


def codegen_settings(spark) -> tuple[str | None, ...]:
    return tuple(spark.conf.get(key, None) for key in CODEGEN_SETTINGS)


@pytest.fixture
def generated_code(spark):
    """The session with Spark's default evaluation (the tests' session is interpreted)."""
    before = codegen_settings(spark)
    spark.conf.unset("spark.sql.codegen.factoryMode")
    spark.conf.set("spark.sql.codegen.wholeStage", "true")
    yield spark
    for key, value in zip(CODEGEN_SETTINGS, before, strict=True):
        spark.conf.set(key, value)


def test_interpreted_evaluation_holds_in_the_block_and_the_settings_come_back_after(
    generated_code,
) -> None:
    before = codegen_settings(generated_code)

    with interpreted_evaluation(generated_code):
        assert codegen_settings(generated_code) == ("NO_CODEGEN", "false")
        assert generated_code.range(3).selectExpr("sum(id * 2)").collect()[0][0] == 6

    assert codegen_settings(generated_code) == before


def test_interpreted_evaluation_is_restored_after_an_error_and_nests(generated_code) -> None:
    before = codegen_settings(generated_code)

    with pytest.raises(ValueError), interpreted_evaluation(generated_code):
        with interpreted_evaluation(generated_code, wanted=False):  # never turns code back on
            assert codegen_settings(generated_code) == ("NO_CODEGEN", "false")
        raise ValueError

    assert codegen_settings(generated_code) == before


def test_interpreted_evaluation_leaves_a_databricks_session_alone(
    generated_code, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")
    before = codegen_settings(generated_code)

    with interpreted_evaluation(generated_code):
        assert codegen_settings(generated_code) == before
