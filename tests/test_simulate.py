"""The simulator: honest seasons replay clean, records are canonical, output is seeded, policies are distributions,
honest mistakes happen at their rate and skill shows in the scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from auditor.cards import cards_of
from auditor.dealog import FIELD_ORDER, read_records, record_from_obj, validate
from auditor.legal import legal_mask
from auditor.replay.run import replay_records
from auditor.rules import layout, resolve
from auditor.simulate import (SKILLS, Policy, Public, SeasonSpec, TableSpec, View, partnerships,
                              simulate_season)
from auditor.simulate.policy import observe

CONFIGS = (
    [("scotch_whist", "foster", n, None, {}) for n in range(2, 9)]
    + [("scotch_whist", "foster", n, "pairs", {}) for n in (4, 6, 8)]
    + [("scotch_whist", "foster", n, "teams", {}) for n in (6, 8)]
    + [("scotch_whist", "russian", n, None, {}) for n in range(2, 7)]
    + [("scotch_whist", "russian", 4, "pairs", {})]
    + [("scotch_whist", "foster", n, None, {"odd_pack": "show_36th_dead"}) for n in (5, 7)]
    + [("scotch_whist", "foster", 5, None, {"odd_pack": "remove_club_six"}),
       ("scotch_whist", "foster", 4, "pairs", {"void_rule": "must_trump_if_able"}),
       ("scotch_whist", "foster", 3, None, {"set_leader": "eldest", "two_three_player_deal_order": "packet_per_hand"}),
       ("scotch_whist", "russian", 5, None, {"extra_card_base": "nominal"})]
    + [("all_fours", "foster", n, None, {}) for n in (2, 3, 4)]
    + [("all_fours", "foster", 4, "pairs", {}),
       ("all_fours", "foster", 2, None, {"after_run": "keep_all"}),
       ("all_fours", "foster", 3, None, {"after_run": "keep_if_nine_else_discard", "game_tie": "nobody"}),
       ("all_fours", "foster", 2, None, {"target": 10, "low_to": "trick_winner", "revoke": "one_point"})]
)


def _season(game, rules, n, sides, opts, deals=120, **kw) -> SeasonSpec:
    t = TableSpec("t", n, game=game, rules=rules, options=opts, sides=partnerships(n, sides),
                  human_shuffle=kw.pop("human_shuffle", True), packs=kw.pop("packs", ("a", "b")))
    return SeasonSpec(tables=[t], n_deals=deals, **kw)


def _replay(records):
    return replay_records(record_from_obj(r, "sim", 0, i + 1) for i, r in enumerate(records))


@pytest.mark.parametrize("game,rules,n,sides,opts", CONFIGS, ids=lambda x: str(x))
def test_honest_season_replays_with_only_the_planted_revokes(game, rules, n, sides, opts):
    # a high accidental-revoke rate so that every configuration plants some; claims half the time
    spec = _season(game, rules, n, sides, opts, revoke_rate=0.02, claim_rate=0.5)
    sim = simulate_season(spec, np.random.default_rng(20261))
    assert len(sim.records) >= spec.n_deals
    rep = _replay(sim.records)
    planted = sorted((r["game_id"], r["deal_no"], r["trick"], r["seat"]) for r in sim.key["revokes"])
    found = sorted((f.game_id, f.deal_no, f.trick, f.seat) for f in rep.findings if f.code == "revoke")
    assert planted, "the rate is high enough that some revokes are planted"
    assert found == planted
    assert [f for f in rep.findings if f.code != "revoke"] == []
    # every game ran to its end
    for g in rep.games_summary:
        assert g.ended_by in ("points", "revoke"), g
    if game == "all_fours":
        begs = {r.get("beg") for r in sim.records}
        assert "stand" in begs and begs & {"run", "take_one"}


def test_default_rates_replay_clean_and_revokes_are_rare():
    spec = _season("scotch_whist", "foster", 4, "pairs", {}, deals=600)
    sim = simulate_season(spec, np.random.default_rng(5))
    rep = _replay(sim.records)
    assert {f.code for f in rep.findings} <= {"revoke"}
    assert len([f for f in rep.findings if f.code == "revoke"]) == len(sim.key["revokes"])
    assert len(sim.key["revokes"]) < 0.1 * len(sim.records)


def test_records_are_canonical_deal_log_and_key_is_json():
    spec = _season("all_fours", "foster", 3, None, {}, deals=80)
    sim = simulate_season(spec, np.random.default_rng(3))
    order = {k: i for i, k in enumerate(FIELD_ORDER)}
    for rec in sim.records:
        assert validate(rec).to_canonical() == rec
        idx = [order[k] for k in rec]
        assert idx == sorted(idx)
        assert set(rec) <= set(FIELD_ORDER)  # nothing about cheats or skills in the log
    key = json.loads(json.dumps(sim.key))
    assert key["seed"] == 3 and key["deals"] == len(sim.records)
    assert set(key["players"]) == set(p for r in sim.records for p in r["players"])


def test_records_carry_deck_time_pack_and_recorded_only_when_asked():
    spec = _season("scotch_whist", "foster", 5, None, {}, deals=30, deck=False, time=False, recorded=False,
                   packs=())
    sim = simulate_season(spec, np.random.default_rng(1))
    for rec in sim.records:
        assert not {"deck", "time", "pack", "recorded"} & set(rec)
    spec = _season("scotch_whist", "foster", 5, None, {}, deals=30)
    sim = simulate_season(spec, np.random.default_rng(1))
    assert all({"deck", "time", "pack", "recorded"} <= set(rec) for rec in sim.records)
    assert [r["pack"] for r in sim.records[:4]] == ["a", "b", "a", "b"]
    times = [r["time"] for r in sim.records]
    assert times == sorted(times)


def test_same_seed_same_bytes_and_another_seed_differs(tmp_path):
    spec = _season("scotch_whist", "foster", 4, "pairs", {}, deals=150, log_decisions=True)
    out = []
    for i, seed in enumerate((11, 11, 12)):
        sim = simulate_season(spec, np.random.default_rng(seed))
        p = tmp_path / f"s{i}.jsonl"
        k = tmp_path / f"k{i}.json"
        sim.write(str(p), key_path=str(k))
        out.append((p.read_bytes(), k.read_bytes(), json.dumps(sim.decisions)))
    assert out[0] == out[1]
    assert out[0][0] != out[2][0]


@pytest.mark.parametrize("game,n,sides", [("scotch_whist", 4, "pairs"), ("scotch_whist", 5, None),
                                          ("all_fours", 3, None)])
def test_logging_decisions_does_not_change_the_season(game, n, sides):
    # the logged path and the fast unlogged path must draw the same random numbers
    base = dict(deals=120, revoke_rate=0.02)
    a = simulate_season(_season(game, "foster", n, sides, {}, **base), np.random.default_rng(6))
    b = simulate_season(_season(game, "foster", n, sides, {}, log_decisions=True, **base), np.random.default_rng(6))
    assert a.records == b.records and a.key["revokes"] == b.key["revokes"] and a.key["revokes"]


def test_written_jsonl_reads_back(tmp_path):
    spec = _season("all_fours", "foster", 4, "pairs", {}, deals=40)
    sim = simulate_season(spec, np.random.default_rng(2))
    p = tmp_path / "s.jsonl.gz"
    assert sim.write(str(p)) == len(sim.records)
    back = [r.deal.to_canonical() for r in read_records([str(p)])]
    assert back == sim.records


# ---------------------------------------------------------------------- policies are distributions


def _random_states(rng, count):
    """Random mid-deal states reached by random legal play: (game, pub, seat, hand, legal)."""
    out = []
    for _ in range(count):
        game = "scotch_whist" if rng.random() < 0.6 else "all_fours"
        n = int(rng.integers(2, 9)) if game == "scotch_whist" else int(rng.integers(2, 5))
        R = resolve(game, "foster")
        L = layout(R, n, int(rng.integers(n)))
        cards = cards_of(L.pack)
        deck = [cards[i] for i in rng.permutation(len(cards))]
        per = 6 if game == "all_fours" or n <= 3 else len(cards) // n
        hands = [sum(1 << c for c in deck[s * per:(s + 1) * per]) for s in range(n)]
        trump = deck[-1] // 13
        sides = list(range(n)) if n % 2 or rng.random() < 0.5 else [s % 2 for s in range(n)]
        pub = Public(game, n, trump, L.pack, sides, L.dealer, deck[-1], None, [h.bit_count() for h in hands], per)
        leader = L.eldest
        # play some whole tricks at random, then part of one
        tricks = int(rng.integers(0, per))
        for t in range(tricks + 1):
            pub.order = [(leader + i) % n for i in range(n)]
            pub.lead_suit = None
            pub.trick_mask = 0
            pub.trick_hv = 0.0
            stop = int(rng.integers(0, n)) if t == tricks else n
            for p in range(stop):
                s = pub.order[p]
                pub.pos = p
                lm = legal_mask(game, hands[s], pub.lead_suit, trump)
                c = int(rng.choice(cards_of(lm)))
                if p == 0:
                    pub.lead_suit, pub.win_seat, pub.win_card = c // 13, s, c
                elif pub.beats(c, pub.win_card):
                    pub.win_seat, pub.win_card = s, c
                if p and c // 13 != pub.lead_suit:
                    pub.voids[s] |= 1 << pub.lead_suit
                hands[s] &= ~(1 << c)
                pub.sizes[s] -= 1
                pub.played |= 1 << c
                pub.trick_mask |= 1 << c
                pub.trick_hv += pub.tab.hv[c]
            if t < tricks:
                leader = pub.win_seat
                pub.prev_trick_mask = pub.trick_mask
        s = pub.order[stop]
        pub.pos = stop
        legal = legal_mask(game, hands[s], pub.lead_suit, trump)
        out.append((game, pub, s, hands[s], legal))
    return out


@pytest.mark.parametrize("skill", SKILLS)
def test_policy_probabilities_are_distributions_over_the_legal_cards(skill):
    rng = np.random.default_rng(99)
    pol = Policy(skill)
    for _game, pub, s, hand, legal in _random_states(rng, 300):
        belief = [1.0] * pub.n if skill == "reader" else None
        p = pol.probabilities(View(pub, s, hand, -1, belief), legal)
        assert p.shape == (52,)
        assert abs(p.sum() - 1.0) < 1e-9
        assert (p >= 0).all()
        on = np.zeros(52, dtype=bool)
        on[cards_of(legal)] = True
        assert (p[~on] == 0).all()
        assert p[on].min() > 0  # stochastic: every legal card has some chance
        assert np.allclose(pol.probabilities(View(pub, s, hand, -1, belief), cards_of(legal)), p)


def test_logged_decisions_are_distributions_and_match_the_play():
    spec = _season("scotch_whist", "foster", 4, "pairs", {}, deals=40, log_decisions=True)
    sim = simulate_season(spec, np.random.default_rng(4))
    plays = {}
    for rec in sim.records:
        for k, t in enumerate(rec["tricks"]):
            for c in t:
                plays.setdefault((rec["game_id"], rec["deal_no"], k + 1), []).append(c)
    n_cards = sum(len(t) for r in sim.records for t in r["tricks"])
    assert len(sim.decisions) == n_cards  # one row per card played
    for d in sim.decisions:
        assert len(d["legal"]) == len(d["p_honest"]) == len(d["p_used"])
        assert abs(sum(d["p_honest"]) - 1) < 1e-9 and abs(sum(d["p_used"]) - 1) < 1e-9
        assert d["p_used"] == d["p_honest"]  # nobody cheats here
        assert d["card"] in plays[(d["game_id"], d["deal_no"], d["trick"])]
        assert (d["card"] in d["legal"]) != d["revoke"]


def test_accidental_revokes_happen_at_their_rate():
    rate = 1 / 300
    spec = _season("scotch_whist", "foster", 4, "pairs", {}, deals=2500, revoke_rate=rate, log_decisions=True,
                   human_shuffle=False)
    sim = simulate_season(spec, np.random.default_rng(8))
    chances = [d for d in sim.decisions if d["p_revoke"] > 0]
    k = sum(d["revoke"] for d in chances)
    m = len(chances)
    assert m > 10000
    assert abs(k - m * rate) < 4 * math.sqrt(m * rate * (1 - rate)), (k, m)
    # honest revokes go both ways: some cost the revoker's side the trick, some win it
    assert k == len(sim.key["revokes"]) and {r["kind"] for r in sim.key["revokes"]} == {"accidental"}


def _side_points(sim, good: str) -> tuple[list[int], list[int]]:
    """Per deal where the two `good`-skill players are partners: (their points, the others' points)."""
    a, b = [], []
    for r in sim.records:
        skills = [sim.key["players"][p]["skill"] for p in r["players"]]
        for si, side in enumerate(r["sides"]):
            if all(skills[s] == good for s in side):
                a.append(r["recorded"]["points"][si])
                b.append(r["recorded"]["points"][1 - si])
    return a, b


@pytest.mark.parametrize("game,good,bad,deals", [("scotch_whist", "strong", "novice", 3000),
                                                 ("all_fours", "strong", "novice", 9000)])
def test_skill_shows_in_the_scores(game, good, bad, deals):
    # All Fours is mostly the cards (High and Low go to their holders): the edge is small, so more deals
    names = ["g1", "b1", "g2", "b2"]
    spec = SeasonSpec(tables=[TableSpec("t", 4, game=game, sides=partnerships(4, "pairs"))], players=names,
                      skills={"g1": good, "g2": good, "b1": bad, "b2": bad}, n_deals=deals, revoke_rate=0,
                      fixed_seats=True)
    sim = simulate_season(spec, np.random.default_rng(31))
    a, b = _side_points(sim, good)
    d = np.array(a) - np.array(b)
    z = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert z > 3, (d.mean(), z, len(d))


def test_reader_belief_drops_for_a_partner_who_did_not_feed_the_ten():
    # Scotch Whist, 4 players in pairs, trumps spades. Seat 0 leads the Jack of trumps (a sure winner); his partner
    # seat 2 follows with a small trump: a holder of the Ten would have dropped it on the Jack.
    from auditor.cards import parse_card as pc

    n = 4
    pub = Public("scotch_whist", n, 0, layout(resolve("scotch_whist", "foster"), 4, 3).pack, [0, 1, 0, 1], 3,
                 pc("6s"), None, [9, 9, 9, 9], 9)
    beliefs = {1: [1.0, 0.0, 1.0, 1.0]}
    pub.order = [0, 1, 2, 3]
    for p, (s, c) in enumerate([(0, "Js"), (1, "7s"), (2, "8s")]):
        pub.pos = p
        observe(pub, beliefs, s, pc(c))
        if p == 0:
            pub.lead_suit, pub.win_seat, pub.win_card = 0, s, pc(c)
        pub.played |= 1 << pc(c)
        pub.trick_mask |= 1 << pc(c)
    bw = beliefs[1]
    assert bw[2] == pytest.approx(0.2)  # seat 2 probably lacks the Ten
    assert bw[3] == 1.0 and bw[0] == 1.0
    # seat 3 then shows out of trumps: he certainly lacks it
    pub.pos = 3
    observe(pub, beliefs, 3, pc("9h"))
    assert bw[3] == 0.0


def _rising(perm: list[int]) -> int:
    pos = {v: i for i, v in enumerate(perm)}
    return 1 + sum(1 for v in range(len(perm) - 1) if pos[v + 1] < pos[v])


@pytest.mark.parametrize("game,n", [("scotch_whist", 4), ("scotch_whist", 5), ("all_fours", 3)])
def test_human_shuffles_riffle_the_gathered_tricks_of_the_same_pack(game, n):
    from auditor.cards import parse_card

    tables = [TableSpec("h", n, game=game, packs=("a", "b"), human_shuffle=True), TableSpec("p", n, game=game)]
    spec = SeasonSpec(tables=tables, players=2 * n + 2, n_deals=400)
    sim = simulate_season(spec, np.random.default_rng(17))
    last: dict = {}
    rising = {"h": [], "p": []}
    for r in sim.records:
        deck = [parse_card(c) for c in r["deck"]]
        prev = last.get((r["table"], r.get("pack")))
        if prev is not None:
            played = [parse_card(c) for t in prev.get("tricks", []) for c in t]
            if not played:
                played = [parse_card(c) for h in prev["hands"] for c in h]
            pdeck = [parse_card(c) for c in prev["deck"]]
            gathered = played + [c for c in pdeck if c not in set(played)]
            idx = {c: i for i, c in enumerate(gathered)}
            k = _rising([idx[c] for c in deck])
            rising[r["table"]].append(k)
            if r["table"] == "h":
                riffles = sim.key["players"][r["players"][r["dealer"]]]["riffles"]
                assert k <= 2 ** riffles + 1  # r riffles make at most 2^r rising sequences; the cut adds one
        last[(r["table"], r.get("pack"))] = r
    assert len(rising["h"]) > 100 and len(rising["p"]) > 100
    m = len(sim.records[0]["deck"])
    assert np.mean(rising["p"]) > (m + 1) / 2 - 2  # a uniform deck has (m + 1) / 2 on average
    assert np.mean(rising["h"]) < 12
