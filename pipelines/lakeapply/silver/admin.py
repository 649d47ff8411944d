"""The DBMS_APPLY_ADM-like administration API: the effective settings live in the Delta dictionary.

:func:`publish_settings` writes every dictionary row of one apply process (replacing that apply's
rows, table by table, each in one atomic Delta ``replaceWhere`` overwrite); :func:`load_settings`
reads them back into the same :class:`ApplySettings`. Each DBMS_APPLY_ADM-named function loads the
settings, changes them with :func:`dataclasses.replace`, validates them with the same checks and
messages as ``lakeapply.yml`` (:mod:`lakeapply.silver.config`) and publishes them.

Order: a tuple's order (tables, schema/global instantiation SCNs, conflict handlers) is kept by
writing each apply's rows of a table as one file, in order; key columns carry their position.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import astuple, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote, validate_oracle_identifier
from lakeapply.contract.table_definitions import TableDefinition, table_definition_from_dict
from lakeapply.errors import ConfigurationError
from lakeapply.runtime.catalog import Catalog, existing_tables
from lakeapply.runtime.concurrency import side_by_side
from lakeapply.silver import dictionary, engine, plan
from lakeapply.silver.config import (
    checked_rule,
    checked_transformation,
    transformation_from_dict,
    transformation_to_dict,
)
from lakeapply.silver.error_queue import ErrorExecution
from lakeapply.silver.keys import typed_value
from lakeapply.silver.plan import ensure_destination_tables, ensure_dictionary_tables
from lakeapply.silver.rules import rule_condition_text
from lakeapply.silver.settings import (
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
from lakeapply.silver.validation import (
    OPERATIONS,
    check_columns,
    check_scn,
    check_source,
    problem_in_apply_process,
    validate_settings,
)

__all__ = [
    "EXPORT_FORMATS",
    "PARAMETERS",
    "add_rule",
    "add_transformation",
    "compare_old_values",
    "create_object_dependency",
    "delete_all_errors",
    "delete_error",
    "drop_object_dependency",
    "execute_all_errors",
    "execute_error",
    "instantiate",
    "load_settings",
    "publish_settings",
    "remove_rule",
    "remove_transformation",
    "set_dml_handler",
    "set_global_instantiation_scn",
    "set_key_columns",
    "set_parameter",
    "set_schema_instantiation_scn",
    "set_table_instantiation_scn",
    "set_update_conflict_handler",
    "set_value_dependency",
    "start_apply",
    "stop_apply",
    "table_definition_from_json",
    "table_definition_to_dict",
]

PARAMETERS = (
    "COMMIT_SERIALIZATION",
    "DISABLE_ON_ERROR",
    "MAX_CYCLE_BATCHES",
    "MAX_ERROR_PASSES",
    "DISCARD_TAGGED",
)
EXPORT_FORMATS = ("parquet", "csv", "json")
_YES_NO = {"Y": True, "N": False}


# --------------------------------------------------------------------------------------------
# Table definitions as JSON documents
# --------------------------------------------------------------------------------------------


def table_definition_to_dict(definition: TableDefinition) -> dict[str, Any]:
    """The document ``table_definition_from_dict`` reads back into an equal definition."""
    columns: list[dict[str, Any]] = []
    for column in definition.columns:
        entry: dict[str, Any] = {
            "name": column.name,
            "type": str(column.oracle_type),
            "nullable": column.nullable,
        }
        if column.default is not None:
            entry["default"] = column.default
        columns.append(entry)
    document: dict[str, Any] = {
        "owner": definition.owner,
        "name": definition.name,
        "columns": columns,
    }
    if definition.primary_key:
        document["primary_key"] = list(definition.primary_key)
    if definition.unique_keys:
        document["unique_keys"] = [
            {"name": key.name, "columns": list(key.columns)} for key in definition.unique_keys
        ]
    return document


def table_definition_from_json(text: str, origin: str) -> TableDefinition:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{origin}: invalid table definition JSON: {error}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(f"{origin}: a table definition must be a mapping")
    return table_definition_from_dict(document, origin)


# --------------------------------------------------------------------------------------------
# Validation (the semantic checks of lakeapply.yml, with the same messages)
# --------------------------------------------------------------------------------------------


def _fail(apply_name: str, where: str, message: str) -> ConfigurationError:
    return problem_in_apply_process(apply_name)(where, message)


def _check_apply_name(apply_name: str) -> str:
    return validate_oracle_identifier(apply_name, "apply process name")


def _check_source(settings: ApplySettings, source_database: str, where: str) -> None:
    check_source(settings, source_database, where, problem_in_apply_process(settings.apply_name))


def _check_columns(
    apply_name: str, definition: TableDefinition, columns: Iterable[str], where: str
) -> None:
    check_columns(definition, columns, where, problem_in_apply_process(apply_name))


def _check_scn(apply_name: str, scn: int | None, where: str) -> None:
    check_scn(scn, where, problem_in_apply_process(apply_name))


# --------------------------------------------------------------------------------------------
# Publish and load
# --------------------------------------------------------------------------------------------


def _replace_rows(
    spark: SparkSession, catalog: Catalog, name: str, apply_name: str, rows: list[tuple[Any, ...]]
) -> None:
    """Replace this apply's rows of one dictionary table (one atomic Delta commit, one file).

    ``writeTo(...).overwrite(condition)`` is Delta's replaceWhere as a plain data write. The v1
    ``write.mode("overwrite").saveAsTable`` takes Delta's replace-table path, which re-registers
    the schema in the Hive metastore: Hive rejects that (the table is stored in Spark's own
    format, not Hive's), logs ``ERROR HiveAlterHandler: Failed to alter table`` and Spark retries
    in its own format, on every publish."""
    schema = dictionary.DICTIONARY_TABLES[name]
    spark.createDataFrame(rows, schema).coalesce(1).writeTo(catalog.apply_table(name)).overwrite(
        F.col("apply_name") == F.lit(apply_name)
    )


def _yes_no(flag: bool) -> str:
    return "Y" if flag else "N"


def _merge_apply_process(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    """The apply_processes row: parameters refreshed, status kept (ENABLED when new)."""
    row = spark.createDataFrame(
        [
            (
                settings.apply_name,
                "ENABLED",
                datetime.now(UTC).replace(tzinfo=None),
                None,
                None,
                settings.commit_serialization.value,
                _yes_no(settings.disable_on_error),
                list(settings.source_databases),
            )
        ],
        dictionary.APPLY_PROCESSES_SCHEMA,
    )
    (
        DeltaTable.forName(spark, catalog.apply_table(dictionary.APPLY_PROCESSES))
        .alias("t")
        .merge(row.alias("s"), "t.apply_name = s.apply_name")
        .whenMatchedUpdate(
            set={
                column: f"s.{column}"
                for column in ("commit_serialization", "disable_on_error", "source_databases")
            }
        )
        .whenNotMatchedInsertAll()
        .execute()
    )


def _dictionary_rows(settings: ApplySettings) -> dict[str, list[tuple[Any, ...]]]:
    """Every dictionary table's rows for one apply: apply-level ones, then each table's."""
    rows = _apply_level_rows(settings)
    for table in settings.tables:
        for dictionary_table, table_rows in _table_rows(settings.apply_name, table).items():
            rows[dictionary_table].extend(table_rows)
    return rows


def _apply_level_rows(settings: ApplySettings) -> dict[str, list[tuple[Any, ...]]]:
    name = settings.apply_name
    parameters = [
        ("COMMIT_SERIALIZATION", settings.commit_serialization.value),
        ("DISABLE_ON_ERROR", _yes_no(settings.disable_on_error)),
        ("MAX_CYCLE_BATCHES", str(settings.max_cycle_batches)),
        ("MAX_ERROR_PASSES", str(settings.max_error_passes)),
        ("DISCARD_TAGGED", _yes_no(settings.discard_tagged)),
    ]
    rows: dict[str, list[tuple[Any, ...]]] = {
        dictionary.PARAMETERS: [(name, p, v, "YES") for p, v in parameters],
        dictionary.DESTINATION_TABLES: [],
        dictionary.KEY_COLUMNS: [],
        dictionary.INSTANTIATED_OBJECTS: [],
        dictionary.INSTANTIATED_SCHEMAS: [
            (name, db, owner, scn) for db, owner, scn in settings.schema_instantiation_scns
        ],
        dictionary.INSTANTIATED_GLOBAL: [
            (name, db, scn) for db, scn in settings.global_instantiation_scns
        ],
        dictionary.CONFLICT_COLUMNS: [],
        dictionary.COMPARE_OLD_VALUES: [],
        dictionary.TRANSFORMATIONS: [],
        dictionary.DML_HANDLERS: [],
        dictionary.ERROR_HANDLERS: [],
        dictionary.RULES: [
            (
                name,
                rule_set,
                number,
                rule.level,
                rule.source_database,
                rule.schema,
                rule.table,
                rule.tag,
                rule_condition_text(rule),
                rule.condition,
                json.dumps([transformation_to_dict(step) for step in rule.transformations])
                if rule.transformations
                else None,
            )
            for rule_set, rules in (
                ("NEGATIVE", settings.negative_rules),
                ("POSITIVE", settings.positive_rules or ()),
            )
            for number, rule in enumerate(rules, start=1)
        ],
        dictionary.VIRTUAL_DEPENDENCIES: _virtual_dependency_rows(settings),
    }
    return rows


def _table_rows(apply_name: str, table: DestinationTable) -> dict[str, list[tuple[Any, ...]]]:
    source = (apply_name, table.source_database, table.definition.owner, table.definition.name)
    return {
        dictionary.DESTINATION_TABLES: [
            (
                *source,
                table.silver_table,
                json.dumps(table_definition_to_dict(table.definition), sort_keys=True),
            )
        ],
        dictionary.KEY_COLUMNS: [
            (*source, column, position)
            for position, column in enumerate(table.key_columns, start=1)
        ],
        dictionary.INSTANTIATED_OBJECTS: [
            (*source, "TABLE", table.instantiation_scn, table.ignore_scn)
        ],
        dictionary.CONFLICT_COLUMNS: [
            (*source, handler.method.value, handler.resolution_column, column)
            for handler in table.update_conflict_handlers
            for column in handler.column_list
        ],
        dictionary.COMPARE_OLD_VALUES: [
            (*source, column, operation, "N")
            for column, operation in sorted(table.uncompared_columns)
        ],
        dictionary.TRANSFORMATIONS: [
            (
                *source,
                number,
                step.kind.value,
                list(step.columns),
                step.value_type.value,
                step.value,
                step.expression,
                step.data_type if step.kind is TransformationKind.ADD_COLUMN else None,
            )
            for number, step in enumerate(table.transformations, start=1)
        ],
        dictionary.DML_HANDLERS: [
            (
                *source,
                handler.operation.value,
                handler.handler_type,
                handler.user_procedure,
                handler.handler_name,
                handler.statement,
            )
            for handler in table.dml_handlers
        ],
        dictionary.ERROR_HANDLERS: [
            (*source, handler.operation.value, handler.user_procedure)
            for handler in table.error_handlers
        ],
    }


_NONE2 = (None, None)  # the columns of the other dependency type


def _virtual_dependency_rows(settings: ApplySettings) -> list[tuple[Any, ...]]:
    name = settings.apply_name
    return [
        *(
            (name, "VALUE", value.name, value.owner, value.object_name, column, position, *_NONE2)
            for value in settings.value_dependencies
            for position, column in enumerate(value.columns, start=1)
        ),
        *(
            (
                name,
                "OBJECT",
                None,
                dependency.owner,
                dependency.object_name,
                *_NONE2,
                dependency.parent_owner,
                dependency.parent_name,
            )
            for dependency in settings.object_dependencies
        ),
    ]


def _virtual_dependencies(
    rows: list[Row],
) -> tuple[tuple[ValueDependency, ...], tuple[ObjectDependency, ...]]:
    """The value and object dependencies, from their dictionary rows (in declared order)."""
    columns: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    objects: list[ObjectDependency] = []
    for row in rows:
        if row["dependency_type"] == "VALUE":
            key = (row["dependency_name"], row["object_owner"], row["object_name"])
            columns.setdefault(key, []).append((row["column_position"], row["column_name"]))
        else:
            objects.append(
                ObjectDependency(
                    row["object_owner"],
                    row["object_name"],
                    row["parent_object_owner"],
                    row["parent_object_name"],
                )
            )
    values = tuple(
        ValueDependency(*key, tuple(column for _, column in sorted(listed)))
        for key, listed in sorted(columns.items())
    )
    return values, tuple(sorted(objects, key=astuple))


def publish_settings(spark: SparkSession, catalog: Catalog, settings: ApplySettings) -> None:
    """Validate ``settings`` and write every dictionary row of this apply process."""
    _publish(spark, catalog, settings, None)


def _publish(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings, previous: ApplySettings | None
) -> None:
    """Publish; with the ``previous`` (loaded) settings, only the dictionary tables that change."""
    validate_settings(settings)
    created = ensure_dictionary_tables(spark, catalog)
    wanted = _dictionary_rows(settings)
    if previous is None:
        # Unknown rows: replace every table that gets rows or already holds some of this apply
        # (a first publish writes a few of the dozen tables; each write is a Delta commit). A
        # table created just now holds nothing (probing a dozen new tables: ~13 s, 2 cores).
        holding = _tables_holding_rows(
            spark,
            catalog,
            settings.apply_name,
            [
                name
                for name, rows in wanted.items()
                if not rows and catalog.apply_table(name) not in created
            ],
        )
        changed = [name for name, rows in wanted.items() if rows or name in holding]
    else:
        before = _dictionary_rows(previous)
        changed = [name for name, rows in wanted.items() if before[name] != rows]
    writes: list[Callable[[], None]] = [
        partial(_replace_rows, spark, catalog, name, settings.apply_name, wanted[name])
        for name in changed
    ]
    if previous is None or _process_fields(previous) != _process_fields(settings):
        writes.append(partial(_merge_apply_process, spark, catalog, settings))
    # One commit per table either way (Delta has no multi-table commit): side by side they
    # cost about a third of one after the other.
    side_by_side(writes)


def _tables_holding_rows(
    spark: SparkSession, catalog: Catalog, apply_name: str, names: list[str]
) -> set[str]:
    """Which of the dictionary tables ``names`` hold a row of ``apply_name`` (one query)."""
    existing = existing_tables(spark, [catalog.apply_table(name) for name in names])
    names = [name for name in names if catalog.apply_table(name) in existing]
    if not names:
        return set()
    found: DataFrame | None = None
    for name in names:
        probe = (
            spark.table(catalog.apply_table(name))
            .where(F.col("apply_name") == apply_name)
            .select(F.lit(name).alias("name"))
            .limit(1)
        )
        found = probe if found is None else found.unionByName(probe)
    assert found is not None
    return {row["name"] for row in found.collect()}


def _process_fields(settings: ApplySettings) -> tuple[Any, ...]:
    return (settings.commit_serialization, settings.disable_on_error, settings.source_databases)


def _rows(spark: SparkSession, catalog: Catalog, name: str, apply_name: str) -> list[Row]:
    frame: DataFrame = spark.table(catalog.apply_table(name))
    return frame.where(F.col("apply_name") == apply_name).collect()


def _no_rows() -> list[Row]:
    return []


def _parameter_value(apply_name: str, parameter: str, value: str | None) -> Any:
    """A parameter's value from its text; ConfigurationError naming it when invalid."""
    text = "" if value is None else str(value).strip().upper()
    if parameter == "COMMIT_SERIALIZATION":
        try:
            return CommitSerialization(text)
        except ValueError:
            choices = [member.value for member in CommitSerialization]
            raise _fail(
                apply_name, parameter, f"invalid value {value!r} (one of {choices})"
            ) from None
    if parameter in ("DISABLE_ON_ERROR", "DISCARD_TAGGED"):
        if text not in _YES_NO:
            raise _fail(apply_name, parameter, f"invalid value {value!r} (Y or N)")
        return _YES_NO[text]
    if parameter in ("MAX_CYCLE_BATCHES", "MAX_ERROR_PASSES"):
        if not text.isdigit() or int(text) < 1:
            raise _fail(apply_name, parameter, f"invalid value {value!r} (an integer >= 1)")
        return int(text)
    raise _fail(
        apply_name, "SET_PARAMETER", f"unknown parameter {parameter!r} (one of {list(PARAMETERS)})"
    )


def _no_such_apply(catalog: Catalog, name: str) -> ConfigurationError:
    return ConfigurationError(
        f"apply process {name!r} does not exist in {catalog.apply} (publish its settings first)"
    )


def load_settings(spark: SparkSession, catalog: Catalog, apply_name: str) -> ApplySettings:
    """The settings of ``apply_name`` as published; ConfigurationError when it does not exist."""
    name = _check_apply_name(apply_name)
    missing = _no_such_apply(catalog, name)
    read = (
        dictionary.APPLY_PROCESSES,
        dictionary.PARAMETERS,
        dictionary.KEY_COLUMNS,
        dictionary.INSTANTIATED_OBJECTS,
        dictionary.CONFLICT_COLUMNS,
        dictionary.COMPARE_OLD_VALUES,
        dictionary.TRANSFORMATIONS,
        dictionary.DML_HANDLERS,
        dictionary.ERROR_HANDLERS,
        dictionary.DESTINATION_TABLES,
        dictionary.RULES,
        dictionary.VIRTUAL_DEPENDENCIES,
        dictionary.INSTANTIATED_SCHEMAS,
        dictionary.INSTANTIATED_GLOBAL,
    )
    existing = existing_tables(spark, [catalog.apply_table(table) for table in read])
    if catalog.apply_table(dictionary.APPLY_PROCESSES) not in existing:
        raise missing
    # A settings table that does not exist holds no row: the first publish creates them all,
    # and one an older lakeapply did not have yet is created by the next command that writes.
    # A dozen small reads, each a Spark job or two: side by side, not one after the other.
    fetched = dict(
        zip(
            read,
            side_by_side(
                [
                    partial(_rows, spark, catalog, table, name)
                    if catalog.apply_table(table) in existing
                    else _no_rows
                    for table in read
                ]
            ),
            strict=True,
        )
    )
    processes = fetched[dictionary.APPLY_PROCESSES]
    if not processes:
        raise missing
    values: dict[str, Any] = {}
    for row in fetched[dictionary.PARAMETERS]:
        parameter = str(row["parameter"])
        if parameter in PARAMETERS:
            values[parameter] = _parameter_value(name, parameter, row["value"])

    tables = _destination_tables(fetched, catalog, name)
    negative, positive = _rule_sets(fetched[dictionary.RULES])
    value_dependencies, objects = _virtual_dependencies(fetched[dictionary.VIRTUAL_DEPENDENCIES])
    process = processes[0]
    defaults = ApplySettings(name, (), ())
    return ApplySettings(
        apply_name=name,
        source_databases=tuple(process["source_databases"]),
        tables=tuple(tables),
        commit_serialization=values.get(
            "COMMIT_SERIALIZATION", CommitSerialization(process["commit_serialization"])
        ),
        disable_on_error=values.get("DISABLE_ON_ERROR", process["disable_on_error"] == "Y"),
        discard_tagged=values.get("DISCARD_TAGGED", defaults.discard_tagged),
        negative_rules=negative,
        positive_rules=positive or None,  # a declared positive rule set is never empty
        schema_instantiation_scns=tuple(
            (row["source_database"], row["source_schema"], row["instantiation_scn"])
            for row in fetched[dictionary.INSTANTIATED_SCHEMAS]
        ),
        global_instantiation_scns=tuple(
            (row["source_database"], row["instantiation_scn"])
            for row in fetched[dictionary.INSTANTIATED_GLOBAL]
        ),
        max_cycle_batches=values.get("MAX_CYCLE_BATCHES", defaults.max_cycle_batches),
        max_error_passes=values.get("MAX_ERROR_PASSES", defaults.max_error_passes),
        value_dependencies=value_dependencies,
        object_dependencies=objects,
    )


def _source_key(row: Row, owner: str = "object_owner", table: str = "object_name") -> Any:
    return (row["source_database"], row[owner], row[table])


_Item = TypeVar("_Item")


def _by_source_object(
    rows: list[Row], item: Callable[[Row], _Item]
) -> dict[tuple[Any, ...], list[_Item]]:
    """One dictionary view's rows as items, grouped by the source object they describe."""
    grouped: dict[tuple[Any, ...], list[_Item]] = {}
    for row in rows:
        grouped.setdefault(_source_key(row), []).append(item(row))
    return grouped


def _transformation_step(row: Row) -> tuple[int, ColumnTransformation]:
    return (
        row["step_number"],
        ColumnTransformation(
            TransformationKind(row["declarative_type"]),
            tuple(row["column_names"]),
            ValueImage(row["value_type"]),
            value=row["column_value"],
            expression=row["column_function"],
            data_type=row["column_type"] or "VARCHAR2",
        ),
    )


def _dml_handler(row: Row) -> DmlHandler:
    return DmlHandler(
        DmlOperation(row["operation_name"]),
        user_procedure=row["user_procedure"],
        statement=row["statement"],
        handler_name=row["handler_name"],
    )


def _update_conflict_handlers(rows: list[Row]) -> tuple[UpdateConflictHandler, ...]:
    """One handler per resolution column, with its column list in the view's order."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        _method, columns = groups.setdefault(row["resolution_column"], (row["method_name"], []))
        columns.append(row["column_name"])
    return tuple(
        UpdateConflictHandler(ConflictResolution(method), tuple(columns), resolution)
        for resolution, (method, columns) in groups.items()
    )


def _destination_tables(
    fetched: dict[str, list[Row]], catalog: Catalog, name: str
) -> list[DestinationTable]:
    """The destination tables of an apply process with their keys, instantiation SCNs,
    conflict handlers, uncompared columns and transformations, from the dictionary rows."""
    keys = _by_source_object(
        fetched[dictionary.KEY_COLUMNS], lambda r: (r["column_position"], r["column_name"])
    )
    scns: dict[Any, tuple[int | None, int | None]] = {
        _source_key(row, "source_object_owner", "source_object_name"): (
            row["instantiation_scn"],
            row["ignore_scn"],
        )
        for row in fetched[dictionary.INSTANTIATED_OBJECTS]
    }
    conflict_rows = _by_source_object(fetched[dictionary.CONFLICT_COLUMNS], lambda r: r)
    uncompared = _by_source_object(
        [row for row in fetched[dictionary.COMPARE_OLD_VALUES] if row["compare"] == "N"],
        lambda r: (r["column_name"], r["operation"]),
    )
    steps = _by_source_object(fetched[dictionary.TRANSFORMATIONS], _transformation_step)
    dml_handlers = _by_source_object(fetched[dictionary.DML_HANDLERS], _dml_handler)
    error_handlers = _by_source_object(
        fetched[dictionary.ERROR_HANDLERS],
        lambda r: ErrorHandler(DmlOperation(r["operation_name"]), r["user_procedure"]),
    )
    tables = []
    for row in fetched[dictionary.DESTINATION_TABLES]:
        key = _source_key(row)
        definition = table_definition_from_json(
            row["definition_json"],
            f"{catalog.apply}.{dictionary.DESTINATION_TABLES}[{name}, {key[1]}.{key[2]}]",
        )
        instantiation_scn, ignore_scn = scns.get(key, (None, None))
        tables.append(
            DestinationTable(
                source_database=row["source_database"],
                definition=definition,
                silver_table=row["silver_table"],
                key_columns=tuple(column for _, column in sorted(keys.get(key, []))),
                instantiation_scn=instantiation_scn,
                ignore_scn=ignore_scn,
                uncompared_columns=frozenset(uncompared.get(key, [])),
                update_conflict_handlers=_update_conflict_handlers(conflict_rows.get(key, [])),
                transformations=tuple(
                    step for _, step in sorted(steps.get(key, []), key=lambda item: item[0])
                ),
                dml_handlers=tuple(
                    sorted(
                        dml_handlers.get(key, []),
                        key=lambda h: (h.operation.value, *h.execution_order),
                    )
                ),
                error_handlers=tuple(
                    sorted(error_handlers.get(key, []), key=lambda h: h.operation.value)
                ),
            )
        )
    return tables


def _rule_sets(
    rule_rows: list[Row],
) -> tuple[tuple[ApplyRule, ...], tuple[ApplyRule, ...]]:
    """The negative and positive rule sets, each in rule-number order."""
    rules: dict[str, list[tuple[int, ApplyRule]]] = {"POSITIVE": [], "NEGATIVE": []}
    for row in rule_rows:
        rules[row["rule_set_type"]].append(
            (
                row["rule_number"],
                ApplyRule(
                    row["source_database"],
                    row["schema_name"],
                    row["object_name"],
                    row["tag_condition"],
                    condition=row["subset_condition"],
                    transformations=tuple(
                        transformation_from_dict(step)
                        for step in json.loads(row["transformations_json"] or "[]")
                    ),
                ),
            )
        )
    negative, positive = (
        tuple(rule for _, rule in sorted(rules[kind], key=lambda item: item[0]))
        for kind in ("NEGATIVE", "POSITIVE")
    )
    return negative, positive


# --------------------------------------------------------------------------------------------
# DBMS_APPLY_ADM
# --------------------------------------------------------------------------------------------


def _find_table(
    settings: ApplySettings, source_database: str, object_name: str, procedure: str
) -> DestinationTable:
    owner, dot, name = object_name.partition(".")
    if not dot or not owner or not name:
        raise _fail(
            settings.apply_name,
            procedure,
            f"object name {object_name!r} must be qualified as OWNER.NAME",
        )
    table = settings.table_for(source_database, owner, name)
    if table is None:
        known = [f"{t.definition.qualified_name} from {t.source_database}" for t in settings.tables]
        raise _fail(
            settings.apply_name,
            procedure,
            f"no destination table for {object_name} from {source_database} (known: {known})",
        )
    return table


def _with_table(settings: ApplySettings, table: DestinationTable) -> ApplySettings:
    return replace(
        settings,
        tables=tuple(
            table if t.source_object == table.source_object else t for t in settings.tables
        ),
    )


def set_key_columns(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    column_list: Sequence[str] | None,
) -> None:
    """SET_KEY_COLUMNS: a substitute key (in order); None or empty removes it."""
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, "SET_KEY_COLUMNS")
    columns = tuple(column_list or ())
    _check_columns(settings.apply_name, table.definition, columns, "SET_KEY_COLUMNS")
    if len(set(columns)) != len(columns):
        raise _fail(settings.apply_name, "SET_KEY_COLUMNS", f"duplicate column in {columns}")
    _publish(spark, catalog, _with_table(settings, replace(table, key_columns=columns)), settings)


def set_table_instantiation_scn(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    instantiation_scn: int | None,
) -> None:
    """SET_TABLE_INSTANTIATION_SCN (None removes it); never below the object's ignore SCN."""
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, "SET_TABLE_INSTANTIATION_SCN")
    _check_scn(settings.apply_name, instantiation_scn, "SET_TABLE_INSTANTIATION_SCN")
    if (
        instantiation_scn is not None
        and table.ignore_scn is not None
        and instantiation_scn < table.ignore_scn
    ):
        raise _fail(
            settings.apply_name,
            f"SET_TABLE_INSTANTIATION_SCN {object_name} from {source_database}",
            f"the instantiation SCN cannot be set below the object's ignore SCN "
            f"({instantiation_scn} < {table.ignore_scn})",
        )
    _publish(
        spark,
        catalog,
        _with_table(settings, replace(table, instantiation_scn=instantiation_scn)),
        settings,
    )


