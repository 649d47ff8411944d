"""Streaming ingest and apply: a stream stopped in the middle and restarted ends where a batch
run of the same input ends (bronze rows; silver, error queue and progress)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from lakeapply.bronze.ingest import SimulatedCrash, ingest
from lakeapply.cli import main
from lakeapply.errors import ApplyAbortedError, ConfigurationError
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.streaming import (
    LandingListingReader,
    StreamSettings,
    StreamTrigger,
    TriggerKind,
    _QueryDriver,
    default_checkpoint,
    parse_trigger,
    stream_apply,
    stream_ingest,
)
from lakeapply.silver.cycle_state import SimulatedApplyCrash
from lakeapply.silver.engine import run_apply
from lakeapply.silver.plan import stop_apply
from tests.silver.differential import prepare, read_outcome
from tests.silver.test_engine_restart import generated_workload

AVAILABLE_NOW = StreamTrigger(TriggerKind.AVAILABLE_NOW)


# ------------------------------------------------------------------------------------------
# Triggers, checkpoints, the landing listing source (no Spark)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("available-now", AVAILABLE_NOW),
        ("processing-time=30 seconds", StreamTrigger(TriggerKind.PROCESSING_TIME, "30 seconds")),
        ("processing-time=1 second", StreamTrigger(TriggerKind.PROCESSING_TIME, "1 seconds")),
        ("processing-time=500ms", StreamTrigger(TriggerKind.PROCESSING_TIME, "500 milliseconds")),
        ("processing-time=2m", StreamTrigger(TriggerKind.PROCESSING_TIME, "2 minutes")),
    ],
)
def test_triggers_are_read_in_the_cli_form(text: str, expected: StreamTrigger) -> None:
    assert parse_trigger(text) == expected


@pytest.mark.parametrize(
    "text", ["once", "processing-time", "processing-time=soon", "processing-time=0 seconds"]
)
def test_a_trigger_that_is_not_understood_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ConfigurationError, match="trigger"):
        parse_trigger(text)


def test_checkpoints_of_hostile_apply_names_stay_inside_the_warehouse(tmp_path: Path) -> None:
    catalog = Catalog("p")
    hostile = default_checkpoint(tmp_path, catalog, "apply", '../../x"; DROP TABLE y; --')
    other = default_checkpoint(tmp_path, catalog, "apply", '../../x"; DROP TABLE z; --')

    assert hostile.parent == tmp_path.resolve() / "_checkpoints" / "p" / "apply"
    assert hostile != other


def test_the_landing_source_offers_a_new_offset_only_when_a_file_appears_or_grows(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    reader = LandingListingReader(tmp_path)

    rows, first = reader.read(reader.initialOffset())
    assert [Path(row[0]).name for row in rows] == ["a.jsonl"]
    assert reader.read(first)[1] == first
    with (tmp_path / "a.jsonl").open("a") as grown:
        grown.write("{}\n")
    assert reader.read(first)[1] != first


def test_available_now_ends_at_the_listing_seen_when_the_query_started(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    reader = LandingListingReader(tmp_path)
    reader.prepareForTriggerAvailableNow()
    _, end = reader.read(reader.initialOffset())
    (tmp_path / "b.jsonl").write_text("{}\n")

    assert reader.read(end)[1] == end


class FakeQuery:
    """A query that runs until stopped, or fails the way Spark reports a failed micro-batch."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.stopped = False

    def awaitTermination(self, timeout: int) -> bool:
        if self.fails:
            raise RuntimeError("StreamingQueryException: foreachBatch function failed")
        return self.stopped

    def stop(self) -> None:
        self.stopped = True


