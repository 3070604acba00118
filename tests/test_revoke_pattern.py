"""revoke_pattern: a player's revokes that paid against the exact chance that accidental revokes at the same
moments would pay; the per-revoke facts of the Python spec (`count_deal` over `play_facts.walk`) worked by hand, and
the numba count over the table held equal to it (`tests/test_play_detectors_columns.py` does the same on more kinds
of input)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from auditor.calibrate_play import REVOKER_Q
from auditor.cards import parse_card
from auditor.columns import from_results, natural_key, time_key
from auditor.dealog import validate
from auditor.detectors.play_facts import PlayState, deal_exclusion
from auditor.detectors.revoke_pattern import (
    RevokeCounts,
    RevokePattern,
    count_deal,
    count_results,
    pay_counting,
    pays,
    revoke_chances,
)
from auditor.replay.reference import replay_deal
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
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
# The same table; seat 0 leads the King of clubs and seat 1, whose only club is the Ten, keeps it by revoking with
# the 6 of diamonds.
HANDS_SAVE = [
    ["Kc", "As", "Ts", "6h", "7h", "8h", "9h", "Th", "Jh"],
    ["Tc", "9s", "Kh", "Ah", "6d", "7d", "8d", "9d", "Td"],
    ["Ks", "8s", "6s", "7s", "Jd", "Qd", "Kd", "Ad", "7c"],
    ["Qs", "Js", "8c", "9c", "6c", "Jc", "Qc", "Qh", "Ac"],
]


def _deal_with_revoke(hands=HANDS) -> dict:
    return {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "t", "game_id": "g",
            "deal_no": 1, "players": ["a", "b", "c", "d"], "sides": [[0, 2], [1, 3]], "dealer": 3,
            "hands": hands, "turn_up": "Ac"}


def _one_revoke(hands, first, seed=0):
    rec = _deal_with_revoke(hands)
    rec["tricks"] = _complete_tricks(rec, first=first, rng=np.random.default_rng(seed))
    res = replay_deal(validate(rec))
    assert (1, 1) in res.revokes
    assert deal_exclusion(res) is None
    c = RevokeCounts()
    count_deal(res, c)
    return res, c


def test_ruff_pay_worked_by_hand():
    """Seat 1 trumps the Ace of spades with the 6 of clubs while holding the 9 of spades: an opponent was winning,
    the 9 would not beat the Ace, the 6 of clubs does: it paid. Of his 8 cards outside spades only the 6 of clubs
    beats the Ace, so an accidental revoke there pays with chance 1/8."""
    res, c = _one_revoke(HANDS, ["As", "6c", "Ks", "Qs"])
    opp, rev, gainful, gain, pay_chances = c.cells[("b", ("scotch_whist", 4))]
    assert rev == 1 and gainful == 1
    assert gain == 4  # four cards taken; following with the 9 of spades would have lost the trick
    assert opp >= 1 and 1 <= pay_chances <= opp
    # his only revoke (the rest of the deal is played legally): it paid, at pi 1/8
    assert c.revokes.subjects == ["b"] and c.revokes.totals(*c.revokes.spans()["b"]) == {1 / 8: [1, 1]}
    # the numba count over the table says the same
    assert RevokePattern().count(from_results([res])) == c


def test_save_pay_worked_by_hand():
    """Seat 0 leads the King of clubs; seat 1's only club is the Ten (a counting card the King beats): revoking
    with the 6 of diamonds keeps it, a save-pay, although his partner's Ace then takes the trick. Every one of his
    8 cards outside clubs is a plain card, so an accidental revoke there pays surely: pi = 8/8 (no evidence). The
    old 'gainful' flag says no: following with the Ten, his side would have taken the trick as well."""
    res, c = _one_revoke(HANDS_SAVE, ["Kc", "6d", "7c", "Ac"])
    _, rev, gainful, gain, _ = c.cells[("b", ("scotch_whist", 4))]
    assert rev == 1 and gainful == 0
    # taken: 4 cards, King 3 and Ace 4 = 11; with the Ten followed his side takes the Ten's 10 as well = 21
    assert gain == 11 - 21
    assert c.revokes.totals(*c.revokes.spans()["b"]) == {1.0: [1, 1]}
    assert RevokePattern().count(from_results([res])) == c


def _state(game: str, trump: str, win: tuple[int, str], seat: int, legal: list[str]) -> PlayState:
    card = {t: parse_card(t) for t in legal + [win[1], trump]}
    st = PlayState(game=game, n=4, trump=card[trump] // 13, dealer=3, side_of=[0, 1, 0, 1], partnership=True,
                   n_tricks=6, turn_up=card[trump], turnup_owner=None, out_of_play_public=0, aside=0, n_sets=1)
    st.seat, st.pos = seat, 1
    st.win = (win[0], card[win[1]])
    st.legal = sum(1 << card[t] for t in legal)
    return st


def _c(text: str) -> int:
    c = parse_card(text)
    assert c is not None
    return c


def test_pays_all_fours_save_pay_and_its_limits():
    """All Fours, hearts trumps, an opponent's Ace of spades winning: holding only the King and Ten of spades
    (Game pips: counting cards, both beaten), a blank revoke card pays, a Jack (a Game pip) does not. With a trump
    to play (the Queen of hearts beats the Ace) no revoke pays; nor when his partner is winning."""
    st = _state("all_fours", "2h", (0, "As"), 1, ["Ks", "Ts"])
    assert pays(st, _c("2d")) and pays(st, _c("5c"))
    assert not pays(st, _c("Jc"))  # a Game pip: not kept by discarding it
    assert not pays(_state("all_fours", "2h", (0, "As"), 1, ["Ks", "Ts", "Qh"]), _c("2d"))
    assert not pays(_state("all_fours", "2h", (0, "As"), 1, ["Ks", "9s"]), _c("2d"))  # the 9 is blank
    assert not pays(_state("all_fours", "2h", (1, "As"), 3, ["Ks", "Ts"]), _c("2d"))  # his partner is winning
    # Scotch Whist counts the five trump honours, Jack included; All Fours every Game-pip card and the trump Jack
    assert [pay_counting("scotch_whist", 3, _c(t)) for t in ("Jc", "Tc", "Ac", "Kc", "Qc", "9c", "Ad")] == \
        [True] * 5 + [False] * 2
    assert [pay_counting("all_fours", 1, _c(t)) for t in ("Jh", "Js", "Tc", "Ad", "9h", "2h")] == \
        [True] * 4 + [False] * 2


def test_pays_scotch_whist_ruff_needs_no_legal_winner():
    """Scotch Whist, clubs trumps, an opponent's King of spades winning: a trump revoke pays only when no spade he
    holds beats the King."""
    assert pays(_state("scotch_whist", "2c", (0, "Ks"), 1, ["9s", "6s"]), _c("6c"))
    assert not pays(_state("scotch_whist", "2c", (0, "Ks"), 1, ["As", "6s"]), _c("6c"))
    assert not pays(_state("scotch_whist", "2c", (0, "Ks"), 1, ["9s", "6s"]), _c("Ad"))  # a plain card


def test_kernel_equals_the_spec_on_clumsy_and_deliberate_revokers():
    """The numba count over the table == `count_results` (field for field, type for type) on a season with
    clumsy members (their own rate 1/10), a deliberate revoker, Scotch Whist and All Fours tables, individual and
    partnership play, and the must-trump void rule; both kinds of pay occur (All Fours: save-pay only; Scotch
    Whist: ruff-pay, and save-pay under a trump lead), and every pi is an exact fraction in [0, 1]."""
    from test_play_detectors_columns import assert_same

    tables = [TableSpec("sw4", 4, sides=partnerships(4, "pairs")), TableSpec("sw3", 3),
              TableSpec("sw4-must", 4, options={"void_rule": "must_trump_if_able"}),
              TableSpec("af2", 2, game="all_fours"), TableSpec("af4", 4, game="all_fours",
                                                             sides=partnerships(4, "pairs"))]
    spec = SeasonSpec(tables=tables, n_deals=600, players=20, revoke_rate=0.01, season="h2d", deck=False,
                      time=False, cheaters=[CheaterSpec("ada", "revoker", 0.6)])
    sim = simulate_season(spec, np.random.default_rng(3))
    clumsy = {"ben": 0.1, "cora": 0.1}
    sim2 = simulate_season(SeasonSpec(tables=tables, n_deals=300, players=20, revoke_rate=0.0, season="h2e",
                                      deck=False, time=False, revoke_rates=clumsy), np.random.default_rng(4))
    res = [replay_deal(validate(r, source="s.jsonl", line=k + 1)) for k, r in enumerate(sim.records + sim2.records)]
    want = count_results(res)
    assert_same(RevokePattern().count(from_results(res)), want)
    rv = want.revokes
    assert rv.n.sum() > 60 and all(0 <= p <= 1 for p in rv.groups)
    pi = np.asarray(rv.groups)[rv.grp]
    assert rv.k.sum() and (pi[rv.k > 0] > 0).all()  # a revoke that paid had a paying card
    chances = revoke_chances(want)
    assert sum(len(v) for v in chances.values()) == rv.n.sum() and all(v == sorted(v) for v in chances.values())
    games = {cell[0] for (pl, cell), v in want.cells.items() if v[1]}
    assert games == {"scotch_whist", "all_fours"}
    # every revoke classified again from the walk: save-pays in both games, ruff-pays in Scotch Whist
    from auditor.detectors.play_facts import walk

    kinds = set()
    for r in res:
        if deal_exclusion(r) is not None or not r.revokes:
            continue
        for st in walk(r):
            if st.revoke and pays(st, st.card):
                assert st.win is not None
                kinds.add((st.game, "ruff" if st.beats(st.card, st.win[1]) else "save"))
    assert kinds >= {("scotch_whist", "ruff"), ("scotch_whist", "save"), ("all_fours", "save")}
    assert ("all_fours", "ruff") not in kinds  # an off card in All Fours is a plain of a third suit


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
            for r in recs:  # one line of one log each, and its own minute: one point of the timelines each
                k = len(out)
                r["time"] = f"2026-01-{1 + k // 1440:02d}T{k // 60 % 24:02d}:{k % 60:02d}:00Z"
                out.append(replay_deal(validate(r, source=f"club.jsonl:{k + 1}", line=k + 1)))
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
    tables = [TableSpec(f"t{i}", 4, sides=partnerships(4, "pairs")) for i in range(2)]
    spec = SeasonSpec(tables=tables, n_deals=2000, players=8, deck=False, time=False,
                      cheaters=[CheaterSpec("ada", "revoker", REVOKER_Q)])
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


def test_timeline_follows_each_revoker_in_canonical_order(accidental):
    """Each revoker's timeline: a point at the end of each deal with his revokes (each deal its own minute here), in
    the canonical order (table, time), his revokes that paid so far against the sum of their chances pi so far,
    with the Poisson-binomial variance so far, exact; it ends at the test's counts."""
    det = RevokePattern()
    counts = count_results(accidental)
    tests = det.finalize(counts)
    per_deal = []  # deal by deal, in canonical order: each player's revokes as {pi: [revokes, paid]}
    for r in sorted(accidental, key=lambda r: (natural_key(r.deal.table), time_key(r.deal.time))):
        c = RevokeCounts()
        count_deal(r, c)
        if len(c.revokes):
            per_deal.append({pl: c.revokes.totals(a, b) for pl, (a, b) in c.revokes.spans().items()})
    checked = 0
    for t in tests:
        tl = t.detail["timeline"]
        assert tl[-1][:2] == [t.n, t.observed] and tl[-1][2] == pytest.approx(t.expected, abs=1e-3)
        at = {p[0]: p for p in tl}
        n, g, e, v = 0, 0, Fraction(0), Fraction(0)
        deals = 0
        for got in per_deal:
            if t.subject not in got:
                continue
            deals += 1
            for pi, (k, paid) in got[t.subject].items():
                f = Fraction(pi)
                n, g, e, v = n + k, g + paid, e + k * f, v + k * f * (1 - f)
            assert at[n][1] == g and at[n][2] == pytest.approx(float(e), abs=1e-3)  # a point per deal
            assert at[n][3] == pytest.approx(float(v), abs=1e-3)
            checked += 1
        assert len(tl) == deals  # fewer than 200
    assert checked >= 30
    assert sorted(counts.revokes.subjects) == sorted(t.subject for t in tests)