def set_schema_instantiation_scn(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    source_schema: str,
    instantiation_scn: int | None,
) -> None:
    """SET_SCHEMA_INSTANTIATION_SCN (None removes it)."""
    settings = load_settings(spark, catalog, apply_name)
    _check_source(settings, source_database, "SET_SCHEMA_INSTANTIATION_SCN")
    _check_scn(settings.apply_name, instantiation_scn, "SET_SCHEMA_INSTANTIATION_SCN")
    validate_oracle_identifier(source_schema, "source schema")
    entries = [
        entry
        for entry in settings.schema_instantiation_scns
        if entry[:2] != (source_database, source_schema)
    ]
    if instantiation_scn is not None:
        entries.append((source_database, source_schema, instantiation_scn))
    _publish(spark, catalog, replace(settings, schema_instantiation_scns=tuple(entries)), settings)


def set_global_instantiation_scn(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    instantiation_scn: int | None,
) -> None:
    """SET_GLOBAL_INSTANTIATION_SCN (None removes it)."""
    settings = load_settings(spark, catalog, apply_name)
    _check_source(settings, source_database, "SET_GLOBAL_INSTANTIATION_SCN")
    _check_scn(settings.apply_name, instantiation_scn, "SET_GLOBAL_INSTANTIATION_SCN")
    entries = [e for e in settings.global_instantiation_scns if e[0] != source_database]
    if instantiation_scn is not None:
        entries.append((source_database, instantiation_scn))
    _publish(spark, catalog, replace(settings, global_instantiation_scns=tuple(entries)), settings)


