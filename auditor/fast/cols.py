"""Deals as columns: a `Chunk` holds many records of one input file in numpy arrays.

Cards are uint8 codes (`suit * 13 + rank`; 255 never occurs in a valid column). Card lists are `Ragged`:
`data[off[i]:off[i + 1]]` is row i's list, all seats or tricks concatenated, with the per-seat / per-trick
lengths in a second `Ragged` of uint8 counts. This is also the Parquet layout (binary columns), so a Parquet
row group becomes a `Chunk` without touching a row in Python.

Rows that cannot live in columns keep their `Record` (`slow`): bad records (status 2) and valid records the
columns cannot hold exactly (status 1: lenient card spellings, unknown card strings, run cards of the wrong count,
numbers out of range). The replay gives those to the reference engine. Revoke claims in their canonical form
(`[{"revoke": seat, "trick": k}, ...]`) are held beside the columns (`Chunk.claims`, issue 15: 2% of a club's deals
carry one, and the reference engine replayed them at half the replay's time).

`ChunkBuilder.add_obj` accepts a parsed JSON object only when it is certainly a valid deal-log/1 record whose
`Deal` the columns hold exactly (otherwise the caller validates it the slow way); `Registry` interns what
repeats across records (rules, player line-ups, sides, game ids) so that each is checked once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Literal, cast, overload

import numpy as np
import orjson

from ..cards import CARD_STR, parse_card
from ..logparse import (
    FIELD_ORDER,
    FORMAT,
    GAME_ALIASES,
    KNOWN_FIELDS,
    Deal,
    Record,
    json_loader,
    norm_name,
    parse_line,
    record_from_obj,
)
from ..rules import Rules, layout, resolve
from .arrow import Arrow, to_numpy

GAMES = ("scotch_whist", "all_fours")
GAME_CODE = {"scotch_whist": 0, "all_fours": 1}
BEGS = (None, "stand", "take_one", "run")
BEG_CODE = {None: 0, "stand": 1, "take_one": 2, "run": 3}
NOCARD = 255
INT32 = 2 ** 31

KeepAll = bool | Literal["meta"]
"""What a chunk keeps besides what the replay reads: True every field (`convert`), "meta" `table`, `time` and
`pack` (the audit), False nothing."""


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
    codes: np.ndarray = card_lut()[(pairs[:, 0] << 8) | pairs[:, 1]]
    return codes


def codes_of_sep(text: str) -> np.ndarray:
    """Card codes of '|'-separated two-character cards; NOCARD where an item is not exactly a card."""
    if not text:
        return np.zeros(0, np.uint8)
    raw = np.frombuffer(text.encode("ascii") + b"|", np.uint8).reshape(-1, 3)
    codes: np.ndarray = card_lut()[(raw[:, 0].astype(np.uint16) << 8) | raw[:, 1]]
    codes[raw[:, 2] != ord("|")] = NOCARD
    return codes


@overload
def uniq(x: np.ndarray, return_inverse: Literal[False] = False) -> np.ndarray: ...


@overload
def uniq(x: np.ndarray, return_inverse: Literal[True]) -> tuple[np.ndarray, np.ndarray]: ...


def uniq(x: np.ndarray, return_inverse: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """`np.unique`, with a fast path for the common case of a single value."""
    if len(x) and x.min() == x.max():
        u = x[:1].copy()
        return (u, np.zeros(len(x), np.intp)) if return_inverse else u
    if return_inverse:
        vals, inv = np.unique(x, return_inverse=True)
        return vals, inv
    return np.unique(x)


CARD_BYTES = np.array([s.encode() for s in CARD_STR] + [b"??"] * (256 - len(CARD_STR)), dtype="S2")


@dataclass
class Ragged:
    """Row i's values are `data[off[i]:off[i+1]]`; `has[i]` False means the field is absent (null)."""

    off: np.ndarray  # int64 [n + 1]
    data: np.ndarray  # uint8
    has: np.ndarray  # bool [n]

    def lens(self) -> np.ndarray:
        return np.diff(self.off)

    def values(self, i: int) -> np.ndarray:
        """Row i's values (none when the field is absent)."""
        out: np.ndarray = self.data[self.off[i]:self.off[i + 1]]
        return out

    def row(self, i: int) -> np.ndarray | None:
        return self.values(i) if self.has[i] else None

    @staticmethod
    def from_lists(lens: Sequence[int] | np.ndarray, data: np.ndarray,
                   has: Sequence[bool] | np.ndarray) -> Ragged:
        off = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(np.asarray(lens, np.int64), out=off[1:])
        return Ragged(off, data, np.asarray(has, bool))

    def take(self, rows: np.ndarray) -> Ragged:
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
        self.rs_info: list[tuple[int, str, dict[str, Any]]] = []  # (game code, preset, options as given)
        self._rs: dict[Any, int] = {}
        self.lineups: list[list[str]] = []
        self._lu: dict[tuple[Any, ...], int] = {}
        self.sides: list[list[list[int]]] = []
        self.sides_n: list[int] = []  # the player count each entry of `sides` was checked for
        self.side_of: list[np.ndarray] = []
        self._sd: dict[Any, int] = {}
        self.paths: list[str] = []
        self._fast_rules: dict[Any, int] = {}

    # -- rules
    def ruleset_id(self, game: str, preset: str, options: dict[str, Any]) -> int:
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
        try:
            key = (game_raw, rules_raw, orjson.dumps(options) if options else b"")
            hit = self._fast_rules.get(key)
        except TypeError:
            return -1
        if hit is not None:
            return hit
        i = -1
        if isinstance(game_raw, str) and isinstance(rules_raw, str) and (options is None or isinstance(options, dict)):
            game = GAME_ALIASES.get(norm_name(game_raw))
            if game is not None:
                try:
                    i = self.ruleset_id(game, norm_name(rules_raw), options or {})
                except (KeyError, ValueError):
                    i = -1
        self._fast_rules[key] = i
        return i

    # -- players and sides
    def lineup_id(self, players: list[Any]) -> int:
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

    def forget_lineups(self) -> None:
        """Drop the line-ups interned so far (issue 15): a pass that handles a chunk at a time and keeps none (the
        split) calls it after each chunk, so that the registry does not grow with the distinct line-ups of the
        whole input (475,000 of them after 1.5M rows of the ten renamed clubs: 2.5 GB by 10M rows). Ids given
        before are then void; a chunk's own ids stay valid until the next call."""
        self.lineups.clear()
        self._lu.clear()

    def sides_id(self, sides: Any, n: int) -> int:
        """Id of a valid `sides` for n seats; -1: no sides; -2: invalid (the slow path gives the message)."""
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
                self.sides_n.append(n)
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


