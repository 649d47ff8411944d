"""`lakeapply optimize` says what it did to each destination table."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from lakeapply import cli
from lakeapply.silver import layout
from lakeapply.silver.layout import TableLayout


def test_optimize_prints_each_tables_clustering_and_what_was_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[Any] = []
    monkeypatch.setattr(cli, "_spark", lambda obj: "spark")
    monkeypatch.setattr(
        cli, "_apply_settings", lambda spark, catalog, name: asked.append(name) or _Named()
    )
    monkeypatch.setattr(
        layout,
        "optimize_destinations",
        lambda spark, catalog, settings: [
            TableLayout("orcl_hr_emp", ("EMP_ID",), True, True),
            TableLayout("orcl_hr_audit", (), False, False, "partitioned: not clustered"),
        ],
    )

    result = CliRunner().invoke(cli.main, ["optimize", "--apply-name", "APPLY_X"])

    assert result.exit_code == 0, result.output
    assert asked == ["APPLY_X"]
    assert result.output.splitlines()[-2:] == [
        "orcl_hr_emp: clustered by EMP_ID (changed); optimized",
        "orcl_hr_audit: clustered by none; partitioned: not clustered",
    ]


class _Named:
    apply_name = "APPLY_X"
