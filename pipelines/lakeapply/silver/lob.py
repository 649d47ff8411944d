"""Piecewise LOB changes (spec rule 12): what one LOB WRITE, LOB TRIM or LOB ERASE does to the
current value of a CLOB, NCLOB or BLOB column, as ``DBMS_LOB.WRITE/TRIM/ERASE`` do it.

Pure functions over Python values (``str`` for CLOB/NCLOB, counted in characters; ``bytes`` for
BLOB, counted in bytes); ``rowops`` finds the row and the column, this module changes the value.
Offsets are 1-based. Errors are the ones ``DBMS_LOB`` raises:

* ORA-22275 (invalid LOB locator): the column is NULL, so there is no LOB to change;
* ORA-21560 (argument is null, invalid, or out of range): an offset below 1, an amount or
  length below its minimum, a missing operand, or a result longer than :data:`MAX_LOB_LENGTH`;
* ORA-22926: ``LOB TRIM`` to a length beyond the current length.
"""

from __future__ import annotations

LOB_WRITE, LOB_TRIM, LOB_ERASE = "LOB WRITE", "LOB TRIM", "LOB ERASE"
LOB_COMMANDS = (LOB_WRITE, LOB_TRIM, LOB_ERASE)
LOB_TYPES = ("CLOB", "NCLOB", "BLOB")  # LONG and LONG RAW have no piecewise operations
# A Spark STRING or BINARY value holds at most 2^31 - 1 bytes: a longer LOB cannot be stored,
# so an offset that would make one is out of range here (Oracle's LOBMAXSIZE is larger).
MAX_LOB_LENGTH = 2**31 - 1

LobValue = str | bytes


class LobPieceError(Exception):
    """A LOB piece cannot be applied: the Oracle error number and its ``ORA-nnnnn: ...`` text."""

    def __init__(self, error_number: int, text: str) -> None:
        super().__init__(text)
        self.error_number = error_number
        self.text = text


def _out_of_range(argument: str, why: str) -> LobPieceError:
    return LobPieceError(
        21560, f"ORA-21560: argument {argument} is null, invalid, or out of range: {why}"
    )


def _spliced(value: LobValue, start: int, middle: LobValue | None, length: int) -> LobValue:
    """``value`` with ``[start, start + length)`` replaced by ``middle``, or (``middle`` None)
    by filler: spaces in a CLOB, zero bytes in a BLOB. A start past the end pads the gap."""
    end = start + length
    if isinstance(value, bytes):
        gap = b"\x00" * max(0, start - len(value))
        if middle is None:
            middle = b"\x00" * length
        if not isinstance(middle, bytes):
            raise TypeError("a BLOB piece is bytes")
        return value[:start] + gap + middle + value[end:]
    text_gap = " " * max(0, start - len(value))
    if middle is None:
        middle = " " * length
    if not isinstance(middle, str):
        raise TypeError("a CLOB piece is text")
    return value[:start] + text_gap + middle + value[end:]


def _require_lob(value: LobValue | None) -> LobValue:
    if value is None:
        raise LobPieceError(
            22275, "ORA-22275: invalid LOB locator specified: the LOB column is NULL"
        )
    return value


def write(value: LobValue | None, piece: LobValue | None, offset: int | None) -> LobValue:
    """``DBMS_LOB.WRITE``: ``piece`` written at ``offset``, over what is there; a gap between
    the end of the value and ``offset`` is filled with spaces (CLOB) or zero bytes (BLOB)."""
    current = _require_lob(value)
    if offset is None or offset < 1:
        raise _out_of_range("offset", f"lob_offset {offset} (the first position is 1)")
    if piece is None or len(piece) == 0:
        raise _out_of_range("amount", "a LOB WRITE needs a non-empty piece in new_values")
    end = offset - 1 + len(piece)
    if end > MAX_LOB_LENGTH:
        raise _out_of_range(
            "offset",
            f"a piece of {len(piece)} at lob_offset {offset} would end at {end}, beyond the "
            f"longest LOB a Delta table holds ({MAX_LOB_LENGTH})",
        )
    return _spliced(current, offset - 1, piece, len(piece))


def trim(value: LobValue | None, new_length: int | None) -> LobValue:
    """``DBMS_LOB.TRIM``: the value cut to ``new_length`` characters or bytes."""
    current = _require_lob(value)
    if new_length is None or new_length < 0:
        raise _out_of_range("newlen", f"lob_operation_size {new_length} (at least 0)")
    if new_length > len(current):
        raise LobPieceError(
            22926,
            "ORA-22926: specified trim length is greater than current LOB value's length "
            f"(trim to {new_length}, length {len(current)})",
        )
    return current[:new_length]


def erase(value: LobValue | None, offset: int | None, amount: int | None) -> LobValue:
    """``DBMS_LOB.ERASE``: ``amount`` characters (spaces) or bytes (zeros) overwritten from
    ``offset``; the length never changes (a range past the end erases up to the end)."""
    current = _require_lob(value)
    if offset is None or offset < 1:
        raise _out_of_range("offset", f"lob_offset {offset} (the first position is 1)")
    if amount is None or amount < 1:
        raise _out_of_range("amount", f"lob_operation_size {amount} (at least 1)")
    start = min(offset - 1, len(current))
    return _spliced(current, start, None, min(offset - 1 + amount, len(current)) - start)


def apply_piece(
    command: str,
    value: LobValue | None,
    piece: LobValue | None,
    offset: int | None,
    size: int | None,
) -> LobValue:
    """One LOB piece (``command_type`` LOB WRITE / TRIM / ERASE) applied to ``value``:
    WRITE puts ``piece`` at ``offset`` (``size`` unused: the piece is the amount); TRIM cuts
    to ``size``; ERASE blanks ``size`` from ``offset``."""
    if command == LOB_WRITE:
        return write(value, piece, offset)
    if command == LOB_TRIM:
        return trim(value, size)
    if command == LOB_ERASE:
        return erase(value, offset, size)
    raise ValueError(f"not a LOB piece command: {command!r}")
