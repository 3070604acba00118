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
