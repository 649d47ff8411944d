"""The declarative configuration ``lakeapply.yml``: validated in one place into :class:`ApplySettings`.

Format: ``schemas/lakeapply.schema.json``. Validation runs the JSON schema first, then the semantic
checks the schema cannot express; every error is a :class:`ConfigurationError` naming the file and
the JSON path (``apply_processes/0/tables/1/key_columns``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from lakeapply.bronze.formats import CaptureFormat, LandingFormats
from lakeapply.contract.table_definitions import (
    SCHEMAS_DIR,
    TableDefinition,
    load_table_definition,
)
from lakeapply.contract.validation import validate_document
from lakeapply.errors import ConfigurationError
from lakeapply.silver.settings import (
    DEFAULT_MAX_ERROR_PASSES,
    ApplyRule,
    ApplySettings,
    ColumnTransformation,
    CommitSerialization,
    ConflictResolution,
    DestinationTable,
    DmlHandler,
    DmlOperation,
    ErrorHandler,
    ObjectDependency,
    TransformationKind,
    UpdateConflictHandler,
    ValueDependency,
    ValueImage,
)
from lakeapply.silver.validation import validate_settings

__all__ = [
    "checked_rule",
    "checked_transformation",
    "config_json_schema",
    "dml_handler_from_dict",
    "error_handler_from_dict",
    "load_config",
    "load_landing_formats",
    "rule_from_dict",
    "transformation_from_dict",
    "transformation_to_dict",
]


@cache
def config_json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS_DIR / "lakeapply.schema.json").read_text())
    return schema


def _part_schema(part: dict[str, Any]) -> dict[str, Any]:
    """A sub-schema of lakeapply.schema.json that still resolves its ``#/$defs/...`` references."""
    return {"$defs": config_json_schema()["$defs"], **part}


def checked_rule(rule: Mapping[str, Any], origin: str) -> ApplyRule:
    """A rule given to the admin API, checked against the same JSON Schema entry as a
    ``rules.positive`` / ``rules.negative`` entry of lakeapply.yml."""
    validate_document(dict(rule), _part_schema({"$ref": "#/$defs/rule"}), origin)
    return rule_from_dict(rule)


def checked_transformation(step: Mapping[str, Any], origin: str) -> ColumnTransformation:
    """A transformation step given to the admin API, checked against the same JSON Schema entry
    as a ``transformations`` entry of lakeapply.yml."""
    validate_document(dict(step), _part_schema({"$ref": "#/$defs/transformation"}), origin)
    return transformation_from_dict(step)


