"""Honest charts (issue 16): each flag's chart shows the statistic that flagged it, rising; an axis that does not
show a value as it is says so (broken-axis mark, triangle at the top); the legend and the caption name only marks
that are drawn; no two texts overlap; text renders at 11 px or more in the report at a 1280 px window.

Checked on every chart of the demo season's audit, on the same document with every player renamed to a
30-character name, and on small documents built for one point each. Text boxes are estimated from the font size
(`EM` of it per character, a little less than the charts' own estimate, which errs wide); the test with headless
Chromium (skipped without it) measures the real boxes and widths in the browser.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.audit import audit_input
from auditor.report import svg
from auditor.report.html import render_html

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
CSS = ROOT / "auditor" / "report" / "templates" / "_style.css.j2"
NS = "{http://www.w3.org/2000/svg}"
EM, EM_BOLD = 0.6, 0.66  # the test's estimate of a character's advance, in font sizes
MIN_PX = 11.0
WINDOW = 1280


# ------------------------------------------------------------------ reading a chart back


def text_boxes(chart: str) -> list[tuple[str, tuple[float, float, float, float], float]]:
    """(text, estimated box (x0, y0, x1, y1) in user units, font size) of every <text> of an SVG chart."""
    root = ET.fromstring(chart)
    out = []
    for t in root.iter(NS + "text"):
        text = "".join(t.itertext())
        size = float(t.get("font-size", "16"))
        bold = t.get("font-weight") in ("600", "700", "bold")
        w = len(text) * size * (EM_BOLD if bold else EM)
        x, y = float(t.get("x", "0")), float(t.get("y", "0"))
        anchor = t.get("text-anchor", "start")
        if "rotate(-90" in (t.get("transform") or ""):  # drawn upwards about (x, y): its length runs along y
            lo = y - w / 2 if anchor == "middle" else y if anchor == "end" else y - w
            box = (x - 0.8 * size, lo, x + 0.22 * size, lo + w)
        else:
            x0 = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
            box = (x0, y - 0.8 * size, x0 + w, y + 0.22 * size)
        out.append((text, box, size))
    return out


def words(chart: str) -> str:
    """The chart's texts joined by spaces (a note wraps over several lines)."""
    return " ".join(t for t, _, _ in text_boxes(chart))


def overlaps(chart: str) -> list[tuple[str, str]]:
    boxes = text_boxes(chart)
    bad = []
    for i, (ta, a, _) in enumerate(boxes):
        for tb, b, _ in boxes[i + 1:]:
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                bad.append((ta, tb))
    return bad


def view_box(chart: str) -> tuple[float, float]:
    vb = [float(v) for v in ET.fromstring(chart).get("viewBox", "").split()]
    return vb[2], vb[3]


def outside(chart: str) -> list[str]:
    w, h = view_box(chart)
    return [t for t, (x0, y0, x1, y1), _ in text_boxes(chart) if x0 < 0 or y0 < 0 or x1 > w or y1 > h]


def data_marks(chart: str) -> list[ET.Element]:
    """The marks that stand for data: each carries a tooltip (<title>); legend swatches do not."""
    root = ET.fromstring(chart)
    return [e for e in root.iter() if e.tag in (NS + "circle", NS + "polygon") and e.find(NS + "title") is not None]


def check_chart(chart: str, where: str) -> None:
    assert chart.startswith("<svg"), where
    assert overlaps(chart) == [], where
    assert outside(chart) == [], where
    for _, _, size in text_boxes(chart):
        assert size >= svg.FONT, where


def all_charts(doc: dict) -> list[tuple[str, str, str]]:
    """(where, svg, caption) of every chart of a document: each test's charts and each flag's timeline."""
    by_test: dict[str, list[dict]] = {}
    for e in doc["tests"]:
        by_test.setdefault(e["test"], []).append(e)
    fams = {f["test"]: f for f in doc["families"]}
    out = []
    for test, entries in by_test.items():
        for c in svg.charts_for_family(test, entries, fams.get(test)):
            out.append((test, c["svg"], c["caption"]))
    for f in doc["flags"]:
        chart = svg.timeline(f)
        if chart:
            out.append((f"timeline {f['test']} {f['subject']}", chart, ""))
    return out


