"""A large input as parts of whole tables: split once, replay each part on its own, merge the replays (issue 15).

API (what the audit's orchestration calls)::

    parts = split_input(paths, workdir, part_deals, selection=None, progress=None)   # -> Parts
    for k in range(len(parts)):                                  # any order, any process (workdir is shared)
        rep = replay_part(parts, k, table=True)                  # -> PartReplay (a Replay) with its table
        ... count the detectors on rep.table, then drop it: rep.table = None ...
    merged = merge_replays([rep_0, rep_1, ...])                  # -> Replay, no table
    parts.cleanup()                                              # removes the spill files (not workdir itself)

- `split_input` reads every input once (the files, or the audit's `Selection` when it is active) and spills each row
  to one of `buckets` hash buckets of its table (`zlib.crc32` of the table name; records that are not deals, having
  no table, go to bucket 0), as Arrow IPC streams in `workdir` (`bucket-<b>.arrows`): the project's Parquet layout
  with its dictionary columns as plain strings, plus private columns: the row's ORIGINAL file index and line, its
  source when it is not "path:line", what a bad record's finding says, and its table's unit (`_u`: `unit_of`, the
  crc32 of which the bucket is the remainder; LOOSE for the records of no table's deal). A Parquet input in the
  layout is spilled as it is read, record batch by record batch (`parquet.iter_parquet_batches`: hive partition
  values included), never rebuilt from a chunk: each row's unit and bucket come from the `table` dictionary (crc32
  per value, then the codes), and SPILL_ROWS rows at a time are sorted by bucket with one `take` and written as one
  record batch per bucket. Other inputs (JSON Lines, a selection, a table of records, a file-level error) go through
  the vectorised `parquet.chunk_to_table` of their chunks. Units (tables, not buckets: two tables of one bucket can
  go to two parts, each reading only its own rows of the bucket's file) are grouped into parts of at most
  `part_deals` deals, of about equal work (`_grouped`: a deal's work is WORK_BASE plus its players; the number of
  parts is even, and they come the most work first, since they run two at a time; a table is never cut: a table
  larger than `part_deals` is a part of its own size),
  so the parts depend only on the input and `part_deals`, never on a number of workers. The audit splits an input of
  Parquet files in the layout of `HELPER_MIN_ROWS` rows or more in two processes (`helper`): this one takes the row
  groups before the one nearest the middle row, a process from the fork server the rest, each into bucket files of
  its own (`bucket-<b>.1.arrows` for the second); a part reads a bucket's files in that order, so it reads the rows
  of one pass in the same order (a piece that meets a damaged or refused file: the whole split again in one pass).
  If the input has at most
  `part_deals` records (known from Parquet metadata and line counts before reading, else after the pass),
  nothing is spilled: `parts.single` is true, the one part is the original paths, and `replay_part(parts, 0)` is
  today's `replay_paths` (byte for byte today's document; the caller may also just take today's path).
- Every table's number of deals is recorded (`table_deals`) and its global canonical offset computed
  (`table_offset`: tables in `columns.natural_key` order, offset = deals of the tables before it).
- `replay_part(parts, k)` replays part k through the batch pipeline (`fast.pipeline.replay_paths` with its
  `chunks=` hook) reading the spill files back (a bucket's small record batches joined to about CHUNK_ROWS rows,
  the string columns encoded again, each batch judged by `parquet.batch_chunk` as a Parquet input's rows are on
  the direct run) as chunks of the original file index and lines, so findings and
  sources ("path:line") are the direct run's. The table's `order` is the deal's rank in the canonical order of the
  WHOLE input (`table_offset[table]` + rank inside its table): every detector sees the same keys as on the direct
  run. The part's games summary is written to `workdir` as it is produced (`games-<k>.arrows`), sorted by each
  game's first deal (file index, line); the replay holds only a handle to it (`PartGames`). So are its findings
  (`findings-<k>.arrows`, sorted by their record's file index and line: `PartFindings`).
- `merge_replays(replays)` gives the direct run's `Replay` (without table): findings in the direct order (file
  index, line, then the part's own order, which is the direct one within a deal) as `MergedFindings` (streamed
  from the parts' files like the games; the document writers splice them in), the games summary in the direct
  order (first appearance among valid deals) as `MergedGames` (streamed from the parts' files, never a Python
  object per game held: `json_pieces()` yields the document's games entries block by block), stats summed. Its
  `to_json()` / `to_json_bytes()` equal the direct `replay_paths(paths)` ones. A single replay that is not a
  `PartReplay` (the single-part case) is returned as it is.

Known limits (documented in decisions): a game id logged at two tables is chained per part (games are per table in
practice); an input that names the same file twice, or a line holding several records of different tables, is
ordered by (file index, line) only, so such an input is taken as a single part (`single`) when its paths repeat.
The workdir must be shared by every process that replays a part (a Dask cluster: a shared filesystem).
"""

from __future__ import annotations

import heapq
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import orjson

from .columns import AuditColumns, natural_key, natural_order
from .fast.arrow import Arrow, i32, i64, lstr, to_numpy, u32
from .fast.cols import Chunk, DictColumn, Registry
from .fast.pipeline import replay_paths
from .fast.read import CHUNK_ROWS, iter_chunks
from .findings import Finding
from .logparse import Record
from .parquet import (batch_chunk, chunk_to_table, hive_values, is_records_table, iter_parquet_batches,
                      layout_problem, schema)
from .pools import call_in_fresh_process, fresh_context, stop_children
from .replay.chain import GameSummary
from .replay.result import Replay, entry_bytes
from .select import Selection, selected_chunks

DEFAULT_BUCKETS = 256
SPILL_ROWS = 65536  # rows gathered before they are sorted by bucket and written (bounds the split's memory)
HELPER_MIN_ROWS = 2_000_000  # an input of Parquet files in the layout of at least this many rows is split by two
# processes: this one and one from the fork server (which is ready about 2 s after the audit starts it; below this
# the split takes a few seconds and the second process would mostly wait for it)
WORK_BASE = 5  # a deal's work, for sharing it out evenly among the parts: this plus its players. Per deal, a part's
# replay and counts of the 1M bench season took (2 cores): All Fours at 2 35 us, at 4 43; Scotch Whist at 4 39, at
# 5 51, at 6 50-55; which 5 + players follows to about 15%, All Fours at 3 (63 us) the one far off. Only the balance
# depends on it, never a result.
PART_MULTIPLE = 2  # more than one part: a multiple of this many (the audit runs its parts two at a time,
# `audit.PARTS_AT_ONCE`: five parts of equal cost take three rounds, six take three rounds of smaller parts)
SPILL_COMPRESSION: str | None = None  # of the spill files' buffers ("lz4": some 60% of the size, more CPU)
GAMES_BLOCK = 65536  # games per block when games entries are merged from in-memory lists
ENTRY_BATCH = 2048  # entries per block of a part's entries file: the document's writer holds one block of each part
# (issue 15: blocks of 65,536 entries, some 15 MB each, made 0.7 GB over the 56 parts of a 10M audit)

