"""The exact, rule-derived nulls of the dealing tests, checked against enumeration and simulation."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest

from auditor import dealgen
from auditor.cards import RJ, cards_of, suit_of
from auditor.dealing import deal, shuffled_pack
from auditor.detectors.af_dealer_jack import dealt_probs, trial_deals
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


# ---------------------------------------------------------------- af_dealer_jack (issue 14)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_af_dealer_jack_null_matches_enumeration(n):
    """For every turn-up card c and every deck position k of the Jack of c's suit (uniform over the positions other
    than the turn-up's under a uniform shuffle), dealt by `auditor.dealing.deal`: P(the Jack is in relative seat r's
    dealt hand | turn-up c) = hand size / 51 exactly, whatever c is (not that Jack), as `dealt_probs` gives."""
    dealer = n - 1
    L = layout(AF, n, dealer)
    pack = cards_of(L.pack)
    P = len(pack)
    cfg = config(AF, n)
    for c in pack:
        jack = suit_of(c) * 13 + RJ
        if jack == c:
            continue
        hits = [0] * n
        fill = [x for x in pack if x not in (c, jack)]
        positions = [k for k in range(P) if k != L.turnup_index]
        for k in positions:
            deck = list(fill)
            for s_ in sorted({L.turnup_index, k}):
                deck.insert(s_, None)
            deck[L.turnup_index] = c
            deck[k] = jack
            d = deal(L, deck)
            for s in range(n):
                if jack in d.hands[s]:
                    hits[(s - dealer) % n] += 1
        for rel in range(n):
            assert Fraction(hits[rel], len(positions)) == Fraction(cfg.hand_sizes[rel], P - 1), (n, c, rel)
    # the detector's table of the same null, on a dealing-only season of this size
    s = dealgen.season("all_fours/foster", n, n, 20, np.random.default_rng(n))
    f = s.facts()
    idx = trial_deals(f)
    got = dealt_probs(f, idx, RJ)[:, :n]
    assert np.allclose(got, 6 / 51)
    assert (f.turnup[idx] % 13 != RJ).all() and len(idx) == int((f.turnup % 13 != RJ).sum())


def _af_begging_deals(N, rng, n=4):
    """N shuffled All Fours deals at n players with begging that depends on the hands (the eldest stands when he
    holds the Jack of the turned suit, else begs; the dealer then gives when he holds it, else runs): per deal, the
    Jack of the first turn-up's suit in the dealer's dealt hand, the turn-up a Jack of its own suit, and a run."""
    L = layout(AF, n, 0)
    out = np.zeros((N, 3), bool)
    for i in range(N):
        d = deal(L, shuffled_pack(L, rng))
        jack = suit_of(d.turn_up) * 13 + RJ
        mine = jack in d.hands[L.dealer]
        stands = jack in d.hands[L.eldest] or rng.random() < 0.5
        out[i] = (mine, jack == d.turn_up, (not stands) and not mine)
    return out


def _af_bias_check(N, seed):
    rng = np.random.default_rng(seed)
    x = _af_begging_deals(N, rng)
    trial = ~x[:, 1]
    k, m = int(x[trial, 0].sum()), int(trial.sum())
    p = 6 / 51
    assert abs(k - m * p) <= 4 * np.sqrt(m * p * (1 - p)), (k / m, p)  # every deal: exact, whatever the begging
    # the deals without a run alone are biased: a dealer holding the Jack never runs here, so leaving out the
    # deals that ran the cards (as a log without their dealt hands would) raises the dealer's rate
    keep = trial & ~x[:, 2]
    k2, m2 = int(x[keep, 0].sum()), int(keep.sum())
    assert k2 / m2 > p + 4 * np.sqrt(p * (1 - p) / m2), (k2 / m2, p)


def test_af_dealer_jack_null_holds_whatever_the_begging():
    _af_bias_check(6000, 31)


@pytest.mark.slow
def test_af_dealer_jack_null_holds_whatever_the_begging_large():
    _af_bias_check(100_000, 32)
