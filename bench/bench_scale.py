"""Benchmark: the audit at 1M and 10M deals from Parquet, one process against `--workers 2` and `--dask local:2`
(issue 15, item 6: 10M audited in at most 4 minutes, peak memory at most 1.5 GB and at most 10% above 1M's).

    python bench/bench_scale.py                        # 1M and 10M (logs made once by make_scale_logs.py)
    python bench/bench_scale.py --skip-10m             # 1M only (the 10M audit takes about half an hour on 2 cores)
    python bench/bench_scale.py --deals-scale 0.02     # 20,000 and 200,000 deals: a quick check of the bench
    python bench/bench_scale.py --only replay,audit --json bench/out/scale.json
    python bench/bench_scale.py --log LOG ...          # time these logs instead (each its own size)
    python bench/bench_scale.py --log LOG --only replay,audit --repeat 5   # item 5's ratio on a noisy machine

The logs (`bench/make_scale_logs.py`, cached in bench/out/, git-ignored): the demo club season's spec at
1,000,000 deals (seed 7, the log of bench_audit.py), as Parquet (`auditor convert`), and the same file copied ten
times with every copy's tables, game ids and players renamed (`c{k}.`), so that each copy is another club: 10M
deals. `--deals-scale S` uses a base season of S x 1M deals (simulated once) and its ten copies.

Every command runs as a user runs it (`python -m auditor replay|audit --json LOG`), in a fresh process under
niceness 10 and `/usr/bin/time -v` (peak RSS of the largest process, CPU of the whole tree once waited for),
after numba's kernels are compiled (`auditor warm-cache`; an audit of the demo where there is no such command).
A sampler adds up the RSS of the command's whole process tree every 0.5 s (the workers of `--workers`/`--dask`
included: `/usr/bin/time` sees only the largest process) and keeps its largest process too: the peak reported is
the larger of the two largest-process figures, since `/usr/bin/time` only sees the processes that were waited for
all the way up the tree (issue 15, a twenty-sixth session: a Dask worker's parts, in processes of the worker's own
fork server, were missing from it until the audit stopped those servers). The
document on stdout is hashed (SHA-256) as it streams, never kept; the audit's `AUDITOR_TIMING=1` stage times are
kept from stderr. The modes `--workers 2` and `--dask local:2` run only when `auditor audit --help` offers them.
The mode `save` (not run by default: it adds an audit per log) is the audit with `--save-counts` to a file in
bench/out/, removed after: the monthly flow of docs/scale.md, whose document is the audit's. The mode `report`
(not run by default either) is the command a club runs, `auditor audit --out report.html LOG`: the terminal summary
on stdout (hashed instead of the document) and the HTML report, whose size is noted before it is removed.

Checks: every run exits 0 or 1 without a traceback and its document counts every deal of its log; the audit
documents of the three modes are byte-identical (SHA-256), per log. Ratios: audit / replay (wall), 10M / 1M
(peak RSS of the audit, each mode), workers / one process and dask / one process (wall).

`--repeat N` times every mode N times, in rounds (all the modes, then all again), and reports each mode's median
run, and for item 5 the median of the rounds' own audit / replay: on a shared 2-core machine the same audit took
16.4 to 22.3 s within an hour (a twenty-seventh session), and a ratio of two runs minutes apart moved with it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
PY = [sys.executable, "-m", "auditor"]
MODES = ("replay", "audit", "workers", "dask", "audit-cpu", "save", "report")
DEFAULT_MODES = ("replay", "audit", "workers", "dask")
# `audit-cpu`: the audit again with AUDITOR_TIMING's stage clock switched to the process's CPU time (each stage of
# the main process, each detector in its forked worker): per-stage CPU seconds, which a loaded machine does not blur
CPU_CLOCK = ("import sys, time\nimport auditor.audit as A\nA.clock = time.process_time\n"
             "from auditor.cli import entry\nsys.argv = ['auditor'] + sys.argv[1:]\nentry()\n")


def has_options() -> dict[str, bool]:
    """Which of `--workers` / `--dask` the CLI's audit offers (probed, so the bench runs on older code too)."""
    text = subprocess.run(PY + ["audit", "--help"], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="200")).stdout
    return {"workers": "--workers" in text, "dask": "--dask" in text}


