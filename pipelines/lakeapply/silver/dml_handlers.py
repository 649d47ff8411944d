"""DML handlers (spec rule 7; reference 002, "DML handler but no relevant update conflict
handler"): a table's row LCRs of one operation go to its handler instead of the default apply.

Oracle calls a handler once per row LCR; lakeapply calls it once per cycle with a DataFrame of
every LCR it handles (set-based: the handler's work is Spark's, never a loop on the driver):

* the LCRs it returns are executed in place of the ones it was given (a changed value, a column
  added or removed, another command type: a DELETE turned into a soft-delete UPDATE, ...), each
  where its original stood in its transaction (the identifying columns must be kept); one that
  names another source object is executed on that object's destination table (a history or
  audit table: :func:`routed_to_their_tables`);
* an LCR it leaves out was handled without being executed (its transaction goes on);
* an LCR it returns with ``error_message`` set raises ORA-20000 with that message: its
  transaction is rolled back and queued, failing at that LCR.

Handlers see only LCRs the apply would execute: after the rules, the rule-based and the table's
transformations and the instantiation-SCN discard, never those of a table without an
instantiation SCN (ORA-26687) or a dropped one (ORA-00942). They run again when EXECUTE_ERROR
re-executes a queued transaction, on its LCRs as queued (before any handler).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.errors import ApplyError, ConfigurationError
from lakeapply.silver.rules import routing_frame
from lakeapply.silver.settings import ApplySettings, DestinationTable, DmlHandler, ErrorHandler

HANDLER_ERROR_NUMBER = 20000
ERROR_MESSAGE = "error_message"  # what a handler sets to raise an error for an LCR
HANDLER_ERROR = "handler_error_message"  # the full ORA-20000 text the stage reports
# Where an executed LCR stands among those executed for one message: 0 for the LCR itself (no
# handler, or an error handler's), n for the n-th handler of its operation in execution order.
HANDLER_SEQUENCE = "handler_sequence"
ROUTED_SILVER_TABLE = "routed_silver_table"


def run_dml_handlers(
    messages: DataFrame, settings: ApplySettings, executed_columns: tuple[str, ...]
) -> DataFrame:
    """``messages`` (the cycle's routed row LCRs) with the handled ones replaced by what their
    handlers return, as ``executed_columns`` plus :data:`HANDLER_ERROR` and
    :data:`HANDLER_SEQUENCE` (an operation's handlers each get the original LCRs)."""
    no_error = F.lit(None).cast("string").alias(HANDLER_ERROR)
    handled: list[DataFrame] = []
    unhandled = messages
    for table in settings.tables:
        instantiation_scn = settings.instantiation_scn_for(*table.source_object)
        if not table.dml_handlers or table.dropped or instantiation_scn is None:
            continue
        database, owner, name = table.source_object
        executed = (
            (F.col("source_database_name") == database)
            & (F.col("object_owner") == owner)
            & (F.col("object_name") == name)
            & (F.col("commit_scn") > instantiation_scn)
        )
        for sequence, (handler, commands) in enumerate(table.dml_handler_commands(), start=1):
            selected = executed & F.col("command_type").isin(*commands)
            returned = call_handler(handler, table, messages.where(selected))
            handled.append(
                routed_to_their_tables(
                    executed_lcrs(returned, handler, table, messages.schema, executed_columns),
                    settings,
                ).withColumn(HANDLER_SEQUENCE, F.lit(sequence))
            )
            unhandled = unhandled.where(~F.coalesce(selected, F.lit(False)))
    result = unhandled.select(*executed_columns, no_error, F.lit(0).alias(HANDLER_SEQUENCE))
    for part in handled:
        result = result.unionByName(part)
    return result


def routed_to_their_tables(executed: DataFrame, settings: ApplySettings) -> DataFrame:
    """A handler's LCRs, each with the silver table of the source object it names.

    A handler may write any destination table of the apply (a history or audit table), as an
    Oracle handler runs SQL on other tables inside the apply's transaction: an LCR it returns
    naming another object is executed on that object's destination, under that table's key,
    types and instantiation SCN, all or nothing with the rest of its transaction. An object
    that is no destination keeps the handled table's silver table, and the stage fails the LCR
    with ORA-00942 (as the SQL of a handler would fail on a table that does not exist).
    """
    source_object = ["source_database_name", "object_owner", "object_name"]
    routing = routing_frame(executed.sparkSession, settings).withColumnRenamed(
        "silver_table", ROUTED_SILVER_TABLE
    )
    return (
        executed.join(F.broadcast(routing), source_object, "left")
        .withColumn("silver_table", F.coalesce(ROUTED_SILVER_TABLE, "silver_table"))
        .drop(ROUTED_SILVER_TABLE)
    )


def handler_text(
    handler: DmlHandler | ErrorHandler, table: DestinationTable, separator: str = " ("
) -> str:
    """How messages name a handler: ``error handler pkg.mod:f (INSERT on "O"."T")``, or with
    ``separator=", "`` inside the parentheses of an ORA-20000 text."""
    kind = "error handler" if isinstance(handler, ErrorHandler) else "DML handler"
    closing = ")" if separator == " (" else ""
    return (
        f"{kind} {handler.label}{separator}{handler.operation.value} on "
        f"{_table_text(table)}{closing}"
    )


def call_handler(
    handler: DmlHandler | ErrorHandler, table: DestinationTable, lcrs: DataFrame
) -> DataFrame:
    """The handler's DataFrame for ``lcrs``; a failing or misbehaving handler is an ApplyError
    (a bug in the handler, not an error of the LCRs: the cycle stops before writing)."""
    where = handler_text(handler, table)
    if isinstance(handler, DmlHandler) and handler.statement is not None:
        try:
            return lcrs.sparkSession.sql(handler.statement, lcrs=lcrs)
        except Exception as error:  # Spark's analysis errors have no common base class
            raise ApplyError(f"{where}: its statement failed: {error}") from error
    function = _procedure(handler, where)
    try:
        returned = function(lcrs)
    except Exception as error:
        raise ApplyError(f"{where} raised {type(error).__name__}: {error}") from error
    if not isinstance(returned, DataFrame):
        raise ApplyError(f"{where} returned {type(returned).__name__}, not a DataFrame")
    return returned


def _procedure(handler: DmlHandler | ErrorHandler, where: str) -> Callable[[DataFrame], Any]:
    module_name, _, function_name = (handler.user_procedure or "").partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(f"{where}: cannot import {module_name!r}: {error}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConfigurationError(f"{where}: {module_name!r} has no function {function_name!r}")
    return cast(Callable[[DataFrame], Any], function)


def executed_lcrs(
    returned: DataFrame,
    handler: DmlHandler | ErrorHandler,
    table: DestinationTable,
    messages: T.StructType,
    executed_columns: tuple[str, ...],
) -> DataFrame:
    """The handler's LCRs as the stage reads them (``executed_columns``, typed as in
    ``messages``, plus :data:`HANDLER_ERROR`); a missing column or a changed type is the
    handler's bug, reported before anything is applied."""
    expected = {field.name: field.dataType for field in messages.fields}
    given = {field.name: field.dataType for field in returned.schema.fields}
    where = handler_text(handler, table)
    missing = [column for column in executed_columns if column not in given]
    if missing:
        raise ApplyError(f"{where} returned LCRs without the column(s) {missing}: keep them")
    changed = [
        f"{column} ({given[column].simpleString()}, not {expected[column].simpleString()})"
        for column in executed_columns
        if given[column].simpleString() != expected[column].simpleString()  # not nullability
    ]
    if changed:
        raise ApplyError(f"{where} changed the type of {changed}")
    if ERROR_MESSAGE in given:
        context = f" ({handler_text(handler, table, ', ')})"
        raised = F.when(
            F.col(ERROR_MESSAGE).isNotNull(),
            F.concat(
                F.lit(f"ORA-{HANDLER_ERROR_NUMBER:05d}: "),
                F.col(ERROR_MESSAGE).cast("string"),
                F.lit(context),
            ),
        )
    else:
        raised = F.lit(None).cast("string")
    return returned.select(
        *(F.col(column).cast(expected[column]).alias(column) for column in executed_columns),
        raised.alias(HANDLER_ERROR),
    )


def _table_text(table: DestinationTable) -> str:
    return f'"{table.definition.owner}"."{table.definition.name}"'
