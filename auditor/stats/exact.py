"""Exact discrete null distributions: the Poisson-binomial (a sum of independent Bernoulli trials with their own
probabilities), sums of small independent integer variables, their one-sided tails, limits, power and the smallest
detectable cheat strength.

Deals of different configurations (player count, pack, where the turn-up goes) mix in one subject's record, so a
subject's count is a Poisson-binomial, not a binomial. Trials with equal probabilities are grouped: the
distribution is the convolution of one binomial per distinct probability, each truncated where its mass falls
below 1e-300 (nothing a p-value can show), so a subject with 50,000 deals costs milliseconds.

All convolutions are direct sums of non-negative terms (no FFT, no `1 - cdf`): tails keep their relative accuracy
far below 1e-16. The Poisson-binomials (`_pb_grouped`, `_pb_narrow`, `PBPrefixes`) are made by one numba kernel
(`_pb_kernel`); the numpy forms they replaced are their specs (`_pb_grouped_spec`, `_pb_narrow_spec`), equal to them
but for the order of each entry's sum (a few units of 1e-16 relative; tests/test_exact_speed.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Callable, Iterable, Sequence
from typing import cast

import numba
import numpy as np
from scipy import special as _sp

Groups = tuple[tuple[float, int], ...]
"""Trials as (probability, count) pairs, sorted (`group_probs`)."""

_TAIL_SD = 40.0  # binomial mass beyond mean ± 40 sd is below 1e-300


@dataclass(frozen=True)
class Dist:
    """A distribution on the integers lo, lo+1, ..., lo+len(pmf)-1 (mass outside is below 1e-300)."""

    lo: int
    pmf: np.ndarray

    @property
    def hi(self) -> int:
        return self.lo + len(self.pmf) - 1

    def sf(self, x: float) -> float:
        """P(X >= x), the one-sided upper tail (exact, conservative for a discrete statistic)."""
        k = int(np.ceil(x - 1e-9)) - self.lo
        if k <= 0:
            return 1.0
        if k >= len(self.pmf):
            return 0.0
        return float(min(1.0, self.pmf[k:].sum()))

    def cdf(self, x: float) -> float:
        """P(X <= x)."""
        k = int(np.floor(x + 1e-9)) - self.lo
        if k < 0:
            return 0.0
        if k >= len(self.pmf) - 1:
            return 1.0
        return float(min(1.0, self.pmf[:k + 1].sum()))

    def mean(self) -> float:
        return float(np.dot(np.arange(self.lo, self.hi + 1), self.pmf))

    def var(self) -> float:
        x = np.arange(self.lo, self.hi + 1, dtype=float)
        m = float(np.dot(x, self.pmf))
        return float(np.dot((x - m) ** 2, self.pmf))

    def critical(self, alpha: float) -> int:
        """The smallest c with P(X >= c) <= alpha (the rejection threshold of a one-sided level-alpha test)."""
        tail = np.cumsum(self.pmf[::-1])[::-1]  # tail[j] = P(X >= lo + j)
        ok = np.nonzero(tail <= alpha)[0]
        return int(self.lo + ok[0]) if len(ok) else self.hi + 1

    def lower_limit(self, prob: float) -> int:
        """The largest l with P(X < l) <= prob (so P(X >= l) >= 1 - prob)."""
        below = np.concatenate([[0.0], np.cumsum(self.pmf)])  # below[j] = P(X < lo + j)
        ok = np.nonzero(below <= prob)[0]
        return int(self.lo + ok[-1])

    def upper_limit(self, prob: float) -> int:
        """The smallest u with P(X > u) <= prob."""
        tail = np.cumsum(self.pmf[::-1])[::-1]  # tail[j] = P(X >= lo + j)
        above = np.concatenate([tail[1:], [0.0]])  # above[j] = P(X > lo + j)
        ok = np.nonzero(above <= prob)[0]
        return int(self.lo + ok[0])

    def limits(self, probs: Sequence[float]) -> list[list[int]]:
        """[[lower_limit(p), upper_limit(p)] for p in probs], each from the same sums those compute, made once."""
        below = np.concatenate([[0.0], np.cumsum(self.pmf)])
        above = np.concatenate([np.cumsum(self.pmf[::-1])[::-1][1:], [0.0]])
        return [[int(self.lo + np.nonzero(below <= p)[0][-1]), int(self.lo + np.nonzero(above <= p)[0][0])]
                for p in probs]


def _convolve(a: Dist, b: Dist, floor: float = 1e-300) -> Dist:
    out = np.convolve(a.pmf, b.pmf)
    nz = np.nonzero(out > floor)[0]
    if len(nz) == 0:  # pragma: no cover - cannot happen for proper distributions
        return Dist(a.lo + b.lo, out)
    return Dist(a.lo + b.lo + int(nz[0]), out[nz[0]:nz[-1] + 1])


def binomial(n: int, p: float) -> Dist:
    """Binomial(n, p), truncated to mean ± 40 sd.

    log pmf(k) = lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1) + k log p + (n-k) log1p(-p), the log-gammas read from a
    table of `gammaln(j + 1.0)` and the two logs taken once: the same operations on the same values as
    `gammaln`/`xlogy`/`xlog1py` over the k's (tests/test_exact_speed.py holds the two equal to the last bit), at
    some half the cost for the small n that the collusion and cutter tests convolve by the hundred thousand."""
    if n <= 0 or p <= 0.0:
        return Dist(0, np.ones(1))
    if p >= 1.0:
        return Dist(n, np.ones(1))
    lo, logpmf = binomial_log(n, p)
    return Dist(lo, np.exp(logpmf))


def binomial_log(n: int, p: float) -> tuple[int, np.ndarray]:
    """`binomial`'s support start and log pmf over its support (n > 0, 0 < p < 1): what `_pb_kernel` exponentiates
    too (with libm's exp; numpy's exp, which `binomial` takes, may differ from it in the last bit: tests)."""
    mean = n * p
    sd = math.sqrt(n * p * (1 - p))
    lo = max(0, math.floor(mean - _TAIL_SD * sd - 10))
    hi = min(n, math.ceil(mean + _TAIL_SD * sd + 10))
    lg = _log_factorials(n)
    k = np.arange(lo, hi + 1, dtype=float)
    # xlogy(k, p) is k * log(p) (0 at k = 0, where this gives -0.0: the same sum); xlog1py(n - k, -p) is (n - k)
    # times scipy's own log1p(-p), which libm's log1p does not always equal to the last bit
    return lo, (lg[n] - lg[lo:hi + 1] - lg[n - hi:n - lo + 1][::-1]
                + k * math.log(p) + (n - k) * float(_sp.log1p(-p)))


_LOG_FACTORIALS = _sp.gammaln(np.arange(4096, dtype=float) + 1.0)


def _log_factorials(n: int) -> np.ndarray:
    """gammaln(j + 1.0) for j = 0..n at least (a table grown by doubling; elementwise, so the same values)."""
    global _LOG_FACTORIALS
    if n >= len(_LOG_FACTORIALS):
        _LOG_FACTORIALS = _sp.gammaln(np.arange(max(2 * len(_LOG_FACTORIALS), n + 1), dtype=float) + 1.0)
    table: np.ndarray = _LOG_FACTORIALS
    return table


def group_probs(p: Sequence[float] | np.ndarray) -> tuple[tuple[float, int], ...]:
    """Distinct probabilities with their multiplicities, sorted: a canonical, hashable summary of the trials."""
    arr = np.asarray(p, dtype=float)
    if arr.size == 0:
        return ()
    vals, counts = np.unique(arr, return_counts=True)
    return tuple((float(v), int(c)) for v, c in zip(vals, counts, strict=True))


@lru_cache(maxsize=16384)
def _binomial(n: int, p: float) -> Dist:
    """`binomial`, cached (read-only pmf): the power searches of many subjects meet the same (n, p) again and
    again (the bisection visits the same strengths q), so each is computed once."""
    d = binomial(n, p)
    d.pmf.setflags(write=False)
    return d


def _pb_grouped_spec(groups: Groups) -> Dist:
    """`_pb_grouped`'s spec: one binomial per group (`binomial`), convolved in group order by numpy, each result
    trimmed below 1e-300 (`_convolve`)."""
    d = Dist(0, np.ones(1))
    for p, k in groups:
        d = _convolve(d, _binomial(k, p))
    return d


@lru_cache(maxsize=4096)
def _pb_grouped(groups: Groups) -> Dist:
    """The Poisson-binomial of grouped trials (`_pb_grouped_spec`): its binomials made and convolved in one call of
    `_pb_kernel` (issue 15, speed: numpy's per-group calls were two thirds of `collusion`'s tests at 1M deals)."""
    return _pb_from(Dist(0, np.ones(1)), groups, 1e-300)


def _pb_from(start: Dist, groups: Groups, floor: float, narrow: bool = False) -> Dist:
    """`start` convolved with the binomial of each group in turn (narrow: the binomials trimmed below
    NARROW_BELOW, as `_binomial_narrow`), each result trimmed below `floor` as `_convolve` trims: `_pb_kernel`."""
    if not groups:
        return start
    ps = np.array([g[0] for g in groups], float)
    ns = np.array([g[1] for g in groups], np.int64)
    if np.isnan(ps).any():  # refused, as `binomial` refuses it (its bounds cannot be computed), not made up
        raise ValueError(f"a trial probability is NaN: {groups!r}"[:200])
    lg = _log_factorials(max(int(ns.max()), 0))
    with np.errstate(invalid="ignore", divide="ignore"):  # p outside (0, 1) is a point mass: its logs unused
        l1p = _sp.log1p(-ps)  # scipy's, as `binomial` takes it
    d_lo, pmf = _pb_kernel(int(start.lo), np.ascontiguousarray(start.pmf, dtype=float), ps, ns, l1p, lg,
                           NARROW_BELOW if narrow else -1.0, floor)
    return Dist(int(d_lo), pmf)


@numba.njit(cache=True)
def _above(a: np.ndarray, floor: float) -> tuple[int, int]:  # pragma: no cover - numba
    """The first and last index of the entries of `a` above `floor`, (-1, -1) when none is (`_trimmed`'s rule)."""
    first = -1
    last = -1
    for t in range(a.shape[0]):
        if a[t] > floor:
            if first < 0:
                first = t
            last = t
    return first, last


@numba.njit(cache=True)
def _pb_kernel(lo0: int, pmf0: np.ndarray, ps: np.ndarray, ns: np.ndarray, l1p: np.ndarray, lg: np.ndarray,
               bfloor: float, floor: float) -> tuple[int, np.ndarray]:  # pragma: no cover - numba
    """(lo0, pmf0) convolved with Binomial(ns[g], ps[g]) for each g in turn: each binomial made as `binomial` makes
    it (the same bounds and the same operations on the same values, `binomial_log`), but through libm's exp where
    `binomial` takes numpy's: equal to the last bit on some machines, within one unit in the last place on others
    (numpy's AVX-512 exp; tests/test_exact_speed.py), trimmed to its entries above `bfloor` when that is
    positive (`_trimmed`), then convolved as `_convolve` does: each entry of the product the sum of a[i] b[j] over
    i in order (numpy sums through BLAS, so a pmf's last bits may differ from `_pb_grouped_spec`'s), the result
    trimmed to its entries above `floor` (all kept when none is)."""
    cur = pmf0.copy()
    d_lo = lo0
    for g in range(len(ps)):
        n = ns[g]
        p = ps[g]
        if n <= 0 or p <= 0.0:
            b = np.ones(1)
            blo = 0
        elif p >= 1.0:
            b = np.ones(1)
            blo = n
        else:
            mean = n * p
            sd = math.sqrt(n * p * (1 - p))
            blo = max(0, math.floor(mean - _TAIL_SD * sd - 10))
            bhi = min(n, math.ceil(mean + _TAIL_SD * sd + 10))
            logp = math.log(p)
            b = np.empty(bhi - blo + 1)
            for t in range(bhi - blo + 1):
                k = blo + t
                kf = float(k)
                b[t] = math.exp(lg[n] - lg[k] - lg[n - k] + kf * logp + (float(n) - kf) * l1p[g])
            if bfloor > 0:
                first, last = _above(b, bfloor)
                if first >= 0:
                    blo += first
                    b = b[first:last + 1].copy()
        na = cur.shape[0]
        nb = b.shape[0]
        out = np.zeros(na + nb - 1)
        for i in range(na):
            ai = cur[i]
            for j in range(nb):
                out[i + j] += ai * b[j]
        first, last = _above(out, floor)
        if first < 0:
            d_lo += blo
            cur = out
        else:
            d_lo += blo + first
            cur = out[first:last + 1].copy()
    return d_lo, cur


# ---------------------------------------------------------------- narrow distributions (issue 15, speed)
#
# A p-value or a power that is not tiny does not need the far tails: the narrow form of a distribution drops the
# terms below NARROW_BELOW (the binomials' and every convolution's), which loses at most about 1e-37 of mass (a
# binomial's pmf falls geometrically beyond its trim point), so a tail of at least NARROW_MIN_SF keeps its
# relative accuracy (some 1e-16: the terms dropped are below the last bit of what they are added to) and is
# computed again in full below that. The sums are of the same non-negative terms in another grouping, so a value
# may differ from the full one in its last bits (near 1, by the full sum's own rounding, up to some 1e-12: it
# adds thousands of terms whose total is 1 to that accuracy, where the narrow form may say 1.0), never in the six
# significant digits a document shows (but for a value that close to a rounding boundary). Used by the controls
# and the power searches, where the full distributions of thousands of trials made most of the detectors' time:
# dealer_cutter's control of each (dealer, cutter) pair convolved the dealer's whole record, +-40 sd wide, three
# times.

NARROW_BELOW = 1e-40
NARROW_MIN_SF = 1e-20


def _trimmed(d: Dist, floor: float) -> Dist:
    nz = np.nonzero(d.pmf > floor)[0]
    if len(nz) == 0 or (nz[0] == 0 and nz[-1] == len(d.pmf) - 1):
        return d
    return Dist(d.lo + int(nz[0]), d.pmf[nz[0]:nz[-1] + 1])


@lru_cache(maxsize=16384)
def _binomial_narrow(n: int, p: float) -> Dist:
    return _trimmed(_binomial(n, p), NARROW_BELOW)


def _pb_narrow_spec(groups: Groups) -> Dist:
    """`_pb_narrow`'s spec, as `_pb_grouped_spec`."""
    d = Dist(0, np.ones(1))
    for p, k in groups:
        d = _convolve(d, _binomial_narrow(k, p), NARROW_BELOW)
    return d


@lru_cache(maxsize=4096)
def _pb_narrow(groups: Groups) -> Dist:
    """`_pb_grouped`'s narrow form (`_pb_narrow_spec`, by `_pb_kernel`)."""
    return _pb_from(Dist(0, np.ones(1)), groups, NARROW_BELOW, narrow=True)


def pb_sf_narrow(groups: Groups, observed: float, narrow: "Dist | None" = None) -> float:
    """P(S >= observed) for the trials `groups`, from the narrow distribution (`narrow`, when the caller has it)
    when that tail is at least NARROW_MIN_SF, else from the full one (`pb_sf`)."""
    v = (narrow if narrow is not None else _pb_narrow(tuple(groups))).sf(observed)
    return v if v >= NARROW_MIN_SF else _pb_grouped(tuple(groups)).sf(observed)


class PBPrefixes:
    """`poisson_binomial` of many trial sets that share a start with one `base` set (a dealer's pairs' "others":
    his whole trials less one pair's): the convolution of the base's groups is kept after each group, and a set
    whose first k groups are the base's starts from the k-th (issue 15: dealer_cutter's controls convolved the
    dealer's thousands of trials again for each of his pairs). The same arithmetic in the same order as
    `_pb_grouped` (with `narrow`, as `_pb_narrow`), so the same bits."""

    def __init__(self, base: Groups, narrow: bool = False) -> None:
        self.base = tuple(base)
        self.done: list[Dist] = [Dist(0, np.ones(1))]  # done[i]: the base's first i groups
        self.narrow = narrow  # the narrow forms (`pb_sf_narrow`)

    def dist(self, groups: Groups) -> Dist:
        groups = tuple(groups)
        m = 0
        while m < len(groups) and m < len(self.base) and groups[m] == self.base[m]:
            m += 1
        floor = NARROW_BELOW if self.narrow else 1e-300
        while len(self.done) <= m:
            i = len(self.done) - 1
            self.done.append(_pb_from(self.done[i], self.base[i:i + 1], floor, self.narrow))
        return _pb_from(self.done[m], groups[m:], floor, self.narrow)


def poisson_binomial(p: Sequence[float] | np.ndarray | Groups) -> Dist:
    """The distribution of the number of successes of independent trials with success probabilities `p`.

    `p` may also be the output of `group_probs` (a tuple of (probability, count) pairs)."""
    if isinstance(p, tuple) and (len(p) == 0 or isinstance(p[0], tuple)):
        return _pb_grouped(cast(Groups, p))  # told apart by its first item, which the types cannot see
    return _pb_grouped(group_probs(cast("Sequence[float] | np.ndarray", p)))


def pb_sf(observed: float, p: Sequence[float] | np.ndarray | Groups) -> float:
    """Exact one-sided p-value P(S >= observed) for a Poisson-binomial S with trial probabilities p."""
    return poisson_binomial(p).sf(observed)


def sum_dist(pmfs: Sequence[tuple[np.ndarray, int]]) -> Dist:
    """The sum of independent integer variables: each (pmf on 0..k, multiplicity) pair adds `multiplicity` copies.

    Used for counts per deal that are not 0/1 (e.g. the number of trump honours dealt to the dealer)."""
    d = Dist(0, np.ones(1))
    for pmf, mult in pmfs:
        key = np.asarray(pmf, dtype=float).tobytes()
        m = int(mult)
        j = 0
        while m:  # binary powering of the convolution; the powers pmf^(2^j) are shared by every sum (cached)
            if m & 1:
                d = _convolve(d, _power2(key, j))
            m >>= 1
            j += 1
    return d


@lru_cache(maxsize=2048)
def _power2(pmf_bytes: bytes, j: int) -> Dist:
    """pmf^(2^j) (convolution power) of the pmf whose float64 bytes are given."""
    if j == 0:
        return Dist(0, np.frombuffer(pmf_bytes).copy())
    h = _power2(pmf_bytes, j - 1)
    return _convolve(h, h)


FFT_MIN_SUPPORT = 4096  # below this, sums are convolved exactly (every small input stays exact to the last bit)
FFT_EXACT_BELOW = 1e-6  # an FFT tail this small is recomputed exactly (FFT round-off is ~1e-13 absolute)


@lru_cache(maxsize=1024)
def _log_spectrum(pmf_bytes: bytes, N: int) -> np.ndarray:
    from scipy import fft as _fft  # imported by the long sums only (start-up: most audits never need an FFT)

    out: np.ndarray = np.log(_fft.rfft(np.frombuffer(pmf_bytes), N).astype(complex))
    return out


def sum_tail(pmfs: Sequence[tuple[np.ndarray, int]], observed: float) -> tuple[float, float]:
    """(P(S >= observed), E S) for S = the sum of `sum_dist`, fast for long sums.

    The mean is exact (sum of the parts' means). The tail is exact (`sum_dist`) when S has a short support;
    otherwise the pmf comes from the inverse FFT of the product of the parts' spectra raised to their
    multiplicities, on a window of mean ± 45 sd (outside it the mass is below e^-1000: S is a sum of bounded
    independent parts, Hoeffding), and a tail below FFT_EXACT_BELOW (where round-off, ~1e-13 absolute, could
    matter) is recomputed exactly. So every p-value that could decide a flag is exact; a large one carries a
    relative error of ~1e-7 at most."""
    parts = [(np.asarray(p, dtype=float), int(k)) for p, k in pmfs if int(k) > 0]
    support = 1 + sum(k * (len(p) - 1) for p, k in parts)
    if support < FFT_MIN_SUPPORT:
        d = sum_dist(parts)
        return d.sf(observed), d.mean()
    kk = int(np.ceil(observed - 1e-9))
    means = [float(np.dot(np.arange(len(p)), p)) for p, _ in parts]
    mean = float(sum(k * m for (_, k), m in zip(parts, means, strict=True)))
    var = float(sum(k * (float(np.dot(np.arange(len(p)) ** 2, p)) - m * m)
                    for (p, k), m in zip(parts, means, strict=True)))
    sd = float(np.sqrt(max(var, 0.0)))
    lo = max(0, int(np.floor(mean - 45 * sd - 50)))
    hi = min(support - 1, int(np.ceil(mean + 45 * sd + 50)))
    if kk <= 0:
        return 1.0, mean
    if kk >= support or kk > hi:
        return sum_dist(parts).sf(observed) if kk < support else 0.0, mean
    from scipy import fft as _fft  # (as in _log_spectrum: only the long sums need it)

    N = _fft.next_fast_len(-(-(hi - lo + 1) // 1024) * 1024, real=True)  # rounded up: spectra are cached
    logspec = np.zeros(N // 2 + 1, dtype=complex)
    for p, k in parts:
        logspec += k * _log_spectrum(p.tobytes(), N)
    # the circular pmf holds value v at index v mod N; the window lo..hi is shorter than N, and below `lo` the
    # mass is < e^-1000, so P(S >= kk) for kk < lo is the whole window
    circ = np.clip(_fft.irfft(np.exp(logspec), N), 0.0, None)
    tail = float(min(1.0, circ[np.arange(max(kk, lo), hi + 1) % N].sum()))
    if tail < FFT_EXACT_BELOW:
        return sum_dist(parts).sf(observed), mean
    return tail, mean


def z_score(observed: float, dist: Dist) -> float:
    """(observed - mean) / sd under the null; 0 when the null has no spread."""
    v = dist.var()
    return float((observed - dist.mean()) / np.sqrt(v)) if v > 0 else 0.0


# ---------------------------------------------------------------- power and the smallest detectable strength


def stacked(p: float, q: float) -> float:
    """A cheat of strength q: in a fraction q of the trials he makes the event happen; otherwise chance does."""
    return p + q * (1.0 - p)


def power(groups: tuple[tuple[float, int], ...], alpha: float, q: float,
          alt: Callable[[float, float], float] = stacked,
          fixed: tuple[tuple[float, int], ...] = ()) -> float:
    """Power of the one-sided exact test at level alpha against a cheat of strength q: the trials of `groups`
    become alt(p, q); those of `fixed` (trials the cheat cannot touch) keep their null probability."""
    full = alpha < NARROW_MIN_SF  # the narrow forms hold every tail of at least NARROW_MIN_SF to its last bits
    pb, floor = (_pb_grouped, 1e-300) if full else (_pb_narrow, NARROW_BELOW)
    base = pb(fixed)
    c = _critical(groups, alpha, fixed)
    alt_groups = _merge_groups((alt(p, q), k) for p, k in groups)
    return _with(pb(alt_groups), base, floor).sf(c)


@lru_cache(maxsize=4096)
def _critical(groups: tuple[tuple[float, int], ...], alpha: float, fixed: tuple[tuple[float, int], ...]) -> int:
    """The null's rejection threshold of `power` (the same for every q of a power search): from the narrow forms
    unless `alpha` is below NARROW_MIN_SF."""
    if alpha < NARROW_MIN_SF:
        return _with(_pb_grouped(groups), _pb_grouped(fixed)).critical(alpha)
    return _with(_pb_narrow(groups), _pb_narrow(fixed), NARROW_BELOW).critical(alpha)


def _with(a: Dist, base: Dist, floor: float = 1e-300) -> Dist:
    """a + base (`_convolve`), skipping the convolution with the point mass at 0 (no fixed trials), which would
    return `a` itself: a `_pb_grouped` pmf is already trimmed, and x * 1.0 == x."""
    if base.lo == 0 and len(base.pmf) == 1 and base.pmf[0] == 1.0:
        return a
    return _convolve(a, base, floor)


def _merge_groups(groups: Iterable[tuple[float, int]]) -> tuple[tuple[float, int], ...]:
    out: dict[float, int] = {}
    for p, k in groups:
        out[float(p)] = out.get(float(p), 0) + int(k)
    return tuple(sorted(out.items()))


@lru_cache(maxsize=4096)
def min_detectable(groups: tuple[tuple[float, int], ...], alpha: float, target_power: float = 0.8,
                   tol: float = 1e-3, fixed: tuple[tuple[float, int], ...] = ()) -> float | None:
    """The smallest q in [0, 1] whose cheat (p -> p + q(1-p) on the trials of `groups`) the exact level-alpha test
    finds with the target power, to `tol`: the bisection of [0, 1] (power rises with q) until its interval is at
    most `tol` wide, which ends at the smallest q = j / 2^m (2^-m <= tol) with that power; None when even q = 1 is
    not enough.

    Found without the bisection's m exact power evaluations (issue 15, speed): a normal approximation of the
    power on the whole grid, moved after each exact evaluation by how far it was off there (in z), guesses the
    next point inside the bracket of the points evaluated so far, and every other step bisects the bracket when a
    guess did not halve it. Both end at the same grid point, the one whose power reaches the target when the point
    below it does not: `_min_detectable_bisection` is the spec (tests/test_exact_speed.py)."""
    if not groups or sum(k for _, k in groups) == 0:
        return None
    if power(groups, alpha, 1.0, fixed=fixed) < target_power:
        return None
    m, width = 0, 1.0
    while width > tol:
        width *= 0.5
        m += 1
    N = 1 << m
    model = _power_model(groups, fixed, _critical(groups, alpha, fixed), N)
    z_target = float(_sp.ndtri(target_power))
    lo, hi = 0, N  # power(lo / N) < target (q = 0: the test's size) <= power(hi / N)
    shift = 0.0  # exact z less model z at the last point evaluated
    halve = False
    while hi - lo > 1:
        if halve:
            j = (lo + hi) // 2
        else:
            reach = model >= z_target - shift
            j = min(max(int(np.argmax(reach)) if reach.any() else hi, lo + 1), hi - 1)
        pw = power(groups, alpha, j / N, fixed=fixed)
        width_before = hi - lo
        if pw >= target_power:
            hi = j
        else:
            lo = j
        shift = float(_sp.ndtri(min(max(pw, 1e-15), 1 - 1e-15))) - float(model[j])
        halve = not halve and 2 * (hi - lo) > width_before
    return round(hi / N, 4)


def _min_detectable_bisection(groups: Groups, alpha: float, target_power: float = 0.8, tol: float = 1e-3,
                              fixed: Groups = ()) -> float | None:
    """`min_detectable`'s spec: the bisection itself."""
    if not groups or sum(k for _, k in groups) == 0:
        return None
    if power(groups, alpha, 1.0, fixed=fixed) < target_power:
        return None
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if power(groups, alpha, mid, fixed=fixed) >= target_power:
            hi = mid
        else:
            lo = mid
    return round(hi, 4)


def _power_model(groups: Groups, fixed: Groups, c: int, N: int) -> np.ndarray:
    """z(j) = (mean - (c - 1/2)) / sd of the trials' count under the cheat q = j / N, j = 0..N (normal
    approximation of P(S >= c), in z): only a guide for `min_detectable`'s search, never its answer. With r = 1 - p,
    a trial p + q r has mean p + q r and variance (1 - q) r (p + q r)."""
    p = np.array([g[0] for g in groups])
    k = np.array([g[1] for g in groups], dtype=float)
    r = 1.0 - p
    fmean = sum(pf * n for pf, n in fixed)
    fvar = sum(pf * (1 - pf) * n for pf, n in fixed)
    qs = np.arange(N + 1) / N
    mean = float(np.dot(k, p)) + qs * float(np.dot(k, r)) + fmean
    var = (1.0 - qs) * (float(np.dot(k, r * p)) + qs * float(np.dot(k, r * r))) + fvar
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean - (c - 0.5)) / np.sqrt(var)
    return np.where(var > 0, z, np.where(mean >= c - 0.5, np.inf, -np.inf))


def per_test_level(fdr: float, family_size: int) -> float:
    """The FDR-equivalent per-test level: Benjamini–Hochberg flags a lone true cheat among m tests when its p-value
    is at most fdr / m (its rank-1 threshold), so that is the level at which power is computed."""
    return fdr / max(1, family_size)
