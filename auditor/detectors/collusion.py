"""`collusion`: at individual-play tables, does one player give counting cards to another's tricks?

For an ordered pair (a gives to b): an *opportunity* is a play by `a`, in a deal where every player plays for
himself (3 or more players), when `b` is winning the trick at that moment and `a`'s legal cards include both a
counting card that would not take the trick from `b` (a card `a` can give) and a non-counting card. The *event*
is that `a` gives the counting card. Counting cards: Scotch Whist, the trump Ten, Ace, King and Queen (the Jack
always wins its trick); All Fours, every card worth Game pips (Ten, Ace, King, Queen, Jack) and the trump Jack.

Null: the field's rate of giving in the same situation (cell: game and player count, following suit or void,
trump led, `a` last to play, `b` holding a sure winner, how many of `a`'s legal cards count), estimated from every
other ordered pair (leave-pair-out): r_cell per chance.

One trial per deal (issue 14). An honest player's chances within one deal are not independent trials: the same hand
meets the same trick situation again and again, so a player whose hand or habit makes him give once tends to give
again in the same deal (the demo's honest iris+kate gave 5 times in 5 chances, 4 of them in one All Fours deal, p
1e-7 as independent chances). The trial is therefore a (pair, deal) with at least one chance; its event is "gave at
least once in the deal"; its null probability is 1 - prod(1 - r_cell) over the deal's chances. That is exact when
the chances are independent and an upper bound when they are positively associated (same hand, same habit: by
Harris' inequality the "did not give" events, decreasing events, are positively associated too, so P(no gift) >=
prod(1 - r_cell)), so the test keeps its level under the dependence honest play has. Deals are dealt afresh, so
deals are independent trials given the field's rates. The pair's count of deals with a gift is then an exact
one-sided Poisson-binomial test over its deals. Every ordered pair with a chance is one test of the `collusion`
family (thousands of pairs in a large club). The per-chance test of before is kept as a control (`per_chance`).

Each deal's chances are counted as its *pattern* (the sorted cells of its chances with their multiplicities) per
ordered pair, with how many of the pair's deals had that pattern and in how many of them the pair gave: a deal lives
in exactly one part of any partition of the input, so the patterns add exactly across parts whatever the parts'
order keys. They are kept per bin of time (`bins`, a `play_columns.BinnedGroups`: pair x bin x pattern, integers),
which also lays out the pair's timeline, so the counts are bounded in deals (issue 15): a deal's null is known only
in `finalize` (it needs the field's leave-pair-out rates), where each bin's expectation is summed from its patterns
and the test's trials are the bins summed over time. Without details they are kept summed (`deals_of`).

Two nulls, one test (issue 14). Honest givers differ (a careless player gives more to everybody), which one field
rate per situation does not allow for: on honest All Fours tables of three the field null alone rejected at 2.9% /
7.7% at alpha 0.01 / 0.05. So the same per-deal count is also tested against the giver's own rate of giving to the
other players in the same situations (leave-receiver-out; shrunk towards the field's rate by `OWN_PRIOR` chances,
so a situation he met a few times gets about the field's rate), and the pair's p-value is the larger of the two: an
intersection-union test, valid whichever of the two nulls holds. A colluder gives to his accomplice beyond both the
field and his own habit; a generous honest giver is beyond the field only. Both parts are controls
(`against_field`, `giver_to_others`; `binding` names the part whose p is the test's).

Controls (in no family): the giver's own rate of giving to everyone else in the same cells, per deal the same way
(a generous or careless giver is generous to everybody; a colluder only to his accomplice), the reverse pair, and
the per-chance test (every chance an independent trial: what the test was before issue 14; it overstates the
evidence of a pair that gives repeatedly within one deal).

Counting. `Collusion.count(table)` counts over the table (`auditor.columns.AuditColumns`) with one numba walk of
every deal's plays (`_gifts`); `count_results(results)`, over `DealResult`s with `play_facts.walk`, is its
executable spec (the tests' oracle: the two give equal counts, field for field).

The kernel transcribes `count_deal` over the walk of `play_columns.walk_deal`: at every play that is not a lead, not
the Russian two-card turn and not a revoke, when another seat is winning the trick, it classifies the giver's legal
cards and, for an opportunity, emits one int64 key, (giver player, receiver player, cell), its event and its row.
Sorted by key, the runs of equal keys are the pairs' cells: their lengths the opportunities, their events' sums the
gifts; sorted by (pair, row, cell), the runs of equal (pair, row) are the pairs' deals, whose cells make the deal
patterns, binned by the row's table and time; they become the same
`CollusionCounts` dicts the Python counter builds (cells as the same tuples, values as Python ints). Key layout: (giver * n_players +
receiver) << 11 | cell, cell = af << 10 | n << 6 | following << 5 | trump_led << 4 | last << 3 | sure << 2 |
min(counting legal cards, 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Iterable, Iterator, Sequence, cast

import numba
import numpy as np

from ..cards import suit_of
from ..columns import AuditColumns, time_key
from ..facts import DealingFacts
from ..stats import exact
from ..stats.family import TestResult
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
    BinnedGroups,
    beats,
    counting_table,
    low_bit,
    setup_of,
    strength,
    suit_mask,
    walk_buffers,
    walk_deal,
)
from .base import Timeline, points_many, shard_of
from .play_facts import counting, deal_exclusion, walk
from .spec import TestSpec

NAME = "collusion"
Cell = tuple[str, int, int, int, int, int, int]  # game, players, following, trump led, last, sure, counting cards
Pair = tuple[str, str]  # (giver, receiver)
Pattern = tuple[tuple[Cell, int], ...]  # one deal's chances of one pair: (cell, chances in it), sorted by cell


PAIR_BINS = 64  # a pair's timeline keeps at most this many bins (points): each bin holds its deals' patterns, so the
# counts of a pair grow with bins x patterns; fewer bins than the Timeline's MAX_BINS keep them small


def individual(deal: Any) -> bool:
    return deal.n >= 3 and (not deal.sides or all(len(s) == 1 for s in deal.sides))


@dataclass
class CollusionCounts:
    """Counts that add across partitions, bounded in deals: per cell the field's (opportunities, events); per
    ordered pair and cell the pair's (opportunities, events).

    The trials of the test, per ordered pair and deal pattern (the sorted (cell, chances) of one deal's chances of
    the pair): [deals with that pattern, of them deals where the pair gave at least once]. They are held once:

    - `bins`, per bin of time (subject: the pair, group: the pattern, event: gave at least once), which also lays
      out the pair's timeline, when the detector keeps details;
    - `deals_of` (pair -> pattern -> [deals, deals with a gift]) only when it keeps none (then `bins` is empty).

    `patterns_of(counts, pair)` gives a pair's trials from whichever holds them. (Until issue 15's sixth session
    both were kept: `deals_of` is the bins summed over time, and was a third of the counts at 1M deals. Counts
    saved then hold both and load and merge as before.)"""

    field: dict[Cell, list[int]] = dc_field(default_factory=dict)
    pairs: dict[Pair, dict[Cell, list[int]]] = dc_field(default_factory=dict)
    excluded_deals: dict[str, int] = dc_field(default_factory=dict)
    deals: int = 0
    deals_of: dict[Pair, dict[Pattern, list[int]]] = dc_field(default_factory=dict)
    bins: BinnedGroups = dc_field(default_factory=lambda: BinnedGroups(max_bins=PAIR_BINS))


def _add(dct: dict[Any, list[int]], key: Any, opp: int, ev: int) -> None:
    v = dct.get(key)
    if v is None:
        dct[key] = [opp, ev]
    else:
        v[0] += opp
        v[1] += ev


def _add_counts(out: CollusionCounts, p: CollusionCounts, canon: dict) -> None:
    """Add the integers of `p` (all but its bins) to `out`, in `p`'s key order; each pattern held as `canon`'s."""
    out.deals += p.deals
    for k, v in p.excluded_deals.items():
        out.excluded_deals[k] = out.excluded_deals.get(k, 0) + v
    for cell, (o, e) in p.field.items():
        _add(out.field, cell, o, e)
    for pair, cells in p.pairs.items():
        dst = out.pairs.setdefault(pair, {})
        for cell, (o, e) in cells.items():
            _add(dst, cell, o, e)
    if len(p.bins):  # its trials are in its bins (counts saved before issue 15's sixth session hold them twice)
        return
    for pair, pats in p.deals_of.items():
        dst_p = out.deals_of.setdefault(pair, {})
        for pat, (nd, ng) in pats.items():
            _add(dst_p, canon.setdefault(pat, pat), nd, ng)


def patterns_of(counts: CollusionCounts, pair: Pair, spans: dict | None = None) -> dict[Pattern, list[int]]:
    """The pair's trials: {pattern: [deals, deals with a gift]}, from `counts.bins` when it holds any deals (summed
    over the pair's bins; `spans`: `counts.bins.spans()`, given when the caller has it), else `counts.deals_of`."""
    if len(counts.bins):
        span = (spans if spans is not None else counts.bins.spans()).get(pair)
        return counts.bins.totals(*span) if span is not None else {}
    return counts.deals_of.get(pair, {})


