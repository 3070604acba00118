"""Per-play facts: the walk must agree with the replay and what it calls public must be true of the real hands."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.cards import SUIT_MASK, cards_of
from auditor.dealog import validate
from auditor.detectors.play_facts import deal_exclusion, walk
from auditor.legal import legal_mask
from auditor.replay.reference import replay_deal
from auditor.testing.generate import Style, configurations, random_game


def _results(seed: int, game: str, preset: str, n: int, games: int = 3, sides=None, style=None):
    rng = np.random.default_rng(seed)
    out = []
    for g in range(games):
        recs = random_game(rng, game, preset, n, game_id=f"g{g}", sides=sides, style=style)
        out += [replay_deal(validate(r)) for r in recs]
    return out


CONFIGS = list(configurations())


@pytest.mark.parametrize("game,preset,n,opts", CONFIGS, ids=[f"{g}-{p}-{n}" for g, p, n, _ in CONFIGS])
def test_walk_matches_replay_and_public_facts_are_true(game, preset, n, opts):
    results = _results(100 + n, game, preset, n, games=2, style=Style(revoke_rate=0.02))
    walked = 0
    for res in results:
        if deal_exclusion(res) is not None:
            continue
        d = res.deal
        plays = list(res.plays)
        seen = []
        for st in walk(res):
            k, s, c = plays[len(seen)]
            assert (st.k, st.seat, st.card) == (k, s, c)
            seen.append(c)
            # the seat holds the card it plays, in the current set
            assert (st.hold[s] >> c) & 1
            # legal options follow the rules; a revoke is exactly a play outside them
            if not st.two_card_turn:
                must = d.ruleset.switches.get("void_rule") == "must_trump_if_able"
                assert st.legal == legal_mask(game, st.hold[s], st.lead_suit, st.trump, must)
                assert st.revoke == (not (st.legal >> c) & 1)
            # the public record: played cards are exactly the earlier plays
            played = 0
            for x in seen[:-1]:
                played |= 1 << x
            assert st.played == played
            # voids shown are true: a seat shown void in a suit holds none of it in the set being played
            for o in range(n):
                for suit in range(4):
                    if (st.void[o] >> suit) & 1:
                        assert not st.hold[o] & SUIT_MASK[suit]
            # unknown cards: every card of the others' hands that seat s cannot name, counted once
            unknown = sum(st.unknown_slots(s, o) for o in range(n))
            others = 0
            for o in range(n):
                if o != s:
                    others |= st.hold[o] | st.future[o]
            known = 0
            if st.turnup_owner is not None and st.turnup_owner != s and not (st.played >> st.turn_up) & 1:
                known = 1 << st.turn_up
            assert unknown == (others & ~known).bit_count()
            # holder() finds the true holder of every unplayed dealt card
            for o in range(n):
                for x in cards_of(st.hold[o]):
                    assert st.holder(x) == o
        assert len(seen) == len(plays)
        walked += 1
    assert walked > 0


def test_revokes_are_flagged_and_do_not_create_false_voids():
    results = _results(7, "scotch_whist", "foster", 4, games=6, style=Style(revoke_rate=0.05))
    n_rev = 0
    for res in results:
        if deal_exclusion(res) is not None:
            continue
        revs = {(st.k + 1, st.seat) for st in walk(res) if st.revoke}
        assert revs == set(res.revokes)
        n_rev += len(revs)
    assert n_rev > 5


def test_sure_winner_is_never_beaten_by_a_card_still_out():
    results = _results(11, "scotch_whist", "foster", 4, games=8, sides=[[0, 2], [1, 3]])
    checked = 0
    for res in results:
        if deal_exclusion(res) is not None:
            continue
        for st in walk(res):
            if st.pos == 0 or not st.winner_is_sure():
                continue
            ws, wc = st.current_winner()
            # no card still in anyone's hand beats the current winner
            for o in range(st.n):
                for x in cards_of(st.hold[o]):
                    assert not st.beats(x, wc)
            checked += 1
    assert checked > 20


def test_incomplete_and_irregular_deals_are_excluded_with_a_reason():
    rng = np.random.default_rng(3)
    rec = random_game(rng, "scotch_whist", "foster", 4, game_id="g")[0]
    short = dict(rec, tricks=rec["tricks"][:3])
    res = replay_deal(validate(short))
    assert deal_exclusion(res) == "incomplete"
    hands_only = {k: v for k, v in rec.items() if k != "tricks"}
    assert deal_exclusion(replay_deal(validate(hands_only))) in ("incomplete", "no_hands")
    assert deal_exclusion(replay_deal(validate(rec))) is None
