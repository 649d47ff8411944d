"""The reference applier, one small scenario per rule of apply-semantics.md (and per decision D<n>
of applier.py), plus a check that the differential-test workloads are contract-exact."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from .applier import (
    ApplyRowError,
    ErrorTransaction,
    ReferenceResult,
    convert_value,
    reference_apply,
)
from .config import (
    ApplyProcess,
    Column,
    ConflictHandler,
    Definition,
    Destination,
    apply_process_from_config,
    column_type,
    definition_from_document,
)
from .dml_handlers import STATEMENTS
from .workloads import CHANGES_DEFINITION, Workload, workloads

# The public contract files, read as files (the reference imports nothing from the package).
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
LCR_SCHEMA = json.loads((SCHEMAS / "lcr.schema.json").read_text())
LCR_DATA_TYPES = tuple(LCR_SCHEMA["$defs"]["column_value"]["properties"]["data_type"]["enum"])

DB = "DBS1.EXAMPLE.COM"
DB2 = "DBS2.EXAMPLE.COM"

ACCOUNT = definition_from_document(
    {
        "owner": "APP",
        "name": "ACCOUNT",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)"},
            {"name": "HOLDER", "type": "VARCHAR2(10)"},
            {"name": "BALANCE", "type": "NUMBER(8,2)"},
            {"name": "STATUS", "type": "VARCHAR2(8)", "nullable": False, "default": "OPEN"},
            {"name": "VERSION", "type": "NUMBER"},
            {"name": "OPENED", "type": "DATE"},
        ],
        "primary_key": ["ID"],
    },
)
# No primary key: identified by a substitute key that may hold NULLs.
CONTACT = definition_from_document(
    {
        "owner": "APP",
        "name": "CONTACT",
        "columns": [
            {"name": "ACCOUNT_ID", "type": "NUMBER(6)", "nullable": False},
            {"name": "KIND", "type": "VARCHAR2(5)"},
            {"name": "VALUE", "type": "VARCHAR2(20)"},
        ],
    },
)
AUDIT = definition_from_document(
    {
        "owner": "APP",
        "name": "AUDIT_LOG",
        "columns": [{"name": "ID", "type": "NUMBER"}, {"name": "TEXT", "type": "VARCHAR2(10)"}],
        "primary_key": ["ID"],
    },
)


# ---------------------------------------------------------------------------------------------
# Builders: LCRs exactly as in the contract, settings as the engine gets them.
# ---------------------------------------------------------------------------------------------


def _data_type(table: Definition, column: str) -> str:
    if column in table.column_names:
        name = table.column(column).type.name
        return name if name in LCR_DATA_TYPES else "VARCHAR2"
    return "VARCHAR2"


def values(table: Definition, image: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"column_name": name, "data_type": _data_type(table, name), "value": value}
        for name, value in image.items()
    ]


def row_lcr(
    command: str,
    txid: str,
    scn: int,
    *,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
    table: Definition = ACCOUNT,
    db: str = DB,
    **extra: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "source_database_name": db,
        "command_type": command,
        "transaction_id": txid,
        "scn": scn,
        "object_owner": table.owner,
        "object_name": table.name,
    }
    if old is not None:
        record["old_values"] = values(table, old)
    if new is not None:
        record["new_values"] = values(table, new)
    record.update(extra)
    return record


def insert(txid: str, scn: int, new: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return row_lcr("INSERT", txid, scn, new=new, **kwargs)


def update(
    txid: str, scn: int, old: dict[str, Any], new: dict[str, Any], **kwargs: Any
) -> dict[str, Any]:
    return row_lcr("UPDATE", txid, scn, old=old, new=new, **kwargs)


def delete(txid: str, scn: int, old: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return row_lcr("DELETE", txid, scn, old=old, **kwargs)


def commit(txid: str, scn: int, db: str = DB) -> dict[str, Any]:
    return {
        "source_database_name": db,
        "command_type": "COMMIT",
        "transaction_id": txid,
        "scn": scn,
    }


def rollback(txid: str, scn: int, db: str = DB) -> dict[str, Any]:
    return {
        "source_database_name": db,
        "command_type": "ROLLBACK",
        "transaction_id": txid,
        "scn": scn,
    }


def destination(
    definition: Definition = ACCOUNT,
    *,
    db: str = DB,
    silver_table: str | None = None,
    instantiation_scn: int | None = 0,
    **kwargs: Any,
) -> Destination:
    return Destination(
        source_database=db,
        definition=definition,
        silver_table=silver_table or definition.name.lower(),
        instantiation_scn=instantiation_scn,
        **kwargs,
    )


def apply_settings(
    *tables: Destination,
    schema_instantiation_scns: tuple[tuple[str, str, int], ...] = (),
    global_instantiation_scns: tuple[tuple[str, int], ...] = (),
    **kwargs: Any,
) -> ApplyProcess:
    tables = tables or (destination(),)
    kwargs.setdefault("source_databases", tuple(dict.fromkeys(t.source_database for t in tables)))
    return ApplyProcess(
        apply_name="APPLY1",
        tables=tables,
        schema_scns={(db, owner): scn for db, owner, scn in schema_instantiation_scns},
        global_scns=dict(global_instantiation_scns),
        **kwargs,
    )


def only_error(result: ReferenceResult) -> ErrorTransaction:
    assert len(result.errors) == 1, result.errors
    return result.errors[0]


def accounts(result: ReferenceResult) -> dict[tuple[Any, ...], dict[str, Any]]:
    return result.tables["account"]


ALICE = {"ID": "1", "HOLDER": "Alice", "BALANCE": "10.5", "STATUS": "OPEN", "VERSION": "1"}
BOB = {"ID": "2", "HOLDER": "Bob", "BALANCE": "20", "STATUS": "OPEN", "VERSION": "1"}


# ---------------------------------------------------------------------------------------------
# Rule 1: only committed transactions
# ---------------------------------------------------------------------------------------------


def test_committed_transaction_is_applied_with_values_converted_to_the_column_types() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, {**ALICE, "OPENED": "2013-03-31T23:59:58"}), commit("1.1.1", 101)],
    )
    assert accounts(result) == {
        (Decimal(1),): {
            "ID": Decimal(1),
            "HOLDER": "Alice",
            "BALANCE": Decimal("10.50"),
            "STATUS": "OPEN",
            "VERSION": Decimal("1.0000000000"),
            "OPENED": datetime(2013, 3, 31, 23, 59, 58),
        }
    }
    assert result.applied_transactions == [(DB, "1.1.1")]
    assert result.counters == {
        "received": 2,
        "applied": 1,
        "ignored": 0,
        "rolled_back": 0,
        "errors": 0,
    }
    assert result.low_watermark == result.high_watermark == {DB: 101}
    assert result.oldest_scn == {DB: None}
    assert not result.aborted


def test_rolled_back_transaction_is_discarded_entirely_and_counted() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, ALICE), insert("1.1.1", 101, BOB), rollback("1.1.1", 102)],
    )
    assert accounts(result) == {}
    assert result.counters["rolled_back"] == 1
    assert result.counters["applied"] == 0
    assert result.low_watermark == {DB: None}
    assert result.oldest_scn == {DB: None}


def test_open_transaction_is_not_applied_and_holds_back_the_oldest_scn() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),  # never commits (yet)
            insert("2.2.2", 105, BOB),
            commit("2.2.2", 106),
        ],
    )
    assert list(accounts(result)) == [(2,)]
    assert result.applied_transactions == [(DB, "2.2.2")]
    assert result.low_watermark == {DB: 106}
    assert result.oldest_scn == {DB: 100}
    assert result.counters["received"] == 3


def test_commit_landing_before_its_row_lcrs_still_applies_them() -> None:
    result = reference_apply(apply_settings(), [commit("1.1.1", 101), insert("1.1.1", 100, ALICE)])
    assert list(accounts(result)) == [(1,)]


def test_row_lcrs_carrying_commit_scn_still_wait_for_their_commit() -> None:
    result = reference_apply(apply_settings(), [insert("1.1.1", 100, ALICE, commit_scn=101)])
    assert accounts(result) == {}
    assert result.oldest_scn == {DB: 100}


def test_ddl_lcr_with_commit_scn_is_its_own_committed_transaction() -> None:
    ddl = {
        "source_database_name": DB,
        "command_type": "ALTER TABLE",
        "transaction_id": "3.3.3",
        "scn": 200,
        "commit_scn": 200,
        "object_owner": "APP",
        "object_name": "ACCOUNT",
        "object_type": "TABLE",
        "ddl_text": "ALTER TABLE APP.ACCOUNT ADD (NOTE VARCHAR2(10))",
    }
    result = reference_apply(
        apply_settings(), [insert("1.1.1", 100, ALICE), commit("1.1.1", 101), ddl]
    )
    assert result.ddl == [ddl]
    assert result.applied_transactions == [(DB, "1.1.1"), (DB, "3.3.3")]
    assert accounts(result)[(1,)]["NOTE"] is None  # D16: the added column, NULL
    assert result.low_watermark == {DB: 200}


# ---------------------------------------------------------------------------------------------
# Rule 2: rules and tags
# ---------------------------------------------------------------------------------------------


def test_lcrs_of_objects_without_destination_table_are_skipped_and_are_not_messages() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, {"ID": "9", "TEXT": "hello"}, table=AUDIT),
            insert("1.1.1", 101, ALICE),
            insert("1.1.1", 102, ALICE),  # fails: ORA-00001
            commit("1.1.1", 103),
        ],
    )
    error = only_error(result)
    assert (error.message_number, error.message_count) == (2, 2)
    assert [lcr["object_name"] for lcr in error.lcrs] == ["ACCOUNT", "ACCOUNT"]
    assert "audit_log" not in result.tables


def test_transaction_left_empty_by_the_rules_is_applied_and_advances_the_watermark() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, {"ID": "9", "TEXT": "hello"}, table=AUDIT), commit("1.1.1", 101)],
    )
    assert result.applied_transactions == [(DB, "1.1.1")]
    assert result.counters["ignored"] == 0
    assert result.low_watermark == {DB: 101}


def test_lcrs_from_source_databases_of_other_applies_are_not_received() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, ALICE, db=DB2), commit("1.1.1", 101, db=DB2)],
    )
    assert accounts(result) == {}
    assert result.counters["received"] == 0
    assert result.low_watermark == {DB: None}


@pytest.mark.parametrize(("discard_tagged", "applied_ids"), [(True, [(2,)]), (False, [(1,), (2,)])])
def test_tagged_lcrs_are_discarded_only_when_the_apply_discards_tagged_lcrs(
    discard_tagged: bool, applied_ids: list[tuple[int]]
) -> None:
    result = reference_apply(
        apply_settings(discard_tagged=discard_tagged),
        [insert("1.1.1", 100, ALICE, tag="0A"), insert("1.1.1", 101, BOB), commit("1.1.1", 102)],
    )
    assert sorted(accounts(result)) == applied_ids


# ---------------------------------------------------------------------------------------------
# Rule 3: instantiation SCN
# ---------------------------------------------------------------------------------------------


def test_transactions_committed_at_or_before_the_instantiation_scn_are_discarded() -> None:
    result = reference_apply(
        apply_settings(destination(instantiation_scn=101)),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),  # CSCN == instantiation SCN: in the initial copy
            insert("2.2.2", 102, BOB),
            commit("2.2.2", 103),
        ],
        initial_rows={"account": [ALICE]},
    )
    assert sorted(accounts(result)) == [(1,), (2,)]
    # Rule 11: discarded is processed (counted as applied); only redeliveries are ignored.
    assert (result.counters["ignored"], result.counters["applied"]) == (0, 2)
    assert result.outcomes[(DB, "1.1.1")] == (101, "DISCARDED")
    assert result.applied_transactions == [(DB, "2.2.2")]
    assert result.low_watermark == {DB: 103}


def test_transaction_partly_discarded_by_the_instantiation_scn_is_applied() -> None:
    settings = apply_settings(
        destination(instantiation_scn=500), destination(CONTACT, substitute_key=("ACCOUNT_ID",))
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ALICE),  # discarded: ACCOUNT instantiated at 500
            insert("1.1.1", 101, {"ACCOUNT_ID": "1", "KIND": "MAIL"}, table=CONTACT),
            commit("1.1.1", 102),
        ],
    )
    assert accounts(result) == {}
    assert list(result.tables["contact"]) == [(1,)]
    assert result.counters["applied"] == 1
    assert result.counters["ignored"] == 0


def test_error_transaction_lists_its_messages_discarded_by_the_instantiation_scn_too() -> None:
    settings = apply_settings(
        destination(instantiation_scn=500),
        destination(CONTACT, substitute_key=("ACCOUNT_ID",)),
        disable_on_error=False,
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ALICE),  # discarded: ACCOUNT instantiated at 500
            insert("1.1.1", 101, {"ACCOUNT_ID": "1", "KIND": "TOO_LONG"}, table=CONTACT),
            commit("1.1.1", 102),
        ],
    )
    error = only_error(result)
    assert (error.message_number, error.message_count, error.error_number) == (2, 2, 12899)


def test_schema_instantiation_scn_fills_in_for_a_table_without_one() -> None:
    settings = apply_settings(
        destination(instantiation_scn=None), schema_instantiation_scns=((DB, "APP", 101),)
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            insert("2.2.2", 102, BOB),
            commit("2.2.2", 103),
        ],
    )
    assert list(accounts(result)) == [(2,)]
    assert result.outcomes[(DB, "1.1.1")] == (101, "DISCARDED")


def test_global_instantiation_scn_fills_in_when_neither_table_nor_schema_has_one() -> None:
    settings = apply_settings(
        destination(instantiation_scn=None),
        schema_instantiation_scns=((DB, "OTHER_SCHEMA", 1000),),
        global_instantiation_scns=((DB, 101),),
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            insert("2.2.2", 102, BOB),
            commit("2.2.2", 103),
        ],
    )
    assert list(accounts(result)) == [(2,)]


def test_table_instantiation_scn_takes_precedence_over_schema_and_global_ones() -> None:
    settings = apply_settings(
        destination(instantiation_scn=50),
        schema_instantiation_scns=((DB, "APP", 1000),),
        global_instantiation_scns=((DB, 1000),),
    )
    result = reference_apply(settings, [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)])
    assert list(accounts(result)) == [(1,)]


def test_object_with_a_destination_table_but_no_instantiation_scn_is_ora_26687() -> None:
    result = reference_apply(
        apply_settings(destination(instantiation_scn=None), disable_on_error=False),
        [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)],
    )
    error = only_error(result)
    assert error.error_number == 26687
    assert error.error_message == (
        'ORA-26687: no instantiation SCN provided for "APP"."ACCOUNT" in source database '
        '"DBS1.EXAMPLE.COM"'
    )
    assert accounts(result) == {}


# ---------------------------------------------------------------------------------------------
# Rule 4: order
# ---------------------------------------------------------------------------------------------


def test_transactions_apply_in_commit_scn_order_not_in_arrival_order() -> None:
    # T1 starts first and arrives first, but T2 commits first; T1 updates the row T2 inserts.
    result = reference_apply(
        apply_settings(),
        [
            update("1.1.1", 100, {"ID": "1", "HOLDER": "Alice"}, {"HOLDER": "Alicia"}),
            commit("1.1.1", 110),
            insert("2.2.2", 101, ALICE),
            commit("2.2.2", 105),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(1,)]["HOLDER"] == "Alicia"
    assert result.applied_transactions == [(DB, "2.2.2"), (DB, "1.1.1")]
    assert result.low_watermark == {DB: 110}


def test_lcrs_of_a_transaction_apply_in_scn_then_position_then_arrival_order() -> None:
    result = reference_apply(
        apply_settings(),
        [
            update("1.1.1", 101, {"ID": "2"}, {"HOLDER": "x"}),  # arrives first, SCN 101
            update("1.1.1", 100, {"ID": "1"}, {"HOLDER": "second"}, position="0002"),
            insert("1.1.1", 100, ALICE, position="0001"),  # same SCN: the position decides
            insert("1.1.1", 99, BOB),  # arrives late, applied first: the lowest SCN
            update("1.1.1", 101, {"ID": "2"}, {"HOLDER": "y"}),  # same SCN, no position: arrival
            commit("1.1.1", 102),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(1,)]["HOLDER"] == "second"
    assert accounts(result)[(2,)]["HOLDER"] == "y"


def test_equal_commit_scns_are_ordered_by_source_database_then_transaction_id() -> None:
    settings = apply_settings(
        destination(), destination(db=DB2), source_databases=(DB, DB2), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            insert("9.9.9", 100, {**ALICE, "HOLDER": "from DB2"}, db=DB2),
            commit("9.9.9", 105, db=DB2),
            insert("2.2.2", 100, {**ALICE, "HOLDER": "second"}),
            commit("2.2.2", 105),
            insert("1.1.1", 100, {**ALICE, "HOLDER": "first"}),
            commit("1.1.1", 105),
        ],
    )
    assert accounts(result)[(1,)]["HOLDER"] == "first"
    assert [(e.source_database, e.source_transaction_id) for e in result.errors] == [
        (DB, "2.2.2"),
        (DB2, "9.9.9"),
    ]
    assert result.low_watermark == {DB: 105, DB2: 105}


# ---------------------------------------------------------------------------------------------
# Rule 5: keys
# ---------------------------------------------------------------------------------------------


def test_key_values_are_compared_after_conversion() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, {**ALICE, "ID": "10"}),
            commit("1.1.1", 101),
            update("2.2.2", 102, {"ID": "10.0"}, {"HOLDER": "Ten"}),
            delete("2.2.2", 103, {"ID": 10, "HOLDER": "Ten"}),  # a JSON number is a NUMBER too
            commit("2.2.2", 104),
        ],
    )
    assert result.errors == []
    assert accounts(result) == {}


def test_substitute_key_with_nulls_matches_null_safely() -> None:
    settings = apply_settings(destination(CONTACT, substitute_key=("ACCOUNT_ID", "KIND")))
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, {"ACCOUNT_ID": "1", "KIND": None, "VALUE": "a"}, table=CONTACT),
            insert("1.1.1", 101, {"ACCOUNT_ID": "1", "KIND": "MAIL", "VALUE": "b"}, table=CONTACT),
            update("1.1.1", 102, {"ACCOUNT_ID": "1", "KIND": None}, {"VALUE": "c"}, table=CONTACT),
            commit("1.1.1", 103),
        ],
    )
    assert result.errors == []
    assert result.tables["contact"] == {
        (1, None): {"ACCOUNT_ID": 1, "KIND": None, "VALUE": "c"},
        (1, "MAIL"): {"ACCOUNT_ID": 1, "KIND": "MAIL", "VALUE": "b"},
    }


def test_insert_of_a_second_null_substitute_key_is_ora_00001() -> None:
    settings = apply_settings(destination(CONTACT, substitute_key=("ACCOUNT_ID", "KIND")))
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, {"ACCOUNT_ID": "1", "KIND": None}, table=CONTACT),
            insert("1.1.1", 101, {"ACCOUNT_ID": "1", "KIND": None}, table=CONTACT),
            commit("1.1.1", 102),
        ],
    )
    assert only_error(result).error_number == 1


def test_table_without_primary_key_is_identified_by_all_its_non_lob_columns() -> None:
    notes = definition_from_document(
        {
            "owner": "APP",
            "name": "NOTE",
            "columns": [
                {"name": "A", "type": "NUMBER(2)"},
                {"name": "B", "type": "VARCHAR2(2)"},
                {"name": "BODY", "type": "CLOB"},
            ],
        },
    )
    result = reference_apply(
        apply_settings(destination(notes)),
        [
            insert("1.1.1", 100, {"A": "1", "B": "x", "BODY": "long text"}, table=notes),
            update("1.1.1", 101, {"A": "1", "B": "x"}, {"B": "y"}, table=notes),
            commit("1.1.1", 102),
        ],
    )
    assert result.tables["note"] == {(1, "y"): {"A": 1, "B": "y", "BODY": "long text"}}


def test_update_changing_the_key_moves_the_row_to_its_new_key() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            update("1.1.1", 101, {"ID": "1"}, {"ID": "7", "HOLDER": "Moved"}),
            commit("1.1.1", 102),
        ],
    )
    assert list(accounts(result)) == [(7,)]
    assert accounts(result)[(7,)]["ID"] == 7
    assert accounts(result)[(7,)]["HOLDER"] == "Moved"
    assert accounts(result)[(7,)]["BALANCE"] == Decimal("10.50")


def test_update_moving_the_row_onto_an_existing_key_is_ora_00001() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            insert("1.1.1", 101, BOB),
            commit("1.1.1", 102),
            update("2.2.2", 103, {"ID": "1"}, {"ID": "2"}),
            commit("2.2.2", 104),
        ],
    )
    error = only_error(result)
    assert error.error_number == 1
    assert (
        error.error_message == "ORA-00001: unique constraint (APP.ACCOUNT) violated, key (ID)=(2)"
    )
    assert sorted(accounts(result)) == [(1,), (2,)]


@pytest.mark.parametrize(
    "lcr",
    [
        insert("1.1.1", 100, {"HOLDER": "no key"}),
        update("1.1.1", 100, {"HOLDER": "no key"}, {"HOLDER": "x"}),
        # the key is in new_values only: UPDATE and DELETE identify rows by old values
        update("1.1.1", 100, {"HOLDER": "Alice"}, {"ID": "1", "HOLDER": "x"}),
        delete("1.1.1", 100, {"HOLDER": "no key"}),
    ],
    ids=["insert", "update", "update-key-only-in-new-values", "delete"],
)
def test_row_lcr_without_a_key_column_value_is_ora_26688(lcr: dict[str, Any]) -> None:
    result = reference_apply(apply_settings(), [lcr, commit("1.1.1", 101)])
    error = only_error(result)
    assert error.error_number == 26688
    assert error.error_message == "ORA-26688: missing key in LCR: column ID of APP.ACCOUNT"


def test_key_column_with_a_default_is_still_needed_in_the_insert() -> None:
    keyed_by_status = destination(substitute_key=("STATUS",))
    result = reference_apply(
        apply_settings(keyed_by_status),
        [insert("1.1.1", 100, {"ID": "1"}), commit("1.1.1", 101)],
    )
    assert only_error(result).error_number == 26688


# ---------------------------------------------------------------------------------------------
# Rule 6: column discrepancies and conversions
# ---------------------------------------------------------------------------------------------


def test_lcr_column_missing_at_the_destination_is_ora_00904() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, {**ALICE, "NICKNAME": "Al"}), commit("1.1.1", 101)],
    )
    error = only_error(result)
    assert error.error_number == 904
    assert error.error_message == (
        'ORA-00904: "NICKNAME": invalid identifier, table APP.ACCOUNT, key (ID)=(1)'
    )


def test_insert_without_a_column_gets_its_default_else_null() -> None:
    result = reference_apply(
        apply_settings(), [insert("1.1.1", 100, {"ID": "1"}), commit("1.1.1", 101)]
    )
    assert accounts(result)[(1,)] == {
        "ID": 1,
        "HOLDER": None,
        "BALANCE": None,
        "STATUS": "OPEN",
        "VERSION": None,
        "OPENED": None,
    }


@pytest.mark.parametrize(
    "new",
    [{**ALICE, "STATUS": None}, {**ALICE, "ID": None}],
    ids=["explicit-null", "null-primary-key"],
)
def test_insert_of_null_into_a_not_null_column_is_ora_01400(new: dict[str, Any]) -> None:
    result = reference_apply(apply_settings(), [insert("1.1.1", 100, new), commit("1.1.1", 101)])
    assert only_error(result).error_number == 1400
    assert "APP" in only_error(result).error_message


def test_update_setting_a_not_null_column_to_null_is_ora_01407() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            update("2.2.2", 102, {"ID": "1", "STATUS": "OPEN"}, {"STATUS": None}),
            commit("2.2.2", 103),
        ],
    )
    error = only_error(result)
    assert error.error_number == 1407
    assert error.error_message == (
        'ORA-01407: cannot update ("APP"."ACCOUNT"."STATUS") to NULL, key (ID)=(1)'
    )
    assert accounts(result)[(1,)]["STATUS"] == "OPEN"


@pytest.mark.parametrize(
    ("column", "value", "error_number"),
    [
        ("BALANCE", "12x", 1722),
        ("BALANCE", "1234567", 1438),  # NUMBER(8,2): 6 integer digits at most
        ("BALANCE", "999999.995", 1438),  # rounds up to 1000000.00
        ("HOLDER", "Maximilianus", 12899),  # VARCHAR2(10)
        ("OPENED", "31/03/2013", 1858),
        ("ID", "one", 1722),  # a key value that does not convert
    ],
)
def test_value_that_does_not_convert_is_an_error_naming_table_and_key(
    column: str, value: str, error_number: int
) -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, {**ALICE, column: value}), commit("1.1.1", 101)],
    )
    error = only_error(result)
    assert error.error_number == error_number
    assert error.error_message.startswith(f"ORA-{error_number:05d}: ")
    assert "table APP.ACCOUNT" in error.error_message
    assert "key (ID)=(" in error.error_message


def _column(type_text: str) -> Column:
    return Column("C", column_type(type_text))


@pytest.mark.parametrize(
    ("type_text", "raw", "expected"),
    [
        ("NUMBER(8,2)", "10", Decimal("10.00")),
        ("NUMBER(8,2)", " 1.005 ", Decimal("1.01")),  # ROUND_HALF_UP
        ("NUMBER(8,2)", "-1.005", Decimal("-1.01")),
        ("NUMBER(8,2)", "-0.001", Decimal("0.00")),
        ("NUMBER(8,2)", "1.5e2", Decimal("150.00")),
        ("NUMBER(8,2)", 7, Decimal("7.00")),
        ("NUMBER(8,2)", 0.1, Decimal("0.10")),
        ("NUMBER(2,2)", "0.99", Decimal("0.99")),
        ("NUMBER(3)", "999.4", Decimal("999")),
        ("NUMBER(*,-2)", "1250", Decimal("1.3E+3")),
        ("NUMBER", "1.23456789012345", Decimal("1.2345678901")),
        ("NUMBER", "1e-30", Decimal("0E-10")),
        ("INTEGER", "1" * 38, Decimal("1" * 38)),
        ("BINARY_DOUBLE", "1.5", 1.5),
        ("BINARY_FLOAT", "0.1", 0.10000000149011612),
        ("VARCHAR2(3)", "abc", "abc"),
        ("VARCHAR2(3)", 12, "12"),
        ("VARCHAR2(5)", 1.5e2, "150"),
        ("CHAR(3)", "a", "a  "),
        ("NVARCHAR2(2)", "日本", "日本"),
        ("CLOB", "x" * 5000, "x" * 5000),
        ("DATE", "2013-03-31T23:59:58", datetime(2013, 3, 31, 23, 59, 58)),
        ("DATE", "2013-03-31", datetime(2013, 3, 31)),
        ("TIMESTAMP", "2013-03-31 23:59:58.1234567", datetime(2013, 3, 31, 23, 59, 58, 123456)),
        ("TIMESTAMP", "2013-03-31T23:59:58+02:00", datetime(2013, 3, 31, 23, 59, 58)),
        (
            "TIMESTAMP WITH TIME ZONE",
            "2013-03-31T23:59:58+02:00",
            datetime(2013, 3, 31, 21, 59, 58, tzinfo=UTC),
        ),
        (
            "TIMESTAMP WITH LOCAL TIME ZONE",
            "2013-03-31T23:59:58",
            datetime(2013, 3, 31, 23, 59, 58, tzinfo=UTC),
        ),
        ("INTERVAL YEAR TO MONTH", "1-6", "+01-06"),
        ("INTERVAL YEAR TO MONTH", "-P18M", "-01-06"),
        ("INTERVAL YEAR TO MONTH", "-0-0", "+00-00"),
        ("INTERVAL DAY TO SECOND", "2 03:04:05.5", "+02 03:04:05.500000"),
        ("INTERVAL DAY TO SECOND", "-P1DT25H0.0000019S", "-02 01:00:00.000001"),
        ("INTERVAL DAY TO SECOND", "PT90M", "+00 01:30:00.000000"),
        ("RAW(2)", "0aFF", b"\x0a\xff"),
        ("BLOB", "", b""),
        ("NUMBER", None, None),
        ("VARCHAR2(1)", None, None),
    ],
)
def test_convert_value_converts_exactly(type_text: str, raw: Any, expected: Any) -> None:
    converted = convert_value(_column(type_text), raw)
    assert converted == expected
    assert type(converted) is type(expected)
    if isinstance(expected, Decimal):
        assert converted.as_tuple().exponent == expected.as_tuple().exponent


@pytest.mark.parametrize(
    ("type_text", "raw", "error_number"),
    [
        ("NUMBER", "abc", 1722),
        ("NUMBER", "1_000", 1722),
        ("NUMBER", "NaN", 1722),
        ("NUMBER", "", 1722),
        ("NUMBER(3)", "1000", 1438),
        ("NUMBER(3)", "999.5", 1438),
        ("NUMBER(2,2)", "1", 1438),
        ("NUMBER", "1e28", 1438),  # DECIMAL(38,10) keeps 28 integer digits
        ("NUMBER", "1e999999999", 1438),
        ("BINARY_DOUBLE", "1e400", 1426),
        ("BINARY_FLOAT", "1e39", 1426),
        ("BINARY_DOUBLE", "inf", 1722),
        ("VARCHAR2(3)", "abcd", 12899),
        ("CHAR(1)", "ab", 12899),
        ("DATE", "2013-02-30", 1858),
        ("TIMESTAMP", 20130331, 1858),
        ("INTERVAL YEAR TO MONTH", "1-12", 1867),
        ("INTERVAL DAY TO SECOND", "1 24:00:00", 1867),
        ("INTERVAL DAY TO SECOND", "P", 1867),
        ("RAW(4)", "abc", 1465),
        ("RAW(4)", "zz", 1465),
        ("RAW(1)", "0a0b", 12899),
    ],
)
def test_convert_value_refuses_what_does_not_convert_exactly(
    type_text: str, raw: Any, error_number: int
) -> None:
    with pytest.raises(ApplyRowError) as raised:
        convert_value(_column(type_text), raw)
    assert raised.value.error_number == error_number
    assert raised.value.text.startswith(f"ORA-{error_number:05d}: ")


def test_convert_value_refuses_a_value_outside_the_contract() -> None:
    with pytest.raises(TypeError):
        convert_value(_column("NUMBER"), True)


# ---------------------------------------------------------------------------------------------
# Rule 7: conflicts and update conflict handlers
# ---------------------------------------------------------------------------------------------


def test_insert_of_existing_key_is_ora_00001_and_rolls_back_the_whole_transaction() -> None:
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, {**ALICE, "ID": "1011"}),
            commit("1.1.1", 101),
            insert("2.2.2", 102, BOB),  # applied first, then rolled back with the rest
            insert("2.2.2", 103, {**ALICE, "ID": "1011"}),
            insert("2.2.2", 104, {**ALICE, "ID": "3"}),
            commit("2.2.2", 105),
        ],
    )
    assert sorted(accounts(result)) == [(1011,)]
    error = only_error(result)
    assert error == ErrorTransaction(
        source_database=DB,
        source_transaction_id="2.2.2",
        source_commit_scn=105,
        message_number=2,
        error_number=1,
        error_message="ORA-00001: unique constraint (APP.ACCOUNT) violated, key (ID)=(1011)",
        message_count=3,
        lcrs=error.lcrs,
    )
    assert [lcr["scn"] for lcr in error.lcrs] == [102, 103, 104]
    assert result.counters["errors"] == 1
    assert result.applied_transactions == [(DB, "1.1.1")]


@pytest.mark.parametrize(
    "lcr",
    [
        update("2.2.2", 102, {"ID": "5"}, {"HOLDER": "x"}),
        delete("2.2.2", 102, {"ID": "5", "HOLDER": "Alice"}),
    ],
    ids=["update", "delete"],
)
def test_update_or_delete_of_a_missing_row_is_ora_26787(lcr: dict[str, Any]) -> None:
    result = reference_apply(
        apply_settings(),
        [insert("1.1.1", 100, ALICE), commit("1.1.1", 101), lcr, commit("2.2.2", 103)],
    )
    error = only_error(result)
    assert error.error_number == 26787
    assert error.error_message == (
        "ORA-26787: The row with key (ID)=(5) does not exist in table APP.ACCOUNT"
    )


ALICE_APPLIED = [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)]


def test_update_whose_old_values_differ_from_the_row_is_ora_26786() -> None:
    result = reference_apply(
        apply_settings(),
        [
            *ALICE_APPLIED,
            update(
                "2.2.2", 102, {"ID": "1", "HOLDER": "Alicia", "BALANCE": "10.50"}, {"BALANCE": "5"}
            ),
            commit("2.2.2", 103),
        ],
    )
    error = only_error(result)
    assert error.error_number == 26786
    assert error.error_message == (
        "ORA-26786: A row with key (ID)=(1) exists but has conflicting column(s) HOLDER "
        "in table APP.ACCOUNT"
    )
    assert accounts(result)[(1,)]["BALANCE"] == Decimal("10.50")


def test_old_values_are_compared_after_conversion_and_null_safely() -> None:
    result = reference_apply(
        apply_settings(),
        [
            *ALICE_APPLIED,
            update("2.2.2", 102, {"ID": "1", "BALANCE": "10.500", "OPENED": None}, {"HOLDER": "A"}),
            commit("2.2.2", 103),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(1,)]["HOLDER"] == "A"


def test_delete_whose_old_values_differ_is_ora_26786_even_with_an_update_handler() -> None:
    table = destination(handlers=(ConflictHandler("OVERWRITE", ("HOLDER",), "HOLDER"),))
    result = reference_apply(
        apply_settings(table),
        [*ALICE_APPLIED, delete("2.2.2", 102, {"ID": "1", "HOLDER": "Bob"}), commit("2.2.2", 103)],
    )
    assert only_error(result).error_number == 26786


@pytest.mark.parametrize("operation", ["UPDATE", "*"])
def test_column_whose_comparison_is_switched_off_does_not_conflict(operation: str) -> None:
    table = destination(uncompared=frozenset({("HOLDER", operation)}))
    result = reference_apply(
        apply_settings(table),
        [
            *ALICE_APPLIED,
            update("2.2.2", 102, {"ID": "1", "HOLDER": "stale"}, {"HOLDER": "new"}),
            commit("2.2.2", 103),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(1,)]["HOLDER"] == "new"


def test_comparison_switched_off_for_update_still_compares_deletes() -> None:
    table = destination(uncompared=frozenset({("HOLDER", "UPDATE")}))
    result = reference_apply(
        apply_settings(table),
        [
            *ALICE_APPLIED,
            delete("2.2.2", 102, {"ID": "1", "HOLDER": "stale"}),
            commit("2.2.2", 103),
        ],
    )
    assert only_error(result).error_number == 26786


def _with_handler(method: str) -> ApplyProcess:
    return apply_settings(
        destination(handlers=(ConflictHandler(method, ("BALANCE", "VERSION"), "VERSION"),))
    )


def _conflicting_update(new: dict[str, Any]) -> list[dict[str, Any]]:
    """Alice's BALANCE is 10.50 (VERSION 1); the LCR believes it was 99: a conflict."""
    return [
        *ALICE_APPLIED,
        update("2.2.2", 102, {"ID": "1", "BALANCE": "99", "VERSION": "1"}, new),
        commit("2.2.2", 103),
    ]


