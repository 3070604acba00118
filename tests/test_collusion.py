"""collusion: counting-card gifts per ordered pair at individual-play tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from auditor.cards import CARD_STR
from auditor.dealog import validate
from auditor.detectors.collusion import Collusion, CollusionCounts, count_deal, count_results, individual
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


def _random_tables(seed: int, tables: int = 8, games: int = 15):
    """Each deal with its own line of one log file, table after table (so that a merge by table must restore the
    input order of the timelines)."""
    rng = np.random.default_rng(seed)
    out: list = []

    def add(recs):
        for r in recs:
            out.append(replay_deal(validate(r, source=f"club.jsonl:{len(out) + 1}", line=len(out) + 1)))

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
    """Timeline points: indexes strictly increasing from 1 (every index when n <= 200), ending at n; the null
    variance so far never decreases."""
    idx = [p[0] for p in tl]
    assert idx[0] == 1 and idx[-1] == n and all(b > a for a, b in zip(idx, idx[1:], strict=False))
    assert len(tl) == min(n, 200)
    assert all(len(p) == 4 for p in tl)
    assert all(b[3] >= a[3] for a, b in zip(tl, tl[1:], strict=False))


def test_timeline_follows_each_pair_over_its_chances_in_input_order(random_tables):
    det = Collusion()
    counts = count_results(random_tables)
    tests = det.finalize(counts)
    # deal by deal, in input order: each pair's chances and gifts per cell (counted one deal at a time)
    per_deal = []
    for r in random_tables:
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
        p_of = {cell: (counts.field[cell][1] - e + 0.5) / (counts.field[cell][0] - o + 1.0)
                for cell, (o, e) in cells.items()}
        last = tl[-1]
        assert last[1] == t.observed and last[2] == pytest.approx(t.expected, abs=1e-3)
        assert last[3] == pytest.approx(sum(o * p * (1 - p) for (o, _), p in zip(cells.values(), p_of.values(),
                                                                                 strict=True)),
                                        abs=1e-3)
        # at the end of each deal where the pair had a chance, the point is that deal's running total
        at = {p[0]: p for p in tl}
        n = g = 0
        ex = 0.0
        for pairs in per_deal:
            for cell, (o, e) in pairs.get(pair, {}).items():
                n, g, ex = n + o, g + e, ex + o * p_of[cell]
            if pair in pairs and n in at:
                assert at[n][1] == g and at[n][2] == pytest.approx(ex, abs=1e-3), (t.subject, n)
                checked += 1
    assert checked > 500


def test_trail_lists_every_chance_once(random_tables):
    c = count_results(random_tables)
    assert set(c.trail) == set(c.pairs)
    for pair, cells in c.pairs.items():
        for cell, (o, e) in cells.items():
            codes = c.trail[pair][cell]
            assert len(codes) == o and sum(k & 1 for k in codes) == e and codes == sorted(codes)
