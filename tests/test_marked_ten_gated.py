"""marked_ten's score gate (issue 14, "cheating only when it matters"): the game score before each deal, the rule
of the deals where it mattered, the combination of the pooled and gated tests (exact pieces exactly, the
combination's level and power statistically with fixed seeds), counts that merge exactly when a game is split."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr
from scipy.stats import binom, norm

from auditor.columns import from_results
from auditor.detectors import marked_ten as M

# ---------------------------------------------------------------- the combination


@pytest.mark.parametrize("p1,p2,rho", [(0.3, 0.02, 0.5), (1e-6, 3e-7, 0.58), (0.9, 0.7, 0.2), (1e-12, 0.5, 0.9)])
def test_max_of_two_is_the_bivariate_normal_tail(p1, p2, rho):
    m = -norm.ppf(min(p1, p2))
    want = ndtr(-m) + quad(lambda z: norm.pdf(z) * ndtr((m - rho * z) / np.sqrt(1 - rho * rho)), m, np.inf,
                           epsabs=0, epsrel=1e-12)[0]
    got = M.max_of_two(p1, p2, rho)
    assert got == pytest.approx(want, rel=1e-9)
    assert min(p1, p2) <= got <= 2 * min(p1, p2)


def test_max_of_two_limits():
    assert M.max_of_two(0.01, 0.2, 1.0) == pytest.approx(0.01, rel=1e-12)
    assert M.max_of_two(0.01, 0.2, 0.0) == pytest.approx(1 - 0.99 ** 2, rel=1e-9)
    assert M.max_of_two(1.0, 1.0, 0.5) == 1.0 and M.max_of_two(0.0, 0.3, 0.5) == 0.0


def _blocks(rng, nb, shift=None):
    """nb skewed blocks (two or three places, unequal probabilities), the truth drawn from P (or tilted towards the
    largest value on the blocks of `shift`)."""
    k = rng.integers(2, 4, size=nb)
    grp = np.repeat(np.arange(nb), k)
    V = rng.normal(size=len(grp)) * rng.uniform(0.3, 2.0, size=nb)[grp]
    P = rng.dirichlet(np.ones(3) * 0.6, size=nb)
    P = np.concatenate([P[b, :k[b]] / P[b, :k[b]].sum() for b in range(nb)])
    true = np.zeros(len(grp), np.int64)
    start = np.concatenate([[0], np.cumsum(k)])
    for b in range(nb):
        pr = P[start[b]:start[b + 1]]
        if shift is not None and shift[b]:
            j = int(np.argmax(V[start[b]:start[b + 1]]))
            pr = 0.5 * pr + 0.5 * np.eye(len(pr))[j]
        true[start[b] + rng.choice(len(pr), p=pr)] = 1
    return M.Blocks(np.arange(nb), grp, V, P, true)


def _combined(b: M.Blocks, gate: np.ndarray) -> tuple[float, float]:
    pooled = b.test()
    sub = b.select(gate)
    gated = sub.test()
    rho = np.sqrt(sub.moments()[2] / b.moments()[2])
    return M.max_of_two(pooled["p"], gated["p"], rho), pooled["p"]


def test_combination_keeps_its_level_on_skewed_blocks():
    """Under the null (the truth drawn from P), the combined p of 3,000 sums of 60 skewed blocks, a third gated,
    is at most alpha within the binomial bound at alpha = 0.01 and 0.05, and not far below it (the correction is
    exact, not Bonferroni's)."""
    rng = np.random.default_rng(14)
    ps = []
    for _ in range(2000):
        b = _blocks(rng, 60)
        gate = rng.random(60) < 1 / 3
        ps.append(_combined(b, gate)[0])
    ps = np.array(ps)
    for a in (0.01, 0.05):
        k = int((ps <= a).sum())
        assert binom.sf(k - 1, len(ps), a) > 0.001, (a, k)  # not above alpha
        assert binom.cdf(k, len(ps), a) > 0.001, (a, k)  # nor far below it


def test_combination_finds_a_gated_signal_the_pooled_sum_misses():
    """A signal on the gated third only: the combined test finds it at 1e-3 in most of 200 seeded replicates,
    clearly more often than the pooled test; a signal on every block: the combination loses little."""
    rng = np.random.default_rng(7)
    hit_new = hit_old = full_new = full_old = 0
    R = 200
    for _ in range(R):
        gate = rng.random(120) < 1 / 3
        b = _blocks(rng, 120, shift=gate)
        p_new, p_old = _combined(b, gate)
        hit_new += p_new <= 1e-3
        hit_old += p_old <= 1e-3
        shift = rng.random(120) < 0.25
        b = _blocks(rng, 120, shift=shift)
        p_new, p_old = _combined(b, gate)
        full_new += p_new <= 1e-3
        full_old += p_old <= 1e-3
    assert hit_new >= hit_old + 0.15 * R and hit_new >= 0.6 * R, (hit_new, hit_old)
    assert full_new >= full_old - 0.08 * R, (full_new, full_old)


# ---------------------------------------------------------------- the score before each deal


def _ledger_counts(rows, kept, side=None):
    """Counts holding only a ledger: rows (game, deal_no, scored, points, target, floor); kept: (game, deal_no) of
    the deals the detector kept (their sides `side`, default two sides of two seats)."""
    c = M.MarkedTenCounts()
    games = list(dict.fromkeys([r[0] for r in rows] + [k[0] for k in kept]))
    c.ledger_games = games
    c.ledger_game = np.array([games.index(r[0]) for r in rows], np.int32)
    c.ledger_deal_no = np.array([r[1] for r in rows], np.int64)
    c.ledger_scored = np.array([r[2] for r in rows], bool)
    c.ledger_points = np.array([list(r[3]) + [0] * (M.MAX_SEATS - len(r[3])) for r in rows], np.int16).reshape(
        -1, M.MAX_SEATS)
    c.ledger_target = np.array([r[4] for r in rows], np.int16)
    c.ledger_floor = np.array([r[5] for r in rows], bool)
    c.games = games
    c.game = np.array([games.index(k[0]) for k in kept], np.int32)
    c.deal_no = np.array([k[1] for k in kept], np.int64)
    c.keys = np.arange(len(kept), dtype=np.uint64)
    sd = side or [0, 1, 0, 1]
    c.side = np.array([sd + [-1] * (M.MAX_SEATS - len(sd))] * len(kept), np.int8).reshape(-1, M.MAX_SEATS)
    return c


def test_pre_deal_scores_by_hand():
    rows = [("g", 2, True, [12, 20], 41, False), ("g", 1, True, [5, 25], 41, False), ("g", 3, True, [9, 9], 41, False),
            ("h", 1, True, [3, 3], 41, False), ("h", 3, True, [1, 1], 41, False),  # h: no deal 2
            ("k", 1, False, [], 41, False), ("k", 2, True, [1, 1], 41, False),  # k: deal 1 not scored
            ("r", 1, True, [-10, 20], 41, True), ("r", 2, True, [1, 1], 41, True),  # floored at zero
            ("s", 1, True, [30, 0], 41, False), ("s", 1, True, [30, 0], 41, False),  # deal 1 logged twice
            ("s", 2, True, [1, 1], 41, False)]
    kept = [("g", 1), ("g", 2), ("g", 3), ("h", 1), ("h", 3), ("k", 1), ("k", 2), ("r", 1), ("r", 2), ("s", 1),
            ("s", 2), ("z", 1)]
    c = _ledger_counts(rows, kept)
    known, before, target = M.pre_deal_scores(c)
    assert known.tolist() == [True, True, True, True, False, True, False, True, False, False, False, False]
    assert before[2, :2].tolist() == [17, 45] and before[1, :2].tolist() == [5, 25] and before[0, :2].tolist() == [0, 0]
    assert target[2] == 41
    gate = M.score_gate(c)
    # g deal 2 (5 v 25): side 0 trails by 20 -> its seats gated; side 1 (25: not within 10 of 41, not behind): not
    assert gate[1, :4].tolist() == [True, False, True, False]
    # g deal 3 (17 v 45): side 1 is within 10 of game: every seat under "any", only side 1's own... and side 0
    # trails by 28
    assert gate[2, :4].tolist() == [True, True, True, True]
    assert not gate[0].any() and not gate[4].any()
    own = M.score_gate(c, "own")
    assert own[1, :4].tolist() == [True, False, True, False]


def test_score_gate_rule_any_and_own():
    # 31 v 25: side 0 within 10 of 41; side 1 trails by 6 -> "any": both sides; "own": side 0 only
    c = _ledger_counts([("g", 1, True, [31, 25], 41, False), ("g", 2, True, [0, 0], 41, False)], [("g", 2)])
    assert M.score_gate(c)[0, :4].tolist() == [True] * 4
    assert M.score_gate(c, "own")[0, :4].tolist() == [True, False, True, False]
    # three sides, every man for himself: 10 behind the best other side
    c = _ledger_counts([("g", 1, True, [20, 10, 9], 41, False), ("g", 2, True, [0, 0, 0], 41, False)], [("g", 2)],
                       side=[0, 1, 2])
    assert M.score_gate(c)[0, :3].tolist() == [False, True, True]


# ---------------------------------------------------------------- on simulated games


@pytest.fixture(scope="module")
def club_results():
    from auditor.dealog import record_from_obj
    from auditor.replay.run import replay_records
    from auditor.simulate import SeasonSpec, TableSpec, partnerships, simulate_season

    tables = [TableSpec("p4", 4, sides=partnerships(4, "pairs")), TableSpec("f5", 5),
              TableSpec("r4", 4, rules="russian", sides=partnerships(4, "pairs"))]
    spec = SeasonSpec(tables=tables, n_deals=240, players=13, revoke_rate=1 / 60, time=False)
    sim = simulate_season(spec, np.random.default_rng(5))
    return replay_records(record_from_obj(r, f"c.jsonl:{i + 1}", 0, i + 1)
                          for i, r in enumerate(sim.records)).results


def test_pre_deal_scores_follow_the_chain(club_results):
    """On simulated games (revokes included, Russian -10 too), the score before each kept deal is the chain's
    totals after the previous deal."""
    from auditor.replay.chain import chain_games

    _, outcomes = chain_games(list(club_results))
    after = {(r.deal.game_id, r.deal.deal_no): outcomes[i].totals_after for i, r in enumerate(club_results)}
    c = M.count_results(club_results)
    known, before, _ = M.pre_deal_scores(c)
    assert known.all() and c.n_deals > 150
    for d in range(c.n_deals):
        g, k = c.games[int(c.game[d])], int(c.deal_no[d])
        want = after[(g, k - 1)] if k > 1 else [0] * int(c.side[d].max() + 1)
        assert before[d, :len(want)].tolist() == want
    share = M.score_gate(c)[c.side >= 0].mean()
    assert 0.2 < share < 0.7


def test_a_game_split_across_parts_merges_to_the_whole(club_results):
    """The rows of every game cut in two (odd and even deals in different parts, the parts in either order): the
    merged counts give the same pre-deal scores and the same gate as the whole, through both count paths."""
    cols = from_results(club_results)
    whole = M.count_table(cols)
    odd = np.flatnonzero(cols.deal_no % 2 == 1)
    even = np.flatnonzero(cols.deal_no % 2 == 0)
    for parts in ([odd, even], [even, odd]):
        merged = M.merge_counts([M.count_table(cols.take(p)) for p in parts])
        o_w = np.argsort(whole.keys, kind="stable")
        o_m = np.argsort(merged.keys, kind="stable")
        assert np.array_equal(whole.keys[o_w], merged.keys[o_m])
        kw, bw, _ = M.pre_deal_scores(whole)
        km, bm, _ = M.pre_deal_scores(merged)
        assert np.array_equal(kw[o_w], km[o_m]) and np.array_equal(bw[o_w], bm[o_m])
        assert np.array_equal(M.score_gate(whole)[o_w], M.score_gate(merged)[o_m])
    # one part alone does not know the score of a game whose earlier deals it lacks
    k_even, _, _ = M.pre_deal_scores(M.count_table(cols.take(even)))
    assert not k_even.any()


def test_finalize_reports_both_parts(club_results):
    tests = M.MarkedTen().finalize(M.count_results(club_results))
    assert tests
    for t in tests:
        g = t.detail["score_gate"]
        assert g["part"] in ("pooled", "gated") and 0 <= g["rho"] <= 1
        assert t.controls["pooled"]["p"] == g["p_pooled"] and t.controls["score_gated"]["p"] == g["p_gated"]
        assert min(g["p_pooled"], g["p_gated"]) <= t.pvalue + 1e-15 <= 2 * min(g["p_pooled"], g["p_gated"]) + 1e-12
        head = t.controls["score_gated" if g["part"] == "gated" else "pooled"]
        assert (t.n, t.observed, t.expected) == (head["deals"], head["observed"], head["expected"])


# ---------------------------------------------------------------- power on the simulator's score-gated cheater


@pytest.mark.slow
def test_score_gated_cheater_is_found_where_the_pooled_test_is_weak():
    """Seeded seasons of `calibrate_marked` (20 members, ~400 deals played, q = 1 score-gated): the combined test
    flags him at the audit-wide level in at least two thirds of 24 seasons and more often than the pooled test.
    (It was 6 seasons and "at least 4 of 6" until the simulator's honest slips changed the seasons' draws, commit
    93d6ad6: those six then gave 3 and 3, a power of 0.79 against 0.58 measured over 24, a claim six seasons cannot
    hold; about a minute.)"""
    from auditor.calibrate_marked import summarise, season

    rows = [season(0, "gated_power_q1.0_400", i, 1.0, "score", 400, n_players=20) for i in range(24)]
    s = summarise(rows, "any")
    assert s["power_new"] >= 2 / 3 and s["power_new"] > s["power_old"], s
