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
import io
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

UTF8_BOM = b"\xef\xbb\xbf"
# The fingerprint hashes the first and the last FINGERPRINT_WINDOW bytes of the ingested prefix
# (plus its length): bounded reads however large the file, and it covers both the start of the
# file (a rewrite usually changes it) and the bytes just before the resume point.
FINGERPRINT_WINDOW = 64 * 1024
# A landing file is read in blocks of this size (a Python worker holds one block and one Arrow
# batch of lines, whatever the size of the file: a whole 315 MB file held at once took the driver
# past 4 GiB).
READ_BLOCK_BYTES = 8 * 1024 * 1024


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


def unreadable_file_problem(error: BaseException) -> str:
    return (
        f"file cannot be read as gzip ({type(error).__name__}: {error}); no line of it is ingested"
    )


def failed_read_problem(error: BaseException) -> str:
    return (
        f"file cannot be read ({type(error).__name__}: {error}); the lines before this row are "
        "ingested, the rest is read again once the file changes"
    )


class _PrefixWindows:
    """The head and tail windows of a growing prefix ``[0, length)`` of a file: what
    :func:`fingerprint` hashes, kept while the prefix is streamed instead of held whole."""

    def __init__(self, head: bytes = b"", tail: bytes = b"", length: int = 0) -> None:
        self.head, self.tail, self.length = head, tail, length

    @classmethod
    def before(cls, handle: BinaryIO, offset: int) -> _PrefixWindows:
        """The windows of ``[0, offset)`` of an open file (at most two window-sized reads)."""
        handle.seek(0)
        head = handle.read(min(offset, FINGERPRINT_WINDOW))
        tail_start = max(0, offset - FINGERPRINT_WINDOW)
        handle.seek(tail_start)
        tail = handle.read(offset - tail_start)
        return cls(head, tail, offset)

    def extend(self, data: bytes) -> None:
        if len(self.head) < FINGERPRINT_WINDOW:
            self.head += data[: FINGERPRINT_WINDOW - len(self.head)]
        self.tail = (self.tail + data[-FINGERPRINT_WINDOW:])[-FINGERPRINT_WINDOW:]
        self.length += len(data)

    def fingerprint(self) -> str:
        return _fingerprint_of(self.length, self.head, self.tail)


class _WindowedReader(io.RawIOBase):
    """A read-only stream over ``raw`` that keeps the windows of every byte read through it (the
    fingerprint of a compressed file covers its compressed bytes, read once through gzip)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self.raw = raw
        self.windows = _PrefixWindows()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.windows.extend(data)
        return len(data)

    def drain(self, block_bytes: int) -> None:
        while self.read(block_bytes):
            pass


def _blocks(read: Callable[[int], bytes], block_bytes: int, limit: int | None) -> Iterator[bytes]:
    """``read`` in blocks of at most ``block_bytes``, stopping after ``limit`` bytes (a plain
    file may have grown since it was planned) or at the end of the stream."""
    remaining = limit
    while remaining is None or remaining > 0:
        block = read(block_bytes if remaining is None else min(block_bytes, remaining))
        if not block:
            return
        if remaining is not None:
            remaining -= len(block)
        yield block


def _line_runs(blocks: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    """(run, complete) pairs: runs of whole lines, each ending in a newline, cut from ``blocks``;
    then the bytes after the last newline (an unterminated last line) with ``complete`` False.
    A line longer than a block is carried over as pieces and joined once (no quadratic copy)."""
    carried: list[bytes] = []
    for block in blocks:
        cut = block.rfind(b"\n")
        if cut < 0:
            carried.append(block)
            continue
        carried.append(block[: cut + 1])
        yield b"".join(carried), True
        carried = [block[cut + 1 :]]
    yield b"".join(carried), False


def binary_opener(path: Path) -> Callable[[], BinaryIO]:
    """What :class:`FileLines` opens a landing file with."""
    return lambda: path.open("rb")


class FileLines:
    """The lines of one planned read of a landing file, streamed in blocks of ``block_bytes``:
    memory is bounded by a block and the longest line, not by the size of the file.

    Iterate it once. A plain file is read over ``[start_offset, size_bound)`` (it may have grown
    since it was planned) and stops at the last complete line; a compressed file is read whole,
    first to check that it decompresses (a corrupt file lands one row with its ``read_problem``
    and no line, as a torn gzip usually fails only at its end), then for its lines. Afterwards
    ``fingerprint`` is the fingerprint of what the read covers: a plain file's prefix up to its
    last complete line, a compressed file's bytes.
    """

    def __init__(
        self,
        open_file: Callable[[], BinaryIO],
        source_file: str,
        compressed: bool,
        start_offset: int,
        size_bound: int,
        first_line_number: int,
        block_bytes: int = READ_BLOCK_BYTES,
    ) -> None:
        self._open = open_file
        self.block_bytes = block_bytes
        self.source_file = source_file
        self.compressed = compressed
        self.start_offset = start_offset
        self.size_bound = size_bound
        self.first_line_number = first_line_number
        self.fingerprint: str | None = None

    def __iter__(self) -> Iterator[LandingLine]:
        return self._compressed_lines() if self.compressed else self._plain_lines()

    def _problem_row(self, problem: str, line_number: int = 0, offset: int = 0) -> LandingLine:
        return LandingLine(self.source_file, line_number, offset, "", 0, problem)

    def _plain_lines(self) -> Iterator[LandingLine]:
        offset, number = self.start_offset, self.first_line_number
        try:
            with self._open() as handle:
                windows = _PrefixWindows.before(handle, self.start_offset)
                handle.seek(self.start_offset)
                for run, complete in _line_runs(
                    _blocks(handle.read, self.block_bytes, self.size_bound - self.start_offset)
                ):
                    if not complete:
                        break  # an incomplete last line: the next run reads it whole
                    lines = list(split_lines(run, self.source_file, offset, number, False))
                    windows.extend(run)
                    self.fingerprint = windows.fingerprint()
                    offset += len(run)
                    number += len(lines)
                    yield from lines
        except OSError as error:
            yield self._problem_row(failed_read_problem(error), 0, offset)
            return

    def _compressed_lines(self) -> Iterator[LandingLine]:
        try:
            with self._open() as raw:
                counted = _WindowedReader(raw)
                try:
                    with gzip.GzipFile(fileobj=counted) as stream:
                        for _ in _blocks(stream.read, self.block_bytes, None):
                            pass
                except (OSError, EOFError, zlib.error) as error:  # BadGzipFile is an OSError
                    counted.drain(self.block_bytes)
                    self.fingerprint = counted.windows.fingerprint()
                    yield self._problem_row(unreadable_file_problem(error))
                    return
                self.fingerprint = counted.windows.fingerprint()
            with self._open() as raw, gzip.GzipFile(fileobj=raw) as stream:
                offset, number = 0, 1
                for run, _ in _line_runs(_blocks(stream.read, self.block_bytes, None)):
                    lines = list(split_lines(run, self.source_file, offset, number, True))
                    offset += len(run)
                    number += len(lines)
                    yield from lines
        except (OSError, EOFError, zlib.error) as error:
            yield self._problem_row(failed_read_problem(error))
