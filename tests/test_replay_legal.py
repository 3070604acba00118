"""The rules of the play written once (`auditor.legal`), and the fast forms of them held to it: the batch kernel's
vectorised trick order and revokes, and the derived forms (`legal_suits`, `shown_voids`, `revoke_kind`, `beats`)
against `legal_mask` and `trick_winner` themselves.
"""

from __future__ import annotations

import numpy as np
import pytest

from auditor.cards import SUIT_MASK, cards_of
from auditor.dealog import validate
from auditor.fast import kernel
from auditor.legal import (beats, legal_mask, legal_suits, revoke_kind, seats_of_trick, shown_voids, trick_key,
                           trick_size, trick_winner)
from auditor.replay.batch import replay_batch
from auditor.rules import layout, resolve, trump_strength
from auditor.testing.generate import Style, random_log

GAMES = ("scotch_whist", "all_fours")


def _suits_of(hold: int) -> int:
    return sum(1 << s for s in range(4) if hold & SUIT_MASK[s])


def _random_hold(rng: np.random.Generator, size: int) -> int:
    hold = 0
    for c in rng.choice(52, size=size, replace=False).tolist():
        hold |= 1 << c
    return hold


# ---------------------------------------------------------------- the trick


@pytest.mark.parametrize("game", GAMES)
def test_the_kernels_trick_order_is_the_rule(game):
    """Every card against every lead and trump: the kernel's key is `legal.trick_key`; no card is -1."""
    af = game == "all_fours"
    for trump in range(4):
        for lead in range(4):
            first = np.full(52, lead * 13 + 3, np.uint8)
            tricks = np.stack([first, np.arange(52, dtype=np.uint8), np.full(52, kernel.NOCARD, np.uint8)])[None]
            key = kernel.trick_keys(tricks, np.full(52, trump, np.int8), af)
            assert key[0, 1].tolist() == [trick_key(game, c, lead, trump) for c in range(52)]
            assert set(key[0, 0].tolist()) == {trick_key(game, lead * 13 + 3, lead, trump)}
            assert set(key[0, 2].tolist()) == {-1}


@pytest.mark.parametrize("game", GAMES)
def test_the_kernels_trick_winners_are_the_rule(game):
    """Random tricks of 2 to 9 cards (cards may repeat): the kernel's winning position is `legal.trick_winner`."""
    rng = np.random.default_rng(3)
    for P in range(2, 10):
        N = 4000
        tricks = rng.integers(0, 52, size=(1, P, N)).astype(np.uint8)
        trump = rng.integers(0, 4, size=N).astype(np.int8)
        pos = kernel.trick_winners(tricks, trump, game == "all_fours")
        want = [trick_winner(game, tricks[0, :, i].tolist(), int(trump[i])) for i in range(N)]
        assert pos[0].tolist() == want


def test_trick_order_as_the_rules_say():
    """A trump beats the suit led, which beats a discard; the Scotch Whist Jack of trumps is above the Ace."""
    ah, jh, kh, ad, td, as_ = 12 + 13, 9 + 13, 11 + 13, 12 + 26, 8 + 26, 12
    assert trick_winner("scotch_whist", [ah, jh], 1) == 1
    assert trick_winner("all_fours", [ah, jh], 1) == 0
    assert trick_winner("scotch_whist", [td, ad, 13], 1) == 2  # the Six of trumps takes the Ace led
    assert trick_winner("scotch_whist", [td, as_], 1) == 0  # a discard never wins
    assert beats("scotch_whist", jh, ah, 1) and not beats("all_fours", jh, ah, 1)
    assert beats("all_fours", kh, ah, 2) is False and beats("all_fours", 13, ad, 1)
    for game in GAMES:
        for r in range(13):
            assert trick_key(game, 13 + r, 0, 1) == 32 + trump_strength(game, r)


@pytest.mark.parametrize("game", GAMES)
def test_beats_is_the_trick_winner_of_two_cards(game):
    """`beats(card, winning)` says whether `card` played after `winning` wins a two-card trick."""
    for trump in range(4):
        for w in range(52):
            for c in range(52):
                if c != w:
                    assert beats(game, c, w, trump) == (trick_winner(game, [w, c], trump) == 1)


def test_seats_of_a_trick():
    L4 = layout(resolve("scotch_whist", "foster"), 4, 0)
    assert trick_size(L4, True) == 4 and seats_of_trick(L4, 2, 4, True) == [2, 3, 0, 1]
    L5 = layout(resolve("scotch_whist", "russian"), 5, 0)  # the eldest (seat 1) plays two cards at his turn
    assert trick_size(L5, False) == 5 and trick_size(L5, True) == 6
    assert seats_of_trick(L5, 3, 6, True) == [3, 4, 0, 1, 1, 2]
    assert seats_of_trick(L5, 3, 5, False) == [3, 4, 0, 1, 2]


# ---------------------------------------------------------------- follow suit