def load_config(path: Path) -> tuple[ApplySettings, ...]:
    """Load ``lakeapply.yml`` (YAML or JSON): one :class:`ApplySettings` per apply process."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigurationError(f"{path}: cannot read configuration: {error}") from None
    return _Loader(path).config(document)


def load_landing_formats(path: Path, default: CaptureFormat) -> LandingFormats:
    """The capture format of each landing folder ``lakeapply.yml`` names (``landing_folders``);
    files in no named folder have ``default`` (``lakeapply ingest --format``)."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigurationError(f"{path}: cannot read configuration: {error}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(f"{path}: a configuration must be a mapping")
    validate_document(document, config_json_schema(), str(path))
    folders: list[tuple[str, CaptureFormat]] = []
    for index, entry in enumerate(document.get("landing_folders", [])):
        folder = entry["path"].rstrip("/")
        if folder in (named for named, _ in folders):
            raise ConfigurationError(
                f"{path}: landing_folders/{index}/path: {folder!r} is named twice"
            )
        folders.append((folder, CaptureFormat(entry["format"], entry.get("source_database"))))
    return LandingFormats(default, tuple(folders))


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
        settings = ApplySettings(
            apply_name=process["apply_name"],
            source_databases=sources,
            tables=tuple(
                self.table(table, f"{where}/tables/{index}")
                for index, table in enumerate(process["tables"])
            ),
            commit_serialization=CommitSerialization(
                parameters.get("commit_serialization", CommitSerialization.FULL.value)
            ),
            disable_on_error=parameters.get("disable_on_error", "Y") == "Y",
            discard_tagged=process.get("rules", {}).get("discard_tagged", False),
            negative_rules=tuple(
                rule_from_dict(rule) for rule in process.get("rules", {}).get("negative", ())
            ),
            positive_rules=(
                tuple(rule_from_dict(rule) for rule in process["rules"]["positive"])
                if "positive" in process.get("rules", {})
                else None
            ),
            schema_instantiation_scns=tuple(
                (entry["source_database"], entry["owner"], entry["scn"])
                for entry in instantiation.get("schemas", ())
            ),
            global_instantiation_scns=tuple(
                (entry["source_database"], entry["scn"])
                for entry in instantiation.get("global", ())
            ),
            max_cycle_batches=parameters.get("max_cycle_batches", 100),
            max_error_passes=parameters.get("max_error_passes", DEFAULT_MAX_ERROR_PASSES),
            value_dependencies=tuple(
                value_dependency_from_dict(entry)
                for entry in process.get("virtual_dependencies", {}).get("value", ())
            ),
            object_dependencies=tuple(
                object_dependency_from_dict(entry)
                for entry in process.get("virtual_dependencies", {}).get("object", ())
            ),
        )
        validate_settings(settings, self.fail, at=f"{where}/")
        return settings

    def definition(self, relative: str, where: str) -> TableDefinition:
        file = (self.path.parent / relative).resolve()
        if file not in self.definitions:
            try:
                self.definitions[file] = load_table_definition(file)
            except ConfigurationError as error:
                raise self.fail(where, f"invalid table definition: {error}") from None
        return self.definitions[file]

    def table(self, table: dict[str, Any], where: str) -> DestinationTable:
        """One destination table as declared; the checks on settings follow in
        :func:`validate_settings`. Only what is about the file itself is checked here."""
        definition = self.definition(table["definition"], f"{where}/definition")
        owner, _, name = table["source_object"].partition(".")
        if (owner, name) != (definition.owner, definition.name):
            raise self.fail(
                f"{where}/source_object",
                f"source object {table['source_object']!r} does not match its definition "
                f"{definition.qualified_name!r} ({table['definition']})",
            )
        uncompared = {
            (column, operation)
            for entry in table.get("compare_old_values", ())
            for column in entry["columns"]
            for operation in entry["operations"]
        }
        handlers: list[UpdateConflictHandler] = []
        for index, entry in enumerate(table.get("update_conflict_handlers", ())):
            columns = tuple(entry["column_list"])
            if entry["resolution_column"] not in columns:
                raise self.fail(
                    f"{where}/update_conflict_handlers/{index}/resolution_column",
                    f"resolution column {entry['resolution_column']!r} must be one of the "
                    f"column list {list(columns)}",
                )
            handlers.append(
                UpdateConflictHandler(
                    ConflictResolution(entry["method"]), columns, entry["resolution_column"]
                )
            )
        return DestinationTable(
            transformations=tuple(
                transformation_from_dict(step) for step in table.get("transformations", ())
            ),
            source_database=table["source_database"],
            definition=definition,
            silver_table=table["silver_table"],
            key_columns=tuple(table.get("key_columns", ())),
            instantiation_scn=table.get("instantiation_scn"),
            ignore_scn=table.get("ignore_scn"),
            uncompared_columns=frozenset(uncompared),
            update_conflict_handlers=tuple(handlers),
            dml_handlers=tuple(dml_handler_from_dict(h) for h in table.get("dml_handlers", ())),
            error_handlers=tuple(
                error_handler_from_dict(h) for h in table.get("error_handlers", ())
            ),
        )


