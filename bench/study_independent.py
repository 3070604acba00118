"""Study: the auditor measured on seasons from the independent generator ``bench/indep/simulate.py``.

Why: every dataset measured before came from the project's own simulator, whose reading of the rules is the
replay's. This study runs the auditor exactly as a user does (``python -m auditor replay|audit --json FILE`` in a
subprocess) on seasons made by a generator written from the specs alone, and reports:

a. replay findings on honest seasons, by code (an honest, rule-following log must give none);
b. false flags: how many honest seasons get any flag (the audit claims at most ``fdr`` = 5 %), with a Wilson 95 %
   interval, and every flag (test, subject, p-value);
c. power: seasons with one planted cheater (Jack stacker q = 0.25 and 0.1, turn-up stacker q = 0.3, revoker
   q = 0.1): is he flagged, by which test, and is anyone else flagged.

Everything is seeded; rerunning ``python bench/study_independent.py --seed S`` rewrites the same numbers into
``docs/studies/independent_seed<S>.json`` (CPU times aside). Audits run one at a time under ``nice -n 10``.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from auditor.calibrate_audit import wilson  # the study may use the package; only the generator may not

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "bench" / "indep" / "simulate.py"
PY = sys.executable

POWER_CASES = [
    ("jack_stacker", "--jack-stacker", 0.25),
    ("jack_stacker", "--jack-stacker", 0.10),
    ("turnup_stacker", "--turnup-stacker", 0.30),
    ("revoker", "--revoker", 0.10),
]
LEVELS = (0.05, 0.01, 0.001, 0.0001)
# The test that a cheat of each kind is meant to trip (others are reported too).
EXPECTED_TEST = {"jack_stacker": "dealer_jack", "turnup_stacker": "turnup_jack", "revoker": "revoke_pattern"}


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nice", "-n", "10", *cmd], capture_output=True, text=True, cwd=ROOT)


def generate(path: Path, deals: int, seed: int, mix: str, cheat: list[str]) -> None:
    cmd = [PY, str(SIM), "--deals", str(deals), "--seed", str(seed), "--mix", mix, *cheat, "--out", str(path)]
    r = run(cmd)
    if r.returncode != 0:
        raise SystemExit(f"generator failed: {' '.join(cmd)}\n{r.stderr}")


def replay(path: Path, engine: str | None = None) -> dict:
    """``auditor replay --json``: exit 0 (no findings) or 1 (findings); anything else is a failure of the run."""
    extra = ["--engine", engine] if engine else []
    r = run([PY, "-m", "auditor", "replay", "--json", *extra, str(path)])
    if r.returncode not in (0, 1):
        raise SystemExit(f"replay exit {r.returncode}: {r.stderr[-2000:]}")
    doc = json.loads(r.stdout)
    return {
        "exit": r.returncode,
        "deals": doc["deals"],
        "games": doc["games"],
        "findings_by_code": dict(collections.Counter(f["code"] for f in doc["findings"])),
        "first_findings": doc["findings"][:5],
        "games_disagreeing_with_log": disagreements(path, doc),
        "_doc": doc,
    }


def disagreements(path: Path, doc: dict) -> int:
    """Games whose final totals or winner in the replay's ``games_summary`` differ from what the generator recorded
    on the game's last deal (its own scoring of rules.md)."""
    last: dict[str, tuple] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            last[r["game_id"]] = (r["recorded"]["totals"], r["recorded"].get("winner"))
    return sum(1 for g in doc["games_summary"] if (g["totals"], g["winner"]) != last.get(g["game_id"]))


def audit(path: Path) -> dict:
    """``auditor audit --json`` (one process): exit 0 no flags, 1 flags."""
    r = run([PY, "-m", "auditor", "audit", "--json", "--workers", "1", str(path)])
    if r.returncode not in (0, 1):
        raise SystemExit(f"audit exit {r.returncode}: {r.stderr[-2000:]}")
    doc = json.loads(r.stdout)
    flags = [
        {
            "test": f["test"],
            "subject": f["subject"],
            "pvalue": f["pvalue"],
            "qvalue": f["qvalue"],
            "strong": f.get("strong", False),
            "n": f["n"],
            "observed": f["observed"],
            "expected": f["expected"],
        }
        for f in doc["flags"]
    ]
    return {
        "exit": r.returncode,
        "deals": doc["deals"],
        "tests": doc["audit"]["tests"],
        "replay_findings_by_code": dict(collections.Counter(f["code"] for f in doc["replay"]["findings"])),
        "flags": flags,
        "_doc": doc,
    }


