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
