"""deal_uniformity with and without its importance sampling, on the same counts (issue 15, a twentieth session).

The honest tables of `auditor calibrate`'s human-shuffle study (six tables of four, Scotch Whist Foster, dealers
who riffle the gathered tricks as people do; `dealgen.table_sequence`), per scenario: the p-values of every dealer
by the rule before (`is_draws=0`: Besag-Clifford to the cap) and by the rule now (importance sampling after 2,000
draws), each with the same generator, and how many dealers each puts at or below a few levels. The tables are not
uniform shuffles, so this is not a null: it shows whether the new estimate moves honest-but-uneven dealers.

    python bench/study_uniformity_is.py --seasons 10 --deals-per-table 240
    python bench/study_uniformity_is.py --seasons 5 --deals-per-table 4000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from auditor.audit import count_table
from auditor.calibrate import SHUFFLE_SCENARIOS, _season_rng, human_shuffle_season
from auditor.detectors.deal_uniformity import DealUniformity

LEVELS = (0.05, 0.01, 0.001, 1e-4, 1e-5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seasons", type=int, default=10)
    ap.add_argument("--deals-per-table", type=int, default=240)
    ap.add_argument("--seed", type=int, default=99)
    args = ap.parse_args()
    for name, spec in SHUFFLE_SCENARIOS.items():
        p: dict[str, list[float]] = {"old": [], "new": []}
        cpu = {"old": 0.0, "new": 0.0}
        used = 0
        for i in range(args.seasons):
            rng = _season_rng(args.seed, "shuffle", name, i)
            rep = human_shuffle_season(spec, rng, deals_per_table=args.deals_per_table)
            assert rep.table is not None  # asked for with table=True
            counts = count_table(rep.table, [DealUniformity()], workers=1).by_test["deal_uniformity"]  # one count
            for key, draws in (("old", 0), ("new", DealUniformity().is_draws)):
                det = DealUniformity(fdr=0.005, details=False, is_draws=draws)
                t0 = time.process_time()
                res = det.finalize(counts, np.random.default_rng(i))
                cpu[key] += time.process_time() - t0
                p[key] += [r.pvalue for r in res]
                if draws:
                    used += sum(1 for r in res if r.detail["is_draws"])
        old, new = np.array(p["old"]), np.array(p["new"])
        at = " ".join(f"p<={a:g}: {int((old <= a).sum())}/{int((new <= a).sum())}" for a in LEVELS)
        print(f"{name}: {len(old)} dealers, importance sampling for {used}; CPU s old {cpu['old']:.1f} new "
              f"{cpu['new']:.1f}; dealers old/new at {at}; smallest p {old.min():.2g}/{new.min():.2g}", flush=True)


if __name__ == "__main__":
    main()
