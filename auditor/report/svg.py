"""Charts as inline SVG strings, written by hand: no plotting library, no script, no external reference.

Every string that reaches the SVG (player names in labels and tooltips) goes through `esc`, so a name such as
``</svg><script>`` is text, never markup. Coordinates are printed with fixed decimals and nothing depends on a
clock or a random draw, so the same input gives the same bytes.

Charts:
- `funnel`: the dealers' rate of the event (observed / expected, 1 = honest) against deals dealt, with the 95% and
  99.8% limits around the null; points are coloured by the detector's exact limits when it gives them.
- `score_chart`: a score against exposure, with each subject's controls beside it (marked Ten).
- `evidence_chart`: the strength of evidence (−log10 p) against exposure, with controls (other tests).
- `qq_plot`: the p-values of a whole family against the uniform, with a 95% band.
- `timeline`: the statistic that gave one result, as it built up: a count's cumulative excess (observed − expected
  so far) over the subject's deals, or, for a misfit over cells (Pearson X², `deal_uniformity`), how the cells add
  up to it (`misfit_chart`: the document keeps no running X² over the deals).

Honest charts (issue 16): an axis never clips a value silently — the evidence axes take their top from the data,
and where one or two values are far above the rest the axis is broken (two slanted strokes and a note saying from
where to where it skips); a value beyond any axis (p = 0 as stored) is drawn as a triangle at the top with a note.
The legend lists the marks actually drawn, each with the mark itself. Text labels are placed so that no two overlap
(greedy: beside the point, else displaced up or down with a leader line, else named in a note under the chart).
Text is at least `FONT` user units, and the viewBox is about as wide as the report draws a chart at a 1280 px
window, so text renders at 11 px or more (tests/test_report_charts.py).
"""

from __future__ import annotations

import html
import math
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from .sentences import control_items, fmt_p, null_sd, spec_of
from .values import finite as _fin  # one reading of "a finite number" for text and charts

W = 520  # viewBox width: about the chart's width in the report at a 1280 px window (two charts a row), so 1 unit ≈ 1 px
PH = 240  # height of the plotting area
MR = 14  # right margin
FONT = 12.5  # every text but the title, in user units (≥ 11 px as the report draws it: tests/test_report_charts.py)
TITLE_FONT = 14.5
EM = 0.62  # estimated advance of a character, in font sizes (DejaVu/Segoe digits 0.64, lower case about 0.55)
EM_BOLD = 0.68
PAD = 8  # outer padding
LINE = FONT * 1.4  # line pitch of notes and legend rows

INK = "#1f2933"
GRID = "#e4e7eb"
MUTED = "#7b8794"
RED = "#c62828"
AMBER = "#d98c00"
BLUE = "#1565c0"
GREEN = "#2e7d32"
BAND = "#dbe7f5"


def esc(text: Any) -> str:
    """Escape for SVG/HTML text and double-quoted attributes."""
    return html.escape(str(text), quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}"


def text_width(text: str, size: float = FONT, bold: bool = False) -> float:
    """Estimated width of `text` in user units: a uniform advance per character, on the wide side, and a whole
    font size for a wide (East Asian) character."""
    wide = sum(1 for ch in text if unicodedata.east_asian_width(ch) in "WF")
    return ((len(text) - wide) * (EM_BOLD if bold else EM) + wide * 1.05) * size


class Box(NamedTuple):
    x0: float
    y0: float
    x1: float
    y1: float

    def hits(self, other: "Box", pad: float = 0.0) -> bool:
        return (self.x0 < other.x1 + pad and other.x0 < self.x1 + pad and self.y0 < other.y1 + pad
                and other.y0 < self.y1 + pad)

    def inside(self, other: "Box") -> bool:
        return self.x0 >= other.x0 and self.x1 <= other.x1 and self.y0 >= other.y0 and self.y1 <= other.y1


def text_box(x: float, y: float, text: str, size: float = FONT, anchor: str = "start", bold: bool = False) -> Box:
    """The estimated box of a text drawn at baseline (x, y): ascent 0.8, descent 0.25 of the font size."""
    w = text_width(text, size, bold)
    x0 = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
    return Box(x0, y - 0.8 * size, x0 + w, y + 0.25 * size)


def _text(x: float, y: float, text: str, size: float = FONT, color: str = INK, anchor: str = "start",
          bold: bool = False, extra: str = "") -> str:
    a = "" if anchor == "start" else f' text-anchor="{anchor}"'
    b = ' font-weight="600"' if bold else ""
    return (f'<text x="{_f(x)}" y="{_f(y)}"{a} font-size="{size:g}"{b} fill="{color}"{extra}>'
            f"{esc(text)}</text>")


