"""``--small-data`` (env LAKEAPPLY_SMALL_DATA) picks the local session's small-data profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lakeapply import cli
from lakeapply.runtime import session
from lakeapply.runtime.session import LocalSparkSettings
from lakeapply.silver import admin


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[LocalSparkSettings]:
    """The settings each command would start Spark with, without starting it."""
    seen: list[LocalSparkSettings] = []

    def fake_get_spark(settings: LocalSparkSettings, notify: Any = None) -> str:
        seen.append(settings)
        return "spark"

    monkeypatch.setattr(session, "get_spark", fake_get_spark)
    monkeypatch.setattr(cli, "_hold_warehouse", lambda ctx: None)
    monkeypatch.setattr(admin, "remove_rule", lambda *args: None)
    monkeypatch.delenv("LAKEAPPLY_SMALL_DATA", raising=False)
    return seen


def _remove_rule(tmp_path: Path, *options: str, **env: str) -> None:
    result = CliRunner().invoke(
        cli.main,
        [
            "--warehouse",
            str(tmp_path),
            *options,
            "admin",
            "remove-rule",
            "APPLY_X",
            "negative",
            "--all",
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output


def test_a_command_starts_spark_without_the_small_data_profile_by_default(
    started: list[LocalSparkSettings], tmp_path: Path
) -> None:
    _remove_rule(tmp_path)
    assert [s.small_data for s in started] == [False]


def test_the_small_data_flag_or_its_environment_variable_picks_the_small_data_profile(
    started: list[LocalSparkSettings], tmp_path: Path
) -> None:
    _remove_rule(tmp_path, "--small-data")
    _remove_rule(tmp_path, LAKEAPPLY_SMALL_DATA="1")
    assert [s.small_data for s in started] == [True, True]
