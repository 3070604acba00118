"""collusion: counting-card gifts per ordered pair at individual-play tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from auditor.cards import CARD_STR
from auditor.columns import natural_key, time_key
from auditor.dealog import validate
from auditor.detectors.collusion import (
    Collusion,
    CollusionCounts,
    bins_of,
    count_deal,
    count_results,
    individual,
    patterns_of,
    trial_sums,
)
from auditor.detectors.play_facts import counting
from auditor.replay.reference import replay_deal
from auditor.stats.family import apply_families
from auditor.testing.generate import random_game


def card(text: str) -> int:
    return CARD_STR.index(text)


def test_counting_cards_by_game():
    # Scotch Whist: trump honours that can be given (the Jack always wins, plain cards never count)
    assert counting("scotch_whist", 0, card("Ts"))
    assert counting("scotch_whist", 0, card("Qs"))
    assert not counting("scotch_whist", 0, card("Js"))
    assert not counting("scotch_whist", 0, card("Th"))
    # All Fours: Game pips of every suit, and the trump Jack
    assert counting("all_fours", 0, card("Th"))
    assert counting("all_fours", 0, card("Jh"))
    assert not counting("all_fours", 0, card("9s"))


def _random_tables(seed: int, tables: int = 8, games: int = 15, timed: bool = True):
    """Each deal with its own line of one log file and its own minute, table after table (so that a merge by
    table must restore the canonical order of the timelines)."""
    rng = np.random.default_rng(seed)
    out: list = []

    def add(recs):
        for r in recs:
            k = len(out)
            if timed:
                r["time"] = f"2026-01-{1 + k // 1440:02d}T{k // 60 % 24:02d}:{k % 60:02d}:00Z"
            out.append(replay_deal(validate(r, source=f"club.jsonl:{k + 1}", line=k + 1)))

    for tb in range(tables):
        players = [f"t{tb}p{i}" for i in range(5)]
        for g in range(games):
            add(random_game(rng, "scotch_whist", "foster", 5, game_id=f"t{tb}g{g}", players=players,
                            table=f"t{tb}"))
        players = [f"a{tb}p{i}" for i in range(3)]
        for g in range(games):
            add(random_game(rng, "all_fours", "foster", 3, game_id=f"a{tb}g{g}", players=players, table=f"a{tb}"))
    return out


@pytest.fixture(scope="module")
def random_tables():
    return _random_tables(1)


def test_honest_players_are_not_accused(random_tables):
    tests = Collusion().finalize(count_results(random_tables))
    p = np.array([t.pvalue for t in tests])
    assert len(p) > 150
    for a in (0.01, 0.05):
        k = int(np.sum(p <= a))
        assert binom.sf(k - 1, len(p), a) > 0.001, (a, k)  # not significantly above alpha
    flagged, _ = apply_families(tests)
    assert not any(t.flagged for t in flagged)


def test_only_individual_play_is_counted():
    rng = np.random.default_rng(2)
    recs = random_game(rng, "scotch_whist", "foster", 4, game_id="p", sides=[[0, 2], [1, 3]])
    res = [replay_deal(validate(r)) for r in recs]
    assert not individual(res[0].deal)
    c = CollusionCounts()
    for r in res:
        count_deal(r, c)
    assert c.deals == 0 and not c.pairs


def test_counts_add_exactly_across_tables(random_tables):
    det = Collusion()
    whole = {t.subject: t.to_json() for t in det.finalize(count_results(random_tables))}
    by_table: dict[str, list] = {}
    for r in random_tables:
        by_table.setdefault(r.deal.table, []).append(r)
    parts = [count_results(by_table[t]) for t in sorted(by_table, reverse=True)]
    assert {t.subject: t.to_json() for t in det.finalize(det.merge(parts))} == whole


def test_every_event_is_an_opportunity(random_tables):
    c = count_results(random_tables)
    for cells in c.pairs.values():
        for o, e in cells.values():
            assert 0 <= e <= o
    tot_o = sum(o for o, _ in c.field.values())
    assert tot_o == sum(o for cells in c.pairs.values() for o, _ in cells.values())


def test_colluding_pair_at_a_table_of_five_is_caught():
    from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, simulate_season

    tables = [TableSpec(f"t{i}", 5) for i in range(3)]
    spec = SeasonSpec(tables=tables, n_deals=1500, players=15, deck=False, time=False,
                      cheaters=[CheaterSpec("ada", "colluder", 0.7, partner="ben"),
                                CheaterSpec("ben", "colluder", 0.7, partner="ada")])
    sim = simulate_season(spec, np.random.default_rng(4))
    res = [replay_deal(validate(r)) for r in sim.records]
    tests, _ = apply_families(Collusion().finalize(count_results(res)))
    flagged = {t.subject for t in tests if t.flagged}
    assert flagged & {"ada+ben", "ben+ada"}
    assert flagged <= {"ada+ben", "ben+ada"}
    top = min(tests, key=lambda t: t.pvalue)
    assert top.subject in ("ada+ben", "ben+ada")
    assert "giver_to_others" in top.controls


def _check_points(tl, n):
    """Timeline points: trials so far strictly increasing, ending at n, at most 200 of them; the null variance so
    far never decreases."""
    idx = [p[0] for p in tl]
    assert idx[0] >= 1 and idx[-1] == n and all(b > a for a, b in zip(idx, idx[1:], strict=False))
    assert len(tl) <= 200
    assert all(len(p) == 4 for p in tl)
    assert all(b[3] >= a[3] for a, b in zip(tl, tl[1:], strict=False))


def canonical(results):
    """The results in the canonical order of deals (table, then time: each deal of `_random_tables` has its own)."""
    return sorted(results, key=lambda r: (natural_key(r.deal.table), time_key(r.deal.time)))


def test_timeline_follows_each_pair_over_its_deals_in_canonical_order(random_tables):
    """Each point of a pair's timeline is exact: its running totals over the pair's deals in the canonical order,
    at the end of a bin (each deal has its own minute here, so a pair with fewer than 200 deals has one point per
    deal)."""
    det = Collusion()
    counts = count_results(random_tables)
    tests = det.finalize(counts)
    # deal by deal, in canonical order: each pair's chances and gifts per cell (counted one deal at a time)
    per_deal = []
    for r in canonical(random_tables):
        c = CollusionCounts()
        count_deal(r, c)
        if c.pairs:
            per_deal.append(c.pairs)
    checked = 0
    for t in tests:
        first, second = t.subject.split("+")
        pair = (first, second)
        cells = counts.pairs[pair]
        tl = t.detail["timeline"]
        _check_points(tl, t.n)
        if t.n <= 200:
            assert [p[0] for p in tl] == list(range(1, t.n + 1))
        p_of = {cell: (counts.field[cell][1] - e + 0.5) / (counts.field[cell][0] - o + 1.0)
                for cell, (o, e) in cells.items()}
        # at the end of each deal where the pair had a chance, the point is that deal's running total: deals, deals
        # with a gift, the sum of each deal's 1 - prod(1 - p) and of its p(1 - p)
        at = {p[0]: p for p in tl}
        n = g = 0
        ex = var = 0.0
        for pairs in per_deal:
            if pair not in pairs:
                continue
            q = 1.0
            for cell, (o, _e) in pairs[pair].items():
                q *= (1 - p_of[cell]) ** o
            n, g = n + 1, g + int(any(e for _o, e in pairs[pair].values()))
            ex, var = ex + (1 - q), var + q * (1 - q)
            if n in at:
                assert at[n][1] == g and at[n][2] == pytest.approx(ex, abs=1e-3), (t.subject, n)
                assert at[n][3] == pytest.approx(var, abs=1e-3), (t.subject, n)
                checked += 1
        # the timeline is drawn against the field's null (the test's p is the larger of the field's and the giver's)
        assert n == t.n and g == t.observed and ex == pytest.approx(t.controls["against_field"]["expected"], abs=1e-9)
    assert checked > 500


def test_untimed_deals_are_one_point_per_table():
    """Without times, a table's deals are one bin: the timeline has a point per table the pair met at, exact."""
    det = Collusion()
    timed = {t.subject: t for t in det.finalize(count_results(_random_tables(3, tables=2, games=4)))}
    for t in det.finalize(count_results(_random_tables(3, tables=2, games=4, timed=False))):
        assert t.pvalue == timed[t.subject].pvalue
        tl = t.detail["timeline"]
        assert len(tl) == 1 and tl[0][:2] == [t.n, t.observed]  # each pair here plays at one table


