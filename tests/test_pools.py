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


def test_a_finished_pool_is_closed_not_terminated(monkeypatch) -> None:
    called: list[str] = []
    real = multiprocessing.pool.Pool.terminate

    def terminate(self) -> None:  # noqa: ANN001
        called.append("terminate")
        real(self)

    monkeypatch.setattr(multiprocessing.pool.Pool, "terminate", terminate)
    with closing_pool(_ctx(), 2, maxtasksperchild=1) as pool:
        got = sorted(pool.imap_unordered(_square, range(6)))
        workers = list(pool._pool)
    assert got == [0, 1, 4, 9, 16, 25]
    assert called == []
    # the workers ended on their own (exit code 0), not by a signal
    assert all(p.exitcode == 0 for p in workers)


def test_an_error_terminates_the_pool(monkeypatch) -> None:
    called: list[str] = []
    real = multiprocessing.pool.Pool.terminate

    def terminate(self) -> None:  # noqa: ANN001
        called.append("terminate")
        real(self)

    monkeypatch.setattr(multiprocessing.pool.Pool, "terminate", terminate)
    with pytest.raises(ValueError, match="bad"):
        with closing_pool(_ctx(), 2) as pool:
            list(pool.imap_unordered(_fail, range(3)))
    assert called == ["terminate"]
