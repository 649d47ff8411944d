"""Row-level apply logic: converting one LCR value, applying one row LCR to one row state.

The set-based engine (``engine.py`` and its step modules) decides *which* LCRs meet *which* row state, in what order,
and what survives; this module decides what one LCR does to the rows of one key component. It
follows ../shared/spec/apply-semantics.md rules 5-7 with the decisions D5-D8 recorded in
``tests/reference/applier.py`` (the independent, row-at-a-time test oracle the engine is compared
with). Values are Python values of the destination type (Decimal, float, str, datetime, bytes;
intervals as canonical text).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Context, Decimal
from typing import Any

from lakeapply.contract.oracle_types import (
    MAX_DECIMAL_PRECISION,
    UNCONSTRAINED_NUMBER_SCALE,
    TypeFamily,
)
from lakeapply.contract.table_definitions import ColumnDefinition, TableDefinition
from lakeapply.silver.lob import LOB_COMMANDS, LOB_TYPES, LobPieceError, apply_piece
from lakeapply.silver.settings import (
    ConflictResolution,
    DestinationTable,
    UpdateConflictHandler,
)

Key = tuple[Any, ...]
Row = dict[str, Any]


class ApplyRowError(Exception):
    """A row LCR cannot be applied: ``error_number`` is the Oracle error (1 for ORA-00001) and
    ``text`` the full message, ``ORA-nnnnn: ...``."""

    def __init__(self, error_number: int, text: str) -> None:
        super().__init__(text)
        self.error_number = error_number
        self.text = text


def _ora(error_number: int, text: str) -> ApplyRowError:
    return ApplyRowError(error_number, f"ORA-{error_number:05d}: {text}")


_NUMBER_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_HEX_TEXT = re.compile(r"([0-9A-Fa-f]{2})*")
# Wide enough that parsing and quantizing never round or overflow by themselves.
_DECIMAL_CONTEXT = Context(prec=200, rounding=ROUND_HALF_UP, Emax=MAX_EMAX, Emin=MIN_EMIN)


def convert_value(column: ColumnDefinition, raw: str | int | float | None) -> Any:
    """Convert one LCR value (contract form) to the Python value of the destination column.

    Raises ApplyRowError with the Oracle error when the value does not convert exactly (D8)."""
    if raw is None:
        return None
    if type(raw) is not str and (isinstance(raw, bool) or not isinstance(raw, str | int | float)):
        raise TypeError(f"column {column.name}: {raw!r} is not an LCR value (string or number)")
    # A table lookup, not a chain of tests: this runs for every value of every LCR.
    return _CONVERTERS[column.oracle_type.family](column, raw)


def _number_text(raw: str | int | float) -> str:
    return raw if isinstance(raw, str) else repr(raw)


_QUANTUM = {scale: Decimal(1).scaleb(-scale) for scale in range(-84, 128)}


def _too_large(column: ColumnDefinition, text: str, precision: int, scale: int) -> ApplyRowError:
    return _ora(
        1438,
        f"value larger than specified precision allowed for this column: column "
        f"{column.name} value {text.strip()!r} (precision {precision}, scale {scale})",
    )


def _to_number(column: ColumnDefinition, raw: str | int | float) -> Decimal:
    text = _number_text(raw)
    if not _NUMBER_TEXT.fullmatch(text):
        raise _ora(1722, f"invalid number: column {column.name} value {text!r}")
    value = Decimal(text.strip())
    oracle_type = column.oracle_type
    precision = oracle_type.precision
    scale = oracle_type.scale or 0
    if precision is None:  # NUMBER, FLOAT(b): stored as DECIMAL(38,10) (oracle_types docstring)
        precision, scale = MAX_DECIMAL_PRECISION, UNCONSTRAINED_NUMBER_SCALE
    # At most precision - scale digits before the point; checked before rounding (so that
    # quantize never works on absurd exponents) and after it (9.995 -> 10.00).
    if value and value.adjusted() >= precision - scale:
        raise _too_large(column, text, precision, scale)
    quantum = _QUANTUM.get(scale)
    rounded = value.quantize(
        Decimal(1).scaleb(-scale) if quantum is None else quantum, context=_DECIMAL_CONTEXT
    )
    if not rounded:
        return rounded.copy_abs()  # no negative zero
    if rounded.adjusted() >= precision - scale:
        raise _too_large(column, text, precision, scale)
    return rounded


def _to_float(column: ColumnDefinition, raw: str | int | float) -> float:
    text = _number_text(raw)
    if not _NUMBER_TEXT.fullmatch(text):
        raise _ora(1722, f"invalid number: column {column.name} value {text!r}")
    value = float(text.strip())

    def overflow() -> ApplyRowError:
        return _ora(1426, f"numeric overflow: column {column.name} value {text.strip()!r}")

    if column.oracle_type.name == "BINARY_FLOAT":  # a 32-bit float, as the Delta FLOAT column
        try:
            value = float(struct.unpack("f", struct.pack("f", value))[0])
        except OverflowError:  # (older Pythons raise; newer ones round to infinity)
            raise overflow() from None
    if value in (float("inf"), float("-inf")):
        raise overflow()
    return value


def _plain_decimal_text(value: Decimal) -> str:
    """1E+2 -> '100', 1.50 -> '1.5': how Oracle shows a number converted to text."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _to_character(column: ColumnDefinition, raw: str | int | float) -> str:
    text = raw if isinstance(raw, str) else _plain_decimal_text(Decimal(repr(raw)))
    length = column.oracle_type.length
    if column.oracle_type.family is TypeFamily.CHARACTER and length is not None:
        if len(text) > length:
            raise _ora(
                12899,
                f'value too large for column "{column.name}" (actual: {len(text)}, '
                f"maximum: {length})",
            )
        if column.oracle_type.name in ("CHAR", "NCHAR"):
            text = text.ljust(length)  # D8: CHAR is blank-padded
    return text


