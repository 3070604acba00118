"""The audit document as a terminal summary (rich tables), from the same view as the HTML and Markdown reports.

The replay's summary, its progress bar and the safe console are in `console` (light to import, for `auditor
replay`); they are named here too, for the callers that import them from this module. Every string from a log
goes through `console.safe_markup` (visible escapes for controls and bidirectional characters, rich markup
escaped).
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..replay.result import DocEntries
from ..textsafe import visible
from .console import (CODE_MEANING, LONG_INPUT, SEVERE, Col, SafeConsole, estimate_records, pretty_hints,
                      print_replay, print_table, replay_progress, safe_markup)
from .verdict import Coverage
from .view import build_view

__all__ = ["CODE_MEANING", "LONG_INPUT", "SEVERE", "SafeConsole", "estimate_records", "print_audit",
           "print_replay", "replay_progress", "safe_markup"]


# ---------------------------------------------------------------- audit summary (issue 7: the report)


def print_audit(doc: dict, console: Console | None = None, view: dict | None = None) -> None:
    """The audit document (outputs.md) as a terminal summary, from the same view as the HTML and Markdown
    reports (`auditor.report.view.build_view`; `view`: the one a report of the same run was made from, charts or
    not: the summary reads no chart). Every string from a log is escaped for rich markup."""

    con = console or SafeConsole()
    v = build_view(doc, charts=False) if view is None else view
    cover = Coverage.of_doc(doc)  # issue 12: green only when deals were audited and every record was read
    style = "bold red" if v["n_flags"] else "bold green" if cover.audited and not cover.not_read else "bold yellow"
    con.print(f"[{style}]{safe_markup(v['headline'])}.[/]")
    # issue 16: the verdict per person opens the summary, as in the HTML: one paragraph each, wrapped between
    # words to the terminal's width (a name is one word: never cut), before any number or table
    for p in v["people"]:
        tag = f"{p['n_flags']} flag{'' if p['n_flags'] == 1 else 's'}" + (", strong" if p["strong"] else "")
        con.print(Text.assemble((visible(p["person"]), "bold red"), f" ({tag}): ", visible(p["paragraph"])),
                  overflow="fold")
        con.print()
    con.print(f"{v['deals']} deal records, {v['games']} games, {v['n_tests']} tests in {v['n_families']} "
              f"families, audit-wide level {v['fdr']}, seed {safe_markup(v['seed'])}")
    if v.get("audit_sentence"):
        con.print(safe_markup(v["audit_sentence"]))
    if v.get("selection"):
        con.print(safe_markup(v["selection"]))
    for hint in _pretty_hints(doc):  # issue 16: a pretty-printed file is said once, here too
        con.print(f"[yellow]hint:[/] {safe_markup(hint)}")
    # issue 16: subjects, test names and codes are tokens (`console.print_table`): never cut inside at any width
    if v["flags"]:
        rows = []
        for f in v["flags"]:
            text = Text(visible(f["sentence"]) + (("\n" + visible(f["controls_sentence"]))
                                                   if f["controls_sentence"] else ""))
            rows.append(([safe_markup(f["subject"]), safe_markup(f["test"] + (" (strong)" if f.get("strong") else "")),
                          text], None))
        print_table(con, "Flagged (q ≤ the audit's level)", [Col("subject", "token", "bold red"), Col("test", "token"),
                                                              Col("what the logs show")], rows, lines=True)
    if v["watch"]:
        print_table(con, "Watch list (not a flag)", [Col("subject", "token", "yellow"), Col("test", "token"),
                                                      Col("p", "num"), Col("q", "num")],
                    [([safe_markup(f["subject"]), safe_markup(f["test"]), f["p"], f["q"]], None) for f in v["watch"]])
    if v["families"]:
        rows = []
        for fam in v["families"]:
            share = f"{fam['share']:.0%}" if fam.get("share") is not None else "n/a"
            rows.append(([safe_markup(fam["test"]), str(fam["size"]), share, str(fam["n_flagged"]),
                          str(fam["n_watch"])], None))
        print_table(con, "Test families", [Col("test", "token")] + [Col(c, "num") for c in
                                                                    ("subjects", "share", "flags", "watch")], rows)
    if v["findings_by_code"]:
        print_table(con, f"Replay findings ({v['n_findings']})", [Col("code", "token"), Col("count", "num"),
                                                                   Col("what")],
                    [([safe_markup(c["code"]), str(c["count"]), safe_markup(c["words"])], None)
                     for c in v["findings_by_code"]])
    con.print(f"[dim]Not flagged is not clean. {safe_markup(v['not_clean_note'])}[/]")
    con.print(f"[dim]{safe_markup(v['monthly_note'])}[/]")



def _pretty_hints(doc: dict) -> list[str]:
    replay = doc.get("replay") if isinstance(doc.get("replay"), dict) else None
    findings = (replay or {}).get("findings")
    return pretty_hints(findings if isinstance(findings, (list, DocEntries)) else ())
