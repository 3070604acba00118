"""revoke_pattern: the gain of a player's revokes against the field's accidental ones."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from auditor.dealog import validate
from auditor.detectors.revoke_pattern import RevokeCounts, RevokePattern, count_deal, count_results
from auditor.replay.reference import replay_deal
from auditor.stats.family import apply_families
from auditor.testing.generate import Style, random_game

# A four-player partnership deal (seats 0+2 v 1+3), clubs trumps (the turn-up Ac, dealer 3), so seat 0 leads. In
# trick 1 seat 1 holds the 9 of spades but trumps the Ace of spades with the 6 of clubs and takes the trick.
HANDS = [
    ["As", "Ts", "6h", "7h", "8h", "9h", "Th", "Jh", "Qh"],
    ["9s", "6c", "Kh", "Ah", "6d", "7d", "8d", "9d", "Td"],
    ["Ks", "8s", "6s", "7s", "Jd", "Qd", "Kd", "Ad", "7c"],
    ["Qs", "Js", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac"],
]


def _deal_with_revoke() -> dict:
    return {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "t", "game_id": "g",
            "deal_no": 1, "players": ["a", "b", "c", "d"], "sides": [[0, 2], [1, 3]], "dealer": 3,
            "hands": HANDS, "turn_up": "Ac"}


def test_gain_of_a_revoke_that_takes_the_trick():
    from auditor.detectors.play_facts import deal_exclusion

    rec = _deal_with_revoke()
    # play: trick 1 seat 0 leads As, seat 1 trumps with 6c although he holds 9s (revoke), seat 2 Ks, seat 3 Qs
    rng = np.random.default_rng(0)
    rec["tricks"] = _complete_tricks(rec, first=["As", "6c", "Ks", "Qs"], rng=rng)
    res = replay_deal(validate(rec))
    assert (1, 1) in res.revokes
    assert deal_exclusion(res) is None
    c = RevokeCounts()
    count_deal(res, c)
    opp, rev, gainful, gain = c.cells[("b", ("scotch_whist", 4))]
    assert rev == 1 and gainful == 1
    assert gain == 4.0  # four cards taken; following with the 9 of spades would have lost the trick
    assert opp >= 1


def _complete_tricks(rec, first, rng):
    """Legal (random) play after a fixed first trick."""
    from auditor.cards import CARD_STR, cards_of, mask_of, parse_card, suit_of
    from auditor.legal import legal_mask, trick_winner

    def card(text: str) -> int:
        c = parse_card(text)
        assert c is not None, text
        return c

    trump = suit_of(card(rec["turn_up"]))
    hold = [mask_of(card(x) for x in h) for h in rec["hands"]]
    seats = [0, 1, 2, 3]
    t1 = [card(x) for x in first]
    for s, c in zip(seats, t1, strict=True):
        hold[s] &= ~(1 << c)
    tricks = [t1]
    leader = seats[trick_winner("scotch_whist", t1, trump)]
    for _ in range(8):
        order = [(leader + i) % 4 for i in range(4)]
        trick: list[int] = []
        lead = None
        for s in order:
            ok = legal_mask("scotch_whist", hold[s], lead, trump)
            cs = cards_of(ok)
            c = cs[int(rng.integers(len(cs)))]
            hold[s] &= ~(1 << c)
            trick.append(c)
            lead = suit_of(trick[0])
        tricks.append(trick)
        leader = order[trick_winner("scotch_whist", trick, trump)]
    return [[CARD_STR[c] for c in t] for t in tricks]


def _random_club(seed: int, rate: float, tables: int = 12, games: int = 12):
    rng = np.random.default_rng(seed)
    out: list = []
    for tb in range(tables):
        players = [f"t{tb}p{i}" for i in range(4)]
        for g in range(games):
            recs = random_game(rng, "scotch_whist", "foster", 4, game_id=f"t{tb}g{g}", players=players,
                               table=f"t{tb}", sides=[[0, 2], [1, 3]], style=Style(revoke_rate=rate))
            out += [replay_deal(validate(r, source=f"club.jsonl:{len(out) + k + 1}", line=len(out) + k + 1))
                    for k, r in enumerate(recs)]  # one line of one log each: the timelines' input order
    return out


@pytest.fixture(scope="module")
def accidental():
    return _random_club(5, 0.01)


def test_accidental_revokers_are_not_accused(accidental):
    tests = RevokePattern().finalize(count_results(accidental))
    p = np.array([t.pvalue for t in tests])
    assert len(p) >= 30
    k = int(np.sum(p <= 0.05))
    assert binom.sf(k - 1, len(p), 0.05) > 0.001
    flagged, _ = apply_families(tests)
    assert not any(t.flagged for t in flagged)


def test_counts_add_exactly_across_tables(accidental):
    det = RevokePattern()
    whole = {t.subject: t.to_json() for t in det.finalize(count_results(accidental))}
    by_table: dict[str, list] = {}
    for r in accidental:
        by_table.setdefault(r.deal.table, []).append(r)
    parts = [count_results(by_table[t]) for t in sorted(by_table, reverse=True)]
    assert {t.subject: t.to_json() for t in det.finalize(det.merge(parts))} == whole


def test_deliberate_revoker_is_flagged_within_1000_deals():
    from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season

    tables = [TableSpec(f"t{i}", 4, sides=partnerships(4, "pairs")) for i in range(2)]
    spec = SeasonSpec(tables=tables, n_deals=2000, players=8, deck=False, time=False,
                      cheaters=[CheaterSpec("ada", "revoker", 0.06)])
    sim = simulate_season(spec, np.random.default_rng(8))
    played = sum("ada" in r["players"] for r in sim.records)
    assert played <= 1100
    deliberate = len(sim.key["cheaters"][0]["revokes"])
    assert 0.01 < deliberate / played < 0.05  # about one deal in 40
    res = [replay_deal(validate(r)) for r in sim.records]
    tests, _ = apply_families(RevokePattern().finalize(count_results(res)))
    by = {t.subject: t for t in tests}
    assert by["ada"].flagged
    assert [t.subject for t in tests if t.flagged] == ["ada"]
    assert by["ada"].controls["revoke_rate"]["revokes"] == by["ada"].n


def test_timeline_follows_each_revoker_in_input_order(accidental):
    det = RevokePattern()
    counts = count_results(accidental)
    tests = det.finalize(counts)
    R = sum(v[1] for v in counts.cells.values())
    G = sum(v[2] for v in counts.cells.values())
    q = G / R
    per_deal = []  # deal by deal, in input order: each player's revokes and gainful revokes
    for r in accidental:
        c = RevokeCounts()
        count_deal(r, c)
        got: dict[str, list[int]] = {}
        for (pl, _), v in c.cells.items():
            if v[1]:
                got[pl] = [int(v[1]), int(v[2])]
        if got:
            per_deal.append(got)
    checked = 0
    for t in tests:
        tl = t.detail["timeline"]
        idx = [p[0] for p in tl]
        assert idx == list(range(1, t.n + 1))  # one point per revoke (fewer than 200)
        assert tl[-1][1] == t.observed and tl[-1][2] == pytest.approx(t.expected, abs=1e-3)
        # the hypergeometric variance of his first k revokes among all R
        for k, _, _, v in tl:
            assert v == pytest.approx(k * q * (1 - q) * (R - k) / (R - 1), abs=1e-3)
        at = {p[0]: p for p in tl}
        n = g = 0
        for got in per_deal:
            if t.subject in got:
                n, g = n + got[t.subject][0], g + got[t.subject][1]
                assert at[n][1] == g and at[n][2] == pytest.approx(n * q, abs=1e-3)
                checked += 1
    assert checked >= 30
    assert sorted(counts.trail) == sorted(t.subject for t in tests)
