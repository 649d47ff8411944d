"""Error handlers (SET_DML_HANDLER with error_handler => TRUE): a table's row LCR that raised an
error goes to its handler, which returns what to execute instead (reference 002, "Error handler
but no relevant update conflict handler" and the handler combinations after it)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from chispa import assert_df_equality

from lakeapply.errors import ApplyError, ConfigurationError
from lakeapply.silver import admin
from lakeapply.silver.settings import DmlOperation, ErrorHandler
from lakeapply.silver.validation import validate_settings
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition
from tests.silver.dml_handler_examples import UPPER_HOLDER

EXAMPLES = "tests.silver.dml_handler_examples"
ACCOUNTS = table_definition(
    "APP.ACCOUNT",
    {"ID": "NUMBER(6)", "HOLDER": "VARCHAR2(8)", "AMOUNT": "NUMBER(8,2)"},
    primary_key=["ID"],
)


def _error_handler(operation: str, function: str) -> dict[str, str]:
    return {"operation": operation, "user_procedure": f"{EXAMPLES}:{function}"}


def test_a_duplicate_insert_becomes_an_update_and_the_handler_gets_the_lcr_before_dml_handlers(
    lakeapply: LakeapplyHarness,
) -> None:
    as_update = _error_handler("INSERT", "insert_duplicate_as_update")
    lakeapply.configure(
        apply_settings(  # disable_on_error = Y: a handled error does not stop the apply
            destination(ACCOUNTS, silver_table="plain", error_handlers=[as_update]),
            destination(
                ACCOUNTS,
                source="OTHER.DB",
                silver_table="upper",
                dml_handlers=[{"operation": "INSERT", "statement": UPPER_HOLDER}],
                error_handlers=[as_update],
            ),
        )
    )

    lakeapply.run(
        lakeapply.txn().insert("APP.ACCOUNT", ID=1, HOLDER="Ann", AMOUNT=5).commit(),
        lakeapply.txn()
        .insert("APP.ACCOUNT", ID=1, HOLDER="Bo", AMOUNT=7)
        .insert("APP.ACCOUNT", ID=2, HOLDER="Cy", AMOUNT=1)
        .commit(),
        lakeapply.txn("OTHER.DB").insert("APP.ACCOUNT", ID=1, HOLDER="ann").commit(),
        lakeapply.txn("OTHER.DB").insert("APP.ACCOUNT", ID=1, HOLDER="bo").commit(),
    )

    assert lakeapply.error_queue().count() == 0
    assert_df_equality(
        lakeapply.silver("plain"),
        lakeapply.expected("plain", [(1, "Bo", 7), (2, "Cy", 1)]),
        ignore_row_order=True,
    )
    # The statement DML handler upper-cased the first insert; the error handler got the
    # duplicate as captured and executed it as it returned it, with no DML handler.
    assert_df_equality(lakeapply.silver("upper"), lakeapply.expected("upper", [(1, "bo", None)]))


def test_what_fails_again_or_is_refused_queues_its_transaction_and_a_skipped_lcr_does_not(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="skipping",
                error_handlers=[_error_handler("DEFAULT", "skip_missing_rows")],
            ),
            destination(
                ACCOUNTS,
                source="OTHER.DB",
                silver_table="refusing",
                error_handlers=[_error_handler("INSERT", "refuse_with_the_error")],
            ),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1")
        .delete("APP.ACCOUNT", ID=5)  # no such row: skipped by the handler
        .insert("APP.ACCOUNT", ID=6, HOLDER="Di")
        .commit(),
        lakeapply.txn(transaction_id="1.2.1")
        .insert("APP.ACCOUNT", ID=7)
        .insert("APP.ACCOUNT", ID=6, HOLDER="Ed")  # returned unchanged: fails again
        .commit(),
        lakeapply.txn("OTHER.DB", transaction_id="2.1.1").insert("APP.ACCOUNT", ID=1).commit(),
        lakeapply.txn("OTHER.DB", transaction_id="2.2.1").insert("APP.ACCOUNT", ID=1).commit(),
    )

    errors = sorted(lakeapply.error_queue().collect(), key=lambda e: e.source_transaction_id)
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in errors] == [
        ("1.2.1", 1, 2),
        ("2.2.1", 20000, 1),
    ]
    assert errors[1].error_message.startswith("ORA-20000: could not apply: ORA-00001: ")
    assert errors[1].error_message.endswith(
        f'(error handler {EXAMPLES}:refuse_with_the_error, INSERT on "APP"."ACCOUNT")'
    )
    assert_df_equality(
        lakeapply.silver("skipping"), lakeapply.expected("skipping", [(6, "Di", None)])
    )


def test_an_update_conflict_handler_resolves_first_and_the_error_handler_gets_the_rest(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="accounts",
                update_conflict_handlers=[("OVERWRITE", ["AMOUNT"], "AMOUNT")],
                error_handlers=[_error_handler("UPDATE", "refuse_with_the_error")],
            ),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1")
        .insert("APP.ACCOUNT", ID=1, HOLDER="Ann", AMOUNT=5)
        .commit(),
        lakeapply.txn(transaction_id="1.2.1")  # AMOUNT differs: OVERWRITE resolves it
        .update("APP.ACCOUNT", old={"ID": 1, "AMOUNT": 4}, new={"AMOUNT": 6})
        .commit(),
        lakeapply.txn(transaction_id="1.3.1")  # HOLDER differs: no handler resolves it
        .update("APP.ACCOUNT", old={"ID": 1, "HOLDER": "Al"}, new={"HOLDER": "Bo"})
        .commit(),
    )

    errors = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number) for e in errors] == [("1.3.1", 20000)]
    assert "could not apply: ORA-26786: " in errors[0].error_message
    assert_df_equality(
        lakeapply.silver("accounts"), lakeapply.expected("accounts", [(1, "Ann", 6)])
    )


def test_a_handler_that_returns_two_lcrs_for_one_fails_the_cycle_by_name(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(
            destination(ACCOUNTS, error_handlers=[_error_handler("DELETE", "two_for_one")])
        )
    )
    lakeapply.land(lakeapply.txn().delete("APP.ACCOUNT", ID=1).commit())

    with pytest.raises(ApplyError, match=r"more than one LCR .* message 1 \(2 LCR\(s\) of "):
        lakeapply.apply()


def test_error_handlers_are_published_set_by_the_admin_api_and_read_back(
    lakeapply: LakeapplyHarness,
) -> None:
    settings = apply_settings(
        destination(ACCOUNTS, error_handlers=[_error_handler("DEFAULT", "skip_missing_rows")])
    )
    admin.publish_settings(lakeapply.spark, lakeapply.catalog, settings)
    source = settings.tables[0].source_database
    call = (lakeapply.spark, lakeapply.catalog, settings.apply_name, source, "APP.ACCOUNT")

    admin.set_dml_handler(
        *call, "insert", user_procedure=f"{EXAMPLES}:refuse_with_the_error", error_handler=True
    )
    admin.set_dml_handler(*call, "DEFAULT", error_handler=True)  # removed

    loaded = admin.load_settings(lakeapply.spark, lakeapply.catalog, settings.apply_name)
    assert loaded.tables[0].error_handlers == (
        ErrorHandler(DmlOperation.INSERT, f"{EXAMPLES}:refuse_with_the_error"),
    )
    assert loaded.tables[0].dml_handlers == ()
    with pytest.raises(ConfigurationError, match="an error handler is a user procedure"):
        admin.set_dml_handler(*call, "UPDATE", statement=UPPER_HOLDER, error_handler=True)
    with pytest.raises(ConfigurationError, match="no error handler for DELETE"):
        admin.set_dml_handler(*call, "DELETE", error_handler=True)


@pytest.mark.parametrize(
    ("dml_handlers", "error_handlers", "problem"),
    [
        (
            [],
            [{"operation": "DELETE", "user_procedure": "a.b:c"}] * 2,
            "already has an error handler for DELETE",
        ),
        ([], [{"operation": "UPDATE", "user_procedure": "a.b"}], "package.module:function"),
        (
            [{"operation": "INSERT", "user_procedure": "a.b:c"}],
            [{"operation": "INSERT", "user_procedure": "a.b:d"}],
            "procedure DML handler a.b:c \\(INSERT\\) for INSERT",
        ),
        (
            [{"operation": "DEFAULT", "user_procedure": "a.b:c"}],
            [{"operation": "DEFAULT", "user_procedure": "a.b:d"}],
            "procedure DML handler a.b:c \\(DEFAULT\\) for INSERT",
        ),
        (
            [{"operation": "DEFAULT", "user_procedure": "a.b:c"}],
            [{"operation": "LOB_UPDATE", "user_procedure": "a.b:d"}],
            "for LOB WRITE",
        ),
    ],
)
def test_a_table_takes_one_error_handler_per_operation_never_beside_a_procedure_dml_handler(
    dml_handlers: list[dict[str, str]], error_handlers: list[dict[str, str]], problem: str
) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        validate_settings(
            apply_settings(
                destination(ACCOUNTS, dml_handlers=dml_handlers, error_handlers=error_handlers)
            )
        )


def test_an_error_handler_may_share_an_operation_with_a_statement_handler_or_another_dml_one() -> (
    None
):
    validate_settings(
        apply_settings(
            destination(
                ACCOUNTS,
                dml_handlers=[
                    {"operation": "INSERT", "statement": UPPER_HOLDER},
                    {"operation": "DELETE", "user_procedure": "a.b:c"},
                ],
                error_handlers=[
                    {"operation": "INSERT", "user_procedure": "a.b:d"},
                    {"operation": "UPDATE", "user_procedure": "a.b:d"},
                ],
            )
        )
    )


def test_execute_all_errors_runs_an_error_handler_set_after_the_transaction_was_queued(
    lakeapply: LakeapplyHarness,
) -> None:
    accounts = destination(ACCOUNTS, silver_table="accounts")
    lakeapply.configure(apply_settings(accounts, disable_on_error=False))
    lakeapply.run(
        lakeapply.txn(transaction_id="1.1.1").insert("APP.ACCOUNT", ID=1, HOLDER="Ann").commit(),
        lakeapply.txn(transaction_id="1.2.1")
        .delete("APP.ACCOUNT", ID=9)  # ORA-26787: the row is not there
        .update("APP.ACCOUNT", old={"ID": 1, "HOLDER": "Ann"}, new={"HOLDER": "Bo"})
        .commit(),
    )
    assert [e.error_number for e in lakeapply.error_queue().collect()] == [26787]

    skipping = ErrorHandler(DmlOperation.DEFAULT, f"{EXAMPLES}:skip_missing_rows")
    lakeapply.configure(
        apply_settings(replace(accounts, error_handlers=(skipping,)), disable_on_error=False)
    )
    lakeapply.execute_all_errors()

    assert lakeapply.error_queue().count() == 0
    assert_df_equality(
        lakeapply.silver("accounts"), lakeapply.expected("accounts", [(1, "Bo", None)])
    )


def test_an_error_handler_fixes_a_duplicate_and_logs_it_in_another_table_of_the_apply(
    lakeapply: LakeapplyHarness,
) -> None:
    """An error handler may return one LCR per destination table for a failing LCR: the fixed
    LCR and a row of a log table, executed together (rolled back together)."""
    history = table_definition(
        "APP.ACCOUNT_HISTORY",
        {
            "ID": "NUMBER(6)",
            "OPERATION": "VARCHAR2(10)",
            "COMMIT_SCN": "NUMBER",
            "AMOUNT": "NUMBER",
        },
        primary_key=["ID", "COMMIT_SCN", "OPERATION"],
    )
    lakeapply.configure(
        apply_settings(
            destination(
                ACCOUNTS,
                silver_table="accounts",
                error_handlers=[_error_handler("INSERT", "insert_duplicate_as_update_and_log_it")],
            ),
            destination(history, silver_table="history"),
            disable_on_error=False,
        )
    )

    lakeapply.run(
        lakeapply.txn(scn=100).insert("APP.ACCOUNT", ID=1, HOLDER="Ann", AMOUNT=5).commit(),
        lakeapply.txn(scn=200).insert("APP.ACCOUNT", ID=1, HOLDER="Bo", AMOUNT=7).commit(),
        lakeapply.txn(scn=300, transaction_id="3.3.3")
        .insert("APP.ACCOUNT", ID=1, HOLDER="Cy", AMOUNT=8)
        .delete("APP.ACCOUNT", ID=5, HOLDER="Dee")  # ORA-26787: no handler for DELETE
        .commit(),
    )

    assert [(r.ID, r.HOLDER) for r in lakeapply.silver("accounts").collect()] == [(1, "Bo")]
    assert [
        (r.ID, r.OPERATION, int(r.COMMIT_SCN), int(r.AMOUNT))
        for r in lakeapply.silver("history").collect()
    ] == [(1, "DUPLICATE", 201, 7)]
    queued = lakeapply.error_queue().collect()
    assert [(e.source_transaction_id, e.error_number, e.message_number) for e in queued] == [
        ("3.3.3", 26787, 2)
    ]
