"""The report on the demo season (fixtures/demo): the planted dealing cheaters are flagged and no honest player is,
the verdict says so on top, and two runs of `auditor audit` give byte-identical JSON, HTML and Markdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
KEY = ROOT / "fixtures" / "demo" / "season.key.json"
pytestmark = pytest.mark.skipif(not DEMO.exists(), reason="the demo season is not in fixtures/")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two independent runs of `auditor audit DEMO --json --out report.html`; the Markdown from each JSON."""
    from auditor.report.markdown import render_markdown

    out = []
    for k in range(2):
        d = tmp_path_factory.mktemp(f"run{k}")
        p = subprocess.run([sys.executable, "-m", "auditor", "audit", str(DEMO), "--json", "--out",
                            str(d / "report.html")], capture_output=True, cwd=ROOT)
        assert p.returncode == 1, p.stderr.decode()[-2000:]  # 1: there are flags
        out.append({"html": (d / "report.html").read_bytes(), "json": p.stdout,
                    "md": render_markdown(json.loads(p.stdout)).encode("utf-8")})
    return out


def test_two_runs_are_byte_identical(runs):
    a, b = runs
    assert a["html"] == b["html"] and a["md"] == b["md"] and a["json"] == b["json"]


def test_verdict_names_the_planted_dealing_cheaters_and_no_honest_player(runs):
    doc = json.loads(runs[0]["json"])
    key = json.loads(KEY.read_text(encoding="utf-8"))
    cheaters = {c["player"]: c["kind"] for c in key["cheaters"]}
    flagged = {f["subject"] for f in doc["flags"]}
    honest = {s for s in flagged if not set(s.split("+")) & set(cheaters)}
    assert honest == set()
    dealing = {p for p, kind in cheaters.items() if kind in ("jack_stacker", "turnup_jack", "bad_shuffler")}
    assert dealing <= flagged
    named = {p for s in flagged for p in s.split("+")}
    play = {p for p, kind in cheaters.items() if kind in ("colluder", "revoker")}
    assert play <= named
    html = runs[0]["html"].decode("utf-8")
    verdict = html[html.index('<div class="verdict'):html.index("</div>", html.index('<div class="verdict'))]
    assert all(p in verdict for p in dealing)
    # the flag sentences come before any test table, and each flagged subject has a timeline
    assert html.index("kate received the Jack of trumps in") < html.index('<section class="family"')
    assert html.count("cumulative excess") >= len(doc["flags"]) - sum(
        1 for f in doc["flags"] if not f["detail"].get("timeline"))


def test_the_marked_ten_cheater_is_flagged_too(runs):
    doc = json.loads(runs[0]["json"])
    key = json.loads(KEY.read_text(encoding="utf-8"))
    marked = {c["player"] for c in key["cheaters"] if c["kind"] == "marked_ten"}
    assert marked and marked <= {f["subject"] for f in doc["flags"]}


def test_every_flag_draws_its_timeline_the_marked_ten_one_too(runs):
    """Every flag of the demo has `detail.timeline`; the HTML draws each (no "no timeline" note), among them the
    flagged marked-Ten player's cumulative excess over his scored deals with its honest range; `investigate`
    draws it too."""
    from auditor.investigate import build_investigation
    from auditor.report import view as report_view

    doc = json.loads(runs[0]["json"])
    html = runs[0]["html"].decode("utf-8")
    assert doc["flags"] and all(f["detail"].get("timeline") for f in doc["flags"])
    assert "These tests recorded no timeline" not in html
    view = report_view.build_view(doc)
    assert all(t["svg"] and t["svg"] in html for t in view["timelines"])
    marked = [f for f in doc["flags"] if f["test"] == "marked_ten"]
    assert marked
    for f in marked:
        tl = f["detail"]["timeline"]
        assert all(len(p) == 4 for p in tl) and tl[-1][0] == f["n"]
        assert tl[-1][1] == pytest.approx(f["observed"], abs=1e-3)
        chart = next(t["svg"] for t in view["timelines"] if (t["test"], t["subject"]) == ("marked_ten", f["subject"]))
        assert f"{f['subject']}: cumulative excess, marked ten" in chart and "honest range" in chart
        inv = build_investigation(doc, f["subject"])
        mt = next(t for t in inv["tests"] if t["test"] == "marked_ten")
        assert mt["timeline"] == chart
    for test in ("collusion", "revoke_pattern"):
        for f in (f for f in doc["flags"] if f["test"] == test):
            assert len(f["detail"]["timeline"][-1]) == 4 and f["detail"]["timeline"][-1][0] == f["n"]
