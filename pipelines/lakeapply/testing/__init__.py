"""lakeapply.testing: test your pipeline around lakeapply the way Spark teams test everything.

* :func:`txn` builds source transactions as contract-valid LCRs (``builder``);
* :class:`LakeapplyHarness` lands them in bronze, runs apply cycles on a SparkSession with an apply
  configuration, and reads silver tables, the error queue and progress as DataFrames (``harness``);
* :func:`bronze_frame` gives LCRs as bronze rows without landing them, to test a function over
  bronze rows on its own;
* the pytest plugin (``lakeapply.testing.plugin``, registered as a ``pytest11`` entry point) gives
  every test a ``lakeapply`` fixture: a harness on a session-scoped local Delta SparkSession (the
  active one when there is one) with its own databases and landing folder.

The package imports no pytest: only the plugin module does.
"""

from lakeapply.testing.builder import (
    DEFAULT_SOURCE,
    InvalidLcrError,
    ScnClock,
    Transaction,
    TransactionBuilder,
    Typed,
    oracle_data_type,
    txn,
    typed,
    validate_lcr,
    write_jsonl,
)
from lakeapply.testing.harness import (
    LakeapplyHarness,
    LandingError,
    apply_settings,
    bronze_frame,
    destination,
    load_apply_settings,
    table_definition,
    unique_catalog_prefix,
)

__all__ = [
    "DEFAULT_SOURCE",
    "InvalidLcrError",
    "LakeapplyHarness",
    "LandingError",
    "ScnClock",
    "Transaction",
    "TransactionBuilder",
    "Typed",
    "apply_settings",
    "bronze_frame",
    "destination",
    "load_apply_settings",
    "oracle_data_type",
    "table_definition",
    "txn",
    "typed",
    "unique_catalog_prefix",
    "validate_lcr",
    "write_jsonl",
]
