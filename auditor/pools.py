"""Process pools that end by closing, not by terminating.

`multiprocessing.Pool` used as a context manager calls `terminate()` on exit, which sends SIGTERM to its workers. The
CLI handles SIGTERM in Python (`cli._on_sigterm`, inherited by forked workers), and a Python handler can lose the
signal: a worker that has just sent its last result and is entering the blocking wait for the next task takes the
signal after its last check and before it blocks, and then waits for ever while the pool joins it. A 1M-deal audit
was seen hung so (issue 15). `closing_pool` ends a pool that finished its work with `close()` and `join()`: the
workers are told to stop through the task queue and exit on their own, no signal sent. On an error (or Ctrl-C) it
still terminates the pool.

The second half (issue 15): processes that begin clean. `fresh_context` is a fork server that imported the audit's
modules once (`auditor/warm.py`); `call_in_fresh_process` runs one task (a part of a large audit) in a new process
of it, whose heap goes back to the system when the task ends; `stop_children` (SIGTERM) and `stop_fork_server`
(when a CLI command ends) leave no process behind."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .errors import AuditorError


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


def _glibc() -> Any:
    """The C library when it is glibc (what `trim_heap`, `tune_malloc` and a helper's `_die_with` call), else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc's own
    except (OSError, AttributeError):  # not glibc
        return None
    return libc


_LIBC = _glibc()
_TRIM: Callable[[int], int] | None = _LIBC.malloc_trim if _LIBC is not None else None


def trim_heap() -> None:
    """Give the C allocator's free pages back to the system (glibc's `malloc_trim(0)`; nothing elsewhere).

    Issue 15, memory: glibc serves numpy's arrays below its mmap threshold, which it raises up to 32 MB as large
    blocks are freed, from its heaps, and keeps what they free for reuse. A loop that builds and drops a part's
    working arrays leaves a little more each time: `marked_ten`'s finalize over the 50 parts of ten renamed
    copies of the 1M season's counts held 160 MB more after its first pass than before it, 62 MB when trimmed
    after each part. Costs a sweep of the heap (milliseconds): call it after a part, not in a tight loop."""
    if _TRIM is not None:
        _TRIM(0)


# glibc's allocator for the CLI's processes (`tune_malloc`): blocks up to 1 GB from its heaps, not from a new
# mapping each, and freed memory kept for reuse up to 1 GB (64 MB added to each growth of the heap)
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
              "MALLOC_TOP_PAD_": str(64 << 20)}
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_TOP_PAD_": -2, "MALLOC_MMAP_THRESHOLD_": -3}  # M_* of malloc.h


def tune_malloc() -> None:
    """Keep numpy's large temporary arrays out of the kernel: glibc's settings of MALLOC_ENV, as defaults in the
    environment (read by glibc when each process the CLI starts begins: the fork server, Dask's workers; a value
    the user set is kept) and applied to this process with `mallopt` (it began before they were set).

    Issue 15, speed: by default glibc maps each block above its mmap threshold (at most 32 MB) anew and unmaps it
    when freed, so every large temporary array was pages the kernel zeroed on first touch (`clear_page_erms`, 9% of
    `marked_ten`'s samples) and unmapped after. The 1M audit took 35.8-36.1 s against 36.5-37.4 s (three
    alternating pairs), 7.2 s of system CPU time against 8.2 s, for a peak 10 MB higher (534 MB against 522 MB).
    The explicit `trim_heap` after each part still gives the free pages back. Nothing on other C libraries."""
    import os

    for k, v in MALLOC_ENV.items():
        os.environ.setdefault(k, v)
    if _LIBC is None:
        return
    for k, param in _MALLOPT.items():
        try:
            value = int(os.environ[k])
        except ValueError:  # glibc ignores a value it cannot read: so does this
            continue
        if 0 <= value < 1 << 31:  # mallopt takes an int
            _LIBC.mallopt(param, value)


