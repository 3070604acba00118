"""`base._settle` (a timeline's equal bins added, its level raised until at most MAX_BINS bins remain) against its
spec `_settle_spec`, which sorts the bins again at every level: the same level, bins and sums to the last bit."""

import numpy as np
import pytest
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


def _same_summary(a: base.TrialSummary, b: base.TrialSummary) -> bool:
    same = all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
               for x, y in ((a.p, b.p), (a.n, b.n), (a.k, b.k)))
    if a.timeline is None or b.timeline is None:
        return same and a.timeline is None and b.timeline is None
    ta, tb = a.timeline, b.timeline
    return same and ta.level == tb.level and ta.tables == tb.tables and all(
        x.dtype == y.dtype and x.tobytes() == y.tobytes()
        for x, y in ((ta.tb, tb.tb), (ta.tbin, tb.tbin), (ta.n, tb.n), (ta.obs, tb.obs), (ta.exp, tb.exp),
                     (ta.var, tb.var)))


@st.composite
def trials(draw):
    """Trials of many subjects (some of none: -1) at a few tables, over minutes to years (so that some subjects'
    timelines climb and others do not), some untimed, some before 1970, with a handful of distinct probabilities or
    all distinct ones, in any order."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.sampled_from([1, 7, 300, 5000, 20000]))
    subjects = draw(st.sampled_from([1, 3, 40, 400]))
    subject = rng.integers(-1, subjects, m)
    if draw(st.booleans()):  # one subject with most of the trials: it climbs
        subject[rng.random(m) < 0.6] = 0
    tables = draw(st.integers(1, 12))
    table_idx = rng.integers(0, tables, m)
    spread = 2 ** draw(st.integers(0, 30))
    time_us = rng.integers(-spread // 4, spread, m) * base.MINUTE_US + rng.integers(0, base.MINUTE_US, m)
    time_us[rng.random(m) < 0.05] = base.TIME_NONE
    obs = (rng.random(m) < 0.3).astype(np.int8)
    if draw(st.booleans()):
        p = rng.choice(np.array([0.1, 0.25, 1 / 3, 0.5]), m)
    else:
        p = rng.random(m)
    names = [f"s{i}" for i in range(subjects)]
    table_names = [f"table {i}" for i in range(tables + 3)]
    return subject, names, obs, p, table_idx, table_names, time_us


@settings(max_examples=120, deadline=None)
@given(trials(), st.booleans())
def test_summarise_is_its_spec_to_the_last_bit(args, with_timeline):
    """Every subject at once gives each subject what its own trials give: the same subjects in the same order, the
    same groups, and the same timeline (level, tables, bins, sums) to the last bit."""
    got = base.summarise(*args, with_timeline=with_timeline)
    want = base.summarise_spec(*args, with_timeline=with_timeline)
    assert list(got) == list(want)
    assert all(_same_summary(got[k], want[k]) for k in want)


def test_summarise_climbs_only_the_subjects_that_need_it():
    """A subject with thousands of minutes climbs to the level its own timeline reaches; one with a few stays at
    level 0; and both equal the spec's."""
    rng = np.random.default_rng(27)
    m = 6000
    subject = np.where(np.arange(m) < 50, 1, 0)
    time_us = rng.integers(0, 10**6, m) * base.MINUTE_US
    args = (subject, ["busy", "quiet"], (rng.random(m) < 0.4).astype(np.int8), rng.random(m) / 2,
            rng.integers(0, 3, m), ["a", "b", "c"], time_us)
    got, want = base.summarise(*args), base.summarise_spec(*args)
    assert got["busy"].timeline.level > 0 and len(got["busy"].timeline) <= MAX_BINS
    assert got["quiet"].timeline.level == 0 and len(got["quiet"].timeline) == 50
    assert all(_same_summary(got[k], want[k]) for k in want)


