"""`turnup_jack` (All Fours): per dealer, how often his first turn-up of a deal is a Jack, each against its exact
null given the cards already out before it (the dealt hands): P(Jack) = (Jacks not yet seen) / (cards not yet
seen). Exact one-sided Poisson-binomial test.

A turned Jack is a point for the dealer, so a dealer who turns up Jacks too often is the All Fours stacker. The
test is the first turn-up, the one a dealer can prepare before the deal: counting the turn-ups of runs of the cards
too (as the test did until issue 11) diluted a stacker's 60 deals with some 30 turn-ups he did not arrange, and
under the audit-wide budget the stacker of the issue's power table was caught in half the seasons instead of 9 in
10. Controls (in no test of the audit): the first turn-ups (the test itself, kept for its readers), the run
turn-ups, and every turn-up together, each with its exact null.
"""

from __future__ import annotations

import numpy as np

from ..facts import DealingFacts
from ..stats import exact
from ..stats.family import TestResult
from .base import TrialsDetector, TrialSummary, control, pb_result, summarise_deals
from .spec import TestSpec

METHOD = "exact poisson-binomial, one-sided (null given the cards already out)"


def count_facts(facts: DealingFacts, timeline_of=lambda stream: stream == "first") -> dict[str, dict[str, TrialSummary]]:
    """{dealer: {"first": first turn-ups, "run": run turn-ups}}."""
    if len(facts.tu_deal) == 0:
        return {}
    d = facts.tu_deal
    dealer = facts.seat_player[d, 0]
    out: dict[str, dict[str, TrialSummary]] = {}
    for stream, m in (("first", facts.tu_run == 0), ("run", facts.tu_run > 0)):
        for name, t in summarise_deals(dealer[m], facts.players, facts.tu_jack[m], facts.tu_p[m], facts, d[m],
                                       timeline_of(stream)).items():
            out.setdefault(name, {})[stream] = t
    return out


SPEC = TestSpec(
    name='turnup_jack',
    title='Dealers who turn up a Jack (All Fours)',
    what='How often each dealer turns up a Jack, a free point for the dealer, against the exact chance of each '
         'turn-up given the cards already out.',
    unit='turn-ups they made',
    unit_short='turn-ups',
    event='turned up a Jack',
    cheat='a Jack-turning rate',
    honest='an honest dealer',
    subject='dealer',
    games=('all_fours',),  # issue 16: n counts all fours deals only
    chart='funnel',
    control_words=(
        ('first_turnup', 'first turn-ups'),
        ('run_turnups', 'turn-ups after running the cards'),
        ('all_turnups', 'all turn-ups'),
    ),
    section=1,
    cost=2,
    bernoulli=True,
    sentence='{subject} {event} in {obs} of the {n} {unit}; {honest} would in about {exp}{spread}; {pq}.',
)


class TurnupJack(TrialsDetector):
    spec = SPEC
    name = "turnup_jack"
    count_facts = staticmethod(count_facts)
    stream = "first"

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        subjects = sorted(s for s, st in counts.items() if len(st.get("first", TrialSummary())))
        level = exact.per_test_level(self.fdr, len(subjects))
        out = []
        for s in subjects:
            first = counts[s].get("first", TrialSummary())
            runs = counts[s].get("run", TrialSummary())
            controls = {}
            if self.details:
                controls = {"first_turnup": control(first), "run_turnups": control(runs),
                            "all_turnups": control(TrialSummary.merge([first, runs]))}
            out.append(pb_result(self.name, s, first, level, METHOD, controls,
                                 {"turnups": len(first) + len(runs), "deals": len(first)},
                                 details=self.details, cheat="turns up a Jack as the first turn-up"))
        return out
