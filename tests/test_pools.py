"""`closing_pool`: a pool that finished its work is closed and joined, never terminated (SIGTERM to workers that
the CLI's Python handler can lose, a hang seen in a 1M audit); an error still terminates it."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool
import os
import subprocess
import sys

import pytest

from auditor.pools import closing_pool


def _square(x: int) -> int:
    return x * x


def _fail(x: int) -> int:
    """The first task fails; the others wait, so that no worker is writing a result when the pool is terminated
    (CPython's `Pool.terminate` can hang on a worker killed while it held the result queue's lock: seen twice here,
    for 10 to 13 minutes, with every task failing at once)."""
    if x:
        import time

        time.sleep(30)
    raise ValueError(f"bad {x}")


def _ctx():
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def _count_terminates(monkeypatch) -> list[str]:  # noqa: ANN001
    """`Pool.terminate` calls recorded (and still made)."""
    called: list[str] = []
    real = multiprocessing.pool.Pool.terminate

    def terminate(self) -> None:  # noqa: ANN001
        called.append("terminate")
        real(self)

    monkeypatch.setattr(multiprocessing.pool.Pool, "terminate", terminate)
    return called


def test_a_finished_pool_is_closed_not_terminated(monkeypatch) -> None:
    called = _count_terminates(monkeypatch)
    with closing_pool(_ctx(), 2, maxtasksperchild=1) as pool:
        got = sorted(pool.imap_unordered(_square, range(6)))
        workers = list(pool._pool)
    assert got == [0, 1, 4, 9, 16, 25]
    assert called == []
    # the workers ended on their own (exit code 0), not by a signal
    assert all(p.exitcode == 0 for p in workers)


def test_an_error_terminates_the_pool(monkeypatch) -> None:
    called = _count_terminates(monkeypatch)
    with pytest.raises(ValueError, match="bad"):
        with closing_pool(_ctx(), 2) as pool:
            workers = list(pool._pool)
            list(pool.imap_unordered(_fail, range(3)))
    assert called == ["terminate"]
    assert all(p.exitcode is not None for p in workers)  # stopped, not waited out


def test_the_audit_uses_the_system_memory_pool_unless_told_otherwise() -> None:
    """`use_system_memory_pool`: Arrow's default pool becomes the C allocator's (whose freed pages the audit gives
    back between parts), unless ARROW_DEFAULT_MEMORY_POOL names one; run in fresh processes (a pool is chosen once
    per process)."""
    import os
    import subprocess
    import sys

    code = ("import pyarrow as pa; from auditor.pools import use_system_memory_pool; "
            "use_system_memory_pool(); print(pa.default_memory_pool().backend_name)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "system"
    chosen = subprocess.run([sys.executable, "-c", code], env=dict(env, ARROW_DEFAULT_MEMORY_POOL="jemalloc"),
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.strip() in ("jemalloc", "mimalloc")  # the user's choice (mimalloc where no jemalloc)


def test_the_cli_sets_the_pool_for_every_command(monkeypatch) -> None:
    import os

    from auditor import cli

    import signal

    seen: list[str | None] = []
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # main installs its SIGTERM handler: not in pytest
    monkeypatch.setattr("auditor.pools.tune_malloc", lambda: None)  # (this process's allocator left as it is)
    monkeypatch.setattr("auditor.pools.tune_gc", lambda: None)  # (and its collector)
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(cli, "app", lambda: seen.append(os.environ.get("ARROW_DEFAULT_MEMORY_POOL")))
    cli.main()
    assert seen == ["system"]
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    cli.main()
    assert seen == ["system", "mimalloc"]


def test_the_cli_asks_for_one_blas_thread_unless_told_otherwise(monkeypatch) -> None:
    """Its processes are the auditor's parallelism: OpenBLAS's own threads only spun beside them."""
    import os
    import signal

    from auditor import cli

    seen: list[str | None] = []
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    monkeypatch.setattr("auditor.pools.tune_malloc", lambda: None)
    monkeypatch.setattr("auditor.pools.tune_gc", lambda: None)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(cli, "app", lambda: seen.append(os.environ.get("OPENBLAS_NUM_THREADS")))
    cli.main()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    cli.main()
    assert seen == ["1", "4"]
    # and numpy is not imported before `main` runs (it reads the variable once, when it is first imported)
    got = subprocess.run([sys.executable, "-c", "import sys, auditor.cli; print('numpy' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "False"


_HEAP_PROBE = """
import os, numpy as np
from auditor.pools import tune_malloc
tune_malloc()
a = np.ones(20_000_000)  # 160 MB
heap = 0
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        heap += hi - lo
print(os.environ["MALLOC_MMAP_THRESHOLD_"], os.environ["MALLOC_TRIM_THRESHOLD_"], heap >= a.nbytes)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator and /proc")
def test_tune_malloc_serves_large_arrays_from_the_heap_unless_the_user_chose() -> None:
    """`pools.tune_malloc` (the CLI calls it first): a 160 MB array comes from glibc's heap (its mmap threshold
    raised in this process by `mallopt`), and the settings are in the environment for the processes it starts; a
    value the user set is kept, and then the array is a mapping of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    got = subprocess.run([sys.executable, "-c", _HEAP_PROBE], capture_output=True, text=True, check=True, env=env)
    assert got.stdout.split() == [str(1 << 30), str(1 << 30), "True"]
    env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    got = subprocess.run([sys.executable, "-c", _HEAP_PROBE], capture_output=True, text=True, check=True, env=env)
    assert got.stdout.split() == ["131072", str(1 << 30), "False"]
    env["MALLOC_MMAP_THRESHOLD_"] = "lots"  # unreadable: left to glibc, which ignores it; no error here
    got = subprocess.run([sys.executable, "-c", _HEAP_PROBE], capture_output=True, text=True, check=True, env=env)
    assert got.stdout.split()[:2] == ["lots", str(1 << 30)]


def test_the_fork_servers_imports_are_frozen_out_of_the_collector() -> None:
    """`auditor.warm` (what the fork server imports) leaves its objects frozen (`gc.freeze`) and the collector on:
    the processes forked from it do not walk them in every full collection."""
    code = "import gc\nimport auditor.warm\nprint(gc.isenabled(), gc.get_freeze_count() > 50_000)"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["True", "True"]


def _gc_threshold(_x: int) -> tuple[int, ...]:
    import gc

    return gc.get_threshold()


def test_the_collectors_passes_are_fewer_in_the_cli_and_the_fresh_processes(monkeypatch, tmp_path) -> None:
    """`pools.tune_gc`: the CLI's process and the fork server's (`auditor.warm`) have GC_THRESHOLD; importing the
    auditor leaves a program's own thresholds as they are."""
    import gc
    import signal

    from auditor import cli, pools

    code = "import gc, auditor.audit, auditor.api\nprint(*gc.get_threshold())"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["700", "10", "10"]
    got_t = pools.call_in_fresh_process(pools.fresh_context(), _gc_threshold, 0, str(tmp_path / "r.pickle"))
    assert got_t == pools.GC_THRESHOLD
    seen: list[tuple[int, ...]] = []
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    monkeypatch.setattr(pools, "tune_malloc", lambda: None)
    monkeypatch.setattr(cli, "app", lambda: seen.append(gc.get_threshold()))
    was = gc.get_threshold()
    try:
        cli.main()
    finally:
        gc.set_threshold(*was)
    assert seen == [pools.GC_THRESHOLD] != [(700, 10, 10)]


