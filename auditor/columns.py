"""The replayed deals as columns: what every detector reads, one row per replayed deal, no Python object per deal.

`AuditColumns` is the hand-over between the replay and the detectors (read -> validate -> replay -> **columns** ->
detectors). It is built two ways that must agree field for field (tests/test_columns.py):

- `from_results(results)`: from the reference engine's `DealResult`s (the executable spec; small inputs, tests,
  and the records the batch kernel leaves to the reference engine);
- the batch pipeline (`auditor.fast.audit_cols`): straight from the kernel's arrays, chunk by chunk.

Rows are in input order (file index, line). `order` is each row's place in the canonical order of deals (see
`canonical_order`): table, then time, then game and deal number, file index and line only among equals, so that
every per-deal sequence a detector reads (the previous deal at a table, a timeline) is the same whatever the order
of the files or how the log was split into them. Seats are absolute (as in the log). Cards
are ints 0..51 (`auditor.cards`), 255 (`NOCARD`) for "no card" in uint8 arrays, -1 in int16 arrays. Every array
has the deals on the first axis.

Fields, with the `DealResult` / `Deal` attribute each one mirrors:

    strings     paths (Deal.file_index -> path), tables, game_ids, players, packs; rulesets (Rules objects)
    file_index  int32   Deal.file_index              line      int64  Deal.line (None -> 0)
    order       int64   the row's rank in the canonical order (`canonical_order`); `DealResult.order` when the
                        replay set it, else the legacy input key file_index << 32 | line (`result_order`)
    time        int64   Deal.time as microseconds since 1970 UTC (`time_key`); TIME_NONE when absent or unparseable
    table       int32   index into tables             game      int32  index into game_ids
    deal_no     int64   Deal.deal_no                  pack      int32  index into packs, -1 when Deal.pack is None
    rset        int16   index into rulesets           n         int8   len(Deal.players)
    dealer      int8    Deal.dealer                   cutter    int8   Deal.cutter_seat
    n_sides     int8    Deal.n_sides
    seat_player int32 [D, 8]  player index of each seat, -1 past n
    side_of     int8  [D, 8]  Deal.side_of, -1 past n
    turn_up     int16   the parsed turn-up, -1 when it does not parse
    shown       int16   the parsed shown card, -1 when none or it does not parse
    trump       int8    DealResult.trump, -1 when None
    hands       uint64 [D, 8]  DealResult.hands as bitmasks (0 past n, and everywhere when None)
    has_hands   bool    DealResult.hands is not None
    rec_hands   bool    Deal.hands is not None
    hands_dup   bool    some recorded hand lists a card twice
    deck        uint8 [D, 52]  the dealt order of the pack, as `shuffle_residue` reads it: the logged deck, else
                        the order the recorded hands imply (NOCARD where unknown); `deck_len` -1 when neither
    deck_len    int8
    play_card   uint8 [D, P]  DealResult.plays: card, seat, trick (0-based) of each replayed play, in play order
    play_seat   int8  [D, P]  (NOCARD / -1 padding past n_plays)
    play_trick  int8  [D, P]
    n_plays     int16
    winners     int8  [D, T]  DealResult.winners (-1 padding), n_winners = len(winners)
    n_winners   int8
    rev_row, rev_trick, rev_seat   DealResult.revokes flattened: row, trick (1-based), seat; in row order, each
                        row's revokes in their DealResult order
    scored      bool    DealResult.scored
    points      int16 [D, S]  DealResult.points (0 padding; all 0 when not scored); S = max n_sides
    not_in_hand bool    some finding of the deal is `card_not_in_hand`
    sheet       bool    (issue 16) a score-sheet record (`Deal.is_sheet`): no cards, the facts of `Deal.observed`
    jack_seat   int8    (issue 16) a score-sheet record's `observed.jack`, the seat that played the Jack of trumps:
                        -1 nobody (not in play), -2 not known (not a sheet; an All Fours sheet deal whose cards
                        were run, which changes trumps)
    log_tricks  dict row -> list[list[int]] | None: the recorded tricks parsed (`shuffle_residue`'s `_tricks_of`),
                        only for rows where they are not simply the plays grouped by trick (see `tricks_of`)
    runs        dict row -> Deal.runs (All Fours deals that ran the cards; few)

`sources(i)` gives the "path:line" of row i as `Deal.source` + line does.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numba
import numpy as np

from .cards import parse_card, parse_cards
from .dealog import Deal
from .replay.reference import DealResult
from .rules import Layout, Rules, layout
from .select import deal_time

NOCARD = 255
MAX_SEATS = 8
MAX_DECK = 52
DEAL_NO_MAX = (1 << 63) - 1  # a larger deal number (the reader takes any) is held as this in the columns; the
# replay's findings and games keep the exact number, only the audit's per-deal views (top deals) show it capped

TIME_NONE = np.iinfo(np.int64).max  # a deal without a (parseable) time: after every timed deal of its table

# per-row array fields: name -> (dtype, trailing shape or None, fill)
_ROW_FIELDS: dict[str, tuple[Any, int | str | None, Any]] = {
    "file_index": (np.int32, None, 0),
    "line": (np.int64, None, 0),
    "order": (np.int64, None, 0),
    "time": (np.int64, None, TIME_NONE),
    "table": (np.int32, None, 0),
    "game": (np.int32, None, 0),
    "deal_no": (np.int64, None, 0),
    "pack": (np.int32, None, -1),
    "rset": (np.int16, None, 0),
    "n": (np.int8, None, 0),
    "dealer": (np.int8, None, 0),
    "cutter": (np.int8, None, 0),
    "n_sides": (np.int8, None, 0),
    "seat_player": (np.int32, MAX_SEATS, -1),
    "side_of": (np.int8, MAX_SEATS, -1),
    "turn_up": (np.int16, None, -1),
    "shown": (np.int16, None, -1),
    "trump": (np.int8, None, -1),
    "hands": (np.uint64, MAX_SEATS, 0),
    "has_hands": (bool, None, False),
    "rec_hands": (bool, None, False),
    "hands_dup": (bool, None, False),
    "deck": (np.uint8, MAX_DECK, NOCARD),
    "deck_len": (np.int8, None, -1),
    "play_card": (np.uint8, "P", NOCARD),
    "play_seat": (np.int8, "P", -1),
    "play_trick": (np.int8, "P", -1),
    "n_plays": (np.int16, None, 0),
    "winners": (np.int8, "T", -1),
    "n_winners": (np.int8, None, 0),
    "scored": (bool, None, False),
    "points": (np.int16, "S", 0),
    "not_in_hand": (bool, None, False),
    "sheet": (bool, None, False),
    "jack_seat": (np.int8, None, -2),
}


@dataclass
class AuditColumns:
    paths: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    game_ids: list[str] = field(default_factory=list)
    players: list[str] = field(default_factory=list)
    packs: list[str] = field(default_factory=list)
    rulesets: list[Rules] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rev_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rev_trick: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    rev_seat: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    log_tricks: dict[int, list[list[int]] | None] = field(default_factory=dict)
    runs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    source_of: dict[int, str] = field(default_factory=dict)  # rows whose Deal.source is not "path:line"

    def __getattr__(self, name: str) -> np.ndarray:
        arrays = self.__dict__.get("arrays")
        if arrays is not None and name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def __len__(self) -> int:
        a = self.arrays.get("order")
        return 0 if a is None else len(a)

    # ------------------------------------------------------------ derived views
    def source(self, i: int) -> str:
        if i in self.source_of:
            return self.source_of[i]
        return f"{self.paths[int(self.file_index[i])]}:{int(self.line[i])}"

    def revokes_of(self, i: int) -> list[tuple[int, int]]:
        """DealResult.revokes of row i."""
        a, b = np.searchsorted(self.rev_row, [i, i + 1])
        return [(int(k), int(s)) for k, s in zip(self.rev_trick[a:b], self.rev_seat[a:b], strict=True)]

    def plays_of(self, i: int) -> list[tuple[int, int, int]]:
        """DealResult.plays of row i."""
        m = int(self.n_plays[i])
        return [(int(k), int(s), int(c)) for k, s, c in
                zip(self.play_trick[i, :m], self.play_seat[i, :m], self.play_card[i, :m], strict=True)]

    def tricks_of(self, i: int) -> list[list[int]] | None:
        """The recorded tricks of row i, parsed (None when absent or some card does not parse)."""
        if i in self.log_tricks:
            return self.log_tricks[i]
        out: list[list[int]] = []
        for k, _, c in self.plays_of(i):
            while len(out) <= k:
                out.append([])
            out[k].append(c)
        return out or None

    def rules(self, i: int) -> Rules:
        return self.rulesets[int(self.rset[i])]

    def take(self, rows: np.ndarray) -> "AuditColumns":
        """The rows `rows` (ascending) as a new AuditColumns (string tables shared)."""
        rows = np.asarray(rows, np.int64)
        pos = {int(r): j for j, r in enumerate(rows)}
        keep = np.isin(self.rev_row, rows)
        return AuditColumns(
            paths=self.paths, tables=self.tables, game_ids=self.game_ids, players=self.players, packs=self.packs,
            rulesets=self.rulesets, arrays={k: v[rows] for k, v in self.arrays.items()},
            rev_row=np.searchsorted(rows, self.rev_row[keep]).astype(np.int64), rev_trick=self.rev_trick[keep],
            rev_seat=self.rev_seat[keep],
            log_tricks={pos[r]: v for r, v in self.log_tricks.items() if r in pos},
            source_of={pos[r]: v for r, v in self.source_of.items() if r in pos},
            runs={pos[r]: v for r, v in self.runs.items() if r in pos})

    def equal(self, other: "AuditColumns") -> list[str]:
        """The fields where two AuditColumns differ (string tables compared through the indices)."""
        diffs = []
        if len(self) != len(other):
            return [f"rows {len(self)} != {len(other)}"]
        for name, a in self.arrays.items():
            b = other.arrays.get(name)
            if b is None:
                diffs.append(f"{name} missing")
                continue
            w = min(a.shape[1], b.shape[1]) if a.ndim == 2 else None
            if a.ndim == 2:
                aa, bb = a[:, :w], b[:, :w]
                extra = [x[:, w:] for x in (a, b) if x.shape[1] > w]
                fill = _ROW_FIELDS[name][2]
                if any((e != fill).any() for e in extra):
                    diffs.append(f"{name}: values past the common width")
            else:
                aa, bb = a, b
            if name in ("table", "game", "pack", "seat_player", "rset"):
                aa = _names(self, name, aa)
                bb = _names(other, name, bb)
            if not np.array_equal(aa, bb):
                bad = np.flatnonzero((aa != bb).reshape(len(aa), -1).any(1))
                diffs.append(f"{name}: rows {bad[:5].tolist()}")
        for name in ("rev_row", "rev_trick", "rev_seat"):
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                diffs.append(name)
        for i in range(len(self)):
            if self.tricks_of(i) != other.tricks_of(i):
                diffs.append(f"tricks_of({i})")
                break
        if {k: v for k, v in self.runs.items()} != {k: v for k, v in other.runs.items()}:
            diffs.append("runs")
        if [self.source(i) for i in range(len(self))] != [other.source(i) for i in range(len(other))]:
            diffs.append("sources")
        return diffs

    @staticmethod
    def concat(parts: Sequence["AuditColumns"]) -> "AuditColumns":
        """Rows of every part in turn, string tables unified. Parts keep their own row order and their `order`
        keys (the builder of a whole table sets them afterwards: `set_canonical_order`)."""
        out = AuditColumns()
        idx: dict[str, dict[str, int]] = {k: {} for k in ("tables", "game_ids", "players", "packs")}
        rs_idx: dict[Rules, int] = {}

        shared: dict[str, list[str]] = {}  # parts built by one ColumnsBuilder share their string lists: ids stay

        def remap(part: AuditColumns, key: str) -> np.ndarray | None:
            names = getattr(part, key)
            if shared.get(key) is names:
                return None
            d = idx[key]
            lst = getattr(out, key)
            if not lst and not d:  # the first part: its list becomes the output's (later parts may share it)
                lst.extend(names)
                d.update({s: j for j, s in enumerate(names)})
                shared[key] = names
                return None
            m = np.empty(len(getattr(part, key)) + 1, np.int64)
            for j, s in enumerate(getattr(part, key)):
                if s not in d:
                    d[s] = len(lst)
                    lst.append(s)
                m[j] = d[s]
            m[-1] = -1  # index -1 stays -1
            return m

        arrays: dict[str, list[np.ndarray]] = {k: [] for k in _ROW_FIELDS}
        widths = {"P": 1, "T": 1, "S": 1}
        for p in parts:
            for k, (_, shape, _) in _ROW_FIELDS.items():
                if isinstance(shape, str) and k in p.arrays:
                    widths[shape] = max(widths[shape], p.arrays[k].shape[1])
        base = 0
        rev: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = ([], [], [])
        for p in parts:
            if not len(p):
                continue
            maps = {k: remap(p, k) for k in idx}
            for j, path in enumerate(p.paths):  # file indices are the input's: the same in every part
                while len(out.paths) <= j:
                    out.paths.append("")
                if path:
                    out.paths[j] = path
            rsm = np.empty(len(p.rulesets), np.int64)
            for j, R in enumerate(p.rulesets):
                if R not in rs_idx:
                    rs_idx[R] = len(out.rulesets)
                    out.rulesets.append(R)
                rsm[j] = rs_idx[R]
            for k, (dt, shape, fill) in _ROW_FIELDS.items():
                a = p.arrays[k]
                if isinstance(shape, str) and a.shape[1] < widths[shape]:
                    pad = np.full((len(a), widths[shape] - a.shape[1]), fill, dt)
                    a = np.concatenate([a, pad], 1)
                key = {"table": "tables", "game": "game_ids", "pack": "packs", "seat_player": "players"}.get(k)
                m = maps[key] if key is not None else None
                if m is not None:
                    a = m[a].astype(dt)
                elif k == "rset":
                    a = rsm[a].astype(dt)
                arrays[k].append(a)
            rev[0].append(p.rev_row + base)
            rev[1].append(p.rev_trick)
            rev[2].append(p.rev_seat)
            out.log_tricks.update({i + base: v for i, v in p.log_tricks.items()})
            out.runs.update({i + base: v for i, v in p.runs.items()})
            out.source_of.update({i + base: v for i, v in p.source_of.items()})
            base += len(p)
        out.arrays = {k: (np.concatenate(v) if v else _empty(k, widths)) for k, v in arrays.items()}
        if base:
            out.rev_row = np.concatenate(rev[0]).astype(np.int64)
            out.rev_trick = np.concatenate(rev[1]).astype(np.int16)
            out.rev_seat = np.concatenate(rev[2]).astype(np.int8)
        return out


# ---------------------------------------------------------------- the canonical order of deals

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def time_key(text: object) -> int:
    """`Deal.time` as microseconds since 1970-01-01 UTC (`select.deal_time`: ISO-8601, a time without a zone is UTC,
    a bare date its midnight); TIME_NONE when absent, unparseable or out of range."""
    t = deal_time(text)
    if t is None:
        return int(TIME_NONE)
    try:
        us = (t - _EPOCH) // _dt.timedelta(microseconds=1)
    except OverflowError:  # pragma: no cover - datetime's range is within int64 microseconds
        return int(TIME_NONE)
    return int(us) if -(1 << 62) < us < (1 << 62) else int(TIME_NONE)


def time_keys(texts: Sequence[object]) -> np.ndarray:
    """`time_key` of each text. The usual form (`_ISO_PLAIN`: a full date and time to the second, an optional
    fraction of up to six digits and an optional `Z` or +HH:MM zone) is matched by Arrow's RE2 and read from its
    bytes by numpy, a column at a time; every other text (another ISO form, whitespace, a value out of range) by
    `time_key`, each distinct text once. Held equal to `time_key` by tests/test_time_keys.py (issue 15: one `fromisoformat` a deal
    was a fifth of the table's build)."""
    n = len(texts)
    out = np.full(n, TIME_NONE, np.int64)
    slow = _plain_time_keys(texts, out)
    cache: dict[object, int] = {}
    for i in slow:
        t = texts[i]
        k = cache.get(t)
        if k is None:
            k = cache[t] = time_key(t)
        out[i] = k
    return out


_ISO_PLAIN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})?$"
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)


