"""Seeded hypothesis draws that do not depend on what a test run happened to import.

Hypothesis mixes the literals of the *local* modules loaded so far (lakeapply's; test files are
excluded) into some of its choices, so one ``@seed`` drew other workloads when a test file ran
alone than in a full run (seed 44 of the late-input differential: 5 late-LCR error transactions
alone, 4 in ``make test-slow``). Loading every lakeapply module before the first draw makes the
set of literals the same in every run.
"""

from __future__ import annotations

import importlib
import pkgutil

import lakeapply


def load_every_lakeapply_module() -> list[str]:
    """Import every module of the package; the names, sorted."""
    names = sorted(
        info.name for info in pkgutil.walk_packages(lakeapply.__path__, f"{lakeapply.__name__}.")
    )
    for name in names:
        importlib.import_module(name)
    return names
