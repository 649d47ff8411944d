"""One SparkSession for the whole suite (starting Spark costs ~10 s), on a throwaway warehouse."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakeapply.runtime.catalog import Catalog
from lakeapply.runtime.session import LocalSparkSettings, get_spark
from tests.hypothesis_draws import load_every_lakeapply_module

_catalog_numbers = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    """Before collection, so before any draw: a seed draws the same workloads whether a test
    runs alone or in the whole suite (see tests/hypothesis_draws.py)."""
    load_every_lakeapply_module()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = get_spark(
        LocalSparkSettings(
            warehouse,
            shuffle_partitions=2,
            snapshot_partitions=1,
            # make test-slow raises it: at 3g the JVM died twice inside the 70-workload seed-2
            # differential group (an OutOfMemoryError in a local-mode task ends the whole JVM).
            driver_memory=os.environ.get("LAKEAPPLY_TEST_DRIVER_MEMORY", "3g"),
            small_data=True,
        )
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def lakeapply_spark(spark: SparkSession) -> SparkSession:
    """The testing kit's ``lakeapply`` fixture runs on the suite's one session."""
    return spark


@pytest.fixture
def catalog() -> Catalog:
    """A fresh set of databases per test, so tests never see each other's tables."""
    return Catalog(f"t{next(_catalog_numbers)}")


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    folder = tmp_path / "landing"
    folder.mkdir()
    return folder


# `make test` runs on two xdist workers, and the run ends when its last long test does: the
# files whose tests take minutes (measured: the carry-on differential ~7 min alone, the
# real-process crash test's 12 SIGKILLs 22.7 min beside a soak) start first, so the short tests
# fill the other worker meanwhile.
LONGEST_FIRST = (
    "tests/crash/",  # the longest single test (38.5 min in CI's run on a slow machine)
    "tests/silver/test_engine_differential.py",
    "tests/silver/test_engine_stateful.py",  # test-slow: one test of ~15 min
    "tests/bronze/formats/test_capture_formats.py",
    "tests/silver/test_engine_restart.py",
    "tests/cli/test_concurrent_runs.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next(
            (i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)),
            len(LONGEST_FIRST),
        )

    items.sort(key=rank)  # stable: the rest keep their order


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under ``--dist loadgroup`` pytest-xdist tags each grouped test's node id with
    ``@<group>`` and schedules a group on one worker. When a pytest release moves node ids where
    xdist cannot tag them (pytest 9.2 with xdist 3.8), the groups silently fall apart: module
    fixtures are built on both workers and two wheel builds share one folder. Fail instead."""
    if (
        getattr(item.config.option, "loadgroup", False)  # set on xdist's workers
        and item.get_closest_marker("xdist_group") is not None
        and "@" not in item.nodeid
    ):
        pytest.fail(
            "pytest-xdist did not tag this test with its xdist_group: this pytest and "
            "pytest-xdist pair cannot run `--dist loadgroup`; install the versions "
            "pyproject.toml pins (`make setup`)",
            pytrace=False,
        )