def _plain_time_keys(texts: Sequence[object], out: np.ndarray) -> list[int]:
    """Fills `out` at the texts of `_ISO_PLAIN`'s form with a valid date and time (what `time_key` gives them:
    microseconds since 1970 UTC, a time without a zone read as UTC) and leaves None at TIME_NONE; returns the
    indices of every other text, for `time_key`. Everything goes to `time_key` when the texts are not all
    strings or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    if n == 0:
        return []
    try:
        arr = pa.array(texts, type=pa.string())
    except (pa.ArrowException, TypeError, ValueError, UnicodeError):  # a number, a lone surrogate: the spec's way
        return list(range(n))
    present = np.asarray(arr.is_valid())
    match = pc.match_substring_regex(arr, _ISO_PLAIN).fill_null(False).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(match)
    ok = np.zeros(n, bool)
    if len(rows):
        # a matched text is ASCII with its fields at fixed places from each end: read as bytes from Arrow's buffers
        bufs = arr.buffers()
        off = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=arr.offset * 4)
        data = np.frombuffer(bufs[2], np.uint8)
        top = len(data) - 1
        st = off[rows].astype(np.int64)
        end = off[rows + 1].astype(np.int64)
        size = end - st

        def digits(at: np.ndarray, k: int) -> np.ndarray:  # the k-digit number at byte `at` (read in the buffer)
            v = np.zeros(len(at), np.int64)
            for j in range(k):
                v = v * 10 + data[np.minimum(at + j, top)].astype(np.int64) - 48
            return v

        y, mo, d = digits(st, 4), digits(st + 5, 2), digits(st + 8, 2)
        h, mi, s = digits(st + 11, 2), digits(st + 14, 2), digits(st + 17, 2)
        sign_at = data[np.maximum(end - 6, st)]
        zoned = (size >= 25) & ((sign_at == ord("+")) | (sign_at == ord("-")))
        zlen = np.where(data[end - 1] == ord("Z"), 1, np.where(zoned, 6, 0))
        zh = np.where(zoned, digits(end - 5, 2), 0)
        zm = np.where(zoned, digits(end - 2, 2), 0)
        sign = np.where(zoned & (sign_at == ord("-")), -1, 1)
        flen = np.where(size > 19, size - 20 - zlen, 0)  # after the seconds: "." and the digits, or the zone
        frac = np.zeros(len(rows), np.int64)
        for j in range(6):
            frac = frac * 10 + np.where(j < flen, data[np.minimum(st + 20 + j, top)].astype(np.int64) - 48, 0)
        leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
        mo_c = np.clip(mo, 0, 12)
        dim = _DAYS_IN_MONTH[mo_c] + ((mo_c == 2) & leap)
        valid = ((y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= dim) & (h <= 23) & (mi <= 59) & (s <= 59)
                 & (zh <= 23) & (zm <= 59))
        # days from the civil date (proleptic Gregorian), 1970-01-01 = 0
        y2 = y - (mo <= 2)
        era = np.floor_divide(y2, 400)
        yoe = y2 - era * 400
        doy = (153 * ((mo + 9) % 12) + 2) // 5 + d - 1
        days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
        us = (((days * 24 + h) * 60 + mi) * 60 + s) * 1_000_000 + frac - sign * (zh * 60 + zm) * 60_000_000
        good = rows[valid]
        out[good] = us[valid]
        ok[good] = True
    return np.flatnonzero(present & ~ok).tolist()


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple:
    """The sort key of a table name or game id: runs of digits compare as numbers ("g/2" before "g/10"), the rest
    by code point; a total order (equal numbers with different leading zeros fall back to the text)."""
    parts = _DIGITS.split(name)
    return tuple((1, int(p), p) if i % 2 else (0, p) for i, p in enumerate(parts) if p)


def natural_order(names: Sequence[str]) -> np.ndarray:
    """The indices of `names` sorted by `natural_key`, ties (equal names) in the order given: `sorted(range(n),
    key=lambda i: natural_key(names[i]))`, held equal to it by tests/test_natural_order.py. ASCII names are ranked
    by a byte key each (`_natural_bytes`) that compares as their `natural_key` does, built by numba from Arrow's
    buffers and sorted by numpy (issue 15: the tuples of 100,000 game ids were a sixth of the table's build and
    again of `marked_ten`'s finalize); other names (where Python's digits are not only 0-9) by the spec."""
    n = len(names)
    if n < 64:
        return _spec_order(names)
    import pyarrow as pa

    try:
        arr = pa.array(names, type=pa.string())
    except (pa.ArrowException, TypeError, ValueError, UnicodeError):
        arr = None
    if arr is not None and arr.null_count == 0:
        bufs = arr.buffers()
        off = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        longest = int((off[1:] - off[:-1]).max())
        if longest <= 250 and not (data[off[0]:off[-1]] >= 128).any() and not (data[off[0]:off[-1]] == 0).any():
            width = 4 * longest + 1
            keys = np.zeros((n, width), np.uint8)
            _natural_bytes(off, data, keys)
            return np.argsort(keys.view(f"S{width}").reshape(n), kind="stable").astype(np.int64)
    return _spec_order(names)


def _spec_order(names: Sequence[str]) -> np.ndarray:
    """`natural_order` by the spec: each name's `natural_key` once, the indices sorted by them."""
    keys = [natural_key(x) for x in names]
    return np.asarray(sorted(range(len(names)), key=keys.__getitem__), np.int64).reshape(len(names))


