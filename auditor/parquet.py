"""deal-log/1 in Parquet: one row per record, columns laid out for speed, lossless to and from JSON Lines.

Layout (version 2; the file's key-value metadata holds `deal-log = deal-log/1`, `auditor.layout = 2`; version 1,
the same without `claims`, is read as before):

| column | type | holds |
|---|---|---|
| `raw` | binary, null | a record the columns do not hold: the line as read for a bad record, the canonical JSON of a valid one (lenient card spellings kept as canonical, unknown card strings; in version 1 also claims) |
| `game` | uint8 | 0 scotch_whist, 1 all_fours |
| `rules`, `options`, `table`, `players`, `sides`, `pack` | dictionary string | preset; options / players / sides as JSON text (null when absent) |
| `game_id` | dictionary string | |
| `deal_no` | int64 | |
| `time` | string | |
| `dealer`, `cutter` | int8 | cutter null when absent |
| `deck`, `hands`, `runs`, `discards`, `tricks` | binary | one byte per card (`suit * 13 + rank`), seats / tricks / runs concatenated |
| `hand_lens`, `discard_lens`, `trick_lens` | binary | one byte per seat / trick: its number of cards |
| `turn_up`, `shown` | uint8 | shown null when absent |
| `beg` | uint8 | 0 absent, 1 stand, 2 take_one, 3 run |
| `bunched` | bool | |
| `recorded` | bool | `recorded` present |
| `rec_points`, `rec_totals` | list<int32> | null when absent |
| `rec_winner` | int8 | null when absent |
| `extra` | string | JSON object of the unknown top-level fields, null when none |
| `claims` | string | (version 2, issue 15) the record's `claims` as canonical JSON (`[{"revoke": s, "trick": k}]`), null when absent |

A run is `3 * n` cards (three per seat from seat 0) then its turn-up. Row numbers are 1-based (`file:row`).
Reading is streamed by record batches, so memory stays bounded whatever the file size.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np
import orjson

from .cards import CARD_STR
from .errors import InputError
from .fast.arrow import Arrow, i64, to_numpy, validity
from .fast.cols import (
    BEGS,
    GAMES,
    NOCARD,
    Chunk,
    ChunkBuilder,
    DictColumn,
    KeepAll,
    Ragged,
    Registry,
    claims_json,
    claims_of,
    row_to_obj,
    uniq,
)
from .logparse import GAME_ALIASES, Record, json_loader, norm_name, open_input, parse_line, record_from_obj

# pyarrow (and pyarrow.parquet, pyarrow.compute) is imported in the functions that use it, never at module level:
# it costs a quarter of a second of start-up, and `auditor.dealog` imports this module for every command that reads
# a log, most of which never open a Parquet file.

LAYOUT_VERSION = "2"  # 2 (issue 15): the `claims` column; a file of layout 1 (no such column) is read as before
LAYOUTS_READ = ("1", "2")
CARD_COLS = ("deck", "hands", "runs", "discards", "tricks")
LEN_COLS = {"hands": "hand_lens", "discards": "discard_lens", "tricks": "trick_lens"}
REQUIRED = ("raw", "game", "rules", "options", "table", "game_id", "deal_no", "players", "sides", "dealer", "cutter",
            "deck", "hands", "hand_lens", "turn_up", "shown", "beg", "runs", "discards", "discard_lens", "tricks",
            "trick_lens", "bunched", "recorded", "rec_points", "rec_totals", "rec_winner")
OPTIONAL = ("time", "pack", "extra", "claims")  # columns a file may lack (layout 1 has no `claims`)
REPLAY_COLS = (*REQUIRED, "claims")  # (a row that breaks the schema is rebuilt from all of them for its message)


def schema() -> Arrow:
    import pyarrow as pa

    ds = pa.dictionary(pa.int32(), pa.string())
    fields = [
        ("raw", pa.binary()), ("game", pa.uint8()), ("rules", ds), ("options", ds), ("table", ds),
        ("game_id", ds), ("deal_no", pa.int64()), ("time", pa.string()), ("players", ds), ("sides", ds),
        ("dealer", pa.int8()), ("cutter", pa.int8()), ("pack", ds), ("deck", pa.binary()), ("hands", pa.binary()),
        ("hand_lens", pa.binary()), ("turn_up", pa.uint8()), ("shown", pa.uint8()), ("beg", pa.uint8()),
        ("runs", pa.binary()), ("discards", pa.binary()), ("discard_lens", pa.binary()), ("tricks", pa.binary()),
        ("trick_lens", pa.binary()), ("bunched", pa.bool_()), ("recorded", pa.bool_()),
        ("rec_points", pa.list_(pa.int32())), ("rec_totals", pa.list_(pa.int32())), ("rec_winner", pa.int8()),
        ("extra", pa.string()), ("claims", pa.string()),
    ]
    return pa.schema(fields, metadata={"deal-log": "deal-log/1", "auditor.layout": LAYOUT_VERSION})


# ---------------------------------------------------------------- writing


def _validity(mask: np.ndarray) -> Arrow:
    import pyarrow as pa

    if mask.all():
        return None
    return pa.py_buffer(np.packbits(mask.astype(np.uint8), bitorder="little"))


def _binary(rg: Ragged, rows_mask: np.ndarray) -> Arrow:
    """A binary column from a ragged field (null where absent or not a column row)."""
    import pyarrow as pa

    has = rg.has & rows_mask
    lens = np.where(has, rg.lens(), 0)
    off = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    # the rows' bytes: a Ragged read from Parquet may be a slice of a larger buffer (offsets not from 0)
    body = rg.data[int(rg.off[0]):int(rg.off[-1])] if len(rg.off) else rg.data[:0]
    if has.all():
        data = body
    else:
        keep = np.repeat(has, rg.lens())
        data = body[keep]
    return pa.Array.from_buffers(pa.binary(), len(lens), [_validity(has), pa.py_buffer(off.astype(np.int32)),
                                                         pa.py_buffer(np.ascontiguousarray(data))])


def _dict_col(codes: np.ndarray, values: Sequence[str | None], mask: np.ndarray) -> Arrow:
    """A dictionary string column: row i is values[codes[i]] (null where ~mask or the value is None)."""
    import pyarrow as pa

    uniq, inv = np.unique(codes, return_inverse=True)
    dvals = [values[int(u)] if u >= 0 else None for u in uniq]
    null = np.array([v is None for v in dvals], bool)[inv] | ~mask
    # the dictionary holds each value once, sorted: two codes can carry one value (two rule sets of one preset,
    # whose `options` are both null), and a dictionary with a value twice makes Arrow's Parquet writer leave bytes
    # of its dictionary page unset, so that `convert` wrote other bytes at every run (the same values read back)
    names = sorted({v for v in dvals if v is not None})
    pos = {v: j for j, v in enumerate(names)}
    remap = np.array([pos[v] if v is not None else 0 for v in dvals], np.int32)
    idx = pa.array(remap[inv], mask=null)
    return pa.DictionaryArray.from_arrays(idx, pa.array(names or [""], pa.string()))


def _list_col(vals: np.ndarray, has: np.ndarray, ns: np.ndarray) -> Arrow:
    import pyarrow as pa

    n = len(has)
    lens = np.where(has, ns, 0)
    off = np.zeros(n + 1, np.int32)
    np.cumsum(lens, out=off[1:])
    sel = (np.arange(vals.shape[1])[None, :] < lens[:, None])
    values = pa.array(vals[sel].astype(np.int32))
    return pa.ListArray.from_arrays(pa.array(off), values, mask=pa.array(~has))


def _str_codes(col: list[str | None] | DictColumn | None, n: int, missing: str | None) -> tuple[np.ndarray, list[str]]:
    """A chunk's string column (a list, a DictColumn, or None: every row `missing`) as codes into its sorted
    distinct values (-1 where None), without a Python step per row."""
    if col is None:
        if missing is None:
            return np.full(n, -1, np.int64), []
        return np.zeros(n, np.int64), [missing]
    if isinstance(col, DictColumn):
        codes0, vals0 = np.asarray(col.codes, np.int64), list(col.values)
    else:
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(pa.array(col, pa.string()))
        codes0, vals0 = to_numpy(enc.indices, np.int64, -1), enc.dictionary.to_pylist()
    lut = np.full(len(vals0) + 1, -1, np.int64)  # code -1 picks the last entry: -1
    used = np.unique(codes0[codes0 >= 0]).tolist()
    names = sorted({vals0[u] for u in used if vals0[u] is not None})
    pos = {v: j for j, v in enumerate(names)}
    for u in used:
        if vals0[u] is not None:
            lut[u] = pos[vals0[u]]
    return lut[codes0], names


def _masked_str(vals: list[str | None] | None, mask: np.ndarray) -> Arrow:
    """A string column of per-row values (None: all null), null where ~mask."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(mask)
    if vals is None or not mask.any():
        return pa.nulls(n, pa.string())
    arr = pa.array(vals, pa.string())
    if mask.all():
        return arr
    return pc.if_else(pa.array(mask), arr, pa.scalar(None, pa.string()))