_PRIVATE = ("_fi", "_line", "_src", "_bad", "_u")
LOOSE = 0  # the unit of the records that are not a table's deal (bad records, score sheets read the slow way)


def unit_of(table: str) -> int:
    """A table's unit: crc32 of its UTF-8 name (stable across runs and machines). The parts are made of units, so
    two tables of one bucket can go to two parts; two tables of one crc32 are one unit."""
    return zlib.crc32(table.encode("utf-8", "surrogatepass"))


def bucket_of(table: str, buckets: int) -> int:
    """The hash bucket of a table: its unit modulo the number of buckets (one spill file per bucket)."""
    return unit_of(table) % buckets


@dataclass
class Parts:
    """The parts of an input (module docstring). Plain data: it travels to workers as it is."""

    paths: list[str]
    workdir: str | None
    part_deals: int
    buckets: int
    parts: list[list[int]]  # the units of each part (`unit_of` its tables; LOOSE for the records of no table), in
    # the order their rows are read: by bucket (unit % buckets), then unit (empty when single)
    table_deals: dict[str, int] = field(default_factory=dict)  # every table's number of deals (valid records)
    table_offset: dict[str, int] = field(default_factory=dict)  # its first deal's rank in the canonical order
    table_work: dict[str, int] = field(default_factory=dict)  # its deals' work (WORK_BASE + players each): `_grouped`
    records: int = 0  # records read by the split (0 when single without reading)
    single: bool = False
    selection: Selection | None = None
    # the detectors whose counts each part writes to `workdir/counts` itself, by name, with their groups of
    # subjects (`audit.SpilledCounts`; set by the audit when it holds them out of memory, else empty)
    count_spill: dict[str, int] = field(default_factory=dict)
    # the pieces of the input split by processes of their own, each into its own bucket files (`split_input`'s
    # `helper`): a bucket's rows are those of piece 0, then piece 1 (input order)
    pieces: int = 1

    def __len__(self) -> int:
        return 1 if self.single else len(self.parts)

    def bucket_path(self, b: int, piece: int = 0) -> str:
        assert self.workdir is not None
        return os.path.join(self.workdir, f"bucket-{b:04d}.arrows" if piece == 0 else f"bucket-{b:04d}.{piece}.arrows")

    def games_path(self, k: int) -> str:
        assert self.workdir is not None
        return os.path.join(self.workdir, f"games-{k:04d}.arrows")

    def findings_path(self, k: int) -> str:
        assert self.workdir is not None
        return os.path.join(self.workdir, f"findings-{k:04d}.arrows")

    def files(self, kinds: tuple[str, ...] = ("bucket-", "games-", "findings-")) -> list[str]:
        """The files of these kinds this split and its parts made in `workdir`, in name order: the bucket files
        (the split's copy of the input, which only the parts read), the parts' games and findings."""
        if self.workdir is None:
            return []
        return [os.path.join(self.workdir, name) for name in sorted(os.listdir(self.workdir))
                if name.startswith(kinds) and name.endswith(".arrows")]

    def cleanup(self) -> None:
        """Remove the spill and games files this split made (the workdir itself is the caller's)."""
        for path in self.files():
            try:
                os.remove(path)
            except OSError:
                pass


# ---------------------------------------------------------------- the split


def _known_rows(paths: list[str]) -> int | None:
    """An upper bound of the records of the inputs without parsing them (Parquet metadata; newlines of plain JSON
    Lines), or None when some file cannot be counted so (gzip, unreadable)."""
    total = 0
    for p in paths:
        try:
            if p.endswith(".parquet"):
                import pyarrow.parquet as pq

                total += pq.ParquetFile(p).metadata.num_rows
                continue
            with open(p, "rb") as f:
                head = f.read(2)
                if head == b"\x1f\x8b":
                    return None
                n = head.count(b"\n")
                last = head[-1:]
                while True:
                    block = f.read(1 << 22)
                    if not block:
                        break
                    n += block.count(b"\n")
                    last = block[-1:]
                total += n + (1 if last and last != b"\n" else 0)
        except Exception:  # noqa: BLE001 - any doubt: count by reading (the reader reports the problem)
            return None
    return total


def _row_tables(ch: Chunk) -> tuple[np.ndarray, list[str]]:
    """Each row's table as a code into names (-1: a bad record, no table)."""
    n = ch.n
    names: list[str] = []
    codes = np.full(n, -1, np.int64)
    t = ch.table
    if isinstance(t, DictColumn):
        names = [v if v is not None else "" for v in t.values]
        codes[:] = t.codes
    elif t is not None:
        pos: dict[str, int] = {}
        for i, v in enumerate(t):
            if v is None:
                continue
            j = pos.get(v)
            if j is None:
                j = pos[v] = len(names)
                names.append(v)
            codes[i] = j
    codes[ch.status != 0] = -1
    if ch.slow:
        pos2 = {v: j for j, v in enumerate(names)}
        for i, rec in ch.slow.items():
            if rec.deal is None:
                continue
            v = rec.deal.table
            j = pos2.get(v)
            if j is None:
                j = pos2[v] = len(names)
                names.append(v)
            codes[i] = j
    return codes, names


def spill_schema() -> Arrow:
    """The spill files' schema: the project's Parquet layout with its dictionary columns as plain strings (a
    bucket's rows come from many record batches, each with its own dictionaries; the reader encodes them again),
    plus the private columns."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f for f in schema()]
    for name, typ in (("_fi", pa.int32()), ("_line", pa.int64()), ("_src", pa.string()), ("_bad", pa.string()),
                      ("_u", pa.uint32())):
        fields.append(pa.field(name, typ))
    return pa.schema(fields, metadata={"auditor.spill": "3"})


def _row_schema() -> Arrow:
    """The spill schema without `_u` (which `_Spill` adds when it writes the rows out)."""
    sch = spill_schema()
    return sch.remove(sch.get_field_index("_u"))


def _bad_text(rec: Record) -> str:
    """What a bad record's finding needs (its error, line, and the game_id/deal_no it shows), as JSON text."""
    raw = rec.raw if isinstance(rec.raw, dict) else {}
    keep = {k: raw[k] for k in ("game_id", "deal_no") if k in raw}
    try:
        kept = orjson.dumps(keep).decode()
    except TypeError:  # a deal_no past 64 bits: bad_record_finding drops it as not an int anyway
        kept = orjson.dumps({k: v for k, v in keep.items() if k == "game_id"}).decode()
    return orjson.dumps({"error": rec.error, "line": rec.line}).decode()[:-1] + ',"raw":' + kept + "}"


