"""The bounded counts of the play tests (issue 15): `play_columns.BinnedGroups` merges exactly and canonically,
its timelines are `base.Timeline`'s, and `collusion` / `revoke_pattern` give the same results whatever the
partition of the input: parts made of whole tables, and pieces of one table disjoint in time."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.columns import TIME_NONE, from_results
from auditor.dealog import validate
from auditor.detectors.base import MAX_BINS, Timeline
from auditor.detectors.collusion import Collusion
from auditor.detectors.play_columns import BinnedGroups
from auditor.detectors.revoke_pattern import RevokePattern
from auditor.replay.reference import replay_deal
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, simulate_season

MIN_US = 60_000_000


def _trials(seed: int, n: int = 30_000):
    """Random trials of 7 subjects in 4 groups at 3 tables over some 13 years of minutes (5% untimed): enough
    distinct minutes that every subject's level rises above 0."""
    rng = np.random.default_rng(seed)
    subj = rng.integers(0, 7, n)
    grp = rng.integers(0, 4, n)
    tb = rng.integers(0, 3, n)
    t = rng.integers(0, 7_000_000, n) * MIN_US + rng.integers(0, MIN_US, n)
    t[rng.random(n) < 0.05] = TIME_NONE
    k = (rng.random(n) < 0.3).astype(np.int64)
    return subj, grp, tb, t, k, rng


SUBJECTS = [f"s{i}" for i in range(7)]
GROUPS = [0.1, 0.2, 0.5, 0.05]
TABLES = ["t10", "t2", "t1"]


def test_merge_of_any_partition_is_the_whole():
    subj, grp, tb, t, k, rng = _trials(1)
    whole = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k)
    assert (whole.level > 0).all() and whole.subjects == SUBJECTS and whole.groups == sorted(GROUPS)
    assert whole.tables == ["t1", "t2", "t10"]  # natural order
    for parts_n in (2, 5):
        lab = rng.integers(0, parts_n, len(k))
        parts = [BinnedGroups.of(SUBJECTS, subj[lab == j], GROUPS, grp[lab == j], TABLES, tb[lab == j], t[lab == j],
                                 k[lab == j]) for j in range(parts_n)]
        assert BinnedGroups.merge(parts) == whole
        assert BinnedGroups.merge(parts[::-1]) == whole
        assert BinnedGroups.merge([BinnedGroups.merge(parts[:1]), BinnedGroups.merge(parts[1:])]) == whole
    # the same trials given in another order, with their keys listed in another order: the same fields
    o = rng.permutation(len(k))
    rs, rg, rt = SUBJECTS[::-1], GROUPS[::-1], TABLES[::-1]
    assert BinnedGroups.of(rs, 6 - subj[o], rg, 3 - grp[o], rt, 2 - tb[o], t[o], k[o]) == whole
    # a change of one trial is seen
    k2 = k.copy()
    k2[0] ^= 1
    assert BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k2) != whole


def test_join_of_disjoint_subjects_is_the_merge():
    """`BinnedGroups.join` (the groups of `collusion.join_shards`): parts whose subjects are disjoint give `merge`'s
    structure, field for field and dtype for dtype, whatever their order and however the subjects are split
    (a part with one subject, parts with tables or groups of their own, an empty part); parts that share a subject
    fall back to `merge`."""
    subj, grp, tb, t, k, rng = _trials(3)
    whole = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k)
    for split in ([0, 1, 1, 2, 2, 2, 0], [0, 0, 0, 0, 0, 0, 1], [3, 2, 1, 0, 3, 2, 1], [0, 1, 2, 3, 4, 5, 6]):
        lab = np.array(split)[subj]
        keep = (grp != 3) | (lab == 0)  # a group met by one part only
        w = BinnedGroups.of(SUBJECTS, subj[keep], GROUPS, grp[keep], TABLES, tb[keep], t[keep], k[keep])
        parts = [BinnedGroups.of(SUBJECTS, subj[keep & (lab == j)], GROUPS, grp[keep & (lab == j)], TABLES,
                                 tb[keep & (lab == j)], t[keep & (lab == j)], k[keep & (lab == j)])
                 for j in range(max(split) + 1)] + [BinnedGroups()]
        assert BinnedGroups.join(parts) == BinnedGroups.merge(parts) == w
        assert BinnedGroups.join(parts[::-1]) == w
    halves = [BinnedGroups.of(SUBJECTS, subj[h::2], GROUPS, grp[h::2], TABLES, tb[h::2], t[h::2], k[h::2])
              for h in (0, 1)]
    assert BinnedGroups.join(halves) == whole  # shared subjects: merged


def test_bounded_and_exact_totals():
    subj, grp, tb, t, k, _ = _trials(2)
    b = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k)
    assert len(b) <= len(SUBJECTS) * (MAX_BINS + 3) * len(GROUPS) < len(k)
    for s, (lo, hi) in b.spans().items():
        i = SUBJECTS.index(s)
        bins = {(x, y) for x, y in zip(b.tb[lo:hi].tolist(), b.tbin[lo:hi].tolist(), strict=True)}
        assert len(bins) <= MAX_BINS
        want = {g: [int(((subj == i) & (grp == j)).sum()), int(k[(subj == i) & (grp == j)].sum())]
                for j, g in enumerate(GROUPS)}
        assert b.totals(lo, hi) == {g: want[g] for g in sorted(GROUPS)}