def test_bins_hold_every_deal_once(random_tables):
    """The timeline's bins of each pair add up to its deal patterns (the test's trials) as the counts without details
    keep them (`deals_of`); with details they are held in the bins alone."""
    c = count_results(random_tables)
    flat = count_results(random_tables, details=False)
    assert not c.deals_of and len(c.bins) and not len(flat.bins)
    spans = c.bins.spans()
    assert set(spans) == set(flat.deals_of) and len(spans) > 100
    for pair, pats in flat.deals_of.items():
        assert c.bins.totals(*spans[pair]) == pats == patterns_of(c, pair) == patterns_of(flat, pair)
        sums = (sum(nd for nd, _ in pats.values()), sum(ng for _, ng in pats.values()))
        assert trial_sums(c, pair, spans) == sums == trial_sums(flat, pair, {})
    assert patterns_of(c, ("nobody", "else")) == {} == patterns_of(flat, ("nobody", "else"))
    assert trial_sums(c, ("nobody", "else"), spans) == (0, 0) == trial_sums(flat, ("nobody", "else"), {})


def test_the_tests_are_the_same_with_or_without_details(random_tables):
    """Trials held in the bins (details) or summed (`deals_of`, no details): every test's numbers are the same."""
    with_bins = Collusion(details=False).finalize(count_results(random_tables))
    summed = Collusion(details=False).finalize(count_results(random_tables, details=False))
    assert len(with_bins) > 100
    assert [t.to_json() for t in with_bins] == [t.to_json() for t in summed]


