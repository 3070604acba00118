"""The `collusion` test on honest seasons now that honest players slip (issue 14): rate of p <= alpha over the
honest pairs, seasons with a false flag, honest pairs flagged, and a colluding pair's power.

    python bench/study_collusion_honest.py [--seasons 40] [--power 10] [--seed 14] [--workers 2] [--json out.json]

Seasons are `calibrate_play.collusion_season` (three open Scotch Whist tables of five, 15 members, 500 deals each
table), seeded `calibrate_play._rng(seed, "collusion-<q>", i)`; the test runs alone at the FDR level given
(default 0.05), as `auditor calibrate-play` runs it. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from auditor.calibrate_play import collusion_season

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seasons", type=int, default=40)
    ap.add_argument("--power", type=int, default=10)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--q", type=float, default=0.7)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    doc = study(a.seasons, a.power, a.seed, a.workers, q=a.q)
    text = json.dumps(doc, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
