"""The one semantic validator of apply settings, whoever built them.

``lakeapply.yml`` (``silver/config.py``) and the admin API (``silver/admin.py``) both end in
:class:`ApplySettings`; both run :func:`validate_settings` on the result, so a rule the JSON schema
cannot express (a key column the table lacks, an instantiation SCN below the ignore SCN, a column
in two update conflict handlers, ...) is written once. Each problem is reported at a path of the
``lakeapply.yml`` format (``tables/1/key_columns``), which the YAML loader prefixes with its file
and process (``apply_processes/0/``) and the admin API with the apply process name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from lakeapply.contract.identifiers import validate_oracle_identifier
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.errors import ConfigurationError
from lakeapply.silver.settings import (
    DML_OPERATION_COMMANDS,
    ApplyRule,
    ApplySettings,
    ColumnTransformation,
    DestinationTable,
    TransformationKind,
)
from lakeapply.silver.subset import parse_condition
from lakeapply.silver.transformations import OBJECT_RENAMES

# The operations COMPARE_OLD_VALUES applies to.
OPERATIONS = ("UPDATE", "DELETE")

# (path, message) -> the error to raise; the caller decides how a path is shown.
Fail = Callable[[str, str], ConfigurationError]


def problem_in_apply_process(apply_name: str) -> Fail:
    """The admin API's form: ``apply process 'X': tables/0/key_columns: message``."""

    def fail(where: str, message: str) -> ConfigurationError:
        return ConfigurationError(f"apply process {apply_name!r}: {where}: {message}")

    return fail


def check_scn(scn: int | None, where: str, fail: Fail) -> None:
    if scn is not None and (isinstance(scn, bool) or not isinstance(scn, int) or scn < 0):
        raise fail(where, f"an SCN must be a non-negative integer, not {scn!r}")


def check_source(settings: ApplySettings, source_database: str, where: str, fail: Fail) -> None:
    if source_database not in settings.source_databases:
        raise fail(
            where,
            f"source database {source_database!r} is not one of the apply "
            f"process's source_databases {list(settings.source_databases)}",
        )


def check_columns(
    definition: TableDefinition, columns: Iterable[str], where: str, fail: Fail
) -> None:
    missing = [column for column in columns if column not in definition.column_names]
    if missing:
        raise fail(where, f"unknown column(s) {missing} (not in {definition.qualified_name})")


def validate_settings(settings: ApplySettings, fail: Fail | None = None, at: str = "") -> None:
    """Raise the first problem of ``settings``; ``at`` prefixes every path (and the paths that
    messages name, e.g. the other entry of a duplicate)."""
    fail = fail or problem_in_apply_process(settings.apply_name)
    validate_oracle_identifier(settings.apply_name, "apply process name")
    if not settings.source_databases:
        raise fail(f"{at}source_databases", "an apply process needs a source database")
    if settings.max_cycle_batches < 1 or settings.max_error_passes < 1:
        raise fail(f"{at}parameters", "MAX_CYCLE_BATCHES and MAX_ERROR_PASSES must be >= 1")
    for index, (database, _owner, scn) in enumerate(settings.schema_instantiation_scns):
        where = f"{at}instantiation/schemas/{index}"
        check_source(settings, database, f"{where}/source_database", fail)
        check_scn(scn, f"{where}/scn", fail)
    for index, (database, scn) in enumerate(settings.global_instantiation_scns):
        where = f"{at}instantiation/global/{index}"
        check_source(settings, database, f"{where}/source_database", fail)
        check_scn(scn, f"{where}/scn", fail)
    _validate_rules(settings, fail, at)
    _validate_tables(settings, fail, at)
    _validate_virtual_dependencies(settings, fail, at)


TAG_CONDITION = re.compile(r"NULL|NOT NULL|(?:[0-9A-Fa-f]{2})+")


