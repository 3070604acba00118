"""`partner_jack` (Scotch Whist, partnership tables): per dealer, the deals he dealt in which the Jack of trumps was
dealt to one of his partners, against the exact null of each deal: the sum over his partners' relative seats of
`facts.held_prob(config, rel, RJ)` (the Jack is in at most one hand, so the events are disjoint and the chances
add). Exact one-sided Poisson-binomial test. Only deals at which the dealer has a partner are trials (the log's
`sides`: a seat whose side holds another seat); a deal without sides has none.

A partner stacker keeps the Jack (worth 11 in Catch the Ten) on his side without the tell-tale of dealing it to
himself: `dealer_jack` does not see him, and `deal_uniformity`'s omnibus X² spreads his one moved card over every
cell of the dealer's table.

Controls (in no family), what tells a stacker from luck: the same player's partners when someone else deals
(`partners_when_others_deal`: a partner who is simply lucky with Jacks is high there too), the Jack to the dealer
himself (`own_jack_as_dealer`: `dealer_jack`'s event) and to his opponents (`opponents_as_dealer`: low for a stacker,
since the Jack he moves comes mostly from them), and the trump Ace to his partners when he deals
(`partner_ace_as_dealer`: a card the modelled cheat does not touch).

The sides are read off the table (`table.side_of` of each deal's row, `facts.result_index`), relative to the
dealer; `sides_from_results` is the same from `DealResult`s (the oracle), and `auditor.dealgen.Season.side_rel`
from a dealing-only season.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..cards import RJ
from ..columns import AuditColumns
from ..facts import MAX_SEATS, DealingFacts, facts_from_columns, held_prob
from .base import TrialsDetector, TrialSummary, summarise_deals
from .spec import TestSpec

RA = 12
METHOD = "exact poisson-binomial, one-sided (each deal's null: the partners' exact chances summed)"


def sides_from_table(table: AuditColumns, facts: DealingFacts) -> np.ndarray:
    """[deals of `facts`, MAX_SEATS] the side of each relative seat (-1 past n), from the table's `side_of`."""
    rows = facts.result_index.astype(np.int64)
    n = np.maximum(facts.n.astype(np.int64), 1)
    if len(rows) == 0:
        return np.full((0, MAX_SEATS), -1, np.int64)
    dealer = table.dealer[rows].astype(np.int64)
    rel = np.arange(MAX_SEATS)
    seat = (dealer[:, None] + rel[None, :]) % n[:, None]
    side = table.side_of[rows[:, None], seat].astype(np.int64)
    return np.where(rel[None, :] < n[:, None], side, -1)


def sides_from_results(results: Sequence, facts: DealingFacts) -> np.ndarray:
    """`sides_from_table` from the `DealResult`s the facts were built from (`facts_from_results`): the oracle."""
    out = np.full((len(facts), MAX_SEATS), -1, np.int64)
    for i, ri in enumerate(facts.result_index.tolist()):
        d = results[ri].deal
        for rel in range(d.n):
            out[i, rel] = d.side_of[(d.dealer + rel) % d.n]
    return out


def _partner_mask(side_rel: np.ndarray, n: np.ndarray) -> np.ndarray:
    """[D, MAX_SEATS] bool: relative seat r (r >= 1, r < n) is on the dealer's side."""
    rel = np.arange(MAX_SEATS)
    return (side_rel == side_rel[:, :1]) & (rel[None, :] >= 1) & (rel[None, :] < n[:, None])


def _prob_table(facts: DealingFacts, rank: int) -> np.ndarray:
    """[configs, MAX_SEATS] exact P(relative seat r is dealt the trump card of `rank`)."""
    table = np.zeros((max(1, len(facts.configs)), MAX_SEATS))
    for ci, c in enumerate(facts.configs):
        for rel in range(c.n):
            table[ci, rel] = float(held_prob(c, rel, rank))
    return table