# ------------------------------------------------------------------ documents


@pytest.fixture(scope="module")
def demo_doc() -> dict:
    if not DEMO.exists():
        pytest.skip("the demo season is not in fixtures/")
    report = audit_input([str(DEMO)])
    try:
        return json.loads(json.dumps(report.to_json()))
    finally:
        report.close()


def long_names(doc: dict) -> dict:
    """The document with every player renamed to a 30-character name; names share their first 22 characters, the
    hardest case for labels cut at 24."""
    players = sorted({p for e in doc["tests"] for p in str(e["subject"]).split("+")})
    new = {p: f"player_with_a_long_name_{p}".ljust(30, "x")[:30] for p in players}

    def rename(e: dict) -> dict:
        return dict(e, subject="+".join(new[p] for p in str(e["subject"]).split("+")))

    return dict(doc, tests=[rename(e) for e in doc["tests"]], flags=[rename(e) for e in doc["flags"]])


@pytest.fixture(scope="module")
def demo_charts(demo_doc):
    return all_charts(demo_doc)


# ------------------------------------------------------------------ the tests


def test_demo_charts_have_no_overlapping_text_and_stay_inside(demo_charts):
    assert len(demo_charts) >= 20
    for where, chart, _ in demo_charts:
        check_chart(chart, where)


def test_long_names_overlap_nothing(demo_doc):
    doc = long_names(demo_doc)
    charts = all_charts(doc)
    assert len(charts) >= 20
    shown = {svg.short_name(e["subject"]): e["subject"] for e in doc["tests"]}
    labelled = set()
    for where, chart, _ in charts:
        check_chart(chart, where)
        labelled |= {t for t, _, _ in text_boxes(chart) if t in shown}
    flagged = {svg.short_name(f["subject"]) for f in doc["flags"]}
    assert flagged <= labelled  # every flagged name is drawn (cut to 24 characters), none moved to a note
    assert len({shown[t] for t in labelled}) == len(labelled)  # and the cut names still tell them apart


def test_crowded_labels_are_displaced_or_listed_never_stacked():
    """Twenty flagged subjects at almost the same place: each label is drawn where it overlaps nothing (with a
    leader line when moved), and those that cannot fit are named in a note under the chart."""
    entries = [{"test": "trick_stack", "subject": f"a_rather_long_player_name_{k:02d}", "n": 100 + k * 0.1,
                "pvalue": 10.0 ** -(12 + k * 0.01), "tier": "report"} for k in range(20)]
    entries += [{"test": "trick_stack", "subject": f"honest{k}", "n": 50 + k, "pvalue": 0.5, "tier": "clear"}
                for k in range(30)]
    chart = svg.evidence_chart("trick_stack", entries, "deals dealt", {"fdr": 0.05})
    check_chart(chart, "crowded")
    names = {svg.short_name(e["subject"]) for e in entries[:20]}
    assert len(names) == 20
    drawn = [t for t, _, _ in text_boxes(chart) if t in names]
    assert 2 <= len(drawn) < 20
    assert "<line" in chart and "Not labelled for lack of room:" in words(chart)
    notes = words(chart)
    for e in entries[:20]:
        short = svg.short_name(e["subject"])
        assert short in drawn or short in notes  # every flagged name is on the chart, drawn or listed


def _polyline_points(chart: str, colour: str) -> list[tuple[float, float]]:
    m = re.findall(r'<polyline points="([^"]*)" fill="none" stroke="' + colour + '" stroke-width="2.0"', chart)
    assert m, colour
    return [(float(a), float(b)) for a, b in (xy.split(",") for xy in m[-1].split())]


