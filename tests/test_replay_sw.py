"""Scotch Whist: the worked examples of rules.md (A.9) and the derived cases, replayed from fixtures/replay with the
arithmetic written out. Seats and sides: see the trick tables in fixtures/replay/fixtures_sw.py.

Worked examples that do not apply to a replay:
- SW-5's payment ("his loss is equal to six games") and SW-6 (three pairs: "each B and each C pays the A next to
  him") are stakes; the replay only reports who won and lost the game (test_sw5_revoke_with_seven_players).
- SW-3's "6" is a source error (rules.md D.1); the rule's 5 is tested.
"""

from __future__ import annotations

import pytest

from conftest import REPLAY_FIXTURES, counted, summary


@pytest.fixture(scope="module")
def reports(fixture_reports):
    return fixture_reports


def test_sw1_partnership_cards_over(reports):
    r = reports["sw_foster_4p"]
    # SW-1: side A takes 8 tricks = 32 cards; dealt 9 + 9 = 18: 32 - 18 = 14 for cards,
    # + honours J 11 + T 10 + A 4 + K 3 + Q 2 = 30 -> 44; B takes one trick (4 cards < 18) -> 0
    assert counted(r, "sw4-pairs", 2) == [14 + 30, 0]
    # after D-SW-1 (23, 9): 23 + 44 = 67 >= 41
    assert summary(r, "sw4-pairs") == {"game_id": "sw4-pairs", "deals": 2, "totals": [67, 9], "winner": 0,
                                       "ended_by": "points", "loser": None}


def test_dsw1_honours_by_capture(reports):
    r = reports["sw_foster_4p"]
    # D-SW-1: side A: J 11 + T 10 + cards (20 - 18) = 23; side B: A 4 + K 3 + Q 2 + cards 0 (16 < 18) = 9.
    # The Ten is played by B (seat 3) and captured by A's Jack: honours go by capture.
    assert counted(r, "sw4-pairs", 1) == [11 + 10 + (20 - 18), 4 + 3 + 2 + 0]
    assert sum(counted(r, "sw4-pairs", 1)) == 30 + 2


def test_sw2_five_players(reports):
    r = reports["sw_foster_5p"]
    # SW-2: 7 dealt each; seat 0 takes 15 cards: 15 - 7 = 8; seat 3 takes 10: 10 - 7 = 3 (+ the Ten 10);
    # seat 4 takes the J A K Q trick: 11 + 4 + 3 + 2 = 20 (5 cards, no cards-over)
    assert counted(r, "sw5", 1) == [15 - 7, 0, 0, (10 - 7) + 10, 11 + 4 + 3 + 2]
    # the same play with 6c out instead of 6s (odd_pack = remove_club_six; suits s and c exchanged)
    assert counted(r, "sw5-club-six", 1) == [8, 0, 0, 13, 20]


def test_sw3_ten_dealt_fifteen_taken_is_five(reports):
    r = reports["sw_russian"]
    # SW-3 (Russian, 3 players, 10 each, 6 aside): seat 1 takes 5 tricks = 15 cards: 15 - 10 = 5 (the source's
    # 6 is its own slip), + As 4 + Ks 3 + Qs 2 = 14. Seat 0: Js 11, 1 trick (3 cards), 0. Seat 2: 4 tricks =
    # 12 cards: 2. The trump Ten is aside: nobody scores it.
    assert counted(r, "ru3", 1) == [11, (15 - 10) + 4 + 3 + 2, 12 - 10]
    assert sum(counted(r, "ru3", 1)) == 20 + 5 + 2  # honours in play: 30 - 10


def test_sw4_six_dealt_eighteen_taken(reports):
    r = reports["sw_russian"]
    # SW-4 (6 players, 6 each): seat 0 takes 3 tricks = 18 cards: 18 - 6 = 12; seat 3 takes J A K Q T = 30
    assert counted(r, "ru6", 1) == [18 - 6, 0, 0, 11 + 4 + 3 + 2 + 10, 0, 0]


