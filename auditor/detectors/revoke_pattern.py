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
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
from scipy import stats as st_

from ..cards import SUIT_MASK, rank_of, suit_of
from ..rules import AF_PIPS, SW_HONOURS
from ..stats import exact
from ..stats.family import TestResult
from .base import deal_order, timeline, trail_code
from .collusion import counting
from .play_facts import JACK, PlayState, deal_exclusion, walk
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


@dataclass
class RevokeCounts:
    """Per player and cell (game, n): opportunities, revokes, gainful revokes, summed gain (an exact fraction:
    adds exactly across partitions). `trail`: per player, his revokes one by one as `base.trail_code(deal order,
    play index, gainful)`, ascending (input order): his timeline. Sorted, so any partition merges to the same lists.
    """

    cells: dict[tuple[str, tuple], list[float]] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    trail: dict[str, list[int]] = dc_field(default_factory=dict)


def _add(c: RevokeCounts, player: str, cell: tuple, opp: int, rev: int, gainful: int, gain) -> None:
    v = c.cells.get((player, cell))
    if v is None:
        c.cells[(player, cell)] = [opp, rev, gainful, gain]
    else:
        v[0] += opp
        v[1] += rev
        v[2] += gainful
        v[3] += gain


def count_deal(res, c: RevokeCounts) -> None:
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
        if st.pos == 0 or st.two_card_turn:
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

    def count(self, results: Sequence[Any], rng: np.random.Generator | None = None, facts: Any = None
              ) -> RevokeCounts:
        c = RevokeCounts()
        for res in results:
            count_deal(res, c)
        for codes in c.trail.values():
            codes.sort()
        return c

    def count_columns(self, cols: Any, rng: np.random.Generator | None = None, facts: Any = None) -> RevokeCounts:
        """`count` over the audit's columns (`auditor.columns.AuditColumns`, all deals at once): the same counts,
        from one numba walk (`revoke_pattern_fast`)."""
        from .revoke_pattern_fast import count_columns

        return count_columns(cols)

    def merge(self, parts: Sequence[RevokeCounts]) -> RevokeCounts:
        out = RevokeCounts()
        for p in parts:
            for k, v in p.excluded_deals.items():
                out.excluded_deals[k] = out.excluded_deals.get(k, 0) + v
            for (pl, cell), v in p.cells.items():
                _add(out, pl, cell, *v)
            for pl, codes in p.trail.items():
                out.trail.setdefault(pl, []).extend(codes)
        for codes in out.trail.values():
            codes.sort()
        return out

    def finalize(self, counts: RevokeCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        per_player: dict[str, dict[tuple, list[float]]] = {}
        tot_cell: dict[tuple, list[float]] = {}
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
