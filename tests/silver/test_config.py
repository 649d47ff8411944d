"""lakeapply.yml: the sample loads, and every invalid configuration fails with a precise message."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakeapply.contract.table_definitions import SCHEMAS_DIR, load_table_definition
from lakeapply.errors import ConfigurationError
from lakeapply.landing.generator import synthetic_table_definitions
from lakeapply.silver.config import load_config
from lakeapply.silver.settings import (
    CommitSerialization,
    ConflictResolution,
    ObjectDependency,
    ValueDependency,
)
from lakeapply.silver.validation import validate_settings

REPO = SCHEMAS_DIR.parent
SAMPLE = REPO / "lakeapply.yml"
TABLES = SCHEMAS_DIR / "tables"


def _table(**overrides: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "source_database": "ORCL",
        "source_object": "US03.STUDENT",
        "silver_table": "orcl_us03_student",
        "definition": str(TABLES / "us03.student.yml"),
    }
    table.update(overrides)
    return table


def _process(name: str = "APPLY_TEST", **overrides: Any) -> dict[str, Any]:
    process: dict[str, Any] = {
        "apply_name": name,
        "source_databases": ["ORCL"],
        "tables": [_table()],
    }
    process.update(overrides)
    return process


def _load(tmp_path: Path, *processes: dict[str, Any]) -> Any:
    path = tmp_path / "lakeapply.yml"
    path.write_text(yaml.safe_dump({"apply_processes": list(processes or [_process()])}))
    return load_config(path)


def _fails(tmp_path: Path, where: str, message: str, *processes: dict[str, Any]) -> None:
    expected = re.escape(f"{tmp_path / 'lakeapply.yml'}: {where}: ") + message
    with pytest.raises(ConfigurationError, match=expected):
        _load(tmp_path, *processes)


def test_the_sample_configuration_loads_the_demo_apply_process() -> None:
    (demo,) = load_config(SAMPLE)
    assert demo.apply_name == "APPLY_DEMO"
    assert demo.commit_serialization is CommitSerialization.FULL
    assert demo.disable_on_error is False
    assert demo.source_databases == ("ORCL", "DBS1.EXAMPLE.COM")
    assert [t.silver_table for t in demo.tables] == [
        "orcl_us03_course",
        "orcl_us03_student",
        "dbs1_example_com_synth_t001",
        "dbs1_example_com_synth_t002",
    ]
    assert demo.instantiation_scn_for("ORCL", "US03", "STUDENT") == 1621199
    assert demo.instantiation_scn_for("DBS1.EXAMPLE.COM", "SYNTH", "T002") == 999999
    assert all(not table.update_conflict_handlers for table in demo.tables)


def test_the_synthetic_definition_files_equal_the_generators_definitions() -> None:
    files = tuple(load_table_definition(TABLES / f"synth.t00{n}.yml") for n in (1, 2))
    assert files == synthetic_table_definitions(2)


def test_a_full_apply_process_maps_onto_the_settings(tmp_path: Path) -> None:
    table = _table(
        key_columns=["FIRST_NAME", "SURNAME"],
        instantiation_scn=20,
        ignore_scn=20,
        compare_old_values=[
            {"columns": ["GENDER"], "operations": ["UPDATE", "DELETE"], "compare": False}
        ],
        update_conflict_handlers=[
            {
                "method": "MAXIMUM",
                "column_list": ["TUITION_FEE"],
                "resolution_column": "TUITION_FEE",
            }
        ],
    )
    process = _process(
        parameters={
            "commit_serialization": "DEPENDENT_TRANSACTIONS",
            "disable_on_error": "Y",
            "max_cycle_batches": 3,
            "max_error_passes": 2,
        },
        source_databases=["ORCL", "DBS1.EXAMPLE.COM"],
        rules={"discard_tagged": True},
        instantiation={
            "schemas": [{"source_database": "ORCL", "owner": "US03", "scn": 10}],
            "global": [{"source_database": "DBS1.EXAMPLE.COM", "scn": 5}],
        },
        tables=[table],
    )
    (settings,) = _load(tmp_path, process)
    assert settings.commit_serialization is CommitSerialization.DEPENDENT_TRANSACTIONS
    assert settings.disable_on_error is True
    assert (settings.max_cycle_batches, settings.max_error_passes) == (3, 2)
    assert settings.discard_tagged is True
    assert settings.schema_instantiation_scns == (("ORCL", "US03", 10),)
    assert settings.global_instantiation_scns == (("DBS1.EXAMPLE.COM", 5),)
    (student,) = settings.tables
    assert student.effective_key == ("FIRST_NAME", "SURNAME")
    assert student.uncompared_columns == {("GENDER", "UPDATE"), ("GENDER", "DELETE")}
    handler = student.handler_for("TUITION_FEE")
    assert handler is not None and handler.method is ConflictResolution.MAXIMUM


def test_a_schema_violation_names_the_json_path(tmp_path: Path) -> None:
    process = _process(parameters={"disable_on_error": "yes"})
    _fails(
        tmp_path, "apply_processes/0/parameters/disable_on_error", "'yes' is not one of", process
    )


def test_an_unknown_property_is_rejected(tmp_path: Path) -> None:
    _fails(
        tmp_path,
        "apply_processes/0/tables/0",
        "Additional properties",
        _process(tables=[_table(x=1)]),
    )


def test_a_duplicate_apply_name_is_an_error(tmp_path: Path) -> None:
    _fails(
        tmp_path,
        "apply_processes/1/apply_name",
        r"duplicate apply_name 'APPLY_TEST' \(also apply_processes/0\)",
        _process(),
        _process(),
    )


def test_a_table_from_an_unlisted_source_database_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(source_database="DBS9")])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/source_database",
        r"source database 'DBS9' is not one of the apply process's source_databases \['ORCL'\]",
        process,
    )


def test_a_source_object_that_does_not_match_its_definition_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(source_object="US03.COURSE")])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/source_object",
        r"source object 'US03.COURSE' does not match its definition 'US03.STUDENT'",
        process,
    )


def test_a_missing_definition_file_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(definition="nowhere.yml")])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/definition",
        r"invalid table definition: .*nowhere\.yml: cannot read table definition",
        process,
    )


def test_an_unknown_key_column_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(key_columns=["SURNAME", "NICKNAME"])])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/key_columns",
        r"unknown column\(s\) \['NICKNAME'\] \(not in US03.STUDENT\)",
        process,
    )


def test_an_unknown_compare_old_values_column_is_an_error(tmp_path: Path) -> None:
    entry = {"columns": ["NICKNAME"], "operations": ["UPDATE"], "compare": False}
    process = _process(tables=[_table(compare_old_values=[entry])])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/compare_old_values",
        r"unknown column\(s\) \['NICKNAME'\]",
        process,
    )


def test_an_unknown_update_conflict_handler_column_is_an_error(tmp_path: Path) -> None:
    handler = {"method": "OVERWRITE", "column_list": ["FEE"], "resolution_column": "FEE"}
    process = _process(tables=[_table(update_conflict_handlers=[handler])])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/update_conflict_handlers/0/column_list",
        r"unknown column\(s\) \['FEE'\]",
        process,
    )


def test_a_column_in_two_update_conflict_handlers_is_an_error(tmp_path: Path) -> None:
    handlers = [
        {"method": "MAXIMUM", "column_list": ["TUITION_FEE"], "resolution_column": "TUITION_FEE"},
        {
            "method": "DISCARD",
            "column_list": ["SUBJECT", "TUITION_FEE"],
            "resolution_column": "SUBJECT",
        },
    ]
    process = _process(tables=[_table(update_conflict_handlers=handlers)])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/update_conflict_handlers/1/column_list",
        r"column 'TUITION_FEE' is already in update conflict handler "
        r"apply_processes/0/tables/0/update_conflict_handlers/0",
        process,
    )


def test_a_resolution_column_outside_the_column_list_is_an_error(tmp_path: Path) -> None:
    handler = {"method": "MINIMUM", "column_list": ["SUBJECT"], "resolution_column": "TUITION_FEE"}
    process = _process(tables=[_table(update_conflict_handlers=[handler])])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/update_conflict_handlers/0/resolution_column",
        r"resolution column 'TUITION_FEE' must be one of the column list \['SUBJECT'\]",
        process,
    )


def test_an_instantiation_scn_below_the_ignore_scn_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(instantiation_scn=99, ignore_scn=100)])
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/instantiation_scn",
        r"the instantiation SCN cannot be set below the object's ignore SCN \(99 < 100\)",
        process,
    )


def test_a_duplicate_silver_table_within_an_apply_is_an_error(tmp_path: Path) -> None:
    course = _table(
        source_object="US03.COURSE",
        definition=str(TABLES / "us03.course.yml"),
    )
    process = _process(tables=[_table(), course])
    _fails(
        tmp_path,
        "apply_processes/0/tables/1/silver_table",
        r"duplicate silver_table 'orcl_us03_student' \(also apply_processes/0/tables/0\)",
        process,
    )


def test_the_same_silver_table_in_two_apply_processes_is_allowed(tmp_path: Path) -> None:
    first, second = _load(tmp_path, _process("APPLY_A"), _process("APPLY_B"))
    assert first.tables[0].silver_table == second.tables[0].silver_table


def test_a_source_object_listed_twice_is_an_error(tmp_path: Path) -> None:
    process = _process(tables=[_table(), _table(silver_table="other")])
    _fails(
        tmp_path,
        "apply_processes/0/tables/1/source_object",
        r"US03.STUDENT from ORCL is listed twice \(also apply_processes/0/tables/0\)",
        process,
    )


def test_an_instantiation_scn_for_an_unlisted_source_database_is_an_error(tmp_path: Path) -> None:
    process = _process(instantiation={"global": [{"source_database": "DBS9", "scn": 1}]})
    _fails(
        tmp_path,
        "apply_processes/0/instantiation/global/0/source_database",
        r"source database 'DBS9' is not one of",
        process,
    )


def test_the_admin_api_and_the_yaml_loader_share_one_validator(tmp_path: Path) -> None:
    (settings,) = _load(tmp_path)
    bad = replace(settings, tables=(replace(settings.tables[0], key_columns=("NICKNAME",)),))
    with pytest.raises(
        ConfigurationError,
        match=re.escape("apply process 'APPLY_TEST': tables/0/key_columns: unknown column(s)"),
    ):
        validate_settings(bad)
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/key_columns",
        r"unknown column\(s\) \['NICKNAME'\]",
        _process(tables=[_table(key_columns=["NICKNAME"])]),
    )


def test_one_silver_table_may_consolidate_the_same_table_from_two_source_databases(
    tmp_path: Path,
) -> None:
    second = _table(source_database="DBS1.EXAMPLE.COM")
    process = _process(tables=[_table(), second])
    process["source_databases"] = ["ORCL", "DBS1.EXAMPLE.COM"]
    (settings,) = _load(tmp_path, process)
    assert [t.silver_table for t in settings.tables] == ["orcl_us03_student"] * 2


def test_transformations_load_in_their_declared_order(tmp_path: Path) -> None:
    steps = [
        {"delete_column": "NICKNAME"},
        {"rename_column": {"from": "LAST_NAME", "to": "SURNAME"}},
        {"add_column": {"column": "GENDER", "value": "X"}},
        {"keep_columns": ["STUDENT_KEY", "SURNAME", "GENDER"], "value_type": "OLD"},
    ]
    (settings,) = _load(tmp_path, _process(tables=[_table(transformations=steps)]))
    loaded = settings.tables[0].transformations
    assert [(t.kind.value, t.columns, t.value_type.value) for t in loaded] == [
        ("DELETE COLUMN", ("NICKNAME",), "*"),
        ("RENAME COLUMN", ("LAST_NAME", "SURNAME"), "*"),
        ("ADD COLUMN", ("GENDER",), "NEW"),
        ("KEEP COLUMNS", ("STUDENT_KEY", "SURNAME", "GENDER"), "OLD"),
    ]
    assert loaded[2].value == "X"


def test_a_transformation_must_produce_a_destination_column(tmp_path: Path) -> None:
    steps = [{"rename_column": {"from": "A", "to": "NOT_THERE"}}]
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/transformations/0/rename_column/to",
        r"unknown column\(s\) \['NOT_THERE'\]",
        _process(tables=[_table(transformations=steps)]),
    )


def test_dml_handlers_load_as_procedures_or_statements(tmp_path: Path) -> None:
    handlers = [
        {"operation": "DELETE", "user_procedure": "uni.handlers:soft_delete"},
        {"operation": "INSERT", "statement": "SELECT * FROM {lcrs}", "handler_name": "ALL"},
    ]
    (settings,) = _load(tmp_path, _process(tables=[_table(dml_handlers=handlers)]))
    assert [
        (h.operation.value, h.handler_type, h.label) for h in settings.tables[0].dml_handlers
    ] == [
        ("DELETE", "PROCEDURE HANDLER", "uni.handlers:soft_delete"),
        ("INSERT", "STMT HANDLER", "ALL"),
    ]


def test_a_dml_handler_is_a_procedure_or_a_statement_not_both(tmp_path: Path) -> None:
    both = {"operation": "DELETE", "user_procedure": "a.b:c", "statement": "SELECT * FROM {lcrs}"}
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/dml_handlers/0",
        ".*is valid under each of",
        _process(tables=[_table(dml_handlers=[both])]),
    )


def test_error_handlers_load_and_never_share_an_operation_with_a_procedure_dml_handler(
    tmp_path: Path,
) -> None:
    skip = {"operation": "DEFAULT", "user_procedure": "uni.handlers:skip_missing_rows"}
    (settings,) = _load(tmp_path, _process(tables=[_table(error_handlers=[skip])]))
    assert [(h.operation.value, h.label) for h in settings.tables[0].error_handlers] == [
        ("DEFAULT", "uni.handlers:skip_missing_rows")
    ]
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/error_handlers/0/operation",
        ".*: a procedure DML handler and an error handler cannot be set for the same operation",
        _process(
            tables=[
                _table(
                    dml_handlers=[{"operation": "DELETE", "user_procedure": "a.b:c"}],
                    error_handlers=[skip],
                )
            ]
        ),
    )
    _fails(
        tmp_path,
        "apply_processes/0/tables/0/error_handlers/0",
        "'user_procedure' is a required property",
        _process(tables=[_table(error_handlers=[{"operation": "INSERT"}])]),
    )


def test_rule_sets_load_with_the_negative_and_positive_rules_in_order(tmp_path: Path) -> None:
    rules = {
        "negative": [{"source_database": "ORCL", "schema": "US03", "table": "AUDIT"}],
        "positive": [{"schema": "US03"}, {"tag": "NULL"}],
    }
    (settings,) = _load(tmp_path, _process(rules=rules))
    assert [(r.level, r.table) for r in settings.negative_rules] == [("TABLE", "AUDIT")]
    assert [(r.level, r.tag) for r in settings.positive_rules or ()] == [
        ("SCHEMA", None),
        ("GLOBAL", "NULL"),
    ]


def test_a_rule_for_a_source_the_apply_does_not_read_is_an_error(tmp_path: Path) -> None:
    _fails(
        tmp_path,
        "apply_processes/0/rules/negative/0/source_database",
        r"source database 'ELSEWHERE' is not one of",
        _process(rules={"negative": [{"source_database": "ELSEWHERE"}]}),
    )


def _with_course(**overrides: Any) -> dict[str, Any]:
    course = _table(
        source_object="US03.COURSE",
        silver_table="orcl_us03_course",
        definition=str(TABLES / "us03.course.yml"),
    )
    return _process(tables=[_table(), course], **overrides)


def test_virtual_dependencies_load_into_the_settings(tmp_path: Path) -> None:
    dependencies = {
        "value": [
            {"name": "STUDENT_COURSE", "object": "US03.STUDENT", "columns": ["SUBJECT"]},
            {"name": "STUDENT_COURSE", "object": "US03.COURSE", "columns": ["SUBJECT"]},
        ],
        "object": [{"object": "US03.STUDENT", "parent": "US03.COURSE"}],
    }
    (settings,) = _load(tmp_path, _with_course(virtual_dependencies=dependencies))
    assert settings.value_dependencies == (
        ValueDependency("STUDENT_COURSE", "US03", "STUDENT", ("SUBJECT",)),
        ValueDependency("STUDENT_COURSE", "US03", "COURSE", ("SUBJECT",)),
    )
    assert settings.object_dependencies == (ObjectDependency("US03", "STUDENT", "US03", "COURSE"),)


@pytest.mark.parametrize(
    ("dependencies", "where", "message"),
    [
        (
            {"value": [{"name": "D", "object": "US03.NOPE", "columns": ["SUBJECT"]}]},
            "value/0/object",
            "US03.NOPE is not a destination table of the apply process",
        ),
        (
            {"value": [{"name": "D", "object": "US03.STUDENT", "columns": ["NICKNAME"]}]},
            "value/0/columns",
            r"unknown column\(s\) \['NICKNAME'\]",
        ),
        (
            {
                "value": [
                    {"name": "D", "object": "US03.STUDENT", "columns": ["SUBJECT"]},
                    {"name": "D", "object": "US03.STUDENT", "columns": ["SURNAME"]},
                ]
            },
            "value/1/object",
            "value dependency D already has columns for US03.STUDENT",
        ),
        (
            {
                "value": [
                    {"name": "D", "object": "US03.STUDENT", "columns": ["SUBJECT"]},
                    {"name": "D", "object": "US03.COURSE", "columns": ["SUBJECT", "UNIVERSITY"]},
                ]
            },
            "value/1/columns",
            r"every object of value dependency D lists 1 column\(s\)",
        ),
        (
            {"object": [{"object": "US03.STUDENT", "parent": "US03.STUDENT"}]},
            "object/0",
            "an object cannot depend on itself",
        ),
        (
            {"object": [{"object": "US03.STUDENT", "parent": "US03.NOPE"}]},
            "object/0/parent",
            "US03.NOPE is not a destination table",
        ),
    ],
)
def test_an_invalid_virtual_dependency_is_an_error(
    tmp_path: Path, dependencies: dict[str, Any], where: str, message: str
) -> None:
    process = _with_course(virtual_dependencies=dependencies)
    _fails(tmp_path, f"apply_processes/0/virtual_dependencies/{where}", message, process)
