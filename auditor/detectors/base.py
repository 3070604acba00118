"""The detector interface.

A detector turns the table of replayed deals (`auditor.columns.AuditColumns`: one row per deal, whichever engine
replayed it) into `TestResult`s in three steps, so that its statistics add exactly across partitions of the input
(by table, by chunk, by day):

    counts = detector.count(table, rng, facts=facts)   # per-subject sufficient statistics of one part
    total = detector.merge([c1, c2, ...])              # exact sum of parts (saved counts merge the same way)
    tests = detector.finalize(total, rng)              # p-values etc. from the summed counts

`facts` are the part's `DealingFacts` (`auditor.facts.facts_from_columns(table)`), built once for every detector.
A count may keep per-deal rows where the null is fitted on the whole field (`marked_ten` fits its model of honest
play in `finalize`, over the merged rows of every player): counting is still one pass per part, fitting one pass
over the merged counts. Counts are plain data (arrays, dicts, dataclasses of them): they pickle, so they can be
saved and merged later. Randomness only through the `numpy.random.Generator` passed in.

Each detector carries its `TestSpec` (`spec`: title, unit, subject and chart kind, cost), which the report,
`investigate` and the scheduler read. The per-card Python counts over `DealResult`s that each detector module
keeps (its oracle, e.g. `facts_from_results`, `play_facts.walk`) are the executable spec its `count` is tested
against; they are not a second production path.

Helpers for the Poisson-binomial tests: `Trials` (one subject's trials: input-order key, outcome, null probability)
merge by concatenation in input order, so a subject's counts, expectation and timeline are the same whatever the
partition; `pb_result` turns one subject's trials into a `TestResult` with the report's details.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Protocol, Sequence, cast

import numba
import numpy as np

from ..columns import TIME_NONE, AuditColumns, input_key, natural_ranks, result_order
from ..facts import DealingFacts, facts_from_columns
from ..stats import exact
from ..stats.family import CleanList, TestResult, clean_floats
from .spec import TestSpec

MIN_DETECTABLE_POWER = 0.8
TIMELINE_POINTS = 200


class Detector(Protocol):
    """What the audit calls: see the module docstring."""

    spec: TestSpec
    name: str  # = spec.name
    fdr: float  # its part of the audit's error budget (level x share)

    def count(self, table: AuditColumns, rng: np.random.Generator, facts: DealingFacts | None = None) -> Any: ...

    def merge(self, parts: Sequence[Any]) -> Any: ...

    # optional: `merge_into(total, part) -> total`, the counts of `merge([total, part])` built in `total` itself (which
    # the caller gives up): the same result, at the cost of the part alone (the audit's fold of each part, issue 15)

    def finalize(self, counts: Any, rng: np.random.Generator) -> list[TestResult]: ...

    # optional: `results(counts, rng) -> Iterator[TestResult]`, the tests of `finalize` one at a time, in its order
    # (`finalize` is then `list(results(...))`): the audit packs each test's details as it comes instead of holding
    # them all as Python objects first (issue 15: collusion's 35,000 pairs at 10M deals)

    # optional, together (issue 15, flat memory): `SHARDS: int`, `shard(counts, n) -> list` (the counts of n groups of
    # subjects, `shard_of(name, n)` of the name that keys them: each group's counts merge across parts as the whole
    # counts do), `shard_context(counts)` (what a subject's tests need of the other groups, small: sums per subject),
    # `merge_context(contexts)` (exact, in part order) and `results(counts, rng, context=None)` taking it. The audit
    # then folds and tests one group at a time (`audit.SpilledCounts`), and `results` over each group with the whole
    # input's context gives the tests of `results` over the whole counts (the same tests, in another order: the
    # document orders them by test and subject); and `join_shards(groups, context) -> counts`, the whole counts from
    # the n groups' folds and the merged context: equal to the fold of the whole counts, key order included, so
    # that `--save-counts` writes the same file without folding the whole (issue 15: that fold peaked at 1.4 GB at
    # 10M deals)


def shard_of(name: str, n: int) -> int:
    """The group (0..n-1) of a subject's key name for a detector's `shard`: a stable hash (CRC-32 of its UTF-8),
    the same in every process and run."""
    return zlib.crc32(name.encode("utf-8")) % n if n > 1 else 0


class DetectorClass(Protocol):
    """A detector class as the registry holds it: its spec, and a constructor taking its part of the budget."""

    spec: TestSpec

    def __call__(self, *, fdr: float = ..., details: bool = ...) -> Detector: ...


def run(detector: Detector, table: AuditColumns, rng: np.random.Generator,
        facts: DealingFacts | None = None) -> list[TestResult]:
    """`finalize(count(table))`: one detector over one table."""
    return detector.finalize(detector.count(table, rng, facts=facts), rng)


def subject_rng(rng: np.random.Generator, base: int, subject: str) -> np.random.Generator:
    """A generator for one subject, from a base drawn once per finalize and the subject's name: a subject's Monte
    Carlo does not depend on which other subjects are in the input."""
    return np.random.default_rng([int(base), zlib.crc32(subject.encode("utf-8"))])


# ---------------------------------------------------------------- Bernoulli trials per subject


@dataclass
class Trials:
    """One subject's Bernoulli trials in input order: `key` (input order), `obs` (0/1), `p` (exact null)."""

    key: np.ndarray
    obs: np.ndarray
    p: np.ndarray

    def __len__(self) -> int:
        return len(self.key)

    @staticmethod
    def empty() -> "Trials":
        return Trials(np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0))

    @staticmethod
    def concat(parts: Sequence["Trials"]) -> "Trials":
        parts = [t for t in parts if len(t)]
        if not parts:
            return Trials.empty()
        key = np.concatenate([t.key for t in parts])
        order = np.argsort(key, kind="stable")
        return Trials(key[order], np.concatenate([t.obs for t in parts])[order],
                      np.concatenate([t.p for t in parts])[order])

    @property
    def observed(self) -> int:
        return int(self.obs.sum())

    @property
    def expected(self) -> float:
        return float(self.p.sum())

    def groups(self) -> tuple[tuple[float, int], ...]:
        return exact.group_probs(self.p)


# ---------------------------------------------------------------- bounded counts (issue 15)

MINUTE_US = 60_000_000
MAX_BINS = 128  # a timeline's bins at most (or one per table and untimed part, when there are more tables); 512 before
# a later session of issue 15: a pair's timeline was most of its counts (dealer_cutter: 45 MB for 3,540 pairs at 1M
# deals), and the chart draws at most TIMELINE_POINTS; 128 keep its shape (docs/decisions.md)
MAX_LEVEL = 40  # 2^40 minutes: every timed deal of a table in one bin
NO_TIME_BIN = np.iinfo(np.int64).max  # the bin of a table's untimed deals: after its timed ones (as TIME_NONE sorts)