def _as_spill(cols: dict[str, Arrow], n: int, fi: int, line: np.ndarray, src: list[str | None] | None,
              bad: list[str | None] | None) -> Arrow:
    """A record batch of the spill schema from layout columns by name (a missing one is null; dictionary columns
    decoded; another type cast, which may raise) and the private columns but `_u`."""
    import pyarrow as pa

    sch = _row_schema()
    arrays = []
    for f in sch:
        if f.name == "_fi":  # (not pa.array: its first call imports pandas, 0.2 s of the split; issue 15)
            arrays.append(i32(np.full(n, fi, np.int32)))
        elif f.name == "_line":
            arrays.append(i64(line))
        elif f.name in ("_src", "_bad"):
            vals = src if f.name == "_src" else bad
            arrays.append(pa.nulls(n, pa.string()) if vals is None else pa.array(vals, pa.string()))
        else:
            c = cols.get(f.name)
            if c is None:
                arrays.append(pa.nulls(n, f.type))
                continue
            if isinstance(c, pa.ChunkedArray):
                c = c.combine_chunks()
            if c.type != f.type:
                c = c.cast(f.type)
            arrays.append(c)
    return pa.RecordBatch.from_arrays(arrays, schema=sch)


def _spill_chunk(ch: Chunk, reg: Registry) -> Arrow:
    """A chunk's rows (rebuilt in the Parquet layout) plus the private columns: for rows that are not a record
    batch of the layout as read (JSON Lines, a selection, a table of records, a file-level error)."""
    t = chunk_to_table(ch, reg)
    n = ch.n
    src: list[str | None] | None = None
    bad: list[str | None] | None = None
    if ch.sources is not None:
        src = [None] * n
        for i in range(n):
            s = ch.sources[i]
            if s != f"{ch.path}:{int(ch.line[i])}":
                src[i] = s
    for i, rec in ch.slow.items():
        if rec.source != f"{ch.path}:{int(ch.line[i])}" or rec.line is None:
            if src is None:
                src = [None] * n
            src[i] = rec.source
        if rec.deal is None:
            if bad is None:
                bad = [None] * n
            bad[i] = _bad_text(rec)
    return _as_spill({name: t.column(name) for name in t.schema.names}, n, ch.fi, ch.line, src, bad)


def _spill_batch(ch: Chunk, batch: Arrow, reg: Registry) -> Arrow:
    """A record batch of the layout as read from a Parquet input, with the private columns: its rows as they are
    (vectorised; the reader of the part judges them again as the direct run does); a bad row's finding kept."""
    import pyarrow as pa

    bad: list[str | None] | None = None
    for i, rec in ch.slow.items():
        if rec.deal is None:
            if bad is None:
                bad = [None] * ch.n
            bad[i] = _bad_text(rec)
    try:
        return _as_spill({name: batch.column(name) for name in batch.schema.names}, ch.n, ch.fi, ch.line, None,
                         bad)
    except (pa.ArrowException, ValueError, TypeError):  # a column of another type the cast refuses: rebuilt
        return _spill_chunk(ch, reg)


class _Spill:
    """Per bucket, an Arrow IPC stream of its rows in input order, each row with its unit (`_u`). Rows are gathered
    up to SPILL_ROWS, then sorted by bucket at once (one `take`) and each bucket's slice written as one record
    batch."""

    def __init__(self, parts: Parts, piece: int = 0) -> None:
        self.parts = parts
        self.piece = piece
        self.sch = spill_schema()
        self.rows = _row_schema()
        self.pending: list[Arrow] = []
        self.unit: list[np.ndarray] = []
        self.total = 0
        self.writers: dict[int, tuple[Any, Any]] = {}

    def add(self, t: Arrow, unit: np.ndarray) -> None:
        """A batch of `_row_schema` and each row's unit."""
        if not len(unit):
            return
        self.pending.append(t)
        self.unit.append(unit)
        self.total += len(unit)
        if self.total >= SPILL_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self.pending:
            return
        u = np.concatenate(self.unit).astype(np.uint32)
        t = pa.Table.from_batches(self.pending, schema=self.rows).append_column(self.sch.field("_u"), u32(u))
        self.pending, self.unit, self.total = [], [], 0
        b = (u % self.parts.buckets).astype(np.int64)
        order = np.argsort(b, kind="stable")
        sb = b[order]
        if (order != np.arange(len(order))).any():
            t = t.take(i64(order))
        batch = t.combine_chunks().to_batches()[0]  # (add() keeps no empty table: b is not empty)
        del t
        cuts = np.flatnonzero(np.diff(sb)) + 1
        starts = [0] + cuts.tolist()
        ends = cuts.tolist() + [len(sb)]
        for a, e in zip(starts, ends, strict=True):
            k = int(sb[a])
            w = self.writers.get(k)
            if w is None:
                f = pa.OSFile(self.parts.bucket_path(k, self.piece), "wb")
                opts = pa.ipc.IpcWriteOptions(compression=SPILL_COMPRESSION)
                w = self.writers[k] = (f, pa.ipc.new_stream(f, self.sch, options=opts))
            w[1].write_batch(batch.slice(a, e - a))

    def close(self) -> None:
        self._flush()
        for f, w in self.writers.values():
            w.close()
            f.close()


def _split_source(paths: list[str], reg: Registry, selection: Selection | None) -> Iterator[tuple[Chunk, Arrow]]:
    """The input as chunks, each with the record batch it was read from when it is one of the layout as read
    (Parquet inputs), else None."""
    if selection is not None and selection.active:
        for ch in selected_chunks(selection)(paths, reg):
            yield ch, None
        return
    for fi, path in enumerate(paths):
        if path.endswith(".parquet"):
            reg.paths.append(path)
            yield from iter_parquet_batches(path, fi, reg, "meta", CHUNK_ROWS)
        else:
            for ch in iter_chunks([path], reg, keep_all="meta", first_index=fi):
                yield ch, None