def logs_for(scale: float, skip_10m: bool) -> list[tuple[str, Path]]:
    """(label, path) of the 1M (or scaled) log and its ten renamed copies, made once by make_scale_logs.py."""
    deals = round(1_000_000 * scale)
    base = OUT / f"club-{deals}-s7.parquet"
    big = OUT / f"club-{deals}-s7-x10.parquet"
    need = [base] if skip_10m else [base, big]
    if not all(p.exists() for p in need):
        subprocess.run([sys.executable, str(HERE / "make_scale_logs.py"), "base" if skip_10m else "tenfold",
                        "--deals", str(deals)], check=True)
    label = _label(deals)
    out = [(label, base)]
    if not skip_10m:
        out.append((_label(10 * deals), big))
    return out


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n / 1000:g}k"


def _files(path: Path) -> list[Path]:
    """The log files of `path`: itself, or those under a directory (a dataset), as the auditor reads them."""
    from auditor.inputs import expand_inputs

    return [Path(p) for p in expand_inputs([str(path)])] if path.is_dir() else [path]


def count_deals(path: Path) -> int:
    import pyarrow.parquet as pq

    if path.is_dir():
        return sum(count_deals(p) for p in _files(path))
    if path.suffix == ".parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    import gzip

    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _tree_rss(pid: int) -> tuple[int, int]:
    """The summed RSS (bytes) of `pid` and every process below it, and the largest of them."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.Error:
        return 0, 0
    total = largest = 0
    for q in procs:
        try:
            rss = q.memory_info().rss
        except psutil.Error:
            continue
        total += rss
        largest = max(largest, rss)
    return total, largest


_TIME_FIELDS = {"Maximum resident set size (kbytes)": "max_rss_kb", "User time (seconds)": "user_s",
                "System time (seconds)": "sys_s", "Elapsed (wall clock) time (h:mm:ss or m:ss)": "elapsed"}


def _parse_time_v(text: str) -> dict:
    got: dict = {}
    for line in text.splitlines():
        k, _, v = line.strip().rpartition(": ")
        if k in _TIME_FIELDS:
            got[_TIME_FIELDS[k]] = v.strip()
    return got


def run(args: list[str], deals: int, env_extra: dict[str, str] | None = None, cpu_clock: bool = False,
        report: Path | None = None) -> dict:
    """One command (`auditor ARGS`) in a fresh process: wall, CPU, peak RSS (largest process, and the sampled sum
    over its process tree), the document's SHA-256 and size, exit code, stage times, whether it did the job.
    `report`: the run writes this report and prints the terminal summary (not the document) on stdout: the job
    is done when the report is written and the summary counts every deal."""
    env = dict(os.environ, **(env_extra or {}))
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as td:
        tv, errp = Path(td) / "time.txt", Path(td) / "stderr.txt"
        # nice 10 in all (not 10 more when the bench itself already runs nice'd: nice 19 gets ~7 x less CPU)
        cmd = ["/usr/bin/time", "-v", "-o", str(tv), "nice", "-n", str(max(0, 10 - os.nice(0)))] + (
            [sys.executable, "-c", CPU_CLOCK] if cpu_clock else PY) + args
        sha = hashlib.sha256()
        size = 0
        head = bytearray()
        peak = [0, 0]
        t0 = time.perf_counter()
        with open(errp, "wb") as eh:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=eh, env=env)
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.5):
                    tree, largest = _tree_rss(proc.pid)
                    peak[0], peak[1] = max(peak[0], tree), max(peak[1], largest)

            th = threading.Thread(target=sample, daemon=True)
            th.start()
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 20):
                sha.update(chunk)
                size += len(chunk)
                if report is not None:  # the summary whole (its per-person paragraphs come before the counts)
                    head += chunk
                elif len(head) < 4096:
                    head += chunk[:4096]
            code = proc.wait()
            done.set()
            th.join()
        wall = time.perf_counter() - t0
        err = errp.read_text(encoding="utf-8", errors="replace")
        tinfo = _parse_time_v(tv.read_text(encoding="utf-8", errors="replace")) if tv.exists() else {}
    m = re.search(rb'^\{\s*"deals":\s*(\d+)', bytes(head))
    if report is not None:  # the summary's line "1,000,000 deal records, ..."
        m = re.search(rb'^([0-9,]+) deal records', bytes(head), re.M)
        m = m if m is not None and report.exists() and report.stat().st_size else None
    ok = code in (0, 1) and "Traceback" not in err and m is not None and int(m.group(1).replace(b",", b"")) == deals
    stages = {}
    for line in err.splitlines():
        mm = re.match(r"auditor timing: (\s*)(.+?) ([0-9.]+) s$", line)
        if mm:
            stages[("  " if mm.group(1) else "") + mm.group(2)] = float(mm.group(3))
    cpu = float(tinfo.get("user_s", "nan")) + float(tinfo.get("sys_s", "nan"))
    return {"cmd": "auditor " + " ".join(args), "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            # the largest process: `/usr/bin/time`'s (exact, over the processes waited for up the tree) or the
            # sampler's, whichever is larger (a process nobody up the tree waits for is missing from the first)
            "max_rss_mb": round(max(int(tinfo.get("max_rss_kb", 0)) / 1024, peak[1] / 2**20), 1),
            "time_max_rss_mb": round(int(tinfo.get("max_rss_kb", 0)) / 1024, 1),
            "sampled_max_rss_mb": round(peak[1] / 2**20, 1),
            "tree_rss_mb": round(peak[0] / 2**20, 1), "sha256": sha.hexdigest(), "doc_mb": round(size / 2**20, 1),
            "exit": code, "ok": ok, "stages": stages, "stderr_tail": err[-600:] if not ok else ""}


def markdown(res: dict) -> str:
    """The runs, and the audit's stages (wall from `audit`, CPU from `audit-cpu`), as Markdown tables."""
    out = [f"load average {res['load_before']} before, {res['load_after']} after; {res['machine']['cpus']} cpus", "",
           "| log | deals | run | wall s | CPU s | max RSS MB | tree RSS MB | exit | sha256 |",
           "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for lab, e in res["logs"].items():
        for m, r in e["runs"].items():
            if "seconds" in r:
                out.append(f"| {lab} | {e['deals']:,} | {m} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
                           f"{r['max_rss_mb']:.0f} | {r['tree_rss_mb']:.0f} | {r['exit']} | {r['sha256'][:12]} |")
    out += ["", "| log | stage | wall s | CPU s |", "|---|---|---:|---:|"]
    for lab, e in res["logs"].items():
        wall = e["runs"].get("audit", {}).get("stages", {})
        cpu = e["runs"].get("audit-cpu", {}).get("stages", {})
        for k in dict.fromkeys(list(wall) + list(cpu)):
            w, c = wall.get(k), cpu.get(k)
            out.append(f"| {lab} | {k.strip() if not k.startswith('  ') else '&nbsp;&nbsp;' + k.strip()} | "
                       f"{'' if w is None else f'{w:.2f}'} | {'' if c is None else f'{c:.2f}'} |")
    for lab, e in res["logs"].items():
        out.append(f"\n{lab}: ratios {e['ratios']}; documents identical: {e['identical']}")
    return "\n".join(out) + "\n"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _median_run(runs: list[dict]) -> dict:
    """The run of median wall time among a mode's rounds (the lower middle of an even number), with every round's
    wall and CPU seconds beside it (`all_seconds`, `all_cpu_seconds`); a single run as it is."""
    if len(runs) == 1:
        return runs[0]
    ok = [r for r in runs if "seconds" in r]
    mid = sorted(ok, key=lambda r: r["seconds"])[(len(ok) - 1) // 2]
    return dict(mid, all_seconds=[r["seconds"] for r in ok], all_cpu_seconds=[r["cpu_seconds"] for r in ok])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deals-scale", type=float, default=1.0,
                    help="the base log has this times 1M deals, the big one ten times that (default 1)")
    ap.add_argument("--skip-10m", action="store_true", help="only the base log (no ten copies)")
    ap.add_argument("--log", action="append", default=None, help="time this log instead (repeatable)")
    ap.add_argument("--only", default=",".join(DEFAULT_MODES),
                    help=f"comma-separated modes among {', '.join(MODES)} (default: the first four the CLI has)")
    ap.add_argument("--markdown", default=None, metavar="OUT", help="also write the tables as Markdown to OUT")
    ap.add_argument("--workers", type=int, default=2, help="N of --workers N and --dask local:N (default 2)")
    ap.add_argument("--json", default=None, metavar="OUT", help="also write the numbers as JSON to OUT")
    ap.add_argument("--cold", action="store_true", help="no warm-up (numba's first compilations timed too)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run the modes N times in rounds (replay, audit, ..., then again) and report each mode's "
                         "median run, and the median of each round's audit/replay (default 1)")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be 1 or more")
    only = [m.strip() for m in a.only.split(",") if m.strip()]
    bad = [m for m in only if m not in MODES]
    if bad:
        ap.error(f"unknown mode(s) {bad}: choose among {', '.join(MODES)}")
    OUT.mkdir(parents=True, exist_ok=True)
    cli = has_options()
    logs = [(Path(p).name, Path(p)) for p in a.log] if a.log else logs_for(a.deals_scale, a.skip_10m)
    if not a.cold:  # numba's kernels compiled before anything is timed: `auditor warm-cache`, or, where the
        # installed auditor has no such command (an older commit), an audit of the demo, which compiles less (not the
        # Parquet reader's kernels nor the parts')
        if subprocess.run(PY + ["warm-cache", "--help"], capture_output=True).returncode == 0:
            subprocess.run(PY + ["warm-cache"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            demo = HERE.parent / "fixtures" / "demo" / "season.jsonl.gz"
            subprocess.run(PY + ["audit", "--json", str(demo)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    modes: dict[str, list[str]] = {"replay": ["replay", "--json"], "audit": ["audit", "--json"],
                                   "workers": ["audit", "--json", "--workers", str(a.workers)],
                                   "dask": ["audit", "--json", "--dask", f"local:{a.workers}"],
                                   "audit-cpu": ["audit", "--json"], "save": ["audit", "--json"],
                                   "report": ["audit"]}
    res: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "platform": platform.platform()},
                 "cli": cli, "load_before": _load(), "logs": {}}
    for label, path in logs:
        deals = count_deals(path)
        entry: dict = {"path": str(path), "deals": deals, "mb": round(sum(p.stat().st_size for p in _files(path)) / 2**20, 1), "runs": {}}
        res["logs"][label] = entry
        rounds: list[dict] = []  # --repeat: each round's runs (a round times every mode once, one after another,
        # so that a paired ratio compares runs a few seconds apart on a machine whose speed drifts)
        for rnd, mode in ((rnd, mode) for rnd in range(a.repeat) for mode in only):
            if rnd == len(rounds):
                rounds.append({})
            if mode in ("workers", "dask") and not cli[mode]:
                entry["runs"][mode] = {"skipped": f"the CLI has no --{mode}"}
                continue
            print(f"{label}: {mode}" + (f" (round {rnd + 1} of {a.repeat})" if a.repeat > 1 else "") + " ...",
                  file=sys.stderr, flush=True)
            env = {"AUDITOR_TIMING": "1"} if mode != "replay" else None
            saved = OUT / f"{label}.bench.counts"
            extra = ["--save-counts", str(saved)] if mode == "save" else []
            page = OUT / f"{label}.bench.html"
            if mode == "report":  # the command docs/scale.md gives: the terminal summary and the HTML report
                page.unlink(missing_ok=True)
                extra = ["--out", str(page)]
            r = run(modes[mode] + extra + [str(path)], deals, env, cpu_clock=mode == "audit-cpu",
                    report=page if mode == "report" else None)
            if mode == "save" and saved.exists():
                r["counts_mb"] = round(saved.stat().st_size / 2**20, 1)
                saved.unlink()
            if mode == "report" and page.exists():
                r["report_kb"] = round(page.stat().st_size / 1024, 1)
                page.unlink()
            r["load_after"] = _load()
            rounds[rnd][mode] = r
            entry["runs"][mode] = _median_run([x[mode] for x in rounds if mode in x])
            print(f"  {r['seconds']:.1f} s wall, {r['cpu_seconds']:.1f} s cpu, {r['max_rss_mb']:.0f} MB max RSS, "
                  f"{r['tree_rss_mb']:.0f} MB tree, exit {r['exit']}{'' if r['ok'] else ' FAILED'}",
                  file=sys.stderr, flush=True)
        runs = {k: v for k, v in entry["runs"].items() if "seconds" in v}
        ratios: dict = {}
        if "replay" in runs and "audit" in runs:
            ratios["audit/replay"] = round(runs["audit"]["seconds"] / max(runs["replay"]["seconds"], 1e-9), 2)
            ratios["audit/replay CPU"] = round(runs["audit"]["cpu_seconds"] / max(runs["replay"]["cpu_seconds"], 1e-9),
                                               2)
        for m in ("workers", "dask"):
            if m in runs and "audit" in runs:
                ratios[f"{m}/one"] = round(runs[m]["seconds"] / max(runs["audit"]["seconds"], 1e-9), 2)
        if a.repeat > 1 and "replay" in runs and "audit" in runs:  # each round's own ratio, then their median
            paired = [x["audit"]["seconds"] / max(x["replay"]["seconds"], 1e-9) for x in rounds
                      if "audit" in x and "replay" in x]
            ratios["audit/replay, median of rounds"] = round(statistics.median(paired), 2)
            ratios["audit/replay, rounds"] = [round(v, 2) for v in paired]
        entry["ratios"] = ratios
        docs = {m: runs[m]["sha256"] for m in ("audit", "workers", "dask", "audit-cpu", "save") if m in runs}
        entry["identical"] = len(set(docs.values())) == 1 if len(docs) > 1 else None
    labels = list(res["logs"])
    if len(labels) == 2:
        small, big = (res["logs"][x]["runs"] for x in labels)
        res["memory_10x/1x"] = {m: round(big[m]["max_rss_mb"] / max(small[m]["max_rss_mb"], 1e-9), 3)
                                for m in ("replay", "audit", "workers", "dask", "save", "report")
                                if "max_rss_mb" in big.get(m, {}) and "max_rss_mb" in small.get(m, {})}
        res["tree_memory_10x/1x"] = {m: round(big[m]["tree_rss_mb"] / max(small[m]["tree_rss_mb"], 1e-9), 3)
                                     for m in ("replay", "audit", "workers", "dask", "save", "report")
                                     if "tree_rss_mb" in big.get(m, {}) and "tree_rss_mb" in small.get(m, {})}
    res["load_after"] = _load()
    failed = [(lab, m) for lab, e in res["logs"].items() for m, r in e["runs"].items() if r.get("ok") is False]
    differ = [lab for lab, e in res["logs"].items() if e["identical"] is False]
    for lab, e in res["logs"].items():
        print(f"{lab} ({e['deals']:,} deals, {e['mb']} MB), load {res['load_before']} -> {res['load_after']}")
        for m, r in e["runs"].items():
            if "skipped" in r:
                print(f"  {m:>8}: skipped ({r['skipped']})")
                continue
            print(f"  {m:>8}: {r['seconds']:8.1f} s wall {r['cpu_seconds']:8.1f} s cpu {r['max_rss_mb']:8.0f} MB max "
                  f"RSS {r['tree_rss_mb']:8.0f} MB tree  sha {r['sha256'][:12]}{'' if r['ok'] else '  FAILED'}")
        print(f"  ratios {e['ratios']}; documents identical: {e['identical']}")
    for k in ("memory_10x/1x", "tree_memory_10x/1x"):
        if k in res:
            print(f"{k}: {res[k]}")
    for lab, m in failed:
        print(f"{lab} {m} failed: {res['logs'][lab]['runs'][m]['stderr_tail']}", file=sys.stderr)
    for lab in differ:
        print(f"{lab}: the documents of the modes differ", file=sys.stderr)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    if a.markdown:
        Path(a.markdown).write_text(markdown(res), encoding="utf-8")
    return 1 if failed or differ else 0


if __name__ == "__main__":
    sys.exit(main())
