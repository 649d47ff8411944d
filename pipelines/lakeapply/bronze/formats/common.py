"""What the capture-format adapters share: parsing a record with exact numbers, column values,
transaction ids, times.

An adapter turns one parsed record into contract LCR dicts (../shared/spec/lcr-contract.md), or
raises :class:`CaptureRecordError` with the offending field and a precise reason.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from lakeapply.errors import CaptureRecordError

LcrDict = dict[str, Any]


class JsonNumber(str):
    """A JSON number kept as its exact text: NUMBER values must never go through a float."""

    __slots__ = ()


def parse_record(line: str) -> Any:
    """The JSON value of one line, numbers as :class:`JsonNumber` (ValueError when not JSON)."""
    return json.loads(line, parse_float=JsonNumber, parse_int=JsonNumber)


def lcr_json(lcr: LcrDict) -> str:
    return json.dumps(lcr, separators=(",", ":"), ensure_ascii=False)


def fail(field: str | None, reason: str) -> CaptureRecordError:
    return CaptureRecordError(field, reason)


def written(value: Any, length: int = 60) -> str:
    """A value as the record wrote it, cut for a reason."""
    text = value if isinstance(value, JsonNumber) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= length else text[: length - 3] + "..."


def require_object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(field, f"field '{field}' must be a JSON object, got {written(value)}")
    return value


def optional_string(record: dict[str, Any], field: str, label: str | None = None) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    if isinstance(value, JsonNumber) or not isinstance(value, str):
        raise fail(
            label or field, f"field '{label or field}' must be a string, got {written(value)}"
        )
    return str(value)


def require_string(record: dict[str, Any], field: str, label: str | None = None) -> str:
    value = optional_string(record, field, label)
    if value is None or value == "":
        raise fail(label or field, f"required field '{label or field}' is missing or empty")
    return value


_DIGITS = re.compile(r"[0-9]{1,19}")


def optional_scn(record: dict[str, Any], field: str, label: str | None = None) -> int | None:
    """An SCN or position written as a JSON integer or a string of digits."""
    value = record.get(field)
    if value is None:
        return None
    if isinstance(value, str) and _DIGITS.fullmatch(value) and int(value) < 2**63:
        return int(value)
    raise fail(
        label or field,
        f"field '{label or field}' must be a non-negative integer (digits), got {written(value)}",
    )


# Oracle's transaction id: usn.slot.sqn; LogMiner's XID is the same three numbers as RAW(8)
# (usn 2 bytes, slot 2 bytes, sqn 4 bytes, each little-endian as Debezium prints it).
_DOTTED_XID = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")
_HEX_XID = re.compile(r"[0-9A-Fa-f]{16}")


def transaction_id(value: str, field: str) -> str:
    """``usn.slot.sqn`` from the dotted form (``6.28.807``) or the 16-digit hex XID
    (``02000a0037030000`` -> ``2.10.823``)."""
    text = value.strip()
    dotted = _DOTTED_XID.fullmatch(text)
    if dotted:
        return ".".join(str(int(part)) for part in dotted.groups())
    if _HEX_XID.fullmatch(text):
        raw = bytes.fromhex(text)
        usn = int.from_bytes(raw[0:2], "little")
        slot = int.from_bytes(raw[2:4], "little")
        sqn = int.from_bytes(raw[4:8], "little")
        return f"{usn}.{slot}.{sqn}"
    raise fail(
        field,
        f"field '{field}' must be a transaction id usn.slot.sqn (e.g. 6.28.807) or a 16-digit "
        f"hex XID (e.g. 02000a0037030000), got {written(value)}",
    )


def iso_from_epoch(amount: int, unit_per_second: int) -> str:
    """UTC wall-clock ISO-8601 text of an epoch count (ms, us or ns)."""
    seconds, rest = divmod(amount, unit_per_second)
    micros = rest * 1_000_000 // unit_per_second
    moment = datetime(1970, 1, 1) + timedelta(seconds=seconds, microseconds=micros)
    return moment.isoformat(timespec="microseconds")


def epoch_ms_time(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value):
        return iso_from_epoch(int(value), 1000)
    raise fail(field, f"field '{field}' must be epoch milliseconds, got {written(value)}")


def column_value(name: str, value: Any, field: str) -> dict[str, Any]:
    """A contract column value from a plain JSON value: numbers are NUMBER (exact text), strings
    VARCHAR2, null is NULL. The destination table definition decides the real type at apply."""
    if value is None:
        return {"column_name": name, "data_type": "VARCHAR2", "value": None}
    if isinstance(value, JsonNumber):
        return {"column_name": name, "data_type": "NUMBER", "value": str(value)}
    if isinstance(value, str):
        return {"column_name": name, "data_type": "VARCHAR2", "value": value}
    kind = "a boolean" if isinstance(value, bool) else "an object or array"
    raise fail(
        field,
        f"{field}.{name}: {kind} ({written(value)}) is not an Oracle column value "
        "(expected a string, a number or null)",
    )