GC_THRESHOLD = (50_000, 20, 20)  # the collector's thresholds in the CLI's process and the fork server's (`tune_gc`)


def tune_gc() -> None:
    """The cyclic garbage collector's thresholds raised to GC_THRESHOLD (Python's are 700, 10, 10): a young pass
    per 50,000 new container objects instead of 700, and a full pass 40 times more rarely. Called by the CLI for its
    own process and by the fork server (`auditor.warm`) for the parts' and the tests' processes; a program that
    imports the auditor keeps its own.

    Issue 15, speed: the replay builds Python objects by the hundred thousand (the All Fours runs as dicts of card
    strings, findings, the games' summaries), and each full pass walks every object alive. Replaying 200,000 deals
    of the 1M season into the table took 5.0-5.2 s of CPU with Python's thresholds, 4.2 s with the collector off
    and 4.3 s with these; building the runs' dicts alone, 0.34 s against 0.06 s. The 1M audit took 32.1-33.8 s
    against 34.5-36.3 s (three alternating pairs), for the same peak (533 MB against 531 MB) and the same document.
    Only objects in a reference cycle wait longer to be freed (until the next pass); an array goes as soon as its
    last reference does."""
    import gc

    gc.set_threshold(*GC_THRESHOLD)


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


# ---------------------------------------------------------------- a fresh process for one task (issue 15)

_CHILDREN: set[int] = set()  # processes started by `call_in_fresh_process` and not yet joined
_START_LOCK = threading.Lock()  # `_start_alone`: one start at a time among this module's threads


def _start_alone(p: Any) -> None:
    """`p.start()`, then `p` taken out of multiprocessing's list of this process's children, so that only the
    thread that started it ever asks for its exit status (`p.join()`).

    Why: every `Process.start()` first polls every child on that list (`multiprocessing.process._cleanup`), from
    whichever thread starts. A fork server's child reports its status once, four bytes on a pipe; when two threads
    poll the same child as it ends, one reads them and the other meets the pipe's end and sets the exit code to 255,
    which may be the value left. The parts run two at a time, each from its own thread, so a part that ended well
    was now and then reported as "its process ended with exit code 255" and the audit stopped: once in a CI run
    (a test at 6 parts), once in a 10M audit (part 53 of 60; issue 15, a thirtieth session). The CPython issues
    gh-130895 and gh-140867 describe the race; a loop of four threads starting and joining short processes of a
    fork server got 170 such codes in 1,200 joins (tests/test_pools.py holds it at none). The lock keeps this
    module's starts from polling each other's children; a start elsewhere (a pool's worker) no longer sees ours."""
    import multiprocessing.process as mpp

    with _START_LOCK:
        p.start()
        children = getattr(mpp, "_children", None)
        if isinstance(children, set):
            children.discard(p)


def fresh_context(preload: tuple[str, ...] = ("auditor.warm",)) -> Any:
    """The start method for processes that must begin clean: a fork server (started once, from a fresh interpreter
    that imports `preload`; each process is then forked from it, in milliseconds, without the caller's heap, threads
    or locks), or spawn where there is none. Not "fork" of the caller: the reader's and numba's threads may hold
    locks at the fork (a hang was seen), and a fork starts with the caller's whole resident set."""
    import multiprocessing as mp

    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))  # no effect once the server runs (then it has them already)
        return ctx
    return mp.get_context("spawn")


def _child_main(fn: Any, args: Any, path: str) -> None:
    """In the fresh process: `fn(args)`, its result or its exception pickled to `path` (the parent reads it after
    the process ended: no pipe to fill, whatever the result's size)."""
    import pickle

    try:
        out: tuple[str, Any] = ("ok", fn(args))
    except BaseException as e:  # noqa: BLE001 - handed to the parent, raised there
        out = ("error", e)
    try:
        blob = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - an exception that does not pickle: its text
        blob = pickle.dumps(("error", RuntimeError(f"{type(out[1]).__name__}: {out[1]}" if out[0] == "error"
                                                   else f"the result does not pickle: {e}")))
    with open(path, "wb") as f:
        f.write(blob)


