"""A real process prints lakeapply's own output only: the JVM's (Ivy's resolution report, log4j)
goes to <warehouse>/logs/spark.log, and ``status --json`` writes nothing but JSON to stdout."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.cli.processes import TIMESTAMPED_LINE, run_lakeapply


def test_status_json_prints_only_json_and_spark_output_goes_to_the_warehouse_log(
    tmp_path: Path,
) -> None:
    # Without the JVM cache, so that Ivy resolves the Delta jars and its report has to go somewhere.
    result = run_lakeapply(
        "--warehouse",
        "wh",
        "status",
        "--json",
        cwd=tmp_path,
        timeout=600,
        LAKEAPPLY_JVM_CACHE="off",
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bronze_lcrs"] == 0
    # stderr: lakeapply's own progress lines only ("starting Spark", the jar download notice).
    assert all(re.match(TIMESTAMPED_LINE, line) for line in result.stderr.splitlines()), (
        result.stderr
    )
    log = (tmp_path / "wh" / "logs" / "spark.log").read_text()
    assert ":: resolving dependencies ::" in log


def test_the_apply_progress_table_fits_80_columns_and_cuts_no_value() -> None:
    from pyspark.sql import Row
    from rich.console import Console

    from lakeapply.jobs import progress_table

    rows = [
        Row(
            source_database="DBS1.EXAMPLE.COM",
            low_watermark=1009264,
            oldest_scn=1000158,
            total_applied=1833,
            total_ignored=0,
            total_errors=5,
            total_rolled_back=125,
            status="ENABLED",
        ),
        Row(
            source_database="ORCL",
            low_watermark=16527691234567,
            oldest_scn=None,
            total_applied=12,
            total_ignored=0,
            total_errors=0,
            total_rolled_back=0,
            status="ABORTED",
        ),
    ]
    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(progress_table("APPLY_DEMO", rows))
    text = console.export_text()

    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    assert "DBS1.EXAMPLE.COM" in text and "1009264" in text and "ENABLED" in text
