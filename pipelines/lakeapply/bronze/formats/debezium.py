"""Debezium Oracle connector change events (JSON, with or without the schema+payload wrapper)
-> contract LCRs.

A change event: ``op`` c/u/d/r/t, ``before``/``after`` row images, ``source`` (``db``,
``schema``, ``table``, ``txId`` dotted or 16-digit hex, ``scn``, ``commit_scn``, ``ts_ms``) and,
with ``provide.transaction.metadata``, a ``transaction`` block (``id``, ``total_order``,
``data_collection_order``). The transaction topic carries BEGIN and END events (``status``,
``id``, ``event_count``, ``data_collections``).

Mapping: ``c`` -> INSERT, ``u`` -> UPDATE, ``d`` -> DELETE, ``t`` -> a TRUNCATE TABLE DDL LCR
(its own transaction, committed by its commit_scn), ``r`` (a snapshot read) -> INSERT in the
snapshot's transaction ``0.0.<snapshot SCN>``, committed at that SCN. A row LCR's ``scn`` is
``source.scn``, its ``commit_scn`` is ``source.commit_scn``, its ``position`` is the SCN and
``transaction.total_order`` (order within the transaction).

Commits:

* with transaction metadata (the event has a ``transaction`` block) the END event is the
  COMMIT. An END event has no SCN: the ingest gives its COMMIT the ``commit_scn`` of the
  transaction's change events (landed in the same batch or before; else their highest ``scn``)
  and quarantines the END event while fewer than ``event_count`` of them have landed (each
  later ingest batch re-examines it and lands its COMMIT once they have; ``bronze.ingest``).
* without transaction metadata each change event also lands a COMMIT at its ``commit_scn``
  (else its ``scn``): a transaction is all-or-nothing only when all its events land in one
  ingest batch.

BEGIN events carry no change: each is quarantined with a reason saying so (lines in = rows out).
"""

from __future__ import annotations

import base64
import binascii
from decimal import Decimal
from typing import Any

from lakeapply.bronze.formats.common import (
    JsonNumber,
    LcrDict,
    column_value,
    epoch_ms_time,
    fail,
    iso_from_epoch,
    optional_scn,
    optional_string,
    require_object,
    transaction_id,
    written,
)

_COMMANDS = {"c": "INSERT", "r": "INSERT", "u": "UPDATE", "d": "DELETE", "t": "TRUNCATE TABLE"}
# What the connector writes for a LOB it did not read (unavailable.value.placeholder default).
UNAVAILABLE = "__debezium_unavailable_value"
PENDING_EVENT_COUNT = "__pending_event_count"  # carried from an END event to the SCN lookup


def convert(record: Any, source_database: str | None) -> list[LcrDict]:
    if record is None:
        raise fail(None, "a tombstone (null value after a delete) carries no change")
    record = require_object(record, "record")
    schema = None
    if "payload" in record and ("schema" in record or len(record) == 1):
        schema = record.get("schema")
        record = record["payload"]
        if record is None:
            raise fail("payload", "a tombstone (null payload after a delete) carries no change")
        record = require_object(record, "payload")
    if "status" in record and "op" not in record:
        return [_transaction_event(record, source_database)]
    return _change_event(record, schema, source_database)


def _transaction_event(event: dict[str, Any], source_database: str | None) -> LcrDict:
    status = optional_string(event, "status")
    if status == "BEGIN":
        raise fail(
            "status",
            "Debezium transaction BEGIN event: carries no change (kept here so that every line "
            "is accounted for; the transaction's END event lands as its COMMIT)",
        )
    if status != "END":
        raise fail("status", f"field 'status' must be BEGIN or END, got {written(status)}")
    transaction_text = optional_string(event, "id")
    if not transaction_text:
        raise fail("id", "required field 'id' (the transaction id) is missing")
    database = source_database or _database_of_collections(event)
    event_count = optional_scn(event, "event_count")
    commit: LcrDict = {
        "source_database_name": database,
        "command_type": "COMMIT",
        "transaction_id": transaction_id(transaction_text, "id"),
        PENDING_EVENT_COUNT: event_count,
    }
    time = epoch_ms_time(event.get("ts_ms"), "ts_ms")
    if time is not None:
        commit["source_time"] = time
    return commit


