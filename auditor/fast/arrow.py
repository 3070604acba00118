"""Arrow arrays built straight from buffers, and read straight back into numpy.

`pa.array(...)` and `pa.scalar(...)` import pandas when it is installed (to recognise its types), which costs a
third of a second of start-up; building arrays from numpy buffers does not. pyarrow itself is imported in the
functions that use it (a quarter of a second of start-up, for commands that may never build an Arrow array).

pyarrow ships no type stubs: its arrays and scalars are `Any` here (`Arrow`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

Arrow = Any
"""A pyarrow array or scalar (pyarrow has no type stubs)."""

_NP_TYPES: dict[str, type[np.generic]] = {
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
    "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
}


def i64(a: ArrayLike) -> Arrow:
    import pyarrow as pa

    x = np.ascontiguousarray(a, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(x), [None, pa.py_buffer(x)])


def i32(a: ArrayLike) -> Arrow:
    import pyarrow as pa

    x = np.ascontiguousarray(a, np.int32)
    return pa.Array.from_buffers(pa.int32(), len(x), [None, pa.py_buffer(x)])


def u32(a: ArrayLike) -> Arrow:
    import pyarrow as pa

    x = np.ascontiguousarray(a, np.uint32)
    return pa.Array.from_buffers(pa.uint32(), len(x), [None, pa.py_buffer(x)])


def boolean(a: ArrayLike) -> Arrow:
    import pyarrow as pa

    x = np.asarray(a, bool)
    return pa.Array.from_buffers(pa.bool_(), len(x), [None, pa.py_buffer(np.packbits(x, bitorder="little"))])


def lstr(strs: list[str]) -> Arrow:
    """A large_string array of Python strings."""
    import pyarrow as pa

    b = [s.encode("utf-8", "surrogatepass") for s in strs]
    off = np.zeros(len(b) + 1, np.int64)
    if b:
        np.cumsum([len(x) for x in b], out=off[1:])
    return pa.Array.from_buffers(pa.large_string(), len(b), [None, pa.py_buffer(off), pa.py_buffer(b"".join(b))])


def lit(s: str) -> Arrow:
    """A large_string scalar."""
    return lstr([s])[0]


def validity(arr: Arrow) -> NDArray[np.bool_] | None:
    """The validity of an Arrow array as a bool array (None: no nulls), read from its bitmap."""
    if arr.null_count == 0:
        return None
    if arr.null_count == len(arr):
        return np.zeros(len(arr), bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")
    out: NDArray[np.bool_] = bits[arr.offset:arr.offset + len(arr)].astype(bool)
    return out


def to_numpy(arr: Arrow, dtype: DTypeLike, fill: Any = 0, bad: NDArray[np.bool_] | None = None) -> NDArray[Any]:
    """A primitive Arrow array as numpy (nulls as `fill`), straight from its buffers.

    Into an integer type, a value is taken only if the type holds it exactly: a floating column is read where its
    values are whole numbers (pandas writes a nullable integer column that has nulls as double), and an integer
    wider than the type is read where it fits (issue 15: Parquet written by other tools than the auditor's own
    layout; the cast wrapped a dealer of 65,538 to 2 before). Any other value is `fill`, and is marked in `bad`
    when it is given (the caller judges such rows the slow way); without `bad` it raises ValueError."""
    n = len(arr)
    t = str(arr.type)
    vals: NDArray[Any]
    if t == "bool":
        if arr.buffers()[1] is None:
            vals = np.zeros(n, bool)
        else:
            bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")
            vals = bits[arr.offset:arr.offset + n].astype(bool)
    elif t in _NP_TYPES or t in _FLOAT_TYPES:
        nt = _NP_TYPES.get(t) or _FLOAT_TYPES[t]
        buf = arr.buffers()[1]
        vals = np.frombuffer(buf, nt, count=n, offset=arr.offset * np.dtype(nt).itemsize) \
            if buf is not None else np.zeros(n, nt)
    elif t == "null":
        return np.full(n, fill, dtype)
    else:
        raise ValueError(f"column of type {t}")
    ok = validity(arr)
    target = np.dtype(dtype)
    miss = None  # the values the target type cannot hold
    if target.kind in "iu" and not np.can_cast(vals.dtype, target, "safe"):
        fits = _fits(vals, target)
        if ok is not None:
            fits |= ~ok
        if not fits.all():
            if bad is None:
                raise ValueError(f"column of type {t}: {vals[~fits][0]} is not a value of {target}")
            miss = ~fits
            bad |= miss
            vals = np.where(fits, vals, 0)
    out = vals.astype(dtype, copy=True)
    if ok is not None:
        out[~ok] = fill
    if miss is not None:
        out[miss] = fill
    return out


_FLOAT_TYPES: dict[str, type[np.generic]] = {"halffloat": np.float16, "float": np.float32, "double": np.float64}


def _fits(vals: NDArray[Any], target: np.dtype[Any]) -> NDArray[np.bool_]:
    """Which values the integer type `target` holds exactly."""
    info = np.iinfo(target)
    if vals.dtype.kind == "f":  # bounds as floats: the top one is a power of two, exact (int64's max is not)
        x = vals.astype(np.float64)
        with np.errstate(invalid="ignore"):
            out: NDArray[np.bool_] = (np.isfinite(x) & (np.floor(x) == x) & (x >= float(info.min))
                                      & (x < float(info.max) + 1.0))
        return out
    return np.asarray((vals >= info.min) & (vals <= info.max))
