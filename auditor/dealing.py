"""Dealing a shuffled deck under the rules: the inverse of the replay's deck check.

`deal(layout, deck)` gives each seat's cards in the order received, the turn-up and the shown card.
`af_run(deck, pos, n, eldest)` deals one All Fours run of the cards (3 each from the eldest, then the turn-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from .cards import cards_of
from .rules import Layout


@dataclass(frozen=True)
class Dealt:
    hands: list[list[int]]  # per seat, in the order received
    turn_up: int
    shown: int | None
    next_pos: int  # All Fours: deck index after the turn-up (where a run starts)


def shuffled_pack(layout: Layout, rng: np.random.Generator) -> list[int]:
    """A uniformly shuffled pack of the cards this layout uses."""
    cards = np.array(cards_of(layout.pack), dtype=np.int64)
    return [int(c) for c in rng.permutation(cards)]


def deal(layout: Layout, deck: list[int]) -> Dealt:
    hands: list[list[int | None]] = [[None] * k for k in layout.hand_sizes]
    for k, (seat, slot) in enumerate(zip(layout.deal_seat, layout.deal_slot, strict=True)):
        if seat is not None and slot is not None:  # a dealt card has both (seat and slot are None together)
            hands[seat][slot] = deck[k]
    shown = deck[layout.shown_index] if layout.shown_index is not None else None
    # every slot is filled: the layout gives seat s the slots 0 .. hand_sizes[s] - 1
    dealt = cast(list[list[int]], [list(h) for h in hands])
    return Dealt(dealt, deck[layout.turnup_index], shown, layout.turnup_index + 1)


def af_run(deck: list[int], pos: int, n: int, eldest: int) -> tuple[list[list[int]], int | None, int]:
    """One run of the cards from deck index `pos`: (cards per seat, new turn-up or None if the pack ran out,
    next index)."""
    cards: list[list[int]] = [[] for _ in range(n)]
    if pos + 3 * n + 1 > len(deck):
        return cards, None, pos
    for off in range(n):
        s = (eldest + off) % n
        cards[s] = deck[pos:pos + 3]
        pos += 3
    return cards, deck[pos], pos + 1
