"""Landing bytes -> lines (pure Python, no Spark): examples and property-based fuzzing.

Whatever the bytes, the reader never raises, never loses a byte (the lines' byte ranges tile the
complete prefix of the file) and says why a line or file cannot be read.
"""

from __future__ import annotations

import gzip
import io
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeapply.bronze.lines import (
    FINGERPRINT_WINDOW,
    UTF8_BOM,
    FileLines,
    LandingLine,
    binary_opener,
    fingerprint,
    fingerprint_of_file,
    split_lines,
)

FUZZ = settings(
    max_examples=200, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Bytes that stress the reader: newlines, CR, a BOM, invalid UTF-8, JSON punctuation.
landing_bytes = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from(
            [b"\n", b"\r\n", b"\r", UTF8_BOM, b"\xff", b"\xc3", b'{"a":1}', b"\xe2\x82"]
        ),
        st.text(max_size=10).map(str.encode),
    ),
    max_size=30,
).map(b"".join)


def read(
    content: bytes,
    compressed: bool,
    start_offset: int = 0,
    size_bound: int | None = None,
    block_bytes: int = 1 << 20,
) -> tuple[str | None, list[LandingLine]]:
    """(fingerprint, lines) of one planned read of ``content``, as a Python worker reads it."""
    reader = FileLines(
        lambda: io.BytesIO(content),
        "f.jsonl.gz" if compressed else "f.jsonl",
        compressed,
        start_offset,
        len(content) if size_bound is None else size_bound,
        1,
        block_bytes,
    )
    lines = list(reader)
    return reader.fingerprint, lines


def complete_prefix_length(content: bytes, start_offset: int, size_bound: int) -> int:
    """Just after the last newline in ``content[start_offset:size_bound]``, else start_offset."""
    last_newline = content.rfind(b"\n", start_offset, size_bound)
    return last_newline + 1 if last_newline >= 0 else start_offset


def test_a_bom_at_the_start_of_a_file_is_not_part_of_the_first_line() -> None:
    rows = list(split_lines(UTF8_BOM + b"{}\n{}\n", "f", 0, 1, compressed=False))

    assert [(r.line, r.byte_offset, r.line_bytes, r.read_problem) for r in rows] == [
        ("{}", 0, 6, None),
        ("{}", 6, 3, None),
    ]


def test_a_bom_after_the_start_of_a_file_is_kept_for_the_validator_to_reject() -> None:
    rows = list(split_lines(UTF8_BOM + b"{}\n", "f", 10, 3, compressed=False))

    assert rows[0].line == "\ufeff{}"


def test_crlf_line_endings_are_not_part_of_the_line() -> None:
    rows = list(split_lines(b'{"a":"x"}\r\n{}\r\n', "f", 0, 1, compressed=False))

    assert [(r.line, r.line_bytes) for r in rows] == [('{"a":"x"}', 11), ("{}", 4)]


def test_invalid_utf8_is_reported_with_the_bytes_and_kept_visible() -> None:
    (row,) = split_lines(b'{"a":"x\xff\xfey"}\n', "f", 0, 1, compressed=False)

    assert row.line == '{"a":"x\\xff\\xfey"}'
    assert row.read_problem is not None
    assert "not valid UTF-8: bytes ff at byte 7" in row.read_problem


def test_a_literal_replacement_character_is_valid_utf8() -> None:
    (row,) = split_lines('{"a":"\ufffd"}\n'.encode(), "f", 0, 1, compressed=False)

    assert row.read_problem is None


