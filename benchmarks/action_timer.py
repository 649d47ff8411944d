"""Every Spark action a block of lakeapply code starts, timed, with the line that started it.

A profile by step says how long a step took; this says which of the step's queries the time
went to (planning, Delta's snapshot and the Spark jobs of one action together), e.g.
``cycle_profile.py --actions``:

    with timed_actions() as actions:
        run_apply(...)
    for action in actions:
        print(f"{action.seconds:.3f} {action.kind} {action.call_site}")

The DataFrame, writer and Delta methods that run queries are wrapped for the block and restored
after it. Only for benchmarks: it patches classes process-wide.
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaMergeBuilder, DeltaTable
from pyspark.sql.classic.dataframe import DataFrame  # the local session's (not Connect's)
from pyspark.sql.readwriter import DataFrameWriter, DataFrameWriterV2

# (class, method): the calls that run a query, or read a Delta table's log.
TIMED: tuple[tuple[type, str], ...] = (
    (DataFrame, "collect"),
    (DataFrame, "count"),
    (DataFrame, "localCheckpoint"),
    (DataFrame, "isEmpty"),
    (DataFrame, "toPandas"),
    (DataFrameWriter, "saveAsTable"),
    (DataFrameWriter, "save"),
    (DataFrameWriterV2, "append"),
    (DataFrameWriterV2, "overwrite"),
    (DeltaMergeBuilder, "execute"),
    (DeltaTable, "forName"),
    (DeltaTable, "delete"),
)
PACKAGE_FOLDER = "/lakeapply/"


@dataclass(frozen=True)
class Action:
    seconds: float
    kind: str  # e.g. "DataFrame.collect"
    call_site: str  # "silver/plan.py:331 plan_cycle": the innermost lakeapply frame


class _Depth(threading.local):
    """How many timed actions the current thread is inside (the engine runs some side by
    side: the MERGEs, the table-version reads)."""

    value = 0


def _call_site() -> str:
    for frame in reversed(traceback.extract_stack()[:-2]):
        if PACKAGE_FOLDER in frame.filename:
            return f"{frame.filename.rsplit(PACKAGE_FOLDER, 1)[-1]}:{frame.lineno} {frame.name}"
    return "(outside lakeapply)"


def _timed(
    method: Callable[..., Any], kind: str, actions: list[Action], depth: _Depth
) -> Callable[..., Any]:
    """``method``, timed; ``depth`` is shared by every wrapper of the block, so an action
    that starts another (``toPandas`` -> ``collect``, say) is timed once, outermost."""

    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if depth.value:
            return method(*args, **kwargs)
        site, started = _call_site(), time.perf_counter()
        depth.value += 1
        try:
            return method(*args, **kwargs)
        finally:
            depth.value -= 1
            actions.append(Action(time.perf_counter() - started, kind, site))

    return timed


@contextmanager
def timed_actions() -> Iterator[list[Action]]:
    """The actions started inside the block, in order (the list fills as they end)."""
    actions: list[Action] = []  # list.append is atomic: threads may share it
    depth = _Depth()
    originals = [(cls, name, cls.__dict__[name]) for cls, name in TIMED]
    for cls, name, method in originals:
        wrapped = method.__func__ if isinstance(method, classmethod) else method
        timed = _timed(wrapped, f"{cls.__name__}.{name}", actions, depth)
        setattr(cls, name, classmethod(timed) if isinstance(method, classmethod) else timed)
    try:
        yield actions
    finally:
        for cls, name, method in originals:
            setattr(cls, name, method)