def count_facts(facts: DealingFacts, side_rel: np.ndarray,
                timeline_of=lambda stream: stream == "deal") -> dict[str, dict[str, TrialSummary]]:
    """{player: {"deal": partners got the Jack (he dealt), "own": he got it (he dealt), "opp": an opponent got it
    (he dealt), "ace": partners got the trump Ace (he dealt), "others": his partners got the Jack (someone else
    dealt)}}, each deal a trial only when its player has a partner at it. `side_rel` as `sides_from_table`."""
    out: dict[str, dict[str, TrialSummary]] = {}
    if len(facts) == 0:
        return out
    n = facts.n.astype(np.int64)
    partner = _partner_mask(np.asarray(side_rel), n)
    keep = (facts.game == 0) & partner.any(axis=1)
    if not keep.any():
        return out
    idx = np.nonzero(keep)[0]
    partner = partner[idx]
    n = n[idx]
    trump = facts.trump[idx].astype(np.int64)
    sp = facts.seat_player[idx]
    rel = np.arange(MAX_SEATS)
    in_deal = rel[None, :] < n[:, None]
    names = facts.players

    def add(stream: str, parts: dict[str, TrialSummary]) -> None:
        for name, t in parts.items():
            out.setdefault(name, {})[stream] = t

    for rank, streams in ((RJ, ("deal", "own", "opp")), (RA, ("ace",))):
        probs = _prob_table(facts, rank)[facts.cfg[idx]]  # [k, MAX_SEATS]
        holder = facts.holder[idx, trump * 13 + rank].astype(np.int64)
        at = holder[:, None] == rel[None, :]  # [k, MAX_SEATS]: the card's holder
        p_partner = (probs * partner).sum(axis=1)
        got_partner = (at & partner).any(axis=1).astype(np.int8)
        # (issue 16) the Jack's holder is known at every deal here (a score sheet's too), the Ace's where the hands are
        known = facts.jack_known[idx] if rank == RJ else facts.hands_known[idx]
        add(streams[0], summarise_deals(np.where(known, sp[:, 0], -1), names, got_partner, p_partner, facts, idx,
                                        timeline_of(streams[0])))
        if rank == RJ:
            add("own", summarise_deals(sp[:, 0], names, at[:, 0].astype(np.int8), probs[:, 0], facts, idx,
                                       timeline_of("own")))
            opp = in_deal & ~partner & (rel[None, :] >= 1)
            add("opp", summarise_deals(sp[:, 0], names, (at & opp).any(axis=1).astype(np.int8),
                                       (probs * opp).sum(axis=1), facts, idx, timeline_of("opp")))
            # the same player at a deal someone else dealt: his partners are the other seats of his side
            subj, keys, obs, p = [], [], [], []
            side = np.asarray(side_rel)[idx]
            for r in range(1, MAX_SEATS):
                m = n > r
                if not m.any():
                    continue
                mates = (side[m] == side[m, r:r + 1]) & in_deal[m] & (rel[None, :] != r)
                has = mates.any(axis=1)
                if not has.any():
                    continue
                subj.append(sp[m, r][has])
                keys.append(idx[m][has])
                obs.append((at[m] & mates).any(axis=1)[has].astype(np.int8))
                p.append((probs[m] * mates).sum(axis=1)[has])
            if subj:
                add("others", summarise_deals(np.concatenate(subj), names, np.concatenate(obs), np.concatenate(p),
                                              facts, np.concatenate(keys), timeline_of("others")))
    return out


SPEC = TestSpec(
    name='partner_jack',
    title="Dealers whose partner receives the Jack of trumps",
    what="At partnership tables, how often the Jack of trumps lands in the hand of the dealer's partner, against "
         "the exact chance the rules give the partner's seats on each of their deals. A dealer who stacks the Jack "
         "for their side need not deal it to themselves.",
    unit='partnership deals they dealt',
    unit_short='partner deals',
    event="dealt the Jack of trumps to a partner",
    cheat='a stacking rate for the partner',
    honest='an honest dealer',
    subject='dealer',
    games=('scotch_whist',),  # issue 16: n counts scotch whist deals only
    chart='funnel',
    control_words=(
        ('partners_when_others_deal', "the partner's Jack when others dealt"),
        ('own_jack_as_dealer', "the Jack in the dealer's own hand"),
        ('opponents_as_dealer', "the Jack in the opponents' hands when dealing"),
        ('partner_ace_as_dealer', 'the trump Ace to the partner when dealing'),
    ),
    section=0,
    cost=2,
    bernoulli=True,
    chart_controls=('partners_when_others_deal', 'own_jack_as_dealer', 'partner_ace_as_dealer'),
    sentence="{subject} {event} in {obs} of the {n} {unit}; {honest} would in about {exp}{spread}; {pq}.",
)


class PartnerJack(TrialsDetector):
    spec = SPEC
    name = "partner_jack"

    @staticmethod
    def count_facts(facts, timeline_of=None, side_rel=None) -> dict:
        if side_rel is None:
            raise ValueError("partner_jack counts need the sides of each deal (sides_from_table)")
        return count_facts(facts, side_rel, timeline_of or (lambda stream: stream == "deal"))

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        """The per-dealer trials of the table's dealing facts, the sides read off the same table."""
        facts = facts if facts is not None else facts_from_columns(table)
        return count_facts(facts, sides_from_table(table, facts), self.timeline_of)

    method = METHOD
    cheat = "deals the Jack of trumps to their partner"
    controls_of = {"partners_when_others_deal": "others", "own_jack_as_dealer": "own", "opponents_as_dealer": "opp",
                   "partner_ace_as_dealer": "ace"}
