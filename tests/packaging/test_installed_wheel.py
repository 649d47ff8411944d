"""The built wheel installed into a clean virtual environment outside the repository runs the
demo: the JSON schemas, the dbt project and the demo lakeapply.yml come from the package, the
console shows lakeapply's own output only (Spark's goes to a log under the warehouse), and dbt
writes nothing into the installed package.

Slow: installing pyspark and dbt into a new environment (from pip's cache) and a full demo run
take several minutes on two cores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO


def clean_environment() -> dict[str, str]:
    """The caller's environment without anything pointing back at the repository or its venv."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR", "PIP_CACHE_DIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if not part.startswith(str(REPO))
    )
    return env


@pytest.mark.slow
def test_the_installed_wheel_runs_the_demo_outside_the_repository(
    built_wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", f"{built_wheel}[gold]"],
        check=True,
        timeout=900,
        env=clean_environment(),
    )
    work = tmp_path / "work"
    work.mkdir()
    env = clean_environment()
    lakeapply = str(venv / "bin" / "lakeapply")

    demo = subprocess.run(
        [lakeapply, "--warehouse", "wh", "run", "--landing", "landing", "--transactions", "30"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "gold: dbt run OK" in demo.stdout
    assert "silver: APPLY_DEMO cycle 1" in demo.stdout
    console = demo.stdout + demo.stderr
    for noise in (":: resolution report ::", "log4j", "HiveAlterHandler", "WARN ", "Ivy"):
        assert noise not in console, f"{noise!r} on the console:\n{console}"
    # Tables and summaries fit 80 columns (timestamped progress lines are a job log's, not tables).
    wide = [
        line
        for line in demo.stdout.splitlines()
        if len(line) > 80 and not re.match(r"^\d{4}-\d\d-\d\dT", line)
    ]
    assert not wide, "\n".join(wide)
    assert (work / "wh" / "logs" / "spark.log").stat().st_size > 0

    # The code and its resources ran from the environment, and dbt left nothing in it.
    located = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import lakeapply; print(lakeapply.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    package = Path(located.stdout.strip()).parent
    assert package.is_relative_to(venv)
    project = package / "_resources" / "dbt"
    assert (project / "dbt_project.yml").is_file()
    assert not (project / "target").exists() and not (project / "logs").exists()

    status = subprocess.run(
        [lakeapply, "--warehouse", "wh", "status", "--json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)  # stdout is the JSON document and nothing else
