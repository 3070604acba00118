"""Issue 15 speed-ups of auditor.stats.exact, held bit-identical to the computation they replaced: the cached
binomial, the power search's cached null threshold and its skipped convolution with no fixed trials."""

import math

import numpy as np
import pytest

from auditor.stats import exact


def _power_spec(groups, alpha, q, fixed=()):
    """`power` as it was: the null's threshold and the alternative, each convolved with the fixed trials."""
    base = exact._pb_grouped(fixed)
    c = exact._convolve(exact._pb_grouped(groups), base).critical(alpha)
    alt = exact._merge_groups((exact.stacked(p, q), k) for p, k in groups)
    return exact._convolve(exact._pb_grouped(alt), base).sf(c)


def _binomial_spec(n, p):
    """`exact.binomial` as it was written first: scipy's gammaln, xlogy and xlog1py over the k's."""
    from scipy import special as sp

    if n <= 0 or p <= 0.0:
        return exact.Dist(0, np.ones(1))
    if p >= 1.0:
        return exact.Dist(n, np.ones(1))
    mean = n * p
    sd = np.sqrt(n * p * (1 - p))
    lo = max(0, int(np.floor(mean - 40.0 * sd - 10)))
    hi = min(n, int(np.ceil(mean + 40.0 * sd + 10)))
    k = np.arange(lo, hi + 1, dtype=float)
    logpmf = (sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)
              + sp.xlogy(k, p) + sp.xlog1py(n - k, -p))
    return exact.Dist(lo, np.exp(logpmf))


def test_binomial_is_its_spec_to_the_last_bit():
    """The table of log-factorials and the logs taken once give the very numbers of gammaln/xlogy/xlog1py: small
    and large n (past the table's first size, so that it grows), p near 0, near 1 and in between."""
    rng = np.random.default_rng(21)
    cases = [(1, 0.5), (2, 1e-300), (3, 1 - 1e-16), (4095, 0.3), (4096, 0.3), (9000, 0.999), (150_000, 2e-5)]
    for i in range(6000):
        n = int(rng.integers(1, 60)) if i % 3 else int(rng.integers(60, 20_000))
        p = float(rng.random() ** rng.integers(1, 14))
        cases.append((n, 1 - p if i % 5 == 0 else p))
    cases += [(int(n), round(float(p), 4)) for n, p in zip(rng.integers(1, 300, 500), rng.random(500), strict=True)]
    for n, p in cases:
        got, want = exact.binomial(n, p), _binomial_spec(n, p)
        assert got.lo == want.lo and np.array_equal(got.pmf, want.pmf), (n, p)


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


# ---------------------------------------------------------------- the narrow forms (issue 15, a ninth session)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def test_narrow_tails_equal_the_full_ones_to_their_last_bits():
    """`pb_sf_narrow`: the terms below NARROW_BELOW dropped, a tail of at least NARROW_MIN_SF keeps its relative
    accuracy (within a few units of 1e-16 of the full convolution's below 0.5; near 1, within the full sum's own
    rounding), and a smaller one is the full one itself."""
    rng = np.random.default_rng(11)
    worst = 0.0
    fell_back = 0
    for _ in range(60):
        g = int(rng.integers(1, 5))
        groups = exact._merge_groups((round(float(p), 4), int(k)) for p, k in
                                     zip(rng.uniform(0.01, 0.6, g), rng.integers(1, 6000, g), strict=True))
        full = exact._pb_grouped(groups)
        narrow = exact._pb_narrow(groups)
        assert narrow.lo >= full.lo and narrow.hi <= full.hi and len(narrow.pmf) <= len(full.pmf)
        for x in np.linspace(full.lo, full.hi + 1, 40):
            want = full.sf(x)
            got = exact.pb_sf_narrow(groups, x)
            if want < exact.NARROW_MIN_SF:
                assert got == want  # computed in full
                fell_back += 1
            elif want < 0.5:
                worst = max(worst, _rel(got, want))
            else:  # near 1 the full sum of thousands of terms carries its own rounding (some 1e-12)
                assert _rel(got, want) < 1e-10
    assert worst < 1e-13
    assert fell_back > 100  # the far tails were exercised


