"""Run generated workloads through the engine and through the reference applier, and put both
results in one comparable form.

The two sides share nothing but the public formats. The engine reads each workload the way a user
gives it (lakeapply.yml and table-definition files written to disk, ``load_config``, bronze
landing, ``run_apply``); the reference reads the same documents with tests/reference/config.py.
Both results are then turned into test-owned canonical values (:func:`canonical`): numbers by
value, instants in UTC, intervals as months or microseconds, bytes as hex; never through the
engine's codecs.

Many workloads run as one apply process (:func:`merge`): each keeps its own source databases and
silver tables, so they cannot see each other, and the engine's result is split back per workload.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from collections.abc import Sequence
from datetime import UTC, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.config import load_config
from lakeapply.silver.engine import load_initial_copy, run_apply
from lakeapply.silver.plan import (
    apply_status,
    ensure_apply_tables,
    ensure_destination_tables,
    start_apply,
)
from lakeapply.silver.settings import ApplySettings
from tests.reference import config as kinds
from tests.reference.applier import ReferenceResult, convert_value, reference_apply
from tests.reference.config import ApplyProcess, Destination, apply_process_from_config
from tests.reference.workloads import Workload
from tests.silver.bronze_fixture import land

Comparable = dict[str, Any]
COUNTERS = ("received", "applied", "ignored", "rolled_back", "errors")


# ---------------------------------------------------------------------------------------------
# Workloads in the public formats: renaming and merging
# ---------------------------------------------------------------------------------------------


def isolate(workload: Workload, number: int) -> Workload:
    """Give a workload its own apply name, source databases, silver tables and definition file
    names, so that many workloads share one catalog (or one apply process) unseen."""
    process = copy.deepcopy(workload.process)

    def source(name: str) -> str:
        return f"E{number}_{name}"

    process["apply_name"] = f"APPLY_E{number}"
    process["source_databases"] = [source(s) for s in process["source_databases"]]
    for table in process["tables"]:
        table["source_database"] = source(table["source_database"])
        table["silver_table"] = f"e{number}_{table['silver_table']}"
        table["definition"] = f"e{number}_{table['definition']}"
    for level in process.get("instantiation", {}).values():
        for entry in level:
            entry["source_database"] = source(entry["source_database"])
    for kind in ("negative", "positive"):
        for rule in process.get("rules", {}).get(kind, ()):
            if "source_database" in rule:
                rule["source_database"] = source(rule["source_database"])
    return Workload(
        process=process,
        definitions={f"e{number}_{name}": doc for name, doc in workload.definitions.items()},
        lcrs=[
            {**lcr, "source_database_name": source(lcr["source_database_name"])}
            for lcr in workload.lcrs
        ],
        initial={f"e{number}_{name}": rows for name, rows in workload.initial.items()},
    )


def with_parameters(workload: Workload, **changes: Any) -> Workload:
    """The workload under other apply parameters (``disable_on_error="N"``, ...) or rules."""
    process = copy.deepcopy(workload.process)
    for name, value in changes.items():
        if name == "discard_tagged":
            process.setdefault("rules", {})[name] = value
        else:
            process.setdefault("parameters", {})[name] = value
    return dataclasses.replace(workload, process=process)


def merge(workloads: Sequence[Workload], apply_name: str) -> Workload:
    """One apply process running every (isolated) workload: the parameters and rules of the
    first, the source databases, tables and instantiation SCNs of all. Only workloads that
    carry on after an error can share an apply: an abort would stop the others."""
    first = workloads[0].process
    assert first["parameters"].get("disable_on_error") == "N"
    discard_tagged = first.get("rules", {}).get("discard_tagged", False)
    negative: list[Any] = []
    positive: list[Any] = []
    for workload in workloads:
        assert workload.process.get("parameters") == first.get("parameters")
        rules = workload.process.get("rules", {})
        assert rules.get("discard_tagged", False) == discard_tagged
        # Every generated rule names its workload's source database, so the sets can merge; a
        # workload without a positive rule set lets all of its sources through.
        negative += rules.get("negative", [])
        positive += rules.get(
            "positive", [{"source_database": s} for s in workload.process["source_databases"]]
        )
    instantiation: dict[str, list[Any]] = {}
    for workload in workloads:
        for level, entries in workload.process.get("instantiation", {}).items():
            instantiation.setdefault(level, []).extend(entries)
    process = {
        "apply_name": apply_name,
        "parameters": dict(first["parameters"]),
        "source_databases": [s for w in workloads for s in w.process["source_databases"]],
        "rules": {"discard_tagged": discard_tagged, "negative": negative, "positive": positive},
        "tables": [t for w in workloads for t in w.process["tables"]],
        **({"instantiation": instantiation} if instantiation else {}),
    }
    return Workload(
        process=process,
        definitions={n: d for w in workloads for n, d in w.definitions.items()},
        lcrs=[lcr for w in workloads for lcr in w.lcrs],
        initial={n: rows for w in workloads for n, rows in w.initial.items()},
    )


def split_in_commit_order(lcrs: list[dict[str, Any]], parts: int) -> list[list[dict[str, Any]]]:
    """Cut one workload's arrival sequence into at most ``parts`` ingest batches, only where
    every COMMIT before the cut has a lower SCN than every COMMIT after it: a capture delivers
    commits in commit order, so an incremental apply never meets a commit below its watermark."""
    # A transaction's COMMIT/ROLLBACK never arrives before its own LCRs (one capture stream).
    # A copy of an LCR already sent (rule 11) is outside the commit order; a copy sent after
    # its transaction ended is a redelivery, with its own end (a cut may split it).
    commits: list[tuple[int, int]] = []
    ends: dict[tuple[str, ...], int] = {}
    last: dict[tuple[str, ...], int] = {}
    sent: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i, lcr in enumerate(lcrs):
        key: tuple[str, ...] = (lcr["source_database_name"], lcr["transaction_id"])
        copy_of_sent = lcr in sent.setdefault(key, [])
        sent[key].append(lcr)
        if copy_of_sent and key in ends:
            key = (*key, "again")
        last[key] = i
        # A DDL LCR that carries its commit SCN is a transaction of its own, committed without a
        # COMMIT (rule 10): in the commit order like a COMMIT, or a cut could land it before
        # commits below it. A DDL followed by a COMMIT is ordered by that COMMIT.
        ddl = "ddl_text" in lcr and lcr.get("commit_scn") is not None
        if lcr["command_type"] in ("COMMIT", "ROLLBACK") or ddl:
            ends.setdefault(key, i)
            if (lcr["command_type"] == "COMMIT" or ddl) and not copy_of_sent:
                commits.append((i, lcr["commit_scn"] if ddl else lcr["scn"]))

    def valid(cut: int) -> bool:
        in_order = all(
            scn < after for i, scn in commits if i < cut for j, after in commits if j >= cut
        )
        complete = all(last[key] < cut for key, end in ends.items() if end < cut)
        return in_order and complete

    cuts = [cut for cut in range(1, len(lcrs)) if valid(cut)]
    step = max(1, len(cuts) // parts)
    chosen = sorted(set(cuts[step - 1 :: step][: parts - 1])) if parts > 1 else []
    bounds = [0, *chosen, len(lcrs)]
    return [lcrs[a:b] for a, b in itertools.pairwise(bounds) if lcrs[a:b]]


def landing_parts(workload: Workload, parts: int) -> list[list[dict[str, Any]]]:
    """The workload's ingest batches: as its ``landing`` plans them, else cut in commit order."""
    if workload.landing:
        bounds = [0, *workload.landing]
        return [workload.lcrs[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    return split_in_commit_order(workload.lcrs, parts)


def _is_row_change(lcr: dict[str, Any]) -> bool:
    return lcr["command_type"] in ("INSERT", "UPDATE", "DELETE")


def with_late_input(workload: Workload, parts: int) -> Workload:
    """The workload landed late (reference D24): cut into ``parts`` batches in commit order,
    then at each cut the COMMIT of one transaction moves past it when a later COMMIT of its
    source stays before the cut (a late COMMIT), and the last row LCR of another transaction
    committed before the cut moves past it (a late LCR). Only transactions of the apply's
    sources made of row LCRs and one COMMIT, none of them sent twice, are moved."""
    pieces = [list(piece) for piece in split_in_commit_order(workload.lcrs, parts)]
    sources = set(workload.process["source_databases"])
    lines: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for lcr in workload.lcrs:
        lines.setdefault((lcr["source_database_name"], lcr["transaction_id"]), []).append(lcr)

    def movable(key: tuple[str, str], piece: list[dict[str, Any]]) -> bool:
        mine = lines[key]
        commits = [lcr for lcr in mine if lcr["command_type"] == "COMMIT"]
        return (
            key[0] in sources
            and len(commits) == 1
            and all(_is_row_change(lcr) or lcr is commits[0] for lcr in mine)
            and all(any(lcr is other for other in piece) for lcr in mine)
            and all(mine.count(lcr) == 1 for lcr in mine)
        )

    for k in range(len(pieces) - 1):
        before, after = pieces[k], pieces[k + 1]
        commits = [
            lcr
            for lcr in before
            if lcr["command_type"] == "COMMIT"
            and movable((lcr["source_database_name"], lcr["transaction_id"]), before)
        ]
        late_commit = next(
            (
                lcr
                for lcr in sorted(commits, key=lambda lcr: lcr["scn"])
                if any(
                    other["command_type"] == "COMMIT"
                    and other["source_database_name"] == lcr["source_database_name"]
                    and other["scn"] > lcr["scn"]
                    for other in before
                )
            ),
            None,
        )
        moved: list[dict[str, Any]] = []
        if late_commit is not None:
            moved.append(late_commit)
        for lcr in sorted(commits, key=lambda lcr: -lcr["scn"]):
            key = (lcr["source_database_name"], lcr["transaction_id"])
            changes = [line for line in lines[key] if _is_row_change(line)]
            if lcr is not late_commit and changes:
                moved.insert(0, changes[-1])
                break
        pieces[k] = [lcr for lcr in before if not any(lcr is m for m in moved)]
        pieces[k + 1] = moved + after
    lcrs = [lcr for piece in pieces for lcr in piece]
    ends = tuple(itertools.accumulate(len(piece) for piece in pieces))
    return dataclasses.replace(workload, lcrs=lcrs, landing=ends)


def landing_batches(workloads: Sequence[Workload], parts: int) -> list[list[dict[str, Any]]]:
    """Batch k holds part k of every workload (their sources are disjoint)."""
    split = [landing_parts(w, parts) for w in workloads]
    return [
        [lcr for pieces in split if k < len(pieces) for lcr in pieces[k]]
        for k in range(max((len(pieces) for pieces in split), default=0))
    ]


# ---------------------------------------------------------------------------------------------
# Canonical values: the test's own, for both sides
# ---------------------------------------------------------------------------------------------

_YEAR_MONTH = re.compile(r"([+-])(\d+)-(\d+)")
_DAY_SECOND = re.compile(r"([+-])(\d+) (\d+):(\d+):(\d+)\.(\d{6})")


def _months(value: Any) -> int:
    if isinstance(value, int):
        return value
    sign, years, months = _YEAR_MONTH.fullmatch(value).groups()  # type: ignore[union-attr]
    return (-1 if sign == "-" else 1) * (int(years) * 12 + int(months))


def _microseconds(value: Any) -> int:
    if isinstance(value, timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign, days, hours, minutes, seconds, micros = _DAY_SECOND.fullmatch(value).groups()  # type: ignore[union-attr]
    total = ((int(days) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)
    return (-1 if sign == "-" else 1) * (total * 1_000_000 + int(micros))


def canonical(kind: str, value: Any) -> Any:
    """One stored value, comparable across the engine (Spark rows) and the reference."""
    if value is None:
        return None
    if kind == kinds.NUMBER:
        number = Decimal(value)
        return "0" if number == 0 else format(number.normalize(), "f")
    if kind == kinds.FLOATING:
        return repr(float(value))
    if kind in (kinds.DATETIME,):
        return value.replace(tzinfo=None).isoformat()
    if kind == kinds.DATETIME_TZ:
        # Aware (reference): converted; naive (Spark's TIMESTAMP): the session's local time.
        return value.astimezone(UTC).isoformat()
    if kind == kinds.YEAR_MONTH:
        return _months(value)
    if kind == kinds.DAY_SECOND:
        return _microseconds(value)
    if kind in (kinds.RAW, kinds.BINARY_LOB):
        return bytes(value).hex()
    return str(value)


def _rows(columns: Sequence[tuple[str, str]], rows: Any) -> list[tuple[Any, ...]]:
    """Rows as tuples of canonical values over ``columns`` ((name, kind), in table order)."""
    return sorted(
        (tuple(canonical(kind, row[name]) for name, kind in columns) for row in rows), key=repr
    )


def _columns(destination: Destination) -> list[tuple[str, str]]:
    return [(c.name, c.kind) for c in destination.definition.columns]


def _by_silver_table(process: ApplyProcess) -> dict[str, Destination]:
    tables: dict[str, Destination] = {}
    for table in process.tables:
        tables.setdefault(table.silver_table, table)
    return tables


# ---------------------------------------------------------------------------------------------
# The reference side
# ---------------------------------------------------------------------------------------------


def reference_process(workload: Workload) -> ApplyProcess:
    return apply_process_from_config(workload.process, workload.definitions)


def reference_outcome(
    workload: Workload, batches: int = 1, received: int | None = None
) -> Comparable:
    """The reference's result; ``batches``: the ingest batches the engine reads the workload
    in, one per cycle (what a DEPENDENT_TRANSACTIONS abort has received: reference D15);
    ``received``: only the first that many of them have landed (None: all)."""
    process = reference_process(workload)
    ends = list(itertools.accumulate(len(part) for part in landing_parts(workload, batches)))
    if received is not None:
        ends = ends[:received]
    lcrs = workload.lcrs[: ends[-1]] if ends else []
    result: ReferenceResult = reference_apply(
        process, lcrs, workload.initial, batch_ends=ends, late_input=bool(workload.landing)
    )
    final = {
        name: [(c.name, c.kind) for c in result.definitions[name].columns]
        for name in _by_silver_table(process)
        if name in result.definitions  # not dropped (D18)
    }
    return {
        # After column DDL (rule 10): each table's columns as the last applied DDL left them.
        "columns": {name: [c for c, _ in columns] for name, columns in final.items()},
        "tables": {
            name: _rows(columns, result.tables[name].values()) for name, columns in final.items()
        },
        "errors": sorted(
            (
                e.source_database,
                e.source_transaction_id,
                e.source_commit_scn,
                e.message_number,
                e.error_number,
                e.message_count,
            )
            for e in result.errors
        ),
        "error_messages": sorted(
            (e.source_database, e.source_transaction_id, number, *_message_fields(lcr))
            for e in result.errors
            for number, lcr in enumerate(e.lcrs, start=1)
        ),
        "outcomes": sorted((*key, *value) for key, value in result.outcomes.items()),
        "counters": {k: result.counters[k] for k in COUNTERS},
        "low_watermark": result.low_watermark,
        "high_watermark": result.high_watermark,
        "oldest_scn": result.oldest_scn,
        "aborted": result.aborted,
    }


def _message_fields(lcr: Any) -> tuple[Any, ...]:
    return (lcr["command_type"], lcr["object_owner"], lcr["object_name"], lcr["scn"])


# ---------------------------------------------------------------------------------------------
# The engine side
# ---------------------------------------------------------------------------------------------


def engine_settings(workload: Workload, folder: Path) -> ApplySettings:
    """The workload's configuration as a user writes it, loaded by the engine's loader."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, document in workload.definitions.items():
        (folder / name).write_text(yaml.safe_dump(document, allow_unicode=True))
    path = folder / "lakeapply.yml"
    path.write_text(yaml.safe_dump({"apply_processes": [workload.process]}, allow_unicode=True))
    (settings,) = load_config(path)
    return settings


def _initial_frame(
    spark: SparkSession, target: DataFrame, table: Destination, rows: Any
) -> DataFrame:
    """The initial copy as typed Spark rows, converted by the reference's own conversions
    (intervals, which silver stores as Oracle's display text, as that text)."""
    columns = table.definition.columns
    values = [tuple(convert_value(c, row.get(c.name)) for c in columns) for row in rows]
    return spark.createDataFrame(values, target.schema)


def prepare(
    spark: SparkSession,
    catalog: Catalog,
    workloads: Sequence[Workload],
    run: Workload,
    folder: Path,
    batches: int = 1,
) -> ApplySettings:
    """Destination tables with their initial copies, every workload's LCRs landed in
    ``batches`` ingest batches, and the apply process ``run`` (one workload, or their merge)
    configured and started."""
    settings = configure(spark, catalog, run, folder)
    for batch in landing_batches(workloads, batches):
        land(spark, catalog, batch, settings.apply_name)
    start_apply(spark, catalog, settings)
    return settings


def configure(spark: SparkSession, catalog: Catalog, run: Workload, folder: Path) -> ApplySettings:
    """The apply process ``run`` configured, its destination tables made and instantiated with
    their initial copies; nothing landed, not started."""
    settings = engine_settings(run, folder)
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, settings)
    production = {t.silver_table: t for t in settings.tables}
    for name, table in _by_silver_table(reference_process(run)).items():
        rows = run.initial.get(name) or []
        if rows:
            target = spark.table(catalog.silver_table(name))
            load_initial_copy(
                spark, catalog, production[name], _initial_frame(spark, target, table, rows)
            )
    return settings


def engine_outcomes(
    spark: SparkSession,
    catalog: Catalog,
    workloads: Sequence[Workload],
    folder: Path,
    batches: int = 1,
) -> list[Comparable]:
    """Run ``workloads`` (isolated; one alone, or several that carry on after errors, merged)
    through the engine; one comparable result per workload."""
    run = (
        workloads[0]
        if len(workloads) == 1
        else merge(workloads, f"{workloads[0].process['apply_name']}_MERGED")
    )
    if batches > 1:  # one ingest batch per cycle: open transactions cross cycles in the spill
        run = with_parameters(run, max_cycle_batches=1)
    settings = prepare(spark, catalog, workloads, run, folder, batches)
    run_apply(spark, catalog, settings)
    return read_outcomes(spark, catalog, settings.apply_name, workloads)


def _silver_table(
    spark: SparkSession, catalog: Catalog, table: Destination
) -> tuple[list[tuple[str, str]], list[Any]]:
    """The silver table's columns as the engine left them, each with the kind of the workload's
    column of that name (a column added by a column DDL, EXTRA or EXTRA2, is a VARCHAR2), and
    its rows."""
    frame = spark.table(catalog.silver_table(table.silver_table))
    kinds_by_name = dict(_columns(table))
    columns = [(name, kinds_by_name.get(name, kinds.CHARACTER)) for name in frame.columns]
    return columns, frame.collect()


def _existing_tables(spark: SparkSession, catalog: Catalog, schema: str) -> set[str]:
    """The tables of one of the catalog's schemas, in lower case (one metastore call for every
    workload)."""
    if not spark.catalog.databaseExists(schema):
        return set()
    tables = spark.sql(f"SHOW TABLES IN {catalog.database(schema)}").collect()
    return {row.tableName.lower() for row in tables if not row.isTemporary}


def read_outcome(
    spark: SparkSession, catalog: Catalog, apply_name: str, workload: Workload
) -> Comparable:
    """What the engine left for one workload of apply process ``apply_name``."""
    (outcome,) = read_outcomes(spark, catalog, apply_name, [workload])
    return outcome


def read_outcomes(
    spark: SparkSession, catalog: Catalog, apply_name: str, workloads: Sequence[Workload]
) -> list[Comparable]:
    """What the engine left for each workload of apply process ``apply_name``: each dictionary
    table is read once for all of them and split by the workloads' source databases (each
    isolated workload has sources of its own)."""
    apply = F.col("apply_name") == apply_name
    created = _existing_tables(spark, catalog, catalog.apply)
    if dictionary.ERROR_QUEUE.lower() in created:
        queue = spark.table(catalog.apply_table(dictionary.ERROR_QUEUE)).where(apply).collect()
    else:  # the first error creates the error queue
        queue = []
    transaction_of = {r.local_transaction_id: r for r in queue}
    messages = (
        spark.table(catalog.apply_table(dictionary.ERROR_MESSAGES))
        .where(apply & F.col("local_transaction_id").isin(sorted(transaction_of)))
        .collect()
        if queue
        else []
    )
    transactions = spark.table(catalog.apply_table(dictionary.TRANSACTIONS)).where(apply).collect()
    progress_rows = (
        spark.table(catalog.apply_table(dictionary.PROGRESS))
        .where(apply)
        .orderBy("cycle_id")
        .collect()
    )
    aborted = apply_status(spark, catalog, apply_name) == "ABORTED"
    silver = _existing_tables(spark, catalog, catalog.silver)
    outcomes = []
    for workload in workloads:
        process = reference_process(workload)
        sources = set(process.source_databases)
        progress = {r.source_database: r for r in progress_rows if r.source_database in sources}
        tables = {
            name: _silver_table(spark, catalog, table)
            for name, table in _by_silver_table(process).items()
            if name.lower() in silver  # not dropped (rule 10)
        }
        outcomes.append(
            {
                "columns": {name: [c for c, _ in columns] for name, (columns, _) in tables.items()},
                "tables": {name: _rows(columns, rows) for name, (columns, rows) in tables.items()},
                "errors": sorted(
                    (
                        r.source_database,
                        r.source_transaction_id,
                        r.source_commit_scn,
                        r.message_number,
                        r.error_number,
                        r.message_count,
                    )
                    for r in queue
                    if r.source_database in sources
                ),
                "error_messages": sorted(
                    (
                        transaction_of[m.local_transaction_id].source_database,
                        transaction_of[m.local_transaction_id].source_transaction_id,
                        m.message_number,
                        *_message_fields(m.asDict()),
                    )
                    for m in messages
                    if transaction_of[m.local_transaction_id].source_database in sources
                ),
                "outcomes": sorted(
                    (r.source_database, r.transaction_id, r.commit_scn, r.outcome)
                    for r in transactions
                    if r.source_database in sources
                ),
                "counters": {
                    counter: sum(getattr(row, f"total_{counter}") for row in progress.values())
                    for counter in COUNTERS
                },
                "low_watermark": {s: _at(progress, s, "low_watermark") for s in sources},
                "high_watermark": {s: _at(progress, s, "high_watermark") for s in sources},
                "oldest_scn": {s: _at(progress, s, "oldest_scn") for s in sources},
                "aborted": aborted,
            }
        )
    return outcomes


def _at(progress: dict[str, Any], source: str, field: str) -> Any:
    return getattr(progress[source], field) if source in progress else None


def _difference(field: str, expected: Comparable, actual: Comparable) -> str:
    """The field, and for a list what only one side has (a failing seed's diff at a glance)."""
    want, got = expected[field], actual[field]
    if not isinstance(want, list) or not isinstance(got, list):
        return field
    return (
        f"{field}: only the engine's {[x for x in got if x not in want]}, "
        f"only the reference's {[x for x in want if x not in got]}"
    )


def compare(expected: Comparable, actual: Comparable, batches: int) -> None:
    """Assert the engine's result equals the reference's, field by field (clear diffs)."""
    if expected["aborted"]:
        # An aborted apply stops reading bronze: it never receives the later batches.
        for counter in ("received", "rolled_back"):
            del expected["counters"][counter], actual["counters"][counter]
        if batches > 1:
            # Redeliveries count when received (rule 11): later batches' are never counted.
            del expected["counters"]["ignored"], actual["counters"]["ignored"]
            # Nor their transactions: its oldest SCN is over what it received, so it can only
            # be at or above the reference's (which saw every batch).
            for source, oldest in actual.pop("oldest_scn").items():
                reference_oldest = expected["oldest_scn"][source]
                assert oldest is None or reference_oldest is None or oldest >= reference_oldest
            del expected["oldest_scn"]
    for field in expected:
        assert actual[field] == expected[field], _difference(field, expected, actual)


# ---------------------------------------------------------------------------------------------
# The gold views of the final state
# ---------------------------------------------------------------------------------------------


def gold_outcomes(
    spark: SparkSession, gold_schema: str, workloads: Sequence[Workload]
) -> list[Comparable]:
    """What the Oracle-named gold views show for each (isolated) workload's source databases:
    each view queried once, split by source database."""
    progress_rows = spark.table(f"{gold_schema}.dba_apply_progress").collect()
    queue = spark.table(f"{gold_schema}.dba_apply_error").collect()
    outcomes = []
    for workload in workloads:
        sources = reference_process(workload).source_databases
        progress = {r.SOURCE_DATABASE: r for r in progress_rows if r.SOURCE_DATABASE in sources}
        outcomes.append(
            {
                "low_watermark": {s: _at(progress, s, "APPLIED_MESSAGE_NUMBER") for s in sources},
                "oldest_scn": {s: _at(progress, s, "OLDEST_MESSAGE_NUMBER") for s in sources},
                "errors": sorted(
                    (
                        r.SOURCE_DATABASE,
                        r.SOURCE_TRANSACTION_ID,
                        r.SOURCE_COMMIT_SCN,
                        r.MESSAGE_NUMBER,
                        r.ERROR_NUMBER,
                        r.MESSAGE_COUNT,
                    )
                    for r in queue
                    if r.SOURCE_DATABASE in sources
                ),
            }
        )
    return outcomes


def compare_gold(expected: Comparable, gold: Comparable) -> None:
    """DBA_APPLY_PROGRESS and DBA_APPLY_ERROR agree with the reference (a workload that carried
    on after its errors: it read every batch)."""
    for field in ("low_watermark", "oldest_scn", "errors"):
        assert gold[field] == expected[field], f"gold {field}"
