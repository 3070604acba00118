"""Reading and writing deal-log/1: streaming, lenient spellings in, canonical out.

`read_records(paths)` yields one `Record` per line that is not blank: either a validated `Deal` or the reason the
line is a `bad_record`. Nothing is dropped: a file that cannot be opened yields one Record with `line=None`. A
`.parquet` input is read by `auditor.parquet`.

This module reads the bytes (plain or gzip, in bounded memory) and writes canonical JSON Lines; what a record is
(`Deal`, `Record`, `validate`, one line to one record) lives in `auditor.logparse`, under this module, the column
builder and the Parquet reader alike, and is re-exported here: `from auditor.dealog import Deal, read_records`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable, Iterator
from io import BufferedReader
from typing import Any

import orjson

from . import parquet
from .errors import AuditorError, InputError
from .logparse import (
    FIELD_ORDER,
    FORMAT,
    GAME_ALIASES,
    KNOWN_FIELDS,
    Deal,
    Record,
    check_input,
    check_record,
    json_loader,
    norm_name,
    open_input,
    parse_line,
    record_from_obj,
    slim_raw,
    validate,
)

__all__ = [
    "FIELD_ORDER", "FORMAT", "GAME_ALIASES", "KNOWN_FIELDS", "MAX_RECORD_BYTES", "STREAM_ERRORS", "Deal", "LongLine",
    "Record", "StreamError", "check_input", "check_record", "dumps_canonical", "json_loader", "next_line_start",
    "norm_name", "open_input", "open_lines", "parse_line", "range_lines", "read_records", "record_from_obj",
    "set_max_record_bytes", "slim_raw", "validate", "write_jsonl",
]

# ---------------------------------------------------------------- reading


class StreamError(AuditorError):
    """A file that breaks off or turns out corrupt after some complete lines (a truncated or damaged .gz)."""


STREAM_ERRORS = (StreamError, OSError, EOFError, gzip.BadGzipFile, zlib.error)

MAX_RECORD_BYTES = 1 << 20
"""The longest line read as a record (bytes, not counting its newline): a longer one is a `bad_record`, skipped
in bounded memory. `auditor replay/audit --max-record-bytes` sets it (`set_max_record_bytes`)."""

_READ = 1 << 16  # compressed bytes read at a time; also the step a too-long line is skipped by
_INFLATE = 1 << 18  # the most bytes one decompression step may give (a gzip bomb inflates no further)


def set_max_record_bytes(n: int) -> None:
    """Set the record-size limit for every reader of this process (and the worker processes it forks)."""
    global MAX_RECORD_BYTES
    if n < 1:
        raise ValueError(f"the record-size limit must be at least 1 byte, got {n}")
    MAX_RECORD_BYTES = int(n)


class LongLine:
    """What `open_lines` yields for a line longer than the record-size limit: its length only (the line itself
    was skipped, never held in memory)."""

    __slots__ = ("size", "limit")

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit

    def message(self) -> str:
        return (f"line of {self.size} bytes is longer than the record-size limit ({self.limit} bytes, "
                f"--max-record-bytes): skipped")


def open_lines(path: str, max_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The raw lines of a JSON Lines file, plain or gzip (by its magic bytes; several gzip members allowed).

    Memory stays bounded whatever the file holds: a line longer than `max_bytes` (default `MAX_RECORD_BYTES`) is
    skipped to its newline without being kept and comes out as a `LongLine`; gzip is inflated a bounded block at
    a time. Raises `InputError` when the file cannot be opened at all (missing, a directory, a FIFO or device, a
    symlink loop, no permission), and one of `STREAM_ERRORS` after the last complete line when a compressed
    stream is truncated or corrupt: every line before the damage is yielded first."""
    limit = MAX_RECORD_BYTES if max_bytes is None else max_bytes
    raw = open_input(path)
    with raw:
        head = raw.read(2)
        raw.seek(0)
        if head == b"\x1f\x8b":
            yield from _block_lines(_gzip_blocks(raw), limit)
        else:
            yield from _plain_lines(raw, limit)


def _plain_lines(f: BufferedReader, limit: int, end: int | None = None) -> Iterator[bytes | LongLine]:
    """Lines of a plain file (up to byte offset `end` when given, which must be the start of a line)."""
    readline = f.readline
    cap = limit + 1
    bounded = end is not None
    left = end - f.tell() if end is not None else 0  # bytes to the end of the range
    while not bounded or left > 0:
        line = readline(cap)
        if not line:
            return
        left -= len(line)
        if len(line) < cap or line[-1] == 10:
            yield line
            continue
        size = len(line)  # too long: skipped a block at a time
        while True:
            part = readline(_READ)
            if not part:
                break
            left -= len(part)
            size += len(part)
            if part[-1] == 10:
                size -= 1
                break
        yield LongLine(size, limit)