_PARAMETER_FIELDS = {
    "COMMIT_SERIALIZATION": "commit_serialization",
    "DISABLE_ON_ERROR": "disable_on_error",
    "MAX_CYCLE_BATCHES": "max_cycle_batches",
    "MAX_ERROR_PASSES": "max_error_passes",
    "DISCARD_TAGGED": "discard_tagged",
}


def set_parameter(
    spark: SparkSession, catalog: Catalog, apply_name: str, parameter: str, value: str | int
) -> None:
    """SET_PARAMETER: COMMIT_SERIALIZATION FULL|DEPENDENT_TRANSACTIONS, DISABLE_ON_ERROR Y|N,
    MAX_CYCLE_BATCHES and MAX_ERROR_PASSES (integers >= 1), DISCARD_TAGGED Y|N."""
    settings = load_settings(spark, catalog, apply_name)
    key = str(parameter).strip().upper()
    typed = _parameter_value(settings.apply_name, key, str(value))
    _publish(spark, catalog, replace(settings, **{_PARAMETER_FIELDS[key]: typed}), settings)


def compare_old_values(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    column_list: Sequence[str],
    operation: str = "UPDATE",
    compare: bool = True,
) -> None:
    """COMPARE_OLD_VALUES: stop (compare=False) or resume comparing old values of columns for
    UPDATE, DELETE or both ("*")."""
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, "COMPARE_OLD_VALUES")
    op = operation.strip().upper()
    if op not in (*OPERATIONS, "*"):
        raise _fail(
            settings.apply_name,
            "COMPARE_OLD_VALUES",
            f"unknown operation {operation!r} (UPDATE, DELETE or *)",
        )
    columns = list(column_list)
    if not columns:
        raise _fail(settings.apply_name, "COMPARE_OLD_VALUES", "the column list is empty")
    _check_columns(settings.apply_name, table.definition, columns, "COMPARE_OLD_VALUES")
    pairs = {(c, o) for c in columns for o in (OPERATIONS if op == "*" else (op,))}
    uncompared = table.uncompared_columns - pairs if compare else table.uncompared_columns | pairs
    _publish(
        spark,
        catalog,
        _with_table(settings, replace(table, uncompared_columns=uncompared)),
        settings,
    )