def test_overwrite_handler_takes_the_lcr_values_for_its_column_group() -> None:
    result = reference_apply(
        _with_handler("OVERWRITE"),
        _conflicting_update({"BALANCE": "50", "VERSION": "0", "HOLDER": "Al"}),
    )
    assert result.errors == []
    row = accounts(result)[(1,)]
    assert (row["BALANCE"], row["VERSION"], row["HOLDER"]) == (Decimal("50.00"), 0, "Al")


def test_discard_handler_keeps_the_destination_values_and_applies_the_other_columns() -> None:
    result = reference_apply(
        _with_handler("DISCARD"),
        _conflicting_update({"BALANCE": "50", "VERSION": "2", "HOLDER": "Al"}),
    )
    assert result.errors == []
    row = accounts(result)[(1,)]
    assert (row["BALANCE"], row["VERSION"], row["HOLDER"]) == (Decimal("10.50"), 1, "Al")
    assert result.applied_transactions == [(DB, "1.1.1"), (DB, "2.2.2")]


@pytest.mark.parametrize(
    ("method", "lcr_version", "lcr_wins"),
    [
        ("MAXIMUM", "2", True),
        ("MAXIMUM", "1", False),  # equal: the destination keeps its values
        ("MAXIMUM", "0", False),
        ("MAXIMUM", None, False),  # NULL: no comparison is TRUE
        ("MINIMUM", "0", True),
        ("MINIMUM", "1", False),
        ("MINIMUM", "2", False),
    ],
)
def test_maximum_and_minimum_handlers_take_the_lcr_values_only_when_its_resolution_value_wins(
    method: str, lcr_version: str | None, lcr_wins: bool
) -> None:
    result = reference_apply(
        _with_handler(method), _conflicting_update({"BALANCE": "50", "VERSION": lcr_version})
    )
    assert result.errors == []
    row = accounts(result)[(1,)]
    expected = (Decimal("50.00"), lcr_version) if lcr_wins else (Decimal("10.50"), 1)
    assert (row["BALANCE"], row["VERSION"]) == (
        expected[0],
        None if expected[1] is None else Decimal(expected[1]),
    )