def test_max_batches_stops_the_query_after_that_many_micro_batches() -> None:
    driver = _QueryDriver(StreamSettings(AVAILABLE_NOW, "c", max_batches=2), lambda _: None)
    query = FakeQuery()

    driver.for_each_batch(None, 0)  # type: ignore[arg-type]
    assert driver.stop_reason is None
    driver.for_each_batch(None, 1)  # type: ignore[arg-type]
    driver._wait(query)  # type: ignore[arg-type]

    assert (driver.stop_reason, driver.done, query.stopped) == ("max-batches", [0, 1], True)


def test_a_micro_batch_that_starts_after_a_stop_request_does_nothing_and_is_not_an_error() -> None:
    calls: list[int] = []
    driver = _QueryDriver(StreamSettings(AVAILABLE_NOW, "c"), calls.append)
    driver.stop_reason = "signal"

    with pytest.raises(Exception, match="signal"):
        driver.for_each_batch(None, 4)  # type: ignore[arg-type]
    driver._wait(FakeQuery(fails=True))  # type: ignore[arg-type]

    assert calls == []
    assert driver.done == []


def test_a_failed_micro_batch_raises_its_own_error_not_sparks_wrapper() -> None:
    def work(batch_id: int) -> None:
        raise ApplyAbortedError("apply process X is ABORTED")

    driver = _QueryDriver(StreamSettings(AVAILABLE_NOW, "c"), work)
    with pytest.raises(ApplyAbortedError):
        driver.for_each_batch(None, 0)  # type: ignore[arg-type]

    with pytest.raises(ApplyAbortedError, match="is ABORTED"):
        driver._wait(FakeQuery(fails=True))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Streams against batch runs (Spark)
# ------------------------------------------------------------------------------------------


def _bronze(spark: SparkSession, catalog: Catalog) -> tuple[list[tuple[object, ...]], ...]:
    lineage = ("source_file", "line_number", "byte_offset")
    lcrs = spark.table(catalog.bronze_table("lcr")).select(*lineage, "raw_lcr").collect()
    bad = spark.table(catalog.bronze_table("quarantine")).select(*lineage, "raw_line", "reason")
    return sorted(map(tuple, lcrs)), sorted(map(tuple, bad.collect()))


def _lines_in(landing: Path) -> int:
    return sum(path.read_bytes().count(b"\n") for path in landing.rglob("*.jsonl"))


