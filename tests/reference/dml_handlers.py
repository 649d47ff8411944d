"""D21, D22: the reference's own row-at-a-time versions of the DML and error handlers the
tests register by name (``tests.silver.dml_handler_examples``, which the engine calls on
DataFrames). Each takes one row LCR and returns the LCR to execute instead, None (handled, not
executed), or the LCR with ``error_message`` set (the handler raises)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

Lcr = dict[str, Any]
EXAMPLES = "tests.silver.dml_handler_examples"


def _ignore(lcr: Lcr) -> Lcr | None:
    return None


def _refuse_negative_amounts(lcr: Lcr) -> Lcr | None:
    amounts = [v["value"] for v in lcr.get("new_values") or () if v["column_name"] == "AMOUNT"]
    if not amounts or amounts[0] is None:
        return lcr
    try:
        negative = Decimal(str(amounts[0]).strip()) < 0
    except InvalidOperation:  # not a number: the apply's conversion reports it
        return lcr
    return {**lcr, "error_message": f"negative AMOUNT {amounts[0]}"} if negative else lcr


def _note_handled(lcr: Lcr) -> Lcr | None:
    if lcr.get("new_values") is None:
        return lcr
    kept = [v for v in lcr["new_values"] if v["column_name"] != "NOTE"]
    return {
        **lcr,
        "new_values": [*kept, {"column_name": "NOTE", "data_type": "VARCHAR2", "value": "H"}],
    }


def _value_of(lcr: Lcr, column: str) -> Any:
    """The column's new value, else its old one (a DELETE, an UPDATE that leaves it)."""
    for images in ("new_values", "old_values"):
        for value in lcr.get(images) or ():
            if value["column_name"] == column:
                return value["value"]
    return None


def _record_changes(lcr: Lcr) -> list[Lcr]:
    """D23: the LCR as captured, and an INSERT into CHANGES naming it."""
    change = {
        **lcr,
        "command_type": "INSERT",
        "object_name": "CHANGES",
        "old_values": None,
        "new_values": [
            {
                "column_name": "TRANSACTION_ID",
                "data_type": "VARCHAR2",
                "value": lcr["transaction_id"],
            },
            {
                "column_name": "MESSAGE_NUMBER",
                "data_type": "NUMBER",
                "value": str(lcr["message_number"]),
            },
            {"column_name": "ID", "data_type": "NUMBER", "value": _value_of(lcr, "ID")},
            {"column_name": "OPERATION", "data_type": "VARCHAR2", "value": lcr["command_type"]},
        ],
    }
    return [lcr, change]


RowHandler = Callable[[Lcr], Lcr | list[Lcr] | None]

ROW_HANDLERS: dict[str, RowHandler] = {
    f"{EXAMPLES}:ignore": _ignore,
    f"{EXAMPLES}:record_changes": _record_changes,
    f"{EXAMPLES}:refuse_negative_amounts": _refuse_negative_amounts,
    f"{EXAMPLES}:note_handled": _note_handled,
}


def _skip_missing_rows(lcr: Lcr) -> Lcr | None:
    return None if lcr["raised_error_number"] == 26787 else lcr


def _insert_duplicate_as_update(lcr: Lcr) -> Lcr | None:
    if lcr["command_type"] != "INSERT" or lcr["raised_error_number"] != 1:
        return lcr
    values = lcr.get("new_values") or []
    return {
        **lcr,
        "command_type": "UPDATE",
        "old_values": [v for v in values if v["column_name"] == "ID"],
        "new_values": [v for v in values if v["column_name"] != "ID"],
    }


def _apply_without_comparing(lcr: Lcr) -> Lcr | None:
    if lcr["raised_error_number"] != 26786 or lcr.get("old_values") is None:
        return lcr
    return {**lcr, "old_values": [v for v in lcr["old_values"] if v["column_name"] == "ID"]}


def _refuse_with_the_error(lcr: Lcr) -> Lcr | None:
    return {**lcr, "error_message": f"could not apply: {lcr['raised_error_message']}"}


# D22: error handlers get the failing LCR with raised_error_number and raised_error_message.
ROW_ERROR_HANDLERS: dict[str, RowHandler] = {
    f"{EXAMPLES}:skip_missing_rows": _skip_missing_rows,
    f"{EXAMPLES}:insert_duplicate_as_update": _insert_duplicate_as_update,
    f"{EXAMPLES}:apply_without_comparing": _apply_without_comparing,
    f"{EXAMPLES}:refuse_with_the_error": _refuse_with_the_error,
}


def _mirror_negative(lcr: Lcr) -> Lcr | None:
    return {
        **lcr,
        "new_values": [
            {**v, "value": str(-int(Decimal(str(v["value"]).strip())))}
            if v["column_name"] == "ID" and v["value"] is not None
            else v
            for v in lcr.get("new_values") or []
        ],
    }


def _as_captured(lcr: Lcr) -> Lcr | None:
    return lcr


# The statement handlers' Spark SQL (what lakeapply.yml declares and the engine runs): an
# INSERT's copy under the key -ID, and the LCR as captured. Beside each other on one operation
# each gets the original LCR, and both copies are inserted.
MIRROR_NEGATIVE = (
    "SELECT * EXCEPT (new_values), "
    "transform(new_values, v -> CASE WHEN v.column_name = 'ID' AND v.value IS NOT NULL "
    "THEN named_struct('column_name', v.column_name, 'data_type', v.data_type, "
    "'value', CAST(-CAST(trim(v.value) AS DECIMAL(38,0)) AS STRING)) ELSE v END) AS new_values "
    "FROM {lcrs}"
)
AS_CAPTURED = "SELECT * FROM {lcrs}"
STATEMENTS = {"MIRROR_NEGATIVE": MIRROR_NEGATIVE, "AS_CAPTURED": AS_CAPTURED}

# D21: the statement handlers' row versions, by the handler_name the tests give them.
ROW_STATEMENT_HANDLERS: dict[str, RowHandler] = {
    "MIRROR_NEGATIVE": _mirror_negative,
    "AS_CAPTURED": _as_captured,
}
