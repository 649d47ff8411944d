"""Driver-side calls that mostly wait (on the metastore, the file system, a small Spark job),
run a few at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Result = TypeVar("Result")

# On 2 cores a few overlapping waits fill the gaps; more only queue behind the metastore's lock.
SIDE_BY_SIDE_THREADS = 4


def side_by_side(
    tasks: Sequence[Callable[[], Result]], threads: int = SIDE_BY_SIDE_THREADS
) -> list[Result]:
    """Each task's result, in the order given; the first failure (in that order) is raised once
    every task has ended, so no write is left running behind the error."""
    if len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(min(threads, len(tasks))) as pool:
        futures = [pool.submit(task) for task in tasks]
    return [future.result() for future in futures]
