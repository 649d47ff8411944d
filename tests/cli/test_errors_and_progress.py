"""Every failure is one line on stderr and a non-zero exit; --debug adds the traceback.

Progress of an unattended run is timestamped lines, never spinner frames. None of these tests
starts Spark: the commands fail (or finish) before a session is needed.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from lakeapply.cli import LakeapplyGroup, TimestampedProgress
from lakeapply.errors import ApplyAbortedError, ConfigurationError
from tests.cli.processes import SPINNER_MARKS, TIMESTAMPED_LINE, run_lakeapply

ONE_LINE_ERROR = re.compile(r"^lakeapply: error: .+$")


def assert_one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert ONE_LINE_ERROR.match(lines[-1]), stderr
    assert [line for line in lines if line.startswith("lakeapply: error:")] == [lines[-1]]
    return lines[-1]


def test_an_unexpected_error_is_one_line_naming_its_type(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = run_lakeapply(
        "generate", "--out", "a-file/landing", "--transactions", "5", cwd=tmp_path
    )
    assert result.returncode == 1
    line = assert_one_error_line(result.stderr)
    assert line.startswith("lakeapply: error: NotADirectoryError: ")
    assert line.endswith("(run with --debug for the traceback)")


@pytest.mark.parametrize("debug", [["--debug"], []], ids=["flag", "env"])
def test_debug_shows_the_traceback_then_the_one_line(tmp_path: Path, debug: list[str]) -> None:
    (tmp_path / "a-file").write_text("")
    result = run_lakeapply(
        *debug,
        "generate",
        "--out",
        "a-file/landing",
        cwd=tmp_path,
        **({} if debug else {"LAKEAPPLY_DEBUG": "1"}),
    )
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "NotADirectoryError" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("lakeapply: error: NotADirectoryError: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["ingest", "--landing", "missing"], "Invalid value for '--landing': Directory 'missing'"),
        (["configure", "--config", "missing.yml"], "Invalid value for '--config'"),
        (["--no-such-option", "status"], "No such option"),
    ],
    ids=["bad-landing-path", "missing-config", "bad-option"],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], expected: str) -> None:
    result = run_lakeapply("--warehouse", "wh", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [assert_one_error_line(result.stderr)]
    assert expected in result.stderr
    assert "--help`)" in result.stderr
    assert not (tmp_path / "wh").exists(), "a usage error must not touch the warehouse"


def test_an_invalid_config_is_one_line_with_its_details(tmp_path: Path) -> None:
    (tmp_path / "bad.yml").write_text("apply_processes: [\n")
    result = run_lakeapply("configure", "--config", "bad.yml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [assert_one_error_line(result.stderr)]
    assert "bad.yml" in result.stderr


def test_unattended_progress_is_timestamped_lines_without_spinner_frames(tmp_path: Path) -> None:
    result = run_lakeapply(
        "generate", "--out", "landing", "--seed", "1", "--transactions", "50", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote ")
    lines = result.stderr.splitlines()
    assert lines, "an unattended run says what it is doing"
    assert all(re.match(TIMESTAMPED_LINE + "generate: generating", line) for line in lines), lines
    assert re.search(r"generating: done in \d+\.\ds$", lines[-1])
    assert not any(mark in result.stderr for mark in SPINNER_MARKS)


# In-process: the error mapping of LakeapplyGroup for errors that need Spark to happen for real.


class Py4JJavaError(Exception):
    """Shaped like py4j's: the Java exception is in the text after a ': ' line."""


@click.group(cls=LakeapplyGroup)
@click.option("--debug", is_flag=True)
def fake_cli(debug: bool) -> None:
    """A stand-in CLI that fails on request."""


FAILURES: dict[str, Exception] = {
    "aborted": ApplyAbortedError("apply process A is ABORTED: fix the cause, then start it"),
    "multi-line": ConfigurationError("x.yml: cannot read configuration\n  line 3, column 1"),
    "java": Py4JJavaError(
        "An error occurred while calling o61.sql.\n"
        ": org.apache.spark.sql.delta.DeltaAnalysisException: [DELTA_TABLE_NOT_FOUND] Delta "
        "table `t` doesn't exist.\n\tat org.apache.spark.sql.Foo(Foo.scala:1)"
    ),
    "jvm-gone": ConnectionRefusedError("[Errno 111] Connection refused"),
    "derby": RuntimeError(
        "[HIVE_METASTORE] Unable to instantiate "
        "org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient\nCaused by: ..."
    ),
}


