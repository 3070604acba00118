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
- `timeline`: a subject's cumulative excess (observed − expected so far) over his deals.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Sequence

from .sentences import control_items, fmt_p, null_sd, spec_of
from .values import finite as _fin  # one reading of "a finite number" for text and charts

W, H = 680, 410
ML, MR, MT, MB = 64, 24, 54, 52

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


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    out = []
    v = start
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _tick_label(v: float) -> str:
    if abs(v - round(v)) < 1e-9:
        return f"{int(round(v)):,}"
    return f"{v:.3g}"


def _widen(lo: float, hi: float) -> float:
    """`hi`, or a larger value when the range is empty; the step grows with |lo| so that lo + step > lo even
    where adding 1 is lost to rounding (lo = -1e16)."""
    if hi > lo:
        return hi
    return lo + max(1.0, abs(lo) * 1e-9)


class Plot:
    """A linear x/y chart area with axes; elements are appended as SVG strings."""

    def __init__(self, title: str, xlabel: str, ylabel: str, xlim: tuple[float, float],
                 ylim: tuple[float, float], desc: str = ""):
        self.title, self.xlabel, self.ylabel, self.desc = title, xlabel, ylabel, desc
        x0, x1 = xlim
        y0, y1 = ylim
        x1, y1 = _widen(x0, x1), _widen(y0, y1)
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.body: list[str] = []
        self.legend: list[tuple[str, str]] = []

    def sx(self, x: float) -> float:
        return ML + (x - self.x0) / (self.x1 - self.x0) * (W - ML - MR)

    def sy(self, y: float) -> float:
        return H - MB - (y - self.y0) / (self.y1 - self.y0) * (H - MT - MB)

    def clip_y(self, y: float) -> float:
        return min(max(y, self.y0), self.y1)

    def polyline(self, pts: Iterable[tuple[float, float]], color: str, width: float = 1.5,
                 dash: str | None = None) -> None:
        coords = " ".join(f"{_f(self.sx(x))},{_f(self.sy(self.clip_y(y)))}" for x, y in pts)
        if not coords:
            return
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.body.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width}"{d}/>')

    def band(self, upper: Sequence[tuple[float, float]], lower: Sequence[tuple[float, float]],
             color: str = BAND) -> None:
        pts = list(upper) + list(reversed(lower))
        if len(pts) < 3:
            return
        coords = " ".join(f"{_f(self.sx(x))},{_f(self.sy(self.clip_y(y)))}" for x, y in pts)
        self.body.append(f'<polygon points="{coords}" fill="{color}" stroke="none"/>')

    def hline(self, y: float, color: str, dash: str | None = None, label: str = "", left: bool = False) -> None:
        if not self.y0 <= y <= self.y1:
            return
        self.polyline([(self.x0, y), (self.x1, y)], color, 1.2, dash)
        if label:
            x, anchor = (ML + 4, "start") if left else (W - MR - 4, "end")
            self.body.append(f'<text x="{_f(x)}" y="{_f(self.sy(y) - 4)}" text-anchor="{anchor}" '
                             f'font-size="11" fill="{color}">{esc(label)}</text>')

    def point(self, x: float, y: float, color: str, tip: str, r: float = 4.0, hollow: bool = False,
              shape: str = "circle") -> None:
        cx, cy = _f(self.sx(x)), _f(self.sy(self.clip_y(y)))
        fill = "white" if hollow else color
        if shape == "diamond":
            px, py = float(cx), float(cy)
            pts = f"{_f(px)},{_f(py - r - 1)} {_f(px + r + 1)},{_f(py)} {_f(px)},{_f(py + r + 1)} {_f(px - r - 1)},{_f(py)}"
            el = f'<polygon points="{pts}" fill="{fill}" stroke="{color}" stroke-width="1.3">'
            end = "</polygon>"
        else:
            el = f'<circle cx="{cx}" cy="{cy}" r="{r}" fill="{fill}" stroke="{color}" stroke-width="1.3">'
            end = "</circle>"
        self.body.append(f"{el}<title>{esc(tip)}</title>{end}")

    def label(self, x: float, y: float, text: str, color: str = INK) -> None:
        px, py = self.sx(x), self.sy(self.clip_y(y))
        anchor = "end" if px > W - MR - 120 else "start"
        dx = -7 if anchor == "end" else 7
        self.body.append(f'<text x="{_f(px + dx)}" y="{_f(py - 6)}" text-anchor="{anchor}" font-size="12" '
                         f'font-weight="600" fill="{color}">{esc(_short(text))}</text>')

    def add_legend(self, color: str, text: str) -> None:
        self.legend.append((color, text))

    def render(self) -> str:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
               f'role="img" class="chart" font-family="system-ui, -apple-system, Segoe UI, sans-serif">',
               f"<title>{esc(self.title)}</title>"]
        if self.desc:
            out.append(f"<desc>{esc(self.desc)}</desc>")
        out.append(f'<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>')
        # grid and ticks
        for t in nice_ticks(self.x0, self.x1, 6):
            x = _f(self.sx(t))
            out.append(f'<line x1="{x}" y1="{MT}" x2="{x}" y2="{H - MB}" stroke="{GRID}"/>')
            out.append(f'<text x="{x}" y="{H - MB + 16}" text-anchor="middle" font-size="11" '
                       f'fill="{MUTED}">{esc(_tick_label(t))}</text>')
        for t in nice_ticks(self.y0, self.y1, 5):
            y = _f(self.sy(t))
            out.append(f'<line x1="{ML}" y1="{y}" x2="{W - MR}" y2="{y}" stroke="{GRID}"/>')
            out.append(f'<text x="{ML - 6}" y="{_f(self.sy(t) + 4)}" text-anchor="end" font-size="11" '
                       f'fill="{MUTED}">{esc(_tick_label(t))}</text>')
        out.append(f'<rect x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}" fill="none" '
                   f'stroke="{MUTED}"/>')
        out.append(f'<text x="{ML}" y="22" font-size="14" font-weight="600" fill="{INK}">{esc(self.title)}</text>')
        out.append(f'<text x="{_f((ML + W - MR) / 2)}" y="{H - 12}" text-anchor="middle" font-size="12" '
                   f'fill="{INK}">{esc(self.xlabel)}</text>')
        out.append(f'<text x="14" y="{_f((MT + H - MB) / 2)}" text-anchor="middle" font-size="12" fill="{INK}" '
                   f'transform="rotate(-90 14 {_f((MT + H - MB) / 2)})">{esc(self.ylabel)}</text>')
        out.extend(self.body)
        # legend: one row under the title, wrapping when long
        lx: float = ML
        ly = 40
        for color, text in self.legend:
            width = 26 + 6.2 * len(text)
            if lx + width > W - MR and lx > ML:
                lx, ly = ML, ly + 13
            out.append(f'<rect x="{_f(lx)}" y="{ly - 6}" width="12" height="5" fill="{color}"/>')
            out.append(f'<text x="{_f(lx + 16)}" y="{ly}" font-size="10.5" fill="{INK}">{esc(text)}</text>')
            lx += width
        out.append("</svg>")
        return "\n".join(out)


