"""`play_facts.walk` over the table (`AuditColumns`), in numba: the one walk of the play that the play tests'
counts (`marked_ten`, `collusion`, `revoke_pattern`) read.

`walk(res)` derives everything it steps through from a handful of per-deal facts: why the deal cannot be walked
(`deal_exclusion`), the game, the void rule, how many tricks each set has (the layout; All Fours: the tricks
played), the Russian extra-card seat, the cards out of play for everyone (All Fours turn-ups, the shown dead card),
the turn-up's owner and the pack, and the revokes the replay found. `walk_setup(table)` computes them once per
input, vectorised, with one `layout` per distinct (rules, players, dealer).

`walk_deal(row, arrays, buf, fields)` then walks one deal as `walk` does: it rebuilds each seat's cards per set from the
plays (the hands themselves are never needed) and writes, for every play in play order, what `walk`'s `PlayState`
holds at that play into the row of `buf.plays` with the play's index (its columns `P_*`: seat, card, trick, position
(the trick's first play and size in `buf.tricks`), the suit led, the trick's winner so far, the cards played before,
the seat's unplayed cards of the set, its legal cards, the two-card turn, the revoke, every seat's shown voids); it
returns the deal's facts (`WalkDeal`). The winner so far, the legal cards and the voids are computed only for a
count that asks for them (`fields`, `WALK_*`); `walk_deal` is inlined into each count's kernel, which calls it for
each deal it keeps and reads the rows:

    buf = walk_buffers(arrays)                  # arrays = setup.arrays(table)
    for row in rows:
        d = walk_deal(row, arrays, buf, WALK_WINNER | WALK_LEGAL)   # what the count needs beyond the rest
        for i in range(d.n_plays):
            ... buf.plays[i, P_LEGAL] ...

The small numba functions below transcribe `PlayState.beats`, `legal.legal_mask` and `rules.trump_strength` on
int64 bitmasks (cards 0..51 fit below the sign bit), with `lead` -1 for "this seat leads".
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Sequence

import numba
import numpy as np

from ..cards import parse_card, rank_of
from ..columns import TIME_NONE, AuditColumns, natural_key
from ..rules import layout
from .base import MAX_BINS, MAX_LEVEL, MINUTE_US, NO_TIME_BIN, Timeline
from .play_facts import counting

# `deal_exclusion` reasons, in the order it tests them; 0 = the deal can be walked
EXCLUSIONS = ("no_hands", "incomplete", "card_not_in_hand")
MAX_SETS = 4  # Scotch Whist 2 players dealt sets of six: 3 sets


@dataclass
class WalkSetup:
    """Per row: `why` (0 walkable, else 1 + index into EXCLUSIONS), `af` (All Fours), `must_trump` (void rule),
    `n_sets` and `per_set[:, j]` (tricks of set j), `extra` (the seat playing two cards to the last trick, -1),
    `out_public` (bitmask of the cards everybody knows are out of play), `owner` (Scotch Whist: the seat holding
    the turn-up, -1 none), `pack` (bitmask of the layout's pack); `rev_start[i]:rev_start[i + 1]` the row's slice
    of `cols.rev_trick` / `cols.rev_seat`. Layout facts are filled for walkable Scotch Whist rows (All Fours: one
    set of the tricks won, no extra card, no owner, pack 0)."""

    why: np.ndarray
    af: np.ndarray
    must_trump: np.ndarray
    n_sets: np.ndarray
    per_set: np.ndarray
    extra: np.ndarray
    out_public: np.ndarray
    owner: np.ndarray
    pack: np.ndarray
    rev_start: np.ndarray

    def excluded(self, rows: np.ndarray | None = None) -> dict[str, int]:
        """The `excluded_deals` dict of the rows `rows` (a bool mask; all rows when None), in the Python counters'
        key order (first seen)."""
        why = self.why if rows is None else self.why[rows]
        out: dict[str, int] = {}
        bad = why[why > 0]
        if len(bad):
            codes, first, counts = np.unique(bad, return_index=True, return_counts=True)
            for j in np.argsort(first, kind="stable"):
                out[EXCLUSIONS[int(codes[j]) - 1]] = int(counts[j])
        return out

    def arrays(self, table: AuditColumns) -> tuple:
        """What `walk_deal` reads, as one tuple (rows of the table and of this setup)."""
        return (self.af, self.must_trump, table.n, table.trump, self.n_sets, self.per_set, self.extra,
                self.out_public, self.rev_start, table.rev_trick, table.rev_seat, table.play_card, table.play_seat,
                table.play_trick, table.n_plays)


def walk_setup(cols: AuditColumns) -> WalkSetup:
    D = len(cols)
    rs_af = np.array([R.game == "all_fours" for R in cols.rulesets] + [False], bool)
    rs_must = np.array([R.switches.get("void_rule") == "must_trump_if_able" for R in cols.rulesets] + [False], bool)
    rset = cols.rset
    why = np.zeros(D, np.int8)
    why[cols.not_in_hand] = 3
    why[~cols.scored | (cols.trump < 0)] = 2
    why[~cols.has_hands] = 1
    af = rs_af[rset]
    must = rs_must[rset]
    # the layout facts per (rules, players, dealer): one `layout` per combination that occurs in a walkable
    # Scotch Whist deal (All Fours: one set of as many tricks as were won, no extra card)
    n = cols.n.astype(np.int64)
    key = (rset.astype(np.int64) << 8) | (n << 4) | cols.dealer.astype(np.int64)
    sw = (why == 0) & ~af
    K = (len(cols.rulesets) << 8) + 1
    t_sets = np.ones(K, np.int8)
    t_per = np.zeros((K, MAX_SETS), np.int16)
    t_extra = np.full(K, -1, np.int8)
    t_owner = np.full(K, -1, np.int8)
    t_pack = np.zeros(K, np.int64)
    for k in np.flatnonzero(np.bincount(key[sw], minlength=K)).tolist():
        L = layout(cols.rulesets[k >> 8], (k >> 4) & 15, k & 15)
        t_sets[k] = len(L.tricks_per_set)
        t_per[k, :len(L.tricks_per_set)] = L.tricks_per_set
        t_extra[k] = -1 if L.extra_card_seat is None else L.extra_card_seat
        t_owner[k] = -1 if L.turnup_owner is None else L.turnup_owner
        t_pack[k] = L.pack
    key[~sw] = K - 1  # the default entry: one set, no tricks, no extra card, no owner
    n_sets = t_sets[key]
    per_set = t_per[key]
    extra = t_extra[key]
    per_set[:, 0] = np.where(af, cols.n_winners, per_set[:, 0])
    # cards out of play for everyone: All Fours the turn-up(s), Scotch Whist the shown dead card
    card = np.where(af, cols.turn_up, cols.shown).astype(np.int64)
    out_public = np.where(card >= 0, np.int64(1) << np.maximum(card, 0), 0).astype(np.int64)
    bits: dict[str, int] = {}
    rows: list[int] = []
    ors: list[int] = []
    for i, runs in cols.runs.items():  # All Fours deals that ran the cards: every run's turn-up was seen
        for r in runs:
            tu = r["turn_up"]
            b = bits.get(tu)
            if b is None:
                c = parse_card(tu)
                b = bits[tu] = 0 if c is None else 1 << c
            rows.append(i)
            ors.append(b)
    if rows:
        rows_a = np.asarray(rows, np.int64)
        keep = af[rows_a]
        np.bitwise_or.at(out_public, rows_a[keep], np.asarray(ors, np.int64)[keep])
    rev_start = np.zeros(D + 1, np.int64)  # the revokes are in row order
    np.cumsum(np.bincount(cols.rev_row, minlength=D), out=rev_start[1:])
    return WalkSetup(why=why, af=af, must_trump=must, n_sets=n_sets, per_set=per_set, extra=extra,
                     out_public=out_public, owner=t_owner[key], pack=t_pack[key], rev_start=rev_start)


_LAST_SETUP: list[tuple[weakref.ref[AuditColumns], WalkSetup]] = []  # of the last table walked


def setup_of(table: AuditColumns) -> WalkSetup:
    """`walk_setup(table)`, computed once for the play tests of one audit (the setup of the last table asked for is
    kept while that table lives)."""
    if _LAST_SETUP and _LAST_SETUP[0][0]() is table:
        return _LAST_SETUP[0][1]
    su = walk_setup(table)
    _LAST_SETUP[:] = [(weakref.ref(table), su)]
    return su


def counting_table() -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> `play_facts.counting`, from the Python
    definition."""
    return rank_table(counting)


def rank_table(fn) -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> fn(game, trump, card): a per-card rule
    of the Python spec as the kernels' lookup table."""
    t = np.zeros((2, 2, 13), np.bool_)
    for g, game in enumerate(("scotch_whist", "all_fours")):
        for card in range(13):  # a spade, with spades trumps and then hearts trumps
            t[g, 1, rank_of(card)] = fn(game, 0, card)
            t[g, 0, rank_of(card)] = fn(game, 1, card)
    return t


# ---------------------------------------------------------------- numba transcriptions (int64 bitmasks)

SUIT13 = np.int64((1 << 13) - 1)


@numba.njit(cache=True, inline="always")
def suit_mask(s):
    return SUIT13 << np.int64(13 * s)


@numba.njit(cache=True, inline="always")
def low_bit(x):
    """Index of the lowest set bit of x (x != 0)."""
    n = 0
    if x & np.int64(0xFFFFFFFF) == 0:
        n += 32
        x >>= np.int64(32)
    if x & np.int64(0xFFFF) == 0:
        n += 16
        x >>= np.int64(16)
    if x & np.int64(0xFF) == 0:
        n += 8
        x >>= np.int64(8)
    if x & np.int64(0xF) == 0:
        n += 4
        x >>= np.int64(4)
    if x & np.int64(0x3) == 0:
        n += 2
        x >>= np.int64(2)
    if x & np.int64(0x1) == 0:
        n += 1
    return n


@numba.njit(cache=True, inline="always")
def count_bits(x):
    """The number of set bits of the int64 bitmask x (x >= 0)."""
    u = np.uint64(x)
    u = u - ((u >> np.uint64(1)) & np.uint64(0x5555555555555555))
    u = (u & np.uint64(0x3333333333333333)) + ((u >> np.uint64(2)) & np.uint64(0x3333333333333333))
    u = (u + (u >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((u * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, inline="always")
def strength(af, rank):
    """`rules.trump_strength`: the Scotch Whist Jack of trumps beats the Ace."""
    if not af and rank == 9:
        return 13
    return rank


@numba.njit(cache=True, inline="always")
def beats(af, trump, a, b):
    """`PlayState.beats`: card a, played after b, beats b."""
    sa = a // 13
    sb = b // 13
    if sa == sb:
        if sa == trump:
            return strength(af, a % 13) > strength(af, b % 13)
        return a % 13 > b % 13
    return sa == trump


@numba.njit(cache=True, inline="always")
def legal(af, hold, lead, trump, must_trump):
    """`legal.legal_mask` (lead -1: the seat leads)."""
    if lead < 0 or hold == 0:
        return hold
    follow = hold & suit_mask(lead)
    if af:
        if follow != 0:
            return follow | (hold & suit_mask(trump))
        return hold
    if follow != 0:
        return follow
    if must_trump and (hold & suit_mask(trump)) != 0:
        return hold & suit_mask(trump)
    return hold


@numba.njit(cache=True, inline="always")
def is_revoke(rev_trick, rev_seat, a, b, k1, s):
    """(k1, s) is among the row's revokes rev_*[a:b] (k1 1-based)."""
    for j in range(a, b):
        if rev_trick[j] == k1 and rev_seat[j] == s:
            return True
    return False


@numba.njit(cache=True)
def hands_by_set(row, n, n_sets, per_set, set_of_trick, play_card, play_seat, play_trick, n_plays, by_set):
    """Each seat's cards per set, from the plays (as `walk`); fills set_of_trick[:n_tricks] and by_set[:n, :n_sets];
    returns n_tricks."""
    n_tricks = 0
    for j in range(n_sets):
        for _ in range(per_set[row, j]):
            set_of_trick[n_tricks] = j
            n_tricks += 1
    for s in range(n):
        for j in range(n_sets):
            by_set[s, j] = 0
    for i in range(n_plays[row]):
        k = play_trick[row, i]
        by_set[play_seat[row, i], set_of_trick[k]] |= np.int64(1) << np.int64(play_card[row, i])
    return n_tricks


# ---------------------------------------------------------------- the walk of one deal

# the columns of one play's row in `WalkBuffers.plays` (what `play_facts.PlayState` holds at that play)
P_SEAT = 0  # the seat playing
P_CARD = 1  # the card played
P_TRICK = 2  # trick, 0-based (`PlayState.k`); its first play and size: `WalkBuffers.tricks[trick]`
P_POS = 3  # position in the trick, 0 = lead
P_LEAD = 4  # the suit led, -1 when leading
P_WIN_SEAT = 5  # seat winning the trick so far, -1 when leading (`PlayState.win`)
P_WIN_CARD = 6  # its card, -1 when leading
P_PLAYED = 7  # cards played before this play (`PlayState.played`)
P_HOLD = 8  # the seat's unplayed cards of the current set, before the play
P_LEGAL = 9  # its legal cards (`legal_mask`; all its cards at the two-card turn)
P_TWO = 10  # 1: the Russian 5-player eldest's two cards in the last trick (no choice made)
P_REVOKE = 11  # 1: this play is a revoke the replay found
P_VOIDS = 12  # suits shown void in this set before the play: seat j's at bits 4j..4j+3 (`PlayState.void`)
N_PLAY_COLS = 13
T_FIRST = 0  # of a trick (`WalkBuffers.tricks`): the index of its first play in the deal's plays
T_COUNT = 1  # its plays (n, or n + 1 in the Russian two-card last trick)

# what a count asks the walk for beyond the rest (`walk_deal`'s `fields`, or-ed): what it does not ask for is not
# computed, and its columns keep "unknown" (-1 for the winner, 0 for legal cards and voids)
WALK_WINNER = 1  # P_WIN_SEAT, P_WIN_CARD
WALK_LEGAL = 2  # P_LEGAL
WALK_VOIDS = 4  # P_VOIDS

MAX_TRICKS = 128  # at most 52 plays, so fewer tricks

WalkBuffers = namedtuple("WalkBuffers", ("plays", "tricks", "by_set", "set_of_trick", "hold"))
WalkBuffers.__doc__ = """Scratch arrays of `walk_deal`, made once per kernel call by `walk_buffers`: `plays` (one row
per play of the deal, columns `P_*`), `tricks` (one row per trick, columns `T_*`), `by_set[seat, set]` (each seat's
cards per set), `set_of_trick`, and the running `hold` per seat."""
WalkDeal = namedtuple("WalkDeal", ("n", "trump", "af", "must", "n_tricks", "n_plays", "out_public"))
WalkDeal.__doc__ = """One walked deal's facts (`walk_deal`): players, trump suit, All Fours, the void rule is must
trump, tricks, plays, the cards out of play for everyone."""


@numba.njit(cache=True)
def walk_buffers(arrays):
    """The scratch arrays of `walk_deal` for deals of these `arrays` (`WalkSetup.arrays`)."""
    plays = np.zeros((max(arrays[11].shape[1], 1), N_PLAY_COLS), np.int64)
    plays[:, P_WIN_SEAT] = -1
    plays[:, P_WIN_CARD] = -1
    return WalkBuffers(plays, np.zeros((MAX_TRICKS, 2), np.int64), np.zeros((8, MAX_SETS), np.int64),
                       np.zeros(MAX_TRICKS, np.int64), np.zeros(8, np.int64))


@numba.njit(cache=True, inline="always")
def walk_deal(row, arrays, buf, fields):
    """Walk the plays of the table's row `row` (a walkable deal: `WalkSetup.why` 0) as `play_facts.walk` does,
    writing play i's state into `buf.plays[i]` (columns `P_*`; of the optional ones, the `fields` asked for:
    `WALK_*`, or-ed, a constant of the count's kernel); returns the deal's `WalkDeal`.

    Inlined into each count's kernel, so that what a count does not ask for costs nothing there."""
    (af_a, must_a, n_a, trump_a, n_sets_a, per_set, extra_a, out_public_a, rev_start, rev_trick, rev_seat,
     play_card, play_seat, play_trick, n_plays) = arrays
    W = buf.plays
    by_set = buf.by_set
    set_of_trick = buf.set_of_trick
    hold = buf.hold
    winner = (fields & WALK_WINNER) != 0
    with_legal = (fields & WALK_LEGAL) != 0
    with_voids = (fields & WALK_VOIDS) != 0
    af = af_a[row]
    n = np.int64(n_a[row])
    trump = np.int64(trump_a[row])
    must = must_a[row]
    extra = np.int64(extra_a[row])
    ra = rev_start[row]
    rb = rev_start[row + 1]
    n_tricks = hands_by_set(row, n, np.int64(n_sets_a[row]), per_set, set_of_trick, play_card, play_seat,
                            play_trick, n_plays, by_set)
    np_ = np.int64(n_plays[row])
    played = np.int64(0)
    voids = np.int64(0)  # seat s's suits shown void at bits 4s..4s+3
    i = 0
    for k in range(n_tricks):
        j = set_of_trick[k]
        if k == 0 or set_of_trick[k - 1] != j:  # a new hand: voids shown in the last set say nothing of it
            for o in range(n):
                hold[o] = by_set[o, j]
            voids = np.int64(0)
        first = i
        while i < np_ and play_trick[row, i] == k:
            i += 1
        cnt = i - first
        buf.tricks[k, T_FIRST] = first
        buf.tricks[k, T_COUNT] = cnt
        lead = np.int64(-1)
        ws = np.int64(-1)
        wc = np.int64(-1)
        for p in range(cnt):
            q = first + p
            s = np.int64(play_seat[row, q])
            c = np.int64(play_card[row, q])
            cs = c // 13
            two = extra >= 0 and s == extra and cnt == n + 1 and k == n_tricks - 1
            rev = p > 0 and cs != lead and is_revoke(rev_trick, rev_seat, ra, rb, k + 1, s)
            W[q, P_SEAT] = s
            W[q, P_CARD] = c
            W[q, P_TRICK] = k
            W[q, P_POS] = p
            W[q, P_LEAD] = lead
            W[q, P_PLAYED] = played
            W[q, P_HOLD] = hold[s]
            if with_legal:
                W[q, P_LEGAL] = hold[s] if two else legal(af, hold[s], lead, trump, must)
            W[q, P_TWO] = two
            W[q, P_REVOKE] = rev
            # the public consequences of the play
            if with_voids:
                W[q, P_VOIDS] = voids
                if lead >= 0 and cs != lead and not two and not rev:
                    if not af or cs != trump:  # All Fours: trumping shows nothing
                        voids |= np.int64(1) << (4 * s + lead)
                    if not af and must and cs != trump:
                        voids |= np.int64(1) << (4 * s + trump)
            hold[s] &= ~(np.int64(1) << c)
            played |= np.int64(1) << c
            if winner:
                W[q, P_WIN_SEAT] = ws
                W[q, P_WIN_CARD] = wc
                if ws < 0 or beats(af, trump, c, wc):
                    ws = s
                    wc = c
            if lead < 0:
                lead = cs
    return WalkDeal(n, trump, af, must, n_tricks, np_, out_public_a[row])



# ---------------------------------------------------------------- bounded counts of the play tests (issue 15)


@dataclass(eq=False)
class BinnedGroups:
    """Trials of many subjects, counted per (subject, bin, group): bounded (subjects x bins x groups, never deals)
    and exact (integers only), the compact counts of `collusion` (subject: an ordered pair, group: a deal's
    pattern of chances) and `revoke_pattern` (subject: a player, group: a revoke's chance pi of paying).

    A bin is `base.Timeline`'s: (table, time in minutes >> level), untimed deals one bin at the end of their table;
    each subject has its own `level`, the smallest at which it has at most `max_bins` bins (the rule of `Timeline`,
    whose MAX_BINS is the default, so any partition of the input merges to the same bins). Row i: subject `subj[i]` (index into
    `subjects`), bin (`tb[i]` into `tables`, `tbin[i]`), group `grp[i]` (index into `groups`), `n[i]` trials of which
    `k[i]` had the event. The structure is canonical: `subjects`, `groups` and `tables` sorted, the rows sorted by
    (subject, table, bin, group) and every (subject, table, bin, group) once, so equal trials give equal fields
    whatever the partition of the input or the order of its rows.

    A group's null probability may be known only in `finalize` (collusion's leave-pair-out rates): `timeline(i, p)`
    then lays out the subject's `Timeline` (n, events, sum of p, sum of p(1 - p) per bin) from the groups' p."""

    subjects: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    level: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per subject
    subj: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    tb: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    tbin: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    grp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    k: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    max_bins: int = MAX_BINS

    def __len__(self) -> int:
        return len(self.n)

    def __eq__(self, other: object) -> bool:
        """Equal fields, the arrays' dtypes included (the counts of equal trials are equal, field for field)."""
        if type(other) is not BinnedGroups:
            return NotImplemented
        for f in self.__dataclass_fields__:
            x, y = getattr(self, f), getattr(other, f)
            if isinstance(x, np.ndarray):
                if x.dtype != y.dtype or not np.array_equal(x, y):
                    return False
            elif type(x) is not type(y) or x != y or (
                    isinstance(x, list) and [type(v) for v in x] != [type(v) for v in y]):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    @staticmethod
    def of(subjects: Sequence, subj: np.ndarray, groups: Sequence, grp: np.ndarray, tables: Sequence[str],
           tb: np.ndarray, time_us: np.ndarray, k: np.ndarray, max_bins: int = MAX_BINS) -> "BinnedGroups":
        """One row per trial (parallel arrays indexing `subjects`, `groups`, `tables`; `time_us` as
        `AuditColumns.time`, `k` the event 0/1), in any order."""
        time_us = np.asarray(time_us, np.int64)
        tbin = np.where(time_us == TIME_NONE, NO_TIME_BIN, time_us // MINUTE_US)
        return _settle(list(subjects), np.asarray(subj, np.int64), np.zeros(len(subjects), np.int64),
                       list(groups), np.asarray(grp, np.int64), list(tables), np.asarray(tb, np.int64), tbin,
                       np.ones(len(tbin), np.int64), np.asarray(k, np.int64), max_bins)

    @staticmethod
    def of_keys(subject_of: Sequence, group_of: Sequence, tables: Sequence[str], tb: np.ndarray, time_us: np.ndarray,
                k: np.ndarray, max_bins: int = MAX_BINS) -> "BinnedGroups":
        """`of` with each trial's subject and group given by key (`subject_of[i]`, `group_of[i]`)."""
        s_ids: dict = {}
        g_ids: dict = {}
        subj = np.array([s_ids.setdefault(x, len(s_ids)) for x in subject_of], np.int64)
        grp = np.array([g_ids.setdefault(x, len(g_ids)) for x in group_of], np.int64)
        return BinnedGroups.of(list(s_ids), subj, list(g_ids), grp, tables, tb, time_us, k, max_bins)

    @staticmethod
    def merge(parts: Sequence["BinnedGroups"]) -> "BinnedGroups":
        """The exact sum of the parts (all of one `max_bins`): the structure `of` gives for all their trials at
        once."""
        empty = BinnedGroups(max_bins=parts[0].max_bins) if parts else BinnedGroups()
        parts = [p for p in parts if len(p)]
        if not parts:
            return empty
        if len(parts) == 1:
            return parts[0]
        max_bins = parts[0].max_bins
        if any(p.max_bins != max_bins for p in parts):
            raise ValueError("BinnedGroups of different max_bins cannot be merged")
        ids: tuple[dict, dict, dict] = ({}, {}, {})
        maps = []
        for p in parts:
            maps.append([np.array([d.setdefault(x, len(d)) for x in lst], np.int64)
                         for d, lst in zip(ids, (p.subjects, p.groups, p.tables), strict=True)])
        level = np.zeros(len(ids[0]), np.int64)
        for p, (ms, _, _) in zip(parts, maps, strict=True):
            np.maximum.at(level, ms, p.level)
        subj, grp, tb, tbin = [], [], [], []
        for p, (ms, mg, mt) in zip(parts, maps, strict=True):
            s = ms[p.subj]
            subj.append(s)
            grp.append(mg[p.grp])
            tb.append(mt[p.tb])
            tbin.append(coarsen(p.tbin, level[s] - p.level[p.subj]))
        cat = np.concatenate
        return _settle(list(ids[0]), cat(subj), level, list(ids[1]), cat(grp), list(ids[2]), cat(tb), cat(tbin),
                       cat([p.n for p in parts]), cat([p.k for p in parts]), max_bins)

    @staticmethod
    def join(parts: Sequence["BinnedGroups"]) -> "BinnedGroups":
        """`merge` of parts whose subjects are disjoint (the groups of `collusion.join_shards`), without sorting
        rows or holding them twice: each part is canonical, its keys sorted as the whole's are, so a subject's rows
        keep their order with the keys renumbered, and go to the subject's place among the sorted subjects (its
        level is its own: the parts' subjects meet no other trials). Parts that share a subject are merged."""
        parts = [p for p in parts if len(p)]
        if len(parts) < 2:
            return BinnedGroups.merge(parts)
        max_bins = parts[0].max_bins
        seen: set = set()
        for p in parts:
            if p.max_bins != max_bins or not seen.isdisjoint(p.subjects):
                return BinnedGroups.merge(parts)
            seen.update(p.subjects)
        subjects = sorted(seen)
        groups = sorted({g for p in parts for g in p.groups})
        tables = sorted({t for p in parts for t in p.tables}, key=lambda name: (natural_key(name), name))
        s_id = {x: i for i, x in enumerate(subjects)}
        g_id = {x: i for i, x in enumerate(groups)}
        t_id = {x: i for i, x in enumerate(tables)}
        rows = np.zeros(len(subjects), np.int64)  # per subject of the whole: its rows
        level = np.zeros(len(subjects), np.int64)
        maps = []
        for p in parts:
            ms = np.array([s_id[x] for x in p.subjects], np.int64)
            own = np.bincount(p.subj, minlength=len(p.subjects))  # the part's rows per subject
            rows[ms] = own
            level[ms] = p.level
            maps.append((ms, np.r_[0, np.cumsum(own)[:-1]]))
        start = np.r_[0, np.cumsum(rows)[:-1]]
        total = int(rows.sum())
        out = BinnedGroups(subjects, groups, tables, level, np.empty(total, np.int32), np.empty(total, np.int32),
                           np.empty(total, np.int64), np.empty(total, np.int32), np.empty(total, np.int64),
                           np.empty(total, np.int64), max_bins)
        for p, (ms, first) in zip(parts, maps, strict=True):  # first: each subject's first row in the part
            dest = start[ms[p.subj]] + (np.arange(len(p.subj)) - first[p.subj])
            out.subj[dest] = ms[p.subj]
            out.tb[dest] = np.array([t_id[x] for x in p.tables], np.int64)[p.tb]
            out.tbin[dest] = p.tbin
            out.grp[dest] = np.array([g_id[x] for x in p.groups], np.int64)[p.grp]
            out.n[dest] = p.n
            out.k[dest] = p.k
        return out

    def subset(self, keep: np.ndarray) -> "BinnedGroups":
        """The trials of the subjects `keep` marks (a bool per subject), in canonical form: the structure `of` gives
        for those subjects' trials alone (each subject's bins are its own), so subsets of the parts merge to the
        subset of the merge."""
        rows = np.asarray(keep, bool)[self.subj]
        if not rows.any():
            return BinnedGroups(max_bins=self.max_bins)
        return _settle(list(self.subjects), self.subj[rows].astype(np.int64), self.level.copy(), list(self.groups),
                       self.grp[rows].astype(np.int64), list(self.tables), self.tb[rows].astype(np.int64),
                       self.tbin[rows], self.n[rows], self.k[rows], self.max_bins)

    def spans(self) -> dict:
        """{subject: (first row, end row)}: each subject's rows."""
        if not len(self):
            return {}
        starts = np.flatnonzero(np.r_[True, self.subj[1:] != self.subj[:-1]])
        ends = np.r_[starts[1:], len(self.subj)]
        return {self.subjects[int(s)]: (int(a), int(b))
                for s, a, b in zip(self.subj[starts].tolist(), starts.tolist(), ends.tolist(), strict=True)}

    def totals(self, a: int, b: int) -> dict:
        """{group: [trials, events]} of the rows a:b (one subject's span)."""
        g = self.grp[a:b]
        n = np.bincount(g, self.n[a:b], minlength=len(self.groups))
        k = np.bincount(g, self.k[a:b], minlength=len(self.groups))
        return {self.groups[i]: [int(round(n[i])), int(round(k[i]))] for i in np.unique(g).tolist()}

    def timeline(self, a: int, b: int, p: np.ndarray) -> Timeline:
        """The `Timeline` of the rows a:b (one subject's span), the group `grp` having null probability `p[grp]`:
        per bin the trials, the events, the sum of p and of p(1 - p) (the groups of a bin added in `groups`' order,
        the same for every partition)."""
        g = self.grp[a:b]
        tb, tbin, n = self.tb[a:b], self.tbin[a:b], self.n[a:b]
        pg = np.asarray(p, float)[g]
        starts = np.flatnonzero(np.r_[True, (tb[1:] != tb[:-1]) | (tbin[1:] != tbin[:-1])])
        nf = n.astype(float)
        s = int(self.subj[a])
        return Timeline(level=int(self.level[s]), tables=list(self.tables), tb=tb[starts].astype(np.int32),
                        tbin=tbin[starts], n=np.add.reduceat(n, starts),
                        obs=np.add.reduceat(self.k[a:b].astype(float), starts),
                        exp=np.add.reduceat(nf * pg, starts), var=np.add.reduceat(nf * pg * (1 - pg), starts))


def coarsen(tbin: np.ndarray, by: np.ndarray | int) -> np.ndarray:
    """Bins `by` levels coarser (the untimed bin stays)."""
    return np.where(tbin == NO_TIME_BIN, NO_TIME_BIN, tbin >> np.asarray(by, np.int64))


def _canon(keys: list, idx: np.ndarray, key=None) -> tuple[list, np.ndarray, np.ndarray]:
    """The keys `idx` uses, sorted (by `key`), `idx` renumbered into them, and the old index of each new one."""
    used = np.unique(idx)
    ks = [keys[i] for i in used.tolist()]
    o = sorted(range(len(ks)), key=(lambda i: key(ks[i])) if key is not None else ks.__getitem__)
    old = used[np.asarray(o, np.int64)]
    new = np.zeros(len(keys), np.int64)
    new[old] = np.arange(len(o))
    return [keys[i] for i in old.tolist()], new[idx], old


def _keys_sorted(subjects: list, subj: np.ndarray, level: np.ndarray, groups: list, grp: np.ndarray, tables: list,
                 tb: np.ndarray) -> tuple[list, np.ndarray, np.ndarray, list, np.ndarray, list, np.ndarray]:
    """The used subjects (with their levels), groups and tables sorted (tables in natural order), the rows'
    indices renumbered into them."""
    subjects, subj, old = _canon(subjects, subj)
    groups, grp, _ = _canon(groups, grp)
    tables, tb, _ = _canon(tables, tb, lambda name: (natural_key(name), name))
    return subjects, subj, level[old], groups, grp, tables, tb


def _settle_spec(subjects: list, subj: np.ndarray, level: np.ndarray, groups: list, grp: np.ndarray, tables: list,
                 tb: np.ndarray, tbin: np.ndarray, n: np.ndarray, k: np.ndarray, max_bins: int) -> BinnedGroups:
    """`_settle`'s spec: the rows sorted again each time a subject's level is raised."""
    if not len(n):
        return BinnedGroups(max_bins=max_bins)
    subjects, subj, level, groups, grp, tables, tb = _keys_sorted(subjects, subj, level, groups, grp, tables, tb)
    while True:
        o = np.lexsort((grp, tbin, tb, subj))
        subj, tb, tbin, grp, n, k = subj[o], tb[o], tbin[o], grp[o], n[o], k[o]
        new = _row_starts(subj, tb, tbin)
        over = (np.bincount(subj[new], minlength=len(subjects)) > max_bins) & (level < MAX_LEVEL)
        if not over.any():
            break
        level = level + over
        tbin = coarsen(tbin, over[subj].astype(np.int64))
    return _binned(subjects, subj, level, groups, grp, tables, tb, tbin, n, k, new, max_bins)


def _settle(subjects: list, subj: np.ndarray, level: np.ndarray, groups: list, grp: np.ndarray, tables: list,
            tb: np.ndarray, tbin: np.ndarray, n: np.ndarray, k: np.ndarray, max_bins: int) -> BinnedGroups:
    """Canonical form: used keys sorted, each subject's level raised until it has at most `max_bins` bins, equal
    rows added, rows sorted: `_settle_spec`, with the levels found on one sort (a coarser bin is a run of finer
    ones in that order, so each subject's bins at every level are counted without sorting again) and one more sort
    at the levels reached (issue 15, as `base._settle`). The sums are of integers: the same whatever their order."""
    if not len(n):
        return BinnedGroups(max_bins=max_bins)
    subjects, subj, level, groups, grp, tables, tb = _keys_sorted(subjects, subj, level, groups, grp, tables, tb)
    o = np.lexsort((grp, tbin, tb, subj))
    subj, tb, tbin, grp, n, k = subj[o], tb[o], tbin[o], grp[o], n[o], k[o]
    up = np.zeros(len(subjects), np.int64)
    cb = tbin
    while True:
        new = _row_starts(subj, tb, cb)
        over = (np.bincount(subj[new], minlength=len(subjects)) > max_bins) & (level + up < MAX_LEVEL)
        if not over.any():
            break
        up = up + over
        cb = coarsen(tbin, up[subj])
    if up.any():
        level = level + up
        o = np.lexsort((grp, cb, tb, subj))
        subj, tb, tbin, grp, n, k = subj[o], tb[o], cb[o], grp[o], n[o], k[o]
        new = _row_starts(subj, tb, tbin)
    return _binned(subjects, subj, level, groups, grp, tables, tb, tbin, n, k, new, max_bins)


def _row_starts(subj: np.ndarray, tb: np.ndarray, tbin: np.ndarray) -> np.ndarray:
    """Where each (subject, table, bin) starts among rows sorted by them."""
    return np.r_[True, (subj[1:] != subj[:-1]) | (tb[1:] != tb[:-1]) | (tbin[1:] != tbin[:-1])]


def _binned(subjects: list, subj: np.ndarray, level: np.ndarray, groups: list, grp: np.ndarray, tables: list,
            tb: np.ndarray, tbin: np.ndarray, n: np.ndarray, k: np.ndarray, new: np.ndarray,
            max_bins: int) -> BinnedGroups:
    """The canonical form of rows sorted by (subject, table, bin, group), `new` marking each bin's first row."""
    cut = np.flatnonzero(np.r_[True, new[1:] | (grp[1:] != grp[:-1])])
    return BinnedGroups(subjects, groups, tables, level, subj[cut].astype(np.int32), tb[cut].astype(np.int32),
                        tbin[cut], grp[cut].astype(np.int32), np.add.reduceat(n, cut), np.add.reduceat(k, cut),
                        max_bins)