def test_maximum_handler_uses_the_old_resolution_value_when_new_values_lack_it() -> None:
    # Destination VERSION is 1; the LCR only says VERSION was 3 before: 3 > 1, the LCR wins.
    result = reference_apply(
        _with_handler("MAXIMUM"),
        [
            *ALICE_APPLIED,
            update("2.2.2", 102, {"ID": "1", "BALANCE": "99", "VERSION": "3"}, {"BALANCE": "50"}),
            commit("2.2.2", 103),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(1,)]["BALANCE"] == Decimal("50.00")
    assert accounts(result)[(1,)]["VERSION"] == 1


def test_maximum_handler_without_any_resolution_value_cannot_resolve_the_conflict() -> None:
    result = reference_apply(
        _with_handler("MAXIMUM"),
        [
            *ALICE_APPLIED,
            update("2.2.2", 102, {"ID": "1", "BALANCE": "99"}, {"BALANCE": "50"}),
            commit("2.2.2", 103),
        ],
    )
    assert only_error(result).error_number == 26786


def test_conflict_on_a_column_outside_every_handler_group_is_ora_26786() -> None:
    result = reference_apply(
        _with_handler("OVERWRITE"),
        [
            *ALICE_APPLIED,
            update(
                "2.2.2",
                102,
                {"ID": "1", "BALANCE": "99", "HOLDER": "Bob"},
                {"BALANCE": "50", "HOLDER": "Al"},
            ),
            commit("2.2.2", 103),
        ],
    )
    error = only_error(result)
    assert error.error_number == 26786
    assert "conflicting column(s) BALANCE, HOLDER" in error.error_message


def test_handler_resolving_to_null_in_a_not_null_column_is_ora_01407() -> None:
    table = destination(handlers=(ConflictHandler("OVERWRITE", ("STATUS",), "STATUS"),))
    result = reference_apply(
        apply_settings(table),
        [
            *ALICE_APPLIED,
            update("2.2.2", 102, {"ID": "1", "STATUS": "SHUT"}, {"STATUS": None}),
            commit("2.2.2", 103),
        ],
    )
    assert only_error(result).error_number == 1407


# ---------------------------------------------------------------------------------------------
# Rule 8: errors are per transaction
# ---------------------------------------------------------------------------------------------

# T1 inserts key 5 and then fails on its own second LCR; T2 inserts key 5 too; T3 is fine.
T1_FAILS_AFTER_INSERTING_5 = [
    insert("1.1.1", 100, {**ALICE, "ID": "5"}),
    update("1.1.1", 101, {"ID": "404"}, {"HOLDER": "nobody"}),  # ORA-26787
    commit("1.1.1", 102),
    insert("2.2.2", 103, {**BOB, "ID": "5"}),
    commit("2.2.2", 104),
    insert("3.3.3", 105, {**BOB, "ID": "6"}),
    commit("3.3.3", 106),
    insert("4.4.4", 107, BOB),  # still open
]


def test_without_disable_on_error_a_later_insert_succeeds_since_the_failed_one_is_removed() -> None:
    result = reference_apply(apply_settings(disable_on_error=False), T1_FAILS_AFTER_INSERTING_5)
    assert not result.aborted
    assert sorted(accounts(result)) == [(5,), (6,)]
    assert accounts(result)[(5,)]["HOLDER"] == "Bob"
    error = only_error(result)
    assert (error.source_transaction_id, error.message_number, error.error_number) == (
        "1.1.1",
        2,
        26787,
    )
    assert result.applied_transactions == [(DB, "2.2.2"), (DB, "3.3.3")]
    assert result.counters == {
        "received": 8,
        "applied": 2,
        "ignored": 0,
        "rolled_back": 0,
        "errors": 1,
    }
    assert result.low_watermark == result.high_watermark == {DB: 106}
    assert result.oldest_scn == {DB: 107}


def test_disable_on_error_stops_the_apply_at_the_first_error_transaction() -> None:
    result = reference_apply(apply_settings(disable_on_error=True), T1_FAILS_AFTER_INSERTING_5)
    assert result.aborted
    assert accounts(result) == {}
    assert only_error(result).source_transaction_id == "1.1.1"
    assert result.applied_transactions == []
    assert result.counters["applied"] == 0
    assert result.counters["errors"] == 1
    # Rule 9: the failing transaction is processed (in the queue, below the watermark); the
    # earliest transaction not processed is 2.2.2 (first SCN 103).
    assert result.low_watermark == result.high_watermark == {DB: 102}
    assert result.oldest_scn == {DB: 103}


def test_after_an_abort_the_watermarks_pass_the_failing_transaction_and_stop_there() -> None:
    result = reference_apply(
        apply_settings(),
        [insert("0.0.1", 90, BOB), commit("0.0.1", 91), *T1_FAILS_AFTER_INSERTING_5],
    )
    assert result.aborted
    assert list(accounts(result)) == [(2,)]
    assert result.low_watermark == {DB: 102}
    assert result.oldest_scn == {DB: 103}


# ---------------------------------------------------------------------------------------------
# Rule 9: watermarks per source database
# ---------------------------------------------------------------------------------------------


def test_watermarks_and_oldest_scn_are_per_source_database() -> None:
    settings = apply_settings(
        destination(), destination(db=DB2, silver_table="account_2"), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            insert("1.1.1", 50, ALICE, db=DB2),  # DB2 transaction 1.1.1 is open
            insert("7.7.7", 300, BOB, db=DB2),
            commit("7.7.7", 301, db=DB2),
        ],
    )
    assert result.low_watermark == result.high_watermark == {DB: 101, DB2: 301}
    assert result.oldest_scn == {DB: None, DB2: 50}
    assert list(result.tables["account_2"]) == [(2,)]