class DictColumn:
    """A string column as codes into values (a Parquet dictionary column, read without a Python string per row):
    indexes like the list it stands for (None where null)."""

    def __init__(self, codes: np.ndarray, values: list[str | None]) -> None:
        self.codes = codes  # int64, -1 null
        self.values = values

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: int) -> str | None:
        k = int(self.codes[i])
        return None if k < 0 else self.values[k]

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self)))

    @staticmethod
    def of(arr: Arrow) -> DictColumn:
        """From a pyarrow DictionaryArray or ChunkedArray of one (any other string array: through a list)."""
        import pyarrow as pa  # here only: pyarrow costs a quarter of a second of start-up

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_dictionary(arr.type):
            vals = arr.to_pylist()
            uniq_vals = list(dict.fromkeys(v for v in vals if v is not None))
            pos = {v: j for j, v in enumerate(uniq_vals)}
            return DictColumn(np.array([pos[v] if v is not None else -1 for v in vals], np.int64), uniq_vals)
        # indices of any integer type (polars writes uint32, where Arrow's fill_null(-1) overflowed: issue 15)
        codes = to_numpy(arr.indices, np.int64, -1)
        return DictColumn(codes, arr.dictionary.to_pylist())


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
    raw_line: dict[int, bytes] = field(default_factory=dict)  # slow row -> the line as read (convert keeps it)
    # kept for convert (None when reading for the replay only); `table` and `pack` for the audit ("meta")
    table: list[str | None] | DictColumn | None = None
    time: list[str | None] | None = None
    pack: list[str | None] | DictColumn | None = None
    extra: list[str | None] | None = None  # JSON text of the unknown top-level fields, or None
    sources: list[str] | None = None  # per row `source` when not path:line (records given as Deals)
    gid_vals: list[str] | Arrow = None  # the game ids the codes of `gid` stand for: a list or an Arrow string array
    # column row -> its revoke claims as (trick, seat) in the record's order (duplicates kept); rows without claims
    # are absent
    claims: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    # per row file index where the rows come from several files (a part's batch, `parts._PartSource`; issue 15, a
    # twenty-eighth session: cut file by file, a dataset of many small files made as many small chunks); `fi` and
    # `path` are then the first row's, and `paths` gives each file index's path (a list of every input's, or a
    # mapping of the chunk's own)
    fis: np.ndarray | None = None
    paths: Sequence[str] | Mapping[int, str] | None = None

    def fi_at(self, i: int) -> int:
        """Row i's file index."""
        return self.fi if self.fis is None else int(self.fis[i])

    def file_indices(self) -> np.ndarray:
        """Every row's file index (int64)."""
        return np.full(self.n, self.fi, np.int64) if self.fis is None else self.fis

    def path_at(self, i: int) -> str:
        """Row i's file path."""
        return self.path if self.fis is None or self.paths is None else self.paths[int(self.fis[i])]

    def game_id_of(self, i: int) -> str:
        v = self.gid_vals[int(self.gid[i])]
        return v if isinstance(v, str) else str(v.as_py())

    def source(self, i: int) -> str:
        return self.sources[i] if self.sources is not None else f"{self.path_at(i)}:{int(self.line[i])}"


ChunkSource = Callable[[list[str], Registry], Iterator[Chunk]]
"""What the replay reads chunks from: (input paths, the run's registry) -> the chunks, in input order (the
files themselves by default; `auditor.select` gives the audit's selection)."""


