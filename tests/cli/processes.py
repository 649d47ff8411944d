"""Running the real ``lakeapply`` console script, the way cron or a Databricks job does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LAKEAPPLY = Path(sys.executable).parent / "lakeapply"
# "2026-11-23T23:40:01Z lakeapply apply: ..."
TIMESTAMPED_LINE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ lakeapply "
# Frames of rich's default spinner, carriage returns and ANSI escapes: what a spinner leaves in a
# log file.
SPINNER_MARKS = ("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", "\r", "\x1b[")


def unattended_env(**overrides: str) -> dict[str, str]:
    """This environment without LAKEAPPLY_* settings a developer may have exported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEAPPLY_")}
    env.pop("FORCE_COLOR", None)
    # The tests' tables hold a few rows: the profile made for them (each CLI process is a cold
    # JVM, where generated code costs the most).
    env["LAKEAPPLY_SMALL_DATA"] = "1"
    env.update(overrides)
    return env


def run_lakeapply(
    *args: str | Path, cwd: Path, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with stdout and stderr captured (not a terminal), as an unattended job."""
    return subprocess.run(
        [str(LAKEAPPLY), *map(str, args)],
        cwd=cwd,
        env=unattended_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