def _not_a_datetime(column: ColumnDefinition, raw: str | int | float) -> ApplyRowError:
    return _ora(
        1858,
        "a non-numeric character was found where a numeric was expected: "
        f"column {column.name} value {raw!r} is not an ISO-8601 date/time",
    )


def _to_datetime(column: ColumnDefinition, raw: str | int | float) -> datetime:
    if not isinstance(raw, str):
        raise _not_a_datetime(column, raw)
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise _not_a_datetime(column, raw) from None
    if column.oracle_type.family is TypeFamily.DATETIME:
        return value.replace(tzinfo=None) if value.tzinfo else value  # D8: wall-clock time
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # D8: no offset means UTC
    return value.astimezone(UTC)


_YM_LITERAL = re.compile(r"([+-])?(\d+)-(\d+)")
_YM_ISO = re.compile(r"(-)?P(?=\d)(?:(\d+)Y)?(?:(\d+)M)?")
_DS_LITERAL = re.compile(r"([+-])?(\d+) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?")
_DS_ISO = re.compile(
    r"(-)?P(?=\d|T\d)(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?"
)


def _invalid_interval(column: ColumnDefinition, raw: str | int | float) -> ApplyRowError:
    return _ora(1867, f"the interval is invalid: column {column.name} value {raw!r}")


def _to_interval_year_to_month(column: ColumnDefinition, raw: str | int | float) -> str:
    text = raw.strip() if isinstance(raw, str) else ""
    literal = _YM_LITERAL.fullmatch(text)
    iso = _YM_ISO.fullmatch(text)
    if literal:
        negative = literal.group(1) == "-"
        years, months = int(literal.group(2)), int(literal.group(3))
        if months > 11:
            raise _invalid_interval(column, raw)
    elif iso:
        negative = iso.group(1) == "-"
        total = int(iso.group(2) or 0) * 12 + int(iso.group(3) or 0)
        years, months = divmod(total, 12)
    else:
        raise _invalid_interval(column, raw)
    sign = "-" if negative and (years or months) else "+"
    return f"{sign}{years:02d}-{months:02d}"


