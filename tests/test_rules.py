"""Rules as data: the presets of rules.md Part G, option overrides, and the deal layout of every player count."""

from __future__ import annotations

import pytest

from auditor.cards import cards_of, parse_card
from auditor.rules import AF_SWITCHES, PRESETS, SW_SWITCHES, layout, resolve


def test_presets_part_g():
    f = resolve("scotch_whist", "foster")
    assert (f.min_players, f.max_players) == (2, 8)
    assert f.small_table_deal == "sets_of_six" and f.set_leader == "last_trick_winner"
    assert f.odd_pack == "remove_spade_six" and f.deal_packet == "one_at_a_time"
    assert f.void_rule == "trump_or_discard" and f.revoke_penalty == "lose_game" and f.cards_under == "zero"
    assert f.countout_cards_collision == "higher_running_total" and f.target == 41
    r = resolve("scotch_whist", "russian")
    assert (r.min_players, r.max_players) == (2, 6)
    assert r.small_table_deal == "ten_each_rest_aside" and r.odd_pack == "turnup_36th_to_eldest"
    assert r.extra_card_base == "cards_received" and r.revoke_penalty == "minus_10"
    assert r.negative_scores == "allowed" and r.set_leader == "last_trick_winner"
    a = resolve("all_fours", "foster")
    assert (a.min_players, a.max_players) == (2, 4)
    assert a.target == 7 and a.game_tie == "elder_hand" and a.low_to == "dealt_holder"
    assert a.after_run == "discard_to_six" and a.pack_exhausted == "bunch_same_dealer"
    assert a.jack_on_rejected_turnup == "no_point" and a.gift_three_players == "both_adversaries"
    assert a.gift_cannot_win is True and a.second_beg == "forbidden" and a.revoke == "foster_graduated"
    assert set(PRESETS) == {("scotch_whist", "foster"), ("scotch_whist", "russian"), ("all_fours", "foster")}


def test_part_c_switch_defaults_come_first():
    assert SW_SWITCHES["odd_pack"][0] == "remove_spade_six" and SW_SWITCHES["void_rule"][0] == "trump_or_discard"
    assert AF_SWITCHES["target"] == (7, 10, 11) and AF_SWITCHES["revoke"][0] == "foster_graduated"


def test_options_override_and_reject():
    r = resolve("scotch_whist", "foster", {"void_rule": "must_trump_if_able", "sw.target": 41})
    assert r.void_rule == "must_trump_if_able"
    assert resolve("all_fours", "foster", {"af.target": 10}).target == 10
    with pytest.raises(KeyError):
        resolve("scotch_whist", "foster", {"no_such": 1})
    with pytest.raises(KeyError):
        resolve("scotch_whist", "foster", {"af.target": 10})  # another game's switch
    with pytest.raises(ValueError):
        resolve("scotch_whist", "foster", {"void_rule": "sometimes"})
    with pytest.raises(ValueError):
        resolve("all_fours", "foster", {"target": "7"})  # 7 the number, not the string
    with pytest.raises(ValueError):
        resolve("all_fours", "foster", {"gift_cannot_win": 1})  # a boolean switch takes true/false only
    with pytest.raises(KeyError):
        resolve("scotch_whist", "vienna")


# (rules, options, n): pack size, deck length, cards per seat, tricks per set, turn-up index, shown index
LAYOUTS = [
    ("foster", {}, 2, 36, 36, [18, 18], (6, 6, 6), 35, None),
    ("foster", {}, 3, 36, 36, [12, 12, 12], (6, 6), 35, None),
    ("foster", {}, 4, 36, 36, [9] * 4, (9,), 35, None),
    ("foster", {}, 5, 35, 35, [7] * 5, (7,), 34, None),
    ("foster", {"odd_pack": "remove_club_six"}, 5, 35, 35, [7] * 5, (7,), 34, None),
    ("foster", {"odd_pack": "show_36th_dead"}, 5, 36, 36, [7] * 5, (7,), 34, 35),
    ("foster", {}, 6, 36, 36, [6] * 6, (6,), 35, None),
    ("foster", {}, 7, 35, 35, [5] * 7, (5,), 34, None),
    ("foster", {"odd_pack": "show_36th_dead"}, 7, 36, 36, [5] * 7, (5,), 34, 35),
    ("foster", {}, 8, 32, 32, [4] * 8, (4,), 31, None),
    ("russian", {}, 2, 36, 36, [10, 10], (10,), 19, None),
    ("russian", {}, 3, 36, 36, [10] * 3, (10,), 29, None),
    ("russian", {}, 4, 36, 36, [9] * 4, (9,), 35, None),
    ("russian", {}, 6, 36, 36, [6] * 6, (6,), 35, None),
]


