"""The exact, rule-derived nulls of the dealing tests, checked against enumeration and simulation."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest

from auditor.cards import RJ, cards_of, suit_of
from auditor.dealing import deal, shuffled_pack
from auditor.facts import TURNUP, UNDEALT, config, held_prob, honours_held_pmf, location_probs
from auditor.rules import layout, resolve

FOSTER = resolve("scotch_whist", "foster")
RUSSIAN = resolve("scotch_whist", "russian")
AF = resolve("all_fours", "foster")

CASES = [(FOSTER, n) for n in range(2, 9)] + [(RUSSIAN, n) for n in range(2, 7)] + [
    (FOSTER.with_options({"odd_pack": "show_36th_dead"}), 5),
    (FOSTER.with_options({"odd_pack": "remove_club_six"}), 7),
    (FOSTER.with_options({"odd_pack": "turnup_36th_to_eldest"}), 7),
    (FOSTER.with_options({"two_three_player_deal_order": "packet_per_hand"}), 2),
    (AF, 2), (AF, 3), (AF, 4),
]


def test_four_players_eleven_and_eight_over_thirty_five():
    cfg = config(FOSTER, 4)
    assert held_prob(cfg, 0, RJ) == Fraction(11, 35)
    for rel in (1, 2, 3):
        assert held_prob(cfg, rel, RJ) == Fraction(8, 35)


def _enumerate_holder(rules, n, dealer, rank):
    """P(seat s is dealt the trump card of `rank`) by enumerating every (turn-up card, position of the trump card)
    pair, dealing each arrangement with `auditor.dealing.deal` (the inverse of the replay's deck check)."""
    L = layout(rules, n, dealer)
    pack = cards_of(L.pack)
    P = len(pack)
    out = [Fraction(0)] * (n + 1)  # last entry: in no hand
    for c in pack:
        card = suit_of(c) * 13 + rank
        if card not in pack:
            continue
        fill = [x for x in pack if x not in (c, card)]
        positions = [L.turnup_index] if card == c else [k for k in range(P) if k != L.turnup_index]
        for k in positions:
            deck = list(fill)
            slots = sorted({L.turnup_index, k})
            for s_ in slots:
                deck.insert(s_, None)
            deck[L.turnup_index] = c
            deck[k] = card
            hands = deal(L, deck).hands
            holder = next((s for s in range(n) if card in hands[s]), n)
            out[holder] += Fraction(1, P) / len(positions)
    return out


@pytest.mark.parametrize("rules,n", CASES, ids=lambda x: getattr(x, "preset", x))
def test_null_matches_enumeration_for_every_configuration(rules, n):
    dealer = n - 1  # not seat 0: the nulls are relative to the dealer
    cfg = config(rules, n)
    for rank in (RJ, 12, 8):
        ref = _enumerate_holder(rules, n, dealer, rank)
        for s in range(n):
            rel = (s - dealer) % n
            assert held_prob(cfg, rel, rank) == ref[s], (rules.preset, n, s, rank)
        lp = location_probs(cfg)
        total = sum(lp[c][rank] for c in range(len(lp)))
        assert total == 1


def test_jack_may_be_out_of_play():
    # Russian, 2 players: 10 each, 16 cards aside; the turn-up is the dealer's 10th card
    cfg = config(RUSSIAN, 2)
    assert held_prob(cfg, 0, RJ) == Fraction(4, 36) + Fraction(32, 36) * Fraction(9, 35)
    assert held_prob(cfg, 1, RJ) == Fraction(32, 36) * Fraction(10, 35)
    assert location_probs(cfg)[UNDEALT][RJ] == Fraction(32, 36) * Fraction(16, 35)
    # Russian, 5 players: the 36th card is the turn-up and goes to the eldest
    cfg5 = config(RUSSIAN, 5)
    assert cfg5.turnup_owner == 1
    assert held_prob(cfg5, 1, RJ) == Fraction(4, 36) + Fraction(32, 36) * Fraction(7, 35)
    assert held_prob(cfg5, 0, RJ) == Fraction(32, 36) * Fraction(7, 35)
    # All Fours: the turn-up is in no hand
    cfga = config(AF, 4)
    assert held_prob(cfga, 0, RJ) == Fraction(48, 52) * Fraction(6, 51)
    assert location_probs(cfga)[TURNUP][RJ] == Fraction(1, 13)


@pytest.mark.parametrize("rules,n", [(FOSTER, 4), (FOSTER, 5), (RUSSIAN, 5), (FOSTER, 3), (AF, 3)],
                         ids=lambda x: getattr(x, "preset", x))
def test_null_matches_simulation(rules, n):
    """Uniform shuffles dealt by `auditor.dealing`: every seat's rate of the trump Jack within 4 sigma."""
    rng = np.random.default_rng(11)
    dealer = 1
    L = layout(rules, n, dealer)
    cfg = config(rules, n)
    N = 20000
    counts = np.zeros(n)
    for _ in range(N):
        d = deal(L, shuffled_pack(L, rng))
        jack = suit_of(d.turn_up) * 13 + RJ
        for s in range(n):
            if jack in d.hands[s]:
                counts[s] += 1
    for s in range(n):
        p = float(held_prob(cfg, (s - dealer) % n, RJ))
        assert abs(counts[s] - N * p) <= 4 * np.sqrt(N * p * (1 - p)), (s, counts[s] / N, p)


def test_honours_pmf_against_simulation_and_mean():
    ranks = (8, 9, 10, 11, 12)
    for rules, n in [(FOSTER, 4), (RUSSIAN, 2), (AF, 4)]:
        cfg = config(rules, n)
        pmf = honours_held_pmf(cfg, 0, ranks)
        assert sum(pmf) == 1
        mean = sum(k * w for k, w in enumerate(pmf))
        assert mean == sum(held_prob(cfg, 0, r) for r in ranks)
    # a direct hypergeometric check at four players: the turn-up (a trump by definition) is an honour with
    # probability 20/36; then the dealer holds it and 0..4 of the other four among his 8 of the remaining 35
    cfg = config(FOSTER, 4)
    pmf = honours_held_pmf(cfg, 0, ranks)
    p_hon = Fraction(20, 36)
    exp0 = (1 - p_hon) * Fraction(comb(30, 8), comb(35, 8))
    assert pmf[0] == exp0
    # all five: the turn-up is one and the other four are among his 8, or it is not and all five are
    assert pmf[5] == p_hon * Fraction(comb(31, 4), comb(35, 8)) + (1 - p_hon) * Fraction(comb(30, 3), comb(35, 8))


def test_layouts_are_rotation_equivariant():
    for rules, n in CASES:
        base = layout(rules, n, 0)
        for d in range(n):
            L = layout(rules, n, d)
            assert [None if s is None else (s - d) % n for s in L.deal_seat] == list(base.deal_seat)
            assert L.turnup_index == base.turnup_index
