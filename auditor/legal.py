"""The rules of the play, each written once: who plays in which order, what may be played, who wins the trick.

Follow suit (rules.md A.4 and B.5), as one function on bitmasks (`legal_mask`):
- Scotch Whist: follow suit if able; void, trump or discard (`void_rule = must_trump_if_able`: trump if able).
- All Fours: follow suit or trump if able to follow; void, anything.
`revoke_kind`, `shown_voids` and `legal_suits` are that rule seen from the referee, from the other players and on
suits alone; they are computed from `legal_mask`, never restated.

The trick (rules.md A.4 and B.5): the highest trump wins, else the highest card of the suit led (`trick_key`, with
`rules.trump_strength`: the Scotch Whist Jack of trumps above the Ace); `trick_winner` and `beats` are that order.
The seats play from the leader round the table; in the Russian five-player last trick the eldest plays two cards at
his turn (`seats_of_trick`, `trick_size`).

The replay's reference engine, the simulator, the test generators and `dealgen` call these functions. The batch
kernel (`auditor.fast.kernel`) and the detectors' numba walkers keep vectorised forms of the same rules, held equal
to these by tests/test_replay_legal.py and the differential tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .cards import SUIT_MASK
from .rules import Layout, trump_strength

# ---------------------------------------------------------------- follow suit


def legal_mask(game: str, hold: int, lead_suit: int | None, trump: int, must_trump: bool = False) -> int:
    """The cards of `hold` that may be played to a trick led in `lead_suit` (None: this seat leads)."""
    if lead_suit is None or hold == 0:
        return hold
    follow = hold & SUIT_MASK[lead_suit]
    if game == "all_fours":
        return (follow | (hold & SUIT_MASK[trump])) if follow else hold
    if follow:
        return follow
    if must_trump and hold & SUIT_MASK[trump]:
        return hold & SUIT_MASK[trump]
    return hold


def revoke_kind(game: str, hold: int, card: int, lead_suit: int | None, trump: int,
                must_trump: bool = False) -> str | None:
    """Whether playing `card` out of `hold` (which holds it) breaks the follow-suit rule, and which obligation it
    breaks: "lead" (the seat held the suit led) or "trump" (void in the suit led under `must_trump_if_able`, it held
    a trump). None: the play is legal."""
    if lead_suit is None or (legal_mask(game, hold, lead_suit, trump, must_trump) >> card) & 1:
        return None
    return "lead" if hold & SUIT_MASK[lead_suit] else "trump"


@lru_cache(maxsize=None)
def shown_voids(game: str, suit: int, lead_suit: int, trump: int, must_trump: bool = False) -> int:
    """The suits (a 4-bit mask) a seat shows it holds none of when it plays a card of `suit` to a trick led in
    `lead_suit` and the play is legal: every suit one card of which, held beside the card, would have made the
    play illegal."""
    card = suit * 13
    out = 0
    for x in range(4):
        other = x * 13 + (1 if x == suit else 0)
        if not (legal_mask(game, (1 << card) | (1 << other), lead_suit, trump, must_trump) >> card) & 1:
            out |= 1 << x
    return out


@lru_cache(maxsize=None)
def legal_suits(game: str, held_suits: int, lead_suit: int | None, trump: int, must_trump: bool = False) -> int:
    """`legal_mask` on suits: the suits (a 4-bit mask) that a hand holding cards of the suits `held_suits` (a 4-bit
    mask) may play from. The legal cards of a hand are its cards of these suits."""
    hold = 0
    for s in range(4):
        if (held_suits >> s) & 1:
            hold |= 1 << (13 * s)
    legal = legal_mask(game, hold, lead_suit, trump, must_trump)
    return sum(1 << s for s in range(4) if legal & SUIT_MASK[s])


# ---------------------------------------------------------------- the trick


def trick_key(game: str, card: int, lead_suit: int, trump: int) -> int:
    """The order of the cards in a trick led in `lead_suit`: a trump (32 + its `trump_strength`) beats a card of
    the suit led (16 + its rank), which beats any other card (0: a discard never wins)."""
    suit, rank = divmod(card, 13)
    if suit == trump:
        return 32 + trump_strength(game, rank)
    if suit == lead_suit:
        return 16 + rank
    return 0


def trick_winner(game: str, cards: Sequence[int], trump: int) -> int:
    """The position (in play order) of the card that wins the trick `cards`: the highest trump, else the highest
    card of the suit led; the first of equal cards (a card played twice)."""
    lead = cards[0] // 13
    best, best_key = 0, trick_key(game, cards[0], lead, trump)
    for i in range(1, len(cards)):
        key = trick_key(game, cards[i], lead, trump)
        if key > best_key:
            best, best_key = i, key
    return best


def beats(game: str, card: int, winning: int, trump: int) -> bool:
    """Whether `card` takes the trick from `winning`, the card winning it so far (of the suit led, or a trump)."""
    lead = winning // 13
    return trick_key(game, card, lead, trump) > trick_key(game, winning, lead, trump)


def trick_size(L: Layout, last: bool) -> int:
    """The cards of a trick: one per seat; the Russian five-player last trick has the eldest's two."""
    return L.n + 1 if last and L.extra_card_seat is not None else L.n


def seats_of_trick(L: Layout, leader: int, size: int, last: bool) -> list[int]:
    """The seats in play order of a trick of `size` cards led by `leader`; in the Russian five-player last trick
    (`last`, n + 1 cards) the eldest plays two cards at his turn."""
    n = L.n
    seats = [(leader + i) % n for i in range(n)]
    if last and L.extra_card_seat is not None and size == n + 1:
        i = seats.index(L.extra_card_seat)
        seats.insert(i + 1, L.extra_card_seat)
    return seats
