"""Reading and writing deal-log/1: streaming, lenient spellings in, canonical out.

`read_records(paths)` yields one `Record` per line that is not blank: either a validated `Deal` or the reason the
line is a `bad_record`. Nothing is dropped: a file that cannot be opened yields one Record with `line=None`.
"""

from __future__ import annotations

import errno
import gzip
import os
import stat
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from .cards import CARD_STR, parse_card
from .errors import InputError
from .rules import Rules, resolve

FORMAT = "deal-log/1"

FIELD_ORDER = (
    "format", "game", "rules", "options", "table", "game_id", "deal_no", "time", "players", "sides", "dealer",
    "cutter", "pack", "deck", "hands", "turn_up", "shown", "beg", "runs", "discards", "tricks", "claims", "bunched",
    "recorded",
)
KNOWN_FIELDS = frozenset(FIELD_ORDER)

_GAME_ALIASES = {
    "scotch_whist": "scotch_whist", "scotchwhist": "scotch_whist", "catch_the_ten": "scotch_whist",
    "all_fours": "all_fours", "allfours": "all_fours", "seven_up": "all_fours",
}


@dataclass(slots=True)
class Deal:
    """A record that passed the schema. Card fields keep the log's strings; `ruleset` is resolved."""

    source: str
    file_index: int
    line: int
    game: str
    rules: str
    options: dict
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
    runs: list[dict] | None = None
    discards: list[list[str]] | None = None
    tricks: list[list[str]] | None = None
    claims: list[dict] | None = None
    bunched: bool = False
    recorded: dict | None = None
    extra: dict = field(default_factory=dict)

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
    def cutter_seat(self) -> int:
        return self.cutter if self.cutter is not None else (self.dealer - 1) % self.n

    def to_canonical(self) -> dict:
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


class _Bad(Exception):
    pass


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _str(obj: dict, key: str, required: bool) -> str | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise _Bad(f"missing field {key!r}" if key not in obj else f"{key!r} is null")
        return None
    if not isinstance(v, str):
        raise _Bad(f"{key!r} must be a string, got {_short(v)}")
    return v


def _short(v: Any) -> str:
    try:
        text = repr(v)
    except RecursionError:  # nested too deeply for repr: a bounded sketch of it
        import reprlib

        r = reprlib.Repr()
        r.maxlevel = 4
        text = r.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _card_list(v: Any, what: str) -> list[str]:
    if not isinstance(v, list):
        raise _Bad(f"{what} must be a list of cards, got {_short(v)}")
    for x in v:
        if not isinstance(x, str):
            raise _Bad(f"{what} holds {_short(x)}, not a card string")
    return v


def _per_seat(v: Any, what: str, n: int) -> list[list[str]]:
    if not isinstance(v, list):
        raise _Bad(f"{what} must be a list with one card list per seat, got {_short(v)}")
    if len(v) != n:
        raise _Bad(f"{what} has {len(v)} entries for {n} players")
    return [_card_list(h, f"{what}[{i}]") for i, h in enumerate(v)]


def _norm_name(v: str) -> str:
    return v.strip().lower().replace("-", "_").replace(" ", "_")


