"""DDL in a cycle (rules 9 and 10): barriers, DDL transactions, versioned table definitions.

A committed DDL transaction routed to the apply is a barrier: the cycle applies everything
committed before it, then the DDL transaction alone in its own cycle (``ddl_barrier``), so LCRs
before an ADD COLUMN apply without the column and LCRs after it with it. ``apply_ddl_transaction``
parses each statement (``silver/ddl.py``, sqlglot's Oracle dialect), changes the Delta table
(ADD / DROP / RENAME / MODIFY column, TRUNCATE, CREATE TABLE, DROP TABLE) and appends the new
table definition version to the dictionary; a DDL it cannot apply goes to the error queue with
its ORA- number, one it need not apply (COMMENT, GRANT, ...) is counted as ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote, sql_string_literal
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.runtime.catalog import ensure_delta_table
from lakeapply.silver import dictionary
from lakeapply.silver.cycle_state import (
    COMMIT_ORDER,
    DROP_RECORDED_CRASH_POINT,
    Cycle,
    CycleInput,
    FoldOutcome,
    append_rows,
    at_or_before,
    is_position,
    latest_version,
    materialize,
)
from lakeapply.silver.ddl import (
    CREATE_TABLE_AS_SELECT,
    NAME_IN_USE,
    NO_INSTANTIATION_SCN,
    RENAME_TABLE,
    TABLE_NOT_FOUND,
    UNIMPLEMENTED,
    DdlError,
    DdlStatement,
    created_silver_table,
    definition_json,
    new_definition,
    parse_ddl,
    stored_values_checks,
)
from lakeapply.silver.fold import FOLD_OUTPUT_SCHEMA, Position
from lakeapply.silver.layout import cluster_by_clause, clustering_columns, unquoted_column
from lakeapply.silver.rules import passes_rules
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.silver.transactions import TRANSACTION_KEY, without_copies


def _routed_ddl(lcrs: DataFrame, settings: ApplySettings) -> DataFrame:
    return lcrs.where((F.col("lcr_kind") == "DDL") & passes_rules(settings))


def ddl_barrier(
    cycle: Cycle, lcrs: DataFrame, committed: DataFrame
) -> tuple[DataFrame, Position | None, bool, frozenset[tuple[str, str]]]:
    """Rule 9: a DDL transaction is a barrier. The cycle keeps the committed transactions
    before the first DDL one; when that DDL transaction comes first, it is kept alone (and
    returned). The rest stays in the spill for the next cycle: a loop over DDL barriers,
    which are rare, never over row transactions.

    A transaction made only of DDL that changes no column and no row (rule 10: an index, a
    grant, a comment, a table the apply does not route) is no barrier: nothing can be
    ordered around it. It is processed in the cycle, as IGNORED (the last value returned).
    Classifying needs the statement parsed: the DDL LCRs of the cycle's committed
    transactions (a few; DDL is rare) are read on the driver."""
    committed = materialize(committed)
    ddl_lcrs = (
        _routed_ddl(lcrs, cycle.settings)
        .drop("commit_scn")
        .join(committed.select(*TRANSACTION_KEY, "commit_scn"), list(TRANSACTION_KEY))
        .select(
            *TRANSACTION_KEY,
            "commit_scn",
            "ddl_text",
            "current_schema",
            "object_owner",
            "object_name",
            "base_table_owner",
            "base_table_name",
        )
        .distinct()
        .collect()
    )
    if not ddl_lcrs:
        return committed, None, False, frozenset()
    changes: dict[tuple[str, str], bool] = {}
    positions: dict[tuple[str, str], Position] = {}
    for lcr in ddl_lcrs:
        key = (str(lcr.source_database_name), str(lcr.transaction_id))
        positions[key] = (int(lcr.commit_scn), key[0], key[1])
        try:
            changes_something = not isinstance(ddl_change(cycle.settings, lcr), str)
        except DdlError:
            changes_something = True  # it goes to the error queue, in its own cycle
        changes[key] = changes.get(key, False) or changes_something
    barriers = [positions[key] for key, changes_something in changes.items() if changes_something]
    ignored = frozenset(key for key, changes_something in changes.items() if not changes_something)
    if not barriers:
        return committed, None, False, ignored
    position = min(barriers)
    first = committed.agg(F.min(F.struct(*COMMIT_ORDER)).alias("first")).collect()[0]["first"]
    if (int(first.commit_scn), str(first.source_database_name), str(first.transaction_id)) == (
        position
    ):
        return materialize(committed.where(is_position(position))), position, True, frozenset()
    before = committed.where(at_or_before(position) & ~is_position(position))
    return materialize(before), None, True, ignored


@dataclass(frozen=True)
class DdlFailure:
    """A DDL transaction's error, shaped like a fold error row."""

    source_database_name: str
    transaction_id: str
    commit_scn: int
    message_number: int
    error_number: int
    error_message: str


