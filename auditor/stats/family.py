"""Test results and multiple-testing families.

Every detector returns frozen `TestResult` records. Each test name is its own family: Benjamini–Hochberg
q-values are computed within a family; controls and diagnostics live inside an entry's `controls` and are in no
family. Tiers: `report` (q ≤ fdr: a flag), `watch` (q ≤ `watch_q` or p ≤ `watch_p`: shown, not a flag), `clear`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

WATCH_Q = 0.20
WATCH_P = 0.01


@dataclass(frozen=True)
class TestResult:
    """One test of one subject. `pvalue` is one-sided, towards cheating."""

    __test__ = False  # not a pytest class

    test: str
    subject: str
    n: int
    observed: float
    expected: float
    statistic: float
    pvalue: float
    method: str
    controls: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    qvalue: float | None = None
    flagged: bool = False
    tier: str = "clear"

    def to_json(self) -> dict:
        return {
            "test": self.test, "subject": self.subject, "n": self.n, "observed": _num(self.observed),
            "expected": _num(self.expected), "statistic": _num(self.statistic), "pvalue": _num(self.pvalue),
            "qvalue": _num(self.qvalue), "method": self.method, "flagged": self.flagged, "tier": self.tier,
            "controls": _clean(self.controls), "detail": _clean(self.detail),
        }


def _num(x):
    if x is None:
        return None
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return x
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return None
    return float(f"{x:.6g}")


class Cleaned(dict):
    """A dict already passed through `_clean` (done where the test ran, e.g. in a worker process): `to_json` takes
    it as it is."""


def cleaned(obj: dict) -> "Cleaned":
    return obj if type(obj) is Cleaned else Cleaned(_clean(obj))


def _clean(obj):
    t = type(obj)
    if t is Cleaned:
        return obj  # the common exact types first: a timeline is thousands of small lists of numbers
    if t is int or t is str or t is bool or obj is None:
        return obj
    if t is float:
        return None if obj != obj or obj in (math.inf, -math.inf) else float(f"{obj:.6g}")
    if t is list or t is tuple:
        return [_clean(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if hasattr(obj, "item"):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, (int, float)):
        return _num(obj)
    return str(obj)


def bh_qvalues(pvalues: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the input order."""
    m = len(pvalues)
    if m == 0:
        return []
    order = sorted(range(m), key=lambda i: pvalues[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = min(1.0, running)
    return q


@dataclass(frozen=True)
class Family:
    """One multiple-testing family: every subject of one test name.

    `expected_false_reports`: BH keeps the expected share of false reports among the reports at most `fdr`, so
    of `flagged` reports about fdr × flagged (at most) are expected to be false. If every subject were honest, the
    chance of any report at all would be at most `fdr` (`expected_false_reports_if_all_honest`, an upper bound on
    that probability for independent tests)."""

    test: str
    tests: int
    fdr: float
    method: str = "benjamini-hochberg"
    flagged: int = 0
    watch: int = 0

    def to_json(self) -> dict:
        return {"test": self.test, "tests": self.tests, "fdr": self.fdr, "method": self.method,
                "flagged": self.flagged, "watch": self.watch,
                "expected_false_reports": _num(self.fdr * self.flagged),
                "expected_false_reports_if_all_honest": _num(self.expected_false_if_null())}

    def expected_false_if_null(self) -> float:
        """Under the global null, BH at level q makes at least one false report with probability ≤ q."""
        return self.fdr


def apply_families(results: Iterable[TestResult], fdr: float = 0.05) -> tuple[list[TestResult], list[Family]]:
    """q-values, flags and tiers, one family per test name. Order: by test name, then subject."""
    by_test: dict[str, list[TestResult]] = {}
    for r in results:
        by_test.setdefault(r.test, []).append(r)
    out: list[TestResult] = []
    fams: list[Family] = []
    for test in sorted(by_test):
        rs = sorted(by_test[test], key=lambda r: r.subject)
        qs = bh_qvalues([r.pvalue for r in rs])
        flagged = watch = 0
        for r, q in zip(rs, qs):
            flag = q <= fdr
            tier = "report" if flag else ("watch" if (q <= WATCH_Q or r.pvalue <= WATCH_P) else "clear")
            flagged += flag
            watch += tier == "watch"
            out.append(replace(r, qvalue=q, flagged=flag, tier=tier))
        fams.append(Family(test, len(rs), fdr, flagged=flagged, watch=watch))
    return out, fams


def most_significant_first(results: Iterable[TestResult]) -> list[TestResult]:
    """Flags in report order: smallest q-value, then p-value, then test and subject."""
    return sorted(results, key=lambda r: (r.qvalue if r.qvalue is not None else 1.0, r.pvalue, r.test, r.subject))