def transformation_from_dict(step: Mapping[str, Any]) -> ColumnTransformation:
    """One ``transformations`` entry of lakeapply.yml (its shape is checked by the JSON Schema
    when it comes from a file)."""
    value_type = ValueImage(step.get("value_type", "NEW" if "add_column" in step else "*"))
    if "delete_column" in step:
        return ColumnTransformation(
            TransformationKind.DELETE_COLUMN, (step["delete_column"],), value_type
        )
    if "rename_column" in step:
        rename = step["rename_column"]
        return ColumnTransformation(
            TransformationKind.RENAME_COLUMN, (rename["from"], rename["to"]), value_type
        )
    if "keep_columns" in step:
        return ColumnTransformation(
            TransformationKind.KEEP_COLUMNS, tuple(step["keep_columns"]), value_type
        )
    if "rename_schema" in step:
        rename = step["rename_schema"]
        return ColumnTransformation(
            TransformationKind.RENAME_SCHEMA, (rename["from"], rename["to"]), value_type
        )
    if "rename_table" in step:
        rename = step["rename_table"]
        source, target = (rename["from"].partition("."), rename["to"].partition("."))
        return ColumnTransformation(
            TransformationKind.RENAME_TABLE,
            (source[0], source[2], target[0], target[2]),
            value_type,
        )
    add = step["add_column"]
    return ColumnTransformation(
        TransformationKind.ADD_COLUMN,
        (add["column"],),
        value_type,
        value=add.get("value"),
        expression=add.get("expression"),
        data_type=add.get("data_type", "VARCHAR2"),
    )


def transformation_to_dict(step: ColumnTransformation) -> dict[str, Any]:
    """The lakeapply.yml form of a step (the inverse of :func:`transformation_from_dict`)."""
    kind = step.kind
    entry: dict[str, Any]
    if kind is TransformationKind.DELETE_COLUMN:
        entry = {"delete_column": step.columns[0]}
    elif kind is TransformationKind.KEEP_COLUMNS:
        entry = {"keep_columns": list(step.columns)}
    elif kind in (TransformationKind.RENAME_COLUMN, TransformationKind.RENAME_SCHEMA):
        key = "rename_column" if kind is TransformationKind.RENAME_COLUMN else "rename_schema"
        entry = {key: {"from": step.columns[0], "to": step.columns[1]}}
    elif kind is TransformationKind.RENAME_TABLE:
        from_owner, from_name, to_owner, to_name = step.columns
        entry = {
            "rename_table": {"from": f"{from_owner}.{from_name}", "to": f"{to_owner}.{to_name}"}
        }
    else:
        add: dict[str, Any] = {"column": step.columns[0], "data_type": step.data_type}
        if step.expression is not None:
            add["expression"] = step.expression
        else:
            add["value"] = step.value
        entry = {"add_column": add}
    entry["value_type"] = step.value_type.value
    return entry


def dml_handler_from_dict(entry: Mapping[str, Any]) -> DmlHandler:
    """One ``dml_handlers`` entry of a table in lakeapply.yml."""
    return DmlHandler(
        DmlOperation(entry["operation"]),
        user_procedure=entry.get("user_procedure"),
        statement=entry.get("statement"),
        handler_name=entry.get("handler_name"),
    )


def error_handler_from_dict(entry: Mapping[str, Any]) -> ErrorHandler:
    """One ``error_handlers`` entry of a table in lakeapply.yml."""
    return ErrorHandler(DmlOperation(entry["operation"]), entry["user_procedure"])


def rule_from_dict(rule: Mapping[str, Any]) -> ApplyRule:
    """One entry of ``rules.positive`` / ``rules.negative`` in lakeapply.yml."""
    return ApplyRule(
        source_database=rule.get("source_database"),
        schema=rule.get("schema"),
        table=rule.get("table"),
        tag=rule.get("tag"),
        condition=rule.get("condition"),
        transformations=tuple(
            transformation_from_dict(step) for step in rule.get("transformations", ())
        ),
    )


def _object(text: str) -> tuple[str, str]:
    owner, _, name = text.partition(".")
    return owner, name


def value_dependency_from_dict(entry: Mapping[str, Any]) -> ValueDependency:
    """``{name: D, object: OWNER.TABLE, columns: [A, B]}`` (lakeapply.yml)."""
    owner, name = _object(entry["object"])
    return ValueDependency(entry["name"], owner, name, tuple(entry["columns"]))


def object_dependency_from_dict(entry: Mapping[str, Any]) -> ObjectDependency:
    """``{object: OWNER.CHILD, parent: OWNER.PARENT}`` (lakeapply.yml)."""
    owner, name = _object(entry["object"])
    parent_owner, parent_name = _object(entry["parent"])
    return ObjectDependency(owner, name, parent_owner, parent_name)
