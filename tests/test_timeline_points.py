"""`base.points_many` against its spec, `Timeline.points`, one subject at a time (issue 15, a twenty-ninth
session): the same lists, float for float, for timelines of every shape the counts give (few bins and more bins
than the points kept, shared and own table lists, untimed bins, negative variance sums, integer and float
observations), and in the two detectors that batch them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from auditor.detectors.base import NO_TIME_BIN, Timeline, points_many

TABLES = ["t10", "t2", "t1", "Table 3", "t21", "b", "a"]


def _timeline(rng: np.random.Generator, bins: int, tables: list[str], int_obs: bool) -> Timeline:
    used = rng.choice(len(tables), size=min(len(tables), int(rng.integers(1, 4))), replace=False)
    tb = rng.choice(used, size=bins).astype(np.int32)
    tbin = rng.integers(0, 5 * bins + 5, size=bins).astype(np.int64)
    tbin[rng.random(bins) < 0.05] = NO_TIME_BIN
    # one bin per (table, bin): the counts never hold two
    keys = np.unique(np.stack([tb.astype(np.int64), tbin]), axis=1)
    rng.shuffle(keys, axis=1)
    tb, tbin = keys[0].astype(np.int32), keys[1]
    m = len(tb)
    n = rng.integers(1, rng.choice([3, 50, 10**6]), size=m).astype(np.int64)
    p = rng.random(m) ** rng.choice([1.0, 6.0])
    obs = rng.binomial(n, p).astype(float) if int_obs else n * p * rng.random(m) * 2
    exp = n * p
    var = n * p * (1 - p) - (rng.random(m) < 0.1) * 1e-12  # a sum a hair below zero is drawn as 0
    return Timeline(level=0, tables=tables, tb=tb, tbin=tbin, n=n, obs=obs, exp=exp, var=var)


def _text(x: object) -> str:
    return json.dumps(x)  # -0.0 and 0.0, 1.0 and 1 differ here


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_points", [2, 3, 64, 200])
def test_points_many_are_each_timelines_points(seed: int, max_points: int) -> None:
    rng = np.random.default_rng(seed)
    shared = list(TABLES)
    tls = []
    for _ in range(40):
        bins = int(rng.choice([0, 1, 2, 5, max_points - 1, max_points, max_points + 1, 3 * max_points, 700]))
        tables = shared if rng.random() < 0.7 else [f"x{j}" for j in rng.permutation(9).tolist()]
        tls.append(_timeline(rng, max(bins, 0), tables, bool(rng.random() < 0.5)) if bins else Timeline())
    for counts in (True, False):
        for variance in (False, True):
            want = [t.points(max_points, counts=counts, variance=variance) for t in tls]
            got = points_many(tls, max_points, counts=counts, variance=variance)
            assert _text(got) == _text(want)
            assert [type(g) for g in got] == [type(w) for w in want]  # CleanList, or a plain [] for no bins


def test_points_many_of_nothing_and_of_other_dtypes() -> None:
    assert points_many([]) == []
    assert points_many([Timeline(), Timeline()]) == [[], []]
    rng = np.random.default_rng(7)
    t = _timeline(rng, 300, TABLES, True)
    odd = Timeline(level=0, tables=t.tables, tb=t.tb, tbin=t.tbin, n=t.n.astype(np.int32), obs=t.obs.astype(np.float32),
                   exp=t.exp, var=t.var)
    assert _text(points_many([t, odd], 64, variance=True)) == _text([t.points(64, variance=True),
                                                                   odd.points(64, variance=True)])
