"""The terminal's safe console, the summary of a replay (rich tables) and the progress bar of long replays (on
stderr): what `auditor replay` shows. Light to import (rich and the verdict's words, nothing of the detectors), so
that `auditor replay` starts fast; the audit's summary is in `terminal`.

`print_replay(report)` takes a replay result (`auditor.replay.result.Replay`: `deals`, `games`, `findings` and
`games_summary`). `replay_progress(paths)` is a context manager giving the `progress(records_read)` callback of
`replay_paths`, drawing a bar on stderr with an estimate of the records to come when the input is long.

Every string from a log (game and table ids, player ids, sources, messages) goes through `safe_markup`: control
and bidirectional characters become visible escapes (`auditor.textsafe.visible`, issue 12: no escape sequence
from a log reaches the terminal) and rich markup is escaped.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from contextlib import contextmanager
from typing import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..textsafe import visible
from .verdict import Coverage

# what each finding code means (outputs.md), for the summary table
CODE_MEANING = {
    "bad_record": "not valid JSON, or breaks the deal-log/1 schema",
    "unknown_card": "a string that is not a card",
    "card_outside_pack": "a card not in the pack this deal uses",
    "duplicate_card": "the same card twice in the deal",
    "wrong_hand_size": "a seat dealt the wrong number of cards",
    "turn_up_mismatch": "the turn-up is not the dealer's (or the eldest's) card",
    "deck_mismatch": "hands or turn-up not what dealing from the deck gives",
    "card_not_in_hand": "a card played by a seat that did not hold it",
    "revoke": "failed to follow suit while able",
    "incomplete_play": "tricks missing, extra, or of the wrong size",
    "claim_mismatch": "a claimed revoke the replay does not find",
    "score_mismatch": "recorded points differ from the replay's",
    "total_mismatch": "recorded totals differ from the running totals",
    "winner_mismatch": "recorded winner differs from the replay's",
    "dealer_rotation": "the deal did not pass to the left",
    "deal_sequence": "deal numbers missing, repeated or not from 1",
    "play_after_game_end": "a deal after the game was won",
    "beg_irregular": "All Fours begging, running or discarding irregular",
}
SEVERE = {"bad_record", "revoke", "deck_mismatch", "card_not_in_hand", "turn_up_mismatch", "duplicate_card"}

SHOW_FINDINGS = 50
SHOW_GAMES = 50


class SafeConsole(Console):
    """A rich console whose closed pipe is an ordinary `BrokenPipeError` (rich's own answer is a silent exit 1,
    which reads as "findings"): the CLI turns it into one line on stderr and exit 4 (issue 12)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


def print_replay(report, console: Console | None = None, show_findings: int = SHOW_FINDINGS,
                 show_games: int = SHOW_GAMES) -> None:
    con = console or SafeConsole()
    findings = list(report.findings)
    games = list(report.games_summary)
    bad = sum(1 for f in findings if f.code == "bad_record")
    won = sum(1 for g in games if g.ended_by == "points" and g.winner is not None)
    drawn = sum(1 for g in games if g.ended_by == "points" and g.winner is None)
    by_revoke = sum(1 for g in games if g.ended_by == "revoke")
    open_ = len(games) - won - drawn - by_revoke
    con.print(f"[bold]{report.deals}[/] records read: [bold]{report.deals - bad}[/] deals replayed, "
              f"[bold]{bad}[/] bad records")
    if report.deals - bad <= 0:  # issue 12: nothing replayed never reads as all clear
        con.print(f"[bold yellow]Nothing was replayed.[/] {safe_markup(Coverage.of(report.deals, findings).nothing_reason())}")
    parts = [f"{won} won on points"]
    if drawn:
        parts.append(f"{drawn} ended without a winner")
    parts.append(f"{by_revoke} ended by a revoke")
    parts.append(f"{open_} unfinished")
    con.print(f"[bold]{report.games}[/] games: " + ", ".join(parts))
    if not findings and report.deals:
        con.print("[bold green]No findings.[/]")
    elif not findings:
        pass
    else:
        con.print(f"[bold]{len(findings)}[/] findings")
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        t = Table(title="Findings by code", title_justify="left")
        t.add_column("code")
        t.add_column("count", justify="right")
        t.add_column("what it means")
        for code, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            style = "red" if code in SEVERE else None
            t.add_row(safe_markup(code), str(k), CODE_MEANING.get(code, ""), style=style)
        con.print(t)
        t = Table(title=f"Findings ({min(len(findings), show_findings)} of {len(findings)} shown; --json for all)"
                  if len(findings) > show_findings else "Findings", title_justify="left")
        t.add_column("where (file:line, game, deal, trick)", overflow="fold", max_width=34)
        t.add_column("code", no_wrap=True)
        t.add_column("message", overflow="fold", ratio=1)
        for f in findings[:show_findings]:
            place = " ".join(x for x in (f.game_id or "", "" if f.deal_no is None else f"deal {f.deal_no}",
                                         "" if f.trick is None else f"trick {f.trick}") if x)
            where = safe_markup(_short_source(f.source)) + (f"\n[dim]{safe_markup(place)}[/]" if place else "")
            t.add_row(where, safe_markup(f.code), safe_markup(f.message), style="red" if f.code in SEVERE else None)
        con.print(t)
    if games:
        t = Table(title=f"Games ({min(len(games), show_games)} of {len(games)} shown; --json for all)"
                  if len(games) > show_games else "Games", title_justify="left")
        for col in ("game", "deals", "totals", "winner", "ended by", "loser"):
            t.add_column(col, justify="right" if col == "deals" else "left")
        for g in games[:show_games]:
            totals = "unknown" if g.totals is None else "  ".join(str(x) for x in g.totals)
            ended = g.ended_by or "unfinished"
            winner = "" if g.winner is None else f"side {g.winner}"
            if g.ended_by and g.winner is None:
                winner = "none"
            loser = "" if g.loser is None else f"side {g.loser}"
            t.add_row(safe_markup(g.game_id), str(g.deals), totals, winner, ended, loser)
        con.print(t)