# ---------------------------------------------------------------- call_in_fresh_process (issue 15)


def _pid_and_square(x: int) -> tuple[int, int]:
    import os

    return os.getpid(), x * x


def _input_error(x: int) -> int:
    from auditor.errors import InputError

    raise InputError(f"bad deal {x}", source="log.jsonl:7")


def _die(x: int) -> int:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    return x


def _sleep(x: float) -> float:
    import time

    time.sleep(x)
    return x


def test_a_fresh_process_returns_the_result_and_is_gone(tmp_path) -> None:
    import os

    from auditor.pools import call_in_fresh_process, fresh_context

    ctx = fresh_context()
    path = str(tmp_path / "r.pickle")
    pid, got = call_in_fresh_process(ctx, _pid_and_square, 12, path)
    assert got == 144
    assert pid != os.getpid()
    assert not os.path.exists(path)  # the result's file is removed once read
    pid2, _ = call_in_fresh_process(ctx, _pid_and_square, 1, path)
    assert pid2 != pid  # a new process for each call: nothing of the first one's heap carries over
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_fresh_process_raises_its_error_here_as_it_was(tmp_path) -> None:
    from auditor.errors import InputError
    from auditor.pools import call_in_fresh_process, fresh_context

    with pytest.raises(InputError) as e:
        call_in_fresh_process(fresh_context(), _input_error, 3, str(tmp_path / "r.pickle"))
    assert str(e.value) == "log.jsonl:7: bad deal 3"
    assert e.value.source == "log.jsonl:7"


