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


def to_numpy(arr: Arrow, dtype: DTypeLike, fill: Any = 0) -> NDArray[Any]:
    """A primitive Arrow array as numpy (nulls as `fill`), straight from its buffers."""
    n = len(arr)
    t = str(arr.type)
    vals: NDArray[Any]
    if t == "bool":
        if arr.buffers()[1] is None:
            vals = np.zeros(n, bool)
        else:
            bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")
            vals = bits[arr.offset:arr.offset + n].astype(bool)
    elif t in _NP_TYPES:
        buf = arr.buffers()[1]
        vals = np.frombuffer(buf, _NP_TYPES[t], count=n, offset=arr.offset * np.dtype(_NP_TYPES[t]).itemsize) \
            if buf is not None else np.zeros(n, _NP_TYPES[t])
    elif t == "null":
        return np.full(n, fill, dtype)
    else:
        raise ValueError(f"column of type {t}")
    ok = validity(arr)
    out = vals.astype(dtype, copy=True)
    if ok is not None:
        out[~ok] = fill
    return out