def chunk_to_table(ch: Chunk, reg: Registry) -> Arrow:
    """The Parquet rows of a chunk read with `keep_all` (slow rows as `raw`). Vectorised: a Python step only per
    slow row and per distinct value (the split of issue 15 writes every row of a large input through here)."""
    import pyarrow as pa

    n = ch.n
    col = ch.status == 0
    raw: list[bytes | None] = [None] * n
    for i, rec in ch.slow.items():
        if i in ch.raw_line and rec.deal is None:
            raw[i] = ch.raw_line[i].removesuffix(b"\n")
        elif rec.deal is not None:
            raw[i] = orjson.dumps(rec.deal.to_canonical())
        else:
            raw[i] = None  # a file-level error: nothing to keep (reported by convert)
    nsides = np.zeros(n, np.int64)
    if col.any():
        nsides[col] = _ns_vec(ch.sides[col], ch.nplayers[col].astype(np.int64), reg)
    rs_rules = [info[1] for info in reg.rs_info]
    rs_opts = [orjson.dumps(info[2]).decode() if info[2] else None for info in reg.rs_info]
    lineups = [orjson.dumps(p).decode() for p in reg.lineups]
    sides = [orjson.dumps(s).decode() for s in reg.sides]
    tab_codes, tab_vals = _str_codes(ch.table, n, "")
    pack_codes, pack_vals = _str_codes(ch.pack, n, None)

    def u8(a: np.ndarray, mask: np.ndarray) -> Arrow:
        return pa.array(a, mask=~mask)

    arrays = {
        "raw": pa.array(raw, pa.binary()),
        "game": u8(ch.game, col),
        "rules": _dict_col(ch.rset, rs_rules, col),
        "options": _dict_col(ch.rset, rs_opts, col),
        "table": _dict_col(tab_codes, tab_vals, col),
        "game_id": _gid_col(ch, reg, col),
        "deal_no": pa.array(ch.deal_no, mask=~col),
        "time": _masked_str(ch.time, col),
        "players": _dict_col(ch.lineup, lineups, col),
        "sides": _dict_col(ch.sides, sides, col),
        "dealer": pa.array(ch.dealer.astype(np.int8), mask=~col),
        "cutter": pa.array(ch.cutter.astype(np.int8), mask=~col | (ch.cutter < 0)),
        "pack": _dict_col(pack_codes, pack_vals, col),
        "deck": _binary(ch.deck, col),
        "hands": _binary(ch.hands, col),
        "hand_lens": _binary(ch.hand_lens, col),
        "turn_up": u8(ch.turn_up, col),
        "shown": pa.array(ch.shown, mask=~col | (ch.shown == NOCARD)),
        "beg": u8(ch.beg.astype(np.uint8), col),
        "runs": _binary(ch.runs, col),
        "discards": _binary(ch.discards, col),
        "discard_lens": _binary(ch.disc_lens, col),
        "tricks": _binary(ch.tricks, col),
        "trick_lens": _binary(ch.trick_lens, col),
        "bunched": pa.array(ch.bunched, mask=~col),
        "recorded": pa.array(ch.rec_has, mask=~col),
        "rec_points": _list_col(ch.rp, ch.rp_has & col, nsides),
        "rec_totals": _list_col(ch.rt, ch.rt_has & col, nsides),
        "rec_winner": pa.array(ch.rw.astype(np.int8), mask=~col | (ch.rw < 0)),
        "extra": _masked_str(ch.extra, col),
        "claims": _claims_col(ch, col),
    }
    sch = schema()
    return pa.Table.from_arrays([arrays[f.name] for f in sch], schema=sch)


def _claims_col(ch: Chunk, col: np.ndarray) -> Arrow:
    import pyarrow as pa

    vals: list[str | None] = [None] * ch.n
    for i, cl in ch.claims.items():
        if col[i]:
            vals[i] = orjson.dumps(claims_json(cl)).decode()
    return pa.array(vals, pa.string())


def _gid_col(ch: Chunk, reg: Registry, col: np.ndarray) -> Arrow:
    import pyarrow as pa

    codes = np.where(col, ch.gid, -1)
    uniq, inv = np.unique(codes, return_inverse=True)
    idx = pa.array(inv.astype(np.int32), mask=~col)
    if isinstance(ch.gid_vals, list):
        vals = [ch.gid_vals[int(u)] if u >= 0 else "" for u in uniq]
        return pa.DictionaryArray.from_arrays(idx, pa.array(vals, pa.string()))
    import pyarrow.compute as pc

    dvals = ch.gid_vals.take(pa.array(np.maximum(uniq, 0))).cast(pa.string())  # (an Arrow array: read from Parquet)
    if len(uniq) and uniq[0] < 0:
        dvals = pc.if_else(pa.array(uniq >= 0), dvals, pa.scalar("", pa.string()))
    return pa.DictionaryArray.from_arrays(idx, dvals)


