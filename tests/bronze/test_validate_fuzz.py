"""Property-based fuzzing of the line classifier (Spark: ``classify_lines``).

Arbitrary text and arbitrary JSON objects (most of them near-LCRs: a valid LCR with one field
replaced by any JSON value, or removed) never make the classifier raise or drop a line; every
line is either a valid LCR or quarantined with a reason and, if any, a contract field. And a line
the classifier calls valid is valid under the contract's JSON Schema, with every field it needs.

Each example is a batch of lines classified by one Spark job, so a few examples cover hundreds
of lines.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lakeapply.bronze.validate import classify_lines
from lakeapply.contract.lcr import LCR_FIELDS, ROW_COMMANDS, lcr_json_schema

VALID: dict[str, Any] = {
    "source_database_name": "ORCL",
    "command_type": "UPDATE",
    "object_owner": "US03",
    "object_name": "STUDENT",
    "transaction_id": "4.11.854",
    "scn": 1621214,
    "position": "0001",
    "old_values": [{"column_name": "STUDENT_KEY", "data_type": "NUMBER", "value": "1011"}],
    "new_values": [{"column_name": "SURNAME", "data_type": "VARCHAR2", "value": None}],
}
FIELD_NAMES = [f.name for f in LCR_FIELDS]
REQUIRED = [f.name for f in LCR_FIELDS if f.required]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["INSERT", "COMMIT", "DELETE", "4.11.854", "2013-03-31T23:59:58", "NUMBER"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.sampled_from(["column_name", "data_type", "value", "x"]), children, max_size=4
        ),
    ),
    max_leaves=8,
)


@st.composite
def near_lcrs(draw: st.DrawFn) -> str:
    record = dict(VALID)
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        field = draw(st.sampled_from(FIELD_NAMES))
        if draw(st.booleans()):
            record[field] = draw(json_values)
        else:
            record.pop(field, None)
    return json.dumps(record)


any_line = st.one_of(
    near_lcrs(),
    st.dictionaries(st.sampled_from([*FIELD_NAMES, "x"]), json_values, max_size=8).map(json.dumps),
    st.text(max_size=40).map(lambda text: text.replace("\n", " ")),
    json_values.map(json.dumps),
)


@settings(
    max_examples=6,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(lines=st.lists(any_line, min_size=1, max_size=60))
def test_every_line_is_valid_or_quarantined_with_a_field_and_reason(
    spark: SparkSession, lines: list[str]
) -> None:
    frame = spark.createDataFrame(list(enumerate(lines)), "line_number long, line string")
    rows = classify_lines(frame).orderBy("line_number").collect()

    assert [r.line_number for r in rows] == list(range(len(lines)))  # none dropped or added
    validator = jsonschema.Draft202012Validator(lcr_json_schema())
    for row in rows:
        if row.reason is not None:
            assert row.reason.strip()
            assert row.field is None or row.field in FIELD_NAMES
            continue
        assert row.field is None
        record = json.loads(row.line)
        assert not list(validator.iter_errors(record)), row.line
        assert all(row.lcr[name] is not None for name in REQUIRED), row.line
        if row.lcr.command_type in ROW_COMMANDS:
            assert row.lcr.object_owner is not None and row.lcr.object_name is not None
