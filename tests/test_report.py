"""The report (HTML, Markdown, terminal, JSON) built from the audit document: content, escaping, determinism."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from scipy.stats import beta

from auditor.errors import UsageError
from auditor.report import sentences, svg
from auditor.report import view as report_view
from auditor.report.html import render_html, write_report
from auditor.report.markdown import md_escape, render_markdown
from auditor.report.terminal import print_audit

sys.path.insert(0, str(Path(__file__).parent))
from test_report_data import EVIL, synthetic_doc  # noqa: E402


@pytest.fixture(scope="module")
def doc():
    return synthetic_doc(seed=7)


@pytest.fixture(scope="module")
def html_text(doc):
    return render_html(doc)


class _Collect(HTMLParser):
    """Every start tag with its attributes, and all text (entities decoded)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.ends: list[str] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self.ends.append(tag)

    def handle_endtag(self, tag):
        self.ends.append(tag)

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        self.comments.append(data)


def _parse(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    p.close()
    return p


def _assert_inert(parsed: _Collect, allowed: set[str]) -> None:
    names = {t for t, _ in parsed.tags}
    assert not names - allowed, f"unexpected elements: {sorted(names - allowed)}"
    for tag, attrs in parsed.tags:
        for k, val in attrs:
            assert not k.lower().startswith("on"), (tag, k, val)
            assert "javascript:" not in (val or "").lower(), (tag, k, val)
            if k.lower() in ("href", "src", "xlink:href"):
                pytest.fail(f"link or source in the report: {tag} {k}={val!r}")
    assert parsed.comments == []


HTML_ELEMENTS = {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "h3", "p", "section", "div",
                 "span", "strong", "table", "thead", "tbody", "tr", "th", "td", "code", "br", "dl", "dt", "dd",
                 "figure", "figcaption", "details", "summary", "footer", "ul", "li",
                 "svg", "rect", "line", "text", "polyline", "polygon", "circle", "desc"}


def test_html_log_strings_inject_nothing(doc, html_text):
    parsed = _parse(html_text)
    _assert_inert(parsed, HTML_ELEMENTS)
    # every <svg> closes where it should: as many ends as starts, and each chart is well-formed XML on its own
    starts = [t for t, _ in parsed.tags if t == "svg"]
    assert len(starts) == parsed.ends.count("svg") > 0
    chunks = html_text.split("<svg ")[1:]
    for chunk in chunks:
        ET.fromstring("<svg " + chunk[: chunk.index("</svg>") + len("</svg>")])
    # the hostile names are shown as text, character for character
    text = "".join(parsed.text)
    for name in EVIL:
        assert name in text
    assert sum(1 for t, _ in parsed.tags if t == "style") == 1
    # and the CSP forbids scripts and the network even if something slipped through
    csp = [dict(a) for t, a in parsed.tags if t == "meta" and dict(a).get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"] and "script" not in csp[0]["content"]


def test_html_is_self_contained(html_text):
    low = html_text.lower()
    for needle in ("<script", "<link", "<iframe", "<img", "@import", "url(", "http://", "https://"):
        if needle in ("http://",):
            # the SVG namespace is the only URL, and it is a name, not a fetch
            assert low.count("http://") == low.count('xmlns="http://www.w3.org/2000/svg"'), needle
            continue
        assert needle not in low.replace("&lt;script", ""), needle


def test_markdown_log_strings_inject_nothing(doc):
    from markdown_it import MarkdownIt

    md = render_markdown(doc)
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough").render(md)
    parsed = _parse(rendered)
    allowed = {"h1", "h2", "h3", "p", "strong", "em", "ul", "li", "blockquote", "table", "thead", "tbody", "tr",
               "th", "td", "code"}
    _assert_inert(parsed, allowed)
    text = "".join(parsed.text)
    for name in EVIL:
        assert name in text, name
    # table rows keep their column count although names contain '|'
    for line in md.splitlines():
        if line.startswith("| ") and "subject" not in line and "---" not in line:
            cells = [c for c in _split_md_row(line)]
            assert len(cells) in (3, 4, 8), line


def _split_md_row(line: str) -> list[str]:
    cells, cur, i = [], "", 1
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur += line[i: i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    return cells


def test_md_escape_neutralises_markup():
    assert md_escape("<b>") == "&lt;b&gt;"
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("[x](javascript:y)") == "\\[x\\](javascript:y)"
    assert md_escape("line\nbreak") == "line break"


def test_the_flag_sentence_reads_like_the_brief():
    e = {"test": "dealer_jack", "subject": "bob", "n": 812, "observed": 301, "expected": 255.1,
         "pvalue": 0.00031, "qvalue": 0.021, "detail": {"sd": 13.2}}
    assert sentences.result_sentence(e) == ("bob received the Jack of trumps in 301 of the 812 deals they dealt; "
                                            "an honest dealer would in about 255 ± 13; p = 0.0003, q = 0.02.")
    # without the detector's spread: the binomial spread at the average null rate
    e2 = dict(e, detail={})
    sd = math.sqrt(812 * (255.1 / 812) * (1 - 255.1 / 812))
    assert f"± {sd:.0f}" in sentences.result_sentence(e2)


# one entry per test, with the sentence each test's template gives (these are the sentences the report gave when
# they were written case by case in report/sentences.py, before the templates moved beside the detectors)
SENTENCES = [
    ({"test": "turnup_jack", "subject": "otto", "n": 66, "observed": 29, "expected": 5.4, "pvalue": 2e-15,
      "qvalue": 3e-13}, "otto turned up a Jack in 29 of the 66 turn-ups they made; an honest dealer would in about "
                        "5.4 ± 2.2; p = 2e-15, q = 3e-13."),
    ({"test": "deal_uniformity", "subject": "kate", "n": 119, "observed": 171.2, "expected": 40, "pvalue": 4e-5,
      "detail": {"cells": [{"rank": "J", "location": "dealer", "observed": 61, "expected": 17.1},
                           {"rank": "A", "location": "turnup", "observed": 3, "expected": 12}]}},
     "Over the 119 deals kate dealt, the trump honours landed on the seats around the dealer with a misfit of 171 "
     "(Pearson X², about 40 for a fair deal); p = 4e-05. Most of it: the trump Jack in the dealer's hand 61 times, "
     "where a fair deal gives about 17."),
    ({"test": "dealer_cutter", "subject": "ann+bob", "n": 40, "observed": 30, "expected": 21.5, "pvalue": 0.02},
     "When bob cut for ann, ann was dealt the Jack of trumps in 30 of 40 deals; a fair deal gives about 22 ± 3.2; "
     "p = 0.02."),
    ({"test": "partner_jack", "subject": "kate", "n": 250, "observed": 119, "expected": 62.5, "pvalue": 3e-15,
      "qvalue": 2e-13}, "kate dealt the Jack of trumps to a partner in 119 of the 250 partnership deals they dealt; "
                        "an honest dealer would in about 62 ± 6.8; p = 3e-15, q = 2e-13."),
    ({"test": "af_dealer_jack", "subject": "otto", "n": 150, "observed": 57, "expected": 17.6, "pvalue": 1e-14},
     "otto dealt themselves the Jack of the suit they turned up in 57 of the 150 deals they dealt; an honest dealer "
     "would in about 18 ± 3.9; p = 1e-14."),
    ({"test": "shuffle_residue", "subject": "bess", "n": 126, "observed": 200, "expected": 176, "pvalue": 0.006},
     "bess's deals kept 200 pairs of cards from the previous deal's tricks side by side over the 126 deals they "
     "dealt; the other dealers of the same tables would keep about 176; p = 0.006."),
    ({"test": "trick_stack", "subject": "lou", "n": 126, "observed": 550, "expected": 176, "pvalue": 2e-41},
     "lou's own hand held 550 pairs of cards from one trick of the previous deal over the 126 deals they dealt; "
     "the other dealers of the same tables would hold about 176; p = 2e-41."),
    ({"test": "marked_ten", "subject": "walt", "n": 84, "observed": 25.4, "expected": 8.3, "statistic": 3.51,
      "pvalue": 9e-5, "detail": {"decisions": 138}},
     "walt's play fitted the true place of the Ten of trumps with a score of 25.4 over 84 deals scored (138 "
     "decisions); for an honest player, whatever they could legally know, about 8.3 (z = 3.5); p = 9e-05."),
    ({"test": "marked_ten", "subject": "walt", "observed": 25.4, "expected": 8.3, "pvalue": 0.5},
     "walt's play fitted the true place of the Ten of trumps with a score of 25.4 over n/a deals scored; for an "
     "honest player, whatever they could legally know, about 8.3; p = 0.50."),  # needs no n
    ({"test": "collusion", "subject": "rosa+gus", "n": 126, "observed": 42, "expected": 5.7, "pvalue": 2e-28},
     "rosa gave a counting card to a trick gus was winning in 42 of the 126 deals where there was a chance to; "
     "players in the same situations would in about 5.7; p = 2e-28."),
    ({"test": "revoke_pattern", "subject": "ray", "n": 65, "observed": 51, "expected": 15, "pvalue": 8e-28},
     "51 of ray's 65 revokes paid (took the trick or kept a counting card); accidental revokes at the same moments "
     "would pay about 15 ± 3.4; p = 8e-28."),
    ({"test": "revoke_pattern", "subject": "ray", "observed": 51, "expected": 15, "pvalue": 0.3},
     "ray: 51 observed, about 15 expected; p = 0.30."),  # the template needs n: the plain sentence
    ({"test": "future_test", "subject": "al", "n": 10, "observed": 3, "expected": 1.5, "pvalue": 0.2,
      "detail": {"unit": "widgets"}}, "al: 3 widgets observed over 10 observations, about 1.5 expected; p = 0.20."),
    ({"test": "future_test", "subject": "al", "pvalue": 0.2}, "al: future test; p = 0.20."),
]


@pytest.mark.parametrize("entry,sentence", SENTENCES, ids=[f"{e['test']}-{i}" for i, (e, _) in enumerate(SENTENCES)])
def test_each_tests_sentence_comes_from_its_spec(entry, sentence):
    assert sentences.result_sentence(entry) == sentence


def test_every_registered_template_uses_only_the_documented_fields():
    import string

    from auditor.detectors.registry import SPECS

    allowed = set(sentences.SENTENCE_FIELDS) | set(sentences.WORD_FIELDS)
    for name, spec in SPECS.items():
        fields = {f for _, f, _, _ in string.Formatter().parse(spec.sentence) if f is not None}
        assert fields <= allowed, (name, fields - allowed)
        assert spec.sentence, name  # every registered test has its own sentence
        assert sentences.spec_of(name) is spec


def test_a_test_this_version_does_not_know_gets_a_plain_section():
    """A document from another version: an unknown test name (or a test that is not a string) gets a plain
    title, the plain sentence, the evidence chart and a section after every known test."""
    known = {"test": "dealer_jack", "subject": "kate", "n": 55, "observed": 37, "expected": 16, "pvalue": 3e-9,
             "qvalue": 1e-7, "tier": "report"}
    other = {"test": "zz_new_test", "subject": "kate+lou", "n": 30, "observed": 3, "expected": 1.5, "pvalue": 0.2,
             "tier": "watch"}  # on the watch list, with enough play (30 >= WATCH_MIN_UNITS): a section with charts
    odd = dict(other, test=7)
    spec = sentences.spec_of("zz_new_test")
    assert (spec.title, spec.unit, spec.chart, spec.subject) == ("Zz new test", "observations", "evidence", "player")
    assert sentences.spec_of(7).title == "7" and sentences.spec_of(["unhashable"]).title == "['unhashable']"
    view = report_view.build_view({"tests": [other, known], "flags": [known]})
    assert [f["test"] for f in view["families"]] == ["dealer_jack", "zz_new_test"]
    fam = view["families"][1]
    assert fam["title"] == "Zz new test" and fam["what"] == "The zz new test test."
    assert fam["rows"][0]["sentence"] == "kate+lou: 3 observed over 30 observations, about 1.5 expected; p = 0.20."
    assert fam["charts"] and fam["charts"][0]["caption"].startswith("Evidence against exposure")
    assert sentences.players_named([other]) == {"kate+lou"}  # not a pair test: the subject stays whole
    assert sentences.result_sentence(odd) == "kate+lou: 3 observed over 30 observations, about 1.5 expected; p = 0.20."


def test_the_sensitivity_sentence():
    e = {"test": "dealer_jack", "subject": "bob", "n": 212, "detail": {"min_detectable": 0.19}}
    assert sentences.sensitivity_sentence(e) == ("With 212 deals dealt, a stacking rate above 0.19 would have "
                                                 "been caught 4 times in 5.")
    e = {"test": "dealer_jack", "subject": "bob", "n": 12, "detail": {"min_detectable": None}}
    assert "even a cheat at full strength could have gone unflagged" in sentences.sensitivity_sentence(e)
    e = {"test": "dealer_jack", "subject": "bob", "n": 12, "detail": {}}
    assert "not computed" in sentences.sensitivity_sentence(e)
    e = {"test": "marked_ten", "subject": "al", "n": 400, "detail": {"min_detectable": {"rate": 0.5,
                                                                                          "power": 0.9}}}
    assert sentences.sensitivity_sentence(e).endswith("above 0.50 would have been caught 9 times in 10.")


def test_every_shown_subject_gets_its_sensitivity_and_every_family_its_size(doc, html_text):
    """Issue 16: a test with something to show lists its flags, its watch list and its most unusual others (each
    with the smallest cheat its play could reveal) and says how many more the JSON holds; a test with nothing to
    show is one line."""
    text = "".join(_parse(html_text).text)
    view = report_view.build_view(doc, charts=False)
    by_test: dict[str, list[dict]] = {}
    for e in doc["tests"]:
        by_test.setdefault(e["test"], []).append(e)
    views = {fv["test"]: fv for fv in view["families"]}
    for fam in doc["families"]:
        fv = views[fam["test"]]
        entries = sorted(by_test[fam["test"]], key=report_view._sort_key_p)
        if fv["quiet"]:
            assert fam["flagged"] == 0 and f"{fv['title']} ({fv['size']} {fv['subject_kind']}" in text
            assert sentences.family_sentence(fam, fam["flagged"], fam["watch"]) not in text
            continue
        assert sentences.family_sentence(fam, fam["flagged"], fam["watch"]) in text
        shown = entries[:len(fv["rows"])]
        assert len(shown) >= min(len(entries), report_view.ROWS_SHOWN)
        assert all(e["tier"] == "clear" for e in entries[len(shown):])  # every flag and watch row is shown
        for e in shown:
            assert sentences.sensitivity_sentence(e) in text
        if len(entries) > len(shown):
            assert f"{len(entries) - len(shown)} more {fv['subject_kind']}, none flagged" in text
    assert sentences.MONTHLY_NOTE in text
    assert "Not flagged is not clean." in text
    # the verdict comes first: the flags' sentences appear before the replay section and before the test tables
    first_table = text.index("Dealers who receive the Jack of trumps — ")  # the test's folded section
    people = text.index("Who is flagged, and why")
    for f in doc["flags"]:
        assert people < text.index(sentences.result_sentence(f)) < first_table
    for p in view["people"]:  # issue 16: one paragraph per person, before the evidence
        assert people < text.index(p["paragraph"]) < text.index("The evidence, flag by flag")
    assert text.index("The evidence, flag by flag") < text.index("What the replay of the logs found")
    assert text.index("What the replay of the logs found") < text.index("Glossary") < text.index("Reproducibility")


def test_replay_findings_with_their_locations(doc, html_text):
    text = "".join(_parse(html_text).text)
    for f in doc["replay"]["findings"]:
        assert f["source"] in text and f["message"] in text
    assert "game g<1>, deal 3, trick 5" in text


def test_charts_one_per_test_plus_qq_and_timelines(doc, html_text):
    view = report_view.build_view(doc)
    for fam in view["families"]:  # the main chart and the QQ plot of each test with something to show
        assert len(fam["charts"]) == (0 if fam["quiet"] else 2), fam["test"]
    assert len(view["timelines"]) == len(doc["flags"])
    for t, f in zip(view["timelines"], doc["flags"], strict=True):
        # a timeline for every flag whose detector recorded one (this synthetic document gives its marked_ten
        # entries none, as a document from before they had one: a note instead)
        assert bool(t["svg"]) == bool(f["detail"].get("timeline")), t["subject"]
    assert any(t["svg"] for t in view["timelines"])
    n_svg = html_text.count("<svg ")
    assert n_svg == sum(len(f["charts"]) for f in view["families"]) + sum(1 for t in view["timelines"] if t["svg"])
    if not all(t["svg"] for t in view["timelines"]):
        assert "These flags have no timeline here" in html_text


def _band_polygon(chart: str) -> list[tuple[float, float]]:
    import re

    m = re.search(r'<polygon points="([^"]*)" fill="' + svg.BAND + '"', chart)
    if m is None:
        return []
    return [tuple(float(v) for v in xy.split(",")) for xy in m.group(1).split()]


def test_timeline_band_from_each_points_null_variance():
    """Points [index, observed, expected, variance so far] (marked_ten, collusion, revoke_pattern) draw the honest
    range as ±2 sd of each point's own variance, even where the test has no count-based sd (marked_ten)."""
    entry = {"test": "marked_ten", "subject": "ada", "tier": "report", "n": 3, "observed": 6.0, "expected": 0.5}
    three = [[1, 2.0, 0.1], [2, 4.0, 0.3], [3, 6.0, 0.5]]
    four = [p + [v] for p, v in zip(three, (1.0, 2.0, 4.0), strict=True)]
    plain = svg.timeline(entry | {"detail": {"timeline": three}})
    banded = svg.timeline(entry | {"detail": {"timeline": four}})
    for chart in (plain, banded):
        ET.fromstring(chart)
        assert "ada: cumulative excess, marked ten" in chart
    assert not _band_polygon(plain) and "honest range" not in plain
    poly = _band_polygon(banded)
    assert len(poly) == 6 and "honest range" in banded
    upper, lower = poly[:3], poly[3:][::-1]
    zero = [(u[1] + lo[1]) / 2 for u, lo in zip(upper, lower, strict=True)]  # symmetric about the zero line
    assert max(zero) - min(zero) <= 0.11  # coordinates are printed to 0.1 pixel
    half = [(lo[1] - u[1]) / 2 for u, lo in zip(upper, lower, strict=True)]  # 2 sd in pixels: 2, 2 sqrt 2, 4 in data units
    assert half[0] > 20
    assert half[1] / half[0] == pytest.approx(np.sqrt(2), rel=1e-2)
    assert half[2] / half[0] == pytest.approx(2.0, rel=1e-2)
    # a variance missing on any point falls back to the count-based band (none for marked_ten)
    mixed = four[:2] + [three[2]]
    assert not _band_polygon(svg.timeline(entry | {"detail": {"timeline": mixed}}))


def test_funnel_colours_points_by_the_exact_limits(doc):
    entries = [e for e in doc["tests"] if e["test"] == "dealer_jack"]
    chart = svg.funnel("dealer_jack", entries)
    root = ET.fromstring(chart)
    ns = "{http://www.w3.org/2000/svg}"
    titles = [(c.find(ns + "title").text, c.get("stroke")) for c in root.iter(ns + "circle")]
    assert len(titles) == len(entries)
    colours = {}
    for e in entries:
        (colour,) = [col for t, col in titles if t.startswith(e["subject"] + ": ")]
        colours[e["subject"]] = colour
    for e in entries:
        lim = e["detail"]["funnel"]["limits"]
        expect = svg.RED if e["observed"] > lim["99.8"][1] else svg.AMBER if e["observed"] > lim["95"][1] \
            else svg.BLUE
        assert colours[e["subject"]] == expect, e["subject"]
    assert colours["p29"] == svg.RED  # the planted stacker is beyond the 99.8% limit


def test_qq_band_has_its_coverage():
    """The QQ plot's band is pointwise: each order statistic of m honest (uniform) p-values falls inside its band
    95% of the time. Checked on 4,000 seeded families of 50."""
    m, reps = 50, 4000
    rng = np.random.default_rng(20240611)
    u = np.sort(rng.random((reps, m)), axis=1)
    i = np.arange(1, m + 1)
    lo, hi = beta.ppf(0.025, i, m - i + 1), beta.ppf(0.975, i, m - i + 1)
    inside = ((u >= lo) & (u <= hi)).mean(axis=0)
    se = math.sqrt(0.95 * 0.05 / reps)
    assert np.all(np.abs(inside - 0.95) < 4.5 * se), inside
    # and the chart draws exactly these limits: its band polygon spans -log10 of them
    entries = [{"subject": f"s{k}", "pvalue": float(p), "tier": "clear"} for k, p in enumerate(u[0])]
    chart = svg.qq_plot(entries)
    assert chart.count("<polygon") == 1 and chart.count("<circle") == m


def test_deterministic_bytes_across_processes(doc, tmp_path):
    """Same document, fresh interpreters with different hash seeds: byte-identical HTML and Markdown."""
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    code = ("import json,sys; from auditor.report.html import write_report; "
            "d=json.load(open(sys.argv[1])); write_report(d, sys.argv[2]); write_report(d, sys.argv[3]); "
            "write_report(d, sys.argv[4])")
    outs = []
    for seed in ("1", "2"):
        paths = [tmp_path / f"r{seed}.html", tmp_path / f"r{seed}.md", tmp_path / f"r{seed}.json"]
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-c", code, str(src)] + [str(p) for p in paths], check=True, env=env)
        outs.append([p.read_bytes() for p in paths])
    assert outs[0] == outs[1]
    assert json.loads(outs[0][2]) == doc
    assert outs[0][0] == render_html(json.loads(src.read_text())).encode("utf-8")


def test_write_report_chooses_by_suffix(doc, tmp_path):
    assert write_report(doc, tmp_path / "a.HTML").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert write_report(doc, tmp_path / "a.md").read_text(encoding="utf-8").startswith("# Fair-play audit")
    assert json.loads((write_report(doc, tmp_path / "a.json")).read_text(encoding="utf-8")) == doc
    with pytest.raises(UsageError, match=r"\.html, \.md or \.json"):
        write_report(doc, tmp_path / "a.pdf")
    with pytest.raises(UsageError, match="cannot write"):
        write_report(doc, tmp_path / "no" / "such" / "dir" / "a.html")


def test_terminal_summary_escapes_and_tells_the_verdict(doc):
    buf = io.StringIO()
    print_audit(doc, Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    k = len(doc["flags"])
    assert k >= 2 and out.startswith(f"{k} flags naming {len({f['subject'] for f in doc['flags']})} players")
    for f in doc["flags"]:
        assert f["subject"] in out
    assert "Test families" in out and "dealer_jack" in out


def test_the_headline_counts_players_and_splits_pairs():
    flags = [{"test": "collusion", "subject": "gus+rosa"}, {"test": "collusion", "subject": "rosa+gus"},
             {"test": "dealer_jack", "subject": "kate"}, {"test": "deal_uniformity", "subject": "kate"},
             {"test": "dealer_jack", "subject": "a+b"}]  # a name with '+' in a one-player test stays whole
    view = report_view.build_view({"tests": flags, "flags": flags}, charts=False)
    assert view["headline"].startswith("5 flags naming 4 players: a+b, gus, kate, rosa")


def test_a_clean_audit_says_so_plainly():
    doc = synthetic_doc(seed=3, evil=False, stacker_q=0.0, with_findings=False)
    doc["flags"] = []
    for e in doc["tests"]:
        e["flagged"], e["tier"] = False, "clear"
    html = render_html(doc)
    text = "".join(_parse(html).text)
    assert "No one is flagged among 12,345 deals audited; the logs replay without irregularities." in text
    assert "Not flagged is not clean." in text
    assert "Watch list" not in text and "How each flag built up" not in text


_num = st.one_of(st.none(), st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=5), st.booleans())
_any = st.recursive(st.one_of(_num, st.text(max_size=8)),
                    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=6), c,
                                                                                 max_size=4)), max_leaves=12)
