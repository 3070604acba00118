"""Benchmark: `auditor audit` on a large log against `auditor replay` alone on the same log (target: audit ≤ 3×).

    python bench/bench_audit.py                       # 1,000,000 deals of one simulated club season (cached)
    python bench/bench_audit.py --deals 100000 --json
    python bench/bench_audit.py --source tile         # the worst case below

Each run is checked, not only timed: exit 0 or 1, no traceback, and a JSON document that counts every deal.

The log (`--source`):
- `simulate` (default): the demo club season (`club_season_spec`, seeded, with its planted cheats) simulated at
  `--deals` deals: a club over years, every deal distinct (simulating a million deals takes ~10 minutes and some
  GB of memory once; the file is cached in `--workdir`).
- `tile`: a season of `--base` deals copied until `--deals` lines, with renamed tables and games (`#k`
  suffixes). The copies repeat the same deals, which is real evidence of non-uniform dealing: past a few copies
  every dealer's `deal_uniformity` p-value runs to its Monte-Carlo cap and frequency tests flag many subjects, so
  the tiled log times the audit of a log full of strong findings (a worst case), not of a typical club.

Both commands run as the user runs them (`python -m auditor ... --json`, output discarded) in fresh processes, one
after the other; wall time and peak memory (RSS) come from the child's own resource usage. Before timing, one
small audit runs so that numba's compiled kernels are in its cache (the first audit on a fresh install compiles
them once, some seconds; `--cold` skips the warm-up to time that). Numbers depend on the machine; the note records
where they ran.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def simulate_base(path: Path, deals: int, seed: int) -> None:
    from auditor.simulate import club_season_spec, simulate_season

    sim = simulate_season(club_season_spec(n_deals=deals), seed=seed)
    tmp = path.with_suffix(".tmp")
    sim.write(str(tmp))
    tmp.replace(path)


def tile(base: Path, out: Path, deals: int) -> int:
    """Copy the base log until `deals` lines are written; copy k renames `table` and `game_id` with '#k'."""
    import orjson

    lines = base.read_bytes().splitlines()
    objs = [orjson.loads(x) for x in lines if x.strip()]
    tmp = out.with_suffix(".tmp")
    written = 0
    with open(tmp, "wb") as fh:
        k = 0
        while written < deals:
            for o in objs:
                if written >= deals:
                    break
                if k:
                    o = dict(o, table=f"{o['table']}#{k}", game_id=f"{o['game_id']}#{k}")
                fh.write(orjson.dumps(o) + b"\n")
                written += 1
            k += 1
    tmp.replace(out)
    return written


def run(cmd: list[str], out: Path, deals: int) -> dict:
    """Run a command with stdout to `out`; its wall time, CPU time, peak RSS, exit code, and whether it did the
    job (exit 0 or 1, no traceback, a JSON document on stdout that counts every deal)."""
    t0 = time.perf_counter()
    with open(out, "wb") as fh, open(out.with_suffix(".err"), "wb") as eh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=eh)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = out.with_suffix(".err").read_text(encoding="utf-8", errors="replace")
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    ok = code in (0, 1) and "Traceback" not in err
    if ok:
        try:
            ok = json.loads(out.read_bytes()).get("deals") == deals
        except ValueError:
            ok = False
    return {"cmd": " ".join(cmd[2:]), "seconds": round(wall, 2), "cpu_seconds": round(usage.ru_utime + usage.ru_stime,
                                                                                           2),
            "max_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": code, "ok": ok, "stderr_tail": err[-400:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deals", type=int, default=1_000_000)
    ap.add_argument("--base", type=int, default=20_000, help="deals simulated before tiling")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--engine", default="batch", choices=("batch", "reference"))
    ap.add_argument("--workdir", default="/tmp/auditor-bench")
    ap.add_argument("--source", default="simulate", choices=("simulate", "tile"))
    ap.add_argument("--log", default=None, help="time this log instead (its deal count must be --deals)")
    ap.add_argument("--cold", action="store_true", help="no warm-up audit (time numba's first compilation too)")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--skip-replay", action="store_true", help="time the audit only")
    ap.add_argument("--skip-audit", action="store_true", help="time the replay only")
    a = ap.parse_args(argv)
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if a.log:
        log = Path(a.log)
    elif a.source == "simulate":
        log = work / f"club-{a.deals}-s{a.seed}.jsonl"
        if not log.exists():
            print(f"simulating {a.deals:,} deals (seed {a.seed}) ...", file=sys.stderr)
            simulate_base(log, a.deals, a.seed)
    else:
        base = work / f"base-{a.base}-s{a.seed}.jsonl"
        log = work / f"season-{a.deals}-from-{a.base}-s{a.seed}.jsonl"
        if not base.exists():
            print(f"simulating {a.base:,} deals (seed {a.seed}) ...", file=sys.stderr)
            simulate_base(base, a.base, a.seed)
        if not log.exists():
            print(f"tiling to {a.deals:,} deals ...", file=sys.stderr)
            tile(base, log, a.deals)
    prep = time.perf_counter() - t0
    py = [sys.executable, "-m", "auditor"]
    if not a.cold:
        demo = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "season.jsonl.gz"
        subprocess.run(py + ["audit", "--json", str(demo)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res: dict = {"deals": a.deals, "source": a.source, "base": a.base if a.source == "tile" else None,
                 "seed": a.seed, "engine": a.engine, "log": str(log),
                 "log_mb": round(log.stat().st_size / 2**20, 1), "prepare_seconds": round(prep, 1),
                 "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "platform": platform.platform()}}
    if not a.skip_replay:
        print("replay ...", file=sys.stderr)
        res["replay"] = run(py + ["replay", "--engine", a.engine, "--json", str(log)], work / "replay.out.json",
                            a.deals)
    if not a.skip_audit:
        print("audit ...", file=sys.stderr)
        res["audit"] = run(py + ["audit", "--engine", a.engine, "--json", str(log)], work / "audit.out.json", a.deals)
    if "replay" in res and "audit" in res:
        res["ratio"] = round(res["audit"]["seconds"] / max(res["replay"]["seconds"], 1e-9), 2)
        res["target"] = "audit <= 3 x replay"
        res["meets_target"] = res["ratio"] <= 3.0 and res["replay"]["ok"] and res["audit"]["ok"]
    bad = [k for k in ("replay", "audit") if k in res and not res[k]["ok"]]
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{a.deals:,} deals ({res['log_mb']} MB), engine {a.engine}, {os.cpu_count()} cpus")
        for k in ("replay", "audit"):
            if k in res:
                r = res[k]
                print(f"  {k:>6}: {r['seconds']:9.1f} s wall, {r['cpu_seconds']:9.1f} s cpu, "
                      f"{r['max_rss_mb']:8.0f} MB peak, exit {r['exit']}{'' if r['ok'] else ' FAILED'}")
        if "ratio" in res:
            print(f"  audit / replay = {res['ratio']:.2f} (target ≤ 3: {'met' if res['meets_target'] else 'NOT met'})")
    for k in bad:
        print(f"{k} failed (exit {res[k]['exit']}): {res[k]['stderr_tail']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
