"""Cards: the lenient parser of deal-log.md (10/T, case, suit symbols), the canonical form, the int encoding."""

from __future__ import annotations

import pytest

from auditor.cards import CARD_STR, Card, Suit, card_str, cards_of, mask_of, parse_card, rank_of, suit_of


@pytest.mark.parametrize("text,canon", [
    ("Ts", "Ts"), ("10s", "Ts"), ("ts", "Ts"), ("tS", "Ts"), ("T♠", "Ts"), ("♠T", "Ts"), ("10♠", "Ts"),
    ("ah", "Ah"), ("A♥", "Ah"), ("♥A", "Ah"), ("Q♦", "Qd"), ("jc", "Jc"), ("J♣", "Jc"), ("2c", "2c"),
    (" 6d ", "6d"), ("9♤", "9s"), ("K♡", "Kh"),
])
def test_lenient_spellings(text, canon):
    code = parse_card(text)
    assert code is not None and CARD_STR[code] == canon


@pytest.mark.parametrize("text", ["", "T", "1s", "11s", "Tx", "joker", "Xs", "s", None, 10, ["As"], "A♠♠",
                                  "10", "0s", "1♠"])
def test_not_cards(text):
    assert parse_card(text) is None


def test_encoding():
    assert parse_card("2s") == 0 and parse_card("As") == 12 and parse_card("2h") == 13 and parse_card("Ac") == 51
    assert all(parse_card(card_str(c)) == c for c in range(52))
    assert suit_of(parse_card("Qd")) == 2 and rank_of(parse_card("Qd")) == 10
    assert cards_of(mask_of([5, 1, 40])) == [1, 5, 40]


def test_value_types_round_trip():
    c = Card("10♥")
    assert c == Card("Th") == Card(parse_card("Th")) and str(c) == "Th"
    assert eval(repr(c)) == c and eval(repr(Suit("h"))) == Suit("♥") == 1
    assert c.rank == 8 and c.suit == Suit("h")
    with pytest.raises(ValueError):
        Card("Zz")
    with pytest.raises(ValueError):
        Card(52)
    with pytest.raises(ValueError):
        Suit("x")
