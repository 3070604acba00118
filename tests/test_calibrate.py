"""`auditor calibrate`: the fast tier of the issue's targets with fixed seeds (CI), the full study under `slow`."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor import calibrate as cal
from auditor.cli import app
from auditor.stats import exact

runner = CliRunner()


def test_fast_tier_targets():
    """Foster 4p, 100 honest dealers + one stacker at q = 0.25, 200 deals each; All Fours turn-up stacker at
    q = 0.25 within 60 deals; honest seasons rarely flag anyone. Fixed seeds, 40 seasons each."""
    dj = cal.STUDIES["dealer_jack"]
    pw = cal.power_study(dj, 0.25, 40, seed=1)
    assert pw.power >= 0.85  # target 90% (exact oracle about 95%); 40 seasons: se about 4.5%
    assert pw.oracle_exact == pytest.approx(exact.power(((11 / 35, 200),), 0.05 / 101, 0.25), abs=1e-9)
    assert 0.93 < pw.oracle_exact < 0.97
    tj = cal.STUDIES["turnup_jack"]
    pt = cal.power_study(tj, 0.25, 40, seed=1)
    assert pt.power >= 0.8
    h = cal.honest_study(dj, 40, seed=1)
    assert h.seasons_with_flag <= 6  # P(X > 6 | 40 seasons, 5%) < 0.2%
    for a in cal.ALPHAS:  # exact discrete p-values are conservative: rate <= alpha within MC error
        assert h.alpha_rates[a] <= a + 3 * np.sqrt(a * (1 - a) / h.tests)


def test_power_rises_with_q_and_honest_rate_tracks_alpha():
    dj = cal.STUDIES["dealer_jack"]
    weak = cal.power_study(dj, 0.1, 20, seed=2)
    strong = cal.power_study(dj, 0.4, 20, seed=2)
    assert weak.power < 0.5 <= strong.power == 1.0
    h = cal.honest_study(cal.STUDIES["turnup_jack"], 20, seed=2)
    assert h.alpha_rates[0.1] > 0.04  # not degenerate: the p-values do move


def test_cli_fast_writes_numbers_and_plot(tmp_path):
    out = tmp_path / "cal.json"
    plot = tmp_path / "curve.svg"
    r = runner.invoke(app, ["calibrate", "--fast", "--honest-seasons", "4", "--power-seasons", "4",
                            "--curve-seasons", "2", "--uniformity-seasons", "0", "--shuffle-seasons", "0",
                            "--seed", "5", "--plot", str(plot), "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["seed"] == 5
    assert set(res["studies"]) == set(cal.STUDIES)
    for key, st in res["studies"].items():
        assert set(st["power"]) == {str(q) for q in cal.STUDIES[key].qs}
        assert set(st["honest"]["p_le_alpha"]) == {"0.001", "0.01", "0.05", "0.1"}
        assert len(st["curve"]) == (8 if cal.STUDIES[key].curve else 0)
    assert res["studies"]["partner_jack"]["level"] == pytest.approx(0.05 * 0.05)
    assert plot.read_text().lstrip().startswith("<?xml")
    assert "Honest seasons" in r.stdout and "oracle" in r.stdout
    assert runner.invoke(app, ["calibrate", "--fdr", "0"]).exit_code == 2
    assert runner.invoke(app, ["calibrate", "--plot", "x.pdf"]).exit_code == 2
    assert runner.invoke(app, ["calibrate", "--power-seasons", "-1"]).exit_code == 2


def test_same_seed_same_numbers():
    a = cal.honest_study(cal.STUDIES["turnup_jack"], 3, seed=11)
    b = cal.honest_study(cal.STUDIES["turnup_jack"], 3, seed=11)
    assert a.to_json() == b.to_json()


ISSUE14 = ("partner_jack", "dealer_cutter", "af_dealer_jack")


@pytest.mark.parametrize("key", ISSUE14)
def test_issue14_targets_fast_tier(key):
    """Issue 14, each at the audit-wide level (family BH at 0.05 x its share): the partner stacker (q = 0.3, 250
    partnership deals), the cooperating cutter pair (q = 0.5, about 100 pair deals), the All Fours dealer's own
    Jack (q = 0.3, 150 deals) are flagged in nearly every season; the exact oracle says the same; honest p-values
    are conservative. Fixed seeds, 8 seasons each (the oracle's power is above 0.999: two misses in 8 are
    below 1 in 10^4)."""
    st = cal.STUDIES[key]
    level = 0.05 * st.share
    q, want = st.target
    pw = cal.power_study(st, q, 8, seed=1, fdr=level)
    assert pw.power >= 7 / 8, (key, pw.power)
    oracle = exact.power(((cal._null_rate(st), cal._trials_of(st)),), exact.per_test_level(level, cal._family_size(st)),
                         q)
    assert oracle >= want
    weak = cal.power_study(st, 0.05, 4, seed=1, fdr=level)
    assert weak.power < 0.5  # and not flagged whatever he does
    h = cal.honest_study(st, 6, seed=1, fdr=level)
    assert h.seasons_with_flag <= 2
    for a in cal.ALPHAS:
        assert h.alpha_rates[a] <= a + 3 * np.sqrt(a * (1 - a) / h.tests), (key, a, h.alpha_rates[a])
    assert h.alpha_rates[0.1] > 0.03


@pytest.mark.slow
def test_full_study_meets_the_targets():
    res = cal.calibrate(seed=0, honest_seasons=200, power_seasons=200, curve_seasons=20, uniformity_seasons=0,
                        shuffle_seasons=0)
    for desc, met, measured in cal.targets(res):
        assert met, (desc, measured)


@pytest.mark.slow
def test_calibrate_with_play_reports_both_studies():
    r = runner.invoke(app, ["calibrate", "--fast", "--play", "--plot", "", "--json", "--honest-seasons", "2",
                                "--power-seasons", "2", "--curve-seasons", "1", "--uniformity-seasons", "0",
                                "--shuffle-seasons", "0"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout[r.stdout.index("{"):])
    assert "play" in doc and doc["play"]["seed"] == 0
    assert any("marked" in k for k in doc["play"]["studies"])
