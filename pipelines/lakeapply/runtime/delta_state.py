"""Delta log states computed ahead of the writes that need them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from delta.tables import DeltaTable
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

_log = logging.getLogger(__name__)


@contextmanager
def log_states_computed(spark: SparkSession, tables: Iterable[str]) -> Iterator[None]:
    """Compute the log state of ``tables``' latest snapshots in the background while the block
    runs, so that the block's idempotent writes find it computed.

    A write with ``txnAppId``/``txnVersion`` reads ``Snapshot.transactions``, and a MERGE the
    snapshot's file count and size; Delta 4.4 takes all three from the snapshot's computed state,
    an aggregation of the table's whole log (two Spark jobs, ~0.2-0.4 s a table on 2 cores) run
    the first time a snapshot is asked, on the write's critical path. Computed earlier, beside
    the block's other work, the write finds it cached on the same snapshot, as long as nothing
    committed to the table in between (if something did, the write computes it as before). Only
    a warm-up: it changes no result, and a table it cannot read (not created yet, Spark
    Connect, another Delta) is left to the write."""
    names = list(tables)
    thread = threading.Thread(
        target=_compute_log_states, args=(spark, names), name="delta-log-states", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _compute_log_states(spark: SparkSession, tables: list[str]) -> None:
    for name in tables:
        try:
            DeltaTable.forName(spark, name)._jdt.deltaLog().unsafeVolatileSnapshot().computedState()
        except (AnalysisException, AttributeError, Py4JError) as error:
            _log.debug("no log state computed ahead for %s: %s", name, error)