def _to_interval_day_to_second(column: ColumnDefinition, raw: str | int | float) -> str:
    text = raw.strip() if isinstance(raw, str) else ""
    literal = _DS_LITERAL.fullmatch(text)
    iso = _DS_ISO.fullmatch(text)
    if literal:
        negative = literal.group(1) == "-"
        days, hours, minutes, seconds = (int(literal.group(i)) for i in range(2, 6))
        fraction = literal.group(6) or ""
        if hours > 23 or minutes > 59 or seconds > 59:
            raise _invalid_interval(column, raw)
    elif iso:
        negative = iso.group(1) == "-"
        days, hours, minutes, seconds = (int(iso.group(i) or 0) for i in range(2, 6))
        fraction = iso.group(6) or ""
    else:
        raise _invalid_interval(column, raw)
    micros = int(fraction[:6].ljust(6, "0"))  # microsecond precision, extra digits truncated
    total = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    days, rest = divmod(total, 86_400 * 1_000_000)
    hours, rest = divmod(rest, 3_600 * 1_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    sign = "-" if negative and total else "+"
    return f"{sign}{days:02d} {hours:02d}:{minutes:02d}:{seconds:02d}.{micros:06d}"


def _to_binary(column: ColumnDefinition, raw: str | int | float) -> bytes:
    if not isinstance(raw, str) or not _HEX_TEXT.fullmatch(raw):
        raise _ora(1465, f"invalid hex number: column {column.name} value {raw!r}")
    value = bytes.fromhex(raw)
    length = column.oracle_type.length
    if (
        column.oracle_type.family is TypeFamily.BINARY
        and length is not None
        and len(value) > length
    ):
        raise _ora(
            12899,
            f'value too large for column "{column.name}" (actual: {len(value)}, maximum: {length})',
        )
    return value


_CONVERTERS: dict[TypeFamily, Callable[[ColumnDefinition, str | int | float], Any]] = {
    TypeFamily.NUMBER: _to_number,
    TypeFamily.FLOAT: _to_float,
    TypeFamily.CHARACTER: _to_character,
    TypeFamily.LOB_CHARACTER: _to_character,
    TypeFamily.DATETIME: _to_datetime,
    TypeFamily.DATETIME_TZ: _to_datetime,
    TypeFamily.INTERVAL_YM: _to_interval_year_to_month,
    TypeFamily.INTERVAL_DS: _to_interval_day_to_second,
    TypeFamily.BINARY: _to_binary,
    TypeFamily.LOB_BINARY: _to_binary,
}


def _image(lcr: dict[str, Any], name: str) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = lcr.get(name) or []
    names = [value["column_name"] for value in values]
    if len(set(names)) != len(names):
        raise _ora(957, f"duplicate column name in LCR {name}: {names}")
    return values


def _key_text(columns: tuple[str, ...], *images: list[dict[str, Any]]) -> str:
    """``(A, B)=(1, x)`` from the LCR's raw values: the first image holding each column wins."""
    values = []
    for column in columns:
        raw = next(
            (v["value"] for image in images for v in image if v["column_name"] == column), None
        )
        values.append("NULL" if raw is None else str(raw))
    return f"({', '.join(columns)})=({', '.join(values)})"


@dataclass(frozen=True)
class _Prepared:
    """A row LCR after the checks that do not depend on the row state (rules 5 and 6)."""

    old_image: list[dict[str, Any]]
    new_image: list[dict[str, Any]]
    key_image: list[dict[str, Any]]
    old: dict[str, Any]  # converted old values
    new: dict[str, Any]  # converted new values


ROW_COMMANDS = ("INSERT", "UPDATE", "DELETE")


def _prepare(table: DestinationTable, lcr: dict[str, Any]) -> _Prepared:
    command = lcr["command_type"]
    definition = table.definition
    if command not in ROW_COMMANDS + LOB_COMMANDS:
        raise ValueError(f"not a row LCR command: {command!r}")
    key_columns = table.effective_key
    # D5: a command reads only the images it uses; a LOB piece identifies its row and
    # names its column in new_values, as an INSERT does (D11).
    old_image = _image(lcr, "old_values") if command in ("UPDATE", "DELETE") else []
    new_image = _image(lcr, "new_values") if command not in ("DELETE",) else []
    key_image = old_image if command in ("UPDATE", "DELETE") else new_image

    def where() -> str:  # only built for an error message
        return f"table {definition.qualified_name}, key {_key_text(key_columns, key_image)}"

    # Rule 5: every key column needs a value: INSERT from new_values, UPDATE/DELETE from old.
    for column in key_columns:
        if not any(value["column_name"] == column for value in key_image):
            raise _ora(26688, f"missing key in LCR: column {column} of {definition.qualified_name}")
    # Rule 6: an LCR column the destination lacks.
    for value in old_image + new_image:
        if value["column_name"] not in definition.column_names:
            raise _ora(904, f'"{value["column_name"]}": invalid identifier, {where()}')
    # Rule 6: datatype conversion, before any key is compared (design-notes 4).
    old = _convert_image(definition, old_image, where)
    new = _convert_image(definition, new_image, where)
    return _Prepared(old_image, new_image, key_image, old, new)


def apply_row_lcr(table: DestinationTable, rows: dict[Key, Row], lcr: dict[str, Any]) -> None:
    """Apply one row LCR to ``rows`` (one destination table), or raise ApplyRowError."""
    command = lcr["command_type"]
    lcr_parts = _prepare(table, lcr)
    if command == "INSERT":
        _insert(table, rows, lcr_parts.new, lcr_parts.key_image)
    elif command in LOB_COMMANDS:
        _lob_piece(table, rows, lcr, lcr_parts)
    elif command == "UPDATE":
        _update(table, rows, lcr_parts.old, lcr_parts.new, lcr_parts.old_image, lcr_parts.new_image)
    else:
        _delete(table, rows, lcr_parts.old, lcr_parts.old_image)


def _convert_image(
    definition: TableDefinition, image: list[dict[str, Any]], where: Callable[[], str]
) -> dict[str, Any]:
    converted = {}
    for value in image:
        column = definition.column(value["column_name"])
        try:
            converted[column.name] = convert_value(column, value["value"])
        except ApplyRowError as error:
            raise ApplyRowError(error.error_number, f"{error.text}, {where()}") from None
    return converted


def _insert(
    table: DestinationTable,
    rows: dict[Key, Row],
    new: dict[str, Any],
    key_image: list[dict[str, Any]],
) -> None:
    definition = table.definition
    key_columns = table.effective_key

    def where() -> str:
        return f"key {_key_text(key_columns, key_image)}"

    # Rule 6: a destination column the LCR lacks gets its declared default, else NULL.
    row: Row = {}
    for column in definition.columns:
        if column.name in new:
            row[column.name] = new[column.name]
        elif column.default is not None:
            row[column.name] = convert_value(column, column.default)
        else:
            row[column.name] = None
    # Rule 6: NULL into NOT NULL.
    for column in definition.columns:
        if not column.nullable and row[column.name] is None:
            raise _ora(
                1400,
                f'cannot insert NULL into ("{definition.owner}"."{definition.name}".'
                f'"{column.name}"), {where()}',
            )
    # Rule 7: uniqueness conflict.
    key = tuple(row[column] for column in key_columns)
    if key in rows:
        raise _ora(1, f"unique constraint ({definition.qualified_name}) violated, {where()}")
    rows[key] = row


def _conflicting_columns(
    table: DestinationTable, operation: str, current: Row, old: dict[str, Any]
) -> list[str]:
    """Rule 7: the non-key old values sent in the LCR that differ (NULL-safely) from the current
    row, except the columns whose comparison is switched off for this operation."""
    conflicting = []
    for column, old_value in old.items():
        if column in table.effective_key:
            continue
        if {(column, operation), (column, "*")} & table.uncompared_columns:
            continue
        if old_value != current[column]:
            conflicting.append(column)
    return conflicting


def _conflict(definition: TableDefinition, where: str, conflicting: list[str]) -> ApplyRowError:
    return _ora(
        26786,
        f"A row with {where} exists but has conflicting column(s) {', '.join(conflicting)} "
        f"in table {definition.qualified_name}",
    )


def _update(
    table: DestinationTable,
    rows: dict[Key, Row],
    old: dict[str, Any],
    new: dict[str, Any],
    old_image: list[dict[str, Any]],
    new_image: list[dict[str, Any]],
) -> None:
    definition = table.definition
    key_columns = table.effective_key

    def where() -> str:
        return f"key {_key_text(key_columns, old_image)}"

    old_key = tuple(old[column] for column in key_columns)
    # Rule 7: the row must exist ...
    current = rows.get(old_key)
    if current is None:
        raise _ora(
            26787,
            f"The row with {where()} does not exist in table {definition.qualified_name}",
        )
    written = _columns_written(table, current, old, new, where)
    # Rule 6: NOT NULL columns cannot be set to NULL.
    for column_name, value in written.items():
        if value is None and not definition.column(column_name).nullable:
            raise _ora(
                1407,
                f'cannot update ("{definition.owner}"."{definition.name}".'
                f'"{column_name}") to NULL, {where()}',
            )
    # Rule 5: an update may change the key: the row moves to its new key.
    new_row = {**current, **written}
    new_key = tuple(new_row[column] for column in key_columns)
    if new_key != old_key and new_key in rows:
        raise _ora(
            1,
            f"unique constraint ({definition.qualified_name}) violated, "
            f"key {_key_text(key_columns, new_image, old_image)}",
        )
    del rows[old_key]
    rows[new_key] = new_row


def _columns_written(
    table: DestinationTable,
    current: Row,
    old: dict[str, Any],
    new: dict[str, Any],
    where: Callable[[], str],
) -> dict[str, Any]:
    """Rule 7: the columns an UPDATE writes and their values. Its compared old values must match
    the current row, unless update conflict handlers resolve it: every conflicting column must
    belong to a handler's column group, and each group takes the LCR's values or keeps the
    destination's as its handler decides."""
    definition = table.definition
    conflicting = _conflicting_columns(table, "UPDATE", current, old)
    handlers: list[UpdateConflictHandler] = []
    for column in conflicting:
        handler = table.handler_for(column)
        if handler is None:
            raise _conflict(definition, where(), conflicting)
        if handler not in handlers:
            handlers.append(handler)
    handled = {column for handler in handlers for column in handler.column_list}
    written: dict[str, Any] = {}
    for column, value in new.items():
        if column not in handled:
            written[column] = value  # no conflict in its group: applied normally
    for handler in handlers:
        lcr_wins = _lcr_wins(handler, current, old, new)
        if lcr_wins is None:  # D7: no resolution value
            raise _conflict(definition, where(), conflicting)
        if lcr_wins:
            for column in handler.column_list:
                if column in new:
                    written[column] = new[column]
        # else: the destination keeps its values for the whole group
    return written


def _lcr_wins(
    handler: UpdateConflictHandler, current: Row, old: dict[str, Any], new: dict[str, Any]
) -> bool | None:
    """Whether a prebuilt update conflict handler takes the LCR's values for its column group;
    None when it cannot decide (D7)."""
    if handler.method is ConflictResolution.OVERWRITE:
        return True
    if handler.method is ConflictResolution.DISCARD:
        return False
    column = handler.resolution_column
    if column in new:
        candidate = new[column]
    elif column in old:
        candidate = old[column]
    else:
        return None
    destination = current[column]
    if candidate is None or destination is None:
        return False  # D7: a comparison with NULL is not TRUE
    if handler.method is ConflictResolution.MAXIMUM:
        return bool(candidate > destination)
    return bool(candidate < destination)  # MINIMUM


def _delete(
    table: DestinationTable,
    rows: dict[Key, Row],
    old: dict[str, Any],
    old_image: list[dict[str, Any]],
) -> None:
    definition = table.definition

    def where() -> str:
        return f"key {_key_text(table.effective_key, old_image)}"

    key = tuple(old[column] for column in table.effective_key)
    # Rule 7: the row must exist and its compared old values match; no handler for deletes.
    current = rows.get(key)
    if current is None:
        raise _ora(
            26787,
            f"The row with {where()} does not exist in table {definition.qualified_name}",
        )
    conflicting = _conflicting_columns(table, "DELETE", current, old)
    if conflicting:
        raise _conflict(definition, where(), conflicting)
    del rows[key]


def _lob_piece(
    table: DestinationTable, rows: dict[Key, Row], lcr: dict[str, Any], lcr_parts: _Prepared
) -> None:
    """Rule 12 (D11): a LOB WRITE, TRIM or ERASE changes one LOB column of an existing row.
    new_values holds the key columns and exactly one other column, the LOB (for WRITE its value
    is the piece; for TRIM and ERASE it only names the column)."""
    definition = table.definition
    command = lcr["command_type"]
    where = f"key {_key_text(table.effective_key, lcr_parts.key_image)}"
    targets = [name for name in lcr_parts.new if name not in table.effective_key]
    if len(targets) != 1:
        raise _ora(
            21560,
            f"argument new_values is null, invalid, or out of range: a {command} names exactly "
            f"one LOB column besides the key columns (found: {', '.join(targets) or 'none'}), "
            f"table {definition.qualified_name}, {where}",
        )
    column = definition.column(targets[0])
    if column.oracle_type.name not in LOB_TYPES:
        raise _ora(
            932,
            f"inconsistent datatypes: expected CLOB, NCLOB or BLOB got {column.oracle_type.name}"
            f": {command} on column {column.name} of table {definition.qualified_name}, {where}",
        )
    key = tuple(lcr_parts.new[name] for name in table.effective_key)
    current = rows.get(key)
    if current is None:  # rule 7, as for an UPDATE
        raise _ora(
            26787,
            f"The row with {where} does not exist in table {definition.qualified_name}",
        )
    try:
        value = apply_piece(
            command,
            current[column.name],
            lcr_parts.new[column.name],
            lcr.get("lob_offset"),
            lcr.get("lob_operation_size"),
        )
    except LobPieceError as error:
        raise ApplyRowError(
            error.error_number,
            f"{error.text}, {command} on column {column.name} of table "
            f"{definition.qualified_name}, {where}",
        ) from None
    rows[key] = {**current, column.name: value}


# --------------------------------------------------------------------------------------------
# Keys and the canonical text form values travel in between Spark and Python
# --------------------------------------------------------------------------------------------


def lcr_keys(table: DestinationTable, lcr: dict[str, Any]) -> tuple[Key, Key | None]:
    """The key an LCR addresses and, for an UPDATE that sends new key values, the key it may move
    the row to.

    Only the key columns are converted: the other values are checked when the LCR is applied
    (``apply_row_lcr`` raises their errors at that point, in the LCR's transaction). Raises
    ApplyRowError when the key itself cannot be read, with the error ``apply_row_lcr`` raises for
    this LCR (26688, 957, 904, 1722, ...)."""
    command = lcr["command_type"]
    key_columns = table.effective_key
    definition = table.definition
    try:
        key_image = _image(lcr, "old_values" if command in ("UPDATE", "DELETE") else "new_values")
        raw = {v["column_name"]: v["value"] for v in key_image if v["column_name"] in key_columns}
        key = tuple(convert_value(definition.column(c), raw[c]) for c in key_columns)
        if command != "UPDATE":
            return key, None
        sent = {
            v["column_name"]: v["value"]
            for v in _image(lcr, "new_values")
            if v["column_name"] in key_columns
        }
        if not sent:
            return key, None
        moved = tuple(
            convert_value(definition.column(c), sent[c]) if c in sent else old
            for c, old in zip(key_columns, key, strict=True)
        )
        return key, (moved if moved != key else None)
    except (ApplyRowError, KeyError, TypeError):
        pass
    # The key cannot be read: the full checks name the error, in apply_row_lcr's order.
    lcr_parts = _prepare(table, lcr)
    old, new = lcr_parts.old, lcr_parts.new
    if command not in ("UPDATE", "DELETE"):  # INSERT, LOB pieces
        return tuple(new[column] for column in key_columns), None
    key = tuple(old[column] for column in key_columns)
    if command == "UPDATE" and any(column in new for column in key_columns):
        moved = tuple(new.get(column, old[column]) for column in key_columns)
        return key, (moved if moved != key else None)
    return key, None


def to_canonical_text(column: ColumnDefinition, value: Any) -> str | None:
    """A Python value as text Spark casts back to the destination type exactly."""
    if value is None:
        return None
    family = column.oracle_type.family
    if family is TypeFamily.NUMBER:
        return format(value, "f")
    if family is TypeFamily.FLOAT:
        return repr(value)
    if family in (TypeFamily.DATETIME, TypeFamily.DATETIME_TZ):
        return str(value.isoformat(sep=" "))
    if family in (TypeFamily.BINARY, TypeFamily.LOB_BINARY):
        return str(value.hex().upper())
    return str(value)


_SPARK_INTERVAL = re.compile(r"INTERVAL '([^']*)' ")


def from_spark_text(column: ColumnDefinition, text: str | None) -> Any:
    """A destination value, as Spark renders it to text (see ``keys.spark_text``), in Python."""
    if text is None:
        return None
    family = column.oracle_type.family
    if family in (TypeFamily.INTERVAL_YM, TypeFamily.INTERVAL_DS):
        match = _SPARK_INTERVAL.match(text)
        text = match.group(1) if match else text
    if family is TypeFamily.CHARACTER:
        return text  # stored as converted already (CHAR padded); never re-checked
    return convert_value(column, text)
