"""The transaction builder of lakeapply.testing: pure Python, no Spark."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lakeapply.testing import (
    InvalidLcrError,
    ScnClock,
    apply_settings,
    table_definition,
    txn,
    typed,
    validate_lcr,
    write_jsonl,
)

PUBLISHED_SCHEMA = Path(__file__).parents[2] / "schemas" / "lcr.schema.json"
EMP = table_definition(
    "HR.EMP",
    {"ID": "NUMBER(6)", "NAME": "VARCHAR2(20)", "CODE": "CHAR(3)", "HIRED": "DATE"},
    primary_key=["ID"],
)


def values(lcr: dict[str, Any], image: str) -> dict[str, tuple[str, Any]]:
    """column -> (data_type, value) of one image of a row LCR."""
    return {c["column_name"]: (c["data_type"], c["value"]) for c in lcr[image]}


def test_every_lcr_the_builder_emits_matches_the_published_json_schema() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(PUBLISHED_SCHEMA.read_text()))
    clock = ScnClock()
    open_part = txn(clock=clock).insert("HR.EMP", ID=9, NAME="Open")
    lcrs = [
        *txn(clock=clock, tables=EMP, tag="0A", attributes={"username": "HR", "thread#": 1})
        .insert("HR.EMP", ID=1, NAME="Ann", CODE="A", HIRED=date(2020, 1, 2))
        .update("HR.EMP", old={"ID": 1, "NAME": "Ann"}, new={"NAME": None})
        .delete("HR.EMP", ID=1, NAME=None, CODE="A", HIRED=date(2020, 1, 2))
        .commit(),
        *txn(clock=clock, commit_scn_on_records=True).insert("HR.EMP", ID=2).commit(),
        *txn(clock=clock).insert("HR.EMP", {"ODD NAME": b"\x01"}).rollback(),
        *open_part.open(),
    ]

    assert [lcr["command_type"] for lcr in lcrs] == [
        *("INSERT", "UPDATE", "DELETE", "COMMIT", "INSERT", "COMMIT", "INSERT", "ROLLBACK"),
        "INSERT",
    ]
    for lcr in lcrs:
        validator.validate(lcr)


def test_a_transaction_started_at_an_scn_numbers_its_lcrs_and_commits_after_them() -> None:
    done = (
        txn(source="DB1", scn=100, clock=ScnClock())
        .insert("HR.EMP", ID=1)
        .update("HR.EMP", old={"ID": 1}, new={"NAME": "B"})
        .delete("HR.EMP", ID=1)
        .commit()
    )

    assert [lcr["scn"] for lcr in done] == [100, 101, 102, 103]
    assert (done.state, done.commit_scn, done.source) == ("COMMITTED", 103, "DB1")
    assert {lcr["transaction_id"] for lcr in done} == {done.transaction_id}
    assert {lcr["source_database_name"] for lcr in done} == {"DB1"}


def test_transactions_built_side_by_side_interleave_on_their_shared_clock() -> None:
    clock = ScnClock(start=500)
    first, second = txn(clock=clock), txn(clock=clock)

    first.insert("HR.EMP", ID=1)
    second.insert("HR.EMP", ID=2)
    second_done = second.commit()
    first_done = first.commit()

    assert [lcr["scn"] for lcr in first_done] == [500, 503]
    assert [lcr["scn"] for lcr in second_done] == [501, 502]
    assert first_done.transaction_id != second_done.transaction_id
    positions = [lcr["position"] for lcr in (*first_done, *second_done)]
    assert sorted(positions) == [positions[i] for i in (0, 2, 3, 1)]  # the order of the calls


def test_an_explicit_scn_moves_the_clock_past_it() -> None:
    clock = ScnClock(start=10)
    txn(clock=clock).insert("HR.EMP", ID=1, scn=900).commit(scn=950)

    later = txn(clock=clock).insert("HR.EMP", ID=2).commit()

    assert [lcr["scn"] for lcr in later] == [951, 952]


def test_a_rollback_ends_the_transaction_and_nothing_can_follow_it() -> None:
    builder = txn(clock=ScnClock()).insert("HR.EMP", ID=1)

    rolled_back = builder.rollback()

    assert [lcr["command_type"] for lcr in rolled_back] == ["INSERT", "ROLLBACK"]
    assert (rolled_back.state, rolled_back.commit_scn) == ("ROLLED_BACK", None)
    with pytest.raises(InvalidLcrError, match="already ended"):
        builder.insert("HR.EMP", ID=2)


def test_an_open_transaction_is_taken_in_parts_and_committed_later() -> None:
    builder = txn(clock=ScnClock(), scn=40).insert("HR.EMP", ID=1)

    first_part = builder.open()
    rest = builder.insert("HR.EMP", ID=2).commit()

    assert (first_part.state, [lcr["scn"] for lcr in first_part]) == ("OPEN", [40])
    assert [lcr["command_type"] for lcr in rest] == ["INSERT", "COMMIT"]
    assert [lcr["scn"] for lcr in rest] == [41, 42]
    assert first_part.transaction_id == rest.transaction_id


def test_with_commit_scn_on_records_every_lcr_carries_the_commit_scn() -> None:
    done = txn(clock=ScnClock(), scn=7, commit_scn_on_records=True).insert("HR.EMP", ID=1).commit()

    assert [lcr["commit_scn"] for lcr in done] == [8, 8]


def test_python_values_are_sent_in_the_contract_text_forms() -> None:
    [insert] = (
        txn(clock=ScnClock())
        .insert(
            "HR.EMP",
            N=7,
            D=Decimal("1.50"),
            F=0.1,
            B=True,
            S="x",
            TS=datetime(2026, 1, 2, 3, 4, 5),
            DT=date(2026, 1, 2),
            RAW=b"\x0a\xff",
            IDS=timedelta(days=-1, seconds=1),
            NOTHING=None,
        )
        .open()
    )

    assert values(insert, "new_values") == {
        "N": ("NUMBER", "7"),
        "D": ("NUMBER", "1.50"),
        "F": ("NUMBER", "0.1"),
        "B": ("NUMBER", "1"),
        "S": ("VARCHAR2", "x"),
        "TS": ("TIMESTAMP", "2026-01-02T03:04:05"),
        "DT": ("DATE", "2026-01-02T00:00:00"),
        "RAW": ("RAW", "0AFF"),
        "IDS": ("INTERVAL DAY TO SECOND", "-0 23:59:59.000000"),
        "NOTHING": ("VARCHAR2", None),
    }


def test_declared_column_types_win_over_the_python_types() -> None:
    builder = txn(clock=ScnClock(), tables=apply_settings(EMP), types={"HR.EMP": {"ID": "FLOAT"}})

    [insert] = builder.insert(
        "HR.EMP",
        ID=1,
        CODE="AB",
        HIRED="2020-01-02T00:00:00",
        NAME=typed("NVARCHAR2(20)", "Zoë"),
        NOTE=5,
        types={"NOTE": "VARCHAR2(10)"},
    ).open()

    assert values(insert, "new_values") == {
        "ID": ("NUMBER", "1"),  # FLOAT is a NUMBER to an LCR
        "CODE": ("CHAR", "AB"),
        "HIRED": ("DATE", "2020-01-02T00:00:00"),
        "NAME": ("NVARCHAR2", "Zoë"),
        "NOTE": ("VARCHAR2", "5"),
    }


def test_an_update_sends_the_old_and_the_new_image() -> None:
    [update] = (
        txn(clock=ScnClock()).update("HR.EMP", old={"ID": 1, "NAME": "A"}, new={"NAME": "B"}).open()
    )

    assert values(update, "old_values") == {"ID": ("NUMBER", "1"), "NAME": ("VARCHAR2", "A")}
    assert values(update, "new_values") == {"NAME": ("VARCHAR2", "B")}
    assert "new_values" not in txn(clock=ScnClock()).delete("HR.EMP", ID=1).open().lcrs[0]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: txn(clock=ScnClock()).insert("EMP", ID=1), "OWNER.NAME"),
        (
            lambda: txn(clock=ScnClock(), transaction_id="T1").insert("HR.EMP", ID=1),
            "transaction_id",
        ),
        (lambda: txn(clock=ScnClock()).insert("HR.EMP", ID=typed("NUMBER", [1])), "cannot send"),
        (lambda: typed("SDO_GEOMETRY", "x"), "no LCR data type"),
    ],
    ids=["table-without-owner", "bad-transaction-id", "unsendable-value", "unknown-type"],
)
def test_what_the_contract_does_not_allow_is_refused_when_built(build: Any, message: str) -> None:
    with pytest.raises(InvalidLcrError, match=message):
        build()


def test_validate_lcr_names_the_field_that_breaks_the_contract() -> None:
    commit = {"source_database_name": "DB", "command_type": "COMMIT", "transaction_id": "1.2.3"}

    with pytest.raises(InvalidLcrError, match="'scn' is a required property"):
        validate_lcr(commit)
    with pytest.raises(InvalidLcrError, match=r"^LCR scn: '12' is not of type 'integer'"):
        validate_lcr({**commit, "scn": "12"})


def test_write_jsonl_writes_one_validated_line_per_lcr(tmp_path: Path) -> None:
    clock = ScnClock()
    done = txn(clock=clock).insert("HR.EMP", ID=1).commit()
    no_scn = {"source_database_name": "ORCL", "command_type": "COMMIT", "transaction_id": "9.9.9"}
    hand_written: dict[str, Any] = {**no_scn, "scn": 5}

    with pytest.raises(InvalidLcrError):
        write_jsonl(tmp_path / "bad.jsonl", no_scn)
    path = write_jsonl(tmp_path / "landing" / "a.jsonl", [done, hand_written])

    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [*done.lcrs, hand_written]
    assert done.to_jsonl() == "".join(line + "\n" for line in lines[:2])


def test_lob_pieces_name_the_row_by_its_key_and_one_lob_column() -> None:
    doc = table_definition(
        "DMS.DOC", {"ID": "NUMBER(6)", "BODY": "NCLOB", "SCAN": "BLOB"}, primary_key=["ID"]
    )
    write, trim, erase, blob, _ = (
        txn(scn=10, tables=doc)
        .lob_write("DMS.DOC", {"ID": 1}, "BODY", "piece", offset=3)
        .lob_trim("DMS.DOC", {"ID": 1}, "BODY", size=2)
        .lob_erase("DMS.DOC", {"ID": 1}, "BODY", offset=1, size=1)
        .lob_write("DMS.DOC", {"ID": 1}, "SCAN", b"\x0a", offset=1)
        .commit()
    )

    assert [lcr["command_type"] for lcr in (write, trim, erase)] == [
        "LOB WRITE",
        "LOB TRIM",
        "LOB ERASE",
    ]
    assert values(write, "new_values") == {"ID": ("NUMBER", "1"), "BODY": ("NCLOB", "piece")}
    assert (write["lob_offset"], write["lob_information"]) == (3, "LAST_LOB_CHUNK")
    assert values(trim, "new_values")["BODY"] == ("NCLOB", None)
    assert trim["lob_operation_size"] == 2 and "lob_offset" not in trim
    assert (erase["lob_offset"], erase["lob_operation_size"]) == (1, 1)
    assert values(blob, "new_values")["SCAN"] == ("BLOB", "0A")
    assert "old_values" not in write


def test_a_lob_piece_without_declared_types_is_a_clob_for_text_and_a_blob_for_bytes() -> None:
    text, data, _ = (
        txn()
        .lob_write("X.T", {"ID": 1}, "C", "abc", offset=1)
        .lob_write("X.T", {"ID": 1}, "B", b"\x00", offset=1)
        .commit()
    )
    assert values(text, "new_values")["C"] == ("CLOB", "abc")
    assert values(data, "new_values")["B"] == ("BLOB", "00")


def test_a_ddl_is_its_own_transaction_with_the_statement_text() -> None:
    alter = (
        txn("ORCL", scn=500)
        .ddl("HR.EMP", "alter table hr.emp add (nickname varchar2(30))")
        .commit()
    )

    ddl, commit = alter.lcrs
    assert (ddl["command_type"], ddl["object_owner"], ddl["object_name"]) == (
        "ALTER TABLE",
        "HR",
        "EMP",
    )
    assert (ddl["object_type"], ddl["current_schema"], ddl["scn"]) == ("TABLE", "HR", 500)
    assert ddl["ddl_text"] == "alter table hr.emp add (nickname varchar2(30))"
    assert (commit["command_type"], commit["scn"]) == ("COMMIT", 501)
