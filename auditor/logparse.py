"""deal-log/1 records, below every reader: the schema check, one line to one `Record`, opening an input file.

The JSON Lines reader (`auditor.dealog`), the column builder (`auditor.fast.cols`) and the Parquet reader
(`auditor.parquet`) share these pieces, so they live here, under all three: `dealog` reads `.parquet` files through
`parquet`, which builds columns with `fast.cols`, which judges the records it cannot hold with this module.

- `Deal` (a record that passed the schema) and `Record` (one line read: a `Deal` or the reason it is a
  `bad_record`); `validate(obj)` checks a parsed JSON value and raises `RecordError` quoting the bad input;
- `parse_line(raw, ...)` turns one raw line into its `Record` (nothing for a blank line); `record_from_obj` does
  the same for a parsed value; `slim_raw` keeps of a bad record's value what its finding reads;
- `GAME_ALIASES` and `norm_name`: the lenient spellings of game and preset names;
- `open_input(path)`: a log file opened for reading, refused at once unless it is a regular file.
"""

from __future__ import annotations

import errno
import os
import reprlib
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from io import BufferedReader
from typing import Any, TypeGuard

import orjson

from .cards import CARD_STR, parse_card
from .errors import InputError, RecordError
from .rules import Rules, resolve

FORMAT = "deal-log/1"

FIELD_ORDER = (
    "format", "game", "rules", "options", "table", "game_id", "deal_no", "time", "players", "sides", "dealer",
    "cutter", "pack", "deck", "hands", "turn_up", "shown", "beg", "runs", "discards", "tricks", "claims", "bunched",
    "recorded", "observed",
)
OBSERVED_KEYS = ("jack", "ten", "revoke", "source")
"""The members of `observed` (issue 16, a score-sheet record): `jack` the seat that played the Jack of trumps,
`ten` the seat that took the Ten of trumps in a trick (each null or absent: not in play), `revoke` the seat whose
revoke was claimed (null or absent: none), `source` where the facts were read (the sheet and its row)."""
SHEET_EXCLUDED = ("deck", "runs", "discards", "claims")
"""Fields a record without `hands` and `tricks` (a score-sheet record, issue 16) cannot carry."""
KNOWN_FIELDS = frozenset(FIELD_ORDER)

GAME_ALIASES = {
    "scotch_whist": "scotch_whist", "scotchwhist": "scotch_whist", "catch_the_ten": "scotch_whist",
    "all_fours": "all_fours", "allfours": "all_fours", "seven_up": "all_fours",
}
"""Every spelling of a game the reader accepts (after `norm_name`) -> the game."""

Loads = Callable[[str], Any]
"""A JSON parser: text -> the parsed value."""

JSON_ERRORS = (ValueError, RecursionError)
"""What a JSON parser raises on text that is not JSON (orjson's `JSONDecodeError` is a `ValueError`; the standard
library's parser runs out of stack on a deeply nested value)."""


def norm_name(v: str) -> str:
    """A game or preset name as the reader compares it: trimmed, lower case, '-' and ' ' as '_'."""
    return v.strip().lower().replace("-", "_").replace(" ", "_")


def json_loader() -> Loads:
    """The JSON parser every reader uses (orjson's)."""
    return orjson.loads


