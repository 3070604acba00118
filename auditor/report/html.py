"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network), from the audit document.

`render_html(doc)` lays out `view.build_view(doc)` with a jinja2 template under autoescape, so every string
from a log is escaped; charts are SVG strings built by `svg.py`, which escapes its own text. A Content-Security-Policy
meta tag forbids scripts and any network access as a second line of defence.

`write_report(doc, path)` is what `auditor audit --out FILE` calls: `.html`, `.md` or `.json` by the suffix; the
file is written whole or not at all (`auditor.atomic`). The page passes through `textsafe.visible` (issue 12), so a
bidirectional override or a control character from a log shows as an escape instead of reordering the text.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup

from ..atomic import write_text
from ..errors import UsageError
from ..textsafe import visible
from .formats import format_of
from .markdown import render_markdown
from .view import build_view

@lru_cache(maxsize=1)
def environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("auditor.report", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _mark_svgs(view: dict) -> dict:
    """Charts are trusted markup (built and escaped by svg.py); everything else stays plain text."""
    for fam in view.get("families", []):
        for c in fam.get("charts", []):
            c["svg"] = Markup(c["svg"])
    for t in view.get("timelines", []):
        t["svg"] = Markup(t["svg"])
    return view


def render_html(doc: dict, view: dict | None = None) -> str:
    view = _mark_svgs(build_view(doc) if view is None else view)
    return html_safe(environment().get_template("report.html.j2").render(v=view))


def html_safe(text: str) -> str:
    """The rendered page with every control and bidirectional character shown as an escape (issue 12):
    autoescape stops markup, not a right-to-left override in a player's name (nor one inside a chart's labels).
    The page's own newlines and tabs are kept."""
    return visible(text, keep="\t\n\r")


def render_json(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render(doc: dict, fmt: str, view: dict | None = None) -> str:
    if fmt == "html":
        return render_html(doc, view)
    if fmt == "md":
        return render_markdown(doc, view)
    if fmt == "json":
        return render_json(doc)
    raise UsageError(f"unknown report format {fmt!r}: use html, md or json")


def write_report(doc: dict, path: str | Path, view: dict | None = None) -> Path:
    """Write the audit document `doc` to `path` as HTML, Markdown or JSON (chosen by the suffix).

    Another suffix, or a path that cannot be written, raises `UsageError` (exit 2) with the path in the message, so
    the CLI prints one line instead of a traceback. `view`: `build_view(doc)` (with charts for HTML) when the
    caller has it already (the terminal summary reads the same view)."""
    path = Path(path)
    text = render(doc, format_of(path), view)
    try:
        write_text(path, text)  # issue 12: a temporary file beside it, fsynced and renamed; never half a report
    except OSError as e:
        raise UsageError(f"cannot write {str(path)!r}: {e.strerror or e}") from None
    return path
