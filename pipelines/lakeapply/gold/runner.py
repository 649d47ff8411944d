"""Run the gold dbt project (``dbt/``) in-process on the pipeline's Spark session, and print its
dictionary views the way SQL*Plus would.

``run_gold`` invokes dbt with ``dbt.cli.main.dbtRunner`` and the profile's ``inprocess`` target
(dbt-spark, session mode, no settings): dbt-spark's session cursor calls
``SparkSession.builder...getOrCreate()``, which returns the running session, so the views are built
in the metastore the pipeline writes. dbt-spark forces ``spark.sql.ansi.enabled=false`` on that
session; every runtime setting dbt changed (and the current database) is restored afterwards. The
same project also runs standalone with the ``local`` target, which starts its own session like
``get_spark``: ``dbt build --project-dir dbt --profiles-dir dbt/profiles`` with
``LAKEAPPLY_WAREHOUSE`` naming the warehouse (dbt/README.md).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote
from lakeapply.errors import LakeapplyError
from lakeapply.resources import DBT_PROJECT, resource_path
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver.plan import ensure_dictionary_tables

DBT_PROJECT_DIR = resource_path(DBT_PROJECT)
"""The packaged dbt project, the repository's ``dbt/`` (override with ``project_dir`` or
LAKEAPPLY_DBT_PROJECT_DIR). It is read only: dbt's target and logs go under the warehouse."""

COMMANDS = ("build", "run", "test", "compile", "parse")
_SELECTING_COMMANDS = ("build", "run", "test", "compile")

GOLD_VIEWS = (
    "dba_apply",
    "dba_apply_conflict_columns",
    "dba_apply_error",
    "dba_apply_error_messages",
    "dba_apply_instantiated_global",
    "dba_apply_instantiated_objects",
    "dba_apply_instantiated_schemas",
    "dba_apply_key_columns",
    "dba_apply_parameters",
    "dba_apply_progress",
    "dba_apply_table_versions",
    "v_streams_apply_coordinator",
    "apply_lag",
)
"""The views ``render_sqlplus`` prints: the marts of the dbt project, in ``<prefix>_gold``."""


SUMMARY_COLUMNS: dict[str, tuple[str, ...]] = {
    "dba_apply_progress": (
        "APPLY_NAME",
        "SOURCE_DATABASE",
        "APPLIED_MESSAGE_NUMBER",
        "OLDEST_MESSAGE_NUMBER",
    ),
    "dba_apply_error": ("SOURCE_TRANSACTION_ID", "MESSAGE_NUMBER", "ERROR_MESSAGE"),
}
"""What ``lakeapply run`` and ``lakeapply gold`` select from these views by default: lines that
fit an 80-column terminal (``lakeapply gold --wide`` prints every column)."""


def summary_select(view: str) -> str:
    """The SQL*Plus prompt line the printed summary answers (printed, never executed)."""
    columns = SUMMARY_COLUMNS.get(view.lower())
    return f"SELECT {', '.join(columns) if columns else '*'} FROM {view.upper()};"  # noqa: S608


