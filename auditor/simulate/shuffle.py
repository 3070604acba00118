"""Shuffles: perfect (uniform), human (Gilbert–Shannon–Reeds riffles and a cut of the gathered tricks), and
the bad shuffles of a cheating dealer.

Gilbert–Shannon–Reeds: cut the pack binomially, then drop cards from the two packets with probability
proportional to the packet sizes. Equivalently, give every position of the result a fair coin: positions with
heads take the top packet's cards in order, the rest take the bottom packet's. That form is what `riffle` uses.
"""

from __future__ import annotations

import numpy as np


def perfect(cards: list[int], rng: np.random.Generator) -> list[int]:
    return [cards[i] for i in rng.permutation(len(cards)).tolist()]


def riffle(deck: list[int], rng: np.random.Generator) -> list[int]:
    """One GSR riffle shuffle."""
    m = len(deck)
    heads = (rng.random(m) < 0.5).tolist()
    k = m - sum(heads)  # positions without heads take the top packet, so it has that many cards
    top, bottom = deck[:k], deck[k:]
    out = []
    i = j = 0
    for h in heads:
        if h:
            out.append(bottom[j])
            j += 1
        else:
            out.append(top[i])
            i += 1
    return out


def cut(deck: list[int], rng: np.random.Generator, spread: float = 0.125) -> list[int]:
    """A cut near the middle: the top packet's size ~ Normal(m/2, spread*m), at least 4 cards each packet."""
    m = len(deck)
    k = int(round(m / 2 + rng.standard_normal() * spread * m))
    k = min(max(k, 4), m - 4)
    return deck[k:] + deck[:k]


def human(gathered: list[int], riffles: int, rng: np.random.Generator, do_cut: bool = True) -> list[int]:
    """A person's shuffle: `riffles` GSR riffles of the gathered cards, then the cut."""
    deck = list(gathered)
    for _ in range(riffles):
        deck = riffle(deck, rng)
    return cut(deck, rng) if do_cut else deck
