"""Readable terminal summaries (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def print_replay(report, console: Console | None = None) -> None:
    con = console or Console()
    con.print(f"[bold]{report.deals}[/] records read, [bold]{report.games}[/] games, "
              f"[bold]{len(report.findings)}[/] findings")
    if report.findings:
        counts = Table(title="Findings by code")
        counts.add_column("code")
        counts.add_column("count", justify="right")
        for code, k in sorted(report.counts().items(), key=lambda kv: -kv[1]):
            counts.add_row(code, str(k))
        con.print(counts)
        t = Table(title="Findings (first 200)")
        for col in ("source", "code", "game", "deal", "trick", "player", "message"):
            t.add_column(col, overflow="fold")
        for f in report.findings[:200]:
            t.add_row(*[_esc(x) for x in (f.source, f.code, f.game_id or "", str(f.deal_no or ""),
                                          str(f.trick or ""), f.player or "", f.message)])
        con.print(t)
    g = Table(title="Games")
    for col in ("game", "deals", "totals", "winner", "ended by", "loser"):
        g.add_column(col)
    for s in report.games_summary[:200]:
        g.add_row(_esc(s.game_id), str(s.deals), _esc(str(s.totals)), str(s.winner), str(s.ended_by), str(s.loser))
    if len(report.games_summary) > 200:
        g.caption = f"{len(report.games_summary) - 200} more games not shown (use --json)"
    con.print(g)


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# ---------------------------------------------------------------- audit summary (issue 7: the report)


def print_audit(doc: dict, console: Console | None = None) -> None:
    """The audit document (outputs.md) as a terminal summary, from the same view as the HTML and Markdown
    reports (`auditor.report.sentences.build_view`). Every string from a log is escaped for rich markup."""
    from .sentences import build_view

    con = console or Console()
    v = build_view(doc, charts=False)
    style = "bold red" if v["n_flags"] else "bold green"
    con.print(f"[{style}]{_esc(v['headline'])}.[/]")
    con.print(f"{v['deals']} deal records, {v['games']} games, {v['n_tests']} tests in {v['n_families']} "
              f"families, FDR {v['fdr']}, seed {_esc(v['seed'])}")
    if v["flags"]:
        t = Table(title="Flagged (q ≤ FDR)", show_lines=True)
        t.add_column("subject", style="bold red", overflow="fold")
        t.add_column("test")
        t.add_column("what the logs show", overflow="fold")
        for f in v["flags"]:
            text = f["sentence"] + (("\n" + f["controls_sentence"]) if f["controls_sentence"] else "")
            t.add_row(_esc(f["subject"]), _esc(f["test"]), _esc(text))
        con.print(t)
    if v["watch"]:
        t = Table(title="Watch list (not a flag)")
        t.add_column("subject", style="yellow", overflow="fold")
        t.add_column("test")
        t.add_column("p", justify="right")
        t.add_column("q", justify="right")
        for f in v["watch"]:
            t.add_row(_esc(f["subject"]), _esc(f["test"]), f["p"], f["q"])
        con.print(t)
    if v["families"]:
        t = Table(title="Test families")
        for col in ("test", "subjects", "FDR", "flags", "watch"):
            t.add_column(col, justify="right" if col != "test" else "left")
        for fam in v["families"]:
            fdr = f"{fam['fdr']:.0%}" if fam["fdr"] is not None else "n/a"
            t.add_row(_esc(fam["test"]), str(fam["size"]), fdr, str(fam["n_flagged"]), str(fam["n_watch"]))
        con.print(t)
    if v["findings_by_code"]:
        t = Table(title=f"Replay findings ({v['n_findings']})")
        t.add_column("code")
        t.add_column("count", justify="right")
        t.add_column("what")
        for c in v["findings_by_code"]:
            t.add_row(_esc(c["code"]), str(c["count"]), _esc(c["words"]))
        con.print(t)
    con.print(f"[dim]Not flagged is not clean. {_esc(v['not_clean_note'])}[/]")
    con.print(f"[dim]{_esc(v['monthly_note'])}[/]")
