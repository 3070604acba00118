"""Reading deal-log/1 files into column chunks (`auditor.fast.cols.Chunk`): the log I/O of the batch engine.

`iter_chunks(paths, registry)` yields every file's records as chunks in input order: JSON Lines parsed with
orjson straight into columns (large plain files by worker processes, in byte ranges), gzip streamed, Parquet row
groups as columns (`auditor.parquet`). Records the columns cannot hold keep their parsed `Record` (the chunk's
slow rows); unreadable lines become `bad_record` rows, never an exception. The replay (`auditor.fast.pipeline`)
and the converter (`auditor.fast.convert`) read through here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal

import numpy as np

from .. import dealog
from ..dealog import (
    STREAM_ERRORS,
    LongLine,
    Record,
    next_line_start,
    open_lines,
    range_lines,
    record_from_obj,
)
from ..dealog import parse_line as _parse_line
from ..errors import InputError
from ..parquet import iter_parquet_chunks, small_file_batch, small_files_chunk
from .cols import GAMES, Chunk, ChunkBuilder, Registry

if TYPE_CHECKING:
    from concurrent.futures import Future


CHUNK_ROWS = 32768
SMALL_FILE_SHARE = 4  # a Parquet file of at most CHUNK_ROWS / this rows is read with the small files after it into
# one chunk (`iter_chunks`; issue 15, a twenty-eighth session)


# ---------------------------------------------------------------- reading


KeepAll = bool | Literal["meta"]  # as ChunkBuilder's keep_all: True keeps every field, "meta" table, time and pack


def iter_chunks(paths: list[str], reg: Registry, keep_all: KeepAll = False, rows: int | None = None,
                raw_lines: bool = False, first_index: int = 0) -> Iterator[Chunk]:
    """Every record of every file as chunks, in order. A file that cannot be read gives a chunk with one bad row
    (line None as 0), as `dealog.read_records` does. `first_index`: the file index of paths[0] (the split of
    `auditor.parts` reads its inputs one at a time). `rows`: records per chunk (default `CHUNK_ROWS`, read when
    called)."""
    if rows is None:
        rows = CHUNK_ROWS
    # small Parquet files in the layout, one after another, are read into one chunk (`parquet.small_files_chunk`)
    small: list[tuple[Any, int, str]] = []
    small_rows = 0
    coalesce = keep_all is not True  # `convert` (keep_all=True) writes a file's rows as they come

    def flush() -> Iterator[Chunk]:
        nonlocal small_rows
        if small:
            yield small_files_chunk(small, reg, keep_all)
            small.clear()
            small_rows = 0

    for fi, path in enumerate(paths, first_index):
        path = str(path)
        reg.paths.append(path)
        if path.endswith(".parquet"):
            batch = small_file_batch(path, keep_all, rows // SMALL_FILE_SHARE) if coalesce else None
            if batch is not None:
                if small and (batch.schema != small[0][0].schema or small_rows + batch.num_rows > rows):
                    yield from flush()
                small.append((batch, fi, path))
                small_rows += batch.num_rows
                continue
            yield from flush()
            yield from iter_parquet_chunks(path, fi, reg, keep_all=keep_all, rows=rows)
            continue
        yield from flush()
        if _parallel_ok(path):
            yield from _parallel_jsonl(path, fi, reg, keep_all, rows, raw_lines)
        else:
            yield from _jsonl_chunks(path, fi, reg, keep_all, rows, raw_lines)
    yield from flush()


# ---------------------------------------------------------------- JSON Lines in parallel

PARALLEL_MIN_BYTES = 64 << 20  # plain JSONL files at least this large are parsed by worker processes
SEGMENT_BYTES = 32 << 20
WORKERS = 2


def _parallel_ok(path: str) -> bool:
    try:
        if os.path.isdir(path) or os.path.getsize(path) < PARALLEL_MIN_BYTES or WORKERS < 2:
            return False
        with open(path, "rb") as f:
            return f.read(2) != GZIP_MAGIC
    except OSError:
        return False


GZIP_MAGIC = bytes([0x1F, 0x8B])
BOM = bytes([0xEF, 0xBB, 0xBF])
NL = bytes([10])


def _segments(path: str, size: int) -> list[tuple[int, int]]:
    """Byte ranges of the file that start at the beginning of a line (the next newline found a block at a time:
    a line of any length costs no memory)."""
    total = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        while cuts[-1] + size < total:
            c = next_line_start(f, cuts[-1] + size)
            if c >= total:
                break
            cuts.append(c)
    cuts.append(total)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


SegmentJob = tuple[str, int, int, int, KeepAll, int, bool]  # path, file index, start, end, keep_all, rows, raw_lines
RegistryTables = tuple[list[Any], list[Any], list[Any], list[int]]  # a worker's rs_info, lineups, sides, sides_n
SegmentResult = tuple[list[Chunk], RegistryTables, int]  # chunks, the worker's registry tables, lines read


def _parse_segment(args: SegmentJob, slim: bool = True) -> SegmentResult:
    """Worker: one byte range of a JSONL file as chunks, with line numbers counted from the range's start and
    ids from a registry of its own (the parent renumbers both). Lines are read bounded as `open_lines` reads
    them. `slim`: strip what cannot or need not travel between processes."""
    path, fi, start, end, keep_all, rows, raw_lines = args
    lines = list(range_lines(path, start, end))
    reg = Registry()
    chunks = list(_lines_chunks(lines, 1, path, fi, reg, keep_all, rows, raw_lines))
    if slim:
        for ch in chunks:  # a Deal's Rules holds a mappingproxy (not picklable): the parent resolves it again
            for rec in ch.slow.values():
                if rec.deal is not None:
                    rec.deal.ruleset = None  # type: ignore[assignment]  # in transit only: _renumber resolves it
                    rec.raw = None
                else:  # a bad record's parsed value may be nested too deep to pickle: only what its finding reads
                    rec.raw = dealog.slim_raw(rec.raw)  # looked up at call time (tests replace it)
    tables = (reg.rs_info, reg.lineups, reg.sides, reg.sides_n)
    return chunks, tables, len(lines)


def _segment_here(job: SegmentJob, reg: Registry) -> SegmentResult:
    """A segment whose worker failed, read again in this process; if even that fails, one bad_record for the
    segment (its first line), so that the rest of the file is still read."""
    path, fi, start, end = job[:4]
    try:
        return _parse_segment(job, slim=False)
    except Exception as e:  # noqa: BLE001 - the last resort of issue 12: whatever reading a segment raises (the
        # failures per line are caught in _feed_safe), the rest of the file is still read; the finding names the type
        n_lines = sum(1 for _ in range_lines(path, start, end))
        b = ChunkBuilder(Registry(), fi, path, False)
        b.add_record(Record(f"{path}:1", fi, 1, error=f"lines from byte {start} could not be read "
                                                      f"({type(e).__name__}); {n_lines} lines skipped"))
        return [b.finish()], ([], [], [], []), n_lines


def _parallel_jsonl(path: str, fi: int, reg: Registry, keep_all: KeepAll, rows: int,
                    raw_lines: bool) -> Iterator[Chunk]:
    """A large plain JSONL file: byte ranges parsed by worker processes (the 2 cores), chunks in file order. A
    segment whose worker fails or dies (a record its results cannot carry back) is read again here, and so is
    every segment after a worker died: never a lost file, never a wait on a dead worker (issue 12)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    segs = _segments(path, SEGMENT_BYTES)
    jobs: list[SegmentJob] = [(path, fi, a, b, keep_all, rows, raw_lines) for a, b in segs]
    try:
        pool = ProcessPoolExecutor(WORKERS, mp_context=mp.get_context("fork"))
    except (OSError, ValueError):
        yield from _jsonl_chunks(path, fi, reg, keep_all, rows, raw_lines)
        return
    offset = 0
    ahead = WORKERS + 1  # segments in flight: the parent holds at most this many results
    futures: list[Future[SegmentResult] | None] = []
    broken = False
    try:
        for k, job in enumerate(jobs):
            while not broken and len(futures) < k + ahead and len(futures) < len(jobs):
                try:
                    futures.append(pool.submit(_parse_segment, jobs[len(futures)]))
                except (RuntimeError, OSError):  # the pool broke (BrokenProcessPool) or cannot start a worker:
                    broken = True  # the rest is read here
            fut = futures[k] if k < len(futures) else None
            # a worker's failure of any kind (its exception, a dead worker's BrokenProcessPool, results that
            # cannot be sent back) is the future's exception: read the segment again here
            if fut is None or fut.cancelled() or fut.exception() is not None:
                chunks, tables, n_lines = _segment_here(job, reg)
            else:
                chunks, tables, n_lines = fut.result()
            futures[k:k + 1] = [None] if k < len(futures) else []
            rs, sd = _id_maps(tables, reg)
            for ch in chunks:
                _renumber(ch, (rs, _lineup_map(tables[1], ch.lineup, reg), sd), offset, reg)
                yield ch
            offset += n_lines
    finally:
        for f in futures:
            if f is not None:
                f.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _id_maps(tables: RegistryTables, reg: Registry) -> tuple[np.ndarray, np.ndarray]:
    """A worker's ruleset and sides ids in the parent's terms (each with a final -1 for index -1)."""
    rs_info, _lineups, sides, sides_n = tables
    rs = np.array([reg.ruleset_id(GAMES[g], preset, opts) for g, preset, opts in rs_info] + [-1], np.int32)
    sd = np.array([reg.sides_id(x, k) for x, k in zip(sides, sides_n, strict=True)] + [-1], np.int32)
    return rs, sd


