"""Deals as columns: a `Chunk` holds many records of one input file in numpy arrays.

Cards are uint8 codes (`suit * 13 + rank`; 255 never occurs in a valid column). Card lists are `Ragged`:
`data[off[i]:off[i + 1]]` is row i's list, all seats or tricks concatenated, with the per-seat / per-trick
lengths in a second `Ragged` of uint8 counts. This is also the Parquet layout (binary columns), so a Parquet
row group becomes a `Chunk` without touching a row in Python.

Rows that cannot live in columns keep their `Record` (`slow`): bad records (status 2) and valid records the
columns cannot hold exactly (status 1: lenient card spellings, unknown card strings, claims, run cards of the
wrong count, numbers out of range). The replay gives those to the reference engine.

`ChunkBuilder.add_obj` accepts a parsed JSON object only when it is certainly a valid deal-log/1 record whose
`Deal` the columns hold exactly (otherwise the caller validates it the slow way); `Registry` interns what
repeats across records (rules, player line-ups, sides, game ids) so that each is checked once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cards import CARD_STR, parse_card
from ..dealog import _GAME_ALIASES, FORMAT, KNOWN_FIELDS, Deal, Record, _norm_name
from ..rules import Rules, resolve

GAMES = ("scotch_whist", "all_fours")
GAME_CODE = {"scotch_whist": 0, "all_fours": 1}
BEGS = (None, "stand", "take_one", "run")
BEG_CODE = {None: 0, "stand": 1, "take_one": 2, "run": 3}
NOCARD = 255
INT32 = 2 ** 31


def _card_lut() -> np.ndarray:
    lut = np.full(65536, NOCARD, np.uint8)
    for a in range(32, 127):
        for b in range(32, 127):
            code = parse_card(chr(a) + chr(b))
            if code is not None:
                lut[a * 256 + b] = code
    return lut


_LUT: np.ndarray | None = None


def card_lut() -> np.ndarray:
    global _LUT
    if _LUT is None:
        _LUT = _card_lut()
    return _LUT


def codes_of(text: str) -> np.ndarray:
    """Card codes of a string of two-character cards (ASCII); NOCARD where a pair is not a card."""
    raw = np.frombuffer(text.encode("ascii"), np.uint8)
    if raw.size == 0:
        return np.zeros(0, np.uint8)
    pairs = raw.reshape(-1, 2).astype(np.uint16)
    return card_lut()[(pairs[:, 0] << 8) | pairs[:, 1]]


def codes_of_sep(text: str) -> np.ndarray:
    """Card codes of '|'-separated two-character cards; NOCARD where an item is not exactly a card."""
    if not text:
        return np.zeros(0, np.uint8)
    raw = np.frombuffer(text.encode("ascii") + b"|", np.uint8).reshape(-1, 3)
    codes = card_lut()[(raw[:, 0].astype(np.uint16) << 8) | raw[:, 1]]
    codes[raw[:, 2] != ord("|")] = NOCARD
    return codes


def uniq(x: np.ndarray, return_inverse: bool = False):
    """`np.unique`, with a fast path for the common case of a single value."""
    if len(x) and x.min() == x.max():
        u = x[:1].copy()
        return (u, np.zeros(len(x), np.intp)) if return_inverse else u
    return np.unique(x, return_inverse=return_inverse)


CARD_BYTES = np.array([s.encode() for s in CARD_STR] + [b"??"] * (256 - len(CARD_STR)), dtype="S2")


@dataclass
class Ragged:
    """Row i's values are `data[off[i]:off[i+1]]`; `has[i]` False means the field is absent (null)."""

    off: np.ndarray  # int64 [n + 1]
    data: np.ndarray  # uint8
    has: np.ndarray  # bool [n]

    def lens(self) -> np.ndarray:
        return np.diff(self.off)

    def row(self, i: int) -> np.ndarray | None:
        return self.data[self.off[i]:self.off[i + 1]] if self.has[i] else None

    @staticmethod
    def from_lists(lens: list[int], data: np.ndarray, has: list[bool] | np.ndarray) -> "Ragged":
        off = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(np.asarray(lens, np.int64), out=off[1:])
        return Ragged(off, data, np.asarray(has, bool))

    def take(self, rows: np.ndarray) -> "Ragged":
        lens = self.lens()[rows]
        off = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        idx = np.repeat(self.off[:-1][rows] - off[:-1], lens) + np.arange(off[-1])
        return Ragged(off, self.data[idx], self.has[rows])