def _short(text: str, k: int = 24) -> str:
    text = str(text)
    return text if len(text) <= k else text[: k - 1] + "…"


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
    plot = Plot(f"Rate against {unit}: the funnel of honest chance", unit, f"rate of {event} (1 = honest expectation)",
                (0, nmax * 1.08), (max(0.0, ylo), yhi),
                desc="Each dot is a subject. Inside the funnel is what honest chance gives; dots above the dark "
                     "line are beyond the 99.8% limit.")
    plot.band([(c[0], c[2]) for c in curves["95"]], [(c[0], c[1]) for c in curves["95"]])
    plot.polyline([(c[0], c[2]) for c in curves["99.8"]], INK, 1.2, "5 3")
    plot.polyline([(c[0], c[1]) for c in curves["99.8"]], INK, 1.2, "5 3")
    plot.hline(1.0, GREEN, None, "honest expectation")
    plot.add_legend(BAND, "honest 95% range (shaded)")
    plot.add_legend(INK, "99.8% limits (dashed)")
    plot.add_legend(RED, "dot beyond 99.8%")
    plot.add_legend(AMBER, "beyond 95%")
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
        subject = str(e.get("subject"))
        tip = f"{subject}: {_num(o)} of {_num(n)} (about {x:.1f} expected), p = {_p(e.get('pvalue'))}"
        plot.point(n, o / x, color, tip, r=5 if e.get("tier") == "report" else 4)
        if e.get("tier") in ("report", "watch") or e.get("flagged"):
            plot.label(n, o / x, subject, _tier_color(e))
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


