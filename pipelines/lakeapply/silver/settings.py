"""The effective settings of an apply process: typed, frozen, validated in one place.

They come from ``lakeapply.yml`` (declarative) and from the DBMS_APPLY_ADM-like API (imperative) and
live in the Delta dictionary tables; the engine and the tests' reference applier both read this form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TypeVar

from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.errors import ConfigurationError


class CommitSerialization(StrEnum):
    FULL = "FULL"
    DEPENDENT_TRANSACTIONS = "DEPENDENT_TRANSACTIONS"


class ConflictResolution(StrEnum):
    """Oracle's prebuilt update conflict handlers."""

    OVERWRITE = "OVERWRITE"
    DISCARD = "DISCARD"
    MAXIMUM = "MAXIMUM"
    MINIMUM = "MINIMUM"


@dataclass(frozen=True)
class UpdateConflictHandler:
    """SET_UPDATE_CONFLICT_HANDLER: a column group resolved by one method."""

    method: ConflictResolution
    column_list: tuple[str, ...]
    resolution_column: str

    def __post_init__(self) -> None:
        if self.resolution_column not in self.column_list:
            raise ConfigurationError(
                f"update conflict handler: resolution column {self.resolution_column!r} "
                f"must be one of the column list {list(self.column_list)}"
            )


class TransformationKind(StrEnum):
    """Oracle's declarative rule-based transformations on the columns of row LCRs
    (DBMS_STREAMS_ADM.DELETE_COLUMN, RENAME_COLUMN, ADD_COLUMN, KEEP_COLUMNS)."""

    DELETE_COLUMN = "DELETE COLUMN"
    RENAME_COLUMN = "RENAME COLUMN"
    ADD_COLUMN = "ADD COLUMN"
    KEEP_COLUMNS = "KEEP COLUMNS"
    # On the LCR's object, not its columns (DBMS_STREAMS_ADM.RENAME_SCHEMA / RENAME_TABLE): they
    # run before the LCR is routed to its destination table.
    RENAME_SCHEMA = "RENAME SCHEMA"
    RENAME_TABLE = "RENAME TABLE"


class ValueImage(StrEnum):
    """Which column images of a row LCR a transformation acts on (Oracle's VALUE_TYPE)."""

    NEW = "NEW"
    OLD = "OLD"
    BOTH = "*"


@dataclass(frozen=True)
class ColumnTransformation:
    """One step of a table's declarative transformations, run on its row LCRs in step order
    after the rules and before keys, conversions and conflicts (reference: dequeue, rule-based
    transformations, dependency computation, handlers)."""

    kind: TransformationKind
    # DELETE/ADD: (column,); RENAME COLUMN/SCHEMA: (from, to); KEEP: the kept ones;
    # RENAME TABLE: (from owner, from name, to owner, to name)
    columns: tuple[str, ...]
    value_type: ValueImage = ValueImage.BOTH
    value: str | None = None  # ADD COLUMN: a constant, written as an LCR value
    expression: str | None = None  # ADD COLUMN: Spark SQL over the LCR's fields instead
    data_type: str = "VARCHAR2"  # ADD COLUMN: the data_type the added value carries


class DmlOperation(StrEnum):
    """The operations a DML handler is set for (SET_DML_HANDLER's operation_name): DEFAULT
    handles every operation that has no handler of its own."""

    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    LOB_UPDATE = "LOB_UPDATE"
    DEFAULT = "DEFAULT"


# The row LCR command types each operation handles.
DML_OPERATION_COMMANDS = {
    DmlOperation.INSERT: ("INSERT",),
    DmlOperation.UPDATE: ("UPDATE",),
    DmlOperation.DELETE: ("DELETE",),
    DmlOperation.LOB_UPDATE: ("LOB WRITE", "LOB TRIM", "LOB ERASE"),
}


