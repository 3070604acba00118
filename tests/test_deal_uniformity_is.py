"""deal_uniformity's importance-sampling p-value (issue 15: a dealer whose p-value is small but not tiny no longer
costs some 10 / p simulated seasons).

Checked here, with fixed seeds:
- the tilted sampler (`_simulate_tilted`, the count form) draws the law it claims: against a spec that deals each
  deal from a uniform shuffle and keeps it with chance e^(λY) / max(1, e^λ) (rejection, so exactly the tilted
  law), per cell, the means and variances agree, and the tilted cell's mean is its exact value;
- the importance weights are right: the weighted mean of every cell over draws of the whole proposal is the null's
  exact expectation (a wrong weight or a wrong sampler for a tilt moves it);
- `is_pvalue`, and the Besag-Clifford-then-importance rule of `mc_pvalue`, are valid: P(p <= u) <= u on null
  seasons at several u (statistical tests);
- a planted stacker who escapes the closed-form shortcut gets a p-value far below the capped Monte Carlo's floor,
  and the finalize says which method gave it.
"""

import numpy as np
import pytest

from auditor.detectors import deal_uniformity as du
from auditor.facts import config
from auditor.rules import PRESETS

SMALL = [(("scotch_whist", "foster"), 4, 12), (("all_fours", "foster"), 2, 10), (("scotch_whist", "russian"), 5, 6)]


def _by_cfg(cases=SMALL) -> dict:
    return du.canonical_cfgs({config(PRESETS[p], n): D for p, n, D in cases})


def _tilted_by_rejection(by_cfg: dict, cell: tuple[int, int], lam: float, B: int,
                         rng: np.random.Generator) -> np.ndarray:
    """The spec of `_simulate_tilted`: B seasons, each deal drawn from uniform shuffles (`_simulate_per_deal` of one
    deal) and kept with chance e^(λY) / max(1, e^λ), Y = whether the deal's table has its honour in `cell`."""
    C, col = cell
    out = np.zeros((B, du.N_CLASSES, 6), np.int64)
    top = max(1.0, float(np.exp(lam)))
    for cfg, D in by_cfg.items():
        need = B * D
        kept: list[np.ndarray] = []
        while need > 0:
            deals = du._simulate_per_deal(cfg, 1, 4 * need + 64, rng).reshape(-1, du.N_CLASSES, 6)
            y = deals[:, C, col] > 0
            keep = rng.random(len(deals)) < np.exp(lam * y) / top
            got = deals[keep][:need]
            kept.append(got)
            need -= len(got)
        out += np.concatenate(kept).reshape(B, D, du.N_CLASSES, 6).sum(axis=1)
    return out


def _tilted_mean(by_cfg: dict, cell: tuple[int, int], lam: float) -> float:
    """The exact mean of the tilted cell: Σ_deals p e^λ / (1 - p + p e^λ)."""
    C, col = cell
    total = 0.0
    for cfg, D in by_cfg.items():
        cols = du._cols(cfg)
        if col not in cols:
            continue
        p = du._expected(cfg)[C, cols.index(col)]
        total += D * p * np.exp(lam) / (1 - p + p * np.exp(lam))
    return total


@pytest.mark.parametrize("cell,lam", [((0, 1), 1.2), ((du.TURNUP, 1), 0.9), ((du.UNDEALT, 4), -0.8),
                                      ((1, 0), 1.5), ((3, 3), 0.7)])
def test_tilted_sampler_draws_the_tilted_law(cell, lam):
    by_cfg = _by_cfg()
    B = 3000
    fast = du._simulate_tilted(by_cfg, np.full(B, cell[0]), cell[1], np.full(B, lam), np.random.default_rng(11))
    spec = _tilted_by_rejection(by_cfg, cell, lam, B, np.random.default_rng(12))
    a, b = fast.reshape(B, -1).astype(float), spec.reshape(B, -1).astype(float)
    se = np.sqrt((a.var(axis=0) + b.var(axis=0)) / B) + 1e-12
    z = (a.mean(axis=0) - b.mean(axis=0)) / se
    assert np.abs(z).max() < 4.5, (np.argmax(np.abs(z)), z.max(), z.min())
    # variances agree too (a sampler right in the mean and wrong in the spread is caught)
    used = b.var(axis=0) > 0.05
    assert np.all(np.abs(np.log(a.var(axis=0)[used] / b.var(axis=0)[used])) < 0.2)
    exact = _tilted_mean(by_cfg, cell, lam)
    assert abs(a[:, cell[0] * 6 + cell[1]].mean() - exact) < 4.5 * se[cell[0] * 6 + cell[1]]
    # and the check can fail: the untilted null is far from the tilted law in that cell
    null = du._simulate_tables(by_cfg, B, np.random.default_rng(13)).reshape(B, -1).astype(float)
    k = cell[0] * 6 + cell[1]
    assert abs(null[:, k].mean() - b[:, k].mean()) > 6 * se[k]


def test_weighted_proposal_has_the_null_means():
    by_cfg = _by_cfg()
    design = du.tilt_design(by_cfg)
    tab = du.draw_proposal(by_cfg, design, 40_000, np.random.default_rng(21))
    w = design.weights(tab)
    _obs, exp_ = du._table({c: (D, np.zeros((du.N_CLASSES, 6))) for c, D in by_cfg.items()})
    assert w.max() <= 2.0 + 1e-12
    x = tab.reshape(len(tab), -1).astype(float) * w[:, None]
    mean, se = x.mean(axis=0), x.std(axis=0) / np.sqrt(len(x)) + 1e-12
    z = (mean - exp_.reshape(-1)) / se
    assert np.abs(z[exp_.reshape(-1) > 0]).max() < 4.5
    assert abs(w.mean() - 1.0) < 4.5 * w.std() / np.sqrt(len(w))
    # unweighted, the proposal is far from the null: the weights are doing the work
    raw = tab.reshape(len(tab), -1).astype(float)
    assert np.abs((raw.mean(axis=0) - exp_.reshape(-1)) / (raw.std(axis=0) / np.sqrt(len(raw)) + 1e-12)).max() > 10


