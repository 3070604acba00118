"""Exact nulls: Poisson-binomial against brute-force enumeration, binomial tails against scipy, limits, power."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from auditor.stats import exact


def brute_pb(p):
    """Distribution of the number of successes by enumerating all 2^n outcomes."""
    n = len(p)
    pmf = np.zeros(n + 1)
    for bits in itertools.product((0, 1), repeat=n):
        pr = 1.0
        for b, pi in zip(bits, p, strict=False):
            pr *= pi if b else 1 - pi
        pmf[sum(bits)] += pr
    return pmf


@pytest.mark.parametrize("seed", range(5))
def test_poisson_binomial_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    p = list(rng.choice([11 / 35, 8 / 35, 1 / 13, 0.5, 0.02], size=12))
    d = exact.poisson_binomial(p)
    ref = brute_pb(p)
    full = np.zeros(len(p) + 1)
    full[d.lo:d.hi + 1] = d.pmf
    np.testing.assert_allclose(full, ref, rtol=1e-10, atol=1e-15)
    for x in range(len(p) + 2):
        assert d.sf(x) == pytest.approx(ref[x:].sum(), rel=1e-10, abs=1e-15)
    assert d.mean() == pytest.approx(sum(p))


def test_binomial_tail_keeps_relative_accuracy_far_out():
    # P(Bin(2000, 11/35) >= 900): about 1e-71; scipy computes it accurately in its own way
    d = exact.binomial(2000, 11 / 35)
    for x in (650, 750, 900):
        assert d.sf(x) == pytest.approx(stats.binom.sf(x - 1, 2000, 11 / 35), rel=1e-8)


def test_grouped_equals_ungrouped_and_is_order_free():
    p = [0.3] * 50 + [0.1] * 70 + [0.3] * 25
    a = exact.poisson_binomial(p)
    b = exact.poisson_binomial(list(reversed(p)))
    c = exact.poisson_binomial(exact.group_probs(p))
    assert a.lo == b.lo == c.lo
    np.testing.assert_allclose(a.pmf, b.pmf)
    np.testing.assert_allclose(a.pmf, c.pmf)
    assert exact.group_probs(p) == ((0.1, 70), (0.3, 75))


def test_sum_dist_matches_brute_force():
    pmf1 = np.array([0.2, 0.5, 0.3])
    pmf2 = np.array([0.6, 0.1, 0.1, 0.2])
    d = exact.sum_dist([(pmf1, 3), (pmf2, 2)])
    ref = np.zeros(3 * 2 + 2 * 3 + 1)
    for xs in itertools.product(range(3), range(3), range(3), range(4), range(4)):
        ref[sum(xs)] += pmf1[xs[0]] * pmf1[xs[1]] * pmf1[xs[2]] * pmf2[xs[3]] * pmf2[xs[4]]
    full = np.zeros(len(ref))
    full[d.lo:d.hi + 1] = d.pmf
    np.testing.assert_allclose(full, ref, atol=1e-15)


def test_critical_value_and_limits():
    d = exact.binomial(200, 11 / 35)
    c = d.critical(0.05)
    assert d.sf(c) <= 0.05 < d.sf(c - 1)
    lo, hi = d.lower_limit(0.025), d.upper_limit(0.025)
    assert d.cdf(lo - 1) <= 0.025 < d.cdf(lo)
    assert d.sf(hi + 1) <= 0.025 < d.sf(hi)
    assert lo < 200 * 11 / 35 < hi


def test_exact_test_level_holds_statistically():
    """Under the null the exact test rejects at most alpha of the time (discrete: conservative)."""
    rng = np.random.default_rng(7)
    p = np.array([11 / 35] * 120 + [8 / 35] * 80)
    d = exact.poisson_binomial(p)
    sims = (rng.random((20000, p.size)) < p).sum(axis=1)
    pv = np.array([d.sf(s) for s in range(p.size + 1)])[sims]
    for alpha in (0.01, 0.05, 0.1):
        rate = (pv <= alpha).mean()
        assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / sims.size)
        assert rate >= 0.5 * alpha  # not absurdly conservative at this size


def test_power_and_min_detectable():
    groups = ((11 / 35, 200),)
    alpha = exact.per_test_level(0.05, 101)
    assert alpha == pytest.approx(0.05 / 101)
    # the yardstick: the exact one-sided test alone reaches about 95% at q = 0.25
    pw = exact.power(groups, alpha, 0.25)
    assert 0.9 < pw < 0.99
    q = exact.min_detectable(groups, alpha)
    assert exact.power(groups, alpha, q) >= 0.8 > exact.power(groups, alpha, q - 0.002)
    # simulated power agrees with the exact figure
    rng = np.random.default_rng(3)
    alt = exact.stacked(11 / 35, 0.25)
    sims = rng.binomial(200, alt, size=20000)
    c = exact.binomial(200, 11 / 35).critical(alpha)
    assert (sims >= c).mean() == pytest.approx(pw, abs=0.01)
    # too little play: nothing detectable
    assert exact.min_detectable(((11 / 35, 3),), alpha) is None


def test_sum_tail_matches_the_exact_convolution_on_long_sums():
    """`sum_tail` (FFT on a window, exact in small tails) against `sum_dist` on sums long enough to take the FFT
    path: the mean exactly, every tail to 1e-9 relative, tiny tails exactly."""
    from auditor.stats.exact import FFT_MIN_SUPPORT, sum_dist, sum_tail

    a = np.array([0.3, 0.35, 0.2, 0.1, 0.04, 0.01])
    b = np.array([0.5, 0.3, 0.15, 0.05])
    parts = [(a, 900), (b, 700)]
    assert 1 + 900 * 5 + 700 * 3 >= FFT_MIN_SUPPORT
    d = sum_dist(parts)
    m = d.mean()
    sd = np.sqrt(d.var())
    for x in [0, m - 5 * sd, m - sd, m, m + sd, m + 3 * sd, m + 5 * sd, m + 8 * sd, m + 30 * sd, 10_000]:
        got, mean = sum_tail(parts, x)
        want = d.sf(x)
        assert abs(mean - m) < 1e-9 * m
        assert abs(got - want) <= 1e-9 * max(want, 1e-300), (x, got, want)
    # a small sum stays on the exact path, bit for bit
    assert sum_tail([(a, 10)], 20) == (sum_dist([(a, 10)]).sf(20), sum_dist([(a, 10)]).mean())


def test_prefixes_give_the_bits_of_poisson_binomial():
    """`PBPrefixes`: a set of trials that starts like the base (a dealer's trials less one pair's) from the kept
    convolutions: the same pmf, bit for bit, as `poisson_binomial` of the set; sets that leave the base at the first
    group, at the last, or never, and longer than the base."""
    from auditor.stats.exact import PBPrefixes, group_probs, poisson_binomial

    rng = np.random.default_rng(11)
    for _ in range(20):
        p = np.round(rng.uniform(0.05, 0.6, int(rng.integers(50, 400))), 2)
        base = group_probs(p)
        pre = PBPrefixes(base)
        for _ in range(6):
            g = list(base)
            i = int(rng.integers(0, len(g)))
            pv, n = g[i]
            g[i] = (pv, n - int(rng.integers(0, n + 1)))
            g = [x for x in g if x[1] > 0]
            if rng.random() < 0.2:
                g.append((0.99, 3))
            d, want = pre.dist(tuple(g)), poisson_binomial(tuple(g))
            assert d.lo == want.lo and d.pmf.tobytes() == want.pmf.tobytes()
        d, want = pre.dist(base), poisson_binomial(base)
        assert d.lo == want.lo and d.pmf.tobytes() == want.pmf.tobytes()


def test_limits_are_the_lower_and_upper_limits():
    """`Dist.limits` (issue 15, a twenty-ninth session: dealer_cutter's funnels summed the same pmf four times)
    gives `lower_limit` and `upper_limit` of each level, from the same sums."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        p = rng.random(int(rng.integers(1, 300))) ** float(rng.choice([1.0, 4.0]))
        d = exact.poisson_binomial(p)
        probs = (0.025, 0.001, 1e-9, 0.5, 0.0)
        assert d.limits(probs) == [[d.lower_limit(q), d.upper_limit(q)] for q in probs]
    point = exact.Dist(7, np.ones(1))
    assert point.limits((0.025,)) == [[7, 7]]
