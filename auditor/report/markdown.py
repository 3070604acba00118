"""The Markdown report (for a ticket or an email), from the same view as the HTML report.

The template is rendered with an escaping `finalize`: every `{{ ... }}` is escaped for Markdown *and* for the HTML
that Markdown renderers pass through, unless the template marks a literal with `raw(...)`. So a player named
``<script>`` or ``[x](javascript:...)`` or ``a | b`` stays text in a ticket system. No charts here: they are in the
HTML report.
"""

from __future__ import annotations

from functools import lru_cache

from ..textsafe import visible
from .view import build_view

MD_FINDINGS = 50  # findings rows in the Markdown report
MD_ROWS = 25  # rows per test

_MD_SPECIAL = set("\\`*_[]|~<>&")


class Raw(str):
    """A template literal that is already safe Markdown."""


def md_escape(value) -> str:
    """Escape one value for inline Markdown: HTML specials become entities, Markdown specials are backslashed,
    line breaks become spaces (a value never starts a block), and every other control or bidirectional character
    becomes a visible escape (`auditor.textsafe.visible`: ESC is shown as \\x1b)."""
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return ""
    text = " ".join(str(value).split("\n"))
    text = visible(text.replace("\r", " "))  # issue 12: no raw ESC, C1 or bidi control reaches the file
    out = []
    for ch in text:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=1)
def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("auditor.report", "templates"),
        autoescape=False,  # Markdown, not HTML: escaping is done by `finalize` below, for every expression
        finalize=md_escape,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["raw"] = Raw
    return env


def render_markdown(doc: dict, view: dict | None = None) -> str:
    view = build_view(doc, charts=False) if view is None else view
    text = environment().get_template("report.md.j2").render(v=view, md_findings=MD_FINDINGS, md_rows=MD_ROWS)
    # collapse runs of blank lines left by the template's conditionals
    lines, blank = [], 0
    for line in text.splitlines():
        blank = blank + 1 if not line.strip() else 0
        if blank <= 1:
            lines.append(line.rstrip())
    return "\n".join(lines).strip("\n") + "\n"