def test_every_flag_chart_shows_its_statistic_rising(demo_doc):
    """The demo's flags: a count's timeline ends at the flag's own observed − expected, above where it started; the
    uniformity flags (a Pearson X² over cells) show the X² adding up to the flag's statistic, not the honours dealt
    to the dealer (otto's line that ended at −8.4)."""
    assert demo_doc["flags"]
    for f in demo_doc["flags"]:
        chart = svg.timeline(f)
        line = _polyline_points(chart, svg.RED)
        assert line[-1][1] < line[0][1], f["subject"]  # screen y grows downwards: the line rises
        labels = [t for t, _, _ in text_boxes(chart)]
        if f["test"] == "deal_uniformity":
            assert "how the misfit adds up" in chart and "cumulative excess" not in chart
            assert f"X² = {f['statistic']:.1f}" in labels
            ys = [y for _, y in line]
            assert all(b <= a + 1e-9 for a, b in zip(ys, ys[1:], strict=False))  # never falls
        else:
            last = svg._timeline_points(f["detail"])[-1]
            assert last[1] - last[2] > 0
            assert f"{last[1] - last[2]:+.1f}" in labels
            assert svg._same(last[1], f["observed"])


def test_a_timeline_of_something_else_is_not_drawn_as_the_statistic():
    """A timeline that ends elsewhere than the result's count is not passed off as the statistic: without cells
    to draw there is no chart; a timeline that ends at a control's count says which control it follows."""
    tl = [[1, 0, 0.6], [2, 0, 1.3], [3, 1, 1.9]]
    entry = {"test": "zz_misfit", "subject": "otto", "tier": "report", "n": 3, "observed": 106.0, "expected": 40.0,
             "statistic": 106.0, "pvalue": 2e-5, "detail": {"timeline": tl}}
    assert svg.timeline(entry) == ""
    ctl = dict(entry, controls={"honours_to_dealer": {"observed": 1.0, "expected": 1.9}})
    chart = svg.timeline(ctl)
    assert "follows the control 'honours to dealer'" in words(chart)
    ok = dict(entry, observed=1.0, expected=1.9)
    assert "cumulative excess" in svg.timeline(ok) and "follows the control" not in svg.timeline(ok)


def test_evidence_axis_takes_its_top_from_the_data_and_marks_what_it_skips():
    """p = 2e-41 is drawn at 40.7, not at a ceiling of 16: two p-values far below 1e-16 get distinct heights, the
    axis is broken between the honest crowd and them (with its mark and its note), and p = 0 as stored is a
    triangle at the top with a note saying so."""
    entries = [{"test": "trick_stack", "subject": f"h{k}", "n": 100 + k, "pvalue": 0.02 + k / 60, "tier": "clear"}
               for k in range(50)]
    entries += [{"test": "trick_stack", "subject": "lou", "n": 120, "pvalue": 2e-41, "tier": "report"},
                {"test": "trick_stack", "subject": "kim", "n": 140, "pvalue": 1e-20, "tier": "report"}]
    chart = svg.evidence_chart("trick_stack", entries, "deals dealt", {"fdr": 0.05})
    check_chart(chart, "extreme p")
    cy = {"".join(m.itertext()).split(":")[0]: float(m.get("cy", "nan")) for m in data_marks(chart)
          if m.tag == NS + "circle"}
    assert cy["lou"] < cy["kim"] - 10  # 40.7 above 20, each at its own height
    ticks = [float(t.replace(",", "")) for t, _, _ in text_boxes(chart) if re.fullmatch(r"[\d,.]+", t)]
    assert max(ticks) >= 40  # the axis reaches the strongest value
    assert "The vertical axis is broken (//)" in words(chart)
    assert chart.count('stroke="' + svg.INK + '" stroke-width="1.3"/>') == 4  # two strokes on each side
    caption = svg.charts_for_family("trick_stack", entries, {"fdr": 0.05})[0]["caption"]
    assert "broken" in caption
    # no break when nothing stands far apart; p = 0 as stored: a triangle at the top, said in a note
    flat = [dict(e, pvalue=0.01 + k / 60) for k, e in enumerate(entries[:50])] + [dict(entries[50], pvalue=0.0)]
    chart = svg.evidence_chart("trick_stack", flat, "deals dealt", {"fdr": 0.05})
    check_chart(chart, "p = 0")
    assert "broken" not in chart
    tri = [m for m in data_marks(chart) if m.tag == NS + "polygon"]
    assert len(tri) == 1 and "beyond the top of the axis" in words(chart) and "drawn at the top" in words(chart)
    qq = svg.qq_plot(entries)
    check_chart(qq, "qq")
    assert "The vertical axis is broken (//)" in words(qq)


