"""`marked_ten`: does a player's play follow where the Ten of trumps really is, beyond what he could legally know?

Scotch Whist, deals played in one set (4 to 8 players, Russian 2-3 players). The design (docs/decisions.md,
section "Play-knowledge tests"):

Decisions. Every card play by the player where the target card (the Ten of trumps) is unplayed, not his, not
publicly known (the turn-up) and not out of play, and where he has a real choice of "trump aggression":

  - a lead, scored x = +1 for leading the boss trump (the highest trump not yet played: a sure winner),
    0 for another trump, -1 for a non-trump; relevant when his hand offers two of these;
  - following a trump lead with trumps, x = +1 for playing the boss (the highest trump not yet played), -1 for
    another trump; relevant when he holds the boss and another trump.

Every other play is excluded and counted by reason (`detail.excluded`).

Fit. The Ten's location class g: for a lead +1 when an opponent holds it, -1 when a partner does, 0 when it is
aside (undealt); for a follow +1 when its holder is still to play to this trick, 0 otherwise. The fit of a
decision is f(d, loc) = x(d) g(loc): leading the boss when an opponent holds the Ten (+1), keeping off trumps
when the partner holds it (+1), and the mirror cases (-1).

Null. Under H0 the decision depends on the Ten's location only through what he knew, I_t. With P(loc | I_t) the
posterior of the Ten's location given I_t, the decision's score is

    s_t = (x(d_t) - c_t) * (g(true loc) - sum_loc P(loc | I_t) g(loc))

which has mean zero given I_t for any c_t that is a function of I_t. c_t is the field's mean x in the same
decision context (fitted on the other players): it removes noise (a player who always leads trumps adds little
variance) and makes the score doubly robust: its bias is the product of the errors of c_t and of the posterior.

Statistic and p-value (sequential randomisation). Each decision's term, given what the player knew, is drawn
from the posterior: x_t - c_t is fixed and g takes the value of each possible place with its posterior
probability. These terms are martingale differences within a deal (the posterior is updated decision by
decision), so their sum has the null mean and variance of independent blocks, and its one-sided tail is computed
by the Lugannani-Rice saddlepoint over the blocks (skewed terms: a normal tail on a self-normalised sum was
measured anti-conservative). The deal is the unit of the variance check: phi = the field's (other players')
ratio of the empirical variance of the per-deal sums S_d to the model variance; the null is widened by max(1,
phi). A randomisation of the whole deal at the player's last decision (`last_decision_crt`) is valid too but was
measured conservative and less powerful, so it is not used (docs/decisions.md).

Posterior. P(loc | I_t) is a conditional logit over the seats that may hold the Ten: seats shown void in trumps
have none; the others have the offset log(unknown cards) (the exact hard-fact prior when nobody has shown a void)
plus fitted weights on (a) the sum of the log likelihood ratios of the seat's plays so far in the deal under a
model of how holders and non-holders of the Ten play (binned frequencies over the whole field: after the fact
every deal's hands are known) and (b) plain-suit voids shown. The model for a player's decisions is fitted on
the other players only (K folds of players), so a cheater cannot teach the model his own habits.

Controls reported beside the primary test (`controls`, in no family): the same test with the hard-fact posterior
(unknown-card counts and voids only: what a detector that ignores legal signals would say), the exact opening-lead
component (a deal's first lead: the hard-fact posterior is exact for every honest policy), early vs late decisions,
the per-deal sums read as a self-normalised normal Z, the same test for unmarked cards (the trump Queen, the Ten of
the next suit), a placebo on deals where the Ten is his own (the trump Ace standing in for the Ten), the test per
`pack` when records carry one, and the field comparison (`auditor.detectors.field`).

Counting. `MarkedTen.count(table)` (`count_table`) counts over the table (`auditor.columns.AuditColumns`) and
returns exactly what `count_results(results)` returns when `table = from_results(results)`, array for array.
`count_results` (the executable spec, the tests' oracle) walks every play of every deal in Python with
`play_facts.walk`, about 0.5 ms per deal it keeps; `count_table` reads the play tests' one numba walk
(`play_columns.walk_deal`: each seat's unplayed cards, the cards played, the voids shown, the trick's winner, as
bitmasks) in one loop per deal (`_extract`, a few us), transcribing `play_cell`, `decision_x` and `_candidates` for
the deals the detector keeps (Scotch Whist played in one set and without a revoke). Rows go into preallocated
arrays; when a deal's worst case no longer fits, the kernel stops, the arrays grow and it resumes at that deal, so
the walk runs once. Which deals are excluded and why (`play_columns.walk_setup`), the ids of players, packs and
games (in the order the Python builder first meets them), the points shares and the deal key's per-string hashes
(`_str_hash`) stay in numpy and Python.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

import numba
import numpy as np
from scipy.special import ndtr, ndtri, owens_t

from ..cards import SUIT_MASK, parse_card, rank_of, suit_of
from ..columns import DEAL_NO_MAX, TIME_NONE, AuditColumns, natural_key, natural_ranks, time_key
from ..facts import DealingFacts
from ..pools import fork_helper, helpers_allowed, trim_heap
from ..rules import layout, trump_strength
from ..stats.family import TestResult
from .base import Timeline
from .field import field_compare
from .marked_ten_fit import cgf as block_cgf
from .marked_ten_fit import (
    chosen_rows,
    clogit_pass,
    clogit_pass5,
    clogit_probs5,
    decision_blocks,
    decision_sums,
    design,
    group_max,
    holder_counts,
    newton,
    play_ranges,
    seat_llr_sums,
    segment_rows,
)
from .play_columns import (
    P_CARD,
    P_HOLD,
    P_LEAD,
    P_LEGAL,
    P_PLAYED,
    P_POS,
    P_SEAT,
    P_TRICK,
    P_TWO,
    P_VOIDS,
    P_WIN_CARD,
    P_WIN_SEAT,
    T_COUNT,
    T_FIRST,
    WALK_LEGAL,
    WALK_VOIDS,
    WALK_WINNER,
    beats,
    count_bits,
    setup_of,
    strength,
    suit_mask,
    walk_buffers,
    walk_deal,
)
from .play_facts import (
    ACE,
    QUEEN,
    TEN,
    PlayState,
    card_of,
    deal_exclusion,
    popcount,
    walk,
)
from .spec import TestSpec

NAME = "marked_ten"

# targets: the marked card and its controls
TARGETS = ("ten", "queen", "plain_ten", "placebo")
TARGET_LABEL = {"ten": "Ten of trumps", "queen": "Queen of trumps (unmarked control)",
                "plain_ten": "Ten of the next suit (unmarked control)",
                "placebo": "trump Ace on deals where the Ten is their own (placebo)"}

KIND_LEAD, KIND_FOLLOW = 0, 1
N_FEAT = 5  # conditional logit features: log u, llr sum, one plain void, two+ plain voids, aside
LLR_CLIP = 6.0
MIN_DEALS = 5  # a player with fewer scored deals gets no test
SPILL_PREFIX = "marked_ten-"  # a part's spilled counts: a folder of the spill folder (`spill_counts`)
HELPER_MIN_DEALS = 200_000  # `finalize_parts` forks a helper (where allowed) from this many deals


def target_card(name: str, trump: int) -> int:
    if name == "ten":
        return card_of(trump, TEN)
    if name == "queen":
        return card_of(trump, QUEEN)
    if name == "plain_ten":
        return card_of((trump + 1) % 4, TEN)
    return card_of(trump, ACE)  # placebo


# ---------------------------------------------------------------- per-play model of holders and non-holders

# play context: partnership (2) x kind (3) x situation (3) x last to play (2) x stage (3); outcome 0..3
N_CTX = 2 * 3 * 3 * 2 * 3
N_OUT = 4  # 0: target suit above target, 1: target suit below target, 2: another suit, 3: the target itself


def _above(game: str, trump: int, a: int, b: int) -> bool:
    """Card a ranks above card b of the same suit."""
    if suit_of(a) == trump:
        return trump_strength(game, rank_of(a)) > trump_strength(game, rank_of(b))
    return rank_of(a) > rank_of(b)


def play_cell(st: PlayState, target: int) -> int | None:
    """Context x outcome cell of seat `st.seat`'s play relative to `target` (None: a play that says nothing of it,
    i.e. following another suit with that suit)."""
    s, c = st.seat, st.card
    ts = suit_of(target)
    lead, win = st.lead_suit, st.current_winner()
    if lead is None or win is None:  # a lead
        kind = 0
        situation = 0
    elif lead == ts and st.hold[s] & SUIT_MASK[ts]:
        kind = 1  # following the target's suit with that suit: the target could be played
        if st.sure_for_side(s):
            situation = 0  # the partner's sure winner: a safe place to drop the target
        elif st.beats(target, win[1]):
            situation = 2  # the target would win the trick now
        else:
            situation = 1
    elif not (st.hold[s] & SUIT_MASK[lead]):
        kind = 2  # void in the suit led: the target could be thrown (or trumped in)
        situation = 0 if st.sure_for_side(s) else (1 if st.side_of[win[0]] != st.side_of[s] else 2)
    else:
        return None
    last = 1 if st.pos == len(st.trick_seats) - 1 else 0
    stage = 0 if st.k == 0 else (1 if 2 * st.k < st.n_tricks else 2)
    ctx = (((int(st.partnership) * 3 + kind) * 3 + situation) * 2 + last) * 3 + stage
    if c == target:
        out = 3
    elif suit_of(c) == ts:
        out = 0 if _above(st.game, st.trump, c, target) else 1
    else:
        out = 2
    return ctx * N_OUT + out


# ---------------------------------------------------------------- decisions


def boss_trump(st: PlayState) -> int | None:
    """The highest trump that is not yet played or publicly out of play."""
    gone = st.played | st.out_of_play_public
    for c in st.trump_order:
        if not (gone >> c) & 1:
            return c
    return None


def decision_x(st: PlayState) -> tuple[int, dict[int, int], int] | None:
    """(kind, x per legal card, context for the field's mean x), or None when the play is not a trump-aggression
    choice."""
    i, trump, legal = st.seat, st.trump, st.legal
    tmask = SUIT_MASK[trump]
    if st.pos != 0 and (st.lead_suit != trump or not legal & tmask or popcount(legal) < 2):
        return None
    if st.pos == 0 and (popcount(legal) < 2 or not legal & tmask):
        return None
    boss = boss_trump(st)
    if st.pos == 0:
        xs: dict[int, int] = {}
        m = legal
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            xs[c] = (1 if c == boss else 0) if suit_of(c) == trump else -1
        pattern = (int(boss is not None and (legal >> boss) & 1) << 2) | (int(bool(legal & tmask & ~(
            (1 << boss) if boss is not None else 0))) << 1) | int(bool(legal & ~tmask))
        stage = 0 if st.k == 0 else (1 if 2 * st.k < st.n_tricks else 2)
        return KIND_LEAD, xs, (int(st.partnership) * 8 + pattern) * 3 + stage
    win = st.current_winner()
    if st.lead_suit == trump and legal & tmask and win is not None:  # (a follow: somebody is winning)
        w_seat = win[0]
        xs = {}
        m = legal
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            xs[c] = 1 if c == boss else -1
        n_opts = min(popcount(legal), 4)
        partner_winning = int(st.side_of[w_seat] == st.side_of[i])
        last = int(st.pos == len(st.trick_seats) - 1)
        return KIND_FOLLOW, xs, 48 + ((int(st.partnership) * 5 + n_opts) * 2 + partner_winning) * 2 + last
    return None


N_XCTX = 48 + 2 * 5 * 2 * 2


P_COLS = ("deal", "order", "seat", "cell", "holds")
D_COLS = ("deal", "order", "seat", "kind", "x", "xctx", "early", "opening")
C_COLS = ("dec", "seat", "u", "nv", "g", "true")
MAX_SEATS = 8
COL_DTYPE = {"deal": np.int32, "dec": np.int32, "order": np.int16, "cell": np.int16, "xctx": np.int16}  # else int8


@dataclass
class MarkedTenCounts:
    """What `count` keeps of one partition, as numpy columns (so that a million deals fit in memory):

    per deal: `keys` (a 64-bit hash of the deal's content: the order of deals in `finalize`, so any partition of
    the input gives the same result), `players` (ids into `names`, -1 past the table's seats), `pack` (id into
    `pack_names`, -1 none) and `share` (each seat's side's share of the deal's points: his results);
    per target: `plays` (the rows of the holder model: deal, play order, seat, context x outcome cell, whether the
    seat holds the card), `decisions` (deal, order, seat, kind, x, context of x, early, opening lead) and
    `cands` (per decision, the places the card may be: decision, seat or -1 aside, unknown cards, plain voids
    shown, location class g, truth). `merge` concatenates, re-indexing deals, decisions, players and packs."""

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    players: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.int32))
    pack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    share: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.float32))
    names: list[str] = field(default_factory=list)
    pack_names: list[str] = field(default_factory=list)
    game: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # index into `games`
    deal_no: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    games: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)  # file:line of each deal
    # each deal's place in the canonical order, as data that compares across runs (issue 15: not `order` ranks):
    # its table (index into `tables`) and time (us since 1970, TIME_NONE when absent); with `games` and `deal_no`
    # the canonical tuple (table natural key, time, game natural key, deal no) of the timeline and the top deals
    table: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    tables: list[str] = field(default_factory=list)
    time: np.ndarray = field(default_factory=lambda: np.full(0, TIME_NONE, np.int64))
    side: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.int8))  # side of each seat, -1 past n
    # the score ledger: one row per Scotch Whist deal of the input (kept or not: an excluded deal's points still
    # move the game's score), from which `finalize` computes every kept deal's pre-deal game score (`pre_deal_scores`)
    ledger_games: list[str] = field(default_factory=list)
    ledger_game: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # index into `ledger_games`
    ledger_deal_no: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ledger_scored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    ledger_points: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.int16))  # per side
    ledger_target: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))  # the game target (rules)
    ledger_floor: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # negative_scores = floor_zero
    targets: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)
    excluded_deals: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, dict[str, int]] = field(default_factory=dict)  # player -> reason -> plays

    @property
    def n_deals(self) -> int:
        return len(self.keys)

    def __getstate__(self) -> dict:
        return _counts_getstate(self)

    def __setstate__(self, state: dict) -> None:
        _counts_setstate(self, state)


# ---------------------------------------------------------------- spilled counts (issue 15)


@dataclass
class StrColumn:
    """A list of strings as one UTF-8 buffer and offsets (string i: `data[off[i]:off[i + 1]]`): how spilled counts
    keep `source`, `games` and `ledger_games` (numpy arrays, so that they go to files and are memory-mapped like
    the rows, and save with `auditor.countfile` as they are). Reads like a list: `len`, `[i]`, iteration."""

    data: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))

    @staticmethod
    def of(strings: Sequence[str], errors: str = "surrogatepass") -> "StrColumn":
        enc = [s.encode("utf-8", errors) for s in strings]
        off = np.zeros(len(enc) + 1, np.int64)
        if enc:
            np.cumsum(np.fromiter((len(b) for b in enc), np.int64, len(enc)), out=off[1:])
        return StrColumn(np.frombuffer(b"".join(enc), np.uint8).copy(), off)

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, i: int) -> str:
        i = int(i)
        if i < 0:
            i += len(self)
        return bytes(self.data[int(self.off[i]):int(self.off[i + 1])]).decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        buf = self.data.tobytes()
        off = self.off.tolist()
        for a, b in zip(off, off[1:], strict=False):
            yield buf[a:b].decode("utf-8", "surrogatepass")

    def __arrow_array__(self, type: Any = None) -> Any:
        """The strings as an Arrow string array over these buffers (pyarrow's `pa.array` protocol): so that
        `columns.natural_order` ranks 200,000 game ids without a Python string each (issue 15). The bytes are not
        checked: a lone surrogate (passed through) makes them invalid UTF-8, which `natural_order` never decodes
        (any byte above 127 sends it to its spec, which reads the strings from this column)."""
        import pyarrow as pa

        n = len(self)
        if (type is not None and type != pa.string()) or (n and int(self.off[-1]) >= 2 ** 31):
            return pa.array(list(self), type=type)
        off = np.ascontiguousarray(self.off - self.off[0], np.int32)
        data = np.ascontiguousarray(self.data[int(self.off[0]):int(self.off[-1])])
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(off), pa.py_buffer(data)])

    def __getstate__(self) -> dict:
        return {k: _pack(v) for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update({k: _unpack(v) for k, v in state.items()})


class _SpilledArray:
    """What a pickle of spilled counts holds in place of a memory-mapped array: its file (re-opened on loading)."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    def __getstate__(self) -> str:
        return self.path

    def __setstate__(self, path: str) -> None:
        self.path = path


def _open(path: str) -> np.ndarray:
    """A .npy file memory-mapped read-only, as a plain ndarray (its base the `np.memmap`, which knows the file)."""
    return np.asarray(np.load(path, mmap_mode="r"))


def _file_of(a: np.ndarray) -> str | None:
    """The .npy file `a` is the whole memory-mapped array of (`_open`), else None."""
    b = a.base
    while b is not None and not isinstance(b, np.memmap):
        b = getattr(b, "base", None)
    if (b is None or not getattr(b, "filename", None) or b.shape != a.shape or b.dtype != a.dtype
            or b.ctypes.data != a.ctypes.data):
        return None
    return str(b.filename)


def _pack(x: Any) -> Any:
    if type(x) is np.ndarray:
        path = _file_of(x)
        return _SpilledArray(path) if path is not None else x
    if type(x) is dict:
        return {k: _pack(v) for k, v in x.items()}
    return x


def _unpack(x: Any) -> Any:
    if type(x) is _SpilledArray:
        return _open(x.path)
    if type(x) is dict:
        return {k: _unpack(v) for k, v in x.items()}
    return x


def _counts_getstate(self: "MarkedTenCounts") -> dict:
    """Pickled spilled counts name their files instead of copying the rows (a worker process or a Dask worker on
    the same filesystem returns them to the audit so); in-memory arrays pickle as they are."""
    return {k: _pack(v) for k, v in self.__dict__.items()}


def _counts_setstate(self: "MarkedTenCounts", state: dict) -> None:
    self.__dict__.update({k: _unpack(v) for k, v in state.items()})


STR_FIELDS = ("source", "games", "ledger_games")  # the per-deal / per-game strings a spill turns into `StrColumn`s


def spill_counts(c: "MarkedTenCounts", spill_dir: str) -> "MarkedTenCounts":
    """The counts with every array written to a .npy file in a new folder of `spill_dir` and re-opened
    memory-mapped (read-only), and the per-deal and per-game strings (`STR_FIELDS`) as `StrColumn`s spilled the
    same way: what one part of a large input keeps in memory is then its small lists (players, packs, tables) and
    the exclusion counts. Empty arrays stay in memory. The folder lives as long as the audit's working files (the
    caller removes `spill_dir`)."""
    os.makedirs(spill_dir, exist_ok=True)
    d = tempfile.mkdtemp(prefix=SPILL_PREFIX, dir=spill_dir)
    n = 0

    def put(a: np.ndarray) -> np.ndarray:
        nonlocal n
        if a.size == 0 or _file_of(a) is not None:
            return a
        n += 1
        path = os.path.join(d, f"{n:03d}.npy")
        np.save(path, np.ascontiguousarray(a), allow_pickle=False)
        return _open(path)

    for f in dataclasses.fields(c):
        v = getattr(c, f.name)
        if f.name in STR_FIELDS:
            s = v if isinstance(v, StrColumn) else StrColumn.of(v)
            setattr(c, f.name, StrColumn(put(s.data), put(s.off)))
        elif type(v) is np.ndarray:
            setattr(c, f.name, put(v))
    c.targets = {t: {part: {k: put(v) for k, v in cols.items()} for part, cols in tc.items()}
                 for t, tc in c.targets.items()}
    return c


def _fresh(x: Any) -> Any:
    """`x` (an array, a `StrColumn`, a dict of them, else as it is) with fresh memory maps of its files."""
    if isinstance(x, StrColumn):
        return StrColumn(_unpack(_pack(x.data)), _unpack(_pack(x.off)))
    return _unpack(_pack(x))


def _reopened(c: "MarkedTenCounts") -> "MarkedTenCounts":
    """The same counts with fresh memory maps of their files, their strings' (`StrColumn`) too (in-memory arrays
    shared): what `finalize` reads, so that the pages it touches are released when it drops them (the maps of the
    merged counts stay untouched: issue 15, the games' names read through the merged counts' own maps stayed
    resident, some 3 MB a part, 130 MB over the 50 parts of ten copies of the 1M season)."""
    out = MarkedTenCounts.__new__(MarkedTenCounts)
    out.__dict__.update({k: _fresh(v) for k, v in c.__dict__.items()})
    return out


@dataclass
class MarkedTenParts:
    """Merged counts kept as their parts, in part order, when the parts are spilled (`MarkedTen.merge`): nothing
    is copied; `finalize` streams over them (`finalize_parts`). Saved with `auditor.countfile` as a list of counts
    (loaded back in memory, which finalizes the same)."""

    parts: list[MarkedTenCounts] = field(default_factory=list)

    # loaded from a counts file with a spill folder, every array inside is memory-mapped (`auditor.countfile`): the
    # parts were spilled when they were saved, so they are read-only, and they grow with deals (issue 15)
    COUNTFILE_MEMMAP: ClassVar[bool] = True

    @property
    def n_deals(self) -> int:
        return sum(p.n_deals for p in self.parts)


def merge_parts(parts: Sequence["MarkedTenCounts | MarkedTenParts"]) -> "MarkedTenCounts | MarkedTenParts":
    """`MarkedTen.merge`: the concatenation of `merge_counts` (as before issue 15) when every part is in memory;
    when any part is spilled (its strings are `StrColumn`s) or is itself a `MarkedTenParts`, the list of all the
    parts in order (flattened), which `finalize` streams over."""
    flat: list[MarkedTenCounts] = []
    partwise = False
    for p in parts:
        if isinstance(p, MarkedTenParts):
            flat += p.parts
            partwise = True
        else:
            flat.append(p)
            partwise = partwise or isinstance(p.source, StrColumn)
    return MarkedTenParts(flat) if partwise else merge_counts(flat)


class _Builder:
    """Flat lists filled deal by deal, turned into `MarkedTenCounts` columns at the end of `count`."""

    def __init__(self, counts: MarkedTenCounts):
        self.c = counts
        self.keys: list[int] = []
        self.players: list[list[int]] = []
        self.pack: list[int] = []
        self.share: list[list[float]] = []
        self.pid: dict[str, int] = {}
        self.packid: dict[str, int] = {}
        self.gid: dict[str, int] = {}
        self.game: list[int] = []
        self.deal_no: list[int] = []
        self.source: list[str] = []
        self.tid: dict[str, int] = {}
        self.table: list[int] = []
        self.time: list[int] = []
        self.side: list[list[int]] = []
        self.lgid: dict[str, int] = {}
        self.ledger: list[tuple[int, int, bool, list[int], int, bool]] = []
        self.cols: dict[str, dict[str, dict[str, list[int]]]] = {
            t: {"plays": {k: [] for k in P_COLS}, "decisions": {k: [] for k in D_COLS},
                "cands": {k: [] for k in C_COLS}} for t in TARGETS}

    def player(self, name: str) -> int:
        i = self.pid.get(name)
        if i is None:
            i = self.pid[name] = len(self.pid)
        return i

    def finish(self) -> MarkedTenCounts:
        c = self.c
        c.keys = np.asarray(self.keys, np.uint64)
        c.players = np.asarray(self.players, np.int32).reshape(-1, MAX_SEATS)
        c.pack = np.asarray(self.pack, np.int32)
        c.share = np.asarray(self.share, np.float32).reshape(-1, MAX_SEATS)
        c.names = sorted(self.pid, key=self.pid.__getitem__)
        c.pack_names = sorted(self.packid, key=self.packid.__getitem__)
        c.game = np.asarray(self.game, np.int32)
        c.deal_no = np.asarray(self.deal_no, np.int64)
        c.games = sorted(self.gid, key=self.gid.__getitem__)
        c.source = self.source
        c.table = np.asarray(self.table, np.int32)
        c.tables = sorted(self.tid, key=self.tid.__getitem__)
        c.time = np.asarray(self.time, np.int64)
        c.side = np.asarray(self.side, np.int8).reshape(-1, MAX_SEATS)
        c.ledger_games = sorted(self.lgid, key=self.lgid.__getitem__)
        L = self.ledger
        c.ledger_game = np.asarray([r[0] for r in L], np.int32)
        c.ledger_deal_no = np.asarray([r[1] for r in L], np.int64)
        c.ledger_scored = np.asarray([r[2] for r in L], bool)
        c.ledger_points = np.asarray([r[3] for r in L], np.int16).reshape(-1, MAX_SEATS)
        c.ledger_target = np.asarray([r[4] for r in L], np.int16)
        c.ledger_floor = np.asarray([r[5] for r in L], bool)
        c.targets = {t: {part: {k: np.asarray(v, COL_DTYPE.get(k, np.int8)) for k, v in cols.items()}
                         for part, cols in tc.items()} for t, tc in self.cols.items()}
        return c


_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
_FMIX1, _FMIX2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53  # the 64-bit finaliser of MurmurHash3
_M64 = (1 << 64) - 1
_STR_HASH: dict[str, int] = {}


def _str_hash(text: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes of `text` (memoised: tables, games and players repeat)."""
    h = _STR_HASH.get(text)
    if h is None:
        h = _FNV_OFFSET
        for b in text.encode("utf-8"):
            h = ((h ^ b) * _FNV_PRIME) & _M64
        if len(_STR_HASH) < 1 << 16:
            _STR_HASH[text] = h
    return h


def _deal_key(res) -> int:
    """A 64-bit hash of the deal's content (table, game, deal number, seats, dealer, turn-up and every card played):
    FNV-1a over 64-bit words (the strings by their `_str_hash`, the parsed turn-up or -1, each play as trick << 16
    | seat << 8 | card), then the Murmur finaliser. Plain integer steps, so `marked_ten_fast` computes the same key
    over the columns."""
    d = res.deal
    tu = parse_card(d.turn_up)
    words = [_str_hash(d.table), _str_hash(d.game_id), min(d.deal_no, DEAL_NO_MAX), d.n, *map(_str_hash, d.players),
             d.dealer, -1 if tu is None else tu, *[(k << 16) | (s << 8) | c for k, s, c in res.plays]]
    h = _FNV_OFFSET
    for w in words:
        h = ((h ^ (w & _M64)) * _FNV_PRIME) & _M64
    h ^= h >> 33
    h = (h * _FMIX1) & _M64
    h ^= h >> 33
    h = (h * _FMIX2) & _M64
    return h ^ (h >> 33)


def _bump(dct: dict, key: str, by: int = 1) -> None:
    dct[key] = dct.get(key, 0) + by


def extract_deal(res, counts: MarkedTenCounts, B: _Builder) -> bool:
    """Add one deal's plays and decisions to the builder; False (and the reason counted) when it is excluded."""
    d = res.deal
    if d.game != "scotch_whist":
        _bump(counts.excluded_deals, "not_scotch_whist")
        return False
    pts_l = res.points if res.scored else None
    B.ledger.append((B.lgid.setdefault(d.game_id, len(B.lgid)), min(d.deal_no, DEAL_NO_MAX), pts_l is not None,
                     (list(pts_l) if pts_l is not None else []) + [0] * (MAX_SEATS - len(pts_l or [])),
                     int(d.ruleset.target), d.ruleset.negative_scores == "floor_zero"))
    why = deal_exclusion(res)
    if why is None and res.revokes:
        why = "revoke_in_deal"  # a revoke shows a false void: the hard facts of the deal are not facts
    if why is None:
        if layout(d.ruleset, d.n, d.dealer).n_sets > 1:
            why = "played_in_sets"
    if why is not None:
        _bump(counts.excluded_deals, why)
        return False
    trump = res.trump
    tcards = {t: target_card(t, trump) for t in TARGETS}
    ten = tcards["ten"]
    di = len(B.keys)
    B.keys.append(_deal_key(res))
    B.game.append(B.gid.setdefault(d.game_id, len(B.gid)))
    B.deal_no.append(min(d.deal_no, DEAL_NO_MAX))
    B.source.append(d.source)
    B.table.append(B.tid.setdefault(d.table, len(B.tid)))
    B.time.append(time_key(d.time))
    B.side.append(list(d.side_of) + [-1] * (MAX_SEATS - d.n))
    B.players.append([B.player(p) for p in d.players] + [-1] * (MAX_SEATS - d.n))
    if d.pack is None:
        B.pack.append(-1)
    else:
        B.pack.append(B.packid.setdefault(d.pack, len(B.packid)))
    pts = res.points or [0] * d.n_sides
    tot = sum(pts)
    side = d.side_of
    B.share.append([(pts[side[s]] / tot) if tot > 0 else 0.0 for s in range(d.n)] + [0.0] * (MAX_SEATS - d.n))
    cols = B.cols
    order = 0
    for st in walk(res):
        order += 1
        if st.two_card_turn:
            continue
        i = st.seat
        player = d.players[i]
        # the holder model's plays (every seat, every target still hidden from at least someone)
        cells: dict[int, int | None] = {}
        for t in ("ten", "queen", "plain_ten", "placebo"):
            c = tcards[t]
            if c in cells:
                cell = cells[c]
            else:
                cell = None
                if not ((st.played | st.out_of_play_public) >> c) & 1 and not (
                        st.turnup_owner is not None and c == st.turn_up):
                    cell = play_cell(st, c)
                cells[c] = cell
            if cell is not None:
                pc = cols[t]["plays"]
                pc["deal"].append(di)
                pc["order"].append(order)
                pc["seat"].append(i)
                pc["cell"].append(cell)
                pc["holds"].append((st.hold[i] >> c) & 1)
        # the decision
        exc = counts.excluded.setdefault(player, {})
        ten_own = bool((st.hold[i] >> ten) & 1)
        if ten_own:
            ten_state = "ten_own"
        elif (st.played >> ten) & 1:
            ten_state = "ten_played"
        elif st.visible(i, ten):
            ten_state = "ten_public"  # the turn-up, or out of play
        else:
            ten_state = None
        dx = decision_x(st)
        if dx is not None and len(set(dx[1].values())) < 2:
            dx = None
        if ten_state is not None:
            _bump(exc, ten_state)
        elif popcount(st.legal) == 1:
            _bump(exc, "forced")
        elif dx is None:
            _bump(exc, "no_trump_choice")
        if dx is None:
            continue
        kind, xs, xctx = dx
        x = xs[st.card]
        early = int(2 * st.k < st.n_tricks)
        opening = int(st.k == 0 and st.pos == 0)
        n_scored = 0
        for t in TARGETS:
            c = tcards[t]
            if t == "placebo" and not ten_own:
                continue
            if st.visible(i, c):
                continue
            cands = _candidates(st, i, c, kind)
            if cands is None:
                continue
            dc, cc = cols[t]["decisions"], cols[t]["cands"]
            dec = len(dc["deal"])
            for k, v in zip(D_COLS, (di, order, i, kind, x, xctx, early, opening), strict=True):
                dc[k].append(v)
            for row in cands:
                cc["dec"].append(dec)
                for k, v in zip(C_COLS[1:], row, strict=True):
                    cc[k].append(v)
            n_scored += t == "ten"
        if ten_state is None:
            _bump(exc, "scored" if n_scored else "no_candidate")
    return True


def _candidates(st: PlayState, i: int, target: int, kind: int) -> tuple | None:
    """Where `target` may be, from seat i's view: (seat, unknown cards, plain voids shown, g, is_true)."""
    ts = suit_of(target)
    holder = st.holder(target)
    after = set(st.seats_after())
    side = st.side_of
    out = []
    for j in range(st.n):
        if j == i:
            continue
        u = st.unknown_slots(i, j)
        if u == 0 or (st.void[j] >> ts) & 1:
            continue
        nv = popcount(st.void[j] & ~(1 << ts))
        if kind == KIND_LEAD:
            g = -1 if side[j] == side[i] else 1
        else:
            g = 1 if j in after else 0
        out.append((j, u, nv, g, int(j == holder)))
    if st.aside:
        u = popcount(st.aside)
        out.append((-1, u, 0, 0, int(holder is None)))
    if not out or not any(c[4] for c in out):
        return None
    return tuple(out)


def count_results(results: Sequence[Any]) -> MarkedTenCounts:
    """The counts of these `DealResult`s, play by play with `play_facts.walk`: the executable spec of
    `MarkedTen.count` (tests only)."""
    c = MarkedTenCounts()
    B = _Builder(c)
    for res in results:
        extract_deal(res, c, B)
    return B.finish()


# ---------------------------------------------------------------- the count over the table

# the reasons of `MarkedTenCounts.excluded`, in the kernel's column order
PLAY_REASONS = ("ten_own", "ten_played", "ten_public", "forced", "no_trump_choice", "scored", "no_candidate")
R_OWN, R_PLAYED, R_PUBLIC, R_FORCED, R_NO_CHOICE, R_SCORED, R_NO_CAND = range(7)

# Scotch Whist trumps from the strongest down: the Jack, then Ace, King, Queen, Ten, 9 ... 2
_TRUMP_ORDER = np.array(sorted(range(13), key=lambda r: -trump_strength("scotch_whist", r)), np.int64)
_U_FNV_OFFSET = np.uint64(_FNV_OFFSET)
_U_FNV_PRIME = np.uint64(_FNV_PRIME)
_U_FMIX1 = np.uint64(_FMIX1)
_U_FMIX2 = np.uint64(_FMIX2)
_S33 = np.uint64(33)


@numba.njit(cache=True, inline="always")
def _has(m, c):
    """Card c (>= 0) is in the int64 bitmask m."""
    return (m >> c) & 1 != 0


@numba.njit(cache=True, inline="always")
def _above_sw(a, b, trump):
    """`_above` (Scotch Whist): card a ranks above card b of the same suit."""
    if a // 13 == trump:
        return strength(False, a % 13) > strength(False, b % 13)
    return a % 13 > b % 13


@numba.njit(cache=True, inline="always")
def _mix(h, w):
    return (h ^ w) * _U_FNV_PRIME


@numba.njit(cache=True)
def _deal_keys(rows, table, game, deal_no, n_arr, seat_player, dealer, turn_up, play_card, play_seat,
               play_trick, n_plays, table_h, game_h, player_h):
    """`_deal_key` of every row of `rows` (the same words, the same mixing)."""
    out = np.empty(len(rows), np.uint64)
    for j in range(len(rows)):
        r = rows[j]
        h = _U_FNV_OFFSET
        h = _mix(h, table_h[table[r]])
        h = _mix(h, game_h[game[r]])
        h = _mix(h, np.uint64(np.int64(deal_no[r])))
        n = np.int64(n_arr[r])
        h = _mix(h, np.uint64(n))
        for s in range(n):
            h = _mix(h, player_h[seat_player[r, s]])
        h = _mix(h, np.uint64(np.int64(dealer[r])))
        h = _mix(h, np.uint64(np.int64(turn_up[r])))
        for p in range(n_plays[r]):
            w = (np.int64(play_trick[r, p]) << 16) | (np.int64(play_seat[r, p]) << 8) | np.int64(play_card[r, p])
            h = _mix(h, np.uint64(w))
        h ^= h >> _S33
        h *= _U_FMIX1
        h ^= h >> _S33
        h *= _U_FMIX2
        h ^= h >> _S33
        out[j] = h
    return out


@numba.njit(cache=True)
def _extract(start, rows, arrays, owner_a, pack_a, turn_up, side_of, seat_player, out, n_p, n_d, n_c, exc):
    """Walk the deals rows[start:] (`play_columns.walk_deal`; deal index = position in `rows`), appending each
    target's plays, decisions and candidate rows at n_p / n_d / n_c (per target, updated; `out` holds the output
    columns in `_Rows.args` order, each a tuple of one array per target). Returns the position of the first deal
    not walked: len(rows), or a deal whose worst case does not fit the arrays (the caller grows them and calls
    again). `exc[player, reason]` counts every play's reason (`PLAY_REASONS`)."""
    (p_deal, p_order, p_seat, p_cell, p_holds,
     d_deal, d_order, d_seat, d_kind, d_x, d_xctx, d_early, d_opening,
     c_dec, c_seat, c_u, c_nv, c_g, c_true) = out
    buf = walk_buffers(arrays)
    W = buf.plays
    T = buf.tricks
    n_arr = arrays[2]
    n_plays = arrays[14]
    side = np.zeros(8, np.int64)
    dealt = np.zeros(8, np.int64)  # each seat's cards (the deal is played in one set)
    tcard = np.zeros(4, np.int64)
    for j in range(start, len(rows)):
        r = rows[j]
        n = np.int64(n_arr[r])
        np_ = np.int64(n_plays[r])
        # the worst case of one deal: every play a row of every target, a decision, and n candidate rows
        for t in range(4):
            if n_p[t] + np_ > len(p_deal[t]) or n_d[t] + np_ > len(d_deal[t]) or n_c[t] + np_ * n > len(c_dec[t]):
                return j
        d = walk_deal(r, arrays, buf, WALK_WINNER | WALK_LEGAL | WALK_VOIDS)
        trump = d.trump
        n_tricks = d.n_tricks
        out_public = d.out_public
        tu = np.int64(turn_up[r])
        owner = np.int64(owner_a[r])
        tmask = suit_mask(trump)
        partnership = 0
        in_hands = np.int64(0)
        for o in range(n):
            side[o] = side_of[r, o]
            dealt[o] = buf.by_set[o, 0]
            in_hands |= dealt[o]
        for o in range(n):
            for o2 in range(o + 1, n):
                if side[o] == side[o2]:
                    partnership = 1
        tu_bit = np.int64(0)
        if tu >= 0:
            tu_bit = np.int64(1) << tu
        aside = pack_a[r] & ~in_hands & ~out_public & ~tu_bit
        n_aside = count_bits(aside)
        tcard[0] = trump * 13 + TEN
        tcard[1] = trump * 13 + QUEEN
        tcard[2] = ((trump + 1) % 4) * 13 + TEN
        tcard[3] = trump * 13 + ACE
        ten = tcard[0]
        for i in range(np_):
            if W[i, P_TWO]:
                continue
            s = W[i, P_SEAT]
            c = W[i, P_CARD]
            cs = c // 13
            k = W[i, P_TRICK]
            pos = W[i, P_POS]
            first = T[W[i, P_TRICK], T_FIRST]
            m = T[W[i, P_TRICK], T_COUNT]
            lead = W[i, P_LEAD]
            win_seat = W[i, P_WIN_SEAT]
            win_card = W[i, P_WIN_CARD]
            played = W[i, P_PLAYED]
            h = W[i, P_HOLD]
            legal = W[i, P_LEGAL]
            voids = W[i, P_VOIDS]
            order = i + 1
            stage = 0 if k == 0 else (1 if 2 * k < n_tricks else 2)
            last = 1 if pos == m - 1 else 0
            gone = played | out_public
            # sure_for_side(s): the partner's winner no card still out can beat
            sure = False
            if pos > 0 and win_seat != s and side[win_seat] == side[s]:
                sure = True
                for q in range(pos + 1, m):
                    if side[W[first + q, P_SEAT]] != side[s]:
                        sure = False
                if not sure and win_card // 13 == trump:  # winner_is_sure
                    sure = True
                    outm = ~played & ~out_public & tmask
                    ws = strength(False, win_card % 13)
                    for rk in range(13):
                        if _has(outm, trump * 13 + rk) and strength(False, rk) > ws:
                            sure = False
            # the holder model's plays
            for t in range(4):
                tc = tcard[t]
                if _has(gone, tc) or (owner >= 0 and tc == tu):
                    continue
                ts = tc // 13
                kind = -1
                situation = 0
                if pos == 0:
                    kind = 0
                elif lead == ts and (h & suit_mask(ts)) != 0:
                    kind = 1
                    if sure:
                        situation = 0
                    elif beats(False, trump, tc, win_card):
                        situation = 2
                    else:
                        situation = 1
                elif (h & suit_mask(lead)) == 0:
                    kind = 2
                    if sure:
                        situation = 0
                    elif side[win_seat] != side[s]:
                        situation = 1
                    else:
                        situation = 2
                if kind < 0:
                    continue
                ctx = (((partnership * 3 + kind) * 3 + situation) * 2 + last) * 3 + stage
                if c == tc:
                    oc = 3
                elif cs == ts:
                    oc = 0 if _above_sw(c, tc, trump) else 1
                else:
                    oc = 2
                q = n_p[t]
                p_deal[t][q] = j
                p_order[t][q] = order
                p_seat[t][q] = s
                p_cell[t][q] = ctx * 4 + oc
                p_holds[t][q] = 1 if _has(h, tc) else 0
                n_p[t] = q + 1
            # the decision
            pl = seat_player[r, s]
            ten_own = _has(h, ten)
            if ten_own:
                ten_state = R_OWN
            elif _has(played, ten):
                ten_state = R_PLAYED
            elif _has(out_public, ten) or (owner >= 0 and ten == tu):
                ten_state = R_PUBLIC
            else:
                ten_state = -1
            n_legal = count_bits(legal)
            dkind = -1
            x = 0
            xctx = 0
            if pos == 0:
                if n_legal >= 2 and (legal & tmask) != 0:
                    dkind = KIND_LEAD
            elif lead == trump and (legal & tmask) != 0 and n_legal >= 2:
                dkind = KIND_FOLLOW
            if dkind >= 0:
                boss = -1
                for q in range(13):
                    bc = trump * 13 + _TRUMP_ORDER[q]
                    if not _has(gone, bc):
                        boss = bc
                        break
                boss_bit = np.int64(0)
                if boss >= 0:
                    boss_bit = np.int64(1) << boss
                has_boss = (legal & boss_bit) != 0
                other_trump = (legal & tmask & ~boss_bit) != 0
                if dkind == KIND_LEAD:
                    plain = (legal & ~tmask) != 0
                    # the x values of the legal cards: 1 (boss), 0 (another trump), -1 (no trump)
                    if int(has_boss) + int(other_trump) + int(plain) < 2:
                        dkind = -1
                    else:
                        x = (1 if c == boss else 0) if cs == trump else -1
                        pattern = (int(has_boss) << 2) | (int(other_trump) << 1) | int(plain)
                        xctx = (partnership * 8 + pattern) * 3 + stage
                else:
                    if not (has_boss and other_trump):
                        dkind = -1
                    else:
                        x = 1 if c == boss else -1
                        n_opts = min(n_legal, 4)
                        pw = 1 if side[win_seat] == side[s] else 0
                        xctx = 48 + ((partnership * 5 + n_opts) * 2 + pw) * 2 + last
            if ten_state >= 0:
                exc[pl, ten_state] += 1
            elif n_legal == 1:
                exc[pl, R_FORCED] += 1
            elif dkind < 0:
                exc[pl, R_NO_CHOICE] += 1
            if dkind < 0:
                continue
            early = 1 if 2 * k < n_tricks else 0
            opening = 1 if (k == 0 and pos == 0) else 0
            n_scored = 0
            for t in range(4):
                tc = tcard[t]
                if t == 3 and not ten_own:
                    continue
                if _has(gone, tc) or _has(h, tc) or (owner >= 0 and tc == tu):
                    continue  # visible to him
                # _candidates: where tc may be, from his view
                ts = tc // 13
                holder = -1
                for q in range(n):
                    if _has(dealt[q] & ~played, tc):
                        holder = q
                        break
                dec = n_d[t]
                q = n_c[t]
                any_true = False
                for o in range(n):
                    if o == s:
                        continue
                    known = np.int64(0)
                    if owner == o and tu >= 0 and not _has(played, tu):
                        known = tu_bit
                    u = count_bits(dealt[o] & ~played & ~known)
                    vo = (voids >> np.int64(4 * o)) & 15
                    if u == 0 or ((vo >> ts) & 1) != 0:
                        continue
                    nv = count_bits(vo & ~(np.int64(1) << ts))
                    if dkind == KIND_LEAD:
                        g = -1 if side[o] == side[s] else 1
                    else:
                        g = 0
                        for a in range(pos + 1, m):
                            if W[first + a, P_SEAT] == o:
                                g = 1
                    c_dec[t][q] = dec
                    c_seat[t][q] = o
                    c_u[t][q] = u
                    c_nv[t][q] = nv
                    c_g[t][q] = g
                    c_true[t][q] = 1 if o == holder else 0
                    any_true = any_true or o == holder
                    q += 1
                if n_aside > 0:
                    c_dec[t][q] = dec
                    c_seat[t][q] = -1
                    c_u[t][q] = n_aside
                    c_nv[t][q] = 0
                    c_g[t][q] = 0
                    c_true[t][q] = 1 if holder < 0 else 0
                    any_true = any_true or holder < 0
                    q += 1
                if not any_true:
                    continue  # no candidate holds it: the rows written are dropped
                n_c[t] = q
                d_deal[t][dec] = j
                d_order[t][dec] = order
                d_seat[t][dec] = s
                d_kind[t][dec] = dkind
                d_x[t][dec] = x
                d_xctx[t][dec] = xctx
                d_early[t][dec] = early
                d_opening[t][dec] = opening
                n_d[t] = dec + 1
                if t == 0:
                    n_scored += 1
            if ten_state < 0:
                exc[pl, R_SCORED if n_scored else R_NO_CAND] += 1
    return len(rows)


# ---------------------------------------------------------------- the driver

DEAL_REASONS = ("not_scotch_whist", "no_hands", "incomplete", "card_not_in_hand", "revoke_in_deal", "played_in_sets")
_PART_COLS = {"plays": P_COLS, "decisions": D_COLS, "cands": C_COLS}


def _first_seen(ids: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids >= 0 of `ids` (flattened, in order) in the order first met, and the map id -> rank in that
    order (size + 1 entries, the last -1 so that -1 maps to -1)."""
    remap = np.full(size + 1, -1, np.int64)
    seen = _first_seen_kernel(np.ascontiguousarray(ids).ravel(), remap)
    return seen, remap


@numba.njit(cache=True)
def _first_seen_kernel(flat, remap):
    seen = np.empty(len(remap), np.int64)
    k = 0
    for x in flat:
        if x >= 0 and remap[x] < 0:
            remap[x] = k
            seen[k] = x
            k += 1
    return seen[:k]


def _hashes(strings: list) -> np.ndarray:
    """`_str_hash` of each string, then 0 (an index of -1 reads it). Past a few strings, FNV-1a runs in numba over
    their UTF-8 bytes joined (`_fnv_kernel`, held equal to the spec by tests/test_marked_ten_columns.py): the
    per-byte Python loop took 0.3 s of each 150,000-deal part's counting, mostly game ids (issue 15)."""
    if len(strings) < 64:
        return np.array([_str_hash(x) for x in strings] + [0], np.uint64)
    return _fnv_utf8(StrColumn.of(strings, "strict"))


def _fnv_utf8(col: "StrColumn") -> np.ndarray:
    """FNV-1a of each string of a column (its UTF-8 buffer as it is), then 0."""
    out = np.zeros(len(col) + 1, np.uint64)
    _fnv_kernel(col.data, col.off, out)
    return out


@numba.njit(cache=True)
def _fnv_kernel(data, off, out):  # pragma: no cover - numba
    """out[i] = 64-bit FNV-1a of data[off[i]:off[i + 1]] (unsigned arithmetic, wrapping as `_str_hash` masks)."""
    prime = np.uint64(_FNV_PRIME)
    for i in range(len(off) - 1):
        h = np.uint64(_FNV_OFFSET)
        for j in range(off[i], off[i + 1]):
            h = (h ^ np.uint64(data[j])) * prime
        out[i] = h


class _Rows:
    """Growable output arrays of the kernel: per part and column, one array per target (trimmed in place at the
    end, so the rows are not copied once more)."""

    def __init__(self, caps: dict[str, int]):
        self.a = {part: {k: [np.empty(caps[part], COL_DTYPE.get(k, np.int8)) for _ in TARGETS] for k in cols}
                  for part, cols in _PART_COLS.items()}

    def grow(self, part: str, t: int, need: int) -> None:
        """Room for `need` rows of `part` for target t (half as much again at least, so that growing stays
        linear)."""
        cols = self.a[part]
        cap = len(next(iter(cols.values()))[t])
        if need <= cap:
            return
        new = max(need, cap + cap // 2 + 1024)
        for v in cols.values():
            w = np.empty(new, v[t].dtype)
            w[:cap] = v[t]
            v[t] = w

    def args(self) -> tuple:
        """The output columns for `_extract`: per part and column, a tuple of one array per target."""
        return tuple(tuple(self.a[part][k]) for part, cols in _PART_COLS.items() for k in cols)

    def trim(self, part: str, t: int, n: int) -> dict[str, np.ndarray]:
        out = {}
        for k, v in self.a[part].items():
            a = v[t]
            v[t] = np.empty(0, a.dtype)  # (drop the reference)
            a.resize(n, refcheck=False)  # shrinks in place
            out[k] = a
        return out


def count_table(cols: AuditColumns) -> MarkedTenCounts:
    """The counts of the table's deals (`MarkedTen.count`): `count_results(results)` of the same deals, array for
    array, with the walk in numba (`_extract`)."""
    c = MarkedTenCounts()
    D = len(cols)
    if D == 0:
        return _Builder(c).finish()
    # which deals are excluded, and why: `extract_deal`'s checks in its order
    su = setup_of(cols)
    is_sw = np.array([R.game == "scotch_whist" for R in cols.rulesets], bool)[cols.rset]
    n_rev = np.bincount(cols.rev_row, minlength=D)[:D]
    reason = np.full(D, -1, np.int64)
    todo = np.ones(D, bool)
    for code, bad in enumerate((~is_sw, su.why == 1, su.why == 2, su.why == 3, n_rev > 0, su.n_sets > 1)):
        reason[todo & bad] = code  # why: 1 + the index of `play_columns.EXCLUSIONS`, in `deal_exclusion`'s order
        todo &= ~bad
    rows = np.flatnonzero(todo)
    per = np.bincount(reason[reason >= 0], minlength=len(DEAL_REASONS))
    _ledger_of_table(cols, is_sw, c)
    c.excluded_deals = {DEAL_REASONS[k]: int(v) for k, v in enumerate(per) if v}

    # per deal: key, ids in the order the builder first meets them, points shares, source
    c.keys = _deal_keys(rows, cols.table, cols.game, cols.deal_no, cols.n, cols.seat_player, cols.dealer,
                        cols.turn_up, cols.play_card, cols.play_seat, cols.play_trick, cols.n_plays,
                        _hashes(cols.tables), _hashes(cols.game_ids), _hashes(cols.players))
    sp = cols.seat_player[rows]
    seen, remap = _first_seen(sp, len(cols.players))
    c.players = remap[sp].astype(np.int32)
    c.names = [cols.players[k] for k in seen.tolist()]
    seen, remap = _first_seen(cols.pack[rows], len(cols.packs))
    c.pack = remap[cols.pack[rows]].astype(np.int32)
    c.pack_names = [cols.packs[k] for k in seen.tolist()]
    seen, remap = _first_seen(cols.game[rows], len(cols.game_ids))
    c.game = remap[cols.game[rows]].astype(np.int32)
    c.games = [cols.game_ids[k] for k in seen.tolist()]
    c.deal_no = cols.deal_no[rows].astype(np.int64)
    c.side = cols.side_of[rows].astype(np.int8)
    pts = cols.points[rows].astype(np.float64)
    tot = pts.sum(1)
    side = cols.side_of[rows].astype(np.int64)
    mine = np.take_along_axis(pts, np.maximum(side, 0), 1)
    ok = (side >= 0) & (tot > 0)[:, None]
    share = np.zeros((len(rows), MAX_SEATS), np.float64)
    share[ok] = (mine / np.where(tot > 0, tot, 1.0)[:, None])[ok]
    c.share = share.astype(np.float32)
    paths = cols.paths
    c.source = [f"{paths[a]}:{b}" for a, b in zip(cols.file_index[rows].tolist(), cols.line[rows].tolist(),
                                                  strict=True)]
    for j in np.flatnonzero(np.isin(rows, np.fromiter(cols.source_of, np.int64, len(cols.source_of)))).tolist():
        c.source[j] = cols.source_of[int(rows[j])]
    seen, remap = _first_seen(cols.table[rows], len(cols.tables))
    c.table = remap[cols.table[rows]].astype(np.int32)
    c.tables = [cols.tables[k] for k in seen.tolist()]
    c.time = cols.time[rows].astype(np.int64)

    # the walk
    arrays = su.arrays(cols)
    total = int(cols.n_plays[rows].sum())
    out = _Rows({"plays": total // 2 + 4096, "decisions": total // 8 + 4096, "cands": total // 3 + 4096})
    n_p = np.zeros(4, np.int64)
    n_d = np.zeros(4, np.int64)
    n_c = np.zeros(4, np.int64)
    exc = np.zeros((len(cols.players) + 1, len(PLAY_REASONS)), np.int64)
    start = 0
    while True:
        start = _extract(start, rows, arrays, su.owner, su.pack, cols.turn_up, cols.side_of, cols.seat_player,
                         out.args(), n_p, n_d, n_c, exc)
        if start >= len(rows):
            break
        np_, n = int(cols.n_plays[rows[start]]), int(cols.n[rows[start]])
        for part, used, worst in (("plays", n_p, np_), ("decisions", n_d, np_), ("cands", n_c, np_ * n)):
            for t in range(len(TARGETS)):
                out.grow(part, t, int(used[t]) + worst)
    n_rows = {"plays": n_p, "decisions": n_d, "cands": n_c}
    c.targets = {t: {part: out.trim(part, ti, int(n_rows[part][ti])) for part in _PART_COLS}
                 for ti, t in enumerate(TARGETS)}
    c.excluded = {cols.players[p]: {PLAY_REASONS[k]: int(v) for k, v in enumerate(exc[p]) if v}
                  for p in np.flatnonzero(exc[:-1].sum(1)).tolist()}
    return c


def _ledger_of_table(cols: AuditColumns, is_sw: np.ndarray, c: MarkedTenCounts) -> None:
    """The score ledger of the table's Scotch Whist rows (`extract_deal`'s first step, row by row): game ids in
    the order first met, deal number (capped as the columns cap it), scored, points per side (0 padding), the
    rules' target and whether running totals are floored at zero."""
    lrows = np.flatnonzero(is_sw)
    seen, remap = _first_seen(cols.game[lrows], len(cols.game_ids))
    c.ledger_games = [cols.game_ids[k] for k in seen.tolist()]
    c.ledger_game = remap[cols.game[lrows]].astype(np.int32)
    c.ledger_deal_no = cols.deal_no[lrows].astype(np.int64)
    c.ledger_scored = cols.scored[lrows].astype(bool)
    pts = np.zeros((len(lrows), MAX_SEATS), np.int16)
    S = min(cols.points.shape[1], MAX_SEATS) if cols.points.ndim == 2 else 0
    pts[:, :S] = np.where(c.ledger_scored[:, None], cols.points[lrows, :S], 0)
    c.ledger_points = pts
    target = np.array([int(R.target) for R in cols.rulesets] + [0], np.int16)
    floor = np.array([getattr(R, "negative_scores", None) == "floor_zero" for R in cols.rulesets] + [False], bool)
    c.ledger_target = target[cols.rset[lrows]]
    c.ledger_floor = floor[cols.rset[lrows]]


# ---------------------------------------------------------------- the detector


SPEC = TestSpec(
    name='marked_ten',
    title='Players whose play follows the hidden Ten of trumps',
    what="Whether a player's leads and plays fit where the Ten of trumps really is better than anything they could "
         'legally know explains, over all their deals and over the deals where the game score made it worth it '
         '(a side near game, or their side far behind): the stronger of the two counts, corrected for having looked '
         'twice. Controls beside the score (unmarked cards, deals where they hold the Ten themselves, late against early '
         'decisions) separate a good card reader from a cheat.',
    unit='deals scored',
    unit_short='deals scored',
    event="played to the Ten's true place",
    cheat="knowing the Ten's place on a share of decisions",
    honest='an honest player',
    subject='player',
    games=('scotch_whist',),  # issue 16: n counts scotch whist deals only
    chart='score',
    control_words=(
        ('pooled', 'all their deals'),
        ('score_gated', 'deals where the game score mattered'),
        ('deal_sums_normal', 'deal by deal (a rougher check)'),
        ('hard_facts_null', 'only what the cards already played showed'),
        ('opening_leads_exact', 'opening leads only'),
        ('early', 'early in the play'),
        ('late', 'late in the play'),
        ('early_minus_late', 'early against late'),
        ('queen', 'Queen of trumps'),
        ('plain_ten', 'Ten of the next suit'),
        ('placebo', 'the trump Ace when they hold the Ten'),
        ('packs', 'pack'),
        ('pack_contrast', 'difference between packs'),
        ('field', 'among similar players'),
    ),
    section=6,
    cost=40,
    chart_controls=('queen', 'plain_ten', 'placebo'),
    sentence="{subject}'s play fitted the true place of the Ten of trumps with a score of {obs} over {over}"
             '{scope}; for an honest player, whatever they could legally know, about {exp}{z}; {pq}.',
    sentence_needs_n=False,
)


class MarkedTen:
    """Detector interface (`auditor.detectors.base`): count / merge / finalize. `count` keeps, per deal, the plays
    and decisions the test needs; `merge` concatenates them, so any split of the input by table gives the same
    result; `finalize` fits the field's model and scores every player.

    Spilling (issue 15): with `spill_dir` set (an attribute, `det.spill_dir = path`: it pickles with the detector,
    so a worker process or a Dask worker on the same filesystem spills there too), `count` writes each part's rows
    to .npy files in a new folder of `spill_dir` and returns counts that hold them memory-mapped
    (`spill_counts`); `merge` keeps spilled parts as a list (`MarkedTenParts`, nothing copied); `finalize` streams
    over the parts (`finalize_parts`), its working arrays in `spill_dir` too (or beside the parts' files). The
    caller removes `spill_dir` after the audit. Unset (None, the default): everything in memory, as before."""
    spec = SPEC

    name = NAME
    spill_dir: str | None = None  # a class default, so that an unset spill is not in `vars(det)` (the fingerprint)

    def __init__(self, fdr: float = 0.05, details: bool = True, folds: int = 5, min_deals: int = MIN_DEALS,
                 targets: Sequence[str] = TARGETS, gate_rule: str = "any", **_: Any):
        self.gate_rule = gate_rule
        self.fdr = fdr
        self.details = details
        self.folds = folds
        self.min_deals = min_deals
        self.targets = tuple(targets)

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> MarkedTenCounts:
        """The plays and decisions of the table's deals (`count_table`; the spec is `count_results`), spilled to
        `spill_dir` when it is set. `rng` and `facts` are not used."""
        c = count_table(table)
        return spill_counts(c, str(self.spill_dir)) if self.spill_dir is not None else c

    def merge(self, parts: Sequence[MarkedTenCounts | MarkedTenParts]) -> MarkedTenCounts | MarkedTenParts:
        return merge_parts(parts)

    def finalize(self, counts: MarkedTenCounts | MarkedTenParts,
                 rng: np.random.Generator | None = None) -> list[TestResult]:
        parts = counts.parts if isinstance(counts, MarkedTenParts) else [counts]
        return finalize_parts(parts, folds=self.folds, targets=self.targets, gate_rule=self.gate_rule,
                              min_deals=self.min_deals, details=self.details, work_dir=self._work_dir(parts),
                              helper=helpers_allowed())

    def _work_dir(self, parts: Sequence[MarkedTenCounts]) -> str | None:
        """Where `finalize` keeps its working arrays: `spill_dir`, else the folder the parts were spilled to (if
        they were), else nowhere (in memory)."""
        if self.spill_dir is not None:
            return str(self.spill_dir)
        for c in parts:
            path = _file_of(c.keys)
            if path is not None and os.path.isdir(os.path.dirname(os.path.dirname(path))):
                return os.path.dirname(os.path.dirname(path))
        return None


def run(results: Sequence[Any], folds: int = 5) -> list[TestResult]:
    """The test over these `DealResult`s (counted by the spec, `count_results`)."""
    return MarkedTen(folds=folds).finalize(count_results(results))


# ---------------------------------------------------------------- fitting and scoring


# ---------------------------------------------------------------- the game score before each deal

SCORE_RULE = ("the game score before the deal is known and a side is within 10 points of the target, or their side "
              "trails the leading other side by 10 or more")
GATED_SCOPE_TEXT = " where the game score mattered (a side near game or their side far behind)"
EARLY_MINUS_LATE_NOTE = "the early score minus the late score, scaled so that honest play gives about 0 ± 1"
SCORE_MARGIN = 10  # "the score matters": a side within this many points of the game target, or his side this far
# behind the leading other side


def pre_deal_scores(c: MarkedTenCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per deal of the counts (their order): (known, the game score of each side before the deal, the game's
    target), from the score ledger (every Scotch Whist deal of the input, kept or not).

    A game's deals are taken in deal-number order. The score before deal k is known when the ledger holds deals
    1 .. k - 1 of its game exactly once each, every one of them scored, and deal k itself once: the running total
    is then the sum of their points per side (`DealResult.points`, the Russian -10 included), as the chain adds
    them. A gap, a repeated deal number, an unscored deal (a record the replay could not score) or a game whose
    first deals are not in the input (a selection that starts mid-game) makes the score unknown from there to the
    game's end; so does, under `negative_scores = floor_zero`, a running total that went below zero (the chain
    floors it after the penalty alone, which the points of a whole deal cannot show). A deal of unknown score is
    never in the score-gated part. The ledger is merged by concatenation and read only here, in `finalize`: a
    game split across the partitions of the input (files, tables) gives the same scores as the game counted
    whole."""
    D = c.n_deals
    known = np.zeros(D, bool)
    before = np.zeros((D, MAX_SEATS), np.int64)
    target = np.zeros(D, np.int64)
    L = len(c.ledger_game)
    if L == 0 or D == 0:
        return known, before, target
    g = c.ledger_game.astype(np.int64)
    dn = np.minimum(c.ledger_deal_no, L + 1)  # a deal number past L can never be in sequence
    o = np.lexsort((dn, g))
    g, dn = g[o], dn[o]
    sc = c.ledger_scored[o]
    pts = c.ledger_points[o].astype(np.int64)
    idx = np.arange(L)
    gstart = np.maximum.accumulate(np.where(np.r_[True, g[1:] != g[:-1]], idx, 0))
    in_seq = dn == idx - gstart + 1  # deal k is the game's k-th row: no gap and no repeat up to it
    csum = np.cumsum(pts, axis=0) - pts  # exclusive prefix sums, then within the game
    before_l = csum - csum[gstart]
    broke = ~in_seq | ~sc | (c.ledger_floor[o] & ((before_l + pts) < 0).any(1))
    cb = np.cumsum(broke) - broke  # broken rows strictly before, globally, then within the game
    row_known = in_seq & (cb - cb[gstart] == 0)
    key = g * (L + 2) + dn  # sorted (o sorts by game then deal number)
    lg = {name: k for k, name in enumerate(c.ledger_games)}
    gmap = np.array([lg.get(name, -1) for name in c.games] + [-1], np.int64)
    kg = gmap[c.game]
    kkey = kg * (L + 2) + np.minimum(c.deal_no, L + 1)
    left = np.searchsorted(key, kkey, "left")
    right = np.searchsorted(key, kkey, "right")
    one = (right - left == 1) & (kg >= 0)
    j = np.where(one, left, 0)
    known = one & row_known[j]
    before = np.where(known[:, None], before_l[j], 0)
    target = np.where(known, c.ledger_target[o][j].astype(np.int64), 0)
    return known, before, target


def score_gate(c: MarkedTenCounts, rule: str = "any") -> np.ndarray:
    """Per deal of the counts and seat: the score "matters" for that seat's player before the deal (the rule fixed
    in advance, docs/decisions.md): the score is known (`pre_deal_scores`) and either some side is within
    SCORE_MARGIN points of the game target, or his side trails the leading other side by SCORE_MARGIN or more.
    (The simulator's score-gated cheat acts when his own side is near game or far behind: a subset.) `rule` "own":
    only his own side near game counts (the simulator's rule exactly), for the studies."""
    known, before, target = pre_deal_scores(c)
    D = c.n_deals
    side = c.side.astype(np.int64)
    seated = side >= 0
    n_sides = np.where(seated, side + 1, 0).max(1, initial=0) if D else np.zeros(0, np.int64)
    live = np.arange(MAX_SEATS)[None, :] < n_sides[:, None]  # the sides of each deal
    mine = np.take_along_axis(before, np.maximum(side, 0), 1)  # [D, seat]
    near: np.ndarray
    if rule == "own":
        near = mine >= (target - SCORE_MARGIN)[:, None]
    else:
        near = np.asarray((live & (before >= (target - SCORE_MARGIN)[:, None])).any(1))[:, None]
    # the leading other side of each seat: the best side, or the second best when his side is the best
    b = np.where(live, before, np.iinfo(np.int64).min)
    top = np.sort(b, axis=1)
    first, second = top[:, -1], top[:, -2]
    best_side = np.argmax(b, axis=1)
    lead_other = np.where(side == best_side[:, None], second[:, None], first[:, None])
    behind = lead_other - mine >= SCORE_MARGIN
    return known[:, None] & seated & (near | behind)


def max_of_two(p_all: float, p_sub: float, rho: float) -> float:
    """P(max(Z1, Z2) >= m) for (Z1, Z2) standard bivariate normal with correlation `rho`, m the larger of the two
    normal scores Phi^-1(1 - p): the one-sided p-value of the better of two tests whose statistics have that
    correlation under the null. Exact for normal statistics (Owen's T: P(max >= m) = Phi(-m) + 2 T(m, a), a =
    sqrt((1 - rho) / (1 + rho))); here each part's own (saddlepoint) p is turned into its normal score, so the
    marginals keep their tails and only the dependence is taken as normal. rho = 1 gives min(p), rho = 0 gives
    1 - (1 - min p)^2; between them it is at most 2 min(p) (Bonferroni)."""
    p = min(max(p_all, 0.0), 1.0), min(max(p_sub, 0.0), 1.0)
    lo = min(p)
    if lo <= 0.0:
        return 0.0
    if lo >= 1.0:
        return 1.0
    rho = min(max(rho, 0.0), 1.0)
    m = -float(ndtri(lo))
    a = math.sqrt((1.0 - rho) / (1.0 + rho))
    return float(min(1.0, max(lo, float(ndtr(-m)) + 2.0 * float(owens_t(m, a)))))


def gated_test(main: "TargetScores", sel: np.ndarray, gsel: np.ndarray, phi: float) -> dict:
    """The primary test of a player: the pooled test over his scored decisions `sel` and the same test restricted
    to the decisions of the deals where the score mattered (`gsel`, a subset), combined as the better of the two
    with the exact correction for their correlation (`max_of_two`). Under the null the deal sums are martingale
    differences, so the gated sum's covariance with the pooled sum is its own variance and their correlation
    sqrt(V_gated / V_pooled) (the variance guard phi widens both alike). Returns the pooled and gated tests, rho,
    the combined p and which part gave the larger normal score ("pooled" on ties and when nothing is gated)."""
    b_all = main.blocks(sel)
    pooled = b_all.test(phi)
    v_all = b_all.moments()[2]
    if len(gsel):
        b_g = main.blocks(gsel)
        gated = b_g.test(phi)
        v_g = b_g.moments()[2]
    else:
        gated = Blocks(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
                       np.zeros(0, np.int64)).test(phi)
        v_g = 0.0
    if v_g <= 0.0 or v_all <= 0.0:
        return {"pooled": pooled, "gated": gated, "rho": 1.0, "p": pooled["p"], "part": "pooled"}
    rho = math.sqrt(min(1.0, v_g / v_all))
    part = "gated" if gated["p"] < pooled["p"] else "pooled"
    return {"pooled": pooled, "gated": gated, "rho": rho, "p": max_of_two(pooled["p"], gated["p"], rho),
            "part": part}


def _fold_of(player: str, folds: int) -> int:
    return zlib.crc32(player.encode()) % folds if folds > 1 else 0


@dataclass
class TargetArrays:
    """One target's plays and decision rows as arrays. Decisions (and their candidate rows, grouped by decision) in
    key order of their deals, then play order; plays in the counts' deal order, then play order. Integer columns
    keep the counts' small dtypes (a million deals: tens of millions of rows); deal and player ids are int64."""

    # plays: the holder model's rows
    p_deal: np.ndarray  # the deal's index in the counts (not its key rank: the plays are read deal by deal)
    p_order: np.ndarray
    p_seat: np.ndarray
    p_cell: np.ndarray
    p_holds: np.ndarray
    p_off: np.ndarray  # the plays of the counts' deal d: p_off[d]:p_off[d + 1]
    seat_player: np.ndarray  # per deal of the counts and seat (deal * MAX_SEATS + seat): the player's sorted id
    # decisions
    d_deal: np.ndarray  # the deal's place in key order
    d_src: np.ndarray  # the deal's index in the counts
    d_order: np.ndarray
    d_seat: np.ndarray
    d_player: np.ndarray
    d_kind: np.ndarray
    d_x: np.ndarray
    d_xctx: np.ndarray
    d_early: np.ndarray
    d_opening: np.ndarray
    # candidate rows (grouped by decision, in order)
    c_dec: np.ndarray
    c_seat: np.ndarray
    c_u: np.ndarray
    c_nv: np.ndarray
    c_g: np.ndarray
    c_true: np.ndarray


LEDGER_FIELDS = ("ledger_game", "ledger_deal_no", "ledger_scored", "ledger_points", "ledger_target", "ledger_floor")


def merge_counts(parts: Sequence[MarkedTenCounts]) -> MarkedTenCounts:
    """Exact merge: concatenation with deals, decisions, players and packs re-indexed."""
    out = MarkedTenCounts()
    names: dict[str, int] = {}
    packs: dict[str, int] = {}
    keys, players, pack, share = [], [], [], []
    games: dict[str, int] = {}
    game, deal_no, source = [], [], []
    tables: dict[str, int] = {}
    table: list[np.ndarray] = []
    time: list[np.ndarray] = []
    side: list[np.ndarray] = []
    lgames: dict[str, int] = {}
    led: dict[str, list[np.ndarray]] = {k: [] for k in LEDGER_FIELDS}
    tcols: dict[str, dict[str, dict[str, list]]] = {}
    n_deals = 0
    n_dec: dict[str, int] = {}
    for p in parts:
        pmap = np.array([names.setdefault(nm, len(names)) for nm in p.names] + [-1], np.int32)
        kmap = np.array([packs.setdefault(nm, len(packs)) for nm in p.pack_names] + [-1], np.int32)
        keys.append(p.keys)
        gmap = np.array([games.setdefault(g, len(games)) for g in p.games] + [-1], np.int32)
        game.append(gmap[p.game])
        deal_no.append(p.deal_no)
        source += p.source
        tmap = np.array([tables.setdefault(x, len(tables)) for x in p.tables] + [-1], np.int32)
        table.append(tmap[p.table])
        time.append(p.time)
        side.append(p.side)
        lmap = np.array([lgames.setdefault(g, len(lgames)) for g in p.ledger_games] + [-1], np.int32)
        for k in LEDGER_FIELDS:
            v = getattr(p, k)
            led[k].append(lmap[v] if k == "ledger_game" else v)
        players.append(pmap[p.players])  # -1 indexes the trailing -1
        pack.append(kmap[p.pack])
        share.append(p.share)
        for t, tc in p.targets.items():
            dst = tcols.setdefault(t, {"plays": {k: [] for k in P_COLS}, "decisions": {k: [] for k in D_COLS},
                                       "cands": {k: [] for k in C_COLS}})
            for part, cols in tc.items():
                for k, v in cols.items():
                    if k == "deal":
                        v = v.astype(np.int64) + n_deals
                    elif k == "dec":
                        v = v.astype(np.int64) + n_dec.get(t, 0)
                    dst[part][k].append(v)
            n_dec[t] = n_dec.get(t, 0) + len(tc["decisions"]["deal"])
        n_deals += p.n_deals
        for k, n in p.excluded_deals.items():
            _bump(out.excluded_deals, k, n)
        for pl, dct in p.excluded.items():
            e = out.excluded.setdefault(pl, {})
            for k, n in dct.items():
                _bump(e, k, n)
    if parts:
        out.keys = np.concatenate(keys)
        out.players = np.concatenate(players).astype(np.int32)
        out.pack = np.concatenate(pack).astype(np.int32)
        out.share = np.concatenate(share)
        out.game = np.concatenate(game).astype(np.int32)
        out.deal_no = np.concatenate(deal_no).astype(np.int64)
        out.side = np.concatenate(side).astype(np.int8)
        out.table = np.concatenate(table).astype(np.int32)
        out.time = np.concatenate(time).astype(np.int64)
        for k in LEDGER_FIELDS:
            setattr(out, k, np.concatenate(led[k]).astype(getattr(out, k).dtype))
    out.ledger_games = sorted(lgames, key=lgames.__getitem__)
    out.games = sorted(games, key=games.__getitem__)
    out.tables = sorted(tables, key=tables.__getitem__)
    out.source = source
    out.names = sorted(names, key=names.__getitem__)
    out.pack_names = sorted(packs, key=packs.__getitem__)
    out.targets = {t: {part: {k: (np.concatenate(v) if v else np.zeros(0, COL_DTYPE.get(k, np.int8)))
                              for k, v in cols.items()} for part, cols in tc.items()} for t, tc in tcols.items()}
    return out


def _arrays(c: MarkedTenCounts, target: str, rank: np.ndarray, pid: np.ndarray,
            seat_player: np.ndarray | None = None) -> TargetArrays:
    """One target's rows with deals renumbered by `rank` (their place in key order) and players by `pid` (local
    id -> sorted name index); decisions (and their candidates) in deal order then play order; plays in the counts'
    deal order then play order.

    `count` and `merge` write a deal's plays and decisions together and in play order, and a decision's candidate
    rows right after it; then ordering the decisions is ordering whole deals by rank, a gather of segments (no sort
    of the rows). Counts in any other order are sorted first (`_sorted_rows`)."""
    n_deals = len(c.keys)
    tc = c.targets.get(target)
    if tc is None:
        z8 = np.zeros(0, np.int8)
        z = np.zeros(0, np.int64)
        tc = {"plays": {k: z8 for k in P_COLS}, "decisions": {k: z8 for k in D_COLS}, "cands": {k: z8 for k in C_COLS}}
        tc["plays"]["deal"] = tc["decisions"]["deal"] = tc["cands"]["dec"] = z
    P, D, C = _sorted_rows(tc["plays"], tc["decisions"], tc["cands"])
    p_off = np.concatenate([[0], np.cumsum(np.bincount(P["deal"], minlength=n_deals))])
    d_off = np.concatenate([[0], np.cumsum(np.bincount(D["deal"], minlength=n_deals))])
    c_off = np.concatenate([[0], np.cumsum(np.bincount(C["dec"], minlength=len(D["deal"])))])
    by_rank = np.empty(n_deals, np.int64)
    by_rank[rank] = np.arange(n_deals)
    perm, _ = segment_rows(d_off, by_rank)  # decisions: deal by deal in key order, each in play order
    crow, c_dec = segment_rows(c_off, perm)  # their candidate rows, decision by decision
    d_src = D["deal"][perm].astype(np.int64)
    d_seat = D["seat"][perm]
    if seat_player is None:
        seat_player = pid[c.players].reshape(-1)  # deal * MAX_SEATS + seat -> sorted player id
    return TargetArrays(
        p_deal=P["deal"], p_order=P["order"], p_seat=P["seat"], p_cell=P["cell"], p_holds=P["holds"], p_off=p_off,
        seat_player=seat_player,
        d_deal=rank[d_src], d_src=d_src, d_order=D["order"][perm], d_seat=d_seat,
        d_player=seat_player[d_src * MAX_SEATS + d_seat], d_kind=D["kind"][perm], d_x=D["x"][perm],
        d_xctx=D["xctx"][perm], d_early=D["early"][perm], d_opening=D["opening"][perm],
        c_dec=c_dec, c_seat=C["seat"][crow], c_u=C["u"][crow], c_nv=C["nv"][crow], c_g=C["g"][crow],
        c_true=C["true"][crow])


def _sorted_rows(P: dict, D: dict, C: dict) -> tuple[dict, dict, dict]:
    """The plays sorted by (deal, play order), the decisions too, and the candidate rows by decision (stable), each
    only if not already so; decisions renumbered in the candidate rows."""
    def ordered(deal: np.ndarray, order: np.ndarray) -> bool:
        key = deal.astype(np.int64) * 4096 + order
        return bool(np.all(key[1:] > key[:-1]))

    if not ordered(P["deal"], P["order"]):
        o = np.lexsort((P["order"], P["deal"]))
        P = {k: v[o] for k, v in P.items()}
    if not ordered(D["deal"], D["order"]):
        o = np.lexsort((D["order"], D["deal"]))
        inv = np.empty(len(o), np.int64)
        inv[o] = np.arange(len(o))
        D = {k: v[o] for k, v in D.items()}
        C = dict(C, dec=inv[C["dec"]])
    if not np.all(C["dec"][1:] >= C["dec"][:-1]):
        o = np.argsort(C["dec"], kind="stable")
        C = {k: v[o] for k, v in C.items()}
    return P, D, C


def llr_table(cells: np.ndarray, holds: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Log likelihood ratio of each (context, outcome) cell: log P(outcome | context, holds the card) -
    log P(outcome | context, does not), from binned field frequencies with add-alpha smoothing."""
    n1 = np.bincount(cells[holds == 1], minlength=N_CTX * N_OUT)
    n0 = np.bincount(cells[holds == 0], minlength=N_CTX * N_OUT)
    return llr_from_counts(n1, n0, alpha)


def llr_from_counts(n1: np.ndarray, n0: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """`llr_table` from the plays' counts per cell, of holders (`n1`) and of the others (`n0`)."""
    n1 = n1.reshape(N_CTX, N_OUT).astype(float)
    n0 = n0.reshape(N_CTX, N_OUT).astype(float)
    p1 = (n1 + alpha) / (n1.sum(1, keepdims=True) + alpha * N_OUT)
    p0 = (n0 + alpha) / (n0.sum(1, keepdims=True) + alpha * N_OUT)
    return np.clip(np.log(p1) - np.log(p0), -LLR_CLIP, LLR_CLIP).ravel()


def _seat_llr_sums(A: TargetArrays, llr: np.ndarray, c_start: np.ndarray | None = None,
                   c_end: np.ndarray | None = None, out: np.ndarray | None = None,
                   ranges: tuple | None = None) -> np.ndarray:
    """For each candidate row, the sum of the LLRs of that seat's plays earlier in the deal (the cards aside: 0),
    clipped to +-3 LLR_CLIP (the feature's range). `ranges`: `marked_ten_fit.play_ranges` of A, if known."""
    if c_start is None:
        c_start, c_end = _dec_bounds(A)
    if out is None:
        out = np.zeros(len(A.c_dec))
    if len(A.c_dec) == 0:
        return out
    lo, hi, first = ranges if ranges is not None else play_ranges(A.p_off, A.p_order, A.d_src, A.d_order)
    return seat_llr_sums(np.asarray(llr, float), lo, hi, first, A.p_seat, A.p_cell, c_start, c_end, A.c_seat,
                         3 * LLR_CLIP, out)


def _dec_bounds(A: TargetArrays) -> tuple[np.ndarray, np.ndarray]:
    """Each decision's candidate rows, c_start:c_end (the rows are grouped by decision, in order)."""
    n = np.bincount(A.c_dec, minlength=len(A.d_deal))
    end = np.cumsum(n)
    return end - n, end


def _design(A: TargetArrays) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's design over the candidate rows is x = (log unknown cards, the seat's LLR sum (clipped), one
    plain void shown, two or more, aside); here its columns but the LLR sum, compactly: log unknown cards, and the
    three flags as bits of a code (1, 2, 4)."""
    log_u = np.log(np.maximum(np.arange(int(A.c_u.max(initial=0)) + 2), 1).astype(float))
    return design(A.c_u, A.c_nv, A.c_seat, log_u)


def _group_softmax(eta: np.ndarray, grp: np.ndarray, n_groups: int) -> np.ndarray:
    mx = np.full(n_groups, -np.inf)
    np.maximum.at(mx, grp, eta)
    e = np.exp(eta - mx[grp])
    den = np.bincount(grp, weights=e, minlength=n_groups)
    return e / den[grp]


def fit_clogit(X: np.ndarray, grp: np.ndarray, chosen: np.ndarray, n_groups: int, ridge: float = 1.0,
               init: np.ndarray | None = None, iters: int = 30) -> np.ndarray:
    """Conditional logit (one chosen row per group) by Newton's method with a small ridge towards `init`
    (`marked_ten_fit.newton`, `clogit_pass`)."""
    k = X.shape[1]
    beta0 = np.zeros(k) if init is None else np.asarray(init, float).copy()
    if len(X) == 0:
        return beta0
    o = np.argsort(grp, kind="stable")  # the groups' rows together (the likelihood does not see their order)
    n = np.bincount(grp, minlength=n_groups)
    end = np.cumsum(n)
    Xo = np.ascontiguousarray(X[o], dtype=float)
    cho = np.asarray(chosen)[o] == 1
    return newton(lambda b, h: clogit_pass(b, Xo, cho, end - n, end, h), beta0, beta0, ridge, iters)[0]


@dataclass
class Blocks:
    """Independent blocks of a randomisation test: per block the statistic's value for every place the card may be
    (`V`), their probabilities (`P`) and which is the truth (`true`). Rows are grouped by block (`grp`)."""

    deal: np.ndarray  # deal index per block
    grp: np.ndarray  # block index per row
    V: np.ndarray
    P: np.ndarray
    true: np.ndarray  # 0/1 per row

    def __len__(self) -> int:
        return len(self.deal)

    def select(self, keep_blocks: np.ndarray) -> "Blocks":
        rows = keep_blocks[self.grp]
        remap = np.cumsum(keep_blocks) - 1
        return Blocks(self.deal[keep_blocks], remap[self.grp[rows]], self.V[rows], self.P[rows], self.true[rows])

    def moments(self) -> tuple[float, float, float]:
        """(observed sum, null mean, null variance)."""
        nb = len(self)
        t = float((self.V * self.true).sum())
        mean_b = np.bincount(self.grp, weights=self.P * self.V, minlength=nb)
        var_b = np.bincount(self.grp, weights=self.P * self.V ** 2, minlength=nb) - mean_b ** 2
        return t, float(mean_b.sum()), float(max(var_b.sum(), 0.0))

    def test(self, phi: float = 1.0) -> dict:
        """Observed sum, null mean, z and the one-sided saddlepoint p-value. `phi` >= 1 widens the null around its
        mean (the deal-level variance guard)."""
        if len(self) == 0:
            return {"deals": 0, "observed": 0.0, "expected": 0.0, "z": 0.0, "p": 1.0, "phi": 1.0}
        t, mean, var = self.moments()
        sd = math.sqrt(var)
        # a variance that is 0 up to the cancellation of E[V^2] - mean^2 (a few 1e-17, as the parts' floats happened
        # to add) is 0: z would be noise over noise, and differ with the split of the input
        z = (t - mean) / (sd * math.sqrt(phi)) if sd > 1e-6 else 0.0
        t_adj = mean + (t - mean) / math.sqrt(phi)
        p = saddlepoint_sf(t_adj, self.V, self.P, self.grp, len(self))
        return {"deals": int(len(_deal_index(self.deal)[0])), "observed": t, "expected": mean, "z": float(z),
                "p": float(p), "phi": float(phi)}


def saddlepoint_sf(t: float, V: np.ndarray, P: np.ndarray, grp: np.ndarray, nb: int) -> float:
    """P(sum over blocks of X_b >= t), X_b independent, X_b = V[row] with probability P[row] for the rows of block
    b: the Lugannani-Rice saddlepoint approximation (relative accuracy far into the tail), normal near the mean,
    exact at the top of the support. Rows of probability 0 carry no mass and are dropped.

    Near the mean the formula divides by the small w and u, so they are computed to full relative precision: on
    centred values (each block's null mean subtracted, and t by their sum), each block's cumulant generating function
    summed without cancellation (`marked_ten_fit.cgf`), and the saddlepoint polished by one more Newton step once
    K'(s) is within 1e-9 sd of t (u = s sqrt(K''(s)) would otherwise carry the stopping point's error, relative
    1e-9 / z)."""
    keep = P > 0
    if not keep.all():
        V, P, grp = V[keep], P[keep], grp[keep]
    V = np.ascontiguousarray(V, dtype=float)
    grp = np.ascontiguousarray(grp, dtype=np.int64)
    P = P / np.bincount(grp, weights=P, minlength=nb)[grp]
    exact = _exact_sf_short(t, V, P, grp, nb)
    if exact is not None:
        return exact
    vmax_b = group_max(V, grp, nb)
    tmax = float(vmax_b.sum())
    spread = float(np.abs(V).max()) if len(V) else 0.0
    if t >= tmax - 1e-9 * max(1.0, spread):
        at_max = np.bincount(grp, weights=P * (V >= vmax_b[grp] - 1e-12), minlength=nb)
        return float(np.exp(np.log(np.maximum(at_max, 1e-300)).sum()))
    mu = np.bincount(grp, weights=P * V, minlength=nb)
    V = V - mu[grp]
    t = t - float(mu.sum())
    vhi = group_max(V, grp, nb)
    vlo = -group_max(-V, grp, nb)
    lin = np.bincount(grp, weights=P * V, minlength=nb)

    def cgf(s: float) -> tuple[float, float, float]:
        return block_cgf(float(s), V, P, grp, nb, vlo, vhi, lin)

    _, mean, var = cgf(0.0)
    if var <= 1e-18:
        return 1.0 if t <= mean + 1e-12 else 0.0
    sd = math.sqrt(var)
    if abs(t - mean) < 1e-3 * sd:
        return float(ndtr(-(t - mean) / sd))
    # K'(s) = t: Newton steps kept inside a bracket that bisection narrows
    lo, hi = (0.0, math.inf) if t > mean else (-math.inf, 0.0)
    s = (t - mean) / var
    for _ in range(200):
        K, k1, k2 = cgf(s)
        if abs(k1 - t) <= 1e-9 * max(sd, 1e-12):
            if k2 > 0:
                s += (t - k1) / k2
            break
        if k1 < t:
            lo = s
        else:
            hi = s
        s_new = s + (t - k1) / max(k2, 1e-300)
        if not lo < s_new < hi:
            if math.isinf(hi):
                s_new = 2 * s if s > 0 else 1.0 / sd
            elif math.isinf(lo):
                s_new = 2 * s if s < 0 else -1.0 / sd
            else:
                s_new = 0.5 * (lo + hi)
        s = s_new
    K, k1, k2 = cgf(s)
    w2 = 2.0 * (s * t - K)
    if w2 <= 0 or k2 <= 0:
        return float(ndtr(-(t - mean) / sd))
    w = math.copysign(math.sqrt(w2), s)
    u = s * math.sqrt(k2)
    if abs(w) < 1e-4 or abs(u) < 1e-8:
        return float(ndtr(-(t - mean) / sd))
    phi = math.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
    p = float(ndtr(-w)) + phi * (1.0 / u - 1.0 / w)
    if t < mean:
        # Below the null mean the result points away from cheating, and there the formula (a lower-tail
        # approximation read as 1 - F) can leave [0, 1] for a short, lumpy sum near its minimum: a sum far below
        # its mean was read as p = 0, a strong flag on an honest player of 14 deals. The one-sided p is taken at
        # least the normal tail there (>= 1/2): conservative, and never a flag.
        p = max(p, float(ndtr(-(t - mean) / sd)))
    return float(min(1.0, max(p, 0.0)))


EXACT_STATES = 1 << 16  # a sum of blocks with at most this many outcomes is summed exactly


def _exact_sf_short(t: float, V: np.ndarray, P: np.ndarray, grp: np.ndarray, nb: int) -> float | None:
    """P(sum >= t) by enumerating every outcome when the blocks have at most EXACT_STATES outcomes together (None
    otherwise). A short, lumpy sum is where the saddlepoint is poorest: measured on random sums of up to five blocks
    of two or three values, it gave a quarter of the exact tail at worst (anti-conservative at the atoms), while
    the enumeration costs at most 65,536 sums."""
    sizes = np.bincount(grp, minlength=nb)
    # the number of outcomes as a sum of logs: their product overflows a float for a long sum (a numpy warning)
    if nb == 0 or (sizes.min() > 0 and float(np.log(sizes.astype(float)).sum()) > math.log(EXACT_STATES)):
        return None
    order = np.argsort(grp, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)))
    vals = np.zeros(1)
    probs = np.ones(1)
    for b in range(nb):
        rows = order[starts[b]:starts[b + 1]]
        if len(rows) == 0:
            continue
        vals = (vals[:, None] + V[rows][None, :]).ravel()
        probs = (probs[:, None] * P[rows][None, :]).ravel()
    spread = float(np.abs(V).max()) if len(V) else 0.0
    tol = 1e-9 * max(1.0, spread) * max(1, nb)
    return float(min(1.0, probs[vals >= t - tol].sum()))


def blocks_mc(b: Blocks, rng: np.random.Generator, draws: int = 20000) -> float:
    """Monte-Carlo p-value of the same randomisation test (validates the saddlepoint)."""
    nb = len(b)
    t = float((b.V * b.true).sum())
    total = np.zeros(draws)
    starts = np.searchsorted(b.grp, np.arange(nb))
    ends = np.searchsorted(b.grp, np.arange(nb), side="right")
    for k in range(nb):
        v = b.V[starts[k]:ends[k]]
        p = b.P[starts[k]:ends[k]]
        total += v[rng.choice(len(v), size=draws, p=p / p.sum())]
    return float((1 + np.sum(total >= t - 1e-12)) / (draws + 1))


def _deal_index(deals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(deals, return_inverse=True)`, without the sort when `deals` is sorted (a player's decisions are
    in deal order)."""
    if len(deals) == 0 or np.any(deals[1:] < deals[:-1]):
        u, inv = np.unique(deals, return_inverse=True)
        return u, inv.reshape(-1)
    new = np.concatenate([[True], deals[1:] != deals[:-1]])
    return deals[new], np.cumsum(new) - 1


@dataclass
class TargetScores:
    """One target's scored decisions for every player: the arrays the tests are built from."""

    A: TargetArrays | PlayerArrays
    w: np.ndarray  # per decision: x - c
    p_soft: np.ndarray  # per candidate row: posterior fitted on the field (other players' folds)
    p_hard: np.ndarray  # per candidate row: unknown cards and voids only
    G_soft: np.ndarray  # per decision: posterior mean of g
    G_hard: np.ndarray
    c_start: np.ndarray
    c_end: np.ndarray
    by_player: dict[int, np.ndarray]  # player -> decision indexes sorted by deal then play order
    diag: dict

    def blocks(self, sel: np.ndarray, hard: bool = False) -> Blocks:
        """Every decision of `sel` its own block, with the posterior at that decision (places where g is the same
        merged: `marked_ten_fit.decision_blocks`)."""
        A = self.A
        if len(sel) == 0:
            z = np.zeros(0)
            return Blocks(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, np.zeros(0, np.int64))
        grp, V, P, true = decision_blocks(np.asarray(sel, np.int64), self.c_start, self.c_end, self.w, A.c_g,
                                          A.c_true, self.p_hard if hard else self.p_soft)
        return Blocks(A.d_deal[sel], grp, V, P, true)

    def dec_moments(self, hard: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Per decision, g at the card's true place and the posterior variance of g (computed once, over every
        player's decisions)."""
        key = "dec_moments_hard" if hard else "dec_moments"
        got = self.diag.get(key)
        if got is None:
            A = self.A
            G = self.G_hard if hard else self.G_soft
            P = self.p_hard if hard else self.p_soft
            gtrue = np.bincount(A.c_dec, weights=A.c_g * A.c_true, minlength=len(A.d_deal))
            dev2 = np.bincount(A.c_dec, weights=P * (A.c_g - G[A.c_dec]) ** 2, minlength=len(A.d_deal))
            got = self.diag[key] = (gtrue, dev2)
        return got

    def deal_sums(self, sel: np.ndarray, hard: bool = False) -> tuple[np.ndarray, float]:
        """Per deal, the sum of the decision scores (x - c)(g(true) - E g), and the model variance of their sum."""
        A = self.A
        G = self.G_hard if hard else self.G_soft
        gtrue, dev2 = self.dec_moments(hard)
        inc = self.w[sel] * (gtrue[sel] - G[sel])
        S = np.bincount(_deal_index(A.d_deal[sel])[1], weights=inc)
        return S, float((self.w[sel] ** 2 * dev2[sel]).sum())

    def field_variance(self, hard: bool = False) -> dict[int, tuple[float, float]]:
        """Per player: (sum of squared deal sums, model variance of their total)."""
        out = {}
        for pl, sel in self.by_player.items():
            S, vm = self.deal_sums(sel, hard)
            out[pl] = (float((S ** 2).sum()), vm)
        return out

    def phi(self, pl: int, hard: bool = False) -> float:
        """The deal-level variance guard for player `pl`: max(1, the field's ratio of the empirical variance of the
        deal sums to the model's), the field taken without `pl` (a cheater's own deals, whose decisions share the
        Ten's place, must not widen his null)."""
        key = "fv_hard" if hard else "fv_soft"
        fv = self.diag.get(key)
        if fv is None:
            fv = self.diag[key] = self.field_variance(hard)
            self.diag[key + "_tot"] = (sum(a for a, _ in fv.values()), sum(b for _, b in fv.values()))
        ea, mb = self.diag[key + "_tot"]
        a, b = fv.get(pl, (0.0, 0.0))
        if mb - b <= 0:
            return 1.0
        return max(1.0, (ea - a) / (mb - b))

    def test(self, sel: np.ndarray, hard: bool = False, phi: float = 1.0) -> dict:
        """The test of the decisions `sel`: sequential randomisation blocks, saddlepoint p, null widened by the
        variance guard `phi`."""
        return self.blocks(sel, hard).test(phi)


def score_target(A: TargetArrays, n_players: int, fold_of: np.ndarray, folds: int,
                 center: np.ndarray | None = None) -> TargetScores:
    """Fit the holder model and the posterior fold by fold (a player's decisions are scored by the model fitted on
    the other folds) and return the scored decisions. `center`: per decision, the c_t subtracted from x.

    Per fold: the holder model's counts are the whole field's minus the fold's own (the same integers as counting
    the other folds' plays), the seat LLR sums one pass over the deals (`marked_ten_fit.seat_llr_sums`), the
    conditional logit fitted by Newton's method over the other folds' decisions (`marked_ten_fit.clogit_pass5`;
    started from the previous fold's fit: the same optimum, the fits of folds being close) and the posterior
    computed for the fold's own decisions."""
    n_dec = len(A.d_deal)
    diag: dict = {"decisions": int(n_dec), "fits": []}
    p_soft = np.zeros(len(A.c_dec))
    c_start, c_end = _dec_bounds(A)
    dec_fold = fold_of[A.d_player] if n_dec else np.zeros(0, np.int64)
    nf = max(folds, 1)
    cnt = holder_counts(A.p_deal, A.p_seat, A.p_cell, A.p_holds, A.seat_player, MAX_SEATS, fold_of,
                        nf if folds > 1 else 1, N_CTX * N_OUT)
    total = cnt.sum(0)
    x0, code = _design(A)
    c_pos = chosen_rows(c_start, c_end, A.c_true == 1)
    ranges = play_ranges(A.p_off, A.p_order, A.d_src, A.d_order)
    s = np.zeros(len(A.c_dec))
    init = np.array([1.0, 0.5, 0.0, 0.0, 0.0])
    start = init
    for k in range(nf):
        if folds > 1:
            tr_d, te_d = dec_fold != k, dec_fold == k
            n1, n0 = total[1] - cnt[k, 1], total[0] - cnt[k, 0]
        else:
            tr_d = te_d = np.ones(n_dec, bool)
            n1, n0 = total[1], total[0]
        if not te_d.any():
            continue
        _seat_llr_sums(A, llr_from_counts(n1, n0), c_start, c_end, s, ranges)
        beta = init.copy()
        if tr_d.any():
            beta, ok = newton(lambda b, h, tr=tr_d: clogit_pass5(b, x0, s, code, c_pos, c_start, c_end, tr, h),
                              init, start, 1.0, 30)
            start = beta if ok else init
        diag["fits"].append([round(float(b), 4) for b in beta])
        clogit_probs5(beta, x0, s, code, c_start, c_end, te_d, p_soft)
    p_hard, G_soft, G_hard, gtrue, dev_soft, dev_hard = decision_sums(c_start, c_end, A.c_u, A.c_g, A.c_true, p_soft)
    diag["dec_moments"], diag["dec_moments_hard"] = (gtrue, dev_soft), (gtrue, dev_hard)
    w = A.d_x.astype(float) - (center if center is not None else 0.0)
    # decisions are in deal then play order: grouping them by player (stably) keeps that order within a player
    order = np.argsort(A.d_player, kind="stable")
    bounds = np.searchsorted(A.d_player[order], np.arange(n_players + 1))
    by_player = {pl: order[bounds[pl]:bounds[pl + 1]] for pl in range(n_players) if bounds[pl + 1] > bounds[pl]}
    return TargetScores(A, w, p_soft, p_hard, G_soft, G_hard, c_start, c_end, by_player, diag)


def last_decision_crt(ts: TargetScores, sel: np.ndarray) -> Blocks:
    """The alternative design: one block per deal, the card's place redrawn from the posterior at the player's last
    scored decision of the deal (a conditional randomisation test of the whole deal). Measured in
    `auditor.calibrate_play`: valid but conservative (the posterior at the last decision carries the model's
    errors on everything played since the earlier decisions), so it is not the primary statistic."""
    A = ts.A
    deals: list[int] = []
    grp: list[int] = []
    V: list[float] = []
    Pl: list[float] = []
    tr: list[int] = []
    if len(sel):
        dd = A.d_deal[sel]
        cuts = np.nonzero(np.diff(dd))[0] + 1
        for part in np.split(sel, cuts):
            last = part[-1]
            a, b = ts.c_start[last], ts.c_end[last]
            seats = A.c_seat[a:b].tolist()
            vals = np.zeros(b - a)
            for t in part:
                gmap = dict(zip(A.c_seat[ts.c_start[t]:ts.c_end[t]].tolist(),
                                A.c_g[ts.c_start[t]:ts.c_end[t]].tolist(), strict=True))
                for k, j in enumerate(seats):
                    vals[k] += ts.w[t] * gmap.get(j, 0)
            blk = len(deals)
            deals.append(int(A.d_deal[last]))
            grp += [blk] * (b - a)
            V += vals.tolist()
            Pl += ts.p_soft[a:b].tolist()
            tr += A.c_true[a:b].tolist()
    return Blocks(np.asarray(deals, np.int64), np.asarray(grp, np.int64), np.asarray(V, float),
                  np.asarray(Pl, float), np.asarray(tr, np.int64))


def znorm(S: np.ndarray) -> tuple[float, float]:
    """Self-normalised sum Z = sum S / sqrt(sum S^2) and its one-sided p-value from N(0, 1)."""
    ss = float((S * S).sum())
    if ss <= 0:
        return 0.0, 1.0
    z = float(S.sum() / math.sqrt(ss))
    return z, float(ndtr(-z))


def score_all(counts: MarkedTenCounts, folds: int = 5, targets: Sequence[str] = TARGETS, gate_rule: str = "any") -> dict:
    order = np.argsort(counts.keys, kind="stable")  # equal keys: identical deals
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    players = sorted(counts.names)
    where = {p: i for i, p in enumerate(players)}
    pid = np.array([where[p] for p in counts.names] + [-1], np.int64)
    fold_of = np.array([_fold_of(p, folds) for p in players], dtype=np.int64)
    # per deal in key order: its pack; per player: the sum and count of his points share (his results)
    pack = counts.pack[order]
    seated = counts.players >= 0
    who = pid[counts.players[seated]]
    share_sum = np.bincount(who, weights=counts.share[seated].astype(float), minlength=len(players))
    share_n = np.bincount(who, minlength=len(players))
    out: dict = {"players": players, "pack": pack, "pack_names": counts.pack_names, "share_sum": share_sum,
                 "share_n": share_n, "targets": {}, "order": order, "counts": counts}
    # centring: the field's mean x per decision context, fold by fold (x is the same for every target: taken
    # from the Ten's decisions)
    seat_player = pid[counts.players].reshape(-1)
    A_ten = _arrays(counts, "ten", rank, pid, seat_player)
    nf = max(folds, 1)
    xsum = np.zeros((nf, N_XCTX))
    xcnt = np.zeros((nf, N_XCTX))
    dec_fold = fold_of[A_ten.d_player] if len(A_ten.d_player) else np.zeros(0, dtype=np.int64)
    for k in range(nf):
        tr = dec_fold != k if folds > 1 else np.ones(len(A_ten.d_x), bool)
        xsum[k] = np.bincount(A_ten.d_xctx[tr], weights=A_ten.d_x[tr].astype(float), minlength=N_XCTX)
        xcnt[k] = np.bincount(A_ten.d_xctx[tr], minlength=N_XCTX)
    for t in targets:
        A = A_ten if t == "ten" else _arrays(counts, t, rank, pid, seat_player)
        fk = fold_of[A.d_player] if (folds > 1 and len(A.d_player)) else np.zeros(len(A.d_deal), dtype=np.int64)
        n_ctx = xcnt[fk, A.d_xctx]
        center = np.where(n_ctx > 0, xsum[fk, A.d_xctx] / np.maximum(n_ctx, 1), 0.0)
        out["targets"][t] = score_target(A, len(players), fold_of, folds, center)
    # per decision of the Ten: the score mattered for him before its deal (`score_gate`)
    gate = score_gate(counts, gate_rule)
    out["gate_dec"] = gate[A_ten.d_src, A_ten.d_seat] if len(A_ten.d_src) else np.zeros(0, bool)
    return out


def results_from_scores(scores: dict, counts: MarkedTenCounts, min_deals: int = MIN_DEALS,
                        details: bool = True) -> list[TestResult]:
    players = scores["players"]
    main: TargetScores | None = scores["targets"].get("ten")
    if main is None:
        return []
    A = main.A
    share_sum, share_n = scores["share_sum"], scores["share_n"]
    gate_dec = scores.get("gate_dec")
    if gate_dec is None or len(gate_dec) != len(A.d_deal):
        gate_dec = np.zeros(len(A.d_deal), bool)
    rows: dict[str, dict] = {}
    for pl, sel in main.by_player.items():
        n_deals = len(_deal_index(A.d_deal[sel])[0])
        if n_deals < min_deals:
            continue
        phi = main.phi(pl)
        gt = gated_test(main, sel, sel[gate_dec[sel]], phi)
        rows[players[pl]] = {"sel": sel, "pl": pl, "test": gt["pooled"], "gt": gt, "deals": n_deals, "phi": phi}
    zs = {n: r["test"]["z"] for n, r in rows.items()}
    fc = field_compare(zs, {n: r["deals"] for n, r in rows.items()},
                       {n: float(share_sum[r["pl"]] / max(share_n[r["pl"]], 1)) for n, r in rows.items()})
    out: list[TestResult] = []
    for name in sorted(rows):
        r = rows[name]
        sel, pl, main_t, phi = r["sel"], r["pl"], r["test"], r["phi"]
        controls: dict[str, Any] = {}
        gt = r["gt"]
        controls["pooled"] = _ctl(gt["pooled"])
        controls["score_gated"] = _ctl(gt["gated"]) | {"rho": gt["rho"]}
        S, _ = main.deal_sums(sel)
        zm, pm = znorm(S)
        controls["deal_sums_normal"] = {"z": zm, "p": pm}
        controls["hard_facts_null"] = _ctl(main.test(sel, hard=True, phi=main.phi(pl, hard=True)))
        opening = sel[A.d_opening[sel] == 1]
        controls["opening_leads_exact"] = _ctl(main.test(opening, hard=True))
        early = A.d_early[sel] == 1
        controls["early"] = _ctl(main.test(sel[early], phi=phi))
        controls["late"] = _ctl(main.test(sel[~early], phi=phi))
        # a sure read shows from the first trick; reading the legal signals builds up as the play goes on
        ze, zl = controls["early"]["z"], controls["late"]["z"]
        controls["early_minus_late"] = {"z": (ze - zl) / math.sqrt(2), "note": EARLY_MINUS_LATE_NOTE}
        for t in ("queen", "plain_ten", "placebo"):
            ts: TargetScores | None = scores["targets"].get(t)
            tsel = ts.by_player.get(pl) if ts is not None else None
            if ts is None or tsel is None or len(tsel) == 0:
                controls[t] = {"z": None, "p": None, "deals": 0, "card": TARGET_LABEL[t]}
                continue
            controls[t] = _ctl(ts.test(tsel, phi=ts.phi(pl))) | {"card": TARGET_LABEL[t]}
        pk = scores["pack"][A.d_deal[sel]]
        packs = sorted(set(np.unique(pk).tolist()) - {-1}, key=lambda k: scores["pack_names"][k])
        if packs:
            controls["packs"] = {scores["pack_names"][k]: _ctl(main.test(sel[pk == k], phi=phi)) for k in packs}
            if len(packs) >= 2:
                controls["pack_contrast"] = _pack_contrast(main, sel, pk, packs, scores["pack_names"], phi)
        controls["field"] = fc.get(name, {})
        if details:
            top = _top_deals(main, sel, scores)
        head = gt["gated"] if gt["part"] == "gated" else main_t
        n_gdec = int(gate_dec[sel].sum())
        gate_detail = {"part": gt["part"], "rho": gt["rho"], "p_pooled": gt["pooled"]["p"],
                       "p_gated": gt["gated"]["p"], "deals_gated": gt["gated"]["deals"],
                       "decisions_gated": n_gdec, "decisions_pooled": int(len(sel)), "rule": SCORE_RULE}
        if gt["part"] == "gated":
            gate_detail["scope_text"] = GATED_SCOPE_TEXT
        detail = {"decisions": n_gdec if gt["part"] == "gated" else int(len(sel)), "deals": r["deals"],
                  "score_gate": gate_detail, "variance_guard": phi,
                  "excluded": dict(sorted(counts.excluded.get(name, {}).items())),
                  "deals_excluded_in_input": dict(sorted(counts.excluded_deals.items())),
                  "top_deals": top, "timeline": _deal_timeline(main, sel, phi, scores)} if details else {}
        out.append(TestResult(
            test=NAME, subject=name, n=head["deals"], observed=head["observed"], expected=head["expected"],
            statistic=head["z"], pvalue=gt["p"],
            method=METHOD,
            controls=controls, detail=detail))
    return out


def canonical_rank(scores: dict) -> np.ndarray:
    """Per deal (in key order), its rank by the canonical tuple (table natural key, time, game natural key, deal
    number), ties by key order: the timeline's order and the top deals' tie order (issue 15). Data of the deals
    themselves, so it compares across runs and parts (`AuditColumns.order` ranks do not); it equals the canonical
    order of the input but for deals equal in all four (the input's file and line, which break those ties there,
    are not kept)."""
    got = scores.get("canonical_rank")
    if got is None:
        c = scores["counts"]
        order = scores["order"]
        cols = (np.arange(len(order)), c.deal_no[order], natural_ranks(c.games, none=True)[c.game[order]],
                c.time[order], natural_ranks(c.tables, none=True)[c.table[order]])
        perm = np.lexsort(cols) if len(order) else order
        got = np.empty(len(order), np.int64)
        got[perm] = np.arange(len(order))
        scores["canonical_rank"] = got
    return got


def _deal_timeline(main: TargetScores, sel: np.ndarray, phi: float, scores: dict) -> list[list]:
    """The primary test over the player's scored deals in canonical order, as a `base.Timeline` (issue 15): per
    deal, observed = sum of (x - c) g(true place) over his decisions, expected = sum of (x - c) E g under the
    posterior (their difference is the deal sum S_d), variance = sum of (x - c)^2 Var g, widened by the guard
    `phi` as the test is; binned by (table, time) and cumulated at bin ends (at most `Timeline.points`' points).
    The last point is the test's (deals, observed, expected, variance)."""
    A = main.A
    gtrue, dev2 = main.dec_moments()
    if len(sel) == 0:
        return []
    w = main.w[sel]
    deals, inv = _deal_index(A.d_deal[sel])
    obs = np.bincount(inv, weights=w * gtrue[sel], minlength=len(deals))
    exp_ = np.bincount(inv, weights=w * main.G_soft[sel], minlength=len(deals))
    var = np.bincount(inv, weights=w ** 2 * dev2[sel], minlength=len(deals))
    c = scores["counts"]
    src = scores["order"][deals]  # the deals' indexes in the counts
    o = np.argsort(canonical_rank(scores)[deals], kind="stable")  # floats added in canonical order
    tl = Timeline.of(c.tables, c.table[src[o]], c.time[src[o]], obs[o], exp_[o], var[o] * phi)
    return tl.points(counts=False, variance=True)


def _top_deals(main: TargetScores, sel: np.ndarray, scores: dict, k: int = 10) -> list[dict]:
    """The k deals whose decisions fit the Ten's true place most beyond what he knew (largest per-deal sum of
    (x - c)(g(true) - E g)); equal sums (to 1e-12: deals whose decisions carry nothing, or the same decisions) by
    the deals' canonical tuple (`canonical_rank`), so that neither rounding in the sums nor the input's order
    ranks reorder them. A bounded selection: the k best of the player's deal sums (`np.argpartition` when he has
    more than k deals), sorted."""
    A = main.A
    S, _ = main.deal_sums(sel)
    deals, inv = _deal_index(A.d_deal[sel])
    n_dec = np.bincount(inv, minlength=len(deals))
    c = scores["counts"]
    out = []
    neg = -np.round(S, 12)
    cand = np.arange(len(S))
    if len(S) > k:  # every deal tied with the k-th best stays a candidate: the tie order decides among them
        kth = np.partition(neg, k - 1)[k - 1]
        cand = np.flatnonzero(neg <= kth)
    crank = canonical_rank(scores)[deals[cand]]
    # contributions at 12 decimals, as they are ranked: a sum that is 0 up to rounding (-1e-17 or +3e-17, as the
    # parts' floats happened to add) is 0.0 however the input was split
    for j in cand[np.lexsort((crank, neg[cand]))][:k]:
        orig = int(scores["order"][deals[j]])
        out.append({"game_id": c.games[int(c.game[orig])], "deal_no": int(c.deal_no[orig]),
                    "source": c.source[orig], "contribution": float(np.round(S[j], 12)) + 0.0,
                    "what": f"{int(n_dec[j])} decision(s) fit the Ten's place {round(S[j], 2) + 0.0:+.2f} beyond what "
                            "they knew"})  # + 0.0: a sum of -1e-17 (rounding) reads +0.00, not -0.00
    return out


def _pack_contrast(main: TargetScores, sel: np.ndarray, pk: np.ndarray, packs: list[int], names: list[str],
                   phi: float) -> dict:
    """The pack whose decisions fit the Ten best against the others: z = (z_best - mean z_others) /
    sqrt(1 + 1/(K-1)) over K packs (the packs' deals are disjoint, so their z are independent), p = K * Phi(-z)
    (which pack is marked is not known in advance; with two packs this is the exact two-sided p). A marked pack shows
    the effect and the other does not (the seeds' advice: two packs); skill shows with every pack."""
    zs = []
    for k in packs:
        t, mean, var = main.blocks(sel[pk == k]).moments()
        zs.append(((t - mean) / math.sqrt(var * phi) if var > 0 else 0.0, k))
    z_best, k_best = max(zs)
    others = [z for z, k in zs if k != k_best]
    K = len(zs)
    z = (z_best - sum(others) / len(others)) / math.sqrt(1 + 1 / (K - 1))
    return {"pack": names[k_best], "z": float(z), "p": float(min(1.0, K * ndtr(-z)))}


def _ctl(t: dict) -> dict:
    return {"z": t["z"], "p": t["p"], "deals": t["deals"], "observed": t["observed"], "expected": t["expected"]}


# ---------------------------------------------------------------- finalize over parts (issue 15)


class _Store:
    """Where `finalize_parts` keeps its per-part working arrays: in memory (no folder), or as .npy files in a
    folder of its own (removed by `close`) read back memory-mapped for each pass and dropped after it, so that the
    pages one pass touches are released."""

    def __init__(self, folder: str | None):
        self.dir = tempfile.mkdtemp(prefix="marked_ten-finalize-", dir=folder) if folder is not None else None
        self.n = 0
        self.tag = ""  # the files' prefix: a helper (`_Run.fit_in_two`) names its own apart from its parent's

    def _path(self) -> str:
        assert self.dir is not None
        self.n += 1
        return os.path.join(self.dir, f"{self.tag}{self.n:05d}.bin")

    def put(self, a: np.ndarray) -> Any:
        if self.dir is None or a.size == 0:
            return a
        path = self._path()
        np.ascontiguousarray(a).tofile(path)
        return (path, a.dtype.str, a.shape)

    def zeros(self, n: int) -> Any:
        """`put(np.zeros(n))`, the file made by its length alone (read back as zeros; written over by `put_into`)."""
        if self.dir is None or n == 0:
            return np.zeros(n)
        path = self._path()
        with open(path, "wb") as f:
            f.truncate(n * 8)
        return (path, np.dtype(np.float64).str, (n,))

    def put_into(self, h: Any, a: np.ndarray) -> Any:
        """`put(a)`, written over the file of `h` when that holds an array of a's dtype and shape (issue 15: a new
        file for each fold's arrays wrote 1.1 GB of files at 1M deals, and removing them at the end took longer than
        writing them); the caller no longer reads the array `h` held."""
        if self.dir is None or a.size == 0 or not isinstance(h, tuple) or h[1:] != (a.dtype.str, a.shape):
            return self.put(a)
        fd = os.open(h[0], os.O_WRONLY)
        try:
            view = np.ascontiguousarray(a).data.cast("B")
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], done)
        finally:
            os.close(fd)
        return h

    def get(self, h: Any) -> np.ndarray:
        """The array (read-only, memory-mapped from its raw file: a map per call, unmapped when dropped)."""
        if isinstance(h, np.ndarray):
            return h
        path, dt, shape = h
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return np.frombuffer(mm, dt).reshape(shape)

    def put_all(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """Several arrays as one file (one map to open per pass), or as they are in memory. The file is the arrays'
        bytes one after the other, each padded with zeros to a multiple of 64 bytes, written from the arrays
        themselves (issue 15, a twenty-ninth session: a zeroed copy of them all, written whole, was a third of the
        time `marked_ten` took to write them)."""
        if self.dir is None:
            return dict(arrays)
        layout, at = {}, 0
        pieces: list[Any] = []
        for k, v in arrays.items():
            layout[k] = (at, v.dtype.str, v.shape)
            size = -(-v.nbytes // 64) * 64  # each array 64-byte aligned in the file
            if v.nbytes:
                pieces.append(np.ascontiguousarray(v).reshape(-1).view(np.uint8).data)
            if size > v.nbytes:
                pieces.append(bytes(size - v.nbytes))
            at += size
        if not at:
            pieces.append(bytes(1))  # a file of one byte, as an empty set always had
        path = self._path()
        with open(path, "wb", buffering=0) as f:
            for piece in pieces:
                view = memoryview(piece).cast("B")
                done = 0
                while done < len(view):
                    done += f.write(view[done:])
        return {"": _Blob((path, np.dtype(np.uint8).str, (max(at, 1),)), layout)}

    def get_all(self, handles: dict[str, Any], keys: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        blob = handles.get("")
        if not isinstance(blob, _Blob):
            return {k: self.get(handles[k]) for k in (keys if keys is not None else handles)}
        raw = self.get(blob.handle)
        out = {}
        for k in (keys if keys is not None else [*blob.layout, *blob.extra]):
            if k in blob.extra:
                out[k] = self.get(blob.extra[k])
                continue
            a, dt, shape = blob.layout[k]
            n = int(np.prod(shape)) * np.dtype(dt).itemsize
            out[k] = raw[a:a + n].view(dt).reshape(shape)
        return out

    def read_rows(self, handles: dict[str, Any], a0: int, a1: int, fd_of: Callable[[str], int]) -> dict[str, np.ndarray]:
        """Rows a0:a1 of every array of a set (`put_all`, with the arrays `put_one` added), as new arrays in the
        order of `get_all`: read from the files with `preadv` (`fd_of(path)`: an open descriptor), not mapped. A
        map makes every page it touched resident in the process until it is dropped, the pages around each slice
        too (the kernel maps a 64 KB window per fault); a player's slices of 56 parts' files so touched some 600 MB
        of a 10M audit's `marked_ten` worker (issue 15)."""
        blob = handles.get("")
        if not isinstance(blob, _Blob):
            return {k: self._rows(h, 0, a0, a1, fd_of) for k, h in handles.items()}
        out = {k: self._rows(blob.handle, at, a0, a1, fd_of, dt, shape) for k, (at, dt, shape) in blob.layout.items()}
        for k, h in blob.extra.items():
            out[k] = self._rows(h, 0, a0, a1, fd_of)
        return out

    @staticmethod
    def _rows(h: Any, at: int, a0: int, a1: int, fd_of: Callable[[str], int], dt: str | None = None,
              shape: tuple | None = None) -> np.ndarray:
        """Rows a0:a1 of one array: of `h` itself (in memory), or of the array of `dt` and `shape` that starts `at`
        bytes into `h`'s file (`dt` and `shape` default to the file's own: an array `put` alone)."""
        if isinstance(h, np.ndarray):
            if dt is None:
                return np.array(h[a0:a1])
            assert shape is not None
            n_all = int(np.prod(shape)) * np.dtype(dt).itemsize
            return np.array(h[at:at + n_all].view(dt).reshape(shape)[a0:a1])
        path, fdt, fshape = h
        dt, shape = (fdt, fshape) if dt is None else (dt, shape)
        assert shape is not None
        out = np.empty((a1 - a0,) + tuple(shape[1:]), np.dtype(dt))
        if out.nbytes:
            row = int(np.prod(shape[1:])) * np.dtype(dt).itemsize
            buf = memoryview(out.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
            got = os.preadv(fd_of(path), [buf], at + a0 * row)
            if got != out.nbytes:
                raise OSError(f"{path}: short read ({got} of {out.nbytes} bytes at {at + a0 * row})")
        return out

    def put_one(self, handles: dict[str, Any], key: str, a: np.ndarray) -> None:
        """Add an array to a set `put_all` made (a file of its own)."""
        blob = handles.get("")
        if isinstance(blob, _Blob):
            blob.extra[key] = self.put(a)
        else:
            handles[key] = a

    def close(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class _Blob:
    """A `_Store` file holding several arrays: where each starts, its dtype and shape; `extra`: arrays added later,
    a file each."""

    handle: Any
    layout: dict[str, tuple[int, str, tuple]]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlayerArrays:
    """One player's decisions of one target (in the deals' key order, then play order) and their candidate rows:
    the columns of `TargetArrays` that the per-player tests read (`d_deal`: the deal's place among his deals)."""

    d_deal: np.ndarray
    d_early: np.ndarray
    d_opening: np.ndarray
    c_dec: np.ndarray
    c_g: np.ndarray
    c_true: np.ndarray
    c_seat: np.ndarray


@dataclass
class _Scored:
    """One part's scored decisions of one target, grouped by player (in the part's key order, then play order,
    within a player): `dec` and `rows` (handles in the `_Store`), each player's slice `bounds[pl]:bounds[pl + 1]`
    of the decisions and `rbounds` of the rows."""

    dec: dict[str, Any]
    rows: dict[str, Any]
    bounds: np.ndarray
    rbounds: np.ndarray


READ_BUDGET = 1 << 26  # bytes read from memory-mapped files before their maps are dropped (and re-opened)
MAX_OPEN_FILES = 256  # a reader's open descriptors (the parts' scored files), all closed when there are more


class _Reader:
    """The players' slices of the parts' scored arrays, read from their files as they are needed (`rows`); and
    the parts' game and source names, memory-mapped on demand and dropped after READ_BUDGET bytes were read from
    them, so the pages a sweep over the players touches do not pile up in the process. `close` when done."""

    def __init__(self, run: "_Run"):
        self.run = run
        self.cache: dict[Any, Any] = {}
        self.used = 0
        self.fds: dict[str, int] = {}

    def charge(self, nbytes: int) -> None:
        self.used += nbytes
        if self.used > READ_BUDGET:
            self.cache.clear()
            self.used = 0

    def rows(self, k: int, t: str, which: str, a0: int, a1: int) -> dict[str, np.ndarray]:
        """Rows a0:a1 of part k's scored decisions (`which` "dec") or candidate rows ("rows") of target t, read
        into new arrays (`_Store.read_rows`: not mapped, so nothing stays resident after the caller drops them)."""
        sc = self.run.scored[k][t]
        return self.run.store.read_rows(sc.dec if which == "dec" else sc.rows, a0, a1, self._fd)

    def _fd(self, path: str) -> int:
        fd = self.fds.get(path)
        if fd is None:
            if len(self.fds) >= MAX_OPEN_FILES:
                self.close()
            fd = self.fds[path] = os.open(path, os.O_RDONLY)
        return fd

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def string(self, k: int, name: str, i: int) -> str:
        """String i of part k's `name` list (`games`, `source`), read from a fresh map of its column."""
        key = (k, name)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = _fresh(getattr(self.run.parts[k], name))
        self.charge(8192)
        return str(got[i])


class _Run:
    """`finalize_parts`: the fit streamed over the parts, then the players one at a time."""

    def __init__(self, parts: Sequence[MarkedTenCounts], folds: int, targets: Sequence[str], gate_rule: str,
                 store: _Store):
        self.parts = list(parts)
        self.folds = folds
        self.targets = tuple(targets)
        self.gate_rule = gate_rule
        self.store = store
        names: dict[str, None] = {}
        tables: dict[str, int] = {}
        packs: dict[str, int] = {}
        for p in self.parts:
            names.update(dict.fromkeys(p.names))
        self.players = sorted(names)
        where = {p: i for i, p in enumerate(self.players)}
        n_pl = len(self.players)
        self.fold_of = np.array([_fold_of(p, folds) for p in self.players], dtype=np.int64)
        self.pid = [np.array([where[p] for p in c.names] + [-1], np.int64) for c in self.parts]
        self.tmap = [np.array([tables.setdefault(x, len(tables)) for x in c.tables] + [-1], np.int64)
                     for c in self.parts]
        self.kmap = [np.array([packs.setdefault(x, len(packs)) for x in c.pack_names] + [-1], np.int64)
                     for c in self.parts]
        self.tables = list(tables)
        self.table_rank = natural_ranks(self.tables, none=True)
        self.pack_names = list(packs)
        self.excluded: dict[str, dict[str, int]] = {}
        self.excluded_deals: dict[str, int] = {}
        self.share_sum: np.ndarray = np.zeros(n_pl)
        self.share_n: np.ndarray = np.zeros(n_pl, np.int64)
        self.nf = max(folds, 1)
        self.xsum = np.zeros((self.nf, N_XCTX))
        self.xcnt = np.zeros((self.nf, N_XCTX))
        self.fit: list[dict[str, dict[str, Any]]] = [{} for _ in self.parts]
        self.psoft: list[dict[str, Any]] = [{} for _ in self.parts]
        self.rperm: list[dict[str, Any]] = [{} for _ in self.parts]
        self.n_dec: list[dict[str, np.ndarray]] = [{} for _ in self.parts]  # decisions per fold
        self.scored: list[dict[str, _Scored]] = [{} for _ in self.parts]
        self.cnt = {t: np.zeros((self.nf if folds > 1 else 1, 2, N_CTX * N_OUT), np.int64) for t in self.targets}
        self.fv: dict[tuple[str, bool], dict[int, tuple[float, float]]] = {}

    # -- the passes over the parts

    def prepare(self) -> None:
        """Per part: its shares, exclusions, the centring sums, the holder model's counts, the posterior's design
        (kept for the Newton passes) and the decisions grouped by player (kept for the players' tests)."""
        cmax = {t: 0 for t in self.targets}
        game_hashes = []
        for k in range(len(self.parts)):
            c = _reopened(self.parts[k])
            for t in self.targets:
                u = c.targets.get(t, {}).get("cands", {}).get("u")
                if u is not None and len(u):
                    cmax[t] = max(cmax[t], int(u.max()))
            game_hashes.append(_name_hashes(c.ledger_games))
            del c
        self.log_u = {t: np.log(np.maximum(np.arange(cmax[t] + 2), 1).astype(float)) for t in self.targets}
        fixes = _shared_game_gates(self.parts, game_hashes, self.gate_rule)
        for k in range(len(self.parts)):
            self._prepare_part(k, fixes.get(k))
            trim_heap()  # each part's working arrays freed (what glibc keeps grew with the parts: `trim_heap`)

    def _prepare_part(self, k: int, fix: tuple[np.ndarray, np.ndarray] | None) -> None:
        c = _reopened(self.parts[k])
        pid = self.pid[k]
        for pl, dct in c.excluded.items():
            e = self.excluded.setdefault(pl, {})
            for r, n in dct.items():
                _bump(e, r, n)
        for r, n in c.excluded_deals.items():
            _bump(self.excluded_deals, r, n)
        seated = c.players >= 0
        who = pid[c.players[seated]]
        n_pl = len(self.players)
        ss = np.bincount(who, weights=c.share[seated].astype(float), minlength=n_pl)
        sn = np.bincount(who, minlength=n_pl)
        self.share_sum = ss if k == 0 else self.share_sum + ss
        self.share_n = sn if k == 0 else self.share_n + sn
        order = np.argsort(c.keys, kind="stable")  # equal keys: identical deals
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        seat_player = pid[c.players].reshape(-1)
        gate = score_gate(c, self.gate_rule)
        if fix is not None:
            gate[fix[0]] = fix[1]
        game_rank = natural_ranks(c.games, none=True)
        folds, nf = self.folds, self.nf
        for t in dict.fromkeys(("ten",) + self.targets):
            A = _arrays(c, t, rank, pid, seat_player)
            n_dec = len(A.d_deal)
            dec_fold = self.fold_of[A.d_player] if n_dec else np.zeros(0, np.int64)
            if t == "ten":
                for f in range(nf):
                    tr = dec_fold != f if folds > 1 else np.ones(len(A.d_x), bool)
                    self.xsum[f] += np.bincount(A.d_xctx[tr], weights=A.d_x[tr].astype(float), minlength=N_XCTX)
                    self.xcnt[f] += np.bincount(A.d_xctx[tr], minlength=N_XCTX)
            if t not in self.targets:
                continue
            self.cnt[t] += holder_counts(A.p_deal, A.p_seat, A.p_cell, A.p_holds, A.seat_player, MAX_SEATS,
                                         self.fold_of, nf if folds > 1 else 1, N_CTX * N_OUT)
            c_start, c_end = _dec_bounds(A)
            x0, code = design(A.c_u, A.c_nv, A.c_seat, self.log_u[t])
            c_pos = chosen_rows(c_start, c_end, A.c_true == 1)
            lo, hi, first = play_ranges(A.p_off, A.p_order, A.d_src, A.d_order)
            self.n_dec[k][t] = np.bincount(dec_fold, minlength=nf) if folds > 1 else np.array([n_dec])
            self.fit[k][t] = self.store.put_all(dict(
                x0=x0, code=code, c_pos=c_pos, c_start=c_start, c_end=c_end, lo=lo, hi=hi, first=first,
                p_seat=A.p_seat, p_cell=A.p_cell, c_seat=A.c_seat, dec_fold=dec_fold))
            self.psoft[k][t] = self.store.zeros(len(A.c_dec))
            # the decisions by player (stably: each player's in key order, then play order)
            o = np.argsort(A.d_player, kind="stable")
            bounds = np.searchsorted(A.d_player[o], np.arange(n_pl + 1))
            nrow = (c_end - c_start)[o]
            rperm, _ = segment_rows(np.concatenate([[0], c_end]).astype(np.int64), o)
            self.rperm[k][t] = self.store.put(rperm)
            dec = {"d_src": A.d_src[o].astype(np.int32), "x": A.d_x[o], "xctx": A.d_xctx[o],
                   "early": A.d_early[o], "opening": A.d_opening[o], "nrow": nrow.astype(np.int32)}
            src = A.d_src[o]
            dec["key"] = np.asarray(c.keys[src])
            if t == "ten":  # and the facts of each decision's deal: its gate, pack, and place in canonical order
                dec["gate"] = gate[A.d_src, A.d_seat][o] if n_dec else np.zeros(0, bool)
                dec["table"] = self.tmap[k][c.table[src]].astype(np.int32)
                dec["time"] = np.asarray(c.time[src])
                dec["pack"] = self.kmap[k][c.pack[src]].astype(np.int32)
                dec["game"] = np.asarray(c.game[src])
                dec["deal_no"] = np.asarray(c.deal_no[src])
                dec["grank"] = game_rank[c.game[src]]
            rows = {"u": A.c_u[rperm], "g": A.c_g[rperm], "true": A.c_true[rperm], "seat": A.c_seat[rperm]}
            rb = np.concatenate([[0], np.cumsum(nrow)])[bounds]
            self.scored[k][t] = _Scored(self.store.put_all(dec), self.store.put_all(rows), bounds, rb)
            del A

    def fit_target(self, t: str) -> None:
        """The holder model and the posterior fold by fold, as `score_target` fits them: each Newton pass sums
        `clogit_pass5` part by part in part order (one part: exactly `score_target`'s sums); then each part's
        posterior rows, in the players' order."""
        folds, nf, store = self.folds, self.nf, self.store
        cnt = self.cnt[t]
        total = cnt.sum(0)
        K = range(len(self.parts))
        n_all = sum(int(self.n_dec[k][t].sum()) for k in K)
        init = np.array([1.0, 0.5, 0.0, 0.0, 0.0])
        start = init
        s_file: dict[int, Any] = {}  # per part, the file of the seat sums, written over by each fold
        for f in range(nf):
            if folds > 1:
                n_te = sum(int(self.n_dec[k][t][f]) for k in K)
                n_tr = n_all - n_te
                n1, n0 = total[1] - cnt[f, 1], total[0] - cnt[f, 0]
            else:
                n_te = n_tr = n_all
                n1, n0 = total[1], total[0]
            if not n_te:
                continue
            llr = np.asarray(llr_from_counts(n1, n0), float)
            live = [k for k in K if self.n_dec[k][t].sum()]
            s_h: dict[int, Any] = {}
            for k in live:
                F = store.get_all(self.fit[k][t], ("lo", "hi", "first", "p_seat", "p_cell", "c_start", "c_end",
                                                    "c_seat"))
                s = np.zeros(len(F["c_seat"]))
                if len(s):
                    seat_llr_sums(llr, F["lo"], F["hi"], F["first"], F["p_seat"], F["p_cell"], F["c_start"],
                                  F["c_end"], F["c_seat"], 3 * LLR_CLIP, s)
                s_h[k] = s_file[k] = store.put_into(s_file.get(k), s)  # the last fold's file, written over
                del F, s
                trim_heap()

            def use(F: dict, test: bool, f: int = f) -> np.ndarray:
                if folds > 1:
                    return F["dec_fold"] == f if test else F["dec_fold"] != f
                return np.ones(len(F["c_start"]), bool)

            beta = init.copy()
            if n_tr:
                def info(b: np.ndarray, h: bool, s_h: dict = s_h, use: Any = use) -> tuple[np.ndarray, np.ndarray]:
                    acc: tuple[np.ndarray, np.ndarray] | None = None
                    for k, sh in s_h.items():
                        F = store.get_all(self.fit[k][t], ("x0", "code", "c_pos", "c_start", "c_end", "dec_fold"))
                        g, H = clogit_pass5(b, F["x0"], store.get(sh), F["code"], F["c_pos"], F["c_start"],
                                            F["c_end"], use(F, False), h)
                        acc = (g, H) if acc is None else (acc[0] + g, acc[1] + H)
                        del F
                        trim_heap()
                    assert acc is not None
                    return acc

                beta, ok = newton(info, init, start, 1.0, 30)
                start = beta if ok else init
            for k, sh in s_h.items():
                F = store.get_all(self.fit[k][t], ("x0", "code", "c_start", "c_end", "dec_fold"))
                p = np.array(store.get(self.psoft[k][t]))
                clogit_probs5(beta, F["x0"], store.get(sh), F["code"], F["c_start"], F["c_end"], use(F, True), p)
                self.psoft[k][t] = store.put_into(self.psoft[k][t], p)
                del F, p
                trim_heap()
        for k in K:  # the posterior rows in the players' order, beside the other rows
            sc = self.scored[k][t]
            p = store.get(self.psoft[k][t])
            store.put_one(sc.rows, "p_soft", np.ascontiguousarray(p[store.get(self.rperm[k][t])]))
            del p
            trim_heap()

    # -- the players

    def player(self, reader: _Reader, t: str, pl: int, deals: bool = False) -> "TargetScores | None":
        """Player `pl`'s decisions of target `t` gathered from the parts, in the deals' key order then play order
        (the order of the whole's `by_player`), scored as `score_target` scores them (the same numbers: each is
        a decision's own), as a `TargetScores` whose `by_player` is {pl: all}. `deals`: also the per-deal facts
        of the timeline, the top deals and the packs (`diag["deals"]`)."""
        segs = []
        for k in range(len(self.parts)):
            sc = self.scored[k].get(t)
            if sc is None or sc.bounds[pl] == sc.bounds[pl + 1]:
                continue
            a0, a1 = int(sc.bounds[pl]), int(sc.bounds[pl + 1])
            r0, r1 = int(sc.rbounds[pl]), int(sc.rbounds[pl + 1])
            D = reader.rows(k, t, "dec", a0, a1)
            R = reader.rows(k, t, "rows", r0, r1)
            D["part"] = np.full(a1 - a0, k, np.int64)
            segs.append((D, R))
        if not segs:
            return None
        if len(segs) == 1:
            D, R = segs[0]
        else:
            D = {n: np.concatenate([s[0][n] for s in segs]) for n in segs[0][0]}
            R = {n: np.concatenate([s[1][n] for s in segs]) for n in segs[0][1]}
            o = np.lexsort((D["d_src"], D["part"], D["key"]))  # the whole's key order (ties: part, then index)
            if np.any(o != np.arange(len(o))):
                off = np.concatenate([[0], np.cumsum(D["nrow"])]).astype(np.int64)
                rows, _ = segment_rows(off, o.astype(np.int64))
                D = {n: v[o] for n, v in D.items()}
                R = {n: v[rows] for n, v in R.items()}
        n = len(D["d_src"])
        new = np.ones(n, bool)
        new[1:] = (D["key"][1:] != D["key"][:-1]) | (D["part"][1:] != D["part"][:-1]) | (
            D["d_src"][1:] != D["d_src"][:-1])
        d_deal = np.cumsum(new) - 1
        nrow = D["nrow"].astype(np.int64)
        c_end = np.cumsum(nrow)
        c_start = c_end - nrow
        fk = np.full(n, self.fold_of[pl] if self.folds > 1 else 0, np.int64)
        xctx = D["xctx"]
        n_ctx = self.xcnt[fk, xctx]
        center = np.where(n_ctx > 0, self.xsum[fk, xctx] / np.maximum(n_ctx, 1), 0.0)
        w = D["x"].astype(float) - center
        p_soft = R["p_soft"]
        p_hard, G_soft, G_hard, gtrue, dev_soft, dev_hard = decision_sums(c_start, c_end, R["u"], R["g"], R["true"],
                                                                          p_soft)
        A = PlayerArrays(d_deal, D["early"], D["opening"], np.repeat(np.arange(n), nrow), R["g"], R["true"],
                         R["seat"])
        diag: dict = {"dec_moments": (gtrue, dev_soft), "dec_moments_hard": (gtrue, dev_hard)}
        for hard in (False, True):
            fv = self.fv.get((t, hard))
            if fv is not None:
                key = "fv_hard" if hard else "fv_soft"
                diag[key] = fv
                diag[key + "_tot"] = (sum(a for a, _ in fv.values()), sum(b for _, b in fv.values()))
        if "gate" in D:
            diag["gate"] = D["gate"].astype(bool)
        if deals:
            first = new
            diag["deals"] = {n_: D[n_][first] for n_ in ("table", "time", "pack", "game", "deal_no", "grank", "part",
                                                          "d_src")}
            diag["pack"] = D["pack"]
        return TargetScores(A, w, p_soft, p_hard, G_soft, G_hard, c_start, c_end, {pl: np.arange(n)}, diag)

    def field_variances(self, reader: _Reader) -> None:
        """Sweep 1: per target (and the Ten's hard-fact null), every player's (sum of squared deal sums, model
        variance), in player order (`TargetScores.field_variance` of the whole); a target's only once."""
        for t in self.targets:
            if (t, False) not in self.fv:
                self.field_variance(reader, t)

    def field_variance(self, reader: _Reader, t: str) -> None:
        """`field_variances` of target t alone: it reads t's fit and nothing of the other targets'."""
        soft: dict[int, tuple[float, float]] = {}
        hard: dict[int, tuple[float, float]] = {}
        for pl in range(len(self.players)):
            ts = self.player(reader, t, pl)
            if ts is None:
                continue
            soft[pl] = ts.field_variance()[pl]
            if t == "ten":
                hard[pl] = ts.field_variance(True)[pl]
        self.fv[(t, False)] = soft
        if t == "ten":
            self.fv[(t, True)] = hard

    # -- in two processes (issue 15: at 10M deals marked_ten's 127 s on one core were the tests' critical path,
    # the other core idle for its last 23 s)

    def work(self, t: str) -> int:
        """Target t's candidate rows: what its fit and sweeps cost, roughly."""
        return sum(int(self.scored[k][t].rbounds[-1]) for k in range(len(self.parts)) if t in self.scored[k])

    def fit_in_two(self) -> None:
        """Every target fitted and its field variances taken (`fit_target`, `field_variance`), the targets shared
        between this process and a helper forked from it (`pools.fork_helper`), about equal rows each. A target's
        fit and variances read and write its own files alone, so each comes out as one process alone would make
        it; the helper hands back the handles of what it wrote and its variances."""
        assert self.store.dir is not None
        mine: list[str] = []
        theirs: list[str] = []
        load = [0, 0]
        for t in sorted(self.targets, key=lambda x: (-self.work(x), self.targets.index(x))):
            side = 0 if load[0] <= load[1] else 1
            (mine if side == 0 else theirs).append(t)
            load[side] += self.work(t)

        def fit(ts: list[str]) -> None:
            reader = _Reader(self)
            try:
                for t in ts:
                    self.fit_target(t)
                    self.field_variance(reader, t)
            finally:
                reader.close()

        def helper() -> dict:
            self.store.tag = "h"
            fit(theirs)
            return {"psoft": {t: [self.psoft[k][t] for k in range(len(self.parts))] for t in theirs},
                    "p_soft": {t: [self.scored[k][t].rows for k in range(len(self.parts))] for t in theirs},
                    "fv": {key: v for key, v in self.fv.items() if key[0] in theirs}}

        _, got = _beside_helper(lambda: fit(mine), helper, self.store.dir)
        for t in theirs:
            for k in range(len(self.parts)):
                self.psoft[k][t] = got["psoft"][t][k]
                self.scored[k][t].rows = got["p_soft"][t][k]
        self.fv.update(got["fv"])

    def canonical(self, reader: _Reader, dl: dict) -> np.ndarray:
        """Per deal of a player (in key order), its rank among his deals by the canonical tuple (table natural
        key, time, game natural key, deal number), ties by key order: `canonical_rank` of the whole restricted to
        his deals. Games compare by their rank in their part's games; deals of equal table and time from several
        parts (pieces of a table) by their games' names."""
        n = len(dl["table"])
        trank = self.table_rank[dl["table"]]
        grank = dl["grank"].astype(np.int64).copy()
        o = np.lexsort((dl["time"], trank))
        if n > 1 and len(np.unique(dl["part"])) > 1:
            ts, tt, pp = trank[o], dl["time"][o], dl["part"][o]
            starts = np.flatnonzero(np.r_[True, (ts[1:] != ts[:-1]) | (tt[1:] != tt[:-1])])
            ends = np.r_[starts[1:], n]
            mixed = np.minimum.reduceat(pp, starts) != np.maximum.reduceat(pp, starts)
            for a, b in zip(starts[mixed].tolist(), ends[mixed].tolist(), strict=True):
                run = o[a:b]
                names = [reader.string(int(dl["part"][i]), "games", int(dl["game"][i])) for i in run]
                keys = [natural_key(x) for x in names]
                srt = sorted(range(len(run)), key=keys.__getitem__)
                r = np.empty(len(run), np.int64)
                # equal names get equal ranks (a game in two parts)
                prev, rk = None, -1
                for j in srt:
                    if keys[j] != prev:
                        rk += 1
                        prev = keys[j]
                    r[j] = rk
                grank[run] = r
        perm = np.lexsort((np.arange(n), dl["deal_no"], grank, dl["time"], trank))
        out = np.empty(n, np.int64)
        out[perm] = np.arange(n)
        return out

    def results(self, min_deals: int, details: bool, helper: bool = False) -> list[TestResult]:
        """Sweep 2: `results_from_scores`, player by player; `helper`: the players cut in two runs of about equal
        decisions, the second run's in a helper forked from this process (`pools.fork_helper`), its rows handed
        back and put after this process's, in player order as one process makes them."""
        reader = _Reader(self)
        try:
            self.field_variances(reader)
            if "ten" not in self.targets:
                return []
            n_pl = len(self.players)
            folder = self.store.dir
            cut = self._cut() if helper and folder is not None else n_pl
            if cut >= n_pl or folder is None:
                return self._results(self._rows(reader, 0, n_pl, min_deals, details))
            rows, theirs = _beside_helper(lambda: self._rows(reader, 0, cut, min_deals, details),
                                          lambda: self._rows(_Reader(self), cut, n_pl, min_deals, details), folder)
            rows.update(theirs)
            return self._results(rows)
        finally:
            reader.close()

    def _cut(self) -> int:
        """Where the players are cut in two runs of about equal decisions of the targets (`results`)."""
        w = np.zeros(len(self.players))
        for k in range(len(self.parts)):
            for sc in self.scored[k].values():
                w += np.diff(sc.rbounds)
        c = np.cumsum(w)
        return int(np.searchsorted(c, c[-1] / 2)) + 1 if len(c) and c[-1] > 0 else len(self.players)

    def _rows(self, reader: _Reader, lo: int, hi: int, min_deals: int, details: bool) -> dict[str, dict]:
        """The tests of players lo..hi-1 (but the field comparison), by name, in player order."""
        players = self.players
        rows: dict[str, dict] = {}
        for pl in range(lo, hi):
            main = self.player(reader, "ten", pl, deals=True)
            if main is None:
                continue
            sel = main.by_player[pl]
            n_deals = len(_deal_index(main.A.d_deal[sel])[0])
            if n_deals < min_deals:
                continue
            gate_dec = main.diag["gate"]
            phi = main.phi(pl)
            gt = gated_test(main, sel, sel[gate_dec[sel]], phi)
            others = {t: self.player(reader, t, pl) for t in ("queen", "plain_ten", "placebo") if t in self.targets}
            rows[players[pl]] = {"pl": pl, "test": gt["pooled"], "deals": n_deals,
                                 "out": _player_result(self, reader, main, others, sel, gate_dec, gt, phi, n_deals,
                                                       players[pl], details)}
        return rows

    def _results(self, rows: dict[str, dict]) -> list[TestResult]:
        """The players' tests from their rows (`_rows`), with the field comparison of them all."""
        zs = {n: r["test"]["z"] for n, r in rows.items()}
        ss, sn = self.share_sum, self.share_n
        fc = field_compare(zs, {n: r["deals"] for n, r in rows.items()},
                           {n: float(ss[r["pl"]] / max(sn[r["pl"]], 1)) for n, r in rows.items()})
        out = []
        for name in sorted(rows):
            head, p, controls, detail = rows[name]["out"]
            controls["field"] = fc.get(name, {})
            out.append(TestResult(
                test=NAME, subject=name, n=head["deals"], observed=head["observed"], expected=head["expected"],
                statistic=head["z"], pvalue=p, method=METHOD, controls=controls, detail=detail))
        return out


METHOD = ("decision fit to the Ten's place vs a field-fitted posterior of what they knew; sequential randomisation, "
          "saddlepoint one-sided p, deal-level variance guard; the better of all their deals and the deals where the "
          "game score mattered, corrected for their correlation")


def _player_result(run: _Run, reader: _Reader, main: "TargetScores", others: dict, sel: np.ndarray,
                   gate_dec: np.ndarray, gt: dict, phi: float, n_deals: int, name: str,
                   details: bool) -> tuple[dict, float, dict, dict]:
    """One player's head test, p-value, controls (but the field comparison, filled in once every player's z is
    known) and detail: `results_from_scores`' body for one player."""
    A = main.A
    pl = next(iter(main.by_player))
    main_t = gt["pooled"]
    controls: dict[str, Any] = {}
    controls["pooled"] = _ctl(gt["pooled"])
    controls["score_gated"] = _ctl(gt["gated"]) | {"rho": gt["rho"]}
    S, _ = main.deal_sums(sel)
    zm, pm = znorm(S)
    controls["deal_sums_normal"] = {"z": zm, "p": pm}
    controls["hard_facts_null"] = _ctl(main.test(sel, hard=True, phi=main.phi(pl, hard=True)))
    opening = sel[A.d_opening[sel] == 1]
    controls["opening_leads_exact"] = _ctl(main.test(opening, hard=True))
    early = A.d_early[sel] == 1
    controls["early"] = _ctl(main.test(sel[early], phi=phi))
    controls["late"] = _ctl(main.test(sel[~early], phi=phi))
    ze, zl = controls["early"]["z"], controls["late"]["z"]
    controls["early_minus_late"] = {"z": (ze - zl) / math.sqrt(2), "note": EARLY_MINUS_LATE_NOTE}
    for t in ("queen", "plain_ten", "placebo"):
        ts = others.get(t)
        if ts is None or len(ts.by_player[pl]) == 0:
            controls[t] = {"z": None, "p": None, "deals": 0, "card": TARGET_LABEL[t]}
            continue
        controls[t] = _ctl(ts.test(ts.by_player[pl], phi=ts.phi(pl))) | {"card": TARGET_LABEL[t]}
    pk = main.diag["pack"][sel]
    packs = sorted(set(np.unique(pk).tolist()) - {-1}, key=lambda k: run.pack_names[k])
    if packs:
        controls["packs"] = {run.pack_names[k]: _ctl(main.test(sel[pk == k], phi=phi)) for k in packs}
        if len(packs) >= 2:
            controls["pack_contrast"] = _pack_contrast(main, sel, pk, packs, run.pack_names, phi)
    detail: dict = {}
    if details:
        dl = main.diag["deals"]
        crank = run.canonical(reader, dl)
        top = _player_top_deals(main, sel, dl, crank, reader)
        head = gt["gated"] if gt["part"] == "gated" else main_t
        n_gdec = int(gate_dec[sel].sum())
        gate_detail = {"part": gt["part"], "rho": gt["rho"], "p_pooled": gt["pooled"]["p"],
                       "p_gated": gt["gated"]["p"], "deals_gated": gt["gated"]["deals"],
                       "decisions_gated": n_gdec, "decisions_pooled": int(len(sel)), "rule": SCORE_RULE}
        if gt["part"] == "gated":
            gate_detail["scope_text"] = GATED_SCOPE_TEXT
        detail = {"decisions": n_gdec if gt["part"] == "gated" else int(len(sel)), "deals": n_deals,
                  "score_gate": gate_detail, "variance_guard": phi,
                  "excluded": dict(sorted(run.excluded.get(name, {}).items())),
                  "deals_excluded_in_input": dict(sorted(run.excluded_deals.items())),
                  "top_deals": top, "timeline": _player_timeline(main, sel, phi, dl, crank, run.tables)}
    head = gt["gated"] if gt["part"] == "gated" else main_t
    return head, gt["p"], controls, detail


def _player_timeline(main: "TargetScores", sel: np.ndarray, phi: float, dl: dict, crank: np.ndarray,
                     tables: list[str]) -> list[list]:
    """`_deal_timeline` over one player's gathered deals (`dl`: per deal in key order; `crank` their canonical
    ranks among his deals)."""
    A = main.A
    gtrue, dev2 = main.dec_moments()
    if len(sel) == 0:
        return []
    w = main.w[sel]
    deals, inv = _deal_index(A.d_deal[sel])
    obs = np.bincount(inv, weights=w * gtrue[sel], minlength=len(deals))
    exp_ = np.bincount(inv, weights=w * main.G_soft[sel], minlength=len(deals))
    var = np.bincount(inv, weights=w ** 2 * dev2[sel], minlength=len(deals))
    o = np.argsort(crank[deals], kind="stable")
    tl = Timeline.of(tables, dl["table"][deals[o]], dl["time"][deals[o]], obs[o], exp_[o], var[o] * phi)
    return tl.points(counts=False, variance=True)


def _player_top_deals(main: "TargetScores", sel: np.ndarray, dl: dict, crank_all: np.ndarray, reader: _Reader,
                      k: int = 10) -> list[dict]:
    """`_top_deals` over one player's gathered deals; the game ids and sources of the k deals read from their
    parts."""
    A = main.A
    S, _ = main.deal_sums(sel)
    deals, inv = _deal_index(A.d_deal[sel])
    n_dec = np.bincount(inv, minlength=len(deals))
    out = []
    neg = -np.round(S, 12)
    cand = np.arange(len(S))
    if len(S) > k:
        kth = np.partition(neg, k - 1)[k - 1]
        cand = np.flatnonzero(neg <= kth)
    crank = crank_all[deals[cand]]
    for j in cand[np.lexsort((crank, neg[cand]))][:k]:
        d = int(deals[j])
        part = int(dl["part"][d])
        out.append({"game_id": reader.string(part, "games", int(dl["game"][d])), "deal_no": int(dl["deal_no"][d]),
                    "source": reader.string(part, "source", int(dl["d_src"][d])), "contribution": float(np.round(S[j], 12)) + 0.0,
                    "what": f"{int(n_dec[j])} decision(s) fit the Ten's place {round(S[j], 2) + 0.0:+.2f} beyond what "
                            "they knew"})
    return out


def _name_hashes(names: Iterable[str]) -> np.ndarray:
    """A 64-bit hash of each name, to find the games of several parts without holding their names: FNV-1a of its
    UTF-8 bytes, a lone surrogate passed through (`_fnv_kernel`; issue 15: blake2b per name in Python took 0.7 s
    of the 1M audit's finalize). A spilled column is hashed from its own buffer, no name decoded and encoded again."""
    return _fnv_utf8(names if isinstance(names, StrColumn) else StrColumn.of(list(names)))[:-1]


def _shared_game_gates(parts: Sequence[MarkedTenCounts], hashes: list[np.ndarray],
                       rule: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The score gate of the deals of games whose ledger rows are in more than one part (pieces of one table
    disjoint in time, or a game id at two tables): per part, (its deals of such games, their gate rows), from the
    ledger rows of those games of every part together (`score_gate` of their merge). Other games are whole in
    their part and gated there. Games are found by their names' hashes, then taken by name (a collision only makes
    a game taken here, where the result is the same)."""
    if len(parts) < 2:
        return {}
    allh = np.concatenate([np.unique(h) for h in hashes]) if hashes else np.zeros(0, np.uint64)
    u, n = np.unique(allh, return_counts=True)
    shared = u[n > 1]
    if not len(shared):
        return {}
    subs, where = [], []
    for k, c0 in enumerate(parts):
        in_l = np.isin(hashes[k], shared)
        if not in_l.any():
            continue
        c = _reopened(c0)
        names = {c.ledger_games[i] for i in np.flatnonzero(in_l).tolist()}
        gsel = np.array([g in names for g in c.games] + [False], bool)
        lsel = in_l[c.ledger_game]
        drow = np.flatnonzero(gsel[c.game])
        gkeep = np.flatnonzero(gsel[:-1])
        gmap = np.full(len(c.games) + 1, -1, np.int32)
        gmap[gkeep] = np.arange(len(gkeep))
        lkeep = np.flatnonzero(in_l)
        lmap = np.full(len(in_l) + 1, -1, np.int32)
        lmap[lkeep] = np.arange(len(lkeep))
        sub = MarkedTenCounts(keys=np.asarray(c.keys[drow]), side=np.asarray(c.side[drow]),
                              game=gmap[c.game[drow]], deal_no=np.asarray(c.deal_no[drow]),
                              games=[c.games[int(i)] for i in gkeep],
                              ledger_games=[c.ledger_games[int(i)] for i in lkeep],
                              ledger_game=lmap[c.ledger_game[lsel]])
        for f in LEDGER_FIELDS[1:]:
            setattr(sub, f, np.asarray(getattr(c, f)[lsel]))
        subs.append(sub)
        where.append((k, drow))
    gate = score_gate(merge_counts(subs), rule)
    out, at = {}, 0
    for k, drow in where:
        out[k] = (drow, gate[at:at + len(drow)])
        at += len(drow)
    return out


def _beside_helper(mine: Callable[[], Any], theirs: Callable[[], Any], folder: str) -> tuple[Any, Any]:
    """(mine(), theirs()), theirs computed in a helper forked from this process (`pools.fork_helper`, its result
    passed through a file of `folder`) while this process computes mine; the helper killed if mine fails."""
    h = fork_helper(theirs, folder, "marked_ten's second process")
    try:
        got = mine()
    except BaseException:
        h.cancel()
        raise
    return got, h.join()


def finalize_parts(parts: Sequence[MarkedTenCounts], folds: int = 5, targets: Sequence[str] = TARGETS,
                   gate_rule: str = "any", min_deals: int = MIN_DEALS, details: bool = True,
                   work_dir: str | None = None, helper: bool = False) -> list[TestResult]:
    """`MarkedTen.finalize` over the counts of parts of the input, in part order (issue 15), with the memory of
    about one part plus one player: the per-part arrays of the fit are kept in `work_dir` (None: in memory), each
    Newton pass of the conditional logit sums the parts' `clogit_pass5` in part order, and the players' tests read
    one player at a time, his decisions gathered from the parts in the whole's key order. On one part the numbers
    are `results_from_scores(score_all(counts))`'s bit for bit (the spec, tests/test_marked_ten_spill.py); on
    several the fit's sums associate differently in the last bits (every number is a decision's own or a sum in
    the whole's order but for the fitted coefficients)."""
    store = _Store(work_dir)
    try:
        run = _Run(parts, folds, targets, gate_rule, store)
        run.prepare()
        # in two processes (`fit_in_two`, `results(helper=True)`) where the caller allows a helper, the arrays are
        # in files, and the input is large enough (`HELPER_MIN_DEALS`): the same numbers as one process
        two = helper and store.dir is not None and sum(p.n_deals for p in parts) >= HELPER_MIN_DEALS
        if two and len(run.targets) > 1:
            run.fit_in_two()
        else:
            for t in run.targets:
                run.fit_target(t)
        return run.results(min_deals, details, helper=two)
    finally:
        store.close()