def _lineup_map(lineups: list[Any], codes: np.ndarray, reg: Registry) -> np.ndarray:
    """The parent's ids of the worker's line-ups that one chunk uses (`codes`; the others and index -1 map to -1),
    taken when the chunk is given: a consumer may forget the line-ups of the chunks it has handled
    (`Registry.forget_lineups`, the split), so ids taken for the whole segment at once would point into the
    forgotten list for its later chunks (an IndexError, or another table's players)."""
    lu = np.full(len(lineups) + 1, -1, np.int32)
    for c in np.unique(codes[codes >= 0]).tolist():
        lu[c] = reg.lineup_id(lineups[c])
    return lu


def _renumber(ch: Chunk, maps: tuple[np.ndarray, np.ndarray, np.ndarray], offset: int, reg: Registry) -> None:
    """A worker's chunk in the parent's terms: its ruleset, line-up and sides ids, and line numbers."""
    rs, lu, sd = maps
    ch.rset = rs[ch.rset]  # -1 (slow rows) picks the final -1
    ch.lineup = lu[ch.lineup]
    ch.sides = sd[ch.sides]
    for rec in ch.slow.values():
        d = rec.deal
        if d is not None and d.ruleset is None:
            d.ruleset = reg.rulesets[reg.ruleset_id(d.game, d.rules, d.options)]
    if offset:
        ch.line = ch.line + offset
        for rec in ch.slow.values():
            if rec.line is not None:
                rec.line += offset
                rec.source = f"{ch.path}:{rec.line}"
                if rec.deal is not None:
                    rec.deal.line = rec.line
                    rec.deal.source = rec.source