_entry = st.fixed_dictionaries(
    {"test": st.sampled_from(["dealer_jack", "turnup_jack", "marked_ten", "collusion", "weird_new_test"]),
     "subject": st.text(max_size=12)},
    optional={"n": _num, "observed": _num, "expected": _num, "statistic": _num, "pvalue": _num, "qvalue": _num,
              "flagged": st.booleans(), "tier": st.sampled_from(["report", "watch", "clear", "odd"]),
              "method": _num, "controls": _any,
              "detail": st.one_of(_any, st.fixed_dictionaries({}, optional={
                  "timeline": st.lists(st.lists(_num, max_size=4), max_size=6), "min_detectable": _any,
                  "sd": _num, "funnel": _any}))})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(_entry, max_size=6), families=st.lists(
    st.fixed_dictionaries({"test": st.text(max_size=10)}, optional={"tests": _num, "fdr": _num}), max_size=3),
    repro=st.one_of(st.none(), _any, st.fixed_dictionaries({}, optional={  # issue 16: the reproducibility block
        "inputs": _any, "rules_presets": _any, "fdr": _num, "command": _any, "seed": _num})),
    audit=st.one_of(st.none(), st.fixed_dictionaries({}, optional={"level": _num, "tests": _num})))
def test_missing_or_odd_fields_never_crash(entries, families, repro, audit):
    flags = [e for e in entries if e.get("flagged")]
    doc = {"deals": 3, "games": 1, "seed": None, "families": families, "tests": entries, "flags": flags,
           "replay": {"findings": [{"code": "revoke", "message": None}, "junk"]}}
    if repro is not None:
        doc["reproducibility"] = repro
    if audit is not None:
        doc["audit"] = audit
    html = render_html(doc)
    _assert_inert(_parse(html), HTML_ELEMENTS)
    render_markdown(doc)
    print_audit(doc, Console(file=io.StringIO(), width=120))


