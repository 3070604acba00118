"""Arrow arrays built straight from buffers.

`pa.array(...)` and `pa.scalar(...)` import pandas when it is installed (to recognise its types), which costs a
third of a second of start-up; building arrays from numpy buffers does not.
"""

from __future__ import annotations

import numpy as np


def i64(a) -> "object":
    import pyarrow as pa

    a = np.ascontiguousarray(a, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])


def i32(a) -> "object":
    import pyarrow as pa

    a = np.ascontiguousarray(a, np.int32)
    return pa.Array.from_buffers(pa.int32(), len(a), [None, pa.py_buffer(a)])


def boolean(a) -> "object":
    import pyarrow as pa

    a = np.asarray(a, bool)
    return pa.Array.from_buffers(pa.bool_(), len(a), [None, pa.py_buffer(np.packbits(a, bitorder="little"))])


def lstr(strs: list[str]) -> "object":
    """A large_string array of Python strings."""
    import pyarrow as pa

    b = [s.encode("utf-8", "surrogatepass") for s in strs]
    off = np.zeros(len(b) + 1, np.int64)
    if b:
        np.cumsum([len(x) for x in b], out=off[1:])
    return pa.Array.from_buffers(pa.large_string(), len(b), [None, pa.py_buffer(off), pa.py_buffer(b"".join(b))])


def lit(s: str) -> "object":
    """A large_string scalar."""
    return lstr([s])[0]