def _database_of_collections(event: dict[str, Any]) -> str:
    collections = event.get("data_collections")
    if isinstance(collections, list) and collections and isinstance(collections[0], dict):
        name = collections[0].get("data_collection")
        if isinstance(name, str) and name.count(".") == 2:
            return name.split(".")[0]
    raise fail(
        "data_collections",
        "the END event names no database (data_collections[0].data_collection is not "
        "DB.SCHEMA.TABLE): give the source database with --source-database",
    )


def _change_event(event: dict[str, Any], schema: Any, source_database: str | None) -> list[LcrDict]:
    op = optional_string(event, "op")
    command = _COMMANDS.get(op or "")
    if command is None:
        raise fail("op", f"field 'op' must be one of c, u, d, r, t; got {written(op)}")
    source = require_object(event.get("source"), "source")
    database, owner, name = _object_of(source, schema, source_database)
    scn = optional_scn(source, "scn", "source.scn")
    if scn is None:
        raise fail("source.scn", "required field 'source.scn' is missing")
    commit_scn = optional_scn(source, "commit_scn", "source.commit_scn")
    has_metadata = isinstance(event.get("transaction"), dict)
    if op == "r":
        txid, commit_scn, order = f"0.0.{scn}", scn, 0
    else:
        txid, order = _transaction_of(event, source)
    lcr: LcrDict = {
        "source_database_name": database,
        "command_type": command,
        "transaction_id": txid,
        "scn": scn,
        "position": f"{scn:020d}{order:010d}",
        "object_owner": owner,
        "object_name": name,
    }
    if commit_scn is not None:
        lcr["commit_scn"] = commit_scn
    time = epoch_ms_time(source.get("ts_ms"), "source.ts_ms")
    if time is not None:
        lcr["source_time"] = time
    fields = _image_schemas(schema)
    if command == "INSERT":
        lcr["new_values"] = _image(event, "after", fields)
    elif command == "UPDATE":
        lcr["old_values"] = _image(event, "before", fields)
        lcr["new_values"] = _image(event, "after", fields)
    elif command == "DELETE":
        lcr["old_values"] = _image(event, "before", fields)
    else:
        lcr.update(
            object_type="TABLE",
            ddl_text=f'TRUNCATE TABLE "{owner}"."{name}"',
            commit_scn=commit_scn if commit_scn is not None else scn,
        )
        return [lcr]
    if op == "r" or not has_metadata:
        commit = {
            key: lcr[key]
            for key in ("source_database_name", "transaction_id", "position", "source_time")
            if key in lcr
        }
        commit.update(command_type="COMMIT", scn=commit_scn if commit_scn is not None else scn)
        return [lcr, commit]
    return [lcr]


def _object_of(
    source: dict[str, Any], schema: Any, source_database: str | None
) -> tuple[str, str, str]:
    """(source database, owner, table) of a change event."""
    database = (
        source_database
        or optional_string(source, "db", "source.db")
        or optional_string(source, "name", "source.name")
    )
    if not database:
        raise fail("source.db", "the event names no source database (source.db, source.name)")
    owner = optional_string(source, "schema", "source.schema")
    name = optional_string(source, "table", "source.table")
    if not owner or not name:
        owner, name = _table_of_envelope(schema)
    return database, owner, name


def _transaction_of(event: dict[str, Any], source: dict[str, Any]) -> tuple[str, int]:
    """(transaction id, order of the event in its transaction: 0 when unknown)."""
    transaction = event.get("transaction")
    if isinstance(transaction, dict):
        text = optional_string(transaction, "id", "transaction.id")
        label = "transaction.id"
        order = optional_scn(transaction, "total_order", "transaction.total_order") or 0
    else:
        text = optional_string(source, "txId", "source.txId")
        label, order = "source.txId", 0
    if not text:
        raise fail(label, f"required field '{label}' (the transaction id) is missing")
    return transaction_id(text, label), order