def _jsonl_chunks(path: str, fi: int, reg: Registry, keep_all: KeepAll, rows: int, raw_lines: bool) -> Iterator[Chunk]:
    """JSON Lines as chunks. The garbage collector is paused while a chunk is built: the rows are tuples of
    numbers and strings (no cycles), and a collector pass over a growing chunk costs more than parsing it."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield from _jsonl_chunks_gc(path, fi, reg, keep_all, rows, raw_lines)
    finally:
        if was:
            gc.enable()


def _jsonl_chunks_gc(path: str, fi: int, reg: Registry, keep_all: KeepAll, rows: int,
                     raw_lines: bool) -> Iterator[Chunk]:
    import orjson

    loads = orjson.loads
    b = ChunkBuilder(reg, fi, path, keep_all)
    lineno = 0
    try:
        for lineno, raw in enumerate(open_lines(path), 1):  # the reader's own line splitting (and gzip handling)
            _feed_safe(b, raw, lineno, path, fi, reg, raw_lines, loads)
            if b.rows >= rows:
                yield b.finish()
                b = ChunkBuilder(reg, fi, path, keep_all)
    except InputError as e:
        _add_slow(b, Record(source=path, file_index=fi, line=None, error=str(e).removeprefix(f"{path}: ")), reg)
    except STREAM_ERRORS as e:
        msg = f"unreadable after line {lineno}: {e}"
        _add_slow(b, Record(source=f"{path}:{lineno + 1}", file_index=fi, line=lineno + 1, error=msg), reg)
    if b.rows:
        yield b.finish()


def _feed_safe(b: ChunkBuilder, raw: bytes | LongLine, lineno: int, path: str, fi: int, reg: Registry,
               raw_lines: bool, loads: Callable[[bytes | str], Any], tried: bool = False) -> None:
    """`_feed`, and a line that still makes it fail is a bad record with a short message (issue 12: one record
    must never stop the reading of a file)."""
    rows = b.rows
    try:
        _feed(b, raw, lineno, path, fi, reg, raw_lines, loads, tried)
    except Exception as e:  # noqa: BLE001 - issue 12: no record, however hostile (nesting, sizes, types), stops the
        # reading of a file; it becomes a bad record naming the exception's type
        if b.rows == rows:
            _add_slow(b, Record(f"{path}:{lineno}", fi, lineno, error=f"cannot be read ({type(e).__name__})"), reg)


def _feed(b: ChunkBuilder, raw: bytes | LongLine, lineno: int, path: str, fi: int, reg: Registry, raw_lines: bool,
          loads: Callable[[bytes | str], Any], tried: bool = False) -> None:
    """One line into the chunk being built: as columns when it can, else as a slow row (valid or bad).
    `tried`: the caller already tried `add_line` on it. A `LongLine` (longer than the record-size limit) is a
    bad record."""
    if isinstance(raw, LongLine):
        _add_slow(b, Record(f"{path}:{lineno}", fi, lineno, error=raw.message()), reg)
        return
    if lineno == 1 and raw.startswith(BOM):
        raw = raw[3:]  # a UTF-8 byte-order mark (dealog._parse_line skips it too)
        tried = False
    if not raw.strip():
        return
    if not tried and b.add_line(raw, lineno):
        return
    try:
        obj = loads(raw)
    except ValueError:  # orjson.JSONDecodeError (a ValueError): bad JSON, bad UTF-8, nesting past its limit
        for rec in _parse_line(raw, path, fi, lineno, loads):
            _add_slow(b, rec, reg)
            if raw_lines:
                b.raw_line[b.rows - 1] = raw
        return
    if not b.add_obj(obj, lineno, keep=raw):
        _add_slow(b, record_from_obj(obj, f"{path}:{lineno}", fi, lineno), reg)
        if raw_lines:
            b.raw_line[b.rows - 1] = raw


def _lines_chunks(lines: list[bytes | LongLine], first: int, path: str, fi: int, reg: Registry, keep_all: KeepAll,
                  rows: int, raw_lines: bool) -> Iterator[Chunk]:
    """Lines already read (numbered from `first`) as chunks; the garbage collector paused as in _jsonl_chunks."""
    import gc

    import orjson

    was = gc.isenabled()
    gc.disable()
    try:
        b = ChunkBuilder(reg, fi, path, keep_all)
        add_line = b.add_line
        loads = orjson.loads
        for k, raw in enumerate(lines, first):
            if k == 1 or type(raw) is not bytes:  # the byte-order-mark check in _feed; a LongLine
                _feed_safe(b, raw, k, path, fi, reg, raw_lines, loads)
            elif not add_line(raw, k):
                _feed_safe(b, raw, k, path, fi, reg, raw_lines, loads, tried=True)
            if b.rows >= rows:
                yield b.finish()
                b = ChunkBuilder(reg, fi, path, keep_all)
                add_line = b.add_line
        if b.rows:
            yield b.finish()
    finally:
        if was:
            gc.enable()


def _add_slow(b: ChunkBuilder, rec: Record, reg: Registry) -> None:
    b.add_record(rec)