@fake_cli.command()
@click.argument("kind")
def fail(kind: str) -> None:
    raise FAILURES[kind]


@pytest.mark.parametrize(
    ("kind", "exit_code", "line"),
    [
        (
            "aborted",
            1,
            "lakeapply: error: apply process A is ABORTED: fix the cause, then start it",
        ),
        (
            "multi-line",
            1,
            "lakeapply: error: x.yml: cannot read configuration; line 3, column 1",
        ),
        (
            "java",
            1,
            "lakeapply: error: Py4JJavaError (DeltaAnalysisException): [DELTA_TABLE_NOT_FOUND] "
            "Delta table `t` doesn't exist. (run with --debug for the traceback)",
        ),
    ],
)
def test_errors_map_to_one_line_and_an_exit_code(kind: str, exit_code: int, line: str) -> None:
    result = CliRunner().invoke(fake_cli, ["fail", kind])
    assert result.exit_code == exit_code
    assert result.stderr.splitlines() == [line]


def test_a_locked_derby_metastore_says_what_to_do() -> None:
    result = CliRunner().invoke(fake_cli, ["fail", "derby"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("lakeapply: error: RuntimeError: [HIVE_METASTORE] Unable to instantiate")
    assert "Derby metastore is open in another process" in line


def test_a_spark_jvm_that_died_mid_run_points_at_its_log_and_driver_memory() -> None:
    result = CliRunner().invoke(fake_cli, ["fail", "jvm-gone"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("lakeapply: error: ConnectionRefusedError: [Errno 111]")
    assert "<warehouse>/logs/spark.log" in line and "--driver-memory" in line


def test_a_driver_memory_that_is_not_a_size_is_one_line(tmp_path: Path) -> None:
    result = run_lakeapply("--driver-memory", "lots", "status", cwd=tmp_path)
    assert result.returncode == 1
    line = assert_one_error_line(result.stderr)
    assert line == "lakeapply: error: driver memory 'lots': expected a size such as 4g or 6144m"


# The throttle of unattended progress lines.


def test_fast_steps_are_coalesced_and_the_latest_is_kept() -> None:
    lines: list[str] = []
    progress = TimestampedProgress(
        "lakeapply apply", "applying A", lines.append, min_interval=10, heartbeat=60
    )
    progress.start()
    for cycle in range(1, 101):
        progress.step(f"cycle {cycle}")
    progress.finish(succeeded=True)
    texts = [line.split(" ", 1)[1] for line in lines]
    assert texts == [
        "lakeapply apply: applying A",
        "lakeapply apply: applying A: cycle 100",
        f"lakeapply apply: applying A: done in {texts[-1].rsplit(' ', 1)[1]}",
    ]
    assert all(re.match(TIMESTAMPED_LINE, line) for line in lines)


def test_a_quiet_step_gets_a_heartbeat_line() -> None:
    lines: list[str] = []
    progress = TimestampedProgress(
        "lakeapply ingest", "ingesting", lines.append, min_interval=0.05, heartbeat=0.3
    )
    progress.start()
    progress.step("reading 6 files")
    time.sleep(0.5)
    progress.finish(succeeded=False)
    assert any("ingesting: reading 6 files (still running," in line for line in lines), lines
    assert not any("done in" in line for line in lines), "a failed step does not claim done"


def test_the_demo_job_timestamps_its_steps_in_a_job_log() -> None:
    from io import StringIO

    from rich.console import Console

    from lakeapply.jobs import step_printer

    log = StringIO()
    step_printer(Console(file=log, force_terminal=False), "apply")("cycle 3: fold pass 1")
    assert re.match(TIMESTAMPED_LINE + r"run: apply: cycle 3: fold pass 1\n$", log.getvalue())
