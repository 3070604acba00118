"""Benchmark: `auditor replay --json` on 1,000,000 4-player Scotch Whist deals, from Parquet and from JSONL.

    python bench/bench_replay.py                 # 1M deals, seed 20261129, files cached under bench/out/
    python bench/bench_replay.py --deals 200000 --repeat 3

Generates (once, cached) random legal deals of 4-player partnership Scotch Whist (Foster rules) with the numpy
generator `auditor.testing.fastgen` (each game from deal 1 until a side reaches 41, recorded points, totals and
winner), checks the first games against the reference engine (no finding may appear), converts the JSONL to
Parquet with `auditor convert`, then times in subprocesses, wall clock, with CPU time and peak RSS from
`/usr/bin/time` (or `resource`):

- `auditor replay --json FILE > /dev/null` on the Parquet file and on the JSONL file (interpreter start-up,
  imports, reading, replay, game chaining and writing the JSON document all included);
- the bare read of the same data: pyarrow reading the whole Parquet file; orjson parsing every JSONL line;
- the reference engine (`--engine reference`) on a sample of the JSONL, as deals/s.

It prints deals/s, the ratios to the bare read and to the reference engine, and the peak memory. The machine is
shared: the load average is printed with each run, and `--repeat N` keeps the best of N runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run_timed(cmd: list[str], stdout=subprocess.DEVNULL) -> dict:
    """Run a command; wall seconds, user + sys CPU seconds (children included) and peak RSS in MB."""
    gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    load = os.getloadavg()[0]
    if gnu_time:
        marker = "@@BENCH@@"
        full = [gnu_time, "-f", f"{marker} %e %U %S %M", *cmd]
        t0 = time.perf_counter()
        p = subprocess.run(full, stdout=stdout, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        line = [x for x in p.stderr.decode(errors="replace").splitlines() if x.startswith(marker)]
        if line:
            _, e, u, s, m = line[-1].split()
            return {"rc": p.returncode, "wall": float(e), "cpu": float(u) + float(s), "rss_mb": int(m) / 1024,
                    "load": load}
        return {"rc": p.returncode, "wall": wall, "cpu": float("nan"), "rss_mb": float("nan"), "load": load}
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rc": p.returncode, "wall": wall, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024, "load": load}


def best(cmd: list[str], repeat: int) -> dict:
    runs = [run_timed(cmd) for _ in range(repeat)]
    return min(runs, key=lambda r: r["wall"])


def generate(path: Path, deals: int, seed: int) -> None:
    import numpy as np

    from auditor.testing.fastgen import bench_games, jsonl_lines

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".part")
    t0 = time.perf_counter()
    with open(tmp, "wb") as f:
        for b in bench_games(rng, deals, n=4, sides=((0, 2), (1, 3)), concurrent=max(1000, deals // 20)):
            f.write(b"\n".join(jsonl_lines(b, 4)) + b"\n")
    os.replace(tmp, path)
    print(f"generated {deals:,} deals in {time.perf_counter() - t0:.1f} s -> {path}")


def check_sample(jsonl: Path, sample: Path, k: int) -> int:
    """Whole games: every record of the games that open the file, about k records, replayed by the reference
    engine: no finding may appear."""
    import re

    gid = re.compile(rb'"game_id":"([^"]*)"')
    want: set[bytes] = set()
    with open(jsonl, "rb") as f:
        for i, line in enumerate(f):
            if i >= k // 2:
                break
            m = gid.search(line)
            if m is None:
                raise SystemExit(f"{jsonl}:{i + 1}: a generated record without a game_id")
            want.add(m.group(1))
    with open(jsonl, "rb") as f, open(sample, "wb") as out:
        for line in f:
            m = gid.search(line)
            if m and m.group(1) in want:
                out.write(line)
    from auditor.dealog import read_records
    from auditor.replay.run import replay_records

    rep = replay_records(read_records([str(sample)]), "reference")
    if rep.findings:
        raise SystemExit(f"the generated deals have findings under the reference engine: {rep.counts()}")
    ended = sum(g.ended_by is not None for g in rep.games_summary)
    print(f"reference engine: {rep.deals:,} records of {rep.games:,} whole games replay clean ({ended:,} ended)")
    return rep.deals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deals", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--sample", type=int, default=20_000, help="records for the reference engine")
    ap.add_argument("--repeat", type=int, default=1, help="runs per timing (the best is kept)")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.out / f"sw4_{a.deals}_{a.seed}"
    jsonl, parquet = stem.with_suffix(".jsonl"), stem.with_suffix(".parquet")
    sample = a.out / f"{stem.name}_sample{a.sample}.jsonl"
    if not jsonl.exists():
        generate(jsonl, a.deals, a.seed)
    if not parquet.exists():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor", "convert", str(jsonl), str(parquet)], check=True)
        print(f"converted to Parquet in {time.perf_counter() - t0:.1f} s -> {parquet}")
    n_sample = check_sample(jsonl, sample, a.sample)
    py = sys.executable
    n = a.deals
    print(f"\n{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} (a shared machine: numbers move with it)")
    res = {}
    res["replay_parquet"] = best([py, "-m", "auditor", "replay", "--json", str(parquet)], a.repeat)
    res["replay_jsonl"] = best([py, "-m", "auditor", "replay", "--json", str(jsonl)], a.repeat)
    res["read_parquet"] = best([py, "-c", "import sys, pyarrow.parquet as pq; pq.read_table(sys.argv[1])",
                                str(parquet)], a.repeat)
    res["read_jsonl"] = best([py, "-c", "import sys, orjson\nloads = orjson.loads\n"
                              "for line in open(sys.argv[1], 'rb'): loads(line)", str(jsonl)], a.repeat)
    res["reference_sample"] = best([py, "-m", "auditor", "replay", "--json", "--engine", "reference", str(sample)],
                                   1)
    res["batch_sample"] = best([py, "-m", "auditor", "replay", "--json", str(sample)], a.repeat)
    # the same document from both engines on the sample
    outs = [subprocess.run([py, "-m", "auditor", "replay", "--json", *e, str(sample)], capture_output=True).stdout
            for e in ([], ["--engine", "reference"])]
    same = outs[0] == outs[1]
    ref_rate = n_sample / res["reference_sample"]["wall"]

    def rate(key: str, count: int) -> float:
        return count / res[key]["wall"]

    rows = [
        ("auditor replay --json (Parquet)", "replay_parquet", n),
        ("auditor replay --json (JSONL)", "replay_jsonl", n),
        ("bare read: pyarrow read_table", "read_parquet", n),
        ("bare read: orjson every line", "read_jsonl", n),
        (f"reference engine, {n_sample:,} deals", "reference_sample", n_sample),
        (f"batch engine, same {n_sample:,} deals", "batch_sample", n_sample),
    ]
    print(f"\n{'':38} {'wall s':>8} {'cpu s':>8} {'deals/s':>10} {'peak MB':>8} {'load':>5}")
    for label, key, count in rows:
        r = res[key]
        print(f"{label:38} {r['wall']:8.2f} {r['cpu']:8.2f} {rate(key, count):10,.0f} {r['rss_mb']:8.0f} "
              f"{r['load']:5.1f}")
    print()
    for fmt, key, bare in (("Parquet", "replay_parquet", "read_parquet"), ("JSONL", "replay_jsonl", "read_jsonl")):
        print(f"{fmt:8} replay: {rate(key, n):,.0f} deals/s = {res[key]['wall'] / res[bare]['wall']:.2f} x the bare "
              f"read, {rate(key, n) / ref_rate:,.0f} x the reference engine")
    print(f"targets: Parquet >= 200,000 deals/s ({'met' if rate('replay_parquet', n) >= 200_000 else 'NOT met'}), "
          f"JSONL >= 60,000 deals/s ({'met' if rate('replay_jsonl', n) >= 60_000 else 'NOT met'}), "
          f"peak < 2 GB ({'met' if max(res[k]['rss_mb'] for k in ('replay_parquet', 'replay_jsonl')) < 2048 else 'NOT met'})")
    print(f"batch and reference documents on the sample identical: {same}")
    if a.json:
        a.json.write_text(json.dumps({"deals": n, "sample": a.sample, "results": res, "same_document": same,
                                      "cores": os.cpu_count()}, indent=2))


if __name__ == "__main__":
    main()