@dataclass(frozen=True)
class DdlChange:
    """What one DDL LCR does to one destination table."""

    table: DestinationTable
    statement: DdlStatement
    definition: TableDefinition | None  # the new definition (None: no column changes)


def ddl_change(settings: ApplySettings, lcr: Any) -> DdlChange | str:
    """The change a DDL LCR makes, or why it is ignored; raises DdlError as Oracle would."""
    default_owner = lcr.current_schema or lcr.base_table_owner or lcr.object_owner
    statement = parse_ddl(str(lcr.ddl_text or ""), default_owner)
    if statement.kind == "IGNORED":
        return statement.reason
    owner = statement.owner or lcr.base_table_owner or lcr.object_owner
    name = statement.table or lcr.base_table_name or lcr.object_name
    database = str(lcr.source_database_name)
    table = settings.table_for(database, str(owner), str(name))
    if statement.kind == "CREATE TABLE":
        return _create_table_change(settings, lcr, statement, table, database)
    if statement.kind == CREATE_TABLE_AS_SELECT:
        if table is None and settings.positive_rules is None:
            return (
                f"CREATE TABLE {owner}.{name} AS SELECT: not routed (apply "
                f"{settings.apply_name} has no positive rule set; only its declared tables are "
                "applied)"
            )
        scn = settings.instantiation_scn_for(database, str(owner), str(name))
        if scn is not None and int(lcr.commit_scn) <= scn:
            return f"CREATE TABLE {owner}.{name} AS SELECT: commit SCN {lcr.commit_scn} <= {scn}"
        raise DdlError(
            UNIMPLEMENTED,
            f'CREATE TABLE "{owner}"."{name}" AS SELECT is not applied: the rows it copies are '
            "not in the LCR stream (create and load the destination table, declare it in "
            f"lakeapply.yml, then DELETE_ERROR): {lcr.ddl_text}",
        )
    # Without a positive rule set, the declared tables are the apply's only table rules.
    routed = settings.positive_rules is not None
    if table is None and not (routed and statement.kind == "DROP TABLE"):
        return f"{owner}.{name} is not a destination table of apply {settings.apply_name}"
    if table is None or table.dropped:
        raise DdlError(
            TABLE_NOT_FOUND,
            f'table or view does not exist: "{owner}"."{name}" from {database} has no '
            f"destination table in apply {settings.apply_name}"
            + (" (dropped by an earlier DROP TABLE)" if table is not None else ""),
        )
    instantiation_scn = settings.instantiation_scn_for(database, str(owner), str(name))
    if instantiation_scn is not None and int(lcr.commit_scn) <= instantiation_scn:
        # Rule 3 holds for every LCR of the object, DDL included: the copy the destination was
        # instantiated from already has the change.
        return (
            f"{statement.kind} {owner}.{name}: commit SCN {lcr.commit_scn} <= instantiation SCN "
            f"{instantiation_scn}, discarded"
        )
    if statement.kind == "DROP TABLE":
        return DdlChange(table, statement, None)
    if statement.kind == "TRUNCATE":
        return DdlChange(table, statement, None)
    if statement.kind == RENAME_TABLE:
        assert statement.renamed is not None
        taken = settings.table_for(database, str(owner), statement.renamed[1])
        if taken is not None and not taken.dropped:
            raise DdlError(
                NAME_IN_USE,
                f'name is already used by an existing object: "{owner}"."{statement.renamed[1]}" '
                f"from {database} is the destination {taken.silver_table}",
            )
    definition = new_definition(table.definition, statement, table.effective_key)
    return DdlChange(table, statement, definition)


