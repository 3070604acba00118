"""Test results and the audit's error control.

Every detector returns frozen `TestResult` records. The audit decides its flags over every test and subject
together (`apply_audit`: one weighted Benjamini–Hochberg, each test name holding a share of the error budget fixed
in advance), so that an honest club is accused in at most `level` of its audits; test names remain as groupings of
the report (`Family`). Controls and diagnostics live inside an entry's `controls` and are in no test of the audit.
Tiers: `report` (q ≤ level: a flag; `strong` when it passes the audit-wide Bonferroni bound at `STRONG_LEVEL`),
`watch` (q ≤ `WATCH_Q` or p ≤ `WATCH_P`: shown, not a flag), `clear`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

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
    strong: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test, "subject": self.subject, "n": self.n, "observed": _num(self.observed),
            "expected": _num(self.expected), "statistic": _num(self.statistic), "pvalue": _num(self.pvalue),
            "qvalue": _num(self.qvalue), "method": self.method, "flagged": self.flagged, "tier": self.tier,
            "controls": _clean(self.controls), "detail": _clean(self.detail), "strong": self.strong,
        }


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return x
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return None
    return float(f"{x:.6g}")


class Cleaned(dict[str, Any]):
    """A dict already passed through `_clean` (done where the test ran, e.g. in a worker process): `to_json` takes
    it as it is."""


class CleanList(list[Any]):
    """A list whose items are already what `_clean` makes of them (ints, strings, `clean_floats`' floats and None,
    and lists of those): `_clean` takes it as it is, without walking it. Issue 15, speed: a timeline is some 56
    small lists of numbers, walked item by item and each float formatted: an eighth of `dealer_cutter`'s and
    `collusion`'s tests."""


def clean_floats(values: Any) -> list[float | None]:
    """`[_clean(float(v)) for v in values]`, the same floats to the last bit, vectorised: None for NaN and the
    infinities, else `float(f"{v:.6g}")`. That is v correctly rounded (ties to even) to 6 significant digits, the
    decimal r / 10^d with d = 5 - floor(log10|v|) and r the integer nearest v 10^d; its double is the IEEE quotient
    of r by the exact 10^d (0 <= d <= 22). Like `detectors.base.rounded`, the values whose product v 10^d lies
    within a few units in the last place of a half-integer, those near a power of ten (where log10's floor is
    unsure), and those with d outside 0..22 go through the formatting itself."""
    import numpy as np

    v = np.asarray(values, dtype=float).reshape(-1)
    a = np.abs(v)
    finite = np.isfinite(v)
    with np.errstate(all="ignore"):
        lg = np.log10(np.where(finite & (a > 0), a, 1.0))
        d = 5.0 - np.floor(lg)
        ok_d = (d >= 0) & (d <= 22)
        scale = 10.0 ** np.where(ok_d, d, 0.0)
        y = v * scale
        r = np.rint(y)
        near = np.abs(np.abs(y - np.floor(y)) - 0.5) <= 8 * np.spacing(np.abs(y)) + 1e-300
        edge = np.abs(lg - np.rint(lg)) < 1e-9
        slow = ~finite | ((a > 0) & (near | edge | ~ok_d))
        out: list[float | None] = (r / scale).tolist()
    for i in np.flatnonzero(slow).tolist():
        out[i] = _clean(float(v[i]))
    return out


def cleaned(obj: dict[str, Any]) -> Cleaned:
    return obj if type(obj) is Cleaned else Cleaned(_clean(obj))