_LISTS = {list}
_INTS = {int}
_DICTS = {dict}
_STRS = {str}
_TWO = {2}
_ZERO_TWO = {0, 2}
_OPT_STRS = {str, type(None)}
_OPT_INTS = {int, type(None)}
_OPT_BOOLS = {bool, type(None)}
_OPT_DICTS = {dict, type(None)}
_OPT_LISTS = {list, type(None)}
_EMPTY: dict[str, Any] = {}
_NO_SPANS: dict[str, bytes] = {}
_GAME_OF = GAME_CODE


_SPAN = object()  # a card list cut from the raw line (ChunkBuilder.add_line)
_BYTES_ONLY = {bytes}
_SPAN_TBL = bytes(b if b in b'[],"' else ord("?") for b in range(256))

Shape = tuple[int, ...]
"""The lengths of a nested card list's parts (per seat, per trick)."""

_DECK_TEMPLATES: dict[int, bytes] = {}
_NESTED_TEMPLATES: dict[Shape, bytes] = {}
_POSITIONS: dict[bytes, np.ndarray] = {}


def _deck_template(k: int) -> bytes:
    t = _DECK_TEMPLATES.get(k)
    if t is None:
        t = _DECK_TEMPLATES[k] = b"[" + b",".join([b'"??"'] * k) + b"]"
    return t


def _nested_template(shape: Shape) -> bytes:
    t = _NESTED_TEMPLATES.get(shape)
    if t is None:
        t = _NESTED_TEMPLATES[shape] = b"[" + b",".join(b"[" + b",".join([b'"??"'] * k) + b"]"
                                                        for k in shape) + b"]"
    return t


def _span_positions(template: bytes) -> np.ndarray:
    """Index of the first character of each card in a canonical span."""
    p = _POSITIONS.get(template)
    if p is None:
        arr = np.frombuffer(template, np.uint8)
        q = np.flatnonzero(arr == ord("?"))
        p = _POSITIONS[template] = q[::2].copy()
    return p


_SHAPES: dict[tuple[str | int, ...], Shape] = {}


def _hand_shape(R: Rules, n: int, dealer: int, rs: int) -> Shape:
    """Per seat, the number of cards the rules deal (the expected layout of `hands`); `rs` the ruleset's id."""
    key = ("h", rs, n, dealer)
    v = _SHAPES.get(key)
    if v is None:
        v = _SHAPES[key] = tuple(layout(R, n, dealer).hand_sizes)
    return v


def _trick_shape(R: Rules, n: int, runs: object, rs: int) -> Shape | None:
    """The tricks of a complete play: their number and sizes under the rules (None: not on the fast path)."""
    if R.game == "all_fours":
        r = len(runs) if type(runs) is list else 0
        rule = R.after_run
        size = 6 if (r == 0 or rule == "discard_to_six" or (rule == "keep_if_nine_else_discard" and r >= 2)) \
            else 6 + 3 * r
        key = ("ta", n, size)
        v = _SHAPES.get(key)
        if v is None:
            v = _SHAPES[key] = (n,) * size
        return v
    key = ("ts", rs, n)
    v = _SHAPES.get(key)
    if v is None:
        L = layout(R, n, n - 1)
        sizes = [n] * L.n_tricks
        if L.extra_card_seat is not None:
            sizes[-1] = n + 1
        v = _SHAPES[key] = tuple(sizes)
    return v


