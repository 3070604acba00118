"""Saved counts (issue 15): the merged counts of every detector in one Parquet file, loaded back equal.

`save_counts(path, counts, meta, blobs)` writes `counts` (detector name -> counts tree), the caller's `meta` (JSON)
and named byte strings (`blobs`) as one file, atomically (`auditor.atomic`); `load_counts(path)` gives
`(counts, meta, blobs)` back: the same types, dtypes, shapes, bit-exact floats. No pickle, nothing executable: a
file names only data kinds, numpy dtypes and dataclasses of the auditor package, which are re-created without
running their `__init__`/`__post_init__` (the saved fields are the state) and only if the class is one of the
package's own (its module is `auditor` or `auditor.*`, found in the package's folder).

A counts tree is plain data: dataclasses of `auditor.*`, `dict` (keys: any hashable value of the tree: str, int,
float, bool, None, tuples and frozen dataclasses of those), `list`, `tuple`, `set`, `frozenset`, numpy arrays
(bool, integer, float, complex, datetime/timedelta, fixed-width str/bytes dtypes; any shape; read back
C-contiguous), numpy arrays of dtype object whose elements are scalars of the tree (str, int, float, bool, None),
numpy scalars, `str`, `bytes`, `int` (any size), `float` (bit-exact: nan payloads, -0.0, inf), `bool`, `None`,
`fractions.Fraction`. Exact types only: a subclass (defaultdict, a named tuple, a masked array) is refused, as is
anything else, with the path of the value in the tree.

Layout (version 1). One row per node of the tree, in pre-order (a container's row, then its children's rows), then
one row per blob:

| column | type | holds |
|---|---|---|
| `kind` | dictionary string | the node's kind: `dict list tuple set frozenset dataclass ndarray objarray npscalar int bigint float bool str bytes none fraction`; `more` (a continuation of the data above); `blob` |
| `n` | int64 | containers: children (a dict: key/value pairs, each pair two nodes, key first); `dataclass`: fields; `objarray`: elements (C order); `fraction`: 2 (numerator, denominator); `ndarray`, `bytes`, `str`, `bigint`, `blob`: the `more` rows that follow it; else 0 |
| `field` | string, null | the field name of a dataclass's child; a blob's name |
| `name` | string, null | `dataclass`: `module:qualname`; `ndarray`, `npscalar`: the numpy dtype (`dtype.str`, byte order included), but `U` / `S` for a `numpy.str_` / `numpy.bytes_` scalar (its data: UTF-8 / the bytes); `objarray`: `object` |
| `shape` | list<int64>, null | `ndarray`, `objarray`: the shape |
| `i64` | int64, null | `int` (-2^63 <= x < 2^63), `bool` (0/1), `float` (its IEEE-754 bits as a signed int64) |
| `data` | large_binary | `ndarray`: the elements in C order; `npscalar`: its bytes; `str`: UTF-8 (lone surrogates kept, `surrogatepass`); `bytes`, `blob`: the bytes; `bigint`: two's complement, little-endian; `more`: the next piece (pieces are at most `PIECE` bytes, so no value is near Arrow's or Parquet's limits); else empty |

The root node is the `counts` dict (a value may be a `Deferred`, made when the writer reaches it; a blob
a `StreamedBlob`, written piece by piece; the pages of memory-mapped arrays are let go after each row group: the
rows are the same). Rows are written a row group at a time (at most `ROW_GROUP` rows, closed
early when its data reaches `FLUSH_BYTES`) and read back a row group at a time, so neither side holds the whole
file's rows (issue 15); a reader takes any grouping of the rows.

The file's key-value metadata: `auditor.format` = `auditor.counts`,
`auditor.layout` = `1`, `auditor.version` (the package that wrote it), `auditor.meta` (the caller's `meta`, JSON),
`auditor.check` (CRC-32 of the four values above, so that a damaged footer is seen). Pages are written with
checksums (zstd-compressed) and verified on reading.

`load_counts` refuses with `CountsFileError` (an `InputError`: the CLI prints one line, exit 2) a file that cannot be
read (missing, truncated, corrupt), that is not a counts file, whose layout it does not know, written by another
version of the auditor (unless `allow_other_version`), or whose `meta["fingerprint"]` differs from
`expect_fingerprint` (the message names what differs).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import mmap
import os
import struct
import sys
import tempfile
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from .version import __version__
from .atomic import atomic_path
from .errors import InputError

FORMAT = "auditor.counts"
LAYOUT_VERSION = 1
PIECE = 1 << 24  # 16 MiB: the largest value of one row; longer data continues on `more` rows
ROW_GROUP = 1 << 16
FLUSH_BYTES = 1 << 26  # 64 MiB: rows are written out when their data reaches this, even before a row group is full

KINDS = ("dict", "list", "tuple", "set", "frozenset", "dataclass", "ndarray", "objarray", "npscalar", "int",
         "bigint", "float", "bool", "str", "bytes", "none", "fraction", "more", "blob")
(K_DICT, K_LIST, K_TUPLE, K_SET, K_FROZENSET, K_DATACLASS, K_NDARRAY, K_OBJARRAY, K_NPSCALAR, K_INT, K_BIGINT,
 K_FLOAT, K_BOOL, K_STR, K_BYTES, K_NONE, K_FRACTION, K_MORE, K_BLOB) = range(len(KINDS))
ARRAY_KINDS = "biufcmMUS"  # numpy dtype kinds of an ndarray / npscalar node
_SEQ_KINDS = {list: K_LIST, tuple: K_TUPLE, set: K_SET, frozenset: K_FROZENSET}
_SEQ_TYPES = {K_LIST: list, K_TUPLE: tuple, K_SET: set, K_FROZENSET: frozenset}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")
_PKG_DIR = Path(__file__).resolve().parent


class Deferred:
    """A detector's counts made only when `save_counts` reaches them (`make()`) and dropped once written: a caller
    whose counts are held out of memory (the audit's spilled counts) folds them one detector at a time while the
    file is written, instead of holding every detector's at once (issue 15: `--save-counts` at 10M deals). The file
    is the same as for the made value."""

    __slots__ = ("make", "done")

    def __init__(self, make: Any, done: Any = None) -> None:
        self.make = make
        self.done = done  # called once the value's rows are written and the value dropped (the audit gives back
        # the freed memory there: one detector's fold at a time)


class StreamedBlob:
    """A blob given as its length and a maker of its pieces (bytes-like, in order, `size` bytes in all), written
    piece by piece rather than joined first (issue 15: the games summary of a 10M-deal audit is 0.7 GB). Its rows
    are those of the joined bytes, only flushed as they come (the file's row groups may differ; a reader takes any
    grouping of the rows)."""

    __slots__ = ("size", "pieces")

    def __init__(self, size: int, pieces: Any) -> None:
        self.size = int(size)
        self.pieces = pieces


INTERN_MAX = 64  # strings up to this long are read as one object per value (`_Reader.strs`)
BLOB_SPILL = 1 << 25  # 32 MiB, two rows: a longer blob is read into a file of the spill folder, if any


class BlobFile:
    """A blob that `load_counts` copied to a file of its spill folder (`BLOB_SPILL`): `size` bytes at `path`, read
    in pieces (`pieces`) or whole (`read`). The file lives as long as the caller's spill folder."""

    __slots__ = ("path", "size", "name")

    def __init__(self, path: str, size: int, name: str = "") -> None:
        self.path = path
        self.size = int(size)
        self.name = name

    def __len__(self) -> int:
        return self.size

    def pieces(self, piece: int = PIECE) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            while True:
                b = f.read(piece)
                if not b:
                    return
                yield b

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()


class CountsFileError(InputError):
    """A saved-counts file that cannot be used: unreadable, not a counts file, another layout or auditor version,
    another fingerprint, or a value that cannot be saved. One line; the CLI exits 2."""


# ---------------------------------------------------------------- writing


class _Bad(Exception):
    """A value that cannot be saved; the path to it is gathered while the recursion unwinds."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.path: list[Any] = []


class _Field:
    """A dataclass field in a path of the tree (shown as `.name`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _fmt_path(path: list[Any]) -> str:
    if not path:
        return "counts"
    out = str(path[0])
    for p in path[1:]:
        out += f".{p.name}" if isinstance(p, _Field) else f"[{p!r}]"
    return out


def _class_name(cls: type) -> str:
    mod, qual = cls.__module__, cls.__qualname__
    if not (mod == "auditor" or mod.startswith("auditor.")):
        raise _Bad(f"a dataclass {mod}.{qual} (only dataclasses of the auditor package can be saved)")
    if _lookup(sys.modules.get(mod), qual) is not cls:
        raise _Bad(f"the dataclass {mod}.{qual} cannot be found again by its name (defined in a function?)")
    return f"{mod}:{qual}"


def _lookup(module: Any, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        if obj is None or part.startswith("<"):
            return None
        obj = getattr(obj, part, None)
    return obj


class _Writer:
    """The columns of the file, filled node by node in pre-order. `kind` and `n` have a value on every row; the
    other columns only on some (row -> value, the row counted from the last flush), null elsewhere.

    With a `sink`, the rows go to it as a table whenever they fill a row group (or hold `FLUSH_BYTES` of data):
    saving holds one row group of rows, not a list entry per node of the whole tree (issue 15: the counts of a 1M-deal
    audit are 4.8M rows, and holding them as lists took more memory than the counts themselves). A flush comes only
    after a row is complete (its `field`, `name`, `shape`, data set), so no row is split from its values."""

    def __init__(self, sink: Any = None) -> None:
        self.sink = sink
        self._reset()
        self.mapped: dict[int, mmap.mmap] = {}  # file maps under the arrays written since the last flush
        self.classes: dict[type, str] = {}
        self.enc: dict[type, Any] = {
            str: self.str_, int: self.int_, float: self.float_, bool: self.bool_, type(None): self.none,
            np.ndarray: self.ndarray, dict: self.dict_, list: self.seq, tuple: self.seq, set: self.seq,
            frozenset: self.seq, bytes: self.bytes_, Fraction: self.fraction, Deferred: self.deferred,
        }

    def _reset(self) -> None:
        self.kind: list[int] = []
        self.n: list[int] = []
        self.field: dict[int, str] = {}
        self.name: dict[int, str] = {}
        self.shape: dict[int, list[int]] = {}
        self.i64: dict[int, int] = {}
        self.data: dict[int, Any] = {}  # bytes-like
        self.nbytes = 0  # of `data`

    def flush(self, last: bool = False) -> None:
        """The rows so far to the sink, when they fill a row group (or `last`)."""
        if self.sink is not None and self.kind and (last or len(self.kind) >= ROW_GROUP or self.nbytes >= FLUSH_BYTES):
            self.sink(self.table(None))
            self._reset()
            self._release()

    def _release(self) -> None:
        """Drop the pages of the file maps read since the last flush from this process's memory (issue 15: saving
        marked_ten's memory-mapped parts touched every page of them, 4.5 GB resident at 10M deals). The maps are
        read-only views of files: a page read again later comes back from the file."""
        for mm in self.mapped.values():
            try:
                mm.madvise(mmap.MADV_DONTNEED)
            except (AttributeError, OSError, ValueError):  # no madvise on this platform, or a closed map
                pass
        self.mapped.clear()

    def encode(self, x: Any) -> None:
        f = self.enc.get(type(x))
        (f or self.other)(x)

    def with_data(self, kind: int, data: Any, name: str | None = None, shape: list[int] | None = None) -> None:
        """A node whose data may be long: its first piece on the node's row, the rest on `more` rows."""
        row = len(self.kind)
        if name is not None:
            self.name[row] = name
        if shape is not None:
            self.shape[row] = shape
        self.nbytes += len(data)
        if len(data) <= PIECE:
            self.kind.append(kind)
            self.n.append(0)
            self.data[row] = data
            self.flush()
            return
        view = memoryview(data).cast("B")
        pieces = [view[i:i + PIECE] for i in range(0, len(view), PIECE)]
        self.kind.append(kind)
        self.n.append(len(pieces) - 1)
        for j, piece in enumerate(pieces):
            if j:
                self.kind.append(K_MORE)
                self.n.append(0)
            self.data[row + j] = piece
        self.flush()

    def str_(self, x: str) -> None:
        self.with_data(K_STR, x.encode("utf-8", "surrogatepass"))

    def int_(self, x: int) -> None:
        if _INT64_MIN <= x <= _INT64_MAX:
            self.i64[len(self.kind)] = x
            self.kind.append(K_INT)
            self.n.append(0)
            self.flush()
        else:
            self.with_data(K_BIGINT, x.to_bytes((x.bit_length() + 8) // 8, "little", signed=True))

    def float_(self, x: float) -> None:
        self.i64[len(self.kind)] = _INT64.unpack(_DOUBLE.pack(x))[0]
        self.kind.append(K_FLOAT)
        self.n.append(0)
        self.flush()

    def bool_(self, x: bool) -> None:
        self.i64[len(self.kind)] = int(x)
        self.kind.append(K_BOOL)
        self.n.append(0)
        self.flush()

    def none(self, x: None) -> None:
        self.kind.append(K_NONE)
        self.n.append(0)
        self.flush()

    def bytes_(self, x: bytes) -> None:
        self.with_data(K_BYTES, x)

    def ndarray(self, x: np.ndarray) -> None:
        dt = x.dtype
        if dt.kind in ARRAY_KINDS and dt.fields is None and dt.subdtype is None:
            raw = np.ascontiguousarray(x).reshape(-1).view(np.uint8).data if x.size else b""
            mm = _file_map(x) if self.sink is not None else None
            if mm is not None:
                self.mapped[id(mm)] = mm
            self.with_data(K_NDARRAY, raw, dt.str, list(x.shape))
        elif dt.kind == "O":
            self.shape[len(self.kind)] = list(x.shape)
            self.name[len(self.kind)] = "object"
            self.kind.append(K_OBJARRAY)
            self.n.append(x.size)
            self.flush()
            for i, v in enumerate(x.flat):
                try:
                    if type(v) not in _OBJ_ELEMENTS:
                        raise _Bad(f"an object array may hold str, int, float, bool or None, not "
                                   f"{type(v).__module__}.{type(v).__qualname__}")
                    self.encode(v)
                except _Bad as e:
                    e.path.append(i)
                    raise
        else:
            raise _Bad(f"a numpy array of dtype {dt} (numbers, bool, dates and fixed-width strings only)")

    def dict_(self, x: dict[Any, Any]) -> None:
        self.kind.append(K_DICT)
        self.n.append(len(x))
        self.flush()
        enc = self.enc
        for k, v in x.items():
            try:
                (enc.get(type(k)) or self.other)(k)
                (enc.get(type(v)) or self.other)(v)
            except _Bad as e:
                e.path.append(k)
                raise

    def seq(self, x: list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]) -> None:
        self.kind.append(_SEQ_KINDS[type(x)])
        self.n.append(len(x))
        self.flush()
        enc = self.enc
        for i, v in enumerate(x):
            try:
                (enc.get(type(v)) or self.other)(v)
            except _Bad as e:
                e.path.append(i if type(x) in (list, tuple) else v)
                raise

    def fraction(self, x: Fraction) -> None:
        self.kind.append(K_FRACTION)
        self.n.append(2)
        self.flush()
        self.int_(x.numerator)
        self.int_(x.denominator)

    def other(self, x: Any) -> None:
        t = type(x)
        if t is np.str_ or t is np.bytes_:  # their dtype's width is their length: kept as text / bytes
            self.with_data(K_NPSCALAR, x.encode("utf-8", "surrogatepass") if t is np.str_ else bytes(x),
                           "U" if t is np.str_ else "S")
        elif isinstance(x, np.generic):
            dt = x.dtype
            if dt.kind not in ARRAY_KINDS or dt.fields is not None:
                raise _Bad(f"a numpy scalar of dtype {dt}")
            self.with_data(K_NPSCALAR, x.tobytes(), dt.str)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            name = self.classes.get(t)
            if name is None:
                name = self.classes[t] = _class_name(t)
            fields = dataclasses.fields(x)
            self.name[len(self.kind)] = name
            self.kind.append(K_DATACLASS)
            self.n.append(len(fields))
            self.flush()
            for f in fields:
                self.field[len(self.kind)] = f.name
                try:
                    self.encode(getattr(x, f.name))
                except _Bad as e:
                    e.path.append(_Field(f.name))
                    raise
        else:
            raise _Bad(f"a value of type {t.__module__}.{t.__qualname__} (counts are plain data: see "
                       "auditor/countfile.py)")

    def deferred(self, x: Deferred) -> None:
        """The value `x` makes, written as if it stood there, then dropped (and `x.done()` called)."""
        made = x.make()
        self.encode(made)
        del made
        if x.done is not None:
            x.done()

    def blob(self, name: str, value: bytes) -> None:
        self.field[len(self.kind)] = name
        self.with_data(K_BLOB, value)

    def streamed_blob(self, name: str, value: StreamedBlob) -> None:
        """`blob` of the joined pieces, row for row (the blob's row and its `more` rows cut at every `PIECE` bytes,
        as `with_data` cuts the joined bytes), holding one piece and one flush of rows at a time."""
        rows = max(1, -(-value.size // PIECE))
        self.field[len(self.kind)] = name
        self.kind.append(K_BLOB)
        self.n.append(rows - 1)
        done = 0
        total = 0

        def emit(piece: bytes) -> None:
            nonlocal done, total
            if done:
                self.kind.append(K_MORE)
                self.n.append(0)
            self.data[len(self.kind) - 1] = piece
            self.nbytes += len(piece)
            done += 1
            total += len(piece)
            self.flush()

        buf = bytearray()
        for chunk in value.pieces():
            buf += chunk
            while len(buf) >= PIECE and done < rows - 1:
                emit(bytes(buf[:PIECE]))
                del buf[:PIECE]
        emit(bytes(buf))
        if done != rows or total != value.size:
            raise _Bad(f"blob {name!r}: its pieces hold {total} bytes, not the {value.size} announced")

    def table(self, metadata: dict[str, str] | None) -> Any:
        import pyarrow as pa

        rows = len(self.kind)
        kinds = pa.DictionaryArray.from_arrays(pa.array(np.asarray(self.kind, np.int8)), pa.array(list(KINDS)))
        lens = np.zeros(rows, np.int64)
        if self.data:
            lens[np.fromiter(self.data.keys(), np.int64, len(self.data))] = np.fromiter(
                (len(d) for d in self.data.values()), np.int64, len(self.data))
        offsets = np.zeros(rows + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        order = sorted(self.data)  # rows in order: their bytes one after the other
        blob = b"".join([self.data[r] for r in order])
        data = pa.LargeBinaryArray.from_buffers(pa.large_binary(), rows,
                                               [None, pa.py_buffer(offsets), pa.py_buffer(blob)])

        def sparse(values: dict[int, Any], typ: Any) -> Any:
            col: list[Any] = [None] * rows
            for r, v in values.items():
                col[r] = v
            return pa.array(col, typ)

        cols = {
            "kind": kinds,
            "n": pa.array(np.asarray(self.n, np.int64)),
            "field": sparse(self.field, pa.string()),
            "name": sparse(self.name, pa.string()),
            "shape": sparse(self.shape, pa.list_(pa.int64())),
            "i64": sparse(self.i64, pa.int64()),
            "data": data,
        }
        out = pa.table(cols)
        return out if metadata is None else out.replace_schema_metadata(metadata)


_OBJ_ELEMENTS = (str, int, float, bool, type(None))


def _file_map(x: np.ndarray) -> mmap.mmap | None:
    """The file map an array's memory belongs to (a `np.memmap`'s, or an array over an `mmap.mmap`), else None."""
    b: Any = x
    while b is not None:
        if isinstance(b, mmap.mmap):
            return b
        m = getattr(b, "_mmap", None)
        if isinstance(m, mmap.mmap):
            return m
        b = getattr(b, "base", None)
        if isinstance(b, memoryview):
            b = b.obj
    return None


def _check_value(mapping: dict[str, str]) -> str:
    return format(zlib.crc32("\0".join(mapping[k] for k in _META_KEYS).encode("utf-8")), "08x")


_META_KEYS = ("auditor.format", "auditor.layout", "auditor.version", "auditor.meta")


def save_counts(path: str | os.PathLike[str], counts: dict[str, Any], meta: dict[str, Any] | None = None,
                blobs: dict[str, Any] | None = None) -> int:
    """Write `counts` (detector name -> counts tree, a value possibly `Deferred`), `meta` (JSON) and `blobs` (name ->
    bytes or `StreamedBlob`) to `path`, whole or not at all. Returns the file's size in bytes. A value that cannot
    be saved raises `CountsFileError` naming its path in the tree; then nothing is written (the rows stream to a
    temporary file, a row group at a time, which is removed: an older file of the same name stays as it was)."""
    import pyarrow.parquet as pq

    if type(counts) is not dict or not all(type(k) is str for k in counts):
        raise CountsFileError("cannot save the counts: they must be a dict of detector name (str) -> counts")
    for name, value in (blobs or {}).items():
        if type(name) is not str or not isinstance(value, (bytes, bytearray, memoryview, StreamedBlob)):
            raise CountsFileError(f"cannot save the counts: blob {name!r}: blobs are str -> bytes")
    try:
        meta_text = json.dumps(meta or {}, ensure_ascii=False, allow_nan=False, sort_keys=False)
    except (TypeError, ValueError) as e:
        raise CountsFileError(f"cannot save the counts: meta is not JSON: {e}") from None
    md = {"auditor.format": FORMAT, "auditor.layout": str(LAYOUT_VERSION), "auditor.version": __version__,
          "auditor.meta": meta_text}
    md["auditor.check"] = _check_value(md)
    with atomic_path(path) as tmp:
        writer: Any = None

        def sink(table: Any) -> None:
            nonlocal writer
            table = table.replace_schema_metadata(md)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="zstd", compression_level=1,
                                          use_dictionary=["kind", "field", "name"], write_statistics=False,
                                          write_page_checksum=True, store_schema=True)
            writer.write_table(table, row_group_size=table.num_rows)

        rows = _Writer(sink)
        try:
            try:
                rows.encode(counts)
                for name, value in (blobs or {}).items():
                    if isinstance(value, StreamedBlob):
                        rows.streamed_blob(name, value)
                    else:
                        rows.blob(name, bytes(value) if isinstance(value, bytearray) else value)
            except _Bad as e:
                raise CountsFileError(f"cannot save the counts: {_fmt_path(e.path[::-1])}: {e.why}") from None
            except RecursionError:
                raise CountsFileError("cannot save the counts: the tree is nested too deeply") from None
            rows.flush(last=True)
        finally:
            if writer is not None:
                writer.close()
    return os.path.getsize(path)


# ---------------------------------------------------------------- reading


class _Corrupt(Exception):
    """A row that does not follow the layout (becomes a CountsFileError)."""


class _Passed(Exception):
    """An error of `load_counts`'s `each`, carried out of the reader to be raised as it was."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


class _Stale(_Corrupt):
    """A file that follows the layout but names a dataclass whose fields are not this auditor's."""


def _resolve_class(name: str) -> type:
    """The dataclass a file names, found only among the auditor package's own modules."""
    mod, sep, qual = name.partition(":")
    if not sep or not (mod == "auditor" or mod.startswith("auditor.")) or not all(
            p.isidentifier() for p in mod.split(".") + qual.split(".")):
        raise _Corrupt(f"the file names a class {name!r} outside the auditor package")
    module = sys.modules.get(mod)
    if module is None:
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        if origin is None or _PKG_DIR not in Path(origin).resolve().parents:
            raise _Corrupt(f"the file names a class {name!r} whose module is not part of this auditor")
        module = importlib.import_module(mod)  # one of the package's own modules, by its checked name
    cls = _lookup(module, qual)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == mod
            and cls.__qualname__ == qual):
        raise _Corrupt(f"the file names a class {name!r} that this auditor does not define as a dataclass")
    return cls


class _Reader:
    """The tree read back in pre-order, a row group at a time (issue 15): the rows of one group (and of a node that
    began in the one before) are held as lists, never the whole file's. Row numbers are the file's; `base` is the
    file row of the window's first. With `spill_dir`, the arrays of dataclasses that allow it (`COUNTFILE_MEMMAP`)
    go to .npy files there and are read back memory-mapped, so that counts which grow with deals (marked_ten's
    decision rows) do not come into memory on loading."""

    def __init__(self, pf: Any, spill_dir: str | None = None) -> None:
        self.pf = pf
        self.rows = pf.metadata.num_rows
        self.groups = pf.metadata.num_row_groups
        self.group = 0  # the next row group to read
        self.base = 0
        self.kind: list[int] = []
        self.n: list[int] = []
        self.field: list[Any] = []
        self.name: list[Any] = []
        self.shape: list[Any] = []
        self.i64: list[Any] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.buf: memoryview = memoryview(b"")
        self.pos = 0
        self.spill_dir = spill_dir
        self.spill_to: str | None = None  # the folder of this file's spilled arrays, made on the first
        self.spilled = 0
        self.spilling = 0  # > 0 inside a dataclass whose class says `COUNTFILE_MEMMAP = True`
        self.dtypes: dict[str, np.dtype[Any]] = {}
        # equal short strings, and equal tuples of str and int, come back as one object (issue 15: collusion's
        # 1.3M pair cells at 10M deals, each key its own tuple and its game's name its own string, were some
        # 0.2 GB of its loaded counts); immutable values, so the counts are the same
        self.strs: dict[str, str] = {}
        self.tuples: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.classes: dict[str, tuple[type, list[str]]] = {}
        by_kind = {K_DICT: self.dict_, K_LIST: self.list_, K_TUPLE: self.tuple_, K_SET: self.set_,
                   K_FROZENSET: self.frozenset_, K_DATACLASS: self._dataclass, K_NDARRAY: self._array,
                   K_OBJARRAY: self.objarray, K_NPSCALAR: self.npscalar, K_INT: self.int_, K_BIGINT: self.bigint,
                   K_FLOAT: self.float_, K_BOOL: self.bool_, K_STR: self.str_, K_BYTES: self.bytes_,
                   K_NONE: self.none, K_FRACTION: self.fraction}
        self.dispatch = [by_kind.get(k, self.misplaced) for k in range(len(KINDS))]
        if self.rows:
            self.need(0)

    def need(self, last: int) -> None:
        """Rows up to `last` (a file row) in the window; rows before `pos - 1` are let go."""
        while last - self.base >= len(self.kind):
            if self.group >= self.groups:
                raise _Corrupt(f"row {last}: past the end of the file")
            self._next_group(max(self.base, self.pos - 1))

    def _next_group(self, keep: int) -> None:
        import pyarrow as pa

        table = self.pf.read_row_group(self.group)
        self.group += 1
        kind = table.column("kind").combine_chunks()
        if pa.types.is_dictionary(kind.type):
            names = kind.dictionary.to_pylist()
            idx = kind.indices.to_numpy(zero_copy_only=False)
            codes = np.array([KINDS.index(s) if s in KINDS else -1 for s in names], np.int64)
            if len(idx) and (idx.min() < 0 or idx.max() >= len(codes)):
                raise _Corrupt("a kind out of range")
            kinds = codes[idx].tolist()
        else:
            kinds = [KINDS.index(s) if s in KINDS else -1 for s in kind.to_pylist()]
        data = table.column("data").combine_chunks()
        if data.type != pa.large_binary():
            raise _Corrupt("the data column is not large_binary")
        if data.null_count:
            raise _Corrupt("a null in the data column")
        bufs = data.buffers()
        off = np.frombuffer(bufs[1], np.int64, count=len(data) + 1, offset=data.offset * 8)
        buf = memoryview(bufs[2]) if bufs[2] is not None else memoryview(b"")
        if len(off) and (off[0] < 0 or off[-1] > len(buf) or np.any(np.diff(off) < 0)):
            raise _Corrupt("data offsets out of range")
        k = keep - self.base  # the window's rows from `keep` on are carried over (a node that began before)
        start, end = off[:-1], off[1:]
        if k < len(self.kind):
            lo, hi = self.start[k], self.end[-1]
            carried = bytes(self.buf[lo:hi])
            buf = memoryview(carried + bytes(buf))
            start = np.concatenate([np.asarray(self.start[k:], np.int64) - lo, start + len(carried)])
            end = np.concatenate([np.asarray(self.end[k:], np.int64) - lo, end + len(carried)])
        self.kind = self.kind[k:] + kinds
        self.n = self.n[k:] + table.column("n").to_numpy().tolist()
        self.field = self.field[k:] + table.column("field").to_pylist()
        self.name = self.name[k:] + table.column("name").to_pylist()
        self.shape = self.shape[k:] + table.column("shape").to_pylist()
        self.i64 = self.i64[k:] + table.column("i64").to_pylist()
        self.start = start.tolist()
        self.end = end.tolist()
        self.buf = buf
        self.base = keep

    def _data(self, i: int) -> memoryview | bytearray:
        """The data of node row i with its `more` rows (then a new, writable bytearray); moves past them."""
        more = self.n[i - self.base]
        if more < 0 or i + more >= self.rows:
            raise _Corrupt(f"row {i}: {more} continuation rows")
        self.need(i + more)
        b = self.base
        first = self.buf[self.start[i - b]:self.end[i - b]]
        if not more:
            return first
        parts = [first]
        for j in range(i + 1, i + 1 + more):
            if self.kind[j - b] != K_MORE:
                raise _Corrupt(f"row {j}: a continuation row expected")
            parts.append(self.buf[self.start[j - b]:self.end[j - b]])
        self.pos += more
        return bytearray().join(parts)

    def node(self) -> Any:
        i = self.pos
        if i >= self.rows:
            raise _Corrupt("the tree ends before its last node")
        if i - self.base >= len(self.kind):
            self.need(i)
        self.pos = i + 1
        k = self.kind[i - self.base]
        if k < 0 or k >= len(self.dispatch):
            raise _Corrupt(f"row {i}: an unknown kind")
        return self.dispatch[k](i)

    def root(self, each: Callable[[str, Any], Any]) -> dict[Any, Any]:
        """The tree's root dict (the window at its row), each value given to `each(key, value)` as it is read and
        what that returns kept in its place."""
        i = self.pos
        self.pos = i + 1
        out: dict[Any, Any] = {}
        for _ in range(self._count(i)):
            key = self.node()
            if type(key) is not str:
                raise _Corrupt(f"row {i}: a detector's name that is not a string")
            value = self.node()
            try:
                out[key] = each(key, value)
            except Exception as e:  # the caller's error, not the file's: raised as it is by `load_counts`
                raise _Passed(e) from e
            del value
        return out

    def int_(self, i: int) -> int:
        v = self.i64[i - self.base]
        if v is None:
            raise _Corrupt(f"row {i}: an int without its value")
        return v

    def float_(self, i: int) -> float:
        return _DOUBLE.unpack(_INT64.pack(self.i64[i - self.base]))[0]

    def str_(self, i: int) -> str:
        s = bytes(self._data(i)).decode("utf-8", "surrogatepass")
        return self.strs.setdefault(s, s) if len(s) <= INTERN_MAX else s

    def dict_(self, i: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        node = self.node
        for _ in range(self._count(i)):
            key = node()
            out[key] = node()
        return out

    def list_(self, i: int) -> list[Any]:
        node = self.node
        return [node() for _ in range(self._count(i))]

    def tuple_(self, i: int) -> tuple[Any, ...]:
        t = tuple(self.list_(i))
        if all(type(x) is str or type(x) is int for x in t):  # exact types: (1,) == (True,) == (1.0,)
            return self.tuples.setdefault(t, t)
        return t

    def set_(self, i: int) -> set[Any]:
        return set(self.list_(i))

    def frozenset_(self, i: int) -> frozenset[Any]:
        return frozenset(self.list_(i))

    def bool_(self, i: int) -> bool:
        if self.i64[i - self.base] not in (0, 1):
            raise _Corrupt(f"row {i}: a bool that is neither 0 nor 1")
        return bool(self.i64[i - self.base])

    def none(self, i: int) -> None:
        return None

    def npscalar(self, i: int) -> Any:
        if self.name[i - self.base] == "U":
            return np.str_(bytes(self._data(i)).decode("utf-8", "surrogatepass"))
        if self.name[i - self.base] == "S":
            return np.bytes_(bytes(self._data(i)))
        dt = self._dtype(i)
        raw = self._data(i)
        if len(raw) != dt.itemsize:
            raise _Corrupt(f"row {i}: a numpy scalar of {len(raw)} bytes for dtype {dt}")
        return np.frombuffer(raw, dt, count=1)[0].copy()

    def bigint(self, i: int) -> int:
        return int.from_bytes(self._data(i), "little", signed=True)

    def bytes_(self, i: int) -> bytes:
        return bytes(self._data(i))

    def objarray(self, i: int) -> np.ndarray:
        shape = self._shape(i)
        n = self._count(i)
        if math.prod(shape) != n:
            raise _Corrupt(f"row {i}: an object array of shape {shape} with {n} elements")
        arr = np.empty(n, dtype=object)
        for j in range(n):
            v = self.node()
            if type(v) not in _OBJ_ELEMENTS:
                raise _Corrupt(f"row {i}: an object array holding a {type(v).__name__}")
            arr[j] = v
        return arr.reshape(shape)

    def fraction(self, i: int) -> Fraction:
        if self.n[i - self.base] != 2:
            raise _Corrupt(f"row {i}: a fraction of {self.n[i - self.base]} parts")
        num, den = self.node(), self.node()
        if type(num) is not int or type(den) is not int or den <= 0:
            raise _Corrupt(f"row {i}: a fraction of {num!r}/{den!r}")
        return Fraction(num, den)

    def misplaced(self, i: int) -> Any:
        raise _Corrupt(f"row {i}: a {KINDS[self.kind[i - self.base]]} row inside the tree")

    def _count(self, i: int) -> int:
        n = self.n[i - self.base]
        if n < 0 or n > self.rows:
            raise _Corrupt(f"row {i}: {n} children")
        return n

    def _dtype(self, i: int) -> np.dtype[Any]:
        name = self.name[i - self.base]
        dt = self.dtypes.get(name)
        if dt is not None:
            return dt
        if not isinstance(name, str) or len(name) > 32:
            raise _Corrupt(f"row {i}: no dtype")
        try:
            dt = np.dtype(name)
        except (TypeError, ValueError):
            raise _Corrupt(f"row {i}: an unknown dtype {name!r}") from None
        if dt.kind not in ARRAY_KINDS or dt.fields is not None or dt.subdtype is not None or dt.str != name:
            raise _Corrupt(f"row {i}: dtype {name!r} is not one a counts file holds")
        self.dtypes[name] = dt
        return dt

    def _shape(self, i: int) -> list[int]:
        shape = self.shape[i - self.base]
        if shape is None or (shape and min(shape) < 0):  # a null inside: TypeError, a damaged file
            raise _Corrupt(f"row {i}: no shape")
        return shape

    def _array(self, i: int) -> np.ndarray:
        dt = self._dtype(i)
        shape = self._shape(i)
        raw = self._data(i)
        size = math.prod(shape)
        if len(raw) != size * dt.itemsize:
            raise _Corrupt(f"row {i}: {len(raw)} bytes for an array of shape {tuple(shape)} and dtype {dt}")
        if not len(raw):
            return np.zeros(shape, dt)
        arr = np.frombuffer(raw, dt, count=size).reshape(shape)
        if self.spilling and self.spill_dir is not None:
            return self._spill(arr)
        # the file's buffer is read-only (and a value may sit anywhere in it): a copy, unless the pieces were
        # joined into a new bytearray already (aligned by malloc, writable)
        return arr if isinstance(raw, bytearray) and arr.flags.aligned else arr.copy()

    def _spill_folder(self) -> str:
        """This load's folder in `spill_dir`, made on the first call."""
        if self.spill_to is None:
            assert self.spill_dir is not None
            os.makedirs(self.spill_dir, exist_ok=True)
            self.spill_to = tempfile.mkdtemp(prefix="loaded-", dir=self.spill_dir)
        return self.spill_to

    def _spill(self, arr: np.ndarray) -> np.ndarray:
        """`arr` written to a .npy file of this load's folder in `spill_dir` and read back memory-mapped (read-only,
        a plain ndarray whose base is the `np.memmap`: as `marked_ten` spills its parts)."""
        self.spilled += 1
        path = os.path.join(self._spill_folder(), f"{self.spilled:05d}.npy")
        np.save(path, arr, allow_pickle=False)
        return np.asarray(np.load(path, mmap_mode="r"))

    def _dataclass(self, i: int) -> Any:
        name = self.name[i - self.base] or ""
        got_cls = self.classes.get(name)
        if got_cls is None:
            cls = _resolve_class(name)
            got_cls = self.classes[name] = (cls, [f.name for f in dataclasses.fields(cls)])
        cls, names = got_cls
        n = self._count(i)
        got = []
        obj: Any = object.__new__(cls)
        spill = bool(getattr(cls, "COUNTFILE_MEMMAP", False))
        self.spilling += spill
        try:
            for _ in range(n):
                self.need(self.pos)
                fname = self.field[self.pos - self.base]
                got.append(fname)
                value = self.node()
                if fname in names:
                    object.__setattr__(obj, fname, value)
        finally:
            self.spilling -= spill
        if got != names:
            raise _Stale(f"the fields of {cls.__module__}.{cls.__qualname__} differ from the file's: file "
                           f"{', '.join(map(str, got))}; this auditor {', '.join(names)}")
        return obj

    def blobs(self) -> dict[str, "bytes | BlobFile"]:
        """The blobs after the tree, by name: bytes, or with a spill folder a `BlobFile` for one longer than
        BLOB_SPILL bytes (a multiple of PIECE: more than BLOB_SPILL / PIECE `more` rows), copied there a row at a
        time (issue 15: the 10M bench's saved games summary, 0.7 GB, was held whole as its rows joined and again as
        bytes when its counts were added)."""
        out: dict[str, bytes | BlobFile] = {}
        while self.pos < self.rows:
            i = self.pos
            self.need(i)
            self.pos += 1
            b = self.base
            name = self.field[i - b]
            if self.kind[i - b] != K_BLOB or not isinstance(name, str):
                raise _Corrupt(f"row {i}: a blob expected after the tree")
            more = self.n[i - b]
            if self.spill_dir is not None and more * PIECE >= BLOB_SPILL:
                out[name] = self._blob_file(i, name)
            else:
                out[name] = bytes(self._data(i))
        return out

    def _blob_file(self, i: int, name: str) -> "BlobFile":
        """Blob row i and its `more` rows written to a file in the spill folder, one row group in memory at a time."""
        more = self.n[i - self.base]
        if more < 0 or i + more >= self.rows:
            raise _Corrupt(f"row {i}: {more} continuation rows")
        folder = self._spill_folder()
        self.spilled += 1
        path = os.path.join(folder, f"{self.spilled:05d}.blob")
        size = 0
        with open(path, "wb") as f:
            for j in range(i, i + more + 1):
                if j - self.base >= len(self.kind):
                    self._next_group(j)  # row j starts the next group: nothing before it is kept
                if j > i and self.kind[j - self.base] != K_MORE:
                    raise _Corrupt(f"row {j}: a continuation row expected")
                piece = self.buf[self.start[j - self.base]:self.end[j - self.base]]
                f.write(piece)
                size += len(piece)
        self.pos = i + 1 + more
        return BlobFile(path, size, name)


def _diff(a: Any, b: Any, where: str = "") -> Iterator[str]:
    """Where two JSON values differ: 'dealer_jack.fdr: file 0.01, expected 0.02'."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            sub = f"{where}.{k}" if where else str(k)
            if k not in b:
                yield f"{sub}: in the file only"
            elif k not in a:
                yield f"{sub}: expected, not in the file"
            else:
                yield from _diff(a[k], b[k], sub)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for j, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _diff(x, y, f"{where}[{j}]")
    elif a != b or type(a) is not type(b):
        yield f"{where or 'fingerprint'}: file {json.dumps(a)}, expected {json.dumps(b)}"


def read_meta(path: str | os.PathLike[str]) -> dict[str, str]:
    """The file's auditor.* key-value metadata, checked (format, layout, check value); raises CountsFileError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = str(path)
    if os.path.isdir(src):  # pyarrow would read a folder as a data set of the files in it
        raise CountsFileError("is a folder, not a counts file", src)
    try:
        raw = pq.read_schema(src).metadata or {}
    except FileNotFoundError:
        raise CountsFileError("no such file", src) from None
    except (OSError, pa.ArrowException, ValueError) as e:
        raise CountsFileError(f"not a readable counts file (truncated or corrupt?): {_one_line(e)}", src) from None
    md = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}
    if md.get("auditor.format") != FORMAT:
        raise CountsFileError(f"not a counts file (its metadata has no auditor.format = {FORMAT})", src)
    if any(k not in md for k in _META_KEYS + ("auditor.check",)) or md["auditor.check"] != _check_value(md):
        raise CountsFileError("a damaged counts file: its metadata does not match its check value", src)
    if md["auditor.layout"] != str(LAYOUT_VERSION):
        raise CountsFileError(f"counts layout version {md['auditor.layout']!r}: this auditor reads layout "
                              f"{LAYOUT_VERSION} only", src)
    return md


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def check_counts(path: str | os.PathLike[str], expect_fingerprint: Any = None,
                 allow_other_version: bool = False) -> dict[str, Any]:
    """The checks `load_counts` makes before it reads the tree (the file's metadata, its version, its meta and the
    fingerprint), alone: a counts file refused here is refused before any work (`CountsFileError`, one line).
    Returns the file's meta."""
    src = str(path)
    md = read_meta(src)
    if md["auditor.version"] != __version__ and not allow_other_version:
        raise CountsFileError(f"counts saved by auditor {md['auditor.version']}, this is auditor {__version__}: "
                              "count again (or allow another version)", src)
    try:
        meta = json.loads(md["auditor.meta"])
    except ValueError:
        raise CountsFileError("a damaged counts file: its meta is not JSON", src) from None
    if not isinstance(meta, dict):
        raise CountsFileError("a damaged counts file: its meta is not a JSON object", src)
    if expect_fingerprint is not None:
        if "fingerprint" not in meta:
            raise CountsFileError("the counts file has no fingerprint: count again", src)
        want = json.loads(json.dumps(expect_fingerprint))
        diffs = list(_diff(meta["fingerprint"], want))
        if diffs:
            more = f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else ""
            raise CountsFileError("counted with other settings: " + "; ".join(diffs[:3]) + more
                                  + ": count again", src)
    return meta


def load_counts(path: str | os.PathLike[str], expect_fingerprint: Any = None,
                allow_other_version: bool = False, spill_dir: str | None = None,
                each: Callable[[str, Any], Any] | None = None,
                ) -> tuple[dict[str, Any], dict[str, Any], dict[str, "bytes | BlobFile"]]:
    """`(counts, meta, blobs)` as `save_counts` was given them. Raises `CountsFileError` (one line) for a file it
    cannot use: see the module's docstring. The file is read a row group at a time. `spill_dir`: the arrays of the
    dataclasses that say they may be memory-mapped (a class attribute `COUNTFILE_MEMMAP = True`: read-only arrays,
    such as marked_ten's decision rows, the one count that grows with deals) are written to .npy files in a new
    folder there and read back memory-mapped, equal to what a load without it gives (the caller removes the
    folder with `spill_dir`). `each(name, counts)`: called with each detector's counts as soon as they are read,
    in the file's order; what it returns is kept in their place (issue 15: the caller writes a large detector's
    counts out and keeps a name for them, so that one detector's counts are in memory at a time, not the whole
    file's). With `spill_dir`, a blob longer than BLOB_SPILL bytes comes back as a `BlobFile` there, not as bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = str(path)
    meta = check_counts(src, expect_fingerprint, allow_other_version)
    try:
        with pq.ParquetFile(src, page_checksum_verification=True) as pf:
            reader = _Reader(pf, spill_dir)
            if not reader.rows or reader.kind[0] != K_DICT:
                raise _Corrupt("the tree does not start with a dict")
            counts = reader.node() if each is None else reader.root(each)
            blobs = reader.blobs()
    except _Passed as e:
        raise e.error from None
    except _Stale as e:
        raise CountsFileError(f"counts of another auditor: {e}: count again", src) from None
    except _Corrupt as e:
        raise CountsFileError(f"a damaged counts file: {e}", src) from None
    except RecursionError:
        raise CountsFileError("a damaged counts file: the tree is nested too deeply", src) from None
    except (OSError, pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError,
            struct.error) as e:
        raise CountsFileError(f"a damaged counts file (truncated or corrupt?): {_one_line(e)}", src) from None
    if type(counts) is not dict or not all(type(k) is str for k in counts):
        raise CountsFileError("a damaged counts file: the counts are not a dict of detector names", src)
    return counts, meta, blobs