def _validate_rules(settings: ApplySettings, fail: Fail, at: str) -> None:
    for kind, rules in (
        ("negative", settings.negative_rules),
        ("positive", settings.positive_rules),
    ):
        if rules is not None and kind == "positive" and not rules:
            raise fail(f"{at}rules/positive", "a positive rule set needs at least one rule")
        for index, rule in enumerate(rules or ()):
            where = f"{at}rules/{kind}/{index}"
            if rule.source_database is not None:
                check_source(settings, rule.source_database, f"{where}/source_database", fail)
            if rule.table is not None and rule.schema is None:
                raise fail(f"{where}/table", "a table rule names its schema too")
            if rule.tag is not None and not TAG_CONDITION.fullmatch(rule.tag):
                raise fail(f"{where}/tag", f"{rule.tag!r} is not NULL, NOT NULL or a hex tag")
            _check_rule_actions(rule, kind, where, fail)


def _check_rule_actions(rule: ApplyRule, kind: str, where: str, fail: Fail) -> None:
    """Subset conditions and transformations belong to positive rules (ADD_SUBSET_RULES makes
    positive table rules; a negative rule discards, so there is nothing to transform)."""
    if rule.condition is not None:
        if kind != "positive":
            raise fail(f"{where}/condition", "a subset condition belongs to a positive rule")
        if rule.table is None:
            raise fail(f"{where}/condition", "a subset rule is a table rule: name its table")
        try:
            parse_condition(rule.condition)
        except ConfigurationError as error:
            raise fail(f"{where}/condition", str(error)) from None
    if rule.transformations and kind != "positive":
        raise fail(f"{where}/transformations", "transformations belong to a positive rule")
    for number, step in enumerate(rule.transformations):
        names = step.columns if step.kind in OBJECT_RENAMES else ()
        for name in names:
            try:
                validate_oracle_identifier(name, "renamed schema or table")
            except ConfigurationError as error:
                raise fail(f"{where}/transformations/{number}", str(error)) from None
        _check_add_column(step, f"{where}/transformations/{number}", fail)


def _validate_tables(settings: ApplySettings, fail: Fail, at: str) -> None:
    silver_tables: dict[str, int] = {}
    source_objects: dict[tuple[str, str, str], int] = {}
    for index, table in enumerate(settings.tables):
        where = f"{at}tables/{index}"
        check_source(settings, table.source_database, f"{where}/source_database", fail)
        if table.silver_table in silver_tables:
            # Consolidation (N sources -> one table) is allowed for the same source table only.
            first = settings.tables[silver_tables[table.silver_table]]
            if (first.definition, first.key_columns) != (table.definition, table.key_columns):
                raise fail(
                    f"{where}/silver_table",
                    f"duplicate silver_table {table.silver_table!r} "
                    f"(also {at}tables/{silver_tables[table.silver_table]}): one silver table "
                    "can only consolidate the same source table, with the same definition and "
                    "key columns, from several source databases",
                )
        silver_tables.setdefault(table.silver_table, index)
        database, owner, name = table.source_object
        if table.source_object in source_objects:
            raise fail(
                f"{where}/source_object",
                f"{owner}.{name} from {database} is listed twice "
                f"(also {at}tables/{source_objects[table.source_object]})",
            )
        source_objects[table.source_object] = index
        definition = table.definition
        check_columns(definition, table.key_columns, f"{where}/key_columns", fail)
        check_scn(table.instantiation_scn, f"{where}/instantiation_scn", fail)
        check_scn(table.ignore_scn, f"{where}/ignore_scn", fail)
        if (
            table.instantiation_scn is not None
            and table.ignore_scn is not None
            and table.instantiation_scn < table.ignore_scn
        ):
            raise fail(
                f"{where}/instantiation_scn",
                f"the instantiation SCN cannot be set below the object's ignore SCN "
                f"({table.instantiation_scn} < {table.ignore_scn})",
            )
        uncompared = sorted(column for column, _ in table.uncompared_columns)
        check_columns(definition, uncompared, f"{where}/compare_old_values", fail)
        bad_operations = sorted({op for _, op in table.uncompared_columns if op not in OPERATIONS})
        if bad_operations:
            raise fail(
                f"{where}/compare_old_values",
                f"unknown operation(s) {bad_operations} (UPDATE or DELETE)",
            )
        handled: dict[str, int] = {}
        for number, handler in enumerate(table.update_conflict_handlers):
            handler_where = f"{where}/update_conflict_handlers/{number}"
            check_columns(definition, handler.column_list, f"{handler_where}/column_list", fail)
            for column in handler.column_list:
                if column in handled:
                    raise fail(
                        f"{handler_where}/column_list",
                        f"column {column!r} is already in update conflict handler "
                        f"{where}/update_conflict_handlers/{handled[column]}",
                    )
                handled[column] = number
        _check_transformations(table, f"{where}/transformations", fail)
        _check_dml_handlers(table, f"{where}/dml_handlers", fail)
        _check_error_handlers(table, f"{where}/error_handlers", fail)


