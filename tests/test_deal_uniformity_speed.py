"""Issue 15 speed-ups of deal_uniformity and dealer_cutter, held equal to their specs: the numba stage of the
count-form null (`_stage_kernel`) equals its numpy spec `stage_tally`; the whole count-form simulation draws the same
tables from the same generator as the Python loop of its spec (`multinomial_spec`, the same draws in the same order);
the binomial draws of that spec (`binomial_draw`) have the exact binomial distribution, on every branch;
dealer_cutter's control "with other cutters" (the dealer's total less the pair) equals the merge of the other
pairs."""

import numpy as np
import pytest

from auditor.audit import replay_for_audit
from auditor.detectors import deal_uniformity as du
from auditor.detectors.base import TrialSummary
from auditor.facts import config, facts_from_columns
from auditor.rules import PRESETS

DEMO = "fixtures/demo/season.jsonl.gz"
CASES = [(("scotch_whist", "foster"), 4), (("scotch_whist", "foster"), 6), (("all_fours", "foster"), 2),
         (("all_fours", "foster"), 3), (("scotch_whist", "russian"), 5)]


def _spec_tables(by_cfg, B, rng):
    """The count form of `_simulate_tables` in Python: each stage's multinomials by `multinomial_spec`, tallied by
    `stage_tally` (count form only)."""
    out = np.zeros((B, du.N_CLASSES, 6), dtype=np.int64)
    for cfg, D in by_cfg.items():
        probs, types, slots = du._null_plan(cfg)
        live = np.nonzero(slots)[0]
        split = rng.multinomial(D, probs, size=B)
        for t, (turned, rest) in enumerate(types):
            n = split[:, t:t + 1]
            if turned >= 0:
                out[:, du.TURNUP, turned] += n[:, 0]
            for j, (p, flat, starts) in enumerate(du._stages(tuple(int(x) for x in slots[live]), len(rest))):
                m = du.multinomial_spec(n, du.chain_of(p), rng)
                n = du.stage_tally(m, flat, starts, out, live, rest[j])
    return out


@pytest.mark.parametrize("preset,n", CASES)
def test_stage_kernel_equals_its_numpy_spec(preset, n):
    cfg = config(PRESETS[preset], n)
    _probs, types, slots = du._null_plan(cfg)
    live = np.nonzero(slots)[0].astype(np.int64)
    rest = max((r for _t, r in types), key=len)
    rng = np.random.default_rng(5)
    stages = du._stages(tuple(int(x) for x in slots[live]), len(rest))
    assert len(stages) >= 2
    for j, (p, flat, starts) in enumerate(stages):
        m = rng.integers(0, 7, size=(9, p.shape[0], p.shape[1]))
        a = np.zeros((9, du.N_CLASSES, 6), np.int64)
        b = a.copy()
        got = du._stage_kernel(m, flat, starts, a, live, rest[j])
        want = du.stage_tally(m, flat, starts, b, live, rest[j])
        assert got.shape == want.shape and (got == want).all() and (a == b).all() and a.sum() > 0
        assert (j == len(stages) - 1) == (got.shape[1] == 0)


@pytest.mark.parametrize("B", [1, 37])
def test_count_form_draws_the_same_tables_from_the_same_generator(B, monkeypatch):
    monkeypatch.setattr(du, "COUNT_FORM_FACTOR", 10**9)  # every configuration in the count form, whatever it costs
    by_cfg = du.canonical_cfgs({config(PRESETS[p], n): D for (p, n), D in zip(CASES, [300, 700, 500, 200, 400],
                                                                            strict=True)})
    assert all(du._count_cost(c) <= du.COUNT_FORM_FACTOR * D * len(du.honour_ranks(c.game))
               for c, D in by_cfg.items())  # all in the count form
    g1, g2 = np.random.default_rng(11), np.random.default_rng(11)
    got = du._simulate_tables(by_cfg, B, g1)
    want = _spec_tables(by_cfg, B, g2)
    assert (got == want).all() and got.sum() > 0
    assert g1.random() == g2.random()  # the generators are left in the same state


