"""Retrying Delta concurrent-modification conflicts, with fake exceptions (no Spark needed)."""

from __future__ import annotations

import pytest
from delta.exceptions.base import ConcurrentAppendException as DeltaConcurrentAppendException

from lakeapply.errors import ConcurrentModificationError, LakeapplyError
from lakeapply.runtime.retry import is_concurrent_modification, retry_on_concurrent_modification


class ConcurrentDeleteReadException(Exception):
    """Named like Delta's, as delta-spark's Python wrapper surfaces it."""


class MetadataChangedException(Exception):
    """A conflict whose name does not say Concurrent."""


class Py4JJavaError(Exception):
    """What an unconverted Java exception looks like: the Java class is only in the text."""


JAVA_CONFLICT = Py4JJavaError(
    "An error occurred while calling o187.merge.\n"
    ": io.delta.exceptions.ConcurrentAppendException: Files were added to the root of the table "
    "by a concurrent update. Please try the operation again.\n\tat io.delta.Foo.bar(Foo.scala:1)"
)
JAVA_OTHER = Py4JJavaError(
    "An error occurred while calling o187.sql.\n: java.lang.IllegalStateException: broken"
)


class FlakyOperation:
    """Raises ``error`` the first ``times`` calls, then returns "done"."""

    def __init__(self, times: int, error: Exception) -> None:
        self.times = times
        self.error = error
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return "done"


@pytest.mark.parametrize(
    "error",
    [
        ConcurrentDeleteReadException("a concurrent delete"),
        MetadataChangedException("the schema changed"),
        JAVA_CONFLICT,
        DeltaConcurrentAppendException(message="files were added"),
    ],
    ids=["python-name", "metadata-changed", "py4j-text", "delta-spark-class"],
)
def test_conflicts_are_recognized(error: Exception) -> None:
    assert is_concurrent_modification(error)


def test_a_conflict_raised_as_the_cause_of_another_error_is_recognized() -> None:
    try:
        try:
            raise ConcurrentDeleteReadException("underneath")
        except ConcurrentDeleteReadException as conflict:
            raise RuntimeError("wrapped") from conflict
    except RuntimeError as wrapped:
        assert is_concurrent_modification(wrapped)


@pytest.mark.parametrize("error", [ValueError("no"), JAVA_OTHER, LakeapplyError("x")])
def test_other_errors_are_not_conflicts(error: Exception) -> None:
    assert not is_concurrent_modification(error)


def test_a_conflict_is_retried_with_doubling_backoff_until_it_gets_through() -> None:
    sleeps: list[float] = []
    retried: list[int] = []
    operation = FlakyOperation(2, JAVA_CONFLICT)
    result = retry_on_concurrent_modification(
        operation,
        attempts=3,
        backoff=1.0,
        sleep=sleeps.append,
        on_retry=lambda attempt, _: retried.append(attempt),
    )
    assert result == "done"
    assert operation.calls == 3
    assert retried == [1, 2]
    assert 1.0 <= sleeps[0] <= 1.5
    assert 2.0 <= sleeps[1] <= 3.0


def test_other_errors_are_not_retried() -> None:
    sleeps: list[float] = []
    operation = FlakyOperation(1, ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        retry_on_concurrent_modification(operation, attempts=5, sleep=sleeps.append)
    assert operation.calls == 1
    assert sleeps == []


def test_giving_up_is_a_lakeapply_error_with_the_last_conflict_as_cause() -> None:
    sleeps: list[float] = []
    operation = FlakyOperation(10, ConcurrentDeleteReadException("again"))
    with pytest.raises(ConcurrentModificationError) as gave_up:
        retry_on_concurrent_modification(operation, attempts=3, backoff=0.5, sleep=sleeps.append)
    assert operation.calls == 3
    assert len(sleeps) == 2
    assert isinstance(gave_up.value.__cause__, ConcurrentDeleteReadException)
    assert "gave up after 3 attempts (ConcurrentDeleteReadException: again)" in str(gave_up.value)


def test_at_least_one_attempt() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        retry_on_concurrent_modification(lambda: None, attempts=0)
