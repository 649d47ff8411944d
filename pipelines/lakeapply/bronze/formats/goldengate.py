"""Oracle GoldenGate for Big Data, JSON formatter (operation model) -> contract LCRs.

One record is one operation: ``table`` (``SCHEMA.TABLE`` or ``CATALOG.SCHEMA.TABLE``),
``op_type`` I/U/D/T, ``op_ts`` (commit time at the source), ``current_ts`` (when the formatter
wrote it: not kept), ``pos`` (trail sequence number and RBA, 20 digits), ``primary_keys``,
``before``/``after`` images, and the optional metacolumns ``csn`` (the commit SCN on Oracle),
``xid`` (the transaction id) and ``txind`` (B/M/E/W or 0/1/2/3: begin, middle, end, whole).

Transaction boundaries (the rule, in order):

1. ``xid`` and ``txind``: the transaction is ``xid``; the record with ``txind`` E or W also
   lands a COMMIT, whose SCN is ``csn`` (else the record's ``pos``).
2. ``xid`` and ``csn`` without ``txind``: the transaction is ``xid``; every record lands a
   COMMIT at ``csn`` (one transaction, one CSN): all-or-nothing only within one ingest batch.
3. otherwise each record is its own transaction ``0.<trail seqno>.<rba>``, committed at ``csn``
   (else at its ``pos``).

SCNs: GoldenGate gives the commit SCN (``csn``), not each change's SCN, so a row LCR's ``scn``
and ``commit_scn`` are ``csn`` and ``position`` (= ``pos``) orders the changes. Without ``csn``
the SCN is the trail position as a number: the order is right (a trail is in commit order) but
instantiation SCNs and APPLIED_MESSAGE_NUMBER are then trail positions, not Oracle SCNs.
"""

from __future__ import annotations

import re
from typing import Any

from lakeapply.bronze.formats.common import (
    JsonNumber,
    LcrDict,
    column_value,
    fail,
    optional_scn,
    optional_string,
    require_object,
    require_string,
    transaction_id,
    written,
)

_COMMANDS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE TABLE"}
_TXIND = {"B": "B", "M": "M", "E": "E", "W": "W", "0": "B", "1": "M", "2": "E", "3": "W"}
# GoldenGate's own date-time text: 1994-09-30:15:33:00[.fffffffff]
_GG_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2}):(\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)")
_OP_TS = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)")
_MISSING = "_isMissing"


def _value(name: str, value: Any, field: str) -> dict[str, Any]:
    if isinstance(value, str) and not isinstance(value, JsonNumber):
        match = _GG_DATETIME.fullmatch(value)
        if match:  # as Oracle DATE/TIMESTAMP text; the destination type decides at apply
            return {
                "column_name": name,
                "data_type": "TIMESTAMP",
                "value": f"{match.group(1)}T{match.group(2)}",
            }
    return column_value(name, value, field)


def _image(record: dict[str, Any], field: str) -> list[dict[str, Any]] | None:
    """Column values of ``before`` / ``after``; a column flagged ``<name>_isMissing: true`` was
    not in the trail (not captured) and is left out, as a column absent from an LCR is."""
    image = record.get(field)
    if image is None:
        return None
    image = require_object(image, field)
    return [
        _value(name, value, field)
        for name, value in image.items()
        if not name.endswith(_MISSING) and image.get(name + _MISSING) is not True
    ]


def _position(pos: str) -> tuple[str, int, str]:
    """(position text, position as a number, the synthetic transaction id of rule 3)."""
    number = int(pos)
    padded = pos.rjust(20, "0")
    return padded, number, f"0.{int(padded[:10])}.{int(padded[10:])}"


def _table(record: dict[str, Any], source_database: str | None) -> tuple[str, str, str]:
    """(source database, owner, table) of the record."""
    table = require_string(record, "table")
    parts = table.split(".")
    if len(parts) not in (2, 3) or not all(parts):
        raise fail(
            "table", f"field 'table' must be SCHEMA.TABLE or CATALOG.SCHEMA.TABLE, got {table!r}"
        )
    database = source_database or (parts[0] if len(parts) == 3 else None)
    if database is None:
        raise fail(
            "table",
            f"table {table!r} names no catalog, so the source database is unknown: give it with "
            "--source-database (the source_database of lakeapply.yml)",
        )
    return database, parts[-2], parts[-1]