def test_sw5_revoke_with_seven_players(reports):
    r = reports["sw_foster_7p"]
    # SW-5: a claimed revoke ends the game (lose_game); with seven players there is no single winner (the
    # revoker pays each of the six adversaries as if each had won); the revoker's seat is the loser. The hand
    # is still scored: seat 0 3 tricks = 21 cards, 21 - 5 = 16; seat 3 7 - 5 = 2 + 30; seat 6 7 - 5 = 2.
    assert summary(r, "sw7-revoke") == {"game_id": "sw7-revoke", "deals": 1, "totals": [16, 0, 0, 32, 0, 0, 2],
                                        "winner": None, "ended_by": "revoke", "loser": 1}


def test_sw7_two_player_sets(reports):
    r = reports["sw_foster_2p"]
    # SW-7: set 2 is led by the winner of set 1's last trick (the dealer, seat 1): the fixture's trick 7 is
    # written from seat 1 and replays without a card_not_in_hand. Seat 0: 10 tricks = 20 cards, 20 - 18 = 2, +
    # Td 10 + Ad 4 + Qd 2 = 18; seat 1: Jd 11 + Kd 3 = 14 (16 cards, 0).
    assert counted(r, "sw2", 1) == [2 + 10 + 4 + 2, 11 + 3]
    # set_leader = eldest: the same cards, set 2 led by seat 0
    assert counted(r, "sw2-eldest", 1) == [18, 14]
    # the turn-up 6d is the dealer's last card, in his third hand (hand 6)
    rec = next(x.deal for x in r.results if x.deal.game_id == "sw2" and x.deal.deal_no == 1)
    assert rec.hands[1][-1] == "6d" and rec.hands[1].index("6d") >= 12


def test_sw8_countout_order(reports):
    r = reports["sw_foster_4p"]
    # SW-8 / D-SW-2: before the hand A 35, B 38. A: T 10 + cards 2 = 12 -> 47; B: J 11 + A 4 + K 3 + Q 2 = 20
    # -> 58. Both pass 41; the Ten counts first: A 35 + 10 = 45 >= 41, A wins though B ends higher.
    assert counted(r, "sw4-countout", 2) == [10 + 2, 11 + 4 + 3 + 2]
    assert summary(r, "sw4-countout")["totals"] == [35 + 12, 38 + 20]
    assert summary(r, "sw4-countout")["winner"] == 0
    # 2 players: 32 + 18 = 50 and 32 + 14 = 46 both pass 41; the Ten (seat 0's) counts first: 42
    assert summary(reports["sw_foster_2p"], "sw2")["totals"] == [32 + 18, 32 + 14]
    assert summary(reports["sw_foster_2p"], "sw2")["winner"] == 0


def test_countout_cards_collision(reports):
    r = reports["sw_countout"]
    # collision deal: seat 0 J 11 + Q 2 = 13; seat 1 cards (12 - 6) 6 + A 4 = 10; seat 2 K 3; seat 3 T 10 +
    # cards 6 = 16
    assert counted(r, "co-equal", 2) == [13, 6 + 4, 3, 10 + 6, 0, 0]
    # equal: seat 3 25 + 10 (Ten) + 6 (cards) = 41, seat 1 35 + 6 = 41 together at the cards step, equal
    # totals: they go on with A, K, Q, J; the Ace is seat 1's: seat 1 wins
    assert summary(r, "co-equal")["winner"] == 1
    # higher running total: seat 3 26 + 10 + 6 = 42 > 41: seat 3
    assert summary(r, "co-higher")["winner"] == 3
    # more_cards: 6 = 6, go on: the Ace, seat 1
    assert summary(r, "co-more-cards")["winner"] == 1
    # unresolved_error: no winner, the game ends
    assert summary(r, "co-unresolved")["winner"] is None
    assert summary(r, "co-unresolved")["ended_by"] == "points"


def test_dsw3_shown_ten_scores_for_nobody(reports):
    r = reports["sw_foster_5p"]
    # D-SW-3: the shown 36th card is the trump Ten: out of play; seat 3 takes the same 10 cards (3 over) and no
    # Ten: 3. Honours in play 20: 8 + 3 + 20 = 31 = 20 + 11
    assert counted(r, "sw5-shown", 1) == [8, 0, 0, 3, 20]


