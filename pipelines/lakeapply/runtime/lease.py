"""The warehouse lease: one lakeapply process at a time per local warehouse folder.

The embedded Derby metastore under ``<warehouse>/metastore_db`` admits one JVM. A second process
that starts Spark on the same warehouse does not fail cleanly: Hive retries for about a minute,
then dies with "Unable to instantiate SessionHiveMetaStoreClient". So every command that starts a
local Spark session first takes an exclusive OS lock on ``<warehouse>/.lakeapply.lock`` (before
the JVM starts) and writes who holds it into the file; a second process sees the holder at once
and either exits with :data:`EXIT_CODE_BUSY` or waits (``--wait SECONDS``).

``fcntl.flock`` belongs to the open file, and the kernel drops it when the process ends however it
ends, so a SIGKILLed holder never blocks the next run and there is no stale-lock cleanup to get
wrong. The file descriptor is not inherited by the Spark JVM (Python opens files
non-inheritable), so the lock lives exactly as long as the Python process.

On Databricks (an existing session, a shared metastore) there is no lease: Delta's optimistic
concurrency and the idempotent writes are what keep concurrent runs correct there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from lakeapply.errors import LakeapplyError

LOCK_FILE_NAME = ".lakeapply.lock"
EXIT_CODE_BUSY = 3
# How often a waiting process retries the lock: a lease is held for seconds to hours, so a
# fraction of a second of extra wait does not matter and costs no CPU worth mentioning.
POLL_INTERVAL_SECONDS = 0.5
# The holder writes its details right after it gets the lock; a reader that looks in between
# sees an empty file, so it looks again a few times before calling the holder unknown.
_HOLDER_READ_ATTEMPTS = 5
_HOLDER_READ_PAUSE_SECONDS = 0.05


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds a warehouse lease, as written into the lock file."""

    pid: int
    host: str
    command: str
    started_at: str

    @classmethod
    def of_this_process(cls, command: str | None = None) -> LeaseHolder:
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            command=command if command is not None else _this_command_line(),
            started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} (`{self.command}`, since {self.started_at})"

    def to_json(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LeaseHolder | None:
        """The holder written by another process; None if the file is empty or not ours."""
        try:
            fields = json.loads(text)
            return cls(
                pid=int(fields["pid"]),
                host=str(fields["host"]),
                command=str(fields["command"]),
                started_at=str(fields["started_at"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


class WarehouseLeaseError(LakeapplyError):
    """The lock file of a warehouse cannot be created or locked (permissions, a bad path)."""


class WarehouseBusyError(LakeapplyError):
    """Another process holds the lease of this warehouse."""

    exit_code = EXIT_CODE_BUSY

    def __init__(self, warehouse: Path, holder: LeaseHolder | None, waited_seconds: float) -> None:
        self.warehouse = warehouse
        self.holder = holder
        self.waited_seconds = waited_seconds
        who = holder.describe() if holder is not None else "another process (holder unknown)"
        if waited_seconds > 0:
            waited, advice = f" after waiting {waited_seconds:.0f}s", "a longer --wait"
        else:
            waited, advice = "", "--wait SECONDS"
        super().__init__(
            f"warehouse {warehouse} is in use by {who}{waited}: the local Derby metastore admits "
            f"one process per warehouse; rerun when it is done, or pass {advice}"
        )


# The warehouses whose lease this process holds right now (resolved paths).
_HELD_WAREHOUSES: set[Path] = set()


class WarehouseLease:
    """An exclusive lock on a warehouse folder, held until :meth:`release` or process exit."""

    def __init__(self, warehouse: Path, lock_path: Path, descriptor: int, holder: LeaseHolder):
        self.warehouse = warehouse
        self.lock_path = lock_path
        self.holder = holder
        self._descriptor: int | None = descriptor
        _HELD_WAREHOUSES.add(warehouse)

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def release(self) -> None:
        if self._descriptor is None:
            return
        descriptor, self._descriptor = self._descriptor, None
        _HELD_WAREHOUSES.discard(self.warehouse)
        # Empty the file first so nobody reads a holder that is gone; the lock then goes with
        # the descriptor (close releases a flock).
        with contextlib.suppress(OSError):
            os.ftruncate(descriptor, 0)
        os.close(descriptor)

    def __enter__(self) -> WarehouseLease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def holds_lease(warehouse: Path) -> bool:
    """Whether this process holds the lease of ``warehouse``: then no other lakeapply process
    writes its tables until this one ends."""
    return warehouse.resolve() in _HELD_WAREHOUSES


def lock_path_of(warehouse: Path) -> Path:
    return warehouse.resolve() / LOCK_FILE_NAME


def acquire_warehouse_lease(
    warehouse: Path,
    *,
    wait_seconds: float = 0.0,
    command: str | None = None,
    on_wait: Callable[[LeaseHolder | None], None] | None = None,
    poll_interval: float = POLL_INTERVAL_SECONDS,
) -> WarehouseLease:
    """Take the lease of ``warehouse`` or raise :class:`WarehouseBusyError`.

    With ``wait_seconds`` > 0 a busy warehouse is retried until the deadline; ``on_wait`` is told
    once who is being waited for, so an unattended log shows why the run is idle.
    """
    warehouse = warehouse.resolve()
    lock_path = warehouse / LOCK_FILE_NAME
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        # O_RDWR without O_TRUNC: truncating before holding the lock would wipe the holder's
        # details that a waiting process is about to read.
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise WarehouseLeaseError(
            f"cannot create the lock file {lock_path}: {error.strerror or error}"
        ) from error
    started = time.monotonic()
    told_about_wait = False
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= wait_seconds:
                    raise WarehouseBusyError(
                        warehouse, read_lease_holder(warehouse), waited if wait_seconds else 0.0
                    ) from None
                if not told_about_wait and on_wait is not None:
                    on_wait(read_lease_holder(warehouse))
                    told_about_wait = True
                time.sleep(min(poll_interval, max(wait_seconds - waited, 0.0)))
    except BaseException:
        os.close(descriptor)
        raise
    holder = LeaseHolder.of_this_process(command)
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, holder.to_json().encode(), 0)
    except OSError as error:
        os.close(descriptor)
        raise WarehouseLeaseError(
            f"cannot write the lock file {lock_path}: {error.strerror or error}"
        ) from error
    return WarehouseLease(warehouse, lock_path, descriptor, holder)


def read_lease_holder(warehouse: Path) -> LeaseHolder | None:
    """Who holds (or last held) the lease of ``warehouse``, if the lock file says."""
    lock_path = lock_path_of(warehouse)
    for attempt in range(_HOLDER_READ_ATTEMPTS):
        try:
            holder = LeaseHolder.from_json(lock_path.read_text(encoding="utf-8"))
        except OSError:
            return None
        if holder is not None:
            return holder
        if attempt + 1 < _HOLDER_READ_ATTEMPTS:
            time.sleep(_HOLDER_READ_PAUSE_SECONDS)
    return None


# The leases this process holds for its whole life, by warehouse: flock locks belong to an open
# file, so taking the same lease twice in one process through a second open() would deadlock.
_PROCESS_LEASES: dict[Path, WarehouseLease] = {}


def hold_warehouse_for_process(
    warehouse: Path,
    *,
    wait_seconds: float = 0.0,
    on_wait: Callable[[LeaseHolder | None], None] | None = None,
) -> WarehouseLease:
    """Take the lease of ``warehouse`` once and keep it until this process exits.

    Not released early on purpose: the Spark JVM keeps the Derby metastore open until the process
    ends, so handing the warehouse over any sooner would let the next process meet a locked Derby.
    """
    key = warehouse.resolve()
    lease = _PROCESS_LEASES.get(key)
    if lease is not None and lease.held:
        return lease
    lease = acquire_warehouse_lease(key, wait_seconds=wait_seconds, on_wait=on_wait)
    _PROCESS_LEASES[key] = lease
    return lease


def _this_command_line() -> str:
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return shlex.join([program, *sys.argv[1:]])
