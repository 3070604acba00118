"""deal_uniformity's closed-form p-value (issue 15: a clear stacker no longer costs a capped Monte Carlo).

`lr_pvalue` is 1 / E, E a fixed mixture of one-cell likelihood ratios against the exact null. Checked here, with
fixed seeds, on null tables drawn by the detector's own exact simulation (`_simulate_tables`, itself held to
per-deal dealing elsewhere):
- every component likelihood ratio has mean 1 under the null (what makes E an e-value; a wrong per-deal
  probability or a wrong sign moves the mean far outside the interval);
- P(p <= u) <= u at several u (Markov; a statistical test);
- a planted stacker's table gets p far below the shortcut, and the finalize then reports it with no draw, while
  an honest dealer keeps the Monte Carlo p-value it had (same generator, same draws).
"""

import numpy as np
import pytest

from auditor.detectors import deal_uniformity as du
from auditor.facts import config
from auditor.rules import PRESETS

CASES = [(("scotch_whist", "foster"), 4, 900), (("scotch_whist", "foster"), 6, 300), (("all_fours", "foster"), 2, 700),
         (("scotch_whist", "russian"), 5, 400)]


def _by_cfg() -> dict:
    return du.canonical_cfgs({config(PRESETS[p], n): D for p, n, D in CASES})


SMALL = [(("scotch_whist", "foster"), 4, 30), (("scotch_whist", "foster"), 6, 10), (("all_fours", "foster"), 2, 25),
         (("scotch_whist", "russian"), 5, 15)]


@pytest.fixture(scope="module")
def null_tables() -> tuple[dict, np.ndarray]:
    """40,000 null seasons of a few deals: few enough that a step's likelihood ratio has a variance its sample mean
    can be judged by (for hundreds of deals it is a heavy-tailed log-normal whose mean no sample shows)."""
    by_cfg = du.canonical_cfgs({config(PRESETS[p], n): D for p, n, D in SMALL})
    return by_cfg, du._simulate_tables(by_cfg, 40_000, np.random.default_rng(5))