def split_input(paths: Sequence[str], workdir: str, part_deals: int, selection: Selection | None = None,
                progress: Callable[[int], None] | None = None, buckets: int = DEFAULT_BUCKETS,
                sized: Callable[[int], None] | None = None, helper: bool = False,
                helper_min_rows: int | None = None) -> Parts:
    """Split the input into parts of whole tables of about `part_deals` deals (module docstring). `sized(n)`: told
    the number of records before the pass when it is known then (Parquet metadata, lines of plain JSON Lines).
    `helper`: an input of Parquet files in the layout with `helper_min_rows` (default `HELPER_MIN_ROWS`) rows or
    more is split by two processes, each half of the row groups into bucket files of its own
    (`_split_in_pieces`); the parts read the same rows in the same order."""
    paths = [str(p) for p in paths]
    active = selection is not None and selection.active
    parts = Parts(paths=paths, workdir=str(workdir), part_deals=int(part_deals), buckets=int(buckets), parts=[],
                  selection=selection if active else None)
    if len(set(paths)) != len(paths):  # finding keys are read back from sources: one file, one index
        parts.single = True
        return parts
    if not active:
        known = _known_rows(paths)
        if known is not None and known <= part_deals:
            parts.single = True
            return parts
        if known is not None and sized is not None:
            sized(known)
    os.makedirs(workdir, exist_ok=True)
    parts.cleanup()
    min_rows = HELPER_MIN_ROWS if helper_min_rows is None else helper_min_rows
    plan = _pieces_plan(paths, min_rows) if helper and not active else None
    got = _split_in_pieces(parts, plan, progress) if plan is not None else None
    if got is None:
        if plan is not None:  # a piece met a file it could not read as record batches: the whole input again, here
            parts.cleanup()
        reg = Registry()
        got = _split_pass(_split_source(paths, reg, selection), reg, _Spill(parts), progress)
    deals, work, n_read = got.deals, got.work, got.n_read
    parts.records = n_read
    if n_read <= part_deals:
        parts.cleanup()
        parts.single = True
        return parts
    # every table's deals and global offset
    names_sorted = sorted(deals, key=natural_key)
    off = 0
    for name in names_sorted:
        parts.table_offset[name] = off
        off += deals[name]
    parts.table_deals = {name: deals[name] for name in names_sorted}
    parts.table_work = {name: work.get(name, 0) for name in names_sorted}
    # units (tables; two tables of one crc32 are one) into parts of about equal work; the records of no table's
    # deal are a unit too (no deals, each counted as one of work)
    per_unit: dict[int, int] = {LOOSE: 0} if got.loose else {}
    work_of: dict[int, int] = {LOOSE: got.loose} if got.loose else {}
    for name, d in deals.items():
        u = unit_of(name)
        per_unit[u] = per_unit.get(u, 0) + d
        work_of[u] = work_of.get(u, 0) + work.get(name, 0)
    parts.parts = [sorted(g, key=lambda u: (u % buckets, u)) for g in _grouped(per_unit, part_deals, work_of)]
    return parts