def test_counts_with_and_without_details_are_not_merged(random_tables):
    det = Collusion()
    with_bins, summed = count_results(random_tables[:200]), count_results(random_tables[200:], details=False)
    for parts in ([with_bins, summed], [summed, with_bins]):
        with pytest.raises(ValueError, match="with and without details"):
            det.merge(parts)
    with pytest.raises(ValueError, match="with and without details"):
        det.merge_into(det.merge([with_bins, count_results(random_tables[200:400])]), summed)
    assert len(det.merge([with_bins, CollusionCounts()]).bins)  # an empty part goes with either


A = ("scotch_whist", 5, 1, 0, 0, 0, 1)  # one cell: following suit, plain led, not last, no sure winner, 1 counting


def test_one_trial_per_deal_hand_worked():
    """x gives to y: deal 1, two chances in cell A, gave at both; deal 2, one chance in A, no gift. The rest of the
    field (z to y, 19 deals of one chance) gave once in 19 chances. Leave-pair-out rate r = (1 + 0.5) / (19 + 1) =
    0.075. Deal 1's null: 1 - 0.925^2 = 0.144375; deal 2's: 0.075. Deals with a gift: 1, expected 0.219375,
    p = 1 - (1 - 0.144375)(1 - 0.075) = 1 - 0.855625 * 0.925 = 0.208546875. As independent chances (the per_chance
    control): 2 gifts in 3 chances at 0.075, p = 3 * 0.075^2 * 0.925 + 0.075^3 = 0.01603125."""
    c = CollusionCounts(
        field={A: [22, 3]},
        pairs={("x", "y"): {A: [3, 2]}, ("z", "y"): {A: [19, 1]}},
        deals_of={("x", "y"): {((A, 2),): [1, 1], ((A, 1),): [1, 0]}, ("z", "y"): {((A, 1),): [19, 1]}},
        bins=bins_of([(("x", "y"), ((A, 2),), "t", 0, 1), (("x", "y"), ((A, 1),), "t", 60_000_000, 0)]
                     + [(("z", "y"), ((A, 1),), "t", 60_000_000 * (2 + i), int(i == 5)) for i in range(19)]),
        deals=21)
    t = {r.subject: r for r in Collusion().finalize(c)}["x+y"]
    assert t.n == 2 and t.observed == 1
    assert t.expected == pytest.approx(0.219375, abs=1e-12)
    assert t.pvalue == pytest.approx(0.208546875, abs=1e-12)
    assert t.controls["per_chance"]["pvalue"] == pytest.approx(0.01603125, abs=1e-12)
    assert t.detail["deals"] == 2 and t.detail["opportunities"] == 3 and t.detail["gifts"] == 2
    assert t.detail["timeline"] == [[1, 1, 0.1444, 0.1235], [2, 1, 0.2194, 0.1929]]  # p(1 - p) summed per deal
    assert "giver_to_others" not in t.controls  # x gave to nobody else


def _clustered_counts(seed: int, pairs: int = 400) -> CollusionCounts:
    """Counts of an honest field whose gifts cluster within deals (the dependence that made the per-chance test
    wrong): in each deal a giver either slips at every chance he has (probability pi of the cell) or at none.
    Each pair has 1-6 deals of 1-5 chances in one of three cells."""
    rng = np.random.default_rng(seed)
    cells = [(A, 0.05), (("all_fours", 3, 0, 1, 1, 0, 2), 0.15), (("all_fours", 3, 1, 0, 0, 1, 3), 0.02)]
    c = CollusionCounts()
    for i in range(pairs):
        pair = (f"g{i}", f"r{i}")
        for _ in range(int(rng.integers(1, 7))):
            cell, pi = cells[int(rng.integers(len(cells)))]
            k = int(rng.integers(1, 6))
            gave = int(rng.random() < pi)
            for lst in (c.field, c.pairs.setdefault(pair, {})):
                v = lst.setdefault(cell, [0, 0])
                v[0] += k
                v[1] += k * gave
            v = c.deals_of.setdefault(pair, {}).setdefault(((cell, k),), [0, 0])
            v[0] += 1
            v[1] += gave
            c.deals += 1
    return c


def test_the_level_holds_when_gifts_cluster_within_deals():
    """Honest gifts perfectly clustered within deals: the per-deal test holds its level at 0.01 and 0.05 (it is
    conservative here: 1 - (1 - pi)^k exceeds the true pi), while the per-chance test it replaced (the per_chance
    control, on the same counts) rejects far more often than alpha: the fixture has teeth."""
    tests = [t for s in (1, 2, 3) for t in Collusion(details=False).finalize(_clustered_counts(s))]
    p = np.array([t.pvalue for t in tests])
    pc = np.array([t.controls["per_chance"]["pvalue"] for t in tests])
    n = len(p)
    assert n == 1200 and (p < 1).sum() > 200
    for a in (0.01, 0.05):
        assert binom.sf(int(np.sum(p <= a)) - 1, n, a) > 0.001, (a, int(np.sum(p <= a)))
        assert binom.sf(int(np.sum(pc <= a)) - 1, n, a) < 1e-6, (a, int(np.sum(pc <= a)))
