"""`shuffle_residue` and `trick_stack`: per dealer, how much of the previous deal's tricks survives his shuffle,
compared with the other dealers of his table (or, at tables with fewer than four dealers, of the club's tables of
the same kind).

For consecutive deals at a table (the previous deal with the same `pack` id, the same pack of cards, and its tricks
logged), two per-deal statistics, each as an excess over its exact perfect-shuffle expectation:

- `shuffle_residue`: adjacent positions of the new deck holding two cards of one trick of the previous deal. The
  deck is the logged `deck`, else the one the hands imply (`hands` in the order received, dealt by the rules;
  undealt positions are unknown and skipped). Barely shuffled tricks stay together and, dealt one card at a time,
  go to consecutive seats. Perfect-shuffle expectation: pairs × Σ_t k_t(k_t − 1) / (P(P − 1)).
- `trick_stack`: pairs of cards of one previous trick that are both in the dealer's own hand (a dealer who puts the
  richest trick he just saw into his hand). Expectation: Σ_t C(k_t, 2) · h(h − 1) / (P(P − 1)), h his hand size.

The perfect-shuffle line is only a reference: no person shuffles like a random number generator, and people differ
(two riffles leave far more than four). So the null is "he shuffles like a typical member of his table": within each
stratum the other dealers' mean excesses give a random-effects predictive distribution (DerSimonian–Laird: mean μ,
between-dealer variance τ², within-dealer variance σ² pooled over the peers' deals), his mean excess is scored
z = (m − μ) / sqrt(τ² + σ²/n + Var μ), converted through Student's t with (peers − 1) degrees of freedom to a normal
score, and the strata are combined with Stouffer weights √n. One-sided (more residue than his peers); the p-value
is the larger of that score's normal tail and the Poisson tail of his count at its expected value (`skew_safe_p`:
short hands make the counts small and skewed). The p-value
is approximate and calibrated by simulation (`auditor calibrate`); a sloppy honest shuffler inside the peers' range
is not flagged, a dealer well outside it is. A dealer alone at his tables has no peers and is not tested.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Sequence

import numba
import numpy as np

from ..cards import cards_of
from ..columns import NOCARD, TIME_NONE, AuditColumns, natural_key, result_order
from ..columns import (
    deck_of as _deck_of,  # the dealt order of the pack, as the audit's columns hold it
)
from ..columns import parsed_tricks as _tricks_of
from ..facts import DealingFacts, config
from ..rules import layout
from ..stats import exact, scipy_stats
from ..stats.family import TestResult
from .base import MIN_DETECTABLE_POWER, Timeline
from .spec import TestSpec

MIN_PEERS = 3  # peers a dealer needs; a table with more dealers than this is its own stratum for centring


def skew_safe_p(z: float, observed: float, expected: float) -> float:
    """The one-sided p-value: the larger of the normal tail of the predictive score z and the Poisson tail of the
    observed count at its expected value. A dealer's total is a sum of small counts (pairs of one trick), strongly
    skewed where hands are short (All Fours: two-card tricks, six-card hands); there the normal score alone was far
    too small in the tail (an honest dealer with 12 pairs where 3.3 were expected read p = 6e-6, Poisson 1e-4), and
    honest clubs of two-player tables were accused. Where dealers shuffle by hand the counts are overdispersed and
    the normal score, with the peers' spread, is the larger one."""
    p = float(scipy_stats().norm.sf(z))
    if expected > 0 and observed > expected:
        p = max(p, float(scipy_stats().poisson.sf(math.ceil(observed - 1e-9) - 1, expected)))
    return p


def residue(deck: list[int], tricks: list[list[int]], pack_size: int) -> tuple[int, float, int]:
    """(observed residue, perfect-shuffle expectation, residue if the gathered tricks were only cut)."""
    trick_of = {}
    for i, t in enumerate(tricks):
        for c in t:
            trick_of[c] = i
    obs = 0
    pairs = 0
    for a, b in zip(deck, deck[1:], strict=False):
        if a < 0 or b < 0:
            continue
        pairs += 1
        ta, tb = trick_of.get(a), trick_of.get(b)
        if ta is not None and ta == tb:
            obs += 1
    same = sum(len(t) * (len(t) - 1) for t in tricks)
    exp_ = pairs * same / (pack_size * (pack_size - 1))
    return obs, exp_, sum(len(t) - 1 for t in tricks)


def stack_pairs(hand: list[int], tricks: list[list[int]], pack_size: int) -> tuple[int, float, int]:
    """(pairs of one previous trick in the hand, perfect-shuffle expectation, pairs if the richest-size trick were
    placed whole in the hand)."""
    mine = set(hand)
    obs = 0
    same = 0
    for t in tricks:
        k = sum(1 for c in t if c in mine)
        obs += k * (k - 1) // 2
        same += len(t) * (len(t) - 1) // 2
    h = len(hand)
    exp_ = same * h * (h - 1) / (pack_size * (pack_size - 1))
    kmax = min(h, max((len(t) for t in tricks), default=0))
    return obs, exp_, kmax * (kmax - 1) // 2