@numba.njit(cache=True)
def _natural_bytes(off, data, out):  # pragma: no cover - numba
    """Per ASCII name (no NUL), a byte key whose order is `natural_key`'s: a text run is 1, its bytes, 0 (ends
    before any longer text); a digit run is 2, the number of its digits without leading zeros, those digits (a
    number of more digits is larger), then the tie of equal numbers by their text (`natural_key` compares "007"
    before "07" and "0" before "00"): 255 less the run's length, or for zero its length."""
    for i in range(len(off) - 1):
        j = off[i]
        b = off[i + 1]
        k = 0
        while j < b:
            if 48 <= data[j] <= 57:
                s = j
                while j < b and 48 <= data[j] <= 57:
                    j += 1
                z = s
                while z < j - 1 and data[z] == 48:
                    z += 1
                out[i, k] = 2
                out[i, k + 1] = j - z
                k += 2
                for t in range(z, j):
                    out[i, k] = data[t]
                    k += 1
                out[i, k] = (j - s) if (j - z == 1 and data[z] == 48) else 255 - (j - s)
                k += 1
            else:
                out[i, k] = 1
                k += 1
                while j < b and not (48 <= data[j] <= 57):
                    out[i, k] = data[j]
                    k += 1
                    j += 1
                out[i, k] = 0
                k += 1