class _Tally(NamedTuple):
    """What a split pass (or the two pieces of one, added) found."""

    deals: dict[str, int]  # deals per table
    work: dict[str, int]  # their work per table (`WORK_BASE` plus the players, summed over the deals)
    n_read: int  # records read
    loose: int  # of them, the records of no table's deal (unit LOOSE)
    regular: bool  # every chunk was a record batch of the layout as read

    def plus(self, other: "_Tally") -> "_Tally":
        def added(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            out = dict(a)
            for name, n in b.items():
                out[name] = out.get(name, 0) + n
            return out

        return _Tally(added(self.deals, other.deals), added(self.work, other.work), self.n_read + other.n_read,
                      self.loose + other.loose, self.regular and other.regular)


def _split_pass(source: Iterator[tuple[Chunk, Arrow]], reg: Registry, spill: _Spill,
                progress: Callable[[int], None] | None) -> _Tally:
    """Every chunk of `source` spilled to its table's bucket, with its table's unit, and what was found
    (`_Tally`)."""
    deals: dict[str, int] = {}
    work: dict[str, int] = {}
    n_read = loose = 0
    regular = True
    nu_of: dict[str, int] = {}
    for ch, batch in source:
        n_read += ch.n
        regular = regular and batch is not None
        if progress is not None:
            progress(n_read)
        codes, names = _row_tables(ch)
        nu = np.array([nu_of.get(x) if x in nu_of else nu_of.setdefault(x, unit_of(x)) for x in names] + [LOOSE],
                      np.uint32)
        unit = nu[codes]  # code -1 picks LOOSE (bucket 0)
        ok = codes >= 0
        loose += int(ch.n - np.count_nonzero(ok))
        cnt = np.bincount(codes[ok], minlength=len(names))
        players = ch.nplayers.astype(np.int64)
        for i, rec in ch.slow.items():  # a record judged the slow way: its players from the record
            if rec.deal is not None:
                players[i] = len(rec.deal.players)
        wk = np.bincount(codes[ok], weights=WORK_BASE + players[ok], minlength=len(names))
        for j in np.flatnonzero(cnt).tolist():
            deals[names[j]] = deals.get(names[j], 0) + int(cnt[j])
            work[names[j]] = work.get(names[j], 0) + int(wk[j])
        spill.add(_spill_chunk(ch, reg) if batch is None else _spill_batch(ch, batch, reg), unit)
        reg.forget_lineups()  # the chunk is spilled: its line-ups are not needed again (bounded memory)
    spill.close()
    return _Tally(deals, work, n_read, loose, regular)


# -- the split in two processes (issue 15, a twenty-third session)

Segment = tuple[int, int, int]  # (file index, first row group, stop row group)


def _pieces_plan(paths: list[str], min_rows: int) -> tuple[list[Segment], list[Segment]] | None:
    """The input cut in two at the row group boundary nearest its middle row, as (first piece, second piece) of
    segments in input order; None (the split stays in one process) unless every file is a Parquet file in the
    auditor's layout, whose metadata reads, with `min_rows` rows in all and a boundary to cut at. A file refused
    or damaged later makes the pieces fall back to one pass (`_split_in_pieces`)."""
    import pyarrow.parquet as pq

    groups: list[tuple[int, int, int]] = []  # (file index, row group, rows)
    try:
        for fi, path in enumerate(paths):
            if not path.endswith(".parquet") or not os.path.isfile(path):
                return None
            pf = pq.ParquetFile(path)
            if is_records_table(pf.schema_arrow.names) or layout_problem(pf, hive_values(path)) is not None:
                return None
            md = pf.metadata
            groups.extend((fi, g, md.row_group(g).num_rows) for g in range(md.num_row_groups))
    except Exception:  # noqa: BLE001 - any doubt: one pass (which reports the problem as the direct run does)
        return None
    total = sum(n for *_, n in groups)
    if total < min_rows or len(groups) < 2:
        return None
    cum = np.cumsum([n for *_, n in groups])
    cut = int(np.clip(np.searchsorted(cum, total / 2), 0, len(groups) - 2)) + 1  # groups[:cut] | groups[cut:]

    def segments(gs: list[tuple[int, int, int]]) -> list[Segment]:
        out: list[Segment] = []
        for fi, g, _n in gs:
            if out and out[-1][0] == fi and out[-1][2] == g:
                out[-1] = (fi, out[-1][1], g + 1)
            else:
                out.append((fi, g, g + 1))
        return out

    return segments(groups[:cut]), segments(groups[cut:])


def _segments_source(paths: list[str], segments: list[Segment], reg: Registry) -> Iterator[tuple[Chunk, Arrow]]:
    """The chunks of `segments` (row groups of Parquet files in the layout), each with its record batch."""
    reg.paths.extend(paths)
    for fi, first, stop in segments:
        yield from iter_parquet_batches(paths[fi], fi, reg, "meta", CHUNK_ROWS, row_groups=(first, stop))


def _split_piece(args: tuple) -> _Tally:
    """The split of one piece of the input into its own bucket files (in a process of its own)."""
    paths, workdir, buckets, segments, piece, seen = args
    parts = Parts(paths=paths, workdir=workdir, part_deals=0, buckets=buckets, parts=[])
    reg = Registry()

    def told(n: int) -> None:  # the rows read so far, for the progress the first process shows
        seen.value = n

    return _split_pass(_segments_source(paths, segments, reg), reg, _Spill(parts, piece),
                       told if seen is not None else None)


def _split_in_pieces(parts: Parts, plan: tuple[list[Segment], list[Segment]],
                     progress: Callable[[int], None] | None) -> _Tally | None:
    """The split in two processes: the second piece in a fresh process (`pools.fresh_context`) into bucket files
    of its own, the first here at the same time; then the two merged (deals per table added, the buckets
    written). Each bucket's rows are then piece 0's then piece 1's, the input's order, so the parts read exactly
    what one pass spills. None when a piece met a chunk that was not a record batch (a file damaged or refused
    after its metadata read): the caller splits the whole input again in one pass, as the direct run reads it."""
    from concurrent.futures import ThreadPoolExecutor

    assert parts.workdir is not None
    first, second = plan
    ctx = fresh_context()
    seen = ctx.Value("q", 0, lock=False) if progress is not None else None  # the second process's rows so far
    args = (parts.paths, parts.workdir, parts.buckets, second, 1, seen)
    both = (lambda n: progress(n + seen.value)) if progress is not None and seen is not None else None
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(call_in_fresh_process, ctx, _split_piece, args,
                        os.path.join(parts.workdir, "split-1.pickle"), "the split's second process")
        try:
            reg = Registry()
            mine = _split_pass(_segments_source(parts.paths, first, reg), reg, _Spill(parts, 0), both)
            theirs = fut.result()
        except BaseException:
            stop_children()  # the other process too (an error or an interrupt here, or while waiting for it)
            raise
    whole = mine.plus(theirs)
    if progress is not None:
        progress(whole.n_read)
    if not whole.regular:
        return None
    parts.pieces = 2
    return whole


def _grouped(per_unit: dict[int, int], part_deals: int, work: dict[int, int] | None = None) -> list[list[int]]:
    """Units (the split's tables, `unit_of`, with their deals) into parts: as many parts as `part_deals` asks for
    (the total over `part_deals`, rounded up to a multiple of PART_MULTIPLE), of about equal work (`work` per unit,
    default its deals; issue 15: parts run two at a time, and a 300,000-deal input cut 250,000 + 50,000 left one
    core idle for most of it). Each unit, the most work first, goes to the part with the least work so far (ties:
    the unit's number, the part's); when that makes a part of several units larger than `part_deals` deals, more
    parts. The parts come the most work first, so that run in their order two at a time no large part runs alone at
    the end (issue 15, a twenty-fourth session: at 1M deals the fifth of five parts ran 7.5-8.5 s alone, one core
    idle); each part's units in order (the split then orders them by bucket). Only how the work is shared depends
    on this, never a result."""
    w = work if work is not None else per_unit
    units = sorted(per_unit)
    total = sum(per_unit.values())
    m = _rounded_up(max(1, -(-total // max(1, part_deals))))
    by_work = sorted(units, key=lambda u: (-w.get(u, 0), u))
    while True:
        width = min(m, len(units))
        heap = [(0, j) for j in range(width)]  # (work so far, part)
        groups: list[list[int]] = [[] for _ in range(width)]
        for u in by_work:
            load, j = heapq.heappop(heap)
            groups[j].append(u)
            heapq.heappush(heap, (load + w.get(u, 0), j))
        out = sorted((sorted(g) for g in groups if g), key=lambda g: (-sum(w.get(u, 0) for u in g), g[0]))
        if m >= len(units) or all(len(g) == 1 or sum(per_unit[u] for u in g) <= part_deals for g in out):
            return out
        m = _rounded_up(m + 1)


def _rounded_up(m: int) -> int:
    return m if m <= 1 else -(-m // PART_MULTIPLE) * PART_MULTIPLE


# ---------------------------------------------------------------- replaying a part


def _joined(batches: list[Arrow]) -> Arrow:
    import pyarrow as pa

    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


class _PartSource:
    """The `chunks` hook of `replay_paths` for one part: its units' rows as chunks of their original file index
    and lines; it notes each game's first valid deal (file index, line) and the sources that are not path:line."""

    def __init__(self, parts: Parts, k: int) -> None:
        self.parts = parts
        self.k = k
        self.odd_sources: dict[str, tuple[int, int]] = {}
        self.first_ids: list[Arrow] = []
        self.first_fi: list[np.ndarray] = []
        self.first_line: list[np.ndarray] = []

    def __call__(self, _paths: list[str], reg: Registry) -> Iterator[Chunk]:
        P = self.parts
        reg.paths.extend(P.paths)
        cols = [f.name for f in schema()]
        for batch in self._batches():
            if not batch.num_rows:
                continue
            # one chunk of the batch's rows, whichever files they come from (`Chunk.fis`; issue 15, a twenty-eighth
            # session: cut file by file, a 300k-deal dataset of 328 monthly files made some 650 small chunks,
            # whose fixed costs took its parts from 3.7 s to 9.3 s)
            ch = self._chunk(batch, cols, to_numpy(batch.column("_fi"), np.int64), reg)
            self._note_games(ch)
            yield ch

    def _batches(self) -> Iterator[Arrow]:
        """The part's spilled rows, bucket after bucket, as record batches of about CHUNK_ROWS rows (a bucket's
        small record batches joined): a bucket's rows of the part's units only, when other parts have units in
        it too (two tables whose names hash to one bucket)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        P = self.parts
        mine: dict[int, list[int]] = {}
        for u in P.parts[self.k]:
            mine.setdefault(u % P.buckets, []).append(u)
        shared = {u % P.buckets for j, g in enumerate(P.parts) if j != self.k for u in g} & set(mine)
        acc: list[Arrow] = []
        n = 0
        for b in sorted(mine):
            keep = u32(mine[b]) if b in shared else None
            for piece in range(P.pieces):
                path = P.bucket_path(b, piece)
                if not os.path.exists(path):
                    continue
                with pa.OSFile(path, "rb") as f:
                    for batch in pa.ipc.open_stream(f):
                        if keep is not None:
                            batch = batch.filter(pc.is_in(batch.column("_u"), value_set=keep))
                            if not batch.num_rows:
                                continue
                        acc.append(batch)
                        n += batch.num_rows
                        if n >= CHUNK_ROWS:
                            yield _joined(acc)
                            acc, n = [], 0
        if acc:
            yield _joined(acc)

    def _chunk(self, sub: Arrow, cols: list[str], fis: np.ndarray, reg: Registry) -> Chunk:
        """The chunk of a batch of spilled rows, `fis` their file indices (`Chunk.fis` when they are not all one)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        paths = self.parts.paths
        fi = int(fis[0])
        layout = schema()
        arrays = []
        for f in layout:  # the dictionary columns encoded again (table and pack read as codes by the replay)
            c = sub.column(f.name)
            arrays.append(pc.dictionary_encode(c) if pa.types.is_dictionary(f.type) else c)
        data = pa.RecordBatch.from_arrays(arrays, names=cols)
        line = to_numpy(sub.column("_line"), np.int64)
        ch = batch_chunk(data, 0, fi, paths[fi], reg, "meta", (fis, line, paths))
        src = sub.column("_src")
        srcs = src.to_pylist() if src.null_count < len(src) else None
        bad = sub.column("_bad")
        bads = bad.to_pylist() if bad.null_count < len(bad) else None
        if bads is not None:
            for i, text in enumerate(bads):
                if text is None:
                    continue
                info = orjson.loads(text)
                ln = info["line"]
                s = srcs[i] if srcs is not None and srcs[i] is not None else f"{ch.path_at(i)}:{int(line[i])}"
                ch.slow[i] = Record(s, ch.fi_at(i), ln, error=info["error"], raw=info["raw"])
                ch.status[i] = 2
        for i, rec in ch.slow.items():
            if rec.deal is None and bads is not None and bads[i] is not None:
                continue
            ln = int(line[i])
            s = srcs[i] if srcs is not None and srcs[i] is not None else f"{ch.path_at(i)}:{ln}"
            f = ch.fi_at(i)
            rec.line, rec.source, rec.file_index = ln, s, f
            if rec.deal is not None:
                rec.deal.line, rec.deal.source, rec.deal.file_index = ln, s, f
        if srcs is not None:
            for i, s in enumerate(srcs):
                if s is not None:
                    self.odd_sources.setdefault(s, (ch.fi_at(i), int(line[i])))
            if any(s is not None and ch.status[i] == 0 for i, s in enumerate(srcs)):
                ch.sources = [s if s is not None else f"{ch.path_at(i)}:{int(line[i])}" for i, s in enumerate(srcs)]
        return ch

    def _note_games(self, ch: Chunk) -> None:
        """The first (file index, line) of every game among the chunk's valid rows."""
        col = np.flatnonzero(ch.status == 0)
        if col.size:
            codes, first = np.unique(ch.gid[col], return_index=True)
            vals = ch.gid_vals
            arr = lstr(vals) if isinstance(vals, list) else vals
            import pyarrow as pa

            self.first_ids.append(arr.take(i64(codes)).cast(pa.large_string()))
            self.first_fi.append(ch.file_indices()[col[first]].astype(np.int64))
            self.first_line.append(ch.line[col[first]].astype(np.int64))
        slow = [(i, r.deal.game_id) for i, r in ch.slow.items() if r.deal is not None and ch.status[i] == 1]
        if slow:
            self.first_ids.append(lstr([g for _, g in slow]))
            self.first_fi.append(np.array([ch.fi_at(i) for i, _ in slow], np.int64))
            self.first_line.append(np.array([int(ch.line[i]) for i, _ in slow], np.int64))

    def first_keys(self) -> tuple[Arrow, np.ndarray, np.ndarray]:
        """(game ids, file index, line) of every game's first valid deal, one entry per game id."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.first_ids:
            return lstr([]), np.zeros(0, np.int64), np.zeros(0, np.int64)
        ids = pa.concat_arrays(self.first_ids)
        fi = np.concatenate(self.first_fi)
        line = np.concatenate(self.first_line)
        enc = pc.dictionary_encode(ids)
        codes = to_numpy(enc.indices, np.int64, -1)
        o = np.lexsort((line, fi, codes))
        keep = np.ones(len(o), bool)
        keep[1:] = codes[o][1:] != codes[o][:-1]
        sel = o[keep]
        return enc.dictionary.take(i64(codes[sel])), fi[sel], line[sel]


@dataclass
class PartReplay(Replay):
    """A part's `Replay`, with what the merge needs: each finding's (file index, line) and the part's number."""

    part: int = 0
    finding_keys: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))


def _finding_keys(findings: Sequence[Finding], paths: list[str], odd: dict[str, tuple[int, int]]) -> np.ndarray:
    """The (file index, line) each finding is sorted by, read back from its source."""
    index = {p: i for i, p in enumerate(paths)}
    out = np.zeros((len(findings), 2), np.int64)
    prev = (0, 0)
    for j, f in enumerate(findings):
        s = f.source
        key: tuple[int, int] | None = odd.get(s)
        if key is None:
            head, sep, tail = s.rpartition(":")
            if sep and head in index and tail.isdigit():
                key = (index[head], int(tail))
            elif s in index:
                key = (index[s], 0)
        if key is None:
            key = prev  # (never seen: keeps the part's order)
        out[j] = key
        prev = key
    return out


def _global_order(c: AuditColumns, parts: Parts) -> None:
    """`order` of a part's table as the rank in the canonical order of the whole input."""
    if not len(c):
        return
    names = c.tables
    cnt = np.bincount(c.table.astype(np.int64), minlength=len(names))
    rank = natural_order(names).tolist()
    delta = np.zeros(len(names), np.int64)
    start = 0
    for j in rank:
        if cnt[j] != parts.table_deals.get(names[j], -1) and cnt[j]:
            raise AssertionError(f"table {names[j]!r}: {cnt[j]} deals in its part, {parts.table_deals.get(names[j])} "
                                 f"counted by the split")
        delta[j] = parts.table_offset.get(names[j], 0) - start
        start += int(cnt[j])
    c.arrays["order"] = c.order + delta[c.table.astype(np.int64)]


def _entries_of(games: Sequence[GameSummary]) -> Arrow:
    """Each game's entry as the document writes it (",\\n    {...}", 4 spaces deep), a large_binary array."""
    import pyarrow as pa

    n = len(games)
    if n == 0:
        return pa.array([], pa.large_binary())
    if hasattr(games, "json_buffer"):
        buf = bytes(games.json_buffer())
        data = b",\n" + buf
    else:
        return pa.array([entry_bytes(g.to_json()) for g in games], pa.large_binary())
    a = np.frombuffer(data, np.uint8)
    pat = b",\n    {"
    L = len(a) - len(pat) + 1
    m = np.ones(max(L, 0), bool)
    for j, ch in enumerate(pat):
        m &= a[j:j + L] == ch
    starts = np.flatnonzero(m)
    if len(starts) != n:
        raise AssertionError(f"games entries: {len(starts)} found, {n} games")
    off = np.append(starts, len(a)).astype(np.int64)
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(off), pa.py_buffer(data)])


class _EntryFile(Sequence[Any]):
    """A part's document entries on disk (an Arrow IPC stream: entry, file index and line, sorted by the latter),
    read back a block at a time; `_parse` turns a block's entries back into objects."""

    @staticmethod
    def _parse(entries: Arrow) -> Iterator[Any]:
        raise NotImplementedError

    def __init__(self, path: str, n: int) -> None:
        self.path = path
        self.n = n

    def __len__(self) -> int:
        return self.n

    def blocks(self) -> Iterator[Arrow]:
        import pyarrow as pa

        if not self.n:
            return
        with pa.OSFile(self.path, "rb") as f:
            reader = pa.ipc.open_stream(f)
            for batch in reader:
                yield batch

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        fis, lines = [], []
        for b in self.blocks():
            fis.append(to_numpy(b.column("fi"), np.int64))
            lines.append(to_numpy(b.column("line"), np.int64))
        if not fis:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(fis).astype(np.int64), np.concatenate(lines).astype(np.int64)

    def json_pieces(self) -> Iterator[bytes]:
        yield from _pieces(b.column("entry") for b in self.blocks())

    def json_entries(self) -> bytes:
        return b"".join(self.json_pieces())

    def json_buffer(self) -> bytes:
        return self.json_entries()

    def __iter__(self) -> Iterator[Any]:
        for b in self.blocks():
            yield from self._parse(b.column("entry"))

    def __getitem__(self, key: Any) -> Any:  # rarely used: by iteration
        items = list(self)
        return items[key]


class PartGames(_EntryFile):
    """A part's games summary on disk (entries sorted by each game's first deal)."""

    @staticmethod
    def _parse(entries: Arrow) -> Iterator[GameSummary]:
        return _summaries(entries)


class PartFindings(_EntryFile):
    """A part's findings on disk (sorted by their record's file index and line; the part's order within one): what
    grows with the input is written out as it is produced, not held (issue 15)."""

    @staticmethod
    def _parse(entries: Arrow) -> Iterator[Finding]:
        return _findings_of(entries)


def _findings_of(entries: Arrow) -> Iterator[Finding]:
    for e in entries.to_pylist():
        yield Finding(**orjson.loads(e[2:]))


def _summaries(entries: Arrow) -> Iterator[GameSummary]:
    for e in entries.to_pylist():
        d = orjson.loads(e[2:])
        yield GameSummary(d["game_id"], deals=d["deals"], totals=d["totals"], winner=d["winner"],
                          ended_by=d["ended_by"], loser=d["loser"])


def _pieces(blocks: Iterator[Arrow]) -> Iterator[bytes]:
    """Entries joined as the document holds them (the first one without its ",\\n")."""
    first = True
    for entries in blocks:
        if not len(entries):
            continue
        if entries.offset or True:
            offs = np.frombuffer(entries.buffers()[1], np.int64, count=len(entries) + 1, offset=entries.offset * 8)
            data = entries.buffers()[2].slice(int(offs[0]), int(offs[-1] - offs[0])).to_pybytes()
        yield data[2:] if first else data
        first = False


def replay_part(parts: Parts, k: int, table: bool = True, progress: Callable[[int], None] | None = None) -> Replay:
    """Replay part k (module docstring): a `PartReplay` whose table's `order` is the global canonical rank; in the
    single case, today's `replay_paths` of the original paths."""
    if parts.single:
        sel = parts.selection
        return replay_paths(parts.paths, progress=progress, table=table,
                            chunks=selected_chunks(sel) if sel is not None and sel.active else None)
    import pyarrow as pa

    src = _PartSource(parts, k)
    rep = replay_paths(parts.paths, progress=progress, table=table, chunks=src)
    if rep.table is not None:
        _global_order(rep.table, parts)
    # the games: entries sorted by each game's first deal, written out
    gs = rep.games_summary
    entries = _entries_of(gs)
    ids, ffi, fline = src.first_keys()
    if len(gs):
        if hasattr(gs, "ids") and hasattr(gs, "order"):
            gids = gs.ids.take(i64(gs.order)).cast(pa.large_string())
        else:
            gids = pa.array([g.game_id for g in gs], pa.large_string())
        import pyarrow.compute as pc

        pos = to_numpy(pc.index_in(gids, value_set=ids.cast(pa.large_string())), np.int64, -1)
        if (pos < 0).any():
            raise AssertionError("a game without a first deal")
        gfi, gline = ffi[pos], fline[pos]
    else:
        gfi = gline = np.zeros(0, np.int64)
    o = np.lexsort((gline, gfi))
    if len(o) and (o != np.arange(len(o))).any():
        entries = entries.take(i64(o))
        gfi, gline = gfi[o], gline[o]
    out = parts.games_path(k)
    n = len(entries)
    _write_entries(out, entries, gfi, gline)
    del entries
    # the findings: sorted (stably) by their record's (file index, line), written out as the document's entries
    keys = _finding_keys(rep.findings, parts.paths, src.odd_sources)
    o = np.lexsort((keys[:, 1], keys[:, 0]))
    found = [rep.findings[int(i)] for i in o]
    keys = keys[o]
    fout = parts.findings_path(k)
    _write_entries(fout, _finding_entries(found), keys[:, 0], keys[:, 1])
    return PartReplay(deals=rep.deals, games=rep.games, findings=PartFindings(fout, len(found)),
                      games_summary=PartGames(out, n), stats=rep.stats, table=rep.table, part=k, finding_keys=keys)


def _write_entries(path: str, entries: Arrow, fi: np.ndarray, line: np.ndarray) -> None:
    """Document entries with the (file index, line) of each, as an Arrow IPC stream of blocks (nothing when
    empty)."""
    import pyarrow as pa

    n = len(entries)
    if not n:
        return
    sch = pa.schema([("entry", pa.large_binary()), ("fi", pa.int64()), ("line", pa.int64())])
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, sch) as w:
        for a in range(0, n, ENTRY_BATCH):
            e = min(n, a + ENTRY_BATCH)
            w.write_batch(pa.record_batch([entries.slice(a, e - a), i64(fi[a:e]),
                                           i64(line[a:e])], schema=sch))