@dataclass(frozen=True)
class DmlHandler:
    """SET_DML_HANDLER / ADD_STMT_HANDLER: replaces the default apply of a table's row LCRs of
    one operation.

    Set-based: the handler gets a DataFrame of those LCRs (the contract's columns) and returns
    the LCRs to execute in their place, changed or not; an LCR it leaves out is handled without
    being executed, and an ``error_message`` it sets fails the LCR's transaction (ORA-20000).
    A procedure handler is a Python callable named ``package.module:function``; a statement
    handler is a Spark SQL query that reads the LCRs as ``{lcrs}``. An operation has at most one
    procedure handler and any number of statement handlers (each named): each gets the original
    LCRs, and what they all return is executed, in :attr:`execution_order`.
    """

    operation: DmlOperation
    user_procedure: str | None = None
    statement: str | None = None
    handler_name: str | None = None  # a statement handler's name (DBA_APPLY_DML_HANDLERS)

    @property
    def handler_type(self) -> str:
        return "STMT HANDLER" if self.statement is not None else "PROCEDURE HANDLER"

    @property
    def label(self) -> str:
        return self.user_procedure or self.handler_name or "statement handler"

    @property
    def execution_order(self) -> tuple[int, str]:
        """Oracle runs an operation's handlers "in any order"; lakeapply fixes one: the
        procedure handler first, then the statement handlers by name."""
        return (0, "") if self.statement is None else (1, self.handler_name or "")


@dataclass(frozen=True)
class ErrorHandler:
    """SET_DML_HANDLER(error_handler => TRUE): gets a second chance at a table's row LCRs of one
    operation that raised an error (after any update conflict handler failed to resolve it).

    Set-based like a DML handler: a Python callable ``package.module:function`` gets a
    DataFrame of the failing LCRs, as they were before any DML handler, with the error they
    raised (``raised_error_number``, ``raised_error_message``), and returns the LCRs to execute
    in their place (executed as they are: no DML handler runs on them). An LCR it leaves out
    was handled (its transaction goes on); one that fails again, or comes back with
    ``error_message`` set (ORA-20000), fails its transaction.
    """

    operation: DmlOperation
    user_procedure: str

    @property
    def label(self) -> str:
        return self.user_procedure


AnyHandler = TypeVar("AnyHandler", DmlHandler, ErrorHandler)


def commands_per_handler(
    handlers: Sequence[AnyHandler],
) -> list[tuple[AnyHandler, tuple[str, ...]]]:
    """Each handler with the command types it handles, in execution order: an operation's own
    handlers first, the DEFAULT ones for the operations without one."""
    own = {h.operation for h in handlers if h.operation is not DmlOperation.DEFAULT}
    rest = tuple(
        command
        for operation, commands in DML_OPERATION_COMMANDS.items()
        if operation not in own
        for command in commands
    )
    return [
        (handler, DML_OPERATION_COMMANDS[handler.operation])
        if handler.operation is not DmlOperation.DEFAULT
        else (handler, rest)
        for handler in handlers
        if handler.operation is not DmlOperation.DEFAULT or rest
    ]


@dataclass(frozen=True)
class DestinationTable:
    """One source object applied into one silver table."""

    source_database: str
    definition: TableDefinition
    silver_table: str
    key_columns: tuple[str, ...] = ()  # substitute key (SET_KEY_COLUMNS); empty: none
    instantiation_scn: int | None = None
    ignore_scn: int | None = None
    # COMPARE_OLD_VALUES(..., compare => FALSE): (column, operation) pairs not compared.
    uncompared_columns: frozenset[tuple[str, str]] = frozenset()
    update_conflict_handlers: tuple[UpdateConflictHandler, ...] = ()
    transformations: tuple[ColumnTransformation, ...] = ()
    dml_handlers: tuple[DmlHandler, ...] = ()
    error_handlers: tuple[ErrorHandler, ...] = ()
    # Dropped by a DROP TABLE DDL (rule 10): its row LCRs are errors (ORA-00942) until a
    # CREATE TABLE makes it again. Set from the table_versions dictionary, never declared.
    dropped: bool = False

    @property
    def source_object(self) -> tuple[str, str, str]:
        return (self.source_database, self.definition.owner, self.definition.name)

    @cached_property
    def effective_key(self) -> tuple[str, ...]:
        return self.definition.key_columns(self.key_columns)

    def dml_handler_commands(self) -> list[tuple[DmlHandler, tuple[str, ...]]]:
        """Each DML handler with the command types it handles, in execution order."""
        ordered = sorted(self.dml_handlers, key=lambda h: h.execution_order)
        return commands_per_handler(ordered)

    def error_handler_for(self, command_type: str) -> ErrorHandler | None:
        """The error handler of an LCR's command type: its operation's own, else DEFAULT."""
        for handler, commands in commands_per_handler(self.error_handlers):
            if command_type in commands:
                return handler
        return None

    def handler_for(self, column: str) -> UpdateConflictHandler | None:
        for handler in self.update_conflict_handlers:
            if column in handler.column_list:
                return handler
        return None


