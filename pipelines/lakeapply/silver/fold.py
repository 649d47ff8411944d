"""The fold: what the changes of one cycle do to the rows they touch, one key group at a time.

Runs on the executors (``applyInPandas`` over buckets of key groups). A key group is every change
to one destination key, or to a whole table in a cycle where some update moves rows between keys.
Within a group, transactions are replayed in CSCN order and each one's LCRs in message order,
against the group's current destination rows; a transaction that fails in the group is rolled back
there. Transactions known to fail (``failed``) are still evaluated, to find their first failing
message, then always rolled back: the engine's passes (fold_passes.py) make that set exact.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from lakeapply.silver.rowops import (
    ApplyRowError,
    Key,
    Row,
    apply_row_lcr,
    from_spark_text,
    to_canonical_text,
)
from lakeapply.silver.settings import ApplySettings, DestinationTable

TransactionId = tuple[str, str]  # (source database, transaction id)
Position = tuple[int, str, str]  # (commit SCN, source database, transaction id): apply order

FOLD_OUTPUT_SCHEMA = (
    "kind string, silver_table string, key_text string, action string, row_json string, "
    "source_database_name string, transaction_id string, commit_scn long, message_number long, "
    "error_number long, error_message string, group_id string"
)

_MISSING = object()


class _JournalRows(dict[Key, Row]):
    """Rows that remember their value before the current transaction, to roll it back."""

    def __init__(self, rows: dict[Key, Row]) -> None:
        super().__init__(rows)
        self.journal: dict[Key, Any] = {}

    def __setitem__(self, key: Key, value: Row) -> None:
        self.journal.setdefault(key, self.get(key, _MISSING))
        super().__setitem__(key, value)

    def __delitem__(self, key: Key) -> None:
        self.journal.setdefault(key, self.get(key, _MISSING))
        super().__delitem__(key)

    def commit(self) -> None:
        self.journal.clear()

    def rollback(self) -> None:
        for key, value in self.journal.items():
            if value is _MISSING:
                super().pop(key, None)
            else:
                super().__setitem__(key, value)
        self.journal.clear()


@dataclass(frozen=True)
class FoldPlan:
    """What one pass assumes: the transactions known to fail, and where the cycle is cut."""

    settings: ApplySettings
    failed: frozenset[TransactionId]
    cut: Position | None  # the last transaction processed this cycle; later ones wait
    # DEPENDENT_TRANSACTIONS: transactions that wait for an aborting one they depend on. Every
    # later transaction of a group with a held one is held too (silver/dependent.py).
    held: frozenset[TransactionId] = frozenset()


def _key_of(table: DestinationTable, key_text: str) -> Key:
    texts = json.loads(key_text)
    return tuple(
        from_spark_text(table.definition.column(column), text)
        for column, text in zip(table.effective_key, texts, strict=True)
    )


def key_text(table: DestinationTable, key: Key) -> str:
    """The canonical JSON text of a key (what Spark joins and groups on), written as Spark's
    ``to_json`` writes it: the stage reads most keys in Spark (``silver/stage.py``)."""
    return json.dumps(
        [
            to_canonical_text(table.definition.column(column), value)
            for column, value in zip(table.effective_key, key, strict=True)
        ],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _row_json(table: DestinationTable, row: Row) -> str:
    return json.dumps({c.name: to_canonical_text(c, row[c.name]) for c in table.definition.columns})


def _fold_group(
    plan: FoldPlan, table: DestinationTable, records: list[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """Apply one key group's LCRs, transaction by transaction in commit order (rule 4), to the
    group's current destination rows: the rows that changed and the errors."""
    initial = _initial_rows(table, records)
    rows = _JournalRows(dict(initial))
    out: list[tuple[Any, ...]] = []
    for position, transaction in _transactions_in_commit_order(records).items():
        if plan.cut is not None and position > plan.cut:
            break
        if (position[1], position[2]) in plan.held:
            continue
        error = _apply_transaction(plan, table, rows, position, transaction)
        if error is not None:
            out.append(error)
        _, database, transaction_id = position
        # Rule 8: all or nothing per transaction.
        if error is not None or (database, transaction_id) in plan.failed:
            rows.rollback()
        else:
            rows.commit()
    out.extend(_changed_rows(table, initial, rows))
    return out


def _initial_rows(table: DestinationTable, records: list[dict[str, Any]]) -> dict[Key, Row]:
    columns = table.definition.columns
    initial: dict[Key, Row] = {}
    for record in records:
        if record["kind"] == "ROW":
            texts = json.loads(record["row_json"])
            initial[_key_of(table, record["key_text"])] = {
                c.name: from_spark_text(c, texts.get(c.name)) for c in columns
            }
    return initial