def natural_ranks(names: Sequence[str], none: bool = False) -> np.ndarray:
    """Each name's rank in `natural_key` order (`natural_order`); with `none`, one extra entry, -1, for the index -1
    of a row without a name."""
    rank = np.full(len(names) + none, -1, np.int64)
    rank[natural_order(names)] = np.arange(len(names))
    return rank


def canonical_order(table: np.ndarray, tables: Sequence[str], time: np.ndarray, game: np.ndarray,
                    game_ids: Sequence[str], deal_no: np.ndarray, file_index: np.ndarray,
                    line: np.ndarray) -> np.ndarray:
    """Each deal's rank (0-based, int64) in the canonical order of deals: by table name, then time (TIME_NONE, no
    time, last), then game id, then deal number, then file index and line; deals equal in all of these keep the
    order given. Names compare by `natural_key` (numbers in them as numbers); `table`/`game` index `tables`/`game_ids`. The order depends only
    on what the deals say, not on the order of the files, except among deals that say the same (duplicates)."""
    D = len(table)
    if D == 0:
        return np.zeros(0, np.int64)
    tr = natural_ranks(tables, none=True)[np.asarray(table, np.int64)]
    gr = natural_ranks(game_ids, none=True)[np.asarray(game, np.int64)]
    o = np.lexsort((np.arange(D), np.asarray(line, np.int64), np.asarray(file_index, np.int64),
                    np.asarray(deal_no, np.int64), gr, np.asarray(time, np.int64), tr))
    rank = np.empty(D, np.int64)
    rank[o] = np.arange(D)
    return rank


