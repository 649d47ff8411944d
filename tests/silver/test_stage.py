"""The stage reads most keys in Spark and the rest in Python: both must read a key alike, or the
LCRs of one row would fold in two groups."""

from __future__ import annotations

import json
import random
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakeapply.contract.lcr import COLUMN_VALUE_SPARK_TYPE
from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.silver.assemble import stage_messages
from lakeapply.silver.fold import key_text
from lakeapply.silver.rowops import ApplyRowError, lcr_keys
from lakeapply.silver.settings import ApplySettings, DestinationTable

KEYED = table_definition_from_dict(
    {
        "owner": "APP",
        "name": "KEYED",
        "columns": [
            {"name": "AMOUNT", "type": "NUMBER(5,2)", "nullable": False},
            {"name": "CODE", "type": "CHAR(3)", "nullable": False},
            {"name": "LABEL", "type": "VARCHAR2(6)"},
            {"name": "TOTAL", "type": "NUMBER"},
            {"name": "NOTE", "type": "VARCHAR2(20)"},
        ],
        "primary_key": ["AMOUNT", "CODE", "LABEL", "TOTAL"],
    },
    "test",
)
DATED = table_definition_from_dict(
    {
        "owner": "APP",
        "name": "DATED",
        "columns": [{"name": "DAY", "type": "DATE"}, {"name": "NOTE", "type": "VARCHAR2(20)"}],
        "primary_key": ["DAY"],
    },
    "test",
)
SETTINGS = ApplySettings(
    "APPLY_T",
    ("DB",),
    (
        DestinationTable("DB", KEYED, "keyed", instantiation_scn=100),
        DestinationTable("DB", DATED, "dated", instantiation_scn=100),
        DestinationTable(
            "DB",
            table_definition_from_dict(
                {
                    "owner": "APP",
                    "name": "GONE",
                    "columns": [{"name": "ID", "type": "NUMBER"}],
                    "primary_key": ["ID"],
                },
                "test",
            ),
            "gone",
            instantiation_scn=100,
            dropped=True,
        ),
        DestinationTable(
            "DB",
            table_definition_from_dict(
                {
                    "owner": "APP",
                    "name": "NEW",
                    "columns": [{"name": "ID", "type": "NUMBER"}],
                    "primary_key": ["ID"],
                },
                "test",
            ),
            "new",
        ),
    ),
)

NUMBERS = [
    "1",
    "1.005",
    "-0",
    "+12.5",
    ".5",
    "5.",
    "1e2",
    "1E-3",
    "999.995",
    "1000",
    "x1",
    "",
    " 7",
    "7 ",
    "\u0663",
    "1e99999",
    "0.000000000001",
    "-999.99",
    None,
]
TEXTS = ["A", "AB", "ABC", "ABCD", "é", "a\u001fb", "", " ", "tab\t", None]


def _values(**columns: str | None) -> list[tuple[str, str, str | None]]:
    return [(name, "VARCHAR2", value) for name, value in columns.items()]


def _executed(spark: SparkSession, lcrs: list[dict[str, Any]]) -> DataFrame:
    rows = [
        (
            lcr.get("silver_table", "keyed"),
            "DB",
            f"T{index}",
            lcr.get("commit_scn", 200),
            1,
            lcr["command_type"],
            "APP",
            lcr.get("object_name", "KEYED"),
            None,
            None,
            lcr.get("old_values"),
            lcr.get("new_values"),
            lcr.get("handler_error"),
            0,
        )
        for index, lcr in enumerate(lcrs)
    ]
    value_array = f"array<{COLUMN_VALUE_SPARK_TYPE.simpleString()}>"
    return spark.createDataFrame(
        rows,
        "silver_table string, source_database_name string, transaction_id string, "
        "commit_scn long, message_number long, command_type string, object_owner string, "
        "object_name string, lob_offset long, lob_operation_size long, "
        f"old_values {value_array}, new_values {value_array}, "
        "handler_error_message string, handler_sequence int",
    )


def _as_python_reads_it(lcr: dict[str, Any]) -> tuple[Any, ...]:
    table = SETTINGS.table_for("DB", "APP", lcr.get("object_name", "KEYED"))
    assert table is not None

    def image(name: str) -> list[dict[str, Any]] | None:
        values = lcr.get(name)
        if values is None:
            return None
        return [{"column_name": c, "data_type": t, "value": v} for c, t, v in values]

    as_dicts = {
        "command_type": lcr["command_type"],
        "old_values": image("old_values"),
        "new_values": image("new_values"),
    }
    try:
        key, moved = lcr_keys(table, as_dicts)
    except ApplyRowError as error:
        return (None, None, error.error_number)
    return (key_text(table, key), None if moved is None else key_text(table, moved), None)


