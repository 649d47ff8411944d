"""Capture-format adapters (GoldenGate JSON, Debezium Oracle): record -> contract LCRs, then
through the real ingest and one apply to silver."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakeapply.bronze.formats import (
    CaptureFormat,
    LandingFormats,
    _rows_of_line,
    debezium,
    goldengate,
)
from lakeapply.bronze.formats.common import parse_record
from lakeapply.bronze.ingest import SimulatedCrash, ingest
from lakeapply.errors import CaptureRecordError, ConfigurationError
from lakeapply.silver.config import load_landing_formats
from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

FIXTURES = Path(__file__).parent


def records(name: str) -> list[object]:
    return [parse_record(line) for line in (FIXTURES / name).read_text().splitlines()]


# --- GoldenGate ---------------------------------------------------------------------------------
def test_goldengate_documentation_samples_are_each_their_own_transaction_at_their_position() -> (
    None
):
    insert, update, delete, truncate = (
        goldengate.convert(r, "ORCL") for r in records("ogg_documentation_samples.jsonl")
    )
    row, commit = insert
    assert row["command_type"] == "INSERT"
    assert (row["transaction_id"], row["scn"], row["position"]) == (
        "0.0.2928",
        2928,
        "00000000000000002928",
    )
    assert commit == {
        "source_database_name": "ORCL",
        "transaction_id": "0.0.2928",
        "scn": 2928,
        "position": "00000000000000002928",
        "source_time": "2015-11-05T18:45:36.000000",
        "command_type": "COMMIT",
    }
    assert {v["column_name"]: v["value"] for v in row["new_values"]}["PRODUCT_PRICE"] == "17520.00"
    assert update[0]["command_type"] == "UPDATE" and len(update[0]["new_values"]) == 5
    assert delete[0]["old_values"][0] == {
        "column_name": "CUST_CODE",
        "data_type": "VARCHAR2",
        "value": "DAVE",
    }
    assert truncate[0]["command_type"] == "TRUNCATE TABLE"
    assert truncate[0]["ddl_text"] == 'TRUNCATE TABLE "QASOURCE"."TCUSTORD"'
    assert truncate[0]["commit_scn"] == 5480


def test_goldengate_txind_end_lands_the_commit_at_the_csn() -> None:
    begin, middle, end, whole, open_begin = (
        goldengate.convert(r, "ORCL") for r in records("ogg_transactions.jsonl")
    )
    assert [len(begin), len(middle), len(end), len(whole), len(open_begin)] == [1, 1, 2, 2, 1]
    assert end[1]["command_type"] == "COMMIT"
    assert (end[1]["transaction_id"], end[1]["scn"]) == ("4.11.854", 1621214)
    assert begin[0]["commit_scn"] == 1621214 and begin[0]["transaction_id"] == "4.11.854"


def test_goldengate_numeric_txind_and_date_text_are_understood() -> None:
    record = parse_record(
        '{"table":"S.T","op_type":"I","pos":"12","xid":"1.2.3","txind":"3","csn":"99",'
        '"after":{"D":"1994-09-30:15:33:00.123456789","N":1.50}}'
    )
    row, commit = goldengate.convert(record, "ORCL")
    assert row["new_values"] == [
        {"column_name": "D", "data_type": "TIMESTAMP", "value": "1994-09-30T15:33:00.123456789"},
        {"column_name": "N", "data_type": "NUMBER", "value": "1.50"},
    ]
    assert commit["scn"] == 99


def test_goldengate_columns_flagged_missing_are_left_out_of_the_image() -> None:
    record = parse_record(
        '{"table":"S.T","op_type":"D","pos":"1","before":{"ID":"1","ID_isMissing":false,'
        '"PRICE":null,"PRICE_isMissing":true}}'
    )
    assert goldengate.convert(record, "ORCL")[0]["old_values"] == [
        {"column_name": "ID", "data_type": "VARCHAR2", "value": "1"}
    ]


def test_goldengate_update_without_before_image_identifies_the_row_by_its_primary_key() -> None:
    record = parse_record(
        '{"table":"S.T","op_type":"U","pos":"1","primary_keys":["ID"],"after":{"ID":7,"X":"b"}}'
    )
    assert goldengate.convert(record, "ORCL")[0]["old_values"] == [
        {"column_name": "ID", "data_type": "NUMBER", "value": "7"}
    ]


def test_goldengate_two_part_table_without_source_database_is_rejected_with_the_fix() -> None:
    with pytest.raises(CaptureRecordError, match="--source-database"):
        goldengate.convert(records("ogg_documentation_samples.jsonl")[0], None)


# --- Debezium -----------------------------------------------------------------------------------
def test_debezium_hex_and_dotted_transaction_ids_become_usn_slot_sqn() -> None:
    create = records("debezium_without_transaction_metadata.jsonl")[1]
    row, commit = debezium.convert(create, None)
    assert row["transaction_id"] == "2.10.823"  # 0x0002, 0x000a, 0x00000337 little-endian
    assert (commit["command_type"], commit["scn"]) == ("COMMIT", 2130001)


def test_debezium_snapshot_read_is_an_insert_committed_at_the_snapshot_scn() -> None:
    row, commit = debezium.convert(records("debezium_without_transaction_metadata.jsonl")[0], None)
    assert (row["command_type"], row["transaction_id"], row["commit_scn"]) == (
        "INSERT",
        "0.0.2100000",
        2100000,
    )
    assert (commit["transaction_id"], commit["scn"]) == ("0.0.2100000", 2100000)


def test_debezium_events_with_transaction_metadata_leave_the_commit_to_the_end_event() -> None:
    lines = records("debezium_with_transaction_metadata.jsonl")
    assert len(debezium.convert(lines[1], None)) == 1
    (end,) = debezium.convert(lines[3], None)
    assert end["command_type"] == "COMMIT" and "scn" not in end  # the ingest finds its SCN
    assert end[debezium.PENDING_EVENT_COUNT] == 2
    with pytest.raises(CaptureRecordError, match="BEGIN event: carries no change"):
        debezium.convert(lines[0], None)


def test_debezium_schema_names_decode_decimals_times_and_bytes() -> None:
    column = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal"}
    schema = {
        "fields": [
            {
                "field": "after",
                "fields": [
                    {**column, "field": "PRICE", "parameters": {"scale": "2"}},
                    {"type": "int64", "name": "io.debezium.time.Timestamp", "field": "AT"},
                    {"type": "bytes", "field": "RAWCOL"},
                ],
            }
        ]
    }
    event = {
        "schema": schema,
        "payload": {
            "op": "c",
            "after": {
                "PRICE": "AV+Q",  # 0x015F90 = 90000 -> 900.00
                "AT": 1520085154000,
                "RAWCOL": "3q2+7w==",
                "V": {"scale": 3, "value": "BNI="},  # 1234 -> 1.234
                "LOB": debezium.UNAVAILABLE,
            },
            "source": {"db": "DB", "schema": "S", "table": "T", "txId": "1.2.3", "scn": "5"},
        },
    }
    row = debezium.convert(parse_record(json.dumps(event)), None)[0]
    values = {v["column_name"]: (v["data_type"], v["value"]) for v in row["new_values"]}
    assert values == {
        "PRICE": ("NUMBER", "900.00"),
        "AT": ("TIMESTAMP", "2018-03-03T13:52:34.000000"),
        "RAWCOL": ("RAW", "DEADBEEF"),
        "V": ("NUMBER", "1.234"),
    }
    assert Decimal(values["PRICE"][1]) == Decimal("900")


def test_a_record_the_adapter_cannot_read_is_quarantined_with_the_adapters_reason() -> None:
    fmt = CaptureFormat("debezium-json")
    ((_, problem, field, _),) = _rows_of_line("null", fmt)
    assert problem == "debezium-json: a tombstone (null value after a delete) carries no change"
    ((_, problem, field, _),) = _rows_of_line('{"op":"c","source":{"scn":"1"}}', fmt)
    assert field == "source.db"
    ((line, problem, _, _),) = _rows_of_line("{not json", fmt)
    assert (line, problem) == ("{not json", None)  # the contract checks say what is wrong


def test_an_unknown_capture_format_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ogg-json"):
        CaptureFormat("avro")


# --- through the ingest and one apply -----------------------------------------------------------
TCUSTORD = table_definition(
    "QASOURCE.TCUSTORD",
    {
        "CUST_CODE": "VARCHAR2(4)",
        "ORDER_DATE": "DATE",
        "PRODUCT_CODE": "VARCHAR2(10)",
        "ORDER_ID": "NUMBER",
        "PRODUCT_PRICE": "NUMBER(8,2)",
        "PRODUCT_AMOUNT": "NUMBER(6)",
        "TRANSACTION_ID": "NUMBER",
    },
    primary_key=["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"],
)
CUSTOMERS = table_definition(
    "DEBEZIUM.CUSTOMERS",
    {
        "ID": "NUMBER(9)",
        "FIRST_NAME": "VARCHAR2(255)",
        "LAST_NAME": "VARCHAR2(255)",
        "EMAIL": "VARCHAR2(255)",
    },
    primary_key=["ID"],
    not_null=["ID"],
)


def _land(harness: LakeapplyHarness, *names: str) -> None:
    harness.landing.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(FIXTURES / name, harness.landing / name)


def _quarantine(harness: LakeapplyHarness) -> list[tuple[str, int, str | None, str]]:
    return sorted(
        (Path(r.source_file).name, r.line_number, r.field, r.reason)
        for r in harness.quarantine().collect()
    )


def test_goldengate_files_land_whole_lines_and_apply_committed_transactions(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(destination(TCUSTORD, source="ORCL")))
    _land(lakeapply, "ogg_transactions.jsonl", "ogg_bad.jsonl")

    report = ingest(
        spark,
        lakeapply.catalog,
        lakeapply.landing,
        capture_format=CaptureFormat("ogg-json", "ORCL"),
    )
    lakeapply.apply()

    assert (report.lines, report.bronze_rows, report.quarantined_rows) == (9, 7, 4)
    assert _quarantine(lakeapply) == [
        (
            "ogg_bad.jsonl",
            1,
            "op_type",
            "ogg-json: field 'op_type' must be one of I, U, D, T; got 'X'",
        ),
        (
            "ogg_bad.jsonl",
            2,
            "pos",
            "ogg-json: required field 'pos' is missing (the trail position orders changes)",
        ),
        (
            "ogg_bad.jsonl",
            3,
            "xid",
            "ogg-json: field 'xid' must be a transaction id usn.slot.sqn (e.g. 6.28.807) or a "
            '16-digit hex XID (e.g. 02000a0037030000), got "not-a-xid"',
        ),
        (  # the contract rejects the change: its line, COMMIT included, lands nothing
            "ogg_bad.jsonl",
            4,
            "new_values",
            "new_values[0].column_name must be a non-empty identifier (1-128 characters, no "
            'control characters or double quotes), got A"B',
        ),
    ]
    raw = {r.raw_lcr for r in lakeapply.bronze().collect()}
    assert raw == set((FIXTURES / "ogg_transactions.jsonl").read_text().splitlines())
    silver = {
        (r.CUST_CODE, r.ORDER_ID, r.PRODUCT_PRICE)
        for r in lakeapply.silver(TCUSTORD.qualified_name).collect()
    }
    # the delete's transaction (txind B, no E yet) is open: DAVE stays
    assert silver == {
        ("WILL", Decimal(144), Decimal("17520.00")),
        ("BILL", Decimal(765), Decimal("14000.00")),
        ("DAVE", Decimal(600), Decimal("135000.00")),
    }


@pytest.mark.slow  # the GoldenGate end-to-end test stays in make test (CI time)
def test_debezium_files_land_end_events_as_commits_and_apply_committed_transactions(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    lakeapply.configure(apply_settings(destination(CUSTOMERS, source="ORCLPDB1")))
    _land(
        lakeapply,
        "debezium_with_transaction_metadata.jsonl",
        "debezium_without_transaction_metadata.jsonl",
        "debezium_bad.jsonl",
    )

    report = ingest(
        spark, lakeapply.catalog, lakeapply.landing, capture_format=CaptureFormat("debezium-json")
    )
    lakeapply.apply()

    assert (report.lines, report.bronze_rows, report.quarantined_rows) == (17, 14, 6)
    reasons = {(name, line): reason for name, line, _, reason in _quarantine(lakeapply)}
    assert reasons[("debezium_bad.jsonl", 1)] == (
        "debezium-json: field 'op' must be one of c, u, d, r, t; got \"x\""
    )
    assert reasons[("debezium_bad.jsonl", 3)].startswith(
        "debezium-json: END event of transaction 8.8.8: 1 of its 2 change events have landed"
    )
    assert reasons[("debezium_without_transaction_metadata.jsonl", 4)].endswith("carries no change")
    assert sum("BEGIN event" in reason for reason in reasons.values()) == 3
    commits = {
        (r.transaction_id, r.scn)
        for r in lakeapply.bronze().where("command_type = 'COMMIT'").collect()
    }
    assert {("5.6.641", 2122190), ("6.9.809", 2125544)} <= commits
    silver = {(r.ID, r.EMAIL) for r in lakeapply.silver(CUSTOMERS.qualified_name).collect()}
    # 1005 inserted then deleted; 1007 and 1008 are in transactions that have not committed
    assert silver == {
        (Decimal(1001), "sally.thomas@acme.com"),
        (Decimal(1004), "anne@example.com"),
        (Decimal(1006), "ed@walker.com"),
    }

    # 7.1.1's END arrives in a later batch: its COMMIT takes the SCN of the change landed before
    end = {"status": "END", "id": "7.1.1", "event_count": 1, "data_collections": None}
    (lakeapply.landing / "late_end.jsonl").write_text(json.dumps(end) + "\n")
    ingest(
        spark,
        lakeapply.catalog,
        lakeapply.landing,
        capture_format=CaptureFormat("debezium-json", "ORCLPDB1"),
    )
    lakeapply.apply()

    late = lakeapply.bronze().where("transaction_id = '7.1.1' AND command_type = 'COMMIT'")
    assert [r.scn for r in late.collect()] == [2126001]
    # The apply had already passed SCN 2126001 (later transactions without metadata committed
    # above it), so applying 7.1.1 now would break commit-SCN order: it waits in the error queue
    # as a late COMMIT (ORA-20002) until the DBA re-executes it.
    [queued] = lakeapply.error_queue().where("source_transaction_id = '7.1.1'").collect()
    assert queued.error_number == 20002
    lakeapply.execute_error(lakeapply.local_transaction_id("7.1.1"))
    assert (Decimal(1007), "open@example.com") in {
        (r.ID, r.EMAIL) for r in lakeapply.silver(CUSTOMERS.qualified_name).collect()
    }

    lakeapply.start_apply()  # the late COMMIT aborted the apply (disable_on_error)

    # 8.8.8's END waited in the quarantine (1 of its 2 changes had landed); its other change
    # lands now, so the END is re-examined and its COMMIT lands with this batch
    second_change = json.loads((FIXTURES / "debezium_bad.jsonl").read_text().splitlines()[1])
    second_change["after"] = {**second_change["after"], "ID": 1009, "EMAIL": "rest@example.com"}
    second_change["source"] = {**second_change["source"], "scn": "2150001"}
    second_change["transaction"] = {**second_change["transaction"], "total_order": 2}
    (lakeapply.landing / "rest_of_8_8_8.jsonl").write_text(json.dumps(second_change) + "\n")
    released = ingest(
        spark,
        lakeapply.catalog,
        lakeapply.landing,
        capture_format=CaptureFormat("debezium-json", "ORCLPDB1"),
    )
    lakeapply.apply()

    assert (released.lines, released.bronze_rows, released.released_commits) == (1, 1, 1)
    [commit] = (
        lakeapply.bronze().where("transaction_id = '8.8.8' AND command_type = 'COMMIT'").collect()
    )
    assert (Path(commit.source_file).name, commit.line_number, commit.scn) == (
        "debezium_bad.jsonl",
        3,
        2150002,
    )
    assert {(Decimal(1008), "half@example.com"), (Decimal(1009), "rest@example.com")} <= {
        (r.ID, r.EMAIL) for r in lakeapply.silver(CUSTOMERS.qualified_name).collect()
    }
    # released once: a later batch does not land the COMMIT again
    (lakeapply.landing / "unrelated.jsonl").write_text(json.dumps(end) + "\n")
    again = ingest(
        spark,
        lakeapply.catalog,
        lakeapply.landing,
        capture_format=CaptureFormat("debezium-json", "ORCLPDB1"),
    )
    assert again.released_commits == 0
    assert (
        lakeapply.bronze().where("transaction_id = '8.8.8' AND command_type = 'COMMIT'").count()
        == 1
    )


# --- a capture format per landing folder -------------------------------------------------------
LANDING_FORMATS = LandingFormats(
    CaptureFormat(),
    (("ogg", CaptureFormat("ogg-json", "ORCL")), ("cdc/debezium", CaptureFormat("debezium-json"))),
)


def test_a_file_takes_the_format_of_the_deepest_named_folder_that_holds_it(tmp_path: Path) -> None:
    formats = LandingFormats(
        CaptureFormat(),
        (("cdc", CaptureFormat("ogg-json", "ORCL")), ("cdc/dbz", CaptureFormat("debezium-json"))),
    )

    assert (
        formats.of(tmp_path / "cdc" / "dbz" / "2026" / "a.jsonl", tmp_path).name == "debezium-json"
    )
    assert formats.of(tmp_path / "cdc" / "a.jsonl", tmp_path) == CaptureFormat("ogg-json", "ORCL")
    assert formats.of(tmp_path / "cdcx" / "a.jsonl", tmp_path).name == "lcr-json"
    assert formats.of(tmp_path / "a.jsonl", tmp_path).name == "lcr-json"


def test_landing_folders_are_read_from_lakeapply_yml_and_checked(tmp_path: Path) -> None:
    config = tmp_path / "lakeapply.yml"
    apply = "apply_processes: [{apply_name: A, source_databases: [ORCL], tables: []}]\n"
    config.write_text(
        apply
        + "landing_folders:\n"
        + "  - {path: ogg/, format: ogg-json, source_database: ORCL}\n"
        + "  - {path: cdc/debezium, format: debezium-json}\n"
    )
    assert load_landing_formats(config, CaptureFormat()) == LANDING_FORMATS

    config.write_text(apply + "landing_folders: [{path: ../elsewhere, format: ogg-json}]\n")
    with pytest.raises(ConfigurationError, match="landing_folders/0/path"):
        load_landing_formats(config, CaptureFormat())
    config.write_text(apply + "landing_folders: [{path: x, format: avro}]\n")
    with pytest.raises(ConfigurationError, match="landing_folders/0/format"):
        load_landing_formats(config, CaptureFormat())
    config.write_text(
        apply + "landing_folders: [{path: x, format: ogg-json}, {path: x/, format: lcr-json}]\n"
    )
    with pytest.raises(ConfigurationError, match="named twice"):
        load_landing_formats(config, CaptureFormat())


def test_one_ingest_reads_each_landing_folder_in_its_format_and_a_resumed_batch_keeps_them(
    spark: SparkSession, lakeapply: LakeapplyHarness
) -> None:
    landing = lakeapply.landing
    (landing / "ogg").mkdir(parents=True)
    (landing / "cdc" / "debezium").mkdir(parents=True)
    shutil.copy(FIXTURES / "ogg_transactions.jsonl", landing / "ogg" / "trail.jsonl")
    shutil.copy(
        FIXTURES / "debezium_with_transaction_metadata.jsonl",
        landing / "cdc" / "debezium" / "events.jsonl",
    )
    # a GoldenGate record outside the named folders is read as lcr-json, the default
    stray = (FIXTURES / "ogg_transactions.jsonl").read_text().splitlines()[0]
    (landing / "stray.jsonl").write_text(stray + "\n")

    with pytest.raises(SimulatedCrash):
        ingest(
            spark, lakeapply.catalog, landing, capture_format=LANDING_FORMATS, crash_after="plan"
        )
    # resumed by a run told nothing about the folders: each file keeps its planned format
    report = ingest(spark, lakeapply.catalog, landing)

    by_file = {
        Path(f.source_file).name: (f.lines, f.bronze_rows, f.quarantined_rows) for f in report.files
    }
    assert report.resumed
    assert by_file == {
        "trail.jsonl": (5, 7, 0),
        "events.jsonl": (9, 6, 3),
        "stray.jsonl": (1, 0, 1),
    }
    logged = {
        (Path(r.source_file).name, r.capture_format, r.capture_source_database)
        for r in spark.table(lakeapply.catalog.bronze_table("ingest_log")).collect()
    }
    assert logged == {
        ("trail.jsonl", "ogg-json", "ORCL"),
        ("events.jsonl", "debezium-json", None),
        ("stray.jsonl", "lcr-json", None),
    }
    commits = {
        r.transaction_id for r in lakeapply.bronze().where("command_type = 'COMMIT'").collect()
    }
    assert {"5.6.641", "6.9.809"} <= commits