@pytest.mark.parametrize("preset,options,n,pack,deck,sizes,tricks,tu,shown", LAYOUTS)
def test_scotch_whist_layouts(preset, options, n, pack, deck, sizes, tricks, tu, shown):
    for dealer in range(n):
        L = layout(resolve("scotch_whist", preset, options), n, dealer)
        assert L.pack_size == pack == len(cards_of(L.pack)) and L.deck_len == deck
        assert list(L.hand_sizes) == sizes and L.tricks_per_set == tricks
        assert L.turnup_index == tu and L.shown_index == shown
        assert L.eldest == (dealer + 1) % n
        assert L.turnup_owner == dealer  # the dealer's last card (A.3.4)
        assert L.cards_base == tuple(sizes)


def test_packs_by_odd_pack():
    def has(preset, options, n, card):
        return bool(layout(resolve("scotch_whist", preset, options), n, 0).pack >> parse_card(card) & 1)

    assert not has("foster", {}, 5, "6s") and has("foster", {}, 5, "6c")
    assert has("foster", {"odd_pack": "remove_club_six"}, 7, "6s") and not has("foster", {"odd_pack":
                                                                                          "remove_club_six"}, 7, "6c")
    assert not any(has("foster", {}, 8, f"6{s}") for s in "shdc")
    assert not has("foster", {}, 4, "5c") and has("foster", {}, 4, "6s")


def test_russian_five_36th_to_the_eldest():
    L = layout(resolve("scotch_whist", "russian"), 5, 2)
    assert L.hand_sizes == (7, 7, 7, 8, 7)  # eldest = seat 3
    assert L.turnup_index == 35 and L.turnup_owner == 3 and L.extra_card_seat == 3
    assert L.deal_seat[35] == 3 and L.deal_slot[35] == 7
    assert L.cards_base == (7, 7, 7, 8, 7)
    nominal = layout(resolve("scotch_whist", "russian", {"extra_card_base": "nominal"}), 5, 2)
    assert nominal.cards_base == (7, 7, 7, 7, 7)


def test_two_and_three_player_deal_round_the_six_hands():
    # Part G: card k goes to hand k mod 6; hand h is seat (eldest + h) mod n's set h // n + 1
    L = layout(resolve("scotch_whist", "foster"), 2, 1)  # eldest 0
    assert [L.deal_seat[k] for k in range(6)] == [0, 1, 0, 1, 0, 1]
    assert [L.deal_slot[k] for k in range(6)] == [0, 0, 6, 6, 12, 12]  # hands 1, 2 then 3, 4 then 5, 6
    assert L.deal_seat[35] == 1 and L.deal_slot[35] == 17  # the turn-up: the dealer's last card, in hand 6
    L3 = layout(resolve("scotch_whist", "foster"), 3, 0)  # eldest 1
    assert [L3.deal_seat[k] for k in range(6)] == [1, 2, 0, 1, 2, 0]
    assert [L3.deal_slot[k] for k in range(6)] == [0, 0, 0, 6, 6, 6]
    P = layout(resolve("scotch_whist", "foster", {"two_three_player_deal_order": "packet_per_hand"}), 2, 1)
    assert [P.deal_seat[k] for k in range(12)] == [0] * 6 + [1] * 6


def test_all_fours_three_and_three():
    L = layout(resolve("all_fours", "foster"), 4, 3)  # eldest 0
    assert [L.deal_seat[k] for k in range(24)] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3 + [0] * 3 + [1] * 3 + \
        [2] * 3 + [3] * 3
    assert L.turnup_index == 24  # AF-4: the 25th card
    assert layout(resolve("all_fours", "foster"), 2, 0).turnup_index == 12  # the 13th with two players
    assert layout(resolve("all_fours", "foster"), 3, 0).turnup_index == 18