def test_power_from_the_narrow_forms_equals_the_full_power():
    rng = np.random.default_rng(12)
    for _ in range(25):
        groups = exact._merge_groups((round(float(p), 3), int(k)) for p, k in
                                     zip(rng.uniform(0.05, 0.4, 3), rng.integers(200, 4000, 3), strict=True))
        fixed = ((0.11, int(rng.integers(1, 3000))),)
        for q in (0.001, 0.01, 0.05, 0.2):
            for alpha in (0.05, 1e-5):
                assert _rel(exact.power(groups, alpha, q, fixed=fixed), _power_spec(groups, alpha, q, fixed)) < 1e-10
    # below NARROW_MIN_SF the threshold comes from the full distribution
    g = ((0.3, 500),)
    assert exact.power(g, 1e-25, 0.2) == _power_spec(g, 1e-25, 0.2)


def test_narrow_prefixes_are_the_narrow_distributions():
    base = ((0.05, 900), (0.2, 1400), (0.31, 700))
    pre = exact.PBPrefixes(base, narrow=True)
    for groups in (base, ((0.05, 900), (0.2, 1300), (0.31, 700)), ((0.05, 850), (0.31, 700)), ((0.2, 10),)):
        a, b = pre.dist(groups), exact._pb_narrow(groups)
        assert a.lo == b.lo and np.array_equal(a.pmf, b.pmf)


def test_rounded_is_pythons_round_to_the_last_bit():
    from auditor.detectors.base import rounded

    rng = np.random.default_rng(13)
    values = np.concatenate([
        rng.uniform(-1e3, 1e3, 20000), rng.uniform(0, 1, 20000),
        np.round(rng.uniform(0, 10, 20000), 4) + 0.00005,  # near ties at 4 digits
        rng.integers(0, 10 ** 6, 20000) / 2.0 ** rng.integers(0, 20, 20000),  # exact binary ties
        np.exp(rng.uniform(-700, 700, 5000)),
        [0.0, -0.0, np.nan, np.inf, -np.inf, 1e300, 2.5e-5, 0.03125, -0.03125, 1.00005, 5e-324, -1e-9]])
    for digits in (0, 1, 4, 5, 6):
        got = rounded(values, digits)
        want = [round(float(v), digits) for v in values]
        assert len(got) == len(want)
        for v, a, b in zip(values, got, want, strict=True):
            assert (a == b and np.copysign(1, a) == np.copysign(1, b)) or (a != a and b != b), (v, digits, a, b)


def test_clean_floats_are_the_documents_floats_to_the_last_bit():
    """`clean_floats` against the rule it vectorises, `_clean(float(v))` (`float(f"{v:.6g}")`, None for NaN and
    the infinities), on values of every size, on the 4-digit values a timeline holds (`rounded(x, 4)`, up to
    millions), on near ties at the sixth digit, and next to powers of ten."""
    from auditor.detectors.base import rounded
    from auditor.stats.family import _clean, clean_floats

    rng = np.random.default_rng(29)
    decades = 10.0 ** np.arange(-30, 31)
    values = np.concatenate([
        rng.uniform(-1e3, 1e3, 20000), rng.uniform(0, 1, 20000),
        rounded(rng.uniform(0, 5e6, 40000), 4), rounded(np.exp(rng.uniform(-5, 15, 20000)), 4),
        np.round(rng.uniform(1, 10, 20000), 5) + 0.000005,  # near ties at the sixth digit
        rng.integers(10 ** 5, 10 ** 6, 20000) + 0.5,  # exact binary ties at the sixth digit
        np.exp(rng.uniform(-700, 700, 5000)),
        decades, np.nextafter(decades, 0), np.nextafter(decades, np.inf), 0.9999995 * decades, 9.999995 * decades,
        [0.0, -0.0, np.nan, np.inf, -np.inf, 1e300, 2.5e-5, 0.03125, -0.03125, 999999.5, 99999.95, 5e-324, -1e-9]])
    got = clean_floats(values)
    want = [_clean(float(v)) for v in values]
    assert len(got) == len(want)
    for v, a, b in zip(values, got, want, strict=True):
        assert (a is None and b is None) or (a == b and np.copysign(1, a) == np.copysign(1, b)), (v, a, b)