class GoldError(LakeapplyError):
    """The gold dbt project could not run, or a model or a data/unit test failed."""

    def __init__(self, message: str, report: GoldReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class GoldReport:
    """What one dbt invocation did, counted from dbt's run results."""

    command: str
    success: bool
    models: int = 0  # models built
    tests_passed: int = 0  # data tests (generic and singular)
    tests_warned: int = 0
    tests_failed: int = 0
    unit_tests_passed: int = 0
    unit_tests_failed: int = 0
    errors: int = 0  # nodes that could not run (SQL errors, compilation errors)
    skipped: int = 0
    elapsed_seconds: float = 0.0
    failures: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line, e.g. ``dbt build OK: 27 views, 44 tests passed, 6 unit tests passed (52.1 s)``."""
        parts = [f"{self.models} views"] if self.models else []
        runs_tests = self.command in ("build", "test")  # `dbt run` runs none: no "0 passed"
        if runs_tests:
            parts.append(f"{self.tests_passed} tests passed")
        if self.tests_warned:
            parts.append(f"{self.tests_warned} warned")
        if self.tests_failed:
            parts.append(f"{self.tests_failed} failed")
        if runs_tests:
            parts.append(f"{self.unit_tests_passed} unit tests passed")
        if self.unit_tests_failed:
            parts.append(f"{self.unit_tests_failed} unit tests failed")
        if self.errors:
            parts.append(f"{self.errors} errors")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        outcome = "OK" if self.success else "FAILED"
        return f"dbt {self.command} {outcome}: {', '.join(parts)} ({self.elapsed_seconds:.1f} s)"


def run_gold(
    spark: SparkSession,
    warehouse: Path,
    catalog_prefix: str,
    command: str = "build",
    *,
    select: Sequence[str] = (),
    target: str = "inprocess",
    project_dir: Path | None = None,
    threads: int = 2,
    quiet: bool = True,
    catalog: str | None = None,
) -> GoldReport:
    """Run ``dbt <command>`` on the gold project in-process, reusing ``spark``.

    ``catalog_prefix`` names the databases (sources in ``<prefix>_apply`` and ``<prefix>_bronze``,
    views in ``<prefix>_gold``); ``warehouse`` is the warehouse folder: dbt's target and log
    folders go under ``<warehouse>/dbt``, and it is LAKEAPPLY_WAREHOUSE for a ``local`` target.
    ``select`` narrows the nodes (dbt ``--select``); ``threads`` is dbt's (queries at a time on
    the one session). Returns the counts; raises :class:`GoldError` with dbt's failure summary
    when dbt cannot run or any node fails (the report is on the error). ``catalog`` (Unity
    Catalog) is made the session's current catalog while dbt runs, so dbt's two-part names land
    in it; the previous one is restored.
    """
    names = Catalog(catalog_prefix, catalog)
    if command not in COMMANDS:
        raise GoldError(f"unknown gold command {command!r}: expected one of {', '.join(COMMANDS)}")
    try:
        from dbt.cli.main import dbtRunner
    except ImportError as error:  # the `gold` extra is not installed
        raise GoldError(f"dbt is not installed ({error}): pip install 'lakeapply[gold]'") from error

    project = (
        project_dir or Path(os.environ.get("LAKEAPPLY_DBT_PROJECT_DIR", DBT_PROJECT_DIR))
    ).resolve()
    if not (project / "dbt_project.yml").is_file():
        raise GoldError(f"no dbt project at {project}")
    artifacts = warehouse.resolve() / "dbt"
    args = [
        command,
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project / "profiles"),
        "--target",
        target,
        "--vars",
        json.dumps({"lakeapply_prefix": names.prefix}),
        "--target-path",
        str(artifacts / "target"),
        "--log-path",
        str(artifacts / "logs"),
    ]
    if command in _SELECTING_COMMANDS:
        args += ["--threads", str(threads)]
        if select:
            args += ["--select", *select]
    if quiet:
        args.append("--quiet")

    if command in _SELECTING_COMMANDS and spark.catalog.databaseExists(names.database(names.apply)):
        # An apply run from unpublished settings (the testing kit's) leaves the settings tables
        # to the first publish; the views read them all. (No apply database: a wrong prefix,
        # which dbt reports as it is rather than as empty views.)
        ensure_dictionary_tables(spark, names)
    started = time.monotonic()
    with _environment(LAKEAPPLY_WAREHOUSE=str(warehouse.resolve())), _restored_session(spark):
        if names.catalog is not None:
            spark.catalog.setCurrentCatalog(names.catalog)
        outcome = dbtRunner().invoke(args)
    elapsed = time.monotonic() - started

    if outcome.exception is not None:
        raise GoldError(f"dbt {command} could not run: {outcome.exception}") from outcome.exception
    report = _report(command, bool(outcome.success), outcome.result, elapsed)
    if not report.success:
        details = "\n".join(f"  {failure}" for failure in report.failures)
        raise GoldError(f"{report.summary()}\n{details}".rstrip(), report)
    return report


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _restored_session(spark: SparkSession) -> Iterator[None]:
    """Undo what dbt changes on the shared session: runtime SQL settings, the current database."""
    settings = dict(spark.conf.getAll)
    current_catalog = spark.catalog.currentCatalog()
    database = spark.catalog.currentDatabase()
    try:
        yield
    finally:
        if spark.catalog.currentCatalog() != current_catalog:
            spark.catalog.setCurrentCatalog(current_catalog)
        for key, value in dict(spark.conf.getAll).items():
            if settings.get(key) == value or not spark.conf.isModifiable(key):
                continue
            if key in settings:
                spark.conf.set(key, settings[key])
            else:
                spark.conf.unset(key)
        if spark.catalog.currentDatabase() != database:
            spark.catalog.setCurrentDatabase(database)


def _status(value: Any) -> str:
    return str(getattr(value, "value", value))


def _first_lines(message: str, lines: int = 3, limit: int = 600) -> str:
    text = " | ".join(line.strip() for line in message.strip().splitlines()[:lines] if line.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _report(command: str, success: bool, result: Any, elapsed: float) -> GoldReport:
    counts = {
        key: 0
        for key in (
            "models",
            "tests_passed",
            "tests_warned",
            "tests_failed",
            "unit_tests_passed",
            "unit_tests_failed",
            "errors",
            "skipped",
        )
    }
    failures: list[str] = []
    for node_result in getattr(result, "results", None) or ():
        node = node_result.node
        kind, status = _status(node.resource_type), _status(node_result.status)
        if status == "skipped":
            counts["skipped"] += 1
        elif status == "error":
            counts["errors"] += 1
        elif kind == "model" and status == "success":
            counts["models"] += 1
        elif kind == "test":
            counts[
                {"pass": "tests_passed", "warn": "tests_warned"}.get(status, "tests_failed")
            ] += 1
        elif kind == "unit_test":
            counts["unit_tests_passed" if status == "pass" else "unit_tests_failed"] += 1
        if status in ("error", "fail", "runtime error"):
            message = _first_lines(node_result.message or "")
            failures.append(f"{kind} {node.name}: {status}: {message}")
    return GoldReport(
        command=command,
        success=success,
        elapsed_seconds=elapsed,
        failures=tuple(failures),
        **counts,
    )


# --- SQL*Plus ----------------------------------------------------------------------------------

NUMWIDTH = 10  # SQL*Plus SET NUMWIDTH default
FEEDBACK = 6  # SQL*Plus SET FEEDBACK default: "n rows selected." from 6 rows on

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_NLS_TOKENS = re.compile(r"YYYY|RRRR|HH24|HH12|HH|YY|RR|MON|MM|DD|MI|SS|AM|PM")


def nls_format(value: datetime | date, nls_date_format: str) -> str:
    """Format a date/time with an Oracle NLS_DATE_FORMAT (YYYY RRRR YY RR MON MM DD HH24 HH12 HH
    MI SS AM PM; anything else is copied)."""
    moment = value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)

    def token(match: re.Match[str]) -> str:
        code = match.group(0)
        if code in ("YYYY", "RRRR"):
            return f"{moment.year:04d}"
        if code in ("YY", "RR"):
            return f"{moment.year % 100:02d}"
        if code == "MON":
            return _MONTHS[moment.month - 1]
        if code == "MM":
            return f"{moment.month:02d}"
        if code == "DD":
            return f"{moment.day:02d}"
        if code == "HH24":
            return f"{moment.hour:02d}"
        if code in ("HH", "HH12"):
            return f"{(moment.hour % 12) or 12:02d}"
        if code == "MI":
            return f"{moment.minute:02d}"
        if code == "SS":
            return f"{moment.second:02d}"
        return "AM" if moment.hour < 12 else "PM"

    return _NLS_TOKENS.sub(token, nls_date_format)


def _number_text(value: Any, width: int) -> str:
    """A NUMBER as SQL*Plus shows it: no trailing zeros, no leading zero before the point, and
    scientific notation (then #) when it does not fit the column."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        text = str(value)
    else:
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
        text = format(number.normalize(), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        text = re.sub(r"^(-?)0\.", r"\1.", text)
    if len(text) <= width:
        return text
    for digits in range(max(width - 6, 0), -1, -1):
        scientific = f"{float(value):.{digits}E}"
        if len(scientific) <= width:
            return scientific
    return "#" * width


@dataclass(frozen=True)
class _Column:
    heading: str
    kind: str  # NUMBER | DATE | CHAR
    width: int


def _kind(data_type: T.DataType) -> str:
    if isinstance(data_type, T.NumericType):
        return "NUMBER"
    if isinstance(data_type, T.TimestampType | T.TimestampNTZType | T.DateType):
        return "DATE"
    return "CHAR"


def render_sqlplus(
    spark: SparkSession,
    catalog_prefix: str,
    view: str,
    *,
    nls_date_format: str = "DD-MON-RR",
    max_width: int = 40,
    catalog: str | None = None,
    select: Sequence[str] | None = None,
) -> str:
    """Print a gold view (``DBA_APPLY_PROGRESS``, ``DBA_APPLY_ERROR``, ...) as SQL*Plus would.

    As SQL*Plus with its defaults (COLSEP ' ', NUMWIDTH 10, FEEDBACK 6, NULL '', WRAP ON,
    TRIMOUT ON), a LINESIZE and PAGESIZE large enough for the rows, and ``COLUMN ... FORMAT An``
    sizing each character column to its heading and data, at most ``max_width`` (longer values
    wrap onto continuation lines). NUMBER columns are right-aligned and at least NUMWIDTH wide;
    DATE columns are as wide as ``nls_date_format`` makes them and their headings are truncated
    to that width, as SQL*Plus does. Rows are sorted by their columns, left to right.
    ``select`` names the columns (``SELECT A, B FROM view``) instead of every column (``SELECT *``).
    """
    frame = _selected_view(spark, Catalog(catalog_prefix, catalog), view, select)
    sortable = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.AtomicType)]
    rows = frame.orderBy(*sortable).collect() if sortable else frame.collect()
    if not rows:
        return "\nno rows selected\n"
    columns, cells = _formatted_columns(frame.schema.fields, rows, nls_date_format, max_width)
    output = _sqlplus_lines(columns, cells, len(rows))
    if len(rows) >= FEEDBACK:
        output += ["", f"{len(rows)} rows selected."]
    return "\n".join(output) + "\n"


