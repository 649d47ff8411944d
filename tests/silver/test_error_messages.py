"""The engine's error message texts (DBA_APPLY_ERROR.ERROR_MESSAGE), one per error it raises on
a row LCR. The differential compares error numbers and positions only; the texts are pinned here:
each names the Oracle error, the table and the key, as Oracle's messages do."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.silver.rowops import ApplyRowError, apply_row_lcr
from lakeapply.silver.settings import DestinationTable

ACCOUNT = DestinationTable(
    source_database="DB",
    definition=table_definition_from_dict(
        {
            "owner": "APP",
            "name": "ACCOUNT",
            "columns": [
                {"name": "ID", "type": "NUMBER(6)"},
                {"name": "HOLDER", "type": "VARCHAR2(5)"},
                {"name": "BALANCE", "type": "NUMBER(4,2)"},
                {"name": "STATUS", "type": "VARCHAR2(4)", "nullable": False},
            ],
            "primary_key": ["ID"],
        },
        "test ACCOUNT",
    ),
    silver_table="account",
    instantiation_scn=0,
)
STORED = {"ID": Decimal(1), "HOLDER": "Ann", "BALANCE": Decimal("1.00"), "STATUS": "OPEN"}


def _values(image: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"column_name": c, "data_type": "VARCHAR2", "value": v} for c, v in image.items()]


def _lcr(command: str, old: dict[str, Any] | None = None, new: dict[str, Any] | None = None) -> Any:
    lcr: dict[str, Any] = {"command_type": command}
    if old is not None:
        lcr["old_values"] = _values(old)
    if new is not None:
        lcr["new_values"] = _values(new)
    return lcr


@pytest.mark.parametrize(
    ("lcr", "message"),
    [
        (
            _lcr("INSERT", new={"ID": "1", "STATUS": "OPEN"}),
            "ORA-00001: unique constraint (APP.ACCOUNT) violated, key (ID)=(1)",
        ),
        (
            _lcr("UPDATE", old={"ID": "2"}, new={"HOLDER": "Bo"}),
            "ORA-26787: The row with key (ID)=(2) does not exist in table APP.ACCOUNT",
        ),
        (
            _lcr("DELETE", old={"ID": "1", "HOLDER": "Zed"}),
            "ORA-26786: A row with key (ID)=(1) exists but has conflicting column(s) HOLDER "
            "in table APP.ACCOUNT",
        ),
        (
            _lcr("INSERT", new={"ID": "3", "STATUS": None}),
            'ORA-01400: cannot insert NULL into ("APP"."ACCOUNT"."STATUS"), key (ID)=(3)',
        ),
        (
            _lcr("UPDATE", old={"ID": "1"}, new={"STATUS": None}),
            'ORA-01407: cannot update ("APP"."ACCOUNT"."STATUS") to NULL, key (ID)=(1)',
        ),
        (
            _lcr("INSERT", new={"ID": "3", "NICK": "x", "STATUS": "OPEN"}),
            'ORA-00904: "NICK": invalid identifier, table APP.ACCOUNT, key (ID)=(3)',
        ),
        (
            _lcr("INSERT", new={"ID": "3", "HOLDER": "toolong", "STATUS": "OPEN"}),
            'ORA-12899: value too large for column "HOLDER" (actual: 7, maximum: 5), '
            "table APP.ACCOUNT, key (ID)=(3)",
        ),
        (
            _lcr("INSERT", new={"HOLDER": "Ann", "STATUS": "OPEN"}),
            "ORA-26688: missing key in LCR: column ID of APP.ACCOUNT",
        ),
    ],
    ids=["00001", "26787", "26786", "01400", "01407", "00904", "12899", "26688"],
)
def test_each_row_error_names_its_table_and_key(lcr: Any, message: str) -> None:
    rows = {(Decimal(1),): dict(STORED)}
    with pytest.raises(ApplyRowError) as raised:
        apply_row_lcr(ACCOUNT, rows, lcr)
    assert raised.value.text == message
    assert raised.value.error_number == int(message[4:9])