def test_dependent_transactions_serialization_gives_the_same_result_as_full() -> None:
    lcrs = T1_FAILS_AFTER_INSERTING_5
    full = reference_apply(apply_settings(disable_on_error=False), lcrs)
    dependent = reference_apply(
        apply_settings(
            disable_on_error=False,
            commit_serialization="DEPENDENT_TRANSACTIONS",
        ),
        lcrs,
    )
    assert dependent == full


# ---------------------------------------------------------------------------------------------
# Rule 9, D15: DEPENDENT_TRANSACTIONS after an abort
# ---------------------------------------------------------------------------------------------

DEPENDENT = apply_settings(commit_serialization="DEPENDENT_TRANSACTIONS")
# 1.1.1 inserts key 5 and then fails (ORA-26787 on key 404): it aborts the apply.
ABORTING = [
    insert("1.1.1", 100, {**ALICE, "ID": "5"}),
    update("1.1.1", 101, {"ID": "404"}, {"HOLDER": "nobody"}),
    commit("1.1.1", 102),
]


# D17: virtual dependencies. CONTACT rows name their ACCOUNT in ACCOUNT_ID (no foreign key).
def _with_dependencies(**dependencies: Any) -> ApplyProcess:
    return apply_settings(
        destination(),
        destination(CONTACT, substitute_key=("ACCOUNT_ID", "KIND")),
        commit_serialization="DEPENDENT_TRANSACTIONS",
        **dependencies,
    )


ACCOUNT_ID_OF_CONTACT = (
    {"name": "ACCOUNT_CONTACT", "object": "APP.ACCOUNT", "columns": ["ID"]},
    {"name": "ACCOUNT_CONTACT", "object": "APP.CONTACT", "columns": ["ACCOUNT_ID"]},
)
CONTACT_OF_ACCOUNT = ({"object": "APP.CONTACT", "parent": "APP.ACCOUNT"},)


def contact(txid: str, scn: int, account_id: str, kind: str = "MAIL") -> dict[str, Any]:
    return insert(txid, scn, {"ACCOUNT_ID": account_id, "KIND": kind}, table=CONTACT)


def test_a_value_dependency_holds_a_later_transaction_with_the_same_value() -> None:
    lcrs = [
        *ABORTING,  # inserts account 5, then fails
        contact("2.2.2", 103, "5.0"),  # names account 5 (as NUMBER): dependent
        commit("2.2.2", 104),
        contact("3.3.3", 105, "6"),  # account 6: independent
        commit("3.3.3", 106),
    ]
    result = reference_apply(_with_dependencies(value_dependencies=ACCOUNT_ID_OF_CONTACT), lcrs)
    assert sorted(k[0] for k in result.tables["contact"]) == [6]
    assert result.low_watermark == {DB: 102} and result.high_watermark == {DB: 106}
    # Without the dependency both contacts apply: nothing else links them to account 5.
    plain = reference_apply(_with_dependencies(), lcrs)
    assert sorted(k[0] for k in plain.tables["contact"]) == [5, 6]


def test_an_object_dependency_links_child_and_parent_transactions_only() -> None:
    lcrs = [
        insert("1.1.1", 100, {"ACCOUNT_ID": "1", "KIND": "MAIL"}, table=CONTACT),
        insert("1.1.1", 101, {"ACCOUNT_ID": "1", "KIND": "MAIL"}, table=CONTACT),  # 00001
        commit("1.1.1", 102),
        contact("2.2.2", 103, "2"),  # child after child: independent
        commit("2.2.2", 104),
        insert("3.3.3", 105, BOB),  # parent after child: dependent
        commit("3.3.3", 106),
    ]
    result = reference_apply(_with_dependencies(object_dependencies=CONTACT_OF_ACCOUNT), lcrs)
    assert sorted(k[0] for k in result.tables["contact"]) == [2]
    assert accounts(result) == {}
    assert result.oldest_scn == {DB: 105}


def test_dependent_abort_applies_a_later_transaction_touching_other_rows() -> None:
    result = reference_apply(
        DEPENDENT, [*ABORTING, insert("2.2.2", 103, {**BOB, "ID": "6"}), commit("2.2.2", 104)]
    )
    assert result.aborted
    assert [e.source_transaction_id for e in result.errors] == ["1.1.1"]
    assert list(accounts(result)) == [(6,)]
    assert result.outcomes == {(DB, "1.1.1"): (102, "ERROR"), (DB, "2.2.2"): (104, "APPLIED")}
    assert result.counters["applied"] == result.counters["errors"] == 1
    assert result.low_watermark == result.high_watermark == {DB: 104}
    assert result.oldest_scn == {DB: None}


def test_full_abort_holds_back_the_same_independent_transaction() -> None:
    lcrs = [*ABORTING, insert("2.2.2", 103, {**BOB, "ID": "6"}), commit("2.2.2", 104)]
    result = reference_apply(apply_settings(), lcrs)
    assert accounts(result) == {}
    assert result.low_watermark == result.high_watermark == {DB: 102}
    assert result.oldest_scn == {DB: 103}


def test_dependent_abort_holds_a_later_transaction_touching_a_row_of_the_aborting_one() -> None:
    result = reference_apply(
        DEPENDENT,
        [
            *ABORTING,
            insert("2.2.2", 103, {**BOB, "ID": "5"}),  # key 5: the aborting one inserted it
            commit("2.2.2", 104),
            insert("3.3.3", 105, {**BOB, "ID": "6"}),
            commit("3.3.3", 106),
        ],
    )
    assert list(accounts(result)) == [(6,)]
    assert (DB, "2.2.2") not in result.outcomes
    assert [e.source_transaction_id for e in result.errors] == ["1.1.1"]
    # Rule 9: no gap below the low watermark; the high one is the highest commit SCN applied.
    assert result.low_watermark == {DB: 102}
    assert result.high_watermark == {DB: 106}
    assert result.oldest_scn == {DB: 103}


def test_dependent_abort_holds_transitively_through_a_held_transaction() -> None:
    result = reference_apply(
        DEPENDENT,
        [
            *ABORTING,
            insert("2.2.2", 103, {**BOB, "ID": "5"}),
            insert("2.2.2", 104, {**BOB, "ID": "7"}),
            commit("2.2.2", 105),
            insert("3.3.3", 106, {**BOB, "ID": "7"}),  # only 2.2.2 touches key 7
            commit("3.3.3", 107),
        ],
    )
    assert accounts(result) == {}
    assert set(result.outcomes) == {(DB, "1.1.1")}
    assert result.low_watermark == result.high_watermark == {DB: 102}
    assert result.oldest_scn == {DB: 103}


def test_dependent_abort_holds_a_transaction_touching_the_new_key_of_a_held_key_move() -> None:
    result = reference_apply(
        DEPENDENT,
        [
            *ABORTING,
            update("2.2.2", 103, {"ID": "5"}, {"ID": "8"}),  # held: moves key 5 to 8
            commit("2.2.2", 104),
            insert("3.3.3", 105, {**BOB, "ID": "8"}),
            commit("3.3.3", 106),
        ],
    )
    assert accounts(result) == {}
    assert set(result.outcomes) == {(DB, "1.1.1")}


def test_dependent_abort_holds_a_later_independent_transaction_that_fails_without_queueing_it() -> (
    None
):
    result = reference_apply(
        DEPENDENT,
        [
            *ABORTING,
            delete("2.2.2", 103, {"ID": "9"}),  # ORA-26787: held, not queued
            commit("2.2.2", 104),
            insert("3.3.3", 105, {**BOB, "ID": "9"}),  # touches the failed one's key: held
            commit("3.3.3", 106),
            insert("4.4.4", 107, {**BOB, "ID": "10"}),
            commit("4.4.4", 108),
        ],
    )
    assert [e.source_transaction_id for e in result.errors] == ["1.1.1"]
    assert result.counters["errors"] == 1
    assert list(accounts(result)) == [(10,)]
    assert set(result.outcomes) == {(DB, "1.1.1"), (DB, "4.4.4")}
    assert result.low_watermark == {DB: 102}
    assert result.high_watermark == {DB: 108}
    assert result.oldest_scn == {DB: 103}


def test_dependent_abort_does_not_hold_a_row_the_aborting_one_only_touched_in_discarded_lcrs() -> (
    None
):
    settings = apply_settings(
        destination(instantiation_scn=103),
        destination(AUDIT),
        commit_serialization="DEPENDENT_TRANSACTIONS",
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, {**ALICE, "ID": "5"}),  # discarded: at or below SCN 103
            delete("1.1.1", 101, {"ID": "404"}, table=AUDIT),  # ORA-26787: aborts
            commit("1.1.1", 102),
            insert("2.2.2", 110, {**BOB, "ID": "5"}),
            commit("2.2.2", 111),
        ],
    )
    assert [e.source_transaction_id for e in result.errors] == ["1.1.1"]
    assert list(accounts(result)) == [(5,)]
    assert result.low_watermark == result.high_watermark == {DB: 111}


def test_dependent_abort_keeps_low_watermarks_per_source_database() -> None:
    settings = apply_settings(
        destination(),
        destination(db=DB2, silver_table="account_2"),
        commit_serialization="DEPENDENT_TRANSACTIONS",
    )
    result = reference_apply(
        settings,
        [
            *ABORTING,
            insert("2.2.2", 103, {**BOB, "ID": "5"}),  # held
            commit("2.2.2", 104),
            insert("7.7.7", 300, BOB, db=DB2),  # another table: applied
            commit("7.7.7", 301, db=DB2),
        ],
    )
    assert result.low_watermark == {DB: 102, DB2: 301}
    assert result.high_watermark == {DB: 102, DB2: 301}
    assert list(result.tables["account_2"]) == [(2,)]


def test_dependent_abort_walks_only_what_arrived_up_to_the_aborting_commits_batch() -> None:
    lcrs = [
        *ABORTING,
        insert("2.2.2", 103, {**BOB, "ID": "6"}),
        commit("2.2.2", 104),
        insert("3.3.3", 105, {**BOB, "ID": "7"}),
        commit("3.3.3", 106),
    ]
    result = reference_apply(DEPENDENT, lcrs, batch_ends=[5, 7])
    assert list(accounts(result)) == [(6,)]
    assert result.low_watermark == result.high_watermark == {DB: 104}
    assert result.oldest_scn == {DB: 105}


def truncate(txid: str, scn: int, name: str) -> dict[str, Any]:
    """A DDL-only transaction (committed at ``scn`` without a COMMIT) truncating APP.name."""
    return {
        "source_database_name": DB,
        "command_type": "TRUNCATE TABLE",
        "transaction_id": txid,
        "scn": scn,
        "commit_scn": scn,
        "object_owner": "APP",
        "object_name": name,
        "object_type": "TABLE",
        "ddl_text": f"TRUNCATE TABLE APP.{name}",
    }


def test_truncate_table_empties_the_destination_between_the_inserts_around_it() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            truncate("2.2.2", 102, "ACCOUNT"),
            truncate("3.3.3", 103, "NOSUCH"),  # no destination: changes nothing
            insert("4.4.4", 104, {**ALICE, "ID": 2}),
            commit("4.4.4", 105),
        ],
    )
    assert list(accounts(result)) == [(2,)]
    assert result.outcomes[(DB, "2.2.2")] == (102, "APPLIED")
    assert result.outcomes[(DB, "3.3.3")] == (103, "IGNORED")


def test_a_truncate_committed_at_or_below_the_instantiation_scn_is_discarded() -> None:
    result = reference_apply(
        apply_settings(destination(instantiation_scn=102)),
        [
            insert("1.1.1", 103, ALICE),
            commit("1.1.1", 104),
            truncate("2.2.2", 102, "ACCOUNT"),  # in the instantiated copy already (rule 3)
        ],
    )
    assert list(accounts(result)) == [(1,)]
    assert result.outcomes[(DB, "2.2.2")] == (102, "IGNORED")


def alter(txid: str, scn: int, statement: str, name: str = "ACCOUNT") -> dict[str, Any]:
    """A DDL-only transaction (committed at ``scn``) altering APP.name (D16)."""
    return {
        **truncate(txid, scn, name),
        "command_type": "ALTER TABLE",
        "ddl_text": f"ALTER TABLE APP.{name} {statement}",
    }


def test_lcrs_after_an_add_column_carry_it_and_those_before_do_not() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "ADD (NICKNAME VARCHAR2(5))"),
            insert("3.3.3", 103, {**ALICE, "ID": 2, "NICKNAME": "ali"}),
            commit("3.3.3", 104),
            insert("4.4.4", 105, {**ALICE, "ID": 3, "NICKNAME": "toolong"}),  # 12899 now
            commit("4.4.4", 106),
        ],
    )
    rows = accounts(result)
    assert rows[(1,)]["NICKNAME"] is None and rows[(2,)]["NICKNAME"] == "ali"
    assert [e.error_number for e in result.errors] == [12899]
    assert result.definitions["account"].column_names[-1] == "NICKNAME"