def _owner_and_name(object_name: str, procedure: str, apply_name: str) -> tuple[str, str]:
    owner, dot, name = object_name.partition(".")
    if not dot or not owner or not name:
        raise _fail(apply_name, procedure, f"object {object_name!r} is not OWNER.NAME")
    return owner, name


def set_value_dependency(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    dependency_name: str,
    object_name: str,
    attribute_list: Sequence[str] | None,
) -> None:
    """SET_VALUE_DEPENDENCY: the columns of ``object_name`` (OWNER.NAME of a destination table)
    in value dependency ``dependency_name``; ``attribute_list=None`` removes the object from it."""
    settings = load_settings(spark, catalog, apply_name)
    owner, name = _owner_and_name(object_name, "SET_VALUE_DEPENDENCY", settings.apply_name)
    kept = tuple(
        d
        for d in settings.value_dependencies
        if (d.name, d.owner, d.object_name) != (dependency_name, owner, name)
    )
    added = (
        ()
        if attribute_list is None
        else (ValueDependency(dependency_name, owner, name, tuple(attribute_list)),)
    )
    _publish(spark, catalog, replace(settings, value_dependencies=kept + added), settings)


def create_object_dependency(
    spark: SparkSession, catalog: Catalog, apply_name: str, object_name: str, parent_name: str
) -> None:
    """CREATE_OBJECT_DEPENDENCY: transactions involving ``object_name`` (the child) and those
    involving ``parent_name`` are dependent (both OWNER.NAME of destination tables)."""
    settings = load_settings(spark, catalog, apply_name)
    dependency = ObjectDependency(
        *_owner_and_name(object_name, "CREATE_OBJECT_DEPENDENCY", settings.apply_name),
        *_owner_and_name(parent_name, "CREATE_OBJECT_DEPENDENCY", settings.apply_name),
    )
    objects = (*settings.object_dependencies, dependency)
    _publish(spark, catalog, replace(settings, object_dependencies=objects), settings)