@pytest.mark.parametrize("game,must", [("scotch_whist", False), ("scotch_whist", True), ("all_fours", False)])
def test_the_forms_of_the_follow_suit_rule_are_legal_mask(game, must):
    """`legal_suits` is `legal_mask` on suits; `revoke_kind` is None exactly on the legal cards and names the suit
    held; `shown_voids` names exactly the suits a legal play proves absent."""
    rng = np.random.default_rng(7)
    for _ in range(3000):
        hold = _random_hold(rng, int(rng.integers(1, 14)))
        lead = int(rng.integers(0, 4))
        trump = int(rng.integers(0, 4))
        legal = legal_mask(game, hold, lead, trump, must)
        ls = legal_suits(game, _suits_of(hold), lead, trump, must)
        assert legal == hold & sum(SUIT_MASK[s] for s in range(4) if (ls >> s) & 1)
        for c in cards_of(hold):
            kind = revoke_kind(game, hold, c, lead, trump, must)
            assert (kind is None) == bool((legal >> c) & 1)
            if kind == "lead":
                assert hold & SUIT_MASK[lead]
            elif kind == "trump":
                assert must and not hold & SUIT_MASK[lead] and hold & SUIT_MASK[trump]
            if kind is None:
                voids = shown_voids(game, c // 13, lead, trump, must)
                assert not hold & sum(SUIT_MASK[s] for s in range(4) if (voids >> s) & 1)
        assert revoke_kind(game, hold, cards_of(hold)[0], None, trump, must) is None
    # and no suit more: for each suit not shown void, a hand holding it beside the card plays the card legally
    for suit in range(4):
        for lead in range(4):
            for trump in range(4):
                voids = shown_voids(game, suit, lead, trump, must)
                for x in range(4):
                    if not (voids >> x) & 1:
                        hold = (1 << (suit * 13)) | (1 << (x * 13 + (1 if x == suit else 0)))
                        assert (legal_mask(game, hold, lead, trump, must) >> (suit * 13)) & 1


# ---------------------------------------------------------------- the kernel's revokes


def _revokes_by_the_rule(d, plays: list[tuple[int, int, int]], trump: int) -> list[tuple[int, int]]:
    """The revokes of a complete play judged with `legal.revoke_kind`, each seat holding in each trick the cards it
    plays from then to the end of the set."""
    R = d.ruleset
    L = layout(R, d.n, d.dealer)
    n_tricks = max(k for k, _, _ in plays) + 1
    per_set = L.tricks_per_set if d.game == "scotch_whist" else (n_tricks,)
    set_of = [j for j, cnt in enumerate(per_set) for _ in range(cnt)]
    must = R.switches.get("void_rule") == "must_trump_if_able"
    tricks: dict[int, list[tuple[int, int]]] = {}
    for k, s, c in plays:
        tricks.setdefault(k, []).append((s, c))
    out = []
    for k in range(n_tricks):
        lead = tricks[k][0][1] // 13
        two_card = len(tricks[k]) == d.n + 1
        for p, (s, c) in enumerate(tricks[k]):
            if p == 0 or (two_card and s == L.extra_card_seat):
                continue
            hold = 0
            for k2, s2, c2 in plays:
                if s2 == s and k2 >= k and set_of[k2] == set_of[k]:
                    hold |= 1 << c2
            if revoke_kind(d.game, hold, c, lead, trump, must) is not None:
                out.append((k + 1, s))
    return out


@pytest.mark.parametrize("game,preset,n,options", [
    ("scotch_whist", "foster", 4, {}), ("scotch_whist", "foster", 5, {"void_rule": "must_trump_if_able"}),
    ("scotch_whist", "foster", 3, {}), ("scotch_whist", "foster", 2, {"set_leader": "eldest"}),
    ("scotch_whist", "russian", 5, {}), ("scotch_whist", "foster", 6, {"void_rule": "must_trump_if_able"}),
    ("all_fours", "foster", 2, {}), ("all_fours", "foster", 3, {"after_run": "keep_all"}),
    ("all_fours", "foster", 4, {}),
])
def test_the_kernels_revokes_are_the_rule(game, preset, n, options):
    """Legal play with many revokes: each revoke the kernel finds (in bulk, from the cards played later) is a play
    that `legal.revoke_kind` calls a revoke, and it finds every one."""
    rng = np.random.default_rng(n * 7 + len(options))
    recs = random_log(rng, 3 if game == "scotch_whist" else 10, game=game, preset=preset, n=n, options=options,
                      style=Style(revoke_rate=0.3))
    deals = [validate(r, f"g:{i}", 0, i) for i, r in enumerate(recs, 1)]
    results, stats = replay_batch(deals)
    assert stats["kernel"] == len(deals)
    seen = 0
    for d, r in zip(deals, results, strict=True):
        if not r.plays:
            continue  # a thrown-in All Fours deal
        want = _revokes_by_the_rule(d, r.plays, r.trump)
        assert r.revokes == want, d.source
        seen += len(want)
    assert seen > 5
