"""`revoke_pattern`: are a player's revokes the helpful kind?

An honest player's accidental revokes help and hurt him alike; a deliberate revoker revokes when it wins him a
counting card. For every revoke the replay finds (`DealResult.revokes`, claimed or not) in a complete deal:

- *gainful*: the revoker's side won the revoke trick and no legal card he held (following suit) would have won it
  for his side with the other cards of the trick unchanged (in Scotch Whist every trick is worth its cards towards
  cards-over, and the honours in it); or, in All Fours where trumping is always legal, every legal card would have
  given a counting card (Game pips, the trump Jack) to an opponent's trick and the revoke kept it;
- `gain`: the points his side took in the trick minus the mean over his legal cards of what it would have taken
  (Scotch Whist: honours J 11, T 10, A 4, K 3, Q 2 plus one per card; All Fours: Game pips, the trump Jack as 1).

Primary test (one p-value per player, family `revoke_pattern`): the number of his revokes that were gainful
against the field's share of gainful revokes among everybody else's — Fisher's exact test on the 2x2 table
(player vs field, gainful vs not), one-sided. It conditions on how often he revoked, so a careless honest player
(more revokes, helpful and harmful alike) is not accused by it.

Controls: his revoke rate per opportunity (a play following a lead while holding the suit led and another card)
against the field's, in cells of game and player count: exact one-sided Poisson-binomial with the field's rate
(leave-player-out); his mean gain against the field's.

Counting. `RevokePattern.count(table)` counts over the table (`auditor.columns.AuditColumns`) with one numba walk
of every deal (`_revokes`); `count_results(results)`, over `DealResult`s with `play_facts.walk`, is its executable
spec (the tests' oracle: the two give equal counts, field for field and type for type).

The kernel transcribes `count_deal` over the walk of `play_columns.walk_deal`: it counts each seat's revoke
opportunities per deal and, for each revoke the replay found, whether it was gainful, its gain as an exact fraction
(numerator, denominator: the trick points are whole numbers, so the mean over the legal cards is a ratio of
integers) and its play index (for `base.trail_code`). The kernel sums the opportunities per (player, game, players);
the revokes' gains are summed over a common denominator (`sum_fractions`), so that the `RevokeCounts` (gains as
`Fraction`s) equal the Python counter's exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from typing import Any, Iterable, Sequence

import numba
import numpy as np
from scipy import stats as st_

from ..cards import SUIT_MASK, rank_of, suit_of
from ..columns import AuditColumns
from ..facts import DealingFacts
from ..rules import AF_PIPS, SW_HONOURS
from ..stats import exact
from ..stats.family import TestResult
from .base import deal_order, timeline, trail_code
from .play_columns import (
    P_CARD,
    P_HOLD,
    P_LEAD,
    P_POS,
    P_REVOKE,
    P_SEAT,
    P_TRICK,
    P_TWO,
    T_COUNT,
    T_FIRST,
    beats,
    counting_table,
    legal,
    low_bit,
    setup_of,
    suit_mask,
    walk_buffers,
    walk_deal,
)
from .play_facts import JACK, PlayState, counting, deal_exclusion, walk
from .spec import TestSpec

NAME = "revoke_pattern"


def points(game: str, trump: int, card: int) -> float:
    r = rank_of(card)
    if game == "scotch_whist":
        return float(SW_HONOURS.get(r, 0)) if suit_of(card) == trump else 0.0
    return float(AF_PIPS.get(r, 0)) + (1.0 if (suit_of(card) == trump and r == JACK) else 0.0)


def trick_points(game: str, trump: int, cards: list[tuple[int, int]]) -> float:
    """What a trick is worth to the side that takes it: Scotch Whist, the trump honours in it plus one point per
    card (towards cards over the number dealt); All Fours, the Game pips and the trump Jack."""
    pts = sum(points(game, trump, c) for _, c in cards)
    return pts + (len(cards) if game == "scotch_whist" else 0.0)


def _winner(st: PlayState, cards: list[tuple[int, int]]) -> int:
    """Seat winning a full trick of (seat, card) in play order."""
    ws, wc = cards[0]
    for s, c in cards[1:]:
        if st.beats(c, wc):
            ws, wc = s, c
    return ws


Cell = tuple[str, int]  # (game, players)
Tally = list[Any]  # [opportunities, revokes, gainful revokes (ints), summed gain (an exact Fraction)]


@dataclass
class RevokeCounts:
    """Per player and cell (game, n): opportunities, revokes, gainful revokes, summed gain (an exact fraction:
    adds exactly across partitions). `trail`: per player, his revokes one by one as `base.trail_code(deal order,
    play index, gainful)`, ascending (input order): his timeline. Sorted, so any partition merges to the same lists.
    """

    cells: dict[tuple[str, Cell], Tally] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    trail: dict[str, list[int]] = dc_field(default_factory=dict)


def _add(c: RevokeCounts, player: str, cell: Cell, opp: int, rev: int, gainful: int, gain: Fraction) -> None:
    v = c.cells.get((player, cell))
    if v is None:
        c.cells[(player, cell)] = [opp, rev, gainful, gain]
    else:
        v[0] += opp
        v[1] += rev
        v[2] += gainful
        v[3] += gain


def count_results(results: Iterable[Any]) -> RevokeCounts:
    """The counts of these `DealResult`s, play by play with `play_facts.walk`: the executable spec of
    `RevokePattern.count` (tests only)."""
    c = RevokeCounts()
    for res in results:
        count_deal(res, c)
    for codes in c.trail.values():
        codes.sort()
    return c


def count_deal(res: Any, c: RevokeCounts) -> None:
    d = res.deal
    why = deal_exclusion(res)
    if why is not None:
        c.excluded_deals[why] = c.excluded_deals.get(why, 0) + 1
        return
    cell = (d.game, d.n)
    trump = res.trump
    side = d.side_of
    # full tricks, for the counterfactual of each revoke
    tricks: dict[int, list[tuple[int, int]]] = {}
    for k, s, card in res.plays:
        tricks.setdefault(k, []).append((s, card))
    opp_by_seat = [0] * d.n
    order = deal_order(d)
    for play, st in enumerate(walk(res)):
        if st.lead_suit is None or st.two_card_turn:  # a lead (no suit led yet)
            continue
        s = st.seat
        follow = st.hold[s] & SUIT_MASK[st.lead_suit]
        if not follow or not (st.hold[s] & ~follow):
            continue  # no way to revoke (nothing to follow with, or nothing else to play)
        opp_by_seat[s] += 1
        if not st.revoke:
            continue
        full = tricks[st.k]
        pos = st.pos
        won = side[res.winners[st.k]] == side[s]
        pts = trick_points(d.game, trump, full)
        alt_side_pts = []
        alt_win = False
        alt_gives = True  # every legal card gives a counting card to an opponent's trick
        m = st.legal
        while m:
            low = m & -m
            alt = low.bit_length() - 1
            m ^= low
            trial = full[:pos] + [(s, alt)] + full[pos + 1:]
            w = _winner(st, trial)
            mine = side[w] == side[s]
            alt_win |= mine
            alt_side_pts.append(trick_points(d.game, trump, trial) if mine else 0.0)
            if mine or not counting(d.game, trump, alt):
                alt_gives = False
        alt_mean = Fraction(sum(Fraction(x) for x in alt_side_pts), len(alt_side_pts)) if alt_side_pts else 0
        gain = Fraction(pts if won else 0.0) - alt_mean  # exact, so partitions add exactly
        gainful = int((won and not alt_win) or
                      (d.game == "all_fours" and alt_gives and not counting(d.game, trump, st.card)))
        _add(c, d.players[s], cell, 0, 1, gainful, gain)
        c.trail.setdefault(d.players[s], []).append(trail_code(order, play, gainful))
    for s in range(d.n):
        if opp_by_seat[s]:
            _add(c, d.players[s], cell, opp_by_seat[s], 0, 0, Fraction(0))


# ---------------------------------------------------------------- the count over the table


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
def _revokes(use, arrays, side_of, winners, count_tab, pts_tab, seat_player, opp, r_row, r_seat, r_play, r_gainful,
             r_num, r_den):
    """`count_deal` over the rows `use` (`play_columns.walk_deal`): each seat's opportunities summed into
    `opp[player << 5 | all_fours << 4 | n]`, each revoke into r_*[m]; returns m."""
    buf = walk_buffers(arrays)
    W = buf.plays
    T = buf.tricks
    play_card = arrays[11]
    play_seat = arrays[12]
    trick = np.zeros(16, np.int64)  # the cards of the revoke's trick, one of them replaced by each legal card
    n_opp = np.zeros(8, np.int64)
    m = 0
    for row in range(len(use)):
        if not use[row]:
            continue
        d = walk_deal(row, arrays, buf, 0)
        af, trump, n = d.af, d.trump, d.n
        for s in range(n):
            n_opp[s] = 0
        for i in range(d.n_plays):
            if W[i, P_POS] == 0 or W[i, P_TWO]:
                continue
            s = W[i, P_SEAT]
            hold = W[i, P_HOLD]
            follow = hold & suit_mask(W[i, P_LEAD])
            if follow == 0 or (hold & ~follow) == 0:
                continue  # no way to revoke (nothing to follow with, or nothing else to play)
            n_opp[s] += 1
            if not W[i, P_REVOKE]:
                continue
            first = T[W[i, P_TRICK], T_FIRST]
            cnt = T[W[i, P_TRICK], T_COUNT]
            p = W[i, P_POS]
            mine_side = side_of[row, s]
            won = side_of[row, winners[row, W[i, P_TRICK]]] == mine_side
            for q in range(cnt):
                trick[q] = play_card[row, first + q]
            pts = _trick_points(af, trump, pts_tab, trick, cnt)
            alt_sum = 0
            n_alt = 0
            alt_win = False
            alt_gives = True  # every legal card gives a counting card to an opponent's trick
            mm = legal(af, hold, W[i, P_LEAD], trump, d.must)  # his legal cards (not walked: few revokes)
            while mm != 0:
                alt = low_bit(mm)
                mm &= mm - 1
                trick[p] = alt
                w = play_seat[row, first]
                wc = trick[0]
                for q in range(1, cnt):
                    if beats(af, trump, trick[q], wc):
                        w = play_seat[row, first + q]
                        wc = trick[q]
                mine = side_of[row, w] == mine_side
                alt_win |= mine
                if mine:
                    alt_sum += _trick_points(af, trump, pts_tab, trick, cnt)
                if mine or not count_tab[np.int64(af), np.int64(alt // 13 == trump), alt % 13]:
                    alt_gives = False
                n_alt += 1
            c = W[i, P_CARD]
            gainful = (won and not alt_win) or (
                af and alt_gives and not count_tab[np.int64(af), np.int64(c // 13 == trump), c % 13])
            r_row[m] = row
            r_seat[m] = s
            r_play[m] = i
            r_gainful[m] = gainful
            # gain = (pts if won) - alt_sum / n_alt; n_alt >= 1 (the seat holds the suit led)
            r_num[m] = (pts if won else 0) * n_alt - alt_sum
            r_den[m] = n_alt
            m += 1
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
        scaled = np.array([x * (L // d) for x, d in zip(num.tolist(), den.tolist(), strict=True)], dtype=object)
        tot = np.zeros(n_groups, object)
    np.add.at(tot, group, scaled)
    return [Fraction(int(x), L) for x in tot.tolist()]


SPEC = TestSpec(
    name='revoke_pattern',
    title='Revokes that pay',
    what="Whether a player's revokes (failures to follow suit) win him points more often than the accidental "
         'revokes of the field do, and whether he revokes more often than the field.',
    unit='revokes',
    unit_short='revokes',
    event='won a counting card by revoking',
    cheat='a share of deliberate revokes',
    honest='an honest player',
    subject='player',
    chart='evidence',
    section=8,
    cost=1,
    bernoulli=True,
    sentence="{obs} of {subject}'s {n} revokes won a counting card; accidental revokes in the field would win "
             'about {exp}; {pq}.',
)


class RevokePattern:
    spec = SPEC
    name = NAME

    def __init__(self, fdr: float = 0.05, details: bool = True, **_: Any):
        self.fdr = fdr
        self.details = details

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> RevokeCounts:
        """The counts of the table's deals, from one numba walk of their plays (`_revokes`; the spec is
        `count_results`). `rng` and `facts` are not used."""
        c = RevokeCounts()
        D = len(table)
        if D == 0:
            return c
        su = setup_of(table)
        c.excluded_deals = su.excluded()
        use = su.why == 0
        if not use.any():
            return c
        # opportunities per (player, game, n): player << 5 | all_fours << 4 | n
        opp = np.zeros(max(len(table.players), 1) << 5, np.int64)
        # a revoke is counted at most once per play: bound by the plays of the rows that have revokes
        has_rev = np.zeros(D, bool)
        has_rev[table.rev_row] = True
        cap = max(int(table.n_plays[use & has_rev].astype(np.int64).sum()), 1)
        r_row = np.empty(cap, np.int64)
        r_seat = np.empty(cap, np.int64)
        r_play = np.empty(cap, np.int64)
        r_gainful = np.empty(cap, np.bool_)
        r_num = np.empty(cap, np.int64)
        r_den = np.empty(cap, np.int64)
        m = _revokes(use, su.arrays(table), table.side_of, table.winners, counting_table(), points_table(),
                     table.seat_player, opp, r_row, r_seat, r_play, r_gainful, r_num, r_den)
        r_row, r_seat, r_play, r_num, r_den = r_row[:m], r_seat[:m], r_play[:m], r_num[:m], r_den[:m]
        r_gainful = r_gainful[:m].astype(np.int64)
        games = ("scotch_whist", "all_fours")
        players = table.players
        r_player = table.seat_player[r_row, r_seat].astype(np.int64)
        r_key = (r_player << 5) | (su.af[r_row].astype(np.int64) << 4) | table.n[r_row].astype(np.int64)
        uk, inv = np.unique(r_key, return_inverse=True)
        n_rev = np.bincount(inv, minlength=len(uk))
        n_gainful = np.bincount(inv, r_gainful, len(uk)).astype(np.int64)
        gains = sum_fractions(inv, r_num, r_den, len(uk))
        rev_of = {k: (r, g, x)
                  for k, r, g, x in zip(uk.tolist(), n_rev.tolist(), n_gainful.tolist(), gains, strict=True)}
        for k in sorted(set(np.flatnonzero(opp).tolist()) | set(rev_of)):
            r, g, gain = rev_of.get(k, (0, 0, Fraction(0)))
            c.cells[(players[k >> 5], (games[(k >> 4) & 1], k & 15))] = [int(opp[k]), r, g, gain]
        # each player's revokes as trail codes, in input order
        codes = (((table.order[r_row] << 6) | r_play) << 1) | r_gainful
        idx = np.lexsort((codes, r_player))
        r_player, codes = r_player[idx], codes[idx]
        starts = np.flatnonzero(np.r_[True, r_player[1:] != r_player[:-1]]) if m else np.zeros(0, np.int64)
        codes_l = codes.tolist()
        ends = np.r_[starts[1:], m] if m else starts
        for pl, a, b in zip(r_player[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
            c.trail[players[pl]] = codes_l[a:b]
        return c

    def merge(self, parts: Sequence[RevokeCounts]) -> RevokeCounts:
        out = RevokeCounts()
        for p in parts:
            for k, n in p.excluded_deals.items():
                out.excluded_deals[k] = out.excluded_deals.get(k, 0) + n
            for (pl, cell), v in p.cells.items():
                _add(out, pl, cell, *v)
            for pl, codes in p.trail.items():
                out.trail.setdefault(pl, []).extend(codes)
        for codes in out.trail.values():
            codes.sort()
        return out

    def finalize(self, counts: RevokeCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        per_player: dict[str, dict[Cell, Tally]] = {}
        tot_cell: dict[Cell, Tally] = {}
        for (pl, cell), v in sorted(counts.cells.items(), key=lambda kv: (kv[0][0], repr(kv[0][1]))):
            per_player.setdefault(pl, {})[cell] = v
            t = tot_cell.setdefault(cell, [0, 0, 0, Fraction(0)])
            for i in range(4):
                t[i] += v[i]
        R = sum(t[1] for t in tot_cell.values())
        G = sum(t[2] for t in tot_cell.values())
        gain_all = sum(t[3] for t in tot_cell.values())
        out: list[TestResult] = []
        for pl in sorted(per_player):
            cells = per_player[pl]
            r = int(sum(v[1] for v in cells.values()))
            g = int(sum(v[2] for v in cells.values()))
            opp = int(sum(v[0] for v in cells.values()))
            gain_exact = sum((v[3] for v in cells.values()), Fraction(0))
            gain = float(gain_exact)
            if r == 0:
                continue
            rf, gf = int(R) - r, int(G) - g  # the field without him
            # Fisher's exact test, one-sided: his gainful share above the field's
            table = [[g, r - g], [gf, rf - gf]]
            pval = float(st_.hypergeom.sf(g - 1, r + rf, g + gf, r)) if (r + rf) > 0 else 1.0
            share_f = gf / rf if rf > 0 else None
            expected = r * (g + gf) / (r + rf) if (r + rf) > 0 else float(g)
            # control: revoke rate per opportunity vs the field's (leave-player-out), Poisson-binomial by cell
            groups = []
            for cell, v in cells.items():
                t = tot_cell[cell]
                fo, fr = t[0] - v[0], t[1] - v[1]
                if v[0] > 0:
                    groups.append(((fr + 0.5) / (fo + 1.0), int(v[0])))
            rate_ctl: dict[str, Any] = {"opportunities": opp, "revokes": r}
            if groups:
                gt = tuple(sorted(_merge(groups)))
                dist = exact.poisson_binomial(gt)
                rate_ctl |= {"expected": sum(p * k for p, k in gt), "pvalue": dist.sf(r)}
            controls = {
                "revoke_rate": rate_ctl,
                "gain": {"mean": gain / r, "field_mean": float(gain_all - gain_exact) / rf if rf > 0 else None,
                         "unit": "counting points taken in the revoke trick vs the mean legal card"},
                "field_gainful_share": share_f,
            }
            detail = {"table": table, "field_revokes": rf,
                      "timeline": revoke_timeline(counts.trail.get(pl, []), int(R), int(G))} if self.details else {}
            out.append(TestResult(
                test=NAME, subject=pl, n=r, observed=float(g), expected=float(expected),
                statistic=float((g - expected) / max(np.sqrt(expected * (1 - expected / max(r, 1))), 1e-9))
                if r > 0 else 0.0,
                pvalue=min(1.0, pval),
                method="Fisher exact, one-sided: gainful share of his revokes vs the field's",
                controls=controls, detail=detail))
        return out


def revoke_timeline(codes: list[int], R: int, G: int) -> list[list]:
    """The player's gainful revokes over his revokes in input order against Fisher's null: each revoke gainful with
    the pooled share G / R (everybody's revokes, his included: the margins the test conditions on), so that the line
    ends at the test's expected count. The variance so far is the hypergeometric one of his first k revokes drawn
    from the R: k q (1 - q) (R - k) / (R - 1), q = G / R."""
    if not codes or R <= 0:
        return []
    gain = np.sort(np.asarray(codes, np.int64)) & 1
    q = G / R
    k = np.arange(1, len(gain) + 1, dtype=float)
    var = k * q * (1 - q) * (R - k) / (R - 1) if R > 1 else np.zeros(len(gain))
    return timeline(gain, np.full(len(gain), q), variance=var)


def _merge(groups: list[tuple[float, int]]) -> list[tuple[float, int]]:
    acc: dict[float, int] = {}
    for p, k in groups:
        acc[p] = acc.get(p, 0) + k
    return list(acc.items())