def test_a_killed_fresh_process_is_a_one_line_error(tmp_path) -> None:
    from auditor.errors import AuditorError
    from auditor.pools import call_in_fresh_process, fresh_context

    with pytest.raises(AuditorError, match=r"^part 2 of 5: its process ended with signal 9 \(killed: out of memory\?\)$"):
        call_in_fresh_process(fresh_context(), _die, 0, str(tmp_path / "r.pickle"), name="part 2 of 5")


def _same(x: int) -> int:
    return x


def test_fresh_processes_of_several_threads_each_get_their_own_exit_status(tmp_path) -> None:
    """Four threads each start and join 40 short processes of the fork server, as the audit's parts do two at a
    time. Before `pools._start_alone`, a start polled the other threads' children too, and a child polled by two
    threads as it ended was now and then reported as "exit code 255" (76 of 1,200 such joins on the code before,
    none after, in a loop like this one; a 10M audit stopped so at part 53 of 60)."""
    import threading

    from auditor.errors import AuditorError
    from auditor.pools import call_in_fresh_process, fresh_context

    ctx = fresh_context()
    got: list[int] = []
    failed: list[str] = []

    def run(k: int) -> None:
        for i in range(40):
            try:
                got.append(call_in_fresh_process(ctx, _same, 1000 * k + i, str(tmp_path / f"{k}-{i}.pickle")))
            except AuditorError as e:
                failed.append(str(e))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failed == []
    assert sorted(got) == [1000 * k + i for k in range(4) for i in range(40)]
    assert os.listdir(tmp_path) == []  # every result read back and removed


def test_sigterm_handling_stops_the_fresh_process(tmp_path) -> None:
    """What the CLI's SIGTERM handler does first (`stop_children`): the part's process is stopped, not left to run
    on into a removed working folder; the wait for it ends with the signal."""
    import threading
    import time

    from auditor import pools
    from auditor.errors import AuditorError

    def stop_soon() -> None:
        for _ in range(200):
            if pools._CHILDREN:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        pools.stop_children()

    t = threading.Thread(target=stop_soon)
    t.start()
    t0 = time.monotonic()
    with pytest.raises(AuditorError, match="signal 15"):
        pools.call_in_fresh_process(pools.fresh_context(), _sleep, 60.0, str(tmp_path / "r.pickle"))
    t.join()
    assert time.monotonic() - t0 < 30
    assert not pools._CHILDREN


