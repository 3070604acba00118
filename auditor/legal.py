"""Legal plays: the follow-suit rules of both games as one function on bitmasks.

Scotch Whist: follow suit if able; void, trump or discard (`void_rule = must_trump_if_able`: trump if able).
All Fours: follow suit or trump if able to follow; void, anything.
"""

from __future__ import annotations

from .cards import SUIT_MASK


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
