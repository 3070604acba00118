"""Benchmark: how fast the simulator makes seasons (target: >= 2,000 deals/s for 4-player Scotch Whist with honest
players; the 20,000-deal demo club season in under 30 s).

    python bench/bench_simulate.py                 # every case
    python bench/bench_simulate.py --case sw4 --deals 20000 --json

Each case simulates a seeded season in this process with the default output switches (deck, time, recorded
scores: every deal is replayed and chained by the reference engine as it is made, which is part of the cost).
Reported per case: deals, wall seconds, CPU seconds of this process, and deals per second by each clock. On a shared
machine the CPU clock is the fairer one (wall time includes waiting for other processes); the load average is
recorded next to the numbers. `--breakdown` also times the parts (play, replay, chaining) of the sw4 case.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any
from unittest import mock


def _specs(deals: int):
    from auditor.simulate import SeasonSpec, TableSpec, club_season_spec, partnerships

    return {
        "sw4": SeasonSpec(tables=[TableSpec("t", 4, sides=partnerships(4, "pairs"))], n_deals=deals),
        "sw5": SeasonSpec(tables=[TableSpec("t", 5)], n_deals=deals),
        "af4": SeasonSpec(tables=[TableSpec("t", 4, game="all_fours", sides=partnerships(4, "pairs"))],
                          n_deals=deals),
        "club": club_season_spec(max(deals, 20000)),
    }


def run_case(name: str, spec, seed: int) -> dict:
    import numpy as np

    from auditor.simulate import simulate_season

    w0, c0 = time.perf_counter(), time.process_time()
    sim = simulate_season(spec, np.random.default_rng(seed))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    n = len(sim.records)
    return {"case": name, "deals": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "deals_per_s_wall": round(n / wall), "deals_per_s_cpu": round(n / cpu)}


def breakdown(deals: int, seed: int) -> dict:
    """Time the parts of the sw4 case (CPU clock) by wrapping the season's calls."""
    import numpy as np

    import auditor.simulate.season as S
    from auditor.simulate import simulate_season

    spent = {"play": 0.0, "replay": 0.0, "chain": 0.0, "deck": 0.0}

    def wrap(key, f):
        def g(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[key] += time.process_time() - t
        return g

    # the season's calls wrapped while it runs (and put back after, whatever happens)
    with (mock.patch.object(S, "play_tricks", wrap("play", S.play_tricks)),
          mock.patch.object(S, "replay_deal", wrap("replay", S.replay_deal)),
          mock.patch.object(S, "chain_games", wrap("chain", S.chain_games)),
          mock.patch.object(S._Season, "make_deck", wrap("deck", S._Season.make_deck))):
        c0 = time.process_time()
        sim = simulate_season(_specs(deals)["sw4"], np.random.default_rng(seed))
        total = time.process_time() - c0
    n = len(sim.records)
    out = {k: round(v / n * 1e6, 1) for k, v in spent.items()}
    out["other"] = round((total - sum(spent.values())) / n * 1e6, 1)
    out["total"] = round(total / n * 1e6, 1)
    return {"us_per_deal_cpu": out}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=["sw4", "sw5", "af4", "club", "all"], default="all")
    ap.add_argument("--deals", type=int, default=10000, help="deals per case (club: at least 20,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    specs = _specs(args.deals)
    names = list(specs) if args.case == "all" else [args.case]
    load0 = os.getloadavg()
    results = [run_case(name, specs[name], args.seed) for name in names]
    doc: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "loadavg_before": [round(x, 2) for x in load0],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
        "results": results,
    }
    if args.breakdown:
        doc["sw4_breakdown"] = breakdown(min(args.deals, 5000), args.seed)
    sw4 = next((r for r in results if r["case"] == "sw4"), None)
    club = next((r for r in results if r["case"] == "club"), None)
    doc["targets"] = {}
    if sw4:
        doc["targets"]["sw4 >= 2000 deals/s (cpu)"] = sw4["deals_per_s_cpu"] >= 2000
    if club:
        doc["targets"]["club-season 20000 deals < 30 s (cpu)"] = club["cpu_s"] < 30
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        m = doc["machine"]
        print(f"{m['cpus']} cpus, Python {m['python']}, load average {m['loadavg_before'][0]} -> "
              f"{m['loadavg_after'][0]}")
        for r in results:
            print(f"{r['case']:>5}: {r['deals']:>6} deals  wall {r['wall_s']:7.2f} s ({r['deals_per_s_wall']:>5}/s)  "
                  f"cpu {r['cpu_s']:7.2f} s ({r['deals_per_s_cpu']:>5}/s)")
        if args.breakdown:
            print("sw4 us/deal (cpu):", doc["sw4_breakdown"]["us_per_deal_cpu"])
        for k, v in doc["targets"].items():
            print(f"{'PASS' if v else 'FAIL'}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
