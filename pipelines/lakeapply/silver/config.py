"""The declarative configuration ``lakeapply.yml``: validated in one place into :class:`ApplySettings`.

Format: ``schemas/lakeapply.schema.json``. Validation runs the JSON schema first, then the semantic
checks the schema cannot express; every error is a :class:`ConfigurationError` naming the file and
the JSON path (``apply_processes/0/tables/1/key_columns``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from lakeapply.contract.table_definitions import (
    SCHEMAS_DIR,
    TableDefinition,
    load_table_definition,
)
from lakeapply.contract.validation import validate_document
from lakeapply.errors import ConfigurationError
from lakeapply.silver.settings import (
    ApplySettings,
    CommitSerialization,
    ConflictResolution,
    DestinationTable,
    UpdateConflictHandler,
)

__all__ = ["config_json_schema", "load_config"]


@cache
def config_json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS_DIR / "lakeapply.schema.json").read_text())
    return schema


def load_config(path: Path) -> tuple[ApplySettings, ...]:
    """Load ``lakeapply.yml`` (YAML or JSON): one :class:`ApplySettings` per apply process."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigurationError(f"{path}: cannot read configuration: {error}") from None
    return _Loader(path).config(document)


class _Loader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.definitions: dict[Path, TableDefinition] = {}

    def fail(self, where: str, message: str) -> ConfigurationError:
        return ConfigurationError(f"{self.path}: {where}: {message}")

    def config(self, document: Any) -> tuple[ApplySettings, ...]:
        if not isinstance(document, dict):
            raise ConfigurationError(f"{self.path}: a configuration must be a mapping")
        validate_document(document, config_json_schema(), str(self.path))
        settings = []
        seen: dict[str, int] = {}
        for index, process in enumerate(document["apply_processes"]):
            where = f"apply_processes/{index}"
            name = process["apply_name"]
            if name in seen:
                raise self.fail(
                    f"{where}/apply_name",
                    f"duplicate apply_name {name!r} (also apply_processes/{seen[name]})",
                )
            seen[name] = index
            settings.append(self.apply_process(process, where))
        return tuple(settings)

    def apply_process(self, process: dict[str, Any], where: str) -> ApplySettings:
        sources = tuple(process["source_databases"])
        parameters = process.get("parameters", {})
        instantiation = process.get("instantiation", {})
        for index, entry in enumerate(instantiation.get("schemas", ())):
            self.check_source(entry, sources, f"{where}/instantiation/schemas/{index}")
        for index, entry in enumerate(instantiation.get("global", ())):
            self.check_source(entry, sources, f"{where}/instantiation/global/{index}")
        tables: list[DestinationTable] = []
        silver_tables: dict[str, int] = {}
        source_objects: dict[tuple[str, str], int] = {}
        for index, table in enumerate(process["tables"]):
            table_where = f"{where}/tables/{index}"
            silver = table["silver_table"]
            if silver in silver_tables:
                raise self.fail(
                    f"{table_where}/silver_table",
                    f"duplicate silver_table {silver!r} (also {where}/tables/{silver_tables[silver]})",
                )
            silver_tables[silver] = index
            key = (table["source_database"], table["source_object"])
            if key in source_objects:
                raise self.fail(
                    f"{table_where}/source_object",
                    f"{key[1]} from {key[0]} is listed twice "
                    f"(also {where}/tables/{source_objects[key]})",
                )
            source_objects[key] = index
            tables.append(self.table(table, sources, table_where))
        return ApplySettings(
            apply_name=process["apply_name"],
            source_databases=sources,
            tables=tuple(tables),
            commit_serialization=CommitSerialization(
                parameters.get("commit_serialization", CommitSerialization.FULL.value)
            ),
            disable_on_error=parameters.get("disable_on_error", "Y") == "Y",
            discard_tagged=process.get("rules", {}).get("discard_tagged", False),
            schema_instantiation_scns=tuple(
                (entry["source_database"], entry["owner"], entry["scn"])
                for entry in instantiation.get("schemas", ())
            ),
            global_instantiation_scns=tuple(
                (entry["source_database"], entry["scn"])
                for entry in instantiation.get("global", ())
            ),
            max_cycle_batches=parameters.get("max_cycle_batches", 100),
            max_error_passes=parameters.get("max_error_passes", 8),
        )

    def check_source(self, entry: dict[str, Any], sources: tuple[str, ...], where: str) -> None:
        if entry["source_database"] not in sources:
            raise self.fail(
                f"{where}/source_database",
                f"source database {entry['source_database']!r} is not one of the apply "
                f"process's source_databases {list(sources)}",
            )

    def definition(self, relative: str, where: str) -> TableDefinition:
        file = (self.path.parent / relative).resolve()
        if file not in self.definitions:
            try:
                self.definitions[file] = load_table_definition(file)
            except ConfigurationError as error:
                raise self.fail(where, f"invalid table definition: {error}") from None
        return self.definitions[file]

    def check_columns(
        self, definition: TableDefinition, columns: Iterable[str], where: str
    ) -> None:
        missing = [column for column in columns if column not in definition.column_names]
        if missing:
            raise self.fail(
                where, f"unknown column(s) {missing} (not in {definition.qualified_name})"
            )

    def table(
        self, table: dict[str, Any], sources: tuple[str, ...], where: str
    ) -> DestinationTable:
        self.check_source(table, sources, where)
        definition = self.definition(table["definition"], f"{where}/definition")
        owner, _, name = table["source_object"].partition(".")
        if (owner, name) != (definition.owner, definition.name):
            raise self.fail(
                f"{where}/source_object",
                f"source object {table['source_object']!r} does not match its definition "
                f"{definition.qualified_name!r} ({table['definition']})",
            )
        key_columns = tuple(table.get("key_columns", ()))
        self.check_columns(definition, key_columns, f"{where}/key_columns")
        instantiation_scn = table.get("instantiation_scn")
        ignore_scn = table.get("ignore_scn")
        if (
            instantiation_scn is not None
            and ignore_scn is not None
            and instantiation_scn < ignore_scn
        ):
            raise self.fail(
                f"{where}/instantiation_scn",
                f"the instantiation SCN cannot be set below the object's ignore SCN "
                f"({instantiation_scn} < {ignore_scn})",
            )
        uncompared: set[tuple[str, str]] = set()
        for index, entry in enumerate(table.get("compare_old_values", ())):
            self.check_columns(
                definition, entry["columns"], f"{where}/compare_old_values/{index}/columns"
            )
            uncompared.update(
                (column, operation)
                for column in entry["columns"]
                for operation in entry["operations"]
            )
        handlers: list[UpdateConflictHandler] = []
        handled: dict[str, int] = {}
        for index, entry in enumerate(table.get("update_conflict_handlers", ())):
            handler_where = f"{where}/update_conflict_handlers/{index}"
            columns = tuple(entry["column_list"])
            self.check_columns(definition, columns, f"{handler_where}/column_list")
            for column in columns:
                if column in handled:
                    raise self.fail(
                        f"{handler_where}/column_list",
                        f"column {column!r} is already in update conflict handler "
                        f"{where}/update_conflict_handlers/{handled[column]}",
                    )
                handled[column] = index
            if entry["resolution_column"] not in columns:
                raise self.fail(
                    f"{handler_where}/resolution_column",
                    f"resolution column {entry['resolution_column']!r} must be one of the "
                    f"column list {list(columns)}",
                )
            handlers.append(
                UpdateConflictHandler(
                    ConflictResolution(entry["method"]), columns, entry["resolution_column"]
                )
            )
        return DestinationTable(
            source_database=table["source_database"],
            definition=definition,
            silver_table=table["silver_table"],
            key_columns=key_columns,
            instantiation_scn=instantiation_scn,
            ignore_scn=ignore_scn,
            uncompared_columns=frozenset(uncompared),
            update_conflict_handlers=tuple(handlers),
        )
