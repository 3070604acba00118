"""(issue 16) The blank score sheet: a CSV to type into, an HTML page to print (A4 or Letter, landscape).

Both have the columns of `auditor.sheets.read` for a table of `players` seats and `sides` sides (the default, four
players in two partnerships, is the usual club table): the CSV has the header row only; the printed sheet has
the same column names over its boxes, so that what is written by hand is typed into the CSV column of that name,
and a key to the columns below the grid. `write_csv` is also the writer of the simulated sheets
(`sheets.project`). Every file is written whole or not at all (`auditor.atomic`).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence

from ..atomic import atomic_open
from ..errors import UsageError
from ..rules import PRESETS
from .read import DESCRIBE, MAX_SEATS, POINTS, SEATS, TOTALS

PAPERS = {"a4": "A4", "letter": "letter"}
KINDS = ("csv", "html")


def template_kind(path: str) -> str | None:
    s = str(path).lower()
    if s.endswith(".csv"):
        return "csv"
    if s.endswith((".html", ".htm")):
        return "html"
    return None


def template_columns(players: int = 4, sides: int = 2, *, game_column: bool = False, beg: bool = False,
                     shown: bool = False, time: bool = False) -> list[str]:
    """The columns of a sheet for `players` seats and `sides` sides (`sides` = `players`: every player for
    himself, no `sides` column)."""
    if not 2 <= players <= MAX_SEATS:
        raise UsageError(f"a score sheet has 2 to {MAX_SEATS} seats, not {players}")
    if not 2 <= sides <= players:
        raise UsageError(f"{players} players sit as 2 to {players} sides, not {sides}")
    cols = ["date"] + (["time"] if time else []) + ["table", "game_no", "deal_no"]
    if game_column:
        cols += ["game", "rules"]
    cols += list(SEATS[:players])
    if sides < players:
        cols.append("sides")
    cols += ["dealer", "turn_up"] + (["shown"] if shown else []) + (["beg", "bunched"] if beg else [])
    cols += ["jack", "ten", "revoke"]
    cols += list(POINTS[:sides]) + list(TOTALS[:sides]) + ["winner"]
    return cols


def write_csv(path: str, columns: Sequence[str], rows: Iterable[dict[str, str]] = ()) -> int:
    """A sheet as CSV (UTF-8, a header row, then one line per row: missing cells blank). Returns the rows."""
    count = 0
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([r.get(c, "") for c in columns])
            count += 1
    return count


def _keys(columns: Sequence[str]) -> list[tuple[str, str]]:
    """(columns, what to write) for the key under the printed grid: numbered columns (seat_1 .. seat_4) once."""
    out: list[tuple[str, str]] = []
    done: set[str] = set()
    for c in columns:
        prefix = next((p for p in ("seat_", "points_", "total_") if c.startswith(p)), None)
        if prefix is None:
            out.append((c, DESCRIBE[c]))
        elif prefix not in done:
            done.add(prefix)
            group = [x for x in columns if x.startswith(prefix)]
            out.append((f"{group[0]} .. {group[-1]}" if len(group) > 1 else group[0], DESCRIBE[prefix + "k"]))
    return out


def _check(players: int, game: str, rules: str) -> None:
    R = PRESETS.get((game, rules))
    if R is None:
        raise UsageError(f"unknown game or preset {game!r} / {rules!r} (scotch_whist foster or russian, all_fours "
                         "foster)")
    if not R.min_players <= players <= R.max_players:
        raise UsageError(f"{game} {rules} is for {R.min_players} to {R.max_players} players, not {players}")


def render_html(players: int = 4, sides: int = 2, rows: int = 20, paper: str = "a4", title: str = "",
                game: str = "scotch_whist", rules: str = "foster") -> str:
    """The printable sheet (one self-contained HTML page; `paper` a4 or letter)."""
    import jinja2

    _check(players, game, rules)
    if paper not in PAPERS:
        raise UsageError(f"paper must be a4 or letter, not {paper!r}")
    if not 1 <= rows <= 200:
        raise UsageError(f"a printed sheet has 1 to 200 rows, not {rows}")
    cols = template_columns(players, sides, beg=game == "all_fours")
    env = jinja2.Environment(loader=jinja2.PackageLoader("auditor", "report/templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    tmpl = env.get_template("score_sheet.html.j2")
    return tmpl.render(columns=cols, keys=_keys(cols), rows=rows, paper=PAPERS[paper],
                       title=title, game=game, rules=rules, players=players, sides=sides,
                       points=[c for c in cols if c.startswith("points_")])


def write_template(path: str, players: int = 4, sides: int = 2, rows: int = 20, paper: str = "a4",
                   title: str = "", game: str = "scotch_whist", rules: str = "foster") -> str:
    """Write the blank sheet (its kind by the name: .csv or .html). Returns the kind."""
    kind = template_kind(path)
    if kind is None:
        raise UsageError(f"{path}: the blank sheet must end in .csv or .html")
    _check(players, game, rules)
    if kind == "csv":
        write_csv(path, template_columns(players, sides, beg=game == "all_fours"))
    else:
        text = render_html(players, sides, rows, paper, title, game, rules)
        with atomic_open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return kind