def test_an_insert_of_a_column_before_its_add_column_fails_with_00904() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, {**ALICE, "NICKNAME": "ali"}),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "ADD (NICKNAME VARCHAR2(5))"),
        ],
    )
    assert [e.error_number for e in result.errors] == [904]
    assert accounts(result) == {}


def test_drop_and_rename_column_change_the_rows_and_the_later_lcrs_names() -> None:
    result = reference_apply(
        apply_settings(),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "DROP COLUMN OPENED"),
            alter("3.3.3", 103, "RENAME COLUMN HOLDER TO OWNER_NAME"),
            insert("4.4.4", 104, {"ID": 2, "OWNER_NAME": "bob"}),
            commit("4.4.4", 105),
            insert("5.5.5", 106, {"ID": 3, "HOLDER": "carol"}),  # the old name: 00904
            commit("5.5.5", 107),
        ],
    )
    rows = accounts(result)
    assert "OPENED" not in rows[(1,)] and rows[(1,)]["OWNER_NAME"] == ALICE["HOLDER"]
    assert rows[(2,)]["OWNER_NAME"] == "bob"
    assert [e.error_number for e in result.errors] == [904]
    assert "OPENED" not in result.definitions["account"].column_names


def test_char_and_varchar2_of_the_same_size_swap_with_values_a_char_stores_padded() -> None:
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "MODIFY (HOLDER CHAR(12))"),  # another size: 01439
            alter("3.3.3", 103, "MODIFY (HOLDER CHAR(10))"),
            alter("4.4.4", 104, "MODIFY (HOLDER VARCHAR2(10))"),  # the padding stays
        ],
    )
    assert [(e.source_transaction_id, e.error_number) for e in result.errors] == [("2.2.2", 1439)]
    assert accounts(result)[(Decimal(1),)]["HOLDER"] == "Alice     "
    assert result.definitions["account"].column("HOLDER").type.name == "VARCHAR2"


def test_a_date_column_holding_values_becomes_a_timestamp_keeping_them() -> None:
    opened = {**ALICE, "OPENED": "2013-03-31T23:59:58"}
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, opened),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "MODIFY (OPENED TIMESTAMP(6))"),
            insert("3.3.3", 103, {**BOB, "OPENED": "2014-01-01T10:00:00.123456"}),
            commit("3.3.3", 104),
        ],
    )
    assert result.errors == []
    rows = accounts(result)
    assert rows[(Decimal(1),)]["OPENED"] == datetime(2013, 3, 31, 23, 59, 58)
    assert rows[(Decimal(2),)]["OPENED"] == datetime(2014, 1, 1, 10, 0, 0, 123456)


def test_a_timestamp_holding_values_keeps_its_fractional_digits_unless_they_grow() -> None:
    opened = {**ALICE, "OPENED": "2013-03-31T23:59:58"}
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, opened),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "MODIFY (OPENED TIMESTAMP(6))"),
            alter("3.3.3", 103, "MODIFY (OPENED TIMESTAMP(3))"),  # fewer digits: 01440
            alter("4.4.4", 104, "MODIFY (OPENED TIMESTAMP(9))"),
            update("5.5.5", 105, {"ID": "1", "OPENED": "2013-03-31T23:59:58"}, {"OPENED": None}),
            commit("5.5.5", 106),
            alter("6.6.6", 107, "MODIFY (OPENED TIMESTAMP(0))"),  # every value NULL now
        ],
    )
    assert [(e.source_transaction_id, e.error_number) for e in result.errors] == [("3.3.3", 1440)]
    assert result.definitions["account"].column("OPENED").type.fraction_digits == 0


def test_renaming_makes_the_destination_follow_the_new_name_unless_a_destination_has_it() -> None:
    renamed = replace(ACCOUNT, name="ACCOUNTS")
    result = reference_apply(
        apply_settings(destination(), destination(AUDIT), disable_on_error=False),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "RENAME TO AUDIT_LOG"),  # APP.AUDIT_LOG is a destination: 00955
            # Oracle's RENAME statement: a table of the LCR's schema, as ALTER TABLE RENAME TO.
            {
                **alter("3.3.3", 103, ""),
                "command_type": "RENAME",
                "ddl_text": "RENAME ACCOUNT TO ACCOUNTS",
            },
            insert("4.4.4", 104, BOB, table=renamed),
            commit("4.4.4", 105),
            insert("5.5.5", 106, {**BOB, "ID": "3"}),  # the old name: no destination now
            commit("5.5.5", 107),
        ],
    )
    assert sorted(accounts(result)) == [(Decimal(1),), (Decimal(2),)]
    assert [(e.source_transaction_id, e.error_number) for e in result.errors] == [("2.2.2", 955)]
    assert result.definitions["account"].name == "ACCOUNTS"
    assert result.outcomes[(DB, "5.5.5")] == (107, "APPLIED")


def test_workloads_with_rename_tables_send_later_lcrs_under_the_new_name() -> None:
    renames = 0
    renamed_rows = 0  # row LCRs under a new name that the destination then holds

    # hypothesis mixes the literals of every loaded local module into its draws, so the
    # counts move with the code (60 examples drew 8 renames in a full run, >= 10 alone): 200
    # examples drew 71-82 renames and 15-70 renamed rows, far from the bounds asserted.
    @hypothesis_settings(
        max_examples=200,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(rename_tables=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        nonlocal renames, renamed_rows
        settings = apply_process_from_config(workload.process, workload.definitions)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        renames += sum("RENAME TO" in (lcr.get("ddl_text") or "") for lcr in workload.lcrs)
        names = {definition.name for definition in result.definitions.values()}
        renamed_rows += sum(
            lcr["command_type"] == "INSERT" and lcr["object_name"] in names
            for lcr in workload.lcrs
            if str(lcr.get("object_name", "")).endswith("R")
        )

    check()
    assert renames >= 10, renames
    assert renamed_rows >= 5, renamed_rows


@pytest.mark.parametrize(
    ("statement", "error_number"),
    [
        ("ADD (HOLDER VARCHAR2(3))", 1430),
        ("DROP COLUMN NOPE", 904),
        ("DROP COLUMN ID", 12991),
        ("RENAME COLUMN NOPE TO X", 904),
        ("RENAME COLUMN HOLDER TO STATUS", 957),
        ("MODIFY (HOLDER NUMBER)", 1439),
        ("MODIFY (HOLDER VARCHAR2(4))", 1441),  # "Alice" is longer
        ("MODIFY (BALANCE NUMBER(7,2))", 1440),  # 10.5 is stored
        ("MODIFY (BALANCE NUMBER(8,1))", 1440),
        ("MODIFY (HOLDER CLOB)", 22858),
    ],
)
def test_a_column_ddl_the_destination_refuses_is_an_error_transaction_of_its_ddl(
    statement: str, error_number: int
) -> None:
    ddl = alter("2.2.2", 102, statement)
    result = reference_apply(
        apply_settings(), [insert("1.1.1", 100, ALICE), commit("1.1.1", 101), ddl]
    )
    (error,) = result.errors
    assert (error.error_number, error.message_number, error.message_count) == (error_number, 1, 1)
    assert error.lcrs == (ddl,)
    assert result.definitions["account"] == ACCOUNT  # unchanged


def test_modify_shortens_a_character_column_whose_values_all_fit() -> None:
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "MODIFY (HOLDER VARCHAR2(5))"),  # "Alice" fits
            insert("3.3.3", 103, {**BOB, "HOLDER": "Robert"}),  # no longer fits: 12899
            commit("3.3.3", 104),
        ],
    )
    assert result.definitions["account"].column("HOLDER").type.length == 5
    assert [e.error_number for e in result.errors] == [12899]


def test_modify_changes_the_type_or_lowers_the_precision_of_a_column_that_holds_no_value() -> None:
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, {**ALICE, "HOLDER": None, "BALANCE": None}),
            commit("1.1.1", 101),
            alter("2.2.2", 102, "MODIFY (HOLDER NUMBER(3))"),  # every HOLDER is NULL
            alter("3.3.3", 103, "MODIFY (BALANCE NUMBER(4,1))"),
            insert("4.4.4", 104, {**BOB, "HOLDER": "7", "BALANCE": "2.25"}),
            commit("4.4.4", 105),
            alter("5.5.5", 106, "MODIFY (STATUS NUMBER)"),  # 'OPEN' is stored: 01439
        ],
    )
    definition = result.definitions["account"]
    assert str(definition.column("HOLDER").type.kind) == "number"
    assert (
        definition.column("BALANCE").type.precision,
        definition.column("BALANCE").type.scale,
    ) == (4, 1)
    assert accounts(result)[(2,)]["HOLDER"] == Decimal(7)
    assert accounts(result)[(2,)]["BALANCE"] == Decimal("2.3")  # rounded to the new scale
    assert [e.error_number for e in result.errors] == [1439]


def test_a_modify_of_an_empty_table_changes_any_column() -> None:
    result = reference_apply(apply_settings(), [alter("1.1.1", 100, "MODIFY (BALANCE NUMBER(2))")])
    assert result.definitions["account"].column("BALANCE").type.precision == 2
    assert result.errors == []


def test_modify_widens_a_column_and_longer_values_then_apply() -> None:
    result = reference_apply(
        apply_settings(),
        [
            alter("1.1.1", 100, "MODIFY (HOLDER VARCHAR2(20))"),
            insert("2.2.2", 101, {**ALICE, "HOLDER": "a much longer name"}),
            commit("2.2.2", 102),
        ],
    )
    assert accounts(result)[(1,)]["HOLDER"] == "a much longer name"
    assert result.errors == []


def test_a_column_ddl_at_or_below_the_instantiation_scn_or_of_another_table_is_ignored() -> None:
    result = reference_apply(
        apply_settings(destination(instantiation_scn=102)),
        [
            alter("1.1.1", 102, "DROP COLUMN OPENED"),  # in the instantiated copy already
            alter("2.2.2", 103, "DROP COLUMN OPENED", name="NOSUCH"),
        ],
    )
    assert result.outcomes == {(DB, "1.1.1"): (102, "IGNORED"), (DB, "2.2.2"): (103, "IGNORED")}
    assert result.definitions["account"] == ACCOUNT


def drop_table(txid: str, scn: int, name: str = "ACCOUNT") -> dict[str, Any]:
    """A DDL-only transaction (committed at ``scn``) dropping APP.name (D18)."""
    return {
        **truncate(txid, scn, name),
        "command_type": "DROP TABLE",
        "ddl_text": f"DROP TABLE APP.{name}",
    }


def test_drop_table_drops_the_rows_and_the_definition_and_later_lcrs_for_it_fail_with_00942() -> (
    None
):
    second_drop = drop_table("5.5.5", 106)
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            drop_table("2.2.2", 102),
            insert("3.3.3", 103, BOB),  # for a table that no longer exists
            commit("3.3.3", 104),
            alter("4.4.4", 105, "ADD (NICKNAME VARCHAR2(5))"),
            second_drop,
            truncate("6.6.6", 107, "ACCOUNT"),
        ],
    )
    assert "account" not in result.tables and "account" not in result.definitions
    assert result.outcomes[(DB, "2.2.2")] == (102, "APPLIED")
    assert [(e.source_transaction_id, e.error_number) for e in result.errors] == [
        ("3.3.3", 942),
        ("4.4.4", 942),
        ("5.5.5", 942),
        ("6.6.6", 942),
    ]
    assert result.errors[2].lcrs == (second_drop,)


def test_a_drop_table_at_or_below_the_instantiation_scn_or_of_another_table_is_ignored() -> None:
    result = reference_apply(
        apply_settings(destination(instantiation_scn=102)),
        [
            insert("1.1.1", 103, ALICE),
            commit("1.1.1", 104),
            drop_table("2.2.2", 102),  # the instantiated copy already saw it (rule 3)
            drop_table("3.3.3", 105, name="NOSUCH"),
        ],
    )
    assert list(accounts(result)) == [(1,)]
    assert result.outcomes[(DB, "2.2.2")] == (102, "IGNORED")
    assert result.outcomes[(DB, "3.3.3")] == (105, "IGNORED")
    assert result.definitions["account"] == ACCOUNT


def test_an_alter_table_the_reference_does_not_model_is_refused() -> None:
    with pytest.raises(ValueError, match="does not model"):
        reference_apply(apply_settings(), [alter("1.1.1", 100, "ADD CONSTRAINT C CHECK (ID > 0)")])


def test_dependent_abort_holds_a_ddl_barrier_and_everything_after_it() -> None:
    alter = {
        "source_database_name": DB,
        "command_type": "ALTER TABLE",
        "transaction_id": "3.3.3",
        "scn": 105,
        "commit_scn": 105,
        "object_owner": "APP",
        "object_name": "ACCOUNT",
        "object_type": "TABLE",
        "ddl_text": "ALTER TABLE APP.ACCOUNT ADD (NOTE VARCHAR2(10))",
    }
    result = reference_apply(
        DEPENDENT,
        [
            *ABORTING,
            insert("2.2.2", 103, {**BOB, "ID": "6"}),
            commit("2.2.2", 104),
            alter,
            insert("4.4.4", 106, {**BOB, "ID": "7"}),
            commit("4.4.4", 107),
        ],
    )
    assert list(accounts(result)) == [(6,)]
    assert result.ddl == []
    assert result.low_watermark == result.high_watermark == {DB: 104}
    assert result.oldest_scn == {DB: 105}


# ---------------------------------------------------------------------------------------------
# Instantiation copy and malformed input
# ---------------------------------------------------------------------------------------------


def test_initial_rows_are_converted_keyed_and_missing_columns_are_null() -> None:
    result = reference_apply(
        apply_settings(),
        [],
        initial_rows={
            "account": [
                {"ID": "1", "BALANCE": "3.333", "OPENED": "2013-03-31"},
                {"ID": Decimal("2.0"), "BALANCE": Decimal(4), "OPENED": datetime(2013, 4, 1)},
            ]
        },
    )
    assert accounts(result) == {
        (1,): {
            "ID": 1,
            "HOLDER": None,
            "BALANCE": Decimal("3.33"),
            "STATUS": None,
            "VERSION": None,
            "OPENED": datetime(2013, 3, 31),
        },
        (2,): {
            "ID": 2,
            "HOLDER": None,
            "BALANCE": Decimal("4.00"),
            "STATUS": None,
            "VERSION": None,
            "OPENED": datetime(2013, 4, 1),
        },
    }


