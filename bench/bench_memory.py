"""Peak memory of the audit's streaming stages against the number of deals (issue 15: flat in deals).

    python bench/bench_memory.py LOG [LOG ...] [--workers N] [--part-deals 200000] [--finalize]

For each log, in a fresh process under /usr/bin/time -v: split the input into parts of whole tables, replay and
count every part (here, or in `--workers` processes), merge the replays and the counts, and (with `--finalize`)
finalize every test: the stages of `auditor audit` but the document. Prints deals, wall and CPU seconds, peak RSS of
the main process, and the size of each detector's merged counts (as the saved-counts file would hold them), so
that 1M and 10M can be compared: what grows with deals shows there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from auditor.audit import PART_DEALS

CHILD = r'''
import json, sys, time, tempfile, os, shutil
from auditor.audit import run_parts, merge_counts, finalize_counts
from auditor.detectors.registry import make_detectors
from auditor.parts import split_input, merge_replays
from auditor.countfile import save_counts
log, workers, part_deals, fin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
t0 = time.perf_counter()
wd = tempfile.mkdtemp(prefix="bench-mem-")
parts = split_input([log], wd, part_deals)
t1 = time.perf_counter()
dets = make_detectors(fdr=0.05)
replays, folded = [], []
def fold(_k, res):  # as audit_input folds them: in part order, as they arrive (no list of every part's counts)
    replays.append(res[0])
    folded[:] = [merge_counts(folded + [res[1]], dets)] if folded else [res[1]]
run_parts(parts, 0.05, 0, workers=workers if workers > 1 else None, on_result=fold)
t2 = time.perf_counter()
rep = merge_replays(replays)
counts = folded[0]
t3 = time.perf_counter()
sizes = {}
for name, c in counts.by_test.items():
    p = os.path.join(wd, name + ".counts")
    sizes[name] = save_counts(p, {name: c})
    os.remove(p)
out = {"deals": rep.deals, "parts": len(parts), "split_s": round(t1 - t0, 1), "parts_s": round(t2 - t1, 1),
       "merge_s": round(t3 - t2, 1), "counts_bytes": sizes}
if fin:
    t4 = time.perf_counter()
    tests, *_ = finalize_counts(counts, dets=dets)
    out["finalize_s"] = round(time.perf_counter() - t4, 1)
    out["tests"] = len(tests)
parts.cleanup()
shutil.rmtree(wd, ignore_errors=True)
print(json.dumps(out))
'''


def run(log: str, workers: int, part_deals: int, finalize: bool) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        cmd = ["/usr/bin/time", "-v", "-o", tf.name, sys.executable, "-c", CHILD, log, str(workers), str(part_deals),
               "1" if finalize else "0"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"bench_memory: {log}: {p.stderr.strip().splitlines()[-1:]}")
        got = json.loads(p.stdout.strip().splitlines()[-1])
        t = tf.read()
    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: (.+)", t)
        return float(m.group(1)) if m and ":" not in m.group(1) else 0.0
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.+)", t)
    parts = [float(x) for x in wall.group(1).split(":")] if wall else [0.0]
    secs = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    got.update({"log": os.path.basename(log), "wall_s": round(secs, 1),
                "cpu_s": round(field("User time (seconds)") + field("System time (seconds)"), 1),
                "peak_rss_mb": round(field("Maximum resident set size (kbytes)") / 1024)})
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--part-deals", type=int, default=PART_DEALS)
    ap.add_argument("--finalize", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for log in a.logs:
        r = run(log, a.workers, a.part_deals, a.finalize)
        rows.append(r)
        total = sum(r["counts_bytes"].values())
        print(f"{r['log']}: {r['deals']:,} deals, {r['parts']} parts; split {r['split_s']} s, parts {r['parts_s']} s, "
              f"merge {r['merge_s']} s" + (f", finalize {r['finalize_s']} s" if "finalize_s" in r else "")
              + f"; wall {r['wall_s']} s, CPU {r['cpu_s']} s, peak RSS {r['peak_rss_mb']} MB (main process); "
              f"counts {total / 1e6:.1f} MB: " + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in
                                                           sorted(r["counts_bytes"].items(), key=lambda x: -x[1])),
              flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