def call_in_fresh_process(ctx: Any, fn: Any, args: Any, path: str, name: str = "auditor-task") -> Any:
    """`fn(args)` computed in a new process of `ctx` (`fresh_context`) and returned here; its exception raised here.
    The process's whole heap is given back when it ends: what Python's small-object arenas and the C allocator
    keep after a task (a few long-lived objects pin an arena each) does not pile up in a long-running process.
    `path`: where the result passes (removed once read). The process is not a daemon, so it may start processes
    of its own; SIGTERM to this process stops it too (`stop_children`)."""
    p = ctx.Process(target=_child_main, args=(fn, args, path), name=name)
    _start_alone(p)
    _CHILDREN.add(p.pid)
    try:
        p.join()
    except BaseException:  # Ctrl-C here: the child (which had its own) is stopped, not left running
        p.terminate()
        p.join()
        raise
    finally:
        _CHILDREN.discard(p.pid)
    return _result_of(p.exitcode, path, name)


def _result_of(code: int | None, path: str, name: str) -> Any:
    """What a process that ran `_child_main` left in `path` (removed once read), given its exit code: the result,
    or its exception raised here; an exit other than 0 is an `AuditorError` naming `name`."""
    import os
    import pickle

    try:
        if code != 0:
            why = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            hint = " (killed: out of memory?)" if code == -9 else ""
            raise AuditorError(f"{name}: its process ended with {why}{hint}")
        try:
            with open(path, "rb") as f:
                status, got = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError) as e:
            raise AuditorError(f"{name}: its result cannot be read back: {e}") from None
    finally:
        try:
            os.remove(path)
        except OSError:
            pass
    if status == "error":
        raise got
    return got


_HELPERS = False  # whether this process may fork a helper (`fork_helper`): set by `allow_helpers`


def allow_helpers(fn: Callable[[Any], Any], args: Any) -> Any:
    """`fn(args)` in a process that may fork helpers (`helpers_allowed`): a test's own fresh process of the local
    pool (`audit._each`), which has no thread but its main one. Never set in a Dask worker (threads) nor in a
    caller's own process."""
    global _HELPERS
    _HELPERS = True
    return fn(args)


def helpers_allowed() -> bool:
    return _HELPERS


class Helper:
    """`fn()` computed in a child forked from this process (`fork_helper`) while the caller goes on: `join()` waits
    for it and returns its result (or raises its exception, or an `AuditorError` naming `name` if it died);
    `cancel()` kills it (the caller's own half failed). The child dies with this process (PR_SET_PDEATHSIG): a
    pool that terminates its worker leaves no helper running into a removed folder."""

    def __init__(self, fn: Callable[[], Any], folder: str, name: str):
        import os
        import sys
        import tempfile

        fd, self.path = tempfile.mkstemp(prefix="helper-", suffix=".pickle", dir=folder)
        os.close(fd)
        self.name = name
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        self.pid: int | None = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                _die_with(parent)
                _child_main(lambda _: fn(), None, self.path)
                code = 0
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)

    def join(self) -> Any:
        import os

        assert self.pid is not None
        try:
            _, status = os.waitpid(self.pid, 0)
        except BaseException:
            self.cancel()
            raise
        self.pid = None
        return _result_of(os.waitstatus_to_exitcode(status), self.path, self.name)

    def cancel(self) -> None:
        import os
        import signal

        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pid = None
        try:
            os.remove(self.path)
        except OSError:
            pass


def fork_helper(fn: Callable[[], Any], folder: str, name: str) -> Helper:
    """`Helper(fn, folder, name)`: the result passes through a file of `folder`."""
    return Helper(fn, folder, name)


