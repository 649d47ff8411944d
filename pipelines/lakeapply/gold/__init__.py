"""The gold layer: the dbt project in ``dbt/`` (Oracle-named dictionary views over the apply
dictionary), run in-process on the pipeline's Spark session, and a SQL*Plus-style printer."""

from lakeapply.gold.runner import (
    GOLD_VIEWS,
    GoldError,
    GoldReport,
    render_sqlplus,
    run_gold,
)
from lakeapply.runtime.session import session_warehouse

__all__ = [
    "GOLD_VIEWS",
    "GoldError",
    "GoldReport",
    "render_sqlplus",
    "run_gold",
    "session_warehouse",
]
