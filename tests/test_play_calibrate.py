"""The play calibration study: its yardstick reproduces the simulator's cheat, and the study runs end to end."""

from __future__ import annotations

import numpy as np
import pytest

from auditor import calibrate_play as C
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season


@pytest.fixture(scope="module")
def logged_season():
    tables = [TableSpec(f"t{i}", 4, sides=partnerships(4, "pairs")) for i in range(2)]
    spec = SeasonSpec(tables=tables, n_deals=400, players=8, cheaters=[CheaterSpec("ada", "marked_ten", 0.5)],
                      deck=False, time=False, log_decisions=True)
    sim = simulate_season(spec, np.random.default_rng(5))
    return sim, C._replay(sim.records).results


def test_yardstick_rebuilds_the_cheaters_own_mixture(logged_season):
    """Where the simulator's marked-Ten cheater changed his play, p_used = q * cheat + (1 - q) * honest; the
    yardstick rebuilds the cheat from the replayed deal and must find exactly those decisions."""
    sim, results = logged_season
    changed = [d for d in sim.decisions if d["player"] == "ada" and d["p_used"] != d["p_honest"]
               and not d.get("revoke")]
    assert changed
    ys = C.lr_yardstick(sim, results, 0.5, players={"ada"})
    assert ys["ada"]["decisions"] == len(changed)
    # the observed log likelihood ratio: sum over those decisions of log(p_used / p_honest) of the card played
    llr = 0.0
    for d in changed:
        i = d["legal"].index(d["card"])
        llr += np.log(d["p_used"][i]) - np.log(d["p_honest"][i])
    assert ys["ada"]["llr"] == pytest.approx(llr, rel=1e-6, abs=1e-6)


def test_yardstick_is_calibrated_for_honest_players(logged_season):
    sim, results = logged_season
    ys = C.lr_yardstick(sim, results, 0.5)
    honest = [v["p"] for k, v in ys.items() if k != "ada"]
    assert len(honest) == 7
    assert all(0.0 <= p <= 1.0 for p in honest)
    assert ys["ada"]["p"] < min(honest)


def test_summaries_and_targets_from_tiny_studies():
    rows = [{"player": "x", "skill": s, "cheat": False, "p": p, "z": 0.0, "flagged": False, "deals": 10,
             "played": 20, "p_hard": p, "p_opening": p, "p_normal": p, "p_queen": p, "p_plain_ten": p,
             "p_placebo": p} for s, p in zip(C.SKILLS * 5, np.linspace(0.0005, 1, 20), strict=True)]
    h = C.summarise_marked_honest([{"rows": rows, "family": 20, "seconds": 1.0}], 0.05)
    assert h["by_skill"]["all"]["players"] == 20
    assert h["by_skill"]["all"]["count<=0.001"] == 1
    assert h["realised_fdr"] == 0.0
    res = {"fdr": 0.05, "studies": {"marked_honest": h}}
    t = C.targets(res)
    assert any(x["met"] is None for x in t)  # one season is too few to say


@pytest.mark.slow
def test_fast_tier_runs_end_to_end():
    res = C.calibrate_play(seed=1, fast=True)
    assert {t["target"][:20] for t in res["targets"]}
    p1 = res["studies"]["marked_power_1.0"]
    assert p1["power_at_fdr"] >= 0.5
    assert res["studies"]["revoke_power"]["power"] >= 0.5
    text = C.format_report(res)
    assert "targets:" in text