def test_legends_and_captions_name_only_drawn_marks(demo_charts):
    """Every legend swatch stands for marks of its kind and colour in the chart; 'hollow diamonds' are named only
    where drawn (the demo's evidence charts have controls without p-values: none drawn, none named)."""
    for where, chart, caption in demo_charts:
        root = ET.fromstring(chart)
        marks = data_marks(chart)
        fills = {(m.tag, m.get("fill"), m.get("stroke")) for m in marks}
        diamonds = [m for m in marks if m.tag == NS + "polygon" and m.get("fill") == "white"]
        for r in root.iter(NS + "rect"):
            if r.get("rx") == "4":  # a dot swatch: dots of that colour are drawn
                assert any(t == NS + "circle" and f == r.get("fill") for t, f, _ in fills), where
        legend_diamond = any(p.find(NS + "title") is None and p.get("fill") == "white"
                             for p in root.iter(NS + "polygon"))
        assert legend_diamond == bool(diamonds), where
        assert ("hollow diamond" in caption) == bool(diamonds), where
        assert ("hollow diamond" in chart) <= bool(diamonds), where
        if "<polygon" in chart and f'fill="{svg.BAND}" stroke="none"' in chart:  # a shaded band is drawn ...
            assert f'fill="{svg.BAND}"/>' in chart  # ... and has its swatch


def css_px(rule: str, prop: str, css: str) -> list[float]:
    """The px numbers of `prop` in the first CSS rule whose selector is exactly `rule`."""
    m = re.search(r"(?m)^" + re.escape(rule) + r"\s*\{([^}]*)\}", css)
    assert m, rule
    d = re.search(r"(?:^|;)\s*" + re.escape(prop) + r"\s*:\s*([^;]*)", m.group(1))
    return [float(v) for v in re.findall(r"(-?[\d.]+)px", d.group(1))] if d else []