class Registry:
    """What repeats across records, interned once per run: rules, line-ups, sides, input paths. (Game ids stay
    chunk-local, `Chunk.gid_vals`; the replay unifies them once at the end.)"""

    def __init__(self) -> None:
        self.rulesets: list[Rules] = []
        self.rs_info: list[tuple[int, str, dict]] = []  # (game code, preset, options as given)
        self._rs: dict[Any, int] = {}
        self.lineups: list[list[str]] = []
        self._lu: dict[tuple, int] = {}
        self.sides: list[list[list[int]]] = []
        self.side_of: list[np.ndarray] = []
        self._sd: dict[Any, int] = {}
        self.paths: list[str] = []
        self._fast_rules: dict[Any, int] = {}

    # -- rules
    def ruleset_id(self, game: str, preset: str, options: dict) -> int:
        import orjson

        key = (game, preset, orjson.dumps(options) if options else b"")
        i = self._rs.get(key)
        if i is None:
            i = len(self.rulesets)
            self._rs[key] = i
            self.rulesets.append(resolve(game, preset, options))
            self.rs_info.append((GAME_CODE[game], preset, dict(options)))
        return i

    def fast_rules(self, game_raw: Any, rules_raw: Any, options: Any) -> int:
        """The ruleset id for a record's raw `game`, `rules`, `options`, or -1 when the slow path must judge."""
        import orjson

        try:
            key = (game_raw, rules_raw, orjson.dumps(options) if options else b"")
            hit = self._fast_rules.get(key)
        except TypeError:
            return -1
        if hit is not None:
            return hit
        i = -1
        if isinstance(game_raw, str) and isinstance(rules_raw, str) and (options is None or isinstance(options, dict)):
            game = _GAME_ALIASES.get(_norm_name(game_raw))
            if game is not None:
                try:
                    i = self.ruleset_id(game, _norm_name(rules_raw), options or {})
                except (KeyError, ValueError):
                    i = -1
        self._fast_rules[key] = i
        return i

    # -- players and sides
    def lineup_id(self, players: list) -> int:
        """Id of a valid line-up (strings, no repeat), -1 otherwise."""
        try:
            key = tuple(players)
            hit = self._lu.get(key)
        except TypeError:
            return -1
        if hit is not None:
            return hit
        ok = all(type(p) is str for p in players) and len(set(players)) == len(players)
        i = -1
        if ok:
            i = len(self.lineups)
            self.lineups.append(list(players))
        self._lu[key] = i
        return i

    def sides_id(self, sides: Any, n: int) -> int:
        """Id of a valid `sides` for n seats; -1: no sides; -2: invalid (the slow path gives the message)."""
        import orjson

        if sides is None:
            return -1
        try:
            key = (n, orjson.dumps(sides))
        except TypeError:
            return -2
        hit = self._sd.get(key)
        if hit is not None:
            return hit
        i = -2
        if isinstance(sides, list) and sides and all(isinstance(s, list) and s for s in sides):
            seen = [x for s in sides for x in s]
            if all(type(x) is int and 0 <= x < n for x in seen) and sorted(seen) == list(range(n)):
                i = len(self.sides)
                self.sides.append([list(s) for s in sides])
                so = np.zeros(n, np.int8)
                for k, s in enumerate(sides):
                    for x in s:
                        so[x] = k
                self.side_of.append(so)
        self._sd[key] = i
        return i

    def side_of_row(self, sides_id: int, n: int) -> np.ndarray:
        return self.side_of[sides_id] if sides_id >= 0 else np.arange(n, dtype=np.int8)

    def n_sides(self, sides_id: int, n: int) -> int:
        return len(self.sides[sides_id]) if sides_id >= 0 else n


