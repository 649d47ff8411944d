"""Retrying a Delta commit that lost an optimistic-concurrency race.

Delta writers do not lock: each commit checks what was committed since it read the table and
fails with a concurrent-modification exception (ConcurrentAppendException,
ConcurrentDeleteReadException, MetadataChangedException, ...) when the two conflict. The loser is
expected to re-read and try again. That is safe only for work that is idempotent on replay: a
whole apply cycle (it re-plans from the dictionary tables) or a write tagged with
txnAppId/txnVersion (Delta skips a version it has already committed). Never wrap a bare append.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from lakeapply.errors import ConcurrentModificationError

Result = TypeVar("Result")

# Delta's conflicts are the io.delta.exceptions.*Concurrent*Exception family plus two whose names
# do not say so: a concurrent schema/property change and a concurrent protocol upgrade. Both mean
# "re-read the table and commit again", exactly like the others.
_CONFLICTS_WITHOUT_CONCURRENT_IN_THE_NAME = frozenset(
    {"MetadataChangedException", "ProtocolChangedException"}
)


def is_concurrent_modification(error: BaseException) -> bool:
    """True for a Delta concurrent-modification conflict, however PySpark surfaced it.

    It can arrive as delta.exceptions.ConcurrentAppendException (when delta-spark converted it),
    as a Py4JJavaError or a generic captured Spark exception whose text names the Java class, or
    wrapped as the ``raise ... from`` cause of another exception; class names are compared, not imported types, so
    this works without a JVM and across delta-spark versions.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(_is_conflict_name(cls.__name__) for cls in type(current).__mro__):
            return True
        if _is_conflict_name(_java_class_name(current)):
            return True
        # __cause__ only: an error raised while merely handling a conflict is not a conflict.
        current = current.__cause__
    return False


def retry_on_concurrent_modification(
    operation: Callable[[], Result],
    attempts: int = 3,
    backoff: float = 1.0,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> Result:
    """Run ``operation``; after a concurrent-modification conflict wait and run it again.

    ``attempts`` counts every run (3 = one run and two retries). The wait doubles each time from
    ``backoff`` seconds, stretched by up to a half at random so that two writers that collided do
    not collide again in lockstep. Other errors propagate at once. When every attempt conflicts,
    :class:`ConcurrentModificationError` says so, with the last conflict as its cause.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    for attempt in range(1, attempts + 1):
        try:
            return operation()
        except Exception as error:
            if not is_concurrent_modification(error):
                raise
            if attempt == attempts:
                raise ConcurrentModificationError(
                    f"another writer kept committing to the same Delta table: gave up after "
                    f"{attempts} attempts ({type(error).__name__}: {_first_line(error)})"
                ) from error
            if on_retry is not None:
                on_retry(attempt, error)
            sleep(backoff * 2 ** (attempt - 1) * (1 + random.random() / 2))
    raise AssertionError("unreachable: the loop returns or raises")


def _is_conflict_name(name: str) -> bool:
    simple = name.rsplit(".", 1)[-1]
    return "Concurrent" in simple or simple in _CONFLICTS_WITHOUT_CONCURRENT_IN_THE_NAME


def _java_class_name(error: BaseException) -> str:
    """The Java exception class in a Py4J or captured Spark error's text ('' if none).

    Py4JJavaError reads "An error occurred while calling o42.sql.\\n: io.delta.exceptions.X: ...",
    a captured exception may start with the class name itself.
    """
    for line in str(error).splitlines()[:3]:
        candidate = line.removeprefix(": ").split(":", 1)[0].strip()
        if "." in candidate and " " not in candidate:
            return candidate
    return ""


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip() if lines else ""