def _random_lcr(draw: random.Random) -> dict[str, Any]:
    def image() -> list[tuple[str, str, str | None]]:
        columns = {
            "AMOUNT": draw.choice(NUMBERS),
            "CODE": draw.choice(TEXTS),
            "LABEL": draw.choice(TEXTS),
            "TOTAL": draw.choice(NUMBERS),
        }
        kept = {name: value for name, value in columns.items() if draw.random() > 0.05}
        values = _values(**kept)
        if draw.random() < 0.03:
            values.append(values[0] if values else ("AMOUNT", "NUMBER", "1"))  # ORA-00957
        return values

    command = draw.choice(["INSERT", "UPDATE", "DELETE"])
    lcr: dict[str, Any] = {"command_type": command}
    if command in ("UPDATE", "DELETE"):
        lcr["old_values"] = image()
    if command in ("INSERT", "UPDATE"):
        new = image()
        lcr["new_values"] = (
            draw.sample(new, draw.randint(0, len(new))) if command == "UPDATE" else new
        )
    return lcr


def test_spark_and_python_read_every_key_alike(spark: SparkSession) -> None:
    draw = random.Random(20261206)
    lcrs = [_random_lcr(draw) for _ in range(600)]
    lcrs += [
        {
            "command_type": "INSERT",
            "object_name": "DATED",
            "silver_table": "dated",
            "new_values": _values(DAY="2026-12-06T10:00:00", NOTE="x"),
        },
        {
            "command_type": "DELETE",  # read in Python: an Arabic-Indic digit three
            "old_values": _values(AMOUNT="1.005", CODE="A", LABEL="é", TOTAL="\u0663"),
        },
        {
            "command_type": "DELETE",  # read in Spark
            "old_values": _values(AMOUNT="1.005", CODE="A", LABEL="é", TOTAL="3"),
        },
    ]
    staged = stage_messages(SETTINGS, _executed(spark, lcrs)).collect()
    by_transaction = {row.transaction_id: row for row in staged}
    assert len(by_transaction) == len(lcrs)
    for index, lcr in enumerate(lcrs):
        row = by_transaction[f"T{index}"]
        found = (row.key_text, row.moved_key_text, row.static_error_number)
        assert found == _as_python_reads_it(lcr), lcr
    python_read, spark_read = (
        by_transaction[f"T{len(lcrs) - 2}"],
        by_transaction[f"T{len(lcrs) - 1}"],
    )
    assert python_read.key_text == spark_read.key_text
    assert json.loads(spark_read.key_text) == ["1.01", "A  ", "é", "3.0000000000"]


def test_routing_instantiation_and_handler_errors_are_decided_before_any_key(
    spark: SparkSession,
) -> None:
    key = _values(AMOUNT="1", CODE="A", LABEL="B", TOTAL="2")
    lcrs: list[dict[str, Any]] = [
        {"command_type": "INSERT", "object_name": "OTHER", "new_values": key},
        {"command_type": "INSERT", "object_name": "GONE", "new_values": _values(ID="1")},
        {"command_type": "INSERT", "object_name": "NEW", "new_values": _values(ID="1")},
        {"command_type": "INSERT", "commit_scn": 100, "new_values": key},
        {"command_type": "INSERT", "new_values": key, "handler_error": "ORA-20000: refused"},
    ]
    staged = {
        row.transaction_id: (row.discarded, row.key_text, row.static_error_message)
        for row in stage_messages(SETTINGS, _executed(spark, lcrs)).collect()
    }
    assert staged == {
        "T0": (
            False,
            None,
            'ORA-00942: table or view does not exist: "APP"."OTHER" of source database "DB" '
            "is no destination table of apply APPLY_T (an LCR a DML or error handler returned)",
        ),
        "T1": (
            False,
            None,
            'ORA-00942: table or view does not exist: "APP"."GONE" was dropped by a DROP '
            "TABLE applied earlier (silver table gone)",
        ),
        "T2": (
            False,
            None,
            'ORA-26687: no instantiation SCN provided for "APP"."NEW" in source database "DB"',
        ),
        "T3": (True, None, None),  # rule 3: at the instantiation SCN, discarded
        "T4": (False, None, "ORA-20000: refused"),
    }