def _die_with(parent: int) -> None:
    """In a forked child: SIGKILL when the parent ends (Linux's prctl PR_SET_PDEATHSIG; elsewhere nothing), and
    out at once if it already has."""
    import os
    import signal

    if _LIBC is not None:
        _LIBC.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def stop_children() -> None:
    """SIGTERM to every process `call_in_fresh_process` is waiting for (the CLI's SIGTERM handler, before it
    exits: a part's process would otherwise run on, orphaned, into a removed working folder)."""
    import os
    import signal

    for pid in list(_CHILDREN):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        _CHILDREN.discard(pid)


def stop_fork_server() -> None:
    """Stop the fork server this process started, if any, and wait for it (the CLI, when a command ends). Left to
    itself the server exits after this process, unwaited: the processes it forked (the parts) are then missing
    from this process's resource usage as its parent sees it (`/usr/bin/time`, the bench: their CPU time and peak
    memory). Waited for, their usage adds up through it to this process's children. Uses multiprocessing's own
    stop (`ForkServer._stop`, private); nothing when it is missing. The server is sent SIGTERM first: it leaves
    at once (no handler of its own for it), and its children's usage still adds up when it is waited for."""
    import sys

    fs = sys.modules.get("multiprocessing.forkserver")
    server = getattr(fs, "_forkserver", None) if fs is not None else None
    stop = getattr(server, "_stop", None)
    pid = getattr(server, "_forkserver_pid", None)
    if stop is not None and pid is not None:
        import os
        import signal

        try:  # ended by the signal's default action, not by the interpreter's exit (0.6 s for a server that
            # holds the audit's modules, waited for at the end of every large audit); it holds nothing to save
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            stop()
        except OSError:
            pass


ISOLATE_MIN_DEALS = 100_000  # parts this large (on average) are replayed each in a fresh process (`audit.isolated`)
EARLY_MIN_DEALS = 2 * ISOLATE_MIN_DEALS  # an input this large starts the fork server before it is split
BYTES_PER_DEAL = {".parquet": 100, ".jsonl.gz": 140, ".jsonl": 800}  # typical sizes (issue 15 seasons: 83-104,
# 131 and 721-861 bytes a deal), for `start_fork_server_early`'s guess; any other name counts as JSON Lines


def start_fork_server_early(paths: list[str]) -> bool:
    """Start the fork server at once when the files' sizes say that the input has `EARLY_MIN_DEALS` deals or more
    (`BYTES_PER_DEAL`; directories walked for their log files), before the audit imports its own modules (the CLI
    calls this first, before it checks the options). The audit starts it again, a no-op then, when the split has
    counted that many records (`audit_input`); this only starts it sooner: from the split's start, the server's
    imports (about 2.4 s of the other core, `auditor.warm`) ended some 0.7 s after the split, and the first part
    waited for them (the issue-like 300k season; issue 15, a nineteenth session). A wrong guess costs the other
    core's time and the server's memory until the command ends, never a result. Returns whether it started the
    server."""
    import os

    def files(p: str) -> Iterator[str]:  # a directory's log files, roughly as `inputs.expand_inputs` finds them
        if not os.path.isdir(p):
            yield p
            return
        for root, dirs, names in os.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            yield from (os.path.join(root, n) for n in names
                        if not n.startswith((".", "_")) and n.endswith(tuple(BYTES_PER_DEAL)))

    total = 0.0
    for f in (f for p in paths for f in files(p)):
        try:
            size = os.stat(f).st_size
        except OSError:
            continue
        total += size / BYTES_PER_DEAL[next((e for e in BYTES_PER_DEAL if f.endswith(e)), ".jsonl")]
        if total >= EARLY_MIN_DEALS:  # enough: the rest of a large directory is not walked
            start_fork_server()
            return True
    return False


def start_fork_server() -> None:
    """Start `fresh_context`'s fork server now, without waiting for it: it imports the audit's modules (about 2 s of
    one core) while this process splits the input, so that it is ready when the first part needs it (issue 15, a
    ninth session: started by the first part, its imports came after the split, about 2 s of the 300,000-deal
    audit's wall time). Nothing where there is no fork server (spawn)."""
    ctx = fresh_context()
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()