@pytest.mark.parametrize("n,q", [(7, 0.3), (40, 0.05), (12, 0.8), (1, 0.5), (200, 0.4), (150, 0.75), (60, 0.5)])
def test_binomial_draws_have_the_exact_binomial_distribution(n, q):
    """`binomial_draw` against scipy's pmf (chi-square goodness of fit, 20,000 draws, a fixed seed), on each branch:
    inversion of the smaller side (q <= 1/2, and n - k for q > 1/2) and numpy's own draw past INVERSION_MEAN; and
    the kernel draws the same numbers from the same generator. A draw that errs by one at the mode fails it."""
    from scipy import stats as st

    ch = du.chain_of(np.array([[q, 1.0 - q]]))
    assert (n * float(ch.lo[0, 0]) > du.INVERSION_MEAN) == (n in (200, 150))
    rng = np.random.default_rng(n)
    draws = np.array([du.binomial_draw(n, q, float(ch.lo[0, 0]), float(ch.l1m[0, 0]), float(ch.ratio[0, 0]), rng)
                      for _ in range(20_000)])
    g = np.random.default_rng(n)
    kern = du._multinomial(np.full((20_000, 1), n), ch, g)[:, 0, 0]
    assert (kern == draws).all()
    pmf = st.binom.pmf(np.arange(n + 1), n, q)
    keep = pmf * len(draws) >= 5  # the cells with enough expected draws; the rest pooled
    obs = np.bincount(draws, minlength=n + 1)
    o = np.r_[obs[keep], obs[~keep].sum()]
    e = np.r_[pmf[keep], pmf[~keep].sum()] * len(draws)
    o, e = o[e > 0], e[e > 0]
    assert st.chisquare(o, e).pvalue > 1e-3
    bent = draws.copy()
    bent[bent == int(np.argmax(pmf))] += 1  # the mode's draws one higher: a plainly wrong sampler
    ob = np.bincount(bent, minlength=n + 2)[:n + 1]
    ob = np.r_[ob[keep], ob[~keep].sum()][np.r_[pmf[keep], pmf[~keep].sum()] > 0]
    assert st.chisquare(ob * e.sum() / ob.sum(), e).pvalue < 1e-6


def test_binomial_draw_edges():
    """n = 0 or q = 0 draws nothing and gives 0; q = 1 gives n without drawing; a chain whose first category takes
    everything leaves nothing to the others."""
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    ch = du.chain_of(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    assert du.binomial_draw(0, 0.3, 0.3, np.log1p(-0.3), 0.3 / 0.7, rng) == 0
    assert du.binomial_draw(5, 0.0, 0.0, 0.0, 0.0, rng) == 0
    assert du.binomial_draw(5, 1.0, 0.0, 0.0, 0.0, rng) == 5
    got = du._multinomial(np.array([[9, 4]]), ch, rng)
    assert got.tolist() == [[[9, 0, 0], [0, 0, 4]]]
    assert rng.bit_generator.state == state  # not one random number drawn


def test_other_cutters_control_equals_the_merge_of_the_other_pairs():
    table = replay_for_audit([DEMO]).table
    counts = du.DealerCutter().count(table, None, facts=facts_from_columns(table))
    seen = 0
    for pairs in counts.values():
        total = TrialSummary.merge([du._untimed(v) for v in pairs.values()])
        for cutter, t in pairs.items():
            want = TrialSummary.merge([du._untimed(v) for c, v in pairs.items() if c != cutter])
            got = du._without(total, t)
            assert got.equal(want) and got.p.dtype == want.p.dtype and got.n.dtype == want.n.dtype
            seen += 1
    assert seen >= 6
    # a dealer with one cutter only: the others' merge is empty
    one = next(iter(next(iter(counts.values())).values()))
    assert len(du._without(du._untimed(one), one)) == 0
