"""`closing_pool`: a pool that finished its work is closed and joined, never terminated (SIGTERM to workers that
the CLI's Python handler can lose, a hang seen in a 1M audit); an error still terminates it."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool

import pytest

from auditor.pools import closing_pool


def _square(x: int) -> int:
    return x * x


def _fail(x: int) -> int:
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
            list(pool.imap_unordered(_fail, range(3)))
    assert called == ["terminate"]


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
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(cli, "app", lambda: seen.append(os.environ.get("ARROW_DEFAULT_MEMORY_POOL")))
    cli.main()
    assert seen == ["system"]
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    cli.main()
    assert seen == ["system", "mimalloc"]
