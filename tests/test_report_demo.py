"""The report on the demo season (fixtures/demo): the planted dealing cheaters are flagged and no honest player is,
the verdict says so on top, and two runs of `auditor audit` give byte-identical JSON, HTML and Markdown."""

from __future__ import annotations

import json
import shutil
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
    assert html.index("kate received the Jack of trumps in") < html.index('<details class="family"')
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
    assert "These flags have no timeline here" not in html
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


def test_the_report_for_the_people_who_use_it(runs):
    """Issue 16: one paragraph per flagged person on top (kate's three flags in one, each count saying which
    game it counts), the page at most 500 kB, the reproducibility block with the input's SHA-256 and the
    command that gives the document again."""
    import hashlib
    import re

    from auditor.report import view as report_view

    doc = json.loads(runs[0]["json"])
    html = runs[0]["html"].decode("utf-8")
    assert len(runs[0]["html"]) <= 500_000, len(runs[0]["html"])  # it was 3.7 MB
    view = report_view.build_view(doc, charts=False)
    named = {p for f in doc["flags"] for p in f["subject"].split("+")}
    assert [p["person"] for p in view["people"]] and {p["person"] for p in view["people"]} == named
    evidence = html.index('<section id="evidence">')
    for p in view["people"]:
        i = html.index(f'<span class="who">{p["person"]}</span>')
        assert i < evidence
    kate = next(p for p in view["people"] if p["person"] == "kate")
    assert kate["n_flags"] == 3
    assert re.search(r"in \d+ of \d+ Scotch Whist deals dealt", kate["paragraph"])
    assert re.search(r"in \d+ of \d+ All Fours deals dealt", kate["paragraph"])
    assert "deals dealt in all games" in kate["paragraph"]
    # the watch list holds no result resting on a single chance ("1 of the 1 chances")
    assert all(w["n"] not in ("1", "2") for w in view["watch"]) and view["watch_hidden"] >= 1
    repro = doc["reproducibility"]
    assert repro["inputs"] == [{"path": str(DEMO), "sha256": hashlib.sha256(DEMO.read_bytes()).hexdigest(),
                                "bytes": DEMO.stat().st_size}]
    assert repro["command"] == f"auditor audit {DEMO} --fdr 0.05 --seed 0" and repro["seed"] == 0
    assert sum(repro["rules_presets"].values()) == doc["deals"]
    assert repro["inputs"][0]["sha256"] in html and repro["version"] in html


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_every_accused_paragraph_is_on_the_first_screen(runs, tmp_path):
    """Issue 16, "done when": the demo's report in headless Chromium at 1280 x 900 shows each accused person's
    paragraph on the first screen. The last paragraph's bottom edge is painted a colour the page never uses; it
    must show in the screenshot of the first screen."""
    from PIL import Image

    html = runs[0]["html"].decode("utf-8")
    mark = "<style>#verdict div.person:last-of-type { border-bottom: 6px solid #00ff00 !important; }</style>"
    page = tmp_path / "report.html"
    page.write_text(html.replace("</head>", mark + "</head>", 1), encoding="utf-8")
    png = tmp_path / "first.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={png}", "--window-size=1280,900", page.as_uri()], capture_output=True,
                   timeout=120)
    img = Image.open(png).convert("RGB")
    assert img.size == (1280, 900)
    green = sum(1 for x in range(0, 1280, 2) for y in range(0, 900) if img.getpixel((x, y)) == (0, 255, 0))
    assert green > 300, green  # a 6 px line across the card, wholly above the fold
