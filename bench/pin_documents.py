"""Pin (or check) the SHA-256 of the documents a refactor must leave unchanged.

The guard rail of issue 13: ``auditor audit --json`` on the demo season, the
HTML report of that audit, and ``auditor replay --json`` on every replay
fixture.  Run ``python bench/pin_documents.py --write`` at the commit where a
redesign starts and ``python bench/pin_documents.py`` (check) at its end; the
check prints every document whose hash moved and exits 1.

Each document is produced by the installed ``auditor`` command in a fresh
process, exactly as a user would run it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "bench" / "pinned_documents.json"
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"


def _run(args: list[str]) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"auditor {' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return done.stdout + b"\0exit=%d" % done.returncode


def documents() -> dict[str, str]:
    out: dict[str, str] = {}
    demo = str(DEMO.relative_to(ROOT))  # as the fixtures below: the document names its input as given, and an
    # absolute path made the pins depend on where the repository is checked out (issue 15, a twenty-seventh session)
    out["audit --json demo"] = hashlib.sha256(_run(["audit", demo, "--json"])).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        _run(["audit", demo, "--out", str(html)])
        out["audit --out report.html demo"] = hashlib.sha256(html.read_bytes()).hexdigest()
    for path in sorted((ROOT / "fixtures" / "replay").glob("*.jsonl")):
        rel = path.relative_to(ROOT)
        for engine in ("batch", "reference"):
            body = _run(["replay", str(rel), "--json", "--engine", engine])
            out[f"replay --json --engine {engine} {rel}"] = hashlib.sha256(body).hexdigest()
    examples = ROOT / "fixtures" / "examples.jsonl"
    out["replay --json fixtures/examples.jsonl"] = hashlib.sha256(
        _run(["replay", str(examples.relative_to(ROOT)), "--json"])
    ).hexdigest()
    return out


ENVIRONMENT = "_environment"  # the pins' entry that is not a document: what the documents were made with


def environment() -> dict[str, str]:
    """What the documents may depend on besides the code: Python, the numeric packages (the tests' Monte Carlo
    draws and some last bits come from numpy's and numba's kernels) and whether the CPU has AVX-512 (numpy's exp
    may differ in the last place there). Issue 15, a twenty-eighth session: the demo's two pins moved for the
    session's start and its end alike, on freshly installed packages; the pins did not say what they were made
    with."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("numpy", "numba", "llvmlite", "scipy", "pyarrow", "polars", "orjson"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    try:
        flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
        out["avx512f"] = "yes" if " avx512f" in flags else "no"
    except OSError:
        out["avx512f"] = "unknown"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the pins instead of checking them")
    ns = parser.parse_args()
    now = documents()
    env = environment()
    if ns.write:
        PINS.write_text(json.dumps({ENVIRONMENT: env, **now}, indent=1, sort_keys=True) + "\n")
        print(f"pinned {len(now)} documents in {PINS.relative_to(ROOT)}")
        return 0
    pinned = json.loads(PINS.read_text())
    was = pinned.pop(ENVIRONMENT, None)
    moved = sorted(k for k in pinned.keys() | now.keys() if pinned.get(k) != now.get(k))
    for key in moved:
        print(f"moved: {key}")
    print(f"{len(now) - len(moved)} of {len(now)} documents identical")
    if moved and was != env:  # a moved document may be the environment's doing, not the code's
        changed = sorted(k for k in (was or {}).keys() | env.keys() if (was or {}).get(k) != env.get(k))
        print("the environment differs from the pins': " + (", ".join(
            f"{k} {(was or {}).get(k, '?')} -> {env.get(k, '?')}" for k in changed) if was else "not recorded"))
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