@dataclass
class Chunk:
    """Records of one input file, in order. Column values are meaningful where `status == 0`."""

    n: int
    fi: int
    path: str
    line: np.ndarray  # int64: 1-based line (JSONL) or row (Parquet)
    status: np.ndarray  # uint8: 0 columns, 1 valid record kept as a Deal, 2 bad record
    slow: dict[int, Record]
    game: np.ndarray  # uint8
    rset: np.ndarray  # int32
    lineup: np.ndarray  # int32
    sides: np.ndarray  # int32, -1 none
    nplayers: np.ndarray  # int8
    dealer: np.ndarray  # int16
    cutter: np.ndarray  # int16, -1 none
    gid: np.ndarray  # int64: index into `gid_vals` (chunk-local), -1 for slow rows
    deal_no: np.ndarray  # int64
    beg: np.ndarray  # int8 code of BEGS
    bunched: np.ndarray  # bool
    turn_up: np.ndarray  # uint8
    shown: np.ndarray  # uint8, NOCARD none
    deck: Ragged
    hands: Ragged
    hand_lens: Ragged
    runs: Ragged  # per run: 3 cards per seat from seat 0, then the run's turn-up
    discards: Ragged
    disc_lens: Ragged
    tricks: Ragged
    trick_lens: Ragged
    rp: np.ndarray  # int32 [n, S] recorded points
    rp_has: np.ndarray
    rt: np.ndarray  # recorded totals
    rt_has: np.ndarray
    rw: np.ndarray  # int16 recorded winner, -1 none
    rec_has: np.ndarray  # bool: `recorded` present (possibly empty)
    raw_line: dict = field(default_factory=dict)  # slow row -> the line as read (convert keeps bad lines as is)
    # kept for convert (None when reading for the replay only)
    table: list | None = None
    time: list | None = None
    pack: list | None = None
    extra: list | None = None  # JSON text of the unknown top-level fields, or None
    sources: list | None = None  # per row `source` when not path:line (records given as Deals)
    gid_vals: Any = None  # the game ids the codes of `gid` stand for: a list or an Arrow string array

    def game_id_of(self, i: int) -> str:
        v = self.gid_vals[int(self.gid[i])]
        return v if isinstance(v, str) else v.as_py()

    def source(self, i: int) -> str:
        return self.sources[i] if self.sources is not None else f"{self.path}:{int(self.line[i])}"