USER_PROCEDURE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)


def _check_dml_handlers(table: DestinationTable, where: str, fail: Fail) -> None:
    """Per operation, at most one procedure handler (a callable named
    ``package.module:function``) and any number of statement handlers (Spark SQL over
    ``{lcrs}``), each statement handler with its own name (ADD_STMT_HANDLER's handler_name)."""
    seen: dict[tuple[str, str, str], int] = {}
    for number, handler in enumerate(table.dml_handlers):
        handler_where = f"{where}/{number}"
        if (handler.user_procedure is None) == (handler.statement is None):
            raise fail(handler_where, "give exactly one of user_procedure and statement")
        if handler.user_procedure is not None and not USER_PROCEDURE.fullmatch(
            handler.user_procedure
        ):
            raise fail(
                f"{handler_where}/user_procedure",
                f"{handler.user_procedure!r} is not a Python callable named "
                "package.module:function",
            )
        if handler.statement is not None and "{lcrs}" not in handler.statement:
            raise fail(
                f"{handler_where}/statement",
                "the statement must read the LCRs as {lcrs} (e.g. SELECT * FROM {lcrs})",
            )
        operation = handler.operation.value
        if handler.statement is None:
            identity = (operation, "PROCEDURE HANDLER", "")
            problem = f"already has a procedure DML handler for {operation}"
        else:
            identity = (operation, "STMT HANDLER", handler.handler_name or "")
            problem = (
                f"already has a statement handler named {handler.handler_name!r} for {operation}"
                if handler.handler_name
                else f"already has an unnamed statement handler for {operation} (name each of "
                "an operation's statement handlers: handler_name)"
            )
        if identity in seen:
            raise fail(
                f"{handler_where}/operation",
                f"{table.definition.qualified_name} {problem} ({where}/{seen[identity]})",
            )
        seen[identity] = number


def _check_error_handlers(table: DestinationTable, where: str, fail: Fail) -> None:
    """One error handler per operation, a callable named ``package.module:function``, and
    never with a procedure DML handler for the same operation (Oracle refuses the pair:
    reference 002, "You cannot have a procedure DML handler and an error handler
    simultaneously for the same operation on the same table")."""
    operations: dict[str, int] = {}
    for number, handler in enumerate(table.error_handlers):
        handler_where = f"{where}/{number}"
        if not USER_PROCEDURE.fullmatch(handler.user_procedure):
            raise fail(
                f"{handler_where}/user_procedure",
                f"{handler.user_procedure!r} is not a Python callable named "
                "package.module:function",
            )
        operation = handler.operation.value
        if operation in operations:
            raise fail(
                f"{handler_where}/operation",
                f"{table.definition.qualified_name} already has an error handler for "
                f"{operation} ({where}/{operations[operation]})",
            )
        operations[operation] = number
    procedures = {
        command: handler
        for handler, commands in table.dml_handler_commands()
        if handler.user_procedure is not None
        for command in commands
    }
    for number, handler in enumerate(table.error_handlers):
        for command in DML_OPERATION_COMMANDS.get(handler.operation, ()) or tuple(procedures):
            procedure = procedures.get(command)
            if procedure is not None and table.error_handler_for(command) is handler:
                raise fail(
                    f"{where}/{number}/operation",
                    f"{table.definition.qualified_name} has the procedure DML handler "
                    f"{procedure.user_procedure} ({procedure.operation.value}) for {command}: "
                    "a procedure DML handler and an error handler cannot be set for the same "
                    "operation (use the DML handler to handle its errors, or a statement "
                    "handler)",
                )


