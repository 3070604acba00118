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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the pins instead of checking them")
    ns = parser.parse_args()
    now = documents()
    if ns.write:
        PINS.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"pinned {len(now)} documents in {PINS.relative_to(ROOT)}")
        return 0
    pinned = json.loads(PINS.read_text())
    moved = sorted(k for k in pinned.keys() | now.keys() if pinned.get(k) != now.get(k))
    for key in moved:
        print(f"moved: {key}")
    print(f"{len(now) - len(moved)} of {len(now)} documents identical")
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