class ChunkBuilder:
    """Collects records (parsed JSON objects or slow-path Records) into a `Chunk`."""

    def __init__(self, reg: Registry, fi: int, path: str, keep_all: bool = False):
        self.reg, self.fi, self.path, self.keep_all = reg, fi, path, keep_all
        self.rows = 0
        self.line: list[int] = []
        self.status: list[int] = []
        self.slow: dict[int, Record] = {}
        self.raw_of: dict[int, Any] = {}  # row -> (obj or raw line) to demote on an unknown card string
        self.raw_line: dict[int, bytes] = {}  # slow row -> its line as read (kept for convert)
        self.game: list[int] = []
        self.rset: list[int] = []
        self.lineup: list[int] = []
        self.sides: list[int] = []
        self.nplayers: list[int] = []
        self.dealer: list[int] = []
        self.cutter: list[int] = []
        self.gid: list[int] = []
        self._gid: dict[str, int] = {}
        self.gid_vals: list[str] = []
        self.deal_no: list[int] = []
        self.beg: list[int] = []
        self.bunched: list[bool] = []
        self.tu: list[str] = []
        self.shown: list[str] = []
        self.shown_has: list[bool] = []
        self.f_deck = _FieldBuf()
        self.f_hands = _FieldBuf(lens=True)
        self.f_runs = _FieldBuf()
        self.f_disc = _FieldBuf(lens=True)
        self.f_tricks = _FieldBuf(lens=True)
        self.rp: list = []
        self.rt: list = []
        self.rw: list[int] = []
        self.rec_has: list[bool] = []
        self.maxs = 1
        self.table: list = []
        self.time: list = []
        self.pack: list = []
        self.extra: list = []

    # ------------------------------------------------------------ rows
    def _placeholder(self) -> None:
        self.game.append(0)
        self.rset.append(-1)
        self.lineup.append(-1)
        self.sides.append(-1)
        self.nplayers.append(0)
        self.dealer.append(0)
        self.cutter.append(-1)
        self.gid.append(-1)
        self.deal_no.append(0)
        self.beg.append(0)
        self.bunched.append(False)
        self.tu.append("??")
        self.shown.append("")
        self.shown_has.append(False)
        for f in (self.f_deck, self.f_hands, self.f_runs, self.f_disc, self.f_tricks):
            f.absent()
        self.rp.append(None)
        self.rt.append(None)
        self.rw.append(-1)
        self.rec_has.append(False)
        if self.keep_all:
            self.table.append(None)
            self.time.append(None)
            self.pack.append(None)
            self.extra.append(None)

    def add_record(self, rec: Record) -> None:
        """A row for the slow path: a bad record, or a valid one the columns do not hold."""
        self.slow[self.rows] = rec
        self.line.append(rec.line or 0)
        self.status.append(2 if rec.deal is None else 1)
        self._placeholder()
        self.rows += 1

    def add_deal(self, deal: Deal) -> None:
        """A validated Deal: into the columns when they hold it exactly, else kept as a slow row."""
        if not self.add_obj(deal.to_canonical(), deal.line, keep=deal):
            self.add_record(Record(deal.source, deal.file_index, deal.line, deal=deal))

    def add_obj(self, obj: Any, line: int, keep: Any = None) -> bool:
        """Append a parsed JSON object as a column row if it is certainly valid and fits; False otherwise
        (nothing appended: the caller validates it the slow way)."""
        try:
            return self._add_obj(obj, line, keep)
        except (TypeError, AttributeError):
            return False

    def _add_obj(self, obj: Any, line: int, keep: Any) -> bool:
        if type(obj) is not dict:
            return False
        get = obj.get
        if get("format") != FORMAT:
            return False
        reg = self.reg
        opts = get("options")
        if opts is not None and type(opts) is not dict:
            return False
        rs = reg.fast_rules(get("game"), get("rules"), opts)
        if rs < 0:
            return False
        R = reg.rulesets[rs]
        table, gid, deal_no = get("table"), get("game_id"), get("deal_no")
        if type(table) is not str or type(gid) is not str or type(deal_no) is not int or not 1 <= deal_no < 2 ** 62:
            return False
        time, pack = get("time"), get("pack")
        if (time is not None and type(time) is not str) or (pack is not None and type(pack) is not str):
            return False
        players = get("players")
        if type(players) is not list:
            return False
        n = len(players)
        if not R.min_players <= n <= R.max_players:
            return False
        lu = reg.lineup_id(players)
        if lu < 0:
            return False
        sd = reg.sides_id(get("sides"), n)
        if sd == -2:
            return False
        ns = len(reg.sides[sd]) if sd >= 0 else n
        dealer, cutter = get("dealer"), get("cutter")
        if type(dealer) is not int or not 0 <= dealer < n:
            return False
        if cutter is not None and (type(cutter) is not int or not 0 <= cutter < n):
            return False
        if get("claims") is not None:
            return False  # claims: the slow path
        tu, shown = get("turn_up"), get("shown")
        if type(tu) is not str or len(tu) != 2 or (shown is not None and (type(shown) is not str or len(shown) != 2)):
            return False
        beg = BEG_CODE.get(get("beg"), -1)
        if beg < 0:
            return False
        bunched = get("bunched")
        if bunched is None:
            bunched = False
        elif type(bunched) is not bool:
            return False
        # card lists: lists of 2-character ASCII strings
        deck, hands, runs, discards, tricks = get("deck"), get("hands"), get("runs"), get("discards"), get("tricks")
        if hands is None and tricks is None:
            return False
        if deck is not None:
            if type(deck) is not list:
                return False
            s_deck = "|".join(deck)
            if len(s_deck) != 3 * len(deck) - 1 and deck:
                return False
        if hands is not None:
            if type(hands) is not list or len(hands) != n:
                return False
            hl = []
            for h in hands:
                if type(h) is not list or not h:
                    return False
                hl.append(len(h))
            s_hands = "|".join(["|".join(h) for h in hands])
            if len(s_hands) != 3 * sum(hl) - 1:
                return False
        if runs is not None:
            if type(runs) is not list:
                return False
            parts = []
            for r in runs:
                if type(r) is not dict:
                    return False
                rc, rtu = r.get("cards"), r.get("turn_up")
                if type(rc) is not list or len(rc) != n or type(rtu) is not str or len(rtu) != 2:
                    return False
                for h in rc:
                    if type(h) is not list or len(h) != 3:
                        return False
                    parts += h
                parts.append(rtu)
            s_runs = "|".join(parts)
            if len(s_runs) != 3 * len(parts) - 1 and parts:
                return False
        if discards is not None:
            if type(discards) is not list or len(discards) != n:
                return False
            dl = []
            for h in discards:
                if type(h) is not list or not h:
                    return False
                dl.append(len(h))
            s_disc = "|".join(["|".join(h) for h in discards])
            if len(s_disc) != 3 * sum(dl) - 1:
                return False
        if tricks is not None:
            if type(tricks) is not list:
                return False
            tl = []
            for t in tricks:
                if type(t) is not list or not t:
                    return False
                tl.append(len(t))
            s_tricks = "|".join(["|".join(t) for t in tricks])
            if len(s_tricks) != 3 * sum(tl) - 1 and tl:
                return False
        if max(hl if hands is not None else [0]) > 255 or (tricks is not None and max(tl or [0]) > 255) or \
                (discards is not None and max(dl) > 255):
            return False
        rec = get("recorded")
        if rec is not None and type(rec) is not dict:
            return False
        rp = rt = None
        rw = -1
        if rec is not None:
            if type(rec) is not dict:
                return False
            rp, rt, w = rec.get("points"), rec.get("totals"), rec.get("winner")
            for v in (rp, rt):
                if v is not None:
                    if type(v) is not list or len(v) != ns:
                        return False
                    for x in v:
                        if type(x) is not int or not -INT32 < x < INT32:
                            return False
            if w is not None:
                if type(w) is not int or not 0 <= w < ns:
                    return False
                rw = w
        all_str = (tu + (shown or "") + (s_deck if deck is not None else "") + (s_hands if hands is not None else "")
                   + (s_runs if runs is not None else "") + (s_disc if discards is not None else "")
                   + (s_tricks if tricks is not None else ""))
        if not all_str.isascii():
            return False
        # ---- accepted: append the row
        row = self.rows
        self.rows += 1
        self.raw_of[row] = keep if keep is not None else obj
        self.line.append(line)
        self.status.append(0)
        self.game.append(GAME_CODE[R.game])
        self.rset.append(rs)
        self.lineup.append(lu)
        self.sides.append(sd)
        self.nplayers.append(n)
        self.dealer.append(dealer)
        self.cutter.append(-1 if cutter is None else cutter)
        code = self._gid.get(gid)
        if code is None:
            code = self._gid[gid] = len(self.gid_vals)
            self.gid_vals.append(gid)
        self.gid.append(code)
        self.deal_no.append(deal_no)
        self.beg.append(beg)
        self.bunched.append(bunched)
        self.tu.append(tu)
        self.shown.append(shown or "")
        self.shown_has.append(shown is not None)
        if deck is not None:
            self.f_deck.add(s_deck, len(deck))
        else:
            self.f_deck.absent()
        if hands is not None:
            self.f_hands.add(s_hands, sum(hl), hl)
        else:
            self.f_hands.absent()
        if runs is not None:
            self.f_runs.add(s_runs, len(parts))
        else:
            self.f_runs.absent()
        if discards is not None:
            self.f_disc.add(s_disc, sum(dl), dl)
        else:
            self.f_disc.absent()
        if tricks is not None:
            self.f_tricks.add(s_tricks, sum(tl), tl)
        else:
            self.f_tricks.absent()
        self.rp.append(rp)
        self.rt.append(rt)
        self.rw.append(rw)
        self.rec_has.append(rec is not None)
        if ns > self.maxs:
            self.maxs = ns
        if self.keep_all:
            self.table.append(table)
            self.time.append(time)
            self.pack.append(pack)
            extra = {k: v for k, v in obj.items() if k not in KNOWN_FIELDS}
            if extra:
                import orjson

                self.extra.append(orjson.dumps(extra).decode())
            else:
                self.extra.append(None)
        return True

    # ------------------------------------------------------------ finish
    def finish(self) -> Chunk:
        n = self.rows
        tu = codes_of("".join(self.tu)) if n else np.zeros(0, np.uint8)
        shown = np.full(n, NOCARD, np.uint8)
        sh_rows = np.flatnonzero(np.asarray(self.shown_has, bool)) if n else np.zeros(0, np.int64)
        if sh_rows.size:
            shown[sh_rows] = codes_of("".join(self.shown))
        deck, hands, runs, disc, tricks = (f.finish() for f in (self.f_deck, self.f_hands, self.f_runs, self.f_disc,
                                                              self.f_tricks))
        S = self.maxs
        rp = np.zeros((n, S), np.int32)
        rt = np.zeros((n, S), np.int32)
        rp_has = np.zeros(n, bool)
        rt_has = np.zeros(n, bool)
        for i, v in enumerate(self.rp):
            if v is not None:
                rp[i, :len(v)] = v
                rp_has[i] = True
        for i, v in enumerate(self.rt):
            if v is not None:
                rt[i, :len(v)] = v
                rt_has[i] = True
        status = np.asarray(self.status, np.uint8)
        ch = Chunk(
            n=n, fi=self.fi, path=self.path, line=np.asarray(self.line, np.int64), status=status, slow=self.slow,
            game=np.asarray(self.game, np.uint8), rset=np.asarray(self.rset, np.int32),
            lineup=np.asarray(self.lineup, np.int32), sides=np.asarray(self.sides, np.int32),
            nplayers=np.asarray(self.nplayers, np.int8), dealer=np.asarray(self.dealer, np.int16),
            cutter=np.asarray(self.cutter, np.int16), gid=np.asarray(self.gid, np.int64),
            deal_no=np.asarray(self.deal_no, np.int64), beg=np.asarray(self.beg, np.int8),
            bunched=np.asarray(self.bunched, bool), turn_up=tu, shown=shown,
            deck=deck[0], hands=hands[0], hand_lens=hands[1], runs=runs[0], discards=disc[0], disc_lens=disc[1],
            tricks=tricks[0], trick_lens=tricks[1], rp=rp, rp_has=rp_has, rt=rt, rt_has=rt_has,
            rw=np.asarray(self.rw, np.int16), rec_has=np.asarray(self.rec_has, bool), gid_vals=self.gid_vals,
            raw_line=self.raw_line,
            table=self.table if self.keep_all else None, time=self.time if self.keep_all else None,
            pack=self.pack if self.keep_all else None, extra=self.extra if self.keep_all else None,
        )
        self._demote_unknown(ch)
        return ch

    def _demote_unknown(self, ch: Chunk) -> None:
        """Rows holding a string that is not a card go to the slow path (the reference reports unknown_card)."""
        bad = (ch.turn_up == NOCARD) & (ch.status == 0)
        bad |= (ch.shown == NOCARD) & np.asarray(self.shown_has, bool) if ch.n else bad
        for rg in (ch.deck, ch.hands, ch.runs, ch.discards, ch.tricks):
            hit = rg.data == NOCARD
            if hit.any():
                rows = np.repeat(np.arange(ch.n), rg.lens())[hit]
                bad[rows] = True
        for i in np.flatnonzero(bad & (ch.status == 0)):
            demote(ch, int(i), self.raw_of[int(i)])


