"""One identifier quoter and one string-literal quoter: any name or value stays data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lakeapply.contract.identifiers import (
    needs_column_mapping,
    quote,
    quote_qualified,
    split_qualified,
    sql_string_literal,
)
from lakeapply.errors import InvalidIdentifierError

HOSTILE = [
    "A B",
    "X;DROP TABLE sentinel",
    "a`b",
    "``",
    "it's",
    'say "hi"',
    "back\\slash",
    "select",
    "dot.ted",
    "Ünïcødé_名前",
    "(=,)",
]

names = st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s)


@given(st.lists(names, min_size=1, max_size=3))
@settings(max_examples=200, derandomize=True)
def test_a_qualified_name_splits_back_into_its_parts(parts: list[str]) -> None:
    assert split_qualified(quote_qualified(*parts)) == tuple(parts)


def test_plain_dotted_names_split_on_dots() -> None:
    assert split_qualified("db.t") == ("db", "t")


@pytest.mark.parametrize("text", ["`unterminated", "db..t", "db.t`x`", "`a`b"])
def test_a_malformed_qualified_name_is_refused(text: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        split_qualified(text)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_quoted_hostile_name_is_one_column_in_spark(spark: SparkSession, name: str) -> None:
    frame = spark.sql(f"SELECT 1 AS {quote(name)}")
    assert frame.columns == [name]


@pytest.mark.parametrize("value", [*HOSTILE, "", "'", "\\'", "\\", "x' OR '1'='1", "line\nbreak"])
def test_a_string_literal_holds_its_value_exactly(spark: SparkSession, value: str) -> None:
    [row] = spark.sql(f"SELECT {sql_string_literal(value)} AS v").collect()
    assert row.v == value


@pytest.mark.parametrize(
    ("name", "needs"),
    [("ID", False), ("first_name", False), ("A B", True), ("a;b", True), ("名前", True)],
)
def test_names_beyond_plain_characters_need_column_mapping(name: str, needs: bool) -> None:
    assert needs_column_mapping(name) is needs