def drop_object_dependency(
    spark: SparkSession, catalog: Catalog, apply_name: str, object_name: str, parent_name: str
) -> None:
    """DROP_OBJECT_DEPENDENCY: forget an object dependency (an unknown one is an error)."""
    settings = load_settings(spark, catalog, apply_name)
    dependency = ObjectDependency(
        *_owner_and_name(object_name, "DROP_OBJECT_DEPENDENCY", settings.apply_name),
        *_owner_and_name(parent_name, "DROP_OBJECT_DEPENDENCY", settings.apply_name),
    )
    if dependency not in settings.object_dependencies:
        raise _fail(
            settings.apply_name,
            "DROP_OBJECT_DEPENDENCY",
            f"no object dependency of {object_name} on {parent_name}",
        )
    objects = tuple(d for d in settings.object_dependencies if d != dependency)
    _publish(spark, catalog, replace(settings, object_dependencies=objects), settings)


def set_update_conflict_handler(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    method_name: str | None,
    resolution_column: str | None,
    column_list: Sequence[str],
) -> None:
    """SET_UPDATE_CONFLICT_HANDLER: a prebuilt handler for a column group (replacing the one for
    the same column list); ``method_name`` None removes the handler of that column list."""
    procedure = "SET_UPDATE_CONFLICT_HANDLER"
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, procedure)
    columns = tuple(column_list)
    if not columns:
        raise _fail(settings.apply_name, procedure, "the column list is empty")
    _check_columns(settings.apply_name, table.definition, columns, f"{procedure} column_list")
    same = frozenset(columns)
    others = tuple(h for h in table.update_conflict_handlers if frozenset(h.column_list) != same)
    if method_name is None:
        if len(others) == len(table.update_conflict_handlers):
            raise _fail(
                settings.apply_name,
                procedure,
                f"no update conflict handler for column list {list(columns)} on {object_name}",
            )
        handlers = others
    else:
        try:
            method = ConflictResolution(method_name.strip().upper())
        except ValueError:
            choices = [member.value for member in ConflictResolution]
            raise _fail(
                settings.apply_name, procedure, f"unknown method {method_name!r} (one of {choices})"
            ) from None
        if resolution_column is None:
            raise _fail(settings.apply_name, procedure, "a resolution column is required")
        handler = UpdateConflictHandler(method, columns, resolution_column)
        position = next(
            (
                index
                for index, h in enumerate(table.update_conflict_handlers)
                if frozenset(h.column_list) == same
            ),
            None,
        )
        current = list(table.update_conflict_handlers)
        if position is None:
            current.append(handler)
        else:
            current[position] = handler
        handlers = tuple(current)
    _publish(
        spark,
        catalog,
        _with_table(settings, replace(table, update_conflict_handlers=handlers)),
        settings,
    )