def demote(ch: Chunk, i: int, raw: Any) -> None:
    """Turn column row i into a slow row (its record validated from the object or Deal it came from)."""
    from ..dealog import record_from_obj

    src = f"{ch.path}:{int(ch.line[i])}"
    if isinstance(raw, Deal):
        rec = Record(raw.source, raw.file_index, raw.line, deal=raw)
    else:
        rec = record_from_obj(raw, src, ch.fi, int(ch.line[i]))
    ch.slow[i] = rec
    ch.status[i] = 1 if rec.deal is not None else 2


class _FieldBuf:
    """Card strings of one ragged field, with per-part lengths when `lens`."""

    def __init__(self, lens: bool = False):
        self.strs: list[str] = []
        self.counts: list[int] = []
        self.has: list[bool] = []
        self.with_lens = lens
        self.lens: list[int] = []
        self.lens_counts: list[int] = []

    def add(self, s: str, count: int, lens: list[int] | None = None) -> None:
        self.strs.append(s)
        self.counts.append(count)
        self.has.append(True)
        if self.with_lens:
            self.lens += lens
            self.lens_counts.append(len(lens))

    def absent(self) -> None:
        self.counts.append(0)
        self.has.append(False)
        if self.with_lens:
            self.lens_counts.append(0)

    def finish(self) -> tuple[Ragged, Ragged | None]:
        data = codes_of_sep("|".join([s for s in self.strs if s]))
        rg = Ragged.from_lists(self.counts, data, self.has)
        if not self.with_lens:
            return rg, None
        lens = Ragged.from_lists(self.lens_counts, np.asarray(self.lens, np.uint8), self.has)
        return rg, lens


