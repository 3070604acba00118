"""Issue 14's new cheats in the simulator: the score-gated marked Ten, the partner stacker, the cooperating
cutter, the All Fours dealer's own Jack; each acts where the key says and only there."""

from __future__ import annotations

import math

import numpy as np
import pytest

from auditor.cards import RJ, parse_card
from auditor.dealog import record_from_obj
from auditor.errors import UsageError
from auditor.replay.run import replay_records
from auditor.rules import layout, resolve
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from auditor.simulate.cli_support import parse_cheat
from auditor.simulate.season import simulate_dealing
from auditor.simulate.spec import score_gate


def exact_jack_probs(rules, n: int) -> list[float]:
    """P(the seat at offset k from the dealer is dealt the Jack of the turn-up's suit) on a uniform deck (as in
    test_simulate_cheats: 4/P the turn-up is a Jack, else the Jack is at any other deck position alike)."""
    L = layout(rules, n, 0)
    P, ti = L.deck_len, L.turnup_index
    out = []
    for s in range(n):
        slots = sum(1 for k in range(P) if L.deal_seat[k] == s and k != ti)
        out.append((1 - 4 / P) * slots / (P - 1) + (4 / P if L.turnup_owner == s else 0.0))
    return out


def _within(count: int, m: int, p: float, sigmas: float = 4.0) -> bool:
    return abs(count - m * p) <= sigmas * math.sqrt(m * p * (1 - p))


# ---------------------------------------------------------------------- the score-gated marked Ten


def test_score_gate_rule():
    assert not score_gate(None, 0, "scotch_whist", 41)  # first deal: 0 against 0
    assert score_gate([31, 0], 0, "scotch_whist", 41)  # within 10 of game
    assert not score_gate([30, 0], 0, "scotch_whist", 41)
    assert score_gate([5, 15], 0, "scotch_whist", 41)  # trails by 10
    assert not score_gate([5, 14], 0, "scotch_whist", 41)
    assert score_gate([0, 3, 13], 1, "scotch_whist", 41)  # trails the leading other side (individual play)
    assert not score_gate([20, 29], 1, "scotch_whist", 41)  # leads by 9: neither
    # All Fours: the distances scaled to the target (10 of 41 -> 2 of 7)
    assert score_gate([5, 0], 0, "all_fours", 7) and not score_gate([4, 0], 0, "all_fours", 7)
    assert score_gate([1, 3], 0, "all_fours", 7) and not score_gate([1, 2], 0, "all_fours", 7)


def _gated_season(deals: int = 700, seed: int = 3):
    names = ["x", "o1", "p", "o2"]
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], players=names, n_deals=deals,
                      fixed_seats=True, revoke_rate=0, log_decisions=True,
                      cheaters=[CheaterSpec("x", "marked_ten", 1.0, mode="score")], skills={n: "strong" for n in names})
    return simulate_season(spec, np.random.default_rng(seed))


def test_gated_marked_ten_acts_only_on_gated_deals_and_the_key_lists_them():
    sim = _gated_season()
    key = sim.key["cheaters"][0]
    assert key["mode"] == "score"
    # the gate recomputed from the log's recorded totals (the score before each deal of the game)
    before: dict = {}
    gated = set()
    played = 0
    for r in sim.records:
        gid = r["game_id"]
        tot = before.get(gid)
        played += 1  # x sits at seat 0 of every deal
        if score_gate(tot, 0, "scotch_whist", 41):
            gated.add((gid, r["deal_no"]))
        before[gid] = r["recorded"]["totals"]
    active = {(a["game_id"], a["deal_no"]) for a in key["active"]}
    assert active == gated and key["active_deals"] == len(active) and key["deals_played"] == played
    assert 0.2 < len(active) / played < 0.45  # about a third at a four-player partnership table
    changed_on = set()
    n_changed = 0
    for d in sim.decisions:
        if d["player"] != "x":
            continue
        if d["p_used"] != d["p_honest"]:
            n_changed += 1
            changed_on.add((d["game_id"], d["deal_no"]))
    assert changed_on <= active  # no decision changed on a deal whose gate was closed
    # (the key counts every decision the sure read applied to, a few of which it left as the honest draw)
    assert n_changed >= 20 and n_changed <= key["decisions_changed"] <= 1.1 * n_changed + 2
    # ... and the sure read is used on the open deals: some Ten-relevant decision of x changed in many of them
    assert len(changed_on) >= 0.2 * len(active)


