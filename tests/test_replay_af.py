"""All Fours (Seven-Up, Foster): the worked examples of rules.md B.8 and the derived cases, replayed from
fixtures/replay with the arithmetic written out (deals in fixtures/replay/fixtures_af.py).

Counting order: turned Jack(s), the gift, the revoke penalty, High, Low, Jack, Game; stop at 7.
Pips for Game: T 10, A 4, K 3, Q 2, J 1.

Worked examples that are not replay fixtures: AF-6 is a legal-play question (tests/test_perft.py); AF-2 is a bound
(here: the deal that reaches it).
"""

from __future__ import annotations

import pytest

from conftest import counted, summary


@pytest.fixture(scope="module")
def r2(fixture_reports):
    return fixture_reports["af_2p"]


def test_a_game_to_seven(r2):
    # deal 1: High Ah seat 0; Low 2h seat 1; Jack (trick 5) seat 1; Game 9 v 15 (T 10 + A 4 + J 1) seat 1
    assert counted(r2, "af2", 1) == [1, 3]
    # deal 2 (take one, D-AF-2): gift seat 1; High Td seat 1; Low 2d seat 0; no Jack in play;
    # Game: eldest Td 10 + Qc 2 = 12 v dealer As 4 + Ks 3 + Kh 3 + Jc 1 = 11: seat 1
    assert counted(r2, "af2", 2) == [1, 1 + 1 + 1]
    # deal 3 (AF-3: two runs, 4c rejected, 8s trumps): High As, Low 2s, Jack Js, Game 22 v 0: seat 0
    assert counted(r2, "af2", 3) == [4, 0]
    # deal 4 (D-AF-1): 6-6; High first: seat 1 reaches 7 and wins; Low, Jack and Game are not counted
    assert counted(r2, "af2", 4) == [0, 1]
    assert summary(r2, "af2") == {"game_id": "af2", "deals": 4, "totals": [1 + 1 + 4 + 0, 3 + 3 + 0 + 1],
                                  "winner": 1, "ended_by": "points", "loser": None}


def test_af1_lone_jack_and_af5(r2):
    # AF-1 / AF-5: the eldest's only trump, Js, is the only trump in play: High, Low, Jack and Game (1 pip v 0)
    assert counted(r2, "af2-bunch", 2) == [0, 4]


def test_bunched_deal_scores_nothing_and_the_dealer_deals_again(r2):
    # 13 dealt + 5 runs of 7 = 48 cards, 4 left: the pack ran out; no points; deal 2 by the same dealer (no
    # dealer_rotation finding: the fixture has none)
    assert counted(r2, "af2-bunch", 1) == [0, 0]


def test_af11_two_turned_jacks(r2):
    # AF-11: Jc turned (dealer 4 + 1 = 5), the run turns Jd in a new suit (6), High Ad seat 0 (1), Low 2d
    # dealer (7): he wins; Game is never counted
    assert counted(r2, "af2-bunch", 3) == [1, 1 + 1 + 1]
    assert summary(r2, "af2-bunch")["winner"] == 1


def test_af2_five_points(r2):
    # AF-2: gift 1 + High Ac + Low 2c + Jack Jc + Game = 5, the most one player can make
    assert counted(r2, "af2-five", 1) == [1 + 1 + 1 + 1 + 1, 0]


def test_af10_game_ties_to_the_elder_hand(r2):
    # no counting card at all: Game to the elder hand (seat 0); High 3d seat 1, Low 2d seat 0
    assert counted(r2, "af2-game-tie", 1) == [1 + 1, 1]
    # equal pips (Th 10 v Tc 10): the elder hand (seat 1, the dealer being 0)
    assert counted(r2, "af2-game-tie", 2) == [1, 1 + 1]
    # game_tie = nobody
    assert counted(r2, "af2-game-tie-nobody", 1) == [1, 1]


