"""(issue 16) Read a club's score sheet (CSV or .xlsx) into deal-log/1 records of the score-sheet kind.

One row per deal, the columns of `COLUMNS` (header in the first row, names in any case, spaces or hyphens for
underscores); rows whose every cell is blank are spacing, not deals. A row becomes one record
(docs/spec/deal-log.md "Score-sheet records"):

    game_id  = "{date}/{table}/{game_no}"        time = the date (and the time, when given)
    players  = seat_1, seat_2, ... (clockwise, no gaps)
    sides    = the `sides` cell, e.g. "ann+cy / bob+dee" (blank: every player for himself); side k is the k-th
               group, and points_k / total_k are its points and running total
    dealer, observed.jack, observed.ten = the seats of the players named (jack, ten blank: not in play)
    recorded = {"points": [points_1..], "totals": [total_1..] (when given), "winner": side (when given)}

Every cell is checked on its own and within its row (a name that is no player at the table, a card that is not a
card, sides that do not cover the players, a missing side's points); what needs the rules or the other rows
(totals, the winner, the dealer's rotation, the Jack's and Ten's points) is the replay's (`replay/sheet.py`), so
that each rule is written once. `read_sheet` never raises on a bad cell: it returns every problem, each naming
its row (the spreadsheet's numbering: the header is row 1) and column.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cards import CARD_STR, parse_card
from ..errors import InputError, RecordError, UsageError
from ..logparse import GAME_ALIASES, check_input, norm_name, validate
from ..rules import PRESETS

MAX_SEATS = 8
SEATS = tuple(f"seat_{k}" for k in range(1, MAX_SEATS + 1))
POINTS = tuple(f"points_{k}" for k in range(1, MAX_SEATS + 1))
TOTALS = tuple(f"total_{k}" for k in range(1, MAX_SEATS + 1))
REQUIRED = ("date", "table", "game_no", "deal_no", "seat_1", "seat_2", "dealer", "turn_up", "jack", "ten",
            "points_1")
OPTIONAL = ("time", "game", "rules", "options", "sides", "shown", "beg", "bunched", "revoke", "winner")
COLUMNS = ("date", "time", "table", "game_no", "deal_no", "game", "rules", "options") + SEATS + (
    "sides", "dealer", "turn_up", "shown", "beg", "bunched", "jack", "ten", "revoke") + POINTS + TOTALS + ("winner",)
"""Every column a sheet may have, in the template's order."""

DESCRIBE = {
    "date": "the day the game was played, YYYY-MM-DD",
    "time": "optional: the time the deal started, HH:MM",
    "table": "the table's name",
    "game_no": "the game's number at that table that day (1, 2, ...)",
    "deal_no": "the deal's number in its game (1, 2, ...)",
    "game": "optional: scotch_whist or all_fours (default: the import's --game)",
    "rules": "optional: the rules' preset, foster or russian (default: the import's --rules)",
    "options": "optional: house rules as switches of docs/spec/rules.md, e.g. odd_pack=show_36th_dead; target=10",
    "seat_k": "the players by seat, clockwise from seat_1 (as many seats as play)",
    "sides": "the partnerships, e.g. ann+cy / bob+dee (blank: every player for himself); side k is the k-th group",
    "dealer": "the player who dealt",
    "turn_up": "the card turned up for trump, e.g. 9d, Ts, Jh",
    "shown": "optional: the card shown and out of play (Scotch Whist, 5 or 7 players, show_36th_dead)",
    "beg": "optional, All Fours: stand, take_one or run",
    "bunched": "optional, All Fours: yes when the pack ran out while running the cards (the deal is thrown in)",
    "jack": "the player who played the Jack of trumps (blank: not in play)",
    "ten": "the player who took the Ten of trumps in a trick (blank: not in play)",
    "revoke": "optional: the player whose revoke was claimed (blank: none)",
    "points_k": "the points each side scored in the deal (side 1, side 2, ... as in sides)",
    "total_k": "optional: each side's running total after the deal",
    "winner": "optional, on the deal that ends the game: the winning side's number (or a player of it)",
}

