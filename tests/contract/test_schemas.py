"""The contract's JSON Schema and Spark schema come from one source; table definitions validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from lakeapply.contract.lcr import lcr_json_schema, lcr_parse_schema
from lakeapply.contract.table_definitions import (
    SCHEMAS_DIR,
    sample_table_definitions,
    table_definition_from_dict,
)
from lakeapply.errors import ConfigurationError

CONTRACT_EXAMPLE = Path(__file__).parent / "contract_example.jsonl"


def test_the_checked_in_json_schema_is_generated_from_the_contract_module() -> None:
    on_disk = json.loads((SCHEMAS_DIR / "lcr.schema.json").read_text())
    assert on_disk == lcr_json_schema(), "run `make schemas`"


def test_json_schema_and_spark_schema_have_the_same_fields() -> None:
    assert set(lcr_json_schema()["properties"]) == set(lcr_parse_schema().fieldNames())


def test_the_contract_examples_validate() -> None:
    validator = jsonschema.Draft202012Validator(lcr_json_schema())
    for text in CONTRACT_EXAMPLE.read_text().splitlines():
        validator.validate(json.loads(text))


def test_sample_tables_are_course_and_student_with_their_keys() -> None:
    course, student = sample_table_definitions()
    assert course.primary_key == ("UNIVERSITY", "SUBJECT", "ENTRY_YEAR")
    assert student.key_columns() == ("STUDENT_KEY",)
    assert student.unique_keys[0].columns == ("FIRST_NAME", "SURNAME")


def test_a_table_definition_with_an_unknown_key_column_is_rejected_with_its_origin() -> None:
    document = {
        "owner": "A",
        "name": "T",
        "columns": [{"name": "X", "type": "NUMBER"}],
        "primary_key": ["Y"],
    }
    with pytest.raises(ConfigurationError, match=r"t.yml: primary_key: unknown column"):
        table_definition_from_dict(document, "t.yml")


def test_a_table_definition_with_a_misspelt_property_is_rejected() -> None:
    document = {"owner": "A", "name": "T", "columns": [{"name": "X", "typ": "NUMBER"}]}
    with pytest.raises(ConfigurationError, match=r"columns/0"):
        table_definition_from_dict(document, "t.yml")


def test_key_precedence_falls_back_to_a_unique_key_then_all_non_lob_columns() -> None:
    document = {
        "owner": "A",
        "name": "T",
        "columns": [
            {"name": "A", "type": "NUMBER", "nullable": False},
            {"name": "B", "type": "VARCHAR2(5)"},
            {"name": "C", "type": "CLOB"},
        ],
        "unique_keys": [
            {"name": "UK_AB", "columns": ["A", "B"]},
            {"name": "UK_B", "columns": ["B"]},
        ],
    }
    table = table_definition_from_dict(document, "t.yml")
    assert table.key_columns() == ("A", "B")  # UK_B has no NOT NULL column
    assert table.key_columns(("B",)) == ("B",)
    no_keys = table_definition_from_dict({**document, "unique_keys": []}, "t.yml")
    assert no_keys.key_columns() == ("A", "B")
