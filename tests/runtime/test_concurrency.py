"""side_by_side: results in the order given, and a failure raised only after every task ended."""

from __future__ import annotations

import threading
import time

import pytest

from lakeapply.runtime.concurrency import side_by_side


def test_results_come_back_in_the_order_the_tasks_were_given() -> None:
    def after(delay: float, value: int) -> int:
        time.sleep(delay)
        return value

    tasks = [lambda: after(0.05, 1), lambda: after(0.0, 2), lambda: after(0.02, 3)]

    assert side_by_side(tasks) == [1, 2, 3]


def test_the_first_failure_is_raised_once_every_other_task_has_finished() -> None:
    finished = threading.Event()

    def fails() -> None:
        raise ValueError("first")

    def slow() -> None:
        time.sleep(0.1)
        finished.set()

    with pytest.raises(ValueError, match="first"):
        side_by_side([fails, slow])
    assert finished.is_set()


def test_a_single_task_runs_on_the_calling_thread() -> None:
    assert side_by_side([threading.get_ident]) == [threading.get_ident()]