@st.composite
def summary_pairs(draw):
    """Pairs of summaries of two parts' trials, as the parts' counts give them: the same subjects or others, tables
    shared or not, one part over minutes and the other over years (so that the levels differ and some merges
    climb), some summaries empty, some without a timeline or with an empty one."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = []
    for _ in range(draw(st.sampled_from([1, 5, 60]))):
        pair = []
        for _side in range(2):
            kind = rng.integers(0, 8)
            if kind == 0:
                pair.append(base.TrialSummary())
                continue
            m = int(rng.choice([1, 4, 100, 2000]))
            spread = 2 ** int(rng.integers(0, 30))
            time_us = rng.integers(-spread // 4, spread, m) * base.MINUTE_US
            time_us[rng.random(m) < 0.05] = base.TIME_NONE
            p = rng.choice(np.array([0.125, 0.25, 0.5]), m) if rng.random() < 0.5 else rng.random(m)
            tl = None
            if kind == 1:
                tl = base.Timeline()
            elif kind > 2:
                tl = Timeline.of([f"table {i}" for i in range(6)], rng.integers(0, 6, m), time_us,
                                 (rng.random(m) < 0.3).astype(float), p, rng.random(m))
            pair.append(base.TrialSummary.of((rng.random(m) < 0.3).astype(np.int8), p, tl))
        out.append(tuple(pair))
    return out


@settings(max_examples=150, deadline=None)
@given(summary_pairs())
def test_merge_pairs_is_the_merge_of_each_pair_to_the_last_bit(pairs):
    got = base.merge_pairs(pairs)
    want = [base.TrialSummary.merge([a, b]) for a, b in pairs]
    assert len(got) == len(want)
    assert all(_same_summary(g, w) for g, w in zip(got, want, strict=True))
    # what was merged owns its arrays: none holds the batch's whole array alive (a fold replaces some of a batch's
    # summaries, not all)
    for (a, b), g in zip(pairs, got, strict=True):
        if len(a) and len(b):
            arrays = [g.p, g.n, g.k] + ([] if g.timeline is None else [
                g.timeline.tb, g.timeline.tbin, g.timeline.n, g.timeline.obs, g.timeline.exp, g.timeline.var])
            assert all(x.base is None for x in arrays)


def test_merge_summaries_into_is_the_merge_of_both():
    """A part folded into a running total gives what merging the two gives: the same subjects and streams in the
    same order, each the same to the last bit."""
    rng = np.random.default_rng(15)

    def counts(seed_shift: int) -> dict:
        m = 30000
        subject = rng.integers(-1, 300, m)
        args = (subject, [f"s{i}" for i in range(300)], (rng.random(m) < 0.2).astype(np.int8), rng.random(m) / 3,
                rng.integers(0, 4, m), ["a", "b", "c", "d"],
                (rng.integers(0, 10**5, m) + seed_shift) * base.MINUTE_US)
        return {"own": base.summarise(*args), "other": base.summarise(*args, with_timeline=False)}

    def by_subject(c: dict) -> dict:
        out: dict = {}
        for stream, subs in c.items():
            for s, t in subs.items():
                out.setdefault(s, {})[stream] = t
        return out

    total, part = by_subject(counts(0)), by_subject(counts(10**6))
    del part["s3"]["own"]
    part["new"] = {"own": base.TrialSummary()}
    want = base.merge_summaries([total, part])
    got = base.merge_summaries_into({s: dict(v) for s, v in total.items()}, part)
    assert list(got) == list(want)
    assert all(list(got[s]) == list(want[s]) and all(_same_summary(got[s][k], want[s][k]) for k in want[s])
               for s in want)


@settings(max_examples=60, deadline=None)
@given(trials())
def test_summaries_pickle_back_to_the_same_arrays(args):
    """A summary and its timeline pickled in one buffer (`__reduce_ex__`) come back the same to the last bit, with
    the same dtypes, writable and aligned (numba's kernels take them), as a deep copy does."""
    import copy
    import pickle

    want = base.summarise(*args)
    for got in (pickle.loads(pickle.dumps(want, protocol=pickle.HIGHEST_PROTOCOL)), copy.deepcopy(want)):
        assert list(got) == list(want) and all(_same_summary(got[k], want[k]) for k in want)
        for t in got.values():
            arrays = [t.p, t.n, t.k] + ([] if t.timeline is None else [
                t.timeline.tb, t.timeline.tbin, t.timeline.n, t.timeline.obs, t.timeline.exp, t.timeline.var])
            assert all(a.flags.writeable and a.flags.aligned for a in arrays)


def test_a_summary_of_other_dtypes_pickles_as_a_dataclass():
    """Arrays of other dtypes than the counts give (a caller's own) are pickled as they are, not cast."""
    import pickle

    tl = Timeline(2, ["a"], np.zeros(3, np.int64), np.arange(3), np.ones(3, np.int64), np.ones(3, np.float32),
                  np.ones(3), np.zeros(3))
    t = base.TrialSummary(np.array([0.5], np.float32), np.array([3]), np.array([1]), tl)
    got = pickle.loads(pickle.dumps(t))
    assert got.p.dtype == np.float32 and got.timeline.obs.dtype == np.float32 and got.timeline.tb.dtype == np.int64
    assert _same_summary(got, t)
    empty = pickle.loads(pickle.dumps(base.TrialSummary()))
    assert _same_summary(empty, base.TrialSummary())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lex_order3_is_np_lexsort(seed: int) -> None:
    """`base.lex_order3(a, b, c)` is `np.lexsort((c, b, a))`, permutation for permutation: sorted runs, ties, negative
    values, empty and one-row inputs, and ranges too wide for one 63-bit key (then np.lexsort itself)."""
    from auditor.detectors.base import lex_order3

    rng = np.random.default_rng(seed)
    for trial in range(120):
        m = int(rng.integers(0, 2000))
        a = np.sort(rng.integers(0, int(rng.integers(1, 400)), m))
        b = rng.integers(-3, int(rng.integers(1, 40)), m)
        c = rng.integers(-10 ** int(rng.integers(1, 9)), 10 ** int(rng.integers(1, 9)), m)
        if trial % 4 == 0 and m:
            c[rng.random(m) < 0.1] = NO_TIME_BIN  # too wide to pack
        if trial % 5 == 0:
            c = np.sort(c)  # runs, as a merge's rows come
        assert np.array_equal(lex_order3(a, b, c), np.lexsort((c, b, a)))
