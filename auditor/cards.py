"""Cards as small ints, hands as bitmasks; `Card` and `Suit` value types for the edges.

Encoding: ``card = suit * 13 + rank`` with ranks ``0..12`` for ``2..A`` and suits ``s h d c`` = ``0..3``.
A hand is an int bitmask with bit ``card`` set (fits a uint64). ``Card`` and ``Suit`` are ``int`` subclasses
whose ``repr`` evaluates back to an equal value: ``Card('Ts')``, ``Suit('h')``.
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "23456789TJQKA"
SUITS = "shdc"
N_CARDS = 52

_SUIT_ALIASES = {
    "s": 0, "h": 1, "d": 2, "c": 3,
    "♠": 0, "♥": 1, "♦": 2, "♣": 3,
    "♤": 0, "♡": 1, "♢": 2, "♧": 3,
}
_RANK_ALIASES = {r: i for i, r in enumerate(RANKS)} | {"10": 8, "t": 8, "j": 9, "q": 10, "k": 11, "a": 12}


class Suit(int):
    """A suit, ``0..3`` for ``s h d c``. ``Suit('h') == 1``; ``repr`` round-trips."""

    __slots__ = ()

    def __new__(cls, value: int | str) -> "Suit":
        if isinstance(value, str):
            key = value.strip().lower()
            if key not in _SUIT_ALIASES:
                raise ValueError(f"not a suit: {value!r}")
            return super().__new__(cls, _SUIT_ALIASES[key])
        if not 0 <= int(value) < 4:
            raise ValueError(f"suit index out of range: {value!r}")
        return super().__new__(cls, int(value))

    def __repr__(self) -> str:
        return f"Suit({SUITS[self]!r})"

    def __str__(self) -> str:
        return SUITS[self]


class Card(int):
    """A card, ``suit * 13 + rank``. ``Card('Ts')``, ``Card('10♠')`` and ``Card(8)`` are equal; ``repr`` round-trips."""

    __slots__ = ()

    def __new__(cls, value: int | str) -> "Card":
        if isinstance(value, str):
            code = parse_card(value)
            if code is None:
                raise ValueError(f"not a card: {value!r}")
            return super().__new__(cls, code)
        if not 0 <= int(value) < N_CARDS:
            raise ValueError(f"card index out of range: {value!r}")
        return super().__new__(cls, int(value))

    @property
    def rank(self) -> int:
        return int(self) % 13

    @property
    def suit(self) -> Suit:
        return Suit(int(self) // 13)

    def __repr__(self) -> str:
        return f"Card({card_str(self)!r})"

    def __str__(self) -> str:
        return card_str(self)


def parse_card(text: object) -> int | None:
    """Lenient card parser: ``Ts``, ``10s``, ``tS``, ``T♠``, ``♠T``. Returns the int code or None."""
    if not isinstance(text, str):
        return None
    code = _CANONICAL.get(text)  # fast path: canonical spellings ("Ts"), what writers emit
    if code is not None:
        return code
    s = text.strip()
    if len(s) < 2 or len(s) > 3:
        return None
    # rank then suit
    r, su = s[:-1], s[-1]
    rk = _RANK_ALIASES.get(r.upper() if r.upper() in _RANK_ALIASES else r.lower())
    st = _SUIT_ALIASES.get(su.lower())
    if rk is None or st is None:
        # suit symbol then rank
        su, r = s[0], s[1:]
        if su in "♠♥♦♣♤♡♢♧":
            rk = _RANK_ALIASES.get(r.upper() if r.upper() in _RANK_ALIASES else r.lower())
            st = _SUIT_ALIASES.get(su)
    if rk is None or st is None:
        return None
    return st * 13 + rk


def parse_cards(texts: Iterable[object]) -> list[int] | None:
    """Every card of `texts` parsed (`parse_card`); None when some card does not parse."""
    out: list[int] = []
    for text in texts:
        code = parse_card(text)
        if code is None:
            return None
        out.append(code)
    return out


def card_str(code: int) -> str:
    return RANKS[code % 13] + SUITS[code // 13]


CARD_STR = [card_str(c) for c in range(N_CARDS)]
_CANONICAL = {text: code for code, text in enumerate(CARD_STR)}


def suit_of(code: int) -> int:
    return code // 13


def rank_of(code: int) -> int:
    return code % 13


def make(rank_char: str, suit_char: str) -> int:
    return SUITS.index(suit_char) * 13 + RANKS.index(rank_char)


SUIT_MASK = [((1 << 13) - 1) << (13 * s) for s in range(4)]


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def cards_of(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


# Rank indexes
R6, R10, RJ, RQ, RK, RA = 4, 8, 9, 10, 11, 12
