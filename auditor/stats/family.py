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


def _clean(obj):
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
    test: str
    tests: int
    fdr: float
    method: str = "benjamini-hochberg"

    def to_json(self) -> dict:
        return {"test": self.test, "tests": self.tests, "fdr": self.fdr, "method": self.method,
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
        for r, q in zip(rs, qs):
            flagged = q <= fdr
            tier = "report" if flagged else ("watch" if (q <= WATCH_Q or r.pvalue <= WATCH_P) else "clear")
            out.append(replace(r, qvalue=q, flagged=flagged, tier=tier))
        fams.append(Family(test, len(rs), fdr))
    return out, fams