def _stat_of(exp_: np.ndarray):
    mask = exp_ > 0

    def stat_of(t):
        return ((((t - exp_[None]) ** 2) / np.where(mask, exp_, 1.0)[None]) * mask[None]).sum(axis=(1, 2))
    return stat_of


@pytest.fixture(scope="module")
def null_pvalues() -> tuple[np.ndarray, np.ndarray]:
    """On 1,000 null seasons of two configurations: `is_pvalue` with 40 draws, and `mc_pvalue` with the switch to
    importance sampling after 30 Besag-Clifford draws (so that both branches are taken often)."""
    by_cfg = _by_cfg([(("all_fours", "foster"), 2, 10), (("scotch_whist", "foster"), 4, 8)])
    _obs, exp_ = du._table({c: (D, np.zeros((du.N_CLASSES, 6))) for c, D in by_cfg.items()})
    stat_of = _stat_of(exp_)
    rng = np.random.default_rng(31)
    seasons = du._simulate_tables(by_cfg, 1000, rng)
    p_is, p_mc, branch = [], [], []
    for t in seasons:
        p_is.append(du.is_pvalue(by_cfg, t, stat_of, 40, rng))
        stat = float(stat_of(t[None].astype(float))[0])
        p, _bc, is_n = du.mc_pvalue(stat, by_cfg, t, lambda B, g: stat_of(du._simulate_tables(by_cfg, B, g)),
                                    stat_of, rng, cap=1000, is_after=30, is_draws=40)
        p_mc.append(p)
        branch.append(is_n > 0)
    assert 0.1 < np.mean(branch) < 0.9  # both branches are exercised
    return np.array(p_is), np.array(p_mc)


@pytest.mark.parametrize("u", [0.3, 0.1, 0.05, 0.02])
def test_importance_sampling_pvalue_is_valid(null_pvalues, u):
    for p in null_pvalues:
        share = float((p <= u).mean())
        assert share <= u + 3 * np.sqrt(u * (1 - u) / len(p)), (u, share)


def test_importance_sampling_pvalue_is_not_trivially_conservative(null_pvalues):
    # valid and useful: under the null it spreads over (0, 1] like a p-value, not piled at 1
    p_is, p_mc = null_pvalues
    for p in (p_is, p_mc):
        assert 0.3 < float((p <= 0.5).mean()) < 0.7
        assert float((p <= 0.1).mean()) > 0.05


def test_a_stacker_past_the_shortcut_gets_a_pvalue_below_the_monte_carlo_floor():
    by_cfg = du.canonical_cfgs({config(PRESETS[("scotch_whist", "foster")], 4): 300,
                                config(PRESETS[("all_fours", "foster")], 2): 200})
    rng = np.random.default_rng(41)
    t = du._simulate_tables(by_cfg, 1, rng)[0].astype(np.int64)
    j = du.COLS.index(9)
    moved = rng.binomial(t[1:du.TURNUP, j], 0.25)  # a Jack stacker: a quarter of the others' Jacks moved to him
    t[1:du.TURNUP, j] -= moved
    t[0, j] += moved.sum()
    assert du.lr_pvalue(by_cfg, t) > 1e-4  # the closed form does not see him
    counts = du.UniformityCounts(list(by_cfg), np.array(list(by_cfg.values()), np.int64),
                                 np.stack([t] + [np.zeros_like(t)] * (len(by_cfg) - 1)))
    det = du.DealUniformity(details=False, fdr=0.05)
    [res] = det.finalize({"kate": counts}, np.random.default_rng(3))
    floor = 1.0 / (det.cap(1) + 1)
    assert res.detail["is_draws"] == du.IS_DRAWS and res.method == du.IS_METHOD
    assert res.detail["mc_draws"] == min(det.cap(1), du.IS_AFTER)
    assert res.pvalue < floor / 10
    # without importance sampling the same dealer ends at the capped Besag-Clifford floor
    [old] = du.DealUniformity(details=False, fdr=0.05, is_draws=0).finalize({"kate": counts},
                                                                            np.random.default_rng(3))
    assert old.method == du.MC_METHOD and old.pvalue == floor


def test_a_monte_carlo_cap_set_for_speed_caps_the_importance_draws():
    assert du.DealUniformity().importance_draws() == du.IS_DRAWS
    det = du.DealUniformity()
    det.mc_max = 300  # as the studies and the tests that want a short Monte Carlo set it
    assert det.importance_draws() == 300
    assert du.DealUniformity(is_draws=0, mc_max=300).importance_draws() == 0


def test_a_configuration_without_deals_adds_no_cell():
    base = {config(PRESETS[("scotch_whist", "foster")], 4): 50}
    with_empty = du.canonical_cfgs({**base, config(PRESETS[("all_fours", "foster")], 2): 0})
    a, b = du.tilt_design(du.canonical_cfgs(base)), du.tilt_design(with_empty)
    assert np.isfinite(b.lams).all() and np.isfinite(b.log_m).all()
    assert np.array_equal(a.cells, b.cells) and np.array_equal(a.lams, b.lams)