STATS = ("residue", "stack")


def count_results(results: Sequence[Any]) -> dict:
    """{table: {"key", "dealer", "label", "residue_obs", "residue_exp", "residue_max", "stack_obs", ...}} over
    the deals that follow a logged deal at the same table (same pack id, same pack)."""
    by_table: dict[str, list] = {}
    for r in results:
        by_table.setdefault(r.deal.table, []).append(r)
    out = {}
    for table, rs in by_table.items():
        rs.sort(key=result_order)  # the canonical order of deals (`AuditColumns.order`)
        last: dict[Any, Any] = {}
        rows = []
        for r in rs:
            d = r.deal
            if not d.ruleset.min_players <= d.n <= d.ruleset.max_players:
                continue  # no layout: the deal neither counts nor is anyone's previous deal
            cfg = config(d.ruleset, d.n)
            L = layout(d.ruleset, d.n, d.dealer)
            prev = last.get(d.pack)
            last[d.pack] = (r, cfg)
            if prev is None:
                continue
            pr, pcfg = prev
            if pcfg.pack != cfg.pack:
                continue
            tricks = _tricks_of(pr.deal)
            if tricks is None:
                continue
            deck = _deck_of(d, L)
            res = residue(deck, tricks, cfg.pack_size) if deck is not None else (np.nan, np.nan, np.nan)
            hand = [c for c in _cards(r.hands[d.dealer])] if r.hands is not None else None
            stk = stack_pairs(hand, tricks, cfg.pack_size) if hand else (np.nan, np.nan, np.nan)
            rows.append((result_order(r), d.players[d.dealer], cfg.label, *res, *stk))
        if rows:
            cols = list(zip(*rows, strict=False))
            out[table] = {"key": np.array(cols[0], np.int64), "dealer": np.array(cols[1], dtype=object),
                          "label": np.array(cols[2], dtype=object)}
            for j, name in enumerate(("residue_obs", "residue_exp", "residue_max", "stack_obs", "stack_exp",
                                      "stack_max")):
                out[table][name] = np.array(cols[3 + j], dtype=float)
    return out


# ---------------------------------------------------------------- the same rows from the audit columns


@numba.njit(cache=True)
def _residue_rows_kernel(cur, prev, pack_size, deck, deck_len, hands, has_hands, dealer, play_card, play_trick,
                         n_plays, log_slot, log_ptr, log_card, log_trick, log_ntricks):  # pragma: no cover - numba
    """`residue` and `stack_pairs` of each (deal, previous deal of its pack): out[j] = residue obs, exp, max, stack
    obs, exp, max (NaN where the deck, or the dealer's hand, is unknown). The previous deal's tricks are its plays
    grouped by trick, or (log_slot >= 0) the recorded tricks of the log_* arrays."""
    m = len(cur)
    out = np.full((m, 6), np.nan)
    trick_of = np.empty(52, np.int64)
    sizes = np.zeros(64, np.int64)
    held = np.zeros(64, np.int64)
    for j in range(m):
        i, q, P = cur[j], prev[j], pack_size[j]
        ls = log_slot[q]
        if ls >= 0:
            a, b, ntr = log_ptr[ls], log_ptr[ls + 1], log_ntricks[ls]
        else:
            a, b, ntr = 0, n_plays[q], 0
            for t in range(b):
                ntr = max(ntr, play_trick[q, t] + 1)
        if ntr > len(sizes):
            sizes = np.zeros(2 * ntr, np.int64)
            held = np.zeros(2 * ntr, np.int64)
        trick_of[:] = -1
        sizes[:ntr] = 0
        held[:ntr] = 0
        hand = np.uint64(0)
        if has_hands[i]:
            hand = hands[i, dealer[i]]
        for t in range(a, b):
            if ls >= 0:
                c, k = log_card[t], log_trick[t]
            else:
                c, k = play_card[q, t], play_trick[q, t]
            if k > trick_of[c]:  # a card in two tricks belongs to the later one (a dict filled in trick order)
                trick_of[c] = k
            sizes[k] += 1
            if (hand >> np.uint64(c)) & np.uint64(1):
                held[k] += 1
        same2 = 0
        same1 = 0
        total = 0
        longest = 0
        for k in range(ntr):
            s = sizes[k]
            same2 += s * (s - 1)
            same1 += s * (s - 1) // 2
            total += s
            longest = max(longest, s)
        if deck_len[i] >= 0:
            pairs = 0
            obs = 0
            for p in range(deck_len[i] - 1):
                x, y = deck[i, p], deck[i, p + 1]
                if x == 255 or y == 255:
                    continue
                pairs += 1
                if trick_of[x] >= 0 and trick_of[x] == trick_of[y]:
                    obs += 1
            out[j, 0] = obs
            out[j, 1] = pairs * same2 / (P * (P - 1))
            out[j, 2] = total - ntr
        if hand != np.uint64(0):
            obs = 0
            for k in range(ntr):
                obs += held[k] * (held[k] - 1) // 2
            h = 0
            x = hand
            while x:
                x &= x - np.uint64(1)
                h += 1
            kmax = min(h, longest)
            out[j, 3] = obs
            out[j, 4] = same1 * h * (h - 1) / (P * (P - 1))
            out[j, 5] = kmax * (kmax - 1) // 2
    return out


