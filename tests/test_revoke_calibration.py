"""revoke_pattern tested statistically on simulated seasons (fixed seeds), at the audit-wide level of its family
(level 0.05 x its share of the budget; `calibrate_play.revoke_season`):

- calibration: honest clubs whose members revoke by accident at the simulator's rate, at ten times it, and with
  clumsy members at 1/30: the rate of p <= alpha is at most alpha within its binomial bound (alpha = 0.01, 0.05,
  0.1), no more seasons with a false flag than the level allows, and the null's own check: over every honest revoke,
  the number that paid against the sum of their pi (a pi computed over the wrong cards fails it at once);
- power: a deliberate revoker (about one deal in 40) in an otherwise honest club, where nobody else revokes and
  where the others revoke by accident, flagged within about 1,000 deals played, next to the exact single-test
  oracle.

The fast tier runs one small season of each kind; the slow tier the studies (`-m slow`).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from auditor.calibrate_play import (
    ACCIDENTAL_RATE,
    REVOKE_ALPHAS,
    REVOKER_Q,
    revoke_season,
    summarise_flags,
)

SEED = 20261202


def _assert_calibrated(seasons: list[dict], min_revokes: int) -> dict:
    s = summarise_flags(seasons, "revoke")
    n = s["honest_tests"]
    assert n > 0
    for a in REVOKE_ALPHAS:
        k = s[f"count<={a}"]
        assert binom.sf(k - 1, n, a) > 0.001, (a, k, n)  # not significantly above alpha
    level = seasons[0]["level"]
    k = s["seasons_with_a_false_flag"]
    assert binom.sf(k - 1, len(seasons), level) > 0.001 or k == 0, k
    # the null's own check: honest revokes that paid vs the sum of their pi (one revoke, one Bernoulli(pi))
    assert s["honest_revokes"] >= min_revokes
    assert s["honest_paid_z"] is not None and abs(s["honest_paid_z"]) < 3.5, s["honest_paid_z"]
    return s


# ---------------------------------------------------------------- fast tier: one small season of each kind


@pytest.mark.parametrize("kw,min_revokes", [({"revoke_rate": 10 * ACCIDENTAL_RATE}, 150), ({"clumsy": 3}, 30)],
                         ids=["ten-times-the-rate", "clumsy-members"])
def test_honest_revokers_are_not_accused(kw, min_revokes):
    s = _assert_calibrated([revoke_season(SEED, 0, 0.0, n_players=8, deals_each=400, **kw)], min_revokes)
    assert s["seasons_with_a_false_flag"] == 0


def test_deliberate_revoker_where_nobody_else_revokes():
    """The issue's case: the only revokes in the club are his (Fisher's comparison with the field is degenerate,
    p = 1); the new test flags him within 1,000 deals, and its own exact oracle says it should."""
    r = revoke_season(SEED, 0, REVOKER_Q, n_players=4, deals_each=1000, revoke_rate=0.0)
    assert r["family"] == 1 and r["played"] == 1000
    assert 1 / 80 < r["deliberate"] / r["played"] < 1 / 20  # about one deal in 40
    assert r["cheat_flagged"] and r["cheat_p"] < 1e-6
    assert r["oracle_power"] > 0.9


# ---------------------------------------------------------------- slow tier: the studies


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"revoke_rate": 10 * ACCIDENTAL_RATE}, {"clumsy": 5}],
                         ids=["simulator-rate", "ten-times-the-rate", "five-clumsy-members"])
def test_calibration_study(kw):
    seasons = [revoke_season(SEED, i, 0.0, n_players=12, deals_each=500, **kw) for i in range(24)]
    _assert_calibrated(seasons, min_revokes=300)


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.0, ACCIDENTAL_RATE], ids=["nobody-else-revokes", "others-revoke-by-accident"])
def test_power_study(rate):
    """>= 90% of seasons flag him at the audit-wide level within about 1,000 deals played; the exact single-test
    oracle (his revokes' pi, the deliberate share made to pay, at his family's per-test threshold) agrees."""
    seasons = [revoke_season(SEED, i, REVOKER_Q, n_players=8, deals_each=1000, revoke_rate=rate) for i in range(16)]
    s = summarise_flags(seasons, "revoke")
    assert s["median_deals_played"] <= 1100
    assert 1 / 60 < s["deliberate_per_deal"] < 1 / 25
    assert s["power"] >= 0.9, s
    assert s["oracle_power"] >= 0.9, s
    assert np.mean([x["false_flags"] > 0 for x in seasons]) <= 0.125