def season_mix(path: Path) -> dict:
    """Deals per game and per table size of a season (what the generator made)."""
    by = collections.Counter()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            by[f"{r['game']}/{r['rules']}/{len(r['players'])}p{'-sides' if 'sides' in r else ''}"] += 1
    return dict(sorted(by.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="study seed (default 1)")
    ap.add_argument("--deals", type=int, default=15000, help="deals per season (default 15000)")
    ap.add_argument("--honest-club", type=int, default=40, help="honest seasons of the 'club' mix (default 40)")
    ap.add_argument("--honest-pairs", type=int, default=20, help="honest seasons of the 'pairs' mix (default 20)")
    ap.add_argument("--honest-wide", type=int, default=10, help="honest seasons of the 'wide' mix (default 10)")
    ap.add_argument("--wide-deals", type=int, default=8000, help="deals per 'wide' season (default 8000)")
    ap.add_argument("--power-seasons", type=int, default=4, help="seasons per planted cheat (default 4)")
    ap.add_argument("--out", type=Path, default=None, help="default docs/studies/independent_seed<S>.json")
    a = ap.parse_args(argv)
    out = a.out or ROOT / "docs" / "studies" / f"independent_seed{a.seed}.json"
    rng = np.random.default_rng(a.seed)
    t0, c0 = time.time(), children_cpu()
    doc: dict = {
        "study": "independent generator (bench/indep/simulate.py): replay findings, false flags, power",
        "command": f"python bench/study_independent.py --seed {a.seed} --deals {a.deals} --honest-club "
        f"{a.honest_club} --honest-pairs {a.honest_pairs} --honest-wide {a.honest_wide} --wide-deals {a.wide_deals} --power-seasons {a.power_seasons}",
        "seed": a.seed,
        "deals_per_season": a.deals,
        "club_members": 44,
        "audit_command": "nice -n 10 python -m auditor audit --json --workers 1 FILE (default --fdr 0.05, --seed 0)",
        "replay_command": "nice -n 10 python -m auditor replay --json FILE",
    }
    honest: list[dict] = []
    calib: dict[str, dict] = {}  # per test name over every honest audit: how many p-values fall below each level
    plan = [("club", i) for i in range(a.honest_club)] + [("pairs", i) for i in range(a.honest_pairs)]
    plan += [("wide", i) for i in range(a.honest_wide)]
    seeds = rng.integers(1, 2**31 - 1, size=len(plan))
    with tempfile.TemporaryDirectory(prefix="indep-study-") as tmp:
        for (mix, _i), s in zip(plan, seeds, strict=True):
            path = Path(tmp) / f"honest-{mix}-{s}.jsonl"
            generate(path, a.wide_deals if mix == "wide" else a.deals, int(s), mix, [])
            rp = replay(path)
            batch_doc = rp.pop("_doc")
            au = audit(path)
            for t in au.pop("_doc")["tests"]:
                c = calib.setdefault(t["test"], {"tests": 0, **{f"p<={lv:g}": 0 for lv in LEVELS}, "min_p": 1.0})
                c["tests"] += 1
                for lv in LEVELS:
                    c[f"p<={lv:g}"] += t["pvalue"] <= lv
                c["min_p"] = min(c["min_p"], t["pvalue"])
            entry = {"mix": mix, "generator_seed": int(s), "replay": rp, "audit": au}
            if _i == 0:
                # The first season of each mix: what it holds, and the reference engine against the batch one.
                entry["season_mix"] = season_mix(path)
                ref = replay(path, "reference")
                ref_doc = ref.pop("_doc")
                entry["reference_engine"] = {
                    "findings_by_code": ref["findings_by_code"],
                    "same_findings_as_batch": ref_doc["findings"] == batch_doc["findings"],
                    "same_games_summary_as_batch": ref_doc["games_summary"] == batch_doc["games_summary"],
                }
            honest.append(entry)
            path.unlink()
            print(
                f"honest {mix} seed {s}: {rp['deals']} deals, replay findings {rp['findings_by_code']}, "
                f"audit exit {au['exit']}, flags {[(f['test'], f['subject'], f['pvalue']) for f in au['flags']]}",
                file=sys.stderr,
            )
        flagged = [h for h in honest if h["audit"]["flags"]]
        k, n = len(flagged), len(honest)
        lo, hi = wilson(k, n)
        findings_total = collections.Counter()
        for h in honest:
            findings_total.update(h["replay"]["findings_by_code"])
        doc["a_replay_on_honest"] = {
            "seasons": n,
            "deals": sum(h["replay"]["deals"] for h in honest),
            "games": sum(h["replay"]["games"] for h in honest),
            "findings_by_code": dict(findings_total),
            "seasons_with_findings": sum(1 for h in honest if h["replay"]["findings_by_code"]),
            "games_disagreeing_with_log": sum(h["replay"]["games_disagreeing_with_log"] for h in honest),
            "reference_engine": {h["mix"]: h["reference_engine"] for h in honest if "reference_engine" in h},
            "season_mix": {h["mix"]: h["season_mix"] for h in honest if "season_mix" in h},
        }
        doc["b_false_flags"] = {
            "seasons": n,
            "seasons_with_any_flag": k,
            "rate": k / n,
            "wilson95": [round(lo, 4), round(hi, 4)],
            "claim": "at most fdr = 0.05 of honest seasons get any flag (audit-wide)",
            "tests_per_audit_mean": sum(h["audit"]["tests"] for h in honest) / n,
            "flags": [
                {"mix": h["mix"], "generator_seed": h["generator_seed"], **f}
                for h in flagged
                for f in h["audit"]["flags"]
            ],
            "by_mix": {
                m: {
                    "seasons": sum(1 for h in honest if h["mix"] == m),
                    "with_flag": sum(1 for h in flagged if h["mix"] == m),
                }
                for m in ("club", "pairs", "wide")
            },
        }
        doc["b_false_flags"]["pvalue_calibration"] = {
            "note": "every test entry of every honest audit, by test name: the count of p-values at or below each level"
            " (a calibrated test gives about tests x level; discrete tests give fewer)",
            "by_test": dict(sorted(calib.items())),
        }
        power: list[dict] = []
        members = [f"m{i:02d}" for i in range(1, 45)]
        for kind, opt, q in POWER_CASES:
            for _j in range(a.power_seasons):
                s = int(rng.integers(1, 2**31 - 1))
                who = members[int(rng.integers(len(members)))]
                path = Path(tmp) / f"{kind}-{q}-{s}.jsonl"
                generate(path, a.deals, s, "club", [opt, f"{who}:{q}"])
                au = audit(path)
                adoc = au.pop("_doc")
                mine = {t["test"]: t for t in adoc["tests"] if t["subject"] == who}
                exp = EXPECTED_TEST[kind]
                revokes = [f for f in adoc["replay"]["findings"] if f["code"] == "revoke"]
                entry = {
                    "cheat": kind,
                    "q": q,
                    "cheater": who,
                    "generator_seed": s,
                    "deals": au["deals"],
                    "cheater_flagged": any(f["subject"] == who for f in au["flags"]),
                    "cheater_flagged_by": [f["test"] for f in au["flags"] if f["subject"] == who],
                    "expected_test": exp,
                    "cheater_expected_test": {
                        key: mine[exp][key] for key in ("n", "observed", "expected", "pvalue", "qvalue", "flagged")
                    }
                    if exp in mine
                    else None,
                    "others_flagged": [
                        (f["test"], f["subject"], f["pvalue"]) for f in au["flags"] if f["subject"] != who
                    ],
                    "replay_findings_by_code": au["replay_findings_by_code"],
                    "revokes_by_player": dict(collections.Counter(f.get("player") for f in revokes)),
                }
                power.append(entry)
                path.unlink()
                print(
                    f"{kind} q={q} {who} seed {s}: flagged by {entry['cheater_flagged_by']}, "
                    f"{exp} p={entry['cheater_expected_test'] and entry['cheater_expected_test']['pvalue']}, "
                    f"others {entry['others_flagged']}",
                    file=sys.stderr,
                )
        summary = []
        for kind, _opt, q in POWER_CASES:
            rows = [p for p in power if p["cheat"] == kind and p["q"] == q]
            summary.append(
                {
                    "cheat": kind,
                    "q": q,
                    "seasons": len(rows),
                    "cheater_flagged": sum(p["cheater_flagged"] for p in rows),
                    "by_expected_test": sum(exp_flag(p) for p in rows),
                    "seasons_with_someone_else_flagged": sum(1 for p in rows if p["others_flagged"]),
                }
            )
        doc["c_power"] = {"summary": summary, "seasons": power}
    doc["honest_seasons"] = honest
    doc["cpu_seconds_children"] = round(children_cpu() - c0, 1)
    doc["wall_seconds"] = round(time.time() - t0, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1)
    out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def exp_flag(p: dict) -> bool:
    e = p["cheater_expected_test"]
    return bool(e and e["flagged"])


if __name__ == "__main__":
    raise SystemExit(main())