def set_dml_handler(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    operation_name: str,
    user_procedure: str | None = None,
    statement: str | None = None,
    handler_name: str | None = None,
    error_handler: bool = False,
) -> None:
    """SET_DML_HANDLER: the procedure handler of one operation of a table (replacing the one it
    had), or ADD_STMT_HANDLER: a statement handler (replacing the one of its ``handler_name``);
    neither ``user_procedure`` nor ``statement`` removes the statement handler named
    ``handler_name``, or without a name every handler of the operation. ``error_handler`` sets
    (or removes) the operation's error handler instead, a ``user_procedure`` only."""
    procedure = "SET_DML_HANDLER"
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, procedure)
    try:
        operation = DmlOperation(operation_name.strip().upper())
    except ValueError:
        choices = [member.value for member in DmlOperation]
        raise _fail(
            settings.apply_name,
            procedure,
            f"unknown operation {operation_name!r} (one of {choices})",
        ) from None
    if error_handler:
        if statement is not None:
            raise _fail(
                settings.apply_name,
                procedure,
                "an error handler is a user procedure (package.module:function), not a statement",
            )
        errors = tuple(h for h in table.error_handlers if h.operation is not operation)
        if user_procedure is not None:
            errors = (*errors, ErrorHandler(operation, user_procedure))
        elif len(errors) == len(table.error_handlers):
            raise _fail(
                settings.apply_name,
                procedure,
                f"no error handler for {operation.value} on {object_name}",
            )
        changed = replace(
            table, error_handlers=tuple(sorted(errors, key=lambda h: h.operation.value))
        )
    else:
        # SET_DML_HANDLER replaces the operation's procedure handler; a statement handler
        # replaces the one of its name (ADD_STMT_HANDLER); neither removes the one named, or
        # without a name every handler of the operation.
        def replaced(handler: DmlHandler) -> bool:
            if handler.operation is not operation:
                return False
            if user_procedure is not None:
                return handler.statement is None
            if statement is not None or handler_name is not None:
                return handler.statement is not None and handler.handler_name == handler_name
            return True

        handlers = tuple(h for h in table.dml_handlers if not replaced(h))
        if user_procedure is not None or statement is not None:
            handlers = (*handlers, DmlHandler(operation, user_procedure, statement, handler_name))
        elif len(handlers) == len(table.dml_handlers):
            named = f" named {handler_name!r}" if handler_name else ""
            raise _fail(
                settings.apply_name,
                procedure,
                f"no DML handler{named} for {operation.value} on {object_name}",
            )
        changed = replace(
            table,
            dml_handlers=tuple(
                sorted(handlers, key=lambda h: (h.operation.value, *h.execution_order))
            ),
        )
    _publish(spark, catalog, _with_table(settings, changed), settings)


RULE_SETS = ("POSITIVE", "NEGATIVE")


def _rule_set(apply_name: str, rule_set: str, procedure: str) -> str:
    kind = rule_set.strip().upper()
    if kind not in RULE_SETS:
        raise _fail(apply_name, procedure, f"rule set {rule_set!r} is not POSITIVE or NEGATIVE")
    return kind


def _with_rules(settings: ApplySettings, kind: str, rules: tuple[ApplyRule, ...]) -> ApplySettings:
    if kind == "NEGATIVE":
        return replace(settings, negative_rules=rules)
    return replace(settings, positive_rules=rules or None)


