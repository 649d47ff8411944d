"""What a job reads besides code ships inside the package and is found through it, not through
the repository: the repository's schemas/, dbt/ and lakeapply.yml are links to the same files."""

from __future__ import annotations

from pathlib import Path

import pytest

import lakeapply
from lakeapply.contract.table_definitions import SCHEMAS_DIR
from lakeapply.errors import EnvironmentSetupError
from lakeapply.gold.runner import DBT_PROJECT_DIR
from lakeapply.resources import DBT_PROJECT, DEMO_CONFIG, SCHEMAS, resource_path
from lakeapply.silver.config import load_config

from .conftest import REPO

PACKAGE = Path(lakeapply.__file__).resolve().parent


def test_schemas_dbt_and_the_demo_config_are_read_from_inside_the_package() -> None:
    for name in (SCHEMAS, DBT_PROJECT, DEMO_CONFIG):
        assert resource_path(name).resolve().is_relative_to(PACKAGE)
    assert SCHEMAS_DIR.resolve().is_relative_to(PACKAGE)
    assert DBT_PROJECT_DIR.resolve().is_relative_to(PACKAGE)
    assert (DBT_PROJECT_DIR / "dbt_project.yml").is_file()
    assert (SCHEMAS_DIR / "lcr.schema.json").is_file()


def test_the_repository_layout_links_to_the_packaged_files() -> None:
    for name in (SCHEMAS, DBT_PROJECT, DEMO_CONFIG):
        assert (REPO / name).is_symlink()
        assert (REPO / name).resolve() == resource_path(name).resolve()


def test_the_packaged_demo_config_finds_its_table_definitions_next_to_it() -> None:
    (demo,) = load_config(resource_path(DEMO_CONFIG))
    assert demo.apply_name == "APPLY_DEMO"
    assert {t.definition.qualified_name for t in demo.tables} >= {"US03.STUDENT", "US03.COURSE"}


def test_a_missing_resource_is_an_environment_error_naming_it() -> None:
    with pytest.raises(EnvironmentSetupError, match="no_such_resource"):
        resource_path("no_such_resource")
