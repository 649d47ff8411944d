"""The deterministic workload generator (no Spark)."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lakeapply.contract.lcr import lcr_json_schema
from lakeapply.contract.table_definitions import TableDefinition, sample_table_definitions
from lakeapply.errors import ConfigurationError
from lakeapply.landing.generator import (
    GeneratedWorkload,
    WorkloadSpec,
    generate_lcrs,
    sample_scenario_lcrs,
    synthetic_table_definitions,
    write_workload,
)

Lcr = dict[str, Any]
CONTRACT_EXAMPLE = Path(__file__).resolve().parents[1] / "contract" / "contract_example.jsonl"
VALIDATOR = jsonschema.Draft202012Validator(lcr_json_schema())
ROW_COMMANDS = {"INSERT", "UPDATE", "DELETE"}
DIRECTIVES = {"COMMIT", "ROLLBACK"}

# A workload exercising everything: several sources and tables, key updates, multi-row
# statements, long-running, rolled back and open transactions, wide interleaving.
BUSY = WorkloadSpec(
    seed=11,
    transactions=2000,
    synthetic_tables=3,
    source_databases=("DBS1.EXAMPLE.COM", "DBS2.EXAMPLE.COM"),
    files_per_source=3,
    rollback_ratio=0.1,
    open_ratio=0.05,
    key_update_ratio=0.2,
    multi_row_ratio=0.3,
    interleave=8,
    long_running_ratio=0.05,
)


def good_lcrs(spec: WorkloadSpec) -> list[Lcr]:
    return [item for _, item in generate_lcrs(spec) if isinstance(item, dict)]


def read_lines(workload: GeneratedWorkload) -> list[str]:
    lines: list[str] = []
    for path in workload.files:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
        assert text.endswith("\n")
        lines += text.splitlines()
    return lines


def file_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# ---- the reference replay: apply committed transactions in commit-SCN order ------------------


def key_of(table: TableDefinition, values: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(values[column] for column in table.key_columns())


def replay(
    lcrs: Iterable[Lcr], tables: Iterable[TableDefinition]
) -> tuple[dict[str, dict[tuple[Any, ...], dict[str, Any]]], set[tuple[str, str]]]:
    """Final state per ``OWNER.NAME`` and the (source, transaction id) of transactions that failed
    (uniqueness conflict, missing row, or old values differing from the current row)."""
    definitions = {table.qualified_name: table for table in tables}
    changes: dict[tuple[str, str], list[Lcr]] = defaultdict(list)
    commits: dict[tuple[str, str], int] = {}
    for lcr in lcrs:
        transaction = (lcr["source_database_name"], lcr["transaction_id"])
        if lcr["command_type"] == "COMMIT":
            commits[transaction] = lcr["scn"]
        elif lcr["command_type"] in ROW_COMMANDS:
            changes[transaction].append(lcr)
    state: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = defaultdict(dict)
    failed: set[tuple[str, str]] = set()
    for transaction in sorted(commits, key=lambda t: (t[0], commits[t])):
        overlay: dict[tuple[str, tuple[Any, ...]], dict[str, Any] | None] = {}

        def current(name: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
            return overlay[(name, key)] if (name, key) in overlay else state[name].get(key)  # noqa: B023

        ok = True
        for lcr in sorted(changes[transaction], key=lambda lcr: (lcr["scn"], lcr["position"])):
            name = f"{lcr['object_owner']}.{lcr['object_name']}"
            table = definitions[name]
            old = {v["column_name"]: v["value"] for v in lcr.get("old_values", [])}
            new = {v["column_name"]: v["value"] for v in lcr.get("new_values", [])}
            command = lcr["command_type"]
            if command == "INSERT":
                assert set(new) == set(table.column_names)
                if current(name, key_of(table, new)) is not None:
                    ok = False
                    break
                overlay[(name, key_of(table, new))] = new
                continue
            key = key_of(table, old)
            row = current(name, key)
            if row is None or any(row[c] != v for c, v in old.items()):
                ok = False
                break
            if command == "DELETE":
                assert set(old) == set(table.column_names)
                overlay[(name, key)] = None
                continue
            after = {**row, **new}
            new_key = key_of(table, after)
            if new_key != key:
                if current(name, new_key) is not None:
                    ok = False
                    break
                overlay[(name, key)] = None
            overlay[(name, new_key)] = after
        if not ok:
            failed.add(transaction)
            continue
        for (name, key), row in overlay.items():
            if row is None:
                state[name].pop(key, None)
            else:
                state[name][key] = row
    return state, failed


# ---- determinism and files -------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(
    tmp_path: Path, compress: bool
) -> None:
    spec = WorkloadSpec(seed=5, transactions=300, bad_line_ratio=0.05, conflict_ratio=0.05)
    write_workload(spec, tmp_path / "a", compress=compress)
    write_workload(spec, tmp_path / "b", compress=compress)
    write_workload(WorkloadSpec(seed=6, transactions=300), tmp_path / "c", compress=compress)
    first, second = file_bytes(tmp_path / "a"), file_bytes(tmp_path / "b")
    assert first == second
    assert first != file_bytes(tmp_path / "c")


def test_files_follow_the_layout_and_hold_what_generate_lcrs_yields(tmp_path: Path) -> None:
    spec = WorkloadSpec(transactions=200, source_databases=("DBS1.EXAMPLE.COM", "ab/c d"))
    workload = write_workload(spec, tmp_path)
    expected: dict[str, list[str]] = defaultdict(list)
    for stem, item in generate_lcrs(spec):
        text = item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))
        expected[stem].append(text)
    names = {str(path.relative_to(tmp_path)) for path in workload.files}
    assert names == {f"{stem}.jsonl" for stem in expected}
    assert all(re.fullmatch(r"(\w+)/\1_\d{4}\.jsonl", name) for name in names), names
    assert {name.split("/")[0] for name in names} == {"ORCL", "DBS1_EXAMPLE_COM", "ab_c_d"}
    for path in workload.files:
        stem = str(path.relative_to(tmp_path)).removesuffix(".jsonl")
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == [json.loads(t) for t in expected[stem]]
    assert workload.line_count == sum(len(v) for v in expected.values())
    assert not list(tmp_path.rglob(".*.tmp"))


def test_gzip_output_reads_back_as_the_plain_output(tmp_path: Path) -> None:
    spec = WorkloadSpec(seed=2, transactions=200, bad_line_ratio=0.05)
    plain = write_workload(spec, tmp_path / "plain")
    packed = write_workload(spec, tmp_path / "packed", compress=True)
    assert all(path.name.endswith(".jsonl.gz") for path in packed.files)
    assert read_lines(packed) == read_lines(plain)
    assert packed.line_count == plain.line_count == len(read_lines(plain))


def test_existing_files_are_never_overwritten(tmp_path: Path) -> None:
    spec = WorkloadSpec(transactions=20)
    write_workload(spec, tmp_path)
    with pytest.raises(ConfigurationError, match="never overwritten"):
        write_workload(spec, tmp_path)


# ---- contract --------------------------------------------------------------------------------


def test_every_good_line_validates_and_every_bad_line_does_not(tmp_path: Path) -> None:
    spec = WorkloadSpec(seed=9, transactions=700, bad_line_ratio=0.1, conflict_ratio=0.05)
    workload = write_workload(spec, tmp_path)
    lines = read_lines(workload)
    assert len(lines) == workload.line_count
    good = bad = 0
    reasons: Counter[str] = Counter()
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            reasons["invalid json"] += 1
            continue
        errors = list(VALIDATOR.iter_errors(record))
        if errors:
            bad += 1
            reasons[str(errors[0].validator)] += 1
            # Bad lines never reuse a real transaction's id.
            assert not isinstance(record, dict) or record.get("transaction_id", "0.0.").startswith(
                ("0.0.", "0-0-")
            )
        else:
            good += 1
            assert not record["transaction_id"].startswith("0.")
    assert bad == workload.bad_line_count > 0
    assert 0.05 < bad / len(lines) < 0.15
    # invalid/truncated JSON, required, type (wrong type, not an object), enum, pattern
    assert {"invalid json", "required", "type", "enum", "pattern"} <= set(reasons), reasons
    assert good + bad == workload.line_count


def test_good_lines_follow_the_contract_shapes() -> None:
    tables = {t.qualified_name: t for t in synthetic_table_definitions(3)}
    tables.update({t.qualified_name: t for t in sample_table_definitions()})
    lcrs = good_lcrs(BUSY)
    for lcr in lcrs[:3000]:
        VALIDATOR.validate(lcr)
    key_updates = 0
    for lcr in lcrs:
        assert re.fullmatch(r"[1-9]\d*\.\d+\.\d+", lcr["transaction_id"])
        assert re.fullmatch(r"\d{20}", lcr["position"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lcr["source_time"])
        command = lcr["command_type"]
        if command in DIRECTIVES:
            assert set(lcr) == {
                "source_database_name", "command_type", "transaction_id", "scn", "position",
                "source_time",
            }  # fmt: skip
            continue
        table = tables[f"{lcr['object_owner']}.{lcr['object_name']}"]
        assert lcr["row_id"]
        old = [v["column_name"] for v in lcr.get("old_values", [])]
        new = [v["column_name"] for v in lcr.get("new_values", [])]
        if command == "INSERT":
            assert "old_values" not in lcr and new == list(table.column_names)
        elif command == "DELETE":
            assert "new_values" not in lcr and old == list(table.column_names)
        else:
            key = list(table.key_columns())
            assert new and set(new) <= set(table.column_names)
            if set(key) & set(new):  # a key update: old = the key and the other changed columns
                key_updates += 1
                assert old == new
            else:
                assert old == key + new
        for value in lcr.get("old_values", []) + lcr.get("new_values", []):
            column = table.column(value["column_name"])
            assert value["data_type"] == column.oracle_type.name
            text = value["value"]
            if text is None:
                assert column.nullable
                continue
            assert isinstance(text, str)
            oracle_type = column.oracle_type
            if oracle_type.name == "NUMBER":
                number = Decimal(text)
                assert str(number) == text  # exact decimal text, no exponent
                if oracle_type.precision is not None:
                    scale = oracle_type.scale or 0
                    assert -number.as_tuple().exponent <= scale  # type: ignore[operator]
                    assert abs(number) < Decimal(10) ** (oracle_type.precision - scale)
            elif oracle_type.name in ("VARCHAR2", "CHAR"):
                assert oracle_type.length is not None and len(text) <= oracle_type.length
            elif oracle_type.name == "DATE":
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text)
            elif oracle_type.name == "TIMESTAMP":
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}", text)
            elif oracle_type.name == "RAW":
                assert re.fullmatch(r"[0-9A-F]{16}", text)
    assert key_updates > 10


# ---- order -----------------------------------------------------------------------------------


def test_scn_and_position_increase_per_source_and_commits_follow_their_lcrs() -> None:
    lcrs = good_lcrs(BUSY)
    last: dict[str, Lcr] = {}
    max_scn: dict[tuple[str, str], int] = {}
    ended: set[tuple[str, str]] = set()
    commit_scns: dict[str, list[int]] = defaultdict(list)
    for lcr in lcrs:
        source = lcr["source_database_name"]
        previous = last.get(source)
        if previous is not None:
            assert lcr["position"] > previous["position"]
            assert lcr["source_time"] >= previous["source_time"]
            if lcr["scn"] == previous["scn"]:  # only the rows of one multi-row statement
                assert lcr["command_type"] == previous["command_type"] in ROW_COMMANDS
                assert lcr["transaction_id"] == previous["transaction_id"]
            else:
                assert lcr["scn"] > previous["scn"]
        last[source] = lcr
        if source != "ORCL":  # one second per SCN from start_time
            offset = timedelta(seconds=lcr["scn"] - BUSY.start_scn)
            assert (
                lcr["source_time"] == (datetime.fromisoformat(BUSY.start_time) + offset).isoformat()
            )
        transaction = (source, lcr["transaction_id"])
        assert transaction not in ended, "an LCR after its transaction's COMMIT/ROLLBACK"
        if lcr["command_type"] in DIRECTIVES:
            assert lcr["scn"] > max_scn[transaction]
            ended.add(transaction)
            if lcr["command_type"] == "COMMIT":
                commit_scns[source].append(lcr["scn"])
        else:
            max_scn[transaction] = max(max_scn.get(transaction, 0), lcr["scn"])
    for scns in commit_scns.values():
        assert scns == sorted(scns) and len(set(scns)) == len(scns)


def test_initial_scn_is_below_every_change(tmp_path: Path) -> None:
    workload = write_workload(BUSY, tmp_path)
    scns = [json.loads(line)["scn"] for line in read_lines(workload)]
    assert workload.initial_scn < min(scns)
    assert workload.initial_scn == BUSY.start_scn - 1


# ---- transactions ----------------------------------------------------------------------------


def test_transaction_counts_match_the_files(tmp_path: Path) -> None:
    workload = write_workload(BUSY, tmp_path)
    directives: Counter[str] = Counter()
    seen: set[tuple[str, str]] = set()
    ended: set[tuple[str, str]] = set()
    for line in read_lines(workload):
        lcr = json.loads(line)
        transaction = (lcr["source_database_name"], lcr["transaction_id"])
        seen.add(transaction)
        if lcr["command_type"] in DIRECTIVES:
            directives[lcr["command_type"]] += 1
            ended.add(transaction)
    sample_commits = sum(1 for lcr in sample_scenario_lcrs() if lcr["command_type"] == "COMMIT")
    assert directives["COMMIT"] == workload.committed_transactions
    assert directives["ROLLBACK"] == workload.rolled_back_transactions
    assert len(seen - ended) == workload.open_transactions
    assert (
        workload.committed_transactions - sample_commits
        + workload.rolled_back_transactions
        + workload.open_transactions
        == BUSY.transactions
    )  # fmt: skip
    assert 0.06 < workload.rolled_back_transactions / BUSY.transactions < 0.14
    assert 0.02 < workload.open_transactions / BUSY.transactions < 0.08
    assert workload.conflicting_transactions == 0


def test_long_running_transactions_span_many_commits_and_files() -> None:
    commits_seen = 0
    first: dict[tuple[str, str], tuple[int, str]] = {}
    files: dict[tuple[str, str], set[str]] = defaultdict(set)
    spans = []
    for stem, item in generate_lcrs(BUSY):
        assert isinstance(item, dict)
        transaction = (item["source_database_name"], item["transaction_id"])
        files[transaction].add(stem)
        first.setdefault(transaction, (commits_seen, stem))
        if item["command_type"] == "COMMIT":
            commits_seen += 1
            spans.append(commits_seen - first[transaction][0])
    assert max(spans) >= 20
    assert sum(1 for span in spans if span >= 20) >= 10
    assert sum(1 for stems in files.values() if len(stems) > 1) > 100


def test_multi_row_statements_share_one_scn() -> None:
    statements = Counter(
        (lcr["source_database_name"], lcr["transaction_id"], lcr["scn"])
        for lcr in good_lcrs(BUSY)
        if lcr["command_type"] in ROW_COMMANDS
    )
    sizes = Counter(statements.values())
    assert sizes[1] > 0 and sum(n for size, n in sizes.items() if size > 1) > 100
    assert max(sizes) <= 5


def test_committed_transactions_replay_without_a_conflict() -> None:
    tables = (*sample_table_definitions(), *synthetic_table_definitions(BUSY.synthetic_tables))
    state, failed = replay(good_lcrs(BUSY), tables)
    assert failed == set()
    assert sum(len(rows) for rows in state.values()) > 500
    # The sources' key ranges are disjoint.
    ranges = {
        int(key[0]) // 10**8 for name in state if name.startswith("SYNTH.") for key in state[name]
    }
    assert ranges == {0, 1}


def test_conflicting_transactions_are_exactly_the_failing_ones(tmp_path: Path) -> None:
    spec = WorkloadSpec(
        seed=4,
        transactions=1500,
        synthetic_tables=2,
        conflict_ratio=0.03,
        key_update_ratio=0.1,
        multi_row_ratio=0.2,
        interleave=6,
        include_sample_scenario=False,
    )
    workload = write_workload(spec, tmp_path)
    _, failed = replay([json.loads(line) for line in read_lines(workload)], workload.tables)
    assert len(failed) == workload.conflicting_transactions > 20


def test_no_synthetic_tables_gives_the_sample_scenario_only(tmp_path: Path) -> None:
    workload = write_workload(WorkloadSpec(synthetic_tables=0, transactions=100), tmp_path)
    assert {path.parent.name for path in workload.files} == {"ORCL"}
    assert [t.qualified_name for t in workload.tables] == ["US03.COURSE", "US03.STUDENT"]
    assert workload.line_count == len(sample_scenario_lcrs())
    assert workload.initial_scn == 1621199


# ---- tables and spec -------------------------------------------------------------------------


def test_synthetic_table_definitions() -> None:
    assert synthetic_table_definitions(0) == ()
    tables = synthetic_table_definitions(3)
    assert [t.qualified_name for t in tables] == ["SYNTH.T001", "SYNTH.T002", "SYNTH.T003"]
    for table in tables:
        assert table.primary_key == ("ID",)
        assert str(table.column("ID").oracle_type) == "NUMBER(10,0)"
        assert not table.column("ID").nullable
        assert table.column("STATUS").default == "NEW" and table.column("STATUS").nullable
        assert {c.oracle_type.name for c in table.columns} >= {
            "NUMBER", "VARCHAR2", "CHAR", "DATE", "TIMESTAMP",
        }  # fmt: skip
    assert "TOKEN" in tables[1].column_names and "TOKEN" not in tables[0].column_names
    with pytest.raises(ConfigurationError):
        synthetic_table_definitions(-1)


@pytest.mark.parametrize(
    "changes",
    [
        {"transactions": -1},
        {"files_per_source": 0},
        {"interleave": 0},
        {"rollback_ratio": 0.7, "open_ratio": 0.5},
        {"bad_line_ratio": 1.0},
        {"conflict_ratio": -0.1},
        {"source_databases": ()},
        {"source_databases": ("A.B", "A_B")},
        {"source_databases": ("ORCL",)},
        {"start_time": "yesterday"},
        {"start_scn": 0},
    ],
)
def test_invalid_specs_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="workload spec"):
        WorkloadSpec(**changes)


def test_orcl_is_a_synthetic_source_when_the_sample_is_left_out() -> None:
    spec = WorkloadSpec(source_databases=("ORCL",), include_sample_scenario=False, transactions=5)
    assert {lcr["object_owner"] for lcr in good_lcrs(spec) if "object_owner" in lcr} == {"SYNTH"}


# ---- the STUDENT/COURSE scenario of 003_*.txt -------------------------------------------------

FINAL_STUDENTS = {
    ("1001",): ("Lucy", "Brotherton", "F", "Cambridge", "Chemistry", "2013", "9000"),
    ("1002",): ("Rebecca", "Brown", "F", "Oxford", "Biology", "2013", "9000"),
    ("1003",): ("Simon", "Campbell", "M", "Cambridge", "Physics", "2013", "7500"),
    ("1005",): ("Stuart", "Overy", "M", "Manchester", "Art History", "2013", "9000"),
    ("1006",): ("Tom", "Homer", "M", "Manchester", "Computer Science", "2013", "9000"),
    ("1007",): ("Victoria", "Evans", "F", "Oxford", "Theology", "2013", "9000"),
    ("1008",): ("Katy", "Pierce", "F", "Oxford", "Theology", "2013", "9000"),
    ("1009",): ("Shane", "Thomas", "M", "Manchester", "Media Studies", "2013", "9000"),
    ("1010",): ("Sarah", "McCloud", "F", "Oxford", "Biology", "2014", "6000"),
    ("1011",): ("Jordan", "Sherwood", "M", "Manchester", "Chemistry", "2013", "9000"),
}


def test_sample_scenario_ends_in_the_documents_final_state() -> None:
    lcrs = sample_scenario_lcrs()
    for lcr in lcrs:
        VALIDATOR.validate(lcr)
    state, failed = replay(lcrs, sample_table_definitions())
    assert failed == set()
    students = {
        key: tuple(row[c] for c in list(row)[1:]) for key, row in state["US03.STUDENT"].items()
    }
    assert students == FINAL_STUDENTS
    assert len(state["US03.COURSE"]) == 10
    assert ("Manchester", "Media Studies", "2013") in state["US03.COURSE"]


def by_transaction(lcrs: list[Lcr]) -> dict[str, list[Lcr]]:
    grouped: dict[str, list[Lcr]] = defaultdict(list)
    for lcr in lcrs:
        grouped[lcr["transaction_id"]].append(lcr)
    return grouped


def test_sample_scenario_follows_the_document() -> None:
    lcrs = sample_scenario_lcrs()
    grouped = by_transaction(lcrs)
    positions = [lcr["position"] for lcr in lcrs]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    # Single row insertion: the contract's example, line for line (plus a position).
    example = [json.loads(line) for line in CONTRACT_EXAMPLE.read_text().splitlines()]
    assert [{k: v for k, v in lcr.items() if k != "position"} for lcr in grouped["4.11.854"]] == (
        example
    )

    def shape(transaction: str) -> list[tuple[Any, ...]]:
        return [
            (
                lcr["command_type"],
                lcr["scn"],
                [(v["column_name"], v["value"]) for v in lcr.get("old_values", [])],
                [(v["column_name"], v["value"]) for v in lcr.get("new_values", [])],
            )
            for lcr in grouped[transaction]
        ]

    fee = "TUITION_FEE"
    assert shape("3.6.1012") == [
        ("UPDATE", 1622899, [("STUDENT_KEY", "1010"), (fee, "9000")], [(fee, "6000")]),
        ("COMMIT", 1622900, [], []),
    ]
    delete = shape("1.33.830")
    assert delete[0][:2] == ("DELETE", 1625892) and delete[1] == ("COMMIT", 1625893, [], [])
    assert delete[0][2] == list(
        zip(
            sample_table_definitions()[1].column_names,
            ["1004", "Jason", "Robinson", "M", "Oxford", "Biology", "2013", "7500"],
            strict=True,
        )
    )
    assert shape("6.27.1204") == [
        ("UPDATE", 1630606, [("STUDENT_KEY", key), (fee, "8000")], [(fee, "7500")])
        for key in ("1007", "1008", "1009")
    ] + [("COMMIT", 1630607, [], [])]
    multi_delete = shape("3.23.1016")
    assert [row[:2] for row in multi_delete] == [("DELETE", 1638366)] * 3 + [("COMMIT", 1638367)]
    assert [row[2][0][1] for row in multi_delete[:3]] == ["1007", "1008", "1009"]
    assert all(row[2][-1] == (fee, "8000") for row in multi_delete[:3])
    for transaction, scn, commit in (
        ("7.13.846", 1641682, 1641683),
        ("4.21.865", 1652768, 1652769),
    ):
        inserted = shape(transaction)
        assert [row[:2] for row in inserted] == [("INSERT", scn)] * 3 + [("COMMIT", commit)]
        assert [row[3][0][1] for row in inserted[:3]] == ["1007", "1008", "1009"]
        assert all(row[3][-1] == (fee, "9000") for row in inserted[:3])
    assert [lcr["row_id"] for lcr in grouped["4.21.865"][:3]] == [
        "AAASrPAAEAAAARgAAA", "AAASrPAAEAAAARgAAB", "AAASrPAAEAAAARgAAC",
    ]  # fmt: skip
    # Each transaction ends with exactly one COMMIT, above its LCRs' SCNs, commits in order.
    commits = [lcr["scn"] for lcr in lcrs if lcr["command_type"] == "COMMIT"]
    assert len(commits) == len(grouped) == 12 and commits == sorted(commits)
    for members in grouped.values():
        assert [lcr["command_type"] for lcr in members].count("COMMIT") == 1
        assert members[-1]["command_type"] == "COMMIT"
        assert all(lcr["scn"] < members[-1]["scn"] for lcr in members[:-1])


def test_sample_scenario_shifts_with_start_scn_and_names_its_source() -> None:
    base = sample_scenario_lcrs()
    shifted = sample_scenario_lcrs("DB9.EXAMPLE.COM", start_scn=100)
    assert [lcr["scn"] - 100 for lcr in shifted] == [lcr["scn"] - 1621200 for lcr in base]
    assert {lcr["source_database_name"] for lcr in shifted} == {"DB9.EXAMPLE.COM"}
    assert min(lcr["scn"] for lcr in shifted) == 100
