"""Rule sets and tags (spec rule 2): which LCRs an apply process applies at all.

Evaluated on every LCR of a committed transaction before anything else looks at it: the tag rule
(``discard_tagged``), then the negative rule set (an LCR any of its rules matches is discarded),
then the positive rule set when one is declared (an LCR must match one of its rules). A row LCR
that passes must still belong to a destination table (the tables of lakeapply.yml are the apply
process's table rules). The LCRs the rules discard are not messages of their transaction.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakeapply.silver.settings import ApplyRule, ApplySettings


def rule_matches(rule: ApplyRule) -> Column:
    """The rule's condition on an LCR (NULL fields never match a named one)."""
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


def passes_rules(settings: ApplySettings) -> Column:
    """True for the LCRs the apply process's tag rule and rule sets let through."""
    passes = F.col("tag").isNull() if settings.discard_tagged else F.lit(True)
    if settings.negative_rules:
        passes = passes & ~_any(settings.negative_rules)
    if settings.positive_rules is not None:
        passes = passes & _any(settings.positive_rules)
    return passes


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
    return " AND ".join(f"({part})" for part in parts) or "TRUE"