def _pos(record: dict[str, Any]) -> tuple[str, int, str]:
    pos_value = record.get("pos")
    if pos_value is None:
        raise fail("pos", "required field 'pos' is missing (the trail position orders changes)")
    if not (isinstance(pos_value, str) and re.fullmatch(r"[0-9]{1,20}", pos_value)):
        raise fail(
            "pos", f"field 'pos' must be the trail position (digits), got {written(pos_value)}"
        )
    return _position(pos_value)


def _txind(record: dict[str, Any]) -> str | None:
    value = record.get("txind")
    if value is None:
        return None
    txind = _TXIND.get(str(value).upper())
    if txind is None:
        raise fail("txind", f"field 'txind' must be B, M, E or W (or 0-3), got {written(value)}")
    return txind


def _source_time(record: dict[str, Any]) -> str | None:
    op_ts = optional_string(record, "op_ts")
    if op_ts is None:
        return None
    match = _OP_TS.fullmatch(op_ts.strip())
    if match is None:
        raise fail("op_ts", f"field 'op_ts' must be 'YYYY-MM-DD HH:MI:SS[.ffffff]', got {op_ts!r}")
    return f"{match.group(1)}T{match.group(2)}"


def convert(record: Any, source_database: str | None) -> list[LcrDict]:
    record = require_object(record, "record")
    database, owner, name = _table(record, source_database)
    op_type = require_string(record, "op_type")
    command = _COMMANDS.get(op_type)
    if command is None:
        raise fail("op_type", f"field 'op_type' must be one of I, U, D, T; got {op_type!r}")
    position, pos_number, own_transaction = _pos(record)
    csn = optional_scn(record, "csn")
    xid_text = optional_string(record, "xid")
    xid = transaction_id(xid_text, "xid") if xid_text else None
    txind = _txind(record)
    if xid is not None and txind is not None:
        transaction, commits = xid, txind in ("E", "W")
    elif xid is not None and csn is not None:
        transaction, commits = xid, True
    else:
        transaction, commits = own_transaction, True
    common: LcrDict = {
        "source_database_name": database,
        "transaction_id": transaction,
        "scn": csn if csn is not None else pos_number,
        "position": position,
    }
    source_time = _source_time(record)
    if source_time is not None:
        common["source_time"] = source_time
    lcr: LcrDict = {**common, "command_type": command, "object_owner": owner, "object_name": name}
    if csn is not None:
        lcr["commit_scn"] = csn
    _add_images(lcr, record, command)
    return [lcr, {**common, "command_type": "COMMIT"}] if commits else [lcr]


def _add_images(lcr: LcrDict, record: dict[str, Any], command: str) -> None:
    before, after = _image(record, "before"), _image(record, "after")
    if command in ("INSERT", "UPDATE") and after is None:
        raise fail("after", f"an {command.lower()} requires the 'after' image")
    if command == "INSERT":
        lcr["new_values"] = after
    elif command == "UPDATE":
        assert after is not None
        lcr["old_values"] = before if before is not None else _keys_from_after(record, after)
        lcr["new_values"] = after
    elif command == "DELETE":
        if before is None:
            raise fail("before", "a delete requires the 'before' image")
        lcr["old_values"] = before
    else:  # a truncate is DDL: its own transaction, committed by its commit_scn
        owner, name = lcr["object_owner"], lcr["object_name"]
        lcr.update(
            object_type="TABLE",
            ddl_text=f'TRUNCATE TABLE "{owner}"."{name}"',
            commit_scn=lcr["scn"],
        )


def _keys_from_after(record: dict[str, Any], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An update without a before image (no GETUPDATEBEFORES): the old values are the primary key
    columns of the after image, which identify the row when the key did not change."""
    keys = record.get("primary_keys")
    if not isinstance(keys, list) or not keys:
        raise fail(
            "before",
            "an update (op_type U) without a 'before' image needs 'primary_keys' to identify the "
            "row (capture update before images, or include the primary keys)",
        )
    by_name = {value["column_name"]: value for value in after}
    missing = [key for key in keys if key not in by_name]
    if missing:
        raise fail("primary_keys", f"primary key column(s) {missing} are not in the 'after' image")
    return [by_name[key] for key in keys]
