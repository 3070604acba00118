"""`auditor investigate` from the command line: exit codes, terminal and HTML output, unknown players."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
EXAMPLES = ROOT / "fixtures" / "examples.jsonl"


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "auditor", "investigate", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=dict(os.environ, COLUMNS="200"))


@pytest.mark.skipif(not DEMO.exists(), reason="the demo season is not in fixtures/")
def test_investigate_the_planted_stacker(tmp_path):
    out = tmp_path / "kate.html"
    p = _run(DEMO, "--player", "kate", "--out", out, "--top", "5")
    assert p.returncode == 1, p.stderr[-2000:]  # kate is flagged
    assert p.stdout.startswith("kate is flagged by")
    assert "deals that weigh most" in p.stdout and "held the Jack of trumps" in p.stdout
    assert "controls" in p.stdout and "the Jack when someone else dealt" in p.stdout
    # issue 16: about 200 lines at most without --all (it printed about 1,300, mostly empty pair blocks): the
    # per-person paragraph first, the flagged tests in full, every other test on one line
    lines = p.stdout.splitlines()
    assert len(lines) <= 200, len(lines)
    assert lines[1].startswith("kate ") and "Scotch Whist deals dealt" in p.stdout
    assert "the other tests: nothing to show" in p.stdout and "pairs with this player, none flagged" in p.stdout
    assert "--all shows every test in full" in p.stdout
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert html.count("kate dealt and held the Jack of trumps") == 5  # --top 5
    import hashlib  # issue 16: the reproducibility block here too

    assert hashlib.sha256(DEMO.read_bytes()).hexdigest() in html
    assert f"auditor investigate {DEMO} --player kate --fdr 0.05 --seed 0" in html


def test_unknown_player_is_a_usage_error_with_suggestions():
    p = _run(EXAMPLES, "--player", "an")
    assert p.returncode == 2
    assert "no player 'an' in these logs" in p.stderr and "did you mean" in p.stderr and "'ann'" in p.stderr


def test_bad_options():
    assert _run(EXAMPLES, "--player", "ann", "--out", "x.pdf").returncode == 2
    assert _run(EXAMPLES, "--player", "ann", "--fdr", "1.5").returncode == 2
    assert _run("/no/such/file.jsonl", "--player", "ann").returncode == 3


def test_a_player_not_flagged_exits_0(tmp_path):
    p = _run(EXAMPLES, "--player", "ann")
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("ann is not flagged") or p.stdout.startswith("No test of this audit concerns ann")