def _finding_entries(findings: Sequence[Finding]) -> Arrow:
    """Each finding's entry as the replay document writes it (",\n    {...}", 4 spaces deep), a large_binary
    array (`dump_document`'s orjson, or its json fallback for what orjson refuses)."""
    import pyarrow as pa

    return pa.array([entry_bytes(f.to_json()) for f in findings], pa.large_binary())


# ---------------------------------------------------------------- merging


class _MergedEntries(Sequence[Any]):
    """Entries of every part in the direct run's order (by (file index, line), then part), streamed from the parts'
    files: `json_pieces()` yields the document's entries a block at a time (bounded memory); `json_buffer()` joins
    them.

    The merge is a k-way merge of the parts' streams, each already in (file index, line) order: it holds one block
    of each part (ENTRY_BATCH entries as written) and no key of the whole input (issue 15: the 10M audit held every
    game's key and a 65,536-entry block of each of its 56 parts, some 0.7 GB, while it wrote the document)."""

    def __init__(self, games: Sequence[_EntryFile]) -> None:
        self.games = games
        self.n = sum(len(g) for g in games)

    def __len__(self) -> int:
        return self.n

    def _blocks(self) -> Iterator[Arrow]:
        import pyarrow as pa

        curs = [_KeyCursor(g.blocks(), j) for j, g in enumerate(self.games) if len(g)]
        while True:
            for c in curs:
                c.fill()
            live = [c for c in curs if c.left()]
            if not live:
                return
            ends = [c.keys[-1] for c in live if not c.done]
            bound = min(ends) if ends else None  # every entry below it is here, in the cursors' buffers
            cut = [c.below(bound) for c in live]
            if not any(cut):  # a part whose whole buffer is at the bound: read on until it passes it
                for c in live:
                    if not c.done and c.keys[-1] == bound:
                        c.extend()
                continue
            keys, src, vals = [], [], []
            for c, k in zip(live, cut, strict=True):
                if k:
                    e, ky = c.take(k)
                    vals.append(e)
                    keys.append(ky)
                    src.append(np.full(k, c.part, np.int32))
            allk, alls = np.concatenate(keys), np.concatenate(src)
            o = np.lexsort((alls, allk))  # by (file index, line), then part; a part's own order kept (stable)
            allv = pa.concat_arrays(vals) if len(vals) > 1 else vals[0]
            yield allv.take(i64(o)) if (o != np.arange(len(o))).any() else allv

    def json_pieces(self) -> Iterator[bytes]:
        yield from _pieces(self._blocks())

    def json_entries(self) -> bytes:
        return b"".join(self.json_pieces())

    def json_buffer(self) -> bytes:
        return self.json_entries()

    def __iter__(self) -> Iterator[Any]:
        parse = self.games[0]._parse if self.games else None
        for b in self._blocks():
            yield from parse(b)  # type: ignore[misc]

    def __getitem__(self, key: Any) -> Any:  # rarely used: by iteration
        items = list(self)
        return items[key]


