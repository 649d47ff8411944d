"""The built wheel, shared by the packaging tests (built once per session, outside the repo)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


# What a checkout may hold besides its sources. Local runs write ./warehouse and ./landing at
# the top only: a package of the same name (lakeapply.landing) is a source.
NOT_SOURCES_AT_THE_TOP = {
    ".git",
    ".venv",
    "build",
    "dist",
    "warehouse",
    "landing",
    "metastore_db",
    "spark-warehouse",
}
NOT_SOURCES_ANYWHERE = shutil.ignore_patterns(
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    "target",  # dbt's output, and benchmarks/heap_paths' build
    "logs",
    "dbt_packages",
)


def not_sources(folder: str, names: list[str]) -> set[str]:
    """``shutil.copytree``'s ignore: the names in ``folder`` that are no sources."""
    ignored = set(NOT_SOURCES_ANYWHERE(folder, names))
    if Path(folder) == REPO:
        ignored |= NOT_SOURCES_AT_THE_TOP & set(names)
    return ignored


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps`` of the repository: what the bundle's artifact build makes.
    Built from a copy of the sources: setuptools builds in the source tree's ``build`` folder,
    and the other worker's tests write into the checkout meanwhile (dbt's target and logs
    folders), which once made the build fail copying a file (2026-12-05)."""
    sources = tmp_path_factory.mktemp("sources") / "lakeapply"
    shutil.copytree(REPO, sources, ignore=not_sources)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(out),
            str(sources),
        ],
        cwd=sources,
        check=True,
        timeout=300,
    )
    (wheel,) = out.glob("lakeapply-*.whl")
    return wheel


def wheel_entry_points(wheel: Path) -> dict[str, dict[str, str]]:
    """``entry_points.txt`` of a wheel: group -> name -> object reference."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(name).decode()
    groups: dict[str, dict[str, str]] = {}
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1]
            groups[group] = {}
        elif "=" in line:
            key, _, value = line.partition("=")
            groups[group][key.strip()] = value.strip()
    return groups


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook tags the grouped node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n 2 --dist loadgroup`` the packaging tests share one worker: one wheel
    build, and never two ``pip wheel`` runs writing the repository's build folder at once."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("built_wheel"))
