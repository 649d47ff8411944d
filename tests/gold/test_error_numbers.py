"""The gold job's accepted_values test on ERROR_NUMBER must accept every error the engine raises.

Issue 16 item 7: an ORA-00957 error row failed the dbt test and so the whole gold job. The engine's
error numbers are read from its source (``ORA-nnnnn`` texts and ``_ora(nnn`` calls), so a new
error number cannot ship without the dbt list.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SILVER = ROOT / "pipelines" / "lakeapply" / "silver"
ERROR_QUEUE_MODEL = (
    ROOT / "dbt" / "models" / "staging" / "lakeapply" / "stg_lakeapply__error_queue.yml"
)


def error_numbers_raised_by_the_engine() -> set[int]:
    numbers: set[int] = set()
    for source in SILVER.glob("*.py"):
        text = source.read_text(encoding="utf-8")
        numbers.update(int(n) for n in re.findall(r"ORA-(\d{5})", text))
        numbers.update(int(n) for n in re.findall(r"_ora\(\s*(\d+)", text))
    return numbers


def error_numbers_accepted_by_dbt() -> set[int]:
    model = yaml.safe_load(ERROR_QUEUE_MODEL.read_text(encoding="utf-8"))["models"][0]
    [column] = [c for c in model["columns"] if c["name"] == "error_number"]
    [test] = [t for t in column["data_tests"] if "accepted_values" in t]
    return set(test["accepted_values"]["arguments"]["values"])


def test_the_engine_raises_errors_the_reader_can_find() -> None:
    assert {
        1,
        904,
        957,
        20001,
        22275,
        26687,
        26688,
        26786,
        26787,
    } <= error_numbers_raised_by_the_engine()


def test_every_error_number_the_engine_raises_is_accepted_by_the_gold_tests() -> None:
    assert error_numbers_raised_by_the_engine() - error_numbers_accepted_by_dbt() == set()