class MergedGames(_MergedEntries):
    """The games summary of every part in the direct run's order (first appearance among valid deals)."""


class MergedFindings(_MergedEntries):
    """The findings of every part in the direct run's order (file index, line, then the part's own order), streamed
    from the parts' files: `Replay.write_json` and the audit document splice `json_pieces()` in (issue 15)."""


class _KeyCursor:
    """The unread entries of one part's blocks and their sort keys (file index << 40 | line), read a block at a
    time (`fill`, `extend`) and taken from the front (`take`)."""

    def __init__(self, blocks: Iterator[Arrow], part: int) -> None:
        self.blocks = blocks
        self.part = part
        self.done = False  # no block left to read (the buffer may still hold entries)
        self.entries: Arrow = None
        self.keys = np.zeros(0, np.int64)

    def left(self) -> int:
        return len(self.keys)

    def _read(self) -> bool:
        b = next(self.blocks, None)
        if b is None:
            self.done = True
            return False
        fi = to_numpy(b.column("fi"), np.int64)
        line = to_numpy(b.column("line"), np.int64)
        if len(line) and (line.min() < 0 or line.max() >= 1 << 40 or fi.min() < 0 or fi.max() >= 1 << 22):
            raise ValueError("entry keys out of range")  # our own working files: cannot happen
        ent, key = b.column("entry"), (fi << 40) | line
        if self.entries is None or not len(self.keys):
            self.entries, self.keys = ent, key
        else:
            import pyarrow as pa

            self.entries = pa.concat_arrays([self.entries, ent])
            self.keys = np.concatenate([self.keys, key])
        return True

    def fill(self) -> None:
        """Read blocks until the buffer holds an entry or the part has none left."""
        while not len(self.keys) and not self.done:
            self._read()

    def extend(self) -> None:
        """Read one more block into the buffer."""
        self._read()

    def below(self, bound: int | None) -> int:
        """How many buffered entries sort before `bound` (all of them when None)."""
        return len(self.keys) if bound is None else int(np.searchsorted(self.keys, bound, "left"))

    def take(self, k: int) -> tuple[Arrow, np.ndarray]:
        e, ky = self.entries.slice(0, k), self.keys[:k]
        self.entries, self.keys = self.entries.slice(k), self.keys[k:]
        return e, ky


