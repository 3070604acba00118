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
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..textsafe import visible
from .verdict import Coverage, findings_digest

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
    """The replay's summary: the verdict first (findings or none, issue 16), then the counts, then the tables."""
    con = console or SafeConsole()
    findings = list(report.findings)
    games = list(report.games_summary)
    bad = sum(1 for f in findings if f.code == "bad_record")
    won = sum(1 for g in games if g.ended_by == "points" and g.winner is not None)
    drawn = sum(1 for g in games if g.ended_by == "points" and g.winner is None)
    by_revoke = sum(1 for g in games if g.ended_by == "revoke")
    open_ = len(games) - won - drawn - by_revoke
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    by_code = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if report.deals - bad <= 0:  # issue 12: nothing replayed never reads as all clear
        con.print(f"[bold yellow]Nothing was replayed.[/] {safe_markup(Coverage.of(report.deals, findings).nothing_reason())}")
    elif findings:
        con.print(f"[bold red]{len(findings)} findings[/] in {report.deals - bad} deals replayed: "
                  + ", ".join(f"{safe_markup(code)} {k}" for code, k in by_code) + ".")
    elif report.deals:
        con.print("[bold green]No findings.[/]")
    for hint in pretty_hints(findings):  # issue 16: said once per file, before the tables
        con.print(f"[yellow]hint:[/] {safe_markup(hint)}")
    con.print(f"[bold]{report.deals}[/] records read: [bold]{report.deals - bad}[/] deals replayed, "
              f"[bold]{bad}[/] bad records")
    parts = [f"{won} won on points"]
    if drawn:
        parts.append(f"{drawn} ended without a winner")
    parts.append(f"{by_revoke} ended by a revoke")
    parts.append(f"{open_} unfinished")
    con.print(f"[bold]{report.games}[/] games: " + ", ".join(parts))
    if findings:
        print_table(con, "Findings by code", [Col("code", "token"), Col("count", "num"), Col("what it means")],
                    [([safe_markup(code), str(k), CODE_MEANING.get(code, "")], "red" if code in SEVERE else None)
                     for code, k in by_code])
        title = (f"Findings ({min(len(findings), show_findings)} of {len(findings)} shown; --json for all)"
                 if len(findings) > show_findings else "Findings")
        rows = []
        for f in findings[:show_findings]:
            place = " ".join(x for x in (f.game_id or "", "" if f.deal_no is None else f"deal {f.deal_no}",
                                         "" if f.trick is None else f"trick {f.trick}") if x)
            where = safe_markup(_short_source(f.source)) + (f"\n[dim]{safe_markup(place)}[/]" if place else "")
            rows.append(([where, safe_markup(f.code), safe_markup(f.message)], "red" if f.code in SEVERE else None))
        print_table(con, title, [Col("where (file:line, game, deal, trick)", "token"), Col("code", "token"),
                                 Col("message")], rows)
    if games:
        title = (f"Games ({min(len(games), show_games)} of {len(games)} shown; --json for all)"
                 if len(games) > show_games else "Games")
        rows = []
        for g in games[:show_games]:
            totals = "unknown" if g.totals is None else "  ".join(str(x) for x in g.totals)
            ended = g.ended_by or "unfinished"
            winner = "" if g.winner is None else f"side {g.winner}"
            if g.ended_by and g.winner is None:
                winner = "none"
            loser = "" if g.loser is None else f"side {g.loser}"
            rows.append(([safe_markup(g.game_id), str(g.deals), totals, winner, ended, loser], None))
        print_table(con, title, [Col("game", "token"), Col("deals", "num"), Col("totals", "token"),
                                 Col("winner", "token"), Col("ended by", "token"), Col("loser", "token")], rows)


def pretty_hints(findings) -> list[str]:
    """`source: hint` of each bad record that says its file looks like pretty-printed JSON (one per file, issue
    16: `logparse.json_error_message`). Findings as objects or as the JSON document's dicts (`findings_digest`)."""
    return list(findings_digest(findings).hints)


# ---------------------------------------------------------------- tables that never cut a token (issue 16)


@dataclass(frozen=True)
class Col:
    """A column of `print_table`: `kind` "token" (paths, file:line places, ids, names: never wrapped inside),
    "num" (right-aligned, never wrapped) or "text" (words, wrapped between them)."""

    header: str
    kind: str = "text"
    style: str | None = None


def _lines_width(t: Text) -> int:
    return max((cell_len(x) for x in t.plain.split("\n")), default=0)


def _longest_word(t: Text) -> int:
    return max((cell_len(w) for w in t.plain.split()), default=0)


