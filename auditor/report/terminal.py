"""The audit document as a terminal summary (rich tables), from the same view as the HTML and Markdown reports.

The replay's summary, its progress bar and the safe console are in `console` (light to import, for `auditor
replay`); they are named here too, for the callers that import them from this module. Every string from a log
goes through `console.safe_markup` (visible escapes for controls and bidirectional characters, rich markup
escaped).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..textsafe import visible
from .console import (CODE_MEANING, LONG_INPUT, SEVERE, SafeConsole, estimate_records, print_replay,
                      replay_progress, safe_markup)
from .verdict import Coverage
from .view import build_view

__all__ = ["CODE_MEANING", "LONG_INPUT", "SEVERE", "SafeConsole", "estimate_records", "print_audit",
           "print_replay", "replay_progress", "safe_markup"]


# ---------------------------------------------------------------- audit summary (issue 7: the report)


def print_audit(doc: dict, console: Console | None = None) -> None:
    """The audit document (outputs.md) as a terminal summary, from the same view as the HTML and Markdown
    reports (`auditor.report.view.build_view`). Every string from a log is escaped for rich markup."""

    con = console or SafeConsole()
    v = build_view(doc, charts=False)
    cover = Coverage.of_doc(doc)  # issue 12: green only when deals were audited and every record was read
    style = "bold red" if v["n_flags"] else "bold green" if cover.audited and not cover.not_read else "bold yellow"
    con.print(f"[{style}]{safe_markup(v['headline'])}.[/]")
    con.print(f"{v['deals']} deal records, {v['games']} games, {v['n_tests']} tests in {v['n_families']} "
              f"families, audit-wide level {v['fdr']}, seed {safe_markup(v['seed'])}")
    if v.get("audit_sentence"):
        con.print(safe_markup(v["audit_sentence"]))
    if v.get("selection"):
        con.print(safe_markup(v["selection"]))
    if v["flags"]:
        t = Table(title="Flagged (q ≤ the audit's level)", show_lines=True)
        t.add_column("subject", style="bold red", overflow="fold")
        t.add_column("test")
        t.add_column("what the logs show", overflow="fold")
        for f in v["flags"]:
            text = Text(visible(f["sentence"]) + (("\n" + visible(f["controls_sentence"]))
                                                   if f["controls_sentence"] else ""))
            t.add_row(safe_markup(f["subject"]), safe_markup(f["test"] + (" (strong)" if f.get("strong") else "")), safe_markup(text))
        con.print(t)
    if v["watch"]:
        t = Table(title="Watch list (not a flag)")
        t.add_column("subject", style="yellow", overflow="fold")
        t.add_column("test")
        t.add_column("p", justify="right")
        t.add_column("q", justify="right")
        for f in v["watch"]:
            t.add_row(safe_markup(f["subject"]), safe_markup(f["test"]), f["p"], f["q"])
        con.print(t)
    if v["families"]:
        t = Table(title="Test families")
        for col in ("test", "subjects", "share", "flags", "watch"):
            t.add_column(col, justify="right" if col != "test" else "left")
        for fam in v["families"]:
            share = f"{fam['share']:.0%}" if fam.get("share") is not None else "n/a"
            t.add_row(safe_markup(fam["test"]), str(fam["size"]), share, str(fam["n_flagged"]), str(fam["n_watch"]))
        con.print(t)
    if v["findings_by_code"]:
        t = Table(title=f"Replay findings ({v['n_findings']})")
        t.add_column("code")
        t.add_column("count", justify="right")
        t.add_column("what")
        for c in v["findings_by_code"]:
            t.add_row(safe_markup(c["code"]), str(c["count"]), safe_markup(c["words"]))
        con.print(t)
    con.print(f"[dim]Not flagged is not clean. {safe_markup(v['not_clean_note'])}[/]")
    con.print(f"[dim]{safe_markup(v['monthly_note'])}[/]")