@dataclass(slots=True)
class Deal:
    """A record that passed the schema. Card fields keep the log's strings; `ruleset` is resolved."""

    source: str
    file_index: int
    line: int
    game: str
    rules: str
    options: dict[str, Any]
    table: str
    game_id: str
    deal_no: int
    players: list[str]
    dealer: int
    turn_up: str
    ruleset: Rules
    time: str | None = None
    sides: list[list[int]] | None = None
    cutter: int | None = None
    pack: str | None = None
    deck: list[str] | None = None
    hands: list[list[str]] | None = None
    shown: str | None = None
    beg: str | None = None
    runs: list[dict[str, Any]] | None = None
    discards: list[list[str]] | None = None
    tricks: list[list[str]] | None = None
    claims: list[dict[str, Any]] | None = None
    bunched: bool = False
    recorded: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None  # (issue 16) what a score sheet saw: {"jack": seat, "ten": seat, ...}
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.players)

    @property
    def side_of(self) -> list[int]:
        """Side index of every seat (the seat itself when there are no sides)."""
        if not self.sides:
            return list(range(self.n))
        out = [0] * self.n
        for i, side in enumerate(self.sides):
            for s in side:
                out[s] = i
        return out

    @property
    def n_sides(self) -> int:
        return len(self.sides) if self.sides else self.n

    @property
    def is_sheet(self) -> bool:
        """(issue 16) A score-sheet record: the observed facts instead of the hands and the tricks."""
        return self.observed is not None and self.hands is None and self.tricks is None

    @property
    def cutter_seat(self) -> int:
        return self.cutter if self.cutter is not None else (self.dealer - 1) % self.n

    def to_canonical(self) -> dict[str, Any]:
        """The record as a canonical deal-log/1 object: canonical key order and card strings."""
        c = _canon_card
        out: dict[str, Any] = {"format": FORMAT, "game": self.game, "rules": self.rules}
        if self.options:
            out["options"] = dict(self.options)
        out["table"] = self.table
        out["game_id"] = self.game_id
        out["deal_no"] = self.deal_no
        if self.time is not None:
            out["time"] = self.time
        out["players"] = list(self.players)
        if self.sides is not None:
            out["sides"] = [list(s) for s in self.sides]
        out["dealer"] = self.dealer
        if self.cutter is not None:
            out["cutter"] = self.cutter
        if self.pack is not None:
            out["pack"] = self.pack
        if self.deck is not None:
            out["deck"] = [c(x) for x in self.deck]
        if self.hands is not None:
            out["hands"] = [[c(x) for x in h] for h in self.hands]
        out["turn_up"] = c(self.turn_up)
        if self.shown is not None:
            out["shown"] = c(self.shown)
        if self.beg is not None:
            out["beg"] = self.beg
        if self.runs is not None:
            out["runs"] = [{"cards": [[c(x) for x in h] for h in r["cards"]], "turn_up": c(r["turn_up"])}
                           for r in self.runs]
        if self.discards is not None:
            out["discards"] = [[c(x) for x in h] for h in self.discards]
        if self.tricks is not None:
            out["tricks"] = [[c(x) for x in t] for t in self.tricks]
        if self.claims is not None:
            out["claims"] = [{"revoke": cl["revoke"], "trick": cl["trick"]} for cl in self.claims]
        if self.bunched:
            out["bunched"] = True
        if self.recorded is not None:
            out["recorded"] = {k: self.recorded[k] for k in ("points", "totals", "winner") if k in self.recorded}
        if self.observed is not None:
            out["observed"] = {"jack": self.observed.get("jack"), "ten": self.observed.get("ten")}
            for k in ("revoke", "source"):
                if self.observed.get(k) is not None:
                    out["observed"][k] = self.observed[k]
        for k, v in self.extra.items():
            out[k] = v
        return out


def _canon_card(s: str) -> str:
    code = parse_card(s)
    return CARD_STR[code] if code is not None else s


@dataclass(slots=True)
class Record:
    """One line read: a `Deal`, or the reason it is a `bad_record` (`error`)."""

    source: str
    file_index: int
    line: int | None
    deal: Deal | None = None
    error: str | None = None
    raw: Any = None


# ---------------------------------------------------------------- validation


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise RecordError(f"{key!r} must be a string, got {_short(v)}")
    return v


def _req_str(obj: dict[str, Any], key: str) -> str:
    v = _opt_str(obj, key)
    if v is None:
        raise RecordError(f"missing field {key!r}" if key not in obj else f"{key!r} is null")
    return v


_DEEP = reprlib.Repr()
_DEEP.maxlevel = 4


def _short(v: Any) -> str:
    try:
        text = repr(v)
    except RecursionError:  # nested too deeply for repr: a bounded sketch of it
        text = _DEEP.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _card_list(v: Any, what: str) -> list[str]:
    if not isinstance(v, list):
        raise RecordError(f"{what} must be a list of cards, got {_short(v)}")
    for x in v:
        if not isinstance(x, str):
            raise RecordError(f"{what} holds {_short(x)}, not a card string")
    return v


def _per_seat(v: Any, what: str, n: int) -> list[list[str]]:
    if not isinstance(v, list):
        raise RecordError(f"{what} must be a list with one card list per seat, got {_short(v)}")
    if len(v) != n:
        raise RecordError(f"{what} has {len(v)} entries for {n} players")
    return [_card_list(h, f"{what}[{i}]") for i, h in enumerate(v)]