def input_key(file_index: int, line: int | None) -> int:
    """The legacy place of a record in the input: file index << 32 | line (no line: 0)."""
    return (int(file_index) << 32) | int(line or 0)


def result_order(r: DealResult) -> int:
    """The key of a deal as `AuditColumns.order` holds it: `DealResult.order`, the canonical rank the replay of the
    whole input gave it (`replay_records`), else (a result made outside a replay) its input key."""
    return int(r.order) if r.order is not None else input_key(r.deal.file_index, r.deal.line)


def set_canonical_order(c: AuditColumns) -> None:
    """Set `order` of a whole table to `canonical_order` of its rows."""
    c.arrays["order"] = canonical_order(c.table, c.tables, c.time, c.game, c.game_ids, c.deal_no, c.file_index,
                                        c.line)


def _names(c: AuditColumns, name: str, a: np.ndarray) -> np.ndarray:
    lists: dict[str, Sequence[object]] = {"table": c.tables, "game": c.game_ids, "pack": c.packs,
                                          "seat_player": c.players, "rset": c.rulesets}
    lst = lists[name]
    table = np.array([repr(x) for x in lst] + [""], dtype=object)
    return table[a]


def _empty(k: str, widths: dict[str, int]) -> np.ndarray:
    dt, shape, _ = _ROW_FIELDS[k]
    if shape is None:
        return np.zeros(0, dt)
    w = widths[shape] if isinstance(shape, str) else shape
    return np.zeros((0, w), dt)