def _table_of_envelope(schema: Any) -> tuple[str, str]:
    """Owner and table from the envelope schema name ``<prefix>.<SCHEMA>.<TABLE>.Envelope``."""
    name = schema.get("name") if isinstance(schema, dict) else None
    if isinstance(name, str) and name.endswith(".Envelope") and name.count(".") >= 3:
        parts = name.split(".")
        return parts[-3], parts[-2]
    raise fail("source.table", "the event names no table (source.schema and source.table)")


def _image_schemas(schema: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """image name (before/after) -> column name -> its Kafka Connect field schema."""
    images: dict[str, dict[str, dict[str, Any]]] = {}
    if isinstance(schema, dict) and isinstance(schema.get("fields"), list):
        for image in schema["fields"]:
            if isinstance(image, dict) and isinstance(image.get("fields"), list):
                images[str(image.get("field"))] = {
                    str(column.get("field")): column
                    for column in image["fields"]
                    if isinstance(column, dict)
                }
    return images


def _image(
    event: dict[str, Any],
    field: str,
    schemas: dict[str, dict[str, dict[str, Any]]],
) -> list[dict[str, Any]]:
    image = event.get(field)
    if image is None:
        raise fail(field, f"op {event.get('op')!r} requires the '{field}' row image")
    image = require_object(image, field)
    columns = schemas.get(field, {})
    return [
        _value(name, value, columns.get(name), field)
        for name, value in image.items()
        if value != UNAVAILABLE  # an unchanged LOB the connector did not read: not in the LCR
    ]


def _decode_base64(value: Any, where: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise fail(where, f"{where}: {written(value)} is not base64") from None


def _unscaled_decimal(raw: bytes, scale: int) -> str:
    unscaled = int.from_bytes(raw, "big", signed=True)
    return format(Decimal(unscaled).scaleb(-scale), "f")


def _value(name: str, value: Any, column: dict[str, Any] | None, field: str) -> dict[str, Any]:
    """One column value, decoded by its Kafka Connect logical type when the schema names it."""
    where = f"{field}.{name}"
    logical = column.get("name") if column else None
    if value is None:
        return column_value(name, None, field)
    if logical == "org.apache.kafka.connect.data.Decimal" and isinstance(value, str):
        parameters = column.get("parameters") if column else None
        scale = int((parameters or {}).get("scale", 0))
        return _typed(name, "NUMBER", _unscaled_decimal(_decode_base64(value, where), scale))
    if isinstance(value, dict) and set(value) == {"scale", "value"}:  # VariableScaleDecimal
        scale_text = value["scale"]
        if not isinstance(scale_text, JsonNumber):
            raise fail(field, f"{where}: scale must be a number, got {written(scale_text)}")
        raw = _decode_base64(value["value"], where)
        return _typed(name, "NUMBER", _unscaled_decimal(raw, int(scale_text)))
    if isinstance(value, JsonNumber) and logical in _EPOCH_UNITS:
        data_type, per_second = _EPOCH_UNITS[logical]
        if data_type == "DATE":
            return _typed(name, "DATE", iso_from_epoch(int(value) * 86_400, 1))
        return _typed(name, data_type, iso_from_epoch(int(value), per_second))
    if logical == "io.debezium.time.ZonedTimestamp" and isinstance(value, str):
        return _typed(name, "TIMESTAMP WITH TIME ZONE", value)
    if column is not None and column.get("type") == "bytes" and logical is None:
        return _typed(name, "RAW", _decode_base64(value, where).hex().upper())
    return column_value(name, value, field)


_EPOCH_UNITS = {
    "io.debezium.time.Date": ("DATE", 1),
    "io.debezium.time.Timestamp": ("TIMESTAMP", 1_000),
    "io.debezium.time.MicroTimestamp": ("TIMESTAMP", 1_000_000),
    "io.debezium.time.NanoTimestamp": ("TIMESTAMP", 1_000_000_000),
}


def _typed(name: str, data_type: str, value: str) -> dict[str, Any]:
    return {"column_name": name, "data_type": data_type, "value": value}
