"""A real process prints lakeapply's own output only: the JVM's (Ivy's resolution report, log4j)
goes to <warehouse>/logs/spark.log, and ``status --json`` writes nothing but JSON to stdout."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.processes import TIMESTAMPED_LINE, run_lakeapply


def test_status_json_prints_only_json_and_spark_output_goes_to_the_warehouse_log(
    tmp_path: Path,
) -> None:
    result = run_lakeapply("--warehouse", "wh", "status", "--json", cwd=tmp_path, timeout=600)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bronze_lcrs"] == 0
    # stderr: lakeapply's own progress lines only ("starting Spark", the jar download notice).
    assert all(re.match(TIMESTAMPED_LINE, line) for line in result.stderr.splitlines()), (
        result.stderr
    )
    log = (tmp_path / "wh" / "logs" / "spark.log").read_text()
    assert ":: resolving dependencies ::" in log
