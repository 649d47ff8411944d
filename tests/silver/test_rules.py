"""Rule sets and tags (rule 2): the negative rule set first, then the positive one."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import admin
from lakeapply.silver.rules import passes_rules, rule_condition_text
from lakeapply.silver.settings import ApplyRule, ApplySettings
from lakeapply.testing import apply_settings, table_definition

LCRS = "source_database_name string, object_owner string, object_name string, tag string"


def _passing(spark: SparkSession, settings: ApplySettings) -> list[tuple[str, str | None]]:
    frame = spark.createDataFrame(
        [
            ("DB", "APP", "ACCOUNT", None),
            ("DB", "APP", "AUDIT", None),
            ("DB", "APP", "ACCOUNT", "0a"),
            ("OTHER", "HR", "EMP", None),
        ],
        LCRS,
    )
    rows = frame.where(passes_rules(settings)).collect()
    return sorted(
        ((f"{r.object_owner}.{r.object_name}", r.tag) for r in rows),
        key=lambda row: (row[0], row[1] or ""),
    )


def test_a_negative_table_rule_discards_that_table_only(spark: SparkSession) -> None:
    settings = ApplySettings("A", ("DB",), (), negative_rules=(ApplyRule("DB", "APP", "AUDIT"),))
    assert _passing(spark, settings) == [
        ("APP.ACCOUNT", None),
        ("APP.ACCOUNT", "0a"),
        ("HR.EMP", None),
    ]


def test_the_negative_set_wins_over_a_positive_schema_rule(spark: SparkSession) -> None:
    settings = ApplySettings(
        "A",
        ("DB",),
        (),
        negative_rules=(ApplyRule(tag="0A"),),
        positive_rules=(ApplyRule(schema="APP"),),
    )
    assert _passing(spark, settings) == [("APP.ACCOUNT", None), ("APP.AUDIT", None)]


def test_a_positive_tag_rule_and_the_tag_rule(spark: SparkSession) -> None:
    tagged_only = ApplySettings("A", ("DB",), (), positive_rules=(ApplyRule(tag="NOT NULL"),))
    assert _passing(spark, tagged_only) == [("APP.ACCOUNT", "0a")]
    untagged = ApplySettings("A", ("DB",), (), discard_tagged=True)
    assert ("APP.ACCOUNT", "0a") not in _passing(spark, untagged)


def test_rules_are_published_in_the_dictionary_and_read_back(spark: SparkSession) -> None:
    account = table_definition("APP.ACCOUNT", {"ID": "NUMBER(6)"}, primary_key=["ID"])
    settings = apply_settings(
        account,
        apply_name="APPLY_RULES_READ_BACK",
        negative_rules=(ApplyRule("ORCL", "APP", "AUDIT"),),
        positive_rules=(ApplyRule(schema="APP"), ApplyRule(tag="NULL")),
    )
    catalog = Catalog("rules")
    admin.publish_settings(spark, catalog, settings)
    loaded = admin.load_settings(spark, catalog, settings.apply_name)
    assert (loaded.negative_rules, loaded.positive_rules) == (
        settings.negative_rules,
        settings.positive_rules,
    )
    assert rule_condition_text(loaded.negative_rules[0]) == (
        "(:dml.get_source_database_name() = 'ORCL') AND (:dml.get_object_owner() = 'APP') "
        "AND (:dml.get_object_name() = 'AUDIT')"
    )