@pytest.mark.parametrize("stat", [5e-324, -5e-324, 1e-310, 1e300, -1e308])
def test_a_score_at_the_floats_edge_renders(stat):
    """A test whose statistic is the smallest subnormal made the score chart's axis a span of 5e-324, whose tick
    step underflowed to 0 (`nice_ticks`: a math domain error, a traceback from the report); the case hypothesis
    found above, and its neighbours at both edges of the floats, render in every form."""
    doc = {"deals": 3, "games": 1, "seed": None, "families": [], "flags": [],
           "tests": [{"test": "marked_ten", "subject": "", "expected": None, "n": 0, "statistic": stat,
                      "observed": None, "tier": "report"}]}
    html = render_html(doc)
    _assert_inert(_parse(html), HTML_ELEMENTS)
    render_markdown(doc)
    print_audit(doc, Console(file=io.StringIO(), width=120))


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 5e-324), (0.0, 1e-320), (1e10, 1e10 + 1e-5), (-1e308, 1e308),
                                        (1e300, 1.0000001e300), (0.0, 1.0), (-3.0, 7.0)])
def test_nice_ticks_ends_and_stays_in_range(lo, hi):
    """`nice_ticks` returns at most a few ticks, never raises and never loops, whatever the span; a span the floats
    can step through gets round ticks inside it."""
    got = svg.nice_ticks(lo, hi, 5)
    assert 1 <= len(got) <= 12 and all(math.isfinite(t) for t in got)
    if hi - lo >= 1.0:
        inside = [t for t in got if lo <= t <= hi]
        assert len(inside) >= 3