def blank(D: int, widths: dict[str, int]) -> dict[str, np.ndarray]:
    """Arrays for D rows filled with each field's fill value."""
    out = {}
    for k, (dt, shape, fill) in _ROW_FIELDS.items():
        if shape is None:
            out[k] = np.full(D, fill, dt)
        else:
            w = widths[shape] if isinstance(shape, str) else shape
            out[k] = np.full((D, w), fill, dt)
    return out


# ---------------------------------------------------------------- from DealResults (the spec)


def deck_of(deal: Deal, L: Layout) -> list[int] | None:
    """The dealt order of the pack: the logged deck, else the one the recorded hands (in order received) imply;
    -1 where unknown. None when neither gives it."""
    if deal.deck is not None:
        cards = parse_cards(deal.deck)
        if cards is None or len(cards) != L.deck_len:
            return None
        return cards
    if deal.hands is None or not L.deck_checkable:
        return None
    hands: list[list[int]] = []
    for h in deal.hands:
        cs = parse_cards(h)
        if cs is None:
            return None
        hands.append(cs)
    out = [-1] * L.deck_len
    for k, (seat, slot) in enumerate(zip(L.deal_seat, L.deal_slot, strict=True)):
        if seat is not None and slot is not None:  # both None past the dealt cards
            if slot >= len(hands[seat]):
                return None
            out[k] = hands[seat][slot]
    tu = parse_card(deal.turn_up)
    if tu is not None and out[L.turnup_index] == -1:
        out[L.turnup_index] = tu
    return out


