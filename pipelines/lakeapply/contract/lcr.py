"""The LCR contract (../shared/spec/lcr-contract.md) as data: one source of truth from which the
JSON Schema (``schemas/lcr.schema.json``) and the Spark schema of bronze are both derived.

``make schemas`` rewrites the JSON file; a test fails when it is out of date.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pyspark.sql import types as T

from lakeapply.contract.oracle_types import LCR_DATA_TYPES

FieldKind = Literal["string", "integer", "column_values"]

ROW_COMMANDS = ("INSERT", "UPDATE", "DELETE", "LOB WRITE", "LOB ERASE", "LOB TRIM")
DIRECTIVE_COMMANDS = ("COMMIT", "ROLLBACK")
DDL_COMMANDS = (
    "CREATE TABLE",
    "ALTER TABLE",
    "DROP TABLE",
    "TRUNCATE TABLE",
    "RENAME",
    "CREATE INDEX",
    "DROP INDEX",
    "ALTER INDEX",
    "CREATE VIEW",
    "DROP VIEW",
    "CREATE SEQUENCE",
    "ALTER SEQUENCE",
    "DROP SEQUENCE",
    "COMMENT",
    "GRANT",
    "REVOKE",
)
TRANSACTION_ID_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"


@dataclass(frozen=True)
class LcrField:
    """One top-level LCR attribute."""

    name: str
    kind: FieldKind
    description: str
    required: bool = False


LCR_FIELDS: tuple[LcrField, ...] = (
    LcrField("source_database_name", "string", "global name of the source database", True),
    LcrField(
        "command_type",
        "string",
        "INSERT, UPDATE, DELETE, LOB *, COMMIT, ROLLBACK or a DDL command",
        True,
    ),
    LcrField("transaction_id", "string", "source transaction id usn.slot.sqn", True),
    LcrField("scn", "integer", "SCN of the change; for COMMIT the commit SCN", True),
    LcrField("commit_scn", "integer", "commit SCN of the LCR's transaction, when known per record"),
    LcrField("position", "string", "capture position, increasing within one source stream"),
    LcrField("tag", "string", "RAW tag as hex"),
    LcrField("source_time", "string", "ISO-8601 time of the change at the source"),
    LcrField("object_owner", "string", "source schema (row and DDL LCRs)"),
    LcrField("object_name", "string", "source object (row and DDL LCRs)"),
    LcrField("old_values", "column_values", "before image (UPDATE, DELETE)"),
    LcrField("new_values", "column_values", "after image (INSERT, UPDATE)"),
    LcrField("lob_information", "string", "piecewise LOB change information"),
    LcrField("lob_offset", "integer", "LOB offset"),
    LcrField("lob_operation_size", "integer", "LOB operation size"),
    LcrField("row_id", "string", "source ROWID (informational only)"),
    LcrField("serial#", "integer", "session serial number"),
    LcrField("session#", "integer", "session number"),
    LcrField("thread#", "integer", "redo thread"),
    LcrField("tx_name", "string", "transaction name"),
    LcrField("username", "string", "source user"),
    LcrField("object_type", "string", "DDL: object type (TABLE, ...)"),
    LcrField("ddl_text", "string", "DDL: statement text"),
    LcrField("logon_user", "string", "DDL: logon user"),
    LcrField("current_schema", "string", "DDL: current schema"),
    LcrField("base_table_owner", "string", "DDL: base table owner"),
    LcrField("base_table_name", "string", "DDL: base table name"),
)

COLUMN_VALUE_SPARK_TYPE = T.StructType(
    [
        T.StructField("column_name", T.StringType()),
        T.StructField("data_type", T.StringType()),
        # NUMBER values may arrive as JSON numbers; Spark keeps their exact text in a string field.
        T.StructField("value", T.StringType()),
    ]
)
_SPARK_TYPES: dict[FieldKind, T.DataType] = {
    "string": T.StringType(),
    "integer": T.LongType(),
    "column_values": T.ArrayType(COLUMN_VALUE_SPARK_TYPE),
}


def bronze_column_name(field_name: str) -> str:
    """Bronze column for an LCR attribute: ``serial#`` becomes ``serial_no``."""
    return field_name.replace("#", "_no")


def lcr_parse_schema() -> T.StructType:
    """The schema ``from_json`` parses one landing line with (contract field names)."""
    return T.StructType([T.StructField(f.name, _SPARK_TYPES[f.kind]) for f in LCR_FIELDS])


def lcr_bronze_fields() -> T.StructType:
    """The LCR part of the bronze schema (``#`` replaced, since Delta column names avoid it)."""
    return T.StructType(
        [T.StructField(bronze_column_name(f.name), _SPARK_TYPES[f.kind]) for f in LCR_FIELDS]
    )


def _json_schema_for(field: LcrField) -> dict[str, Any]:
    if field.kind == "integer":
        return {"type": "integer", "description": field.description}
    if field.kind == "string":
        schema: dict[str, Any] = {"type": ["string", "null"], "description": field.description}
        if field.required:
            schema["type"] = "string"
        if field.name == "transaction_id":
            schema["pattern"] = TRANSACTION_ID_PATTERN
        if field.name == "command_type":
            schema["enum"] = list(ROW_COMMANDS + DIRECTIVE_COMMANDS + DDL_COMMANDS)
        return schema
    return {
        "type": "array",
        "items": {"$ref": "#/$defs/column_value"},
        "description": field.description,
    }


def lcr_json_schema() -> dict[str, Any]:
    """The JSON Schema of one LCR line."""
    row_required = {
        "INSERT": ["object_owner", "object_name", "new_values"],
        "UPDATE": ["object_owner", "object_name", "old_values", "new_values"],
        "DELETE": ["object_owner", "object_name", "old_values"],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://lakeapply.dev/schemas/lcr.schema.json",
        "title": "Logical change record (LCR), one JSON Lines record",
        "description": "Generated from pipelines/lakeapply/contract/lcr.py by `make schemas`; do not edit.",
        "type": "object",
        "required": [f.name for f in LCR_FIELDS if f.required],
        "properties": {f.name: _json_schema_for(f) for f in LCR_FIELDS},
        "additionalProperties": True,
        "allOf": [
            {
                "if": {"properties": {"command_type": {"const": command}}},
                "then": {"required": required},
            }
            for command, required in row_required.items()
        ],
        "$defs": {
            "column_value": {
                "type": "object",
                "required": ["column_name", "data_type", "value"],
                "properties": {
                    "column_name": {"type": "string", "minLength": 1, "maxLength": 128},
                    "data_type": {"enum": list(LCR_DATA_TYPES)},
                    "value": {"type": ["string", "number", "null"]},
                },
            }
        },
    }


def write_lcr_json_schema(path: Path) -> None:
    path.write_text(json.dumps(lcr_json_schema(), indent=2) + "\n")
