"""Rule 12: LOB pieces, as DBMS_LOB.WRITE/TRIM/ERASE change a CLOB or BLOB value (silver/lob.py),
and as the apply applies them to a row (silver/rowops.py). Pure Python: no Spark."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.silver.lob import MAX_LOB_LENGTH, LobPieceError, apply_piece, erase, trim, write
from lakeapply.silver.rowops import ApplyRowError, Key, Row, apply_row_lcr, lcr_keys
from lakeapply.silver.settings import DestinationTable

# --- the piece functions --------------------------------------------------------------------


def test_a_clob_write_overwrites_characters_from_a_one_based_offset() -> None:
    assert write("hello world", "J", 1) == "Jello world"
    assert write("hello world", "WORLD!", 7) == "hello WORLD!"


def test_a_clob_write_counts_characters_not_bytes() -> None:
    assert write("\u00fcber", "a", 2) == "\u00fcaer"


def test_a_clob_write_past_the_end_pads_the_gap_with_spaces() -> None:
    assert write("ab", "z", 5) == "ab  z"
    assert write("", "x", 3) == "  x"


def test_a_blob_write_counts_bytes_and_pads_the_gap_with_zero_bytes() -> None:
    assert write(b"\x01\x02\x03", b"\xff", 2) == b"\x01\xff\x03"
    assert write(b"\x01", b"\xaa\xbb", 3) == b"\x01\x00\xaa\xbb"


def test_a_trim_cuts_to_the_operation_size() -> None:
    assert trim("hello", 2) == "he"
    assert trim(b"\x01\x02\x03", 0) == b""
    assert trim("hello", 5) == "hello"


def test_a_trim_beyond_the_current_length_is_ora_22926() -> None:
    with pytest.raises(LobPieceError) as raised:
        trim("abc", 4)
    assert raised.value.error_number == 22926
    assert raised.value.text.startswith("ORA-22926: specified trim length is greater than")


def test_an_erase_blanks_characters_or_zeroes_bytes_without_changing_the_length() -> None:
    assert erase("hello world", 2, 3) == "h   o world"
    assert erase(b"\x01\x02\x03\x04", 2, 2) == b"\x01\x00\x00\x04"


def test_an_erase_past_the_end_erases_up_to_the_end_only() -> None:
    assert erase("hello", 4, 10) == "hel  "
    assert erase("hello", 9, 2) == "hello"


def test_a_piece_on_a_null_lob_is_ora_22275() -> None:
    for command in ("LOB WRITE", "LOB TRIM", "LOB ERASE"):
        with pytest.raises(LobPieceError) as raised:
            apply_piece(command, None, "x", 1, 1)
        assert raised.value.error_number == 22275


@pytest.mark.parametrize(
    ("command", "piece", "offset", "size"),
    [
        ("LOB WRITE", "x", 0, None),
        ("LOB WRITE", "x", None, None),
        ("LOB WRITE", "", 1, None),
        ("LOB WRITE", "x", MAX_LOB_LENGTH + 1, None),
        ("LOB TRIM", None, None, -1),
        ("LOB TRIM", None, None, None),
        ("LOB ERASE", None, 0, 1),
        ("LOB ERASE", None, 1, 0),
    ],
    ids=[
        "write-at-0",
        "write-without-offset",
        "empty-piece",
        "write-beyond-the-longest-lob",
        "negative-trim",
        "trim-without-size",
        "erase-at-0",
        "erase-nothing",
    ],
)
def test_an_argument_out_of_range_is_ora_21560(
    command: str, piece: str | None, offset: int | None, size: int | None
) -> None:
    with pytest.raises(LobPieceError) as raised:
        apply_piece(command, "abc", piece, offset, size)
    assert raised.value.error_number == 21560
    assert "is null, invalid, or out of range" in raised.value.text


# --- a piece applied to a row ----------------------------------------------------------------

TABLE = DestinationTable(
    "ORCL",
    table_definition_from_dict(
        {
            "owner": "HR",
            "name": "DOC",
            "columns": [
                {"name": "ID", "type": "NUMBER(5)", "nullable": False},
                {"name": "TITLE", "type": "VARCHAR2(20)"},
                {"name": "BODY", "type": "CLOB"},
                {"name": "NBODY", "type": "NCLOB"},
                {"name": "SCAN", "type": "BLOB"},
            ],
            "primary_key": ["ID"],
        },
        "test",
    ),
    "doc",
    instantiation_scn=1,
)
DATA_TYPES = {"ID": "NUMBER", "TITLE": "VARCHAR2", "BODY": "CLOB", "NBODY": "NCLOB", "SCAN": "BLOB"}


def piece(command: str, **fields: Any) -> dict[str, Any]:
    values = fields.pop("values")
    return {
        "command_type": command,
        "new_values": [
            {"column_name": name, "data_type": DATA_TYPES[name], "value": value}
            for name, value in values.items()
        ],
        **fields,
    }


def rows_with(body: str | None = "hello", scan: bytes | None = b"\x01\x02") -> dict[Key, Row]:
    key = (Decimal(1),)
    return {key: {"ID": Decimal(1), "TITLE": "t", "BODY": body, "NBODY": "n", "SCAN": scan}}


def test_pieces_change_the_lob_column_of_the_row_their_key_names() -> None:
    rows = rows_with()
    apply_row_lcr(
        TABLE, rows, piece("LOB WRITE", values={"ID": "1", "BODY": " world"}, lob_offset=6)
    )
    apply_row_lcr(TABLE, rows, piece("LOB WRITE", values={"ID": "1", "SCAN": "ff"}, lob_offset=4))
    apply_row_lcr(
        TABLE,
        rows,
        piece("LOB ERASE", values={"ID": "1", "BODY": None}, lob_offset=1, lob_operation_size=1),
    )
    apply_row_lcr(
        TABLE, rows, piece("LOB TRIM", values={"ID": "1", "NBODY": None}, lob_operation_size=0)
    )
    [row] = rows.values()
    assert row["BODY"] == " ello world"
    assert row["SCAN"] == b"\x01\x02\x00\xff"
    assert row["NBODY"] == ""
    assert row["TITLE"] == "t"


def test_a_piece_finds_its_row_by_the_key_in_new_values() -> None:
    lcr = piece("LOB WRITE", values={"ID": "1.0", "BODY": "x"}, lob_offset=1)
    assert lcr_keys(TABLE, lcr) == ((Decimal(1),), None)


def error_of(lcr: dict[str, Any], rows: dict[Key, Row] | None = None) -> ApplyRowError:
    with pytest.raises(ApplyRowError) as raised:
        apply_row_lcr(TABLE, rows_with() if rows is None else rows, lcr)
    return raised.value


def test_a_piece_on_a_row_that_does_not_exist_is_ora_26787_like_an_update() -> None:
    error = error_of(piece("LOB WRITE", values={"ID": "2", "BODY": "x"}, lob_offset=1))
    assert error.error_number == 26787
    assert error.text == ("ORA-26787: The row with key (ID)=(2) does not exist in table HR.DOC")


def test_a_piece_on_a_column_that_is_not_a_lob_is_ora_00932() -> None:
    error = error_of(piece("LOB WRITE", values={"ID": "1", "TITLE": "x"}, lob_offset=1))
    assert error.error_number == 932
    assert "expected CLOB, NCLOB or BLOB got VARCHAR2" in error.text
    assert "column TITLE of table HR.DOC" in error.text


def test_a_piece_must_name_exactly_one_lob_column() -> None:
    none = error_of(piece("LOB TRIM", values={"ID": "1"}, lob_operation_size=0))
    two = error_of(piece("LOB WRITE", values={"ID": "1", "BODY": "x", "SCAN": "00"}, lob_offset=1))
    assert none.error_number == two.error_number == 21560
    assert "(found: none)" in none.text and "(found: BODY, SCAN)" in two.text


def test_a_piece_errors_name_the_column_table_and_key() -> None:
    error = error_of(piece("LOB TRIM", values={"ID": "1", "BODY": None}, lob_operation_size=9))
    assert error.error_number == 22926
    assert error.text.endswith("LOB TRIM on column BODY of table HR.DOC, key (ID)=(1)")


def test_a_piece_on_a_null_lob_column_is_ora_22275() -> None:
    error = error_of(
        piece("LOB WRITE", values={"ID": "1", "BODY": "x"}, lob_offset=1), rows_with(body=None)
    )
    assert error.error_number == 22275


def test_a_blob_piece_that_is_not_hex_is_ora_01465() -> None:
    error = error_of(piece("LOB WRITE", values={"ID": "1", "SCAN": "zz"}, lob_offset=1))
    assert error.error_number == 1465


def test_a_piece_without_its_key_is_ora_26688() -> None:
    error = error_of(piece("LOB WRITE", values={"BODY": "x"}, lob_offset=1))
    assert error.error_number == 26688
