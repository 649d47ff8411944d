"""What a JVM start reuses: the resolved Delta jar list and the class-data-sharing archive."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lakeapply.runtime import jvm_cache

COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
RUNTIME_KEY = jvm_cache.runtime_key  # the fixture below replaces it for the other tests


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(jvm_cache.CACHE_ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setattr(jvm_cache, "runtime_key", lambda coordinate: "k1")
    return tmp_path / "cache"


def test_a_remembered_jar_list_is_reused_while_every_jar_exists(tmp_path: Path) -> None:
    jars = [tmp_path / "delta.jar", tmp_path / "storage.jar"]
    for jar in jars:
        jar.write_bytes(b"jar")
    listed = ",".join(f"file://{jar}" for jar in jars)
    jvm_cache.remember_jars(COORDINATE, listed)
    assert jvm_cache.resolved_jars(COORDINATE) == listed
    jars[1].unlink()  # Ivy's cache was cleared: resolve again
    assert jvm_cache.resolved_jars(COORDINATE) is None


def test_no_jar_list_is_used_when_the_cache_is_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar = tmp_path / "delta.jar"
    jar.write_bytes(b"jar")
    jvm_cache.remember_jars(COORDINATE, f"file://{jar}")
    monkeypatch.setenv(jvm_cache.CACHE_ENVIRONMENT_VARIABLE, "off")
    assert jvm_cache.resolved_jars(COORDINATE) is None
    assert jvm_cache.class_archive(COORDINATE, may_write=True) is None


def test_an_existing_archive_is_used_and_never_rewritten(cache_home: Path) -> None:
    archive = cache_home / "lakeapply" / "jvm" / "classes-k1.jsa"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"cds")
    found = jvm_cache.class_archive(COORDINATE, may_write=True)
    assert found is not None and not found.writing
    assert found.java_options() == f" -XX:SharedArchiveFile={archive}"


def test_a_session_that_may_not_write_starts_without_an_archive_when_there_is_none() -> None:
    assert jvm_cache.class_archive(COORDINATE, may_write=False) is None


def test_only_one_process_writes_the_archive_at_a_time(cache_home: Path) -> None:
    stale = cache_home / "lakeapply" / "jvm" / "classes-k1.jsa.999.partial"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half")  # left by a writer that was killed
    writer = jvm_cache.class_archive(COORDINATE, may_write=True)
    assert writer is not None and writer.writing
    assert writer.java_options() == f" -XX:ArchiveClassesAtExit={writer.partial}"
    assert not stale.exists()
    assert jvm_cache.class_archive(COORDINATE, may_write=True) is None  # the lock is held
    assert writer.writer_lock is not None
    writer.writer_lock.close()
    assert jvm_cache.class_archive(COORDINATE, may_write=True) is not None


def test_the_archive_is_published_once_the_jvm_has_written_it_at_exit() -> None:
    writer = jvm_cache.class_archive(COORDINATE, may_write=True)
    assert writer is not None
    # Stands in for the JVM: it exits when its stdin closes, writing the archive on the way out.
    fake_jvm = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdin.read(); open(sys.argv[1], 'wb').write(b'cds')",
            str(writer.partial),
        ],
        stdin=subprocess.PIPE,
    )
    writer._publish_after_exit(fake_jvm)
    assert writer.path.read_bytes() == b"cds"
    assert not writer.partial.exists()
    assert jvm_cache.class_archive(COORDINATE, may_write=True) == jvm_cache.ClassArchive(
        writer.path, None
    )


def test_a_jvm_that_fails_leaves_no_archive() -> None:
    writer = jvm_cache.class_archive(COORDINATE, may_write=True)
    assert writer is not None
    fake_jvm = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; open(sys.argv[1], 'wb').write(b'half'); sys.exit(3)",
            str(writer.partial),
        ],
        stdin=subprocess.PIPE,
    )
    writer._publish_after_exit(fake_jvm)
    assert not writer.path.exists() and not writer.partial.exists()


def test_publishing_an_archive_keeps_only_the_latest_few(cache_home: Path) -> None:
    folder = cache_home / "lakeapply" / "jvm"
    folder.mkdir(parents=True)
    for age, key in enumerate(["old3", "old2", "old1", "old0"]):
        archive = folder / f"classes-{key}.jsa"
        archive.write_bytes(b"cds")
        archive.with_suffix(".lock").touch()
        os.utime(archive, (1000 - age, 1000 - age))
    writer = jvm_cache.class_archive(COORDINATE, may_write=True)
    assert writer is not None
    writer.partial.write_bytes(b"cds")
    finished_jvm = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    finished_jvm.wait()
    writer._publish_after_exit(finished_jvm)
    kept = sorted(path.name for path in folder.glob("classes-*.jsa"))
    assert kept == ["classes-k1.jsa", "classes-old2.jsa", "classes-old3.jsa"]
    assert not (folder / "classes-old0.lock").exists()


def test_a_reinstalled_pyspark_gets_a_new_archive_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyspark

    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        pytest.skip("no java to key the archive by")
    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    monkeypatch.setattr(pyspark, "__file__", str(tmp_path / "pyspark" / "__init__.py"))
    before = RUNTIME_KEY(COORDINATE)
    os.utime(jars, (1, 1))  # the jars installed again: the JVM would refuse the old archive
    assert before is not None and RUNTIME_KEY(COORDINATE) not in (None, before)
    assert RUNTIME_KEY("io.delta:delta-spark_4.2_2.13:9.9.9") != RUNTIME_KEY(COORDINATE)