def test_timeline_points_are_clean_as_they_are_made(monkeypatch):
    """A timeline's points are what `_clean` makes of them (so packing a test's detail need not walk them), and,
    once cleaned, the points made as before (`rounded(x, 4)` alone, then `_clean` when the detail was packed)."""
    import auditor.detectors.base as B
    from auditor.stats.family import CleanList, _clean

    rng = np.random.default_rng(3)
    n = 5000
    tl = B.Timeline.of(["t1", "t2"], rng.integers(0, 2, n), np.arange(n) * 60_000_000, rng.random(n) * 3000,
                       rng.random(n) * 3000, rng.random(n) * 1e4)
    kinds = [dict(counts=c, variance=v) for c in (True, False) for v in (True, False)]
    now = [tl.points(**k) for k in kinds]
    for pts in now:
        assert type(pts) is CleanList and len(pts) > 10
        plain = [list(r) for r in pts]
        assert _clean(plain) == plain  # already clean
        assert _clean(pts) is pts
    assert any(v >= 100 for row in now[3] for v in row[1:])  # values that 6 digits round further than 4 decimals
    monkeypatch.setattr(B, "_clean4", lambda v: B.rounded(v, 4))  # the points as they were made before
    before = [tl.points(**k) for k in kinds]
    # (the 4-decimal points differ from the clean ones somewhere: the test compares something)
    assert any(a != b for x, y in zip(before, now, strict=True) for ra, rb in zip(x, y, strict=True)
               for a, b in zip(ra, rb, strict=True))
    for x, y in zip(before, now, strict=True):
        assert _clean(list(x)) == y


# ---------------------------------------------------------------- the smallest detectable cheat (a fifteenth session)


def test_min_detectable_search_ends_where_the_bisection_does_in_fewer_evaluations(monkeypatch):
    """`min_detectable`'s guided search against its spec, the bisection, on random trials (with and without fixed
    trials, levels from 0.1 to 1e-8): the same answer every time, and at most half the exact power evaluations in
    all (the bisection makes eleven: the check at q = 1 and ten halvings)."""
    rng = np.random.default_rng(5)
    calls = [0]
    real = exact.power

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(exact, "power", counted)
    spent = {"spec": 0, "search": 0}
    answers = set()
    for i in range(300):
        g = int(rng.integers(1, 8))
        groups = exact._merge_groups((round(float(p), 3), int(k)) for p, k in
                                     zip(rng.uniform(0.01, 0.6, g), rng.integers(1, 400, g), strict=True))
        fixed = () if i % 3 else ((0.2, int(rng.integers(1, 50))),)
        alpha = float(10 ** -rng.uniform(1, 8))
        calls[0] = 0
        want = exact._min_detectable_bisection(groups, alpha, fixed=fixed)
        spent["spec"] += calls[0]
        calls[0] = 0
        got = exact.min_detectable.__wrapped__(groups, alpha, fixed=fixed)
        spent["search"] += calls[0]
        assert got == want, (groups, alpha, fixed)
        answers.add(got)
    assert None in answers and len(answers) > 100  # hopeless records and a spread of strengths
    assert spent["search"] <= spent["spec"] / 2, spent


# ---------------------------------------------------------------- the Poisson-binomial kernel (issue 15, a seventeenth session)


def _groups_zoo(rng, n_cases):
    """Grouped trials of every shape the detectors give: one to forty groups, probabilities from near 0 to near 1,
    counts from 0 to thousands, and the point masses (p = 0, p = 1, no trials)."""
    for i in range(n_cases):
        g = int(rng.integers(1, 40))
        groups = exact._merge_groups((float(rng.random() ** rng.integers(1, 6)),
                                      int(rng.integers(0 if i % 7 == 0 else 1, 3000 if i % 5 == 0 else 30)))
                                     for _ in range(g))
        if i % 11 == 0:
            groups = groups + ((1.0, 3),)
        if i % 13 == 0:
            groups = ((0.0, 5),) + groups
        yield groups


