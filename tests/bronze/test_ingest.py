"""Bronze ingest: lossless, precise quarantine reasons, exactly once."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from click.testing import CliRunner
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply import cli
from lakeapply.bronze.ingest import SimulatedCrash, ensure_bronze_tables, ingest
from lakeapply.landing.generator import WorkloadSpec, write_workload
from lakeapply.runtime.catalog import Catalog

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`: its module-scoped
# fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)

INSERT = {
    "source_database_name": "ORCL",
    "command_type": "INSERT",
    "object_owner": "US03",
    "object_name": "STUDENT",
    "transaction_id": "4.11.854",
    "scn": 1621214,
    "new_values": [{"column_name": "STUDENT_KEY", "data_type": "NUMBER", "value": "1011"}],
}
COMMIT = {
    "source_database_name": "ORCL",
    "command_type": "COMMIT",
    "transaction_id": "4.11.854",
    "scn": 1621215,
}


def line(record: dict[str, object]) -> str:
    return json.dumps(record) + "\n"


def with_(**changes: object) -> dict[str, object]:
    record = dict(INSERT)
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def bronze(spark: SparkSession, catalog: Catalog) -> tuple[int, int]:
    return (
        spark.table(catalog.bronze_table("lcr")).count(),
        spark.table(catalog.bronze_table("quarantine")).count(),
    )


def test_valid_lcrs_land_in_bronze_with_their_lineage(spark, catalog, landing: Path) -> None:
    first, second = line(INSERT), line(COMMIT)
    (landing / "a.jsonl").write_text(first + second)

    report = ingest(spark, catalog, landing)

    actual = spark.table(catalog.bronze_table("lcr")).select(
        "command_type", "lcr_kind", "line_number", "byte_offset", "ingest_batch_id"
    )
    expected = spark.createDataFrame(
        [("INSERT", "ROW", 1, 0, 1), ("COMMIT", "DIRECTIVE", 2, len(first.encode()), 1)],
        actual.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    assert report.lines == 2
    assert report.bronze_rows == 2
    # Nothing to quarantine: no commit on the quarantine table (only its creation, version 0).
    quarantine = catalog.bronze_table("quarantine")
    assert spark.sql(f"DESCRIBE HISTORY {quarantine}").select("version").collect() == [(0,)]


def test_an_ingest_after_its_caller_created_the_bronze_tables_is_the_first_batch(
    spark, catalog, landing: Path
) -> None:
    (landing / "a.jsonl").write_text(line(INSERT) + line(COMMIT))
    created = ensure_bronze_tables(spark, catalog)

    report = ingest(spark, catalog, landing, bronze_tables_created=created)

    assert (report.batch_id, report.lines, report.bronze_rows) == (1, 2, 2)
    assert bronze(spark, catalog) == (2, 0)
    assert ingest(spark, catalog, landing, bronze_tables_created=set()).batch_id is None


def test_the_ingest_command_after_a_killed_batch_also_ingests_what_landed_since_its_plan(
    spark, catalog, landing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the crash soak: the run after a kill finished the killed batch (its planned byte
    # ranges) and stopped, so lines landed after that plan waited for another ingest.
    first = with_(transaction_id="1.1.1", scn=10)
    (landing / "a.jsonl").write_text(line(first) + line({**COMMIT, "transaction_id": "1.1.1"}))
    with pytest.raises(SimulatedCrash):
        ingest(spark, catalog, landing, crash_after="plan")
    with (landing / "a.jsonl").open("a") as grown:
        grown.write(line(with_(transaction_id="2.2.2", scn=20)))
    monkeypatch.setattr(cli, "_spark", lambda _: spark)
    monkeypatch.setattr(cli, "_catalog", lambda _: catalog)

    result = CliRunner().invoke(cli.main, ["ingest", "--landing", str(landing)])

    assert result.exit_code == 0, result.output
    assert "ingest batch 1 (resumed): 2 lines" in result.output
    assert "ingest batch 2: 1 lines" in result.output
    assert bronze(spark, catalog) == (3, 0)


BAD_LINES = [
    ("{not json", None, "not a JSON object"),
    ("   ", None, "empty line"),
    ("[1, 2]", None, "not a JSON object"),
    (json.dumps(with_(source_database_name=None)), "source_database_name", "required field"),
    (json.dumps(with_(transaction_id=None)), "transaction_id", "required field"),
    (json.dumps(with_(scn="abc")), "scn", "must be an integer"),
    (json.dumps(with_(command_type="MERGE")), "command_type", "must be one of"),
    (json.dumps(with_(transaction_id="4.11")), "transaction_id", "usn.slot.sqn"),
    (json.dumps(with_(new_values=None)), "new_values", "requires field 'new_values'"),
    (json.dumps(with_(command_type="DELETE", new_values=None)), "old_values", "requires"),
    (json.dumps(with_(object_owner=None)), "object_owner", "requires field"),
    (json.dumps(with_(object_name='BAD"NAME')), "object_name", "must be an identifier"),
    (json.dumps(with_(new_values=[1, 2])), "new_values", "array of column values"),
    (
        json.dumps(with_(new_values=[{"data_type": "NUMBER", "value": "1"}])),
        "new_values",
        "new_values[0].column_name",
    ),
    (
        json.dumps(with_(new_values=[{"column_name": "A", "data_type": "INT", "value": "1"}])),
        "new_values",
        "new_values[0].data_type must be one of",
    ),
    (json.dumps(with_(source_time="yesterday")), "source_time", "ISO-8601"),
    (
        json.dumps(
            {
                **COMMIT,
                "command_type": "ALTER TABLE",
                "object_owner": "US03",
                "object_name": "STUDENT",
            }
        ),
        "ddl_text",
        "requires field 'ddl_text'",
    ),
]


@pytest.fixture(scope="module")
def quarantined(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[int, object]:
    """One ingest of a file holding every kind of bad line (one Spark ingest, not one per case)."""
    landing = tmp_path_factory.mktemp("bad_landing")
    texts = [line(INSERT)] + [text + "\n" for text, _, _ in BAD_LINES]
    (landing / "bad.jsonl").write_text("".join(texts))
    catalog = Catalog("quarantine_cases")
    ingest(spark, catalog, landing)
    assert bronze(spark, catalog) == (1, len(BAD_LINES))
    return {r.line_number: r for r in spark.table(catalog.bronze_table("quarantine")).collect()}


@pytest.mark.parametrize(("index", "case"), list(enumerate(BAD_LINES)))
def test_each_bad_line_is_quarantined_with_the_field_and_reason(
    quarantined: dict[int, object], index: int, case: tuple[str, str | None, str]
) -> None:
    text, field, reason_part = case
    row = quarantined[index + 2]
    assert (row.raw_line, row.field) == (text, field)  # type: ignore[attr-defined]
    assert reason_part in row.reason  # type: ignore[attr-defined]


def test_an_incomplete_last_line_waits_for_the_next_run(spark, catalog, landing: Path) -> None:
    path = landing / "growing.jsonl"
    whole = line(COMMIT)
    path.write_text(line(INSERT) + whole[:20])

    first = ingest(spark, catalog, landing)
    with path.open("a") as handle:
        handle.write(whole[20:])
    second = ingest(spark, catalog, landing)

    assert (first.lines, second.lines) == (1, 1)
    rows = spark.table(catalog.bronze_table("lcr")).orderBy("line_number").collect()
    assert [(r.command_type, r.line_number, r.ingest_batch_id) for r in rows] == [
        ("INSERT", 1, 1),
        ("COMMIT", 2, 2),
    ]
    assert rows[1].byte_offset == len(line(INSERT).encode())


def test_re_running_ingest_adds_nothing(spark, catalog, landing: Path) -> None:
    (landing / "a.jsonl").write_text(line(INSERT) + "oops\n" + line(COMMIT))

    ingest(spark, catalog, landing)
    again = ingest(spark, catalog, landing)

    assert again.batch_id is None
    assert bronze(spark, catalog) == (2, 1)


def test_every_few_batches_the_ingest_log_is_compacted(
    spark, catalog, landing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lakeapply.runtime.catalog.BOOKKEEPING_COMPACTION_INTERVAL", 2)
    log = catalog.bronze_table("ingest_log")
    for batch, name in enumerate(["a", "b"], start=1):
        (landing / f"{name}.jsonl").write_text(line(INSERT) + line(COMMIT))
        assert ingest(spark, catalog, landing).batch_id == batch

    # Batch 1 left its PLANNED and COMMITTED rows in two files; batch 2 (due) compacted all four.
    [detail] = spark.sql(f"DESCRIBE DETAIL {log}").collect()
    assert detail.numFiles == 1
    phases = sorted(tuple(r) for r in spark.table(log).groupBy("phase").count().collect())
    assert phases == [("COMMITTED", 2), ("PLANNED", 2)]


@pytest.mark.parametrize(
    "crash_after",
    [
        pytest.param("plan", marks=pytest.mark.slow),  # make test: "lcr" alone (CI time)
        "lcr",
        pytest.param("quarantine", marks=pytest.mark.slow),
    ],
)
def test_a_crash_between_writes_then_a_rerun_loses_and_duplicates_nothing(
    spark, catalog, landing: Path, crash_after: str
) -> None:
    path = landing / "a.jsonl"
    path.write_text(line(INSERT) + "oops\n")
    with pytest.raises(SimulatedCrash):
        ingest(spark, catalog, landing, crash_after=crash_after)
    # The file grows while the ingest is down: the resumed batch keeps its planned range.
    with path.open("a") as handle:
        handle.write(line(COMMIT))

    resumed = ingest(spark, catalog, landing)
    follow_up = ingest(spark, catalog, landing)

    assert resumed.resumed
    assert (resumed.lines, follow_up.lines) == (2, 1)
    assert bronze(spark, catalog) == (2, 1)


def test_gzip_files_are_read_whole(spark, catalog, landing: Path) -> None:
    (landing / "a.jsonl.gz").write_bytes(gzip.compress((line(INSERT) + line(COMMIT)).encode()))

    report = ingest(spark, catalog, landing)

    assert (report.lines, report.bronze_rows) == (2, 2)


def test_lines_in_landing_equal_bronze_plus_quarantine_for_a_generated_workload(
    spark, catalog, landing: Path
) -> None:
    workload = write_workload(
        WorkloadSpec(
            seed=3, transactions=300, source_databases=("DB1.X", "DB2.X"), bad_line_ratio=0.02
        ),
        landing,
    )
    (landing / "DB1_X").mkdir(exist_ok=True)

    ingest(spark, catalog, landing)

    lcrs, quarantined = bronze(spark, catalog)
    assert lcrs + quarantined == workload.line_count
    assert quarantined == workload.bad_line_count
    sources = {
        r[0]
        for r in spark.table(catalog.bronze_table("lcr"))
        .select(F.col("source_database_name"))
        .distinct()
        .collect()
    }
    assert {"DB1.X", "DB2.X"} <= sources
