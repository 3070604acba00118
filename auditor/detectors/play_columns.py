"""What `play_facts.walk` needs of every deal, as arrays, for the numba play counters over `AuditColumns`
(`collusion_fast`, `revoke_pattern_fast`).

`walk(res)` derives everything it steps through from a handful of per-deal facts: why the deal cannot be walked
(`deal_exclusion`), the game, the void rule, how many tricks each set has (the layout; All Fours: the tricks
played), the Russian extra-card seat, the cards out of play for everyone (All Fours turn-ups, the shown dead card),
and the revokes the replay found. `walk_setup(cols)` computes them once per input, vectorised, with one `layout`
per distinct (rules, players, dealer); the numba kernels then rebuild each seat's cards per set from the plays, as
`walk` does, so the hands themselves are never needed.

The small numba functions below transcribe `PlayState.beats`, `legal.legal_mask` and `rules.trump_strength` on
int64 bitmasks (cards 0..51 fit below the sign bit), with `lead` -1 for "this seat leads".
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..cards import parse_card, rank_of
from ..columns import AuditColumns
from ..rules import layout
from .play_facts import counting

# `deal_exclusion` reasons, in the order it tests them; 0 = the deal can be walked
EXCLUSIONS = ("no_hands", "incomplete", "card_not_in_hand")
MAX_SETS = 4  # Scotch Whist 2 players dealt sets of six: 3 sets


@dataclass
class WalkSetup:
    """Per row: `why` (0 walkable, else 1 + index into EXCLUSIONS), `af` (All Fours), `must_trump` (void rule),
    `n_sets` and `per_set[:, j]` (tricks of set j), `extra` (the seat playing two cards to the last trick, -1),
    `out_public` (bitmask of the cards everybody knows are out of play); `rev_start[i]:rev_start[i + 1]` the
    row's slice of `cols.rev_trick` / `cols.rev_seat`. Layout facts are filled for walkable rows only."""

    why: np.ndarray
    af: np.ndarray
    must_trump: np.ndarray
    n_sets: np.ndarray
    per_set: np.ndarray
    extra: np.ndarray
    out_public: np.ndarray
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
    for k in np.flatnonzero(np.bincount(key[sw], minlength=K)).tolist():
        L = layout(cols.rulesets[k >> 8], (k >> 4) & 15, k & 15)
        t_sets[k] = len(L.tricks_per_set)
        t_per[k, :len(L.tricks_per_set)] = L.tricks_per_set
        t_extra[k] = -1 if L.extra_card_seat is None else L.extra_card_seat
    key[~sw] = K - 1  # the default entry: one set, no tricks, no extra card
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
                     out_public=out_public, rev_start=rev_start)


def counting_table() -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> `play_facts.counting`, from the Python
    definition."""
    t = np.zeros((2, 2, 13), np.bool_)
    for g, game in enumerate(("scotch_whist", "all_fours")):
        for card in range(13):  # a spade, with spades trumps and then hearts trumps
            t[g, 1, rank_of(card)] = counting(game, 0, card)
            t[g, 0, rank_of(card)] = counting(game, 1, card)
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
