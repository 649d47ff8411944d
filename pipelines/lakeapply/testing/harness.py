"""Land built transactions in bronze, apply them, read the results as DataFrames.

.. code-block:: python

    kit = LakeapplyHarness.temporary(spark, tmp_path)    # its own databases under tmp_path
    kit.configure(apply_settings(destination(EMP, key_columns=["EMAIL"])))  # or a lakeapply.yml
    kit.land(kit.txn().insert("HR.EMP", ID=1, NAME="Ann").commit())
    kit.apply()                                          # run_apply: cycles until caught up
    kit.silver("HR.EMP").show()

The pytest plugin (:mod:`lakeapply.testing.plugin`) hands every test such a harness as the
``lakeapply`` fixture.

Only the pipeline's own entry points move data: :meth:`~LakeapplyHarness.land` appends LCRs to
``<prefix>_bronze.lcr`` as one ingest batch, parsed and shaped by the same functions as
``lakeapply ingest`` (``classify_lines``, ``bronze_rows``) but without writing a file, which is
faster; :meth:`~LakeapplyHarness.land_files` goes through files and
:func:`lakeapply.bronze.ingest.ingest` itself. :meth:`~LakeapplyHarness.apply` is
:func:`lakeapply.silver.engine.run_apply` with the given settings (nothing is published to the
dictionary tables, as with ``lakeapply apply`` after ``configure``).

Readers return Spark DataFrames without the Oracle type metadata silver columns carry (chispa
compares whole schemas, metadata included). Compare them with a frame built by
``spark.createDataFrame`` using ``assert_df_equality(actual, expected, ignore_row_order=True,
ignore_nullable=True)``: nullability is decided by how a table was created, not by the test, and
the dictionary tables have NOT NULL columns. :meth:`LakeapplyHarness.expected` builds the expected
frame with the silver table's exact schema instead, so ``ignore_nullable`` is not needed there.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.bronze.ingest import IngestReport, bronze_rows, ensure_bronze_tables, ingest
from lakeapply.bronze.tables import (
    INGEST_LOG_TABLE,
    LCR_TABLE,
    QUARANTINE_TABLE,
    ingest_log_schema,
    lcr_table_schema,
)
from lakeapply.bronze.validate import classify_lines
from lakeapply.contract.identifiers import quote, sql_string_literal
from lakeapply.contract.table_definitions import TableDefinition, table_definition_from_dict
from lakeapply.errors import ConfigurationError, LakeapplyError
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.config import (
    dml_handler_from_dict,
    error_handler_from_dict,
    load_config,
    transformation_from_dict,
)
from lakeapply.silver.cycle_state import CycleReport
from lakeapply.silver.engine import apply_cycle, delete_errors, execute_errors, run_apply
from lakeapply.silver.error_queue import ErrorExecution
from lakeapply.silver.plan import (
    apply_status,
    ensure_apply_tables,
    ensure_destination_tables,
    start_apply,
)
from lakeapply.silver.settings import (
    ApplySettings,
    ConflictResolution,
    DestinationTable,
    UpdateConflictHandler,
)
from lakeapply.testing.builder import (
    DEFAULT_SOURCE,
    LcrSource,
    ScnClock,
    TransactionBuilder,
    TypesByColumn,
    flatten,
    validate_lcr,
    write_jsonl,
)

__all__ = [
    "LakeapplyHarness",
    "LandingError",
    "apply_settings",
    "bronze_frame",
    "destination",
    "load_apply_settings",
    "table_definition",
    "unique_catalog_prefix",
]

HandlerSpec = UpdateConflictHandler | tuple[str, Sequence[str], str]


class LandingError(LakeapplyError):
    """LCRs given to :meth:`LakeapplyHarness.land` that bronze would quarantine."""


# ------------------------------------------------------------------------------------------------
# Apply configuration in a test
# ------------------------------------------------------------------------------------------------
def load_apply_settings(path: Path | str, apply_name: str | None = None) -> ApplySettings:
    """One apply process of a ``lakeapply.yml`` (the only one when ``apply_name`` is None)."""
    processes = load_config(Path(path))
    if apply_name is None:
        if len(processes) != 1:
            names = [process.apply_name for process in processes]
            raise ConfigurationError(f"{path}: {len(names)} apply processes {names}: name one")
        return processes[0]
    for process in processes:
        if process.apply_name == apply_name:
            return process
    raise ConfigurationError(f"{path}: no apply process {apply_name!r}")


def table_definition(
    table: str,
    columns: Mapping[str, str],
    *,
    primary_key: Sequence[str] = (),
    unique_keys: Mapping[str, Sequence[str]] | None = None,
    not_null: Sequence[str] = (),
) -> TableDefinition:
    """A destination table definition inline: ``table_definition("HR.EMP", {"ID": "NUMBER",
    "NAME": "VARCHAR2(30)"}, primary_key=["ID"])`` (the format of ``schemas/tables/*.yml``)."""
    owner, _, name = table.partition(".")
    document: dict[str, Any] = {
        "owner": owner,
        "name": name,
        "columns": [
            {"name": column, "type": kind, "nullable": column not in not_null}
            for column, kind in columns.items()
        ],
    }
    if primary_key:
        document["primary_key"] = list(primary_key)
    if unique_keys:
        document["unique_keys"] = [
            {"name": key, "columns": list(key_columns)} for key, key_columns in unique_keys.items()
        ]
    return table_definition_from_dict(document, f"table_definition({table!r})")


def _silver_name(source: str, definition: TableDefinition) -> str:
    return re.sub(r"[^a-z0-9_]", "_", f"{source}_{definition.owner}_{definition.name}".lower())


def destination(
    definition: TableDefinition,
    *,
    source: str = DEFAULT_SOURCE,
    silver_table: str | None = None,
    key_columns: Sequence[str] = (),
    instantiation_scn: int | None = 0,
    update_conflict_handlers: Sequence[HandlerSpec] = (),
    uncompared_columns: Iterable[tuple[str, str]] = (),
    transformations: Sequence[Mapping[str, Any]] = (),
    dml_handlers: Sequence[Mapping[str, Any]] = (),
    error_handlers: Sequence[Mapping[str, Any]] = (),
) -> DestinationTable:
    """A destination table of an apply process (the ``tables`` entries of ``lakeapply.yml``).

    ``instantiation_scn`` defaults to 0 (apply everything); ``None`` means not instantiated
    (ORA-26687). Handlers as ``UpdateConflictHandler`` or ``("MAXIMUM", ["SAL"], "SAL")``;
    transformations, DML and error handlers as lakeapply.yml writes them (``{"delete_column":
    "NICKNAME"}``, ``{"operation": "DELETE", "user_procedure": "pkg.mod:function"}``, ...)."""
    handlers = tuple(
        handler
        if isinstance(handler, UpdateConflictHandler)
        else UpdateConflictHandler(ConflictResolution(handler[0]), tuple(handler[1]), handler[2])
        for handler in update_conflict_handlers
    )
    return DestinationTable(
        source_database=source,
        definition=definition,
        silver_table=silver_table or _silver_name(source, definition),
        key_columns=tuple(key_columns),
        instantiation_scn=instantiation_scn,
        uncompared_columns=frozenset(uncompared_columns),
        update_conflict_handlers=handlers,
        transformations=tuple(transformation_from_dict(step) for step in transformations),
        dml_handlers=tuple(dml_handler_from_dict(handler) for handler in dml_handlers),
        error_handlers=tuple(error_handler_from_dict(handler) for handler in error_handlers),
    )


def apply_settings(
    *tables: DestinationTable | TableDefinition,
    apply_name: str = "APPLY_TEST",
    source_databases: Sequence[str] | None = None,
    disable_on_error: bool = True,
    **parameters: Any,
) -> ApplySettings:
    """An apply process inline. Table definitions become destinations with the defaults of
    :func:`destination`. ``disable_on_error`` defaults to Oracle's (and lakeapply.yml's) Y."""
    destinations = tuple(
        table if isinstance(table, DestinationTable) else destination(table) for table in tables
    )
    sources = tuple(source_databases or dict.fromkeys(t.source_database for t in destinations))
    return ApplySettings(
        apply_name=apply_name,
        source_databases=sources or (DEFAULT_SOURCE,),
        tables=destinations,
        disable_on_error=disable_on_error,
        **parameters,
    )


def bronze_frame(
    spark: SparkSession,
    *items: LcrSource,
    batch_id: int = 1,
    source_file: str = "lakeapply-testing:frame",
    now: datetime | None = None,
) -> DataFrame:
    """The LCRs (transactions, LCR dicts, lists of them) as the rows ingest would append to
    ``<prefix>_bronze.lcr``, without writing anything: input for a test of a function over
    bronze rows (a transformation, a handler, a query of your own). Parsed and shaped by the
    ingest's own functions; raises :class:`LandingError` when bronze would quarantine one."""
    lcrs = flatten(items)
    for lcr in lcrs:
        validate_lcr(lcr)
    lines = spark.createDataFrame(
        [(source_file, number, number, json.dumps(lcr)) for number, lcr in enumerate(lcrs, 1)],
        "source_file string, line_number long, byte_offset long, line string",
    )
    classified = classify_lines(lines)
    rejected = classified.where(F.col("reason").isNotNull()).select("line", "reason").collect()
    if rejected:
        raise LandingError(f"bronze would quarantine: {[tuple(row) for row in rejected]}")
    ingested_at = now or datetime.now(UTC).replace(tzinfo=None)
    return bronze_rows(classified, batch_id, ingested_at).select(
        *[F.col(quote(f.name)).cast(f.dataType) for f in lcr_table_schema().fields]
    )


# ------------------------------------------------------------------------------------------------
# The harness
# ------------------------------------------------------------------------------------------------
def _plain(frame: DataFrame) -> DataFrame:
    """``frame`` without column metadata (silver columns carry their Oracle type, which a frame
    built in a test does not, and chispa compares whole schemas)."""
    if not any(f.metadata for f in frame.schema.fields):
        return frame
    return frame.select(*[F.col(quote(name)).alias(name, metadata={}) for name in frame.columns])


_prefix_numbers = itertools.count(1)


def unique_catalog_prefix(stem: str = "lakeapply_test") -> str:
    """A catalog prefix no other test (in this run, or an earlier one sharing the metastore) has:
    a counter for reading, a random part because metastores outlive test runs."""
    return f"{stem}_{next(_prefix_numbers)}_{uuid.uuid4().hex[:8]}"


@dataclass
class LakeapplyHarness:
    """One test's pipeline: a SparkSession, its own databases (``catalog``), a landing folder,
    an SCN clock and, once configured, an apply process."""

    spark: SparkSession
    catalog: Catalog
    landing: Path
    settings: ApplySettings | None = None
    clock: ScnClock = field(default_factory=ScnClock)

    @classmethod
    def temporary(
        cls, spark: SparkSession, folder: Path, prefix: str | None = None
    ) -> LakeapplyHarness:
        """A harness whose bronze, silver and apply databases are new and live under
        ``folder/warehouse`` (whatever the session's warehouse is), landing in
        ``folder/landing``. The databases stay in the metastore after the test (pytest keeps
        the folders of the last runs for a look); :meth:`drop` removes them."""
        catalog = Catalog(prefix or unique_catalog_prefix())
        warehouse = folder / "warehouse"
        warehouse.mkdir(parents=True, exist_ok=True)
        for database in (catalog.bronze, catalog.silver, catalog.apply):
            location = (warehouse / f"{database}.db").resolve().as_uri()
            spark.sql(
                f"CREATE DATABASE IF NOT EXISTS {quote(database)} "
                f"LOCATION {sql_string_literal(location)}"
            )
        return cls(spark, catalog, folder / "landing")

    def drop(self) -> None:
        """Drop this harness's databases and their tables."""
        for database in (self.catalog.bronze, self.catalog.silver, self.catalog.apply):
            self.spark.sql(f"DROP DATABASE IF EXISTS {quote(database)} CASCADE")

    # --- configuration ---------------------------------------------------------------------------
    def configure(
        self, settings: ApplySettings | Path | str, apply_name: str | None = None
    ) -> ApplySettings:
        """Use this apply process: settings, or a ``lakeapply.yml`` (and which process in it)."""
        if not isinstance(settings, ApplySettings):
            settings = load_apply_settings(settings, apply_name)
        self.settings = settings
        return settings

    @property
    def apply_process(self) -> ApplySettings:
        """The configured apply process."""
        if self.settings is None:
            raise ConfigurationError("no apply process: call configure(...) first")
        return self.settings

    def create_tables(self) -> None:
        """Create the dictionary tables an apply cycle writes and the destination tables now
        (an apply cycle does it anyway): for a test that reads or loads a silver table before
        the first apply."""
        ensure_apply_tables(self.spark, self.catalog)
        ensure_destination_tables(self.spark, self.catalog, self.apply_process)

    # --- building and landing ----------------------------------------------------------------------
    def txn(
        self,
        source: str | None = None,
        scn: int | None = None,
        *,
        transaction_id: str | None = None,
        types: Mapping[str, TypesByColumn] | None = None,
        tag: str | None = None,
        source_time: datetime | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        commit_scn_on_records: bool = False,
    ) -> TransactionBuilder:
        """:func:`lakeapply.testing.txn` on this harness's clock, with the column types of the
        configured tables; ``source`` defaults to the apply process's first source database."""
        if source is None:
            source = self.settings.source_databases[0] if self.settings else DEFAULT_SOURCE
        return TransactionBuilder(
            source=source,
            scn=scn,
            transaction_id=transaction_id,
            clock=self.clock,
            tables=self.settings,
            types=types,
            tag=tag,
            source_time=source_time,
            attributes=attributes,
            commit_scn_on_records=commit_scn_on_records,
        )

    def land(self, *items: LcrSource) -> int:
        """Append the LCRs (transactions, LCR dicts, lists of them; in that order) to bronze as
        one new ingest batch, without a file; returns the batch id. Each LCR is validated
        against the contract first, and must pass bronze's own checks too."""
        lcrs = flatten(items)
        if not lcrs:
            raise ValueError("nothing to land")
        ensure_bronze_tables(self.spark, self.catalog)
        log_table = self.catalog.bronze_table(INGEST_LOG_TABLE)
        last = self.spark.table(log_table).agg(F.max("batch_id")).collect()[0][0]
        batch_id = int(last or 0) + 1
        # Lineage points at a file that was never written: nothing reads it back.
        source_file = f"lakeapply-testing:batch-{batch_id}"
        now = datetime.now(UTC).replace(tzinfo=None)
        bronze_frame(
            self.spark, lcrs, batch_id=batch_id, source_file=source_file, now=now
        ).write.format("delta").mode("append").saveAsTable(self.catalog.bronze_table(LCR_TABLE))
        # The COMMITTED log row is what the apply's planner reads to find new batches; by name,
        # so a column the log gains later is NULL here, as in rows of older versions.
        log_values = {
            "batch_id": batch_id,
            "phase": "COMMITTED",
            "source_file": source_file,
            "compressed": False,
            "start_offset": 0,
            "size_bound": 0,
            "first_line_number": 1,
            "end_offset": 0,
            "lines": len(lcrs),
            "bronze_rows": len(lcrs),
            "quarantined_rows": 0,
            "logged_at": now,
        }
        log_schema = ingest_log_schema()
        log_row = tuple(log_values.get(f.name) for f in log_schema.fields)
        self.spark.createDataFrame([log_row], log_schema).write.format("delta").mode(
            "append"
        ).saveAsTable(log_table)
        return batch_id

    def _next_file(self) -> Path:
        self.landing.mkdir(parents=True, exist_ok=True)
        return self.landing / f"lcrs_{len(list(self.landing.iterdir())) + 1:05d}.jsonl"

    def land_files(self, *items: LcrSource) -> IngestReport:
        """Write the LCRs as one new landing file (validated) and ingest the landing folder
        exactly as ``lakeapply ingest`` does."""
        if not flatten(items):
            raise ValueError("nothing to land")
        write_jsonl(self._next_file(), *items)
        return ingest(self.spark, self.catalog, self.landing)

    def land_lines(self, *lines: str) -> IngestReport:
        """Land raw text lines, unchecked, through ``lakeapply ingest`` (to test what bronze
        quarantines)."""
        self._next_file().write_text("".join(line.rstrip("\n") + "\n" for line in lines))
        return ingest(self.spark, self.catalog, self.landing)

    # --- applying ----------------------------------------------------------------------------------
    def apply(self) -> list[CycleReport]:
        """Apply cycles until bronze has nothing new (or the apply aborts): ``lakeapply apply``.
        Raises ApplyAbortedError when the apply is already ABORTED (see :meth:`start_apply`)."""
        return run_apply(self.spark, self.catalog, self.apply_process)

    def apply_cycle(self) -> CycleReport | None:
        """Exactly one apply cycle (None when there is nothing to apply)."""
        return apply_cycle(self.spark, self.catalog, self.apply_process)

    def run(self, *items: LcrSource) -> list[CycleReport]:
        """:meth:`land` then :meth:`apply`: one apply for a whole scenario is the fast way."""
        self.land(*items)
        return self.apply()

    def start_apply(self) -> None:
        """DBMS_APPLY_ADM.START_APPLY (``lakeapply admin start-apply``): enable the apply after an
        ABORT; it resumes after the failed transaction, which stays in the error queue."""
        start_apply(self.spark, self.catalog, self.apply_process)

    def apply_status(self) -> str:
        """ENABLED, DISABLED or ABORTED (DBA_APPLY.STATUS)."""
        return apply_status(self.spark, self.catalog, self.apply_process.apply_name)

    # --- the error queue -------------------------------------------------------------------------
    def execute_error(self, local_transaction_id: str) -> ErrorExecution:
        """DBMS_APPLY_ADM.EXECUTE_ERROR (``lakeapply admin execute-error``): re-execute one error
        transaction against the current silver tables; it leaves the queue when it applies."""
        results = execute_errors(
            self.spark, self.catalog, self.apply_process, [local_transaction_id]
        )
        return next(r for r in results if r.local_transaction_id == local_transaction_id)

    def execute_all_errors(self) -> list[ErrorExecution]:
        """EXECUTE_ALL_ERRORS: every error transaction, in commit-SCN order."""
        return execute_errors(self.spark, self.catalog, self.apply_process)

    def delete_error(self, local_transaction_id: str) -> None:
        """DELETE_ERROR: drop one error transaction from the queue, unapplied."""
        delete_errors(self.spark, self.catalog, self.apply_process, [local_transaction_id])

    def delete_all_errors(self) -> list[str]:
        """DELETE_ALL_ERRORS: drop every error transaction; returns their ids."""
        return delete_errors(self.spark, self.catalog, self.apply_process)

    def local_transaction_id(self, source_transaction_id: str) -> str:
        """The LOCAL_TRANSACTION_ID the error queue gave a source transaction."""
        rows = (
            self.error_queue()
            .where(F.col("source_transaction_id") == source_transaction_id)
            .select("local_transaction_id")
            .collect()
        )
        if not rows:
            raise LookupError(f"transaction {source_transaction_id} is not in the error queue")
        return str(rows[0].local_transaction_id)

    # --- reading -----------------------------------------------------------------------------------
    def silver_table_name(self, table: str) -> str:
        """``OWNER.NAME`` (a source object of the apply process) or a silver table name."""
        owner, dot, name = table.partition(".")
        if not dot:
            return table
        settings = self.apply_process
        for destination_table in settings.tables:
            if (destination_table.definition.owner, destination_table.definition.name) == (
                owner,
                name,
            ):
                return destination_table.silver_table
        raise ConfigurationError(f"{table} is not a table of apply process {settings.apply_name}")

    def silver(self, table: str) -> DataFrame:
        """The silver table of source object ``OWNER.NAME`` (or the silver table so named)."""
        return _plain(self.spark.table(self.catalog.silver_table(self.silver_table_name(table))))

    def silver_schema(self, table: str) -> T.StructType:
        """The silver table's schema as :meth:`silver` returns it (no column metadata). Before
        the table exists (no apply yet): its definition's types and NOT NULL columns (key
        columns and columns declared NOT NULL), which is how the apply creates it."""
        name = self.silver_table_name(table)
        qualified = self.catalog.silver_table(name)
        if self.spark.catalog.tableExists(qualified):
            return _plain(self.spark.table(qualified)).schema
        for destination_table in self.apply_process.tables:
            if destination_table.silver_table == name:
                return T.StructType(
                    [
                        T.StructField(f.name, f.dataType, f.nullable)
                        for f in destination_table.definition.spark_schema().fields
                    ]
                )
        raise ConfigurationError(f"{name} is not a silver table of this apply process")

    def expected(self, table: str, rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> DataFrame:
        """Rows (dicts by column name, missing ones NULL, or tuples in column order) as a
        DataFrame with the silver table's exact schema; ints, floats and strings given for
        DECIMAL columns (Oracle NUMBER) become Decimals."""
        schema = self.silver_schema(table)
        values = []
        for row in rows:
            if isinstance(row, Mapping):
                unknown = set(row) - set(schema.names)
                if unknown:
                    raise ValueError(f"{table}: no column(s) {sorted(unknown)}")
                ordered: Sequence[Any] = [row.get(name) for name in schema.names]
            else:
                ordered = row
            values.append(
                tuple(
                    _decimal(value) if isinstance(f.dataType, T.DecimalType) else value
                    for f, value in zip(schema.fields, ordered, strict=True)
                )
            )
        return self.spark.createDataFrame(values, schema)

    def _apply_table(self, name: str) -> DataFrame:
        if name in dictionary.ERROR_TABLES and not self.spark.catalog.tableExists(
            self.catalog.apply_table(name)
        ):  # created by the first error
            return self.spark.createDataFrame([], dictionary.ERROR_TABLES[name])
        frame = self.spark.table(self.catalog.apply_table(name))
        if self.settings is not None:
            frame = frame.where(F.col("apply_name") == self.settings.apply_name)
        return frame

    def error_queue(self) -> DataFrame:
        """DBA_APPLY_ERROR: one row per error transaction of this apply process
        (``source_transaction_id``, ``source_commit_scn``, ``error_number``, ``error_message``,
        ``message_number``, ``message_count``, ...)."""
        return self._apply_table(dictionary.ERROR_QUEUE)

    def error_messages(self) -> DataFrame:
        """DBA_APPLY_ERROR_MESSAGES: every LCR of every error transaction (bronze's columns)."""
        return self._apply_table(dictionary.ERROR_MESSAGES)

    def progress(self) -> DataFrame:
        """One row per source database and committed cycle: ``low_watermark``,
        ``high_watermark``, ``oldest_scn``, the ``total_*`` counters, ``status``."""
        return self._apply_table(dictionary.PROGRESS)

    def latest_progress(self) -> DataFrame:
        """:meth:`progress` of the latest cycle only: one row per source database (what
        DBA_APPLY_PROGRESS shows)."""
        progress = self.progress()
        latest = progress.groupBy("source_database").agg(F.max("cycle_id").alias("cycle_id"))
        return progress.join(latest, ["source_database", "cycle_id"], "left_semi")

    def spill(self) -> DataFrame:
        """The LCRs the apply holds back between cycles (bronze's columns): those of transactions
        still open, whose COMMIT has not landed yet, and of committed ones it deferred. Empty once
        everything landed is processed."""
        return self._apply_table(dictionary.SPILL)

    def transactions(self) -> DataFrame:
        """The outcome of every committed transaction processed: APPLIED, DISCARDED (every
        change at or below the instantiation SCN) or ERROR."""
        return self._apply_table(dictionary.TRANSACTIONS)

    def bronze(self) -> DataFrame:
        """Every LCR landed so far (``<prefix>_bronze.lcr``)."""
        return self.spark.table(self.catalog.bronze_table(LCR_TABLE))

    def quarantine(self) -> DataFrame:
        """Every line bronze rejected (``<prefix>_bronze.quarantine``; only ingest of files,
        :meth:`land_files` and :meth:`land_lines`, quarantines)."""
        return self.spark.table(self.catalog.bronze_table(QUARANTINE_TABLE))


def _decimal(value: Any) -> Any:
    """A number given for a DECIMAL column as the Decimal Spark requires; ``bool`` is not a
    number here, and anything else is left for createDataFrame to judge."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return Decimal(str(value))
    return value
