"""What a fair-play team sees of an alarm (issue 17): one self-contained HTML page per alarmed stream (the
subject's evidence over the looks with his threshold, the looks and the deals that moved it most), written into
the state folder's `alarms/`, and the daily summary line (`core.summary_line`).

The page is the report's kind of page: a jinja2 template under autoescape (`report/templates/monitor_alarm.html`),
an SVG chart drawn here with every string escaped (`report.svg.esc`), no script, no network, and the whole page
through `textsafe.visible` so that no control character from a log reaches a reader. Same state, same bytes.
"""

from __future__ import annotations

import math
import re
import zlib
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..atomic import write_text
from ..detectors.registry import SPECS
from ..report.html import environment
from ..report.svg import AMBER, BLUE, GRID, INK, MUTED, RED, esc, nice_ticks
from ..textsafe import visible
from .core import stream_entry

W, H = 680, 360
ML, MR, MT, MB = 64, 24, 40, 48
TOP_LOOKS = 10
TOP_DEALS = 12
# what the alarm is about, as a sentence's verb phrase after the subject's name
EVENT_WORDS = {"dealer_jack": "received the Jack of trumps as dealer", "turnup_jack": "turned up a Jack as dealer",
               "revoke_pattern": "revoked when a revoke paid", "marked_ten": "played to the Ten's true place"}
TRIAL_WORDS = {"dealer_jack": "deals dealt", "turnup_jack": "first turn-ups", "revoke_pattern": "revokes",
               "marked_ten": "scored deals"}


def page_name(test: str, subject: str) -> str:
    """A file name for the page: the test, the subject's safe characters, and a hash of the exact name."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", subject)[:40].strip(".") or "subject"
    return f"{test}--{safe}-{zlib.crc32(subject.encode('utf-8')):08x}.html"


def evidence_svg(history: list[list], threshold_log10: float, alarm_look: int | None,
                 x_label: str = "trials") -> str:
    """log10 E after each look the subject played in, against the trials so far, with the threshold."""
    pts = [(float(h[2]), float(h[1]) / math.log(10), int(h[0])) for h in history]
    if not pts:
        return ""
    x_hi = max(p[0] for p in pts) or 1.0
    y_lo = min(min(p[1] for p in pts), 0.0)
    y_hi = max(max(p[1] for p in pts), threshold_log10) * 1.08 + 0.1

    def X(x: float) -> float:
        return ML + (W - ML - MR) * x / x_hi

    def Y(y: float) -> float:
        return MT + (H - MT - MB) * (1 - (y - y_lo) / (y_hi - y_lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'role="img" aria-label="evidence over time">',
           f'<text x="{ML}" y="22" fill="{INK}" font-size="14">Evidence (log10 E) after each look he played in, '
           f'against his {esc(x_label)} so far</text>']
    for t in nice_ticks(y_lo, y_hi):
        out.append(f'<line x1="{ML}" x2="{W - MR}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="{GRID}"/>'
                   f'<text x="{ML - 6}" y="{Y(t) + 4:.1f}" text-anchor="end" font-size="11" fill="{MUTED}">'
                   f'{t:g}</text>')
    for t in nice_ticks(0, x_hi):
        out.append(f'<text x="{X(t):.1f}" y="{H - MB + 18}" text-anchor="middle" font-size="11" '
                   f'fill="{MUTED}">{t:g}</text>')
    out.append(f'<text x="{(ML + W - MR) / 2:.0f}" y="{H - 10}" text-anchor="middle" font-size="12" '
               f'fill="{INK}">{esc(x_label)} so far</text>')
    ty = Y(threshold_log10)
    out.append(f'<line x1="{ML}" x2="{W - MR}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{RED}" stroke-dasharray="6 4"/>'
               f'<text x="{W - MR}" y="{ty - 6:.1f}" text-anchor="end" font-size="11" fill="{RED}">alarm threshold '
               f'1/(level x weight) = 10^{threshold_log10:.2f}</text>')
    line = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y, _ in [(0.0, 0.0, 0)] + pts)
    out.append(f'<polyline points="{line}" fill="none" stroke="{BLUE}" stroke-width="2"/>')
    for x, y, lk in pts:
        color = AMBER if lk == alarm_look else BLUE
        r = 4.5 if lk == alarm_look else 2.2
        out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="{r}" fill="{color}"><title>look {lk}: '
                   f'log10 E = {y:.2f} after {x:g} trials</title></circle>')
    out.append("</svg>")
    return "\n".join(out)


def alarm_view(state: dict[str, Any], test: str, subject: str) -> dict[str, Any]:
    entry = state["streams"][test][subject]
    level = float(state["level"])
    e = stream_entry(test, subject, entry, level)
    hist = entry["history"]
    looks = {int(lk["look"]): lk for lk in state["looks"]}
    moved: list[dict[str, Any]] = []
    prev = 0.0
    for h in hist:
        moved.append({"look": int(h[0]), "change": (float(h[1]) - prev) / math.log(10), "log10_e": float(h[1]) /
                      math.log(10), "trials": int(h[2]), "events": float(h[3]) if test == "marked_ten" else int(h[3]),
                      "date": (looks.get(int(h[0]), {}).get("last_deal_time") or "")[:10]})
        prev = float(h[1])
    top = sorted(moved, key=lambda m: (-float(m["change"]), int(m["look"])))[:TOP_LOOKS]
    deals = sorted(entry.get("events", []), key=lambda d: (-d["log_lr"], d["look"], d["table"], d["game_id"],
                                                           d["deal_no"]))[:TOP_DEALS]
    spec = SPECS.get(test)
    thr10 = math.log10(e["threshold"])
    alarm = entry["alarm"]
    return {"test": test, "subject": subject, "title": spec.title if spec else test,
            "event": EVENT_WORDS.get(test, spec.event if spec else "had the event"),
            "trials_word": TRIAL_WORDS.get(test, "trials"), "score": test == "marked_ten", "entry": e, "alarm": alarm, "level": level,
            "threshold_log10": thr10, "looks_moved": top, "deals": deals,
            "chart": Markup(evidence_svg(hist, thr10, alarm["look"] if alarm else None, TRIAL_WORDS.get(test, "trials"))),
            "looks": len(state["looks"])}


def render_alarm(state: dict[str, Any], test: str, subject: str) -> str:
    html = environment().get_template("monitor_alarm.html").render(v=alarm_view(state, test, subject))
    return visible(html, keep="\n\t")


def write_alarm_pages(state: dict[str, Any], folder: str | Path) -> list[Path]:
    """Every alarmed stream's page in `folder`/alarms/ (re-written each look: the evidence goes on)."""
    out = []
    d = Path(folder) / "alarms"
    for test in sorted(state["streams"]):
        for subject, entry in sorted(state["streams"][test].items()):
            if entry["alarm"] is None:
                continue
            d.mkdir(parents=True, exist_ok=True)
            path = d / page_name(test, subject)
            write_text(path, render_alarm(state, test, subject))
            out.append(path)
    return out