def _transactions_in_commit_order(
    records: list[dict[str, Any]],
) -> dict[Position, list[dict[str, Any]]]:
    messages = sorted(
        (record for record in records if record["kind"] == "LCR"),
        key=lambda r: (
            r["commit_scn"],
            r["source_database_name"],
            r["transaction_id"],
            r["message_number"],
            # several handlers of one operation each execute LCRs for one message
            _integer(r.get("handler_sequence")) or 0,
        ),
    )
    transactions: dict[Position, list[dict[str, Any]]] = {}
    for message in messages:
        position = (
            int(message["commit_scn"]),
            str(message["source_database_name"]),
            str(message["transaction_id"]),
        )
        transactions.setdefault(position, []).append(message)
    return transactions


def _apply_transaction(
    plan: FoldPlan,
    table: DestinationTable,
    rows: _JournalRows,
    position: Position,
    transaction: list[dict[str, Any]],
) -> tuple[Any, ...] | None:
    """Apply one transaction's LCRs of this group to ``rows``; its first error, or None."""
    _, database, transaction_id = position
    for message in transaction:
        if message["discarded"]:
            continue
        try:
            if message["static_error_number"] is not None:
                raise ApplyRowError(
                    int(message["static_error_number"]), str(message["static_error_message"])
                )
            lcr = {
                "command_type": message["command_type"],
                "old_values": json.loads(message["old_json"]) if message["old_json"] else None,
                "new_values": json.loads(message["new_json"]) if message["new_json"] else None,
                "lob_offset": _integer(message.get("lob_offset")),
                "lob_operation_size": _integer(message.get("lob_operation_size")),
            }
            # A silver table fed by several sources: each source's own settings apply.
            lcr_table = plan.settings.table_for(
                database, message["object_owner"], message["object_name"]
            )
            apply_row_lcr(lcr_table or table, rows, lcr)
        except ApplyRowError as error:
            return (
                "ERROR",
                table.silver_table,
                None,
                None,
                None,
                database,
                transaction_id,
                position[0],
                int(message["message_number"]),
                error.error_number,
                error.text,
            )
    return None


def _integer(value: Any) -> int | None:
    """A nullable long column crosses Arrow as a float (1.0) when the batch holds a NULL."""
    return None if value is None else int(value)


def _changed_rows(
    table: DestinationTable, initial: dict[Key, Row], rows: _JournalRows
) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for key in set(initial) | set(rows):
        before, after = initial.get(key), rows.get(key)
        if before == after:
            continue
        text = key_text(table, key)
        if after is None:
            out.append(("ROW", table.silver_table, text, "DELETE", None) + (None,) * 6)
        else:
            # INSERT: no destination row had the key when the cycle read them (the write may
            # append such rows instead of merging them, silver/write.py).
            action = "INSERT" if before is None else "UPSERT"
            out.append(
                ("ROW", table.silver_table, text, action, _row_json(table, after)) + (None,) * 6
            )
    return out


def batch_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of an Arrow batch as dicts, NULL as None (pandas turns a NULL long into NaN).

    Column-wise conversion: several times faster than ``to_dict("records")`` plus a NaN check
    per value, and this runs for every LCR of a cycle.
    """
    names = [str(name) for name in frame.columns]
    columns = []
    for name in names:
        values = frame[name].tolist()
        if frame[name].dtype.kind == "f":
            values = [None if math.isnan(value) else value for value in values]
        columns.append(values)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def fold_bucket(plan: FoldPlan, bucket: pd.DataFrame) -> pd.DataFrame:
    """Fold every key group of one bucket (the applyInPandas function)."""
    tables = {table.silver_table: table for table in plan.settings.tables}
    out: list[tuple[Any, ...]] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in batch_records(bucket):
        groups.setdefault((str(record["silver_table"]), str(record["group_id"])), []).append(record)
    for (silver_table, group_id), records in groups.items():
        # The group goes with each output row: a later pass folds again only some groups.
        out.extend(
            (*row, group_id) for row in _fold_group(plan, tables[str(silver_table)], records)
        )
    columns = [field.split()[0] for field in FOLD_OUTPUT_SCHEMA.split(", ")]
    return pd.DataFrame.from_records(out, columns=columns)


def fold_function(plan: FoldPlan) -> Any:
    def run(bucket: pd.DataFrame) -> pd.DataFrame:
        return fold_bucket(plan, bucket)

    return run