def test_parts_are_isolated_when_they_are_large(monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.audit import EARLY_MIN_DEALS, ISOLATE_MIN_DEALS, isolated
    from auditor.parts import Parts

    def parts(n: int, records: int, single: bool = False) -> Parts:
        return Parts(paths=["x"], workdir="/tmp", part_deals=1, buckets=n, parts=[[i] for i in range(n)],
                     records=records, single=single)

    for cores in (1, 2, 8):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        assert isolated(parts(3, 3 * ISOLATE_MIN_DEALS))
        assert not isolated(parts(1, 10 * ISOLATE_MIN_DEALS))  # one part: nothing piles up
        assert not isolated(parts(3, 3 * ISOLATE_MIN_DEALS, single=True))
        assert isolated(parts(3, 10), isolate=True) and not isolated(parts(3, 10 ** 9), isolate=False)
        # small parts of a small input: a process each costs more than it saves
        assert not isolated(parts(3, EARLY_MIN_DEALS - 1))
        # small parts of a large input (a low --part-deals): on two cores or more they run two at a time in fresh
        # processes, not one after the other in the audit's (issue 15: 1M deals in 12 parts, 26.6 s against 13.6 s)
        assert isolated(parts(12, EARLY_MIN_DEALS)) == (cores > 1)
        assert isolated(parts(12, 12 * ISOLATE_MIN_DEALS))


def _burn(seconds: float) -> float:
    """CPU work in the process for `seconds` of its own CPU time; returns the process's CPU time (user + system)."""
    import resource
    import time

    t = time.process_time()
    x = 0
    while time.process_time() - t < seconds:
        x += 1
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def test_stopping_the_fork_server_counts_its_processes_in_ours(tmp_path) -> None:
    """`stop_fork_server` (the CLI, when a command ends): the fork server is waited for, so the CPU time (and peak
    memory) of the processes it forked, the parts, add up to this process's children's usage, which is what
    `/usr/bin/time` and the bench report; left to itself the server exits unwaited and they are lost."""
    import multiprocessing.forkserver as fs
    import resource

    from auditor import pools

    def children() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    used = pools.call_in_fresh_process(pools.fresh_context(), _burn, 0.5, str(tmp_path / "r.pickle"))
    before = children()
    pools.stop_fork_server()
    assert children() - before >= used - 0.05
    assert fs._forkserver._forkserver_pid is None  # type: ignore[attr-defined]
    pools.stop_fork_server()  # no server: nothing to do


def test_the_cli_stops_the_fork_server_when_a_command_ends(monkeypatch) -> None:
    import signal

    from auditor import cli, pools

    seen: list[str] = []
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    monkeypatch.setattr(pools, "stop_fork_server", lambda: seen.append("stop"))
    monkeypatch.setattr(pools, "tune_malloc", lambda: None)
    monkeypatch.setattr(pools, "tune_gc", lambda: None)

    def fails() -> None:
        seen.append("app")
        raise SystemExit(2)

    monkeypatch.setattr(cli, "app", fails)
    with pytest.raises(SystemExit):
        cli.main()
    assert seen == ["app", "stop"]  # after the command, even one that exits with an error


# ---------------------------------------------------------------- parts two at a time (issue 15, a ninth session)


def test_isolated_parts_run_two_at_a_time_and_arrive_in_order(monkeypatch) -> None:
    """`run_parts` with isolated parts (`_at_once`): two parts run at once; the results are handed over in part
    order whatever order they end in; no part starts more than 4 parts ahead of the first one not yet folded."""
    import threading
    import time

    from auditor import audit as A
    from auditor.parts import Parts

    n = 9
    lock = threading.Lock()
    running = [0]
    most = [0]
    started: list[int] = []
    folded: list[int] = []

    def fake(_ctx, fn, args, path, name=""):  # noqa: ANN001, ANN202 - call_in_fresh_process's signature
        k = args[1]
        assert fn is A._part_task and name == f"part {k + 1} of {n}" and path.endswith(f"result-{k:04d}.pickle")
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            started.append(k)
            assert k < len(folded) + 4  # the window: early results stay few
        time.sleep(0.3 if k % 3 == 0 else 0.02)  # parts 0, 3, 6 are slow: the later ones end first
        with lock:
            running[0] -= 1
        return ("replay", k)

    monkeypatch.setattr(A, "call_in_fresh_process", fake)
    monkeypatch.setattr(A, "fresh_context", lambda: None)
    monkeypatch.setattr(A.os, "cpu_count", lambda: 2)
    parts = Parts(paths=["x"], workdir="/tmp/w", part_deals=1, buckets=n, parts=[[i] for i in range(n)],
                  records=n * A.ISOLATE_MIN_DEALS)
    said: list[tuple[int, int]] = []
    A.run_parts(parts, 0.05, 1, progress=lambda d, m: said.append((d, m)),
                on_result=lambda k, res: folded.append(k) if res == ("replay", k) else None)
    assert folded == list(range(n))
    assert most[0] == 2
    assert sorted(started) == list(range(n))
    assert said[-1] == (n, n) and len(said) == n


def test_a_failing_part_stops_the_others_and_is_raised(monkeypatch) -> None:
    import time

    from auditor import audit as A

    stopped: list[bool] = []
    monkeypatch.setattr(A, "stop_children", lambda: stopped.append(True))
    started: list[int] = []

    def one(k: int) -> tuple:
        started.append(k)
        if k == 1:
            raise ValueError("part 2 of 6: bad")
        time.sleep(0.2)
        return (k, k)

    arrived: list[int] = []
    with pytest.raises(ValueError, match="part 2 of 6: bad"):
        A._at_once(one, 6, 2, lambda k, _r: arrived.append(k), lambda _d, _n: None, lambda: len(arrived))
    assert stopped == [True]
    assert sorted(started) == [0, 1]  # nothing more started after the error
    assert arrived == []  # part 0 (still running, then cancelled or ended) was not folded after part 1 failed


def test_parts_at_once_is_one_per_core_at_most_two(monkeypatch) -> None:
    from auditor import audit as A

    monkeypatch.setattr(A.os, "cpu_count", lambda: 8)
    assert [A.parts_at_once(n) for n in (1, 2, 5)] == [1, 2, 2]
    monkeypatch.setattr(A.os, "cpu_count", lambda: 1)
    assert A.parts_at_once(5) == 1


def test_parts_are_about_equal_and_none_above_the_size() -> None:
    """`parts._grouped`: as many parts as the size asks for, rounded up to an even number (they run two at a
    time), of about equal size (a 300,000-deal input in two parts of about 150,000, not 250,000 + 50,000), every
    bucket once, none above `part_deals` unless one bucket is; the largest first, each part's buckets in bucket
    order."""
    import random

    from auditor.parts import PART_MULTIPLE, _grouped

    rng = random.Random(7)
    per = {b: rng.randint(800, 1500) for b in range(256)}
    total = sum(per.values())
    for size in (total, total - 1, total // 2, total // 3 + 1, 20_000, 5_000):
        got = _grouped(per, size)
        assert sorted(b for g in got for b in g) == sorted(per)  # each bucket once
        assert all(g == sorted(g) for g in got)
        sums = [sum(per[b] for b in g) for g in got]
        assert sums == sorted(sums, reverse=True)  # the largest first
        want = -(-total // size)
        assert len(got) >= want and max(sums) <= size
        assert len(got) == 1 or len(got) % PART_MULTIPLE == 0
        if size >= 50 * max(per.values()):  # buckets small next to a part: the count asked for, about equal
            assert len(got) <= want + PART_MULTIPLE
            assert max(sums) - min(sums) <= max(per.values())
    assert sorted(_grouped(per, 1)) == [[b] for b in sorted(per)]  # one bucket per part when the size is smaller
    assert sorted(_grouped({0: 0, 5: 4000, 9: 1}, 1000)) == [[0], [5], [9]]  # a bucket above the size is its own
    assert _grouped({0: 3}, 10) == [[0]]


def test_parts_share_the_work_not_the_deals() -> None:
    """`parts._grouped` with each bucket's work: the parts share the work, not the deals (under the size); five
    parts' worth of equal buckets make six parts (two at a time: three rounds of smaller parts, not a fifth part
    alone at the end)."""
    from auditor.parts import _grouped

    deals = {0: 60_000, 1: 50_000, 2: 40_000}
    work = {0: 100, 1: 500, 2: 450}  # bucket 0: many cheap deals (All Fours at 2), 1 and 2 fewer, dearer
    assert _grouped(deals, 100_000) == [[1, 2], [0]]  # by deals: 90,000 + 60,000 deals, work 950 + 100
    assert _grouped(deals, 100_000, work) == [[0, 2], [1]]  # by work: 550 + 500, deals 100,000 + 50,000
    assert _grouped(deals, 99_999, work) == [[1], [2], [0]]  # [0, 2] would be over the size: more parts
    # the 300k bench season's tables (deals, players): the parts' work within a quarter of a table's
    deals = {0: 49_700, 1: 49_700, 2: 37_500, 3: 37_500, 4: 31_000, 5: 31_000, 6: 31_000, 7: 32_000}
    players = {0: 2, 1: 2, 2: 5, 3: 5, 4: 4, 5: 4, 6: 4, 7: 6}
    work = {b: deals[b] * (5 + players[b]) for b in deals}
    loads = [sum(work[b] for b in g) for g in _grouped(deals, 250_000, work)]
    assert len(loads) == 2 and max(loads) - min(loads) <= min(work.values()) // 4
    assert len(_grouped({b: 100 for b in range(50)}, 1_000)) == 6


# ---------------------------------------------------------------- the console entry's quick exit (issue 15, a tenth session)


def test_exit_code_is_what_sys_exit_gives() -> None:
    from auditor.cli import _exit_code

    assert _exit_code(None) == 0
    assert _exit_code(0) == 0 and _exit_code(1) == 1 and _exit_code(143) == 143
    assert _exit_code(True) == 1 and _exit_code(False) == 0
    assert _exit_code(256 + 2) == 2 and _exit_code(-1) == 255  # what the OS keeps of the status


def _run_entry(body: str) -> subprocess.CompletedProcess:
    code = ("import atexit, sys, threading, time\n"
            "from auditor import cli\n"
            "atexit.register(lambda: sys.stdout.write('exit functions ran\\n'))\n" + body + "\ncli.entry()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_entry_exits_with_the_commands_code_after_the_exit_functions() -> None:
    """`cli.entry` ends the process with `os._exit` after `main`: the command's exit code, the exit functions run
    and the streams flushed (the output is whole), a message given to sys.exit on stderr as Python prints it."""
    got = _run_entry("def app():\n    print('output', end='')\n    sys.exit(3)\ncli.app = app")
    assert got.returncode == 3
    assert got.stdout == "outputexit functions ran\n"
    got = _run_entry("cli.app = lambda: print('fine')")
    assert got.returncode == 0 and got.stdout == "fine\nexit functions ran\n"
    # the interpreter is not torn down: an object left in __main__ is never collected (the usual exit would)
    got = _run_entry("class Kept:\n    def __del__(self):\n        print('torn down')\nkept = Kept()\n"
                     "cli.app = lambda: None")
    assert got.returncode == 0 and got.stdout == "exit functions ran\n"
    got = _run_entry("def app():\n    sys.exit('auditor: no such thing')\ncli.app = app")
    assert got.returncode == 1 and got.stderr.strip() == "auditor: no such thing"


def test_a_part_whose_process_died_is_one_line_and_exit_5(tmp_path) -> None:
    """An error the command does not catch itself (here, as in a 10M audit, a part's process that ended badly)
    is one line on stderr and exit 5 (`cli.EXIT_FAILED`), never a traceback; a bad input that escapes a command
    keeps its own code (`cli._code_of`)."""
    from pathlib import Path

    demo = str(Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "season.jsonl.gz")
    body = ("import os\nfrom auditor import audit\nfrom auditor.pools import call_in_fresh_process, fresh_context\n"
            "def dies(*a, **k):\n"
            f"    return call_in_fresh_process(fresh_context(), os._exit, 7, {str(tmp_path / 'r.pickle')!r}, "
            "name='part 2 of 5')\n"
            f"audit.audit_input = dies\nsys.argv = ['auditor', 'audit', '--json', {demo!r}]")
    got = _run_entry(body)
    assert got.returncode == 5
    assert got.stderr == "auditor: part 2 of 5: its process ended with exit code 7\n"
    assert got.stdout == "exit functions ran\n"  # no document: the audit did not finish
    from auditor.cli import _code_of
    from auditor.errors import AuditorError, InputError, NoInputError, RulesError, UsageError

    assert [_code_of(e) for e in (NoInputError("x"), InputError("x"), RulesError("x"), UsageError("x"),
                                  AuditorError("x"))] == [3, 2, 2, 2, 5]


def test_the_entry_waits_for_a_thread_still_running() -> None:
    """With another thread alive, `entry` exits the usual way, which waits for it: its output is not lost."""
    got = _run_entry("def app():\n    threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
                     "    sys.exit(4)\ncli.app = app")
    assert got.returncode == 4
    assert got.stdout.splitlines() == ["thread done", "exit functions ran"]


TRIM_PROBE = """
import numpy as np
from auditor.pools import trim_heap

def anon():
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon:'):
            return int(line.split()[1]) // 1024

import ctypes
# the 1 MB blocks from glibc's heap, whatever state its dynamic mmap threshold is in (M_MMAP_THRESHOLD is -3): left
# to its own rule (raised by freeing an 8 MB block first), they were at times mmapped, in CI and once under -n 2,
# and went back at their free, so the probe measured nothing
ctypes.CDLL("libc.so.6").mallopt(-3, 64 << 20)
blocks = [np.ones(1 << 20, np.uint8) for _ in range(400)]  # 1 MB each, touched
keep = blocks[1::2]  # every other block stays: the 200 freed ones are holes between live blocks, never the heap's
del blocks  # top, which glibc gives back by itself
before = anon()
trim_heap()
print(before, anon())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RssAnon is read from /proc (Linux)")
def test_trim_heap_gives_the_freed_heap_back() -> None:
    """`trim_heap` (issue 15: `marked_ten`'s finalize trims after each part): 200 MB of 1 MB arrays freed between
    1 MB arrays that stay are still resident until it runs, and gone after (the C library's allocator keeps them
    otherwise: the measure has teeth). Run in a fresh process, whose heap holds nothing else."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc: no malloc_trim")
    got = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, check=True)
    before, after = map(int, got.stdout.split())
    assert before > 350, before  # the 200 freed arrays were still held, with the 200 kept
    assert after < before - 150, (before, after)


# ---------------------------------------------------------------- the fork server started early (a nineteenth session)

def _sized(path, size: int) -> str:
    """A file of `size` bytes that takes no disk (sparse)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return str(path)


def test_the_fork_server_starts_early_for_an_input_sized_like_a_large_audit(monkeypatch, tmp_path) -> None:
    from auditor import pools

    started: list[int] = []
    monkeypatch.setattr(pools, "start_fork_server", lambda: started.append(1))
    need = pools.EARLY_MIN_DEALS
    small_pq = _sized(tmp_path / "a.parquet", need * pools.BYTES_PER_DEAL[".parquet"] - 1)
    assert not pools.start_fork_server_early([small_pq]) and not started
    big_pq = _sized(tmp_path / "b.parquet", need * pools.BYTES_PER_DEAL[".parquet"])
    assert pools.start_fork_server_early([big_pq]) and started == [1]
    # JSON Lines take more bytes a deal: the Parquet file's size is not enough there
    lines = _sized(tmp_path / "c.jsonl", need * pools.BYTES_PER_DEAL[".parquet"])
    assert not pools.start_fork_server_early([lines])
    # a directory: its log files add up; hidden files, `_` files and folders, and other names do not count
    half = need * pools.BYTES_PER_DEAL[".parquet"] // 2
    d = tmp_path / "ds"
    _sized(d / "table=a" / "part-0.parquet", half)
    _sized(d / ".hidden" / "x.parquet", 10 * half)
    _sized(d / "_tmp.parquet", 10 * half)
    _sized(d / "notes.txt", 10 * half)
    assert not pools.start_fork_server_early([str(d)])
    _sized(d / "table=b" / "part-0.parquet", half)
    started.clear()
    assert pools.start_fork_server_early([str(d)]) and started == [1]
    # a path that is not there is no error here (the audit reports it)
    assert not pools.start_fork_server_early([str(tmp_path / "missing.parquet")])


def test_the_cli_audit_starts_it_before_its_checks_and_not_for_dask_or_reference(monkeypatch, tmp_path) -> None:
    from typer.testing import CliRunner

    from auditor import cli, pools

    calls: list[list[str]] = []
    monkeypatch.setattr(pools, "start_fork_server_early", lambda paths: calls.append(list(paths)) or False)
    runner = CliRunner()
    log = str(tmp_path / "missing.jsonl")
    res = runner.invoke(cli.app, ["audit", log, "--fdr", "2"])  # a bad option: exit 2, after the early start
    assert res.exit_code == 2 and calls == [[log]]
    calls.clear()
    runner.invoke(cli.app, ["audit", log, "--engine", "reference"])
    runner.invoke(cli.app, ["audit", log, "--dask", "local:2"])
    assert calls == []


def test_the_fork_server_has_loaded_what_each_process_imports_for_the_main_module() -> None:
    """Each process forked from the fork server first imports the parent's main module again (`python -m auditor`
    and the `auditor` script both import `auditor.cli`): `auditor.warm` loads it in the server once, so that the
    import costs a process nothing (it took 30-60 ms of each of the 15 processes of a 300,000-deal audit)."""
    code = ("import sys, auditor.warm; before = set(sys.modules); import auditor.__main__; "
            "print(sorted(set(sys.modules) - before - {'auditor.__main__'}))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "[]"


def test_a_forked_helper_returns_its_result_or_its_error(tmp_path):
    """`pools.fork_helper`: the result of fn() computed in a forked child, its exception raised in the parent,
    a child that dies named with its exit code, and a cancelled child stopped; no file left behind."""
    import os

    from auditor.errors import AuditorError
    from auditor.pools import fork_helper

    parent = os.getpid()
    h = fork_helper(lambda: (os.getpid(), list(range(5))), str(tmp_path), "the helper")
    pid, got = h.join()
    assert pid != parent and got == [0, 1, 2, 3, 4]

    def fails():
        raise ValueError("bad row 7")

    with pytest.raises(ValueError, match="bad row 7"):
        fork_helper(fails, str(tmp_path), "the helper").join()
    with pytest.raises(AuditorError, match="^the helper: its process ended with exit code 3$"):
        fork_helper(lambda: os._exit(3), str(tmp_path), "the helper").join()
    slow = fork_helper(lambda: __import__("time").sleep(60), str(tmp_path), "the helper")
    slow.cancel()
    assert slow.pid is None
    assert list(tmp_path.iterdir()) == []
