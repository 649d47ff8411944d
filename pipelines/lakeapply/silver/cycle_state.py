"""What an apply cycle carries from step to step: its plan, its inputs, the fold's outcome, the
crash points tests stop it at, and the small helpers every step writes with.

A cycle is exactly once because every write it makes is an idempotent Delta commit keyed by
``txnAppId`` = ``TXN_APP_ID:<apply>:<table>`` and ``txnVersion`` = the cycle id (``append_rows``
and the MERGEs of ``silver/write.py``; under the warehouse lease a destination append relies on
the table's planned version instead: ``Cycle.sole_writer``), and because a re-run reads the
tables ``VERSION AS OF`` the versions recorded in its plan (``CyclePlan``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from delta.tables import DeltaTable
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import quote
from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.lease import holds_lease
from lakeapply.runtime.session import session_warehouse
from lakeapply.silver import dictionary
from lakeapply.silver.fold import Position
from lakeapply.silver.keys import KeyBounds
from lakeapply.silver.late import LateInput
from lakeapply.silver.settings import ApplySettings
from lakeapply.silver.transactions import TRANSACTION_KEY

TXN_APP_ID = "lakeapply-apply"
ARRIVED = "__arrived_this_cycle"  # a new bronze LCR, not one read back from the spill
CRASH_POINTS = ("plan", "first_merge", "merges", "error_queue", "spill", "progress")
ABORT_STATUS_CRASH_POINT = "abort_status"  # only reached by a cycle that aborts the apply
DROP_RECORDED_CRASH_POINT = "ddl_recorded"  # only reached by a DROP TABLE's cycle
Progress = Callable[[str], None]
SPILL_KEY = "__spill__"
EXECUTE_KEY = "__execute_error__:"


class SimulatedApplyCrash(RuntimeError):
    """Raised by tests (``crash_after``) to stop a cycle between two of its writes."""


@dataclass(frozen=True)
class CycleReport:
    apply_name: str
    cycle_id: int
    resumed: bool
    received: int
    applied: int
    ignored: int
    rolled_back: int
    errors: int
    passes: int
    tables_merged: int
    aborted: bool
    low_watermarks: dict[str, int | None] = field(default_factory=dict)
    # Every bronze batch known at plan time is read and no committed transaction was deferred:
    # another cycle now would find nothing to do.
    caught_up: bool = False


def latest_version(spark: SparkSession, qualified: str) -> int:
    """The newest Delta version of a table.

    Resolving the table brings Delta's snapshot up to date with the log (commits of other
    writers included); its version is then read in the JVM, without the Spark jobs of a
    history read (~0.07 s a table against ~0.25-0.4 s; a cycle asks twice per destination
    table). Where the JVM objects are out of reach (Spark Connect), the history is read."""
    table = DeltaTable.forName(spark, qualified)
    try:
        return int(table._jdt.deltaLog().unsafeVolatileSnapshot().version())
    except (AttributeError, Py4JError):
        return int(table.history(1).collect()[0]["version"])


def materialize(frame: DataFrame) -> DataFrame:
    """Compute ``frame`` once and keep it (memory, then disk) for the rest of the cycle.

    A local checkpoint rather than ``persist``: a cached plan that reads a Delta table is dropped
    from the cache when that table is written, and a cycle writes the spill and the destination
    tables it read, so persisted stages (the Python stage and fold among them) ran again after
    each write. A checkpoint keeps no reference to the tables; its blocks are freed once the
    cycle's DataFrames are garbage collected.
    """
    return frame.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def append_rows(frame: DataFrame, table: str, schema: T.StructType, app: str, version: int) -> None:
    frame.select(*[F.col(quote(f.name)).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).option("txnAppId", app).option("txnVersion", version).mode("append").saveAsTable(table)


@dataclass(frozen=True)
class CyclePlan:
    cycle_id: int
    bronze_from_batch: int  # exclusive
    bronze_to_batch: int  # inclusive
    spill_version: int
    table_versions: dict[str, int]
    bronze_newest_batch: int | None = None  # when planned (None: a resumed plan)
    # The LCRs the cycle reads: the planned bronze batches' (as the ingest logged them) and the
    # spill's (None: a resumed plan)
    lcrs_to_read: int | None = None
    # EXECUTE_ERROR: the error transactions (local transaction ids) this cycle re-executes
    # instead of reading bronze, and the versions of the error queue it reads them at.
    execute_errors: tuple[str, ...] = ()
    error_queue_versions: dict[str, int] = field(default_factory=dict)
    # The spill's rows at ``spill_version``, every apply process's (None: not known, as for a
    # resumed plan). 0 lets the cycle know its spill unchanged or not without reading its LCRs.
    spill_rows: int | None = None

    def recorded_versions(self) -> dict[str, int]:
        """``table_versions_before`` of the cycle row: the destination tables' versions, plus
        the spill's and, for an EXECUTE_ERROR cycle, the error queue's and the transactions it
        re-executes (the cycle row keeps its schema; a resumed plan reads them back)."""
        return {
            **self.table_versions,
            SPILL_KEY: self.spill_version,
            **{f"__{name}__": version for name, version in self.error_queue_versions.items()},
            **{f"{EXECUTE_KEY}{local_id}": n for n, local_id in enumerate(self.execute_errors)},
        }


def apply_rows(spark: SparkSession, catalog: Catalog, name: str, apply_name: str) -> DataFrame:
    return spark.table(catalog.apply_table(name)).where(F.col("apply_name") == apply_name)


def error_rows(spark: SparkSession, catalog: Catalog, name: str, apply_name: str) -> DataFrame:
    """``apply_rows`` of an error-queue table: none before the first error created it."""
    if spark.catalog.tableExists(catalog.apply_table(name)):
        return apply_rows(spark, catalog, name, apply_name)
    return spark.createDataFrame([], dictionary.ERROR_TABLES[name])


@dataclass(frozen=True)
class Cycle:
    """What every step of one cycle needs."""

    spark: SparkSession
    catalog: Catalog
    settings: ApplySettings
    plan: CyclePlan
    progress: Progress
    crash_after: str | None

    @property
    def apply_name(self) -> str:
        return self.settings.apply_name

    @property
    def app(self) -> str:
        """The txnAppId prefix of this apply process's writes."""
        return f"{TXN_APP_ID}:{self.settings.apply_name}"

    @property
    def sole_writer(self) -> bool:
        """This process holds the lease of the session's local warehouse (``runtime/lease.py``):
        no other run of this cycle writes its tables while it runs."""
        return self.catalog.catalog is None and holds_lease(session_warehouse(self.spark))

    def crash_point(self, name: str, what: str) -> None:
        if self.crash_after == name:
            raise SimulatedApplyCrash(what)