def test_each_alternative_has_likelihood_ratio_of_mean_one_under_the_null(null_tables):
    by_cfg, tables = null_tables
    logs = np.array([du.lr_log_ratios(by_cfg, t) for t in tables])  # [B, cells x steps]
    steps = np.array(du.LR_STEPS)
    small = np.tile(np.abs(steps) <= 0.5, logs.shape[1] // len(steps))
    lr = np.exp(logs[:, small])
    mean, se = lr.mean(axis=0), lr.std(axis=0) / np.sqrt(len(lr))
    assert lr.shape[1] > 100
    assert (np.abs(mean - 1.0) <= 4.5 * se).all(), (mean.min(), mean.max())
    # and the check can fail: the inverse ratios (each tilt with the wrong sign) have means well above one
    wrong = np.exp(-logs[:, small])
    assert (wrong.mean(axis=0) - 1.0 > 4.5 * se).all()


@pytest.mark.parametrize("u", [0.5, 0.2, 0.1, 0.02])
def test_pvalue_is_valid_under_the_null(null_tables, u):
    by_cfg, tables = null_tables
    p = np.array([du.lr_pvalue(by_cfg, t) for t in tables[:5000]])
    share = float((p <= u).mean())
    assert share <= u + 3 * np.sqrt(u * (1 - u) / len(p))


def _stacked(by_cfg: dict, q: float, rng: np.random.Generator) -> np.ndarray:
    """A season's table when the dealer moves the Jack of trumps into his hand in a share q of his deals: drawn from
    the null, then each Jack not already his moved to him with probability q (the turned Jack stays turned)."""
    t = du._simulate_tables(by_cfg, 1, rng)[0].astype(np.int64)
    j = du.COLS.index(9)
    for c in range(1, du.N_CLASSES):
        if c == du.TURNUP:
            continue
        moved = rng.binomial(t[c, j], q)
        t[c, j] -= moved
        t[0, j] += moved
    return t


def test_a_stacker_gets_the_closed_form_and_no_draw_an_honest_dealer_keeps_the_monte_carlo():
    by_cfg = _by_cfg()
    rng = np.random.default_rng(7)
    stacked = _stacked(by_cfg, 0.25, rng)
    honest = du._simulate_tables(by_cfg, 1, rng)[0]
    assert du.lr_pvalue(by_cfg, stacked) < du.LR_SHORTCUT < 1e-10
    assert du.lr_pvalue(by_cfg, honest) > 1e-3

    def counts(t):
        return du.UniformityCounts(list(by_cfg), np.array(list(by_cfg.values()), np.int64), _split(by_cfg, t))

    det = du.DealUniformity(details=False)
    res = {r.subject: r for r in det.finalize({"cheat": counts(stacked), "fair": counts(honest)},
                                              np.random.default_rng(3))}
    assert res["cheat"].pvalue < du.LR_SHORTCUT and res["cheat"].detail["mc_draws"] == 0
    assert "closed-form" in res["cheat"].method
    assert res["fair"].detail["mc_draws"] > 0 and res["fair"].method == du.MC_METHOD
    # the honest dealer's Monte Carlo is the one it had without the shortcut
    old = du.LR_SHORTCUT
    try:
        du.LR_SHORTCUT = -1.0
        again = {r.subject: r for r in det.finalize({"cheat": counts(stacked), "fair": counts(honest)},
                                                    np.random.default_rng(3))}
    finally:
        du.LR_SHORTCUT = old
    assert again["fair"].pvalue == res["fair"].pvalue
    # without it, the stacker costs the capped Besag-Clifford run and the importance sampling after it
    assert again["cheat"].detail["mc_draws"] == min(det.cap(2), du.IS_AFTER)
    assert again["cheat"].detail["is_draws"] == du.IS_DRAWS and again["cheat"].method == du.IS_METHOD


def _split(by_cfg: dict, t: np.ndarray) -> np.ndarray:
    """A whole table given to the first configuration (the finalize reads only the sum over configurations)."""
    out = np.zeros((len(by_cfg), du.N_CLASSES, 6), np.int64)
    out[0] = t
    return out


def test_the_scheduler_sees_the_monte_carlo_a_near_significant_dealer_will_need():
    """`extra_cost` (issue 15, a ninth session): the tests' scheduler starts deal_uniformity first when a dealer
    is near significance (about MC_H / p simulated seasons), not when every dealer is plainly fair or settled by
    the closed form; `audit.finalize_cost` adds it to the spec's cost, and only the order depends on it."""
    from auditor.audit import Counts, cost, finalize_cost

    by_cfg = _by_cfg()
    rng = np.random.default_rng(8)

    def counts(t):
        return du.UniformityCounts(list(by_cfg), np.array(list(by_cfg.values()), np.int64), _split(by_cfg, t))

    null = du._simulate_tables(by_cfg, 2000, rng)
    _, exp_ = du._table(counts(null[0]).by_cfg())
    mask = exp_ > 0
    x2 = (((null - exp_[None]) ** 2) / np.where(mask, exp_, 1.0)[None] * mask[None]).sum(axis=(1, 2))
    typical = null[int(np.argsort(x2)[1000])]  # the median dealer
    extreme = null[int(np.argmax(x2))]  # one in 2,000: its Monte Carlo runs to the cap
    det = du.DealUniformity(details=False)
    fair = det.extra_cost({"a": counts(typical)})
    near = det.extra_cost({"b": counts(extreme)})
    assert det.extra_cost({"c": counts(_stacked(by_cfg, 0.25, rng))}) == 0.0  # the closed form: no draw
    assert near > 10 * fair > 0.0 and fair < 0.2  # (the chi-square guess of p: 0.05 for the extreme one here)
    both = Counts({det.name: {"a": counts(typical), "b": counts(extreme)}}, 0, 0, {})
    assert finalize_cost(det, both) == pytest.approx(cost(det) + fair + near)
    assert finalize_cost(det, Counts({}, 0, 0, {})) == cost(det)