@pytest.mark.parametrize(
    "initial_rows",
    [
        {"account": [{"ID": "1"}, {"ID": "1.0"}]},
        {"account": [{"ID": "1", "NICKNAME": "x"}]},
        {"nowhere": [{"ID": "1"}]},
    ],
    ids=["duplicate-key", "unknown-column", "unknown-table"],
)
def test_initial_rows_that_cannot_be_loaded_are_refused(initial_rows: Any) -> None:
    with pytest.raises(ValueError):
        reference_apply(apply_settings(), [], initial_rows=initial_rows)


# ---------------------------------------------------------------------------------------------
# Rule 12: LOB pieces (D11)
# ---------------------------------------------------------------------------------------------

DOCUMENT = definition_from_document(
    {
        "owner": "APP",
        "name": "DOC",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)"},
            {"name": "TITLE", "type": "VARCHAR2(10)"},
            {"name": "BODY", "type": "CLOB"},
            {"name": "SCAN", "type": "BLOB"},
        ],
        "primary_key": ["ID"],
    },
)


def lob(command: str, scn: int, new: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return row_lcr(command, "1.1.1", scn, new=new, table=DOCUMENT, **fields)


def applied_to_document(*pieces: dict[str, Any]) -> ReferenceResult:
    return reference_apply(
        apply_settings(destination(DOCUMENT)),
        [
            insert("1.1.1", 100, {"ID": "1", "BODY": "hello", "SCAN": "0102"}, table=DOCUMENT),
            *pieces,
            commit("1.1.1", 200),
        ],
    )


def test_lob_pieces_are_assembled_in_order_onto_the_current_value() -> None:
    result = applied_to_document(
        lob("LOB WRITE", 101, {"ID": "1", "BODY": " world"}, lob_offset=6),
        lob("LOB WRITE", 102, {"ID": "1", "BODY": "!"}, lob_offset=14),  # a gap: 2 spaces
        lob("LOB ERASE", 103, {"ID": "1", "BODY": None}, lob_offset=1, lob_operation_size=2),
        lob("LOB WRITE", 104, {"ID": "1", "SCAN": "ff"}, lob_offset=4),  # a gap: a zero byte
        lob("LOB TRIM", 105, {"ID": "1", "SCAN": None}, lob_operation_size=3),
    )
    [row] = result.tables["doc"].values()
    assert row["BODY"] == "  llo world  !"
    assert row["SCAN"] == b"\x01\x02\x00"


@pytest.mark.parametrize(
    ("piece", "error_number"),
    [
        (lob("LOB WRITE", 101, {"ID": "2", "BODY": "x"}, lob_offset=1), 26787),
        (lob("LOB WRITE", 101, {"ID": "1", "TITLE": "x"}, lob_offset=1), 932),
        (lob("LOB TRIM", 101, {"ID": "1"}, lob_operation_size=1), 21560),
        (lob("LOB WRITE", 101, {"ID": "1", "BODY": "x"}, lob_offset=0), 21560),
        (lob("LOB ERASE", 101, {"ID": "1", "BODY": None}, lob_offset=1), 21560),
        (lob("LOB TRIM", 101, {"ID": "1", "BODY": None}, lob_operation_size=6), 22926),
        (lob("LOB WRITE", 101, {"ID": "1", "SCAN": "0g"}, lob_offset=1), 1465),
    ],
    ids=[
        "missing-row",
        "not-a-lob",
        "no-lob-column",
        "offset-0",
        "no-amount",
        "trim-beyond",
        "bad-hex",
    ],
)
def test_a_lob_piece_that_cannot_apply_fails_its_transaction(
    piece: dict[str, Any], error_number: int
) -> None:
    assert only_error(applied_to_document(piece)).error_number == error_number


def test_a_lob_piece_on_a_null_lob_is_ora_22275() -> None:
    result = reference_apply(
        apply_settings(destination(DOCUMENT)),
        [
            insert("1.1.1", 100, {"ID": "1"}, table=DOCUMENT),
            lob("LOB WRITE", 101, {"ID": "1", "BODY": "x"}, lob_offset=1),
            commit("1.1.1", 200),
        ],
    )
    assert only_error(result).error_number == 22275


def test_two_commits_at_different_scns_are_refused() -> None:
    with pytest.raises(ValueError):
        reference_apply(apply_settings(), [commit("1.1.1", 101), commit("1.1.1", 102)])


# ---------------------------------------------------------------------------------------------
# The workloads of the differential test
# ---------------------------------------------------------------------------------------------

LCR_VALIDATOR = jsonschema.Draft202012Validator(LCR_SCHEMA)
EXPECTED_ERROR_NUMBERS = {1, 904, 1400, 1407, 1438, 1722, 12899, 26687, 26688, 26786, 26787}
LOB_ERROR_NUMBERS = {932, 21560, 22275, 22926}  # rule 12 (D11)


def test_workloads_are_contract_lcrs_that_the_reference_applier_runs_on() -> None:
    seen_errors: set[int] = set()
    seen_outcomes: set[str] = set()
    lob_pieces_applied = 0

    # No example database: the coverage asserted below must come from the derandomized examples
    # alone, the same on a fresh clone (CI) as on a machine that saved failing examples.
    @hypothesis_settings(
        max_examples=300,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads())
    def check(workload: Workload) -> None:
        settings = apply_process_from_config(workload.process, workload.definitions)
        lcrs, initial_rows = workload.lcrs, workload.initial
        for lcr in lcrs:
            LCR_VALIDATOR.validate(lcr)
        result = reference_apply(settings, lcrs, initial_rows)
        counters = result.counters
        assert counters["received"] == sum(
            1 for lcr in lcrs if lcr["source_database_name"] in settings.source_databases
        )
        discarded = sum(1 for _, outcome in result.outcomes.values() if outcome == "DISCARDED")
        assert counters["applied"] == len(result.applied_transactions) + discarded
        assert counters["errors"] == len(result.errors)
        assert [e.source_commit_scn for e in result.errors] == sorted(
            e.source_commit_scn for e in result.errors
        )
        for error in result.errors:
            assert 1 <= error.message_number <= error.message_count == len(error.lcrs)
        if result.aborted:
            assert settings.disable_on_error and len(result.errors) == 1
        nonlocal lob_pieces_applied
        lob_pieces_applied += sum(
            1
            for lcr in lcrs
            if lcr["command_type"].startswith("LOB ")
            and (lcr["source_database_name"], lcr["transaction_id"]) in result.applied_transactions
        )
        seen_errors.update(error.error_number for error in result.errors)
        seen_outcomes.update(name for name, count in counters.items() if count)
        seen_outcomes.update(["aborted"] if result.aborted else [])
        seen_outcomes.update(["open"] if any(result.oldest_scn.values()) else [])

    check()
    # The workloads reach every error and every outcome (deterministic: derandomize=True).
    # Every conflict error, and most of the others (which ones depends on hypothesis's version).
    assert {1, 26786, 26787} <= seen_errors, seen_errors
    assert len(seen_errors & EXPECTED_ERROR_NUMBERS) >= 8, EXPECTED_ERROR_NUMBERS - seen_errors
    # LOB pieces (rule 12) on the CLOB/BLOB columns: applied ones, and most of their errors.
    assert lob_pieces_applied >= 10, lob_pieces_applied
    assert len(seen_errors & LOB_ERROR_NUMBERS) >= 3, LOB_ERROR_NUMBERS - seen_errors
    assert seen_outcomes >= {
        "applied",
        "ignored",  # redeliveries (D14)
        "rolled_back",
        "errors",
        "aborted",
        "open",
    }


COLUMN_DDL_ERROR_NUMBERS = {904, 957, 1430, 1439, 1440, 1441, 12991}


def test_workloads_with_column_ddl_add_rename_widen_and_drop_columns_the_lcrs_then_use() -> None:
    drawn_ddl: set[str] = set()
    applied_ddl: set[str] = set()
    seen_errors: set[int] = set()
    changed_tables = 0

    @hypothesis_settings(
        max_examples=150,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(column_ddl=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        settings = apply_process_from_config(workload.process, workload.definitions)
        for lcr in workload.lcrs:
            LCR_VALIDATOR.validate(lcr)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        drawn_ddl.update(
            lcr["ddl_text"].split()[3]
            for lcr in workload.lcrs
            if lcr["command_type"] == "ALTER TABLE"
        )
        applied_ddl.update(
            lcr["ddl_text"].split()[3] for lcr in result.ddl if lcr["command_type"] == "ALTER TABLE"
        )
        seen_errors.update(
            e.error_number for e in result.errors if e.lcrs[0]["command_type"] == "ALTER TABLE"
        )
        nonlocal changed_tables
        for table in settings.tables:
            final = result.definitions[table.silver_table]
            changed_tables += final != table.definition
            for row in result.tables[table.silver_table].values():
                assert set(row) == set(final.column_names)  # every row has the new columns

    check()
    # Every kind is drawn and most are applied (which ones: hypothesis's derandomized draws).
    assert drawn_ddl == {"ADD", "RENAME", "MODIFY", "DROP"}, drawn_ddl
    assert len(applied_ddl) >= 3, applied_ddl
    assert changed_tables >= 10, changed_tables
    assert len(seen_errors & COLUMN_DDL_ERROR_NUMBERS) >= 2, seen_errors  # each: a unit test above


def test_workloads_with_drop_table_drop_tables_and_queue_what_later_reaches_them() -> None:
    dropped_tables = 0
    later_failures: dict[str, int] = {}  # first command of an ORA-00942 transaction -> count

    @hypothesis_settings(
        max_examples=100,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(drop_tables=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        settings = apply_process_from_config(workload.process, workload.definitions)
        for lcr in workload.lcrs:
            LCR_VALIDATOR.validate(lcr)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        nonlocal dropped_tables
        gone = {t.silver_table for t in settings.tables} - set(result.definitions)
        assert gone == {t.silver_table for t in settings.tables} - set(result.tables)
        dropped_tables += len(gone)
        for error in result.errors:
            if error.error_number == 942:
                command = error.lcrs[0]["command_type"]
                later_failures[command] = later_failures.get(command, 0) + 1

    check()
    assert dropped_tables >= 10, dropped_tables
    # Both row LCRs and a second DROP TABLE reach a dropped table (each: a unit test above).
    assert {"DROP TABLE"} < set(later_failures), later_failures


# ---------------------------------------------------------------------------------------------
# D14: redelivery (rule 11)
# ---------------------------------------------------------------------------------------------


def test_a_transaction_delivered_again_is_ignored_and_changes_nothing() -> None:
    first = [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)]
    result = reference_apply(
        apply_settings(destination()),
        [*first, insert("2.2.2", 102, BOB), commit("2.2.2", 103), *first],
    )
    assert sorted(accounts(result)) == [(1,), (2,)]
    assert result.counters == {
        "received": 6,
        "applied": 2,
        "ignored": 1,
        "rolled_back": 0,
        "errors": 0,
    }


def test_an_error_transaction_delivered_again_stays_one_error() -> None:
    failing = [delete("1.1.1", 100, ALICE), commit("1.1.1", 101)]
    result = reference_apply(
        apply_settings(destination(), disable_on_error=False), [*failing, *failing]
    )
    assert len(result.errors) == 1
    assert (result.counters["errors"], result.counters["ignored"]) == (1, 1)


def test_two_copies_of_one_lcr_line_apply_once() -> None:
    line = insert("1.1.1", 100, ALICE)
    result = reference_apply(
        apply_settings(destination()), [line, dict(line), commit("1.1.1", 101)]
    )
    assert result.errors == []
    assert list(accounts(result)) == [(1,)]
    assert (result.counters["received"], result.counters["ignored"]) == (3, 0)


# ---------------------------------------------------------------------------------------------
# D13: declarative transformations (rule 6's fix for column discrepancies)
# ---------------------------------------------------------------------------------------------


def test_an_extra_source_column_fails_until_a_delete_column_transformation_drops_it() -> None:
    lcrs = [insert("1.1.1", 100, {**ALICE, "NICKNAME": "Al"}), commit("1.1.1", 101)]
    assert only_error(reference_apply(apply_settings(), lcrs)).error_number == 904
    dropping = destination(transformations=({"delete_column": "NICKNAME"},))
    result = reference_apply(apply_settings(dropping), lcrs)
    assert result.errors == []
    assert accounts(result)[(Decimal(1),)]["HOLDER"] == "Alice"


def test_rename_add_and_keep_steps_run_in_order_on_the_images_they_name() -> None:
    table = destination(
        transformations=(
            {"rename_column": {"from": "NAME", "to": "HOLDER"}},
            {"add_column": {"column": "STATUS", "value": "NEW"}},
            {"keep_columns": ["ID", "HOLDER", "STATUS", "VERSION"]},
        )
    )
    result = reference_apply(
        apply_settings(table),
        [
            insert("1.1.1", 100, {"ID": "1", "NAME": "Ann", "VERSION": "1", "JUNK": "x"}),
            update("1.1.1", 101, {"ID": "1", "NAME": "Ann"}, {"VERSION": "2"}),
            commit("1.1.1", 102),
        ],
    )
    assert result.errors == []
    row = accounts(result)[(Decimal(1),)]
    assert (row["HOLDER"], row["STATUS"], row["VERSION"]) == ("Ann", "NEW", Decimal(2))


# ---------------------------------------------------------------------------------------------
# Rule 2: rule sets (the negative one first)
# ---------------------------------------------------------------------------------------------

BOTH_TAGS = [
    insert("1.1.1", 100, ALICE, tag="0A"),
    insert("1.1.1", 101, BOB),
    commit("1.1.1", 102),
]


def test_a_negative_rule_discards_what_a_positive_rule_would_let_through() -> None:
    settings = apply_settings(
        negative_rules=({"source_database": DB, "tag": "0a"},),
        positive_rules=({"schema": "APP"},),
    )
    assert list(accounts(reference_apply(settings, BOTH_TAGS))) == [(Decimal(2),)]


def test_a_positive_rule_set_lets_through_only_what_one_of_its_rules_matches() -> None:
    settings = apply_settings(positive_rules=({"tag": "NOT NULL"},))
    result = reference_apply(settings, BOTH_TAGS)
    assert list(accounts(result)) == [(Decimal(1),)]
    nothing = apply_settings(positive_rules=({"schema": "OTHER"},))
    assert accounts(reference_apply(nothing, BOTH_TAGS)) == {}


# ---------------------------------------------------------------------------------------------
# Rule 2: subset rules and row migration
# ---------------------------------------------------------------------------------------------

OPEN_ONLY = {"schema": "APP", "table": "ACCOUNT", "condition": "STATUS = 'OPEN' AND ID < 10"}


def test_a_subset_rule_migrates_updates_across_its_border() -> None:
    closed = {**BOB, "ID": "3", "STATUS": "CLOSED"}
    result = reference_apply(
        apply_settings(positive_rules=(OPEN_ONLY,)),
        [
            insert("1.1.1", 100, ALICE),
            insert("1.1.1", 101, BOB),
            insert("1.1.1", 102, closed),  # outside: discarded
            insert("1.1.1", 103, {**BOB, "ID": "20"}),  # outside (ID): discarded
            commit("1.1.1", 104),
            update("1.1.2", 110, {"ID": "1", "STATUS": "OPEN"}, {"STATUS": "CLOSED"}),  # DELETE
            update("1.1.2", 111, {**closed}, {"STATUS": "OPEN"}),  # INSERT of the full new row
            update("1.1.2", 112, {"ID": "2", "STATUS": "OPEN"}, {"HOLDER": "Bo"}),  # UPDATE
            update("1.1.2", 113, {"ID": "20", "STATUS": "OPEN"}, {"HOLDER": "X"}),  # discarded
            commit("1.1.2", 114),
        ],
    )
    assert result.errors == []
    rows = accounts(result)
    assert sorted(rows) == [(Decimal(2),), (Decimal(3),)]
    assert (rows[(Decimal(3),)]["HOLDER"], rows[(Decimal(3),)]["STATUS"]) == ("Bob", "OPEN")
    assert rows[(Decimal(2),)]["HOLDER"] == "Bo"


def test_an_unconditional_positive_rule_applies_the_update_as_it_is() -> None:
    result = reference_apply(
        apply_settings(positive_rules=(OPEN_ONLY, {"schema": "APP"})),
        [
            insert("1.1.1", 100, {**ALICE, "STATUS": "CLOSED"}),
            commit("1.1.1", 101),
            update("1.1.2", 110, {"ID": "1", "STATUS": "CLOSED"}, {"STATUS": "OPEN"}),
            commit("1.1.2", 111),
        ],
    )
    assert result.errors == []
    assert accounts(result)[(Decimal(1),)]["STATUS"] == "OPEN"


# ---------------------------------------------------------------------------------------------
# Rule 2 and 6: rule transformations (D19)
# ---------------------------------------------------------------------------------------------

RENAMED_SOURCE = "OLD_ACCOUNT"


def test_a_rename_table_rule_routes_a_source_table_to_the_destination_it_names() -> None:
    source = replace(ACCOUNT, name=RENAMED_SOURCE)
    rename = {"rename_table": {"from": f"APP.{RENAMED_SOURCE}", "to": "APP.ACCOUNT"}}
    settings = apply_settings(positive_rules=({"schema": "APP", "transformations": [rename]},))
    result = reference_apply(
        settings, [insert("1.1.1", 100, ALICE, table=source), commit("1.1.1", 101)]
    )
    assert list(accounts(result)) == [(Decimal(1),)]
    # Without the rule, APP.OLD_ACCOUNT has no destination: not a message, nothing applied.
    plain = reference_apply(
        apply_settings(), [insert("1.1.1", 100, ALICE, table=source), commit("1.1.1", 101)]
    )
    assert accounts(plain) == {}


def test_a_rename_schema_rule_to_an_owner_without_destinations_routes_nothing() -> None:
    rename = {"rename_schema": {"from": "APP", "to": "ELSEWHERE"}}
    settings = apply_settings(positive_rules=({"schema": "APP", "transformations": [rename]},))
    result = reference_apply(settings, [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)])
    assert accounts(result) == {}
    assert result.errors == []


def test_only_the_first_positive_rule_that_selects_an_lcr_transforms_it() -> None:
    drop_holder = {"delete_column": "HOLDER"}
    rename_holder = {"rename_column": {"from": "HOLDER", "to": "NOSUCH"}}  # would be 00904
    settings = apply_settings(
        positive_rules=(
            {"schema": "APP", "table": "ACCOUNT", "transformations": [drop_holder]},
            {"schema": "APP", "transformations": [rename_holder]},
        )
    )
    result = reference_apply(settings, [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)])
    assert result.errors == []
    assert accounts(result)[(Decimal(1),)]["HOLDER"] is None


def test_a_rule_transformation_runs_before_the_tables_own_transformations() -> None:
    # The rule renames HOLDER to NICK; the table's step then drops NICK: HOLDER stays NULL.
    rename = {"rename_column": {"from": "HOLDER", "to": "NICK"}}
    table = destination(transformations=({"delete_column": "NICK"},))
    settings = apply_settings(
        table, positive_rules=({"schema": "APP", "transformations": [rename]},)
    )
    result = reference_apply(settings, [insert("1.1.1", 100, ALICE), commit("1.1.1", 101)])
    assert result.errors == []
    assert accounts(result)[(Decimal(1),)]["HOLDER"] is None


def test_workloads_with_rule_transformations_rename_tables_and_schemas_and_delete_columns() -> None:
    kinds: dict[str, int] = {}
    routed_elsewhere = 0  # row LCRs a rename_table routed to another table's destination

    @hypothesis_settings(
        max_examples=100,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(rule_transformations=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        settings = apply_process_from_config(workload.process, workload.definitions)
        reference_apply(settings, workload.lcrs, workload.initial)
        for rule in workload.process["rules"]["positive"]:
            for step in rule.get("transformations", ()):
                (kind,) = step
                kinds[kind] = kinds.get(kind, 0) + 1
                if kind == "rename_table" and step[kind]["from"] != step[kind]["to"]:
                    nonlocal routed_elsewhere
                    routed_elsewhere += sum(
                        f"{lcr.get('object_owner')}.{lcr.get('object_name')}" == step[kind]["from"]
                        and lcr["source_database_name"] == rule["source_database"]
                        for lcr in workload.lcrs
                    )

    check()
    assert set(kinds) == {"rename_table", "rename_schema", "delete_column"}, kinds
    assert routed_elsewhere >= 5, routed_elsewhere


# ---------------------------------------------------------------------------------------------
# Rule 7: DML handlers (D21)
# ---------------------------------------------------------------------------------------------

HANDLERS = "tests.silver.dml_handler_examples"
LEDGER = definition_from_document(
    {
        "owner": "APP",
        "name": "LEDGER",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)"},
            {"name": "AMOUNT", "type": "NUMBER(8,2)"},
            {"name": "NOTE", "type": "VARCHAR2(4)"},
        ],
        "primary_key": ["ID"],
    },
)
ENTRY = {"ID": "1", "AMOUNT": "5", "NOTE": "a"}
NEGATIVE = {"ID": "2", "AMOUNT": "-3"}


def handled(*handlers: tuple[str, str], **kwargs: Any) -> Destination:
    return destination(
        LEDGER,
        dml_handlers=tuple(
            {"operation": operation, "user_procedure": f"{HANDLERS}:{function}"}
            for operation, function in handlers
        ),
        **kwargs,
    )


def ledger(result: ReferenceResult) -> dict[tuple[Any, ...], dict[str, Any]]:
    return result.tables["ledger"]


def test_an_lcr_a_dml_handler_leaves_out_is_not_executed_and_its_transaction_goes_on() -> None:
    settings = apply_settings(handled(("DELETE", "ignore")))
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ENTRY, table=LEDGER),
            commit("1.1.1", 101),
            delete("1.2.1", 110, ENTRY, table=LEDGER),
            insert("1.2.1", 111, {"ID": "3"}, table=LEDGER),
            commit("1.2.1", 112),
        ],
    )
    assert result.errors == []
    assert sorted(ledger(result)) == [(Decimal(1),), (Decimal(3),)]
    assert result.applied_transactions == [(DB, "1.1.1"), (DB, "1.2.1")]


