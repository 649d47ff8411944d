import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from lakeapply.runtime.scratch import process_scratch, remove_abandoned, scratch_root


def _pid_of_an_ended_process() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def test_the_scratch_of_an_ended_process_is_removed_and_a_running_ones_kept(
    tmp_path: Path,
) -> None:
    abandoned = tmp_path / str(_pid_of_an_ended_process())
    (abandoned / "blockmgr-1").mkdir(parents=True)
    (abandoned / "blockmgr-1" / "shuffle_0.data").write_bytes(b"x" * 1024)
    running = tmp_path / "1"  # init: always running
    running.mkdir()
    not_a_process = tmp_path / "notes"
    not_a_process.mkdir()

    assert remove_abandoned(tmp_path) == [abandoned]
    assert not abandoned.exists() and running.exists() and not_a_process.exists()


def test_a_process_gets_its_own_folder_named_after_its_id(tmp_path: Path) -> None:
    folder = process_scratch(tmp_path)
    assert folder.parent == tmp_path and folder.name.isdigit() and folder.is_dir()


def test_the_local_session_keeps_its_scratch_in_its_own_folder(spark: SparkSession) -> None:
    local_dir = Path(spark.sparkContext.getConf().get("spark.local.dir") or "")
    assert local_dir.parent == scratch_root()
    assert local_dir.name.isdigit()


def test_the_jvm_keeps_its_temporary_files_in_the_same_folder(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    temporary = Path(str(jvm.java.lang.System.getProperty("java.io.tmpdir")))
    assert temporary == Path(spark.sparkContext.getConf().get("spark.local.dir") or "")
