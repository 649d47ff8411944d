"""Peak resident memory of the driver (this Python process and its JVM) over one measured run.

Linux keeps a high-water mark of each process's resident set (``VmHWM``); writing ``5`` to
``/proc/<pid>/clear_refs`` resets it, so each run reports its own peak.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession


@dataclass
class PeakMemory:
    python_mib: float | None = None
    jvm_mib: float | None = None
    jvm_heap_mib: float | None = None  # heap in use at the end of the run (after a GC)
    # The largest high-water mark among the Python workers (the JVM's descendants: the pyspark
    # daemon and the workers it forks, reused across tasks): a stage or fold that held a whole
    # transaction in one worker would show here, not in the driver's figures.
    worker_mib: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def driver_mib(self) -> float | None:
        if self.python_mib is None or self.jvm_mib is None:
            return None
        return self.python_mib + self.jvm_mib


def _reset(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _high_water_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the command name (field 2) is in parentheses and may hold spaces
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


@contextmanager
def peak_memory(spark: SparkSession) -> Iterator[PeakMemory]:
    jvm: Any = spark.sparkContext._jvm
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    python_pid = os.getpid()
    peak = PeakMemory()
    if not (_reset(python_pid) and _reset(jvm_pid)):
        peak.notes.append("could not reset the high-water mark: peaks are since process start")
    for worker in _descendants(jvm_pid):
        _reset(worker)
    yield peak
    peak.python_mib = _high_water_mib(python_pid)
    peak.jvm_mib = _high_water_mib(jvm_pid)
    workers = [_high_water_mib(worker) for worker in _descendants(jvm_pid)]
    peak.worker_mib = max((w for w in workers if w is not None), default=None)
    runtime = jvm.java.lang.Runtime.getRuntime()
    jvm.java.lang.System.gc()
    peak.jvm_heap_mib = (runtime.totalMemory() - runtime.freeMemory()) / 2**20


@dataclass
class LiveHeap:
    """The JVM's heap in use right after a full GC, sampled while a run went on."""

    samples: int = 0
    peak_mib: float = 0.0
    # Spark's storage memory (cached blocks, broadcast copies) in this JVM at the same samples:
    # with the executors in their own JVM, only what the driver keeps of broadcasts.
    peak_storage_mib: float = 0.0


@contextmanager
def live_heap(spark: SparkSession, every_seconds: float) -> Iterator[LiveHeap]:
    """Every ``every_seconds``, a full GC of the session's JVM, then its heap in use: the peak
    is the most the JVM held live, where the resident high-water mark is how far its heap
    grew. The GCs slow the run: time it without this."""
    jvm: Any = spark.sparkContext._jvm
    runtime = jvm.java.lang.Runtime.getRuntime()
    heap = LiveHeap()
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(every_seconds):
            jvm.java.lang.System.gc()
            used = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
            storage = jvm.org.apache.spark.SparkEnv.get().memoryManager().storageMemoryUsed()
            heap.samples += 1
            heap.peak_mib = max(heap.peak_mib, used)
            heap.peak_storage_mib = max(heap.peak_storage_mib, storage / 2**20)

    sampler = threading.Thread(target=sample, name="live-heap-sampler", daemon=True)
    sampler.start()
    try:
        yield heap
    finally:
        stop.set()
        sampler.join()


def dump_live_heap(spark: SparkSession, path: Path) -> Path:
    """Write an HPROF dump of the JVM's live objects (a full GC first) to ``path``, for
    ``benchmarks/heap_paths`` (which object keeps what alive)."""
    gc.collect()  # Python's references to JVM objects go first (py4j releases them)
    jvm: Any = spark.sparkContext._jvm
    diagnostics = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    path.unlink(missing_ok=True)
    diagnostics.dumpHeap(str(path), True)
    return path
