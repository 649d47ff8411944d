"""The engine's error message texts (DBA_APPLY_ERROR.ERROR_MESSAGE), one per error it raises on
a row LCR. The differential compares error numbers and positions only; the texts are pinned here:
each names the Oracle error, the table and the key, as Oracle's messages do."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lakeapply.silver.rowops import ApplyRowError, apply_row_lcr
from lakeapply.testing import TransactionBuilder, destination, table_definition, txn

ACCOUNT = destination(
    table_definition(
        "APP.ACCOUNT",
        {
            "ID": "NUMBER(6)",
            "HOLDER": "VARCHAR2(5)",
            "BALANCE": "NUMBER(4,2)",
            "STATUS": "VARCHAR2(4)",
        },
        primary_key=["ID"],
        not_null=["STATUS"],
    ),
    source="DB",
    silver_table="account",
)
STORED = {"ID": Decimal(1), "HOLDER": "Ann", "BALANCE": Decimal("1.00"), "STATUS": "OPEN"}


def one(change: TransactionBuilder) -> dict[str, Any]:
    """The one row LCR of ``change``."""
    [lcr] = change.open()
    return lcr


A = "APP.ACCOUNT"
T = txn("DB", tables=ACCOUNT)


@pytest.mark.parametrize(
    ("lcr", "message"),
    [
        (
            one(T.insert(A, ID=1, STATUS="OPEN")),
            "ORA-00001: unique constraint (APP.ACCOUNT) violated, key (ID)=(1)",
        ),
        (
            one(T.update(A, old={"ID": 2}, new={"HOLDER": "Bo"})),
            "ORA-26787: The row with key (ID)=(2) does not exist in table APP.ACCOUNT",
        ),
        (
            one(T.delete(A, ID=1, HOLDER="Zed")),
            "ORA-26786: A row with key (ID)=(1) exists but has conflicting column(s) HOLDER "
            "in table APP.ACCOUNT",
        ),
        (
            one(T.insert(A, ID=3, STATUS=None)),
            'ORA-01400: cannot insert NULL into ("APP"."ACCOUNT"."STATUS"), key (ID)=(3)',
        ),
        (
            one(T.update(A, old={"ID": 1}, new={"STATUS": None})),
            'ORA-01407: cannot update ("APP"."ACCOUNT"."STATUS") to NULL, key (ID)=(1)',
        ),
        (
            one(T.insert(A, ID=3, NICK="x", STATUS="OPEN")),
            'ORA-00904: "NICK": invalid identifier, table APP.ACCOUNT, key (ID)=(3)',
        ),
        (
            one(T.insert(A, ID=3, HOLDER="toolong", STATUS="OPEN")),
            'ORA-12899: value too large for column "HOLDER" (actual: 7, maximum: 5), '
            "table APP.ACCOUNT, key (ID)=(3)",
        ),
        (
            one(T.insert(A, HOLDER="Ann", STATUS="OPEN")),
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