_LAST: list[tuple[weakref.ref[AuditColumns], tuple[dict, dict, dict]]] = []  # the rows of the last table counted (both tests read them)


def rows_of(table: AuditColumns) -> tuple[dict, dict, dict]:
    """`_count_table(table)`, counted once for the two residue tests of one audit."""
    if _LAST and _LAST[0][0]() is table:
        return _LAST[0][1]
    rows = _count_table(table)
    _LAST[:] = [(weakref.ref(table), rows)]
    return rows


def count_table(cols: AuditColumns) -> dict:
    """`count_results(results)` from the table (`auditor.columns.from_results(results)`, or the batch pipeline's):
    the previous deal of each deal's pack at its table found by sorting, the residues counted by a numba kernel."""
    return _count_table(cols)[0]


def _count_table(cols: AuditColumns) -> tuple[dict, dict, dict]:
    """(`count_table`'s rows, {table: {"time", "size": each row's time and pack size}}, {table: [PackRun]}: each
    pack id's first and last deal in this piece of the table)."""
    D = len(cols)
    n = cols.n.astype(np.int64)
    gkey = cols.rset.astype(np.int64) * 256 + (n + 128)
    gkeys, ginv = np.unique(gkey, return_inverse=True)
    ginv = ginv.reshape(-1)
    g_ok = np.zeros(len(gkeys), bool)
    g_pack = np.zeros(len(gkeys), np.int64)
    g_size = np.zeros(len(gkeys), np.int64)
    labels: list[str] = []
    g_label = np.zeros(len(gkeys), np.int64)
    for g, k in enumerate(gkeys.tolist()):
        rules, n = cols.rulesets[k >> 8], (k & 0xFF) - 128
        if not rules.min_players <= n <= rules.max_players:
            continue  # no layout: the deal neither counts nor is anyone's previous deal
        cfg = config(rules, n)
        g_ok[g] = True
        g_pack[g], g_size[g] = cfg.pack, cfg.pack_size
        g_label[g] = len(labels)
        labels.append(cfg.label)
    rows = np.flatnonzero(g_ok[ginv])
    # each deal's previous deal of the same pack id at its table, in the canonical order (table, time, game, deal)
    table, pack, order = cols.table[rows], cols.pack[rows], cols.order[rows]
    o = np.lexsort((rows, order, pack, table))
    s = rows[o]
    same = np.zeros(len(s), bool)
    same[1:] = (table[o][1:] == table[o][:-1]) & (pack[o][1:] == pack[o][:-1])
    runs: dict[str, list[PackRun]] = {}
    firsts = np.flatnonzero(~same)
    lasts = np.r_[firsts[1:] - 1, len(s) - 1] if len(s) else firsts
    for f, last in zip(s[firsts].tolist(), s[lasts].tolist(), strict=True):
        g, gl = int(ginv[f]), int(ginv[last])
        runs.setdefault(cols.tables[int(cols.table[f])], []).append(PackRun(
            None if cols.pack[f] < 0 else cols.packs[int(cols.pack[f])],
            _end(cols, f, int(g_pack[g]), int(g_size[g]), labels[int(g_label[g])]),
            _end(cols, last, int(g_pack[gl]), int(g_size[gl]), labels[int(g_label[gl])])))
    cur, prev = s[1:][same[1:]], s[:-1][same[1:]]
    keep = g_pack[ginv[cur]] == g_pack[ginv[prev]]
    # the previous deal's tricks: its plays grouped by trick, or the recorded tricks where they differ
    log_slot = np.full(D, -1, np.int64)
    has_tricks = cols.n_plays > 0
    lp: list[int] = [0]
    lc: list[int] = []
    lt: list[int] = []
    ln: list[int] = []
    for r in sorted(cols.log_tricks):
        tr = cols.log_tricks[r]
        has_tricks[r] = tr is not None
        if tr is None:
            continue
        log_slot[r] = len(ln)
        for k, trick in enumerate(tr):
            lc += trick
            lt += [k] * len(trick)
        lp.append(len(lc))
        ln.append(len(tr))
    keep &= has_tricks[prev]
    cur, prev = cur[keep], prev[keep]
    # the rows of each table in the canonical order
    o = np.lexsort((cur, cols.order[cur], cols.table[cur]))
    cur, prev = cur[o], prev[o]
    vals = _residue_rows_kernel(
        cur, prev, g_size[ginv[cur]], cols.deck, cols.deck_len.astype(np.int64), cols.hands, cols.has_hands,
        cols.dealer.astype(np.int64), cols.play_card, cols.play_trick.astype(np.int64),
        cols.n_plays.astype(np.int64), log_slot, np.asarray(lp, np.int64), np.asarray(lc, np.uint8),
        np.asarray(lt, np.int64), np.asarray(ln, np.int64))
    names = np.array(cols.players + [""], dtype=object)
    dealer = names[cols.seat_player[cur, cols.dealer[cur].astype(np.int64)]]
    label = np.array(labels + [""], dtype=object)[g_label[ginv[cur]]]
    key = cols.order[cur].astype(np.int64)
    tab = cols.table[cur]
    out: dict[str, dict[str, np.ndarray]] = {}
    times: dict[str, dict[str, np.ndarray]] = {}
    if not len(cur):
        return out, times, runs
    starts = np.flatnonzero(np.r_[True, tab[1:] != tab[:-1]])
    ends = np.r_[starts[1:], len(cur)]
    spans = {int(tab[a]): (a, b) for a, b in zip(starts, ends, strict=False)}
    first_row = np.full(len(cols.tables), D, np.int64)  # tables in order of first appearance in the input
    np.minimum.at(first_row, cols.table.astype(np.int64), np.arange(D))
    for t in sorted(spans, key=lambda t: first_row[t]):
        a, b = spans[t]
        c = {"key": key[a:b], "dealer": dealer[a:b], "label": label[a:b]}
        for j, name in enumerate(("residue_obs", "residue_exp", "residue_max", "stack_obs", "stack_exp",
                                  "stack_max")):
            c[name] = vals[a:b, j].copy()
        out[cols.tables[t]] = c
        times[cols.tables[t]] = {"time": cols.time[cur[a:b]].astype(np.int64), "size": g_size[ginv[cur[a:b]]]}
    return out, times, runs


