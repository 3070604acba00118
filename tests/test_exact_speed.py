"""Issue 15 speed-ups of auditor.stats.exact, held bit-identical to the computation they replaced: the cached
binomial, the power search's cached null threshold and its skipped convolution with no fixed trials."""

import numpy as np
import pytest

from auditor.stats import exact


def _power_spec(groups, alpha, q, fixed=()):
    """`power` as it was: the null's threshold and the alternative, each convolved with the fixed trials."""
    base = exact._pb_grouped(fixed)
    c = exact._convolve(exact._pb_grouped(groups), base).critical(alpha)
    alt = exact._merge_groups((exact.stacked(p, q), k) for p, k in groups)
    return exact._convolve(exact._pb_grouped(alt), base).sf(c)


def test_cached_binomial_is_the_binomial_and_read_only():
    for n, p in [(0, 0.3), (7, 0.0), (5, 1.0), (40, 0.271), (5000, 0.314), (123, 0.999)]:
        a, b = exact._binomial(n, p), exact.binomial(n, p)
        assert a.lo == b.lo and np.array_equal(a.pmf, b.pmf)
        assert exact._binomial(n, p) is a and not a.pmf.flags.writeable


@pytest.mark.parametrize("fixed", [(), ((0.2, 7),)])
def test_power_is_bit_identical_to_its_spec(fixed):
    rng = np.random.default_rng(4)
    for _ in range(30):
        groups = exact._merge_groups((round(float(p), 3), int(k)) for p, k in
                                     zip(rng.uniform(0.05, 0.4, 3), rng.integers(1, 60, 3), strict=True))
        for q in (0.0, 0.125, 0.5, 0.8125, 1.0):
            for alpha in (0.05, 1e-4):
                assert exact.power(groups, alpha, q, fixed=fixed) == _power_spec(groups, alpha, q, fixed)
    assert 0.0 < exact.power(((0.25, 80),), 1e-3, 0.3) < 1.0  # not a degenerate grid


def test_with_skips_only_the_point_mass_at_zero():
    a = exact._pb_grouped(((0.3, 20), (0.1, 9)))
    assert exact._with(a, exact._pb_grouped(())) is a
    b = exact._pb_grouped(((0.2, 3),))
    got, want = exact._with(a, b), exact._convolve(a, b)
    assert got.lo == want.lo and np.array_equal(got.pmf, want.pmf)
    # the convolution it skips would have returned the same numbers
    same = exact._convolve(a, exact.Dist(0, np.ones(1)))
    assert same.lo == a.lo and np.array_equal(same.pmf, a.pmf)