@dataclass(frozen=True)
class CycleInput:
    lcrs: DataFrame  # new bronze LCRs and the spill
    transactions: DataFrame
    committed: DataFrame
    messages: DataFrame
    staged: DataFrame
    fold_input: DataFrame
    bounds: dict[str, KeyBounds]
    buckets: int
    late: LateInput | None = None  # late LCRs and late COMMITs (silver/late.py)
    redelivered: DataFrame | None = None  # committed transactions processed by an earlier cycle
    # source database -> progress row of the last committed cycle (read once per cycle)
    previous: dict[str, Any] = field(default_factory=dict)
    # Rule 9 (DDL barrier): the DDL transaction this cycle applies alone, and whether a DDL
    # barrier held committed transactions back for a later cycle.
    ddl: Position | None = None
    barrier: bool = False
    ignored_ddl: frozenset[tuple[str, str]] = frozenset()  # DDL-only, changing nothing


@dataclass(frozen=True)
class FoldOutcome:
    final_rows: DataFrame
    failed: dict[tuple[str, str], Any]  # transaction -> its first failing message
    cut: Position | None  # the last transaction this cycle processes; None: all
    passes: int
    aborted_error: Any  # the error that aborts the apply (disable_on_error = Y), or None
    ddl_outcome: str | None = None  # a DDL cycle's transaction: APPLIED or IGNORED (no error)
    # DEPENDENT_TRANSACTIONS: transactions held back by the abort -> commit SCN (in the spill)
    held: dict[tuple[str, str], int] = field(default_factory=dict)


SEEN_KEY = ("source_database_name", "transaction_id", "commit_scn")


def at_or_before(cut: Position | None) -> Column:
    """Transactions at or before ``cut`` in commit order (all when there is no cut)."""
    if cut is None:
        return F.lit(True)
    scn, database, txn = cut
    return (F.col("commit_scn") < scn) | (
        (F.col("commit_scn") == scn)
        & (
            (F.col("source_database_name") < database)
            | ((F.col("source_database_name") == database) & (F.col("transaction_id") <= txn))
        )
    )


def parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        return None


COMMIT_ORDER = ("commit_scn", "source_database_name", "transaction_id")


def is_position(position: Position) -> Column:
    scn, database, txn = position
    return (
        (F.col("commit_scn") == scn)
        & (F.col("source_database_name") == database)
        & (F.col("transaction_id") == txn)
    )


def is_one_of(keys: frozenset[tuple[str, str]]) -> Column:
    """The row's transaction is one of ``keys``: a literal set, for a few keys (each literal
    costs ~0.7 ms to build: for more, a broadcast join with ``components.driver_rows``)."""
    if not keys:
        return F.lit(False)
    return F.concat_ws("\u0000", *TRANSACTION_KEY).isin(*["\u0000".join(key) for key in keys])