def summed_stats(replays: Sequence[Replay]) -> dict[str, Any]:
    """The replay stats of inputs taken together: counts and fallback reasons added."""
    reasons: dict[str, int] = {}
    stats: dict[str, Any] = {"engine": "batch", "records": 0, "deals": 0, "kernel": 0, "fallback": 0}
    for r in replays:
        for key in ("records", "deals", "kernel", "fallback"):
            stats[key] += int(r.stats.get(key, 0))
        for why, c in r.stats.get("fallback_reasons", {}).items():
            reasons[why] = reasons.get(why, 0) + int(c)
    stats["fallback_reasons"] = dict(sorted(reasons.items()))
    return stats


def merge_replays(replays: Sequence[Replay]) -> Replay:
    """The parts' replays as the one `Replay` of the direct run (module docstring), without a table."""
    if len(replays) == 1 and not isinstance(replays[0], PartReplay):
        return replays[0]
    reps = sorted(replays, key=lambda r: getattr(r, "part", 0))
    if not all(isinstance(r, PartReplay) for r in reps):
        raise TypeError("merge_replays takes the replays of replay_part")
    stats = summed_stats(reps)
    games = [r.games_summary for r in reps]
    found = [r.findings for r in reps]
    assert all(isinstance(g, PartGames) for g in games) and all(isinstance(f, PartFindings) for f in found)
    return Replay(deals=sum(r.deals for r in reps), games=sum(r.games for r in reps),
                  findings=MergedFindings(found),  # type: ignore[arg-type]
                  games_summary=MergedGames(games), stats=stats)  # type: ignore[arg-type]


__all__ = ["Parts", "PartReplay", "PartGames", "PartFindings", "MergedGames", "MergedFindings", "split_input", "replay_part", "merge_replays",
           "bucket_of", "DEFAULT_BUCKETS", "summed_stats"]
