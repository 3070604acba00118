"""Planted cheats do what the key says, at the rate q says, and honest dealing matches the rules' exact odds."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

import numpy as np
import pytest

from auditor.cards import RJ, R10, parse_card
from auditor.dealog import FIELD_ORDER, record_from_obj, validate
from auditor.legal import beats, legal_mask, trick_winner
from auditor.replay.reference import replay_deal
from auditor.replay.run import replay_records
from auditor.rules import layout, resolve
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from auditor.simulate.season import simulate_dealing
from auditor.simulate.shuffle import riffle


def exact_jack_probs(rules, n: int) -> list[Fraction]:
    """P(the seat at offset k from the dealer is dealt the Jack of the turn-up's suit), from the layout alone.

    The deck is a uniform permutation of the pack (P cards, all four Jacks in it). The turn-up is a Jack with
    probability 4/P and then it is its owner's (Scotch Whist) or nobody's (All Fours). Otherwise the Jack of its suit
    is equally likely at each of the other P - 1 deck positions, and a seat holds it when it is dealt that
    position."""
    L = layout(rules, n, 0)
    P = L.deck_len
    ti = L.turnup_index
    out = []
    for s in range(n):
        slots = sum(1 for k in range(P) if L.deal_seat[k] == s and k != ti)
        p = (1 - Fraction(4, P)) * Fraction(slots, P - 1)
        if L.turnup_owner == s:
            p += Fraction(4, P)
        out.append(p)
    return out


def test_exact_values_match_the_rules_text():
    p = exact_jack_probs(resolve("scotch_whist", "foster"), 4)
    assert p == [Fraction(11, 35), Fraction(8, 35), Fraction(8, 35), Fraction(8, 35)]
    af = exact_jack_probs(resolve("all_fours", "foster"), 4)
    assert af == [Fraction(12, 13) * Fraction(6, 51)] * 4


def _within(count: int, m: int, p: float, sigmas: float = 4.0) -> bool:
    return abs(count - m * p) <= sigmas * math.sqrt(m * p * (1 - p))


DEAL_CONFIGS = ([("scotch_whist", "foster", n) for n in range(2, 9)]
                + [("scotch_whist", "russian", n) for n in range(2, 7)]
                + [("all_fours", "foster", n) for n in (2, 3, 4)])


def _check_jack_frequency(game, preset, n, m):
    out = simulate_dealing(TableSpec("t", n, game=game, rules=preset), m, np.random.default_rng(1000 + n))
    probs = exact_jack_probs(resolve(game, preset), n)
    off = out["jack_offset"]
    for k in range(n):
        cnt = int((off == k).sum())
        assert _within(cnt, m, float(probs[k])), (k, cnt / m, float(probs[k]))


@pytest.mark.parametrize("game,preset,n", DEAL_CONFIGS)
def test_honest_jack_of_trumps_frequency_per_seat(game, preset, n):
    # 10^5 deals for the two headline tables (4 players), fewer for the other counts in the fast tier
    _check_jack_frequency(game, preset, n, 100_000 if n == 4 and preset == "foster" else 25_000)


@pytest.mark.slow
@pytest.mark.parametrize("game,preset,n", DEAL_CONFIGS)
def test_honest_jack_of_trumps_frequency_per_seat_1e5(game, preset, n):
    _check_jack_frequency(game, preset, n, 100_000)


@pytest.mark.parametrize("game,n,q", [("scotch_whist", 4, 0.3), ("scotch_whist", 5, 0.1), ("all_fours", 4, 0.5),
                                      ("scotch_whist", 2, 0.2)])
def test_jack_stacker_frequency_is_q_plus_one_minus_q_p0(game, n, q):
    m = 100_000
    out = simulate_dealing(TableSpec("t", n, game=game), m, np.random.default_rng(7),
                           CheaterSpec("x", "jack_stacker", q))
    mine = out["dealer"] == 0
    p0 = float(exact_jack_probs(resolve(game, "foster"), n)[0])
    k = int((out["jack_offset"][mine] == 0).sum())
    assert _within(k, int(mine.sum()), q + (1 - q) * p0), (k / mine.sum(), q + (1 - q) * p0)
    assert _within(int(out["acted"][mine].sum()), int(mine.sum()), q)
    assert not out["acted"][~mine].any()
    # when the others deal, nothing changes
    p_other = float(exact_jack_probs(resolve(game, "foster"), n)[0])
    k2 = int((out["jack_offset"][~mine] == 0).sum())
    assert _within(k2, int((~mine).sum()), p_other)


def test_turnup_jack_frequency():
    q, m = 0.25, 80_000
    out = simulate_dealing(TableSpec("t", 3, game="all_fours"), m, np.random.default_rng(9),
                           CheaterSpec("x", "turnup_jack", q))
    mine = out["dealer"] == 0
    assert _within(int(out["turnup_jack"][mine].sum()), int(mine.sum()), q + (1 - q) * 4 / 52)
    assert _within(int(out["turnup_jack"][~mine].sum()), int((~mine).sum()), 4 / 52)


def test_stacked_decks_still_deal_the_logged_hands_and_the_key_lists_the_deals():
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs")),
                              TableSpec("a", 4, game="all_fours", sides=partnerships(4, "pairs"))],
                      players=8, n_deals=400,
                      cheaters=[CheaterSpec("ada", "jack_stacker", 1.0), CheaterSpec("ben", "turnup_jack", 1.0)])
    sim = simulate_season(spec, np.random.default_rng(4))
    rep = replay_records(record_from_obj(r, "s", 0, i) for i, r in enumerate(sim.records))
    assert {f.code for f in rep.findings} <= {"revoke"}  # the deck deals exactly the logged hands
    by = {(r["game_id"], r["deal_no"]): r for r in sim.records}
    key = {c["player"]: c for c in sim.key["cheaters"]}
    acted = key["ada"]["acted"]
    assert len(acted) == key["ada"]["deals_dealt"] > 20
    for ev in acted:
        r = by[(ev["game_id"], ev["deal_no"])]
        assert r["players"][r["dealer"]] == "ada"
        tu = parse_card(r["turn_up"])
        jack = (tu // 13) * 13 + RJ
        assert jack in [parse_card(x) for x in r["hands"][r["dealer"]]]
    for ev in key["ben"]["acted"]:
        r = by[(ev["game_id"], ev["deal_no"])]
        assert r["players"][r["dealer"]] == "ben" and r["turn_up"][0] == "J"
    assert all(set(r) <= set(FIELD_ORDER) for r in sim.records)


# ---------------------------------------------------------------------- the marked Ten


def _trump_order(trump: int) -> list[int]:
    ranks = [RJ, 12, 11, 10, R10, 7, 6, 5, 4]
    return [trump * 13 + r for r in ranks]


def _marked_ten_cases(q: float, deals: int = 1500, seed: int = 6):
    names = ["x", "o1", "p", "o2"]
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], players=names, n_deals=deals,
                      fixed_seats=True, revoke_rate=0, log_decisions=True,
                      cheaters=[CheaterSpec("x", "marked_ten", q)], skills={n: "strong" for n in names})
    sim = simulate_season(spec, np.random.default_rng(seed))
    recs = {(r["game_id"], r["deal_no"]): r for r in sim.records}
    replayed: dict = {}
    cases = []
    for d in sim.decisions:
        if d["player"] != "x":
            continue
        r = recs[(d["game_id"], d["deal_no"])]
        trump = parse_card(r["turn_up"]) // 13
        ten = trump * 13 + R10
        tricks = [[parse_card(c) for c in t] for t in r["tricks"]]
        k = d["trick"] - 1
        # seats of this trick: the leader is the winner of the previous trick
        res = replayed.get(id(r))
        if res is None:
            res = replayed[id(r)] = replay_deal(validate(r))
        seats = [s for (t, s, _) in res.plays if t == k]
        pos = seats.index(0)
        before = {c for t in tricks[:k] for c in t} | set(tricks[k][:pos])
        holder = next((s for s, h in enumerate(r["hands"]) if ten in [parse_card(x) for x in h]), None)
        if ten in before or holder in (None, 0):
            rule = None
        else:
            friend = holder == 2
            boss = next(c for c in _trump_order(trump) if c not in before)
            legal = [parse_card(c) for c in d["legal"]]
            lead = None if pos == 0 else tricks[k][0] // 13
            rule = None
            if lead is None and not friend and boss in legal:
                rule = ("lead_boss", boss)
            elif lead is None and friend and any(c // 13 != trump for c in legal) \
                    and any(c // 13 == trump for c in legal):
                rule = ("keep_off_trumps", None)
            elif lead == trump and holder in seats[pos + 1:]:
                want = (trump * 13 + RJ) if friend else boss
                if want in legal:
                    rule = ("follow_partner_jack" if friend else "follow_boss", want)
        cases.append((d, rule, trump))
    return cases, sim


def test_marked_ten_with_q_one_plays_the_sure_read():
    cases, sim = _marked_ten_cases(1.0)
    seen: dict[str, int] = {}
    for d, rule, trump in cases:
        if rule is None:
            assert d["p_used"] == d["p_honest"]
            continue
        kind, want = rule
        seen[kind] = seen.get(kind, 0) + 1
        card = parse_card(d["card"])
        if kind == "keep_off_trumps":
            assert card // 13 != trump
            assert all(p == 0 for c, p in zip(d["legal"], d["p_used"], strict=True) if parse_card(c) // 13 == trump)
        else:
            assert card == want, (kind, d)
    assert set(seen) == {"lead_boss", "keep_off_trumps", "follow_boss", "follow_partner_jack"}, seen
    assert all(v >= 5 for v in seen.values()), seen
    changed = next(c for c in sim.key["cheaters"] if c["player"] == "x")["decisions_changed"]
    assert changed >= sum(seen.values()) * 0.9


def test_marked_ten_mixes_the_read_with_honest_play_at_rate_q():
    q = 0.4
    cases, _ = _marked_ten_cases(q, deals=600, seed=8)
    n_rule = 0
    for d, rule, _trump in cases:
        if rule is None:
            assert d["p_used"] == d["p_honest"]
            continue
        n_rule += 1
        kind, want = rule
        for c, pu, ph in zip(d["legal"], d["p_used"], d["p_honest"], strict=True):
            if kind == "keep_off_trumps":
                continue
            cheat = 1.0 if parse_card(c) == want else 0.0
            assert pu == pytest.approx(q * cheat + (1 - q) * ph, abs=1e-9)
    assert n_rule > 50


# ---------------------------------------------------------------------- colluders, revoker, bad shuffler


def _feed(records, game):
    """Per deal: honour points seat 0 and seat 2 played into each other's won tricks, and the same for seats 1, 3."""
    pair, other = [], []
    for r in records:
        if "tricks" not in r:
            continue
        res = replay_deal(validate(r))
        a = b = 0
        for k, s, c in res.plays:
            w = res.winners[k]
            if game == "scotch_whist":
                hv = {9: 11, 8: 10, 12: 4, 11: 3, 10: 2}.get(c % 13, 0) if c // 13 == res.trump else 0
            else:
                hv = {8: 10, 12: 4, 11: 3, 10: 2, 9: 1}.get(c % 13, 0)
            if s != w and {s, w} == {0, 2}:
                a += hv
            if s != w and {s, w} == {1, 3}:
                b += hv
        pair.append(a)
        other.append(b)
    return np.array(pair), np.array(other)


@pytest.mark.parametrize("game,n,deals", [("scotch_whist", 5, 2500), ("all_fours", 4, 2500)])
def test_colluders_feed_counting_cards_to_each_other(game, n, deals):
    names = ["x", "o1", "y", "o2", "o3"][:n]
    spec = SeasonSpec(tables=[TableSpec("t", n, game=game)], players=names, n_deals=deals, revoke_rate=0,
                      fixed_seats=True, skills={k: "strong" for k in names},
                      cheaters=[CheaterSpec("x", "colluder", 1.0, partner="y"),
                                CheaterSpec("y", "colluder", 1.0, partner="x")])
    sim = simulate_season(spec, np.random.default_rng(3))
    pair, other = _feed(sim.records, game)
    d = pair - other  # seats 1 and 3 sit as the colluders do (one seat apart) but play honestly
    z = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert z > 3, (pair.mean(), other.mean(), z)
    assert all(c["decisions_changed"] > 100 for c in sim.key["cheaters"])


def test_colluders_sit_together_at_an_individual_table():
    spec = SeasonSpec(tables=[TableSpec("p", 4, sides=partnerships(4, "pairs")), TableSpec("i", 5)],
                      players=12, n_deals=300,
                      cheaters=[CheaterSpec("ada", "colluder", 0.5, partner="ben"),
                                CheaterSpec("ben", "colluder", 0.5, partner="ada")])
    sim = simulate_season(spec, np.random.default_rng(2))
    for r in sim.records:
        if "ada" in r["players"] or "ben" in r["players"]:
            assert r["table"] == "i" and {"ada", "ben"} <= set(r["players"])


@pytest.mark.parametrize("game", ["scotch_whist", "all_fours"])
def test_deliberate_revokes_are_all_found_and_pay(game):
    spec = SeasonSpec(tables=[TableSpec("t", 4, game=game, sides=partnerships(4, "pairs"))], players=4,
                      n_deals=1500, revoke_rate=0, claim_rate=0.0,
                      cheaters=[CheaterSpec("ada", "revoker", 0.8)])
    sim = simulate_season(spec, np.random.default_rng(12))
    rep = replay_records(record_from_obj(r, "s", 0, i) for i, r in enumerate(sim.records))
    planted = sorted((r["game_id"], r["deal_no"], r["trick"], r["seat"]) for r in sim.key["revokes"])
    found = sorted((f.game_id, f.deal_no, f.trick, f.seat) for f in rep.findings if f.code == "revoke")
    assert found == planted and len(planted) >= 10
    assert {f.code for f in rep.findings} == {"revoke"}
    assert {r["player"] for r in sim.key["revokes"]} == {"ada"}
    by = {(r["game_id"], r["deal_no"]): r for r in sim.records}
    kinds = {"takes": 0, "keeps": 0}
    for rv in sim.key["revokes"]:
        r = by[(rv["game_id"], rv["deal_no"])]
        res = replay_deal(validate(r))
        k, seat, card = rv["trick"] - 1, rv["seat"], parse_card(rv["card"])
        kinds[_revoke_pays(game, res, k, seat, card)] += 1
    # Scotch Whist: both ways of paying; All Fours: trumping is always legal there, so only keeping a count
    assert kinds["takes"] > 0 if game == "scotch_whist" else kinds["takes"] == 0
    assert kinds["keeps"] > 0, kinds


def _counting(game: str, trump: int, c: int) -> bool:
    if game == "scotch_whist":
        return c // 13 == trump and c % 13 in (RJ, R10, 12, 11, 10)
    return c % 13 in (R10, 12, 11, 10, RJ)


def _revoke_pays(game: str, res, k: int, seat: int, card: int) -> str:
    """Which way the revoke of `card` by `seat` in trick k pays (the revoke test's definition), asserting one does:
    an opponent is winning; "takes": no legal card beats the winner and the revoke card does (Scotch Whist);
    "keeps": the winner beats every legal card, all of them count, and the revoke card does not."""
    plays = [(s, c) for (t, s, c) in res.plays if t == k]
    pos = [s for s, _ in plays].index(seat)
    before = [c for _, c in plays[:pos]]
    assert before, "a revoke follows a lead"
    trump = res.trump
    w = trick_winner(game, before, trump)
    ws, wc = plays[w]
    assert ws % 2 != seat % 2, "an opponent is winning (partners opposite)"
    hold = 0
    for (t, s, c) in res.plays:  # every card is played: what he holds now is what he plays from here on
        if s == seat and t >= k:
            hold |= 1 << c
    legal = [c for c in range(52) if legal_mask(game, hold, before[0] // 13, trump) >> c & 1]
    assert card not in legal
    assert not any(beats(game, c, wc, trump) for c in legal)
    if beats(game, card, wc, trump):
        assert game == "scotch_whist"
        return "takes"
    assert all(_counting(game, trump, c) for c in legal) and not _counting(game, trump, card)
    return "keeps"


def _rising_sequences(perm: list[int]) -> int:
    pos = {c: i for i, c in enumerate(perm)}
    return 1 + sum(1 for v in range(len(perm) - 1) if pos[v + 1] < pos[v])


def test_bad_shuffler_weak_deals_from_a_single_riffle_of_the_gathered_tricks():
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], players=4, n_deals=200,
                      cheaters=[CheaterSpec("ada", "bad_shuffler", 1.0, mode="weak")])
    sim = simulate_season(spec, np.random.default_rng(5))
    acted = {(e["game_id"], e["deal_no"]) for e in sim.key["cheaters"][0]["acted"]}
    assert len(acted) > 20
    prev = None
    for r in sim.records:
        deck = [parse_card(c) for c in r["deck"]]
        if (r["game_id"], r["deal_no"]) in acted:
            gathered = [parse_card(c) for t in prev["tricks"] for c in t]
            idx = {c: i for i, c in enumerate(gathered)}
            assert _rising_sequences([idx[c] for c in deck]) <= 2
        prev = r


def test_bad_shuffler_stack_puts_the_richest_trick_in_his_hand():
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], players=4, n_deals=200,
                      cheaters=[CheaterSpec("ada", "bad_shuffler", 1.0, mode="stack")])
    sim = simulate_season(spec, np.random.default_rng(5))
    acted = {(e["game_id"], e["deal_no"]) for e in sim.key["cheaters"][0]["acted"]}
    assert len(acted) > 20
    prev = None
    for r in sim.records:
        if (r["game_id"], r["deal_no"]) in acted:
            trump = parse_card(prev["turn_up"]) // 13
            best = max(prev["tricks"], key=partial(_trick_worth, trump=trump))
            assert set(best) <= set(r["hands"][r["dealer"]])
        prev = r


def _trick_worth(t: list[str], trump: int) -> float:
    """What a stacking bad shuffler looks for in a trick: its trump honours, then its high cards."""
    hv = {9: 11, 8: 10, 12: 4, 11: 3, 10: 2}
    cs = [parse_card(c) for c in t]
    return sum(hv.get(c % 13, 0) for c in cs if c // 13 == trump) + 0.1 * sum(c % 13 for c in cs)


def test_riffle_is_gilbert_shannon_reeds():
    # GSR on 4 cards: the identity has probability 5/16, each of the 11 permutations with two rising sequences
    # 1/16, every other permutation 0
    rng = np.random.default_rng(0)
    m = 32000
    counts: dict[tuple, int] = {}
    for _ in range(m):
        out = tuple(riffle([0, 1, 2, 3], rng))
        counts[out] = counts.get(out, 0) + 1
    assert len(counts) == 12
    for perm, k in counts.items():
        p = 5 / 16 if perm == (0, 1, 2, 3) else 1 / 16
        assert _rising_sequences(list(perm)) <= 2
        assert _within(k, m, p), (perm, k / m, p)
    deck = list(range(36))
    out = riffle(riffle(deck, rng), rng)
    assert sorted(out) == deck and _rising_sequences(out) <= 4
