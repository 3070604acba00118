"""The HTML report in a real browser: headless Chromium renders it (verdict and charts visible in a screenshot) and
its live DOM, after the browser has parsed everything, holds no script and shows hostile names as text.

Skipped when Chromium is not installed (`apt-get install -y chromium`); see docs/report.md for the manual check.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.report.html import write_report

sys.path.insert(0, str(Path(__file__).parent))
from test_report import _parse  # noqa: E402
from test_report_data import EVIL, synthetic_doc  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-extensions", "--hide-scrollbars"]


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args], capture_output=True,
                          timeout=120, text=True)


def screenshot(html: Path, png: Path, size: str = "1200,1800") -> None:
    """What docs/report.md describes: a headless screenshot of a report file."""
    r = _chromium([f"--screenshot={png}", f"--window-size={size}", html.resolve().as_uri()], png.parent)
    assert png.exists(), r.stderr[-2000:]


def test_screenshot_shows_the_verdict_and_the_charts(tmp_path):
    from PIL import Image

    doc = synthetic_doc(seed=7)
    html = write_report(doc, tmp_path / "report.html")
    png = tmp_path / "report.png"
    screenshot(html, png, "1200,2600")
    img = Image.open(png).convert("RGB")
    assert img.size == (1200, 2600)
    px = img.load()

    def count(colour: tuple[int, int, int], box: tuple[int, int, int, int], tol: int = 12) -> int:
        x0, y0, x1, y1 = box
        return sum(1 for x in range(x0, x1, 2) for y in range(y0, y1, 2)
                   if all(abs(px[x, y][i] - colour[i]) <= tol for i in range(3)))

    # the verdict banner (pale red with a red bar) is on top
    assert count((0xFD, 0xEC, 0xEA), (0, 0, 1200, 300)) > 2000
    assert count((0xC6, 0x28, 0x28), (0, 0, 1200, 300)) > 50
    # charts are drawn: the funnel's shaded band and the timelines' red lines (SVG rendered, not shown as text)
    assert count((0xDB, 0xE7, 0xF5), (0, 0, 1200, 2600)) > 2000
    assert count((0xC6, 0x28, 0x28), (0, 600, 1200, 2600), tol=30) > 40


def test_live_dom_has_no_script_and_shows_hostile_names(tmp_path):
    doc = synthetic_doc(seed=7)
    html = write_report(doc, tmp_path / "report.html")
    r = _chromium(["--dump-dom", html.resolve().as_uri()], tmp_path)
    dom = r.stdout
    assert "</html>" in dom, r.stderr[-2000:]
    parsed = _parse(dom)
    tags = {t for t, _ in parsed.tags}
    assert "script" not in tags and "img" not in tags and "iframe" not in tags
    for _, attrs in parsed.tags:
        assert not any(k.startswith("on") for k, _ in attrs)
    text = "".join(parsed.text)
    for name in EVIL:
        assert name in text
