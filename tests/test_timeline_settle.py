"""`base._settle` (a timeline's equal bins added, its level raised until at most MAX_BINS bins remain) against its
spec `_settle_spec`, which sorts the bins again at every level: the same level, bins and sums to the last bit."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.detectors import base
from auditor.detectors.base import MAX_BINS, MAX_LEVEL, NO_TIME_BIN, Timeline


def _same(a: Timeline, b: Timeline) -> bool:
    return (a.level == b.level and a.tables == b.tables and a.tb.dtype == b.tb.dtype
            and all(np.array_equal(x, y) for x, y in ((a.tb, b.tb), (a.tbin, b.tbin), (a.n, b.n)))
            and all(np.array_equal(x, y) for x, y in ((a.obs, b.obs), (a.exp, b.exp), (a.var, b.var))))


@st.composite
def bins(draw):
    """Bins of a few tables, from a handful to thousands, spread over minutes to decades (so that the level
    climbs from none to twenty and more), some untimed, some before 1970, repeated bins, floats of any size."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.sampled_from([0, 1, 5, MAX_BINS, MAX_BINS + 1, 700, 3000]))
    spread = 2 ** draw(st.integers(0, 30))
    tables = draw(st.integers(1, 6))
    tb = rng.integers(0, tables, m).astype(np.int32)
    tbin = rng.integers(-spread // 3, spread, m).astype(np.int64)
    tbin[rng.random(m) < 0.05] = NO_TIME_BIN
    if m > 4 and draw(st.booleans()):
        tbin[: m // 2] = tbin[m // 2: 2 * (m // 2)]  # repeated bins: summed
    n = rng.integers(1, 50, m).astype(np.int64)
    obs = rng.random(m) * 10.0 ** rng.integers(-3, 4, m)
    exp = rng.random(m) * 3.7
    var = rng.random(m) / 7.0
    level = draw(st.sampled_from([0, 3, MAX_LEVEL - 1, MAX_LEVEL]))
    return level, [f"t{i}" for i in range(tables)], tb, tbin, n, obs, exp, var


@settings(max_examples=300, deadline=None)
@given(bins())
def test_settle_is_its_spec_to_the_last_bit(args):
    got, want = base._settle(*args), base._settle_spec(*args)
    assert _same(got, want)
    assert len(got) <= MAX_BINS or got.level >= MAX_LEVEL


def test_a_merge_that_climbs_twenty_levels_is_the_specs():
    """Two parts of minute bins over three years each fit at level 0 but not together: the merge climbs to the
    level the spec reaches one sort at a time."""
    rng = np.random.default_rng(5)
    parts = []
    for k in range(2):
        t = np.sort(rng.choice(2_000_000, 100, replace=False)).astype(np.int64) * 60_000_000 + k
        parts.append(Timeline.of(["a", "b"], rng.integers(0, 2, 100), t, rng.integers(0, 2, 100), rng.random(100)))
    assert all(p.level == 0 for p in parts)
    merged = Timeline.merge(parts)
    cat = np.concatenate
    spec = base._settle_spec(0, ["a", "b"], cat([p.tb for p in parts]), cat([p.tbin for p in parts]),
                             cat([p.n for p in parts]), cat([p.obs for p in parts]), cat([p.exp for p in parts]),
                             cat([p.var for p in parts]))
    assert merged.level >= 10 and _same(merged, spec)


@st.composite
def binned_rows(draw):
    """Rows of `play_columns._settle` (collusion's and revoke_pattern's counts): several subjects with their own
    levels, groups, tables named so that their natural order is not their text's, minutes to decades of bins."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.sampled_from([0, 1, 9, 200, 2500]))
    S, G = draw(st.integers(1, 7)), draw(st.integers(1, 5))
    tables = ["t10", "t2", "t1", "a", "t02"][: draw(st.integers(1, 5))]
    spread = 2 ** draw(st.integers(0, 30))
    tbin = rng.integers(-spread // 3, spread, m).astype(np.int64)
    tbin[rng.random(m) < 0.05] = NO_TIME_BIN
    return ([f"s{i}" for i in range(S)], rng.integers(0, S, m), rng.integers(0, 3, S).astype(np.int64),
            [round(0.05 * (g + 1), 2) for g in range(G)], rng.integers(0, G, m), tables,
            rng.integers(0, len(tables), m), tbin, rng.integers(1, 9, m).astype(np.int64),
            rng.integers(0, 3, m).astype(np.int64), draw(st.sampled_from([4, 16, MAX_BINS])))


@settings(max_examples=200, deadline=None)
@given(binned_rows())
def test_binned_settle_is_its_spec(args):
    """`play_columns._settle` (levels found on one sort, one more sort at the levels reached) against its spec,
    which sorts again at every raise: every field equal."""
    from auditor.detectors import play_columns as pc

    got, want = pc._settle(*args), pc._settle_spec(*args)
    for name in ("subjects", "groups", "tables", "max_bins"):
        assert getattr(got, name) == getattr(want, name)
    for name in ("level", "subj", "tb", "tbin", "grp", "n", "k"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