def score_chart(test: str, entries: list[dict], unit: str) -> str:
    """The test's score (`statistic`) against exposure `n`, each subject's controls beside it (hollow marks)."""
    read = [(e, _fin(e.get("n")), _fin(e.get("statistic"))) for e in entries]
    pts = [(e, n, s) for e, n, s in read if n is not None and s is not None]
    if not pts:
        return ""
    ys = [s for _, _, s in pts] + [v for e, _, _ in pts for _, v in _controls_with(e, "statistic")] + [0.0]
    nmax = max(n for _, n, _ in pts)
    plot = Plot("Score against exposure, with controls", unit, "score (0 = what honest play gives)",
                (0, nmax * 1.08), _pad(min(ys), max(ys)),
                desc="Filled dots: the test's score. Hollow diamonds: the same score on controls a cheat "
                     "cannot use. A cheat stands out in the score, not in the controls.")
    plot.hline(0.0, GREEN, None, "honest expectation")
    plot.add_legend(BLUE, "score of the test")
    plot.add_legend(MUTED, "controls (hollow diamonds)")
    for e, n, s in sorted(pts, key=lambda t: (t[0].get("tier") == "report", str(t[0].get("subject")))):
        subject = str(e.get("subject"))
        for k, v in _controls_with(e, "statistic"):
            plot.polyline([(n, s), (n, v)], GRID, 1.0)
            plot.point(n, v, MUTED, f"{subject}, control {k}: {v:.3g}", r=3.5, hollow=True,
                       shape="diamond")
        plot.point(n, s, _tier_color(e), f"{subject}: score {s:.3g}, p = {_p(e.get('pvalue'))}")
        if e.get("tier") in ("report", "watch") or e.get("flagged"):
            plot.label(n, s, subject, _tier_color(e))
    return plot.render()


def _nlp(p: Any) -> float | None:
    v = _fin(p)
    if v is None or v > 1 or v < 0:
        return None
    return -math.log10(max(v, 1e-16))


def evidence_chart(test: str, entries: list[dict], unit: str, fam: dict | None = None) -> str:
    """Strength of evidence (−log10 p) against exposure `n`, controls beside each subject."""
    read = [(e, _fin(e.get("n")), _nlp(e.get("pvalue"))) for e in entries]
    pts = [(e, n, y) for e, n, y in read if n is not None and y is not None]
    if not pts:
        return ""
    ctl = [(e, n, k, -math.log10(max(min(v, 1.0), 1e-16))) for e, n, _ in pts
           for k, v in _controls_with(e, "pvalue")]
    m = len(entries)
    fdr = _fin((fam or {}).get("fdr")) or 0.05
    first = -math.log10(fdr / max(1, m))
    ys = [y for _, _, y in pts] + [c[3] for c in ctl] + [first * 1.1, 2.2]
    nmax = max(n for _, n, _ in pts)
    plot = Plot("Evidence against exposure", unit, "evidence: −log10 p (higher = stranger)",
                (0, nmax * 1.08), (0, max(ys) * 1.08),
                desc="Each dot is a subject; hollow diamonds are its controls. Above the red line a subject "
                     "would be flagged even if he were the only strange one.")
    plot.hline(2.0, AMBER, "4 3", "watch: p = 0.01", left=True)
    plot.hline(first, RED, "4 3", f"flag line for the strongest: p = {fdr:g}/{m}")
    plot.add_legend(BLUE, "p-value of the test")
    if ctl:
        plot.add_legend(MUTED, "controls (hollow diamonds)")
    for e, n, k, y in ctl:
        plot.point(n, y, MUTED, f"{e.get('subject')}, control {k}: p = {_p(10 ** -y)}",
                   r=3.5, hollow=True, shape="diamond")
    for e, n, y in sorted(pts, key=lambda t: (t[0].get("tier") == "report", str(t[0].get("subject")))):
        subject = str(e.get("subject"))
        plot.point(n, y, _tier_color(e), f"{subject}: p = {_p(e.get('pvalue'))}, n = {_num(n)}")
        if e.get("tier") in ("report", "watch") or e.get("flagged"):
            plot.label(n, y, subject, _tier_color(e))
    return plot.render()


# ------------------------------------------------------------------ QQ


def qq_plot(entries: list[dict], title: str = "p-values of the whole family against honest chance") -> str:
    read = [(e, _fin(e.get("pvalue"))) for e in entries]
    pts = sorted(((e, p) for e, p in read if p is not None and 0 <= p <= 1), key=lambda t: (t[1], str(
        t[0].get("subject"))))
    m = len(pts)
    if m == 0:
        return ""
    from scipy.stats import beta  # scipy.stats takes seconds to import: only when a chart is drawn

    xs = [-math.log10((i + 1) / (m + 1)) for i in range(m)]
    ys = [-math.log10(max(p, 1e-16)) for _, p in pts]
    up = [-math.log10(max(float(beta.ppf(0.025, i + 1, m - i)), 1e-16)) for i in range(m)]
    lo = [-math.log10(max(float(beta.ppf(0.975, i + 1, m - i)), 1e-16)) for i in range(m)]
    top = max(max(ys), max(xs), max(up)) * 1.08
    plot = Plot(title, "expected −log10 p if everyone were honest", "observed −log10 p", (0, max(xs) * 1.05 + 0.05),
                (0, top),
                desc="If everyone were honest the dots would follow the diagonal inside the band. Exact "
                     "p-values of counts are conservative, so honest dots often sit a little below it. Dots "
                     "far above it at the right end are the strange ones.")
    pairs = sorted(zip(xs, up, lo, strict=True))
    plot.band([(x, u) for x, u, _ in pairs], [(x, low) for x, _, low in pairs])
    plot.polyline([(0, 0), (max(xs) * 1.05 + 0.05, max(xs) * 1.05 + 0.05)], GREEN, 1.2)
    plot.add_legend(BAND, "95% band for honest subjects")
    plot.add_legend(GREEN, "honest expectation")
    for (e, p), x, y in sorted(zip(pts, xs, ys, strict=True), key=lambda t: (t[0][0].get("tier") == "report", t[1])):
        plot.point(x, y, _tier_color(e), f"{e.get('subject')}: p = {_p(p)}, q = {_p(e.get('qvalue'))}", r=3.5)
        if e.get("tier") == "report" or e.get("flagged"):
            plot.label(x, y, str(e.get("subject")), RED)
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


