"""Subset rules with row migration, and transformations attached to rules (rename schema/table)."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from lakeapply.errors import ConfigurationError
from lakeapply.silver import admin
from lakeapply.silver.config import checked_rule
from lakeapply.silver.rules import apply_rule_actions, passes_rules, rule_condition_text
from lakeapply.silver.settings import ApplyRule, ApplySettings
from lakeapply.silver.subset import parse_condition
from lakeapply.silver.validation import validate_settings
from lakeapply.testing import (
    LakeapplyHarness,
    Transaction,
    apply_settings,
    bronze_frame,
    destination,
    table_definition,
    txn,
)

EU_ONLY = ApplyRule("DB", "APP", "ACCOUNT", condition="REGION = 'EU'")
PEOPLE = table_definition(
    "APP.ACCOUNT",
    {"ID": "NUMBER(6)", "NAME": "VARCHAR2(10)", "REGION": "VARCHAR2(2)"},
    primary_key=["ID"],
)

Image = list[tuple[str, str | None]] | None


def _image(values: Any) -> Image:
    return [(v.column_name, v.value) for v in values] if values else None


def _after_rules(
    spark: SparkSession, settings: ApplySettings, changes: Transaction
) -> list[tuple[str, Image, Image]]:
    """(command, old image, new image) of the row LCRs the rules keep, after row migration."""
    frame: DataFrame = bronze_frame(spark, changes)
    kept = apply_rule_actions(frame.where(passes_rules(settings)), settings)
    return [
        (row.command_type, _image(row.old_values), _image(row.new_values))
        for row in kept.orderBy("scn").collect()
    ]


def _subset(*rules: ApplyRule) -> ApplySettings:
    return ApplySettings("A", ("DB",), (), positive_rules=rules)


def test_each_update_migrates_as_oracle_documents(spark: SparkSession) -> None:
    changes = (
        txn("DB")
        .update("APP.ACCOUNT", old={"ID": 1, "REGION": "US"}, new={"REGION": "EU"})
        .update("APP.ACCOUNT", old={"ID": 2, "REGION": "EU"}, new={"REGION": "US"})
        .update("APP.ACCOUNT", old={"ID": 3, "REGION": "EU"}, new={"NAME": "Bo"})
        .update("APP.ACCOUNT", old={"ID": 4, "REGION": "US"}, new={"NAME": "Cy"})
        .open()
    )

    assert _after_rules(spark, _subset(EU_ONLY), changes) == [
        # outside -> inside: an INSERT of the new values completed by the old ones
        ("INSERT", None, [("REGION", "EU"), ("ID", "1")]),
        # inside -> outside: a DELETE of the old row
        ("DELETE", [("ID", "2"), ("REGION", "EU")], None),
        # inside -> inside (REGION unchanged, so taken from the old values): stays an UPDATE
        ("UPDATE", [("ID", "3"), ("REGION", "EU")], [("NAME", "Bo")]),
        # outside -> outside (ID 4) is discarded
    ]


def test_inserts_and_deletes_are_judged_by_their_only_image(spark: SparkSession) -> None:
    rule = ApplyRule("DB", "APP", "ACCOUNT", condition="ID >= 10 AND NOT (NAME IS NULL)")
    changes = (
        txn("DB")
        .insert("APP.ACCOUNT", ID=9, NAME="A")
        .insert("APP.ACCOUNT", ID=10, NAME="B")
        .insert("APP.ACCOUNT", ID=11, NAME=None)
        .delete("APP.ACCOUNT", ID=12, NAME="C")
        .insert("APP.OTHER", ID=20, NAME="D")  # another table: no rule selects it
        .open()
    )

    assert [command for command, _, _ in _after_rules(spark, _subset(rule), changes)] == [
        "INSERT",
        "DELETE",
    ]


def test_an_unconditional_rule_for_the_same_lcrs_stops_the_migration(
    spark: SparkSession,
) -> None:
    changes = (
        txn("DB").update("APP.ACCOUNT", old={"ID": 1, "REGION": "US"}, new={"REGION": "EU"}).open()
    )
    settings = _subset(EU_ONLY, ApplyRule(schema="APP"))

    assert [command for command, _, _ in _after_rules(spark, settings, changes)] == ["UPDATE"]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("upper(REGION) = 'EU'", "'UPPER(REGION)' is not allowed (expected a column name)"),
        ("REGION = NAME", "a comparison needs one column and one literal"),
        ("ID + 1 > 2", "expected a column name"),
        ("REGION = (SELECT 1 FROM dual)", "expected a string or number literal"),
        ("REGION = 'EU'; DROP TABLE x", "must be one expression"),
        ("REGION =", "does not parse"),
        ("APP.REGION = 'EU'", "expected a column name"),
    ],
)
def test_a_condition_outside_the_language_is_rejected_precisely(
    condition: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match="subset condition") as raised:
        parse_condition(condition)
    assert message in str(raised.value)


def test_the_validator_places_a_bad_condition_at_its_path() -> None:
    for rules, path in (
        ({"positive_rules": (ApplyRule("DB", "APP", "T", condition="f(X) = 1"),)}, "positive/0"),
        ({"negative_rules": (ApplyRule("DB", "APP", "T", condition="X = 1"),)}, "negative/0"),
    ):
        with pytest.raises(ConfigurationError, match=f"rules/{path}/condition"):
            validate_settings(ApplySettings("A", ("DB",), (), **rules))
    with pytest.raises(ConfigurationError, match="condition"):
        checked_rule({"schema": "APP", "condition": "X = 1"}, "admin")  # not a table rule


def test_hostile_column_names_are_data_not_sql(spark: SparkSession) -> None:
    hostile = "it`s; DROP TABLE x --"
    rule = ApplyRule("DB", "APP", "ACCOUNT", condition=f'"{hostile}" = \'1\' OR "a b" IS NULL')
    changes = (
        txn("DB")
        .insert("APP.ACCOUNT", **{"ID": 1, hostile: "1", "a b": "x"})
        .insert("APP.ACCOUNT", **{"ID": 2, hostile: "2", "a b": "x"})
        .open()
    )

    assert [new for _, _, new in _after_rules(spark, _subset(rule), changes)] == [
        [("ID", "1"), (hostile, "1"), ("a b", "x")]
    ]
    assert rule_condition_text(rule).endswith(f'("{hostile}" = \'1\' OR "a b" IS NULL)')


@pytest.mark.slow  # two apply cycles end to end: ~75 s on 2 shared cores
def test_a_subset_rule_migrates_rows_in_silver(lakeapply: LakeapplyHarness) -> None:
    rule = ApplyRule("ORCL", "APP", "ACCOUNT", condition="REGION = 'EU'")
    lakeapply.configure(apply_settings(PEOPLE, positive_rules=(rule,)))

    lakeapply.run(
        lakeapply.txn()
        .insert("APP.ACCOUNT", ID=1, NAME="Ann", REGION="US")  # outside: discarded
        .insert("APP.ACCOUNT", ID=2, NAME="Bo", REGION="EU")
        .insert("APP.ACCOUNT", ID=3, NAME="Cy", REGION="US")  # outside: discarded
        .commit(),
        lakeapply.txn()
        # the UPDATE carries NAME in its old values: the migrated INSERT has it
        .update("APP.ACCOUNT", old={"ID": 1, "NAME": "Ann", "REGION": "US"}, new={"REGION": "EU"})
        .update("APP.ACCOUNT", old={"ID": 2, "REGION": "EU"}, new={"REGION": "US"})
        # without NAME in either image, the migrated INSERT leaves NAME NULL
        .update("APP.ACCOUNT", old={"ID": 3, "REGION": "US"}, new={"REGION": "EU"})
        .commit(),
    )

    assert_df_equality(
        lakeapply.silver("APP.ACCOUNT"),
        lakeapply.expected("APP.ACCOUNT", [(1, "Ann", "EU"), (3, None, "EU")]),
        ignore_row_order=True,
    )


def test_rename_schema_and_table_route_to_the_renamed_destination(
    lakeapply: LakeapplyHarness,
) -> None:
    renamed = table_definition(
        "SALES.CLIENT", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(10)"}, primary_key=["ID"]
    )
    moved = table_definition(
        "SALES.ORDERS", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(10)"}, primary_key=["ID"]
    )
    rules = (
        checked_rule(
            {
                "schema": "APP",
                "table": "CUSTOMER",
                "transformations": [
                    {"rename_table": {"from": "APP.CUSTOMER", "to": "SALES.CLIENT"}},
                    {"rename_column": {"from": "FULL_NAME", "to": "NAME"}},
                ],
            },
            "test",
        ),
        checked_rule(
            {
                "schema": "OLD",
                "transformations": [{"rename_schema": {"from": "OLD", "to": "SALES"}}],
            },
            "test",
        ),
    )
    lakeapply.configure(apply_settings(renamed, moved, positive_rules=rules))

    lakeapply.run(
        lakeapply.txn()
        .insert("APP.CUSTOMER", ID=1, FULL_NAME="Ann")
        .insert("OLD.ORDERS", ID=7, NAME="Bo")
        .insert("APP.OTHER", ID=9, NAME="no rule")
        .commit(),
    )

    for table, rows in (("SALES.CLIENT", [(1, "Ann")]), ("SALES.ORDERS", [(7, "Bo")])):
        assert_df_equality(lakeapply.silver(table), lakeapply.expected(table, rows))


def test_rule_actions_are_published_and_read_back(lakeapply: LakeapplyHarness) -> None:
    rule = checked_rule(
        {
            "schema": "APP",
            "table": "ACCOUNT",
            "condition": "REGION = 'EU'",
            "transformations": [{"rename_schema": {"from": "APP", "to": "APP2"}}],
        },
        "test",
    )
    settings = apply_settings(PEOPLE, positive_rules=(rule,))

    admin.publish_settings(lakeapply.spark, lakeapply.catalog, settings)

    loaded = admin.load_settings(lakeapply.spark, lakeapply.catalog, settings.apply_name)
    assert loaded.positive_rules == settings.positive_rules


def test_a_rename_on_a_destination_table_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="attach it to a positive rule"):
        validate_settings(
            apply_settings(
                destination(PEOPLE, transformations=[{"rename_schema": {"from": "APP", "to": "X"}}])
            )
        )
