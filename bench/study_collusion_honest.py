"""The `collusion` test on honest seasons now that honest players slip (issue 14): rate of p <= alpha over the
honest pairs, seasons with a false flag, honest pairs flagged, and a colluding pair's power.

    python bench/study_collusion_honest.py [--seasons 40] [--power 10] [--seed 14] [--workers 2] [--json out.json]
    python bench/study_collusion_honest.py --all-fours [--seasons 20] [--seed 14]

Seasons are `calibrate_play.collusion_season` (three open Scotch Whist tables of five, 15 members, 500 deals each
table), seeded `calibrate_play._rng(seed, "collusion-<q>", i)`; the test runs alone at the FDR level given
(default 0.05), as `auditor calibrate-play` runs it. Prints one JSON document.

`--all-fours`: honest seasons at three All Fours tables of three (9 members, 500 deals each table, seeded
`default_rng([seed, crc32("collusion-af3"), i])`, the test alone at `fdr` as above), where one player often has several chances in one deal (the demo's iris+kate):
the rates and flags of the test (one trial per deal, issue 14) next to those of its `per_chance` control (every
chance an independent trial: the test before issue 14) on the same seasons.

Measured (2 cores, seed 14; the Scotch Whist seasons have about 1.05 chances per (pair, deal), so the per-deal
trial changes little there): see /work/notes/decisions-H6.md and the report of issue 14.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from auditor.audit import audit
from auditor.calibrate_play import collusion_season
from auditor.dealog import record_from_obj
from auditor.detectors.registry import DETECTORS
from auditor.replay.run import replay_records
from auditor.simulate import SeasonSpec, TableSpec, simulate_season

ALPHAS = (0.01, 0.05)


def _one(args: tuple) -> dict:
    seed, i, q, fdr = args
    return collusion_season(seed, i, q, fdr=fdr)


def study(seasons: int, power: int, seed: int, workers: int, fdr: float = 0.05, q: float = 0.7) -> dict:
    t0 = time.perf_counter()
    tasks = [(seed, i, 0.0, fdr) for i in range(seasons)] + [(seed, i, q, fdr) for i in range(power)]
    with ProcessPoolExecutor(workers) as ex:
        out = list(ex.map(_one, tasks))
    honest, cheat = out[:seasons], out[seasons:]
    ps = [p for r in honest for p in r["p_honest"]]
    n = len(ps)
    doc: dict = {"seed": seed, "fdr": fdr, "seasons": seasons, "honest_pair_tests": n,
                 "pairs_per_season": n / max(seasons, 1)}
    for a in ALPHAS:
        k = sum(p <= a for p in ps)
        doc[f"rate_p<={a}"] = k / n if n else None
        doc[f"count_p<={a}"] = k
        doc[f"mc_se_at_{a}"] = math.sqrt(a * (1 - a) / n) if n else None  # binomial SE if pairs were independent
    flags = sum(r["false_flags"] for r in honest)
    doc["honest_pairs_flagged"] = flags
    doc["honest_pairs_flagged_rate"] = flags / n if n else None
    doc["seasons_with_a_false_flag"] = sum(r["false_flags"] > 0 for r in honest)
    doc["pairs_with_p<1"] = sum(p < 1 for p in ps)
    if cheat:
        doc["power_q"] = q
        doc["power_seasons"] = power
        doc["pair_flagged_seasons"] = sum(any(r["pair_flagged"]) for r in cheat)
        doc["pair_p_median"] = sorted(min(r["pair_p"]) for r in cheat)[len(cheat) // 2]
        doc["power_false_flags"] = sum(r["false_flags"] for r in cheat)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    doc["workers"] = workers
    return doc


def _af_one(args: tuple) -> dict:
    seed, i, fdr = args
    spec = SeasonSpec(tables=[TableSpec(f"af3-{k}", 3, game="all_fours") for k in range(3)], n_deals=1500,
                      players=9, deck=False, time=False, season="cal")
    sim = simulate_season(spec, np.random.default_rng([int(seed), zlib.crc32(b"collusion-af3"), int(i)]))
    rep = replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(sim.records)], engine="batch",
                         table=True)  # as calibrate_play replays a season
    tests = audit(rep, fdr=fdr, seed=0, detectors=[DETECTORS["collusion"](fdr=fdr, details=True)]).tests
    p = [t.pvalue for t in tests]
    pc = [t.controls["per_chance"]["pvalue"] for t in tests]
    return {"p": p, "p_chance": pc, "flags": sum(t.flagged for t in tests), "flags_chance": _bh(pc, fdr),
            "chances": sum(t.detail["opportunities"] for t in tests), "deals": sum(t.n for t in tests)}


def _bh(ps: list[float], fdr: float) -> int:
    """How many of these p-values one Benjamini-Hochberg family at `fdr` rejects."""
    s = sorted(ps)
    m = len(s)
    return max((k + 1 for k in range(m) if s[k] <= fdr * (k + 1) / m), default=0)


def study_af(seasons: int, seed: int, workers: int, fdr: float = 0.05) -> dict:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as ex:
        out = list(ex.map(_af_one, [(seed, i, fdr) for i in range(seasons)]))
    doc: dict = {"study": "all_fours tables of three, honest", "seed": seed, "fdr": fdr, "seasons": seasons,
                 "pair_tests": sum(len(r["p"]) for r in out),
                 "chances_per_pair_deal": sum(r["chances"] for r in out) / max(sum(r["deals"] for r in out), 1)}
    for name, key, fk in (("per_deal", "p", "flags"), ("per_chance", "p_chance", "flags_chance")):
        ps = [p for r in out for p in r[key]]
        d = doc[name] = {f"rate_p<={a}": sum(p <= a for p in ps) / len(ps) for a in ALPHAS}
        d["pairs_flagged"] = sum(r[fk] for r in out)
        d["seasons_with_a_false_flag"] = sum(r[fk] > 0 for r in out)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    doc["workers"] = workers
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seasons", type=int, default=40)
    ap.add_argument("--power", type=int, default=10)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--q", type=float, default=0.7)
    ap.add_argument("--json", default=None)
    ap.add_argument("--all-fours", action="store_true", help="honest All Fours tables of three instead")
    a = ap.parse_args(argv)
    doc = study_af(a.seasons, a.seed, a.workers) if a.all_fours else study(a.seasons, a.power, a.seed, a.workers,
                                                                            q=a.q)
    text = json.dumps(doc, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
