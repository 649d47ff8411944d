"""Landing bytes -> lines, in pure Python (no Spark): what a Python worker of the ingest runs.

Everything a file can do wrong *below* JSON is decided here, so it can be tested and fuzzed
without Spark: a file that cannot be decompressed, bytes that are not UTF-8, a byte order mark,
CRLF line endings, an incomplete last line. Each problem becomes a ``read_problem`` text that
``validate.classify_lines`` turns into a quarantine reason; nothing raises for bad input.

It also computes the *fingerprint* of the bytes ingested so far, with which the next run tells a
file that grew (append: the ingested prefix is unchanged) from one rewritten in place.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

UTF8_BOM = b"\xef\xbb\xbf"
# The fingerprint hashes the first and the last FINGERPRINT_WINDOW bytes of the ingested prefix
# (plus its length): bounded reads however large the file, and it covers both the start of the
# file (a rewrite usually changes it) and the bytes just before the resume point.
FINGERPRINT_WINDOW = 64 * 1024


class LandingLine(NamedTuple):
    """One complete line of a landing file, or one row standing for a file that cannot be read."""

    source_file: str
    line_number: int  # 1-based; 0 for the row of an unreadable file
    byte_offset: int  # of the line's first byte (a compressed file: in the decompressed stream)
    line: str  # without the line ending (and without a leading BOM)
    line_bytes: int  # bytes the line occupies, line ending included
    read_problem: str | None  # why the line or file cannot be read; None when it can


def fingerprint(data: bytes, length: int) -> str:
    """The fingerprint of ``data[:length]``: ``"<length>:<sha256 of its head and tail>"``."""
    head = data[: min(length, FINGERPRINT_WINDOW)]
    tail = data[max(0, length - FINGERPRINT_WINDOW) : length]
    return _fingerprint_of(length, head, tail)


def fingerprint_of_file(path: Path, length: int) -> str | None:
    """The fingerprint of the first ``length`` bytes of the file at ``path`` as it is now; None
    when the file is shorter than ``length`` or cannot be read (then it cannot be the same)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(min(length, FINGERPRINT_WINDOW))
            tail_start = max(0, length - FINGERPRINT_WINDOW)
            handle.seek(tail_start)
            tail = handle.read(length - tail_start)
    except OSError:
        return None
    if len(head) < min(length, FINGERPRINT_WINDOW) or len(tail) < length - tail_start:
        return None
    return _fingerprint_of(length, head, tail)


def fingerprint_length(value: str) -> int:
    """How many leading bytes of the file a fingerprint covers."""
    return int(value.split(":", 1)[0])


def _fingerprint_of(length: int, head: bytes, tail: bytes) -> str:
    digest = hashlib.sha256()
    digest.update(head)
    digest.update(tail)
    return f"{length}:{digest.hexdigest()}"


def decode_line(raw: bytes) -> tuple[str, str | None]:
    """(text, problem) of one line's bytes (line ending removed). Bytes that are not UTF-8 keep
    their value in the text as ``\\xNN`` escapes (the quarantine shows what was really there)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.end].hex(" ")
        return raw.decode("utf-8", errors="backslashreplace"), (
            f"line is not valid UTF-8: bytes {bad} at byte {error.start} of the line "
            f"({error.reason}); invalid bytes are shown as \\xNN in raw_line"
        )


def split_lines(
    data: bytes, source_file: str, start_offset: int, first_line_number: int, compressed: bool
) -> Iterator[LandingLine]:
    """The complete lines of ``data`` (read from ``start_offset``) with line numbers and offsets.

    Bytes after the last newline are an incomplete line, kept for the next run; a compressed file
    is complete by construction, so its last line counts even without a newline. Offsets count
    raw bytes (a line that is not valid UTF-8 still moves the offset by its true length). A UTF-8
    byte order mark at the start of a file is not part of its first line; a ``\\r`` before the
    newline (CRLF files) is not part of the line either.
    """
    pieces = data.split(b"\n")
    last = pieces.pop()
    if compressed and last:
        pieces.append(last)
    offset = start_offset
    for index, raw in enumerate(pieces):
        content = raw
        if index == 0 and start_offset == 0 and content.startswith(UTF8_BOM):
            content = content[len(UTF8_BOM) :]
        if content.endswith(b"\r"):
            content = content[:-1]
        text, problem = decode_line(content)
        yield LandingLine(
            source_file, first_line_number + index, offset, text, len(raw) + 1, problem
        )
        offset += len(raw) + 1


def complete_prefix_length(content: bytes, start_offset: int, size_bound: int) -> int:
    """Where the ingested prefix of a plain file ends after reading ``[start_offset, size_bound)``:
    just after the last newline in that range, or ``start_offset`` when there is none."""
    last_newline = content.rfind(b"\n", start_offset, size_bound)
    return last_newline + 1 if last_newline >= 0 else start_offset


def unreadable_file_problem(error: BaseException) -> str:
    return (
        f"file cannot be read as gzip ({type(error).__name__}: {error}); no line of it is ingested"
    )


def lines_of_file(
    content: bytes,
    source_file: str,
    compressed: bool,
    start_offset: int,
    size_bound: int,
    first_line_number: int,
) -> tuple[str, Iterator[LandingLine]]:
    """(fingerprint of what this read covers, its lines) for one planned file.

    ``content`` is the whole file as read now. A plain file is cut to ``[start_offset,
    size_bound)`` (it may have grown since it was planned); the fingerprint covers its prefix up
    to the last complete line. A compressed file is decompressed whole and fingerprinted whole;
    one that cannot be decompressed yields a single row with its ``read_problem`` (it is
    quarantined as one row and, once committed, not read again unless it changes).
    """
    if not compressed:
        end = complete_prefix_length(content, start_offset, min(size_bound, len(content)))
        data = content[start_offset:end]
        lines = split_lines(data, source_file, start_offset, first_line_number, compressed=False)
        return fingerprint(content, end), lines
    whole_file = fingerprint(content, len(content))
    try:
        data = gzip.decompress(content)
    except (OSError, EOFError, zlib.error) as error:  # BadGzipFile is an OSError
        row = LandingLine(source_file, 0, 0, "", 0, unreadable_file_problem(error))
        return whole_file, iter([row])
    return whole_file, split_lines(data, source_file, 0, 1, compressed=True)