def timeline(entry: dict) -> str:
    """Cumulative excess (observed − expected so far) over the subject's deals, with the honest ±2 sd range.

    The range is ±2 sd of the null so far: from each point's own null variance when the detector gives it (the
    fourth element: `marked_ten`, `collusion`, `revoke_pattern`), else the subject's final null sd scaled by the
    share of the final expected count reached (variance proportional to expected, as for Bernoulli counts)."""
    pts = _timeline_points(entry.get("detail"))
    if not pts:
        return ""
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
    else:
        sd = null_sd(entry)
        final_exp = pts[-1][2]
        if sd is not None and sd > 0:
            for i, _, x, _ in pts:
                share = (x / final_exp) if final_exp > 0 else (i / xs[-1] if xs[-1] else 0)
                s = 2 * sd * math.sqrt(max(share, 0.0))
                band_u.append((i, s))
                band_l.append((i, -s))
    ys = ex + [b[1] for b in band_u] + [b[1] for b in band_l] + [0.0]
    plot = Plot(f"{_short(subject)}: cumulative excess, {_test_label(entry.get('test', ''))}",
                f"the subject's {spec.unit_short}, in order",
                "observed − expected so far", (min(xs + [0.0]), max(xs) * 1.02 + 1e-9), _pad(min(ys), max(ys)),
                desc="The line climbs when the event happens more often than honest chance gives. A line that "
                     "climbs steadily through the band means a steady excess; a jump means a cluster.")
    if band_u:
        plot.band(band_u, band_l)
        plot.add_legend(BAND, "honest range (about ±2 sd)")
    plot.hline(0.0, GREEN, None, "honest expectation")
    plot.polyline(list(zip(xs, ex, strict=True)), RED if entry.get("tier") == "report" else BLUE, 2.0)
    plot.add_legend(RED if entry.get("tier") == "report" else BLUE, "observed − expected")
    last = pts[-1]
    plot.label(last[0], last[1] - last[2], f"{last[1] - last[2]:+.1f}", RED if entry.get("tier") == "report"
               else BLUE)
    return plot.render()


# ------------------------------------------------------------------ per family


def charts_for_family(test: str, entries: list[dict], fam: dict | None = None) -> list[dict]:
    """The charts of one test section: its main chart (the spec's kind: `funnel`, `score` or `evidence`; the
    evidence chart when the main one has nothing to draw) and the family's QQ plot, as {caption, svg}."""
    spec = spec_of(test)
    out = []
    main = ""
    if spec.chart == "funnel":
        main = funnel(test, entries, spec.unit_short, spec.event.replace("received ", "receiving ")
                      .replace("turned up", "turning up"))
        caption = ("Funnel plot: each dot is a dealer, placed by deals dealt and by how often the event "
                   "happened relative to honest chance. Honest dealers scatter inside the funnel, which narrows "
                   "as deals add up; a dealer far above it is lucky beyond belief.")
    elif spec.chart == "score":
        main = score_chart(test, entries, spec.unit_short)
        caption = ("Scores against exposure: each filled dot is a player's score, hollow diamonds the same score "
                   "on controls. A cheat's score stands out while his controls stay near zero; a strong honest "
                   "reader is high on both.")
    if not main:
        main = evidence_chart(test, entries, spec.unit_short, fam)
        caption = ("Evidence against exposure: each dot is a subject, higher is stranger; hollow diamonds are "
                   "controls.")
    if main:
        out.append({"caption": caption, "svg": main})
    qq = qq_plot(entries, f"All {len(entries)} p-values against honest chance")
    if qq:
        out.append({"caption": f"QQ plot of all {len(entries)} p-values of this test. If everyone were honest "
                               "they would follow the diagonal inside the band.", "svg": qq})
    return out