def sheet_jack_seat(deal: Deal) -> int:
    """(issue 16) `jack_seat` of a score-sheet record: the seat that played the Jack of trumps, -1 nobody, -2 not
    known (All Fours after a run of the cards: the Jack observed is of the suit the run made trumps)."""
    if deal.game == "all_fours" and deal.beg == "run":
        return -2
    jack = (deal.observed or {}).get("jack")
    return -1 if jack is None else int(jack)


def parsed_tricks(deal: Deal) -> list[list[int]] | None:
    """The recorded tricks parsed; None when absent, empty, or some card does not parse."""
    if not deal.tricks:
        return None
    out = []
    for t in deal.tricks:
        cs = parse_cards(t)
        if cs is None:
            return None
        out.append(cs)
    return out


def layout_of(R: Rules, n: int, dealer: int) -> Layout | None:
    """`rules.layout` for a player count the game allows (the range `dealog.validate` checks); None for any other
    count (which `layout` cannot always lay out)."""
    if not R.min_players <= n <= R.max_players:
        return None
    return layout(R, n, dealer)


def from_results(results: Sequence[DealResult]) -> AuditColumns:
    """The columns of the reference engine's results (rows in the order given; the audit passes input order).
    `order` is `result_order(r)`: the result's `DealResult.order` (the replay of a whole input sets them, so any
    subset of its results keeps the whole input's keys), else its input key file_index << 32 | line."""

    c = AuditColumns()
    D = len(results)
    P = max([len(r.plays) for r in results] + [1])
    T = max([len(r.winners) for r in results] + [1])
    S = max([r.deal.n_sides for r in results] + [1])
    a = blank(D, {"P": P, "T": T, "S": S})
    ids: dict[str, dict[Any, int]] = {k: {} for k in ("tables", "game_ids", "players", "packs", "rulesets")}

    def idx(key: str, v: object) -> int:
        d = ids[key]
        if v not in d:
            d[v] = len(d)
            getattr(c, key).append(v)
        return d[v]

    rev: tuple[list[int], list[int], list[int]] = ([], [], [])
    for i, r in enumerate(results):
        d = r.deal
        if d.line is not None and d.source.endswith(f":{d.line}"):
            path = d.source[:-len(f":{d.line}")]
        else:
            path = d.source
            c.source_of[i] = d.source
        a["file_index"][i] = d.file_index
        while len(c.paths) <= d.file_index:
            c.paths.append("")
        c.paths[d.file_index] = path
        a["line"][i] = d.line or 0
        a["table"][i] = idx("tables", d.table)
        a["game"][i] = idx("game_ids", d.game_id)
        a["deal_no"][i] = min(d.deal_no, DEAL_NO_MAX)
        a["time"][i] = time_key(d.time)
        a["pack"][i] = -1 if d.pack is None else idx("packs", d.pack)
        a["rset"][i] = idx("rulesets", d.ruleset)
        n = d.n
        a["n"][i] = n
        a["dealer"][i] = d.dealer
        a["cutter"][i] = d.cutter_seat
        a["n_sides"][i] = d.n_sides
        a["seat_player"][i, :n] = [idx("players", p) for p in d.players]
        a["side_of"][i, :n] = d.side_of
        tu = parse_card(d.turn_up)
        a["turn_up"][i] = -1 if tu is None else tu
        sh = parse_card(d.shown) if d.shown is not None else None
        a["shown"][i] = -1 if sh is None else sh
        a["trump"][i] = -1 if r.trump is None else r.trump
        if r.hands is not None:
            a["has_hands"][i] = True
            a["hands"][i, :len(r.hands)] = [np.uint64(h) for h in r.hands]
        if d.hands is not None:
            a["rec_hands"][i] = True
            a["hands_dup"][i] = any(len(h) != len(set(h)) for h in d.hands)
        L = layout_of(d.ruleset, n, d.dealer)
        deck = deck_of(d, L) if L is not None else None
        if deck is not None:
            a["deck_len"][i] = len(deck)
            a["deck"][i, :len(deck)] = [NOCARD if x < 0 else x for x in deck]
        for j, (k, s, cd) in enumerate(r.plays):
            a["play_trick"][i, j] = k
            a["play_seat"][i, j] = s
            a["play_card"][i, j] = cd
        a["n_plays"][i] = len(r.plays)
        a["winners"][i, :len(r.winners)] = r.winners
        a["n_winners"][i] = len(r.winners)
        for k, s in r.revokes:
            rev[0].append(i)
            rev[1].append(k)
            rev[2].append(s)
        a["scored"][i] = r.scored
        pts = r.points
        if pts is not None:
            a["points"][i, :len(pts)] = pts
        a["not_in_hand"][i] = any(f.code == "card_not_in_hand" for f in r.findings)
        if d.is_sheet:
            a["sheet"][i] = True
            a["jack_seat"][i] = sheet_jack_seat(d)
        if d.runs:
            c.runs[i] = d.runs
        lt = parsed_tricks(d)
        grouped: list[list[int]] = []
        for k, _, cd in r.plays:
            while len(grouped) <= k:
                grouped.append([])
            grouped[k].append(cd)
        if lt != (grouped or None):
            c.log_tricks[i] = lt
    a["order"][:] = [result_order(r) for r in results]
    c.arrays = a
    c.rev_row = np.asarray(rev[0], np.int64)
    c.rev_trick = np.asarray(rev[1], np.int16)
    c.rev_seat = np.asarray(rev[2], np.int8)
    return c


__all__ = ["AuditColumns", "from_results", "deck_of", "parsed_tricks", "NOCARD", "MAX_SEATS", "TIME_NONE",
           "canonical_order", "result_order", "set_canonical_order", "time_key", "time_keys", "input_key",
           "natural_order", "natural_ranks"]
