"""`collusion`: at individual-play tables, does one player give counting cards to another's tricks?

For an ordered pair (a gives to b): an *opportunity* is a play by `a`, in a deal where every player plays for
himself (3 or more players), when `b` is winning the trick at that moment and `a`'s legal cards include both a
counting card that would not take the trick from `b` (a card `a` can give) and a non-counting card. The *event*
is that `a` gives the counting card. Counting cards: Scotch Whist, the trump Ten, Ace, King and Queen (the Jack
always wins its trick); All Fours, every card worth Game pips (Ten, Ace, King, Queen, Jack) and the trump Jack.

Null: the field's rate of giving in the same situation (cell: game and player count, following suit or void,
trump led, `a` last to play, `b` holding a sure winner, how many of `a`'s legal cards count), estimated from every
other ordered pair (leave-pair-out). The pair's event count is then an exact one-sided Poisson-binomial test. Every
ordered pair with an opportunity is one test of the `collusion` family (thousands of pairs in a large club).

Controls (in no family): the giver's own rate of giving to everyone else in the same cells (a generous or careless
giver is generous to everybody; a colluder only to his accomplice), and the reverse pair.

Counting. `Collusion.count(table)` counts over the table (`auditor.columns.AuditColumns`) with one numba walk of
every deal's plays (`_gifts`); `count_results(results)`, over `DealResult`s with `play_facts.walk`, is its
executable spec (the tests' oracle: the two give equal counts, field for field).

The kernel transcribes `count_deal` over the walk of `play_columns.walk_deal`: at every play that is not a lead, not
the Russian two-card turn and not a revoke, when another seat is winning the trick, it classifies the giver's legal
cards and, for an opportunity, emits one int64 key, (giver player, receiver player, cell), and its `base.trail_code`
(deal order, play index, event). Sorted by key, the runs of equal keys are the pairs' cells: their lengths the
opportunities, their codes' low bits the events, their codes the trails; they become the same `CollusionCounts`
dicts the Python counter builds (cells as the same tuples, values as Python ints). Key layout: (giver * n_players +
receiver) << 11 | cell, cell = af << 10 | n << 6 | following << 5 | trump_led << 4 | last << 3 | sure << 2 |
min(counting legal cards, 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Iterable, Sequence

import numba
import numpy as np

from ..cards import suit_of
from ..columns import AuditColumns
from ..facts import DealingFacts
from ..stats import exact
from ..stats.family import TestResult
from .base import deal_order, timeline, trail_code
from .play_columns import (
    P_CARD,
    P_LEAD,
    P_LEGAL,
    P_PLAYED,
    P_POS,
    P_REVOKE,
    P_SEAT,
    P_TRICK,
    P_TWO,
    P_WIN_CARD,
    P_WIN_SEAT,
    T_COUNT,
    WALK_LEGAL,
    WALK_WINNER,
    beats,
    counting_table,
    low_bit,
    setup_of,
    strength,
    suit_mask,
    walk_buffers,
    walk_deal,
)
from .play_facts import counting, deal_exclusion, walk
from .spec import TestSpec

NAME = "collusion"
Cell = tuple[str, int, int, int, int, int, int]  # game, players, following, trump led, last, sure, counting cards
Pair = tuple[str, str]  # (giver, receiver)


def individual(deal: Any) -> bool:
    return deal.n >= 3 and (not deal.sides or all(len(s) == 1 for s in deal.sides))


@dataclass
class CollusionCounts:
    """Counts that add across partitions: per cell the field's (opportunities, events); per ordered pair and cell
    the pair's (opportunities, events).

    `trail`, per ordered pair and cell, lists the pair's opportunities one by one as `trail_code(deal order, play
    index, event)` (deal order = file index << 32 | line, play index = the play's place in the deal's plays), in
    ascending order: the timeline of the pair's gifts in input order. Sorted, so that any partition of the input
    merges to the same lists."""

    field: dict[Cell, list[int]] = dc_field(default_factory=dict)
    pairs: dict[Pair, dict[Cell, list[int]]] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    deals: int = 0
    trail: dict[Pair, dict[Cell, list[int]]] = dc_field(default_factory=dict)


def sort_trail(trail: dict[Pair, dict[Cell, list[int]]]) -> None:
    for cells in trail.values():
        for codes in cells.values():
            codes.sort()


def _add(dct: dict[Cell, list[int]], key: Cell, opp: int, ev: int) -> None:
    v = dct.get(key)
    if v is None:
        dct[key] = [opp, ev]
    else:
        v[0] += opp
        v[1] += ev


def count_results(results: Iterable[Any]) -> CollusionCounts:
    """The counts of these `DealResult`s, play by play with `play_facts.walk`: the executable spec of
    `Collusion.count` (tests only)."""
    c = CollusionCounts()
    for res in results:
        count_deal(res, c)
    sort_trail(c.trail)
    return c


def count_deal(res: Any, c: CollusionCounts) -> None:
    d = res.deal
    if not individual(d):
        return
    why = deal_exclusion(res)
    if why is not None:
        c.excluded_deals[why] = c.excluded_deals.get(why, 0) + 1
        return
    c.deals += 1
    game = d.game
    order = deal_order(d)
    for play, st in enumerate(walk(res)):
        w = st.current_winner()
        if w is None or st.two_card_turn or st.revoke:  # a lead (nobody is winning yet)
            continue
        ws, wc = w
        a = st.seat
        if ws == a:
            continue
        trump = st.trump
        give = False
        plain = False
        n_count = 0
        m = st.legal
        while m:
            low = m & -m
            card = low.bit_length() - 1
            m ^= low
            if counting(game, trump, card):
                n_count += 1
                if not st.beats(card, wc):
                    give = True
            else:
                plain = True
        if not (give and plain):
            continue
        ev = int(counting(game, trump, st.card) and not st.beats(st.card, wc))
        following = int(st.lead_suit is not None and suit_of(st.card) == st.lead_suit)
        cell: Cell = (game, st.n, following, int(st.lead_suit == trump), int(st.pos == len(st.trick_seats) - 1),
                      int(st.winner_is_sure()), min(n_count, 3))
        _add(c.field, cell, 1, ev)
        pair = (d.players[a], d.players[ws])
        _add(c.pairs.setdefault(pair, {}), cell, 1, ev)
        c.trail.setdefault(pair, {}).setdefault(cell, []).append(trail_code(order, play, ev))


# ---------------------------------------------------------------- the count over the table


@numba.njit(cache=True)
def _gifts(use, arrays, count_tab, seat_player, n_players, order, keys, codes):
    """`count_deal` over the rows `use` (`play_columns.walk_deal`): each opportunity's key and trail code into
    keys[m] / codes[m]; returns m."""
    buf = walk_buffers(arrays)
    W = buf.plays
    T = buf.tricks
    m = 0
    for row in range(len(use)):
        if not use[row]:
            continue
        d = walk_deal(row, arrays, buf, WALK_WINNER | WALK_LEGAL)
        af, trump, n = d.af, d.trump, d.n
        trumps = suit_mask(trump)
        for i in range(d.n_plays):
            s = W[i, P_SEAT]
            ws = W[i, P_WIN_SEAT]
            if W[i, P_POS] == 0 or W[i, P_TWO] or W[i, P_REVOKE] or ws == s:
                continue
            wc = W[i, P_WIN_CARD]
            give = False
            plain = False
            n_count = 0
            mm = W[i, P_LEGAL]
            while mm != 0:
                card = low_bit(mm)
                mm &= mm - 1
                if count_tab[np.int64(af), np.int64(card // 13 == trump), card % 13]:
                    n_count += 1
                    if not beats(af, trump, card, wc):
                        give = True
                else:
                    plain = True
            if not (give and plain):
                continue
            c = W[i, P_CARD]
            lead = W[i, P_LEAD]
            ev = count_tab[np.int64(af), np.int64(c // 13 == trump), c % 13] and not beats(af, trump, c, wc)
            sure = False  # `winner_is_sure`: no trump still out beats the winning trump
            if wc // 13 == trump:
                sure = True
                out = ~W[i, P_PLAYED] & ~d.out_public & trumps
                sw = strength(af, wc % 13)
                for r in range(13):
                    if (out >> np.int64(trump * 13 + r)) & 1 and strength(af, r) > sw:
                        sure = False
                        break
            last = W[i, P_POS] == T[W[i, P_TRICK], T_COUNT] - 1
            cell = ((np.int64(af) << 10) | (n << 6) | (np.int64(c // 13 == lead) << 5)
                    | (np.int64(lead == trump) << 4) | (np.int64(last) << 3) | (np.int64(sure) << 2) | min(n_count, 3))
            g = np.int64(seat_player[row, s])
            b = np.int64(seat_player[row, ws])
            keys[m] = ((g * n_players + b) << 11) | cell
            codes[m] = (((order[row] << 6) | i) << 1) | np.int64(ev)
            m += 1
    return m


SPEC = TestSpec(
    name='collusion',
    title='Pairs who feed each other counting cards',
    what='For each ordered pair of players at individual-play tables, how often the first gives counting cards to '
         'tricks the second is winning, against what honest play gives.',
    unit='chances to give',
    unit_short='chances to give',
    event='gave counting cards',
    cheat='a feeding rate',
    honest='an honest pair',
    subject='pair',
    chart='evidence',
    section=7,
    cost=20,
    bernoulli=True,
    sentence='{first} gave a counting card to a trick {second} was winning in {obs} of the {n} chances they had; '
             'players in the same situations give about {exp}; {pq}.',
)


class Collusion:
    spec = SPEC
    name = NAME

    def __init__(self, fdr: float = 0.05, details: bool = True, min_opportunities: int = 1, **_: Any):
        self.fdr = fdr
        self.details = details
        self.min_opportunities = min_opportunities

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> CollusionCounts:
        """The counts of the table's deals, from one numba walk of their plays (`_gifts`; the spec is
        `count_results`). `rng` and `facts` are not used."""
        c = CollusionCounts()
        D = len(table)
        if D == 0:
            return c
        su = setup_of(table)
        indiv = (table.n >= 3) & (table.n_sides == table.n)  # `individual`: sides partition the seats
        c.excluded_deals = su.excluded(indiv)
        use = indiv & (su.why == 0)
        c.deals = int(use.sum())
        if not c.deals:
            return c
        n_players = max(len(table.players), 1)
        cap = int(table.n_plays[use].astype(np.int64).sum())
        keys = np.empty(max(cap, 1), np.int64)
        codes = np.empty(max(cap, 1), np.int64)
        m = _gifts(use, su.arrays(table), counting_table(), table.seat_player, n_players, table.order, keys, codes)
        keys, codes = keys[:m], codes[:m]
        # group by (pair, cell), each group's trail ascending: rows in input order emit ascending codes already, so a
        # stable sort by key suffices; otherwise sort by (key, code)
        if m > 1 and not (codes[1:] >= codes[:-1]).all():
            idx = np.lexsort((codes, keys))
        else:
            idx = np.argsort(keys, kind="stable")
        keys, codes = keys[idx], codes[idx]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if m else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], m].astype(np.int64) if m else starts
        ev_cum = np.r_[0, np.cumsum(codes & 1)]
        games = ("scotch_whist", "all_fours")
        cell_of: dict[int, Cell] = {}
        players = table.players
        trail = codes.tolist()
        for key, a, b in zip(keys[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
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

    def merge(self, parts: Sequence[CollusionCounts]) -> CollusionCounts:
        out = CollusionCounts()
        for p in parts:
            out.deals += p.deals
            for k, v in p.excluded_deals.items():
                out.excluded_deals[k] = out.excluded_deals.get(k, 0) + v
            for cell, (o, e) in p.field.items():
                _add(out.field, cell, o, e)
            for pair, cells in p.pairs.items():
                dst = out.pairs.setdefault(pair, {})
                for cell, (o, e) in cells.items():
                    _add(dst, cell, o, e)
            for pair, cells in p.trail.items():
                dst_t = out.trail.setdefault(pair, {})
                for cell, codes in cells.items():
                    dst_t.setdefault(cell, []).extend(codes)
        sort_trail(out.trail)
        return out

    def finalize(self, counts: CollusionCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        out: list[TestResult] = []
        # the giver's totals per cell (for the within-giver control)
        giver: dict[str, dict[tuple, list[int]]] = {}
        for (a, _b), cells in counts.pairs.items():
            g = giver.setdefault(a, {})
            for cell, (o, e) in cells.items():
                _add(g, cell, o, e)
        for (a, b) in sorted(counts.pairs):
            cells = counts.pairs[(a, b)]
            n_opp = sum(o for o, _ in cells.values())
            if n_opp < self.min_opportunities:
                continue
            obs = sum(e for _, e in cells.values())
            groups: list[tuple[float, int]] = []
            own_groups: list[tuple[float, int]] = []
            own_ok = True
            p_of: dict[tuple, float] = {}
            for cell in sorted(cells, key=repr):
                o, e = cells[cell]
                fo, fe = counts.field[cell]
                ro, re = fo - o, fe - e  # leave the pair out
                p = p_of[cell] = _rate(re, ro)
                groups.append((p, o))
                go, ge = giver[a][cell]
                oo, oe = go - o, ge - e  # the giver to everyone else
                if oo > 0:
                    own_groups.append((_rate(oe, oo), o))
                else:
                    own_ok = False
            groups_t = _merge(groups)
            dist = exact.poisson_binomial(groups_t)
            pval = dist.sf(obs)
            expct = sum(p * k for p, k in groups_t)
            z = exact.z_score(obs, dist)
            controls: dict[str, Any] = {}
            if own_groups:
                og = _merge(own_groups)
                od = exact.poisson_binomial(og)
                controls["giver_to_others"] = {
                    "expected": sum(p * k for p, k in og), "pvalue": od.sf(obs),
                    "complete": own_ok,
                    "note": "null = the giver's own rate of giving to the other players in the same situations"}
            rev = counts.pairs.get((b, a))
            if rev:
                controls["reverse_pair"] = {"opportunities": sum(o for o, _ in rev.values()),
                                            "gifts": sum(e for _, e in rev.values())}
            detail = {"opportunities": n_opp, "gifts": obs, "cells": len(cells),
                      "timeline": pair_timeline(counts.trail.get((a, b), {}), p_of)} if self.details else {}
            out.append(TestResult(
                test=NAME, subject=f"{a}+{b}", n=int(n_opp), observed=float(obs), expected=float(expct),
                statistic=float(z), pvalue=float(pval),
                method="exact poisson-binomial, one-sided; null = the field's rate in the same situations "
                       "(leave-pair-out)", controls=controls, detail=detail))
        return out


def pair_timeline(trail: dict[tuple, list[int]], p_of: dict[tuple, float]) -> list[list]:
    """The pair's gifts over its opportunities in input order against the null of each (its cell's leave-pair-out
    rate), cumulative, with the exact null variance so far (sum of p(1 - p): independent Bernoulli trials)."""
    cells = [c for c in sorted(trail, key=repr) if trail[c]]
    if not cells:
        return []
    codes = np.concatenate([np.asarray(trail[c], np.int64) for c in cells])
    p = np.concatenate([np.full(len(trail[c]), p_of[c]) for c in cells])
    order = np.argsort(codes, kind="stable")
    codes, p = codes[order], p[order]
    return timeline((codes & 1).astype(np.int64), p, variance=np.cumsum(p * (1 - p)))


def _rate(events: int, opps: int, prior: float = 0.5) -> float:
    """The field's giving rate in a cell, with a half-event prior so that a cell nobody else met is not 0 or 1."""
    return (events + prior) / (opps + 2 * prior)


def _merge(groups: list[tuple[float, int]]) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for p, k in groups:
        acc[p] = acc.get(p, 0) + k
    return tuple(sorted(acc.items()))
