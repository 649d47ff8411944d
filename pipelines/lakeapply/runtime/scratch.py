"""Each local Spark process's scratch folder (``spark.local.dir``), and the removal of the ones
killed processes left behind.

Spark deletes its scratch (block manager files, its copies of the jars, PySpark's files) in a
JVM shutdown hook. A process killed with SIGKILL (the crash harness, an out-of-memory killer, a
cancelled job) runs no hook, and each left ~86 MB in ``/tmp``: 1,206 folders, ~100 GB, after the
crash soaks of 2026-12-05. So each local process gets a folder of its own under one root, named
after its process id, and starting a session removes the folders of processes that no longer
run. ``LAKEAPPLY_SCRATCH`` names another root; Spark's own ``SPARK_LOCAL_DIRS``, when set, wins
and nothing here runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SCRATCH_ENV = "LAKEAPPLY_SCRATCH"


def scratch_root() -> Path:
    configured = os.environ.get(SCRATCH_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"lakeapply-scratch-{os.getuid()}"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: running
        return True
    return True


def remove_abandoned(root: Path) -> list[Path]:
    """Remove the scratch folders under ``root`` of processes that no longer run."""
    if not root.is_dir():
        return []
    removed = []
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and folder.name.isdigit() and not _running(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def process_scratch(root: Path) -> Path:
    """This process's scratch folder under ``root``, after removing the abandoned ones."""
    remove_abandoned(root)
    folder = root / str(os.getpid())
    folder.mkdir(parents=True, exist_ok=True)
    return folder