def test_after_run_keep(r2):
    # keep_all / keep_if_nine_else_discard after one run: nine tricks; High As 0, Low 2s 1, Game 0
    assert counted(r2, "af2-keep-all", 1) == [2, 1]
    assert counted(r2, "af2-keep-nine", 1) == [2, 1]


def test_jack_turned_in_the_rejected_suit(r2):
    # run 1 turns Jc, clubs again: no point by default (A7 "a Jack that determines trumps"), 1 with the option
    assert counted(r2, "af2-rejected-jack", 1) == [4, 0]
    assert counted(r2, "af2-rejected-jack-point", 1) == [4, 1]


def test_af7_revoke_with_the_jack_in_play(r2):
    # AF-7: before 5, 0. Penalty 2 to seat 1 (the Jack is in play) -> 2; High Ac seat 0 -> 6; Low 2c would
    # make 7: the revoker stops at 6; Jack and Game are barred to him
    assert counted(r2, "af2-revoke", 2) == [1, 2]
    assert summary(r2, "af2-revoke")["totals"] == [5 + 1, 0 + 2]
    assert summary(r2, "af2-revoke")["winner"] is None
    # revoke = one_point: penalty 1, no bar, no cap: High 6, Low 7: the revoker wins
    assert counted(r2, "af2-revoke-one-point", 2) == [2, 1]
    assert summary(r2, "af2-revoke-one-point")["winner"] == 0


def test_af8_gift_that_puts_the_eldest_out(r2):
    # AF-8: the eldest at 6 begs; the dealer gives anyway: beg_irregular on the dealer, and the point counts
    assert counted(r2, "af2-gift-out", 2) == [0, 1]
    assert summary(r2, "af2-gift-out")["winner"] == 1
    codes = [(f.code, f.seat) for f in r2.findings if f.game_id == "af2-gift-out"]
    assert codes == [("beg_irregular", 0)]


def test_af9_three_players_gift_to_both(fixture_reports):
    r3 = fixture_reports["af_3p"]
    # AF-9: gift to seats 0 and 1; High Ah 0; Low 2h 1; Game: 9, 7, 11 -> seat 2
    assert counted(r3, "af3", 1) == [1 + 1, 1 + 1, 1]
    assert counted(r3, "af3-eldest-only", 1) == [1 + 1, 1, 1]


def test_af4_four_players(fixture_reports):
    r4 = fixture_reports["af_4p"]
    # AF-4 (the 25th card turned): High As A; Low 2s B; Jack A; Game B (30 v 17)
    assert counted(r4, "af4", 1) == [2, 2]
    # partnerships, take one: the gift to the eldest's side
    assert counted(r4, "af4", 2) == [2, 1 + 2]
    assert counted(r4, "af4", 3) == [2, 1]
    assert summary(r4, "af4")["totals"] == [2 + 2 + 2, 2 + 3 + 1]
    # four individuals, take one: every adversary scores 1 (seats 0, 1, 2 from the eldest)
    assert counted(r4, "af4-solo", 1) == [1 + 3, 1 + 1, 1, 0]


def test_af3_af4_turn_up_positions_in_the_deck(r2, fixture_reports):
    # AF-3: two players, the first turn-up is the 13th card; each run deals 3 + 3 and turns the 7th card of the run
    d = next(x.deal for x in r2.results if x.deal.game_id == "af2" and x.deal.deal_no == 3)
    assert d.deck[12] == d.turn_up == "9c"
    assert d.deck[12 + 7] == d.runs[0]["turn_up"] == "4c"  # clubs again: set aside, run again
    assert d.deck[12 + 7 + 7] == d.runs[1]["turn_up"] == "8s"  # a new suit: trumps
    # AF-4: four players, the 25th card
    d4 = next(x.deal for x in fixture_reports["af_4p"].results if x.deal.game_id == "af4" and x.deal.deal_no == 1)
    assert d4.deck[24] == d4.turn_up
    # and the replay found the deck consistent (no deck_mismatch in either fixture)
    assert not [f for f in r2.findings + fixture_reports["af_4p"].findings if f.code == "deck_mismatch"]