def _end(cols: AuditColumns, i: int, pack: int, size: int, label: str) -> DealEnd:
    """Row i as a piece's first or last deal of its pack id (`DealEnd`)."""
    gi = int(cols.game[i])
    deck = [int(c) for c in cols.deck[i, :int(cols.deck_len[i])]] if cols.deck_len[i] >= 0 else None
    hand = int(cols.hands[i, int(cols.dealer[i])]) if cols.has_hands[i] else 0
    dealer = cols.players[int(cols.seat_player[i, int(cols.dealer[i])])]
    tricks = cols.tricks_of(i) if (cols.n_plays[i] > 0 or i in cols.log_tricks) else None
    return DealEnd((int(cols.time[i]), cols.game_ids[gi] if gi >= 0 else "", int(cols.deal_no[i])), pack, size,
                   label, dealer, deck, hand, tricks)


def _cards(mask: int) -> list[int]:

    return cards_of(mask)


# ---------------------------------------------------------------- bounded counts (issue 15)


@dataclass
class DealEnd:
    """A piece's first or last deal of one pack id at a table: what the deal before it (for the first) or after it
    (for the last) in another piece of the same table needs, and its place in the canonical order `key` = (time in
    us, game id, deal number; TIME_NONE last, as `columns.canonical_order` sorts)."""

    key: tuple
    pack: int  # the pack of cards (`Config.pack`)
    pack_size: int
    label: str
    dealer: str
    deck: list[int] | None  # the dealt order (NOCARD where unknown), None when unknown
    hand: int  # the dealer's hand as a bitmask, 0 when unknown
    tricks: list[list[int]] | None  # its tricks (None: not logged)


@dataclass
class PackRun:
    """The first and the last deal of one pack id in a piece of a table."""

    pack_id: str | None
    first: DealEnd
    last: DealEnd


@dataclass
class TableCounts:
    """One table's bounded counts of one residue statistic (`shuffle_residue`'s or `trick_stack`'s).

    Per entry (configuration label, dealer): the deals `n` with the statistic known, and exact integer sums with
    scale N = P(P - 1) (P the label's pack size): x = obs - exp is the deal's excess, N x an integer, `sx` = sum of
    N x, `sxx` = sum of (N x)^2, `obs` = sum of the observed counts, `num` = sum of N exp, `top` = sum of the
    cheat's maxima; and the entry's `Timeline` of (observed, perfect-shuffle expectation). Integers add in any
    order, so the merge of any partition is exact. `runs`: each pack id's first and last deal, so that the merge of
    two pieces of the table joins them (the first deal of the later piece follows the last of the earlier one)."""

    labels: list[str] = field(default_factory=list)
    dealers: list[str] = field(default_factory=list)
    size: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sxx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    obs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    num: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    top: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    timelines: list[Timeline] = field(default_factory=list)
    runs: list[PackRun] = field(default_factory=list)
    overlaps: int = 0  # junctions where the later piece began before the earlier one ended (see `merge_tables`)


