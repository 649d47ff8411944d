"""An update conflict resolved by the prebuilt MAXIMUM handler: when an UPDATE's old values do not
match the silver row (another site changed it first), the change with the later UPDATED_AT wins
for the whole column group and the other is discarded, instead of an ORA-26786 error."""

from __future__ import annotations

from datetime import datetime

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

PRODUCT = table_definition(
    "SHOP.PRODUCT",
    {"ID": "NUMBER(6)", "PRICE": "NUMBER(8,2)", "UPDATED_AT": "TIMESTAMP"},
    primary_key=["ID"],
)
LATEST_CHANGE_WINS = ("MAXIMUM", ["PRICE", "UPDATED_AT"], "UPDATED_AT")


def test_the_later_of_two_conflicting_price_changes_wins(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(
        apply_settings(destination(PRODUCT, update_conflict_handlers=[LATEST_CHANGE_WINS]))
    )
    nine, ten, eight_thirty = (datetime(2026, 5, 4, h, m) for h, m in ((9, 0), (10, 0), (8, 30)))

    lakeapply.run(
        lakeapply.txn()
        .insert("SHOP.PRODUCT", ID=1, PRICE=10, UPDATED_AT=nine)
        .insert("SHOP.PRODUCT", ID=2, PRICE=5, UPDATED_AT=nine)
        .commit(),
        # Both updates were made against an older row (PRICE 8): each one conflicts.
        lakeapply.txn()
        .update("SHOP.PRODUCT", old={"ID": 1, "PRICE": 8}, new={"PRICE": 12, "UPDATED_AT": ten})
        .commit(),
        lakeapply.txn()
        .update(
            "SHOP.PRODUCT", old={"ID": 1, "PRICE": 8}, new={"PRICE": 11, "UPDATED_AT": eight_thirty}
        )
        .commit(),
    )

    expected = lakeapply.expected("SHOP.PRODUCT", [(1, "12.00", ten), (2, "5.00", nine)])
    assert_df_equality(lakeapply.silver("SHOP.PRODUCT"), expected, ignore_row_order=True)
    assert lakeapply.error_queue().count() == 0
