"""Issue 15 items 1 and 2: the testing kit ships in the wheel, with the LCR schema its builder
validates against, and registers its pytest plugin (``pytest11``) so installing lakeapply is all
a user's test suite needs for the ``lakeapply`` fixture."""

from __future__ import annotations

import zipfile
from pathlib import Path

from .conftest import wheel_entry_points


def test_the_wheel_ships_the_testing_kit_and_registers_its_pytest_plugin(
    built_wheel: Path,
) -> None:
    with zipfile.ZipFile(built_wheel) as archive:
        names = set(archive.namelist())

    assert {
        "lakeapply/testing/__init__.py",
        "lakeapply/testing/builder.py",
        "lakeapply/testing/harness.py",
        "lakeapply/testing/plugin.py",
    } <= names
    assert any(name.endswith("lcr.schema.json") for name in names)
    assert wheel_entry_points(built_wheel)["pytest11"] == {"lakeapply": "lakeapply.testing.plugin"}