class Writer:
    """Writes chunks (read with `keep_all`) as row groups of one Parquet file."""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self._w = pq.ParquetWriter(path, schema(), compression="zstd", use_dictionary=True)
        self.rows = 0

    def write(self, ch: Chunk, reg: Registry) -> int:
        t = chunk_to_table(ch, reg)
        keep = np.ones(ch.n, bool)
        for i, rec in ch.slow.items():  # file-level errors have no row
            if rec.deal is None and i not in ch.raw_line:
                keep[i] = False
        if not keep.all():
            t = t.filter(keep)
        self._w.write_table(t)
        written: int = t.num_rows
        self.rows += written
        return written

    def close(self) -> None:
        self._w.close()


# ---------------------------------------------------------------- reading


# What reading a Parquet file that is damaged or not deal-log/1 can raise besides pyarrow's own `ArrowException`s:
# the I/O (OSError), values of the wrong kind or JSON text that is not JSON (ValueError, TypeError), a missing
# column or code (LookupError), an unexpected Arrow type's missing attribute (AttributeError), numbers out of range
# (ArithmeticError), values nested too deeply (RecursionError, a RuntimeError), running out of memory on a forged
# length (MemoryError). Each becomes the file's bad_record, never a traceback.
_READ_ERRORS: tuple[type[Exception], ...] = (OSError, ValueError, TypeError, LookupError, AttributeError,
                                             ArithmeticError, RuntimeError, MemoryError)


def iter_parquet_chunks(path: str, fi: int, reg: Registry, keep_all: KeepAll = False,
                        rows: int = 65536) -> Iterator[Chunk]:
    """Record batches of a deal-log/1 Parquet file as chunks. A file that is not one gives a chunk with one bad
    row (source = the path)."""
    for ch, _batch in _parquet_chunks(path, fi, reg, keep_all, rows):
        yield ch


def iter_parquet_batches(path: str, fi: int, reg: Registry, keep_all: KeepAll = "meta",
                         rows: int = 65536,
                         row_groups: tuple[int, int] | None = None) -> Iterator[tuple[Chunk, Arrow]]:
    """As `iter_parquet_chunks`, each chunk with the record batch of the auditor layout it was read from (its
    rows 1:1, hive partition values added as columns), or None when the chunk is not one (a table of records, a
    file refused or damaged): the split of `auditor.parts` spills such batches as they are. `row_groups` (first,
    stop): only those row groups of a file in the auditor layout, its rows numbered as in the whole file (the
    split's second process, issue 15); a table of records is then one chunk without a batch."""
    yield from _parquet_chunks(path, fi, reg, keep_all, rows, row_groups)


def _parquet_chunks(path: str, fi: int, reg: Registry, keep_all: KeepAll,
                    rows: int, row_groups: tuple[int, int] | None = None) -> Iterator[tuple[Chunk, Arrow]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:  # no pyarrow: a Parquet input is a bad record naming the file
        yield _file_error(reg, fi, path, f"cannot read as Parquet: {_short_error(e)}"), None
        return
    done = 0  # rows given so far
    try:
        try:
            fh = open_input(path)  # a FIFO or device is refused before pyarrow could wait on it (issue 12)
        except InputError as e:
            raise _Refused(str(e).removeprefix(f"{path}: ")) from None
        with fh:
            # pre_buffer off: with it, pyarrow's read-ahead cache kept every row group's buffers until the file
            # closed (RSS grew 110 MB per million rows read, 1.2 GB at 10M; flat at 0.24 GB without; the same speed
            # from a local disk: 4.3 s against 4.5 s to read the 10M-row bench file) (issue 15)
            pf = pq.ParquetFile(fh, pre_buffer=False)
            names = set(pf.schema_arrow.names)
            hive = {k: v for k, v in hive_values(path).items() if k not in names}  # dropped by write_to_dataset
            gen: Iterator[tuple[Chunk, Arrow]]
            if is_records_table(names) and row_groups is not None:  # not cut: the caller reads it whole
                raise _Refused("a table of records is read whole, not by row groups")
            if is_records_table(names):
                gen = ((ch, None) for ch in _records_table_chunks(pf, path, fi, reg, keep_all, rows, hive))
            else:
                problem = layout_problem(pf, hive)
                if problem is not None:
                    raise problem
                gen = _native_chunks(pf, names, path, fi, reg, keep_all, rows, hive, row_groups)
            for ch, batch in gen:
                done += ch.n
                yield ch, batch
    except _Refused as e:
        yield _file_error(reg, fi, path, str(e)), None
    except (pa.ArrowException, *_READ_ERRORS) as e:  # unreadable file: one bad record naming it
        if done:  # the rows before the damage are kept
            b = ChunkBuilder(reg, fi, path)
            b.add_record(Record(source=f"{path}:{done + 1}", file_index=fi, line=done + 1,
                                error=f"unreadable after row {done}: {_short_error(e)}"))
            yield b.finish(), None
        else:
            yield _file_error(reg, fi, path, f"cannot read as Parquet: {_short_error(e)}"), None


def small_file_batch(path: str, keep_all: KeepAll, max_rows: int) -> Arrow | None:
    """The whole of a Parquet file in the auditor's layout of at most `max_rows` rows as one record batch (its hive
    values added as columns, as `_native_chunks` reads it), for `small_files_chunk`; None for any other file
    (larger, empty, a table of records, refused, unreadable): the caller reads it the usual way, which reports
    what is wrong with it."""
    try:
        import pyarrow.parquet as pq

        with open_input(path) as fh:
            pf = pq.ParquetFile(fh, pre_buffer=False)
            names = set(pf.schema_arrow.names)
            rows = pf.metadata.num_rows
            if not 0 < rows <= max_rows or is_records_table(names):
                return None
            hive = {k: v for k, v in hive_values(path).items() if k not in names}
            if layout_problem(pf, hive) is not None:
                return None
            cols = _layout_columns(names, hive, keep_all)
            t = pf.read(columns=[c for c in cols if c in names])
        batches = t.combine_chunks().to_batches()
        if len(batches) != 1 or batches[0].num_rows != rows:
            return None
        batch = batches[0]
        return _with_constants(batch, {k: v for k, v in hive.items() if k in cols}, native=True) if hive else batch
    except Exception:  # noqa: BLE001 - any doubt: the usual reader, which reports the problem
        return None


def small_files_chunk(batches: Sequence[tuple[Arrow, int, str]], reg: Registry, keep_all: KeepAll) -> Chunk:
    """One chunk of the rows of several small files (`small_file_batch`, each with its file index and path, in
    input order, of one schema): each row keeps its file index and row number (`Chunk.fis`). Issue 15, a
    twenty-eighth session: read a chunk a file, a dataset of 328 monthly files took 6.7 s to replay against 3.5 s
    as one file."""
    import pyarrow as pa

    paths: dict[int, str] = {fi: p for _, fi, p in batches}
    table = pa.Table.from_batches([b for b, _, _ in batches]).unify_dictionaries().combine_chunks()
    batch = table.to_batches()[0]
    fis = np.concatenate([np.full(b.num_rows, fi, np.int64) for b, fi, _ in batches])
    rows = np.concatenate([np.arange(1, b.num_rows + 1, dtype=np.int64) for b, _, _ in batches])
    fi0, path0 = batches[0][1], batches[0][2]
    return _batch_chunk(batch, 0, fi0, path0, reg, keep_all, (fis, rows, paths))


def layout_problem(pf: Arrow, hive: dict[str, str | None]) -> Exception | None:
    """Why a Parquet file that is not a table of records cannot be read in the auditor's layout (a column missing
    from the file and from its hive-style directories `hive`, or a newer layout), as the exception its reader
    raises; None when it can."""
    names = set(pf.schema_arrow.names)
    missing = [c for c in REQUIRED if c not in names and c not in hive]
    if missing:
        return ValueError(f"not a deal-log/1 Parquet file: neither the auditor layout (no column {missing[0]!r}) "
                          f"nor a table of records (no column 'format', 'hands' or 'tricks')")
    layout_v = (pf.schema_arrow.metadata or {}).get(b"auditor.layout", b"1").decode(errors="replace")
    if layout_v not in LAYOUTS_READ:
        return _Refused(f"written in the auditor's Parquet layout {layout_v!r}: this auditor reads layouts "
                        f"{', '.join(LAYOUTS_READ)} (a newer auditor wrote it: convert it there to JSON Lines)")
    return None


# ---------------------------------------------------------------- hive-style partitions (issue 15)

HIVE_FIELDS = ("table", "game", "rules", "game_id", "time", "pack")
"""The deal-log/1 fields a hive-style directory (`table=club-7/`) may hold: `pyarrow.parquet.write_to_dataset(...,
partition_cols=[...])` drops them from the files; the reader gives them back from the path when a file lacks them.
Other keys (`month=2026-11`) are not deal-log fields and are ignored."""
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def hive_values(path: str) -> dict[str, str | None]:
    """The deal-log/1 fields named by the hive-style directories of a path (`.../table=club-7/month=11/x.parquet`
    -> {"table": "club-7"}), URI-decoded as pyarrow writes them; the innermost wins; a null partition
    (`table=__HIVE_DEFAULT_PARTITION__`, where write_to_dataset puts the rows whose table is null: the lines that
    are no deal) is None, a null column (it was absent, and the file refused for lacking the column: issue 15)."""
    from urllib.parse import unquote

    out: dict[str, str | None] = {}
    parts = path.replace("\\", "/").split("/")[:-1]
    for seg in parts:
        k, eq, v = seg.partition("=")
        if eq and k in HIVE_FIELDS:
            out[k] = None if v == HIVE_NULL else unquote(v)
    return out


def _with_constants(batch: Arrow, values: dict[str, str | None], native: bool) -> Arrow:
    """A record batch with a constant column for each of `values` (the auditor layout's types when `native`; a
    null column for None)."""
    import pyarrow as pa

    n = batch.num_rows
    arrays = list(batch.columns)
    names = list(batch.schema.names)
    for k, v in values.items():
        if v is None:
            typ = pa.uint8() if native and k == "game" else (
                pa.dictionary(pa.int32(), pa.string()) if native and k != "time" else pa.string())
            arr = pa.nulls(n, typ)
        elif native and k == "game":
            code = GAME_ALIASES.get(norm_name(v))
            g = GAMES.index(code) if code in GAMES else (int(v) if v.isdigit() and int(v) < 255 else 255)
            arr = pa.array(np.full(n, g, np.uint8))
        elif native and k != "time":
            arr = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([v], pa.string()))
        else:
            arr = pa.array([v] * n, pa.string())
        arrays.append(arr)
        names.append(k)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def batch_chunk(batch: Arrow, row0: int, fi: int, path: str, reg: Registry, keep_all: KeepAll,
                origins: tuple[np.ndarray, np.ndarray, Sequence[str] | Mapping[int, str]] | None = None) -> Chunk:
    """A record batch of the auditor layout as a `Chunk` (rows numbered from `row0 + 1`, or each from its own file
    and row: `origins`, as `_batch_chunk`'s): the reader of spill files (`auditor.parts`)."""
    return _batch_chunk(batch, row0, fi, path, reg, keep_all, origins)