def validate(obj: Any, source: str = "", file_index: int = 0, line: int = 0) -> Deal:
    """Check one parsed JSON value against deal-log/1. Raises `RecordError` with a message quoting the bad
    input."""
    if not isinstance(obj, dict):
        raise RecordError(f"a record must be a JSON object, got {_short(obj)}")
    fmt = obj.get("format")
    if fmt != FORMAT:
        raise RecordError(f"'format' must be {FORMAT!r}, got {_short(fmt)}" if "format" in obj
                          else "missing field 'format'")
    game_raw = _req_str(obj, "game")
    game = GAME_ALIASES.get(norm_name(game_raw))
    if game is None:
        raise RecordError(f"unknown game {game_raw!r} (scotch_whist or all_fours)")
    preset = norm_name(_req_str(obj, "rules"))
    options = obj.get("options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise RecordError(f"'options' must be an object, got {_short(options)}")
    try:
        ruleset = resolve(game, preset, options)
    except KeyError as e:
        key = e.args[0]
        if isinstance(key, tuple) or key == (game, preset):
            raise RecordError(f"unknown preset {obj['rules']!r} for {game}") from None
        raise RecordError(f"unknown option {key!r} for {game}") from None
    except ValueError as e:
        k, v = e.args[0]
        raise RecordError(f"option {k!r} cannot be {_short(v)}") from None
    table = _req_str(obj, "table")
    game_id = _req_str(obj, "game_id")
    deal_no = obj.get("deal_no")
    if not _is_int(deal_no) or deal_no < 1:
        raise RecordError(f"'deal_no' must be an integer >= 1, got {_short(deal_no)}" if "deal_no" in obj
                          else "missing field 'deal_no'")
    time = _opt_str(obj, "time")
    players = obj.get("players")
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise RecordError(f"'players' must be a list of player ids, got {_short(players)}" if "players" in obj
                          else "missing field 'players'")
    n = len(players)
    if not ruleset.min_players <= n <= ruleset.max_players:
        raise RecordError(f"{n} players: {game} {preset} is for {ruleset.min_players} to {ruleset.max_players}")
    if len(set(players)) != n:
        dup = next(p for p in players if players.count(p) > 1)
        raise RecordError(f"player {dup!r} is named twice in 'players'")

    def seat(key: str, v: Any) -> int:
        if not _is_int(v) or not 0 <= v < n:
            raise RecordError(f"{key} must be a seat 0..{n - 1}, got {_short(v)}")
        return v

    sides = obj.get("sides")
    if sides is not None:
        if not isinstance(sides, list) or not all(isinstance(s, list) for s in sides) or not sides:
            raise RecordError(f"'sides' must be a list of lists of seats, got {_short(sides)}")
        seen: list[int] = []
        for s in sides:
            for x in s:
                seen.append(seat("'sides' entry", x))
        if sorted(seen) != list(range(n)) or any(not s for s in sides):
            raise RecordError(f"'sides' {_short(sides)} does not partition the seats 0..{n - 1}")
    dealer_raw = obj.get("dealer")
    if dealer_raw is None:
        raise RecordError("missing field 'dealer'")
    dealer = seat("'dealer'", dealer_raw)
    cutter = obj.get("cutter")
    if cutter is not None:
        cutter = seat("'cutter'", cutter)
    pack = _opt_str(obj, "pack")
    deck = obj.get("deck")
    if deck is not None:
        deck = _card_list(deck, "'deck'")
    hands = obj.get("hands")
    if hands is not None:
        hands = _per_seat(hands, "'hands'", n)
    turn_up = _req_str(obj, "turn_up")
    shown = _opt_str(obj, "shown")
    beg = obj.get("beg")
    if beg is not None and beg not in ("stand", "take_one", "run"):
        raise RecordError(f"'beg' must be 'stand', 'take_one' or 'run', got {_short(beg)}")
    runs = obj.get("runs")
    if runs is not None:
        if not isinstance(runs, list):
            raise RecordError(f"'runs' must be a list, got {_short(runs)}")
        for j, r in enumerate(runs):
            if not isinstance(r, dict) or "cards" not in r or "turn_up" not in r:
                raise RecordError(f"runs[{j}] must be an object with 'cards' and 'turn_up', got {_short(r)}")
            _per_seat(r["cards"], f"runs[{j}].cards", n)
            if not isinstance(r["turn_up"], str):
                raise RecordError(f"runs[{j}].turn_up must be a card string, got {_short(r['turn_up'])}")
    discards = obj.get("discards")
    if discards is not None:
        discards = _per_seat(discards, "'discards'", n)
    tricks = obj.get("tricks")
    if tricks is not None:
        if not isinstance(tricks, list):
            raise RecordError(f"'tricks' must be a list of tricks, got {_short(tricks)}")
        for k, t in enumerate(tricks):
            _card_list(t, f"tricks[{k}]")
    observed = obj.get("observed")
    if observed is not None:
        if not isinstance(observed, dict):
            raise RecordError(f"'observed' must be an object, got {_short(observed)}")
        for key in ("jack", "ten", "revoke"):
            if observed.get(key) is not None:
                seat(f"observed.{key}", observed[key])
        src = observed.get("source")
        if src is not None and not isinstance(src, str):
            raise RecordError(f"observed.source must be a string, got {_short(src)}")
        observed = {"jack": observed.get("jack"), "ten": observed.get("ten")} | (
            {"revoke": observed["revoke"]} if observed.get("revoke") is not None else {}) | (
            {"source": src} if src else {})
    if hands is None and tricks is None:
        if observed is None:
            raise RecordError("a record needs 'hands' or 'tricks' (or, a score-sheet record, 'observed')")
        for key in SHEET_EXCLUDED:
            if obj.get(key) is not None:
                raise RecordError(f"a score-sheet record (no 'hands' or 'tricks') cannot carry {key!r}")
    claims = obj.get("claims")
    if claims is not None:
        if not isinstance(claims, list):
            raise RecordError(f"'claims' must be a list, got {_short(claims)}")
        for j, cl in enumerate(claims):
            if not isinstance(cl, dict) or "revoke" not in cl or "trick" not in cl:
                raise RecordError(f"claims[{j}] must be {{'revoke': seat, 'trick': k}}, got {_short(cl)}")
            seat(f"claims[{j}].revoke", cl["revoke"])
            if not _is_int(cl["trick"]) or cl["trick"] < 1:
                raise RecordError(f"claims[{j}].trick must be an integer >= 1, got {_short(cl['trick'])}")
    bunched = obj.get("bunched", False)
    if bunched is None:
        bunched = False
    if not isinstance(bunched, bool):
        raise RecordError(f"'bunched' must be true or false, got {_short(bunched)}")
    n_sides = len(sides) if sides else n
    recorded = obj.get("recorded")
    if recorded is not None:
        if not isinstance(recorded, dict):
            raise RecordError(f"'recorded' must be an object, got {_short(recorded)}")
        for key in ("points", "totals"):
            v = recorded.get(key)
            if v is None:
                continue
            if not isinstance(v, list) or not all(_is_int(x) for x in v):
                raise RecordError(f"recorded.{key} must be a list of integers, got {_short(v)}")
            if len(v) != n_sides:
                raise RecordError(f"recorded.{key} has {len(v)} entries for {n_sides} sides")
        w = recorded.get("winner")
        if w is not None and (not _is_int(w) or not 0 <= w < n_sides):
            raise RecordError(f"recorded.winner must be a side 0..{n_sides - 1} or null, got {_short(w)}")
        recorded = {k: recorded[k] for k in ("points", "totals", "winner") if recorded.get(k) is not None}
    extra = {k: v for k, v in obj.items() if k not in KNOWN_FIELDS}
    return Deal(
        source=source, file_index=file_index, line=line, game=game, rules=preset, options=dict(options),
        table=table, game_id=game_id, deal_no=deal_no, players=players, dealer=dealer, turn_up=turn_up,
        ruleset=ruleset, time=time, sides=sides, cutter=cutter, pack=pack, deck=deck, hands=hands, shown=shown,
        beg=beg, runs=runs, discards=discards, tricks=tricks, claims=claims, bunched=bunched, recorded=recorded,
        observed=observed, extra=extra,
    )


def check_record(obj: Any) -> str | None:
    """None if `obj` is a valid deal-log/1 record, else the reason it is not."""
    try:
        validate(obj)
    except RecordError as e:
        return str(e)
    return None


# ---------------------------------------------------------------- one line, one record


def parse_line(raw: bytes, path: str, fi: int, lineno: int, loads: Loads) -> Iterator[Record]:
    """The record of one raw line (line `lineno` of file `fi`, `path`): nothing for a blank line, else one
    `Record` (a `Deal`, or why the line is a `bad_record`: not UTF-8, not JSON, not a valid record)."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a UTF-8 byte-order mark, as some editors write
    if not raw.strip():
        return
    src = f"{path}:{lineno}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        yield Record(src, fi, lineno, error=f"not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})")
        return
    try:
        obj = loads(text.rstrip("\r\n"))  # (issue 16) the newline apart: a line cut short ends its data there
    except JSON_ERRORS as e:
        yield Record(src, fi, lineno, error=json_error_message(text, e, lineno))
        return
    yield record_from_obj(obj, src, fi, lineno)


PRETTY_HINT = ("this file looks like pretty-printed JSON (line 1 is {first!r} alone): deal-log/1 is one record per "
               "line (JSON Lines); rewrite it with {fix}")
"""(issue 16) Said once per file, on line 1's `bad_record`, when line 1 is `{` or `[` alone."""


def json_error_message(text: str, e: BaseException, lineno: int) -> str:
    """Why `text` (one line) is not JSON, for its `bad_record` (issue 16): the column and the parser's reason, the
    text near that column, and on line 1 of a pretty-printed file the one hint that a record is one line.
    'not valid JSON at column 8: unexpected character, expected ',' or '}' (near '{"a":1 "b":2}')'."""
    text = text.rstrip("\r\n")  # the line as read ends in its newline: a column past the end is the end
    pos = getattr(e, "pos", None)
    col = min(pos, len(text)) + 1 if isinstance(pos, int) and pos >= 0 else getattr(e, "colno", None)
    reason = getattr(e, "msg", None) or ("nested too deeply" if isinstance(e, RecursionError) else str(e))
    reason = str(reason).splitlines()[0] if str(reason) else type(e).__name__
    stripped = text.strip()
    if len(stripped) <= 50:
        near = stripped
    elif isinstance(pos, int) and pos >= 0:
        at = min(pos, len(text))
        a, b = max(0, at - 24), min(len(text), at + 24)
        near = ("..." if a else "") + text[a:b] + ("..." if b < len(text) else "")
    else:
        near = stripped[:47] + "..."
    where = f" at column {col}" if isinstance(col, int) else ""
    msg = f"not valid JSON{where}: {reason} (near {near!r})"
    if lineno == 1 and stripped in ("{", "["):
        fix = "`jq -c . FILE`" if stripped == "{" else "`jq -c '.[]' FILE`"
        msg += "; " + PRETTY_HINT.format(first=stripped, fix=fix)
    return msg


def record_from_obj(obj: Any, src: str, fi: int, lineno: int) -> Record:
    """The `Record` of a parsed JSON value: its `Deal`, or why it is a `bad_record`."""
    try:
        deal = validate(obj, src, fi, lineno)
    except RecordError as e:
        return Record(src, fi, lineno, error=str(e), raw=obj)
    except RecursionError:  # (issue 12) a value nested too deeply to check is a bad record, not a traceback
        return Record(src, fi, lineno, error="a value is nested too deeply to check", raw=slim_raw(obj))
    return Record(src, fi, lineno, deal=deal, raw=obj)


def slim_raw(obj: Any) -> dict[str, Any]:
    """What a bad record's finding reads of its parsed value (`game_id`, `deal_no`), without the rest (which may
    be large or deeply nested: the parallel reader sends it between processes)."""
    if not isinstance(obj, dict):
        return {}
    return {k: obj[k] for k in ("game_id", "deal_no") if isinstance(obj.get(k), (str, int))}


# ---------------------------------------------------------------- opening an input file


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _open_error(path: str, e: OSError) -> InputError:
    if e.errno == errno.ELOOP:
        return InputError("symlink loop (too many levels of symbolic links)", path)
    if e.errno == errno.ENOENT:
        if os.path.islink(path):
            return InputError(f"broken symlink (to {os.readlink(path)!r}, which does not exist)", path)
        return InputError("no such file", path)
    if e.errno == errno.EISDIR:
        return InputError("is a directory, not a log file", path)
    return InputError(f"cannot open: {e.strerror or e}", path)


def open_input(path: str) -> BufferedReader:
    """The file at `path` opened for reading (binary, buffered), refused at once unless it is a regular file.

    Never blocks: a FIFO is opened without waiting for a writer, then refused, as are devices and sockets
    (`/dev/zero` would never end). Raises `InputError` with a one-line reason: no such file, a broken symlink,
    a symlink loop, a directory, a FIFO or device, no permission."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise _open_error(str(path), e) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, not a log file", str(path))
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise InputError(f"is {kind}, not a log file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_input(path: str) -> str | None:
    """None if `path` can be opened as a log file, else the one-line reason it cannot (see `open_input`)."""
    try:
        open_input(path).close()
    except InputError as e:
        return str(e).removeprefix(f"{path}: ")
    return None