def test_a_dml_handler_error_fails_its_transaction_at_that_message_with_ora_20000() -> None:
    settings = apply_settings(
        handled(("DEFAULT", "refuse_negative_amounts")), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ENTRY, table=LEDGER),
            insert("1.1.1", 101, NEGATIVE, table=LEDGER),
            commit("1.1.1", 102),
        ],
    )
    error = only_error(result)
    assert (error.error_number, error.message_number, error.message_count) == (20000, 2, 2)
    assert error.error_message == "ORA-20000: negative AMOUNT -3"
    assert ledger(result) == {}


def test_an_operations_own_handler_wins_over_default_and_its_lcr_is_what_is_executed() -> None:
    settings = apply_settings(
        handled(("UPDATE", "note_handled"), ("DEFAULT", "ignore")), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, {"ID": "2"}, table=LEDGER),  # DEFAULT: ignored
            update("1.1.1", 101, ENTRY, {"AMOUNT": "6"}, table=LEDGER),
            delete("1.1.1", 102, {"ID": "7"}, table=LEDGER),  # ignored: no 26787
            commit("1.1.1", 103),
        ],
        initial_rows={"ledger": [ENTRY]},
    )
    assert result.errors == []
    assert ledger(result) == {
        (Decimal(1),): {"ID": Decimal(1), "AMOUNT": Decimal("6.00"), "NOTE": "H"}
    }


def test_each_handler_of_an_operation_gets_the_original_lcr_and_all_they_return_executes() -> None:
    statements = tuple(
        {"operation": "INSERT", "handler_name": name, "statement": STATEMENTS[name]}
        for name in ("MIRROR_NEGATIVE", "AS_CAPTURED")
    )
    settings = apply_settings(destination(LEDGER, dml_handlers=statements), disable_on_error=False)
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ENTRY, table=LEDGER),
            commit("1.1.1", 101),
            insert("1.2.1", 110, {"ID": "4"}, table=LEDGER),
            insert("1.2.1", 111, {"ID": "1"}, table=LEDGER),  # 00001 for both copies
            commit("1.2.1", 112),
        ],
    )
    assert sorted(ledger(result)) == [(Decimal(-1),), (Decimal(1),)]
    error = only_error(result)
    assert (error.error_number, error.message_number) == (1, 2)


def test_a_dml_handler_never_sees_lcrs_below_the_instantiation_scn() -> None:
    settings = apply_settings(
        handled(("DEFAULT", "refuse_negative_amounts"), instantiation_scn=105),
        disable_on_error=False,
    )
    result = reference_apply(
        settings, [insert("1.1.1", 100, NEGATIVE, table=LEDGER), commit("1.1.1", 101)]
    )
    assert result.errors == []
    assert result.outcomes[(DB, "1.1.1")] == (101, "DISCARDED")