def _check_transformations(table: DestinationTable, where: str, fail: Fail) -> None:
    """What a step produces must exist at the destination (what it removes or renames is a
    source column, which the destination may lack: that is what transformations are for)."""
    for number, step in enumerate(table.transformations):
        step_where = f"{where}/{number}"
        if step.kind is TransformationKind.RENAME_COLUMN:
            check_columns(
                table.definition, step.columns[1:], f"{step_where}/rename_column/to", fail
            )
        elif step.kind is TransformationKind.ADD_COLUMN:
            check_columns(table.definition, step.columns, f"{step_where}/add_column/column", fail)
        elif step.kind in OBJECT_RENAMES:
            raise fail(
                step_where,
                f"{step.kind.value} decides the destination table, so it runs before routing: "
                "attach it to a positive rule (rules/positive/N/transformations)",
            )
        _check_add_column(step, step_where, fail)


def _check_add_column(step: ColumnTransformation, where: str, fail: Fail) -> None:
    if (
        step.kind is TransformationKind.ADD_COLUMN
        and step.value is not None
        and step.expression is not None
    ):
        raise fail(f"{where}/add_column", "give either a constant value or an expression, not both")


def _definition_named(
    settings: ApplySettings, owner: str, name: str, where: str, fail: Fail
) -> TableDefinition:
    for table in settings.tables:
        if (table.definition.owner, table.definition.name) == (owner, name):
            return table.definition
    raise fail(where, f"{owner}.{name} is not a destination table of the apply process")


def _validate_virtual_dependencies(settings: ApplySettings, fail: Fail, at: str) -> None:
    """SET_VALUE_DEPENDENCY / CREATE_OBJECT_DEPENDENCY: objects the apply process has, columns
    they have; one column list per object in a value dependency (Oracle's restriction), the
    same number of columns for every object of it; no object its own parent."""
    seen: dict[tuple[str, str, str], int] = {}
    widths: dict[str, int] = {}
    for index, value in enumerate(settings.value_dependencies):
        where = f"{at}virtual_dependencies/value/{index}"
        validate_oracle_identifier(value.name, "value dependency name")
        definition = _definition_named(
            settings, value.owner, value.object_name, f"{where}/object", fail
        )
        if not value.columns or len(set(value.columns)) != len(value.columns):
            raise fail(f"{where}/columns", "a value dependency needs distinct columns")
        check_columns(definition, value.columns, f"{where}/columns", fail)
        key = (value.name, value.owner, value.object_name)
        if key in seen:
            raise fail(
                f"{where}/object",
                f"value dependency {value.name} already has columns for {value.owner}."
                f"{value.object_name} ({at}virtual_dependencies/value/{seen[key]})",
            )
        seen[key] = index
        if widths.setdefault(value.name, len(value.columns)) != len(value.columns):
            raise fail(
                f"{where}/columns",
                f"every object of value dependency {value.name} lists "
                f"{widths[value.name]} column(s), as its first one does",
            )
    pairs: set[tuple[str, str, str, str]] = set()
    for index, dependency in enumerate(settings.object_dependencies):
        where = f"{at}virtual_dependencies/object/{index}"
        _definition_named(
            settings, dependency.owner, dependency.object_name, f"{where}/object", fail
        )
        _definition_named(
            settings, dependency.parent_owner, dependency.parent_name, f"{where}/parent", fail
        )
        pair = (
            dependency.owner,
            dependency.object_name,
            dependency.parent_owner,
            dependency.parent_name,
        )
        if pair[:2] == pair[2:]:
            raise fail(where, "an object cannot depend on itself")
        if pair in pairs:
            raise fail(where, "this object dependency is declared twice")
        pairs.add(pair)