def trial_sums(counts: CollusionCounts, pair: Pair, spans: dict) -> tuple[int, int]:
    """(deals, deals with a gift) of the pair: the sums of `patterns_of`'s values, without laying out its patterns
    (`spans`: `counts.bins.spans()`)."""
    if len(counts.bins):
        span = spans.get(pair)
        if span is None:
            return 0, 0
        a, b = span
        return int(counts.bins.n[a:b].sum()), int(counts.bins.k[a:b].sum())
    pats = counts.deals_of.get(pair, {}).values()
    return sum(nd for nd, _ in pats), sum(ng for _, ng in pats)


def count_results(results: Iterable[Any], details: bool = True) -> CollusionCounts:
    """The counts of these `DealResult`s, play by play with `play_facts.walk`: the executable spec of
    `Collusion(details=details).count` (tests only)."""
    c = CollusionCounts()
    rows: list[tuple] = []
    for res in results:
        _count_deal(res, c, rows)
    if details:  # the trials held once: binned by time (`CollusionCounts`)
        c.bins = bins_of(rows)
        c.deals_of = {}
    return c


def count_deal(res: Any, c: CollusionCounts, details: bool = True) -> None:
    """Add one `DealResult`'s counts to `c` (counted with the same `details`)."""
    rows: list[tuple] = []
    _count_deal(res, c, rows)
    if details:
        c.bins = BinnedGroups.merge([c.bins, bins_of(rows)])
        c.deals_of = {}


