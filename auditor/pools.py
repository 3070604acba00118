"""Process pools that end by closing, not by terminating.

`multiprocessing.Pool` used as a context manager calls `terminate()` on exit, which sends SIGTERM to its workers. The
CLI handles SIGTERM in Python (`cli._on_sigterm`, inherited by forked workers), and a Python handler can lose the
signal: a worker that has just sent its last result and is entering the blocking wait for the next task takes the
signal after its last check and before it blocks, and then waits for ever while the pool joins it. A 1M-deal audit
was seen hung so (issue 15). `closing_pool` ends a pool that finished its work with `close()` and `join()`: the
workers are told to stop through the task queue and exit on their own, no signal sent. On an error (or Ctrl-C) it
still terminates the pool."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def closing_pool(ctx: Any, processes: int, **kw: Any) -> Iterator[Any]:
    """`ctx.Pool(processes, **kw)`, closed and joined when the block ends normally, terminated when it raises."""
    pool = ctx.Pool(processes, **kw)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


def use_system_memory_pool() -> None:
    """Arrow's buffers from the C library's allocator, not from the allocator the pyarrow wheel defaults to
    (mimalloc), unless ARROW_DEFAULT_MEMORY_POOL chooses one.

    Issue 15, memory: mimalloc keeps the pages its threads freed in their own heaps, and `release_unused()` collects
    the calling thread's only, so the pages Arrow's reader threads used for one part stayed resident after it. The
    audit's process grew by about 10 MB a part (measured: 297 -> 399 MB resident between parts over 8 parts of the
    1M season, 100 MB less with the system pool), which is why a 10M audit (56 parts) peaked 15% above a 1M audit
    (5 parts). With the C allocator, whose free pages `release_memory` gives back, the 1M audit peaked at 875 MB
    instead of 1,042 MB, and the replay of the 1M season took 38.9 s instead of 42.0 s. The documents are the same
    (an allocator holds bytes, it does not change them)."""
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
