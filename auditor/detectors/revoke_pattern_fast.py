"""`RevokePattern.count_columns`: the counts of `revoke_pattern.count_deal`, with one numba walk over every deal.

The kernel transcribes `count_deal` over `walk`: it counts each seat's revoke opportunities per deal (a play
following a lead while holding the suit led and another card) and, for each revoke the replay found, whether it
was gainful, its gain as an exact fraction (numerator, denominator: the trick points are whole numbers, so the
mean over the legal cards is a ratio of integers) and its play index (for `base.trail_code`). The kernel sums the
opportunities per (player, game, players); the revokes' gains are summed over a common denominator, so that the
`RevokeCounts` (gains as `Fraction`s) equal the Python counter's exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

from ..columns import AuditColumns
from .collusion_fast import counting_table
from .play_columns import (
    MAX_SETS,
    beats,
    hands_by_set,
    is_revoke,
    legal,
    low_bit,
    suit_mask,
    walk_setup,
)
from .revoke_pattern import RevokeCounts, points


def points_table() -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> `points`, from the Python definition
    (whole numbers: the honours and the Game pips)."""
    t = np.zeros((2, 2, 13), np.int64)
    for g, game in enumerate(("scotch_whist", "all_fours")):
        for card in range(13):  # a spade, with spades trumps and then hearts trumps
            for is_trump, trump in ((1, 0), (0, 1)):
                v = points(game, trump, card)
                assert v == int(v)
                t[g, is_trump, card] = int(v)
    return t



