"""A "perft" table for the legal-play rules: for fixed positions the exact number of legal cards, and for fixed
deals the number of legal play sequences of the first k tricks, counted by brute force with the engine's legal
plays and trick winners (auditor.legal), checked against numbers worked out by hand.

Rules (rules.md A.4, B.5): Scotch Whist: follow suit if able; void: trump or discard (`must_trump_if_able`: trump
if able). All Fours: follow suit or trump if able to follow; void: anything; a trump lead is followed with trumps.
"""

from __future__ import annotations

import pytest

from auditor.cards import SUITS, cards_of, mask_of, parse_card
from auditor.legal import legal_mask, trick_winner


def _mask(text: str) -> int:
    return mask_of(parse_card(c) for c in text.split())


def _suit(ch: str) -> int:
    return SUITS.index(ch)


SW, AF = "scotch_whist", "all_fours"

# (game, hand, suit led or None, trump, must_trump, legal count, why)
POSITIONS = [
    (SW, "As Ks 6h 7h Td", None, "h", False, 5, "the leader plays anything"),
    (SW, "As Ks 6h 7h Td", "s", "h", False, 2, "follow suit: As Ks"),
    (SW, "As Ks 6h 7h Td", "c", "h", False, 5, "void: trump or discard, any card"),
    (SW, "As Ks 6h 7h Td", "c", "h", True, 2, "void, must trump if able: 6h 7h"),
    (SW, "As Ks Td", "c", "h", True, 3, "void and no trump: any card"),
    (SW, "Td 6h 7h", "d", "h", False, 1, "one card of the suit led: it must be played"),
    (SW, "Td 6h 7h", "h", "h", False, 2, "trumps led: follow with a trump"),
    (SW, "", "s", "h", False, 0, "an empty hand has no play"),
    (AF, "As Ks 2h 3h Td", "s", "h", False, 4, "follow or trump: As Ks 2h 3h, not Td"),
    (AF, "As Ks 2h 3h Td", "c", "h", False, 5, "void: anything"),
    (AF, "As Ks 2h 3h Td", "h", "h", False, 2, "trumps led: a trump is following suit"),
    (AF, "As Ks Td", "h", "h", False, 3, "trumps led, no trump: anything"),
    # AF-6: two small trumps and the Ten of a plain suit; the A and K of that suit are led: he may trump (or play
    # the Ten); once the trumps are gone and the Q is led, the Ten is his only card of the suit: he must play it
    (AF, "2h 3h Tc", "c", "h", False, 3, "AF-6: may trump the Ace: 2h 3h Tc"),
    (AF, "2h 3h Tc 4d", "c", "h", False, 3, "AF-6: 4d would be a revoke"),
    (AF, "Tc 4d", "c", "h", False, 1, "AF-6: the Queen led, no trump left: the Ten"),
]


@pytest.mark.parametrize("game,hand,lead,trump,must,count,why", POSITIONS, ids=[p[-1] for p in POSITIONS])
def test_legal_play_counts(game, hand, lead, trump, must, count, why):
    legal = legal_mask(game, _mask(hand), None if lead is None else _suit(lead), _suit(trump), must)
    assert bin(legal).count("1") == count, why
    assert legal & ~_mask(hand) == 0