def wrap(text: str, width: float, size: float = FONT, bold: bool = False) -> list[str]:
    """`text` in lines of at most `width` user units (a word longer than a line is cut with an ellipsis)."""
    lines: list[str] = []
    cur = ""
    for word in str(text).split():
        if text_width(word, size, bold) > width:
            word = word[: max(3, int(width // (size * EM)))]  # no line holds more characters than this
        while len(word) > 2 and text_width(word, size, bold) > width:
            word = word[:-2] + "…"
        if cur and text_width(f"{cur} {word}", size, bold) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    if cur:
        lines.append(cur)
    return lines or [""]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` round values from lo to hi; [lo] alone for a range too narrow or too wide for the floats to
    step through (a document's hostile numbers: a span of 5e-324 made the step 0, and log10 of it failed with a
    traceback; a span far below the last place of lo would never have advanced)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    if not math.isfinite(raw):  # a span wider than the largest float: in two halves
        raw = hi / max(1, count) - lo / max(1, count)
    if not (math.isfinite(raw) and raw > 0):
        return [lo]
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    if not (math.isfinite(start) and start + step > start):
        return [lo]
    out: list[float] = []
    v = start
    while v <= hi + step * 1e-9 and len(out) <= 2 * max(1, count) + 2:
        out.append(round(v, 10))
        v += step
    return out


def _tick_label(v: float) -> str:
    if abs(v - round(v)) < 1e-9 and abs(v) < 1e15:
        return f"{int(round(v)):,}"
    return f"{v:.3g}"


def _widen(lo: float, hi: float) -> float:
    """`hi`, or a larger value when the range is empty; the step grows with |lo| so that lo + step > lo even
    where adding 1 is lost to rounding (lo = -1e16)."""
    if hi > lo:
        return hi
    return lo + max(1.0, abs(lo) * 1e-9)


@dataclass
class _Label:
    x: float
    y: float
    text: str
    color: str
    rank: int  # placed in this order (0 first)


LEGEND_KINDS = ("band", "line", "dot", "hollow_diamond", "triangle")


class Plot:
    """A linear x/y chart area with axes. Marks are recorded and drawn by `render`, once the layout (title lines,
    legend rows, margins, notes) is known; labels are placed there so that no two texts overlap.

    `ybreak=(a, b)`: the y axis is broken, values up to `a` on the lower part, from `b` on the upper part, the
    span between them skipped (marked on the axis and said in a note)."""

    def __init__(self, title: str, xlabel: str, ylabel: str, xlim: tuple[float, float],
                 ylim: tuple[float, float], desc: str = "", ybreak: tuple[float, float] | None = None):
        self.title, self.xlabel, self.ylabel, self.desc = title, xlabel, ylabel, desc
        x0, x1 = xlim
        y0, y1 = ylim
        x1, y1 = _widen(x0, x1), _widen(y0, y1)
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        if ybreak is not None and not (y0 < ybreak[0] < ybreak[1] < y1):
            ybreak = None
        self.ybreak = ybreak
        self.items: list[Callable[[], str]] = []
        self.labels: list[_Label] = []
        self.legend: list[tuple[str, str, str, str | None]] = []  # (kind, colour, text, dash)
        self.notes: list[str] = []
        self.points: list[tuple[float, float]] = []  # every point mark, data units (labels avoid covering them)
        self.lines: list[list[tuple[float, float]]] = []  # data lines, data units (labels avoid them too)
        self.clipped = 0
        self.mt = 0.0  # set by render
        self.ml = 0.0
        self.yticks = self._yticks()
        ylabel_lines = wrap(ylabel, PH, FONT)
        self.ylabel_lines = ylabel_lines
        widest = max((text_width(_tick_label(t)) for t in self.yticks), default=0.0)
        self.ml = PAD + len(ylabel_lines) * LINE + 6 + widest + 6

    # ------------------------------------------------------------- scales

    def _yticks(self) -> list[float]:
        if self.ybreak is None:
            return [t for t in nice_ticks(self.y0, self.y1, 5) if self.y0 <= t <= self.y1]
        a, b = self.ybreak
        lower = [t for t in nice_ticks(self.y0, a, 4) if self.y0 <= t <= a]
        upper = [t for t in nice_ticks(b, self.y1, 2) if b <= t <= self.y1]
        return lower + upper

    def _split(self) -> tuple[float, float, float]:
        """Pixel heights of the lower part, the gap and the upper part of a broken axis."""
        gap = 20.0
        lower = (PH - gap) * 0.74
        return lower, gap, PH - gap - lower

    def sx(self, x: float) -> float:
        return self.ml + (x - self.x0) / (self.x1 - self.x0) * (W - self.ml - MR)

    def sy(self, y: float) -> float:
        bottom = self.mt + PH
        if self.ybreak is None:
            return bottom - (y - self.y0) / (self.y1 - self.y0) * PH
        a, b = self.ybreak
        lower, gap, upper = self._split()
        if y <= a:
            return bottom - (y - self.y0) / (a - self.y0) * lower
        if y >= b:
            return self.mt + (self.y1 - y) / (self.y1 - b) * upper
        return bottom - lower - (y - a) / (b - a) * gap

    def clip_y(self, y: float) -> float:
        return min(max(y, self.y0), self.y1)

    # ------------------------------------------------------------- marks

    def polyline(self, pts: Iterable[tuple[float, float]], color: str, width: float = 1.5,
                 dash: str | None = None) -> None:
        pts = list(pts)

        def draw() -> str:
            coords = " ".join(f"{_f(self.sx(x))},{_f(self.sy(self.clip_y(y)))}" for x, y in pts)
            d = f' stroke-dasharray="{dash}"' if dash else ""
            return f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width}"{d}/>'

        if pts:
            self.items.append(draw)
            if len(pts) > 2:  # a data line: labels avoid covering it
                self.lines.append(pts)

    def band(self, upper: Sequence[tuple[float, float]], lower: Sequence[tuple[float, float]],
             color: str = BAND) -> None:
        pts = list(upper) + list(reversed(lower))
        if len(pts) < 3:
            return

        def draw() -> str:
            coords = " ".join(f"{_f(self.sx(x))},{_f(self.sy(self.clip_y(y)))}" for x, y in pts)
            return f'<polygon points="{coords}" fill="{color}" stroke="none"/>'

        self.items.append(draw)

    def hline(self, y: float, color: str, dash: str | None = None, label: str = "", left: bool = False) -> bool:
        """A horizontal reference line across the plot, named in the legend (`label`); False when off the axis."""
        if not self.y0 <= y <= self.y1:
            return False
        self.polyline([(self.x0, y), (self.x1, y)], color, 1.2, dash)
        if label:
            self.add_legend("line", color, label, dash)
        return True

    def point(self, x: float, y: float, color: str, tip: str, r: float = 4.0, hollow: bool = False,
              shape: str = "circle") -> None:
        """A mark at (x, y); a y beyond the top of the axis (inf: p = 0 as stored) is a triangle at the top."""
        fill = "white" if hollow else color
        over = not y <= self.y1
        if over:
            self.clipped += 1
            shape, y = "triangle", self.y1
        self.points.append((x, self.clip_y(y)))

        def draw() -> str:
            px, py = self.sx(x), self.sy(self.clip_y(y))
            if shape in ("diamond", "triangle"):
                s = r + 1
                pts = (f"{_f(px)},{_f(py - s)} {_f(px + s)},{_f(py)} {_f(px)},{_f(py + s)} {_f(px - s)},{_f(py)}"
                       if shape == "diamond" else
                       f"{_f(px)},{_f(py - s - 1)} {_f(px + s)},{_f(py + s - 1)} {_f(px - s)},{_f(py + s - 1)}")
                return (f'<polygon points="{pts}" fill="{fill}" stroke="{color}" stroke-width="1.3">'
                        f"<title>{esc(tip)}</title></polygon>")
            return (f'<circle cx="{_f(px)}" cy="{_f(py)}" r="{r}" fill="{fill}" stroke="{color}" '
                    f'stroke-width="1.3"><title>{esc(tip)}</title></circle>')

        self.items.append(draw)

    def label(self, x: float, y: float, text: str, color: str = INK, rank: int = 1) -> None:
        """A text beside the point (x, y), placed by `render` where it overlaps no other text."""
        y = self.y1 if not y <= self.y1 else y
        self.labels.append(_Label(x, self.clip_y(y), _short(text), color, rank))

    def add_legend(self, kind: str, color: str, text: str, dash: str | None = None) -> None:
        """A legend entry drawn with its own mark (`LEGEND_KINDS`). An older call `add_legend(color, text)` gives
        a band swatch."""
        if kind not in LEGEND_KINDS:  # add_legend(color, text) of the first version
            kind, color, text = "band", kind, color
        if (kind, color, text, dash) not in self.legend:
            self.legend.append((kind, color, text, dash))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # ------------------------------------------------------------- layout

    def _swatch(self, kind: str, color: str, x: float, y: float, dash: str | None) -> str:
        """The legend's mark for `kind`, 18 units wide, centred on the text's middle line `y`."""
        if kind == "band":
            return f'<rect x="{_f(x)}" y="{_f(y - 5)}" width="18" height="10" fill="{color}"/>'
        if kind == "line":
            d = f' stroke-dasharray="{dash}"' if dash else ""
            return (f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x + 18)}" y2="{_f(y)}" stroke="{color}" '
                    f'stroke-width="2"{d}/>')
        if kind == "dot":
            return (f'<rect x="{_f(x + 5)}" y="{_f(y - 4)}" width="8" height="8" rx="4" fill="{color}" '
                    f'stroke="{color}"/>')
        if kind == "hollow_diamond":
            return (f'<polygon points="{_f(x + 9)},{_f(y - 5)} {_f(x + 14)},{_f(y)} {_f(x + 9)},{_f(y + 5)} '
                    f'{_f(x + 4)},{_f(y)}" fill="white" stroke="{color}" stroke-width="1.3"/>')
        return (f'<polygon points="{_f(x + 9)},{_f(y - 6)} {_f(x + 14)},{_f(y + 4)} {_f(x + 4)},{_f(y + 4)}" '
                f'fill="{color}" stroke="{color}"/>')

    def _place_labels(self, fixed: list[Box]) -> tuple[list[str], list[_Label]]:
        area = Box(self.ml + 2, self.mt + 2, W - MR - 2, self.mt + PH - 2)
        pts = np.array([(self.sx(x), self.sy(self.clip_y(y))) for x, y in self.points]).reshape(-1, 2)
        trace = [np.zeros((0, 2))]
        for line in self.lines:  # each data line as screen points about 3 units apart
            xy = np.array([(self.sx(x), self.sy(self.clip_y(y))) for x, y in line])
            for (ax, ay), (bx, by) in zip(xy[:-1], xy[1:], strict=True):
                k = max(1, int(math.hypot(bx - ax, by - ay) // 3))
                t = np.arange(k) / k
                trace.append(np.column_stack([ax + (bx - ax) * t, ay + (by - ay) * t]))
        on_line = np.concatenate(trace)
        placed: list[Box] = list(fixed)
        out: list[str] = []
        dropped: list[_Label] = []
        step = FONT * 0.6
        for lab in sorted(self.labels, key=lambda t: (t.rank, -t.y, t.text)):
            px, py = self.sx(lab.x), self.sy(lab.y)
            best: tuple[float, Box, float] | None = None
            for k in range(0, 16):
                for dy in ((0.0,) if k == 0 else (-k * step, k * step)):
                    for side in ("right", "left"):
                        tw = text_width(lab.text, FONT, True)
                        x0 = px + 7 if side == "right" else px - 7 - tw
                        base = py - 5 + dy
                        box = text_box(x0, base, lab.text, FONT, "start", True)
                        if not box.inside(area) or any(box.hits(b, 2.0) for b in placed):
                            continue
                        covered = 0
                        if len(pts):
                            covered = int(((pts[:, 0] > box.x0 - 3) & (pts[:, 0] < box.x1 + 3)
                                           & (pts[:, 1] > box.y0 - 3) & (pts[:, 1] < box.y1 + 3)).sum())
                        crossed = int(((on_line[:, 0] > box.x0 - 1) & (on_line[:, 0] < box.x1 + 1)
                                       & (on_line[:, 1] > box.y0 - 1) & (on_line[:, 1] < box.y1 + 1)).sum())
                        cost = abs(dy) + (0.0 if side == "right" else 4.0) + 30.0 * covered + 3.0 * min(crossed, 20)
                        if best is None or cost < best[0]:
                            best = (cost, box, base)
                if best is not None and best[0] <= (k + 1) * step:
                    break  # nothing further away can cost less
            if best is None:
                dropped.append(lab)
                continue
            _, box, base = best
            placed.append(box)
            if abs(base - (py - 5)) > FONT * 0.9:  # displaced: a leader line from the point to the text
                lx = box.x0 - 1 if box.x0 >= px else box.x1 + 1
                ly = min(max(py, box.y0), box.y1)
                out.append(f'<line x1="{_f(px)}" y1="{_f(py)}" x2="{_f(lx)}" y2="{_f(ly)}" stroke="{lab.color}" '
                           f'stroke-width="0.8"/>')
            out.append(_text(box.x0, base, lab.text, FONT, lab.color, "start", True))
        return out, dropped

    def _xticks(self) -> list[float]:
        span = W - self.ml - MR
        for count in (6, 5, 4, 3, 2):
            ticks = [t for t in nice_ticks(self.x0, self.x1, count) if self.x0 <= t <= self.x1]
            if len(ticks) < 2:
                return ticks
            gap = (ticks[1] - ticks[0]) / (self.x1 - self.x0) * span
            if max(text_width(_tick_label(t)) for t in ticks) + 10 <= gap:
                return ticks
        return [self.x0, self.x1]

    def render(self) -> str:
        body: list[str] = []
        fixed: list[Box] = []
        y = float(PAD)
        for line in wrap(self.title, W - 2 * PAD, TITLE_FONT, True):
            y += TITLE_FONT
            body.append(_text(PAD, y, line, TITLE_FONT, INK, "start", True))
            fixed.append(text_box(PAD, y, line, TITLE_FONT, "start", True))
            y += 4
        # legend: rows under the title, each entry with its own mark
        lx, row = float(PAD), y + LINE * 0.8
        if self.legend:
            for kind, color, text, dash in self.legend:
                text = _short(text, int((W - 2 * PAD - 22) // (FONT * EM)))
                width = 22 + text_width(text) + 14
                if lx + width - 14 > W - PAD and lx > PAD:
                    lx, row = float(PAD), row + LINE
                body.append(self._swatch(kind, color, lx, row - FONT * 0.3, dash))
                body.append(_text(lx + 22, row, text))
                fixed.append(text_box(lx + 22, row, text))
                lx += width
            y = row + 4
        self.mt = y + 14
        bottom = self.mt + PH
        # grid and ticks
        for t in self._xticks():
            x = self.sx(t)
            if x + text_width(_tick_label(t)) / 2 > W - 2:
                continue  # its label would leave the chart (a tick at the very right end of a wide number)
            body.append(f'<line x1="{_f(x)}" y1="{_f(self.mt)}" x2="{_f(x)}" y2="{_f(bottom)}" stroke="{GRID}"/>')
            body.append(_text(x, bottom + FONT + 4, _tick_label(t), FONT, MUTED, "middle"))
        for t in self.yticks:
            ty = self.sy(t)
            body.append(f'<line x1="{_f(self.ml)}" y1="{_f(ty)}" x2="{_f(W - MR)}" y2="{_f(ty)}" stroke="{GRID}"/>')
            body.append(_text(self.ml - 6, ty + FONT * 0.33, _tick_label(t), FONT, MUTED, "end"))
        if self.ybreak is None:
            body.append(f'<rect x="{_f(self.ml)}" y="{_f(self.mt)}" width="{_f(W - MR - self.ml)}" '
                        f'height="{PH}" fill="none" stroke="{MUTED}"/>')
        else:
            lower, gap, upper = self._split()
            body.append(f'<rect x="{_f(self.ml)}" y="{_f(bottom - lower)}" width="{_f(W - MR - self.ml)}" '
                        f'height="{_f(lower)}" fill="none" stroke="{MUTED}"/>')
            body.append(f'<rect x="{_f(self.ml)}" y="{_f(self.mt)}" width="{_f(W - MR - self.ml)}" '
                        f'height="{_f(upper)}" fill="none" stroke="{MUTED}"/>')
            g0 = self.mt + upper
            for x in (self.ml, W - MR):  # the broken-axis mark: two slanted strokes across each side
                for dy in (gap * 0.3, gap * 0.7):
                    body.append(f'<line x1="{_f(x - 6)}" y1="{_f(g0 + dy + 3)}" x2="{_f(x + 6)}" '
                                f'y2="{_f(g0 + dy - 3)}" stroke="{INK}" stroke-width="1.3"/>')
        # axis titles
        xl = bottom + 2 * FONT + 12
        body.append(_text((self.ml + W - MR) / 2, xl, self.xlabel, FONT, INK, "middle"))
        for k, line in enumerate(self.ylabel_lines):
            cx, cy = PAD + FONT * 0.8 + k * LINE, self.mt + PH / 2
            body.append(_text(cx, cy, line, FONT, INK, "middle", extra=f' transform="rotate(-90 {_f(cx)} {_f(cy)})"'))
        body.extend(f() for f in self.items)
        labels, dropped = self._place_labels(fixed)
        body.extend(labels)
        notes = list(self.notes)
        if self.ybreak is not None:
            a, b = self.ybreak
            notes.insert(0, f"The vertical axis is broken (//): it skips from {_tick_label(a)} to {_tick_label(b)}.")
        if self.clipped:
            notes.append(f"▲ {self.clipped} value{'s' if self.clipped != 1 else ''} beyond the top of the axis "
                         "(p = 0 as stored), drawn at the top.")
        if dropped:
            names = ", ".join(d.text for d in dropped)
            notes.append(f"Not labelled for lack of room: {names}.")
        y = xl + 4
        for text in notes:
            for line in wrap(text, W - 2 * PAD):
                y += LINE
                body.append(_text(PAD, y, line, FONT, INK))
        height = y + PAD + 4
        head = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {_f(height)}" width="{W}" '
                f'height="{_f(height)}" role="img" class="chart" '
                f'font-family="system-ui, -apple-system, Segoe UI, sans-serif">',
                f"<title>{esc(self.title)}</title>"]
        if self.desc:
            head.append(f"<desc>{esc(self.desc)}</desc>")
        head.append(f'<rect x="0" y="0" width="{W}" height="{_f(height)}" fill="white"/>')
        return "\n".join(head + body + ["</svg>"])


def _short(text: str, k: int = 24) -> str:
    """`text` in at most `k` characters: its start and its end around an ellipsis, so that names sharing a long
    prefix ("player_with_a_long_name_kate") stay told apart; each side of a pair "a+b" is cut on its own."""
    text = str(text)
    if len(text) <= k:
        return text
    parts = text.split("+")
    if 1 < len(parts) <= 3 and all(parts):
        left = k - len(parts) + 1  # characters for the names, shared out shortest first
        alloc = {}
        for done, i in enumerate(sorted(range(len(parts)), key=lambda j: (len(parts[j]), j))):
            alloc[i] = max(5, min(len(parts[i]), left // (len(parts) - done)))
            left -= alloc[i]
        return "+".join(_short(p, alloc[i]) for i, p in enumerate(parts))
    tail = (k - 1) // 2
    return text[: k - 1 - tail] + "…" + text[len(text) - tail:]


short_name = _short


def _pad(lo: float, hi: float, frac: float = 0.06) -> tuple[float, float]:
    if hi <= lo:
        return lo - 1, hi + 1
    d = (hi - lo) * frac
    return lo - d, hi + d


def _tier_color(e: dict) -> str:
    tier = e.get("tier")
    if tier == "report" or e.get("flagged"):
        return RED
    if tier == "watch":
        return AMBER
    return BLUE


TIER_LEGEND = {RED: "flagged", AMBER: "watch list", BLUE: "not flagged"}


def _label_rank(e: dict) -> int:
    return 0 if (e.get("tier") == "report" or e.get("flagged")) else 1


def _labelled(e: dict) -> bool:
    return e.get("tier") in ("report", "watch") or bool(e.get("flagged"))


def evidence_axis(values: Sequence[float], keep: float) -> tuple[float, tuple[float, float] | None]:
    """The top of an evidence axis (−log10 p) from the data, and where to break it: (a, b) when a few values
    stand far above the rest (the next value above `a` more than twice it plus 2), so that the rest keep most
    of the height. `keep`: a level the lower part must show (the flag line). Infinite values are left out
    (drawn at the top as clipped)."""
    vals = sorted(v for v in values if math.isfinite(v) and v >= 0)
    top = max(vals + [keep]) * 1.08 + 0.05
    floor = keep
    for lo_v, hi_v in zip([floor] + vals, vals + [math.inf], strict=True):
        lo_v = max(lo_v, floor)  # the lower part always reaches the level it must show
        if not math.isfinite(hi_v) or hi_v <= lo_v:
            continue
        if hi_v > 2 * lo_v + 2 and any(v <= lo_v for v in vals):  # a break keeps data on both parts
            upper = [v for v in vals if v >= hi_v]
            span = max(upper) - min(upper)
            a = lo_v * 1.1 + 0.1
            b = max(a + 1e-9, min(upper) - 0.08 * span - 0.03 * max(upper))
            top = max(upper) + 0.08 * span + 0.03 * max(upper)
            if a < 0.45 * top and b > a:
                return top, (a, b)
            break
    return top, None


# ------------------------------------------------------------------ funnel


def exact_limits(detail: Any) -> dict[str, tuple[float, float]]:
    """The detector's exact null limits in counts: {'95': (lo, hi), '99.8': (lo, hi)} (whatever is present).

    Accepted shapes (in `detail` or `detail['funnel']`): `limits: {"95": [lo, hi], "99.8": [lo, hi]}`,
    `limits_95` / `limits_998` pairs, or flat `lo95`, `hi95`, `lo998`, `hi998`."""
    out: dict[str, tuple[float, float]] = {}
    if not isinstance(detail, dict):
        return out
    srcs = [detail]
    if isinstance(detail.get("funnel"), dict):
        srcs.insert(0, detail["funnel"])
    for src in srcs:
        lim = src.get("limits")
        for level, keys in (("95", ("95", "0.95", "limits_95", "95%")), ("99.8", ("99.8", "0.998", "998",
                                                                                   "limits_998", "99.8%"))):
            if level in out:
                continue
            pair = None
            if isinstance(lim, dict):
                for k in keys:
                    if k in lim:
                        pair = lim[k]
                        break
            if pair is None:
                for k in keys:
                    if k.startswith("limits_") and k in src:
                        pair = src[k]
            if pair is None:
                tag = "95" if level == "95" else "998"
                if f"lo{tag}" in src or f"hi{tag}" in src:
                    pair = [src.get(f"lo{tag}"), src.get(f"hi{tag}")]
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                lo, hi = _fin(pair[0]), _fin(pair[1])
                if lo is not None and hi is not None:
                    out[level] = (lo, hi)
    return out


MAX_COUNT = 2 ** 53  # the largest count a float holds exactly


def _binom_limits(n: int, p: float, tail: float) -> tuple[float, float]:
    from scipy.stats import binom  # scipy.stats takes seconds to import: only when a chart is drawn

    return float(binom.ppf(tail, n, p)), float(binom.isf(tail, n, p))


def funnel(test: str, entries: list[dict], unit: str = "deals dealt", event: str = "the event") -> str:
    pts = []
    for e in entries:
        n, o, x = _fin(e.get("n")), _fin(e.get("observed")), _fin(e.get("expected"))
        if n is None or o is None or x is None or n <= 0 or x <= 0 or n > MAX_COUNT:
            continue  # beyond MAX_COUNT n is no count of deals (and scipy's binomial limits fail on it)
        pts.append((e, n, o, x))
    if not pts:
        return ""
    sum_n = sum(p[1] for p in pts)
    pbar = min(max(sum(p[3] for p in pts) / sum_n, 1e-9), 1 - 1e-9)
    nmax = max(p[1] for p in pts)
    # limit curves around the null for the pooled configuration
    grid = sorted({max(1, int(round(nmax * 1.08 * k / 80))) for k in range(1, 81)})
    curves: dict[str, list[tuple[float, float, float]]] = {"95": [], "99.8": []}
    for nn in grid:
        for level, tail in (("95", 0.025), ("99.8", 0.001)):
            lo, hi = _binom_limits(nn, pbar, tail)
            curves[level].append((nn, lo / (nn * pbar), hi / (nn * pbar)))
    ratios = [o / x for _, _, o, x in pts]
    ylo = min(min(ratios), min(c[1] for c in curves["99.8"] if c[0] >= min(p[1] for p in pts) * 0.5))
    yhi = max(max(ratios), min(3.0, max(c[2] for c in curves["99.8"] if c[0] >= min(p[1] for p in pts) * 0.5)))
    ylo, yhi = _pad(max(0.0, ylo), yhi)
    plot = Plot(f"Funnel of honest chance, by {unit}", unit, "observed ÷ expected",
                (0, nmax * 1.08), (max(0.0, ylo), yhi),
                desc=f"Each dot is a subject: how often {event} happened, as a multiple of honest chance. Inside "
                     "the funnel is what honest chance gives; dots above the dashed line are beyond the 99.8% "
                     "limit.")
    plot.band([(c[0], c[2]) for c in curves["95"]], [(c[0], c[1]) for c in curves["95"]])
    plot.polyline([(c[0], c[2]) for c in curves["99.8"]], INK, 1.2, "5 3")
    plot.polyline([(c[0], c[1]) for c in curves["99.8"]], INK, 1.2, "5 3")
    plot.add_legend("band", BAND, "honest 95% range")
    plot.add_legend("line", INK, "99.8% limits", "5 3")
    plot.hline(1.0, GREEN, None, "honest expectation")
    drawn: set[str] = set()
    for e, n, o, x in sorted(pts, key=lambda t: (t[0].get("tier") == "report", str(t[0].get("subject")))):
        lim = exact_limits(e.get("detail"))
        if lim:
            hi95 = lim.get("95", (None, math.inf))[1]
            hi998 = lim.get("99.8", (None, math.inf))[1]
        else:
            p = min(max(x / n, 1e-9), 1 - 1e-9)
            hi95 = _binom_limits(int(n), p, 0.025)[1]
            hi998 = _binom_limits(int(n), p, 0.001)[1]
        color = RED if o > hi998 else (AMBER if o > hi95 else BLUE)
        drawn.add(color)
        subject = str(e.get("subject"))
        tip = f"{subject}: {_num(o)} of {_num(n)} (about {x:.1f} expected), p = {_p(e.get('pvalue'))}"
        plot.point(n, o / x, color, tip, r=5 if e.get("tier") == "report" else 4)
        if _labelled(e):  # the name in its dot's colour (the legend's), placed in the order of the tiers
            plot.label(n, o / x, subject, color, _label_rank(e))
    for color, words in ((RED, "beyond 99.8%"), (AMBER, "beyond 95%"), (BLUE, "within 95%")):
        if color in drawn:
            plot.add_legend("dot", color, words)
    return plot.render()


def _test_label(test: str) -> str:
    return str(test).replace("_", " ")


def _num(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:.3g}"


def _p(p: Any) -> str:
    return fmt_p(p)


# ------------------------------------------------------------------ score and evidence charts


def _controls_with(e: dict, key: str) -> list[tuple[str, float]]:
    """(label, value) of each control that carries `key` ("statistic" also reads "z"; "pvalue" also "p"): the
    test's chart controls (`TestSpec.chart_controls`, cards a cheat cannot use) when it has any, else all."""
    items = control_items(e)
    chosen = spec_of(e.get("test")).chart_controls
    preferred = [c for c in items if c["key"] in chosen]
    out = []
    for c in preferred or items:
        v = c.get(key)
        if v is not None and math.isfinite(v):
            out.append((c["label"], float(v)))
    return out


def _add_tier_legend(plot: Plot, colours: set[str], what: str) -> None:
    for color in (RED, AMBER, BLUE):
        if color in colours:
            plot.add_legend("dot", color, f"{what}: {TIER_LEGEND[color]}")


def score_chart(test: str, entries: list[dict], unit: str) -> str:
    """The test's score (`statistic`) against exposure `n`, each subject's controls beside it (hollow diamonds)."""
    read = [(e, _fin(e.get("n")), _fin(e.get("statistic"))) for e in entries]
    pts = [(e, n, s) for e, n, s in read if n is not None and s is not None]
    if not pts:
        return ""
    ctl = [(e, n, s, k, v) for e, n, s in pts for k, v in _controls_with(e, "statistic")]
    ys = [s for _, _, s in pts] + [c[4] for c in ctl] + [0.0]
    nmax = max(n for _, n, _ in pts)
    plot = Plot("Score against exposure" + (", with controls" if ctl else ""), unit,
                "score (0 = honest play)", (0, nmax * 1.08), _pad(min(ys), max(ys)),
                desc="Filled dots: the test's score." + (" Hollow diamonds: the same score on controls a cheat "
                                                         "cannot use. A cheat stands out in the score, not in "
                                                         "the controls." if ctl else ""))
    plot.hline(0.0, GREEN, None, "honest expectation")
    for e, n, s, k, v in ctl:
        plot.polyline([(n, s), (n, v)], GRID, 1.0)
        plot.point(n, v, MUTED, f"{e.get('subject')}, control {k}: {v:.3g}", r=3.5, hollow=True, shape="diamond")
    if ctl:
        plot.add_legend("hollow_diamond", MUTED, "controls")
    colours: set[str] = set()
    for e, n, s in sorted(pts, key=lambda t: (t[0].get("tier") == "report", str(t[0].get("subject")))):
        subject = str(e.get("subject"))
        colours.add(_tier_color(e))
        plot.point(n, s, _tier_color(e), f"{subject}: score {s:.3g}, p = {_p(e.get('pvalue'))}")
        if _labelled(e):
            plot.label(n, s, subject, _tier_color(e), _label_rank(e))
    _add_tier_legend(plot, colours, "score")
    return plot.render()


def _nlp(p: Any) -> float | None:
    """−log10 p, no floor: p = 0 as stored gives inf (drawn at the top of the axis, marked)."""
    v = _fin(p)
    if v is None or v > 1 or v < 0:
        return None
    return math.inf if v == 0 else -math.log10(v)


def evidence_chart(test: str, entries: list[dict], unit: str, fam: dict | None = None) -> str:
    """Strength of evidence (−log10 p) against exposure `n`, controls beside each subject; the axis's top (and
    where it breaks) from the data."""
    read = [(e, _fin(e.get("n")), _nlp(e.get("pvalue"))) for e in entries]
    pts = [(e, n, y) for e, n, y in read if n is not None and y is not None]
    if not pts:
        return ""
    ctl = [(e, n, k, y) for e, n, _ in pts for k, v in _controls_with(e, "pvalue")
           if (y := _nlp(min(max(v, 0.0), 1.0))) is not None]
    m = len(entries)
    fdr = _fin((fam or {}).get("fdr")) or 0.05
    first = -math.log10(fdr / max(1, m))
    top, ybreak = evidence_axis([y for _, _, y in pts] + [c[3] for c in ctl], max(first * 1.1, 2.2))
    nmax = max(n for _, n, _ in pts)
    plot = Plot("Evidence against exposure", unit, "evidence (higher = stranger)",
                (0, nmax * 1.08), (0, top), ybreak=ybreak,
                desc="Each dot is a subject" + ("; hollow diamonds are its controls" if ctl else "")
                     + ". Above the red dashed line a subject would be flagged even if they were the only strange one.")
    plot.hline(2.0, AMBER, "4 3", "watch: p = 0.01")
    plot.hline(first, RED, "4 3", f"flag line for the strongest: p = {fdr:g}/{m}")
    for e, n, k, y in ctl:
        plot.point(n, y, MUTED, f"{e.get('subject')}, control {k}: p = {_p(10 ** -y if math.isfinite(y) else 0)}",
                   r=3.5, hollow=True, shape="diamond")
    if ctl:
        plot.add_legend("hollow_diamond", MUTED, "controls (their p)")
    colours: set[str] = set()
    for e, n, y in sorted(pts, key=lambda t: (t[0].get("tier") == "report", str(t[0].get("subject")))):
        subject = str(e.get("subject"))
        colours.add(_tier_color(e))
        plot.point(n, y, _tier_color(e), f"{subject}: p = {_p(e.get('pvalue'))}, n = {_num(n)}")
        if _labelled(e):
            plot.label(n, y, subject, _tier_color(e), _label_rank(e))
    _add_tier_legend(plot, colours, "p of the test")
    if plot.clipped:
        plot.add_legend("triangle", INK, "beyond the axis (drawn at the top)")
    return plot.render()


# ------------------------------------------------------------------ QQ


QQ_POINT_CHARS = 100  # no point of `qq_plot` is drawn in fewer characters (its element, colours and tip's words)


def charts_surely_over(entries: list[dict], limit: int) -> bool:
    """Whether `charts_for_family(test, entries)` is surely longer than `limit` characters, from the entries' own
    p-values alone: its QQ plot draws one point per p-value in [0, 1], each at least QQ_POINT_CHARS long (issue 15:
    the report leaves such charts out; a family of 35,000 pairs need not be drawn, nor its entries decoded, to
    know it)."""
    m = 0
    for e in entries:
        p = _fin(e.get("pvalue"))
        if p is not None and 0 <= p <= 1:
            m += 1
    return m * QQ_POINT_CHARS > limit


def qq_plot(entries: list[dict], title: str = "p-values of the whole family against honest chance") -> str:
    read = [(e, _fin(e.get("pvalue"))) for e in entries]
    pts = sorted(((e, p) for e, p in read if p is not None and 0 <= p <= 1), key=lambda t: (t[1], str(
        t[0].get("subject"))))
    m = len(pts)
    if m == 0:
        return ""
    from scipy.stats import beta  # scipy.stats takes seconds to import: only when a chart is drawn

    xs = [-math.log10((i + 1) / (m + 1)) for i in range(m)]
    ys = [math.inf if p == 0 else -math.log10(p) for _, p in pts]
    up = [-math.log10(max(float(beta.ppf(0.025, i + 1, m - i)), 1e-300)) for i in range(m)]
    lo = [-math.log10(max(float(beta.ppf(0.975, i + 1, m - i)), 1e-300)) for i in range(m)]
    xmax = max(xs) * 1.05 + 0.05
    top, ybreak = evidence_axis(ys, max(max(up), xmax) * 1.02)
    plot = Plot(title, "expected evidence if all were honest", "observed evidence", (0, xmax), (0, top),
                ybreak=ybreak,
                desc="If everyone were honest the dots would follow the diagonal inside the band. Exact "
                     "p-values of counts are conservative, so honest dots often sit a little below it. Dots "
                     "far above it at the right end are the strange ones.")
    pairs = sorted(zip(xs, up, lo, strict=True))
    plot.band([(x, u) for x, u, _ in pairs], [(x, low) for x, _, low in pairs])
    plot.polyline([(0, 0), (xmax, xmax)], GREEN, 1.2)
    plot.add_legend("band", BAND, "95% band for honest subjects")
    plot.add_legend("line", GREEN, "honest expectation")
    colours: set[str] = set()
    for (e, p), x, y in sorted(zip(pts, xs, ys, strict=True), key=lambda t: (t[0][0].get("tier") == "report", t[1])):
        colours.add(_tier_color(e))
        plot.point(x, y, _tier_color(e), f"{e.get('subject')}: p = {_p(p)}, q = {_p(e.get('qvalue'))}", r=3.5)
        if e.get("tier") == "report" or e.get("flagged"):
            plot.label(x, y, str(e.get("subject")), RED, 0)
    _add_tier_legend(plot, colours, "p")
    if plot.clipped:
        plot.add_legend("triangle", INK, "beyond the axis (drawn at the top)")
    return plot.render()


# ------------------------------------------------------------------ timeline


def _timeline_points(detail: Any) -> list[tuple[float, float, float, float | None]]:
    """(index, observed so far, expected so far, null variance so far or None) from `detail.timeline`: lists
    [index, observed, expected(, variance)] or dicts with those keys; points with a non-finite part are dropped."""
    if not isinstance(detail, dict):
        return []
    raw = detail.get("timeline")
    out = []
    if isinstance(raw, list):
        for p in raw:
            if isinstance(p, (list, tuple)) and len(p) >= 3:
                i, o, x = _fin(p[0]), _fin(p[1]), _fin(p[2])
                v = _fin(p[3]) if len(p) >= 4 else None
            elif isinstance(p, dict):
                i = _fin(p.get("deal_index", p.get("index", p.get("i"))))
                o, x, v = _fin(p.get("observed")), _fin(p.get("expected")), _fin(p.get("variance"))
            else:
                continue
            if i is not None and o is not None and x is not None:
                out.append((i, o, x, v if v is not None and v >= 0 else None))
    return out


def _thin(pts: list, k: int = 400) -> list:
    if len(pts) <= k:
        return pts
    step = len(pts) / k
    idx = sorted({int(j * step) for j in range(k)} | {len(pts) - 1})
    return [pts[j] for j in idx]


def _same(a: float | None, b: float | None) -> bool:
    """Equal as the document prints them (4 decimals, or 6 significant digits)."""
    return a is not None and b is not None and abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))


def timeline_follows(entry: dict, pts: list) -> tuple[str, str] | None:
    """What the timeline `pts` of `entry` follows, read off where it ends: ("test", "") when it ends at the
    entry's own observed count (or the entry has none to compare), ("control", label) when it ends at a
    control's, else None (a series of something else, such as `deal_uniformity`'s honours dealt to the dealer
    beside its X²: not the statistic that gave the result)."""
    if not pts:
        return None
    last_o = pts[-1][1]
    obs = _fin(entry.get("observed"))
    if obs is None or _same(obs, last_o):
        return "test", ""
    if _cells(entry.get("detail")):
        return None  # a misfit over cells: the cells chart shows its statistic
    for c in control_items(entry):
        if _same(c.get("observed"), last_o) and (c.get("expected") is None or _same(c.get("expected"),
                                                                                   pts[-1][2])):
            return "control", str(c["label"])
    return None


def timeline(entry: dict) -> str:
    """The statistic that gave this result, as it built up over the subject's deals, rising when the result is
    an excess: the cumulative excess (observed − expected so far) with the honest ±2 sd range. A timeline that does
    not end at the result's own count (a series of something else) is not drawn as if it were: a misfit over cells
    gets `misfit_chart` instead, anything else no chart ("").

    The range is ±2 sd of the null so far: from each point's own null variance when the detector gives it (the
    fourth element: `marked_ten`, `collusion`, `revoke_pattern`), else the subject's final null sd scaled by the
    share of the final expected count reached (variance proportional to expected, as for Bernoulli counts)."""
    pts = _timeline_points(entry.get("detail"))
    follows = timeline_follows(entry, pts)
    if follows is None:
        return misfit_chart(entry)
    pts = _thin(pts)
    subject = str(entry.get("subject"))
    spec = spec_of(entry.get("test", ""))
    xs = [p[0] for p in pts]
    ex = [p[1] - p[2] for p in pts]
    band_u, band_l = [], []
    own = [(p[0], p[3]) for p in pts if p[3] is not None]  # each point's own null variance, when all have one
    if len(own) == len(pts):
        for i, v in own:
            s = 2 * math.sqrt(v)
            band_u.append((i, s))
            band_l.append((i, -s))
    elif follows[0] == "test":
        sd = null_sd(entry)
        final_exp = pts[-1][2]
        if sd is not None and sd > 0:
            for i, _, x, _ in pts:
                share = (x / final_exp) if final_exp > 0 else (i / xs[-1] if xs[-1] else 0)
                s = 2 * sd * math.sqrt(max(share, 0.0))
                band_u.append((i, s))
                band_l.append((i, -s))
    ys = ex + [b[1] for b in band_u] + [b[1] for b in band_l] + [0.0]
    color = RED if entry.get("tier") == "report" or entry.get("flagged") else BLUE
    plot = Plot(f"{_short(subject, 40)}: cumulative excess, {_test_label(entry.get('test', ''))}",
                f"the subject's {spec.unit_short}, in order",
                "observed − expected so far", (min(xs + [0.0]), max(xs) * 1.02 + 1e-9), _pad(min(ys), max(ys)),
                desc="The line climbs when the event happens more often than honest chance gives. A line that "
                     "climbs steadily through the band means a steady excess; a jump means a cluster.")
    if band_u:
        plot.band(band_u, band_l)
        plot.add_legend("band", BAND, "honest range (about ±2 sd)")
    plot.hline(0.0, GREEN, None, "honest expectation (0)")
    plot.polyline(list(zip(xs, ex, strict=True)), color, 2.0)
    plot.add_legend("line", color, "observed − expected so far")
    last = pts[-1]
    plot.label(last[0], last[1] - last[2], f"{last[1] - last[2]:+.1f}", color, 0)
    exp_entry = _fin(entry.get("expected"))
    if follows[0] == "control":
        plot.note(f"This line follows the control '{follows[1]}' (the document holds no series of the test's "
                  "own statistic).")
    elif exp_entry is not None and not _same(exp_entry, last[2]):
        named = [c["label"] for c in control_items(entry) if _same(c.get("expected"), last[2])]
        whose = f" the null of '{named[0]}'" if named else " another null"
        plot.note(f"Expected counts here are from{whose}: {last[2]:.3g} at the end; the result's p-value uses "
                  f"{exp_entry:.3g}.")
    plot.note(f"Ends at {_num(last[1])} observed against {last[2]:.3g} expected.")
    return plot.render()


def _cells(detail: Any) -> list[tuple[str, float, float]]:
    """(name, observed, expected) of each cell of `detail.cells` with a positive expected count."""
    raw = detail.get("cells") if isinstance(detail, dict) else None
    out = []
    if isinstance(raw, list):
        for c in raw:
            if not isinstance(c, dict):
                continue
            o, x = _fin(c.get("observed")), _fin(c.get("expected"))
            if o is None or x is None or x <= 0:
                continue
            where = str(c.get("location", "?")).replace("_", "-")
            out.append((f"{c.get('rank', '?')} to {where}", o, x))
    return out


def misfit_chart(entry: dict) -> str:
    """A misfit over cells (Pearson X² = Σ (O − E)² / E, `detail.cells`): how the cells add up to the statistic,
    largest contribution first, against what a fair deal gives (`expected`, the degrees of freedom). The document
    keeps the cells' totals only, not a running X² over the deals, so this is the honest chart of the statistic."""
    cells = _cells(entry.get("detail"))
    if not cells:
        return ""
    contrib = sorted(((o - x) ** 2 / x, name, o, x) for name, o, x in cells)[::-1]
    cum, run = [], 0.0
    for c, *_ in contrib:
        run += c
        cum.append(run)
    k = len(cum)
    fair = _fin(entry.get("expected"))
    subject = str(entry.get("subject"))
    ys = cum + ([fair] if fair is not None else []) + [0.0]
    color = RED if entry.get("tier") == "report" or entry.get("flagged") else BLUE
    plot = Plot(f"{_short(subject, 40)}: how the misfit adds up, {_test_label(entry.get('test', ''))}",
                "cells of the seat × honour table, largest misfit first", "Pearson X² so far",
                (0, k + 0.5), (0, max(ys) * 1.08),
                desc="Each step adds one cell's misfit (observed − expected)² / expected, largest first; the line "
                     "ends at the statistic. A fair deal's whole table adds up to about the dashed green line.")
    plot.polyline([(0, 0.0)] + [(i + 1, v) for i, v in enumerate(cum)], color, 2.0)
    plot.add_legend("line", color, "X² so far, cell by cell")
    for i, ((c, name, o, x), v) in enumerate(zip(contrib, cum, strict=True)):
        plot.point(i + 1, v, color, f"{name}: {_num(o)} seen, {x:.3g} expected, adds {c:.3g}", r=2.5)
    if fair is not None:
        plot.hline(fair, GREEN, "5 3", f"a fair deal's X²: about {_num(fair)}")
    for i, (c, name, o, x) in enumerate(contrib[:3]):
        if c >= 1:
            plot.label(i + 1, cum[i], f"{name}: {_num(o)} v {x:.3g}", color, 1)
    plot.label(k, cum[-1], f"X² = {cum[-1]:.1f}", color, 0)
    plot.note("The document keeps each cell's totals, not a running X² over the deals: the steps are cells, "
              "not deals.")
    return plot.render()


# ------------------------------------------------------------------ per family


def charts_for_family(test: str, entries: list[dict], fam: dict | None = None) -> list[dict]:
    """The charts of one test section: its main chart (the spec's kind: `funnel`, `score` or `evidence`; the
    evidence chart when the main one has nothing to draw) and the family's QQ plot, as {caption, svg}. Each
    caption names only the marks its chart draws."""
    spec = spec_of(test)
    out = []
    main = ""
    caption = ""
    if spec.chart == "funnel":
        main = funnel(test, entries, spec.unit_short, spec.event.replace("received ", "receiving ")
                      .replace("turned up", "turning up"))
        caption = ("Funnel plot: each dot is a dealer, placed by deals dealt and by how often the event "
                   "happened relative to honest chance. Honest dealers scatter inside the funnel, which narrows "
                   "as deals add up; a dealer far above it is lucky beyond belief.")
    elif spec.chart == "score":
        main = score_chart(test, entries, spec.unit_short)
        caption = "Scores against exposure: each filled dot is a player's score"
        if "<polygon" in main:
            caption += (", each hollow diamond the same score on a control. A cheat's score stands out while their "
                        "controls stay near zero; a strong honest reader is high on both.")
        else:
            caption += "; a cheat's score stands out above zero."
    if not main:
        main = evidence_chart(test, entries, spec.unit_short, fam)
        caption = "Evidence against exposure: each dot is a subject, higher is stranger"
        caption += "; hollow diamonds are controls." if 'fill="white" stroke="' + MUTED in main else "."
    if main:
        if "The vertical axis is broken" in main:
            caption += " The vertical axis is broken where marked (//), so the strongest results fit."
        out.append({"caption": caption, "svg": main})
    qq = qq_plot(entries, f"All {len(entries)} p-values against honest chance")
    if qq:
        out.append({"caption": f"QQ plot of all {len(entries)} p-values of this test. If everyone were honest "
                               "they would follow the diagonal inside the band.", "svg": qq})
    return out
