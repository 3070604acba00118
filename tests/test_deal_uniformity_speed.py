"""Issue 15 speed-ups of deal_uniformity and dealer_cutter, held equal to their specs: the numba stage of the
count-form null (`_stage_kernel`) equals its numpy spec `stage_tally`; the whole count-form simulation draws the same
tables from the same generator as the numpy loop it replaced (same draws in the same order); dealer_cutter's control
"with other cutters" (the dealer's total less the pair) equals the merge of the other pairs."""

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


def _old_multinomial(n, p, rng):
    """The numpy chain of binomials as it was before `_take_category` (the spec of the draws)."""
    out = np.zeros(n.shape + (p.shape[1],), dtype=np.int64)
    left = n.astype(np.int64)
    mass = np.ones(p.shape[0])
    for c in range(p.shape[1] - 1):
        q = np.clip(np.divide(p[:, c], mass, out=np.zeros_like(mass), where=mass > 0), 0.0, 1.0)
        m = rng.binomial(left, q[None, :])
        out[:, :, c] = m
        left = left - m
        mass = mass - p[:, c]
    out[:, :, -1] = left
    return out


def _spec_tables(by_cfg, B, rng):
    """The count form of `_simulate_tables` in numpy (the loop before `_stage_kernel`), count form only."""
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
                m = _old_multinomial(n, p, rng)
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
