"""A column discrepancy fixed the way Oracle documents it: the source table has a column the
silver table lacks, so every LCR that carries it fails with ORA-00904, until a declarative
DELETE_COLUMN transformation removes it from the LCRs before they are applied."""

from __future__ import annotations

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

ACCOUNT = table_definition(
    "BANK.ACCOUNT", {"ID": "NUMBER(6)", "BALANCE": "NUMBER(10,2)"}, primary_key=["ID"]
)


def test_an_extra_source_column_fails_with_ora_00904(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(apply_settings(ACCOUNT, disable_on_error=False))

    lakeapply.run(
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=100, BRANCH="LDN").commit(),
    )

    errors = lakeapply.error_queue().select("error_number")
    assert_df_equality(
        errors,
        lakeapply.spark.createDataFrame([(904,)], "error_number long"),
        ignore_nullable=True,
    )


def test_a_delete_column_transformation_makes_the_same_lcrs_apply(
    lakeapply: LakeapplyHarness,
) -> None:
    without_branch = destination(ACCOUNT, transformations=[{"delete_column": "BRANCH"}])
    lakeapply.configure(apply_settings(without_branch, disable_on_error=False))

    lakeapply.run(
        lakeapply.txn().insert("BANK.ACCOUNT", ID=1, BALANCE=100, BRANCH="LDN").commit(),
    )

    assert lakeapply.error_queue().count() == 0
    assert_df_equality(
        lakeapply.silver("BANK.ACCOUNT"),
        lakeapply.expected("BANK.ACCOUNT", [(1, 100)]),
        ignore_row_order=True,
    )