class ChunkBuilder:
    """Collects records (parsed JSON objects or slow-path Records) into a `Chunk`: one tuple per record, the card
    lists of a whole chunk joined and decoded at once."""

    def __init__(self, reg: Registry, fi: int, path: str, keep_all: KeepAll = False) -> None:
        """`keep_all`: True keeps every field for `convert` (no raw-line fast path); "meta" keeps `table`, `time`
        and `pack` per row (the audit needs them) and keeps the fast path."""
        self.reg, self.fi, self.path, self.keep_all = reg, fi, path, keep_all
        self.rows = 0
        self.slow: dict[int, Record] = {}
        self.raw_of: dict[int, Any] = {}  # row -> its line (bytes) or Deal, to demote on an unknown card string
        self.raw_line: dict[int, bytes] = {}  # slow row -> its line as read (kept for convert)
        self.claims: dict[int, tuple[tuple[int, int], ...]] = {}  # column row -> its claims (`Chunk.claims`)
        self._gid: dict[str, int] = {}
        self.gid_vals: list[str] = []
        self._rules: dict[tuple[Any, Any], int] = {}  # (game, rules) without options -> ruleset id
        self._sides: dict[tuple[int, bytes], tuple[int, int]] = {}  # (n, JSON of sides) -> (sides id, sides)
        self._hshape: dict[int, tuple[Shape, bytes]] = {}  # ruleset, n, dealer -> (hand sizes, canonical span)
        self._dtmpl: dict[int, bytes] = {}  # deck length -> canonical span
        self._tshape: dict[int, tuple[Shape | None, bytes | None]] = {}  # ruleset, n, runs -> (sizes, span)
        # Per row, plain tuples (the fast path builds one per record; a named tuple would cost more):
        # (line, status, game, rset, lineup, sides, n, dealer, cutter, gid, deal_no, beg, bunched, rec_has, rw)
        self.meta: list[tuple[int, ...]] = []
        # (turn_up, shown, deck, hands, runs, discards, tricks): strings, spans (bytes) or None
        self.cards: list[tuple[Any, ...]] = []
        # (deck n, hand lens, run cards n, discard lens, trick lens): counts (-1 absent) and Shapes (None absent)
        self.shape: list[tuple[Any, ...]] = []
        self.recd: list[tuple[list[int] | None, list[int] | None]] = []  # (points, totals)
        self.maxs = 1
        # keep_all: (table, time, pack, extra JSON)
        self.extra_cols: list[tuple[str | None, str | None, str | None, str | None]] = []
        self._has_shown = np.zeros(0, bool)

    _EMPTY_CARDS = ("??", "", None, None, None, None, None)
    _EMPTY_SHAPE = (-1, None, -1, None, None)

    # ------------------------------------------------------------ rows
    def add_record(self, rec: Record) -> None:
        """A row for the slow path: a bad record, or a valid one the columns do not hold."""
        self.slow[self.rows] = rec
        self.meta.append((rec.line or 0, 2 if rec.deal is None else 1, 0, -1, -1, -1, 0, 0, -1, -1, 0, 0, False,
                          False, -1))
        self.cards.append(self._EMPTY_CARDS)
        self.shape.append(self._EMPTY_SHAPE)
        self.recd.append((None, None))
        if self.keep_all:
            self.extra_cols.append((None, None, None, None))
        self.rows += 1

    def add_deal(self, deal: Deal) -> None:
        """A validated Deal: into the columns when they hold it exactly, else kept as a slow row."""
        if not self.add_obj(deal.to_canonical(), deal.line, keep=deal):
            self.add_record(Record(deal.source, deal.file_index, deal.line, deal=deal))

    def add_obj(self, obj: Any, line: int, keep: Any = None) -> bool:
        """Append a parsed JSON object as a column row if it is certainly valid and fits; False otherwise
        (nothing appended: the caller validates it the slow way). `keep`: the line (bytes) or Deal it came from,
        kept to judge the row the slow way should a card string turn out not to be a card (the object itself is
        not kept: a chunk of live JSON objects makes the garbage collector crawl)."""
        try:
            return self._add_obj(obj, line, keep)
        except (TypeError, AttributeError, ValueError, OverflowError, RecursionError):
            return False  # any doubt: the slow path judges the record

    def add_line(self, raw: bytes, line: int) -> bool:
        """The fast path for a canonically written line: the card lists (`deck`, `hands`, `tricks`) are cut out of
        the raw bytes as spans, only the rest is parsed, and the spans are checked against the exact canonical
        layout the rules give (`["As","Kd"],[...]`) before they are decoded, a chunk at a time, by numpy. Any doubt
        (spaces, another layout, a key written twice, a span that does not match) returns False: the caller parses
        the line the ordinary way."""
        if self.keep_all is True:
            return False
        ph = raw.find(b'"hands":[[')
        pt = raw.find(b'"tricks":[[')
        if ph < 0 or pt < 0:
            return False
        eh = raw.find(b"]]", ph)
        et = raw.find(b"]]", pt)
        pd = raw.find(b'"deck":["')
        got: dict[str, bytes] = {}
        if pd < 0:
            if ph < pt:
                if not ph + 8 < eh + 2 <= pt:
                    return False
                red = raw[:ph + 8] + b"0" + raw[eh + 2:pt + 9] + b"0" + raw[et + 2:]
            else:
                if not pt + 9 < et + 2 <= ph:
                    return False
                red = raw[:pt + 9] + b"0" + raw[et + 2:ph + 8] + b"0" + raw[eh + 2:]
        else:
            ed = raw.find(b'"]', pd)
            if pd < ph < pt:  # the canonical order
                a1, e1, a2, e2, a3, e3 = pd + 7, ed + 2, ph + 8, eh + 2, pt + 9, et + 2
            else:
                (a1, e1, _), (a2, e2, _), (a3, e3, _) = sorted(((ph + 8, eh + 2, 0), (pt + 9, et + 2, 1),
                                                                 (pd + 7, ed + 2, 2)))
            if not (a1 < e1 <= a2 < e2 <= a3 < e3):
                return False
            red = b"0".join((raw[:a1], raw[e1:a2], raw[e2:a3], raw[e3:]))
            got["d"] = raw[pd + 7:ed + 2]
            # the key once in the whole line (spans of canonical cards hold no key): the one cut out is top-level
            if red.count(b'"deck":') != 1:
                return False
        if red.count(b'"hands":') != 1 or red.count(b'"tricks":') != 1:
            return False
        got["h"] = raw[ph + 8:eh + 2]
        got["t"] = raw[pt + 9:et + 2]
        try:
            obj = orjson.loads(red)
        except orjson.JSONDecodeError:
            return False
        try:
            return self._add_obj(obj, line, raw, got)
        except (TypeError, AttributeError, ValueError, OverflowError, RecursionError):
            return False  # any doubt: the slow path judges the record

    def _add_obj(self, obj: Any, line: int, keep: Any, pre: dict[str, bytes] | None = None) -> bool:
        if type(obj) is not dict:
            return False
        spans = pre if pre is not None else _NO_SPANS  # cut from the line: present exactly when a field is _SPAN
        (format_, game_raw, rules_raw, opts, table, gid, deal_no, time, players, sides, dealer, cutter, pack, deck,
         hands, tu, shown, beg_raw, runs, discards, tricks, claims, bunched, rec, observed) = map(obj.get, FIELD_ORDER)
        if format_ != FORMAT or observed is not None:
            return False  # (issue 16) the observed facts of a score sheet: the slow path keeps them in its Deal
        reg = self.reg
        if opts is None:
            rkey = (game_raw, rules_raw)
            rs = self._rules.get(rkey)
            if rs is None:
                rs = self._rules[rkey] = reg.fast_rules(game_raw, rules_raw, None)
        elif type(opts) is not dict:
            return False
        else:
            rs = reg.fast_rules(game_raw, rules_raw, opts)
        if rs < 0:
            return False
        R = reg.rulesets[rs]
        if type(table) is not str or type(gid) is not str or type(deal_no) is not int or not 1 <= deal_no < 2 ** 62:
            return False
        if (time is not None and type(time) is not str) or (pack is not None and type(pack) is not str):
            return False
        if type(players) is not list:
            return False
        n = len(players)
        if not R.min_players <= n <= R.max_players:
            return False
        lu = reg._lu.get(tuple(players))
        if lu is None:
            lu = reg.lineup_id(players)
        if lu < 0:
            return False
        if sides is None:
            sd = -1
            ns = n
        else:
            sk = (n, orjson.dumps(sides))
            hit = self._sides.get(sk)
            if hit is None:
                sd = reg.sides_id(sides, n)
                hit = self._sides[sk] = (sd, len(reg.sides[sd]) if sd >= 0 else 0)
            sd, ns = hit
            if sd < 0:
                return False
        if type(dealer) is not int or not 0 <= dealer < n:
            return False
        if cutter is None:
            cutter = -1
        elif type(cutter) is not int or not 0 <= cutter < n:
            return False
        cl: tuple[tuple[int, int], ...] | None = None
        if claims is not None:
            cl = claims_of(claims, n)
            if cl is None:
                return False  # not certainly valid and canonical: the slow path
        if type(tu) is not str or len(tu) != 2 or not tu.isascii():
            return False
        if shown is None:
            shown = ""
        elif type(shown) is not str or len(shown) != 2 or not shown.isascii():
            return False
        beg = BEG_CODE.get(beg_raw, -1)
        if beg < 0:
            return False
        if bunched is None:
            bunched = False
        elif type(bunched) is not bool:
            return False
        # card lists: lists of 2-character ASCII strings (joined with '|': every item must come out as 2 + 1)
        if pre is not None:  # spans cut from the line (hands, tricks, maybe deck), each replaced by a 0
            if hands != 0 or tricks != 0 or type(hands) is not int or type(tricks) is not int:
                return False
            hands = tricks = _SPAN
            if "d" in pre:
                if type(deck) is not int or deck != 0:
                    return False
                deck = _SPAN
        if hands is None and tricks is None:
            return False
        # each card field as a '|'-joined string, a span cut from the line, or None (absent)
        s_deck: str | bytes | None = None
        s_hands: str | bytes | None = None
        s_runs: str | None = None
        s_disc: str | None = None
        s_tricks: str | bytes | None = None
        nd = nr = -1
        hl: Shape | None = None
        dl: Shape | None = None
        tl: Shape | None = None
        tmpl: bytes | None
        join = "|".join
        if deck is _SPAN:
            span = spans["d"]
            nd = (len(span) + 1) // 5
            tmpl = self._dtmpl.get(nd)
            if tmpl is None:
                tmpl = self._dtmpl[nd] = _deck_template(nd)
            if span.translate(_SPAN_TBL) != tmpl:
                return False
            s_deck = span
        elif deck is not None:
            if type(deck) is not list:
                return False
            nd = len(deck)
            if nd:
                s_deck = join(deck)
                if len(s_deck) != 3 * nd - 1 or not s_deck.isascii():
                    return False
        if hands is _SPAN:
            hk = (rs << 8) | (n << 4) | dealer
            h_hit = self._hshape.get(hk)
            if h_hit is None:
                hl = _hand_shape(R, n, dealer, rs)
                h_hit = self._hshape[hk] = (hl, _nested_template(hl))
            hl, tmpl = h_hit
            if spans["h"].translate(_SPAN_TBL) != tmpl:
                return False
            s_hands = spans["h"]
        elif hands is not None:
            if type(hands) is not list or len(hands) != n or set(map(type, hands)) != _LISTS:
                return False
            hl = tuple(map(len, hands))
            if 0 in hl or max(hl) > 255:
                return False
            s_hands = join(map(join, hands))
            if len(s_hands) != 3 * sum(hl) - 1 or not s_hands.isascii():
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
            nr = len(parts)
            if nr:
                s_runs = join(parts)
                if len(s_runs) != 3 * nr - 1 or not s_runs.isascii():
                    return False
        if discards is not None:
            if type(discards) is not list or len(discards) != n or set(map(type, discards)) != _LISTS:
                return False
            dl = tuple(map(len, discards))
            if 0 in dl or max(dl) > 255:
                return False
            s_disc = join(map(join, discards))
            if len(s_disc) != 3 * sum(dl) - 1 or not s_disc.isascii():
                return False
        if tricks is _SPAN:
            tk = (rs << 8) | (n << 4) | (len(runs) if type(runs) is list and len(runs) < 16 else 15)
            t_hit = self._tshape.get(tk)
            if t_hit is None:
                tl = _trick_shape(R, n, runs, rs)
                t_hit = self._tshape[tk] = (tl, _nested_template(tl) if tl is not None else None)
            tl, tmpl = t_hit
            if tl is None or spans["t"].translate(_SPAN_TBL) != tmpl:
                return False
            s_tricks = spans["t"]
        elif tricks is not None:
            if type(tricks) is not list:
                return False
            if tricks:
                if set(map(type, tricks)) != _LISTS:
                    return False
                tl = tuple(map(len, tricks))
                if 0 in tl or max(tl) > 255:
                    return False
                s_tricks = join(map(join, tricks))
                if len(s_tricks) != 3 * sum(tl) - 1 or not s_tricks.isascii():
                    return False
            else:
                tl = ()
        rp = rt = None
        rw = -1
        if rec is not None:
            if type(rec) is not dict:
                return False
            rp, rt, w = rec.get("points"), rec.get("totals"), rec.get("winner")
            if rp is not None:
                if type(rp) is not list or len(rp) != ns:
                    return False
                for x in rp:
                    if type(x) is not int or not -INT32 < x < INT32:
                        return False
            if rt is not None:
                if type(rt) is not list or len(rt) != ns:
                    return False
                for x in rt:
                    if type(x) is not int or not -INT32 < x < INT32:
                        return False
            if w is not None:
                if type(w) is not int or not 0 <= w < ns:
                    return False
                rw = w
        # ---- accepted: append the row
        row = self.rows
        self.rows += 1
        self.raw_of[row] = keep if keep is not None else obj
        if cl is not None:
            self.claims[row] = cl
        code = self._gid.get(gid)
        if code is None:
            code = self._gid[gid] = len(self.gid_vals)
            self.gid_vals.append(gid)
        self.meta.append((line, 0, _GAME_OF[R.game], rs, lu, sd, n, dealer, cutter, code, deal_no, beg, bunched,
                          rec is not None, rw))
        self.cards.append((tu, shown, s_deck, s_hands, s_runs, s_disc, s_tricks))
        self.shape.append((nd, hl, nr, dl, tl))
        self.recd.append((rp, rt))
        if ns > self.maxs:
            self.maxs = ns
        if self.keep_all:
            extra = {k: v for k, v in obj.items() if k not in KNOWN_FIELDS} if self.keep_all is True else None
            if extra:
                extra_s = orjson.dumps(extra).decode()
            else:
                extra_s = None
            self.extra_cols.append((table, time, pack, extra_s))
        return True

    # ------------------------------------------------------------ finish
    def finish(self) -> Chunk:
        n = self.rows
        M = np.fromiter(chain.from_iterable(self.meta), np.int64, 15 * n).reshape(n, 15).T
        (line, status, game, rset, lineup, sides, nplayers, dealer, cutter, gid, deal_no, beg, bunched, rec_has,
         rw) = M
        if n:
            tu_s, shown_s, deck_s, hands_s, runs_s, disc_s, tricks_s = zip(*self.cards, strict=True)
            nd, hl, nr, dl, tl = zip(*self.shape, strict=True)
            rps, rts = zip(*self.recd, strict=True)
        else:
            tu_s = shown_s = deck_s = hands_s = runs_s = disc_s = tricks_s = ()
            nd = hl = nr = dl = tl = rps = rts = ()
        tu = codes_of("".join(tu_s)) if n else np.zeros(0, np.uint8)
        shown = np.full(n, NOCARD, np.uint8)
        sh = "".join(shown_s)
        if sh:
            has_shown = np.fromiter(map(len, shown_s), np.int64, n) == 2
            shown[has_shown] = codes_of(sh)
        else:
            has_shown = np.zeros(n, bool)
        self._has_shown = has_shown
        S = self.maxs
        rp, rp_has = _dense(rps, n, S)
        rt, rt_has = _dense(rts, n, S)
        ch = Chunk(
            n=n, fi=self.fi, path=self.path, line=line.copy(), status=status.astype(np.uint8),
            slow=self.slow, game=game.astype(np.uint8), rset=rset.astype(np.int32),
            lineup=lineup.astype(np.int32), sides=sides.astype(np.int32),
            nplayers=nplayers.astype(np.int8), dealer=dealer.astype(np.int16),
            cutter=cutter.astype(np.int16), gid=gid.copy(),
            deal_no=deal_no.copy(), beg=beg.astype(np.int8),
            bunched=bunched.astype(bool), turn_up=tu, shown=shown,
            deck=_ragged_n(deck_s, nd),
            hands=_ragged_of(hands_s, hl),
            hand_lens=_lens_of(hl),
            runs=_ragged_n(runs_s, nr),
            discards=_ragged_of(disc_s, dl),
            disc_lens=_lens_of(dl),
            tricks=_ragged_of(tricks_s, tl),
            trick_lens=_lens_of(tl),
            rp=rp, rp_has=rp_has, rt=rt, rt_has=rt_has,
            rw=rw.astype(np.int16), rec_has=rec_has.astype(bool), gid_vals=self.gid_vals,
            raw_line=self.raw_line, claims=self.claims,
        )
        if self.keep_all:
            cols = list(zip(*self.extra_cols, strict=True)) if n else [(), (), (), ()]
            ch.table, ch.time, ch.pack, ch.extra = (list(c) for c in cols)
        self._demote_unknown(ch)
        return ch

    def _demote_unknown(self, ch: Chunk) -> None:
        """Rows holding a string that is not a card go to the slow path (the reference reports unknown_card)."""
        bad = (ch.turn_up == NOCARD) & (ch.status == 0)
        bad |= self._has_shown & (ch.shown == NOCARD)
        for rg in (ch.deck, ch.hands, ch.runs, ch.discards, ch.tricks):
            hit = rg.data == NOCARD
            if hit.any():
                rows = np.repeat(np.arange(ch.n), rg.lens())[hit]
                bad[rows] = True
        for i in np.flatnonzero(bad & (ch.status == 0)):
            demote(ch, int(i), self.raw_of[int(i)])