def _s(x) -> str:
    return "" if x is None else str(x)


def _short_source(source: str) -> str:
    """file:line with the file's directories dropped (the JSON keeps the path as given)."""
    path, sep, line = source.rpartition(":")
    if not sep or not line.isdigit():
        return os.path.basename(source) or source
    return f"{os.path.basename(path)}:{line}"


def safe_markup(text: object) -> str | Text:
    """A string from a log, safe for the terminal: controls and bidi characters as visible escapes, rich markup
    escaped. A rich `Text` is taken as already safe (it is never parsed as markup)."""
    if isinstance(text, Text):
        return text
    return escape(visible(text))


# ---------------------------------------------------------------- progress


LONG_INPUT = 20_000  # records: below this the replay is over before a bar helps


def estimate_records(paths: Iterable[str]) -> int | None:
    """About how many records the inputs hold, from their sizes and the length of their first lines (gzip: the
    uncompressed size in the trailer; Parquet: the row count). None when it cannot tell."""
    total = 0
    for p in paths:
        try:
            if not os.path.isfile(p):
                continue
            if str(p).endswith(".parquet"):
                rows = _parquet_rows(p)
                if rows is None:
                    return None
                total += rows
                continue
            size = os.path.getsize(p)
            with open(p, "rb") as f:
                gz = f.read(2) == b"\x1f\x8b"
                if gz:
                    f.seek(-4, os.SEEK_END)
                    isize = struct.unpack("<I", f.read(4))[0]
                    size = max(isize, size)  # ISIZE is the size mod 2**32
                    f.seek(0)
                    head = gzip.GzipFile(fileobj=f).read(1 << 16)
                else:
                    f.seek(0)
                    head = f.read(1 << 16)
            lines = head.count(b"\n")
            if lines == 0:
                total += 1 if size else 0
            else:
                total += int(size / (len(head[: head.rfind(b"\n") + 1]) / lines))
        except (OSError, EOFError, struct.error, zlib.error):  # an estimate only: never stop a replay for it
            return None  # (a file that cannot be read, a gzip stream cut short or damaged)
    return total


def _parquet_rows(path: str) -> int | None:
    """The row count in a Parquet file's footer, or None when it cannot be read (the replay says why)."""
    import pyarrow  # only for a Parquet input: the replay of JSONL never loads pyarrow
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, pyarrow.ArrowException):  # not Parquet, or damaged: the estimate only
        return None


@contextmanager
def replay_progress(paths: list[str], console: Console | None = None, threshold: int = LONG_INPUT):
    """A `progress(records_read)` callback drawing a bar on stderr for long inputs (a no-op for short ones)."""
    total = estimate_records(paths)
    if total is not None and total < threshold:
        yield lambda k: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    con = console or Console(stderr=True)
    columns = [TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TextColumn("records"),
               TimeElapsedColumn()]
    if total is not None:
        columns.append(TimeRemainingColumn())
    with Progress(*columns, console=con, transient=True) as bar:
        task = bar.add_task("replay", total=total)

        def progress(k: int) -> None:
            shown = bar.tasks[0].total
            if total is not None and shown is not None and k > shown:
                bar.update(task, total=k)
            bar.update(task, completed=k)

        yield progress


# ---------------------------------------------------------------- command help (issue 16)


def print_help(usage: str, paragraphs: list[str], sections: list[tuple[str, list[tuple[str, str]]]],
               epilog: list[str], console: Console | None = None) -> None:
    """A command's `--help`: the usage line, its description, one section per kind of parameter (a name such as
    `--out FILE` or `PATH...` and what it does) and the epilog (the exit codes). Names are never wrapped: below
    about 60 columns, or when the longest name would take half the width, each name goes on its own line with
    its words indented under it."""
    out = console or SafeConsole(highlight=False)
    con = Console(width=out.width, force_terminal=out.is_terminal, no_color=out.no_color, highlight=False)
    with con.capture() as cap:
        _help_body(con, usage, paragraphs, sections, epilog)
    out.file.write("\n".join(line.rstrip() for line in cap.get().splitlines()) + "\n")
    out.file.flush()


def _help_body(con: Console, usage: str, paragraphs: list[str], sections: list[tuple[str, list[tuple[str, str]]]],
               epilog: list[str]) -> None:
    con.print(Text("Usage: ", style="bold") + Text(usage))
    for para in paragraphs:
        con.print()
        con.print(_indented(para, 2))
    for title, rows in sections:
        if not rows:
            continue
        con.print()
        con.print(Text(f"{title}:", style="bold"))
        longest = max(len(name) for name, _ in rows)
        if con.width < 60 or longest + 6 > con.width // 2:
            for name, words in rows:
                con.print(Text("  ") + Text(name, style="bold cyan"), no_wrap=True, overflow="ignore")
                if words:
                    con.print(_indented(words, 6))
            continue
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, min_width=longest, style="bold cyan")
        grid.add_column(ratio=1)
        for name, words in rows:
            grid.add_row(name, Text(words))
        con.print(_indented(grid, 2))
    for para in epilog:
        con.print()
        con.print(_indented(para, 2))


def _indented(renderable, n: int):
    from rich.padding import Padding

    return Padding(Text(renderable) if isinstance(renderable, str) else renderable, (0, 0, 0, n), expand=False)
