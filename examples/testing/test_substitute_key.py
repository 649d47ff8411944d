"""A substitute key: the source table has no primary key, so the apply process identifies rows by
the columns named with SET_KEY_COLUMNS (``key_columns`` in lakeapply.yml)."""

from __future__ import annotations

from decimal import Decimal

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

STUDENT = table_definition(
    "US03.STUDENT",
    {
        "FIRST_NAME": "VARCHAR2(30)",
        "SURNAME": "VARCHAR2(30)",
        "SUBJECT": "VARCHAR2(30)",
        "TUITION_FEE": "NUMBER(8)",
    },
)


def test_an_update_finds_its_row_by_the_substitute_key(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(apply_settings(destination(STUDENT, key_columns=["FIRST_NAME", "SURNAME"])))

    lakeapply.run(
        lakeapply.txn()
        .insert(
            "US03.STUDENT",
            FIRST_NAME="Jordan",
            SURNAME="Sherwood",
            SUBJECT="Chemistry",
            TUITION_FEE=9000,
        )
        .insert(
            "US03.STUDENT", FIRST_NAME="Jordan", SURNAME="Lee", SUBJECT="Physics", TUITION_FEE=9000
        )
        .commit(),
        # Supplemental logging sends the key columns and the changed column's old value.
        lakeapply.txn()
        .update(
            "US03.STUDENT",
            old={"FIRST_NAME": "Jordan", "SURNAME": "Sherwood", "TUITION_FEE": 9000},
            new={"TUITION_FEE": 9250},
        )
        .commit(),
    )

    expected = lakeapply.spark.createDataFrame(
        [
            ("Jordan", "Sherwood", "Chemistry", Decimal(9250)),
            ("Jordan", "Lee", "Physics", Decimal(9000)),
        ],
        "FIRST_NAME string, SURNAME string, SUBJECT string, TUITION_FEE decimal(8,0)",
    )
    assert_df_equality(
        lakeapply.silver("US03.STUDENT"), expected, ignore_row_order=True, ignore_nullable=True
    )
