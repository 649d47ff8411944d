"""What a local JVM start reuses from the runs before it: the jar list Ivy resolved for Delta,
and a class-data-sharing (CDS) archive of the classes an earlier run loaded.

Each local start paid twice for work that never changes between runs of one installation:
spark-submit ran an Ivy resolution (~1-3 s with every jar already cached), and the JVM loaded
and verified tens of thousands of Spark, Hive and Delta classes from jar files, at start and
again at each first use (the first Delta read of a process took ~9 s). Measured on the 2-core
machine, start + first metastore call + first Delta read: 25-27 s cold, 18-21 s with both.

The first CLI process that finds no archive writes one when its JVM exits (a few seconds more at
exit, once); a lock keeps two processes from writing it at once. Both caches are keyed by what
decides them (the Delta coordinate, the pyspark installation, the java binary). The JVM checks
an archive before using it and starts without it when it does not match (``-Xshare:auto``),
so a stale archive costs nothing but its speed-up. ``LAKEAPPLY_JVM_CACHE=off`` disables both.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyspark

CACHE_ENVIRONMENT_VARIABLE = "LAKEAPPLY_JVM_CACHE"
# Writing the archive of the demo's process took ~30 s on 2 cores.
ARCHIVE_WRITE_TIMEOUT_SECONDS = 180
# Each virtual environment (each pyspark installation) has its own archive of ~240 MB: keep
# the few used most recently.
ARCHIVES_KEPT = 3


def cache_enabled() -> bool:
    return os.environ.get(CACHE_ENVIRONMENT_VARIABLE, "on").strip().lower() not in (
        "0",
        "off",
        "false",
        "no",
    )


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/lakeapply/jvm`` (``~/.cache/lakeapply/jvm`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lakeapply" / "jvm"


def _java_binary() -> Path | None:
    """The java spark-submit runs: ``$JAVA_HOME/bin/java``, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def runtime_key(maven_coordinate: str) -> str | None:
    """A name for this exact runtime; None when no java binary is found (nothing to cache)."""
    java = _java_binary()
    if java is None:
        return None
    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    try:
        # The JVM checks the class path's jars against the archive and ignores a stale one;
        # a reinstalled pyspark (new jar times) gets a new key, so a new archive is written.
        installed = [java.stat().st_mtime_ns, spark_jars.stat().st_mtime_ns]
    except OSError:
        return None
    facts = "\n".join(
        [maven_coordinate, str(spark_jars), pyspark.__version__, str(java), *map(str, installed)]
    )
    return hashlib.sha256(facts.encode()).hexdigest()[:16]


def _jar_list_file(maven_coordinate: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in maven_coordinate)
    return cache_folder() / f"{safe}.jars"


def resolved_jars(maven_coordinate: str) -> str | None:
    """The jar list an earlier start resolved for ``maven_coordinate``, when every jar of it is
    still on disk (Ivy's cache can be cleared); else None and spark-submit resolves again."""
    if not cache_enabled():
        return None
    try:
        jars = _jar_list_file(maven_coordinate).read_text().split(",")
    except OSError:
        return None
    if not jars or not all(
        Path(jar.removeprefix("file://")).is_file() for jar in jars if jar.strip()
    ):
        return None
    return ",".join(jars)


def remember_jars(maven_coordinate: str, jars: str) -> None:
    """Keep the jar list spark-submit resolved (``spark.jars`` of the started session)."""
    if not cache_enabled() or not jars.strip():
        return
    target = _jar_list_file(maven_coordinate)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        partial.write_text(jars)
        os.replace(partial, target)


@dataclass(frozen=True)
class ClassArchive:
    """The CDS archive of one runtime: used when it exists, else written by this process."""

    path: Path
    writer_lock: IO[str] | None  # held while this process writes the archive

    @property
    def writing(self) -> bool:
        return self.writer_lock is not None

    @property
    def partial(self) -> Path:
        return self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")

    def java_options(self) -> str:
        if self.writing:
            return f" -XX:ArchiveClassesAtExit={self.partial}"
        return f" -XX:SharedArchiveFile={self.path}"

    def finish_when_the_jvm_exits(self, jvm: subprocess.Popen[bytes] | None) -> None:
        """When writing: at this process's exit, end the JVM (it exits when its stdin closes),
        wait for it to write the archive, and publish it under its final name."""
        if self.writing and jvm is not None:
            atexit.register(self._publish_after_exit, jvm)

    def _publish_after_exit(self, jvm: subprocess.Popen[bytes]) -> None:
        try:
            if jvm.poll() is None:
                if jvm.stdin is not None:
                    jvm.stdin.close()
                jvm.wait(timeout=ARCHIVE_WRITE_TIMEOUT_SECONDS)
            if jvm.returncode == 0 and self.partial.is_file():
                os.replace(self.partial, self.path)
                _forget_all_but_the_latest(self.path.parent)
        except (OSError, subprocess.TimeoutExpired):
            pass  # no archive this time; the next process tries again
        finally:
            with contextlib.suppress(OSError):
                self.partial.unlink(missing_ok=True)
            if self.writer_lock is not None:
                self.writer_lock.close()  # releases the lock


def class_archive(maven_coordinate: str, may_write: bool) -> ClassArchive | None:
    """The archive to use, or (``may_write``) to write when none exists and no other process is
    writing one; None when disabled, when java is not found, or when there is none to use."""
    key = runtime_key(maven_coordinate) if cache_enabled() else None
    if key is None:
        return None
    folder = cache_folder()
    archive = folder / f"classes-{key}.jsa"
    if archive.is_file():
        with contextlib.suppress(OSError):
            os.utime(archive)  # marks it used (see _forget_all_but_the_latest)
        return ClassArchive(archive, None)
    if not may_write:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = (folder / f"classes-{key}.lock").open("a")
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    for stale in folder.glob(f"classes-{key}.jsa.*.partial"):  # a writer killed mid-way
        with contextlib.suppress(OSError):
            stale.unlink()
    if archive.is_file():  # written while we waited for nothing: use it
        lock.close()
        return ClassArchive(archive, None)
    return ClassArchive(archive, lock)


def _forget_all_but_the_latest(folder: Path) -> None:
    """Delete all but the :data:`ARCHIVES_KEPT` archives used most recently."""
    archives = sorted(
        folder.glob("classes-*.jsa"), key=lambda path: path.stat().st_mtime, reverse=True
    )
    for archive in archives[ARCHIVES_KEPT:]:
        with contextlib.suppress(OSError):
            archive.unlink()
            archive.with_suffix(".lock").unlink(missing_ok=True)
