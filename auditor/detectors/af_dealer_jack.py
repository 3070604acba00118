"""`af_dealer_jack` (All Fours): per dealer, the deals in which the Jack of the turn-up's suit was dealt into his
own hand, against its exact null. Exact one-sided Poisson-binomial test.

The null. The dealer turns up the card after the first six each; its suit is trumps unless the eldest begs and the
cards are run. Under a uniform shuffle, given the turn-up (not that Jack), the Jack of its suit is uniform over the
other cards of the pack, so P(it is in the dealer's dealt hand) = (his dealt cards) / (pack size - 1) = 6 / 51 for
the full pack. A deal whose turn-up is that Jack is no trial (the dealer scored it as the turn-up; `turnup_jack`
tests that).

Runs of the cards. The event is fixed by the shuffle before anyone looks at a card: the Jack of the *first* turn-up's
suit in the six cards first dealt to the dealer. It is not the Jack of the suit that finally made trumps after a
run, nor the cards the dealer holds after a run: whether the eldest begs and the dealer runs depends on their hands
(an eldest holding that Jack stands, a dealer holding it gives one rather than run), so conditioning on the runs (or
on the suit they made trumps) would bias the null; conditioning on the first turn-up alone keeps it exact, and every
deal with known dealt hands is a trial whatever the begging. A dealer who stacks the Jack of the suit he will turn
is seen on every such deal, run or not (the run spoils his stack, not the test). The dealt hands are known when the
log records them, or when nobody ran the cards (`facts.hands_known`); a log of tricks only, with runs, hides the
dealt hands of those deals (their hands in play mix dealt and run cards, less discards), and such deals are left
out.

Controls (in no family): the same player's rate when someone else deals (the Jack of that deal's turn-up suit in
his dealt hand, each against its exact null), and the Ace and the Ten (Game) of the turn-up's suit in the dealer's
dealt hand (cards the modelled cheat does not touch).
"""

from __future__ import annotations

import numpy as np

from ..cards import RJ
from ..facts import MAX_SEATS, DealingFacts
from .base import TrialsDetector, TrialSummary, summarise_deals
from .dealer_jack import CONTROL_WORDS as DEALER_CONTROL_WORDS
from .spec import TestSpec

RA, RT = 12, 8
METHOD = "exact poisson-binomial, one-sided (null given the first turn-up: dealt cards / (pack - 1))"


def dealt_probs(facts: DealingFacts, idx: np.ndarray, rank: int) -> np.ndarray:
    """[k, MAX_SEATS] exact P(relative seat r was dealt the card of `rank` of the turn-up's suit | the turn-up), for
    the All Fours deals `idx`: (r's dealt cards) / (pack size - 1), 0 when the turn-up is that card or the pack
    lacks it."""
    out = np.zeros((len(idx), MAX_SEATS))
    if len(idx) == 0:
        return out
    per_cfg = np.zeros((max(1, len(facts.configs)), MAX_SEATS))
    for ci, c in enumerate(facts.configs):
        if c.game == "all_fours":
            per_cfg[ci, :c.n] = np.array(c.hand_sizes, dtype=float) / (c.pack_size - 1)
    out = per_cfg[facts.cfg[idx]]
    tu = facts.turnup[idx].astype(np.int64)
    card = (tu // 13) * 13 + rank
    packs = np.array([c.pack for c in facts.configs] or [0], dtype=np.uint64)[facts.cfg[idx]]
    in_pack = ((packs >> card.astype(np.uint64)) & np.uint64(1)) == 1
    ok = (tu % 13 != rank) & in_pack
    return out * ok[:, None]


def trial_deals(facts: DealingFacts) -> np.ndarray:
    """Indices of the All Fours deals that are trials: the dealt place of the Jack known (the dealt hands, or a
    score sheet's Jack where nobody ran the cards: `facts.jack_known`, issue 16), the turn-up not the Jack."""
    if len(facts) == 0:
        return np.zeros(0, np.int64)
    return np.nonzero((facts.game == 1) & facts.jack_known & (facts.turnup.astype(np.int64) % 13 != RJ))[0]


def count_facts(facts: DealingFacts, timeline_of=lambda stream: stream == "deal") -> dict[str, dict[str, TrialSummary]]:
    """{player: {"deal": the Jack of the turn-up suit dealt to him as dealer, "other": the same when another
    dealt, "ace", "ten": the Ace and Ten of the turn-up suit dealt to him as dealer}}."""
    out: dict[str, dict[str, TrialSummary]] = {}
    idx = trial_deals(facts)
    if len(idx) == 0:
        return out
    names = facts.players
    sp = facts.seat_player[idx]
    n = facts.n[idx].astype(np.int64)
    suit = facts.turnup[idx].astype(np.int64) // 13

    def add(stream: str, parts: dict[str, TrialSummary]) -> None:
        for name, t in parts.items():
            out.setdefault(name, {})[stream] = t

    for rank, stream in ((RJ, "deal"), (RA, "ace"), (RT, "ten")):
        p = dealt_probs(facts, idx, rank)
        holder = facts.holder[idx, suit * 13 + rank].astype(np.int64)
        live = p[:, 0] > 0  # a turned Ace or Ten is no trial of its control
        if rank != RJ:
            live &= facts.hands_known[idx]  # (issue 16) a score sheet knows the Jack's place, no other card's
        add(stream, summarise_deals(np.where(live, sp[:, 0], -1), names, (holder == 0).astype(np.int8), p[:, 0],
                                    facts, idx, timeline_of(stream)))
        if rank == RJ:
            subj, keys, obs, pr = [], [], [], []
            for r in range(1, MAX_SEATS):
                m = n > r
                if not m.any():
                    continue
                subj.append(sp[m, r])
                keys.append(idx[m])
                obs.append((holder[m] == r).astype(np.int8))
                pr.append(p[m, r])
            if subj:
                add("other", summarise_deals(np.concatenate(subj), names, np.concatenate(obs), np.concatenate(pr),
                                             facts, np.concatenate(keys), timeline_of("other")))
    return out


SPEC = TestSpec(
    name='af_dealer_jack',
    title="Dealers who deal themselves the Jack of the turned suit (All Fours)",
    what="How often each All Fours dealer's own six cards hold the Jack of the suit they then turn up, against the "
         "exact chance given the turn-up (their six cards out of the 51 others). The Jack in hand is a point for "
         "whoever takes it; the turn-up makes its suit trumps.",
    unit='deals they dealt',
    unit_short='deals dealt',
    event="dealt themselves the Jack of the suit they turned up",
    cheat='a stacking rate',
    honest='an honest dealer',
    subject='dealer',
    games=('all_fours',),  # issue 16: n counts all fours deals only
    chart='funnel',
    control_words=DEALER_CONTROL_WORDS,
    section=1,
    cost=2,
    bernoulli=True,
    chart_controls=('not_dealing', 'trump_ace_as_dealer', 'trump_ten_as_dealer'),
    sentence="{subject} {event} in {obs} of the {n} {unit}; {honest} would in about {exp}{spread}; {pq}.",
)


class AFDealerJack(TrialsDetector):
    spec = SPEC
    name = "af_dealer_jack"
    count_facts = staticmethod(count_facts)

    method = METHOD
    cheat = "deals themselves the Jack of the suit they turn up"
    controls_of = {"not_dealing": "other", "trump_ace_as_dealer": "ace", "trump_ten_as_dealer": "ten"}
