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
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Sequence

import numpy as np

from ..cards import rank_of, suit_of
from ..rules import AF_PIPS, SW_HONOURS
from ..stats import exact
from ..stats.family import TestResult
from .base import deal_order, timeline, trail_code
from .play_facts import JACK, deal_exclusion, walk
from .spec import TestSpec

NAME = "collusion"
SW_COUNTING_RANKS = frozenset(r for r in SW_HONOURS if r != JACK)  # T A K Q of trumps


def counting(game: str, trump: int, card: int) -> bool:
    r = rank_of(card)
    if game == "scotch_whist":
        return suit_of(card) == trump and r in SW_COUNTING_RANKS
    return r in AF_PIPS or (suit_of(card) == trump and r == JACK)


def individual(deal) -> bool:
    return deal.n >= 3 and (not deal.sides or all(len(s) == 1 for s in deal.sides))


@dataclass
class CollusionCounts:
    """Counts that add across partitions: per cell the field's (opportunities, events); per ordered pair and cell
    the pair's (opportunities, events).

    `trail`, per ordered pair and cell, lists the pair's opportunities one by one as `trail_code(deal order, play
    index, event)` (deal order = file index << 32 | line, play index = the play's place in the deal's plays), in
    ascending order: the timeline of the pair's gifts in input order. Sorted, so that any partition of the input
    merges to the same lists."""

    field: dict[tuple, list[int]] = dc_field(default_factory=dict)
    pairs: dict[tuple[str, str], dict[tuple, list[int]]] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    deals: int = 0
    trail: dict[tuple[str, str], dict[tuple, list[int]]] = dc_field(default_factory=dict)


def sort_trail(trail: dict) -> None:
    for cells in trail.values():
        for codes in cells.values():
            codes.sort()


def _add(dct: dict, key, opp: int, ev: int) -> None:
    v = dct.get(key)
    if v is None:
        dct[key] = [opp, ev]
    else:
        v[0] += opp
        v[1] += ev


def count_deal(res, c: CollusionCounts) -> None:
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
        if st.pos == 0 or st.two_card_turn or st.revoke:
            continue
        ws, wc = st.current_winner()
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
        cell = (game, st.n, following, int(st.lead_suit == trump), int(st.pos == len(st.trick_seats) - 1),
                int(st.winner_is_sure()), min(n_count, 3))
        _add(c.field, cell, 1, ev)
        pair = (d.players[a], d.players[ws])
        _add(c.pairs.setdefault(pair, {}), cell, 1, ev)
        c.trail.setdefault(pair, {}).setdefault(cell, []).append(trail_code(order, play, ev))


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

    def count(self, results: Sequence[Any], rng: np.random.Generator | None = None, facts: Any = None
              ) -> CollusionCounts:
        c = CollusionCounts()
        for res in results:
            count_deal(res, c)
        sort_trail(c.trail)
        return c

    def count_columns(self, cols: Any, rng: np.random.Generator | None = None, facts: Any = None) -> CollusionCounts:
        """`count` over the audit's columns (`auditor.columns.AuditColumns`, all deals at once): the same counts,
        from one numba walk (`collusion_fast`)."""
        from .collusion_fast import count_columns

        return count_columns(cols)

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