def _file_error(reg: Registry, fi: int, path: str, error: str) -> Chunk:
    """A chunk of one bad record for the whole file (line None: the path is its source)."""
    b = ChunkBuilder(reg, fi, path)
    b.add_record(Record(source=path, file_index=fi, line=None, error=error))
    return b.finish()


class _Refused(InputError):
    """A Parquet input refused whole, with the one-line reason (the message of its bad_record)."""


def _short_error(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _layout_columns(names: set[str], hive: dict[str, str | None] | None, keep_all: KeepAll) -> list[str]:
    """The layout's columns a reader takes from a file with columns `names` and hive values `hive` (the replay's
    only, unless `keep_all`)."""
    cols = list(REQUIRED) + [c for c in OPTIONAL if c in names or (hive and c in hive)]
    return cols if keep_all else [c for c in cols if c in REPLAY_COLS]


def _native_chunks(pf: Arrow, names: set[str], path: str, fi: int, reg: Registry, keep_all: KeepAll,
                   rows: int, hive: dict[str, str | None] | None = None,
                   row_groups: tuple[int, int] | None = None) -> Iterator[tuple[Chunk, Arrow]]:
    """The auditor's own layout (written by `auditor convert`), a record batch at a time, each chunk with its
    batch. `hive`: values of columns the file lacks, from its hive-style directories (`table=T/`), as constant
    columns. `row_groups` (first, stop): those row groups only, the rows numbered from the first's place."""
    cols = _layout_columns(names, hive, keep_all)
    in_file = [c for c in cols if c in names]
    row0 = 0
    if row_groups is None:
        batches = pf.iter_batches(batch_size=rows, columns=in_file)
    else:
        first, stop = row_groups
        row0 = sum(pf.metadata.row_group(g).num_rows for g in range(first))
        batches = pf.iter_batches(batch_size=rows, columns=in_file, row_groups=list(range(first, stop)))
    for batch in batches:
        if hive:
            batch = _with_constants(batch, {k: v for k, v in hive.items() if k in cols}, native=True)
        ch = _batch_chunk(batch, row0, fi, path, reg, keep_all)
        row0 += batch.num_rows
        yield ch, batch


def _ragged(arr: Arrow) -> Ragged:
    """A binary Arrow array as a Ragged (zero copy where possible)."""
    import pyarrow as pa

    n = len(arr)
    if pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    if pa.types.is_null(arr.type):
        return Ragged(np.zeros(n + 1, np.int64), np.zeros(0, np.uint8), np.zeros(n, bool))
    if not pa.types.is_binary(arr.type):
        raise ValueError(f"column of type {arr.type}, not binary")
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    if off[0] != 0 or off[-1] != len(data):
        # a slice of a longer array (a part's rows of one file, `parts._PartSource`): its own bytes only, a view.
        # Its buffer holds the other rows' bytes too: a bad card code among them failed the check of this slice
        # (issue 15, a twenty-eighth session: a traceback), and every check read the whole buffer, once per file
        # of the input (a 300k-deal dataset of 328 monthly files: its parts took 11.9 s against 3.7 s).
        data = data[off[0]:off[-1]]
        off = off - off[0]
    ok = validity(arr)
    return Ragged(off, data, np.ones(n, bool) if ok is None else ok)


def _encoded(arr: Arrow) -> tuple[np.ndarray, Arrow]:
    """(indices with -1 for null, the dictionary) of a string column, dictionary or not."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    return to_numpy(arr.indices, np.int64, -1), arr.dictionary


def _used_parts(arr: Arrow) -> tuple[np.ndarray, int, list[int], list[Any]]:
    """(indices with -1 for null, the dictionary's size, the entries the indices use, their values as Python
    objects) of a string column, dictionary or not: `_dict_parts` without the entries no row uses."""
    codes, values = _encoded(arr)
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(values)))
    return codes, len(values), used.tolist(), values.take(i64(used)).to_pylist()


def _dict_parts(arr: Arrow) -> tuple[np.ndarray, list[Any]]:
    """(indices with -1 for null, dictionary values as Python objects) of a string column, dictionary or not."""
    codes, values = _encoded(arr)
    return codes, values.to_pylist()


def _batch_chunk(batch: Arrow, row0: int, fi: int, path: str, reg: Registry, keep_all: KeepAll,
                 origins: tuple[np.ndarray, np.ndarray, Sequence[str] | Mapping[int, str]] | None = None) -> Chunk:
    """`origins` (file indices, rows, paths by file index): the batch's rows come from several files
    (`small_files_chunk`), each row with its own file index and row number (`Chunk.fis`); else they are rows
    row0 + 1 ... of file `fi`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    c = {name: batch.column(name) for name in batch.schema.names}
    if origins is None:
        line = np.arange(row0 + 1, row0 + n + 1, dtype=np.int64)
    else:
        fis, line, paths = origins

    def where(i: int) -> tuple[str, int]:  # the row's path and file index
        return (path, fi) if origins is None else (paths[int(fis[i])], int(fis[i]))
    raw_arr = c["raw"]
    status = np.zeros(n, np.uint8)
    slow: dict[int, Record] = {}
    raw_line: dict[int, bytes] = {}
    bad = np.zeros(n, bool)  # column rows that fail a check: judged the slow way
    if raw_arr.null_count < n:
        okr = validity(raw_arr)
        is_raw = np.ones(n, bool) if okr is None else okr
        for i in np.flatnonzero(is_raw).tolist():
            raw = raw_arr[i].as_py()
            raw_line[i] = raw
            p, f = where(i)
            src = f"{p}:{int(line[i])}"
            recs = list(_parse_raw(raw, p, f, int(line[i])))
            rec = recs[0] if recs else Record(src, f, int(line[i]), error="empty record")
            slow[i] = rec
            status[i] = 1 if rec.deal is not None else 2
    col = status == 0
    # a value a column's type in the layout cannot hold (another tool's wider or floating column): the row is
    # judged the slow way, not cast (issue 15)
    odd = np.zeros(n, bool)
    game = to_numpy(c["game"], np.uint8, 255, bad=odd)
    bad |= col & (game > 1)
    # rules and options -> ruleset ids
    r_codes, r_vals = _dict_parts(c["rules"])
    o_codes, o_vals = _dict_parts(c["options"])
    rset = np.full(n, -1, np.int32)
    combo = (game.astype(np.int64) * (len(r_vals) + 1) + r_codes + 1) * (len(o_vals) + 1) + o_codes + 1
    uniq_, inv = uniq(combo, return_inverse=True)
    ids = np.full(len(uniq_), -1, np.int32)
    for k, u in enumerate(uniq_.tolist()):
        o1 = u % (len(o_vals) + 1) - 1
        r1 = (u // (len(o_vals) + 1)) % (len(r_vals) + 1) - 1
        g = u // ((len(o_vals) + 1) * (len(r_vals) + 1))
        if g > 1 or r1 < 0:
            continue
        try:
            opts = orjson.loads(o_vals[o1]) if o1 >= 0 else {}
            if not isinstance(opts, dict):
                continue
            ids[k] = reg.ruleset_id(GAMES[g], r_vals[r1], opts)
        except (KeyError, TypeError, ValueError):  # no such preset or option, a bad value, options not JSON
            continue
    rset[:] = ids[inv]
    bad |= col & (rset < 0)
    # players and sides
    p_codes, p_size, p_used, p_vals = _used_parts(c["players"])
    lu_of = np.full(p_size + 1, -1, np.int64)
    np_of = np.zeros(p_size + 1, np.int64)
    for k, v in zip(p_used, p_vals, strict=True):  # only the line-ups this batch's rows name (issue 15: a row
        try:  # group's dictionary is each of its batches' too; half its line-ups were interned for nothing)
            players = orjson.loads(v)
        except orjson.JSONDecodeError:  # not JSON (or null): the row is judged the slow way
            continue
        if isinstance(players, list):
            lu_of[k] = reg.lineup_id(players)
            np_of[k] = len(players)
    lineup = lu_of[p_codes]  # p_codes -1 (null) picks the last entry: -1
    nplayers = np_of[p_codes]
    bad |= col & (lineup < 0)
    rmin = np.array([R.min_players for R in reg.rulesets] + [0], np.int64)
    rmax = np.array([R.max_players for R in reg.rulesets] + [0], np.int64)
    bad |= col & ((nplayers < rmin[rset]) | (nplayers > rmax[rset]))
    s_codes, s_vals = _dict_parts(c["sides"])
    sides = np.full(n, -1, np.int32)
    has_sides = s_codes >= 0
    if has_sides.any():
        key = s_codes * 16 + nplayers
        for kk in uniq(key[has_sides & col]).tolist():
            sv, nn = kk // 16, kk % 16
            try:
                sid = reg.sides_id(orjson.loads(s_vals[sv]), int(nn))
            except orjson.JSONDecodeError:  # not JSON (or null): invalid sides
                sid = -2
            m = key == kk
            sides[m] = sid
        bad |= col & has_sides & (sides < 0)
    # game ids: chunk-local codes into the batch's dictionary
    g_arr = c["game_id"]
    if not pa.types.is_dictionary(g_arr.type):
        g_arr = pc.dictionary_encode(g_arr)
    gid = to_numpy(g_arr.indices, np.int64, -1)
    gid_vals = g_arr.dictionary
    bad |= col & (gid < 0)
    deal_no = to_numpy(c["deal_no"], np.int64, 0, bad=odd)
    bad |= col & ((deal_no < 1) | (deal_no >= 2 ** 62))
    dealer = to_numpy(c["dealer"], np.int16, -1, bad=odd)
    bad |= col & ((dealer < 0) | (dealer >= nplayers))
    cutter = to_numpy(c["cutter"], np.int16, -1, bad=odd)
    bad |= col & ((cutter >= nplayers) | ((cutter < 0) & _present(c["cutter"])))  # a stored -1 is no "no cutter"
    turn_up = to_numpy(c["turn_up"], np.uint8, NOCARD, bad=odd)
    shown = to_numpy(c["shown"], np.uint8, NOCARD, bad=odd)
    beg = to_numpy(c["beg"], np.int8, 0, bad=odd)
    bad |= col & ((turn_up >= 52) | ((shown >= 52) & ((shown != NOCARD) | _present(c["shown"]))) | (beg > 3)
                  | (beg < 0))
    bunched = to_numpy(c["bunched"], bool, False)
    rg = {name: _ragged(c[name]) for name in CARD_COLS}
    lens = {name: _ragged(c[LEN_COLS[name]]) for name in LEN_COLS}
    for name in CARD_COLS:  # every card code < 52
        d = rg[name].data
        if d.size and (d >= 52).any():
            rows = np.repeat(np.arange(n), rg[name].lens())[d >= 52]
            bad[rows] |= col[rows]
    for name, ln in lens.items():
        body = rg[name]
        cnt = ln.lens()
        if name in ("hands", "discards"):
            bad |= col & body.has & (cnt != nplayers)
        bad |= col & (body.has != ln.has)
        # the lengths add up to the cards
        cs = np.zeros(len(ln.data) + 1, np.int64)
        np.cumsum(ln.data, out=cs[1:])
        sums = cs[ln.off[1:]] - cs[ln.off[:-1]]
        bad |= col & body.has & (sums != body.lens())
        zero = ln.data == 0
        if zero.any():  # an empty seat or trick: the slow path judges it
            rows = np.repeat(np.arange(n), cnt)[zero]
            bad[rows] |= col[rows]
    bad |= col & ~rg["hands"].has & ~rg["tricks"].has
    w = 3 * nplayers + 1
    bad |= col & rg["runs"].has & ((rg["runs"].lens() % np.maximum(w, 1)) != 0)
    # recorded
    ns = np.array([reg.n_sides(int(s), int(k)) if (s >= 0 or k > 0) else 0
                   for s, k in zip(sides.tolist(), nplayers.tolist(), strict=True)], np.int64) if n <= 64 else \
        _ns_vec(sides, nplayers, reg)
    S = max(1, int(ns[col].max()) if col.any() else 1)
    rp, rp_has, okp = _lists(c["rec_points"], ns, S)
    rt, rt_has, okt = _lists(c["rec_totals"], ns, S)
    bad |= col & (~okp | ~okt)
    rw = to_numpy(c["rec_winner"], np.int16, -1, bad=odd)
    bad |= col & ((rw >= ns) | ((rw < 0) & _present(c["rec_winner"])))
    rec_has = to_numpy(c["recorded"], bool, False)
    bad |= col & ~rec_has & (rp_has | rt_has | (rw >= 0))
    bad |= col & odd
    claims: dict[int, tuple[tuple[int, int], ...]] = {}
    if "claims" in c and c["claims"].null_count < n:
        texts = c["claims"].to_pylist()
        for i in np.flatnonzero(col).tolist():
            if texts[i] is None:
                continue
            try:
                cl = claims_of(orjson.loads(texts[i]), int(nplayers[i]))
            except orjson.JSONDecodeError:
                cl = None
            if cl is None:
                bad[i] = True  # judged the slow way, from the row's values
            else:
                claims[i] = cl
    # rows that failed a check: rebuilt as JSON objects and judged by the reader
    for i in np.flatnonzero(bad).tolist():
        claims.pop(i, None)
        obj = _row_obj(batch, i)
        p, f = where(i)
        rec = record_from_obj(obj, f"{p}:{int(line[i])}", f, int(line[i]))
        slow[i] = rec
        status[i] = 1 if rec.deal is not None else 2
        raw_line[i] = orjson.dumps(obj)
    table: list[str | None] | DictColumn | None = None
    pack: list[str | None] | DictColumn | None = None
    time: list[str | None] | None = None
    extra: list[str | None] | None = None
    if keep_all == "meta":  # the audit: table and pack as codes, no Python string per row; time as read
        table = DictColumn.of(c["table"])
        pack = DictColumn.of(c["pack"]) if "pack" in c else None
        time = c["time"].to_pylist() if "time" in c else None
    elif keep_all:
        table = c["table"].to_pylist()
        time = c["time"].to_pylist() if "time" in c else [None] * n
        pack = c["pack"].to_pylist() if "pack" in c else [None] * n
        extra = c["extra"].to_pylist() if "extra" in c else [None] * n
    ch = Chunk(
        n=n, fi=fi, path=path, line=line, status=status, slow=slow, game=game, rset=rset,
        lineup=lineup.astype(np.int32), sides=sides, nplayers=nplayers.astype(np.int8), dealer=dealer,
        cutter=cutter, gid=gid, deal_no=deal_no, beg=beg, bunched=bunched, turn_up=turn_up, shown=shown,
        deck=rg["deck"], hands=rg["hands"], hand_lens=lens["hands"], runs=rg["runs"], discards=rg["discards"],
        disc_lens=lens["discards"], tricks=rg["tricks"], trick_lens=lens["tricks"], rp=rp, rp_has=rp_has, rt=rt,
        rt_has=rt_has, rw=rw, rec_has=rec_has, raw_line=raw_line, table=table, time=time, pack=pack, extra=extra,
        gid_vals=gid_vals, claims=claims,
    )
    if origins is not None and bool((fis != fi).any()):
        ch.fis, ch.paths = fis, paths
    return ch


def _ns_vec(sides: np.ndarray, n: np.ndarray, reg: Registry) -> np.ndarray:
    key = sides.astype(np.int64) * 16 + n
    uniq_, inv = uniq(key, return_inverse=True)
    vals = np.array([reg.n_sides(int(u // 16), int(u % 16)) if u % 16 > 0 else 0 for u in uniq_], np.int64)
    out: np.ndarray = vals[inv]
    return out


def _lists(arr: Arrow, ns: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list<int> column as a dense [n, S] array, the presence mask and whether each length is `ns`."""
    import pyarrow as pa

    n = len(arr)
    out = np.zeros((n, S), np.int32)
    if pa.types.is_null(arr.type):
        return out, np.zeros(n, bool), np.ones(n, bool)
    if pa.types.is_large_list(arr.type):  # 64-bit offsets (polars writes large_list: issue 15)
        width = 8
    elif pa.types.is_list(arr.type):
        width = 4
    else:
        raise ValueError(f"column of type {arr.type}, not a list")
    ok_v = validity(arr)
    has = np.ones(n, bool) if ok_v is None else ok_v
    off = np.frombuffer(arr.buffers()[1], np.int32 if width == 4 else np.int64, count=n + 1,
                        offset=arr.offset * width).astype(np.int64)
    lens = np.diff(off)
    ok = ~has | (lens == ns)
    values = arr.values
    if off[0] != 0 or off[-1] != len(values):  # a slice of a longer array: its own values only (as `_ragged`)
        values = values.slice(int(off[0]), int(off[-1] - off[0]))
        off = off - off[0]
    odd = np.zeros(len(values), bool)
    vals = to_numpy(values, np.int32, 0, bad=odd).astype(np.int64) if len(values) else np.zeros(0, np.int64)
    if odd.any():  # a value no int32 holds (a float, a wide integer: issue 15): the row is judged the slow way
        ok[np.searchsorted(off, np.flatnonzero(odd), side="right") - 1] = False
    fill = has & ok & (lens <= S)
    cnt = np.where(fill, lens, 0)
    rows = np.repeat(np.arange(n), cnt)
    colx = np.arange(len(rows)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    src = np.repeat(off[:-1], cnt) + colx
    if len(src):
        out[rows, colx] = vals[src]
    return out, has, ok


def _parse_raw(raw: bytes, path: str, fi: int, row: int) -> Iterator[Record]:
    yield from parse_line(raw, path, fi, row, json_loader())


def _row_obj(batch: Arrow, i: int) -> dict[str, Any] | bytes:
    """The JSON object a column row stands for, built from its raw values (cards as strings; codes that are no
    card as '#code', which the replay reports as unknown cards)."""
    row = {name: batch.column(name)[i].as_py() for name in batch.schema.names}
    return row_dict_to_obj(row)


def _present(arr: Arrow) -> np.ndarray:
    """Which rows of a column hold a value (not null): a stored value equal to the reader's fill for null (-1, the
    no-card code) is not taken for a missing one (another tool's column: issue 15)."""
    ok = validity(arr)
    return np.ones(len(arr), bool) if ok is None else ok


def _whole(v: Any) -> Any:
    """A float that is a whole number as that int (in a list too); any other value as it is."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_whole(x) for x in v]
    return v


def _index(x: Any, n: int) -> TypeGuard[int]:
    """Whether x is an index into a table of n entries (an int in [0, n), not a bool)."""
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < n


def _cards(b: bytes) -> list[str]:
    return [CARD_STR[x] if x < 52 else f"#{x}" for x in b]


def _split(b: bytes, lens: bytes | None) -> list[list[str]]:
    out, p = [], 0
    for k in (lens or b""):
        out.append(_cards(b[p:p + k]))
        p += k
    return out


def row_dict_to_obj(row: dict[str, Any]) -> dict[str, Any] | bytes:
    """A Parquet row (as Python values) back to its deal-log/1 record (a dict), or the raw line (bytes)."""
    raw = row.get("raw")
    if raw is not None:
        return bytes(raw)
    # another tool's columns: a whole float (pandas' nullable integers) is the integer it stands for; a code that
    # is no index of its table (negative, fractional, too large) is kept as it is, for the validator to name
    row = {k: _whole(v) for k, v in row.items()}
    out: dict[str, Any] = {"format": "deal-log/1"}
    g = row.get("game")
    out["game"] = GAMES[g] if _index(g, len(GAMES)) else g
    out["rules"] = row.get("rules")
    if row.get("options") is not None:
        out["options"] = orjson.loads(row["options"])
    out["table"] = row.get("table")
    out["game_id"] = row.get("game_id")
    out["deal_no"] = row.get("deal_no")
    if row.get("time") is not None:
        out["time"] = row["time"]
    out["players"] = orjson.loads(row["players"]) if row.get("players") is not None else None
    if row.get("sides") is not None:
        out["sides"] = orjson.loads(row["sides"])
    out["dealer"] = row.get("dealer")
    if row.get("cutter") is not None:
        out["cutter"] = row["cutter"]
    if row.get("pack") is not None:
        out["pack"] = row["pack"]
    if row.get("deck") is not None:
        out["deck"] = _cards(row["deck"])
    if row.get("hands") is not None:
        out["hands"] = _split(row["hands"], row.get("hand_lens"))
    t = row.get("turn_up")
    out["turn_up"] = CARD_STR[t] if _index(t, 52) else (f"#{t}" if t is not None else None)
    if row.get("shown") is not None:
        out["shown"] = CARD_STR[row["shown"]] if _index(row["shown"], 52) else f"#{row['shown']}"
    if row.get("beg"):
        out["beg"] = BEGS[row["beg"]] if _index(row["beg"], len(BEGS)) else row["beg"]
    if row.get("runs") is not None:
        n = len(out["players"] or [])
        r = row["runs"]
        w = 3 * n + 1
        out["runs"] = [{"cards": [_cards(r[j * w + 3 * s:j * w + 3 * s + 3]) for s in range(n)],
                        "turn_up": _cards(r[j * w + 3 * n:j * w + 3 * n + 1])[0]} for j in range(len(r) // max(w, 1))]
    if row.get("discards") is not None:
        out["discards"] = _split(row["discards"], row.get("discard_lens"))
    if row.get("tricks") is not None:
        out["tricks"] = _split(row["tricks"], row.get("trick_lens"))
    if row.get("claims") is not None:
        try:
            out["claims"] = orjson.loads(row["claims"])
        except orjson.JSONDecodeError:  # damaged: the text itself, which the validator names
            out["claims"] = row["claims"]
    if row.get("bunched"):
        out["bunched"] = True
    if row.get("recorded"):
        rec: dict[str, Any] = {}
        if row.get("rec_points") is not None:
            rec["points"] = row["rec_points"]
        if row.get("rec_totals") is not None:
            rec["totals"] = row["rec_totals"]
        if row.get("rec_winner") is not None:
            rec["winner"] = row["rec_winner"]
        out["recorded"] = rec
    if row.get("extra") is not None:
        out.update(orjson.loads(row["extra"]))
    return out


def read_records(path: str, file_index: int = 0) -> Iterator[Record]:
    """Every row of a deal-log/1 Parquet file as a `Record` (for `dealog.read_records`), streamed by batches."""
    reg = Registry()
    for ch in iter_parquet_chunks(path, file_index, reg, keep_all=True):
        for i in range(ch.n):
            if ch.status[i] != 0:
                yield ch.slow[i]
                continue
            obj = row_to_obj(ch, i, reg)
            yield record_from_obj(obj, ch.source(i), file_index, int(ch.line[i]))


def iter_lines(path: str) -> Iterator[bytes]:
    """The rows of a Parquet file as JSON Lines (canonical records; raw rows as stored)."""
    reg = Registry()
    for ch in iter_parquet_chunks(path, 0, reg, keep_all=True):
        for i in range(ch.n):
            if ch.status[i] != 0:
                deal = ch.slow[i].deal
                if i in ch.raw_line:
                    yield ch.raw_line[i]
                elif deal is not None:
                    yield orjson.dumps(deal.to_canonical())
                continue
            yield orjson.dumps(row_to_obj(ch, i, reg))


# ---------------------------------------------------------------- a table of records (pandas, pyarrow) (issue 12)
#
# A Parquet file written by `df.to_parquet()` or `pq.write_table(pa.Table.from_pylist(records))` from deal-log/1
# records: one column per field, named as the field. Each column's type is checked once against what its field can
# hold (else the file is refused, naming the column and the type); each row is then read as the JSON Lines reader
# reads a parsed line: a null is an absent field, a struct is an object (its null members absent), text in a column
# of lists or objects is JSON, a whole float in an integer column (pandas writes a column with gaps as float) is
# that integer. Unknown columns are unknown fields (pandas' index columns are not).

_STR_FIELDS = ("format", "game", "rules", "table", "game_id", "time", "pack", "turn_up", "shown", "beg")
_INT_FIELDS = ("deal_no", "dealer", "cutter")
_NESTED = {  # field -> (list depth of its values, element kind, what it is)
    "players": (1, "string", "a list of player ids (list<string>)"),
    "sides": (2, "integer", "a list of lists of seats (list<list<int>>)"),
    "deck": (1, "string", "a list of cards (list<string>)"),
    "hands": (2, "string", "a list of card lists, one per seat (list<list<string>>)"),
    "discards": (2, "string", "a list of card lists, one per seat (list<list<string>>)"),
    "tricks": (2, "string", "a list of tricks, each a list of cards (list<list<string>>)"),
    "runs": (1, "struct", "a list of {cards, turn_up} objects (list<struct>)"),
    "claims": (1, "struct", "a list of {revoke, trick} objects (list<struct>)"),
    "options": (0, "struct", "an object (struct, map or JSON text)"),
    "recorded": (0, "struct", "an object (struct, map or JSON text)"),
    "observed": (0, "struct", "an object (struct, map or JSON text)"),  # (issue 16) a score sheet's facts
}
_INDEX_COL = "__index_level_"


def is_records_table(names: Iterable[str]) -> bool:
    """A table of records (one column per deal-log/1 field) rather than the auditor's own layout."""
    have = set(names)
    return "hand_lens" not in have and "trick_lens" not in have and bool(have & {"format", "hands", "tricks"})


def _is_text(t: Arrow) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _kind_ok(t: Arrow, kind: str) -> bool:
    import pyarrow as pa

    if pa.types.is_null(t):
        return True
    if kind == "string":
        return _is_text(t)
    if kind == "integer":
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t))
    return bool(pa.types.is_struct(t) or pa.types.is_map(t) or _is_text(t))


def _list_value(t: Arrow) -> Arrow:
    import pyarrow as pa

    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return t.value_type
    return None


def column_problem(name: str, t: Arrow) -> str | None:
    """Why a column of Arrow type `t` cannot hold the deal-log/1 field `name` (None: it can)."""
    import pyarrow as pa

    t0 = t
    if pa.types.is_null(t):
        return None
    if name in _STR_FIELDS:
        ok = _is_text(t) or (name == "time" and pa.types.is_temporal(t))
        want = "text (string)" + (" or a timestamp" if name == "time" else "")
    elif name in _INT_FIELDS:
        ok = pa.types.is_integer(t) or pa.types.is_floating(t)
        want = "an integer"
    elif name == "bunched":
        ok = pa.types.is_boolean(t)
        want = "true or false (bool)"
    elif name in _NESTED:
        depth, kind, want = _NESTED[name]
        if _is_text(t):
            return None  # JSON text, parsed row by row
        ok = True
        for _ in range(depth):
            t = _list_value(t)
            if t is None:
                ok = False
                break
        ok = ok and _kind_ok(t, kind)
    else:
        return None
    if ok:
        return None
    return f"column {name!r} has type {t0}; deal-log/1 {name!r} is {want}"


def _records_table_chunks(pf: Arrow, path: str, fi: int, reg: Registry, keep_all: KeepAll,
                          rows: int, hive: dict[str, str | None] | None = None) -> Iterator[Chunk]:
    sch = pf.schema_arrow
    for f in sch:
        why = column_problem(f.name, f.type)
        if why is not None:
            raise _Refused(f"cannot read as a table of deal-log/1 records: {why}")
    in_file = [f.name for f in sch if not f.name.startswith(_INDEX_COL)]
    names = in_file + [k for k in (hive or {}) if k not in in_file]
    text_cols = {f.name for f in sch if f.name in _NESTED and _is_text(f.type)}
    row0 = 0
    for batch in pf.iter_batches(batch_size=min(rows, 8192), columns=in_file):
        cols = {name: batch.column(name).to_pylist() for name in in_file}
        for k, v in (hive or {}).items():
            cols[k] = [v] * batch.num_rows
        b = ChunkBuilder(reg, fi, path, keep_all)
        for i in range(batch.num_rows):
            line = row0 + i + 1
            src = f"{path}:{line}"
            obj, err = _row_record(names, cols, i, text_cols)
            if err is not None:
                b.add_record(Record(src, fi, line, error=err, raw=obj))
                b.raw_line[b.rows - 1] = _dumps_safe(obj)
                continue
            if not b.add_obj(obj, line):
                rec = record_from_obj(obj, src, fi, line)
                b.add_record(rec)
                if rec.deal is None:
                    b.raw_line[b.rows - 1] = _dumps_safe(obj)
        row0 += batch.num_rows
        yield b.finish()


def _dumps_safe(obj: dict[str, Any]) -> bytes:
    """A bad row as a JSON line (convert keeps it as read)."""
    try:
        return orjson.dumps(obj, default=str)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a value nested too deeply: each value as text
        return orjson.dumps({k: str(v) for k, v in obj.items()})


def _row_record(names: list[str], cols: dict[str, list[Any]], i: int,
                text_cols: set[str]) -> tuple[dict[str, Any], str | None]:
    """Row i as a deal-log/1 object, or the object so far and why the row cannot be one."""
    obj: dict[str, Any] = {}
    for name in names:
        v = cols[name][i]
        if v is None:
            continue
        if name in text_cols:
            try:
                v = orjson.loads(v)
            except orjson.JSONDecodeError:
                text = v if len(v) <= 40 else v[:37] + "..."
                return obj, f"column {name!r}: not valid JSON: {text!r}"
            if v is None:
                continue
        elif name in ("options", "recorded", "observed"):
            v = _object(v)
        elif name in ("runs", "claims") and isinstance(v, list):
            v = [_object(x) if isinstance(x, (dict, list)) else x for x in v]
        elif name in _INT_FIELDS:
            if isinstance(v, float):
                if v != v:  # NaN: pandas' mark of a gap
                    continue
                if v.is_integer():
                    v = int(v)
        elif name == "time" and not isinstance(v, str):
            v = v.isoformat() if hasattr(v, "isoformat") else str(v)
        elif name not in _STR_FIELDS and name not in _NESTED and name != "bunched":
            v = _jsonable(v)
        obj[name] = v
    return obj, None


def _object(v: Any) -> Any:
    """A struct's value (a dict; its null members are absent) or a map's (a list of pairs) as an object."""
    if isinstance(v, list) and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        v = dict(v)
    if isinstance(v, dict):
        return {k: x for k, x in v.items() if x is not None}
    return v


def _jsonable(v: Any) -> Any:
    """An unknown column's value as a JSON value (dates as ISO text, bytes as text)."""
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v
