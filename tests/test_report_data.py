"""Synthetic audit documents shaped like outputs.md, for the report tests (and the tests of this generator).

The numbers are real statistics of seeded binomial draws (exact one-sided binomial p-values, Benjamini–Hochberg
through `auditor.stats.family.apply_audit`), not hand-written results: the report is tested on documents with
the statistical texture of a real audit, including a planted stacker, a planted marked-Ten player, controls, entries
that lack optional fields, and player names written to break HTML.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
from scipy.stats import binom, norm

from auditor.detectors.registry import SHARES
from auditor.stats.family import TestResult, apply_audit

EVIL = ['<script>alert("x")</script>', '"quoted" & \'single\'', "</svg><img src=x onerror=alert(1)>",
        "-->]]><!--", "| *md* [link](javascript:alert(1)) `tick`"]

P0 = 11 / 35  # the dealer holds the Jack of trumps: four-player Scotch Whist, Foster


def _power_min_q(n: int, p0: float, alpha: float, power: float = 0.8) -> float:
    """Smallest stacking rate q whose exact one-sided binomial test at level alpha has the given power."""
    k = int(binom.isf(alpha, n, p0)) + 1  # reject when X >= k
    lo, hi = 0.0, 1.0
    for _ in range(40):
        q = (lo + hi) / 2
        p = q + (1 - q) * p0
        if binom.sf(k - 1, n, p) >= power:
            hi = q
        else:
            lo = q
    return hi if binom.sf(k - 1, n, 1.0) >= power else 1.0


def synthetic_doc(seed: int = 7, evil: bool = True, n_dealers: int = 30, with_findings: bool = True,
                  stacker_q: float = 0.3) -> dict:
    rng = np.random.default_rng(seed)
    names = [f"p{i:02d}" for i in range(n_dealers)]
    if evil:
        names[: len(EVIL)] = EVIL
    stacker = names[-1]
    marked = names[-2]
    results: list[TestResult] = []
    for name in names:
        n = int(rng.integers(40, 600))
        q = stacker_q if name == stacker else 0.0
        hits = rng.random(n) < q + (1 - q) * P0
        obs = int(hits.sum())
        exp = n * P0
        cum = np.cumsum(hits)
        timeline = [[i + 1, int(cum[i]), round((i + 1) * P0, 4)] for i in range(n)]
        nd = int(rng.integers(200, 2000))
        nd_obs = int(rng.binomial(nd, 8 / 35))
        detail = {"timeline": timeline, "null_rate": P0, "sd": math.sqrt(n * P0 * (1 - P0)),
                  "min_detectable": _power_min_q(n, P0, 0.05 / n_dealers),
                  "funnel": {"n": n, "observed": obs, "expected": exp,
                             "limits": {"95": [float(binom.ppf(0.025, n, P0)), float(binom.isf(0.025, n, P0))],
                                        "99.8": [float(binom.ppf(0.001, n, P0)),
                                                 float(binom.isf(0.001, n, P0))]}}}
        controls = {"not_dealing": {"n": nd, "observed": nd_obs, "expected": nd * 8 / 35,
                                    "pvalue": float(binom.sf(nd_obs - 1, nd, 8 / 35))},
                    "trump_ace_as_dealer": {"n": n, "observed": int(rng.binomial(n, P0)), "expected": exp},
                    "trump_ten_as_dealer": {"n": n, "observed": int(rng.binomial(n, P0)), "expected": exp}}
        results.append(TestResult("dealer_jack", name, n, obs, exp, (obs - exp) / detail["sd"],
                                  float(binom.sf(obs - 1, n, P0)), "exact poisson-binomial, one-sided",
                                  controls, detail))
        # marked Ten: a z-score per player, controls near zero; the marked-Ten player is strong
        dec = int(rng.integers(100, 900))
        z = float(rng.normal(5.0, 0.5)) if name == marked else float(rng.normal())
        ctl = {"hard_facts_null": {"z": z + float(rng.normal(0, 0.3))},
               "queen": {"z": float(rng.normal()), "deals": dec, "card": "Q of trumps"},
               "plain_ten": {"z": float(rng.normal()), "deals": dec, "card": "T of the next suit"},
               "placebo": {"z": float(rng.normal()), "deals": dec // 4},
               "packs": {"A": {"z": float(rng.normal()), "deals": dec // 2},
                         "B": {"z": float(rng.normal()), "deals": dec - dec // 2}}}
        for c in [ctl["hard_facts_null"], ctl["queen"], ctl["plain_ten"], ctl["placebo"]] + list(
                ctl["packs"].values()):
            c["p"] = float(norm.sf(c["z"]))
        ctl["field"] = {"field_players": n_dealers, "neighbours": 20, "percentile": float(rng.uniform(0, 100)),
                        "neighbour_median_z": float(rng.normal(0, 0.2)), "percentile_all": 50.0,
                        "empirical_null": None}
        mdet = {"min_detectable": {"rate": min(1.0, 9.0 / math.sqrt(dec)), "power": 0.8}, "decisions": 3 * dec,
                "deals": dec, "excluded": {"forced": dec}}
        results.append(TestResult("marked_ten", name, dec, round(z * math.sqrt(dec), 3), 0.0, z,
                                  float(norm.sf(z)), "conditional randomisation, deal-level", ctl, mdet))
    # collusion: ordered pairs, entries with no detail and no controls at all (a plainer sentence, no crash)
    for i in range(6):
        a, b = names[i], names[(i + 1) % len(names)]
        results.append(TestResult("collusion", f"{a}+{b}", int(rng.integers(20, 200)), float(rng.poisson(3)),
                                  3.0, 0.0, float(rng.uniform()), "monte-carlo"))
    tests, fams, wide = apply_audit(results, 0.05, SHARES)  # as the audit decides its flags
    entries = [t.to_json() for t in tests]
    flags = sorted((e for e in entries if e["flagged"]), key=lambda e: (e["pvalue"], e["test"], e["subject"]))
    findings = []
    if with_findings:
        findings = [
            {"code": "revoke", "game_id": "g<1>", "deal_no": 3, "trick": 5, "seat": 2, "player": names[0],
             "card": "9h", "source": "club.jsonl:88", "message": f"{names[0]} played 9h to a club lead while "
                                                                 "holding Qc"},
            {"code": "bad_record", "game_id": None, "deal_no": None, "trick": None, "seat": None, "player": None,
             "card": None, "source": "evil</td>.jsonl:2", "message": "not JSON: <b>oops</b>"},
        ]
    paths = [f"{x}.jsonl" for x in names[:len(EVIL)]] + ["club.jsonl"]  # issue 16: hostile paths, escaped too
    repro = {"tool": "auditor", "version": "0.1.0", "command": shlex.join(["auditor", "audit", *paths]),
             "seed": seed, "fdr": 0.05,
             "inputs": [{"path": x, "sha256": f"{k:064x}", "bytes": 1000 * (k + 1)} for k, x in enumerate(paths)]
             + [{"path": "gone.jsonl", "sha256": None, "bytes": None, "error": "No such file or directory"}],
             "rules_presets": {"scotch_whist/foster": 12000, "all_fours/foster": 345}}
    return {"deals": 12345, "games": 2100,
            "replay": {"deals": 12345, "games": 2100, "findings": findings, "games_summary": []},
            "seed": seed, "audit": wide.to_json(), "families": [f.to_json() for f in fams], "tests": entries,
            "flags": flags, "reproducibility": repro}


def test_synthetic_doc_has_the_planted_cheats_flagged():
    doc = synthetic_doc(seed=7)
    flagged = {(f["test"], f["subject"]) for f in doc["flags"]}
    subjects = {e["subject"] for e in doc["tests"] if e["test"] == "dealer_jack"}
    assert "p29" in subjects and ("dealer_jack", "p29") in flagged
    assert ("marked_ten", "p28") in flagged


def test_min_detectable_has_the_stated_power():
    n, alpha = 300, 0.05 / 30
    q = _power_min_q(n, P0, alpha)
    k = int(binom.isf(alpha, n, P0)) + 1
    assert binom.sf(k - 1, n, q + (1 - q) * P0) >= 0.8
    q2 = q - 0.01
    assert binom.sf(k - 1, n, q2 + (1 - q2) * P0) < 0.8
