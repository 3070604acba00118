"""The full calibration study of the play-knowledge tests (`marked_ten`, `collusion`, `revoke_pattern`).

    python bench/bench_calibrate_play.py                      # the full study (several CPU-hours on 2 cores)
    python bench/bench_calibrate_play.py --fast               # the CI tier's sizes
    python bench/bench_calibrate_play.py --marked-honest 100 --marked-power 50 --workers 2 --out bench/out/play.json

Every season is simulated with `auditor.simulate`, replayed with the reference engine, and audited by the
detectors as `auditor audit` runs them (counted per table, merged, one family per test). What each study
measures: `auditor/calibrate_play.py`. The JSON written by `--out` holds every number and the issue's targets.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditor.calibrate_play import SIZES_FULL, calibrate_play, format_report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    for k in SIZES_FULL:
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=None, help=f"seasons (full: {SIZES_FULL[k]})")
    ap.add_argument("--out", default=None, help="write the numbers as JSON here")
    a = ap.parse_args()
    sizes = {k: getattr(a, k) for k in SIZES_FULL if getattr(a, k) is not None}
    t0 = time.perf_counter()
    res = calibrate_play(seed=a.seed, fast=a.fast, sizes=sizes, workers=a.workers,
                         progress=lambda m: print(f"[{time.perf_counter() - t0:7.0f} s] {m}", file=sys.stderr,
                                                  flush=True))
    print(format_report(res))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