def add_rule(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    rule_set: str,
    rule: dict[str, Any],
) -> None:
    """ADD_GLOBAL_RULES / ADD_SCHEMA_RULES / ADD_TABLE_RULES: append ``rule`` (the form of a
    ``rules.positive`` / ``rules.negative`` entry of lakeapply.yml, e.g. ``{"schema": "HR"}`` or
    ``{"tag": "NOT NULL"}``) to the POSITIVE (inclusion) or NEGATIVE rule set. Adding the first
    positive rule creates the positive rule set: from then on an LCR must match one of them."""
    procedure = "ADD_RULES"
    settings = load_settings(spark, catalog, apply_name)
    kind = _rule_set(settings.apply_name, rule_set, procedure)
    added = checked_rule(rule, f"{settings.apply_name}: {procedure} {kind}")
    current = settings.negative_rules if kind == "NEGATIVE" else settings.positive_rules or ()
    if added in current:
        raise _fail(settings.apply_name, procedure, f"the {kind} rule set already has {rule}")
    _publish(spark, catalog, _with_rules(settings, kind, (*current, added)), settings)


def remove_rule(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    rule_set: str,
    rule: dict[str, Any] | None,
) -> None:
    """REMOVE_RULE: drop ``rule`` (as given to :func:`add_rule`) from the rule set; None drops
    every rule of the set (Oracle's REMOVE_RULE with a NULL rule name). A positive rule set left
    without rules is removed, so the apply process is back to its table rules alone."""
    procedure = "REMOVE_RULE"
    settings = load_settings(spark, catalog, apply_name)
    kind = _rule_set(settings.apply_name, rule_set, procedure)
    current = settings.negative_rules if kind == "NEGATIVE" else settings.positive_rules or ()
    if rule is None:
        kept: tuple[ApplyRule, ...] = ()
    else:
        removed = checked_rule(rule, f"{settings.apply_name}: {procedure} {kind}")
        if removed not in current:
            raise _fail(settings.apply_name, procedure, f"the {kind} rule set has no rule {rule}")
        kept = tuple(existing for existing in current if existing != removed)
    _publish(spark, catalog, _with_rules(settings, kind, kept), settings)


def add_transformation(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    step: dict[str, Any],
    step_number: int | None = None,
) -> None:
    """DBMS_STREAMS_ADM.DELETE_COLUMN / RENAME_COLUMN / ADD_COLUMN / KEEP_COLUMNS with operation
    ADD: insert ``step`` (the form of a ``transformations`` entry of lakeapply.yml, e.g.
    ``{"delete_column": "NICKNAME"}``) into the table's steps at ``step_number`` (1-based;
    None: after the last). The steps run in order on the table's row LCRs from the next cycle."""
    procedure = "ADD_TRANSFORMATION"
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, procedure)
    added = checked_transformation(step, f"{settings.apply_name}: {procedure} {object_name}")
    steps = list(table.transformations)
    position = len(steps) + 1 if step_number is None else step_number
    if not 1 <= position <= len(steps) + 1:
        raise _fail(
            settings.apply_name,
            procedure,
            f"step number {step_number} is outside 1..{len(steps) + 1} for {object_name}",
        )
    steps.insert(position - 1, added)
    changed = replace(table, transformations=tuple(steps))
    _publish(spark, catalog, _with_table(settings, changed), settings)


def remove_transformation(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    step_number: int | None,
) -> None:
    """The same procedures with operation REMOVE: drop step ``step_number`` (1-based, as
    DBA_STREAMS_TRANSFORMATIONS numbers them) of the table's transformations; None drops all."""
    procedure = "REMOVE_TRANSFORMATION"
    settings = load_settings(spark, catalog, apply_name)
    table = _find_table(settings, source_database, object_name, procedure)
    steps = list(table.transformations)
    if step_number is None:
        steps = []
    elif 1 <= step_number <= len(steps):
        del steps[step_number - 1]
    else:
        raise _fail(
            settings.apply_name,
            procedure,
            f"{object_name} has no transformation step {step_number} ({len(steps)} steps)",
        )
    changed = replace(table, transformations=tuple(steps))
    _publish(spark, catalog, _with_table(settings, changed), settings)


def add_rule_transformation(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    rule_number: int,
    step: dict[str, Any],
    step_number: int | None = None,
) -> None:
    """A rule-based transformation (RENAME_SCHEMA, RENAME_TABLE and the column procedures with
    ``rule_name``, operation ADD): insert ``step`` (lakeapply.yml's form) into the steps of
    positive rule ``rule_number`` (1-based, its RULE_NAME ``<apply>_POSITIVE_<n>`` in
    DBA_STREAMS_RULES) at ``step_number`` (1-based; None: after the last)."""
    procedure = "ADD_RULE_TRANSFORMATION"
    settings = load_settings(spark, catalog, apply_name)
    rules = list(settings.positive_rules or ())
    rule = _positive_rule(settings, rules, rule_number, procedure)
    added = checked_transformation(
        step, f"{settings.apply_name}: {procedure} {settings.apply_name}_POSITIVE_{rule_number}"
    )
    steps = list(rule.transformations)
    position = len(steps) + 1 if step_number is None else step_number
    if not 1 <= position <= len(steps) + 1:
        raise _fail(
            settings.apply_name,
            procedure,
            f"step number {step_number} is outside 1..{len(steps) + 1} for positive rule "
            f"{rule_number}",
        )
    steps.insert(position - 1, added)
    rules[rule_number - 1] = replace(rule, transformations=tuple(steps))
    _publish(spark, catalog, _with_rules(settings, "POSITIVE", tuple(rules)), settings)


def remove_rule_transformation(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    rule_number: int,
    step_number: int | None,
) -> None:
    """The same with operation REMOVE: drop step ``step_number`` of positive rule
    ``rule_number`` (both 1-based, as DBA_STREAMS_TRANSFORMATIONS shows them); None drops all."""
    procedure = "REMOVE_RULE_TRANSFORMATION"
    settings = load_settings(spark, catalog, apply_name)
    rules = list(settings.positive_rules or ())
    rule = _positive_rule(settings, rules, rule_number, procedure)
    steps = list(rule.transformations)
    if step_number is None:
        steps = []
    elif 1 <= step_number <= len(steps):
        del steps[step_number - 1]
    else:
        raise _fail(
            settings.apply_name,
            procedure,
            f"positive rule {rule_number} has no transformation step {step_number} "
            f"({len(steps)} steps)",
        )
    rules[rule_number - 1] = replace(rule, transformations=tuple(steps))
    _publish(spark, catalog, _with_rules(settings, "POSITIVE", tuple(rules)), settings)