class Packed(Mapping[str, Any]):
    """A test's cleaned controls or detail kept as compressed compact JSON (issue 15): at 10M deals of ten clubs
    the audit's 76,180 tests held their details (timelines, top deals) as Python objects, about 2 GB, against some
    tens of MB packed. A read-only mapping that decodes on each access (nothing decoded is kept); `to_json` writes
    the decoded dict, so the document is the same byte for byte. Equal to a packed or plain mapping of the same
    content."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def decoded(self) -> Cleaned:
        import orjson

        return Cleaned(orjson.loads(zlib.decompress(self.blob)))

    def __getitem__(self, key: str) -> Any:
        return self.decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.decoded())

    def __len__(self) -> int:
        return len(self.decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Packed):
            return self.blob == other.blob or self.decoded() == other.decoded()
        if isinstance(other, Mapping):
            return self.decoded() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mapping, as a dict is

    def __reduce__(self) -> tuple[Any, ...]:
        return (Packed, (self.blob,))

    def __repr__(self) -> str:
        return f"Packed({self.decoded()!r})"


def packed(obj: dict[str, Any]) -> Cleaned | Packed:
    """`cleaned(obj)`, packed (`Packed`) unless empty or beyond compact JSON (an integer past 64 bits)."""
    c = cleaned(obj)
    if not c:
        return c
    import orjson

    try:
        return Packed(zlib.compress(orjson.dumps(c), 1))
    except TypeError:
        return c


def _clean(obj: Any) -> Any:
    t = type(obj)
    if t is Cleaned or t is CleanList:
        return obj  # the common exact types first: a timeline is thousands of small lists of numbers
    if t is Packed:
        return obj.decoded()
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
    """One test name's share of the audit: every subject of that test.

    Flags are decided audit-wide (`apply_audit`): `fdr` is the audit's level, `share` the part of its error
    budget fixed in advance for this test, `per_test_level` the p-value at which a lone result of this test is
    flagged (level × share / tests). `expected_false_reports`: the audit keeps the expected share of false flags
    among its flags at most the level, so of `flagged` flags about fdr × flagged (at most) are expected to be false;
    `expected_false_reports_if_all_honest`: this test's part of the audit's expected false flags when everyone is
    honest. `apply_families` (one test alone) gives the old per-test reading: share 1."""

    test: str
    tests: int
    fdr: float
    method: str = "benjamini-hochberg"
    flagged: int = 0
    watch: int = 0
    share: float = 1.0
    strong: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "tests": self.tests, "fdr": self.fdr, "method": self.method,
                "flagged": self.flagged, "watch": self.watch,
                "expected_false_reports": _num(self.fdr * self.flagged),
                "expected_false_reports_if_all_honest": _num(self.expected_false_if_null()),
                "share": _num(self.share), "per_test_level": _num(self.per_test_level()), "strong": self.strong}

    def per_test_level(self) -> float:
        return self.fdr * self.share / max(1, self.tests)

    def expected_false_if_null(self) -> float:
        """Under the global null, the audit's expected false flags (`expected_false_flags`) times this test's
        share."""
        return expected_false_flags(self.fdr) * self.share


def expected_false_flags(level: float) -> float:
    """The expected number of flags of a Benjamini-Hochberg procedure at `level` when every hypothesis is true and
    the tests are independent: level / (1 - level)^2 in the limit of many tests (P(any flag) = level exactly; a
    flag seldom comes alone, hence the surplus: 0.0554 at 5%, measured 0.057 +- 0.002 on 20,000 runs of 3,000
    uniform p-values). Discrete and conservative tests give fewer."""
    return level / (1.0 - level) ** 2


STRONG_LEVEL = 0.001
AUDIT_METHOD = "audit-wide weighted benjamini-hochberg"
STRONG_RULE = ("A flag is marked strong when its p-value is below one thousandth of the audit's budget for its "
               "test (a Bonferroni bound over every test of the audit): an honest club would show such a result "
               "less than once in a thousand audits, whatever the dependence between the tests.")


@dataclass(frozen=True)
class AuditWide:
    """The audit-wide error control: one weighted Benjamini-Hochberg over every test and subject of the audit.

    Every test of test name t gets weight w = m × share_t / (m_t × S), where m is the number of tests of the audit,
    m_t that of t and S the sum of the shares of the test names present (so the weights average 1): a lone result
    of t is flagged at p ≤ level × share_t / (S × m_t). Under the global null (nobody cheats) the chance of any flag
    is at most `level` for independent or positively dependent tests (and was measured so on simulated honest
    clubs); with cheaters, the expected share of false flags among flags is at most `level`. `strong`: flags with
    p ≤ strong_level × w / m, i.e. a weighted Bonferroni bound at `strong_level` over the whole audit, valid under
    any dependence."""

    level: float
    tests: int
    flags: int
    strong: int
    strong_level: float
    shares: dict[str, float]
    per_test_level: dict[str, float]
    method: str = AUDIT_METHOD

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "level": self.level, "tests": self.tests, "flags": self.flags,
                "strong": self.strong, "strong_level": self.strong_level,
                "expected_false_flags_if_all_honest": _num(expected_false_flags(self.level)),
                "expected_false_flags_among_flags": _num(self.level * self.flags),
                "chance_of_any_flag_if_all_honest": self.level,
                "shares": {k: _num(v) for k, v in sorted(self.shares.items())},
                "per_test_level": {k: _num(v) for k, v in sorted(self.per_test_level.items())},
                "strong_rule": STRONG_RULE}


def weighted_bh_qvalues(pvalues: list[float], weights: list[float]) -> list[float]:
    """Weighted Benjamini-Hochberg adjusted p-values (Genovese, Roeder & Wasserman 2006): the procedure rejects the
    k smallest p_i / w_i for the largest k with p_(k) / w_(k) ≤ level × k / m; weights average 1. A weight of 0
    never rejects (q = 1). In the input order."""
    m = len(pvalues)
    if m == 0:
        return []
    ratio = [(p / w) if w > 0 else math.inf for p, w in zip(pvalues, weights, strict=True)]
    order = sorted(range(m), key=lambda i: ratio[i])
    q = [1.0] * m
    running = math.inf
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ratio[i] * m / rank)
        q[i] = min(1.0, running)
    return q


def _p(r: TestResult) -> float:
    p = r.pvalue
    return 1.0 if p is None or not (p == p) else min(1.0, max(0.0, float(p)))


def apply_audit(results: Iterable[TestResult], level: float = 0.05, shares: dict[str, float] | None = None,
                strong_level: float = STRONG_LEVEL) -> tuple[list[TestResult], list[Family], AuditWide]:
    """Flags decided over the whole audit (see `AuditWide`). `shares`: each test name's part of the error budget,
    fixed in advance (`auditor.detectors.registry.SHARES`); a test name without one gets the mean share of those
    given. Tiers: `report` (q ≤ level: a flag), `watch` (q ≤ WATCH_Q or p ≤ WATCH_P), `clear`. Order: by test
    name, then subject."""
    by_test: dict[str, list[TestResult]] = {}
    for r in results:
        by_test.setdefault(r.test, []).append(r)
    given = dict(shares or {})
    fallback = (sum(given.values()) / len(given)) if given else 1.0
    raw = {t: float(given.get(t, fallback)) for t in by_test}
    total = sum(raw.values()) or 1.0
    share = {t: raw[t] / total for t in by_test}
    m = sum(len(v) for v in by_test.values())
    names = sorted(by_test)
    ordered = [r for t in names for r in sorted(by_test[t], key=lambda r: r.subject)]
    weights = [m * share[r.test] / len(by_test[r.test]) for r in ordered]
    ps = [_p(r) for r in ordered]
    qs = weighted_bh_qvalues(ps, weights)
    out: list[TestResult] = []
    counts: dict[str, list[int]] = {t: [0, 0, 0] for t in names}
    for r, p, w, q in zip(ordered, ps, weights, qs, strict=True):
        flag = q <= level
        strong = flag and p <= strong_level * w / m
        tier = "report" if flag else ("watch" if (q <= WATCH_Q or p <= WATCH_P) else "clear")
        c = counts[r.test]
        c[0] += flag
        c[1] += tier == "watch"
        c[2] += strong
        out.append(replace(r, qvalue=q, flagged=flag, tier=tier, strong=strong))
    fams = [Family(t, len(by_test[t]), level, method=AUDIT_METHOD, flagged=counts[t][0], watch=counts[t][1],
                   share=share[t], strong=counts[t][2]) for t in names]
    audit = AuditWide(level, m, sum(c[0] for c in counts.values()), sum(c[2] for c in counts.values()),
                      strong_level, share, {f.test: f.per_test_level() for f in fams})
    return out, fams, audit


def apply_families(results: Iterable[TestResult], fdr: float = 0.05) -> tuple[list[TestResult], list[Family]]:
    """Each test name alone, as its own Benjamini-Hochberg family at `fdr` (share 1 each): what one test says on
    its own, for studies of a single test. The audit uses `apply_audit`. Order: by test name, then subject."""
    by_test: dict[str, list[TestResult]] = {}
    for r in results:
        by_test.setdefault(r.test, []).append(r)
    out: list[TestResult] = []
    fams: list[Family] = []
    for test in sorted(by_test):
        tested, fam, _ = apply_audit(by_test[test], fdr, {test: 1.0})
        out += tested
        fams.append(replace(fam[0], method="benjamini-hochberg"))
    return out, fams


RANK_DIGITS = 9  # values equal to this many significant digits are ties wherever the document ranks or orders them


def rank_value(x: float | None, missing: float = 1.0) -> float:
    """`x` to RANK_DIGITS significant digits, for ranking and ordering (`missing` for None and NaN). A statistic
    summed over the parts of a large input may differ in its last bits with the partition (floats add in part
    order: docs/scale.md), which the document's six digits hide; a rank or an order decided on those bits did not
    hide it: with players whose data are equal (the 10M bench's ten renamed copies of a club, whose statistics are
    equal but for those bits), the order of equal flags and the field percentiles of marked_ten changed with
    `--part-deals` (issue 15, a tenth session). Rounded, such values are ties, which the rank counts as ties and the
    order breaks by name; values that differ in the first RANK_DIGITS digits keep their order."""
    if x is None:
        return missing
    x = float(x)
    if math.isnan(x):
        return missing
    return float(f"{x:.{RANK_DIGITS}g}")


def most_significant_first(results: Iterable[TestResult]) -> list[TestResult]:
    """Flags in report order: smallest q-value, then p-value (each to RANK_DIGITS digits: `rank_value`), then test
    and subject."""
    return sorted(results, key=lambda r: (rank_value(r.qvalue), rank_value(r.pvalue), r.test, r.subject))
