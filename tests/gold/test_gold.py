"""The gold layer: dbt builds the Oracle-named views in-process on the suite's session.

One ``dbt build`` (views, data tests, unit tests) runs for the whole module over the sample of
tests/gold/sample_dictionary.py; the tests then read the views.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import pytest
from pyspark.sql import Row, SparkSession

from lakeapply.contract.identifiers import quote
from lakeapply.gold import GoldError, GoldReport, render_sqlplus, run_gold, session_warehouse
from lakeapply.gold.runner import SUMMARY_COLUMNS, _number_text, nls_format
from lakeapply.runtime.catalog import Catalog
from tests.gold import sample_dictionary as sample
from tests.gold.sample_dictionary import at

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`: its module-scoped
# fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)


@dataclass(frozen=True)
class Gold:
    catalog: Catalog
    report: GoldReport
    ansi_before: str | None


@pytest.fixture(scope="module")
def gold(spark: SparkSession) -> Iterator[Gold]:
    catalog = Catalog("tgold")
    sample.populate(spark, catalog)
    ansi_before = spark.conf.get("spark.sql.ansi.enabled")
    report = run_gold(spark, session_warehouse(spark), catalog.prefix)
    yield Gold(catalog, report, ansi_before)


def view(spark: SparkSession, gold: Gold, name: str) -> list[Row]:
    frame = spark.table(f"{gold.catalog.prefix}_gold.{name}")
    return sorted(frame.collect(), key=lambda row: tuple(str(value) for value in row))


def test_dbt_build_creates_every_view_and_passes_every_test(gold: Gold) -> None:
    report = gold.report
    assert report.success, report.failures
    assert report.models == 41  # 20 staging, 3 intermediate, 18 marts
    assert report.unit_tests_passed == 9
    assert report.tests_passed >= 40
    assert (report.tests_failed, report.tests_warned, report.errors, report.skipped) == (0, 0, 0, 0)


def test_the_shared_session_gets_its_settings_back(spark: SparkSession, gold: Gold) -> None:
    # dbt-spark sets spark.sql.ansi.enabled=false on the session it uses; run_gold restores it.
    assert gold.ansi_before == "true"
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # the suite's value, not dbt's


def test_dba_apply_progress_shows_the_gap_aware_low_watermark(
    spark: SparkSession, gold: Gold
) -> None:
    rows = view(spark, gold, "dba_apply_progress")

    assert rows == [
        Row(
            APPLY_NAME=sample.APPLY,
            SOURCE_DATABASE=sample.DB,
            # 1020 is committed but deferred in the spill: not max(CSCN) 1040, not the engine's 1040
            APPLIED_MESSAGE_NUMBER=1010,
            APPLIED_MESSAGE_CREATE_TIME=at("12:00:05"),
            APPLY_TIME=at("12:00:20"),
            OLDEST_MESSAGE_NUMBER=1012,  # the open transaction's first LCR
            OLDEST_TRANSACTION_ID=sample.OPEN_TRANSACTION,
            SPILL_MESSAGE_NUMBER=1012,
        ),
        Row(
            APPLY_NAME=sample.HALTED,
            SOURCE_DATABASE=sample.DB,
            # aborted at 2010: that transaction is in the error queue and processed (rule 9);
            # the one committed after it is the oldest SCN
            APPLIED_MESSAGE_NUMBER=2010,
            APPLIED_MESSAGE_CREATE_TIME=at("11:29:10"),
            APPLY_TIME=at("11:30:00"),
            OLDEST_MESSAGE_NUMBER=2015,
            OLDEST_TRANSACTION_ID=sample.HALTED_WAITING,
            SPILL_MESSAGE_NUMBER=2015,
        ),
    ]


def test_the_coordinator_shows_state_counters_and_both_watermarks(
    spark: SparkSession, gold: Gold
) -> None:
    demo, halted = view(spark, gold, "v_streams_apply_coordinator")

    assert demo.asDict() == {
        "APPLY_NAME": sample.APPLY,
        "STATE": "IDLE",
        "TOTAL_RECEIVED": 12,
        "TOTAL_APPLIED": 3,
        "TOTAL_IGNORED": 0,
        "TOTAL_ROLLBACKS": 0,
        "TOTAL_ERRORS": 1,
        "LWM_MESSAGE_NUMBER": 1010,
        "LWM_MESSAGE_CREATE_TIME": at("12:00:05"),
        "HWM_MESSAGE_NUMBER": 1040,
        "HWM_MESSAGE_CREATE_TIME": at("12:00:18"),
        "HWM_TIME": at("12:01:00"),
        "STARTUP_TIME": at("11:00:00"),
    }
    assert (halted.APPLY_NAME, halted.STATE, halted.TOTAL_APPLIED, halted.TOTAL_ERRORS) == (
        sample.HALTED,
        "ABORTED",
        1,
        1,
    )
    assert (halted.LWM_MESSAGE_NUMBER, halted.HWM_MESSAGE_NUMBER, halted.STARTUP_TIME) == (
        2010,
        2010,
        None,
    )


def test_dba_apply_error_lists_the_error_transaction_and_its_messages(
    spark: SparkSession, gold: Gold
) -> None:
    errors = view(spark, gold, "dba_apply_error")
    assert [(e.APPLY_NAME, e.SOURCE_TRANSACTION_ID) for e in errors] == [
        (sample.APPLY, sample.ERROR_TRANSACTION),
        (sample.HALTED, sample.HALTED_TRANSACTION),
    ]
    assert errors[0].asDict() == {
        "APPLY_NAME": sample.APPLY,
        "QUEUE_NAME": "APPLY_DEMO_QUEUE",
        "LOCAL_TRANSACTION_ID": sample.LOCAL_ERROR_TRANSACTION,
        "SOURCE_DATABASE": sample.DB,
        "SOURCE_TRANSACTION_ID": sample.ERROR_TRANSACTION,
        "SOURCE_COMMIT_SCN": 1040,
        "MESSAGE_NUMBER": 2,
        "ERROR_NUMBER": 26787,
        "ERROR_MESSAGE": sample.ERROR_MESSAGE,
        "RECIPIENT_ID": 0,
        "RECIPIENT_NAME": "LAKEAPPLY",
        "MESSAGE_COUNT": 2,
        "ERROR_CREATION_TIME": at("12:01:00"),
    }

    messages = sorted(
        (m for m in view(spark, gold, "dba_apply_error_messages") if m.APPLY_NAME == sample.APPLY),
        key=lambda m: m.TRANSACTION_MESSAGE_NUMBER,
    )
    assert [
        (
            m.TRANSACTION_MESSAGE_NUMBER,
            m.OPERATION,
            m.SOURCE_OBJECT_NAME,
            m.OBJECT_NAME,
            m.ERROR_NUMBER,
        )
        for m in messages
    ] == [
        (1, "INSERT", "COURSE", sample.COURSE_SILVER, None),
        (2, "UPDATE", "STUDENT", sample.STUDENT_SILVER, 26787),
    ]
    assert {m.OBJECT_OWNER for m in messages} == {gold.catalog.silver}
    assert all(len(m.MESSAGE_ID) == 32 for m in messages)


def test_dba_apply_shows_the_error_of_an_aborted_apply_only(
    spark: SparkSession, gold: Gold
) -> None:
    assert [(r.APPLY_NAME, r.STATUS, r.ERROR_NUMBER) for r in view(spark, gold, "dba_apply")] == [
        (sample.APPLY, "ENABLED", None),
        (sample.HALTED, "ABORTED", 26787),
    ]


def test_dba_apply_parameters_completes_the_parameters_from_the_apply_process(
    spark: SparkSession, gold: Gold
) -> None:
    rows = [tuple(r) for r in view(spark, gold, "dba_apply_parameters")]
    assert rows == [
        (sample.APPLY, "COMMIT_SERIALIZATION", "DEPENDENT_TRANSACTIONS", "NO"),
        (sample.APPLY, "DISABLE_ON_ERROR", "N", "YES"),
        (sample.APPLY, "MAX_CYCLE_BATCHES", "100", "YES"),
        (sample.HALTED, "COMMIT_SERIALIZATION", "FULL", "YES"),
        (sample.HALTED, "DISABLE_ON_ERROR", "Y", "NO"),
    ]


def test_apply_lag_per_table(spark: SparkSession, gold: Gold) -> None:
    lag = {r.OBJECT_NAME: r for r in view(spark, gold, "apply_lag")}

    student, course = lag["STUDENT"], lag["COURSE"]
    assert (student.LAST_APPLIED_SCN, student.APPLY_LAG_SECONDS, student.PENDING_TRANSACTIONS) == (
        1030,
        45.0,
        0,
    )
    assert (course.LAST_APPLIED_SCN, course.APPLY_LAG_SECONDS, course.PENDING_TRANSACTIONS) == (
        1010,
        15.0,
        1,
    )
    assert course.FIRST_PENDING_COMMIT_SCN == 1020


def test_the_dictionary_settings_views(spark: SparkSession, gold: Gold) -> None:
    assert [
        (r.SOURCE_OBJECT_NAME, r.INSTANTIATION_SCN)
        for r in view(spark, gold, "dba_apply_instantiated_objects")
    ] == [("COURSE", 900), ("STUDENT", 900)]
    assert [tuple(r)[:4] for r in view(spark, gold, "dba_apply_instantiated_schemas")] == [
        (sample.APPLY, sample.DB, "US03", 800)
    ]
    assert [r.COLUMN_NAME for r in view(spark, gold, "dba_apply_key_columns")] == [
        "SUBJECT",
        "UNIVERSITY",
    ]
    [handler] = view(spark, gold, "dba_apply_conflict_columns")
    assert (handler.METHOD_NAME, handler.RESOLUTION_COLUMN) == ("MAXIMUM", "TUITION_FEE")
    assert [tuple(r) for r in view(spark, gold, "dba_apply_value_dependencies")] == [
        (sample.APPLY, "STUDENT_COURSE", "US03", name, "SUBJECT", 1)
        for name in ("COURSE", "STUDENT")
    ]
    assert [tuple(r) for r in view(spark, gold, "dba_apply_object_dependencies")] == [
        (sample.APPLY, "US03", "STUDENT", "US03", "COURSE")
    ]


def test_render_sqlplus_prints_dba_apply_progress_like_sqlplus(
    spark: SparkSession, gold: Gold
) -> None:
    text = render_sqlplus(spark, gold.catalog.prefix, "DBA_APPLY_PROGRESS")

    assert text == (
        "\n"
        "APPLY_NAME   SOURCE_DATABASE APPLIED_MESSAGE_NUMBER APPLIED_M APPLY_TIM"
        " OLDEST_MESSAGE_NUMBER OLDEST_TRANSACTION_ID SPILL_MESSAGE_NUMBER\n"
        "------------ --------------- ---------------------- --------- ---------"
        " --------------------- --------------------- --------------------\n"
        "APPLY_DEMO   ORCL                              1010 01-MAY-24 01-MAY-24"
        "                  1012 1.15.105                              1012\n"
        "APPLY_HALTED ORCL                              2010 01-MAY-24 01-MAY-24"
        "                  2015 2.3.202                               2015\n"
    )


def test_the_summary_columns_select_and_fit_an_80_column_terminal(
    spark: SparkSession, gold: Gold
) -> None:
    for view, columns in SUMMARY_COLUMNS.items():
        text = render_sqlplus(spark, gold.catalog.prefix, view, select=columns)
        headings = text.splitlines()[1].split()
        assert headings == [c[: len(h)] for c, h in zip(columns, headings, strict=True)]
        assert max(len(line) for line in text.splitlines()) <= 80, text


def test_selecting_a_column_a_view_does_not_have_fails_naming_it(
    spark: SparkSession, gold: Gold
) -> None:
    with pytest.raises(GoldError, match="NO_SUCH"):
        render_sqlplus(spark, gold.catalog.prefix, "dba_apply", select=["APPLY_NAME", "NO_SUCH"])


def test_render_sqlplus_prints_dba_apply_error_with_wrapped_messages(
    spark: SparkSession, gold: Gold
) -> None:
    text = render_sqlplus(
        spark, gold.catalog.prefix, "dba_apply_error", nls_date_format="YYYY-MM-DD HH24:MI:SS"
    )

    lines = text.splitlines()
    assert lines[1].split() == [
        "APPLY_NAME",
        "QUEUE_NAME",
        "LOCAL_TRANSACTION_ID",
        "SOURCE_DATABASE",
        "SOURCE_TRANSACTION_ID",
        "SOURCE_COMMIT_SCN",
        "MESSAGE_NUMBER",
        "ERROR_NUMBER",
        "ERROR_MESSAGE",
        "RECIPIENT_ID",
        "RECIPIENT_NAME",
        "MESSAGE_COUNT",
        "ERROR_CREATION_TIME",  # as wide as "YYYY-MM-DD HH24:MI:SS": not cut
    ]
    assert set(lines[2]) == {"-", " "}
    assert "2024-05-01 12:01:00" in lines[3]
    # The message wraps within its 40-character column onto two more lines, cut mid-word as
    # SQL*Plus does (SET WRAP ON, not WORD_WRAPPED).
    assert len(sample.ERROR_MESSAGE) == 86
    assert len(lines) == 3 + 3 + 3  # blank, heading, dashes; two errors of three lines each
    assert sample.ERROR_MESSAGE[:40] in lines[3]
    assert lines[4].strip() == sample.ERROR_MESSAGE[40:80]
    assert lines[5].strip() == sample.ERROR_MESSAGE[80:]


def test_render_sqlplus_refuses_an_unknown_view(spark: SparkSession) -> None:
    with pytest.raises(GoldError, match="unknown gold view"):
        render_sqlplus(spark, "lakeapply", "dba_tables; drop table x")


def test_a_duplicate_key_in_a_silver_table_fails_the_build(spark: SparkSession, gold: Gold) -> None:
    # COURSE's substitute key (UNIVERSITY, SUBJECT) is narrower than its primary key: a second
    # Cambridge/Physics row for another year is a duplicate for the apply.
    course = gold.catalog.silver_table(sample.COURSE_SILVER)
    schema = spark.table(course).schema
    duplicate = {"UNIVERSITY": "Cambridge", "SUBJECT": "Physics", "ENTRY_YEAR": 1951}
    spark.createDataFrame([sample.silver_row(schema, duplicate)], schema).write.format(
        "delta"
    ).mode("append").saveAsTable(course)
    try:
        with pytest.raises(GoldError, match="assert_no_duplicate_keys_in_silver_tables") as raised:
            run_gold(
                spark,
                session_warehouse(spark),
                gold.catalog.prefix,
                "test",
                select=["assert_no_duplicate_keys_in_silver_tables"],
            )
        assert raised.value.report is not None
        assert raised.value.report.tests_failed == 1
    finally:
        spark.sql(f"DELETE FROM {course} WHERE ENTRY_YEAR = 1951")


def test_nls_date_formats_and_sqlplus_numbers() -> None:
    moment = datetime(2024, 5, 1, 13, 2, 3)
    assert nls_format(moment, "DD-MON-RR") == "01-MAY-24"
    assert nls_format(moment, "YYYY-MM-DD HH24:MI:SS") == "2024-05-01 13:02:03"
    assert nls_format(moment, "DD/MM/YYYY HH:MI:SS AM") == "01/05/2024 01:02:03 PM"
    assert _number_text(1010, 10) == "1010"
    assert _number_text(Decimal("0.50"), 10) == ".5"
    assert _number_text(Decimal("-12.3400"), 10) == "-12.34"
    assert _number_text(12345678901234, 10) == "1.2346E+13"


def test_a_table_with_hostile_names_is_checked_as_data(spark: SparkSession, gold: Gold) -> None:
    # The build passed its duplicate-key test over HOSTILE_SILVER (quoted key column); a
    # duplicate there must fail it, which proves the check read the table.
    hostile = gold.catalog.silver_table(sample.HOSTILE_SILVER)
    schema = spark.table(hostile).schema
    spark.createDataFrame([(Decimal(2), "b")], schema).write.format("delta").mode(
        "append"
    ).saveAsTable(hostile)
    try:
        with pytest.raises(GoldError, match="assert_no_duplicate_keys_in_silver_tables"):
            run_gold(
                spark,
                session_warehouse(spark),
                gold.catalog.prefix,
                "test",
                select=["assert_no_duplicate_keys_in_silver_tables"],
            )
    finally:
        spark.sql(f"DELETE FROM {hostile} WHERE {quote(sample.HOSTILE_VALUE)} = 'b'")
    assert spark.catalog.tableExists(gold.catalog.silver_table(sample.COURSE_SILVER))
    lag = {r.OBJECT_NAME: r for r in view(spark, gold, "apply_lag")}
    assert sample.HOSTILE_TABLE in lag
