"""The Databricks bundle, checked offline: databricks.yml and its includes load, every
``${var.x}`` resolves for every target, every job is a valid job for the ``databricks-bundles``
models (unknown keys rejected), and every task runs something that exists: a console script of
the built wheel with options the CLI accepts, or the packaged dbt project with its target."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from databricks.bundles.jobs import Job

from lakeapply.cli import main

from .conftest import REPO, wheel_entry_points

VARIABLE = re.compile(r"\$\{var\.([A-Za-z0-9_]+)\}")
REQUIRED_VARIABLES = {
    "catalog",
    "schema_prefix",
    "landing_path",
    "config_path",
    "apply_name",
    "dbt_target",
}


def load_bundle() -> tuple[dict[str, Any], dict[Path, dict[str, Any]]]:
    """databricks.yml and each included file (by path), as the CLI reads them."""
    root = yaml.safe_load((REPO / "databricks.yml").read_text())
    included: dict[Path, dict[str, Any]] = {}
    for pattern in root.get("include", ()):
        for path in sorted(REPO.glob(pattern)):
            included[path] = yaml.safe_load(path.read_text())
    return root, included


def variables_for(root: dict[str, Any], target: str) -> dict[str, Any]:
    values = {name: spec.get("default") for name, spec in root["variables"].items()}
    values.update(root["targets"][target].get("variables", {}))
    return values


def resolve(node: Any, values: dict[str, Any]) -> Any:
    """Substitute ``${var.x}``; a reference to an undeclared variable fails the test."""
    if isinstance(node, dict):
        return {key: resolve(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(value, values) for value in node]
    if isinstance(node, str):

        def value(match: re.Match[str]) -> str:
            assert match.group(1) in values, f"undeclared variable {match.group(0)}"
            return str(values[match.group(1)])

        return VARIABLE.sub(value, node)
    return node


def jobs(included: dict[Path, dict[str, Any]]) -> list[tuple[Path, str, dict[str, Any]]]:
    return [
        (path, key, job)
        for path, document in included.items()
        for key, job in document.get("resources", {}).get("jobs", {}).items()
    ]


def test_the_bundle_includes_one_file_per_job_under_resources() -> None:
    root, included = load_bundle()
    assert root["include"] == ["resources/*.yml"]
    names = {path.name for path in included}
    assert names == {
        "configure.job.yml",
        "ingest.job.yml",
        "apply.job.yml",
        "gold.job.yml",
        "optimize.job.yml",
    }
    for path, _key, _job in jobs(included):
        assert len(included[path]["resources"]["jobs"]) == 1, f"{path.name}: one job per file"


def test_variables_have_descriptions_and_targets_are_dev_by_default_and_prod() -> None:
    root, _ = load_bundle()
    assert set(root["variables"]) >= REQUIRED_VARIABLES
    for name, spec in root["variables"].items():
        assert spec.get("description"), f"variable {name} has no description"
    assert root["targets"]["dev"] == {
        **root["targets"]["dev"],
        "mode": "development",
        "default": True,
    }
    assert root["targets"]["prod"]["mode"] == "production"


def test_the_artifact_is_the_wheel_built_from_pyproject() -> None:
    root, _ = load_bundle()
    (artifact,) = root["artifacts"].values()
    assert artifact["type"] == "whl"
    assert (REPO / artifact["path"] / "pyproject.toml").is_file()
    assert "--wheel-dir dist" in artifact["build"]


@pytest.mark.parametrize("target", ["dev", "prod"])
def test_every_job_resolves_and_validates_against_the_databricks_job_model(target: str) -> None:
    root, included = load_bundle()
    values = variables_for(root, target)
    found = jobs(included)
    assert {key for _, key, _ in found} == {
        "lakeapply_configure",
        "lakeapply_ingest",
        "lakeapply_apply",
        "lakeapply_gold",
        "lakeapply_optimize",
    }
    for path, key, job in found:
        resolved = resolve(job, values)
        assert "${var." not in yaml.safe_dump(resolved), f"{path.name}: unresolved variable"
        model = Job.from_dict(resolved)  # raises on unknown or mistyped keys
        assert model.tasks, f"{key} has no task"


def test_the_job_model_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="Unexpected field"):
        Job.from_dict({"name": "x", "tasks": [{"task_key": "t", "python_wheel_tsak": {}}]})


def test_every_wheel_task_names_a_console_script_of_the_built_wheel(built_wheel: Path) -> None:
    root, included = load_bundle()
    scripts = wheel_entry_points(built_wheel)["console_scripts"]
    distribution = built_wheel.name.split("-")[0]
    wheel_tasks = 0
    for path, _key, job in jobs(included):
        for task in resolve(job, variables_for(root, "dev"))["tasks"]:
            wheel_task = task.get("python_wheel_task")
            if wheel_task is None:
                continue
            wheel_tasks += 1
            assert wheel_task["package_name"] == distribution, path.name
            assert wheel_task["entry_point"] in scripts, path.name
            # The parameters are options and a command the CLI knows (parsed, not run).
            result = CliRunner().invoke(main, [*wheel_task["parameters"], "--help"])
            assert result.exit_code == 0, f"{path.name}: {result.output}"
            # Environments install the artifact the bundle builds (dist/ at the bundle root).
            (environment,) = [
                e for e in job["environments"] if e["environment_key"] == task["environment_key"]
            ]
            assert "../dist/*.whl" in environment["spec"]["dependencies"]
            assert (path.parent / "../dist").resolve() == REPO / "dist"
    assert wheel_tasks == 4


def test_the_gold_task_runs_the_packaged_dbt_project_with_the_databricks_target() -> None:
    root, included = load_bundle()
    values = variables_for(root, "dev")
    (path,) = [p for p in included if p.name == "gold.job.yml"]
    (job,) = resolve(included[path]["resources"]["jobs"], values).values()
    (task,) = job["tasks"]
    dbt = task["dbt_task"]
    project = (path.parent / dbt["project_directory"]).resolve()
    assert (project / "dbt_project.yml").is_file()
    assert project == REPO / "pipelines" / "lakeapply" / "_resources" / "dbt"
    profiles = yaml.safe_load((project / dbt["profiles_directory"] / "profiles.yml").read_text())
    output = profiles["lakeapply"]["outputs"][values["dbt_target"]]
    assert output["type"] == "databricks"
    assert all(command.startswith("dbt ") for command in dbt["commands"])
    assert any(f"--target {values['dbt_target']}" in command for command in dbt["commands"])