# ---------------------------------------------------------------- back to records


def row_to_obj(ch: Chunk, i: int, reg: Registry) -> dict:
    """The canonical deal-log/1 object of column row i (for the slow path, convert and tests)."""
    out: dict[str, Any] = {"format": FORMAT}
    game_code, preset, options = reg.rs_info[int(ch.rset[i])]
    out["game"] = GAMES[game_code]
    out["rules"] = preset
    if options:
        out["options"] = dict(options)
    out["table"] = ch.table[i] if ch.table is not None else ""
    out["game_id"] = ch.game_id_of(i)
    out["deal_no"] = int(ch.deal_no[i])
    if ch.time is not None and ch.time[i] is not None:
        out["time"] = ch.time[i]
    n = int(ch.nplayers[i])
    out["players"] = list(reg.lineups[int(ch.lineup[i])])
    if ch.sides[i] >= 0:
        out["sides"] = [list(s) for s in reg.sides[int(ch.sides[i])]]
    out["dealer"] = int(ch.dealer[i])
    if ch.cutter[i] >= 0:
        out["cutter"] = int(ch.cutter[i])
    if ch.pack is not None and ch.pack[i] is not None:
        out["pack"] = ch.pack[i]
    cs = CARD_STR
    if ch.deck.has[i]:
        out["deck"] = [cs[c] for c in ch.deck.row(i)]
    if ch.hands.has[i]:
        out["hands"] = _split(ch.hands.row(i), ch.hand_lens.row(i))
    out["turn_up"] = cs[ch.turn_up[i]]
    if ch.shown[i] != NOCARD:
        out["shown"] = cs[ch.shown[i]]
    if ch.beg[i]:
        out["beg"] = BEGS[ch.beg[i]]
    if ch.runs.has[i]:
        r = ch.runs.row(i)
        w = 3 * n + 1
        out["runs"] = [{"cards": [[cs[c] for c in r[j * w + 3 * s:j * w + 3 * s + 3]] for s in range(n)],
                        "turn_up": cs[r[j * w + 3 * n]]} for j in range(len(r) // w)]
    if ch.discards.has[i]:
        out["discards"] = _split(ch.discards.row(i), ch.disc_lens.row(i))
    if ch.tricks.has[i]:
        out["tricks"] = _split(ch.tricks.row(i), ch.trick_lens.row(i))
    if ch.bunched[i]:
        out["bunched"] = True
    ns = reg.n_sides(int(ch.sides[i]), n)
    recd: dict[str, Any] = {}
    if ch.rp_has[i]:
        recd["points"] = [int(x) for x in ch.rp[i, :ns]]
    if ch.rt_has[i]:
        recd["totals"] = [int(x) for x in ch.rt[i, :ns]]
    if ch.rw[i] >= 0:
        recd["winner"] = int(ch.rw[i])
    if ch.rec_has[i]:
        out["recorded"] = recd
    if ch.extra is not None and ch.extra[i] is not None:
        import orjson

        out.update(orjson.loads(ch.extra[i]))
    return out


def _split(cards: np.ndarray, lens: np.ndarray) -> list[list[str]]:
    out, p = [], 0
    for k in lens:
        out.append([CARD_STR[c] for c in cards[p:p + k]])
        p += int(k)
    return out