SUMS = ("n", "sx", "sxx", "obs", "num", "top")


def _entries(table: str, labels: np.ndarray, dealers: np.ndarray, size: np.ndarray, obs: np.ndarray,
             exp: np.ndarray, top: np.ndarray, time: np.ndarray) -> TableCounts:
    """The bounded counts of one table's rows of one statistic (NaN rows dropped)."""
    ok = ~np.isnan(obs)
    labels, dealers, size, obs, exp, top, time = (a[ok] for a in (labels, dealers, size, obs, exp, top, time))
    out = TableCounts()
    if not len(obs):
        return out
    N = size * (size - 1)
    o_i = np.rint(obs).astype(np.int64)
    num = np.rint(exp * N).astype(np.int64)  # exp = num / N exactly: N exp is an integer below 2^53
    X = o_i * N - num
    # (label, dealer) entries in sorted order: as tuples, so that a name holding any character (a NUL too: the
    # fuzz tier's hostile names) stays one name
    pairs = [(str(a), str(b)) for a, b in zip(labels.tolist(), dealers.tolist(), strict=True)]
    uniq = sorted(set(pairs))
    where = {p: j for j, p in enumerate(uniq)}
    inv = np.fromiter((where[p] for p in pairs), np.int64, len(pairs))
    k = len(uniq)
    for lab, dl in uniq:
        out.labels.append(lab)
        out.dealers.append(dl)
    first = np.zeros(k, np.int64)
    first[inv[::-1]] = np.arange(len(inv))[::-1]
    out.size = size[first].astype(np.int64)
    out.n = np.bincount(inv, minlength=k).astype(np.int64)
    out.sx, out.sxx, out.obs, out.num, out.top = (_isum(inv, v, k) for v in (X, X * X, o_i, num,
                                                                             np.rint(top).astype(np.int64)))
    for j in range(k):
        m = inv == j
        out.timelines.append(Timeline.of([table], np.zeros(int(m.sum()), np.int64), time[m], obs[m], exp[m]))
    return out


