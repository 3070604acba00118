"""`revoke_pattern`: does a player revoke when a revoke pays?

An honest player's accidental revoke is a slip: whether he revokes does not depend on whether a revoke would help
him, and the card he drops is any of the cards he may not play. A deliberate revoker revokes when it pays. For every
revoke the replay finds (`DealResult.revokes`, claimed or not) in a complete deal, from the state before his card
(the cards already in the trick fixed):

- the revoke *pays* when an opponent of his is winning the trick and none of his legal cards beats the winning card,
  and either (ruff-pay) the revoke card beats it, or (save-pay) every legal card he holds is a counting card (Scotch
  Whist: the trump Jack, Ten, Ace, King, Queen, `rules.SW_HONOURS`; All Fours: `play_facts.counting`, the Game-pip
  cards and the trump Jack) and the revoke card is not (he keeps, e.g., the bare Ten of trumps under an opponent's
  court trump) (`pays`);
- its chance of paying under the null (an accidental revoke: the card uniform over his cards outside the legal
  ones) is pi = (his off cards that would pay) / (his off cards), an exact fraction (`pay_odds`).

Primary test (one p-value per player with a revoke, family `revoke_pattern`): the number of his revokes that paid
against the exact one-sided Poisson-binomial null of his revokes' pi (`base.pb_result`). It needs no field (a club
where nobody else revokes is no problem), conditions on how often he revoked (a clumsy honest player is not accused
for revoking often) and uses the card he chose.

Controls (in no family): his revoke rate per chance (a play that is not a lead, holding a card he may not play)
against the field's, in cells of game and player count, exact one-sided Poisson-binomial with the field's rate
(leave-player-out); the old comparison of his *gainful* share with the field's (Fisher's exact test: a revoke is
gainful when his side took the trick and no legal card would have, or, in All Fours, when every legal card would have
given a counting card to an opponent's trick and the revoke kept it); his mean gain (the points his side took in the
revoke trick minus the mean over his legal cards); and the timing of his revokes: how many fell at chances where some
off card would have paid, against the hypergeometric draw of his revokes among his chances (valid only if an honest
player's revoke propensity does not depend on the situation, an assumption the primary test does not need).

Counting. `RevokePattern.count(table)` counts over the table (`auditor.columns.AuditColumns`) with one numba walk
of every deal (`_revokes`); `count_results(results)`, over `DealResult`s with `play_facts.walk`, is its executable
spec (the tests' oracle: the two give equal counts, field for field and type for type).

The kernel transcribes `count_deal` over the walk of `play_columns.walk_deal`: it counts each seat's revoke chances
(and those where a revoke could pay) per deal and, for each revoke the replay found, whether it paid, pi as integers
(numerator, denominator), whether it was gainful, its gain as an exact fraction (numerator, denominator: the trick
points are whole numbers, so the mean over the legal cards is a ratio of integers). The kernel sums the chances
per (player, game, players); the revokes' gains are summed over a common denominator (`sum_fractions`), so that the
`RevokeCounts` (gains as `Fraction`s) equal the Python counter's exactly. Each player's revokes are kept as counts
per (bin of time, pi) (`play_columns.BinnedGroups`): bounded in deals (issue 15), and all the exact
Poisson-binomial needs, with the timeline at the bins' ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from fractions import Fraction
from typing import Any, Iterable, Sequence

import numba
import numpy as np

from ..cards import cards_of, rank_of, suit_of
from ..columns import AuditColumns, time_key
from ..facts import DealingFacts
from ..rules import AF_PIPS, SW_HONOURS
from ..stats import exact, scipy_stats
from ..stats.family import TestResult
from .base import TrialSummary, pb_result
from .play_columns import (
    P_CARD,
    P_HOLD,
    P_LEGAL,
    P_POS,
    P_REVOKE,
    P_SEAT,
    P_TRICK,
    P_TWO,
    P_WIN_CARD,
    P_WIN_SEAT,
    T_COUNT,
    T_FIRST,
    WALK_LEGAL,
    WALK_WINNER,
    BinnedGroups,
    beats,
    count_bits,
    counting_table,
    rank_table,
    low_bit,
    setup_of,
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


def pay_counting(game: str, trump: int, card: int) -> bool:
    """A counting card for the save-pay of a revoke: Scotch Whist, the trump honours (`rules.SW_HONOURS`: Jack,
    Ten, Ace, King, Queen); All Fours, `play_facts.counting` (the Game-pip cards and the trump Jack)."""
    if game == "scotch_whist":
        return suit_of(card) == trump and rank_of(card) in SW_HONOURS
    return counting(game, trump, card)


def pay_state(st: PlayState) -> tuple[bool, bool]:
    """(a revoke can pay at all here, every legal card is a counting card): an opponent of the seat is winning the
    trick so far and none of his legal cards beats the winning card; the second element matters only then."""
    w = st.win
    if w is None or st.side_of[w[0]] == st.side_of[st.seat]:
        return False, False
    all_count = True
    for c in cards_of(st.legal):
        if st.beats(c, w[1]):
            return False, False
        all_count &= pay_counting(st.game, st.trump, c)
    return True, all_count


def pays(st: PlayState, card: int) -> bool:
    """Playing `card` (not a legal card) here pays: ruff-pay (it beats the opponent's winning card, which no legal
    card of his does) or save-pay (every legal card is a counting card the opponent's winning card beats, and
    `card` is not a counting card)."""
    can, all_count = pay_state(st)
    if not can:
        return False
    assert st.win is not None
    return st.beats(card, st.win[1]) or (all_count and not pay_counting(st.game, st.trump, card))


def pay_odds(st: PlayState) -> tuple[int, int]:
    """(off cards that would pay, off cards): the exact chance pi that an accidental revoke here (the card uniform
    over the seat's cards outside his legal ones) pays."""
    off = st.hold[st.seat] & ~st.legal
    return sum(pays(st, c) for c in cards_of(off)), off.bit_count()


Cell = tuple[str, int]  # (game, players)
# [revoke chances, revokes, gainful revokes (ints), summed gain (an exact Fraction), chances where a revoke could pay]
Tally = list[Any]


@dataclass
class RevokeCounts:
    """Per player and cell (game, n): revoke chances, revokes, gainful revokes, summed gain (an exact fraction:
    adds exactly across partitions), chances where a revoke could pay. `revokes`: per player, his revokes counted
    per bin of time and chance pi (`BinnedGroups`: subject the player, group pi = pay_odds' fraction as a float,
    event paid): the primary test's trials and his timeline, bounded in deals.
    """

    cells: dict[tuple[str, Cell], Tally] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    revokes: BinnedGroups = dc_field(default_factory=BinnedGroups)


def _add(c: RevokeCounts, player: str, cell: Cell, opp: int, rev: int, gainful: int, gain: Fraction,
         pay_chances: int) -> None:
    v = c.cells.get((player, cell))
    if v is None:
        c.cells[(player, cell)] = [opp, rev, gainful, gain, pay_chances]
    else:
        v[0] += opp
        v[1] += rev
        v[2] += gainful
        v[3] += gain
        v[4] += pay_chances


def count_results(results: Iterable[Any]) -> RevokeCounts:
    """The counts of these `DealResult`s, play by play with `play_facts.walk`: the executable spec of
    `RevokePattern.count` (tests only)."""
    c = RevokeCounts()
    rows: list[tuple] = []
    for res in results:
        _count_deal(res, c, rows)
    c.revokes = revokes_of(rows)
    return c


def count_deal(res: Any, c: RevokeCounts) -> None:
    """Add one `DealResult`'s counts to `c`."""
    rows: list[tuple] = []
    _count_deal(res, c, rows)
    c.revokes = BinnedGroups.merge([c.revokes, revokes_of(rows)])


def revokes_of(rows: Sequence[tuple]) -> BinnedGroups:
    """`RevokeCounts.revokes` of revokes given as (player, pi numerator, pi denominator, table name, time us,
    paid)."""
    tables: dict[str, int] = {}
    tb = np.array([tables.setdefault(r[3], len(tables)) for r in rows], np.int64)
    return BinnedGroups.of_keys([r[0] for r in rows], [r[1] / r[2] for r in rows], list(tables), tb,
                                np.array([r[4] for r in rows], np.int64), np.array([r[5] for r in rows], np.int64))


def revoke_chances(c: RevokeCounts) -> dict[str, list[float]]:
    """Each player's revokes' chances pi of paying, one per revoke, ascending (for the calibration studies)."""
    return {pl: [p for p, (n, _k) in c.revokes.totals(a, b).items() for _ in range(n)]
            for pl, (a, b) in c.revokes.spans().items()}


def _count_deal(res: Any, c: RevokeCounts, rows: list[tuple]) -> None:
    """`count_deal` with the deal's revokes appended to `rows` (as `revokes_of` takes them) instead of binned."""
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
    pay_by_seat = [0] * d.n
    t_us = time_key(d.time)
    for st in walk(res):
        if st.lead_suit is None or st.two_card_turn:  # a lead (no suit led yet)
            continue
        s = st.seat
        if not (st.hold[s] & ~st.legal):
            continue  # no way to revoke: every card he holds is a legal one
        opp_by_seat[s] += 1
        num, den = pay_odds(st)
        pay_by_seat[s] += int(num > 0)
        if not st.revoke:
            continue
        paid = int(pays(st, st.card))
        full = tricks[st.k]
        pos = st.pos
        won = side[res.winners[st.k]] == side[s]
        pts = trick_points(d.game, trump, full)
        alt_side_pts = []
        alt_win = False
        alt_gives = True  # every legal card gives a counting card to an opponent's trick
        for alt in cards_of(st.legal):
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
        _add(c, d.players[s], cell, 0, 1, gainful, gain, 0)
        rows.append((d.players[s], num, den, d.table, t_us, paid))
    for s in range(d.n):
        if opp_by_seat[s]:
            _add(c, d.players[s], cell, opp_by_seat[s], 0, 0, Fraction(0), pay_by_seat[s])


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


def pay_counting_table() -> np.ndarray:
    """[game (0 Scotch Whist, 1 All Fours), card is trump (0/1), rank] -> `pay_counting`, from the Python
    definition."""
    return rank_table(pay_counting)


@numba.njit(cache=True)
def _revokes(use, arrays, side_of, winners, count_tab, pts_tab, pay_tab, seat_player, opp, pay_opp, r_row, r_seat,
             r_gainful, r_num, r_den, r_paid, r_pnum, r_pden):
    """`count_deal` over the rows `use` (`play_columns.walk_deal`): each seat's revoke chances summed into
    `opp[player << 5 | all_fours << 4 | n]` (those where a revoke could pay into `pay_opp`), each revoke into
    r_*[m]; returns m."""
    buf = walk_buffers(arrays)
    W = buf.plays
    T = buf.tricks
    play_card = arrays[11]
    play_seat = arrays[12]
    trick = np.zeros(16, np.int64)  # the cards of the revoke's trick, one of them replaced by each legal card
    n_opp = np.zeros(8, np.int64)
    n_pay = np.zeros(8, np.int64)
    m = 0
    for row in range(len(use)):
        if not use[row]:
            continue
        d = walk_deal(row, arrays, buf, WALK_WINNER | WALK_LEGAL)
        af, trump, n = d.af, d.trump, d.n
        for s in range(n):
            n_opp[s] = 0
            n_pay[s] = 0
        for i in range(d.n_plays):
            if W[i, P_POS] == 0 or W[i, P_TWO]:
                continue
            s = W[i, P_SEAT]
            hold = W[i, P_HOLD]
            lg = W[i, P_LEGAL]
            off = hold & ~lg
            if off == 0:
                continue  # no way to revoke: every card he holds is a legal one
            n_opp[s] += 1
            mine_side = side_of[row, s]
            # `pay_state`: an opponent winning, no legal card beating him; every legal card a counting card
            wc = W[i, P_WIN_CARD]
            can = side_of[row, W[i, P_WIN_SEAT]] != mine_side
            all_count = True
            mm = lg
            while can and mm != 0:
                alt = low_bit(mm)
                mm &= mm - 1
                if beats(af, trump, alt, wc):
                    can = False
                elif not pay_tab[np.int64(af), np.int64(alt // 13 == trump), alt % 13]:
                    all_count = False
            pnum = 0
            if can:  # `pay_odds`
                mm = off
                while mm != 0:
                    o = low_bit(mm)
                    mm &= mm - 1
                    if beats(af, trump, o, wc) or (
                            all_count and not pay_tab[np.int64(af), np.int64(o // 13 == trump), o % 13]):
                        pnum += 1
            if pnum > 0:
                n_pay[s] += 1
            if not W[i, P_REVOKE]:
                continue
            c = W[i, P_CARD]
            paid = can and (beats(af, trump, c, wc) or (
                all_count and not pay_tab[np.int64(af), np.int64(c // 13 == trump), c % 13]))
            first = T[W[i, P_TRICK], T_FIRST]
            cnt = T[W[i, P_TRICK], T_COUNT]
            p = W[i, P_POS]
            won = side_of[row, winners[row, W[i, P_TRICK]]] == mine_side
            for q in range(cnt):
                trick[q] = play_card[row, first + q]
            pts = _trick_points(af, trump, pts_tab, trick, cnt)
            alt_sum = 0
            n_alt = 0
            alt_win = False
            alt_gives = True  # every legal card gives a counting card to an opponent's trick
            mm = lg
            while mm != 0:
                alt = low_bit(mm)
                mm &= mm - 1
                trick[p] = alt
                w = play_seat[row, first]
                wc2 = trick[0]
                for q in range(1, cnt):
                    if beats(af, trump, trick[q], wc2):
                        w = play_seat[row, first + q]
                        wc2 = trick[q]
                mine = side_of[row, w] == mine_side
                alt_win |= mine
                if mine:
                    alt_sum += _trick_points(af, trump, pts_tab, trick, cnt)
                if mine or not count_tab[np.int64(af), np.int64(alt // 13 == trump), alt % 13]:
                    alt_gives = False
                n_alt += 1
            gainful = (won and not alt_win) or (
                af and alt_gives and not count_tab[np.int64(af), np.int64(c // 13 == trump), c % 13])
            r_row[m] = row
            r_seat[m] = s
            r_gainful[m] = gainful
            # gain = (pts if won) - alt_sum / n_alt; n_alt >= 1 (the seat has a legal card)
            r_num[m] = (pts if won else 0) * n_alt - alt_sum
            r_den[m] = n_alt
            r_paid[m] = paid
            r_pnum[m] = pnum
            r_pden[m] = count_bits(off)
            m += 1
        cell = (np.int64(af) << 4) | n
        for s in range(n):
            opp[(np.int64(seat_player[row, s]) << 5) | cell] += n_opp[s]
            pay_opp[(np.int64(seat_player[row, s]) << 5) | cell] += n_pay[s]
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
    what="Whether a player's revokes (failures to follow suit) pay them, by taking a trick from an opponent that no "
         'card they could legally play would take, or by keeping a counting card they would otherwise have had to give '
         "to an opponent's trick, more often than accidental revokes at the same moments would (an accidental "
         'revoke drops any card they may not play, so the chance that it pays is known at each revoke).',
    unit='revokes',
    unit_short='revokes',
    event='paid',
    cheat='a share of deliberate revokes',
    honest='accidental revokes at the same moments',
    subject='player',
    chart='evidence',
    control_words=(
        ('revoke_rate', 'how often they revoked'),
        ('gainful_vs_field', 'revokes that paid, against other players'),
        ('gain', 'points gained by revoking'),
        ('timing', 'revokes at moments when revoking pays'),
    ),
    section=8,
    cost=1,
    bernoulli=True,
    sentence="{obs} of {subject}'s {n} revokes paid (took the trick or kept a counting card); {honest} would pay "
             'about {exp}{spread}; {pq}.',
)
METHOD = ("exact poisson-binomial, one-sided: their revokes that paid, each against the chance that an accidental "
          "revoke (any card they may not play) would pay there")


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
        # chances per (player, game, n): player << 5 | all_fours << 4 | n
        opp = np.zeros(max(len(table.players), 1) << 5, np.int64)
        pay_opp = np.zeros_like(opp)
        # a revoke is counted at most once per play: bound by the plays of the rows that have revokes
        has_rev = np.zeros(D, bool)
        has_rev[table.rev_row] = True
        cap = max(int(table.n_plays[use & has_rev].astype(np.int64).sum()), 1)
        r_row = np.empty(cap, np.int64)
        r_seat = np.empty(cap, np.int64)
        r_gainful = np.empty(cap, np.bool_)
        r_num = np.empty(cap, np.int64)
        r_den = np.empty(cap, np.int64)
        r_paid = np.empty(cap, np.bool_)
        r_pnum = np.empty(cap, np.int64)
        r_pden = np.empty(cap, np.int64)
        m = _revokes(use, su.arrays(table), table.side_of, table.winners, counting_table(), points_table(),
                     pay_counting_table(), table.seat_player, opp, pay_opp, r_row, r_seat, r_gainful, r_num,
                     r_den, r_paid, r_pnum, r_pden)
        r_row, r_seat, r_num, r_den = r_row[:m], r_seat[:m], r_num[:m], r_den[:m]
        r_gainful = r_gainful[:m].astype(np.int64)
        r_paid = r_paid[:m].astype(np.int64)
        r_pnum, r_pden = r_pnum[:m], r_pden[:m]
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
            c.cells[(players[k >> 5], (games[(k >> 4) & 1], k & 15))] = [int(opp[k]), r, g, gain, int(pay_opp[k])]
        # each player's revokes per (bin, pi)
        c.revokes = BinnedGroups.of_keys([players[p] for p in r_player.tolist()], (r_pnum / r_pden).tolist(),
                                         table.tables, table.table[r_row], table.time[r_row], r_paid)
        return c

    def merge(self, parts: Sequence[RevokeCounts]) -> RevokeCounts:
        out = RevokeCounts()
        for p in parts:
            for k, n in p.excluded_deals.items():
                out.excluded_deals[k] = out.excluded_deals.get(k, 0) + n
            for (pl, cell), v in p.cells.items():
                _add(out, pl, cell, *v)
        out.revokes = BinnedGroups.merge([p.revokes for p in parts])
        return out

    def finalize(self, counts: RevokeCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        per_player: dict[str, dict[Cell, Tally]] = {}
        tot_cell: dict[Cell, Tally] = {}
        for (pl, cell), v in sorted(counts.cells.items(), key=lambda kv: (kv[0][0], repr(kv[0][1]))):
            per_player.setdefault(pl, {})[cell] = v
            t = tot_cell.setdefault(cell, [0, 0, 0, Fraction(0), 0])
            for i in range(5):
                t[i] += v[i]
        R = sum(t[1] for t in tot_cell.values())
        G = sum(t[2] for t in tot_cell.values())
        gain_all = sum(t[3] for t in tot_cell.values())
        spans = counts.revokes.spans()
        subjects = sorted(pl for pl in per_player if pl in spans)
        level = exact.per_test_level(self.fdr, len(subjects))
        out: list[TestResult] = []
        for pl in subjects:
            cells = per_player[pl]
            a, b = spans[pl]
            pi_of = counts.revokes.totals(a, b)  # {pi: [revokes, paid]}
            r = int(sum(v[1] for v in cells.values()))
            g = int(sum(v[2] for v in cells.values()))
            opp = int(sum(v[0] for v in cells.values()))
            pay_opp = int(sum(v[4] for v in cells.values()))
            gain_exact = sum((v[3] for v in cells.values()), Fraction(0))
            gain = float(gain_exact)
            trials = TrialSummary(np.array(list(pi_of), float), np.array([v[0] for v in pi_of.values()], np.int64),
                                  np.array([v[1] for v in pi_of.values()], np.int64))
            rf, gf = int(R) - r, int(G) - g  # the field without him
            # control: Fisher's exact test, one-sided: his gainful share above the field's (the old primary test)
            p_fisher = float(scipy_stats().hypergeom.sf(g - 1, r + rf, g + gf, r)) if (r + rf) > 0 else 1.0
            # control: revoke rate per chance vs the field's (leave-player-out), Poisson-binomial by cell
            groups = []
            for cell, v in cells.items():
                tc = tot_cell[cell]
                fo, fr = tc[0] - v[0], tc[1] - v[1]
                if v[0] > 0:
                    groups.append(((fr + 0.5) / (fo + 1.0), int(v[0])))
            rate_ctl: dict[str, Any] = {"opportunities": opp, "revokes": r}
            if groups:
                gt = tuple(sorted(_merge(groups)))
                dist = exact.poisson_binomial(gt)
                rate_ctl |= {"expected": sum(p * k for p, k in gt), "pvalue": dist.sf(r)}
            # control: his revokes at chances where a revoke could pay, against a draw of r of his chances
            at_pay = sum(v[0] for p, v in pi_of.items() if p > 0)
            timing: dict[str, Any] = {"chances": opp, "pay_chances": pay_opp, "revokes": r, "observed": at_pay}
            if opp > 0:
                timing |= {"expected": r * pay_opp / opp,
                           "pvalue": float(scipy_stats().hypergeom.sf(at_pay - 1, opp, pay_opp, min(r, opp)))}
            controls = {
                "revoke_rate": rate_ctl,
                "gainful_vs_field": {"observed": g, "revokes": r, "field_gainful": gf, "field_revokes": rf,
                                     "field_share": gf / rf if rf > 0 else None,
                                     "expected": r * (g + gf) / (r + rf) if (r + rf) > 0 else float(g),
                                     "pvalue": min(1.0, p_fisher)},
                "gain": {"mean": gain / r, "field_mean": float(gain_all - gain_exact) / rf if rf > 0 else None,
                         "unit": "counting points taken in the revoke trick vs the mean legal card"},
                "timing": timing,
            }
            res = pb_result(NAME, pl, trials, level, METHOD, controls, {}, details=self.details,
                            cheat="revokes when it pays")
            if self.details:  # the timeline with the null variance of the count so far (the report's honest band)
                tl = counts.revokes.timeline(a, b, np.asarray(counts.revokes.groups, float))
                res = replace(res, detail=res.detail | {"timeline": tl.points(variance=True)})
            out.append(res)
        return out


def _merge(groups: list[tuple[float, int]]) -> list[tuple[float, int]]:
    acc: dict[float, int] = {}
    for p, k in groups:
        acc[p] = acc.get(p, 0) + k
    return list(acc.items())