def _wait_for_a_running_query(spark: SparkSession, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not spark.streams.active:
        assert time.monotonic() < deadline, "the stream did not start"
        time.sleep(0.2)


def test_an_ingest_stream_crashed_then_restarted_and_fed_a_growing_file_equals_a_batch_ingest(
    spark: SparkSession, tmp_path: Path
) -> None:
    generated = tmp_path / "generated"
    write_workload(
        WorkloadSpec(
            seed=5,
            transactions=12,
            synthetic_tables=1,
            files_per_source=2,
            bad_line_ratio=0.1,
            include_sample_scenario=False,
        ),
        generated,
    )
    landing = tmp_path / "landing"
    shutil.copytree(generated, landing)
    growing = sorted(landing.rglob("*.jsonl"))[0]
    content = growing.read_bytes()
    cut = content.index(b"\n", len(content) // 2) + 1
    growing.write_bytes(content[:cut] + content[cut : cut + 10])  # and half a line
    live = Catalog("stream_ingest_live")
    settings = StreamSettings(AVAILABLE_NOW, str(tmp_path / "checkpoint"))

    with pytest.raises(SimulatedCrash):
        stream_ingest(spark, live, landing, settings, crash_after="lcr")
    restarted = stream_ingest(spark, live, landing, settings)

    assert restarted.micro_batches == [0], "the crashed micro-batch is replayed"
    assert restarted.ingest_reports[0].resumed, "the restart resumes the crashed ingest batch"

    # Processing time: the stream waits, then the file grows and wakes it.
    every_second = StreamSettings(
        parse_trigger("processing-time=1 second"), settings.checkpoint, max_batches=1
    )
    outcome: list[object] = []
    runner = threading.Thread(
        target=lambda: outcome.append(stream_ingest(spark, live, landing, every_second))
    )
    runner.start()
    _wait_for_a_running_query(spark)
    growing.write_bytes(content)
    runner.join(timeout=180)
    assert not runner.is_alive() and outcome, "the grown file did not wake the stream"

    batch = Catalog("stream_ingest_batch")
    ingest(spark, batch, landing)
    lcrs, quarantined = _bronze(spark, live)
    assert (lcrs, quarantined) == _bronze(spark, batch)
    assert quarantined, "the workload should exercise the quarantine"
    assert len(lcrs) + len(quarantined) == _lines_in(landing)


@pytest.mark.slow  # three apply cycles: ~400 s on the loaded 2-core CI machine
def test_an_apply_stream_crashed_in_a_cycle_then_restarted_equals_a_batch_apply(
    spark: SparkSession, tmp_path: Path
) -> None:
    workload = generated_workload()
    batch = Catalog("stream_apply_batch")
    batch_settings = prepare(spark, batch, [workload], workload, tmp_path / "batch", batches=2)
    run_apply(spark, batch, batch_settings)
    live = Catalog("stream_apply_live")
    settings = prepare(spark, live, [workload], workload, tmp_path / "live", batches=2)
    stream = StreamSettings(AVAILABLE_NOW, str(tmp_path / "checkpoint"))

    with pytest.raises(SimulatedApplyCrash):
        stream_apply(spark, live, settings, stream, crash_after="merges")
    restarted = stream_apply(spark, live, settings, stream)

    assert restarted.micro_batches == [0], "the crashed micro-batch is replayed"
    assert restarted.cycle_reports[0].resumed, "the restart resumes the crashed cycle"
    expected = read_outcome(spark, batch, batch_settings.apply_name, workload)
    assert expected["errors"], "the workload should exercise the error queue"
    assert read_outcome(spark, live, settings.apply_name, workload) == expected


def test_an_apply_stream_on_a_stopped_apply_fails_with_the_apply_error_not_a_spark_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    workload = generated_workload()
    catalog = Catalog("stream_apply_stopped")
    settings = prepare(spark, catalog, [workload], workload, tmp_path / "config")
    stop_apply(spark, catalog, settings)
    stream = StreamSettings(
        parse_trigger("processing-time=1 second"), str(tmp_path / "checkpoint"), max_batches=1
    )

    with pytest.raises(ApplyAbortedError, match="is DISABLED"):
        stream_apply(spark, catalog, settings, stream)


def test_sigterm_stops_a_processing_time_stream_between_micro_batches(
    spark: SparkSession, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    settings = StreamSettings(
        parse_trigger("processing-time=1 second"), str(tmp_path / "checkpoint")
    )

    def terminate_once_idle() -> None:
        _wait_for_a_running_query(spark)
        while spark.streams.active and spark.streams.active[0].lastProgress is None:
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate_once_idle)
    killer.start()
    report = stream_ingest(spark, Catalog("stream_sigterm"), landing, settings)
    killer.join()

    assert report.stopped_by == "signal"
    assert report.micro_batches == [0]
    assert not spark.streams.active


# ------------------------------------------------------------------------------------------
# The CLI options (no Spark: checked before it starts)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["apply"], ["ingest", "--landing", "."]])
def test_stream_options_without_stream_are_a_usage_error(
    tmp_path: Path, command: list[str]
) -> None:
    result = CliRunner().invoke(
        main, ["--warehouse", str(tmp_path / "wh"), *command, "--max-batches", "2"]
    )

    assert result.exit_code == 2
    assert "need --stream" in result.output
    assert not (tmp_path / "wh").exists()


def test_a_bad_trigger_is_one_error_line_before_spark_starts(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--warehouse", str(tmp_path / "wh"), "apply", "--stream", "--trigger", "soon"]
    )

    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith("lakeapply: error: trigger 'soon'")
    assert not (tmp_path / "wh").exists()
