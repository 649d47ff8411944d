"""Rule sets and tags (spec rule 2): which LCRs an apply process applies at all.

Evaluated on every LCR of a committed transaction before anything else looks at it: the tag rule
(``discard_tagged``), then the negative rule set (an LCR any of its rules matches is discarded),
then the positive rule set when one is declared (an LCR must match one of its rules). A row LCR
that passes must still belong to a destination table (the tables of lakeapply.yml are the apply
process's table rules). The LCRs the rules discard are not messages of their transaction.

A positive table rule with a ``condition`` is a subset rule (silver/subset.py): it selects row
LCRs by their column values and migrates the UPDATEs that cross the subset's border. A positive
rule's ``transformations`` then run on the LCRs it selects (the first rule in declared order that
selects an LCR is the one whose transformations run, as Oracle runs the transformation of the rule
that evaluated TRUE): renames of schema and table first change where the LCR is routed.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.silver.settings import ApplyRule, ApplySettings
from lakeapply.silver.subset import condition_text, in_subset, migrated, subset_passes
from lakeapply.silver.transformations import transformed_lcr_columns

# Which positive rule selected a row LCR (its index), while rules run.
SELECTING_RULE = "__lakeapply_selecting_rule"


def rule_matches(rule: ApplyRule) -> Column:
    """The rule's condition on an LCR's names and tag (NULL fields never match a named one);
    a subset rule's condition on column values is :func:`rule_selects`."""
    conditions = []
    if rule.source_database is not None:
        conditions.append(F.col("source_database_name") == rule.source_database)
    if rule.schema is not None:
        conditions.append(F.col("object_owner") == rule.schema)
    if rule.table is not None:
        conditions.append(F.col("object_name") == rule.table)
    if rule.tag == "NULL":
        conditions.append(F.col("tag").isNull())
    elif rule.tag == "NOT NULL":
        conditions.append(F.col("tag").isNotNull())
    elif rule.tag is not None:
        conditions.append(F.upper(F.col("tag")) == rule.tag.upper())
    matches = reduce(Column.__and__, conditions, F.lit(True))
    return F.coalesce(matches, F.lit(False))


def _any(rules: tuple[ApplyRule, ...]) -> Column:
    return reduce(Column.__or__, (rule_matches(rule) for rule in rules), F.lit(False))


def _row_lcr() -> Column:
    return F.coalesce(F.col("lcr_kind") == "ROW", F.lit(False))


def rule_selects(rule: ApplyRule) -> Column:
    """True for the LCRs the rule selects: its names and tag, and for a subset rule its
    condition on the image the LCR's command is judged by (subset rules see row LCRs only)."""
    if rule.condition is None:
        return rule_matches(rule)
    pair = ((rule_matches(rule), rule.condition),)
    return _row_lcr() & subset_passes(in_subset(pair, "old"), in_subset(pair, "new"))


def _subset_images(settings: ApplySettings) -> tuple[Column, Column]:
    pairs = tuple(
        (rule_matches(rule) & _row_lcr(), rule.condition)
        for rule in settings.positive_rules or ()
        if rule.condition is not None
    )
    return in_subset(pairs, "old"), in_subset(pairs, "new")


def passes_rules(settings: ApplySettings) -> Column:
    """True for the LCRs the apply process's tag rule and rule sets let through."""
    passes = F.col("tag").isNull() if settings.discard_tagged else F.lit(True)
    if settings.negative_rules:
        passes = passes & ~_any(settings.negative_rules)
    if settings.positive_rules is not None:
        plain = tuple(rule for rule in settings.positive_rules if rule.condition is None)
        positive = _any(plain)
        if len(plain) < len(settings.positive_rules):
            positive = positive | subset_passes(*_subset_images(settings))
        passes = passes & positive
    return passes


def apply_rule_actions(rows: DataFrame, settings: ApplySettings) -> DataFrame:
    """Row migration of the subset rules, then the transformations of the rule that selected
    each LCR; ``rows`` are the row LCRs :func:`passes_rules` let through."""
    positive = settings.positive_rules or ()
    if any(rule.condition is not None for rule in positive):
        plain = tuple(rule for rule in positive if rule.condition is None)
        in_old, in_new = _subset_images(settings)
        rows = rows.withColumns(migrated(in_old, in_new, ~_any(plain)))
    if not any(rule.transformations for rule in positive):
        return rows
    selecting: Column = F.lit(None).cast("int")
    for index, rule in reversed(list(enumerate(positive))):
        selecting = F.when(rule_selects(rule), F.lit(index)).otherwise(selecting)
    rows = rows.withColumn(SELECTING_RULE, selecting)
    columns: dict[str, Column] = {}
    for index, rule in enumerate(positive):
        if not rule.transformations:
            continue
        for name, value in transformed_lcr_columns(rule.transformations).items():
            columns[name] = F.when(F.col(SELECTING_RULE) == index, value).otherwise(
                columns.get(name, F.col(name))
            )
    return rows.withColumns(columns).drop(SELECTING_RULE)


def rule_condition_text(rule: ApplyRule) -> str:
    """The rule's condition as Oracle would show it in DBA_STREAMS_RULES.RULE_CONDITION."""
    parts = []
    if rule.source_database is not None:
        parts.append(f":dml.get_source_database_name() = '{rule.source_database}'")
    if rule.schema is not None:
        parts.append(f":dml.get_object_owner() = '{rule.schema}'")
    if rule.table is not None:
        parts.append(f":dml.get_object_name() = '{rule.table}'")
    if rule.tag in ("NULL", "NOT NULL"):
        parts.append(f":dml.get_tag() IS {rule.tag}")
    elif rule.tag is not None:
        parts.append(f":dml.get_tag() = HEXTORAW('{rule.tag.upper()}')")
    if rule.condition is not None:
        parts.append(condition_text(rule.condition))
    return " AND ".join(f"({part})" for part in parts) or "TRUE"


def routing_frame(spark: SparkSession, settings: ApplySettings) -> DataFrame:
    """(source database, owner, name) -> silver table of every routed source object."""
    # One destination per source object (a dropped table's name may be a live one's again).
    routed = {t.source_object: settings.table_for(*t.source_object) for t in settings.tables}
    return spark.createDataFrame(
        [(*source, t.silver_table) for source, t in routed.items() if t is not None],
        "source_database_name string, object_owner string, object_name string, silver_table string",
    )
