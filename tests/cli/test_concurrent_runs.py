"""Two real ``lakeapply`` processes on one local warehouse: the second is refused or waits.

The embedded Derby metastore admits one JVM per warehouse; the lease (runtime/lease.py) is taken
before Spark starts, so the refused process never starts a JVM and answers in a second or two.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.lease import (
    EXIT_CODE_BUSY,
    LeaseHolder,
    WarehouseBusyError,
    acquire_warehouse_lease,
    read_lease_holder,
)
from tests.cli.processes import (
    LAKEAPPLY,
    SPINNER_MARKS,
    TIMESTAMPED_LINE,
    run_lakeapply,
    unattended_env,
)

# A JVM start plus a tiny ingest is ~30 s on an idle laptop; a shared CI box can be much slower.
SPARK_RUN_TIMEOUT_SECONDS = 900
# The refused process imports PySpark but never starts a JVM.
REFUSAL_SECONDS = 30


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    """A small landing folder (~260 LCR lines in 6 files)."""
    write_workload(WorkloadSpec(seed=1, transactions=50), tmp_path / "landing")
    return tmp_path / "landing"


@contextmanager
def lakeapply_in_background(
    tmp_path: Path, name: str, *args: str
) -> Iterator[subprocess.Popen[str]]:
    """The CLI in its own process group (so it and its JVM can be killed), output to files."""
    with (
        (tmp_path / f"{name}.out").open("w") as stdout,
        (tmp_path / f"{name}.err").open("w") as stderr,
    ):
        process = subprocess.Popen(
            [str(LAKEAPPLY), *args],
            cwd=tmp_path,
            env=unattended_env(),
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)


def wait_for_lease_holder(warehouse: Path, pid: int, timeout: float = 120) -> LeaseHolder:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = read_lease_holder(warehouse)
        if holder is not None and holder.pid == pid:
            return holder
        time.sleep(0.1)
    raise AssertionError(f"process {pid} did not take the lease of {warehouse} in {timeout}s")


def test_a_second_process_is_refused_at_once_naming_the_holder(
    tmp_path: Path, landing: Path
) -> None:
    warehouse = tmp_path / "wh"
    with lakeapply_in_background(
        tmp_path, "first", "--warehouse", "wh", "ingest", "--landing", "landing"
    ) as first:
        wait_for_lease_holder(warehouse, first.pid)

        started = time.monotonic()
        status = run_lakeapply("--warehouse", "wh", "status", cwd=tmp_path, timeout=REFUSAL_SECONDS)
        assert time.monotonic() - started < REFUSAL_SECONDS
        assert status.returncode == EXIT_CODE_BUSY
        assert status.stdout == ""
        (line,) = status.stderr.splitlines()
        assert line.startswith(f"lakeapply: error: warehouse {warehouse.resolve()} is in use by ")
        assert f"pid {first.pid} on " in line
        assert "`lakeapply --warehouse wh ingest --landing landing`" in line

        ingest = run_lakeapply(
            "--warehouse", "wh", "--wait", "1", "ingest", "--landing", "landing", cwd=tmp_path
        )
        assert ingest.returncode == EXIT_CODE_BUSY
        waiting, refused = ingest.stderr.splitlines()
        assert re.match(TIMESTAMPED_LINE + r"ingest: waiting up to 1s for warehouse wh", waiting)
        assert f"held by pid {first.pid} on " in waiting
        assert refused.startswith("lakeapply: error: warehouse ")
        assert "after waiting 1s" in refused

        assert first.poll() is None, "the holder is undisturbed"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)

    # SIGKILL leaves no stale lock: the kernel dropped it with the process.
    deadline = time.monotonic() + 10
    while True:
        try:
            acquire_warehouse_lease(warehouse).release()
            break
        except WarehouseBusyError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    first_stderr = (tmp_path / "first.err").read_text()
    assert re.search(TIMESTAMPED_LINE + r"ingest: starting Spark", first_stderr, re.MULTILINE)
    assert not any(mark in first_stderr for mark in SPINNER_MARKS)


def test_a_waiting_ingest_runs_after_the_holder_and_finds_nothing_new(
    tmp_path: Path, landing: Path
) -> None:
    """Two ingests of one landing folder: the second waits, then does not ingest again."""
    warehouse = tmp_path / "wh"
    args = ("--warehouse", "wh", "ingest", "--landing", "landing")
    with lakeapply_in_background(tmp_path, "first", *args) as first:
        wait_for_lease_holder(warehouse, first.pid)
        with lakeapply_in_background(
            tmp_path, "second", "--wait", str(SPARK_RUN_TIMEOUT_SECONDS), *args
        ) as second:
            assert first.wait(timeout=SPARK_RUN_TIMEOUT_SECONDS) == 0
            assert second.wait(timeout=SPARK_RUN_TIMEOUT_SECONDS) == 0

    first_out, first_err = (
        (tmp_path / "first.out").read_text(),
        (tmp_path / "first.err").read_text(),
    )
    second_out = (tmp_path / "second.out").read_text()
    second_err = (tmp_path / "second.err").read_text()
    assert re.match(r"ingest batch 1: \d+ lines from 6 files -> \d+ bronze", first_out)
    assert second_out == "nothing new to ingest\n"
    assert re.search(
        TIMESTAMPED_LINE + rf"ingest: waiting up to {SPARK_RUN_TIMEOUT_SECONDS}s for warehouse wh, "
        rf"held by pid {first.pid}",
        second_err,
        re.MULTILINE,
    )
    for stderr in (first_err, second_err):
        assert "Traceback" not in stderr
        assert "lakeapply: error" not in stderr
        assert not any(mark in stderr for mark in SPINNER_MARKS)
        assert re.search(TIMESTAMPED_LINE + r"ingest: ingesting: done in", stderr, re.MULTILINE)