def test_an_empty_document_renders():
    for d in ({}, {"tests": None, "flags": "x", "replay": []}):  # issue 12: nothing audited is not all clear
        assert "Nothing was audited" in render_html(d) and "No one is flagged" not in render_html(d)
        assert "Nothing was audited" in render_markdown(d) and "No one is flagged" not in render_markdown(d)


class _Counted:
    """A streamed entry (`DocEntries` item): each `to_json()` is counted, as a decode of a packed test or a
    finding read back from a part's file would cost."""

    calls = 0

    def __init__(self, d: dict) -> None:
        self.d = d

    def to_json(self) -> dict:
        type(self).calls += 1
        return json.loads(json.dumps(self.d))


def test_a_report_and_the_terminal_summary_read_streamed_tests_and_findings_once(doc):
    """issue 15: `audit --out report.html` made two views, each reading the streamed tests twice, and the findings
    were read again by the coverage, the count by code and the pretty-printing hint (8 passes over them). Now one
    view serves the report and the summary, the tests are decoded once, the findings digested once; the report,
    the summary and the coverage are those of the held document."""
    from auditor.replay.result import DocEntries
    from auditor.report.verdict import Coverage, findings_digest

    extra = [
        {"code": "bad_record", "source": "a.jsonl:3", "message": "not valid JSON (line 3): this file looks like "
                                                                  "pretty-printed JSON; write one record per line"},
        {"code": "bad_record", "source": "b.parquet", "message": "cannot open: not a Parquet file"},
        {"code": "bad_record", "source": "a.jsonl:9", "message": "not UTF-8 text"},
        {"code": "bad_record", "source": "a.jsonl:12", "message": "unreadable after line 11: truncated gzip"},
        {"code": "revoke", "source": "a.jsonl:20", "message": "ted played Ts"},
        {"source": "a.jsonl:21", "message": "no code at all"},
    ]
    findings = list(doc["replay"]["findings"]) + extra * 20
    tests = json.loads(json.dumps(doc["tests"]))
    n_limits = 0
    for e in tests:  # what the view reads of every test's detail, in shapes the synthetic document lacks
        d = e["detail"]
        if "min_detectable" in d:
            d["min_detectable_power"] = 0.9
        if isinstance(d.get("funnel"), dict) and "limits" in d["funnel"]:
            lo, hi = d.pop("funnel")["limits"]["95"]
            d["limits_95"] = [lo, lo + (hi - lo) / 4]  # narrower than the binomial's: more amber dots
            n_limits += 1
    assert n_limits >= 10
    base = dict(doc, tests=tests, flags=[e for e in tests if e.get("flagged")])
    held = dict(base, replay=dict(doc["replay"], findings=findings))
    _Counted.calls = 0
    streamed = dict(base, tests=DocEntries([_Counted(t) for t in tests]),
                    replay=dict(doc["replay"], findings=DocEntries([_Counted(f) for f in findings])))

    d = findings_digest(findings)  # against the plain count of each
    codes: dict[str, int] = {}
    for f in findings:
        codes[str(f.get("code", "?"))] = codes.get(str(f.get("code", "?")), 0) + 1
    assert dict(d.by_code) == codes and d.n_entries == len(findings) and codes["?"] == 20
    from auditor.report.verdict import reason_of

    bad = [f for f in findings if f.get("code") == "bad_record"]
    unread: dict[str, int] = {}
    for f in bad:
        unread[reason_of(f["source"], f["message"])] = unread.get(reason_of(f["source"], f["message"]), 0) + 1
    assert dict(d.unread) == unread and all(unread[r] >= 20 for r in ("json", "file", "utf8", "cut"))
    assert d.first == f"{bad[0]['source']}: {bad[0]['message']}"
    assert d.hints == ("a.jsonl:3: this file looks like pretty-printed JSON; write one record per line",) * 20

    view = report_view.build_view(streamed)
    html = render_html(streamed, view)
    out_s, out_h = io.StringIO(), io.StringIO()
    print_audit(streamed, Console(file=out_s, width=160, color_system=None), view=view)
    cov = Coverage.of_doc(streamed)
    n_shown = min(len(findings), report_view.MAX_FINDINGS_SHOWN)  # the report lists the first ones
    # decoded again, whole: the rows shown, and the entries of each family whose charts are drawn
    n_whole = sum(len(f["rows"]) + (0 if f["quiet"] else f["n_subjects"]) for f in view["families"]) \
        + len(view["watch"])
    assert 0 < n_whole < 2 * len(tests)
    assert _Counted.calls == len(tests) + n_whole + len(findings) + n_shown
    assert html == render_html(held)
    print_audit(held, Console(file=out_h, width=160, color_system=None))
    assert out_s.getvalue() == out_h.getvalue() and "pretty-printed JSON" in out_h.getvalue()
    assert cov == Coverage.of_doc(held) and cov.not_read == len(bad)
    assert render_markdown(streamed) == render_markdown(held)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["", "a", "p07", "x" * 40]),
                          st.one_of(st.just(0.0), st.just(1.0), st.floats(0, 1), st.just(None), st.just(float("nan"))),
                          st.sampled_from(["clear", "watch", "report"]),
                          st.one_of(st.none(), st.floats(0, 1))), min_size=1, max_size=60))