def test_a_corrupt_gzip_file_is_one_row_with_its_problem() -> None:
    whole = gzip.compress(b"{}\n{}\n")
    for content, error in ((whole[: len(whole) // 2], "EOFError"), (b"{}\n", "BadGzipFile")):
        read_fingerprint, rows = read(content, compressed=True)
        (row,) = rows
        assert read_fingerprint == fingerprint(content, len(content))
        assert (row.line_number, row.line, row.line_bytes) == (0, "", 0)
        assert row.read_problem is not None
        assert "cannot be read as gzip" in row.read_problem
        assert error in row.read_problem


def test_the_fingerprint_of_a_file_matches_the_one_of_its_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * (3 * FINGERPRINT_WINDOW // 256)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)

    for length in (0, 1, FINGERPRINT_WINDOW, FINGERPRINT_WINDOW + 7, len(data)):
        assert fingerprint_of_file(path, length) == fingerprint(data, length)
    assert fingerprint_of_file(path, len(data) + 1) is None
    assert fingerprint(data, 100) != fingerprint(data[:99] + b"x" + data[100:], 100)


@FUZZ
@given(
    content=landing_bytes,
    cut=st.integers(min_value=0, max_value=400),
    block_bytes=st.integers(min_value=1, max_value=64),
)
def test_plain_files_lines_tile_the_complete_prefix_losslessly(
    content: bytes, cut: int, block_bytes: int
) -> None:
    start = complete_prefix_length(content, 0, min(cut, len(content)))  # a previous run's end
    read_fingerprint, lines = read(content, False, start, block_bytes=block_bytes)

    end = complete_prefix_length(content, start, len(content))
    assert read_fingerprint == (fingerprint(content, end) if lines else None)
    assert len(lines) == content.count(b"\n", start, end)
    offset = start
    for number, row in enumerate(lines, start=1):
        assert (row.line_number, row.byte_offset) == (number, offset)
        raw = content[offset : offset + row.line_bytes]
        assert raw.endswith(b"\n")
        assert "\n" not in row.line
        if row.read_problem is None:
            bom = UTF8_BOM if offset == 0 and raw.startswith(UTF8_BOM) else b""
            crlf = b"\r" if raw.endswith(b"\r\n") else b""
            assert bom + row.line.encode() + crlf + b"\n" == raw  # nothing lost or added
        else:
            assert "not valid UTF-8" in row.read_problem
        offset += row.line_bytes
    assert offset == end


@FUZZ
@given(
    content=landing_bytes, as_gzip=st.booleans(), block_bytes=st.integers(min_value=1, max_value=64)
)
def test_compressed_files_never_raise_and_keep_their_last_line(
    content: bytes, as_gzip: bool, block_bytes: int
) -> None:
    stored = gzip.compress(content) if as_gzip else content
    read_fingerprint, lines = read(stored, True, block_bytes=block_bytes)

    assert read_fingerprint == fingerprint(stored, len(stored))
    if as_gzip:
        assert sum(row.line_bytes for row in lines) >= len(content)
        unterminated_last_line = bool(content) and not content.endswith(b"\n")
        assert len(lines) == content.count(b"\n") + unterminated_last_line
        assert [row.line_number for row in lines] == list(range(1, len(lines) + 1))
        whole = read(stored, True, block_bytes=1 << 20)[1]
        assert lines == whole  # the block size changes nothing
    else:
        # Arbitrary bytes are (almost) never gzip: one row saying why, or lines if they happen
        # to be an (empty) gzip stream.
        assert all(row.read_problem is None or row.line_number == 0 for row in lines)


def test_a_plain_file_is_read_only_up_to_its_planned_size() -> None:
    content = b'{"a":1}\n{"b":2}\n{"c":3}\n'

    _, lines = read(content, False, 0, size_bound=17, block_bytes=5)

    assert [row.line for row in lines] == ['{"a":1}', '{"b":2}']


def test_a_line_longer_than_a_block_is_one_line() -> None:
    long_line = b'{"v":"' + b"x" * 1000 + b'"}'
    content = b"{}\n" + long_line + b"\n{}\n"

    fingerprint_read, lines = read(content, False, block_bytes=64)

    assert [(row.line_number, row.byte_offset, row.line_bytes) for row in lines] == [
        (1, 0, 3),
        (2, 3, len(long_line) + 1),
        (3, len(long_line) + 4, 3),
    ]
    assert fingerprint_read == fingerprint(content, len(content))


def test_a_file_that_vanished_before_it_was_read_is_one_row_with_its_problem(
    tmp_path: Path,
) -> None:
    reader = FileLines(binary_opener(tmp_path / "gone.jsonl"), "gone.jsonl", False, 40, 90, 5)

    (row,) = list(reader)

    assert (row.line_number, row.byte_offset, row.line_bytes) == (0, 40, 0)
    assert row.read_problem is not None
    assert row.read_problem.startswith("file cannot be read (FileNotFoundError")
    assert reader.fingerprint is None


def peak_memory_reading(path: Path, block_bytes: int) -> tuple[int, int]:
    """(lines, peak bytes Python allocated) while the lines of ``path`` are read and dropped."""
    reader = FileLines(
        binary_opener(path), str(path), False, 0, path.stat().st_size, 1, block_bytes
    )
    tracemalloc.start()
    try:
        count = sum(1 for _ in reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return count, peak


def test_reading_a_file_holds_a_block_and_its_lines_not_the_file(tmp_path: Path) -> None:
    line = b'{"scn": 1, "value": "' + b"v" * 200 + b'"}\n'
    block = 1 << 20
    peaks = {}
    for blocks in (4, 32):
        path = tmp_path / f"{blocks}.jsonl"
        path.write_bytes(line * (blocks * block // len(line)))
        count, peaks[blocks] = peak_memory_reading(path, block)
        assert count == blocks * block // len(line)

    # Eight times the file, the same peak (a few blocks' worth: the block, its lines).
    assert peaks[32] < 1.5 * peaks[4], peaks
    assert peaks[32] < 16 * block, peaks
