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

import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from ..columns import AuditColumns, input_key, result_order
from ..facts import DealingFacts, facts_from_columns
from ..stats import exact
from ..stats.family import TestResult
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

    def finalize(self, counts: Any, rng: np.random.Generator) -> list[TestResult]: ...


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


def control(t: Trials) -> dict:
    """A control's summary: n, observed, expected, exact one-sided p-value (in no family)."""
    if len(t) == 0:
        return {"n": 0, "observed": 0, "expected": 0.0, "pvalue": None}
    d = exact.poisson_binomial(t.groups())
    return {"n": len(t), "observed": t.observed, "expected": round(t.expected, 4), "pvalue": d.sf(t.observed),
            "rate": round(t.observed / len(t), 5), "null_rate": round(t.expected / len(t), 5)}


def pb_result(test: str, subject: str, t: Trials, level: float, method: str, controls: dict | None = None,
              detail: dict | None = None, details: bool = True, fixed: Trials | None = None,
              cheat: str = "") -> TestResult:
    """The exact one-sided Poisson-binomial test of one subject's trials.

    `level` is the FDR-equivalent per-test level at which `min_detectable` is computed; `fixed` are trials of
    the same test that the modelled cheat cannot touch (they are part of `t`)."""
    groups = t.groups()
    dist = exact.poisson_binomial(groups)
    obs = t.observed
    pv = dist.sf(obs)
    det: dict[str, Any] = dict(detail or {})
    if details:
        fixed_groups = fixed.groups() if fixed is not None and len(fixed) else ()
        affected = _minus(groups, fixed_groups)
        det["null_rate"] = round(t.expected / len(t), 6) if len(t) else None
        det["timeline"] = timeline(t.obs, t.p)
        det["min_detectable"] = exact.min_detectable(_coarse(affected), float(level), MIN_DETECTABLE_POWER,
                                                     fixed=_coarse(fixed_groups))
        det["min_detectable_level"] = level
        det["min_detectable_method"] = (
            f"exact: the smallest q at which the exact test at the FDR-equivalent per-test level (family FDR / "
            f"family size) has power {MIN_DETECTABLE_POWER}, for a cheat who {cheat or 'forces the event'} in a "
            "fraction q of his trials (p -> p + q(1 - p))")
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


def funnel(t: Trials) -> dict:
    """Funnel-plot inputs: n, observed, expected and the exact null's central 95% and 99.8% limits of the count."""
    d = exact.poisson_binomial(t.groups())
    return {"n": len(t), "observed": t.observed, "expected": round(t.expected, 4),
            "limits": {"95": [d.lower_limit(0.025), d.upper_limit(0.025)],
                       "99.8": [d.lower_limit(0.001), d.upper_limit(0.001)]}}


class TrialsDetector:
    """The shared skeleton of the exact dealing tests (`dealer_jack`, `turnup_jack`): per-subject `Trials` streams
    counted from the dealing facts by the module's `count_facts`, merged by concatenation (exact across tables)."""

    name = ""

    def __init__(self, fdr: float = 0.05, details: bool = True):
        self.fdr = fdr
        self.details = details

    @staticmethod
    def count_facts(facts) -> dict:
        raise NotImplementedError

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        """The per-subject trials of the table's dealing facts (`facts_from_columns(table)` unless given; the
        oracle is the same `count_facts` over `facts_from_results` of the deals)."""
        return self.count_facts(facts if facts is not None else facts_from_columns(table))

    def merge(self, parts: Sequence[dict]) -> dict:
        return merge_streams(parts)

    # what `finalize` reads (the shared finalize of the exact Jack tests: one tested stream per subject, controls
    # from other streams, a funnel)
    stream = "deal"  # the tested stream of each subject's counts
    controls_of: Mapping[str, str] = {}  # control name -> stream (each an exact test in no family)
    method = ""
    cheat = ""  # what the modelled cheat does, for the "smallest cheat it could have revealed" sentence

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        """One exact one-sided Poisson-binomial test per subject with trials in `stream`."""
        subjects = sorted(s for s, st in counts.items() if len(st.get(self.stream, Trials.empty())))
        level = exact.per_test_level(self.fdr, len(subjects))
        out = []
        for s in subjects:
            st = counts[s]
            t = st[self.stream]
            controls: dict[str, Any] = {}
            detail: dict[str, Any] = {}
            if self.details:
                controls = {name: control(st.get(k, Trials.empty())) for name, k in self.controls_of.items()}
                detail = {"funnel": funnel(t)}
            out.append(pb_result(self.name, s, t, level, self.method, controls, detail, details=self.details,
                                 cheat=self.cheat))
        return out