def test_the_kernel_is_the_numpy_convolution_but_for_the_order_of_its_sums():
    """`_pb_grouped` and `_pb_narrow` (`_pb_kernel`) against their specs (numpy's convolution of `binomial`s):
    the same support, trimmed at the same entries, and every entry within a few units of 1e-16 relative (numpy sums
    each entry through BLAS in another order), however far out in the tails; so their tails too."""
    rng = np.random.default_rng(17)
    worst = 0.0
    for groups in _groups_zoo(rng, 1500):
        for fast, spec in ((exact._pb_grouped, exact._pb_grouped_spec), (exact._pb_narrow, exact._pb_narrow_spec)):
            got, want = fast.__wrapped__(groups), spec(groups)
            assert got.lo == want.lo and len(got.pmf) == len(want.pmf), groups
            worst = max(worst, float((np.abs(got.pmf - want.pmf) / want.pmf).max()))
            for x in np.linspace(want.lo, want.hi, 7):
                assert _rel(got.sf(x), want.sf(x)) < 1e-12
    assert worst < 1e-13


def test_the_kernel_makes_each_binomial_as_binomial_does_to_the_last_bit():
    """One group through `_pb_kernel` (its binomial convolved with the point mass 1, which multiplies by 1.0) is
    `binomial`'s log pmf (`binomial_log`: the same bounds, the same log terms) through libm's exp, bit for bit, and
    so is its narrow form, trimmed as `_binomial_narrow` trims. `binomial` itself takes numpy's exp, which equals
    libm's on some machines and is within one unit in the last place of it on others: on an AVX-512 machine (the
    eighteenth session's) numpy's own exp differed in the last bit for 109 of Binomial(4095, 0.3)'s 2,368 entries,
    all below 1e-249, where the kernel had been held equal to `binomial` itself and the test failed there."""
    rng = np.random.default_rng(18)
    cases = [(1, 0.5), (4095, 0.3), (4096, 0.3), (9000, 0.999), (150_000, 2e-5), (3, 1 - 1e-16), (0, 0.4),
             (6, 0.0), (6, 1.0)]
    cases += [(int(rng.integers(1, 20_000)), float(rng.random() ** rng.integers(1, 8))) for _ in range(1500)]
    one = exact.Dist(0, np.ones(1))
    for n, p in cases:
        spec = exact._binomial(n, p)
        if n <= 0 or p <= 0.0 or p >= 1.0:  # the point masses: no exp at all
            for narrow in (False, True):
                got = exact._pb_from(one, ((p, n),), -1.0, narrow)
                assert got.lo == spec.lo and np.array_equal(got.pmf, spec.pmf), (n, p, narrow)
            continue
        lo, logpmf = exact.binomial_log(n, p)
        libm = exact.Dist(lo, np.array([math.exp(v) for v in logpmf]))
        for narrow in (False, True):
            got = exact._pb_from(one, ((p, n),), -1.0, narrow)
            want = exact._trimmed(libm, exact.NARROW_BELOW) if narrow else libm
            assert got.lo == want.lo and np.array_equal(got.pmf, want.pmf), (n, p, narrow)
        assert spec.lo == lo and len(spec.pmf) == len(logpmf)
        assert np.all(np.abs(libm.pmf - spec.pmf) <= np.spacing(np.maximum(libm.pmf, spec.pmf))), (n, p)


def test_a_nan_probability_is_refused_by_the_kernel_as_by_the_spec():
    groups = ((0.2, 3), (float("nan"), 2))
    with pytest.raises(ValueError):
        exact._pb_grouped_spec(groups)
    with pytest.raises(ValueError, match="NaN"):
        exact._pb_grouped.__wrapped__(groups)
