"""Destination table definitions: the documented, schema-validated description of a source table.

Format: ``schemas/table-definition.schema.json`` (YAML or JSON, one table per document); samples in
``schemas/tables/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import types as T

from lakeapply.contract.identifiers import validate_oracle_identifier
from lakeapply.contract.oracle_types import OracleType, parse_oracle_type
from lakeapply.contract.validation import validate_document
from lakeapply.errors import ConfigurationError
from lakeapply.resources import SCHEMAS, resource_path

SCHEMAS_DIR = resource_path(SCHEMAS)
"""The packaged JSON schemas and sample table definitions (the repository's ``schemas/``)."""


@dataclass(frozen=True)
class ColumnDefinition:
    """One destination column."""

    name: str
    oracle_type: OracleType
    nullable: bool = True
    default: str | None = None


@dataclass(frozen=True)
class UniqueKey:
    """A UNIQUE constraint."""

    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class TableDefinition:
    """A source table (owner.name) as its destination table must reproduce it."""

    owner: str
    name: str
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[UniqueKey, ...] = ()

    @property
    def qualified_name(self) -> str:
        return f"{self.owner}.{self.name}"

    # Cached: the apply looks columns up for every value of every LCR.
    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    @cached_property
    def _columns_by_name(self) -> dict[str, ColumnDefinition]:
        return {column.name: column for column in self.columns}

    def column(self, name: str) -> ColumnDefinition:
        return self._columns_by_name[name]

    def key_columns(self, substitute_key: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The columns that identify a row (apply-semantics rule 5), in order of precedence:
        substitute key, primary key, smallest unique key with a NOT NULL column, all non-LOB columns."""
        if substitute_key:
            return substitute_key
        if self.primary_key:
            return self.primary_key
        candidates = [
            key
            for key in self.unique_keys
            if any(not self.column(column).nullable for column in key.columns)
        ]
        if candidates:
            return min(candidates, key=lambda key: (len(key.columns), key.name)).columns
        return tuple(c.name for c in self.columns if not c.oracle_type.is_lob_or_long)

    def spark_schema(self) -> T.StructType:
        """The Delta schema of the destination table."""
        return T.StructType(
            [
                T.StructField(
                    column.name,
                    column.oracle_type.spark_type(),
                    nullable=column.nullable,
                    metadata={"oracle_type": str(column.oracle_type)},
                )
                for column in self.columns
            ]
        )


@cache
def table_definition_json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS_DIR / "table-definition.schema.json").read_text())
    return schema


def table_definition_from_dict(document: dict[str, Any], origin: str) -> TableDefinition:
    """Validate a parsed YAML/JSON document and build the definition. ``origin`` names it in errors."""
    validate_document(document, table_definition_json_schema(), origin)
    owner = validate_oracle_identifier(document["owner"], f"{origin}: owner")
    name = validate_oracle_identifier(document["name"], f"{origin}: name")
    columns = []
    for index, column in enumerate(document["columns"]):
        column_name = validate_oracle_identifier(column["name"], f"{origin}: columns/{index}/name")
        try:
            oracle_type = parse_oracle_type(column["type"])
        except ConfigurationError as error:
            raise ConfigurationError(f"{origin}: columns/{index}/type: {error}") from None
        default = column.get("default")
        columns.append(
            ColumnDefinition(
                name=column_name,
                oracle_type=oracle_type,
                nullable=column.get("nullable", True),
                default=None if default is None else str(default),
            )
        )
    names = [column.name for column in columns]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{origin}: columns: duplicate column name")
    primary_key = tuple(document.get("primary_key", ()))
    unique_keys = tuple(
        UniqueKey(key["name"], tuple(key["columns"])) for key in document.get("unique_keys", ())
    )
    for key_name, key_columns in [("primary_key", primary_key)] + [
        (f"unique_keys/{key.name}", key.columns) for key in unique_keys
    ]:
        missing = [column for column in key_columns if column not in names]
        if missing:
            raise ConfigurationError(f"{origin}: {key_name}: unknown column(s) {missing}")
    # A primary key column is NOT NULL in Oracle whatever the column says.
    columns = [
        ColumnDefinition(c.name, c.oracle_type, False, c.default) if c.name in primary_key else c
        for c in columns
    ]
    return TableDefinition(owner, name, tuple(columns), primary_key, unique_keys)


def load_table_definition(path: Path) -> TableDefinition:
    """Load one table definition file (YAML or JSON)."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigurationError(f"{path}: cannot read table definition: {error}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(f"{path}: a table definition must be a mapping")
    return table_definition_from_dict(document, str(path))


def load_table_definitions(folder: Path) -> tuple[TableDefinition, ...]:
    """Load every ``*.yml``/``*.yaml``/``*.json`` table definition in a folder, sorted by name."""
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml", ".json"))
    return tuple(load_table_definition(path) for path in paths)


def sample_table_definitions() -> tuple[TableDefinition, ...]:
    """COURSE and STUDENT, the sample source tables (``schemas/tables/us03.*.yml``; the folder
    also holds the synthetic tables' definitions)."""
    folder = SCHEMAS_DIR / "tables"
    return tuple(
        load_table_definition(folder / f"us03.{name}.yml") for name in ("course", "student")
    )
