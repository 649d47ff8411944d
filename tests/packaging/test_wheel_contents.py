"""Issue 12 item 1: the wheel holds every module of the package (the installed-wheel demo in
``make test-slow`` found ``lakeapply.landing`` missing from a wheel built from a copy of the
sources that had left out every folder named ``landing``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from .conftest import REPO


def test_the_wheel_holds_every_python_module_of_the_sources(built_wheel: Path) -> None:
    sources = REPO / "pipelines"
    modules = {
        path.relative_to(sources).as_posix()
        for path in (sources / "lakeapply").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    with zipfile.ZipFile(built_wheel) as archive:
        shipped = set(archive.namelist())

    assert "lakeapply/landing/generator.py" in modules
    assert modules - shipped == set()
