"""The rule, transformation and virtual dependency admin commands pass the API exactly what a
user typed."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from lakeapply import cli
from lakeapply.silver import admin


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The admin API calls the commands make, without a Spark session."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    monkeypatch.setattr(cli, "_spark", lambda obj: "spark")
    for name in (
        "add_rule",
        "remove_rule",
        "add_transformation",
        "remove_transformation",
        "add_rule_transformation",
        "remove_rule_transformation",
        "set_value_dependency",
        "create_object_dependency",
        "drop_object_dependency",
        "set_dml_handler",
    ):
        monkeypatch.setattr(admin, name, lambda *args, _name=name: seen.append((_name, args[2:])))
    return seen


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli.main, ["admin", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_add_rule_passes_the_named_fields_as_a_rule(calls: list[Any]) -> None:
    _invoke("add-rule", "APPLY_X", "negative", "--schema", "HR", "--table", "AUDIT")
    _invoke("add-rule", "APPLY_X", "positive", "--tag", "NOT NULL")
    assert calls == [
        ("add_rule", ("APPLY_X", "negative", {"schema": "HR", "table": "AUDIT"})),
        ("add_rule", ("APPLY_X", "positive", {"tag": "NOT NULL"})),
    ]


def test_add_rule_passes_a_subset_condition_and_rule_transformations(calls: list[Any]) -> None:
    steps = '[{"rename_schema": {"from": "HR", "to": "HR2"}}]'
    _invoke(
        "add-rule", "APPLY_X", "positive", "--schema", "HR", "--table", "EMP",
        "--condition", "DEPT = 10", "--transformations", steps,
    )  # fmt: skip
    assert calls == [
        (
            "add_rule",
            (
                "APPLY_X",
                "positive",
                {
                    "schema": "HR",
                    "table": "EMP",
                    "condition": "DEPT = 10",
                    "transformations": [{"rename_schema": {"from": "HR", "to": "HR2"}}],
                },
            ),
        )
    ]


def test_remove_rule_needs_a_rule_or_all(calls: list[Any]) -> None:
    _invoke("remove-rule", "APPLY_X", "negative", "--all")
    result = CliRunner().invoke(cli.main, ["admin", "remove-rule", "APPLY_X", "negative"])
    assert result.exit_code == 2
    assert "name the rule" in result.output
    assert calls == [("remove_rule", ("APPLY_X", "negative", None))]


def test_add_transformation_builds_the_configuration_file_form_of_each_step(
    calls: list[Any],
) -> None:
    base = ("add-transformation", "APPLY_X", "ORCL", "HR.EMP")
    _invoke(*base, "--delete-column", "NICKNAME")
    _invoke(*base, "--rename-column", "LAST_NAME:SURNAME", "--step", "1")
    _invoke(*base, "--keep-columns", "ID, NAME")
    _invoke(*base, "--add-column", "SITE", "--value", "LYON", "--value-type", "*")
    steps = [(args[3], args[4]) for _, args in calls]
    assert steps == [
        ({"delete_column": "NICKNAME"}, None),
        ({"rename_column": {"from": "LAST_NAME", "to": "SURNAME"}}, 1),
        ({"keep_columns": ["ID", "NAME"]}, None),
        ({"add_column": {"column": "SITE", "value": "LYON"}, "value_type": "*"}, None),
    ]


def test_add_transformation_wants_exactly_one_kind_of_step(calls: list[Any]) -> None:
    result = CliRunner().invoke(
        cli.main,
        [
            "admin",
            "add-transformation",
            "APPLY_X",
            "ORCL",
            "HR.EMP",
            "--delete-column",
            "A",
            "--keep-columns",
            "B",
        ],
    )
    assert result.exit_code == 2
    assert "exactly one of" in result.output
    assert calls == []


def test_remove_transformation_without_a_step_removes_every_step(calls: list[Any]) -> None:
    _invoke("remove-transformation", "APPLY_X", "ORCL", "HR.EMP")
    _invoke("remove-transformation", "APPLY_X", "ORCL", "HR.EMP", "--step", "2")
    assert calls == [
        ("remove_transformation", ("APPLY_X", "ORCL", "HR.EMP", None)),
        ("remove_transformation", ("APPLY_X", "ORCL", "HR.EMP", 2)),
    ]


def test_rule_transformation_commands_pass_the_rule_number_and_the_step(calls: list[Any]) -> None:
    _invoke(
        "add-rule-transformation",
        "APPLY_X",
        "2",
        '{"rename_table": {"from": "HR.A", "to": "HR.B"}}',
    )
    _invoke("add-rule-transformation", "APPLY_X", "1", '{"delete_column": "NOTE"}', "--step", "1")
    _invoke("remove-rule-transformation", "APPLY_X", "2")
    result = CliRunner().invoke(
        cli.main, ["admin", "add-rule-transformation", "APPLY_X", "1", "[]"]
    )
    assert result.exit_code == 2
    assert "one step: a JSON object" in result.output
    assert calls == [
        (
            "add_rule_transformation",
            ("APPLY_X", 2, {"rename_table": {"from": "HR.A", "to": "HR.B"}}, None),
        ),
        ("add_rule_transformation", ("APPLY_X", 1, {"delete_column": "NOTE"}, 1)),
        ("remove_rule_transformation", ("APPLY_X", 2, None)),
    ]


def test_virtual_dependency_commands_pass_objects_and_columns(calls: list[Any]) -> None:
    _invoke("set-value-dependency", "APPLY_X", "ORDER_OF_LINE", "SALES.LINES", "ORDER_ID, LINE")
    _invoke("set-value-dependency", "APPLY_X", "ORDER_OF_LINE", "SALES.LINES", "--remove")
    _invoke("create-object-dependency", "APPLY_X", "SALES.AUDIT", "SALES.ORDERS")
    _invoke("drop-object-dependency", "APPLY_X", "SALES.AUDIT", "SALES.ORDERS")
    assert calls == [
        ("set_value_dependency", ("APPLY_X", "ORDER_OF_LINE", "SALES.LINES", ["ORDER_ID", "LINE"])),
        ("set_value_dependency", ("APPLY_X", "ORDER_OF_LINE", "SALES.LINES", None)),
        ("create_object_dependency", ("APPLY_X", "SALES.AUDIT", "SALES.ORDERS")),
        ("drop_object_dependency", ("APPLY_X", "SALES.AUDIT", "SALES.ORDERS")),
    ]


def test_set_value_dependency_wants_columns_or_remove(calls: list[Any]) -> None:
    for extra in ([], ["A", "--remove"]):
        result = CliRunner().invoke(
            cli.main, ["admin", "set-value-dependency", "APPLY_X", "D", "SALES.LINES", *extra]
        )
        assert result.exit_code == 2
        assert "give COLUMNS, or --remove without them" in result.output
    assert calls == []


def test_set_dml_handler_passes_a_procedure_or_a_statement_and_removes_with_neither(
    calls: list[Any],
) -> None:
    _invoke("set-dml-handler", "APPLY_X", "ORCL", "HR.EMP", "DELETE", "--user-procedure", "h.m:f")
    _invoke(
        "set-dml-handler", "APPLY_X", "ORCL", "HR.EMP", "INSERT",
        "--statement", "SELECT * FROM {lcrs}", "--handler-name", "ALL",
    )  # fmt: skip
    _invoke("set-dml-handler", "APPLY_X", "ORCL", "HR.EMP", "DELETE")
    _invoke(
        "set-dml-handler", "APPLY_X", "ORCL", "HR.EMP", "UPDATE",
        "--user-procedure", "h.m:g", "--error-handler",
    )  # fmt: skip
    assert calls == [
        ("set_dml_handler", ("APPLY_X", "ORCL", "HR.EMP", "DELETE", "h.m:f", None, None, False)),
        (
            "set_dml_handler",
            ("APPLY_X", "ORCL", "HR.EMP", "INSERT", None, "SELECT * FROM {lcrs}", "ALL", False),
        ),
        ("set_dml_handler", ("APPLY_X", "ORCL", "HR.EMP", "DELETE", None, None, None, False)),
        ("set_dml_handler", ("APPLY_X", "ORCL", "HR.EMP", "UPDATE", "h.m:g", None, None, True)),
    ]