def test_timeline_is_the_timeline_of_the_trials():
    """A subject's timeline from the bins (group p known at the end) == `base.Timeline` of its trials one by one,
    point for point (both exact at bin ends)."""
    subj, grp, tb, t, k, _ = _trials(3)
    b = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k)
    p_sorted = np.asarray(b.groups, float)
    for s, (lo, hi) in b.spans().items():
        m = subj == SUBJECTS.index(s)
        p = np.asarray(GROUPS)[grp[m]]
        ref = Timeline.of(TABLES, tb[m], t[m], k[m], p, p * (1 - p))
        got = b.timeline(lo, hi, p_sorted)
        assert got.level == ref.level and len(got) == len(ref)
        assert got.points(variance=True) == ref.points(variance=True)


# ---------------------------------------------------------------- the detectors over partitions of a season


@pytest.fixture(scope="module")
def season():
    """A timed season at six tables (individual play, so both tests count), with a revoker and a colluding pair."""
    tables = [TableSpec("t3", 3), TableSpec("t5", 5), TableSpec("t4", 4), TableSpec("t6", 6), TableSpec("t10", 3),
              TableSpec("a3", 3, game="all_fours")]
    spec = SeasonSpec(tables=tables, n_deals=1200, players=24, revoke_rate=0.03,
                      cheaters=[CheaterSpec("ada", "revoker", 0.6),
                                CheaterSpec("ben", "colluder", 0.8, partner="cora")])
    sim = simulate_season(spec, seed=21)
    return from_results([replay_deal(validate(r, source="s.jsonl", line=i + 1)) for i, r in enumerate(sim.records)])


def _pieces(cols):
    """3 parts of whole tables, each cut into 2 pieces disjoint in time (each table's earlier half of its minutes,
    then the later half): 6 row sets, listed later pieces first."""
    tables = np.unique(cols.table)
    assert len(tables) == 6 and (cols.time != TIME_NONE).all()
    out = []
    for j in range(3):
        part = np.isin(cols.table, tables[j::3])
        cut = np.zeros(len(cols), bool)
        for tb in tables[j::3]:
            rows = cols.table == tb
            cut |= rows & (cols.time <= np.median(cols.time[rows]))
        for tb in tables[j::3]:  # time-disjoint pieces of each table
            rows = cols.table == tb
            assert cols.time[rows & cut].max() < cols.time[rows & ~cut].min()
        out += [np.flatnonzero(part & ~cut), np.flatnonzero(part & cut)]
    assert sorted(np.concatenate(out).tolist()) == list(range(len(cols)))
    return out


@pytest.mark.parametrize("Det", [Collusion, RevokePattern])
def test_tables_and_time_pieces_merge_to_the_whole(season, Det):
    det = Det()
    whole_counts = det.count(season)
    whole = [t.to_json() for t in det.finalize(whole_counts)]
    assert len(whole) > 10
    pieces = _pieces(season)
    merged = det.merge([det.count(season.take(rows)) for rows in pieces])
    assert merged == whole_counts  # the counts themselves, field for field
    got = [t.to_json() for t in det.finalize(merged)]
    assert got == whole  # every p-value, n, observed, statistic, control and timeline
    # the merge of merges (parts of tables first, then the parts) is the same
    by_part = [det.merge([det.count(season.take(r)) for r in pieces[i:i + 2]]) for i in (0, 2, 4)]
    assert det.merge(by_part[::-1]) == whole_counts


def test_a_smaller_cap_of_bins_merges_exactly_and_is_kept():
    """collusion's pairs keep at most PAIR_BINS bins: the cap is part of the counts (parts of other caps do not
    merge), every subject ends at the smallest level within it, and partitions still merge to the whole."""
    subj, grp, tb, t, k, rng = _trials(4, 8000)
    whole = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k, max_bins=16)
    big = BinnedGroups.of(SUBJECTS, subj, GROUPS, grp, TABLES, tb, t, k)
    assert (whole.level > big.level).all()
    for s, (lo, hi) in whole.spans().items():
        assert len(set(zip(whole.tb[lo:hi].tolist(), whole.tbin[lo:hi].tolist(), strict=True))) <= 16
        assert whole.totals(lo, hi) == big.totals(*big.spans()[s])
    lab = rng.integers(0, 3, len(k))
    parts = [BinnedGroups.of(SUBJECTS, subj[lab == j], GROUPS, grp[lab == j], TABLES, tb[lab == j], t[lab == j],
                             k[lab == j], max_bins=16) for j in range(3)]
    assert BinnedGroups.merge(parts) == whole
    with pytest.raises(ValueError):
        BinnedGroups.merge([parts[0], big])