def _dense(lists: Sequence[list[int] | None], n: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """Recorded points or totals: [n, S] int32 and the presence mask."""
    out = np.zeros((n, S), np.int32)
    has = np.array([v is not None for v in lists], bool) if n else np.zeros(0, bool)
    if not has.any():
        return out, has
    full = [v for v in lists if v is not None]
    if set(map(len, full)) == {S}:
        out[has] = np.fromiter(chain.from_iterable(full), np.int64, S * len(full)).reshape(-1, S)
        return out, has
    for i, v in enumerate(lists):
        if v is not None:
            out[i, :len(v)] = v
    return out, has


def _decode(strs: Sequence[str | bytes | None], shapes: Sequence[Any]) -> np.ndarray:
    """Card codes of a field, rows in order: '|'-joined strings (str) and canonical spans cut from the line
    (bytes, with their shape: a tuple of part sizes, or the card count of a deck)."""
    n = len(strs)
    kinds = set(map(type, strs))
    if kinds == _BYTES_ONLY and shapes.count(shapes[0]) == n:  # every row a span of one shape: one block
        return _decode_spans(cast(list[bytes], list(strs)), shapes[0]).reshape(-1)
    str_rows = [i for i, x in enumerate(strs) if type(x) is str and x]
    span_rows = [i for i, x in enumerate(strs) if type(x) is bytes]
    if not span_rows:
        return codes_of_sep("|".join([cast(str, x) for x in strs if x]))
    if not str_rows:
        parts: dict[Any, list[int]] = {}
        for i in span_rows:
            parts.setdefault(shapes[i], []).append(i)
        if len(parts) == 1:
            (shape, rows), = parts.items()
            return _decode_spans([cast(bytes, strs[i]) for i in rows], shape).reshape(-1)
    # mixed: each kind decoded apart, then put back in row order
    counts = np.array([_count(shapes[i], strs[i]) for i in range(len(strs))], np.int64)
    off = np.zeros(len(strs) + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    out = np.empty(int(off[-1]), np.uint8)
    if str_rows:
        codes = codes_of_sep("|".join([cast(str, strs[i]) for i in str_rows]))
        r = np.array(str_rows)
        out[_dest(off, r, counts[r])] = codes
    groups: dict[Any, list[int]] = {}
    for i in span_rows:
        groups.setdefault(shapes[i], []).append(i)
    for shape, rows in groups.items():
        codes = _decode_spans([cast(bytes, strs[i]) for i in rows], shape).reshape(-1)
        r = np.array(rows)
        out[_dest(off, r, counts[r])] = codes
    return out


def _count(shape: int | Shape, x: str | bytes | None) -> int:
    if not x:
        return 0
    return shape if isinstance(shape, int) else sum(shape)


def _dest(off: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    start = np.zeros(len(rows), np.int64)
    np.cumsum(counts[:-1], out=start[1:])
    return np.repeat(off[rows] - start, counts) + np.arange(int(counts.sum()))


def _decode_spans(spans: list[bytes], shape: int | Shape) -> np.ndarray:
    """[rows, cards] codes of spans that all have the same canonical shape."""
    template = _deck_template(shape) if isinstance(shape, int) else _nested_template(shape)
    pos = _span_positions(template)
    arr = np.frombuffer(b"".join(spans), np.uint8).reshape(len(spans), len(template))
    a = arr[:, pos].astype(np.uint16)
    b = arr[:, pos + 1]
    codes: np.ndarray = card_lut()[(a << 8) | b]
    return codes


def _ragged_n(strs: Sequence[str | bytes | None], counts: Sequence[int]) -> Ragged:
    """A ragged card field (a deck, or run cards) from per-row strings or spans and card counts (-1: absent)."""
    data = _decode(strs, counts)
    c = np.array(counts, np.int64)
    return Ragged.from_lists(np.maximum(c, 0), data, c >= 0)


def _ragged_of(strs: Sequence[str | bytes | None], lens: Sequence[Shape | None]) -> Ragged:
    """A ragged card field from per-row strings or spans and per-row tuples of part lengths (None: absent)."""
    data = _decode(strs, lens)
    sums: dict[Shape | None, int] = {}
    counts = [sums[t] if t in sums else sums.setdefault(t, sum(t) if t else 0) for t in lens]
    return Ragged.from_lists(counts, data, [t is not None for t in lens])


def _lens_of(lens: Sequence[Shape | None]) -> Ragged:
    """Per-row tuples of lengths (None: absent) as a ragged uint8 field."""
    n = len(lens)
    first = lens[0] if n else None
    if n and first is not None and lens.count(first) == n:  # every row the same shape
        flat = np.tile(np.array(first, np.uint8), n)
        return Ragged.from_lists(np.full(n, len(first), np.int64), flat, np.ones(n, bool))
    counts = [len(x) if x is not None else 0 for x in lens]
    flat = np.fromiter(chain.from_iterable(x for x in lens if x), np.uint8)
    return Ragged.from_lists(counts, flat, [x is not None for x in lens])


def demote(ch: Chunk, i: int, raw: Any) -> None:
    """Turn column row i into a slow row (its record validated from the object or Deal it came from)."""
    src = f"{ch.path}:{int(ch.line[i])}"
    if isinstance(raw, Deal):
        rec = Record(raw.source, raw.file_index, raw.line, deal=raw)
    elif isinstance(raw, (bytes, bytearray)):  # the line as read
        rec = next(iter(parse_line(bytes(raw), ch.path, ch.fi, int(ch.line[i]), json_loader())))
    else:
        rec = record_from_obj(raw, src, ch.fi, int(ch.line[i]))
    ch.slow[i] = rec
    ch.status[i] = 1 if rec.deal is not None else 2
    ch.claims.pop(i, None)


def claims_of(claims: Any, n: int) -> tuple[tuple[int, int], ...] | None:
    """A record's `claims` as (trick, seat) pairs when they are certainly valid for `n` players and in the
    canonical form (`Deal.to_canonical`: objects of exactly `revoke` then `trick`), so that the record written back
    is the one read; None otherwise (the slow path judges them)."""
    if type(claims) is not list:
        return None
    out = []
    for c in claims:
        if type(c) is not dict or len(c) != 2:
            return None
        keys = iter(c)
        if next(keys) != "revoke" or next(keys) != "trick":
            return None
        s, k = c["revoke"], c["trick"]
        if type(s) is not int or type(k) is not int or not 0 <= s < n or not 1 <= k < 2 ** 31:
            return None
        out.append((k, s))
    return tuple(out)


def claims_json(cl: tuple[tuple[int, int], ...]) -> list[dict[str, int]]:
    """`Chunk.claims` of a row back to the record's canonical `claims`."""
    return [{"revoke": s, "trick": k} for k, s in cl]


# ---------------------------------------------------------------- back to records


def row_to_obj(ch: Chunk, i: int, reg: Registry) -> dict[str, Any]:
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
        out["deck"] = [cs[c] for c in ch.deck.values(i)]
    if ch.hands.has[i]:
        out["hands"] = _split(ch.hands.values(i), ch.hand_lens.values(i))
    out["turn_up"] = cs[ch.turn_up[i]]
    if ch.shown[i] != NOCARD:
        out["shown"] = cs[ch.shown[i]]
    if ch.beg[i]:
        out["beg"] = BEGS[ch.beg[i]]
    if ch.runs.has[i]:
        r = ch.runs.values(i)
        w = 3 * n + 1
        out["runs"] = [{"cards": [[cs[c] for c in r[j * w + 3 * s:j * w + 3 * s + 3]] for s in range(n)],
                        "turn_up": cs[r[j * w + 3 * n]]} for j in range(len(r) // w)]
    if ch.discards.has[i]:
        out["discards"] = _split(ch.discards.values(i), ch.disc_lens.values(i))
    if ch.tricks.has[i]:
        out["tricks"] = _split(ch.tricks.values(i), ch.trick_lens.values(i))
    cl = ch.claims.get(i)
    if cl is not None:
        out["claims"] = claims_json(cl)
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
    extra = ch.extra[i] if ch.extra is not None else None
    if extra is not None:
        out.update(orjson.loads(extra))
    return out


def _split(cards: np.ndarray, lens: np.ndarray) -> list[list[str]]:
    out, p = [], 0
    for k in lens.tolist():  # Python ints: uint8 counts summed in numpy would wrap past 255 cards
        out.append([CARD_STR[c] for c in cards[p:p + k]])
        p += k
    return out
