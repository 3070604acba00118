"""`Collusion.count_columns`: the counts of `collusion.count_deal`, with one numba walk over every deal's plays.

The kernel transcribes `count_deal` over `walk`: at every play that is not a lead, not the Russian two-card turn
and not a revoke, when another seat is winning the trick, it classifies the giver's legal cards and, for an
opportunity, emits one int64 key, (giver player, receiver player, cell), and its `base.trail_code` (deal order,
play index, event). Sorted by key, the runs of equal keys are the pairs' cells: their lengths the opportunities,
their codes' low bits the events, their codes the trails; they become the same `CollusionCounts` dicts the Python
counter builds (cells as the same tuples, values as Python ints).

Key layout: (giver * n_players + receiver) << 11 | cell, cell = af << 10 | n << 6 | following << 5 | trump_led << 4
| last << 3 | sure << 2 | min(counting legal cards, 3).
"""

from __future__ import annotations

import numba
import numpy as np

from ..cards import rank_of
from ..columns import AuditColumns
from .collusion import CollusionCounts, counting
from .play_columns import (
    MAX_SETS,
    beats,
    hands_by_set,
    is_revoke,
    legal,
    low_bit,
    strength,
    suit_mask,
    walk_setup,
)


def counting_table() -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> `counting`, from the Python definition."""
    t = np.zeros((2, 2, 13), np.bool_)
    for g, game in enumerate(("scotch_whist", "all_fours")):
        for card in range(13):  # a spade, with spades trumps and then hearts trumps
            t[g, 1, rank_of(card)] = counting(game, 0, card)
            t[g, 0, rank_of(card)] = counting(game, 1, card)
    return t


@numba.njit(cache=True)
def _walk(use, af_a, must_a, n_a, trump_a, seat_player, play_card, play_seat, play_trick, n_plays, n_sets_a,
          per_set, extra_a, out_public_a, rev_start, rev_trick, rev_seat, count_tab, n_players, order, keys,
          codes):
    m = 0
    set_of_trick = np.zeros(128, np.int64)
    by_set = np.zeros((8, MAX_SETS), np.int64)
    hold = np.zeros(8, np.int64)
    t_seat = np.zeros(128, np.int64)
    t_card = np.zeros(128, np.int64)
    for row in range(len(use)):
        if not use[row]:
            continue
        af = af_a[row]
        n = np.int64(n_a[row])
        trump = np.int64(trump_a[row])
        must = must_a[row]
        n_sets = np.int64(n_sets_a[row])
        extra = np.int64(extra_a[row])
        out_public = out_public_a[row]
        ra = rev_start[row]
        rb = rev_start[row + 1]
        n_tricks = hands_by_set(row, n, n_sets, per_set, set_of_trick, play_card, play_seat, play_trick, n_plays,
                                by_set)
        trumps = suit_mask(trump)
        played = np.int64(0)
        i = 0
        np_ = n_plays[row]
        for k in range(n_tricks):
            j = set_of_trick[k]
            if k == 0 or set_of_trick[k - 1] != j:
                for s in range(n):
                    hold[s] = by_set[s, j]
            first = i  # index of the trick's first play in the deal's plays
            cnt = 0
            while i < np_ and play_trick[row, i] == k:
                t_seat[cnt] = play_seat[row, i]
                t_card[cnt] = play_card[row, i]
                cnt += 1
                i += 1
            lead = -1
            ws = -1
            wc = -1
            for p in range(cnt):
                s = t_seat[p]
                c = t_card[p]
                two = extra >= 0 and s == extra and cnt == n + 1 and k == n_tricks - 1
                rev = p > 0 and c // 13 != lead and is_revoke(rev_trick, rev_seat, ra, rb, k + 1, s)
                if p > 0 and not two and not rev and ws != s:
                    lg = legal(af, hold[s], lead, trump, must)
                    give = False
                    plain = False
                    n_count = 0
                    mm = lg
                    while mm != 0:
                        card = low_bit(mm)
                        mm &= mm - 1
                        if count_tab[np.int64(af), np.int64(card // 13 == trump), card % 13]:
                            n_count += 1
                            if not beats(af, trump, card, wc):
                                give = True
                        else:
                            plain = True
                    if give and plain:
                        ev = (count_tab[np.int64(af), np.int64(c // 13 == trump), c % 13]
                              and not beats(af, trump, c, wc))
                        following = c // 13 == lead
                        sure = False
                        if wc // 13 == trump:
                            sure = True
                            out = ~played & ~out_public & trumps
                            sw = strength(af, wc % 13)
                            for r in range(13):
                                if (out >> np.int64(trump * 13 + r)) & 1 and strength(af, r) > sw:
                                    sure = False
                                    break
                        cell = ((np.int64(af) << 10) | (n << 6) | (np.int64(following) << 5)
                                | (np.int64(lead == trump) << 4) | (np.int64(p == cnt - 1) << 3)
                                | (np.int64(sure) << 2) | min(n_count, 3))
                        g = np.int64(seat_player[row, s])
                        b = np.int64(seat_player[row, ws])
                        keys[m] = ((g * n_players + b) << 11) | cell
                        codes[m] = (((order[row] << 6) | (first + p)) << 1) | np.int64(ev)
                        m += 1
                hold[s] &= ~(np.int64(1) << c)
                played |= np.int64(1) << c
                if ws < 0 or beats(af, trump, c, wc):
                    ws = s
                    wc = c
                if lead < 0:
                    lead = c // 13
    return m


def count_columns(cols: AuditColumns, rng=None, facts=None) -> CollusionCounts:
    c = CollusionCounts()
    D = len(cols)
    if D == 0:
        return c
    su = walk_setup(cols)
    indiv = (cols.n >= 3) & (cols.n_sides == cols.n)  # `individual`: sides partition the seats
    c.excluded_deals = su.excluded(indiv)
    use = indiv & (su.why == 0)
    c.deals = int(use.sum())
    if not c.deals:
        return c
    n_players = max(len(cols.players), 1)
    cap = int(cols.n_plays[use].astype(np.int64).sum())
    keys = np.empty(max(cap, 1), np.int64)
    codes = np.empty(max(cap, 1), np.int64)
    m = _walk(use, su.af, su.must_trump, cols.n, cols.trump, cols.seat_player, cols.play_card, cols.play_seat,
              cols.play_trick, cols.n_plays, su.n_sets, su.per_set, su.extra, su.out_public, su.rev_start,
              cols.rev_trick, cols.rev_seat, counting_table(), n_players, cols.order, keys, codes)
    keys, codes = keys[:m], codes[:m]
    # group by (pair, cell), each group's trail ascending: rows in input order emit ascending codes already, so a
    # stable sort by key suffices; otherwise sort by (key, code)
    if m > 1 and not (codes[1:] >= codes[:-1]).all():
        idx = np.lexsort((codes, keys))
    else:
        idx = np.argsort(keys, kind="stable")
    keys, codes = keys[idx], codes[idx]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if m else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], m].astype(np.int64)
    ev_cum = np.r_[0, np.cumsum(codes & 1)]
    games = ("scotch_whist", "all_fours")
    cell_of: dict[int, tuple] = {}
    players = cols.players
    trail = codes.tolist()
    for key, a, b in zip(keys[starts].tolist(), starts.tolist(), ends.tolist()):
        code = key & 2047
        cell = cell_of.get(code)
        if cell is None:
            cell = (games[code >> 10], (code >> 6) & 15, (code >> 5) & 1, (code >> 4) & 1, (code >> 3) & 1,
                    (code >> 2) & 1, code & 3)
            cell_of[code] = cell
        gb = key >> 11
        pair = (players[gb // n_players], players[gb % n_players])
        o, e = b - a, int(ev_cum[b] - ev_cum[a])
        c.pairs.setdefault(pair, {})[cell] = [o, e]
        c.trail.setdefault(pair, {})[cell] = trail[a:b]
        v = c.field.get(cell)
        if v is None:
            c.field[cell] = [o, e]
        else:
            v[0] += o
            v[1] += e
    return c