def validate(obj: Any, source: str = "", file_index: int = 0, line: int = 0) -> Deal:
    """Check one parsed JSON value against deal-log/1. Raises `_Bad` with a message quoting the bad input."""
    if not isinstance(obj, dict):
        raise _Bad(f"a record must be a JSON object, got {_short(obj)}")
    fmt = obj.get("format")
    if fmt != FORMAT:
        raise _Bad(f"'format' must be {FORMAT!r}, got {_short(fmt)}" if "format" in obj else "missing field 'format'")
    game_raw = _str(obj, "game", True)
    game = _GAME_ALIASES.get(_norm_name(game_raw))
    if game is None:
        raise _Bad(f"unknown game {game_raw!r} (scotch_whist or all_fours)")
    preset = _norm_name(_str(obj, "rules", True))
    options = obj.get("options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise _Bad(f"'options' must be an object, got {_short(options)}")
    try:
        ruleset = resolve(game, preset, options)
    except KeyError as e:
        key = e.args[0]
        if isinstance(key, tuple) or key == (game, preset):
            raise _Bad(f"unknown preset {obj['rules']!r} for {game}") from None
        raise _Bad(f"unknown option {key!r} for {game}") from None
    except ValueError as e:
        k, v = e.args[0]
        raise _Bad(f"option {k!r} cannot be {_short(v)}") from None
    table = _str(obj, "table", True)
    game_id = _str(obj, "game_id", True)
    deal_no = obj.get("deal_no")
    if not _is_int(deal_no) or deal_no < 1:
        raise _Bad(f"'deal_no' must be an integer >= 1, got {_short(deal_no)}" if "deal_no" in obj
                   else "missing field 'deal_no'")
    time = _str(obj, "time", False)
    players = obj.get("players")
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise _Bad(f"'players' must be a list of player ids, got {_short(players)}" if "players" in obj
                   else "missing field 'players'")
    n = len(players)
    if not ruleset.min_players <= n <= ruleset.max_players:
        raise _Bad(f"{n} players: {game} {preset} is for {ruleset.min_players} to {ruleset.max_players}")
    if len(set(players)) != n:
        dup = next(p for p in players if players.count(p) > 1)
        raise _Bad(f"player {dup!r} is named twice in 'players'")

    def seat(key: str, v: Any) -> int:
        if not _is_int(v) or not 0 <= v < n:
            raise _Bad(f"{key} must be a seat 0..{n - 1}, got {_short(v)}")
        return v

    sides = obj.get("sides")
    if sides is not None:
        if not isinstance(sides, list) or not all(isinstance(s, list) for s in sides) or not sides:
            raise _Bad(f"'sides' must be a list of lists of seats, got {_short(sides)}")
        seen: list[int] = []
        for s in sides:
            for x in s:
                seen.append(seat("'sides' entry", x))
        if sorted(seen) != list(range(n)) or any(not s for s in sides):
            raise _Bad(f"'sides' {_short(sides)} does not partition the seats 0..{n - 1}")
    dealer = obj.get("dealer")
    if dealer is None:
        raise _Bad("missing field 'dealer'")
    dealer = seat("'dealer'", dealer)
    cutter = obj.get("cutter")
    if cutter is not None:
        cutter = seat("'cutter'", cutter)
    pack = _str(obj, "pack", False)
    deck = obj.get("deck")
    if deck is not None:
        deck = _card_list(deck, "'deck'")
    hands = obj.get("hands")
    if hands is not None:
        hands = _per_seat(hands, "'hands'", n)
    turn_up = _str(obj, "turn_up", True)
    shown = _str(obj, "shown", False)
    beg = obj.get("beg")
    if beg is not None and beg not in ("stand", "take_one", "run"):
        raise _Bad(f"'beg' must be 'stand', 'take_one' or 'run', got {_short(beg)}")
    runs = obj.get("runs")
    if runs is not None:
        if not isinstance(runs, list):
            raise _Bad(f"'runs' must be a list, got {_short(runs)}")
        for j, r in enumerate(runs):
            if not isinstance(r, dict) or "cards" not in r or "turn_up" not in r:
                raise _Bad(f"runs[{j}] must be an object with 'cards' and 'turn_up', got {_short(r)}")
            _per_seat(r["cards"], f"runs[{j}].cards", n)
            if not isinstance(r["turn_up"], str):
                raise _Bad(f"runs[{j}].turn_up must be a card string, got {_short(r['turn_up'])}")
    discards = obj.get("discards")
    if discards is not None:
        discards = _per_seat(discards, "'discards'", n)
    tricks = obj.get("tricks")
    if tricks is not None:
        if not isinstance(tricks, list):
            raise _Bad(f"'tricks' must be a list of tricks, got {_short(tricks)}")
        for k, t in enumerate(tricks):
            _card_list(t, f"tricks[{k}]")
    if hands is None and tricks is None:
        raise _Bad("a record needs 'hands' or 'tricks'")
    claims = obj.get("claims")
    if claims is not None:
        if not isinstance(claims, list):
            raise _Bad(f"'claims' must be a list, got {_short(claims)}")
        for j, cl in enumerate(claims):
            if not isinstance(cl, dict) or "revoke" not in cl or "trick" not in cl:
                raise _Bad(f"claims[{j}] must be {{'revoke': seat, 'trick': k}}, got {_short(cl)}")
            seat(f"claims[{j}].revoke", cl["revoke"])
            if not _is_int(cl["trick"]) or cl["trick"] < 1:
                raise _Bad(f"claims[{j}].trick must be an integer >= 1, got {_short(cl['trick'])}")
    bunched = obj.get("bunched", False)
    if bunched is None:
        bunched = False
    if not isinstance(bunched, bool):
        raise _Bad(f"'bunched' must be true or false, got {_short(bunched)}")
    n_sides = len(sides) if sides else n
    recorded = obj.get("recorded")
    if recorded is not None:
        if not isinstance(recorded, dict):
            raise _Bad(f"'recorded' must be an object, got {_short(recorded)}")
        for key in ("points", "totals"):
            v = recorded.get(key)
            if v is None:
                continue
            if not isinstance(v, list) or not all(_is_int(x) for x in v):
                raise _Bad(f"recorded.{key} must be a list of integers, got {_short(v)}")
            if len(v) != n_sides:
                raise _Bad(f"recorded.{key} has {len(v)} entries for {n_sides} sides")
        w = recorded.get("winner")
        if w is not None and (not _is_int(w) or not 0 <= w < n_sides):
            raise _Bad(f"recorded.winner must be a side 0..{n_sides - 1} or null, got {_short(w)}")
        recorded = {k: recorded[k] for k in ("points", "totals", "winner") if recorded.get(k) is not None}
    extra = {k: v for k, v in obj.items() if k not in KNOWN_FIELDS}
    return Deal(
        source=source, file_index=file_index, line=line, game=game, rules=preset, options=dict(options),
        table=table, game_id=game_id, deal_no=deal_no, players=players, dealer=dealer, turn_up=turn_up,
        ruleset=ruleset, time=time, sides=sides, cutter=cutter, pack=pack, deck=deck, hands=hands, shown=shown,
        beg=beg, runs=runs, discards=discards, tricks=tricks, claims=claims, bunched=bunched, recorded=recorded,
        extra=extra,
    )


def check_record(obj: Any) -> str | None:
    """None if `obj` is a valid deal-log/1 record, else the reason it is not."""
    try:
        validate(obj)
    except _Bad as e:
        return str(e)
    return None


# ---------------------------------------------------------------- reading


def _loads():
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover
        import json

        return json.loads


class StreamError(Exception):
    """A file that breaks off or turns out corrupt after some complete lines (a truncated or damaged .gz)."""


STREAM_ERRORS = (StreamError, OSError, EOFError, gzip.BadGzipFile, zlib.error)

MAX_RECORD_BYTES = 1 << 20
"""The longest line read as a record (bytes, not counting its newline): a longer one is a `bad_record`, skipped
in bounded memory. `auditor replay/audit --max-record-bytes` sets it (`set_max_record_bytes`)."""

_READ = 1 << 16  # compressed bytes read at a time; also the step a too-long line is skipped by
_INFLATE = 1 << 18  # the most bytes one decompression step may give (a gzip bomb inflates no further)


def set_max_record_bytes(n: int) -> None:
    """Set the record-size limit for every reader of this process (and the worker processes it forks)."""
    global MAX_RECORD_BYTES
    if n < 1:
        raise ValueError(f"the record-size limit must be at least 1 byte, got {n}")
    MAX_RECORD_BYTES = int(n)


class LongLine:
    """What `open_lines` yields for a line longer than the record-size limit: its length only (the line itself
    was skipped, never held in memory)."""

    __slots__ = ("size", "limit")

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit

    def message(self) -> str:
        return (f"line of {self.size} bytes is longer than the record-size limit ({self.limit} bytes, "
                f"--max-record-bytes): skipped")


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


def open_input(path: str):
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


def open_lines(path: str, max_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The raw lines of a JSON Lines file, plain or gzip (by its magic bytes; several gzip members allowed).

    Memory stays bounded whatever the file holds: a line longer than `max_bytes` (default `MAX_RECORD_BYTES`) is
    skipped to its newline without being kept and comes out as a `LongLine`; gzip is inflated a bounded block at
    a time. Raises `InputError` when the file cannot be opened at all (missing, a directory, a FIFO or device, a
    symlink loop, no permission), and one of `STREAM_ERRORS` after the last complete line when a compressed
    stream is truncated or corrupt: every line before the damage is yielded first."""
    limit = MAX_RECORD_BYTES if max_bytes is None else max_bytes
    raw = open_input(path)
    with raw:
        head = raw.read(2)
        raw.seek(0)
        if head == b"\x1f\x8b":
            yield from _block_lines(_gzip_blocks(raw), limit)
        else:
            yield from _plain_lines(raw, limit)


def _plain_lines(f, limit: int, end: int | None = None) -> Iterator[bytes | LongLine]:
    """Lines of a plain file (up to byte offset `end` when given, which must be the start of a line)."""
    readline = f.readline
    cap = limit + 1
    bounded = end is not None
    left = end - f.tell() if bounded else 0  # bytes to the end of the range
    while not bounded or left > 0:
        line = readline(cap)
        if not line:
            return
        left -= len(line)
        if len(line) < cap or line[-1] == 10:
            yield line
            continue
        size = len(line)  # too long: skipped a block at a time
        while True:
            part = readline(_READ)
            if not part:
                break
            left -= len(part)
            size += len(part)
            if part[-1] == 10:
                size -= 1
                break
        yield LongLine(size, limit)


def range_lines(path: str, start: int, end: int, max_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The lines of bytes [start, end) of a plain file, `start` and `end` at line starts (the parallel reader)."""
    limit = MAX_RECORD_BYTES if max_bytes is None else max_bytes
    with open_input(path) as f:
        f.seek(start)
        yield from _plain_lines(f, limit, end)


def next_line_start(f, pos: int) -> int:
    """The offset just after the first newline at or after `pos` (the file's size when there is none), found a
    block at a time."""
    f.seek(pos)
    while True:
        block = f.read(_READ)
        if not block:
            return f.tell()
        j = block.find(b"\n")
        if j >= 0:
            return pos + j + 1
        pos += len(block)


def _gzip_blocks(raw) -> Iterator[bytes]:
    """A gzip stream (several members, zero padding) inflated at most `_INFLATE` bytes at a time, so that a
    gzip bomb never sits whole in memory. On damage, every byte that inflates before it is given first (the
    block is inflated again byte by byte from a copy of the state), then `StreamError` is raised."""
    d = zlib.decompressobj(wbits=31)
    fed = False  # the current member has had input
    while True:
        chunk = raw.read(_READ)
        if not chunk:
            break
        while chunk:
            if not fed and not chunk.strip(b"\x00"):
                break  # zero padding after the last member
            fed = True
            saved = d.copy()
            try:
                data = d.decompress(chunk, _INFLATE)
            except zlib.error as e:
                yield from _inflate_to_damage(saved, chunk)
                raise StreamError(f"corrupt compressed data ({e})") from None
            if data:
                yield data
            if d.eof:
                chunk = d.unused_data
                d = zlib.decompressobj(wbits=31)
                fed = False
            else:
                chunk = d.unconsumed_tail
    while fed and not d.eof:  # output still held back by the inflate step limit
        try:
            data = d.decompress(d.unconsumed_tail, _INFLATE)
        except zlib.error as e:
            raise StreamError(f"corrupt compressed data ({e})") from None
        if not data:
            break
        yield data
    if fed and not d.eof:
        raise StreamError("the compressed file ends early (truncated)")


def _inflate_to_damage(d, chunk: bytes) -> Iterator[bytes]:
    """What `chunk` inflates to, byte by byte, up to the byte where the stream turns out damaged."""
    for k in range(len(chunk)):
        tail = chunk[k:k + 1]
        while tail:
            try:
                data = d.decompress(tail, _INFLATE)
            except zlib.error:
                return
            if data:
                yield data
            if d.eof:
                return  # a member ended cleanly inside the damaged block: the damage is in what follows
            tail = d.unconsumed_tail


def _block_lines(blocks: Iterator[bytes], limit: int) -> Iterator[bytes | LongLine]:
    """Lines of a stream given in blocks; a line longer than `limit` is dropped as it grows (a `LongLine`)."""
    pending: list[bytes] = []
    plen = 0
    skipping = -1  # >= 0: bytes of a too-long line skipped so far
    for data in blocks:
        start = 0
        if skipping >= 0:
            j = data.find(b"\n")
            if j < 0:
                skipping += len(data)
                continue
            yield LongLine(skipping + j, limit)
            skipping = -1
            start = j + 1
        while True:
            j = data.find(b"\n", start)
            if j < 0:
                break
            if pending:
                if plen + j - start > limit:
                    yield LongLine(plen + j - start, limit)
                else:
                    pending.append(data[start:j + 1])
                    yield b"".join(pending)
                pending = []
                plen = 0
            elif j - start > limit:
                yield LongLine(j - start, limit)
            else:
                yield data[start:j + 1]
            start = j + 1
        if start < len(data):
            plen += len(data) - start
            if plen > limit:
                skipping = plen
                pending = []
                plen = 0
            else:
                pending.append(data[start:])
    if skipping >= 0:
        yield LongLine(skipping, limit)
    elif pending:
        yield b"".join(pending)


_open_lines = open_lines  # the name other modules used


def read_records(paths: Iterable[str], warn=None) -> Iterator[Record]:
    """Every record of every file, in order. Files that cannot be read give one Record with `line=None`; a
    compressed file that breaks off gives one Record at the line after its last complete line. `warn`, if given,
    is called with a one-line message ("path:line: ...") for a file that breaks off."""
    loads = _loads()
    for fi, path in enumerate(paths):
        if str(path).endswith(".parquet"):
            from . import parquet

            yield from parquet.read_records(path, fi)
            continue
        lineno = 0
        try:
            for lineno, raw in enumerate(open_lines(path), 1):
                if type(raw) is LongLine:
                    yield Record(f"{path}:{lineno}", fi, lineno, error=raw.message())
                    continue
                yield from _parse_line(raw, path, fi, lineno, loads)
        except InputError as e:
            yield Record(source=path, file_index=fi, line=None, error=str(e).removeprefix(f"{path}: "))
        except STREAM_ERRORS as e:
            msg = f"unreadable after line {lineno}: {e}"
            if warn is not None:
                warn(f"{path}:{lineno + 1}: {msg}")
            yield Record(source=f"{path}:{lineno + 1}", file_index=fi, line=lineno + 1, error=msg)


def _parse_line(raw: bytes, path: str, fi: int, lineno: int, loads) -> Iterator[Record]:
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
        obj = loads(text)
    except Exception:
        snippet = text.strip()
        snippet = snippet if len(snippet) <= 50 else snippet[:47] + "..."
        yield Record(src, fi, lineno, error=f"not valid JSON: {snippet!r}")
        return
    yield record_from_obj(obj, src, fi, lineno)


def record_from_obj(obj: Any, src: str, fi: int, lineno: int) -> Record:
    try:
        deal = validate(obj, src, fi, lineno)
    except _Bad as e:
        return Record(src, fi, lineno, error=str(e), raw=obj)
    except RecursionError:  # (issue 12) a value nested too deeply to check is a bad record, not a traceback
        return Record(src, fi, lineno, error="a value is nested too deeply to check", raw=slim_raw(obj))
    return Record(src, fi, lineno, deal=deal, raw=obj)


def slim_raw(obj: Any) -> dict:
    """What a bad record's finding reads of its parsed value (`game_id`, `deal_no`), without the rest (which may
    be large or deeply nested: the parallel reader sends it between processes)."""
    if not isinstance(obj, dict):
        return {}
    return {k: obj[k] for k in ("game_id", "deal_no") if isinstance(obj.get(k), (str, int))}


# ---------------------------------------------------------------- writing


def dumps_canonical(obj: dict) -> bytes:
    try:
        import orjson

        return orjson.dumps(obj)
    except ImportError:  # pragma: no cover
        import json

        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def write_jsonl(objs: Iterable[dict], path: str) -> int:
    """Write canonical records (dicts in canonical key order) as JSON Lines, gzip when the name ends in .gz."""
    count = 0
    raw = open(path, "wb")
    # mtime=0 and no file name in the gzip header: the same records give byte-identical files
    f = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if str(path).endswith(".gz") else raw
    with raw, f:
        for obj in objs:
            f.write(dumps_canonical(obj))
            f.write(b"\n")
            count += 1
    return count