def _create_table_change(
    settings: ApplySettings,
    lcr: Any,
    statement: DdlStatement,
    table: DestinationTable | None,
    database: str,
) -> DdlChange | str:
    """CREATE TABLE (rule 10): a new destination table when the apply's rules route it (the
    DDL LCR passed them; without a positive rule set only declared tables are routed) and an
    instantiation SCN covers it (schema or global level for a new table), as Oracle's apply
    does. Committed at or below that SCN: already in the instantiation, discarded (rule 3)."""
    created = statement.created
    assert created is not None
    owner, name = created.owner, created.name
    if table is not None and not table.dropped:
        raise DdlError(
            NAME_IN_USE,
            f'name is already used by an existing object: "{owner}"."{name}" from {database} '
            f"is destination table {table.silver_table} of apply {settings.apply_name}",
        )
    if table is None and settings.positive_rules is None:
        return (
            f"CREATE TABLE {owner}.{name}: not routed (apply {settings.apply_name} has no "
            "positive rule set; only its declared tables are applied)"
        )
    scn = settings.instantiation_scn_for(database, owner, name)
    if scn is None:
        raise DdlError(
            NO_INSTANTIATION_SCN,
            f'no instantiation SCN provided for "{owner}"."{name}" in source database '
            f'"{database}" (set a schema or global instantiation SCN for a table created by DDL)',
        )
    if int(lcr.commit_scn) <= scn:
        return (
            f"CREATE TABLE {owner}.{name}: commit SCN {lcr.commit_scn} <= instantiation SCN {scn}"
        )
    silver = (
        table.silver_table if table is not None else created_silver_table(database, owner, name)
    )
    used = next((t for t in settings.tables if t.silver_table == silver and t is not table), None)
    if used is not None and not used.dropped:
        raise DdlError(
            NAME_IN_USE,
            f'name is already used by an existing object: silver table {silver} (for "{owner}".'
            f'"{name}") is the destination of {used.definition.qualified_name}',
        )
    if table is None:
        table = DestinationTable(database, created, silver)
    return DdlChange(table, statement, created)


def _ddl_steps(
    change: DdlChange,
    current: T.StructType,
    properties: dict[str, str],
    clustering: tuple[str, ...] = (),
) -> list[str]:
    """The Delta statements that take the destination table from its ``current`` state (its
    schema, properties and liquid clustering columns) to the new definition. What the current
    state already has is left out (a resumed DDL), so the list depends on the state it starts
    from; each step is recognized by its text."""
    steps = _column_steps(change, current, properties)
    if not clustering:  # an unclustered table stays so (``lakeapply optimize`` clusters it)
        return steps
    # Delta drops no clustering column: clustering goes first, and comes back on the new key.
    dropped = set(change.statement.dropped) if change.statement.kind == "DROP" else set()
    dropped |= set(_replaced_columns(change, current)) & set(current.fieldNames())
    unclustered = bool(dropped & set(clustering))
    after = () if unclustered else _renamed(clustering, change.statement.renamed)
    new_table = replace(change.table, definition=change.definition) if change.definition else None
    wanted = clustering_columns(new_table) if new_table is not None else after
    before = ["ALTER TABLE {table} CLUSTER BY NONE"] if unclustered else []
    last = [f"ALTER TABLE {{table}} {cluster_by_clause(wanted)}"] if wanted != after else []
    return before + steps + last


def _renamed(columns: tuple[str, ...], renamed: tuple[str, str] | None) -> tuple[str, ...]:
    """``columns`` after a RENAME COLUMN (Delta renames a clustering column with the column)."""
    if renamed is None:
        return columns
    old, new = renamed
    return tuple(new if column == old else column for column in columns)


