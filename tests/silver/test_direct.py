"""Lone chains decided in Spark (silver/direct.py): the same rows and errors as the fold, and the
fold never sees them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.silver import fold_passes
from lakeapply.silver.assemble import stage_messages
from lakeapply.silver.rowops import ApplyRowError, apply_row_lcr, convert_value, from_spark_text
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition
from tests.silver.test_stage import NUMBERS, TEXTS, _executed

ROWS = table_definition_from_dict(
    {
        "owner": "APP",
        "name": "KEYED",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)", "nullable": False},
            {"name": "AMOUNT", "type": "NUMBER(5,2)", "nullable": False},
            {"name": "CODE", "type": "CHAR(3)"},
            {"name": "LABEL", "type": "VARCHAR2(6)", "default": "NEW"},
            {"name": "DAY", "type": "DATE"},
            {"name": "AT", "type": "TIMESTAMP(6)"},
            {"name": "TOTAL", "type": "NUMBER"},
        ],
        "primary_key": ["ID"],
    },
    "test",
)
SETTINGS = ApplySettings(
    "APPLY_T",
    ("DB",),
    (
        DestinationTable(
            "DB",
            ROWS,
            "keyed",
            instantiation_scn=100,
            uncompared_columns=frozenset({("TOTAL", "UPDATE")}),
        ),
    ),
)
DATETIMES = [
    "2026-12-06T10:00:00",
    "2026-12-06 10:00:00.5",
    "2026-12-06",
    "2026-02-30T10:00:00",
    "2026-12-06T24:00:00",
    "2026-12-06T10:00:00+02:00",
    "20261206",
    "2026-12-06T10:00:00.1234567",
    " 2026-12-06",
    "x",
    None,
]
CHOICES = {
    "ID": ["1", "2", "x"],
    "AMOUNT": NUMBERS,
    "CODE": TEXTS,
    "LABEL": TEXTS,
    "DAY": DATETIMES,
    "AT": DATETIMES,
    "TOTAL": NUMBERS,
}

PLAIN = {  # values Spark reads as rowops does
    "ID": ["1"],
    "AMOUNT": ["1", "1.005", "-999.99", ".5", None],
    "CODE": ["A", "ABC", "é", None],
    "LABEL": ["x", "abcdef", None],
    "DAY": ["2026-12-06T10:00:00", "2026-12-06", None],
    "AT": ["2026-12-06 10:00:00.5", "2026-12-06T10:00:00.123456", None],
    "TOTAL": ["0.000000000001", "12", None],
}


def _random_lcr(draw: random.Random) -> dict[str, Any]:
    def image(key: bool) -> list[tuple[str, str, str | None]]:
        names = [name for name in CHOICES if name == "ID" or draw.random() < 0.7]
        pool = PLAIN if draw.random() < 0.9 else CHOICES
        values = [(name, "VARCHAR2", draw.choice(pool[name])) for name in names]
        if key:
            values[0] = ("ID", "NUMBER", "1")
        if draw.random() < 0.03:
            values.append(("NOPE", "VARCHAR2", "1"))  # ORA-00904
        return values

    command = draw.choice(["INSERT", "UPDATE", "DELETE"])
    lcr: dict[str, Any] = {"command_type": command}
    if command in ("UPDATE", "DELETE"):
        lcr["old_values"] = image(key=True)
    if command in ("INSERT", "UPDATE"):
        new = image(key=True)
        lcr["new_values"] = new if command == "INSERT" else new[1:]
    return lcr


def _as_dicts(values: list[tuple[str, str, str | None]] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    return [{"column_name": c, "data_type": t, "value": v} for c, t, v in values]


def _rowops_outcome(lcr: dict[str, Any]) -> dict[str, Any] | ApplyRowError | None:
    """What rowops makes of the LCR against a row holding its old values: the row after it (None
    for a DELETE), or its error."""
    table = SETTINGS.tables[0]
    old = {c: v for c, _, v in lcr.get("old_values") or []}
    rows: dict[Any, dict[str, Any]] = {}
    try:
        if lcr["command_type"] != "INSERT":
            current = {
                column.name: convert_value(column, old.get(column.name)) for column in ROWS.columns
            }
            rows[(current["ID"],)] = current
        as_dicts = {
            "command_type": lcr["command_type"],
            "old_values": _as_dicts(lcr.get("old_values")),
            "new_values": _as_dicts(lcr.get("new_values")),
        }
        apply_row_lcr(table, rows, as_dicts)
    except ApplyRowError as error:
        return error
    return next(iter(rows.values()), None)


def test_spark_reads_a_lone_change_as_rowops_does_or_leaves_it_to_the_fold(
    spark: SparkSession,
) -> None:
    draw = random.Random(20261206)
    lcrs = [_random_lcr(draw) for _ in range(500)]
    staged = stage_messages(SETTINGS, _executed(spark, lcrs)).collect()
    by_transaction = {row.transaction_id: row for row in staged}
    decided, clean = 0, 0
    for index, lcr in enumerate(lcrs):
        direct = by_transaction[f"T{index}"].direct
        outcome = _rowops_outcome(lcr)
        clean += not isinstance(outcome, ApplyRowError)
        if direct is None:
            continue
        decided += 1
        assert not isinstance(outcome, ApplyRowError), (lcr, outcome)
        columns = ROWS.columns
        if lcr["command_type"] == "INSERT":
            row = {
                c.name: from_spark_text(c, t)
                for c, t in zip(columns, direct["values"], strict=True)
            }
            assert row == outcome, lcr
        elif lcr["command_type"] == "UPDATE":
            sent = {c for c, _, _ in lcr["new_values"]}
            assert [c.name in sent for c in columns] == direct["sent"], lcr
            for column, flag, text in zip(columns, direct["sent"], direct["values"], strict=True):
                if flag:
                    assert outcome is not None and not isinstance(outcome, ApplyRowError)
                    assert from_spark_text(column, text) == outcome[column.name], lcr
        old = {c: v for c, _, v in lcr.get("old_values") or []}
        operation = lcr["command_type"]
        if operation != "INSERT":
            expected = [
                c.name in old and c.name != "ID" and (c.name, operation) != ("TOTAL", "UPDATE")
                for c in columns
            ]
            assert direct["compared"] == expected, lcr
            for column, flag, text in zip(columns, direct["compared"], direct["old"], strict=True):
                if flag:
                    assert from_spark_text(column, text) == convert_value(
                        column, old[column.name]
                    ), lcr
    assert decided > 0.7 * clean  # most changes rowops applies are read in Spark


ACCOUNT = table_definition(
    "BANK.ACCOUNT",
    {"ID": "NUMBER(6)", "BALANCE": "NUMBER(10,2)", "OPENED": "DATE", "CODE": "CHAR(2)"},
    primary_key=["ID"],
)


def _accounts(lakeapply: LakeapplyHarness) -> list[tuple[Any, ...]]:
    return sorted(
        (int(r.ID), float(r.BALANCE), str(r.OPENED), r.CODE)
        for r in lakeapply.silver("BANK.ACCOUNT").collect()
    )


def test_lone_changes_never_reach_the_python_fold_and_conflicts_still_do(
    spark: SparkSession, lakeapply: LakeapplyHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))
    opened = "2026-12-06T10:00:00"
    inserts = [
        lakeapply.txn(transaction_id=f"1.1.{n}")
        .insert("BANK.ACCOUNT", ID=n, BALANCE=10 * n, OPENED=opened, CODE="A")
        .commit()
        for n in (1, 2, 3)
    ]
    lakeapply.run(*inserts)
    real = fold_passes.fold_partition

    def refusing_lone_chains(plan: Any) -> Any:
        fold = real(plan)

        def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            frames = list(batches)
            keys = {key for frame in frames for key in frame["key_text"].dropna()}
            # IDs 1 and 2 change alone and match: Spark decides them
            assert not keys & {'["1"]', '["2"]'}, keys
            yield from fold(iter(frames))

        return run

    monkeypatch.setattr(fold_passes, "fold_partition", refusing_lone_chains)
    changes = [
        lakeapply.txn(transaction_id="2.1.1")
        .update("BANK.ACCOUNT", old={"ID": 1, "BALANCE": 10}, new={"BALANCE": 11})
        .commit(),
        lakeapply.txn(transaction_id="2.1.2")
        .delete("BANK.ACCOUNT", ID=2, BALANCE=20, OPENED=opened, CODE="A")
        .commit(),
        lakeapply.txn(transaction_id="2.1.3")  # a stale old value: ORA-26786, in the fold
        .update("BANK.ACCOUNT", old={"ID": 3, "BALANCE": 99}, new={"BALANCE": 31})
        .commit(),
        lakeapply.txn(transaction_id="2.1.4")
        .insert("BANK.ACCOUNT", ID=4, BALANCE=40, OPENED=opened, CODE="B")
        .commit(),
    ]
    lakeapply.run(*changes)

    assert _accounts(lakeapply) == [
        (1, 11.0, "2026-12-06 10:00:00", "A "),
        (3, 30.0, "2026-12-06 10:00:00", "A "),
        (4, 40.0, "2026-12-06 10:00:00", "B "),
    ]
    errors = [(r.local_transaction_id, r.error_number) for r in lakeapply.error_queue().collect()]
    assert [number for _, number in errors] == [26786]