def test_36th_card_to_the_eldest(reports):
    r = reports["sw_foster_5p"]
    # the eldest received 8 (cards_received): 21 taken - 8 = 13; nominal base 7: 21 - 7 = 14
    assert counted(r, "sw5-36th", 1)[0] == 21 - 8
    assert counted(r, "sw5-36th-nominal", 1)[0] == 21 - 7
    assert counted(reports["sw_russian"], "ru5", 1) == [13, 0, 0, 13, 20]
    # 7 players (docs/decisions.md): 6 received, 21 - 6 = 15; the 8-card last trick to seat 6: 8 - 5 = 3
    assert counted(reports["sw_foster_7p"], "sw7-36th", 1) == [21 - 6, 0, 0, 32, 0, 0, 8 - 5]


def test_partnerships_six_and_eight(reports):
    r = reports["sw_foster_6p"]
    # threes: A 24 cards - 18 = 6; B 30 honours (12 cards < 18)
    assert counted(r, "sw6-threes", 1) == [24 - 18, 30]
    # three pairs: pair 0 24 - 12 = 12 + 30 = 42 >= 41 in one hand
    assert counted(r, "sw6-pairs", 1) == [12 + 30, 0, 0]
    assert summary(r, "sw6-pairs")["winner"] == 0
    r8 = reports["sw_foster_8p"]
    # 8 players in two sides of four: 24 - 16 = 8 + 30 = 38; alone: seat 4 16 - 4 = 12 + 30 = 42
    assert counted(r8, "sw8-sides", 1) == [8 + 30, 0]
    assert counted(r8, "sw8-solo", 1) == [8 - 4, 8 - 4, 0, 0, 12 + 30, 0, 0, 0]


def test_russian_minus_ten(reports):
    r = reports["sw_russian"]
    # a claimed revoke by side B: -10 before anything else: 9 - 10 = -1 (negative allowed)
    assert counted(r, "ru4-revoke", 1) == [23, 9 - 10]
    assert summary(r, "ru4-revoke")["totals"] == [23, -1]
    # floor_zero: 0 - 10 floored to 0, then + 9
    assert summary(r, "ru4-revoke-floor")["totals"] == [23, 0 + 9]
    # Russian 2 players, 10 each: seat 0 16 cards - 10 = 6 + K 3 + T 10 + Q 2 = 21; seat 1 J 11 + A 4 = 15
    assert counted(r, "ru2", 1) == [6 + 3 + 10 + 2, 11 + 4]


def test_lose_game_revoke(reports):
    r = reports["sw_foster_4p"]
    # a claimed revoke by seat 2 (side A): the hand is scored (23, 9), the game ends, B wins, A loses
    assert summary(r, "sw4-revoke") == {"game_id": "sw4-revoke", "deals": 1, "totals": [23, 9], "winner": 1,
                                        "ended_by": "revoke", "loser": 0}


def test_three_player_sets(reports):
    r = reports["sw_foster_3p"]
    # 12 dealt each: seat 0 18 - 12 = 6 + J 11 + T 10 = 27; seat 2 18 - 12 = 6 + A 4 + K 3 + Q 2 = 15
    assert counted(r, "sw3", 1) == [6 + 11 + 10, 0, 6 + 4 + 3 + 2]


def test_fixture_files_exist():
    for name in ("sw_foster_2p", "sw_foster_3p", "sw_foster_4p", "sw_foster_5p", "sw_foster_6p", "sw_foster_7p",
                 "sw_foster_8p", "sw_russian", "sw_countout"):
        assert (REPLAY_FIXTURES / f"{name}.jsonl").exists()


def test_countout_that_stays_equal(reports):
    r = reports["sw_countout"]
    # seats 0 and 1: 38 + 3 cards-over = 41 each, together at the cards step, equal totals; A, K, Q, J (20) all
    # go to seat 2, who had not reached 41 then; the Ten (10) to seat 3: the count-out stays equal, no winner
    assert counted(r, "co-stays-equal", 2) == [12 - 9, 12 - 9, 11 + 4 + 3 + 2, 10]
    assert summary(r, "co-stays-equal") == {"game_id": "co-stays-equal", "deals": 2, "totals": [41, 41, 20, 10],
                                            "winner": None, "ended_by": "points", "loser": None}
