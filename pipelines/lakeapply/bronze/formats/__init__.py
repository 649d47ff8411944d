"""Capture formats: landing lines of GoldenGate or Debezium -> contract LCR lines.

``lakeapply ingest --format`` picks one: ``lcr-json`` (lakeapply's own LCR lines, the default),
``ogg-json`` (GoldenGate for Big Data's JSON formatter, :mod:`.goldengate`) or ``debezium-json``
(the Debezium Oracle connector, :mod:`.debezium`). The adapters run on the executors, before
the contract checks: each record becomes one or more contract LCR lines (a change and, where
the format says the transaction ends there, its COMMIT) that go through the same validation
and landing as ``lcr-json`` lines. A record an adapter cannot convert keeps its text and is
quarantined with the adapter's reason; a line lands whole or not at all; the raw record is
kept in ``raw_lcr`` of every LCR it produced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from lakeapply.bronze.formats import debezium, goldengate
from lakeapply.bronze.formats.common import LcrDict, lcr_json, parse_record
from lakeapply.errors import CaptureRecordError, ConfigurationError

LCR_JSON = "lcr-json"
OGG_JSON = "ogg-json"
DEBEZIUM_JSON = "debezium-json"
FORMAT_NAMES = (LCR_JSON, OGG_JSON, DEBEZIUM_JSON)

Converter = Callable[[Any, str | None], list[LcrDict]]
_CONVERTERS: dict[str, Converter] = {
    OGG_JSON: goldengate.convert,
    DEBEZIUM_JSON: debezium.convert,
}

# Columns the adapter adds to the line rows (see ``adapt_batches``).
ADAPTER_COLUMNS = (
    "raw_line string, lcr_index int, read_problem_field string, txn_database string, "
    "txn_id string, txn_commit_scn long, txn_scn long, pending_event_count long, "
    "pending_commit boolean"
)


@dataclass(frozen=True)
class CaptureFormat:
    """What the landing files hold: ``name`` (one of FORMAT_NAMES) and, for formats whose records
    do not name it (GoldenGate with two-part table names), the source database they come from."""

    name: str = LCR_JSON
    source_database: str | None = None

    def __post_init__(self) -> None:
        if self.name not in FORMAT_NAMES:
            raise ConfigurationError(
                f"unknown capture format {self.name!r}: expected one of {', '.join(FORMAT_NAMES)}"
            )

    @property
    def is_contract(self) -> bool:
        return self.name == LCR_JSON


@dataclass(frozen=True)
class LandingFormats:
    """Which capture format each landing file holds: that of the deepest folder of ``folders``
    (a path relative to the landing root, ``/``-separated, and its format) that holds the file,
    else ``default`` (``lakeapply.yml``'s ``landing_folders``; ``lakeapply ingest --format``)."""

    default: CaptureFormat = CaptureFormat()
    folders: tuple[tuple[str, CaptureFormat], ...] = ()

    def __post_init__(self) -> None:
        for folder, _ in self.folders:
            parts = PurePosixPath(folder).parts
            if not parts or folder.startswith("/") or ".." in parts or "\\" in folder:
                raise ConfigurationError(
                    f"landing folder {folder!r} must be a path inside the landing folder "
                    "(relative, '/'-separated, no '..')"
                )

    def of(self, source_file: str | Path, landing: Path) -> CaptureFormat:
        try:
            inside = Path(source_file).resolve().relative_to(landing.resolve()).parts
        except ValueError:
            return self.default
        best: tuple[int, CaptureFormat] = (-1, self.default)
        for folder, fmt in self.folders:
            parts = PurePosixPath(folder).parts
            if inside[: len(parts)] == parts and len(parts) > best[0]:
                best = (len(parts), fmt)
        return best[1]


def _rows_of_line(
    line: str | None, fmt: CaptureFormat
) -> list[tuple[str | None, str | None, str | None, LcrDict | None]]:
    """(line, read_problem, read_problem_field, lcr) per output row of one input line."""
    if line is None or not line.strip():
        return [(line, None, None, None)]  # the contract checks say why
    try:
        record = parse_record(line)
    except ValueError:
        return [(line, None, None, None)]  # not JSON: the contract checks say how
    except RecursionError:
        return [(line, f"{fmt.name}: JSON nested too deeply", None, None)]
    try:
        lcrs = _CONVERTERS[fmt.name](record, fmt.source_database)
    except CaptureRecordError as error:
        return [(line, f"{fmt.name}: {error.reason}", error.field, None)]
    except Exception as error:  # never crash an ingest on one record: quarantine it
        return [
            (
                line,
                f"{fmt.name}: cannot convert the record: {type(error).__name__}: {error}",
                None,
                None,
            )
        ]
    return [(lcr_json(_without_internal(lcr)), None, None, lcr) for lcr in lcrs]


def _without_internal(lcr: LcrDict) -> LcrDict:
    return {k: v for k, v in lcr.items() if k != debezium.PENDING_EVENT_COUNT}


def adapt_batches(
    batches: Iterator[pd.DataFrame], fmt: CaptureFormat, line_columns: list[str]
) -> Iterator[pd.DataFrame]:
    """mapInPandas: line rows -> LCR line rows (``line_columns`` kept, ``line`` replaced, plus
    ADAPTER_COLUMNS). ``lcr_index`` numbers the LCRs of one line from 0; ``txn_*`` say which
    transaction a change belongs to and at which commit SCN (for an END event's COMMIT, which is
    ``pending_commit`` until the ingest knows its SCN)."""
    out_columns = [
        *line_columns,
        "raw_line",
        "lcr_index",
        "read_problem_field",
        "txn_database",
        "txn_id",
        "txn_commit_scn",
        "txn_scn",
        "pending_event_count",
        "pending_commit",
    ]
    line_at = line_columns.index("line")
    problem_at = line_columns.index("read_problem")
    for batch in batches:
        records: list[tuple[Any, ...]] = []
        for row in batch.itertuples(index=False, name=None):
            original = row[line_at]
            if row[problem_at] is not None:
                records.append((*row, original, 0, None, None, None, None, None, None, False))
                continue
            for index, (text, problem, field, lcr) in enumerate(_rows_of_line(original, fmt)):
                values = list(row)
                values[line_at], values[problem_at] = text, problem
                pending = lcr is not None and "scn" not in lcr
                is_change = lcr is not None and lcr.get("command_type") != "COMMIT"
                records.append(
                    (
                        *values,
                        original,
                        index,
                        field,
                        lcr.get("source_database_name") if lcr else None,
                        lcr.get("transaction_id") if lcr else None,
                        lcr.get("commit_scn") if is_change and lcr else None,
                        lcr.get("scn") if is_change and lcr else None,
                        lcr.get(debezium.PENDING_EVENT_COUNT) if pending and lcr else None,
                        pending,
                    )
                )
        frame = pd.DataFrame.from_records(records, columns=out_columns)
        for column in ("txn_commit_scn", "txn_scn", "pending_event_count"):
            frame[column] = frame[column].astype("Int64")
        yield frame
