"""DML handlers (SET_DML_HANDLER): a table's row LCRs of one operation go to its handler, which
returns the LCRs to execute instead (reference 002, "DML handler but no relevant update conflict
handler")."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from lakeapply.errors import ApplyError, ConfigurationError
from lakeapply.silver import admin
from lakeapply.silver.settings import DmlOperation
from lakeapply.silver.validation import validate_settings
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition
from tests.silver.dml_handler_examples import (
    AS_CAPTURED,
    MIRROR_NEGATIVE,
    RECORD_INSERTS,
    UPPER_HOLDER,
)

EXAMPLES = "tests.silver.dml_handler_examples"
ACCOUNTS = table_definition(
    "APP.ACCOUNT",
    {"ID": "NUMBER(6)", "HOLDER": "VARCHAR2(8)", "AMOUNT": "NUMBER(8,2)", "DELETED": "VARCHAR2(1)"},
    primary_key=["ID"],
)


def test_a_procedure_handler_turns_deletes_into_soft_deletes_and_drops_lcrs_it_leaves_out(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="soft",
                dml_handlers=[{"operation": "DELETE", "user_procedure": f"{EXAMPLES}:soft_delete"}],
            ),
            destination(
                ACCOUNTS,
                source="OTHER.DB",
                silver_table="kept",
                dml_handlers=[{"operation": "DELETE", "user_procedure": f"{EXAMPLES}:ignore"}],
            ),
        )
    )

    lakeapply.run(
        lakeapply.txn().insert("APP.ACCOUNT", ID=1, HOLDER="Ann", AMOUNT=5).commit(),
        lakeapply.txn().delete("APP.ACCOUNT", ID=1, HOLDER="Ann", AMOUNT=5).commit(),
        lakeapply.txn("OTHER.DB").insert("APP.ACCOUNT", ID=2, HOLDER="Bo", AMOUNT=1).commit(),
        lakeapply.txn("OTHER.DB")
        .delete("APP.ACCOUNT", ID=2, HOLDER="Bo", AMOUNT=1)
        .insert("APP.ACCOUNT", ID=3, HOLDER="Cy", AMOUNT=2)
        .commit(),
    )

    assert lakeapply.error_queue().count() == 0
    assert_df_equality(lakeapply.silver("soft"), lakeapply.expected("soft", [(1, "Ann", 5, "Y")]))
    assert_df_equality(
        lakeapply.silver("kept"),
        lakeapply.expected("kept", [(2, "Bo", 1, None), (3, "Cy", 2, None)]),
        ignore_row_order=True,
    )


def test_an_error_a_handler_sets_queues_the_transaction_at_that_lcr_with_ora_20000(
    lakeapply: LakeapplyHarness,
) -> None:
    handler = {"operation": "DEFAULT", "user_procedure": f"{EXAMPLES}:refuse_negative_amounts"}
    lakeapply.configure(
        apply_settings(
            destination(ACCOUNTS, silver_table="accounts", dml_handlers=[handler]),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("APP.ACCOUNT", ID=1, AMOUNT=5).commit(),
        lakeapply.txn(transaction_id="1.2.1")
        .insert("APP.ACCOUNT", ID=2, AMOUNT=1)
        .update("APP.ACCOUNT", old={"ID": 2, "AMOUNT": 1}, new={"AMOUNT": -3})
        .commit(),
    )

    error = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in error] == [
        ("1.2.1", 20000, 2)
    ]
    assert error[0].error_message.startswith("ORA-20000: negative AMOUNT -3 (DML handler ")
    assert [row.ID for row in lakeapply.silver("accounts").collect()] == [1]


def test_a_statement_handler_rewrites_values_and_default_handles_the_operations_left(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="accounts",
                instantiation_scn=100,
                dml_handlers=[
                    {"operation": "INSERT", "statement": UPPER_HOLDER, "handler_name": "UPPER"},
                    # Never called: every DELETE is at or below the instantiation SCN.
                    {"operation": "DEFAULT", "user_procedure": f"{EXAMPLES}:refuse_everything"},
                ],
            )
        )
    )

    lakeapply.run(
        lakeapply.txn(scn=50).delete("APP.ACCOUNT", ID=9).commit(),
        lakeapply.txn(scn=200).insert("APP.ACCOUNT", ID=1, HOLDER="ann").commit(),
    )

    assert lakeapply.error_queue().count() == 0
    assert_df_equality(
        lakeapply.silver("accounts"), lakeapply.expected("accounts", [(1, "ANN", None, None)])
    )


def test_each_handler_of_an_operation_gets_the_original_lcrs_and_all_they_return_applies(
    lakeapply: LakeapplyHarness,
) -> None:
    statements = [
        {"operation": "INSERT", "handler_name": "MIRROR_NEGATIVE", "statement": MIRROR_NEGATIVE},
        {"operation": "INSERT", "handler_name": "AS_CAPTURED", "statement": AS_CAPTURED},
    ]
    lakeapply.configure(
        apply_settings(
            destination(ACCOUNTS, silver_table="accounts", dml_handlers=statements),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("APP.ACCOUNT", ID=1, HOLDER="Ann").commit(),
        lakeapply.txn(transaction_id="1.2.1")
        .insert("APP.ACCOUNT", ID=4)
        .insert("APP.ACCOUNT", ID=1)  # both copies exist: ORA-00001 at message 2
        .commit(),
    )

    assert_df_equality(
        lakeapply.silver("accounts"),
        lakeapply.expected("accounts", [(-1, "Ann", None, None), (1, "Ann", None, None)]),
        ignore_row_order=True,
    )
    errors = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in errors] == [
        ("1.2.1", 1, 2)
    ]


def test_a_handler_that_drops_a_column_the_apply_needs_fails_the_cycle_by_name(
    lakeapply: LakeapplyHarness,
) -> None:
    handler = {"operation": "UPDATE", "user_procedure": f"{EXAMPLES}:without_old_values"}
    lakeapply.configure(apply_settings(destination(ACCOUNTS, dml_handlers=[handler])))
    lakeapply.land(
        lakeapply.txn()
        .update("APP.ACCOUNT", old={"ID": 1, "AMOUNT": 1}, new={"AMOUNT": 2})
        .commit()
    )

    with pytest.raises(
        ApplyError, match=r"without_old_values .*without the column\(s\) \['old_values'\]"
    ):
        lakeapply.apply()


def test_handlers_are_published_set_by_the_admin_api_and_read_back(
    lakeapply: LakeapplyHarness,
) -> None:
    statement = {"operation": "INSERT", "statement": UPPER_HOLDER}
    settings = apply_settings(destination(ACCOUNTS, dml_handlers=[statement]))
    admin.publish_settings(lakeapply.spark, lakeapply.catalog, settings)

    admin.set_dml_handler(
        lakeapply.spark,
        lakeapply.catalog,
        settings.apply_name,
        settings.tables[0].source_database,
        "APP.ACCOUNT",
        "delete",
        user_procedure=f"{EXAMPLES}:soft_delete",
    )

    call = (lakeapply.spark, lakeapply.catalog, settings.apply_name)
    where = (settings.tables[0].source_database, "APP.ACCOUNT")
    # ADD_STMT_HANDLER beside the unnamed one, then a procedure handler for the operation too
    admin.set_dml_handler(*call, *where, "INSERT", statement=AS_CAPTURED, handler_name="COPY")
    admin.set_dml_handler(*call, *where, "INSERT", user_procedure=f"{EXAMPLES}:ignore")
    admin.set_dml_handler(*call, *where, "INSERT", user_procedure=f"{EXAMPLES}:note_handled")

    loaded = admin.load_settings(lakeapply.spark, lakeapply.catalog, settings.apply_name)
    handlers = loaded.tables[0].dml_handlers
    assert [(h.operation, h.handler_type, h.label) for h in handlers] == [
        (DmlOperation.DELETE, "PROCEDURE HANDLER", f"{EXAMPLES}:soft_delete"),
        (DmlOperation.INSERT, "PROCEDURE HANDLER", f"{EXAMPLES}:note_handled"),
        (DmlOperation.INSERT, "STMT HANDLER", "statement handler"),
        (DmlOperation.INSERT, "STMT HANDLER", "COPY"),
    ]
    admin.set_dml_handler(*call, *where, "INSERT", handler_name="COPY")  # removes COPY only
    loaded = admin.load_settings(lakeapply.spark, lakeapply.catalog, settings.apply_name)
    assert [h.label for h in loaded.tables[0].dml_handlers] == [
        f"{EXAMPLES}:soft_delete",
        f"{EXAMPLES}:note_handled",
        "statement handler",
    ]
    with pytest.raises(ConfigurationError, match="unknown operation 'MERGE'"):
        admin.set_dml_handler(
            lakeapply.spark,
            lakeapply.catalog,
            settings.apply_name,
            settings.tables[0].source_database,
            "APP.ACCOUNT",
            "MERGE",
            user_procedure=f"{EXAMPLES}:ignore",
        )


@pytest.mark.parametrize(
    ("handlers", "problem"),
    [
        (
            [
                {"operation": "DELETE", "user_procedure": "a.b:c"},
                {"operation": "DELETE", "user_procedure": "a.b:d"},
            ],
            "already has a procedure DML handler for DELETE",
        ),
        (
            [
                {"operation": "INSERT", "statement": "SELECT * FROM {lcrs}"},
                {"operation": "INSERT", "statement": "SELECT * FROM {lcrs} WHERE 1 = 1"},
            ],
            "already has an unnamed statement handler for INSERT",
        ),
        (
            [
                {"operation": "INSERT", "statement": "SELECT * FROM {lcrs}", "handler_name": "A"},
                {"operation": "INSERT", "statement": "SELECT * FROM {lcrs}", "handler_name": "A"},
            ],
            "already has a statement handler named 'A' for INSERT",
        ),
        ([{"operation": "UPDATE", "user_procedure": "a.b"}], "package.module:function"),
        ([{"operation": "UPDATE", "statement": "SELECT 1"}], r"read the LCRs as \{lcrs\}"),
    ],
)
def test_an_operation_takes_one_procedure_handler_and_named_statement_handlers(
    handlers: list[dict[str, str]], problem: str
) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        validate_settings(apply_settings(destination(ACCOUNTS, dml_handlers=handlers)))


HISTORY = table_definition(
    "APP.ACCOUNT_HISTORY",
    {"ID": "NUMBER(6)", "OPERATION": "VARCHAR2(10)", "COMMIT_SCN": "NUMBER", "AMOUNT": "NUMBER"},
    primary_key=["ID", "COMMIT_SCN", "OPERATION"],
)


def _history(lakeapply: LakeapplyHarness) -> list[tuple[object, ...]]:
    return sorted(
        (int(r.ID), r.OPERATION, int(r.COMMIT_SCN), None if r.AMOUNT is None else int(r.AMOUNT))
        for r in lakeapply.silver("history").collect()
    )


def test_a_handler_records_each_change_in_a_history_table_all_or_nothing_with_its_transaction(
    lakeapply: LakeapplyHarness,
) -> None:
    """Oracle's handlers may run SQL on other tables in the apply's transaction: here the LCRs
    a handler returns for APP.ACCOUNT_HISTORY are executed on that destination, and rolled
    back with their transaction when it fails."""
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="accounts",
                dml_handlers=[
                    {"operation": "DEFAULT", "user_procedure": f"{EXAMPLES}:record_history"}
                ],
            ),
            destination(HISTORY, silver_table="history"),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(scn=100)
        .insert("APP.ACCOUNT", ID=1, AMOUNT=5)
        .insert("APP.ACCOUNT", ID=2, AMOUNT=7)
        .commit(),  # commit SCN 102
        lakeapply.txn(scn=200)
        .update("APP.ACCOUNT", old={"ID": 1, "AMOUNT": 5}, new={"AMOUNT": 6})
        .delete("APP.ACCOUNT", ID=2, AMOUNT=7)
        .commit(),  # 202
        lakeapply.txn(scn=300, transaction_id="3.3.3")
        .insert("APP.ACCOUNT", ID=3, AMOUNT=1)
        .update("APP.ACCOUNT", old={"ID": 9, "AMOUNT": 1}, new={"AMOUNT": 2})
        .commit(),
    )

    assert [(r.ID, r.AMOUNT) for r in lakeapply.silver("accounts").collect()] == [(1, 6)]
    assert _history(lakeapply) == [
        (1, "INSERT", 102, 5),
        (1, "UPDATE", 202, 6),
        (2, "DELETE", 202, None),
        (2, "INSERT", 102, 7),
    ]
    queued = [
        (e.source_transaction_id, e.error_number, e.message_number)
        for e in lakeapply.error_queue().collect()
    ]
    assert queued == [("3.3.3", 26787, 2)]


def test_a_statement_handler_writes_history_and_a_table_the_apply_lacks_is_ora_00942(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="accounts",
                dml_handlers=[
                    {"operation": "INSERT", "statement": RECORD_INSERTS, "handler_name": "HIST"}
                ],
            ),
            destination(
                ACCOUNTS,
                source="OTHER.DB",
                silver_table="other_accounts",
                dml_handlers=[
                    {
                        "operation": "INSERT",
                        "user_procedure": f"{EXAMPLES}:record_history_in_a_missing_table",
                    }
                ],
            ),
            destination(HISTORY, silver_table="history"),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(scn=100).insert("APP.ACCOUNT", ID=1, AMOUNT=5).commit(),  # commit 101
        lakeapply.txn("OTHER.DB", transaction_id="4.4.4").insert("APP.ACCOUNT", ID=4).commit(),
    )

    assert [r.ID for r in lakeapply.silver("accounts").collect()] == [1]
    assert _history(lakeapply) == [(1, "INSERT", 101, 5)]
    assert lakeapply.silver("other_accounts").count() == 0
    error = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in error] == [
        ("4.4.4", 942, 1)
    ]
    assert '"APP"."NO_SUCH_HISTORY" of source database "OTHER.DB" is no destination' in (
        error[0].error_message
    )