def perft(game: str, hands: list[int], leader: int, trump: int, k: int, must_trump: bool = False) -> int:
    """Legal play sequences of the next k tricks (the winner of each trick leads the next)."""
    if k == 0:
        return 1
    n = len(hands)
    total = 0

    def play(pos: int, lead_suit: int | None, cards: list[int], hs: list[int]) -> None:
        nonlocal total
        seat = (leader + pos) % n
        for c in cards_of(legal_mask(game, hs[seat], lead_suit, trump, must_trump)):
            nh = list(hs)
            nh[seat] &= ~(1 << c)
            trick = cards + [c]
            if pos + 1 < n:
                play(pos + 1, c // 13 if lead_suit is None else lead_suit, trick, nh)
            else:
                winner = (leader + trick_winner(game, trick, trump)) % n
                total += perft(game, nh, winner, trump, k - 1, must_trump)

    play(0, None, [], hands)
    return total


# P2: Scotch Whist, 2 players, hearts trumps. Seat 0 leads and holds As Ks Qs Ah Kh Qh; seat 1 holds Js Ts 9s
# Ac Kc Qc. Seat 0 wins every trick (higher spades; trumps), so he always leads. State (a, b, c, d): seat 0 has
# a spades, b hearts; seat 1 c spades, d clubs. One trick: a * c (spade led, spade followed) + b * (c + d)
# (heart led, seat 1 void: anything).
#   k=1: 3*3 + 3*6 = 27
#   k=2: spade trick (9 ways) -> (2,3,2,3): 2*2 + 3*5 = 19;  heart led, spade played (9) -> (3,2,2,3): 3*2 + 2*5 =
#        16;  heart led, club played (9) -> (3,2,3,2): 3*3 + 2*5 = 19.  9*19 + 9*16 + 9*19 = 486
#   k=3: N2(2,3,2,3) = 4*N1(1,3,1,3) + 6*N1(2,2,1,3) + 9*N1(2,2,2,2) = 4*13 + 6*10 + 9*12 = 220
#        N2(3,2,2,3) = 6*N1(2,2,1,3) + 4*N1(3,1,1,3) + 6*N1(3,1,2,2) = 6*10 + 4*7 + 6*10 = 148
#        N2(3,2,3,2) = 9*N1(2,2,2,2) + 6*N1(3,1,2,2) + 4*N1(3,1,3,1) = 9*12 + 6*10 + 4*13 = 220
#        9 * (220 + 148 + 220) = 5292
P2 = (["As Ks Qs Ah Kh Qh", "Js Ts 9s Ac Kc Qc"], "h")

# P3: All Fours, 2 players, hearts trumps. Seat 0 (leads): As Ks Qs Jc Tc 9c; seat 1: 2s 3s 2h 3h 2d 3d.
#   k=1: spade led (3): seat 1 follows (2) or trumps (2): 12; club led (3): seat 1 void, anything (6): 18. = 30
#   k=2, after each kind of first trick (ways x next-trick count):
#     spade followed by spade (6 ways), seat 0 leads; seat 1 has 1 sp 2 h 2 d: 2*(1+2) + 3*5 = 21   -> 126
#     spade trumped (6), seat 1 leads; seat 0 has 2 sp 3 cl: sp led 2*2, h led 1*5 (void), d led 2*5 = 19 -> 114
#     club, seat 1 trumps (6), seat 1 leads; seat 0 3 sp 2 cl: 2*3 + 1*5 + 2*5 = 21                  -> 126
#     club, seat 1 plays a spade (6), seat 0 leads; seat 1 1 sp 2 h 2 d: 3*(1+2) + 2*5 = 19          -> 114
#     club, seat 1 plays a diamond (6), seat 0 leads; seat 1 2 sp 2 h 1 d: 3*(2+2) + 2*5 = 22        -> 132
#     126 + 114 + 126 + 114 + 132 = 612
P3 = (["As Ks Qs Jc Tc 9c", "2s 3s 2h 3h 2d 3d"], "h")

# The same hands under Scotch Whist's rule (follow suit; trumping only when void): spade led 3*2, club led 3*6
P3_SW = 3 * 2 + 3 * 6  # 24
# ... and with must_trump_if_able: club led, seat 1 void holding trumps must trump: 3*2 + 3*2 = 12
P3_SW_MUST = 3 * 2 + 3 * 2

# D-SW-1's deal (fixtures_sw.DSW1), 4 players, hearts trumps, seat 0 leads. Cards per suit (s, c, h, d):
# seat 0 2 2 2 3; seat 1 3 2 2 2; seat 2 2 3 2 2; seat 3 2 2 3 2. First trick: each lead suit gives
# (seat 0's cards of it) * (the others' cards of it):
#   spades 2 * 3*2*2 = 24; clubs 2 * 2*3*2 = 24; hearts 2 * 2*2*3 = 24; diamonds 3 * 2*2*2 = 24. = 96
DSW1_HANDS = ["As Ts Ac 8h Qd Kh 7c 7d 6d", "Ks 9s Kc 9h Jd Ah Tc Td 6s", "Qs 8s Qc Jh Ad 7h 9c 9d 6c",
              "Js 7s Jc Th Kd Qh 8c 8d 6h"]

# Seat 0 holds only spades, seat 1 only hearts, clubs trumps: seat 0 always leads and wins; every trick is
# (cards left)^2: 36, 36*25 = 900, 900*16 = 14400
ONE_SUIT_EACH = (["As Ks Qs Js Ts 9s", "Ah Kh Qh Jh Th 9h"], "c")

SEQUENCES = [
    (SW, P2, 1, False, 27),
    (SW, P2, 2, False, 486),
    (SW, P2, 3, False, 5292),
    (AF, P3, 1, False, 30),
    (AF, P3, 2, False, 612),
    (SW, P3, 1, False, P3_SW),
    (SW, P3, 1, True, P3_SW_MUST),
    (SW, (DSW1_HANDS, "h"), 1, False, 96),
    (SW, ONE_SUIT_EACH, 1, False, 36),
    (SW, ONE_SUIT_EACH, 2, False, 900),
    (SW, ONE_SUIT_EACH, 3, False, 14400),
]


@pytest.mark.parametrize("game,deal,k,must,expected", SEQUENCES)
def test_play_sequences(game, deal, k, must, expected):
    hands, trump = deal
    assert perft(game, [_mask(h) for h in hands], 0, _suit(trump), k, must) == expected


def test_scotch_whist_jack_of_trumps_is_the_best_card():
    # hearts trumps: Jh beats Ah in Scotch Whist (A.1), Ah beats Jh in All Fours (B.1)
    trick = [parse_card("Ah"), parse_card("Jh")]
    assert trick_winner(SW, trick, _suit("h")) == 1
    assert trick_winner(AF, trick, _suit("h")) == 0
    # a plain suit Jack is below the Ace; the highest trump beats the highest card of the suit led
    assert trick_winner(SW, [parse_card("Jd"), parse_card("Ad"), parse_card("6h")], _suit("h")) == 2
    # a discard of a third suit never wins
    assert trick_winner(SW, [parse_card("7d"), parse_card("As")], _suit("h")) == 0
