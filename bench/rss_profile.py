"""Per-process memory of one `auditor` run, sampled (issue 15: where the peak is, process by process).

`bench_scale.py` gives the peak of the largest process (`/usr/bin/time -v`); this script says which process it was
and when: every `--every` seconds it reads RssAnon, RssFile and VmHWM of the run's process and of every process under
it from /proc (Linux), and writes one JSON line per sample. With `AUDITOR_TIMING=1` set for the run, the stage
lines the audit prints on stderr are kept with their times, so a peak can be put in its stage.

    python bench/rss_profile.py --out /tmp/m10 -- audit --json /abs/path/club-1000000-s7-x10.parquet
    python bench/rss_profile.py --summary /tmp/m10

The summary lists each process (first seen, seconds), its largest RssAnon, RssFile and VmHWM (MB) and the run's
largest VmHWM, the figure `bench_scale.py` reports as the peak.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


def _status(pid: int) -> dict[str, int] | None:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("RssAnon", "RssFile", "VmHWM"):
                    out[key] = int(rest.split()[0])  # kB
    except OSError:
        return None
    return out


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


def run(args: list[str], out: Path, every: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, AUDITOR_TIMING="1")
    t0 = time.time()
    with open(out / "doc.out", "wb") as doc, open(out / "samples.jsonl", "w") as samples:
        proc = subprocess.Popen([sys.executable, "-m", "auditor", *args], stdout=doc, stderr=subprocess.PIPE, env=env)
        stages = []

        def read_stderr() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                stages.append([round(time.time() - t0, 2), raw.decode(errors="replace").rstrip("\n")])

        th = threading.Thread(target=read_stderr, daemon=True)
        th.start()
        while proc.poll() is None:
            row = {"t": round(time.time() - t0, 2), "procs": {}}
            for p in _tree(proc.pid):
                st = _status(p)
                if st:
                    row["procs"][str(p)] = st
            samples.write(json.dumps(row) + "\n")
            samples.flush()
            time.sleep(every)
        th.join()
    (out / "stages.json").write_text(json.dumps({"rc": proc.returncode, "wall_s": round(time.time() - t0, 2),
                                                 "main_pid": proc.pid, "args": args, "stderr": stages}, indent=1))
    return proc.returncode


def summary(out: Path) -> None:
    meta = json.loads((out / "stages.json").read_text())
    first: dict[str, float] = {}
    top: dict[str, list[int]] = {}
    for line in open(out / "samples.jsonl"):
        row = json.loads(line)
        for p, st in row["procs"].items():
            first.setdefault(p, row["t"])
            m = top.setdefault(p, [0, 0, 0])
            for i, k in enumerate(("RssAnon", "RssFile", "VmHWM")):
                m[i] = max(m[i], st.get(k, 0))
    print(f"exit {meta['rc']}, wall {meta['wall_s']} s, main process {meta['main_pid']}")
    print(f"{'pid':>8} {'from s':>8} {'RssAnon MB':>11} {'RssFile MB':>11} {'VmHWM MB':>9}")
    for p in sorted(top, key=lambda p: first[p]):
        a, f, h = (x / 1024 for x in top[p])
        if h > 50:  # the shell and short helpers left out
            print(f"{p:>8} {first[p]:8.0f} {a:11.0f} {f:11.0f} {h:9.0f}")
    print(f"largest VmHWM: {max(m[2] for m in top.values()) / 1024:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="folder for samples.jsonl, stages.json and the run's stdout")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples (1)")
    ap.add_argument("--summary", type=Path, help="summarise a folder written before, and run nothing")
    ap.add_argument("args", nargs="*", help="the auditor command's arguments (after --)")
    a = ap.parse_args()
    if a.summary is not None:
        summary(a.summary)
        return
    if a.out is None or not a.args:
        ap.error("--out and the auditor arguments are needed")
    rc = run(a.args, a.out, a.every)
    summary(a.out)
    sys.exit(0 if rc in (0, 1) else rc)  # 1: the audit flagged someone


if __name__ == "__main__":
    main()
