"""The pytest plugin of lakeapply (entry point ``pytest11``: active once lakeapply is installed).

Fixtures:

* ``lakeapply``: a :class:`~lakeapply.testing.harness.LakeapplyHarness` per test, with its own
  bronze, silver and apply databases (a fresh catalog prefix, the tables under the test's
  ``tmp_path``), a landing folder and an SCN clock. Configure it with an apply process, build
  transactions with ``lakeapply.txn()``, ``lakeapply.run(...)`` them, read the results back.
* ``lakeapply_spark``: the session the harnesses run on, scoped to the test session. It is the
  active SparkSession when there is one (the project's own ``spark`` fixture, pytest-spark's, a
  Databricks cluster's), which must have Delta; otherwise a local Delta-enabled session built by
  :func:`lakeapply.runtime.session.get_spark` on a temporary warehouse, stopped at the end.

.. code-block:: python

    from chispa import assert_df_equality
    from lakeapply.testing import apply_settings, table_definition

    EMP = table_definition("HR.EMP", {"ID": "NUMBER(6)", "NAME": "VARCHAR2(20)"}, primary_key=["ID"])

    def test_an_insert_lands_in_silver(lakeapply):
        lakeapply.configure(apply_settings(EMP))
        lakeapply.run(lakeapply.txn().insert("HR.EMP", ID=1, NAME="Ann").commit())
        assert_df_equality(lakeapply.silver("HR.EMP"), lakeapply.expected("HR.EMP", [(1, "Ann")]))
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakeapply.errors import EnvironmentSetupError
from lakeapply.runtime.session import LocalSparkSettings, get_spark, running_on_databricks
from lakeapply.testing.harness import LakeapplyHarness

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"


def require_delta(spark: SparkSession) -> SparkSession:
    """``spark`` if it can write Delta tables; a clear error instead of a failure deep in an
    apply cycle when a reused session was built without the Delta extension."""
    if running_on_databricks():  # Delta is built in, not configured as an extension
        return spark
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if DELTA_EXTENSION not in extensions:
        raise EnvironmentSetupError(
            "the active SparkSession has no Delta extension (spark.sql.extensions="
            f"{extensions!r}): build it with lakeapply.runtime.session.get_spark, or with "
            f"{DELTA_EXTENSION} and the DeltaCatalog, or start no session before the "
            "lakeapply fixture and let it build one"
        )
    return spark


@pytest.fixture(scope="session")
def lakeapply_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """The active SparkSession (must have Delta), else a local Delta session for the run."""
    # Reuse rather than build: a second session would not get its own configuration anyway
    # (getOrCreate returns the running one), and starting the JVM costs seconds.
    active = SparkSession.getActiveSession()
    if active is not None:
        yield require_delta(active)
        return
    session = get_spark(
        LocalSparkSettings(
            warehouse=tmp_path_factory.mktemp("lakeapply_warehouse"),
            # A test touches a few rows: few partitions keep each Spark job short.
            shuffle_partitions=2,
            snapshot_partitions=1,
            driver_memory="2g",
            small_data=True,
            app_name="lakeapply-tests",
        )
    )
    yield session
    session.stop()


@pytest.fixture
def lakeapply(lakeapply_spark: SparkSession, tmp_path: Path) -> LakeapplyHarness:
    """A harness on its own databases and landing folder under ``tmp_path`` (see the module)."""
    return LakeapplyHarness.temporary(lakeapply_spark, tmp_path / "lakeapply")