def bins_of(rows: Sequence[tuple]) -> BinnedGroups:
    """`CollusionCounts.bins` of the pairs' deals given as (pair, pattern, table name, time us, gave)."""
    tables: dict[str, int] = {}
    tb = np.array([tables.setdefault(r[2], len(tables)) for r in rows], np.int64)
    return BinnedGroups.of_keys([r[0] for r in rows], [r[1] for r in rows], list(tables), tb,
                                np.array([r[3] for r in rows], np.int64), np.array([r[4] for r in rows], np.int64),
                                PAIR_BINS)


def _count_deal(res: Any, c: CollusionCounts, rows: list[tuple]) -> None:
    """`count_deal` with the deal's (pair, pattern, table, time, gave) appended to `rows` instead of binned."""
    d = res.deal
    if not individual(d):
        return
    why = deal_exclusion(res)
    if why is not None:
        c.excluded_deals[why] = c.excluded_deals.get(why, 0) + 1
        return
    c.deals += 1
    game = d.game
    mine: dict[Pair, tuple[dict[Cell, int], list[int]]] = {}  # this deal's chances per pair: cells, gave
    for st in walk(res):
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
        cells, gave = mine.setdefault(pair, ({}, [0]))
        cells[cell] = cells.get(cell, 0) + 1
        gave[0] |= ev
    t_us = time_key(d.time)
    for pair, (cells, gave) in mine.items():
        pat = tuple(sorted(cells.items()))
        _add(c.deals_of.setdefault(pair, {}), pat, 1, gave[0])
        rows.append((pair, pat, d.table, t_us, gave[0]))


# ---------------------------------------------------------------- the count over the table


@numba.njit(cache=True)
def _gifts(use, arrays, count_tab, seat_player, n_players, keys, evs, rows):
    """`count_deal` over the rows `use` (`play_columns.walk_deal`): each opportunity's key, event and row into
    keys[m] / evs[m] / rows[m]; returns m."""
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
            evs[m] = ev
            rows[m] = row
            m += 1
    return m