def _positive_rule(
    settings: ApplySettings, rules: list[ApplyRule], rule_number: int, procedure: str
) -> ApplyRule:
    if not 1 <= rule_number <= len(rules):
        raise _fail(
            settings.apply_name,
            procedure,
            f"no positive rule {rule_number} (the positive rule set has {len(rules)} rules; "
            "transformations attach to positive rules only)",
        )
    return rules[rule_number - 1]


def start_apply(spark: SparkSession, catalog: Catalog, apply_name: str) -> None:
    """START_APPLY: status ENABLED (silver/plan.py)."""
    _change_status(spark, catalog, apply_name, "ENABLED")


def stop_apply(spark: SparkSession, catalog: Catalog, apply_name: str) -> None:
    """STOP_APPLY: status DISABLED (silver/plan.py)."""
    _change_status(spark, catalog, apply_name, "DISABLED")


def _change_status(spark: SparkSession, catalog: Catalog, apply_name: str, status: str) -> None:
    name = _check_apply_name(apply_name)
    if not plan.change_status(spark, catalog, name, status):
        raise _no_such_apply(catalog, name)


# --------------------------------------------------------------------------------------------
# The error queue (the operator's loop: look at DBA_APPLY_ERROR, fix the cause, re-execute)
# --------------------------------------------------------------------------------------------


def execute_error(
    spark: SparkSession, catalog: Catalog, apply_name: str, local_transaction_id: str
) -> ErrorExecution:
    """EXECUTE_ERROR: apply one error transaction against the current destination state, under
    the apply's rules (keys, conversions, conflict handlers), atomically and exactly once. On
    success it leaves the error queue; otherwise it stays there with the new error."""
    settings = load_settings(spark, catalog, _check_apply_name(apply_name))
    results = engine.execute_errors(spark, catalog, settings, [local_transaction_id])
    return next(r for r in results if r.local_transaction_id == local_transaction_id)


def execute_all_errors(
    spark: SparkSession, catalog: Catalog, apply_name: str
) -> list[ErrorExecution]:
    """EXECUTE_ALL_ERRORS: every error transaction of the apply, in commit-SCN order, each
    seeing what the previous ones applied; a failure does not stop the others."""
    settings = load_settings(spark, catalog, _check_apply_name(apply_name))
    return engine.execute_errors(spark, catalog, settings, None)


def delete_error(
    spark: SparkSession, catalog: Catalog, apply_name: str, local_transaction_id: str
) -> None:
    """DELETE_ERROR: drop one error transaction from the queue without applying it."""
    settings = load_settings(spark, catalog, _check_apply_name(apply_name))
    engine.delete_errors(spark, catalog, settings, [local_transaction_id])


def delete_all_errors(spark: SparkSession, catalog: Catalog, apply_name: str) -> list[str]:
    """DELETE_ALL_ERRORS: drop every error transaction of the apply; returns their ids."""
    settings = load_settings(spark, catalog, _check_apply_name(apply_name))
    return engine.delete_errors(spark, catalog, settings, None)


# --------------------------------------------------------------------------------------------
# Instantiation
# --------------------------------------------------------------------------------------------


def _export_columns(
    apply_name: str, table: DestinationTable, export: DataFrame, where: str
) -> list[Column]:
    """The export's columns, matched by name case-insensitively, typed like typed_value."""
    by_name: dict[str, T.StructField] = {}
    for field in export.schema.fields:
        upper = field.name.upper()
        if upper in by_name:
            raise _fail(
                apply_name,
                where,
                f"export columns {by_name[upper].name!r} and {field.name!r} clash",
            )
        by_name[upper] = field
    definition = table.definition
    known = {name.upper() for name in definition.column_names}
    unknown = [f.name for f in export.schema.fields if f.name.upper() not in known]
    if unknown:
        raise _fail(
            apply_name,
            where,
            f"unknown column(s) {unknown} in the export (not in {definition.qualified_name})",
        )
    missing = [
        column.name
        for column in definition.columns
        if not column.nullable and column.name.upper() not in by_name
    ]
    if missing:
        raise _fail(apply_name, where, f"the export lacks NOT NULL column(s) {missing}")
    selected = []
    for column in definition.columns:
        spark_type = column.oracle_type.spark_type()
        source = by_name.get(column.name.upper())
        if source is None:
            value = F.lit(None).cast(spark_type)
        elif isinstance(source.dataType, T.StringType):
            value = typed_value(column, F.col(quote(source.name)))
        else:
            value = F.col(quote(source.name)).cast(spark_type)
        selected.append(value.alias(column.name))
    return selected


def instantiate(
    spark: SparkSession,
    catalog: Catalog,
    apply_name: str,
    source_database: str,
    object_name: str,
    instantiation_scn: int,
    export_path: Path | None = None,
    export_format: str = "parquet",
) -> None:
    """Create the destination table, load an initial copy from an export (Parquet, CSV with a
    header, JSON) into it if given (only into an empty table), then set its instantiation SCN."""
    settings = load_settings(spark, catalog, apply_name)
    where = f"INSTANTIATE {object_name} from {source_database}"
    table = _find_table(settings, source_database, object_name, where)
    _check_scn(settings.apply_name, instantiation_scn, where)
    if table.ignore_scn is not None and instantiation_scn < table.ignore_scn:
        raise _fail(
            settings.apply_name,
            where,
            f"the instantiation SCN cannot be set below the object's ignore SCN "
            f"({instantiation_scn} < {table.ignore_scn})",
        )
    fmt = export_format.strip().lower()
    if export_path is not None and fmt not in EXPORT_FORMATS:
        raise _fail(
            settings.apply_name,
            where,
            f"unsupported export format {export_format!r} (one of {list(EXPORT_FORMATS)})",
        )
    ensure_destination_tables(spark, catalog, replace(settings, tables=(table,)))
    if export_path is not None:
        destination = catalog.silver_table(table.silver_table)
        if not spark.table(destination).limit(1).isEmpty():
            raise _fail(
                settings.apply_name,
                where,
                f"destination table {destination} is not empty: refusing to load an initial copy",
            )
        reader = spark.read.format(fmt)
        if fmt == "csv":
            reader = reader.option("header", "true")
        try:
            export = reader.load(str(export_path))
        except Exception as error:
            raise _fail(
                settings.apply_name, where, f"cannot read export {export_path}: {error}"
            ) from None
        rows = export.select(*_export_columns(settings.apply_name, table, export, where))
        engine.load_initial_copy(spark, catalog, table, rows)
    set_table_instantiation_scn(
        spark, catalog, apply_name, source_database, object_name, instantiation_scn
    )