@numba.njit(cache=True, inline="always")
def _trick_points(af, trump, pts_tab, cards, cnt):
    """`trick_points` of cards[:cnt]."""
    tot = 0
    for p in range(cnt):
        c = cards[p]
        tot += pts_tab[np.int64(af), np.int64(c // 13 == trump), c % 13]
    if not af:
        tot += cnt
    return tot


@numba.njit(cache=True)
def _walk(use, af_a, must_a, n_a, trump_a, side_of, winners, play_card, play_seat, play_trick, n_plays, n_sets_a,
          per_set, extra_a, rev_start, rev_trick, rev_seat, count_tab, pts_tab, seat_player, opp, r_row, r_seat,
          r_play, r_gainful, r_num, r_den):
    m = 0
    set_of_trick = np.zeros(128, np.int64)
    by_set = np.zeros((8, MAX_SETS), np.int64)
    hold = np.zeros(8, np.int64)
    t_seat = np.zeros(128, np.int64)
    t_card = np.zeros(128, np.int64)
    trial = np.zeros(128, np.int64)
    n_opp = np.zeros(8, np.int64)
    for row in range(len(use)):
        if not use[row]:
            continue
        af = af_a[row]
        n = np.int64(n_a[row])
        trump = np.int64(trump_a[row])
        must = must_a[row]
        n_sets = np.int64(n_sets_a[row])
        extra = np.int64(extra_a[row])
        ra = rev_start[row]
        rb = rev_start[row + 1]
        n_tricks = hands_by_set(row, n, n_sets, per_set, set_of_trick, play_card, play_seat, play_trick, n_plays,
                                by_set)
        i = 0
        np_ = n_plays[row]
        for s in range(n):
            n_opp[s] = 0
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
            for p in range(cnt):
                s = t_seat[p]
                c = t_card[p]
                two = extra >= 0 and s == extra and cnt == n + 1 and k == n_tricks - 1
                if p > 0 and not two:
                    follow = hold[s] & suit_mask(lead)
                    if follow != 0 and (hold[s] & ~follow) != 0:
                        n_opp[s] += 1
                        if c // 13 != lead and is_revoke(rev_trick, rev_seat, ra, rb, k + 1, s):
                            mine_side = side_of[row, s]
                            won = side_of[row, winners[row, k]] == mine_side
                            pts = _trick_points(af, trump, pts_tab, t_card, cnt)
                            for q in range(cnt):
                                trial[q] = t_card[q]
                            alt_sum = 0
                            n_alt = 0
                            alt_win = False
                            alt_gives = True
                            mm = legal(af, hold[s], lead, trump, must)
                            while mm != 0:
                                alt = low_bit(mm)
                                mm &= mm - 1
                                trial[p] = alt
                                w = t_seat[0]
                                wc = trial[0]
                                for q in range(1, cnt):
                                    if beats(af, trump, trial[q], wc):
                                        w = t_seat[q]
                                        wc = trial[q]
                                mine = side_of[row, w] == mine_side
                                alt_win |= mine
                                if mine:
                                    alt_sum += _trick_points(af, trump, pts_tab, trial, cnt)
                                if mine or not count_tab[np.int64(af), np.int64(alt // 13 == trump), alt % 13]:
                                    alt_gives = False
                                n_alt += 1
                            gainful = (won and not alt_win) or (
                                af and alt_gives and not count_tab[np.int64(af), np.int64(c // 13 == trump), c % 13])
                            r_row[m] = row
                            r_seat[m] = s
                            r_play[m] = first + p
                            r_gainful[m] = gainful
                            # gain = (pts if won) - alt_sum / n_alt; n_alt >= 1 (the seat holds the suit led)
                            r_num[m] = (pts if won else 0) * n_alt - alt_sum
                            r_den[m] = n_alt
                            m += 1
                hold[s] &= ~(np.int64(1) << c)
                if lead < 0:
                    lead = c // 13
        cell = (np.int64(af) << 4) | n
        for s in range(n):
            opp[(np.int64(seat_player[row, s]) << 5) | cell] += n_opp[s]
    return m


def sum_fractions(group: np.ndarray, num: np.ndarray, den: np.ndarray, n_groups: int) -> list[Fraction]:
    """Per group, the exact sum of the fractions num / den (den > 0): over a common denominator (the lcm of the
    denominators, here counts of legal cards), in int64 when it cannot overflow, else in Python ints."""
    L = math.lcm(*set(den.tolist())) if len(den) else 1
    if len(den) and (int(np.abs(num).max()) + 1) * L * len(den) < 2 ** 62:
        scaled = num.astype(np.int64) * (L // den.astype(np.int64))
        tot = np.zeros(n_groups, np.int64)
    else:
        scaled = np.array([x * (L // d) for x, d in zip(num.tolist(), den.tolist())], dtype=object)
        tot = np.zeros(n_groups, object)
    np.add.at(tot, group, scaled)
    return [Fraction(int(x), L) for x in tot.tolist()]


def count_columns(cols: AuditColumns, rng=None, facts=None) -> RevokeCounts:
    c = RevokeCounts()
    D = len(cols)
    if D == 0:
        return c
    su = walk_setup(cols)
    c.excluded_deals = su.excluded()
    use = su.why == 0
    if not use.any():
        return c
    # opportunities per (player, game, n): player << 5 | all_fours << 4 | n
    opp = np.zeros(max(len(cols.players), 1) << 5, np.int64)
    # a revoke is counted at most once per play: bound by the plays of the rows that have revokes
    has_rev = np.zeros(D, bool)
    has_rev[cols.rev_row] = True
    cap = max(int(cols.n_plays[use & has_rev].astype(np.int64).sum()), 1)
    r_row = np.empty(cap, np.int64)
    r_seat = np.empty(cap, np.int64)
    r_play = np.empty(cap, np.int64)
    r_gainful = np.empty(cap, np.bool_)
    r_num = np.empty(cap, np.int64)
    r_den = np.empty(cap, np.int64)
    m = _walk(use, su.af, su.must_trump, cols.n, cols.trump, cols.side_of, cols.winners, cols.play_card,
              cols.play_seat, cols.play_trick, cols.n_plays, su.n_sets, su.per_set, su.extra, su.rev_start,
              cols.rev_trick, cols.rev_seat, counting_table(), points_table(), cols.seat_player, opp, r_row, r_seat,
              r_play, r_gainful, r_num, r_den)
    r_row, r_seat, r_play, r_num, r_den = r_row[:m], r_seat[:m], r_play[:m], r_num[:m], r_den[:m]
    r_gainful = r_gainful[:m].astype(np.int64)
    games = ("scotch_whist", "all_fours")
    players = cols.players
    r_player = cols.seat_player[r_row, r_seat].astype(np.int64)
    r_key = (r_player << 5) | (su.af[r_row].astype(np.int64) << 4) | cols.n[r_row].astype(np.int64)
    uk, inv = np.unique(r_key, return_inverse=True)
    n_rev = np.bincount(inv, minlength=len(uk))
    n_gainful = np.bincount(inv, r_gainful, len(uk)).astype(np.int64)
    gains = sum_fractions(inv, r_num, r_den, len(uk))
    rev_of = {k: (r, g, x) for k, r, g, x in zip(uk.tolist(), n_rev.tolist(), n_gainful.tolist(), gains)}
    for k in sorted(set(np.flatnonzero(opp).tolist()) | set(rev_of)):
        r, g, gain = rev_of.get(k, (0, 0, Fraction(0)))
        c.cells[(players[k >> 5], (games[(k >> 4) & 1], k & 15))] = [int(opp[k]), r, g, gain]
    # each player's revokes as trail codes, in input order
    codes = (((cols.order[r_row] << 6) | r_play) << 1) | r_gainful
    idx = np.lexsort((codes, r_player))
    r_player, codes = r_player[idx], codes[idx]
    starts = np.flatnonzero(np.r_[True, r_player[1:] != r_player[:-1]]) if m else np.zeros(0, np.int64)
    codes_l = codes.tolist()
    for pl, a, b in zip(r_player[starts].tolist(), starts.tolist(), np.r_[starts[1:], m].tolist()):
        c.trail[players[pl]] = codes_l[a:b]
    return c
