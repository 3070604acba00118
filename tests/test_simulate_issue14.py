"""Issue 14's new cheats in the simulator: the score-gated marked Ten, the partner stacker, the cooperating
cutter, the All Fours dealer's own Jack; each acts where the key says and only there."""

from __future__ import annotations

import math

import numpy as np
import pytest

from auditor.errors import UsageError
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from auditor.simulate.cli_support import parse_cheat
from auditor.simulate.spec import score_gate


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