def range_lines(path: str, start: int, end: int, max_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The lines of bytes [start, end) of a plain file, `start` and `end` at line starts (the parallel reader)."""
    limit = MAX_RECORD_BYTES if max_bytes is None else max_bytes
    with open_input(path) as f:
        f.seek(start)
        yield from _plain_lines(f, limit, end)


def next_line_start(f: BufferedReader, pos: int) -> int:
    """The offset just after the first newline at or after `pos` (the file's size when there is none), found a
    block at a time."""
    f.seek(pos)
    while True:
        block = f.read(_READ)
        if not block:
            return f.tell()
        j = block.find(b"\n")
        if j >= 0:
            return pos + j + 1
        pos += len(block)


def _gzip_blocks(raw: BufferedReader) -> Iterator[bytes]:
    """A gzip stream (several members, zero padding) inflated at most `_INFLATE` bytes at a time, so that a
    gzip bomb never sits whole in memory. On damage, every byte that inflates before it is given first (the
    block is inflated again byte by byte from a copy of the state), then `StreamError` is raised."""
    d = zlib.decompressobj(wbits=31)
    fed = False  # the current member has had input
    while True:
        chunk = raw.read(_READ)
        if not chunk:
            break
        while chunk:
            if not fed and not chunk.strip(b"\x00"):
                break  # zero padding after the last member
            fed = True
            saved = d.copy()
            try:
                data = d.decompress(chunk, _INFLATE)
            except zlib.error as e:
                yield from _inflate_to_damage(saved, chunk)
                raise StreamError(f"corrupt compressed data ({e})") from None
            if data:
                yield data
            if d.eof:
                chunk = d.unused_data
                d = zlib.decompressobj(wbits=31)
                fed = False
            else:
                chunk = d.unconsumed_tail
    while fed and not d.eof:  # output still held back by the inflate step limit
        try:
            data = d.decompress(d.unconsumed_tail, _INFLATE)
        except zlib.error as e:
            raise StreamError(f"corrupt compressed data ({e})") from None
        if not data:
            break
        yield data
    if fed and not d.eof:
        raise StreamError("the compressed file ends early (truncated)")


def _inflate_to_damage(d: zlib._Decompress, chunk: bytes) -> Iterator[bytes]:
    """What `chunk` inflates to, byte by byte, up to the byte where the stream turns out damaged."""
    for k in range(len(chunk)):
        tail = chunk[k:k + 1]
        while tail:
            try:
                data = d.decompress(tail, _INFLATE)
            except zlib.error:
                return
            if data:
                yield data
            if d.eof:
                return  # a member ended cleanly inside the damaged block: the damage is in what follows
            tail = d.unconsumed_tail


def _block_lines(blocks: Iterator[bytes], limit: int) -> Iterator[bytes | LongLine]:
    """Lines of a stream given in blocks; a line longer than `limit` is dropped as it grows (a `LongLine`)."""
    pending: list[bytes] = []
    plen = 0
    skipping = -1  # >= 0: bytes of a too-long line skipped so far
    for data in blocks:
        start = 0
        if skipping >= 0:
            j = data.find(b"\n")
            if j < 0:
                skipping += len(data)
                continue
            yield LongLine(skipping + j, limit)
            skipping = -1
            start = j + 1
        while True:
            j = data.find(b"\n", start)
            if j < 0:
                break
            if pending:
                if plen + j - start > limit:
                    yield LongLine(plen + j - start, limit)
                else:
                    pending.append(data[start:j + 1])
                    yield b"".join(pending)
                pending = []
                plen = 0
            elif j - start > limit:
                yield LongLine(j - start, limit)
            else:
                yield data[start:j + 1]
            start = j + 1
        if start < len(data):
            plen += len(data) - start
            if plen > limit:
                skipping = plen
                pending = []
                plen = 0
            else:
                pending.append(data[start:])
    if skipping >= 0:
        yield LongLine(skipping, limit)
    elif pending:
        yield b"".join(pending)


def read_records(paths: Iterable[str], warn: Callable[[str], object] | None = None) -> Iterator[Record]:
    """Every record of every file, in order. Files that cannot be read give one Record with `line=None`; a
    compressed file that breaks off gives one Record at the line after its last complete line. `warn`, if given,
    is called with a one-line message ("path:line: ...") for a file that breaks off."""
    loads = json_loader()
    for fi, path in enumerate(paths):
        if str(path).endswith(".parquet"):
            yield from parquet.read_records(path, fi)
            continue
        lineno = 0
        try:
            for lineno, raw in enumerate(open_lines(path), 1):
                if isinstance(raw, LongLine):
                    yield Record(f"{path}:{lineno}", fi, lineno, error=raw.message())
                    continue
                yield from parse_line(raw, path, fi, lineno, loads)
        except InputError as e:
            yield Record(source=path, file_index=fi, line=None, error=str(e).removeprefix(f"{path}: "))
        except STREAM_ERRORS as e:
            msg = f"unreadable after line {lineno}: {e}"
            if warn is not None:
                warn(f"{path}:{lineno + 1}: {msg}")
            yield Record(source=f"{path}:{lineno + 1}", file_index=fi, line=lineno + 1, error=msg)


# ---------------------------------------------------------------- writing


def dumps_canonical(obj: dict[str, Any]) -> bytes:
    """One record as compact JSON (UTF-8, keys in the order given)."""
    return orjson.dumps(obj)


def write_jsonl(objs: Iterable[dict[str, Any]], path: str) -> int:
    """Write canonical records (dicts in canonical key order) as JSON Lines, gzip when the name ends in .gz."""
    count = 0
    raw = open(path, "wb")
    # mtime=0 and no file name in the gzip header: the same records give byte-identical files
    f = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if str(path).endswith(".gz") else raw
    with raw, f:
        for obj in objs:
            f.write(dumps_canonical(obj))
            f.write(b"\n")
            count += 1
    return count