@dataclass(frozen=True)
class ApplyRule:
    """One rule of an apply process's positive or negative rule set (ADD_GLOBAL_RULES,
    ADD_SCHEMA_RULES, ADD_TABLE_RULES): its level is the most specific name it gives. ``tag`` is
    a condition on the LCR's tag: ``"NULL"``, ``"NOT NULL"`` or a tag's hex value; None: any.
    ``condition`` makes a positive table rule a subset rule (ADD_SUBSET_RULES, silver/subset.py).
    ``transformations`` run on the LCRs this rule selects (a rule-based transformation attached
    to the rule), before the tables' own ones."""

    source_database: str | None = None
    schema: str | None = None
    table: str | None = None
    tag: str | None = None
    condition: str | None = None
    transformations: tuple[ColumnTransformation, ...] = ()

    @property
    def level(self) -> str:
        return "TABLE" if self.table else "SCHEMA" if self.schema else "GLOBAL"


@dataclass(frozen=True)
class ValueDependency:
    """SET_VALUE_DEPENDENCY: one object's columns in a named value dependency. Row LCRs of the
    dependency's objects whose images carry equal values in these columns (positionally, none
    NULL) involve the same row, so under DEPENDENT_TRANSACTIONS their transactions depend on
    each other (a foreign key the destination does not declare, across any number of tables).
    ``owner``/``object_name`` name a destination table definition of the apply process."""

    name: str
    owner: str
    object_name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ObjectDependency:
    """CREATE_OBJECT_DEPENDENCY: transactions that involve the child object (a row LCR of it)
    and transactions that involve the parent object are dependent, whatever the values (the
    later waits for the earlier). Both name destination table definitions of the apply."""

    owner: str
    object_name: str
    parent_owner: str
    parent_name: str


# A later fold pass folds only the groups its new failures touch (seconds at 1M LCRs), while a
# cut defers the rest of the cycle to one that stages and folds it all again: measured on
# 2026-12-06, 1M LCRs with 1% error transactions, 11 passes in one cycle took 131 s, and the
# same cut after 8 passes took 243 s over two cycles.
DEFAULT_MAX_ERROR_PASSES = 16


@dataclass(frozen=True)
class ApplySettings:
    """Everything one apply process needs to apply a cycle."""

    apply_name: str
    source_databases: tuple[str, ...]
    tables: tuple[DestinationTable, ...]
    commit_serialization: CommitSerialization = CommitSerialization.FULL
    disable_on_error: bool = True
    discard_tagged: bool = False  # tag rule: discard LCRs whose tag is not NULL
    # Rule sets (rule 2): the negative one first; None: no positive rule set beyond the tables.
    negative_rules: tuple[ApplyRule, ...] = ()
    positive_rules: tuple[ApplyRule, ...] | None = None
    # (source_database, owner) -> SCN and source_database -> SCN (SET_SCHEMA/GLOBAL_INSTANTIATION_SCN)
    schema_instantiation_scns: tuple[tuple[str, str, int], ...] = ()
    global_instantiation_scns: tuple[tuple[str, int], ...] = ()
    max_cycle_batches: int = 100
    max_error_passes: int = DEFAULT_MAX_ERROR_PASSES
    # Virtual dependencies (DEPENDENT_TRANSACTIONS): what the destination's constraints do not say.
    value_dependencies: tuple[ValueDependency, ...] = ()
    object_dependencies: tuple[ObjectDependency, ...] = ()
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @cached_property
    def _tables_by_source_object(self) -> dict[tuple[str, str, str], DestinationTable]:
        found: dict[tuple[str, str, str], DestinationTable] = {}
        for table in self.tables:
            # The first declared wins, but a live table over a dropped one (a table renamed to
            # the name of a dropped one: ALTER TABLE ... RENAME TO).
            current = found.get(table.source_object)
            if current is None or (current.dropped and not table.dropped):
                found[table.source_object] = table
        return found

    def table_for(self, source_database: str, owner: str, name: str) -> DestinationTable | None:
        return self._tables_by_source_object.get((source_database, owner, name))

    def instantiation_scn_for(self, source_database: str, owner: str, name: str) -> int | None:
        """Table level first; schema and global levels fill in (apply-semantics rule 3)."""
        table = self.table_for(source_database, owner, name)
        if table is not None and table.instantiation_scn is not None:
            return table.instantiation_scn
        for database, schema_owner, scn in self.schema_instantiation_scns:
            if (database, schema_owner) == (source_database, owner):
                return scn
        for database, scn in self.global_instantiation_scns:
            if database == source_database:
                return scn
        return None