SPEC = TestSpec(
    name='collusion',
    title='Pairs who feed each other counting cards',
    what='For each ordered pair of players at individual-play tables, in how many deals the first gives counting '
         'cards to tricks the second is winning, against what honest play gives in the same situations.',
    unit='deals with a chance to give',
    unit_short='deals with a chance',
    event='gave counting cards',
    cheat='a feeding rate',
    honest='an honest pair',
    subject='pair',
    chart='evidence',
    control_words=(
        ('against_field', 'against other players in the same situations'),
        ('per_chance', 'every chance counted separately'),
        ('giver_to_others', "the giver's gifts to other players"),
        ('binding', 'the comparison that decided'),
        ('reverse_pair', 'gifts the other way round'),
    ),
    section=7,
    cost=20,
    bernoulli=True,
    sentence='{first} gave a counting card to a trick {second} was winning in {obs} of the {n} deals where there '
             'was a chance to; players in the same situations would in about {exp}; {pq}.',
)


class Collusion:
    spec = SPEC
    name = NAME
    # `merge` of any grouping of the parts in their order gives the same counts: integers, dicts filled in the
    # parts' order, canonical bins (`audit.SpilledCounts.fold` merges several parts at once)
    MERGE_ANY_GROUPING = True

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
        cap = max(int(table.n_plays[use].astype(np.int64).sum()), 1)
        keys = np.empty(cap, np.int64)
        evs = np.empty(cap, np.int64)
        rows = np.empty(cap, np.int64)
        m = _gifts(use, su.arrays(table), counting_table(), table.seat_player, n_players, keys, evs, rows)
        keys, evs, rows = keys[:m], evs[:m], rows[:m]
        deals_of, deals = _patterns(keys, evs, rows, table.players, n_players, as_dict=not self.details)
        if self.details:  # the trials binned by table and time (the timeline's bins), held there only
            pair_l, pat_l, row_a, gave_a = deals
            c.bins = BinnedGroups.of_keys(pair_l, pat_l, table.tables, table.table[row_a], table.time[row_a], gave_a,
                                          PAIR_BINS)
        else:
            c.deals_of = deals_of
        # group by (pair, cell)
        idx = np.argsort(keys, kind="stable")
        keys, evs = keys[idx], evs[idx]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if m else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], m].astype(np.int64) if m else starts
        ev_cum = np.r_[0, np.cumsum(evs)]
        cell_of: dict[int, Cell] = {}
        players = table.players
        for key, a, b in zip(keys[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
            code = key & 2047
            cell = cell_of.get(code)
            if cell is None:
                cell = cell_of[code] = _cell(code)
            gb = key >> 11
            pair = (players[gb // n_players], players[gb % n_players])
            o, e = b - a, int(ev_cum[b] - ev_cum[a])
            c.pairs.setdefault(pair, {})[cell] = [o, e]
            v = c.field.get(cell)
            if v is None:
                c.field[cell] = [o, e]
            else:
                v[0] += o
                v[1] += e
        return c

    def merge(self, parts: Sequence[CollusionCounts]) -> CollusionCounts:
        _same_holding(parts)
        out = CollusionCounts()
        canon: dict[Pattern, Pattern] = {}  # equal patterns of different parts and pairs held as one object (memory:
        # issue 15; a pair's ~10 patterns were its own copies, most of its counts)
        for p in parts:
            _add_counts(out, p, canon)
        out.bins = BinnedGroups.merge([p.bins for p in parts])
        return out

    def merge_into(self, total: CollusionCounts, part: CollusionCounts) -> CollusionCounts:
        """`merge([total, part])` for a `total` that came out of `merge`, built in `total` (returned): the same
        integers and key order, the part's patterns held as the total's equal ones, at a cost of the part's pairs,
        not the total's (the bins are merged as in `merge`)."""
        _same_holding([total, part])
        canon = getattr(total, "_canon", None)
        if canon is None:  # the total's patterns, each once (`merge` made them so)
            canon = {pat: pat for pats in total.deals_of.values() for pat in pats}
            total._canon = canon  # type: ignore[attr-defined]  # not a field: neither saved nor compared
        _add_counts(total, part, canon)
        total.bins = BinnedGroups.merge([total.bins, part.bins])
        return total

    SHARDS = 16  # the audit folds and tests the pairs in this many groups, by giver (`shard`)

    def shard(self, counts: CollusionCounts, n: int) -> list[CollusionCounts]:
        """The counts of the pairs of each group of givers (`shard_of` the giver; see `Detector`): a group holds
        its givers' pairs, their trials and bins, and the whole field (the leave-pair-out rates need it; it is per
        situation, small). A giver's tests need his pairs alone (the within-giver control sums them) and, of the
        others, the reverse pair's sums (`shard_context`)."""
        group = {pair: shard_of(pair[0], n) for pair in {*counts.pairs, *counts.deals_of, *counts.bins.subjects}}
        out = [CollusionCounts(field=counts.field, excluded_deals=counts.excluded_deals, deals=counts.deals)
               for _ in range(n)]
        for pair, cells in counts.pairs.items():
            out[group[pair]].pairs[pair] = cells
        for pair, pats in counts.deals_of.items():
            out[group[pair]].deals_of[pair] = pats
        if len(counts.bins):
            of = np.array([group[pair] for pair in counts.bins.subjects], np.int64)
            for j in range(n):
                out[j].bins = counts.bins.subset(of == j)
        else:
            for c in out:
                c.bins = BinnedGroups(max_bins=counts.bins.max_bins)
        return out

    def join_shards(self, groups: Sequence[CollusionCounts], context: dict[Pair, list[int]]) -> CollusionCounts:
        """The whole counts from the groups' (see `Detector`): the field, the exclusions and the deals are whole in
        every group; each pair's cells from its group, the pairs in the order the whole fold meets them, which is the
        merged context's (every pair with a cell, in the order the parts first give them); the bins joined
        (`BinnedGroups.join`: canonical, so the whole's). Counts without details hold their trials per pair
        (`deals_of`) in an order of their own: they are joined by merging the groups (the same counts, not the same
        order)."""
        if not groups:
            return CollusionCounts()
        if any(g.deals_of for g in groups):
            return self.merge(groups)  # pragma: no cover - the audit saves counts with details
        n = len(groups)
        g0 = groups[0]
        out = CollusionCounts(field=g0.field, excluded_deals=g0.excluded_deals, deals=g0.deals)
        for pair in context:
            out.pairs[pair] = groups[shard_of(pair[0], n)].pairs[pair]
        if sum(len(g.pairs) for g in groups) != len(out.pairs):
            raise ValueError("collusion: the groups hold pairs that the context does not")
        out.bins = BinnedGroups.join([g.bins for g in groups])
        return out

    def shard_context(self, counts: CollusionCounts) -> dict[Pair, list[int]]:
        """Per pair: [opportunities, gifts, deals, deals with a gift] (what the reverse-pair control shows)."""
        spans = counts.bins.spans() if len(counts.bins) else {}
        out: dict[Pair, list[int]] = {}
        for pair in counts.pairs:
            r = _reverse(counts, pair, spans, None)
            if r is not None:
                out[pair] = r
        return out

    def merge_context(self, contexts: Sequence[dict[Pair, list[int]]]) -> dict[Pair, list[int]]:
        out: dict[Pair, list[int]] = {}
        for c in contexts:
            for pair, v in c.items():
                w = out.get(pair)
                if w is None:
                    out[pair] = list(v)
                else:
                    for i, x in enumerate(v):
                        w[i] += x
        return out

    def finalize(self, counts: CollusionCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        return list(self.results(counts, rng))

    def results(self, counts: CollusionCounts, rng: np.random.Generator | None = None,
                context: dict[Pair, list[int]] | None = None) -> Iterator[TestResult]:
        """The tests of `finalize`, one at a time (see `Detector`); `context`: the whole input's `shard_context`
        when `counts` are one group's (`shard`). The timelines' points are drawn for POINTS_BATCH pairs at a time
        (`points_many`)."""
        pending: list[tuple[TestResult, Timeline | None]] = []
        for got in self._tests(counts, context):
            pending.append(got)
            if len(pending) == POINTS_BATCH:
                yield from _with_points(pending)
                pending = []
        yield from _with_points(pending)

    def _tests(self, counts: CollusionCounts, context: dict[Pair, list[int]] | None,
               ) -> Iterator[tuple[TestResult, Timeline | None]]:
        """Each pair's test, its detail's "timeline" yet to draw (`pair_timeline`), with the pair's `Timeline` (None:
        no details)."""
        spans = counts.bins.spans() if len(counts.bins) else {}
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
            gifts = sum(e for _, e in cells.values())
            chance_groups: list[tuple[float, int]] = []
            p_of: dict[tuple, float] = {}  # the field's leave-pair-out rate per chance, by cell
            own_of: dict[tuple, float] = {}  # the giver's own rate to everyone else, by cell
            for cell in cells:  # (any order: the groups are merged and sorted by probability, `_merge`)
                o, e = cells[cell]
                fo, fe = counts.field[cell]
                p = p_of[cell] = _rate(fe - e, fo - o)  # leave the pair out
                chance_groups.append((p, o))
                go, ge = giver[a][cell]
                if go - o > 0:  # the giver to everyone else, shrunk towards the field where he met it rarely
                    own_of[cell] = (ge - e + OWN_PRIOR * p) / (go - o + OWN_PRIOR)
            pats = patterns_of(counts, (a, b), spans)
            deal_groups: list[tuple[float, int]] = []
            own_groups: list[tuple[float, int]] = []
            own_ok = True
            n_deals = obs = 0
            for pat in pats:  # (any order, as above)
                nd, ng = pats[pat]
                n_deals += nd
                obs += ng
                deal_groups.append((_at_least_one(pat, p_of), nd))
                if all(cell in own_of for cell, _ in pat):
                    own_groups.append((_at_least_one(pat, own_of), nd))
                else:
                    own_ok = False
            groups_t = _merge(deal_groups)
            dist = exact.poisson_binomial(groups_t)
            pval = dist.sf(obs)
            expct = sum(p * k for p, k in groups_t)
            z = exact.z_score(obs, dist)
            field_part = {"expected": expct, "pvalue": pval}
            controls: dict[str, Any] = {"against_field": field_part}
            cg = _merge(chance_groups)
            controls["per_chance"] = {
                "opportunities": n_opp, "gifts": gifts, "expected": sum(p * k for p, k in cg),
                "pvalue": exact.poisson_binomial(cg).sf(gifts),
                "note": "every chance counted as if independent of the others (the older form of this test): it overstates "
                        "the evidence against a pair that gives again and again within one deal"}
            binding = "field"
            if own_groups:
                og = _merge(own_groups)
                od = exact.poisson_binomial(og)
                # the deals of the pair in situations the giver met against others (all of them when complete)
                obs_own = obs if own_ok else _gifts_in(pats, own_of)
                p_own = od.sf(obs_own)
                controls["giver_to_others"] = {
                    "expected": sum(p * k for p, k in og), "observed": obs_own, "pvalue": p_own,
                    "complete": own_ok,
                    "note": "compared with the giver's own rate of giving to the other players in the same "
                            "situations, deal by deal (deals where the giver had a chance against the pair in a "
                            "situation they never met against anyone else are left out)"}
                # the test: the pair is unusual against the field AND against the giver's own habit (an
                # intersection-union test, valid whichever null holds): a generous or careless honest giver, who
                # gives to everybody, is not accused of colluding with each of them (issue 14: honest givers
                # differ, by skill, more than one field rate per situation allows)
                if p_own > pval:
                    binding = "giver"
                    pval, expct, z = p_own, sum(p * k for p, k in og), exact.z_score(obs_own, od)
            controls["binding"] = binding
            rev = _reverse(counts, (b, a), spans, context)
            if rev is not None:
                controls["reverse_pair"] = {"opportunities": rev[0], "gifts": rev[1], "deals": rev[2],
                                            "deals_with_a_gift": rev[3]}
            tl = pair_timeline_of(counts.bins, spans.get((a, b)), p_of) if self.details else None
            detail = {"deals": n_deals, "deals_with_a_gift": obs, "opportunities": n_opp, "gifts": gifts,
                      "cells": len(cells), "timeline": []} if self.details else {}
            yield TestResult(
                test=NAME, subject=f"{a}+{b}", n=int(n_deals), observed=float(obs), expected=float(expct),
                statistic=float(z), pvalue=float(pval),
                method="exact poisson-binomial over the pair's deals with a chance, one-sided; event = gave at "
                       "least once in the deal; null = 1 - prod(1 - r) over the deal's chances, r = the field's "
                       "rate in the same situation (leave-pair-out) and, separately, the giver's own rate to the "
                       "other players; p = the larger of the two (intersection-union)", controls=controls,
                detail=detail), tl


POINTS_BATCH = 512  # pairs whose timelines' points are drawn at once (`points_many`)


def _with_points(pending: list[tuple[TestResult, "Timeline | None"]]) -> Iterator[TestResult]:
    """The tests with their detail's "timeline", `pair_timeline`'s points, drawn for all of them at once."""
    live = [j for j, (_r, tl) in enumerate(pending) if tl is not None]
    drawn = points_many([cast(Timeline, pending[j][1]) for j in live], variance=True)
    for j, pts in zip(live, drawn, strict=True):
        pending[j][0].detail["timeline"] = pts
    for r, _tl in pending:
        yield r


def _reverse(counts: CollusionCounts, pair: Pair, spans: dict, context: dict[Pair, list[int]] | None,
             ) -> list[int] | None:
    """The pair's [opportunities, gifts, deals, deals with a gift], from the whole input's `context` when given,
    else from `counts`; None when it had no chance."""
    if context is not None:
        return context.get(pair)
    cells = counts.pairs.get(pair)
    if not cells:
        return None
    return [sum(o for o, _ in cells.values()), sum(e for _, e in cells.values()), *trial_sums(counts, pair, spans)]


def _same_holding(parts: Sequence[CollusionCounts]) -> None:
    """Refuse to merge counts whose trials are held binned (with details) with counts that hold them as `deals_of`
    alone (without): the merged bins would miss the others' trials."""
    binned = [bool(len(p.bins)) for p in parts if len(p.bins) or p.deals_of]
    if any(binned) and not all(binned):
        raise ValueError("collusion counts made with and without details cannot be merged")


def _gifts_in(pats: dict, rate: dict[tuple, float]) -> int:
    """Deals with a gift among the pair's deal patterns whose every cell has a rate in `rate`."""
    return sum(ng for pat, (_nd, ng) in pats.items() if all(cell in rate for cell, _ in pat))


def _at_least_one(pat: Pattern, rate: dict[tuple, float]) -> float:
    """The null chance of at least one gift in a deal with these chances: 1 - prod(1 - r_cell) (exact if the
    chances were independent, an upper bound when they are positively associated)."""
    return -math.expm1(sum(k * math.log1p(-rate[cell]) for cell, k in pat))  # libm's, as numpy's scalars use


_GAMES = ("scotch_whist", "all_fours")


def _cell(code: int) -> Cell:
    """The cell of an 11-bit kernel cell code (the module docstring's layout)."""
    return (_GAMES[code >> 10], (code >> 6) & 15, (code >> 5) & 1, (code >> 4) & 1, (code >> 3) & 1, (code >> 2) & 1,
            code & 3)


def _patterns(keys: np.ndarray, evs: np.ndarray, rows: np.ndarray, players: Sequence[str], n_players: int,
              as_dict: bool = True,
              ) -> tuple[dict[Pair, dict[Pattern, list[int]]], tuple[list[Pair], list[Pattern], np.ndarray, np.ndarray]]:
    """`CollusionCounts.deals_of` from the kernel's opportunities (key = pair << 11 | cell, event, row): the runs of
    equal (pair, row, cell) are one deal's chances of one pair in one cell; the runs of equal (pair, row) are its
    deals, each a pattern of (cell, chances) sorted by cell, with whether any of its chances was a gift. Within one
    deal the game and player count are fixed, and the remaining fields of a cell are its code's bits in the tuple's
    order, so ascending codes are ascending cells: the oracle's sorted tuples. Also the pairs' deals one by one
    (for `CollusionCounts.bins`): (pair, pattern, row, gave) of each as four parallel sequences. `as_dict`: false,
    the dict is left empty."""
    out: dict[Pair, dict[Pattern, list[int]]] = {}
    m = len(keys)
    if m == 0:
        return out, ([], [], np.zeros(0, np.int64), np.zeros(0, np.int64))
    pk = keys >> 11
    idx = np.lexsort((keys & 2047, rows, pk))
    pk, rw, cc, ev = pk[idx], rows[idx], (keys & 2047)[idx], evs[idx]
    new_cell = np.r_[True, (pk[1:] != pk[:-1]) | (rw[1:] != rw[:-1]) | (cc[1:] != cc[:-1])]
    starts = np.flatnonzero(new_cell)
    n_in = np.diff(np.r_[starts, m])
    ev_in = np.maximum.reduceat(ev, starts)
    new_deal = np.r_[True, (pk[starts][1:] != pk[starts][:-1]) | (rw[starts][1:] != rw[starts][:-1])]
    cell_of: dict[int, Cell] = {}
    pair_of: dict[int, Pair] = {}
    canon: dict[Pattern, Pattern] = {}
    d_pairs: list[Pair] = []
    d_pats: list[Pattern] = []
    d_gave: list[int] = []
    cur: list[tuple[Cell, int]] = []
    gave = 0
    pair: Pair = ("", "")
    for first, p, code, k, e in zip(new_deal.tolist(), pk[starts].tolist(), cc[starts].tolist(), n_in.tolist(),
                                    ev_in.tolist(), strict=True):
        if first:
            if cur:
                pat = tuple(cur)
                pat = canon.setdefault(pat, pat)  # one object per distinct pattern, shared by every pair (memory)
                if as_dict:
                    _add(out.setdefault(pair, {}), pat, 1, gave)
                d_pairs.append(pair)
                d_pats.append(pat)
                d_gave.append(gave)
            pr = pair_of.get(p)
            if pr is None:
                pr = pair_of[p] = (players[p // n_players], players[p % n_players])
            pair, cur, gave = pr, [], 0
        cell = cell_of.get(code)
        if cell is None:
            cell = cell_of[code] = _cell(code)
        cur.append((cell, k))
        gave |= e
    pat = tuple(cur)
    pat = canon.setdefault(pat, pat)
    if as_dict:
        _add(out.setdefault(pair, {}), pat, 1, gave)
    d_pairs.append(pair)
    d_pats.append(pat)
    d_gave.append(gave)
    return out, (d_pairs, d_pats, rw[starts][new_deal], np.asarray(d_gave, np.int64))


def pair_timeline(bins: BinnedGroups, span: tuple[int, int] | None, p_of: dict[tuple, float]) -> list[list]:
    """The pair's deals with a chance in the canonical order, cumulative at the ends of its bins (`bins`' rows
    `span`): deals, deals where the pair gave at least once, the sum of their nulls (1 - prod(1 - r_cell) over each
    deal's chances) and the exact null variance so far (sum of p(1 - p): independent deals). The detail's
    "timeline"; the tests draw many at once (`pair_timeline_of`, `points_many`)."""
    return pair_timeline_of(bins, span, p_of).points(variance=True)


def pair_timeline_of(bins: BinnedGroups, span: tuple[int, int] | None, p_of: dict[tuple, float]) -> Timeline:
    """The `Timeline` whose points are `pair_timeline` (an empty one without a span)."""
    if span is None:
        return Timeline()
    a, b = span
    p = np.zeros(len(bins.groups))
    for g in np.unique(bins.grp[a:b]).tolist():
        p[g] = _at_least_one(bins.groups[g], p_of)
    return bins.timeline(a, b, p)


OWN_PRIOR = 20  # the giver's own rate in a cell counts the field's rate there as this many chances (a giver seen
# in a situation a few times is given about the field's rate, one seen hundreds of times his own)


def _rate(events: int, opps: int, prior: float = 0.5) -> float:
    """The field's giving rate in a cell, with a half-event prior so that a cell nobody else met is not 0 or 1."""
    return (events + prior) / (opps + 2 * prior)


def _merge(groups: list[tuple[float, int]]) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for p, k in groups:
        acc[p] = acc.get(p, 0) + k
    return tuple(sorted(acc.items()))