def _selected_view(
    spark: SparkSession, names: Catalog, view: str, select: Sequence[str] | None
) -> DataFrame:
    name = view.strip().lower()
    if name not in GOLD_VIEWS:
        raise GoldError(f"unknown gold view {view!r}: expected one of {', '.join(GOLD_VIEWS)}")
    frame = spark.table(names.gold_table(name))
    if select is None:
        return frame
    by_upper = {f.name.upper(): f.name for f in frame.schema.fields}
    unknown = [c for c in select if c.upper() not in by_upper]
    if unknown:
        raise GoldError(f"{view}: no column(s) {', '.join(unknown)}")
    return frame.select(*[F.col(quote(by_upper[c.upper()])) for c in select])


def _formatted_columns(
    fields: Sequence[T.StructField], rows: Sequence[Row], nls_date_format: str, max_width: int
) -> tuple[list[_Column], list[list[str]]]:
    """Each column's SQL*Plus heading, kind and width, and its values as text."""
    cells: list[list[str]] = []
    columns: list[_Column] = []
    date_width = len(nls_format(datetime(2000, 12, 31, 23, 59, 59), nls_date_format))
    for index, struct_field in enumerate(fields):
        kind = _kind(struct_field.dataType)
        heading = struct_field.name.upper()
        values = [row[index] for row in rows]
        if kind == "NUMBER":
            width = max(NUMWIDTH, len(heading))
            texts = ["" if v is None else _number_text(v, width) for v in values]
        elif kind == "DATE":
            width = date_width
            texts = ["" if v is None else nls_format(v, nls_date_format) for v in values]
        else:
            texts = ["" if v is None else str(v) for v in values]
            longest = max((len(t) for t in texts), default=0)
            width = max(1, min(max_width, max(len(heading), longest)))
        columns.append(_Column(heading[:width], kind, width))
        cells.append(texts)
    return columns, cells


def _sqlplus_lines(columns: Sequence[_Column], cells: Sequence[list[str]], count: int) -> list[str]:
    def line(parts: Sequence[str]) -> str:
        return " ".join(parts).rstrip()

    def align(text: str, column: _Column) -> str:
        return text.rjust(column.width) if column.kind == "NUMBER" else text.ljust(column.width)

    output = [
        "",
        line([align(c.heading, c) for c in columns]),
        line(["-" * c.width for c in columns]),
    ]
    for row_index in range(count):
        # WRAP ON: a value longer than its column continues on the next lines of the record.
        pieces = [
            [text[i : i + c.width] for i in range(0, len(text), c.width)] or [""]
            for c, text in ((c, cells[n][row_index]) for n, c in enumerate(columns))
        ]
        for depth in range(max(len(p) for p in pieces)):
            output.append(
                line(
                    [
                        align(p[depth] if depth < len(p) else "", c)
                        for p, c in zip(pieces, columns, strict=True)
                    ]
                )
            )
    return output