def test_gated_mode_only_for_marked_ten_and_on_the_command_line():
    assert parse_cheat("marked_ten:ada:0.8:score") == CheaterSpec("ada", "marked_ten", 0.8, mode="score")
    assert parse_cheat("marked_ten:ada:0.8") == CheaterSpec("ada", "marked_ten", 0.8)
    spec = SeasonSpec(tables=[TableSpec("t", 4)], players=4, cheaters=[CheaterSpec("ada", "marked_ten", 1, mode="x")])
    with pytest.raises(UsageError, match="marked_ten mode"):
        spec.check()


def test_ungated_marked_ten_key_is_unchanged():
    spec = SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], players=4, n_deals=40,
                      cheaters=[CheaterSpec("ada", "marked_ten", 1.0)])
    c = simulate_season(spec, np.random.default_rng(1)).key["cheaters"][0]
    assert "active" not in c and "decisions_changed" in c


# ---------------------------------------------------------------------- the new dealing cheats


@pytest.mark.parametrize("table,cheat,seat,p0", [
    # Scotch Whist 4 pairs: the partner (offset 2) holds the Jack of trumps on 8/35 of honest deals
    (TableSpec("t", 4, sides=partnerships(4, "pairs")), CheaterSpec("x", "partner_stacker", 0.3), 2, 8 / 35),
    # the cooperating cutter (at the dealer's right) and the dealer's own hand: 11/35 at 4, 9/27 at 5 (+ turn-up)
    (TableSpec("t", 5), CheaterSpec("x", "cutter_stacker", 0.5, partner="y"), 0, None),
    (TableSpec("t", 3, game="all_fours"), CheaterSpec("x", "cutter_stacker", 0.4, partner="y"), 0, 12 / 13 * 6 / 51),
])
def test_stacker_puts_the_jack_where_q_says(table, cheat, seat, p0):
    m = 24_000
    out = simulate_dealing(table, m, np.random.default_rng(21), cheat)
    if p0 is None:
        p0 = float(exact_jack_probs(resolve(table.game, table.rules), table.n)[seat])
    mine = out["dealer"] == 0
    k = int((out["jack_offset"][mine] == seat).sum())
    q = cheat.q
    assert _within(k, int(mine.sum()), q + (1 - q) * p0), (k / mine.sum(), q + (1 - q) * p0)
    assert _within(int(out["acted"][mine].sum()), int(mine.sum()), q)
    assert not out["acted"][~mine].any()
    # the other dealers' deals are honest
    p_other = float(exact_jack_probs(resolve(table.game, table.rules), table.n)[seat])
    k2 = int((out["jack_offset"][~mine] == seat).sum())
    assert _within(k2, int((~mine).sum()), p_other)


def test_af_own_jack_puts_the_turnup_suits_jack_in_his_hand_unless_it_is_turned_up():
    m, q = 24_000, 0.3
    out = simulate_dealing(TableSpec("t", 4, game="all_fours", sides=partnerships(4, "pairs")), m,
                           np.random.default_rng(22), CheaterSpec("x", "af_own_jack", q))
    mine = out["dealer"] == 0
    n_mine = int(mine.sum())
    p0 = exact_jack_probs(resolve("all_fours", "foster"), 4)[0]  # 12/13 * 6/51
    # a Jack turned up (4/52) is left alone; otherwise he holds it with probability q + (1 - q) * 6/51
    want = (12 / 13) * (q + (1 - q) * (6 / 51))
    assert _within(int((out["jack_offset"][mine] == 0).sum()), n_mine, want)
    assert _within(int(out["turnup_jack"][mine].sum()), n_mine, 1 / 13)  # the turn-up is untouched
    assert _within(int(out["acted"][mine].sum()), n_mine, q * 12 / 13)
    assert not (out["acted"][mine] & out["turnup_jack"][mine]).any()
    assert _within(int((out["jack_offset"][~mine] == 0).sum()), m - n_mine, p0)