def test_no_qq_point_is_drawn_in_fewer_characters_than_the_bound(rows):
    """`svg.charts_surely_over` leaves a family's charts undrawn when its QQ plot alone would pass the report's
    limit: each point with a p-value in [0, 1] takes at least QQ_POINT_CHARS characters, whatever its subject,
    tier and values (the shortest names, p = 0 drawn at the top, no q)."""
    entries = [{"test": "collusion", "subject": s, "pvalue": p, "tier": t, "qvalue": q, "flagged": t == "report"}
               for s, p, t, q in rows]
    m = sum(1 for e in entries if e["pvalue"] is not None and 0 <= e["pvalue"] <= 1)
    text = svg.qq_plot(entries)
    assert len(text) >= svg.QQ_POINT_CHARS * m
    assert not svg.charts_surely_over(entries, len(text))  # never claims more than the plot itself
    # what the view skips is the family's charts, of which the QQ plot is one: they are at least as long
    drawn = sum(len(c["svg"]) for c in svg.charts_for_family("collusion", entries))
    assert not svg.charts_surely_over(entries, drawn)


def test_a_family_too_large_to_chart_is_not_drawn_and_says_so_as_before(doc):
    """A family whose QQ plot alone passes FAMILY_CHARTS_MAX gets the same note and no charts, drawn or not."""
    from auditor.report.view import FAMILY_CHARTS_MAX

    base = [e for e in doc["tests"] if e["test"] == "dealer_jack"][0]
    m = FAMILY_CHARTS_MAX // svg.QQ_POINT_CHARS + 1
    rng = np.random.default_rng(3)
    many = [dict(base, subject=f"d{i:05d}", pvalue=float(rng.random()), tier="clear", flagged=False)
            for i in range(m)]
    many[0] = dict(many[0], tier="report", flagged=True, pvalue=1e-9)
    big = dict(doc, tests=many + [e for e in doc["tests"] if e["test"] != "dealer_jack"],
               flags=[many[0]] + [f for f in doc["flags"] if f["test"] != "dealer_jack"])
    assert svg.charts_surely_over(many, FAMILY_CHARTS_MAX)
    drawn = svg.charts_for_family("dealer_jack", many)
    assert sum(len(c["svg"]) for c in drawn) > FAMILY_CHARTS_MAX  # what the view would have drawn, then dropped
    fam = [f for f in report_view.build_view(big)["families"] if f["test"] == "dealer_jack"][0]
    assert fam["charts"] == [] and "too many to read" in fam["charts_note"] and "charts_over" not in fam