def _isum(inv: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros(k, np.int64)
    np.add.at(out, inv, v.astype(np.int64))
    return out


def table_counts(rows: dict, times: dict, runs: dict, stat: str) -> dict[str, TableCounts]:
    """{table: TableCounts} of one statistic from `_count_table`'s rows, times and pack runs."""
    out = {}
    for table in rows.keys() | runs.keys():
        c = rows.get(table)
        if c is not None:
            tc = _entries(table, c["label"], c["dealer"], times[table]["size"], c[f"{stat}_obs"],
                          c[f"{stat}_exp"], c[f"{stat}_max"], times[table]["time"])
        else:
            tc = TableCounts()
        tc.runs = list(runs.get(table, []))
        out[table] = tc
    return dict(sorted(out.items()))


def _row_of(prev: DealEnd, cur: DealEnd, stat: str) -> tuple[float, float, float] | None:
    """The statistic of `cur` after `prev` (the junction of two pieces), as `count_results` counts it; None when
    it is not a trial (another pack of cards, no tricks logged, the deck or hand unknown)."""
    if prev.pack != cur.pack or prev.tricks is None:
        return None
    if stat == "residue":
        if cur.deck is None:
            return None
        deck = [-1 if c == NOCARD else c for c in cur.deck]
        return residue(deck, prev.tricks, cur.pack_size)
    if not cur.hand:
        return None
    return stack_pairs(cards_of(cur.hand), prev.tricks, cur.pack_size)


def _sort_key(key: tuple) -> tuple:
    return (key[0], natural_key(key[1]), key[2])


def merge_tables(parts: Sequence[TableCounts], table: str, stat: str) -> TableCounts:
    """The exact merge of pieces of one table. The pieces are taken in the canonical order of their first deals;
    at each junction of a pack id the later piece's first deal follows the earlier piece's last deal (its row is
    counted here, from the carried `DealEnd`s), as in the whole table when the pieces are disjoint in time (last
    month's saved counts, then this month's log). Pieces that overlap in time (a piece begins before an earlier
    one of the same pack id ends) are still joined end to start, each keeping its own sequence: the rows at the
    junction are then not those of the interleaved whole (deals of one piece between deals of the other would
    have had other previous deals); such junctions are counted in `overlaps`. A merge joins only the pieces it is
    given: merging two pieces with a third one of the same table later in between would join them wrongly."""
    parts = [p for p in parts if len(p.labels) or p.runs]
    if len(parts) == 1:
        return parts[0]
    parts = sorted(parts, key=lambda p: min((_sort_key(r.first.key) for r in p.runs), default=(TIME_NONE,)))
    extra: list[tuple[str, str, int, float, float, float, int]] = []
    open_runs: dict[str | None, PackRun] = {}
    overlaps = sum(p.overlaps for p in parts)
    for p in parts:
        for r in p.runs:
            prev = open_runs.get(r.pack_id)
            if prev is None:
                open_runs[r.pack_id] = r
                continue
            if _sort_key(prev.last.key) > _sort_key(r.first.key):
                overlaps += 1
            row = _row_of(prev.last, r.first, stat)
            if row is not None:
                cur = r.first
                extra.append((cur.label, cur.dealer, cur.pack_size, *row, cur.key[0]))
            open_runs[r.pack_id] = PackRun(r.pack_id, prev.first, r.last)
    pieces = list(parts)
    if extra:
        cols = list(zip(*extra, strict=True))
        pieces.append(_entries(table, np.array(cols[0], dtype=object), np.array(cols[1], dtype=object),
                               np.array(cols[2], np.int64), np.array(cols[3], float), np.array(cols[4], float),
                               np.array(cols[5], float), np.array(cols[6], np.int64)))
    index: dict[tuple[str, str], int] = {}
    for p in pieces:
        for lab, dl in zip(p.labels, p.dealers, strict=True):
            index.setdefault((lab, dl), len(index))
    k = len(index)
    out = TableCounts([e[0] for e in index], [e[1] for e in index], np.zeros(k, np.int64))
    for name in SUMS:
        setattr(out, name, np.zeros(k, np.int64))
    tls: list[list[Timeline]] = [[] for _ in range(k)]
    for p in pieces:
        at = np.array([index[e] for e in zip(p.labels, p.dealers, strict=True)], np.int64)
        out.size[at] = p.size
        for name in SUMS:
            np.add.at(getattr(out, name), at, getattr(p, name))
        for j, tl in zip(at.tolist(), p.timelines, strict=True):
            tls[j].append(tl)
    out.timelines = [Timeline.merge(t) for t in tls]
    out.runs = list(open_runs.values())
    out.overlaps = overlaps
    return out


# ---------------------------------------------------------------- the strata, from the bounded counts


@dataclass
class _Stratum:
    name: str
    dealers: list[str]  # each dealer of the stratum once, sorted
    n: list[int]
    sx: list[Fraction]  # sums of x, exact
    sxx: list[Fraction]
    obs: list[int]
    exp: list[Fraction]  # sums of the perfect-shuffle expectation, exact
    top: list[int]
    timelines: list[list[Timeline]]

    def total(self, field_: str):
        return sum(getattr(self, field_))

    def mean(self) -> Fraction:
        return self.total("sx") / self.total("n")

    def sd(self, lone: float) -> float:
        """The sample sd of the stratum's deal excesses (`lone` when it has one deal), as numpy's std(ddof=1)."""
        n = self.total("n")
        if n <= 1:
            return lone
        m = self.mean()
        var = (self.total("sxx") - n * m * m) / (n - 1)
        return math.sqrt(max(float(var), 0.0))


def _strata(counts: dict[str, TableCounts]) -> list[_Stratum]:
    """Tables with more than MIN_PEERS dealers are their own stratum; the others pool by configuration."""
    strata = []
    pooled: dict[str, list[tuple[TableCounts, int]]] = {}
    for table in sorted(counts):
        c = counts[table]
        live = [j for j in range(len(c.labels)) if c.n[j] > 0]
        if not live:
            continue
        if len({c.dealers[j] for j in live}) > MIN_PEERS:
            strata.append(_stratum(table, [(c, j) for j in live]))
        else:
            for j in live:
                pooled.setdefault(c.labels[j], []).append((c, j))
    for lab, ents in sorted(pooled.items()):
        strata.append(_stratum(f"club:{lab}", ents))
    return strata


def _stratum(name: str, ents: list[tuple[TableCounts, int]]) -> _Stratum:
    by: dict[str, list[tuple[TableCounts, int]]] = {}
    for c, j in ents:
        by.setdefault(c.dealers[j], []).append((c, j))
    st = _Stratum(name, sorted(by), [], [], [], [], [], [], [])
    for d in st.dealers:
        es = by[d]
        N = [int(c.size[j]) * (int(c.size[j]) - 1) for c, j in es]
        st.n.append(sum(int(c.n[j]) for c, j in es))
        st.sx.append(sum((Fraction(int(c.sx[j]), Nj) for (c, j), Nj in zip(es, N, strict=True)), Fraction(0)))
        st.sxx.append(sum((Fraction(int(c.sxx[j]), Nj * Nj) for (c, j), Nj in zip(es, N, strict=True)),
                          Fraction(0)))
        st.obs.append(sum(int(c.obs[j]) for c, j in es))
        st.exp.append(sum((Fraction(int(c.num[j]), Nj) for (c, j), Nj in zip(es, N, strict=True)), Fraction(0)))
        st.top.append(sum(int(c.top[j]) for c, j in es))
        st.timelines.append([c.timelines[j] for c, j in es])
    return st


def _people(strata: list[_Stratum]) -> dict:
    """Deal-level excesses standardised within their stratum (table or pooled configuration), then summarised per
    person: a person's shuffling is his own, the same at every table, so people are the units compared. From the
    exact sums: sum of y = (sum x - n mean) / sd, sum of y^2 = sum (x - mean)^2 / sd^2."""
    acc: dict[str, list] = {}
    for st in strata:
        m = st.mean()
        sd = st.sd(0.0)
        den = sd if sd > 1e-9 else 1.0
        for j, d in enumerate(st.dealers):
            a = acc.setdefault(d, [0, 0.0, 0.0])
            a[0] += st.n[j]
            a[1] += float(st.sx[j] - st.n[j] * m) / den
            a[2] += float(st.sxx[j] - 2 * m * st.sx[j] + st.n[j] * m * m) / (den * den)
    uniq = sorted(acc)
    n = np.array([acc[d][0] for d in uniq], float)
    sy = np.array([acc[d][1] for d in uniq], float)
    syy = np.array([acc[d][2] for d in uniq], float)
    mean = sy / np.maximum(n, 1)
    ss = np.maximum(syy - n * mean * mean, 0.0)
    return {"names": uniq, "index": {k: i for i, k in enumerate(uniq)}, "n": n, "mean": mean, "ss": ss}


def _finalize(det: "ShuffleResidue", counts: dict[str, TableCounts]) -> list[TestResult]:
    strata = _strata(counts)
    people = _people(strata)
    where: dict[str, list[tuple[_Stratum, int]]] = {}
    for st in strata:
        for j, d in enumerate(st.dealers):
            where.setdefault(d, []).append((st, j))
    scored = {}
    for d in people["names"]:
        r = _predictive_z(people, d)
        if r is not None and any(len(st.dealers) > 1 for st, _ in where.get(d, [])):
            scored[d] = r
    level = exact.per_test_level(det.fdr, len(scored))
    out = []
    for d, (z, info) in scored.items():
        sel = where[d]
        n = sum(st.n[j] for st, j in sel)
        obs_total = float(sum(st.obs[j] for st, j in sel))
        peer: dict[str, Fraction] = {}
        for st, j in sel:
            rest = st.total("n") - st.n[j]
            peer[st.name] = (st.total("sx") - st.sx[j]) / rest if rest else Fraction(0)
        expected = float(sum((st.exp[j] + st.n[j] * peer[st.name] for st, j in sel), Fraction(0)))
        p = skew_safe_p(z, obs_total, expected)
        perfect = float(sum((st.exp[j] for st, j in sel), Fraction(0)))
        controls: dict[str, Any] = {}
        detail: dict[str, Any] = {}
        if det.details:
            tables = []
            for st, j in sel:
                rest = st.total("n") - st.n[j]
                tables.append({"stratum": st.name, "deals": st.n[j], "mean": round(st.obs[j] / st.n[j], 4),
                               "others_mean": round((st.total("obs") - st.obs[j]) / rest, 4) if rest else None})
            controls = {"perfect_shuffle": {"n": n, "observed": obs_total, "expected": round(perfect, 4),
                                            "note": "reference line only: people do not shuffle perfectly"},
                        "peers": info, "tables": tables}
            tls = []
            for st, j in sel:
                px = float(peer[st.name])
                tls += [replace(t, exp=t.exp + t.n * px) for t in st.timelines[j]]
            detail["timeline"] = Timeline.merge(tls).points()
            detail["null_rate"] = round(expected / n, 6) if n else None
            detail["unit"] = det.unit
            detail["min_detectable"] = _min_detectable(sel, peer, info, level, det.cheat)
            detail["min_detectable_level"] = level
            detail["min_detectable_method"] = (
                f"approximate (normal): the smallest fraction q of their deals in which they {det.cheat} that the "
                f"test at the FDR-equivalent per-test level finds with power {MIN_DETECTABLE_POWER}")
        out.append(TestResult(
            test=det.name, subject=d, n=n, observed=obs_total, expected=expected, statistic=z, pvalue=p,
            method="random-effects predictive test against the other dealers (deal excesses standardised per "
                   "table, DerSimonian-Laird between people, Student t), one-sided; approximate, calibrated by "
                   "simulation",
            controls=controls, detail=detail))
    return out


def _min_detectable(sel: list[tuple[_Stratum, int]], peer: dict[str, Fraction], info: dict, level: float,
                    cheat: str) -> float | None:
    """Normal approximation: a cheat adds q·(max − expected − peers' excess) per deal, in stratum sd units."""
    n = sum(st.n[j] for st, j in sel)
    gain = 0.0
    for st, j in sel:
        sd = st.sd(1.0)
        rest = st.total("n") - st.n[j]
        g = float((st.top[j] - st.exp[j]) / st.n[j] - peer[st.name]) if rest else 0.0
        gain += g / max(sd, 1e-9) * st.n[j]
    gain /= max(n, 1)
    spread = np.sqrt(info["between_people_sd"] ** 2 + info["within_sd"] ** 2 / max(n, 1))
    if gain <= 0 or spread <= 0:
        return None
    need = scipy_stats().norm.isf(level) + scipy_stats().norm.isf(1 - MIN_DETECTABLE_POWER)
    q = need * spread / gain
    return round(float(q), 4) if q <= 1 else None


def _predictive_z(people: dict, d: str) -> tuple[float, dict] | None:
    """Random-effects predictive score of person d against everyone else (None with fewer than MIN_PEERS)."""
    i = people["index"].get(d)
    if i is None or len(people["names"]) - 1 < MIN_PEERS:
        return None
    keep = np.ones(len(people["names"]), bool)
    keep[i] = False
    means, ns = people["mean"][keep], people["n"][keep]
    k = len(means)
    dof = ns.sum() - k
    sigma2 = max(float(people["ss"][keep].sum() / dof) if dof > 0 else 1.0, 1e-9)
    v = sigma2 / ns
    w = 1 / v
    mu_fe = float((w * means).sum() / w.sum())
    q = float((w * (means - mu_fe) ** 2).sum())
    denom = float(w.sum() - (w ** 2).sum() / w.sum())
    tau2 = max(0.0, (q - (k - 1)) / denom) if denom > 0 else 0.0
    W = 1 / (v + tau2)
    mu = float((W * means).sum() / W.sum())
    var_mu = float(1 / W.sum())
    n = int(people["n"][i])
    m = float(people["mean"][i])
    t = (m - mu) / np.sqrt(tau2 + sigma2 / n + var_mu)
    z = float(scipy_stats().norm.isf(scipy_stats().t.sf(t, df=k - 1)))
    return z, {"peers": k, "mean_excess_sd_units": round(m, 4), "peers_mean": round(mu, 4),
               "between_people_sd": round(float(np.sqrt(tau2)), 4), "within_sd": round(float(np.sqrt(sigma2)), 4),
               "t": round(float(t), 3)}


CONTROL_WORDS = (  # the controls of both residue tests, in the report's words
    ('perfect_shuffle', 'against a perfect shuffle'),
    ('peers', 'against the other dealers'),
    ('tables', 'table by table'),
)

RESIDUE_SPEC = TestSpec(
    name='shuffle_residue',
    title='Tricks that survive the shuffle',
    what="Whether the cards of the previous deal's tricks stay together through a dealer's shuffle more than they "
         'do for the other dealers of the same table or club.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='left tricks together',
    cheat='a share of unshuffled deals',
    honest='the other dealers',
    subject='dealer',
    chart='evidence',
    control_words=CONTROL_WORDS,
    section=5,
    cost=3,
    sentence="{subject}'s deals kept {obs} pairs of cards from the previous deal's tricks side by side over the "
             '{n} deals they dealt; the other dealers of the same tables would keep about {exp}; {pq}.',
)


class ShuffleResidue:
    spec = RESIDUE_SPEC
    name = "shuffle_residue"
    stat = "residue"
    unit = "adjacent cards from one trick of the previous deal"
    cheat = "leaves the gathered tricks unshuffled (only cut)"

    def __init__(self, fdr: float = 0.05, details: bool = True):
        self.fdr = fdr
        self.details = details

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict[str, TableCounts]:
        """{table: TableCounts} of this test's statistic: bounded (entries per configuration and dealer, and each
        pack id's first and last deal). The per-deal rows (`count_table`; the oracle is `count_results` over the
        deals) are counted once for both residue tests of one table and live only here."""
        rows, times, runs = rows_of(table)
        return table_counts(rows, times, runs, self.stat)

    def merge(self, parts: Sequence[dict]) -> dict:
        acc: dict[str, list[TableCounts]] = {}
        for part in parts:
            for table, c in part.items():
                acc.setdefault(table, []).append(c)
        return {t: merge_tables(v, t, self.stat) for t, v in sorted(acc.items())}

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        return _finalize(self, counts)


STACK_SPEC = TestSpec(
    name='trick_stack',
    title="Dealers who deal themselves the previous deal's tricks",
    what="How many pairs of cards from one trick of the previous deal end up together in the dealer's own hand, "
         'against the other dealers of the same tables: a dealer who puts a rich trick back into their own hand '
         'while gathering the cards leaves this trace.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='held cards of one previous trick',
    cheat='a share of stacked deals',
    honest='the other dealers',
    subject='dealer',
    chart='evidence',
    control_words=CONTROL_WORDS,
    section=4,
    cost=3,
    sentence="{subject}'s own hand held {obs} pairs of cards from one trick of the previous deal over the {n} "
             'deals they dealt; the other dealers of the same tables would hold about {exp}; {pq}.',
)


class TrickStack(ShuffleResidue):
    spec = STACK_SPEC
    name = "trick_stack"
    stat = "stack"
    unit = "pairs of cards of one previous trick in the dealer's own hand"
    cheat = "puts a whole trick of the previous deal into their own hand"
