"""Error handlers (spec rule 7; reference 002, "Error handler but no relevant update conflict
handler"): a second chance for a row LCR that raised an error.

Oracle calls a table's error handler for the operation of an LCR that raised an error (any
error but one an update conflict handler resolved); if the handler does not raise, the apply
assumes it did what was needed and goes on with the transaction; if it raises, the transaction
is rolled back and queued. lakeapply does the same set-based, inside the fold passes
(``silver/fold_passes.py``): when a pass proves a transaction's first error, and the failing
LCR's table has an error handler for its operation, the handler is called once with a
DataFrame of every such LCR of that pass (never per row on the driver):

* it gets the LCRs as they were before any DML handler (reference 002: "the error handler gets
  the original row LCR"), with ``raised_error_number`` and ``raised_error_message``;
* the LCRs it returns are executed in place of the failing ones, as they are (no DML handler
  runs on them), and the fold runs again; one that fails again fails its transaction with that
  error (the handler is not called twice for one LCR);
* an LCR it leaves out was handled: its transaction goes on;
* an LCR returned with ``error_message`` set raises ORA-20000 with that message.

Errors that are not a row LCR's own are never handled: no instantiation SCN (ORA-26687), a
dropped table (ORA-00942), a late COMMIT. Handlers run again when EXECUTE_ERROR re-executes
a queued transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeapply.errors import ApplyError
from lakeapply.silver.assemble import STAGE_INPUT_COLUMNS, fold_input_for, stage_messages
from lakeapply.silver.cycle_state import Cycle, CycleInput, materialize
from lakeapply.silver.dml_handlers import (
    HANDLER_SEQUENCE,
    call_handler,
    executed_lcrs,
    handler_text,
    routed_to_their_tables,
)
from lakeapply.silver.settings import ApplySettings, DestinationTable, ErrorHandler

RAISED_ERROR_NUMBER = "raised_error_number"
RAISED_ERROR_MESSAGE = "raised_error_message"
# Not an error of executing the row LCR: the apply raises it before any handler could run.
NOT_HANDLED = frozenset({26687, 942})
MESSAGE_ID = ("source_database_name", "transaction_id", "message_number")
MessageId = tuple[str, str, int]


@dataclass(frozen=True)
class ErrorHandling:
    """The cycle's input with the handled LCRs replaced, and every message handled so far."""

    inputs: CycleInput
    handled: frozenset[MessageId]


def has_error_handlers(settings: ApplySettings) -> bool:
    return any(table.error_handlers for table in settings.tables)


def handle_errors(
    cycle: Cycle, inputs: CycleInput, errors: list[Any], handled: frozenset[MessageId]
) -> ErrorHandling | None:
    """Run the error handlers of ``errors`` (proven first errors of their transactions, fold
    ERROR rows); None when none of them has a handler to run."""
    settings = cycle.settings
    candidates = {
        (str(e.source_database_name), str(e.transaction_id), int(e.message_number)): e
        for e in errors
        if e.message_number is not None and int(e.error_number) not in NOT_HANDLED
    }
    candidates = {message: error for message, error in candidates.items() if message not in handled}
    if not candidates or not has_error_handlers(settings):
        return None
    failing = materialize(
        cycle.spark.createDataFrame(
            [
                (*message, int(error.error_number), str(error.error_message))
                for message, error in candidates.items()
            ],
            f"source_database_name string, transaction_id string, message_number long, "
            f"{RAISED_ERROR_NUMBER} long, {RAISED_ERROR_MESSAGE} string",
        )
        # as the messages number them (the join keeps this side's type)
        .withColumn(
            "message_number",
            F.col("message_number").cast(inputs.messages.schema["message_number"].dataType),
        )
        .join(inputs.messages, list(MESSAGE_ID))
    )
    calls: dict[tuple[DestinationTable, ErrorHandler], list[MessageId]] = {}
    source_object = ("object_owner", "object_name")
    for row in failing.select(*MESSAGE_ID, *source_object, "command_type").collect():
        # Its source object's table: sources may share a silver table, not their handlers.
        table = settings.table_for(row.source_database_name, row.object_owner, row.object_name)
        handler = None if table is None else table.error_handler_for(str(row.command_type))
        if table is not None and not table.dropped and handler is not None:
            message = (row.source_database_name, row.transaction_id, int(row.message_number))
            calls.setdefault((table, handler), []).append(message)
    if not calls:
        return None
    executed_columns = (*STAGE_INPUT_COLUMNS, "old_values", "new_values")
    replacements = []
    for (table, handler), messages in calls.items():
        given = failing.join(_message_frame(cycle, messages), list(MESSAGE_ID), "left_semi")
        cycle.progress(f"{handler_text(handler, table)}: {len(messages)} failing LCR(s)")
        returned = call_handler(handler, table, given)
        replacements.append(
            routed_to_their_tables(
                executed_lcrs(returned, handler, table, inputs.messages.schema, executed_columns),
                settings,
            ).withColumn(HANDLER_SEQUENCE, F.lit(0))
        )
    executed = replacements[0]
    for part in replacements[1:]:
        executed = executed.unionByName(part)
    handled_now = [message for messages in calls.values() for message in messages]
    executed = materialize(executed)
    _check_one_per_message(executed, cycle, handled_now)
    restaged = stage_messages(settings, executed)
    staged = materialize(
        inputs.staged.join(
            _message_frame(cycle, handled_now), list(MESSAGE_ID), "left_anti"
        ).unionByName(restaged)
    )
    fold_input, bounds, buckets = fold_input_for(cycle, staged)
    return ErrorHandling(
        replace(inputs, staged=staged, fold_input=fold_input, bounds=bounds, buckets=buckets),
        handled | frozenset(handled_now),
    )


def _message_frame(cycle: Cycle, messages: list[MessageId]) -> DataFrame:
    return cycle.spark.createDataFrame(
        messages, "source_database_name string, transaction_id string, message_number long"
    )


def _check_one_per_message(executed: DataFrame, cycle: Cycle, given: list[MessageId]) -> None:
    """An error handler executes at most one LCR per destination table in place of each it was
    given (the fixed LCR, a row of a history table, ...), and none in place of another message
    (it would change another transaction)."""
    wrong = (
        executed.groupBy(*MESSAGE_ID, "silver_table")
        .count()
        .join(
            _message_frame(cycle, given).withColumn("given", F.lit(True)), list(MESSAGE_ID), "left"
        )
        .where((F.col("count") > 1) | F.col("given").isNull())
        .limit(3)
        .collect()
    )
    if wrong:
        shown = ", ".join(
            f"{row.source_database_name}/{row.transaction_id} message {row.message_number} "
            f"({row['count']} LCR(s) of {row.silver_table}"
            f"{'' if row.given else ', not one it was given'})"
            for row in wrong
        )
        raise ApplyError(
            "an error handler returned more than one LCR of one destination table for a message "
            f"it was given, or an LCR of a message it was not given: {shown}; return at most one "
            "LCR per failing LCR and table, and keep its source_database_name, transaction_id "
            "and message_number"
        )
