"""The bad-input corpus (tests/bronze/corpus/, expectations in expected.yml): every file lands in
bronze or quarantine with a precise reason, in one ingest, and nothing is lost or crashes."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.bronze.ingest import IngestReport, ingest
from lakeapply.runtime.catalog import Catalog

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`: its module-scoped
# fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)

CORPUS = Path(__file__).parent / "corpus"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "expected.yml").read_text())["files"]
INSERT = (CORPUS / "same_file_a.jsonl").read_text().splitlines()[0]
COMMIT = (CORPUS / "same_file_a.jsonl").read_text().splitlines()[1]
HUGE_VALUE_BYTES = 10 * 1024 * 1024
NESTING_DEPTH = 100_000


def write_generated_files(landing: Path) -> None:
    """The corpus files too big to commit (``generated: true`` in expected.yml)."""
    huge = json.loads(INSERT)
    huge["new_values"] = [
        {"column_name": "NOTES", "data_type": "CLOB", "value": "x" * HUGE_VALUE_BYTES}
    ]
    (landing / "huge_value.jsonl").write_text(json.dumps(huge) + "\n" + COMMIT + "\n")
    deep = "[" * NESTING_DEPTH + "]" * NESTING_DEPTH
    deep_in_new_values = json.loads(INSERT)
    deep_in_new_values["new_values"] = "@"
    (landing / "deeply_nested.jsonl").write_text(
        INSERT
        + "\n"
        + json.dumps({**json.loads(INSERT), "extra": "@"}).replace('"@"', deep)
        + "\n"
        + json.dumps(deep_in_new_values).replace('"@"', deep)
        + "\n"
    )


@dataclass(frozen=True)
class CorpusIngest:
    landing: Path
    first: IngestReport
    second: IngestReport
    bronze_by_file: Counter[str]
    quarantine_by_file: dict[str, list[tuple[int, str | None, str]]]
    raw_lcrs: dict[tuple[str, int], str]  # (file name, line number) -> raw_lcr (small lines only)
    log_rows: list[Any]


@pytest.fixture(scope="module")
def corpus(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> CorpusIngest:
    """One ingest of the whole corpus (one Spark ingest, not one per case), then a second one."""
    landing = tmp_path_factory.mktemp("corpus_landing")
    for name, expected in EXPECTED.items():
        if not expected.get("generated"):
            shutil.copyfile(CORPUS / name, landing / name)
    write_generated_files(landing)
    catalog = Catalog("bronze_corpus")

    first = ingest(spark, catalog, landing)
    second = ingest(spark, catalog, landing)

    def name_of(source_file: str) -> str:
        return Path(source_file).name

    lcr = spark.table(catalog.bronze_table("lcr"))
    bronze_by_file = Counter(name_of(r.source_file) for r in lcr.select("source_file").collect())
    raw_lcrs = {
        (name_of(r.source_file), r.line_number): r.raw_lcr
        for r in lcr.where(F.length("raw_lcr") < 10_000)
        .select("source_file", "line_number", "raw_lcr")
        .collect()
    }
    quarantine_by_file: dict[str, list[tuple[int, str | None, str]]] = {}
    for r in spark.table(catalog.bronze_table("quarantine")).orderBy("line_number").collect():
        quarantine_by_file.setdefault(name_of(r.source_file), []).append(
            (r.line_number, r.field, r.reason)
        )
    log_rows = spark.table(catalog.bronze_table("ingest_log")).collect()
    return CorpusIngest(
        landing, first, second, bronze_by_file, quarantine_by_file, raw_lcrs, log_rows
    )


def test_one_ingest_reads_every_file_even_beside_unreadable_ones(corpus: CorpusIngest) -> None:
    assert {Path(f.source_file).name for f in corpus.first.files} == set(EXPECTED)
    assert corpus.second.batch_id is None  # nothing is read twice, the unreadable files neither


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_corpus_file_lands_in_bronze_or_quarantine_as_expected(
    corpus: CorpusIngest, name: str
) -> None:
    expected = EXPECTED[name]
    wanted = [(q["line"], q["field"], q["reason"]) for q in expected["quarantine"]]
    quarantined = corpus.quarantine_by_file.get(name, [])

    assert corpus.bronze_by_file[name] == expected["bronze"]
    assert [(line, field) for line, field, _ in quarantined] == [(n, f) for n, f, _ in wanted]
    for (_, _, reason), (_, _, part) in zip(quarantined, wanted, strict=True):
        assert part in reason
    (result,) = [f for f in corpus.first.files if Path(f.source_file).name == name]
    assert (result.bronze_rows, result.quarantined_rows) == (expected["bronze"], len(wanted))
    assert result.lines == result.bronze_rows + result.quarantined_rows


def test_landing_lines_equal_bronze_plus_quarantine_rows(corpus: CorpusIngest) -> None:
    plain_lines = sum(
        path.read_bytes().count(b"\n")
        for path in corpus.landing.iterdir()
        if path.name.endswith(".jsonl")
    )
    gzip_units = sum(
        e["bronze"] + len(e["quarantine"]) for n, e in EXPECTED.items() if n.endswith(".gz")
    )
    bronze = sum(corpus.bronze_by_file.values())
    quarantined = sum(len(rows) for rows in corpus.quarantine_by_file.values())

    assert plain_lines + gzip_units == bronze + quarantined == corpus.first.lines


def test_a_bom_and_crlf_line_endings_are_not_part_of_the_landed_line(corpus: CorpusIngest) -> None:
    assert corpus.raw_lcrs[("bom.jsonl", 1)] == INSERT
    assert corpus.raw_lcrs[("crlf.jsonl", 1)] == INSERT
    assert corpus.raw_lcrs[("crlf.jsonl", 2)] == COMMIT


def test_an_unreadable_file_is_logged_so_the_next_run_does_not_read_it_again(
    corpus: CorpusIngest,
) -> None:
    (committed,) = [
        r
        for r in corpus.log_rows
        if r.phase == "COMMITTED" and Path(r.source_file).name == "truncated.jsonl.gz"
    ]
    size = (corpus.landing / "truncated.jsonl.gz").stat().st_size
    assert (committed.lines, committed.quarantined_rows, committed.size_bound) == (1, 1, size)
    assert committed.fingerprint.startswith(f"{size}:")
