"""`dealer_jack`: per dealer, the Scotch Whist deals in which the dealer was dealt the Jack of trumps, against the
exact null of each deal (its configuration: player count, pack, who gets the turn-up, the Russian 36th card,
sets at 2 and 3 players, cards put aside), never 1/n. Exact one-sided Poisson-binomial test.

Controls (in no family): the same player's rate when not dealing (each against its own exact null), and the trump
Ace and Ten dealt to him when dealing. A stacker of the Jack is high on the test and normal on the controls; a
player who is simply lucky with trumps is high on the controls too.
"""

from __future__ import annotations

import numpy as np

from ..cards import RJ
from ..facts import MAX_SEATS, DealingFacts, held_prob
from .base import TrialsDetector, TrialSummary, summarise_deals
from .spec import TestSpec

RA, RT = 12, 8
METHOD = "exact poisson-binomial, one-sided"


def count_facts(facts: DealingFacts, timeline_of=lambda stream: stream == "deal") -> dict[str, dict[str, TrialSummary]]:
    """{player: {"deal": as dealer (Jack), "other": not dealing (Jack), "ace", "ten": as dealer}}; `timeline_of(stream)`:
    whether that stream keeps its timeline."""
    sw = facts.game == 0
    if not sw.any():
        return {}
    idx = np.nonzero(sw)[0]
    sub = _subset(facts, idx)
    names = facts.players
    out: dict[str, dict[str, TrialSummary]] = {}

    def add(stream: str, parts: dict[str, TrialSummary]) -> None:
        for name, t in parts.items():
            out.setdefault(name, {})[stream] = t

    for rank, stream in ((RJ, "deal"), (RA, "ace"), (RT, "ten")):
        # (issue 16) the Jack's holder is known at every deal here (a score sheet's too), another card's only where
        # the hands are
        k = np.flatnonzero((facts.jack_known if rank == RJ else facts.hands_known)[idx])
        card = sub["trump"][k] * 13 + rank
        holder = sub["holder"][k, card]
        probs = _seat_probs_sub(facts, idx[k], rank)
        sp = sub["seat_player"][k]
        add(stream, summarise_deals(sp[:, 0], names, (holder == 0).astype(np.int8), probs[:, 0],
                                    facts, idx[k], timeline_of(stream)))
        if rank == RJ:  # the same player when not dealing: every other seat of every deal
            subj, keys, obs, p = [], [], [], []
            n = sub["n"][k]
            for rel in range(1, MAX_SEATS):
                m = n > rel
                if not m.any():
                    continue
                subj.append(sp[m, rel])
                keys.append(idx[k][m])
                obs.append((holder[m] == rel).astype(np.int8))
                p.append(probs[m, rel])
            if subj:
                add("other", summarise_deals(np.concatenate(subj), names, np.concatenate(obs), np.concatenate(p),
                                             facts, np.concatenate(keys), timeline_of("other")))
    return out


def _subset(facts: DealingFacts, idx: np.ndarray) -> dict[str, np.ndarray]:
    return {"order": facts.order[idx], "trump": facts.trump[idx].astype(np.int64), "holder": facts.holder[idx],
            "seat_player": facts.seat_player[idx], "n": facts.n[idx]}


def _seat_probs_sub(facts: DealingFacts, idx: np.ndarray, rank: int) -> np.ndarray:
    table = np.zeros((max(1, len(facts.configs)), MAX_SEATS))
    for ci, c in enumerate(facts.configs):
        for rel in range(c.n):
            table[ci, rel] = float(held_prob(c, rel, rank))
    return table[facts.cfg[idx]]


CONTROL_WORDS = (  # the report's words for the controls (`af_dealer_jack` has the same ones)
    ('not_dealing', 'the Jack when someone else dealt'),
    ('trump_ace_as_dealer', 'the trump Ace when dealing'),
    ('trump_ten_as_dealer', 'the trump Ten when dealing'),
)

SPEC = TestSpec(
    name='dealer_jack',
    title='Dealers who receive the Jack of trumps',
    what='How often each dealer ends up holding the Jack of trumps (worth 11 points in Catch the Ten), against the '
         'exact chance the rules give the dealer on each of their deals. The dealer holds the turn-up, so an honest '
         'dealer gets the Jack more often than the other players.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='received the Jack of trumps',
    cheat='a stacking rate',
    honest='an honest dealer',
    subject='dealer',
    games=('scotch_whist',),  # issue 16: n counts scotch whist deals only
    chart='funnel',
    control_words=CONTROL_WORDS,
    section=0,
    cost=2,
    bernoulli=True,
    chart_controls=('not_dealing', 'trump_ace_as_dealer', 'trump_ten_as_dealer'),
    sentence='{subject} {event} in {obs} of the {n} {unit}; {honest} would in about {exp}{spread}; {pq}.',
)


class DealerJack(TrialsDetector):
    spec = SPEC
    name = "dealer_jack"
    count_facts = staticmethod(count_facts)

    method = METHOD
    cheat = "deals themselves the Jack of trumps"
    controls_of = {"not_dealing": "other", "trump_ace_as_dealer": "ace", "trump_ten_as_dealer": "ten"}