_INT = re.compile(r"^[+-]?\d+(\.0+)?$")
_GROUPS = re.compile(r"\s*[/;|]\s*")
_MEMBERS = re.compile(r"\s*[+&,]\s*")
MAX_LISTED = 50  # problems listed one by one; the rest are counted


@dataclass(frozen=True)
class Problem:
    """One bad cell (or header, or row): `row` in the spreadsheet's numbering (1: the header), `column` its name
    (None: the row as a whole)."""

    row: int
    column: str | None
    message: str

    def line(self, name: str) -> str:
        where = f"{name} row {self.row}" + (f", column {self.column!r}" if self.column else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class SheetImport:
    """What a sheet gave: its records (canonical deal-log/1 objects, in row order), its problems, the rows read."""

    records: tuple[dict[str, Any], ...]
    problems: tuple[Problem, ...]
    rows: int  # rows that are deals (blank rows not counted)
    blank_rows: int


def sheet_kind(path: str) -> str | None:
    """'csv' or 'xlsx' by the file's name, None for any other."""
    s = str(path).lower()
    if s.endswith(".csv"):
        return "csv"
    if s.endswith((".xlsx", ".xlsm")):
        return "xlsx"
    return None


def norm_header(h: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(h).strip().lower())


def _frame(path: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(header, rows) of the sheet, every cell as text or None. Raises `InputError` when it cannot be read."""
    import polars as pl

    why = check_input(path)
    if why is not None:
        raise InputError(why, path)
    kind = sheet_kind(path)
    if kind is None:
        raise UsageError(f"{path}: a score sheet must end in .csv or .xlsx")
    try:
        if kind == "csv":
            df = pl.read_csv(path, infer_schema=False, has_header=True, encoding="utf8-lossy",
                             truncate_ragged_lines=False, raise_if_empty=False, separator=_separator(path))
        else:
            import fastexcel

            try:
                df = pl.read_excel(path, infer_schema_length=0, drop_empty_rows=False, drop_empty_cols=False,
                                   raise_if_empty=False)
            except fastexcel.FastExcelError as e:
                raise InputError(f"cannot read as an .xlsx workbook: {_first_line(e)}", path) from None
    except (pl.exceptions.PolarsError, OSError, ValueError) as e:
        raise InputError(f"cannot read as a {kind.upper()} score sheet: {_first_line(e)}", path) from None
    header = [str(c) for c in df.columns]
    rows = [tuple(None if v is None else str(v) for v in r) for r in df.iter_rows()]
    return header, rows


def _separator(path: str) -> str:
    """',' unless the header row has semicolons and no comma (a spreadsheet's CSV in a decimal-comma locale)."""
    with open(path, "rb") as fh:
        head = fh.readline(1 << 16)
    return ";" if b";" in head and b"," not in head else ","


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def read_sheet(path: str, game: str = "scotch_whist", rules: str = "foster") -> SheetImport:
    """The records of a score sheet. `game`, `rules`: the defaults for rows without a `game` / `rules` cell.
    Raises `InputError` when the file cannot be read as a sheet at all, `UsageError` for a bad name or default."""
    g = GAME_ALIASES.get(norm_name(game))
    if g is None or (g, norm_name(rules)) not in PRESETS:
        raise UsageError(f"unknown game or preset {game!r} / {rules!r} (scotch_whist foster or russian, all_fours "
                         "foster)")
    header, rows = _frame(path)
    names = [norm_header(h) for h in header]
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for raw, h in zip(header, names, strict=True):
        twice = re.fullmatch(r"(.+)_duplicated_\d+", h)  # polars' name for a second column of one name
        if h in seen or (twice is not None and twice.group(1) in seen):
            problems.append(Problem(1, twice.group(1) if twice else raw, "the column is named twice"))
        elif h not in COLUMNS:
            problems.append(Problem(1, raw, f"not a score-sheet column ({', '.join(_known_list())})"))
        seen.setdefault(h, len(seen))
    for h in REQUIRED:
        if h not in seen:
            problems.append(Problem(1, h, "the column is missing"))
    if problems:
        return SheetImport((), tuple(problems), 0, 0)
    col = {h: names.index(h) for h in names}
    records: list[dict[str, Any]] = []
    blank = 0
    for i, values in enumerate(rows):
        cells = {h: _clean(values[j]) for h, j in col.items()}
        if all(v is None for v in cells.values()):
            blank += 1
            continue
        row = _Row(path, i + 2, cells, g, norm_name(rules))
        rec = row.record()
        problems += row.problems
        if rec is not None:
            records.append(rec)
    return SheetImport(tuple(records), tuple(problems), len(rows) - blank, blank)


def _known_list() -> list[str]:
    return [c for c in COLUMNS if not c[-1].isdigit()] + ["seat_1..seat_8", "points_1..", "total_1.."]


def _clean(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return v or None


class _Row:
    """One row's cells checked and turned into a record; `problems` holds every bad cell."""

    def __init__(self, path: str, row: int, cells: dict[str, str | None], game: str, rules: str):
        self.path = path
        self.row = row
        self.cells = cells
        self.default_game = game
        self.default_rules = rules
        self.problems: list[Problem] = []

    def bad(self, column: str | None, message: str) -> None:
        self.problems.append(Problem(self.row, column, message))

    def text(self, column: str) -> str | None:
        return self.cells.get(column)

    def required(self, column: str) -> str | None:
        v = self.text(column)
        if v is None:
            self.bad(column, "blank, and a deal needs it")
        return v

    def integer(self, column: str, low: int | None = None, need: bool = True) -> int | None:
        v = self.required(column) if need else self.text(column)
        if v is None:
            return None
        if not _INT.match(v):
            self.bad(column, f"{v!r} is not a whole number")
            return None
        k = int(v.split(".")[0])
        if low is not None and k < low:
            self.bad(column, f"{v!r} must be at least {low}")
            return None
        return k

    def card(self, column: str, need: bool) -> str | None:
        v = self.required(column) if need else self.text(column)
        if v is None:
            return None
        c = parse_card(v)
        if c is None:
            self.bad(column, f"{v!r} is not a card (rank and suit, e.g. 9d, Ts, Jh, Qc)")
            return None
        return CARD_STR[c]

    def seat_of(self, column: str, players: list[str], need: bool) -> int | None:
        v = self.required(column) if need else self.text(column)
        if v is None:
            return None
        s = _find(v, players)
        if s is None:
            self.bad(column, f"{v!r} is not a player at this table ({', '.join(players)})")
        return s

    # ------------------------------------------------------------ the record
    def record(self) -> dict[str, Any] | None:
        game, rules = self._game()
        options = self._options()
        date = self._date()
        time = self._time()
        table = self.required("table")
        game_no = self.integer("game_no", 1)
        deal_no = self.integer("deal_no", 1)
        players = self._players()
        sides = self._sides(players) if players is not None else None
        dealer = self.seat_of("dealer", players, True) if players is not None else None
        turn_up = self.card("turn_up", True)
        shown = self.card("shown", False)
        beg = self._beg(game)
        bunched = self._bunched(game)
        jack = self.seat_of("jack", players, False) if players is not None else None
        ten = self.seat_of("ten", players, False) if players is not None else None
        revoke = self.seat_of("revoke", players, False) if players is not None else None
        n_sides = (len(sides) if sides else len(players)) if players is not None else None
        if sides is None and self.text("sides") is not None:
            n_sides = None  # the sides did not read: the per-side cells cannot be judged (one finding, not five)
        points = self._per_side(POINTS, n_sides, True)
        totals = self._per_side(TOTALS, n_sides, False)
        winner = self._winner(players, sides, n_sides)
        if self.problems:
            return None
        assert players is not None and dealer is not None and turn_up is not None
        rec: dict[str, Any] = {
            "format": "deal-log/1", "game": game, "rules": rules, **({"options": options} if options else {}),
            "table": table,
            "game_id": f"{date}/{table}/{game_no}", "deal_no": deal_no,
            "time": date if time is None else f"{date}T{time}", "players": players,
        }
        if sides:
            rec["sides"] = sides
        rec["dealer"] = dealer
        rec["turn_up"] = turn_up
        if shown is not None:
            rec["shown"] = shown
        if beg is not None:
            rec["beg"] = beg
        if bunched:
            rec["bunched"] = True
        recorded: dict[str, Any] = {"points": points}
        if totals is not None:
            recorded["totals"] = totals
        if winner is not None:
            recorded["winner"] = winner
        rec["recorded"] = recorded
        rec["observed"] = {"jack": jack, "ten": ten, "revoke": revoke, "source": f"{self.path} row {self.row}"}
        try:
            deal = validate(rec)
        except RecordError as e:  # what the cells cannot show on their own (a player count the rules refuse)
            self.bad(_column_of(str(e)), str(e))
            return None
        return deal.to_canonical()

    def _game(self) -> tuple[str | None, str | None]:
        g_raw = self.text("game")
        game = self.default_game if g_raw is None else GAME_ALIASES.get(norm_name(g_raw))
        if game is None:
            self.bad("game", f"{g_raw!r} is not a game (scotch_whist or all_fours)")
            return None, None
        r_raw = self.text("rules")
        rules = self.default_rules if r_raw is None else norm_name(r_raw)
        if (game, rules) not in PRESETS:
            known = sorted(p for g, p in PRESETS if g == game)
            self.bad("rules" if r_raw is not None else "game",
                     f"{rules!r} is not a preset of {game} ({', '.join(known)})")
            return game, None
        return game, rules

    def _options(self) -> dict[str, Any] | None:
        v = self.text("options")
        if v is None:
            return None
        out: dict[str, Any] = {}
        for part in re.split(r"\s*[;,]\s*", v):
            if not part:
                continue
            name, eq, value = (x.strip() for x in part.partition("="))
            if not eq or not name or not value:
                self.bad("options", f"{part!r} is not name=value (e.g. odd_pack=show_36th_dead; target=10)")
                return None
            low = value.lower()
            out[name] = True if low == "true" else False if low == "false" else int(value) if _INT.match(
                value) and "." not in value else value
        return out

    def _date(self) -> str | None:
        v = self.required("date")
        if v is None:
            return None
        head, _, rest = v.replace("T", " ").partition(" ")
        try:
            d = _dt.date.fromisoformat(head)
            if rest and _dt.time.fromisoformat(rest) != _dt.time(0):
                raise ValueError(rest)
        except ValueError:
            self.bad("date", f"{v!r} is not a date (write it as YYYY-MM-DD, e.g. 2026-11-01)")
            return None
        return d.isoformat()

    def _time(self) -> str | None:
        v = self.text("time")
        if v is None:
            return None
        tail = v.replace("T", " ").split(" ")[-1]  # a spreadsheet's time cell may come with a date before it
        try:
            t = _dt.time.fromisoformat(tail)
        except ValueError:
            self.bad("time", f"{v!r} is not a time of day (write it as HH:MM, e.g. 20:14)")
            return None
        return t.replace(microsecond=0, tzinfo=None).isoformat()

    def _players(self) -> list[str] | None:
        got = [(c, self.text(c)) for c in SEATS if c in self.cells]
        players: list[str] = []
        gap: str | None = None
        ok = True
        for c, v in got:
            if v is None:
                gap = gap or c
                continue
            if gap is not None:
                self.bad(gap, f"blank, but {c!r} is not: seats are numbered clockwise from seat_1 without gaps")
                ok = False
                gap = None
            for j, p in enumerate(players):
                if p.casefold() == v.casefold():
                    self.bad(c, f"{v!r} already sits in seat_{j + 1}")
                    ok = False
            players.append(v)
        if len(players) < 2:
            self.bad(SEATS[len(players)], "blank, and a deal has at least 2 players")
            return None
        return players if ok else None

    def _sides(self, players: list[str]) -> list[list[int]] | None:
        v = self.text("sides")
        if v is None:
            return None
        groups: list[list[int]] = []
        for part in _GROUPS.split(v):
            if not part:
                continue
            group = []
            for name in _MEMBERS.split(part):
                s = _find(name, players)
                if s is None:
                    self.bad("sides", f"{name!r} in {v!r} is not a player at this table ({', '.join(players)})")
                    return None
                group.append(s)
            groups.append(group)
        flat = sorted(s for g in groups for s in g)
        if flat != list(range(len(players))):
            twice = sorted({players[s] for s in flat if flat.count(s) > 1})
            missing = [players[s] for s in range(len(players)) if s not in flat]
            what = "; ".join(x for x in (f"{', '.join(twice)} twice" if twice else "",
                                         f"{', '.join(missing)} in no side" if missing else "") if x)
            self.bad("sides", f"{v!r} must name every player once, in groups like ann+cy / bob+dee ({what})")
            return None
        return groups

    def _beg(self, game: str | None) -> str | None:
        v = self.text("beg")
        if v is None:
            return None
        b = norm_name(v)
        if game != "all_fours":
            self.bad("beg", f"{v!r}: begging is All Fours only")
            return None
        if b not in ("stand", "take_one", "run"):
            self.bad("beg", f"{v!r} is not stand, take_one or run")
            return None
        return b

    def _bunched(self, game: str | None) -> bool:
        v = self.text("bunched")
        if v is None:
            return False
        b = norm_name(v)
        if b in ("yes", "y", "x", "true", "1", "bunched"):
            if game != "all_fours":
                self.bad("bunched", f"{v!r}: bunching the cards is All Fours only")
                return False
            return True
        if b in ("no", "n", "false", "0"):
            return False
        self.bad("bunched", f"{v!r} is neither yes nor no")
        return False

    def _per_side(self, columns: tuple[str, ...], n_sides: int | None, need: bool) -> list[int] | None:
        """points_k (`need`: every side's) or total_k (all or none) of the row's sides."""
        if n_sides is None:
            return None
        for k in range(n_sides, MAX_SEATS):
            v = self.text(columns[k])
            if v is not None:
                self.bad(columns[k], f"{v!r} for side {k + 1}, but this deal has {n_sides} sides")
        cols = columns[:n_sides]
        if not need and all(self.text(c) is None for c in cols):
            return None  # no totals written on this row
        vals: list[int | None] = []
        for c in cols:
            if c not in self.cells:
                self.bad(c, f"the column is missing, and this deal has {n_sides} sides")
                vals.append(None)
            elif self.text(c) is None:
                self.bad(c, "blank, and a deal needs every side's points" if need
                         else "blank, but other sides' totals are written")
                vals.append(None)
            else:
                vals.append(self.integer(c, None, need=False))
        if any(x is None for x in vals):
            return None
        return [int(x) for x in vals if x is not None]

    def _winner(self, players: list[str] | None, sides: list[list[int]] | None, n_sides: int | None) -> int | None:
        v = self.text("winner")
        if v is None or players is None or n_sides is None:
            return None
        if _INT.match(v):
            k = int(v.split(".")[0])
            if 1 <= k <= n_sides:
                return k - 1
            self.bad("winner", f"{v!r} is not a side of this deal (1 to {n_sides})")
            return None
        s = _find(v, players)
        if s is None:
            self.bad("winner", f"{v!r} is neither a side number (1 to {n_sides}) nor a player at this table")
            return None
        if not sides:
            return s
        return next(k for k, g in enumerate(sides) if s in g)


def _find(name: str, players: list[str]) -> int | None:
    """The seat of the player named (exactly, else the one player whose name matches ignoring case)."""
    name = name.strip()
    if name in players:
        return players.index(name)
    hits = [s for s, p in enumerate(players) if p.casefold() == name.casefold()]
    return hits[0] if len(hits) == 1 else None


def _column_of(message: str) -> str | None:
    """The sheet column a reader's message is about, where it names one."""
    if " players: " in message:
        return "seat_1"
    if "option" in message or "preset" in message:
        return "options"
    return None


def problem_lines(name: str, problems: tuple[Problem, ...] | list[Problem], limit: int = MAX_LISTED) -> list[str]:
    """One line per problem (the first `limit`), then one line counting the rest."""
    out = [p.line(name) for p in problems[:limit]]
    if len(problems) > limit:
        out.append(f"{name}: and {len(problems) - limit} more bad cells")
    return out


def default_name(path: str) -> str:
    return Path(path).name