def rendered_chart_width(css: str, window: int = WINDOW, small: bool = False) -> float:
    """The width in px of a chart in the report at a `window` px wide window, from the stylesheet: main's width,
    the padding and border of a test's fold (the innermost box around its charts), the flex row of figures
    (as many of basis width as fit, grown to share the row, at most their max-width), the figure's padding and
    border."""
    main_max = css_px("main", "max-width", css)[0]
    main_pad = css_px("main", "padding", css)
    pad_x = main_pad[1] if len(main_pad) > 1 else main_pad[0]
    content = min(window, main_max) - 2 * pad_x
    fold = css_px("details.family", "padding", css) if "details.family" in css else []
    if fold and not small:
        content -= 2 * (fold[1] if len(fold) > 1 else fold[0]) + 2  # and its 1 px border
    gap = css_px(".charts", "gap", css)[0]
    rule = ".charts.small figure" if small else "figure"
    block = re.search(r"(?m)^" + re.escape(rule) + r"\s*\{([^}]*)\}", css)
    assert block, rule
    flex = re.search(r"flex\s*:\s*[\d.]+\s+[\d.]+\s+([\d.]+)px", block.group(1))
    assert flex, rule
    basis = float(flex.group(1))
    fig_max = css_px(rule, "max-width", css)[0]
    per_row = max(1, int((content + gap) // (basis + gap)))
    width = min(fig_max, (content - gap * (per_row - 1)) / per_row)
    pad = css_px("figure", "padding", css)[0]
    return width - 2 * pad - 2  # and the figure's 1 px border


def test_text_renders_at_11px_or_more_at_1280px(demo_charts):
    css = CSS.read_text(encoding="utf-8")
    for small in (False, True):
        px = rendered_chart_width(css, small=small)
        assert 400 < px < 720
        for where, chart, _ in demo_charts:
            w, _ = view_box(chart)
            smallest = min(size for _, _, size in text_boxes(chart))
            assert smallest * px / w >= MIN_PX, (where, small, smallest * px / w)


# ------------------------------------------------------------------ in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

MEASURE = """<script>
addEventListener('load', () => {
  const out = [];
  for (const s of document.querySelectorAll('svg.chart')) {
    const vb = s.viewBox.baseVal, w = s.getBoundingClientRect().width;
    const texts = [...s.querySelectorAll('text')].map(t => {
      const b = t.getBBox(), m = t.getCTM(), tm = s.getScreenCTM();
      const c = [[b.x, b.y], [b.x + b.width, b.y + b.height]].map(([x, y]) => {
        const p = s.createSVGPoint(); p.x = x; p.y = y; return p.matrixTransform(tm.inverse().multiply(t.getScreenCTM()));
      });
      return [t.textContent, Math.min(c[0].x, c[1].x), Math.min(c[0].y, c[1].y), Math.max(c[0].x, c[1].x),
              Math.max(c[0].y, c[1].y), parseFloat(t.getAttribute('font-size'))];
    });
    out.push({vb: vb.width, px: w, texts});
  }
  const pre = document.createElement('pre'); pre.id = 'measured'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def measure_in_chromium(html: str, tmp: Path) -> list[dict]:
    """Each chart of `html` as Chromium lays it out at a 1280 px window, every fold open: its rendered width, its
    viewBox width and each text's real box in user units."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    html = html.replace("<details", "<details open").replace("</body>", MEASURE + "</body>")
    page = tmp / "measure.html"
    page.write_text(html, encoding="utf-8")
    assert CHROMIUM is not None
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp / 'profile'}", f"--window-size={WINDOW},2000",
                        "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="measured">(.*?)</pre>', r.stdout, re.S)
    assert m, r.stderr[-2000:]
    import html as html_mod

    return json.loads(html_mod.unescape(m.group(1)))


@pytest.mark.slow  # two whole reports rendered and laid out by a browser: about 8 s
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_in_chromium_text_is_11px_and_no_real_boxes_overlap(demo_doc, tmp_path):
    """The demo's report and its long-name twin in headless Chromium at 1280 px: every chart text renders at
    11 px or more, and no two texts' real boxes overlap (0.5 unit of slack for antialiasing)."""
    for k, doc in enumerate((demo_doc, long_names(demo_doc))):
        where = tmp_path / f"d{k}"
        where.mkdir()
        charts = measure_in_chromium(render_html(doc), where)
        assert len(charts) >= 10
        for c in charts:
            scale = c["px"] / c["vb"]
            for t in c["texts"]:
                assert t[5] * scale >= MIN_PX, (t[0], t[5] * scale)
            boxes = c["texts"]
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    hit = a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5 and a[2] < b[4] - 0.5 and b[2] < a[4] - 0.5
                    assert not hit, (a[0], b[0])
            assert all(math.isfinite(v) for t in boxes for v in t[1:5])


_names = st.text(alphabet=st.sampled_from(list("abkxyz_+ 漢字WMi.-")), min_size=1, max_size=36)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subjects=st.lists(_names, min_size=1, max_size=8, unique=True),
       ps=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 5e-324, 1e-41, 1e-17, 1.0])), min_size=8,
                   max_size=8),
       scale=st.floats(1, 1e7))
def test_any_names_and_p_values_give_charts_without_overlap(subjects, ps, scale):
    """Names of any letters (wide ones, '+', spaces), p-values down to 0 and counts up to 10^7: every chart stays
    inside its box with no two texts overlapping."""
    entries = []
    for i, (s, p) in enumerate(zip(subjects, ps, strict=False)):
        tl = [[j + 1, j * (i % 3), round(j * 0.3, 4)] for j in range(6)]
        entries.append({"test": "dealer_jack", "subject": s, "n": scale + i, "observed": tl[-1][1],
                        "expected": tl[-1][2], "pvalue": p, "tier": "report" if i % 2 else "watch",
                        "detail": {"timeline": tl}})
    charts = [svg.evidence_chart("dealer_jack", entries, "deals", None), svg.qq_plot(entries)]
    charts += [svg.timeline(e) for e in entries]
    for chart in charts:
        if chart:
            assert overlaps(chart) == [] and outside(chart) == []