def print_table(con: Console, title: str, cols: list[Col], rows: Sequence[tuple[Sequence[Any], str | None]],
                compact: bool = False, lines: bool = False) -> None:
    """A table at the console's width in which no path, place, id or name is cut inside (issue 16).

    Three layouts, the first that fits: the table at its natural width; the table with every token column at its
    widest cell and the text columns narrowed to (no less than) their longest word; else one block per row, the
    first cell on its own line and `header: value` below it, wrapped between words. `rows`: (cells, row style);
    a cell is rich markup (already escaped: `safe_markup`) or a `Text`. `compact`: no outer border, one space
    between columns (tables of numbers). `lines`: a rule between rows (rows of several lines)."""
    cells = [[c if isinstance(c, Text) else con.render_str(str(c)) for c in r] for r, _ in rows]
    n = len(cols)
    heads = [Text(c.header) for c in cols]
    # natural: every cell and the header on one line; need: token and number cells whole, text and headers cut
    # only between words
    natural = [max([_lines_width(r[i]) for r in cells] + [_lines_width(heads[i])]) for i in range(n)]
    need = [max([_lines_width(r[i]) if c.kind != "text" else _longest_word(r[i]) for r in cells]
                + [_longest_word(heads[i])]) for i, c in enumerate(cols)]
    frame = _frame(con, n, compact)  # borders and padding
    width = con.width
    if sum(need) + frame > width:
        _print_blocks(con, title, cols, cells, [st for _, st in rows])
        return
    widths = list(natural)
    if sum(natural) + frame > width:  # the spare columns shared in proportion to what each would still like
        widths = list(need)
        spare = width - frame - sum(need)
        want = sum(natural[i] - need[i] for i in range(n))
        for i in range(n):
            widths[i] += min(natural[i] - need[i], spare * (natural[i] - need[i]) // max(1, want))
        left = width - frame - sum(widths)
        for i in range(n):  # what the integer shares left over
            add = min(left, natural[i] - widths[i])
            widths[i] += add
            left -= add
    t = _table(title, compact)
    t.show_lines = lines
    for i, c in enumerate(cols):  # the header wraps between its words even over a token column
        t.add_column(Text(c.header, no_wrap=False), style=c.style, justify="right" if c.kind == "num" else "left",
                     no_wrap=c.kind != "text", overflow="fold", width=widths[i])
    for r, (_, st) in zip(cells, rows, strict=True):
        t.add_row(*r, style=st)
    con.print(t)


def _table(title: str | None, compact: bool) -> Table:
    if compact:
        from rich import box

        return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0))
    return Table(title=title, title_justify="left")


def _frame(con: Console, n: int, compact: bool) -> int:
    """The columns a table of `n` columns spends on borders and padding: measured on a table of one-wide cells."""
    t = _table(None, compact)
    for _ in range(n):
        t.add_column(width=1, no_wrap=True)
    t.add_row(*(["x"] * n))
    return _rendered_width(con, t) - n


def _rendered_width(con: Console, renderable) -> int:
    lines = con.render_lines(renderable, con.options.update(width=max(con.width, 1000)), pad=False)
    return max((sum(cell_len(seg.text) for seg in line) for line in lines), default=0)


def _print_blocks(con: Console, title: str, cols: list[Col], cells: list[list[Text]],
                  styles: list[str | None]) -> None:
    """The narrow layout of `print_table`: per row, its first cell, then `header: value` lines."""
    con.print(Text(title, style="bold"))
    for r, st in zip(cells, styles, strict=True):
        head = r[0].copy()
        head.stylize("bold")
        if st:
            head.stylize(st)
        con.print(head)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column()
        shown = [(c.header, cell) for c, cell in zip(cols[1:], r[1:], strict=True) if cell.plain]
        if shown and max(cell_len(h) for h, _ in shown) + 4 <= con.width // 2:
            for h, cell in shown:
                grid.add_row(f"  {h}:", cell)
            con.print(grid)
        else:
            for h, cell in shown:
                con.print(Text("  ") + Text(f"{h}: ", style="dim") + cell)


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


# ---------------------------------------------------------------- progress of a long study (issue 16)


class StudyProgress:
    """The progress of a long study on stderr, never on stdout: `say(what)` names the step under way, `advance(k)`
    counts `k` more units of work (simulated deals) out of `total`. On a terminal a rich bar with the time left;
    otherwise one line per step and per tenth of the work, `calibrate: <step> (35% done, about 1 min 20 s left)`.
    The estimate is the elapsed time scaled by the work left (`eta`)."""

    def __init__(self, total: int, prefix: str = "calibrate", console: Console | None = None,
                 clock=None) -> None:
        import time

        self.total = max(1, int(total))
        self.done = 0
        self.prefix = prefix
        self._clock = clock or time.perf_counter
        self._t0 = self._clock()
        self._con = console or Console(stderr=True)
        self._bar: Any = None  # a rich Progress on a terminal
        self._task: Any = None
        self._last_tenth = 0
        self.lines: list[str] = []  # what was said (the lines written when not on a terminal)

    def __enter__(self) -> "StudyProgress":
        if self._con.is_terminal:
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, \
                TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                 TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                 console=self._con, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.prefix, total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def eta(self) -> float | None:
        """Seconds left at the pace so far (None before any work is done)."""
        if self.done <= 0:
            return None
        spent = self._clock() - self._t0
        return spent * (self.total - self.done) / self.done

    def status(self) -> str:
        pct = min(100, int(100 * self.done / self.total))
        left = self.eta()
        return f"{pct}% done" + ("" if left is None else f", about {_duration(left)} left")

    def say(self, what: str) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self.prefix}: {escape(visible(what))}")
            return
        self._line(f"{self.prefix}: {what} ({self.status()})")

    def advance(self, k: int = 1) -> None:
        self.done = min(self.total, self.done + int(k))
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done)
            return
        tenth = 10 * self.done // self.total
        if tenth > self._last_tenth and self.done < self.total:
            self._last_tenth = tenth
            self._line(f"{self.prefix}: {self.status()}")

    def _line(self, text: str) -> None:
        self.lines.append(text)
        self._con.print(Text(visible(text)), soft_wrap=True, highlight=False)


def _duration(s: float) -> str:
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
