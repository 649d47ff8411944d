"""A seed draws the same workloads alone and in the whole suite (tests/hypothesis_draws.py)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import lakeapply

LOADED_WHEN_COLLECTED = set(sys.modules)  # what conftest's hook had loaded by now
ROOT = Path(__file__).resolve().parents[1]

# Draws five workloads of seed 44 in a fresh interpreter after importing the modules named on
# the command line (and, with --load-every-module, every lakeapply module), and prints a digest.
DRAW = """
import hashlib, sys
from hypothesis import HealthCheck, Phase, given, seed, settings
for name in sys.argv[1:]:
    if name == "--load-every-module":
        from tests.hypothesis_draws import load_every_lakeapply_module
        load_every_lakeapply_module()
    else:
        __import__(name)
from tests.reference.workloads import workloads
drawn = []
@seed(44)
@given(workloads())
@settings(max_examples=5, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
def collect(workload):
    drawn.append(repr(workload))
collect()
print(hashlib.sha256("".join(drawn).encode()).hexdigest())
"""


def draws_after(*imports: str) -> str:
    finished = subprocess.run(
        [sys.executable, "-c", DRAW, *imports],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return finished.stdout.strip()


def test_a_seed_draws_the_same_workloads_whatever_a_run_imported_first() -> None:
    alone = draws_after("--load-every-module")
    after_the_engine = draws_after("lakeapply.silver.engine", "--load-every-module")
    assert alone == after_the_engine


def test_without_the_loader_the_draws_follow_what_was_imported() -> None:
    """Why the loader exists: if this fails, hypothesis no longer mixes in local literals and
    tests/hypothesis_draws.py can go."""
    assert draws_after() != draws_after("lakeapply.silver.engine")


def test_the_suite_loads_every_module_before_collecting_tests() -> None:
    modules = {info.name for info in pkgutil.walk_packages(lakeapply.__path__, "lakeapply.")}
    assert modules - LOADED_WHEN_COLLECTED == set()