def _column_steps(
    change: DdlChange, current: T.StructType, properties: dict[str, str]
) -> list[str]:
    statement = change.statement
    if statement.kind == "TRUNCATE":
        return ["DELETE FROM {table}"]
    replaced = _replaced_columns(change, current)
    steps: list[str] = []
    mapping = properties.get("delta.columnMapping.mode") == "name"
    if (statement.kind in ("DROP", "RENAME") or replaced) and not mapping:
        steps.append("ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    if statement.kind == "ADD":
        added = ", ".join(
            f"{quote(add.column.name)} {add.column.oracle_type.spark_type().simpleString()}"
            for add in statement.added
        )
        steps.append(f"ALTER TABLE {{table}} ADD COLUMNS ({added})")
        for add in statement.added:
            if add.default is not None:
                spark_type = add.column.oracle_type.spark_type().simpleString()
                steps.append(
                    f"UPDATE {{table}} SET {quote(add.column.name)} = "  # noqa: S608 (quoted)
                    f"CAST({sql_string_literal(add.default)} AS {spark_type})"
                )
    elif statement.kind == "DROP":
        dropped = ", ".join(quote(name) for name in statement.dropped)
        steps.append(f"ALTER TABLE {{table}} DROP COLUMNS ({dropped})")
    elif statement.kind == "RENAME":
        assert statement.renamed is not None
        old, new = statement.renamed
        steps.append(f"ALTER TABLE {{table}} RENAME COLUMN {quote(old)} TO {quote(new)}")
    elif statement.kind == "MODIFY":
        steps += _modify_steps(change, current, properties, replaced)
    return steps


def _replaced_columns(change: DdlChange, current: T.StructType) -> list[str]:
    """The columns a MODIFY gives another Spark type that Delta cannot widen to: they were
    checked empty (every value NULL), so each is dropped and added again with the new type,
    in its place (both metadata-only under column mapping, whatever the table's size)."""
    if change.statement.kind != "MODIFY":
        return []
    must_be_empty = {
        check.column
        for check in stored_values_checks(change.table.definition, change.statement)
        if check.max_length is None
    }
    types = {f.name: f.dataType for f in current.fields}
    return [
        column.name
        for column in change.statement.modified
        if column.name in must_be_empty
        and types.get(column.name) != column.oracle_type.spark_type()
    ]


def _modify_steps(
    change: DdlChange, current: T.StructType, properties: dict[str, str], replaced: list[str]
) -> list[str]:
    steps: list[str] = []
    types = {f.name: f.dataType for f in current.fields}
    order = change.table.definition.column_names
    for column in change.statement.modified:
        wanted = column.oracle_type.spark_type().simpleString()
        name = quote(column.name)
        before = change.table.definition.column(column.name).oracle_type
        length = column.oracle_type.length
        if column.oracle_type.name in ("CHAR", "NCHAR") and before.name != column.oracle_type.name:
            # A VARCHAR2 becomes a CHAR of its size: its values are blank-padded, as stored.
            steps.append(
                f"UPDATE {{table}} SET {name} = rpad({name}, {length}, ' ') "  # noqa: S608 (quoted)
                f"WHERE char_length({name}) < {length}"
            )
        if column.name in replaced:
            at = order.index(column.name)
            place = "FIRST" if at == 0 else f"AFTER {quote(order[at - 1])}"
            if column.name in types:
                steps.append(f"ALTER TABLE {{table}} DROP COLUMNS ({name})")
            steps.append(f"ALTER TABLE {{table}} ADD COLUMNS ({name} {wanted} {place})")
        elif types.get(column.name) != column.oracle_type.spark_type():
            if properties.get("delta.enableTypeWidening") != "true":
                steps.append(
                    "ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
                )
            steps.append(f"ALTER TABLE {{table}} ALTER COLUMN {name} TYPE {wanted}")
    return steps


def _step_marker(cycle: Cycle, lcr: Any, step: str) -> str:
    """The Delta commit userMetadata of one DDL step: the cycle, the DDL LCR and the step."""
    return f"{_ddl_marker_prefix(cycle, lcr)}{step}"


def _ddl_marker_prefix(cycle: Cycle, lcr: Any) -> str:
    return f"{cycle.app}:ddl:{cycle.plan.cycle_id}:{lcr.message_number}:"


def _committed_steps(cycle: Cycle, silver: str, lcr: Any) -> set[str]:
    """The markers of this DDL LCR's steps already committed to the table (a resumed cycle)."""
    qualified = cycle.catalog.silver_table(silver)
    planned = cycle.plan.table_versions[silver]
    prefix = _ddl_marker_prefix(cycle, lcr)
    return {
        str(row.userMetadata)
        for row in DeltaTable.forName(cycle.spark, qualified)
        .history()
        .where((F.col("version") > planned) & F.col("userMetadata").startswith(prefix))
        .select("userMetadata")
        .collect()
    }


def _run_ddl_steps(
    cycle: Cycle, qualified: str, lcr: Any, steps: list[str], done: set[str]
) -> None:
    """Each step once: a step's commit is tagged (Delta commit userMetadata) with the cycle,
    the LCR and the step's text, and a resumed cycle skips the steps its first run committed."""
    session = cycle.spark.newSession()
    for step in steps:
        marker = _step_marker(cycle, lcr, step)
        if marker in done:
            continue
        session.conf.set("spark.databricks.delta.commitInfo.userMetadata", marker)
        try:
            session.sql(step.format(table=qualified))
        finally:
            session.conf.unset("spark.databricks.delta.commitInfo.userMetadata")


def apply_ddl_transaction(
    cycle: Cycle, inputs: CycleInput
) -> tuple[CycleInput, FoldOutcome, dict[str, int], int]:
    """A DDL transaction, alone in its cycle: its DDL LCRs change the destination tables
    (Delta ALTER TABLE / DELETE, each step once), then a new definition version is recorded.
    A DDL that fails is an error transaction (with Y, it aborts the apply); one that changes
    no column and no row is IGNORED. Returns the inputs with the DDL LCRs as the transaction's
    messages (for the error queue), the outcome, and the destination versions after it."""
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    messages = _ddl_messages(inputs, settings)
    lcrs = messages.orderBy("message_number").collect()  # one transaction's DDL LCRs
    versions_after = dict(plan.table_versions)
    failed: dict[tuple[str, str], Any] = {}
    outcome = "IGNORED"
    version_rows = []
    current_settings = settings
    for lcr in lcrs:
        try:
            change = ddl_change(current_settings, lcr)
            if isinstance(change, str):
                cycle.progress(f"DDL ignored ({change}): {lcr.ddl_text}")
                continue
            silver = change.table.silver_table
            qualified = catalog.silver_table(silver)
            if change.statement.kind in ("CREATE TABLE", "DROP TABLE"):
                dropped = _create_or_drop_table(cycle, change, lcr)
                if dropped:
                    versions_after.pop(silver, None)
                else:
                    versions_after[silver] = latest_version(spark, qualified)
                    version_rows.append(_version_row(cycle, change.table, lcr, change.definition))
                outcome = "APPLIED"
                current_settings = _with_table(
                    current_settings,
                    replace(
                        change.table,
                        definition=change.definition or change.table.definition,
                        dropped=dropped,
                    ),
                )
                continue
            _alter_destination(cycle, change, lcr)
            versions_after[silver] = latest_version(spark, qualified)
            outcome = "APPLIED"
            if change.definition is not None:
                version_rows.append(_version_row(cycle, change.table, lcr, change.definition))
                current_settings = replace(
                    current_settings,
                    tables=tuple(
                        replace(t, definition=change.definition) if t.silver_table == silver else t
                        for t in current_settings.tables
                    ),
                )
        except DdlError as error:
            failed[(str(lcr.source_database_name), str(lcr.transaction_id))] = DdlFailure(
                str(lcr.source_database_name),
                str(lcr.transaction_id),
                int(lcr.commit_scn),
                int(lcr.message_number),
                error.number,
                error.message,
            )
            break
    if version_rows and not failed:
        append_rows(
            spark.createDataFrame(version_rows, dictionary.TABLE_VERSIONS_SCHEMA),
            catalog.apply_table(dictionary.TABLE_VERSIONS),
            dictionary.TABLE_VERSIONS_SCHEMA,
            f"{cycle.app}:table_versions",
            plan.cycle_id,
        )
    cycle.crash_point("merges", "after the DDL")
    aborted = next(iter(failed.values())) if failed and settings.disable_on_error else None
    empty = spark.createDataFrame([], FOLD_OUTPUT_SCHEMA).where(F.lit(False))
    fold = FoldOutcome(empty, failed, None, 0, aborted, None if failed else outcome)
    return replace(inputs, messages=messages), fold, versions_after, len(version_rows)


def _ddl_messages(inputs: CycleInput, settings: ApplySettings) -> DataFrame:
    """The DDL transaction's routed DDL LCRs, numbered in order: its messages in the error
    queue, like a row transaction's."""
    ddl_lcrs = without_copies(
        _routed_ddl(inputs.lcrs, settings)
        .drop("commit_scn")  # the COMMIT's, as in a row transaction's messages
        .join(inputs.committed.select(*TRANSACTION_KEY, "commit_scn"), list(TRANSACTION_KEY))
    )
    order = Window.partitionBy(*TRANSACTION_KEY).orderBy(
        "scn", F.coalesce("position", F.lit("")), "ingest_batch_id", "source_file", "line_number"
    )
    return materialize(ddl_lcrs.withColumn("message_number", F.row_number().over(order)))


def _check_stored_values(spark: SparkSession, qualified: str, change: DdlChange, lcr: Any) -> None:
    """A MODIFY that Oracle makes only when the stored values allow it (silver/ddl.py
    ``stored_values_checks``): one aggregate over the destination table, then ORA-01439,
    01440 or 01441 for the first column that does not allow it."""
    checks = stored_values_checks(change.table.definition, change.statement)
    if not checks:
        return
    figures = (
        spark.table(qualified)
        .select(
            *[
                (
                    F.max(F.length(F.col(quote(check.column))))
                    if check.max_length is not None
                    else F.count(F.col(quote(check.column)))
                ).alias(f"c{index}")
                for index, check in enumerate(checks)
            ]
        )
        .collect()[0]
    )
    for index, check in enumerate(checks):
        figure = figures[f"c{index}"]
        if check.max_length is not None and figure is not None and figure > check.max_length:
            raise DdlError(
                check.error,
                f"{check.reason} ({check.column} holds a value of length {figure}); "
                f"{lcr.ddl_text} is not applied",
            )
        if check.max_length is None and figure:
            raise DdlError(
                check.error,
                f"{check.reason} ({figure} row(s) hold a value); {lcr.ddl_text} is not applied",
            )


def _alter_destination(cycle: Cycle, change: DdlChange, lcr: Any) -> None:
    """An ALTER TABLE / TRUNCATE on the destination's Delta table, each step once; Delta's
    refusal is reported as an Oracle error (ORA-03001)."""
    silver = change.table.silver_table
    qualified = cycle.catalog.silver_table(silver)
    done = _committed_steps(cycle, silver, lcr)
    if not done:  # else the first run checked the values before its first step
        _check_stored_values(cycle.spark, qualified, change, lcr)
    detail = DeltaTable.forName(cycle.spark, qualified).detail().collect()[0]
    steps = _ddl_steps(
        change,
        cycle.spark.table(qualified).schema,
        dict(detail.properties or {}),
        tuple(unquoted_column(column) for column in detail.clusteringColumns or ()),
    )
    try:
        _run_ddl_steps(cycle, qualified, lcr, steps, done)
    except Exception as error:  # Delta's refusal, reported as an Oracle error
        raise DdlError(
            UNIMPLEMENTED,
            f"{lcr.ddl_text}: the destination {silver} did not take it "
            f"({type(error).__name__}: {str(error).splitlines()[0]})",
        ) from None


def _version_row(
    cycle: Cycle,
    table: DestinationTable,
    lcr: Any,
    definition: TableDefinition | None,
    dropped: bool = False,
) -> tuple[Any, ...]:
    """A ``table_versions`` row: the table's definition after the DDL LCR."""
    return (
        cycle.apply_name,
        table.source_database,
        table.definition.owner,
        table.definition.name,
        table.silver_table,
        int(lcr.commit_scn),
        str(lcr.transaction_id),
        str(lcr.ddl_text),
        definition_json(definition or table.definition, dropped),
        cycle.plan.cycle_id,
    )


def _with_table(settings: ApplySettings, table: DestinationTable) -> ApplySettings:
    """``settings`` with ``table`` in place of the one with its silver table, or added."""
    tables = [t for t in settings.tables if t.silver_table != table.silver_table]
    at = next(
        (i for i, t in enumerate(settings.tables) if t.silver_table == table.silver_table),
        len(tables),
    )
    return replace(settings, tables=(*tables[:at], table, *tables[at:]))


def _create_or_drop_table(cycle: Cycle, change: DdlChange, lcr: Any) -> bool:
    """CREATE TABLE / DROP TABLE on the destination, each safe to run again when a resumed
    cycle repeats it (the dictionary, read as before the cycle, still says what it said).
    A drop is recorded in ``table_versions`` before the Delta table goes: a crash between the
    two leaves a recorded drop that no restart undoes (ensure_destination_tables skips it) and
    the resumed cycle finishes. A create makes the Delta table first; its version row follows
    with the cycle's others. Returns True for a drop."""
    table = change.table
    qualified = cycle.catalog.silver_table(table.silver_table)
    if change.statement.kind == "CREATE TABLE":
        assert change.definition is not None
        ensure_delta_table(
            cycle.spark,
            qualified,
            change.definition.spark_schema(),
            keep_not_null=True,
            cluster_by=clustering_columns(replace(table, definition=change.definition)),
        )
        return False
    append_rows(
        cycle.spark.createDataFrame(
            [_version_row(cycle, table, lcr, None, dropped=True)], dictionary.TABLE_VERSIONS_SCHEMA
        ),
        cycle.catalog.apply_table(dictionary.TABLE_VERSIONS),
        dictionary.TABLE_VERSIONS_SCHEMA,
        f"{cycle.app}:table_versions:drop:{table.silver_table}",
        cycle.plan.cycle_id,
    )
    cycle.crash_point(DROP_RECORDED_CRASH_POINT, "after recording the DROP TABLE, before the drop")
    cycle.spark.sql(f"DROP TABLE IF EXISTS {qualified}")
    return True
