"""The full calibration study of the dealing tests (issue 5's targets), with timings.

    python bench/bench_calibrate.py [--seed 0] [--seasons 400] [--out bench/out]

Writes calibrate.json and power_curve.png under --out and prints the tables of `auditor calibrate`. The fast tier
of the same checks runs in CI (tests/test_calibrate.py); this is the big one (minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from auditor import calibrate as cal


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seasons", type=int, default=400, help="honest and power seasons per study")
    ap.add_argument("--curve-seasons", type=int, default=100)
    ap.add_argument("--uniformity-seasons", type=int, default=20)
    ap.add_argument("--shuffle-seasons", type=int, default=10)
    ap.add_argument("--out", default="bench/out")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.perf_counter()

    def say(m: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - t0:7.1f}s] {m}\n")

    res = cal.calibrate(seed=a.seed, honest_seasons=a.seasons, power_seasons=a.seasons,
                        curve_seasons=a.curve_seasons, uniformity_seasons=a.uniformity_seasons,
                        shuffle_seasons=a.shuffle_seasons,
                        progress=say)
    res["plot"] = cal.plot_power_curve(res, os.path.join(a.out, "power_curve.png"))
    with open(os.path.join(a.out, "calibrate.json"), "w") as fh:
        json.dump(res, fh, indent=2)
    cal.print_report(res)
    print(f"written: {a.out}/calibrate.json, {res['plot']}")
    return 0 if all(met for _d, met, _m in cal.targets(res)) else 1


if __name__ == "__main__":
    sys.exit(main())
