"""The warehouse lease: exclusive, names its holder, waits on request, dies with its process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakeapply.runtime.lease import (
    EXIT_CODE_BUSY,
    LOCK_FILE_NAME,
    LeaseHolder,
    WarehouseBusyError,
    WarehouseLeaseError,
    acquire_warehouse_lease,
    hold_warehouse_for_process,
    holds_lease,
    read_lease_holder,
)


@contextmanager
def lease_held_by_another_process(warehouse: Path, hold_seconds: float = 60) -> Iterator[int]:
    """A plain Python process (no JVM) that takes the lease, says so, and sleeps."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from lakeapply.runtime.lease import acquire_warehouse_lease
        lease = acquire_warehouse_lease(Path({str(warehouse)!r}), command="holder-for-test")
        print("held", flush=True)
        time.sleep({hold_seconds})
        lease.release()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    announcements = holder.stdout
    assert announcements is not None
    try:
        assert announcements.readline().strip() == "held"
        yield holder.pid
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        announcements.close()


def test_the_lease_writes_its_holder_into_the_lock_file(tmp_path: Path) -> None:
    with acquire_warehouse_lease(tmp_path / "wh", command="lakeapply ingest") as lease:
        assert lease.lock_path == (tmp_path / "wh" / LOCK_FILE_NAME).resolve()
        holder = read_lease_holder(tmp_path / "wh")
        assert holder == lease.holder
        assert holder is not None
        assert (holder.pid, holder.command) == (os.getpid(), "lakeapply ingest")
    assert not lease.held
    assert read_lease_holder(tmp_path / "wh") is None, "a released lease names nobody"


def test_a_second_taker_is_refused_at_once_with_the_holder_named(tmp_path: Path) -> None:
    # flock belongs to the open file, so even a second open in this process is refused.
    with acquire_warehouse_lease(tmp_path, command="lakeapply apply --apply-name A"):
        started = time.monotonic()
        with pytest.raises(WarehouseBusyError) as refused:
            acquire_warehouse_lease(tmp_path)
        assert time.monotonic() - started < 1
    message = str(refused.value)
    assert f"pid {os.getpid()}" in message
    assert "`lakeapply apply --apply-name A`" in message
    assert "--wait SECONDS" in message
    assert refused.value.exit_code == EXIT_CODE_BUSY
    assert "\n" not in message


def test_a_waiting_taker_gets_the_lease_when_the_holder_lets_go(tmp_path: Path) -> None:
    told: list[LeaseHolder | None] = []
    with (
        lease_held_by_another_process(tmp_path, hold_seconds=1.5) as holder_pid,
        acquire_warehouse_lease(tmp_path, wait_seconds=30, on_wait=told.append) as lease,
    ):
        assert lease.held
    assert len(told) == 1
    assert told[0] is not None
    assert (told[0].pid, told[0].command) == (holder_pid, "holder-for-test")


def test_a_waiting_taker_gives_up_at_its_deadline(tmp_path: Path) -> None:
    with lease_held_by_another_process(tmp_path) as holder_pid:
        started = time.monotonic()
        with pytest.raises(WarehouseBusyError) as refused:
            acquire_warehouse_lease(tmp_path, wait_seconds=1, poll_interval=0.1)
        assert 1 <= time.monotonic() - started < 5
    assert f"pid {holder_pid}" in str(refused.value)
    assert "after waiting 1s" in str(refused.value)


def test_a_killed_holder_never_blocks_the_next_run(tmp_path: Path) -> None:
    with lease_held_by_another_process(tmp_path) as holder_pid:
        os.killpg(holder_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while True:
            try:
                lease = acquire_warehouse_lease(tmp_path)
                break
            except WarehouseBusyError:
                # The kernel drops the lock when the process is gone, a moment after the signal.
                assert time.monotonic() < deadline
                time.sleep(0.05)
    with lease:
        assert read_lease_holder(tmp_path) == lease.holder


def test_a_process_holds_its_lease_once_however_often_it_asks(tmp_path: Path) -> None:
    first = hold_warehouse_for_process(tmp_path / "wh")
    try:
        assert hold_warehouse_for_process(tmp_path / "wh" / ".." / "wh") is first
    finally:
        first.release()


def test_a_process_knows_which_warehouse_leases_it_holds(tmp_path: Path) -> None:
    with acquire_warehouse_lease(tmp_path / "wh"):
        assert holds_lease(tmp_path / "wh" / ".." / "wh")
        assert not holds_lease(tmp_path / "other")
    assert not holds_lease(tmp_path / "wh")


def test_an_unusable_warehouse_path_is_a_lakeapply_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    with pytest.raises(WarehouseLeaseError, match="cannot create the lock file"):
        acquire_warehouse_lease(not_a_folder / "wh")


def test_a_foreign_lock_file_names_no_holder() -> None:
    assert LeaseHolder.from_json("") is None
    assert LeaseHolder.from_json("not json") is None
    assert LeaseHolder.from_json('{"pid": 1}') is None