@dataclass
class Timeline:
    """One subject's cumulative trials in the canonical order of deals, kept at bin ends: bounded and mergeable.

    A bin is (table, time in minutes >> `level`); it holds the number of trials `n`, the observed total `obs`, the
    expected total `exp` and the null variance `var` of the trials in it. The canonical order is table first, then
    time, so the cumulative sums over the bins sorted by (table's natural key, bin) are the cumulative sums of the
    trials in canonical order at the last trial of each bin: exact at every point kept. Merging adds equal bins.
    `level` is the smallest at which there are at most MAX_BINS bins; the count of bins only falls as the level
    rises, so the merge of parts (each at its own smallest level, never above the whole's) raised again to the
    smallest level that fits gives exactly the bins of the whole input: the same timeline for any partition of the
    input (floats add in part order). Untimed deals are one bin at the end of their table."""

    level: int = 0
    tables: list[str] = field(default_factory=list)  # the table of each bin is an index into this list
    tb: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    tbin: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    obs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    exp: np.ndarray = field(default_factory=lambda: np.zeros(0))
    var: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.n)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as its level, tables and one buffer of its six arrays (`_timeline_from`), where they have the
        dtypes the counts give them; otherwise as a dataclass. A pickle of thousands of timelines (a part's pairs,
        spilled for the tests' processes) paid numpy's pickling of each array: 0.17 s to write and as much to read
        3,540 pairs' summaries (issue 15, a twenty-seventh session)."""
        got = _packed_arrays((self.tbin, self.n, self.obs, self.exp, self.var, self.tb), _TIMELINE_DTYPES)
        if got is None:
            return super().__reduce_ex__(protocol)
        return _timeline_from, (self.level, self.tables, len(self.n), got)

    def equal(self, other: "Timeline", rtol: float = 0.0) -> bool:
        """The same bins with the same sums, whatever the order of the table names: bit for bit, or the float sums
        within `rtol` (sums of the same numbers added in another order: a merge of other parts)."""
        if self.level != other.level or len(self) != len(other):
            return False
        a, b = self._sorted(), other._sorted()
        ints = all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3], strict=True))
        if rtol == 0:
            return ints and all(np.array_equal(x, y) for x, y in zip(a[3:], b[3:], strict=True))
        return ints and all(np.allclose(x, y, rtol=rtol, atol=1e-12) for x, y in zip(a[3:], b[3:], strict=True))

    def _sorted(self) -> tuple[np.ndarray, ...]:
        names = np.array(self.tables, dtype=object)[self.tb] if len(self) else np.zeros(0, object)
        o = sorted(range(len(self)), key=lambda i: (names[i], int(self.tbin[i])))
        return (names[o], self.tbin[o], self.n[o], self.obs[o], self.exp[o], self.var[o])

    @staticmethod
    def of(table_names: Sequence[str], table_idx: np.ndarray, time_us: np.ndarray, obs: np.ndarray,
           exp: np.ndarray, var: np.ndarray | None = None) -> "Timeline":
        """The timeline of trials given by parallel arrays (any order: a bin's sums do not depend on it; floats
        are added in the order given)."""
        time_us = np.asarray(time_us, np.int64)
        tbin = np.where(time_us == TIME_NONE, NO_TIME_BIN, time_us // MINUTE_US)
        obs = np.asarray(obs, float)
        v = np.zeros(len(obs)) if var is None else np.asarray(var, float)
        used, tb = np.unique(np.asarray(table_idx, np.int64), return_inverse=True)
        names = [table_names[int(i)] for i in used]
        return _settle(0, names, tb.astype(np.int32), tbin, np.ones(len(obs), np.int64), obs,
                       np.asarray(exp, float), v)

    @staticmethod
    def merge(parts: Sequence["Timeline"]) -> "Timeline":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Timeline()
        if len(parts) == 1:
            return parts[0]
        level = max(p.level for p in parts)
        names: dict[str, int] = {}
        tbs, bins = [], []
        for p in parts:
            remap = np.array([names.setdefault(x, len(names)) for x in p.tables], np.int32)
            tbs.append(remap[p.tb])
            bins.append(_coarsen(p.tbin, level - p.level))
        cat = np.concatenate
        return _settle(level, list(names), cat(tbs), cat(bins), cat([p.n for p in parts]),
                       cat([p.obs for p in parts]), cat([p.exp for p in parts]), cat([p.var for p in parts]))

    def points(self, max_points: int = TIMELINE_POINTS, counts: bool = True, variance: bool = False) -> list[list]:
        """[trials so far, observed so far, expected so far(, variance so far)] at bin ends, in canonical order, at
        most `max_points` of them (the bins whose cumulative count first reaches each of `max_points` evenly
        spaced counts, and the last): the layout of `timeline`."""
        if not len(self):
            return []
        rank = _name_rank_of(self.tables)
        o = np.lexsort((self.tbin, rank[self.tb]))
        cn, co = np.cumsum(self.n[o]), np.cumsum(self.obs[o])
        ce, cv = np.cumsum(self.exp[o]), np.cumsum(self.var[o])
        B = len(o)
        if B <= max_points:
            idx = np.arange(B)
        else:
            targets = np.linspace(cn[-1] / max_points, cn[-1], max_points)
            idx = np.unique(np.concatenate([np.searchsorted(cn, targets, "left").clip(0, B - 1), [B - 1]]))
        cols = [cn[idx].astype(np.int64).tolist(),
                np.rint(co[idx]).astype(np.int64).tolist() if counts else _clean4(co[idx]), _clean4(ce[idx])]
        if variance:
            cols.append(_clean4(np.maximum(cv[idx], 0.0)))
        return CleanList([list(row) for row in zip(*cols, strict=True)])


def points_many(timelines: Sequence["Timeline"], max_points: int = TIMELINE_POINTS, counts: bool = True,
                variance: bool = False) -> list[list]:
    """`[t.points(max_points, counts, variance) for t in timelines]`, the same lists to the last bit, for many
    timelines in a few calls (issue 15, a twenty-ninth session: `Timeline.points`, one subject at a time, was some
    20 numpy calls per subject, about 150 microseconds each of dealer_cutter's and collusion's 3,540 pairs at
    300,000 deals and 35,400 at 10M). `Timeline.points` is the spec (tests/test_timeline_points.py):

    - every timeline's bins are sorted by (subject, table rank, bin) in one stable sort, which orders each
      subject's bins as its own `np.lexsort` does;
    - the integer sums are one cumulative sum less each subject's start (exact); the float sums are summed in that
      order from each subject's first bin (`_segment_cumsum`: `np.cumsum`'s sequential additions);
    - a subject with more bins than `max_points` keeps the bins `np.linspace`'s targets fall on, its targets made
      for all such subjects at once by linspace's own operations, and found by binary search (`_pick_points`) as
      `np.searchsorted` compares them (the integer counts as doubles);
    - the rounding (`_clean4`) is elementwise, so one call for every point.

    Timelines whose arrays are not of the dtypes the counts give them are made by the spec."""
    out: list[list] = [[] for _ in timelines]
    live = [i for i, t in enumerate(timelines) if len(t)]
    if not live:
        return out
    ts = [timelines[i] for i in live]
    if max_points < 2 or not all(t.n.dtype == np.int64 and t.obs.dtype == np.float64 and t.exp.dtype == np.float64
                                 and t.var.dtype == np.float64 for t in ts):
        for i in live:
            out[i] = timelines[i].points(max_points, counts, variance)
        return out
    lens = np.array([len(t) for t in ts], np.int64)
    ends = np.cumsum(lens)
    starts = ends - lens
    seg = np.repeat(np.arange(len(ts), dtype=np.int64), lens)
    cat = np.concatenate
    o = bin_order(seg, cat([_name_rank_of(t.tables)[t.tb] for t in ts]), cat([t.tbin for t in ts]))
    n_o = cat([t.n for t in ts])[o]
    cn_all = np.cumsum(n_o)
    cn = cn_all - np.repeat(cn_all[starts] - n_o[starts], lens)

    def fsum(name: str) -> np.ndarray:
        x = np.ascontiguousarray(cat([getattr(t, name) for t in ts])[o])
        y = np.empty_like(x)
        _segment_cumsum(x, starts, lens, y)
        return y

    co, ce = fsum("obs"), fsum("exp")
    cv = fsum("var") if variance else None
    big = np.flatnonzero(lens > max_points)
    row = np.full(len(ts), -1, np.int64)
    row[big] = np.arange(len(big))
    total = cn[ends[big] - 1]  # each such subject's trials (np.linspace(total / max_points, total, max_points))
    start = total / max_points
    stop = total.astype(np.float64)
    step = (stop - start) / (max_points - 1)
    if (step == 0).any():  # linspace's other branch (never with trials): the spec
        for i in live:
            out[i] = timelines[i].points(max_points, counts, variance)
        return out
    targets = np.arange(max_points, dtype=np.float64)[None, :] * step[:, None]
    targets += start[:, None]
    targets[:, -1] = stop
    idx = np.empty(int(np.minimum(lens, max_points + 1).sum()), np.int64)
    got = np.zeros(len(ts), np.int64)
    k = _pick_points(cn, starts, lens, np.ascontiguousarray(targets), row, idx, got)
    idx = idx[:k]
    cols = [cn[idx].tolist(), np.rint(co[idx]).astype(np.int64).tolist() if counts else _clean4(co[idx]),
            _clean4(ce[idx])]
    if cv is not None:
        cols.append(_clean4(np.maximum(cv[idx], 0.0)))
    rows = [list(r) for r in zip(*cols, strict=True)]
    at = 0
    for j, i in enumerate(live):
        g = int(got[j])
        out[i] = CleanList(rows[at:at + g])
        at += g
    return out


@numba.njit(cache=True)
def _segment_cumsum(x, starts, lens, out):  # pragma: no cover - numba
    """np.cumsum of each segment x[starts[s]:starts[s] + lens[s]] (each at least one long) into out: the first
    value as it is, then each sum the previous plus the next value, in order."""
    for s in range(len(starts)):
        a = starts[s]
        acc = x[a]
        out[a] = acc
        for i in range(a + 1, a + lens[s]):
            acc = acc + x[i]
            out[i] = acc


@numba.njit(cache=True)
def _pick_points(cn, starts, lens, targets, row, idx, got):  # pragma: no cover - numba
    """`Timeline.points`' bins of each segment, as indices into cn (the segments' cumulative trials): every bin of a
    segment with row -1; else the first bin whose count reaches each target of `targets[row]` (np.searchsorted
    "left", comparing as doubles), clipped to the last bin, without repeats, and the last bin (np.unique of them:
    the searches rise with the targets). Returns how many indices; `got[s]`: the segment's."""
    k = 0
    for s in range(len(starts)):
        a = starts[s]
        B = lens[s]
        k0 = k
        r = row[s]
        if r < 0:
            for i in range(B):
                idx[k] = a + i
                k += 1
        else:
            last = -1
            for j in range(targets.shape[1]):
                v = targets[r, j]
                lo = 0
                hi = B
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if float(cn[a + mid]) < v:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo > B - 1:
                    lo = B - 1
                if lo != last:
                    idx[k] = a + lo
                    k += 1
                    last = lo
            if last != B - 1:
                idx[k] = a + B - 1
                k += 1
        got[s] = k - k0
    return k


def _clean4(values: np.ndarray) -> list[float | None]:
    """`rounded(values, 4)`, then as the document writes them (`clean_floats`): a timeline's points are made
    clean, so that the tests' details are packed without walking them (`stats.family.CleanList`)."""
    return clean_floats(_rounded(values, 4))


def rounded(values: np.ndarray, digits: int) -> list[float]:
    """`[round(float(v), digits) for v in values]`, the same floats to the last bit, vectorised (issue 15: the
    timelines' points made a tenth of dealer_cutter's tests). Python rounds the exact binary value to the nearest
    multiple of 10^-digits (ties to even) and returns the double nearest to that decimal; that decimal is d / 10^digits
    for the integer d = rint(v * 10^digits) unless v * 10^digits lies within a few units in the last place of a
    half-integer (where the product's own rounding could decide), and the IEEE division of the integer d by the
    exact 10^digits is correctly rounded. Those near-ties, and values too large or not finite, go through `round`."""
    return _rounded(values, digits).tolist()


def _rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """`rounded` as an array."""
    v = np.asarray(values, dtype=float)
    scale = 10.0 ** digits
    with np.errstate(invalid="ignore", over="ignore"):
        y = v * scale
        r = np.rint(y)
        near = np.abs(np.abs(y - np.floor(y)) - 0.5) <= 8 * np.spacing(np.abs(y)) + 1e-300
        bad = near | ~np.isfinite(y) | (np.abs(y) >= 2.0 ** 51) | (digits < 0) | (digits > 22)
    out = r / scale
    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            out[i] = round(float(v[i]), digits)
    return out


_TIMELINE_DTYPES = ("<i8", "<i8", "<f8", "<f8", "<f8", "<i4")  # tbin, n, obs, exp, var, tb: the 8-byte ones first
_SUMMARY_DTYPES = ("<f8", "<i8", "<i8")  # p, n, k


def _packed_arrays(arrays: Sequence[np.ndarray], dtypes: Sequence[str]) -> bytes | None:
    """The arrays' bytes one after the other, when each is one-dimensional, of its dtype in `dtypes` and as long as
    the first; else None."""
    m = len(arrays[0])
    if not all(a.ndim == 1 and a.dtype.str == d and len(a) == m for a, d in zip(arrays, dtypes, strict=True)):
        return None
    return b"".join(a.tobytes() for a in arrays)


def _unpacked_arrays(m: int, blob: bytes, dtypes: Sequence[str]) -> list[np.ndarray]:
    """`_packed_arrays` read back: writable arrays over one copy of the buffer (each 8-byte array aligned, the
    4-byte one last)."""
    buf = bytearray(blob)
    out, at = [], 0
    for d in dtypes:
        a = np.frombuffer(buf, d, m, at) if m else np.zeros(0, d)
        out.append(a)
        at += m * a.itemsize
    return out


def _timeline_from(level: int, tables: list[str], m: int, blob: bytes) -> Timeline:
    tbin, n, obs, exp, var, tb = _unpacked_arrays(m, blob, _TIMELINE_DTYPES)
    return Timeline(level, tables, tb, tbin, n, obs, exp, var)


def _summary_from(m: int, blob: bytes, timeline: Timeline | None) -> "TrialSummary":
    p, n, k = _unpacked_arrays(m, blob, _SUMMARY_DTYPES)
    return TrialSummary(p, n, k, timeline)


def _coarsen(tbin: np.ndarray, by: "int | np.ndarray") -> np.ndarray:
    """The bins `by` levels up (a shift per bin when `by` is an array); untimed bins stay untimed."""
    if np.ndim(by) == 0 and by <= 0:
        return tbin
    return np.where(tbin == NO_TIME_BIN, NO_TIME_BIN, tbin >> by)


def _name_rank_of(names: Sequence[str]) -> np.ndarray:
    """Each table name's rank in the canonical (natural) order."""
    return _name_rank(tuple(names))


@lru_cache(maxsize=256)
def _name_rank(names: tuple[str, ...]) -> np.ndarray:
    """`_name_rank_of`, cached (read-only): the timelines of one detector's subjects share one list of tables (issue
    15: at 10M deals collusion ranked the same 130 names again for each of its 35,000 pairs, a fifth of its tests'
    time)."""
    rank = natural_ranks(names)
    rank.setflags(write=False)
    return rank


def _settle_spec(level: int, names: list[str], tb: np.ndarray, tbin: np.ndarray, n: np.ndarray, obs: np.ndarray,
                 exp: np.ndarray, var: np.ndarray) -> Timeline:
    """`_settle`'s spec: the bins sorted again at every level until at most MAX_BINS remain."""
    while True:
        o = np.lexsort((tbin, tb))  # stable: equal bins keep the order given (floats add in that order)
        stb, sbin = tb[o], tbin[o]
        new = _bin_starts(stb, sbin)
        if new.sum() <= MAX_BINS or level >= MAX_LEVEL:
            break
        level += 1
        tbin = _coarsen(tbin, 1)
    return _summed(level, names, o, stb, sbin, new, n, obs, exp, var)


def _settle(level: int, names: list[str], tb: np.ndarray, tbin: np.ndarray, n: np.ndarray, obs: np.ndarray,
            exp: np.ndarray, var: np.ndarray) -> Timeline:
    """Equal bins added, then the level raised until at most MAX_BINS bins remain: `_settle_spec`, sorted once to
    find the level (a coarser bin is a run of finer ones in the same order, so the bins at each level are counted
    on the first sort) and once more at that level (so that equal bins keep the order given, as the spec's last
    sort does). Issue 15: a merge that climbed twenty levels sorted twenty times, half of dealer_cutter's fold."""
    o = np.lexsort((tbin, tb))
    stb, sbin = tb[o], tbin[o]
    new = _bin_starts(stb, sbin)
    up = _levels_up(stb, sbin, new, level)
    if up:
        level += up
        tbin = _coarsen(tbin, up)
        o = np.lexsort((tbin, tb))
        stb, sbin = tb[o], tbin[o]
        new = _bin_starts(stb, sbin)
    return _summed(level, names, o, stb, sbin, new, n, obs, exp, var)


def _bin_starts(stb: np.ndarray, sbin: np.ndarray) -> np.ndarray:
    """Where each bin starts among bins sorted by (table, bin)."""
    new = np.ones(len(stb), bool)
    new[1:] = (stb[1:] != stb[:-1]) | (sbin[1:] != sbin[:-1])
    return new


def _levels_up(stb: np.ndarray, sbin: np.ndarray, new: np.ndarray, level: int) -> int:
    """How many levels `_settle_spec` climbs from `level` for the sorted bins (`new`: where one starts): two
    neighbouring bins of one table, both timed, become one when shifted by the bit length of their XOR (the same
    sign; bins of either sign shift arithmetically, and bins of opposite signs, like a timed and an untimed bin,
    never meet below 64); with more than MAX_BINS bins, the level is the MAX_BINS-th largest of those shifts, at
    most MAX_LEVEL (held equal to the spec's climb one level at a time by tests/test_timeline_settle.py)."""
    if level >= MAX_LEVEL or int(new.sum()) <= MAX_BINS:
        return 0
    i = np.flatnonzero(new[1:]) + 1  # the first of each bin but the first
    a, b = sbin[i - 1], sbin[i]
    x = a ^ b
    apart = (stb[i] != stb[i - 1]) | (a == NO_TIME_BIN) | (b == NO_TIME_BIN) | (x < 0)
    shift = np.where(apart, 64, np.frexp(np.where(apart, 0, x).astype(float))[1]).astype(np.int64)  # exact: < 2^53
    need = int(np.partition(shift, len(shift) - MAX_BINS)[len(shift) - MAX_BINS])  # the MAX_BINS-th largest
    return min(need, MAX_LEVEL - level)


def _summed(level: int, names: list[str], o: np.ndarray, stb: np.ndarray, sbin: np.ndarray, new: np.ndarray,
            n: np.ndarray, obs: np.ndarray, exp: np.ndarray, var: np.ndarray) -> Timeline:
    """The timeline of the bins sorted by `o` (`stb`, `sbin`), each run of equal bins (`new` marks its first) summed
    in that order."""
    starts = np.flatnonzero(new)
    return Timeline(level, names, stb[starts].astype(np.int32), sbin[starts], np.add.reduceat(n[o], starts),
                    np.add.reduceat(obs[o], starts), np.add.reduceat(exp[o], starts),
                    np.add.reduceat(var[o], starts)) if len(o) else Timeline(level, names)


@dataclass
class TrialSummary:
    """One subject's Bernoulli trials, bounded: the distinct null probabilities `p` (sorted) with the number of trials
    `n` and of events `k` at each, and optionally the subject's `Timeline`. The exact Poisson-binomial needs only
    these groups, so every p-value is the one the trials themselves give, whatever the partition of the input."""

    p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    k: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    timeline: Timeline | None = None

    def __len__(self) -> int:
        return int(self.n.sum())

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as one buffer of its three arrays and its timeline (as `Timeline.__reduce_ex__`)."""
        got = _packed_arrays((self.p, self.n, self.k), _SUMMARY_DTYPES)
        if got is None:
            return super().__reduce_ex__(protocol)
        return _summary_from, (len(self.p), got, self.timeline)

    @staticmethod
    def of(obs: np.ndarray, p: np.ndarray, timeline: Timeline | None = None) -> "TrialSummary":
        p = np.asarray(p, float)
        vals, inv = np.unique(p, return_inverse=True)
        n = np.bincount(inv, minlength=len(vals)).astype(np.int64)
        k = np.bincount(inv, weights=np.asarray(obs, np.int64), minlength=len(vals)).round().astype(np.int64)
        return TrialSummary(vals, n, k, timeline)

    @staticmethod
    def merge(parts: Sequence["TrialSummary"]) -> "TrialSummary":
        parts = [t for t in parts if len(t)]
        if not parts:
            return TrialSummary()
        if len(parts) == 1:
            return parts[0]
        vals, inv = np.unique(np.concatenate([t.p for t in parts]), return_inverse=True)
        n = np.bincount(inv, weights=np.concatenate([t.n for t in parts]), minlength=len(vals))
        k = np.bincount(inv, weights=np.concatenate([t.k for t in parts]), minlength=len(vals))
        tls = [t.timeline for t in parts if t.timeline is not None]
        return TrialSummary(vals, n.round().astype(np.int64), k.round().astype(np.int64),
                            Timeline.merge(tls) if tls else None)

    def equal(self, other: "TrialSummary", rtol: float = 0.0) -> bool:
        """The same groups (bit for bit) and the same timeline (`Timeline.equal`)."""
        same = (np.array_equal(self.p, other.p) and np.array_equal(self.n, other.n)
                and np.array_equal(self.k, other.k))
        if self.timeline is None or other.timeline is None:
            return same and self.timeline is None and other.timeline is None
        return same and self.timeline.equal(other.timeline, rtol)

    @property
    def observed(self) -> int:
        return int(self.k.sum())

    @property
    def expected(self) -> float:
        return math.fsum((self.p * self.n).tolist())

    def groups(self) -> tuple[tuple[float, int], ...]:
        return tuple(zip(self.p.tolist(), self.n.tolist(), strict=True))

    def points(self, max_points: int = TIMELINE_POINTS) -> list[list]:
        return self.timeline.points(max_points) if self.timeline is not None else []


def summarise(subject: np.ndarray, names: Sequence[str], obs: np.ndarray, p: np.ndarray, table_idx: np.ndarray,
              table_names: Sequence[str], time_us: np.ndarray, with_timeline: bool = True) -> dict[str, TrialSummary]:
    """Parallel arrays of trials (subject index, -1: none) as {name: TrialSummary}, each with its timeline when
    `with_timeline` (the bounded counts of issue 15; `split_trials` keeps every trial).

    `summarise_spec` for every subject at once (held equal to it, bit for bit, by tests/test_timeline_settle.py):
    the trials sorted once by (subject, p) for the groups, and by (subject, table, bin) for the timelines, stably, so
    that each subject's trials meet in the order its own sort gives them and each bin's floats add in that order.
    Only the subjects with more than MAX_BINS bins at level 0 climb, each by `_levels_up` as `_settle` does, and
    their bins are sorted again at their level (issue 15, a twenty-seventh session: 3,540 pairs a part took
    dealer_cutter's counts a third of a second, one subject at a time)."""
    got = _by_subject(subject)
    if got is None:
        return {}
    o, s = got
    m = len(s)
    obs_o = np.asarray(obs)[o]
    p_o = np.asarray(p, float)[o]
    subs = s[np.concatenate([[0], np.flatnonzero(np.diff(s)) + 1])]  # each subject once
    sid = np.searchsorted(subs, s)
    g_p, g_n, g_k, gb = _grouped(sid, len(subs), p_o, np.ones(m, np.int64), np.asarray(obs_o, np.int64))
    tls = _timelines(sid, len(subs), np.asarray(table_idx, np.int64)[o], np.asarray(time_us, np.int64)[o],
                     np.asarray(obs_o, float), p_o, table_names) if with_timeline else [None] * len(subs)
    return {names[int(x)]: TrialSummary(g_p[gb[j]:gb[j + 1]], g_n[gb[j]:gb[j + 1]], g_k[gb[j]:gb[j + 1]], tls[j])
            for j, x in enumerate(subs.tolist())}


def _grouped(sid: np.ndarray, count: int, p: np.ndarray, n: np.ndarray, k: np.ndarray) -> tuple[Any, ...]:
    """The groups of equal p within each of `count` summaries (row r of summary sid[r]; np.unique's sorted values),
    with their trials and events summed (integers: exact in any order), and where each summary's groups start and
    end (a list of count + 1 offsets)."""
    g = np.lexsort((p, sid))
    gs, gp = sid[g], p[g]
    gnew = np.ones(len(g), bool)
    gnew[1:] = (gs[1:] != gs[:-1]) | (gp[1:] != gp[:-1])
    gstart = np.flatnonzero(gnew)
    if not len(g):
        z = np.zeros(0, np.int64)
        return np.zeros(0), z, z, [0] * (count + 1)
    return (gp[gstart], np.add.reduceat(n[g], gstart), np.add.reduceat(k[g], gstart),
            np.searchsorted(gs[gstart], np.arange(count + 1), "left").tolist())


def _by_subject(subject: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The trials of a subject (index >= 0) in subject order, each subject's in input order (o), and their subjects
    (s = subject[o]); None when no trial has one."""
    subject = np.asarray(subject, np.int64)
    keep = subject >= 0
    if not keep.any():
        return None
    idx = np.flatnonzero(keep)
    o = idx[np.argsort(subject[idx], kind="stable")]
    return o, subject[o]


def _timelines(sid: np.ndarray, count: int, tidx: np.ndarray, time_us: np.ndarray, obs: np.ndarray,
               exp: np.ndarray, table_names: Sequence[str]) -> list[Timeline | None]:
    """`Timeline.of` of each of `count` subjects' trials (row r of subject sid[r], sid non-decreasing), in one sort:
    a subject's tables ordered by their index, as np.unique orders them in `Timeline.of`."""
    m = len(sid)
    tbin = np.where(time_us == TIME_NONE, NO_TIME_BIN, time_us // MINUTE_US)
    level, per, b_t, b_bin, b_n, b_obs, b_exp, b_var = _settle_many(
        sid, count, np.zeros(count, np.int64), tidx, tbin, np.ones(m, np.int64), obs, exp, np.zeros(m))
    # each bin's table as an index into its subject's tables
    b_sub = np.repeat(np.arange(count), np.diff(per))
    tnew = np.ones(len(b_t), bool)
    tnew[1:] = (b_sub[1:] != b_sub[:-1]) | (b_t[1:] != b_t[:-1])
    tcum = np.cumsum(tnew) - 1
    out: list[Timeline | None] = []
    for j, (a, b) in enumerate(zip(per[:-1].tolist(), per[1:].tolist(), strict=True)):
        tb = (tcum[a:b] - tcum[a]).astype(np.int32)
        names = [table_names[int(i)] for i in b_t[a:b][tnew[a:b]].tolist()]
        out.append(Timeline(int(level[j]), names, tb, b_bin[a:b], b_n[a:b], b_obs[a:b], b_exp[a:b], b_var[a:b]))
    return out


def _settle_many(sid: np.ndarray, count: int, level: np.ndarray, tb: np.ndarray, tbin: np.ndarray, n: np.ndarray,
                 obs: np.ndarray, exp: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_settle` of `count` timelines at once: row r is a bin of timeline sid[r] (sid non-decreasing, each
    timeline's rows in the order its own `_settle` is given them), whose level is level[sid[r]]. One stable sort by
    (timeline, table, bin); only a timeline with more than MAX_BINS bins climbs (`_levels_up`, from its level), and
    then every row is sorted again at its timeline's level. Returns the levels reached, where each timeline's bins
    start and end (`per`, count + 1 offsets), and the bins' tb, tbin, n, obs, exp and var, each run of equal bins
    summed in its order (`_summed`)."""
    m = len(sid)

    def sort(tbin: np.ndarray) -> tuple[np.ndarray, ...]:
        order = bin_order(sid, tb, tbin)  # stable: equal bins keep the order given (floats add in that order)
        ss, st, sb = sid[order], tb[order], tbin[order]
        new = np.ones(m, bool)
        new[1:] = (ss[1:] != ss[:-1]) | (st[1:] != st[:-1]) | (sb[1:] != sb[:-1])
        bstart = np.flatnonzero(new)
        return order, st, sb, new, bstart, np.searchsorted(ss[bstart], np.arange(count + 1), "left")

    order, st, sb, new, bstart, per = sort(tbin)
    up = np.zeros(count, np.int64)
    ends = np.append(bstart, m)
    for j in np.flatnonzero(np.diff(per) > MAX_BINS).tolist():  # only these climb
        a, b = ends[per[j]], ends[per[j + 1]]
        up[j] = _levels_up(st[a:b], sb[a:b], new[a:b], int(level[j]))
    if up.any():
        tbin = _coarsen(tbin, up[sid])
        order, st, sb, new, bstart, per = sort(tbin)
    if not m:
        z = np.zeros(0)
        return level + up, per, st, sb, np.zeros(0, np.int64), z, z, z
    return (level + up, per, st[bstart], sb[bstart], np.add.reduceat(n[order], bstart),
            np.add.reduceat(obs[order], bstart), np.add.reduceat(exp[order], bstart),
            np.add.reduceat(var[order], bstart))


def lex_order3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`np.lexsort((c, b, a))` (stable: by a, then b, then c, ties in input order) of three integer arrays, as one
    stable argsort of the three packed into one int64 key when their ranges fit in 63 bits (each less its smallest
    value, so order is kept); else np.lexsort itself. Issue 15, a thirtieth session: the three passes of np.lexsort
    were most of dealer_cutter's fold of its parts' timelines at 10M deals (6 s of 11), whose rows come as sorted
    runs, which one stable sort of the key merges (a pass of np.lexsort by c alone scatters them)."""
    m = len(a)
    if m < 2:
        return np.arange(m, dtype=np.int64)
    keys = []
    bits = 0
    for x in (a, b, c):
        x = np.asarray(x, np.int64)
        lo, hi = int(x.min()), int(x.max())
        width = (hi - lo).bit_length()
        keys.append((x, lo, width))
        bits += width
    if bits > 63:
        return np.lexsort((c, b, a))
    key = np.zeros(m, np.int64)
    for x, lo, width in keys:
        key <<= width
        key |= x - lo
    return np.argsort(key, kind="stable")


def bin_order(sub: np.ndarray, tb: np.ndarray, tbin: np.ndarray) -> np.ndarray:
    """`np.lexsort((tbin, tb, sub))` of timelines' bins (`lex_order3`), the untimed bins (`NO_TIME_BIN`, the largest
    int64) keyed as the bin after the last timed one: the same order, in a range the packed key can hold."""
    untimed = tbin == NO_TIME_BIN
    if untimed.any():
        tbin = np.where(untimed, tbin[~untimed].max(initial=0) + 1, tbin)
    return lex_order3(sub, tb, tbin)


def merge_pairs(pairs: Sequence[tuple["TrialSummary", "TrialSummary"]]) -> list["TrialSummary"]:
    """`TrialSummary.merge([a, b])` of every pair, the pairs of two non-empty summaries at once (their groups in
    one sort, their timelines in one `_settle_many`; held equal to the merge one pair at a time, bit for bit, by
    tests/test_timeline_settle.py). Issue 15, a twenty-seventh session: dealer_cutter's fold of two parts merged
    3,540 pairs one at a time, about 0.8 s of its 4 s of tests at 300,000 deals."""
    out: list[TrialSummary | None] = [None] * len(pairs)
    both = []
    for i, (a, b) in enumerate(pairs):
        if len(a) and len(b):
            both.append(i)
        else:
            out[i] = TrialSummary.merge([a, b])
    if both:
        sums = [t for i in both for t in pairs[i]]
        sid = np.repeat(np.repeat(np.arange(len(both)), 2), [len(t.p) for t in sums])
        g_p, g_n, g_k, gb = _grouped(sid, len(both), np.concatenate([t.p for t in sums]),
                                     np.concatenate([t.n for t in sums]).astype(np.int64),
                                     np.concatenate([t.k for t in sums]).astype(np.int64))
        tls = _merge_timelines([(pairs[i][0].timeline, pairs[i][1].timeline) for i in both])
        for j, i in enumerate(both):  # copies: a slice would hold the whole batch's array for as long as it lives,
            a, b = gb[j], gb[j + 1]  # and a later merge replaces some of a batch's summaries but not all
            out[i] = TrialSummary(g_p[a:b].copy(), g_n[a:b].copy(), g_k[a:b].copy(), tls[j])
    return cast(list[TrialSummary], out)


def _merge_timelines(pairs: Sequence[tuple[Timeline | None, Timeline | None]]) -> list[Timeline | None]:
    """What `TrialSummary.merge` makes of each pair of timelines: None for none, the one there is for one (as
    `Timeline.merge` keeps a lone non-empty one), and the pairs of two non-empty ones merged at once: each pair's
    tables in order of appearance, its bins at the higher level, settled by `_settle_many`."""
    out: list[Timeline | None] = [None] * len(pairs)
    both: list[int] = []
    for i, (a, b) in enumerate(pairs):
        tls = [t for t in (a, b) if t is not None]
        if len(tls) == 2 and len(tls[0]) and len(tls[1]):
            both.append(i)
        elif tls:
            out[i] = Timeline.merge(tls)
    if not both:
        return out
    names_of, tbs, bins, shift, level = [], [], [], [], []
    for i in both:
        a, b = cast(tuple[Timeline, Timeline], pairs[i])
        names = {x: k for k, x in enumerate(a.tables)}
        remap = np.array([names.setdefault(x, len(names)) for x in b.tables], np.int32)
        names_of.append(list(names))
        lv = max(a.level, b.level)
        level.append(lv)
        tbs += [a.tb, remap[b.tb]]
        bins += [a.tbin, b.tbin]
        shift += [lv - a.level, lv - b.level]
    lens = np.array([len(x) for x in tbs], np.int64)
    sid = np.repeat(np.repeat(np.arange(len(both)), 2), lens)
    tbin = _coarsen(np.concatenate(bins), np.repeat(np.array(shift, np.int64), lens))
    parts = [x for i in both for x in cast(tuple[Timeline, Timeline], pairs[i])]
    lv_got, per, b_t, b_bin, b_n, b_obs, b_exp, b_var = _settle_many(
        sid, len(both), np.array(level, np.int64), np.concatenate(tbs), tbin, np.concatenate([t.n for t in parts]),
        np.concatenate([t.obs for t in parts]), np.concatenate([t.exp for t in parts]),
        np.concatenate([t.var for t in parts]))
    b_t = b_t.astype(np.int32)
    for j, i in enumerate(both):
        lo, hi = int(per[j]), int(per[j + 1])
        out[i] = Timeline(int(lv_got[j]), names_of[j], b_t[lo:hi].copy(), b_bin[lo:hi].copy(), b_n[lo:hi].copy(),
                          b_obs[lo:hi].copy(), b_exp[lo:hi].copy(), b_var[lo:hi].copy())  # copies, as above
    return out


def summarise_spec(subject: np.ndarray, names: Sequence[str], obs: np.ndarray, p: np.ndarray,
                   table_idx: np.ndarray, table_names: Sequence[str], time_us: np.ndarray,
                   with_timeline: bool = True) -> dict[str, TrialSummary]:
    """`summarise`'s spec: each subject's trials through `TrialSummary.of` and `Timeline.of`, one subject at a
    time."""
    got = _by_subject(subject)
    if got is None:
        return {}
    o, s = got
    cuts = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(s)]])
    obs, p = np.asarray(obs), np.asarray(p, float)
    out = {}
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        rows = o[a:b]
        tl = Timeline.of(table_names, table_idx[rows], time_us[rows], obs[rows], p[rows]) if with_timeline else None
        out[names[int(s[a])]] = TrialSummary.of(obs[rows], p[rows], tl)
    return out


def summarise_deals(subject: np.ndarray, names: Sequence[str], obs: np.ndarray, p: np.ndarray,
                    facts: DealingFacts, rows: np.ndarray, with_timeline: bool = True) -> dict[str, TrialSummary]:
    """`summarise` of trials on the dealing facts' deals `rows` (their tables and times place the timeline)."""
    rows = np.asarray(rows, np.int64)
    return summarise(subject, names, obs, p, facts.table[rows], facts.tables, facts.time[rows], with_timeline)


def merge_summaries(parts: Sequence[Mapping[str, Mapping[str, TrialSummary]]]) -> dict[str, dict[str, TrialSummary]]:
    """Merge {subject: {stream: TrialSummary}} counts of several parts (exact)."""
    acc: dict[str, dict[str, list[TrialSummary]]] = {}
    for part in parts:
        for subj, streams in part.items():
            for name, t in streams.items():
                acc.setdefault(subj, {}).setdefault(name, []).append(t)
    return {s: {k: TrialSummary.merge(v) for k, v in streams.items()} for s, streams in acc.items()}


def merge_summaries_into(total: dict[str, dict[str, TrialSummary]],
                         part: Mapping[str, Mapping[str, TrialSummary]]) -> dict[str, dict[str, TrialSummary]]:
    """`merge_summaries([total, part])` for a `total` that came out of `merge_summaries`, into `total` (returned):
    the same groups, timelines and key order, at a cost of the part's subjects, not the total's. The audit folds
    each part into the running total so (issue 15: at 10M deals the total is ten clubs' and each part one or two
    tables'). A summary of the part taken as it is goes through `TrialSummary.merge` as `merge_summaries` does
    (an empty one becomes `TrialSummary()`)."""
    merge = TrialSummary.merge
    both: list[tuple[dict[str, TrialSummary], str, TrialSummary, TrialSummary]] = []
    for subj, streams in part.items():
        dst = total.get(subj)
        if dst is None:
            total[subj] = {name: merge([t]) for name, t in streams.items()}
            continue
        for name, t in streams.items():
            old = dst.get(name)
            if old is None:
                dst[name] = merge([t])
            else:  # merged below, all at once (the key keeps its place in dst)
                both.append((dst, name, old, t))
    for (dst, name, _, _), got in zip(both, merge_pairs([(old, t) for _, _, old, t in both]), strict=True):
        dst[name] = got
    return total


def split_trials(subject: np.ndarray, names: Sequence[str], key: np.ndarray, obs: np.ndarray,
                 p: np.ndarray) -> dict[str, Trials]:
    """Split parallel arrays of trials by subject index (-1: no subject) into {name: Trials}."""
    keep = subject >= 0
    subject, key, obs, p = subject[keep], key[keep], obs[keep], p[keep]
    if len(subject) == 0:
        return {}
    order = np.lexsort((key, subject))
    subject, key, obs, p = subject[order], key[order], obs[order], p[order]
    cuts = np.nonzero(np.diff(subject))[0] + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(subject)]])
    return {names[int(subject[a])]: Trials(key[a:b], obs[a:b].astype(np.int8), p[a:b].astype(float))
            for a, b in zip(starts, ends, strict=False)}


def merge_streams(parts: Sequence[Mapping[str, Mapping[str, Trials]]]) -> dict[str, dict[str, Trials]]:
    """Merge {subject: {stream: Trials}} counts of several partitions (exact: concatenation in input order)."""
    acc: dict[str, dict[str, list[Trials]]] = {}
    for part in parts:
        for subj, streams in part.items():
            for name, t in streams.items():
                acc.setdefault(subj, {}).setdefault(name, []).append(t)
    return {s: {k: Trials.concat(v) for k, v in streams.items()} for s, streams in acc.items()}


def timeline(obs: np.ndarray, expected: np.ndarray, points: int = TIMELINE_POINTS,
             variance: np.ndarray | None = None, counts: bool = True) -> list[list]:
    """Cumulative [index (1-based), observed so far, expected so far] points, thinned to at most `points`.

    `variance` (optional, already cumulative: the null variance of the observed total at each index) adds a fourth
    element to each point, so that the report draws the honest range from the test's own null rather than from the
    share of the expected count reached (which says nothing when the expectation is near 0 or not a count).
    `counts`: the observed totals print as integers; otherwise (scores) rounded to 4 decimals."""
    n = len(obs)
    if n == 0:
        return []
    co = np.cumsum(obs)
    ce = np.cumsum(expected)
    idx = np.unique(np.linspace(0, n - 1, min(points, n)).round().astype(np.int64))
    out = [[int(i + 1), int(co[i]) if counts else round(float(co[i]), 4), round(float(ce[i]), 4)] for i in idx]
    if variance is not None:
        for row, i in zip(out, idx, strict=False):
            row.append(round(max(float(variance[i]), 0.0), 4))
    return out


def deal_order(deal) -> int:
    """A deal's key, as `AuditColumns.order` holds it, for the per-card oracles over `DealResult`s.

    Given a `DealResult`: `columns.result_order` -- its rank in the canonical order of the whole input (table,
    time, game, deal number, then file and line), which the replay sets (`DealResult.order`), else its input key.
    Given a bare `Deal` (which cannot know its rank among the other deals): its input key file index << 32 | line,
    equal to the table's only for results made outside a replay. Oracles should pass the result."""
    if hasattr(deal, "deal"):
        return result_order(deal)
    return input_key(deal.file_index, deal.line)


def trail_code(order: int, play: int, event: int) -> int:
    """One play-level trial of a timeline (a `collusion` opportunity, a revoke) as one sortable int:
    ((deal order << 6 | play index) << 1) | event, the play index being the play's place in the deal's plays (at
    most 52). Sorting the codes sorts the trials in input order, then play order within a deal; `code & 1` is the
    event. Deals with the same place in the input (in-memory deals without one) tie on the order and are then
    ordered by play index: still one order for every partition of the input."""
    return (((order << 6) | play) << 1) | event


def control(t: "Trials | TrialSummary", prefixes: exact.PBPrefixes | None = None) -> dict:
    """A control's summary: n, observed, expected, exact one-sided p-value (in no family; `exact.pb_sf_narrow`).
    `prefixes`: the narrow convolutions of trials that `t`'s start like (the same distribution, sooner)."""
    if len(t) == 0:
        return {"n": 0, "observed": 0, "expected": 0.0, "pvalue": None}
    groups = t.groups()
    pv = exact.pb_sf_narrow(groups, t.observed, prefixes.dist(groups) if prefixes is not None else None)
    return {"n": len(t), "observed": t.observed, "expected": round(t.expected, 4), "pvalue": pv,
            "rate": round(t.observed / len(t), 5), "null_rate": round(t.expected / len(t), 5)}


def pb_result(test: str, subject: str, t: "Trials | TrialSummary", level: float, method: str,
              controls: dict | None = None, detail: dict | None = None, details: bool = True,
              fixed: "Trials | TrialSummary | None" = None,
              cheat: str = "", points: int = TIMELINE_POINTS, timeline_points: list | None = None) -> TestResult:
    """The exact one-sided Poisson-binomial test of one subject's trials.

    `level` is the FDR-equivalent per-test level at which `min_detectable` is computed; `fixed` are trials of
    the same test that the modelled cheat cannot touch (they are part of `t`). `timeline_points`: `t`'s timeline
    points when the caller made them already (`points_many`, for many subjects at once)."""
    groups = t.groups()
    dist = exact.poisson_binomial(groups)
    obs = t.observed
    pv = dist.sf(obs)
    det: dict[str, Any] = dict(detail or {})
    if details:
        fixed_groups = fixed.groups() if fixed is not None and len(fixed) else ()
        affected = _minus(groups, fixed_groups)
        det["null_rate"] = round(t.expected / len(t), 6) if len(t) else None
        det["timeline"] = (timeline_points if timeline_points is not None else t.points(points)
                           if isinstance(t, TrialSummary) else timeline(t.obs, t.p, points))
        det["min_detectable"] = exact.min_detectable(_coarse(affected), float(level), MIN_DETECTABLE_POWER,
                                                     fixed=_coarse(fixed_groups))
        det["min_detectable_level"] = level
        det["min_detectable_method"] = (
            f"exact: the smallest q at which the exact test at the FDR-equivalent per-test level (family FDR / "
            f"family size) has power {MIN_DETECTABLE_POWER}, for a cheat who {cheat or 'forces the event'} in a "
            "fraction q of their trials (p -> p + q(1 - p))")
    return TestResult(test=test, subject=subject, n=len(t), observed=obs, expected=t.expected,
                      statistic=exact.z_score(obs, dist), pvalue=pv, method=method, controls=controls or {},
                      detail=det)


def _coarse(groups) -> tuple[tuple[float, int], ...]:
    """Trial probabilities rounded to 3 decimals for the power search only (the p-value itself stays exact): a
    subject whose deals have hundreds of distinct conditional nulls would otherwise cost a convolution each."""
    out: dict[float, int] = {}
    for p, k in groups:
        r = round(p, 3)
        out[r] = out.get(r, 0) + k
    return tuple(sorted(out.items()))


def _minus(groups, remove) -> tuple[tuple[float, int], ...]:
    rem = dict(remove)
    out = []
    for p, k in groups:
        k2 = k - rem.get(p, 0)
        if k2 > 0:
            out.append((p, k2))
    return tuple(out)


def funnel(t: "Trials | TrialSummary") -> dict:
    """Funnel-plot inputs: n, observed, expected and the exact null's central 95% and 99.8% limits of the count."""
    d = exact.poisson_binomial(t.groups())
    return {"n": len(t), "observed": t.observed, "expected": round(t.expected, 4),
            "limits": dict(zip(("95", "99.8"), d.limits((0.025, 0.001)), strict=True))}


class TrialsDetector:
    """The shared skeleton of the exact dealing tests (`dealer_jack`, `partner_jack`, `turnup_jack`,
    `af_dealer_jack`): per-subject `TrialSummary` streams counted from the dealing facts by the module's
    `count_facts(facts, timeline_of)` (`timeline_of(stream)`: whether that stream keeps a timeline; only the tested
    one does), merged exactly (`merge_summaries`): bounded in subjects, whatever the number of deals."""

    name = ""

    def __init__(self, fdr: float = 0.05, details: bool = True):
        self.fdr = fdr
        self.details = details

    @staticmethod
    def count_facts(facts, timeline_of) -> dict:
        raise NotImplementedError

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        """The per-subject trials of the table's dealing facts (`facts_from_columns(table)` unless given; the
        oracle is the same `count_facts` over `facts_from_results` of the deals)."""
        return self.count_facts(facts if facts is not None else facts_from_columns(table), self.timeline_of)

    def timeline_of(self, stream: str) -> bool:
        return stream == self.stream

    def merge(self, parts: Sequence[dict]) -> dict:
        return merge_summaries(parts)

    def merge_into(self, total: dict, part: dict) -> dict:
        """`merge([total, part])`, in place (see `Detector.merge_into`)."""
        return merge_summaries_into(total, part)

    # what `finalize` reads (the shared finalize of the exact Jack tests: one tested stream per subject, controls
    # from other streams, a funnel)
    stream = "deal"  # the tested stream of each subject's counts
    controls_of: Mapping[str, str] = {}  # control name -> stream (each an exact test in no family)
    method = ""
    cheat = ""  # what the modelled cheat does, for the "smallest cheat it could have revealed" sentence

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        """One exact one-sided Poisson-binomial test per subject with trials in `stream`."""
        subjects = sorted(s for s, st in counts.items() if len(st.get(self.stream, TrialSummary())))
        level = exact.per_test_level(self.fdr, len(subjects))
        out = []
        for s in subjects:
            st = counts[s]
            t = st[self.stream]
            controls: dict[str, Any] = {}
            detail: dict[str, Any] = {}
            if self.details:
                controls = {name: control(st.get(k, TrialSummary())) for name, k in self.controls_of.items()}
                detail = {"funnel": funnel(t)}
            out.append(pb_result(self.name, s, t, level, self.method, controls, detail, details=self.details,
                                 cheat=self.cheat))
        return out