def _holder(r: dict) -> int | None:
    """The seat dealt the Jack of the turn-up's suit (None: nobody; it is the All Fours turn-up)."""
    tu = parse_card(r["turn_up"])
    jack = (tu // 13) * 13 + RJ
    return next((s for s, h in enumerate(r["hands"]) if jack in [parse_card(x) for x in h]), None)


def test_new_dealing_cheats_in_a_season_the_key_lists_each_acted_deal():
    spec = SeasonSpec(tables=[TableSpec("sw", 4, sides=partnerships(4, "pairs")), TableSpec("sw5", 5),
                              TableSpec("af", 3, game="all_fours")],
                      players=12, n_deals=1500,
                      cheaters=[CheaterSpec("ada", "partner_stacker", 1.0),
                                CheaterSpec("ben", "cutter_stacker", 1.0, partner="cora"),
                                CheaterSpec("dan", "af_own_jack", 1.0)])
    sim = simulate_season(spec, np.random.default_rng(5))
    by = {(r["game_id"], r["deal_no"]): r for r in sim.records}
    key = {c["player"]: c for c in sim.key["cheaters"]}
    ada, ben, dan = key["ada"], key["ben"], key["dan"]
    # ada: every deal she dealt at the partnership table, the partner named in the key holds the Jack of trumps
    chances = [r for r in sim.records if r["table"] == "sw" and r["players"][r["dealer"]] == "ada"]
    assert ada["deals_dealt"] == len(chances) == len(ada["acted"]) > 20
    for ev in ada["acted"]:
        r = by[(ev["game_id"], ev["deal_no"])]
        h = _holder(r)
        assert r["players"][h] == ev["partner"] and h == (r["dealer"] + 2) % 4
        assert r["turn_up"][0] != "J"
    # ben: exactly the deals he dealt with cora on his right (the default cutter)
    pair = [r for r in sim.records if r["players"][r["dealer"]] == "ben"
            and r["players"][(r["dealer"] - 1) % len(r["players"])] == "cora" and len(r["players"]) >= 3]
    assert ben["deals_dealt"] == len(pair) == len(ben["acted"]) > 5
    assert {(r["game_id"], r["deal_no"]) for r in pair} == {(e["game_id"], e["deal_no"]) for e in ben["acted"]}
    for r in pair:
        assert _holder(r) == r["dealer"]
    # dan: his All Fours deals, the Jack of the turn-up's suit in his dealt hand unless it was turned up
    mine = [r for r in sim.records if r["game"] == "all_fours" and r["players"][r["dealer"]] == "dan"]
    assert dan["deals_dealt"] == len(mine) > 20
    acted = {(e["game_id"], e["deal_no"]) for e in dan["acted"]}
    for r in mine:
        if r["turn_up"][0] == "J":
            assert (r["game_id"], r["deal_no"]) not in acted
        else:
            assert (r["game_id"], r["deal_no"]) in acted and _holder(r) == r["dealer"]
    # nothing in the log names a cheat; the deals replay as logged (only accidental revokes)
    rep = replay_records(record_from_obj(r, "s", 0, i) for i, r in enumerate(sim.records))
    assert {f.code for f in rep.findings} <= {"revoke"}


@pytest.mark.parametrize("tables,cheat,fixed,needle", [
    ([TableSpec("t", 5)], CheaterSpec("ada", "partner_stacker", 0.3), False, "never sits at a partnership"),
    ([TableSpec("t", 4, sides=partnerships(4, "pairs")), TableSpec("u", 2)], CheaterSpec("eve", "partner_stacker", 0.3),
     True, "never sits at a partnership"),  # eve, the 5th member, sits fixed at the table of 2
    ([TableSpec("t", 2), TableSpec("u", 2, game="all_fours")], CheaterSpec("ada", "cutter_stacker", 0.5, partner="ben"),
     False, "never cuts for him"),
    ([TableSpec("t", 4)], CheaterSpec("ada", "cutter_stacker", 0.5, partner="ben"), True, "never cuts for him"),
    ([TableSpec("t", 4)], CheaterSpec("ada", "cutter_stacker", 0.5), False, "needs a confederate"),
    ([TableSpec("t", 4)], CheaterSpec("ada", "af_own_jack", 0.5), False, "no All Fours table"),
])
def test_new_cheats_refuse_seasons_where_they_cannot_act(tables, cheat, fixed, needle):
    spec = SeasonSpec(tables=tables, players=8, cheaters=[cheat], fixed_seats=fixed)
    with pytest.raises(UsageError, match=needle):
        spec.check()


def test_fixed_seats_with_the_confederate_on_the_right_is_accepted():
    # fixed seats: ada at seat 0, dan at seat 3 (her right)
    SeasonSpec(tables=[TableSpec("t", 4)], players=4, fixed_seats=True,
               cheaters=[CheaterSpec("ada", "cutter_stacker", 0.5, partner="dan")]).check()


def test_command_line_takes_the_new_kinds():
    assert parse_cheat("cutter_stacker:ada:0.5:ben") == CheaterSpec("ada", "cutter_stacker", 0.5, partner="ben")
    assert parse_cheat("partner_stacker:ada:0.3") == CheaterSpec("ada", "partner_stacker", 0.3)
    assert parse_cheat("af_own_jack:ada:0.3") == CheaterSpec("ada", "af_own_jack", 0.3)
    with pytest.raises(UsageError, match="no fourth part"):
        parse_cheat("af_own_jack:ada:0.3:x")