def test_workloads_with_dml_handlers_draw_every_combination_and_their_errors() -> None:
    drawn: dict[str, int] = {}
    refused = 0

    @hypothesis_settings(
        max_examples=100,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(dml_handlers=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        nonlocal refused
        settings = apply_process_from_config(workload.process, workload.definitions)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        refused += sum(error.error_number == 20000 for error in result.errors)
        for table in workload.process["tables"]:
            for handler in table.get("dml_handlers", ()):
                label = handler.get("handler_name") or handler["user_procedure"].rpartition(":")[2]
                name = f"{handler['operation']}:{label}"
                drawn[name] = drawn.get(name, 0) + 1
        nonlocal mirrored
        mirrored += sum(
            isinstance(key[0], Decimal) and key[0] < 0
            for rows in result.tables.values()
            for key in rows
        )

    mirrored = 0
    check()
    assert set(drawn) == {
        "DELETE:ignore",
        "DEFAULT:refuse_negative_amounts",
        "UPDATE:note_handled",
        "INSERT:refuse_negative_amounts",
        "DEFAULT:ignore",
        "INSERT:MIRROR_NEGATIVE",
        "INSERT:AS_CAPTURED",
    }, drawn
    # Counts, not exact figures: the derandomized draws change whenever the package's literals
    # do (hypothesis mixes them into its choices), so a threshold near today's figure is fragile.
    assert refused >= 1, refused
    assert mirrored >= 1, mirrored  # rows a second statement handler inserted


CHANGES = definition_from_document({**CHANGES_DEFINITION, "owner": "APP"})


def changes(result: ReferenceResult) -> list[tuple[Any, ...]]:
    return sorted(
        (row["TRANSACTION_ID"], row["MESSAGE_NUMBER"], row["ID"], row["OPERATION"])
        for row in result.tables["changes"].values()
    )


def test_a_handler_writes_another_table_all_or_nothing_with_the_transaction() -> None:
    """D23: record_changes executes each LCR and inserts a row of CHANGES naming it; a failing
    transaction leaves neither table changed."""
    settings = apply_settings(
        handled(("DEFAULT", "record_changes")), destination(CHANGES), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            insert("1.1.1", 100, ENTRY, table=LEDGER),
            update("1.1.1", 101, {"ID": "1"}, {"NOTE": "b"}, table=LEDGER),
            commit("1.1.1", 102),
            delete("1.2.1", 110, {"ID": "1"}, table=LEDGER),
            insert("1.2.1", 111, {"ID": "9", "AMOUNT": "1"}, table=LEDGER),
            insert("1.2.1", 112, {"ID": "9"}, table=LEDGER),  # 00001
            commit("1.2.1", 113),
        ],
    )
    assert changes(result) == [
        ("1.1.1", Decimal(1), Decimal(1), "INSERT"),
        ("1.1.1", Decimal(2), Decimal(1), "UPDATE"),
    ]
    assert [row["NOTE"] for row in ledger(result).values()] == ["b"]
    error = only_error(result)
    assert (error.source_transaction_id, error.error_number, error.message_number) == (
        "1.2.1",
        1,
        3,
    )


def test_a_handlers_lcr_for_a_table_the_apply_lacks_is_00942_and_another_tables_scn_applies() -> (
    None
):
    lacking = reference_apply(
        apply_settings(handled(("DEFAULT", "record_changes")), disable_on_error=False),
        [insert("1.1.1", 100, ENTRY, table=LEDGER), commit("1.1.1", 101)],
    )
    assert (only_error(lacking).error_number, only_error(lacking).message_number) == (942, 1)
    assert ledger(lacking) == {}

    # CHANGES instantiated at 150: the change of the transaction committed at 101 is discarded
    # there (already in its copy), the one committed at 201 is recorded.
    later = reference_apply(
        apply_settings(
            handled(("DEFAULT", "record_changes")), destination(CHANGES, instantiation_scn=150)
        ),
        [
            insert("1.1.1", 100, ENTRY, table=LEDGER),
            commit("1.1.1", 101),
            delete("1.2.1", 200, {"ID": "1"}, table=LEDGER),
            commit("1.2.1", 201),
        ],
    )
    assert later.errors == []
    assert changes(later) == [("1.2.1", Decimal(1), Decimal(1), "DELETE")]
    assert ledger(later) == {}


def test_workloads_with_history_handlers_record_changes_and_roll_them_back() -> None:
    recorded = failed_with_changes = 0

    @hypothesis_settings(
        max_examples=150,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(dml_handlers=True, history_handlers=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        nonlocal recorded, failed_with_changes
        settings = apply_process_from_config(workload.process, workload.definitions)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        rows = {
            (name.removesuffix("_changes"), row["TRANSACTION_ID"], row["MESSAGE_NUMBER"])
            for name, table in result.tables.items()
            if name.endswith("_changes")
            for row in table.values()
        }
        recorded += len(rows)
        # A queued transaction left no row in its source's CHANGES.
        queued = {
            (error.source_database.split(".")[0].lower(), error.source_transaction_id)
            for error in result.errors
        }
        assert not {(source, txid) for source, txid, _ in rows} & queued
        failed_with_changes += sum(
            any(lcr.get("object_name") in handled_objects(workload) for lcr in error.lcrs)
            for error in result.errors
        )

    check()
    assert recorded >= 10, recorded
    assert failed_with_changes >= 1, failed_with_changes


def handled_objects(workload: Workload) -> set[str]:
    """The source tables whose changes record_changes records."""
    return {
        table["source_object"].partition(".")[2]
        for table in workload.process["tables"]
        if any(
            h.get("user_procedure", "").endswith(":record_changes")
            for h in table.get("dml_handlers", ())
        )
    }


# ---------------------------------------------------------------------------------------------
# Rule 7: error handlers (D22)
# ---------------------------------------------------------------------------------------------


def error_handled(*handlers: tuple[str, str], **kwargs: Any) -> Destination:
    return destination(
        LEDGER,
        error_handlers=tuple(
            {"operation": operation, "user_procedure": f"{HANDLERS}:{function}"}
            for operation, function in handlers
        ),
        **kwargs,
    )


def test_an_error_handler_turns_a_duplicate_insert_into_an_update_of_the_row() -> None:
    settings = apply_settings(error_handled(("INSERT", "insert_duplicate_as_update")))
    result = reference_apply(
        settings,
        [insert("1.1.1", 100, {"ID": "1", "AMOUNT": "9"}, table=LEDGER), commit("1.1.1", 101)],
        initial_rows={"ledger": [ENTRY]},
    )
    assert result.errors == []
    assert ledger(result) == {
        (Decimal(1),): {"ID": Decimal(1), "AMOUNT": Decimal("9.00"), "NOTE": "a"}
    }


def test_an_lcr_an_error_handler_skips_is_handled_and_one_that_fails_again_keeps_its_error() -> (
    None
):
    settings = apply_settings(
        error_handled(("DEFAULT", "skip_missing_rows")), disable_on_error=False
    )
    result = reference_apply(
        settings,
        [
            delete("1.1.1", 100, {"ID": "7"}, table=LEDGER),  # 26787: skipped
            insert("1.1.1", 101, {"ID": "3"}, table=LEDGER),
            commit("1.1.1", 102),
            insert("1.2.1", 110, {"ID": "4"}, table=LEDGER),
            insert("1.2.1", 111, ENTRY, table=LEDGER),  # 00001: returned unchanged
            commit("1.2.1", 112),
        ],
        initial_rows={"ledger": [ENTRY]},
    )
    error = only_error(result)
    assert (error.source_transaction_id, error.error_number, error.message_number) == (
        "1.2.1",
        1,
        2,
    )
    assert sorted(ledger(result)) == [(Decimal(1),), (Decimal(3),)]
    assert result.applied_transactions == [(DB, "1.1.1")]


def test_an_update_conflict_handler_resolves_first_and_the_error_handler_refuses_the_rest() -> None:
    settings = apply_settings(
        error_handled(
            ("UPDATE", "refuse_with_the_error"),
            handlers=(ConflictHandler("OVERWRITE", ("AMOUNT",), "AMOUNT"),),
        ),
        disable_on_error=False,
    )
    result = reference_apply(
        settings,
        [
            update("1.1.1", 100, {"ID": "1", "AMOUNT": "4"}, {"AMOUNT": "6"}, table=LEDGER),
            commit("1.1.1", 101),
            update("1.2.1", 110, {"ID": "1", "NOTE": "z"}, {"NOTE": "b"}, table=LEDGER),
            commit("1.2.1", 111),
        ],
        initial_rows={"ledger": [ENTRY]},
    )
    error = only_error(result)
    assert (error.source_transaction_id, error.error_number) == ("1.2.1", 20000)
    assert error.error_message.startswith("ORA-20000: could not apply: ")
    assert "26786" in error.error_message
    assert ledger(result)[(Decimal(1),)]["AMOUNT"] == Decimal("6.00")


def test_workloads_with_error_handlers_draw_every_combination_and_their_errors() -> None:
    drawn: dict[str, int] = {}
    refused = 0

    @hypothesis_settings(
        max_examples=100,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(dml_handlers=True, error_handlers=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        nonlocal refused
        settings = apply_process_from_config(workload.process, workload.definitions)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        refused += sum(error.error_number == 20000 for error in result.errors)
        for table in workload.process["tables"]:
            for handler in table.get("error_handlers", ()):
                name = f"{handler['operation']}:{handler['user_procedure'].rpartition(':')[2]}"
                drawn[name] = drawn.get(name, 0) + 1

    check()
    assert set(drawn) == {
        "DEFAULT:skip_missing_rows",
        "INSERT:insert_duplicate_as_update",
        "UPDATE:apply_without_comparing",
        "DELETE:apply_without_comparing",
        "DEFAULT:refuse_with_the_error",
        "UPDATE:refuse_with_the_error",
    }, drawn
    assert refused >= 3, refused


# ---------------------------------------------------------------------------------------------
# Rule 10: CREATE TABLE (D20)
# ---------------------------------------------------------------------------------------------

NEW_TABLE = "CREATE TABLE APP.{name} (ID NUMBER(6), NOTE VARCHAR2(5), PRIMARY KEY (ID))"


def create_table(txid: str, scn: int, name: str = "ACCOUNT", text: str = NEW_TABLE) -> Any:
    """A DDL-only transaction (committed at ``scn``) creating APP.name (D20)."""
    return {
        **truncate(txid, scn, name),
        "command_type": "CREATE TABLE",
        "ddl_text": text.format(name=name),
    }


def test_create_table_makes_a_dropped_destination_again_empty_with_its_new_columns() -> None:
    result = reference_apply(
        apply_settings(disable_on_error=False),
        [
            insert("1.1.1", 100, ALICE),
            commit("1.1.1", 101),
            drop_table("2.2.2", 102),
            create_table("3.3.3", 103),
            insert("4.4.4", 104, {"ID": "7", "NOTE": "hi"}, table=replace(ACCOUNT, columns=())),
            commit("4.4.4", 105),
            create_table("5.5.5", 106),  # it exists again: 00955
        ],
    )
    assert result.definitions["account"].column_names == ("ID", "NOTE")
    assert list(accounts(result)) == [(Decimal(7),)]
    assert [(e.source_transaction_id, e.error_number) for e in result.errors] == [("5.5.5", 955)]


def test_create_table_of_an_undeclared_table_needs_a_positive_rule_and_an_instantiation_scn() -> (
    None
):
    lcrs = [create_table("1.1.1", 100, name="FRESH")]
    unrouted = reference_apply(apply_settings(), lcrs)  # only the declared tables are routed
    assert unrouted.outcomes[(DB, "1.1.1")][1] == "IGNORED"
    routed = apply_settings(positive_rules=({"schema": "APP"},), disable_on_error=False)
    assert [e.error_number for e in reference_apply(routed, lcrs).errors] == [26687]
    instantiated = apply_settings(
        positive_rules=({"schema": "APP"},), schema_instantiation_scns=((DB, "APP", 50),)
    )
    result = reference_apply(instantiated, lcrs)
    silver = f"{DB}_app_fresh".lower().replace(".", "_")
    assert result.tables[silver] == {}
    assert result.definitions[silver].primary_key == ("ID",)


def test_workloads_with_create_table_make_dropped_tables_again_and_write_them() -> None:
    created = written_after = 0

    @hypothesis_settings(
        max_examples=100,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads(drop_tables=True, create_tables=True, disable_on_error=False))
    def check(workload: Workload) -> None:
        settings = apply_process_from_config(workload.process, workload.definitions)
        for lcr in workload.lcrs:
            LCR_VALIDATOR.validate(lcr)
        result = reference_apply(settings, workload.lcrs, workload.initial)
        nonlocal created, written_after
        for table in settings.tables:
            if result.tables.get(table.silver_table):
                created_here = any(
                    lcr["command_type"] == "CREATE TABLE"
                    and lcr["object_name"] == table.definition.name
                    and lcr["source_database_name"] == table.source_database
                    and result.outcomes.get((table.source_database, lcr["transaction_id"]), ("",))[
                        -1
                    ]
                    == "APPLIED"
                    for lcr in workload.lcrs
                )
                written_after += created_here
        created += sum(
            lcr["command_type"] == "CREATE TABLE"
            and result.outcomes.get((lcr["source_database_name"], lcr["transaction_id"]), ("",))[-1]
            == "APPLIED"
            for lcr in workload.lcrs
        )

    check()
    assert created >= 10, created
    assert written_after >= 3, written_after


# ---------------------------------------------------------------------------------------------
# D24: late input, read in ingest batches
# ---------------------------------------------------------------------------------------------

CARRY_ON = apply_settings(disable_on_error=False)


def test_a_commit_below_the_low_watermark_of_the_batches_before_is_queued_as_late() -> None:
    lcrs = [
        insert("1.1.1", 100, BOB),  # its COMMIT lands in the next batch
        insert("2.2.2", 110, {**BOB, "ID": "5"}),
        commit("2.2.2", 111),
        commit("1.1.1", 101),  # batch 2: below the low watermark 111
    ]
    result = reference_apply(CARRY_ON, lcrs, batch_ends=[3, 4], late_input=True)
    late = only_error(result)
    assert (late.source_transaction_id, late.error_number) == ("1.1.1", 20002)
    assert (late.message_number, late.message_count, late.source_commit_scn) == (1, 1, 101)
    assert list(accounts(result)) == [(5,)]
    assert result.low_watermark == result.high_watermark == {DB: 111}
    assert result.outcomes[(DB, "1.1.1")] == (101, "ERROR")


def test_a_commit_landing_late_but_above_the_watermark_applies() -> None:
    lcrs = [insert("1.1.1", 100, BOB), commit("2.2.2", 90), commit("1.1.1", 101)]
    result = reference_apply(CARRY_ON, lcrs, batch_ends=[2, 3], late_input=True)
    assert result.errors == []
    assert list(accounts(result)) == [(2,)]


def test_lcrs_landing_after_their_commit_was_processed_are_an_error_of_their_own() -> None:
    lcrs = [
        insert("1.1.1", 100, BOB),
        commit("1.1.1", 102),
        insert("1.1.1", 101, {**BOB, "ID": "5"}),  # batch 2: its COMMIT was processed
        delete("1.1.1", 101, BOB, position="2"),
    ]
    result = reference_apply(CARRY_ON, lcrs, batch_ends=[2, 4], late_input=True)
    late = only_error(result)
    assert (late.source_transaction_id, late.error_number, late.source_commit_scn) == (
        "1.1.1",
        20001,
        102,
    )
    assert (late.message_number, late.message_count) == (1, 2)
    assert [lcr["command_type"] for lcr in late.lcrs] == ["INSERT", "DELETE"]
    assert list(accounts(result)) == [(2,)]  # applied without them
    assert result.outcomes == {(DB, "1.1.1"): (102, "APPLIED")}
    assert result.counters["errors"] == 1


def test_a_late_copy_of_an_lcr_received_before_is_no_late_lcr() -> None:
    lcrs = [insert("1.1.1", 100, BOB), commit("1.1.1", 101), insert("1.1.1", 100, BOB)]
    result = reference_apply(CARRY_ON, lcrs, batch_ends=[2, 3], late_input=True)
    assert result.errors == []
    assert list(accounts(result)) == [(2,)]


def test_in_one_batch_a_commit_before_its_lcrs_groups_with_them() -> None:
    lcrs = [commit("1.1.1", 101), insert("1.1.1", 100, BOB)]
    result = reference_apply(CARRY_ON, lcrs, batch_ends=[2], late_input=True)
    assert result.errors == []
    assert list(accounts(result)) == [(2,)]


def test_late_input_is_not_modelled_with_disable_on_error() -> None:
    with pytest.raises(ValueError, match="D24"):
        reference_apply(apply_settings(disable_on_error=True), [], batch_ends=[1], late_input=True)
