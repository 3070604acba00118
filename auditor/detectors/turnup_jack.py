"""`turnup_jack` (All Fours): per dealer, the turn-ups that are Jacks — the first turn-up and each run of the cards'
turn-up — each against its exact null given the cards already out before it (the dealt hands, earlier turn-ups and
run cards): P(Jack) = (Jacks not yet seen) / (cards not yet seen). Exact one-sided Poisson-binomial test.

A turned Jack is a point for the dealer, so a dealer who turns up Jacks too often is the All Fours stacker.
Controls (in no family): the first turn-ups and the run turn-ups separately.
"""

from __future__ import annotations


import numpy as np

from ..facts import DealingFacts
from ..stats import exact
from ..stats.family import TestResult
from .base import Trials, TrialsDetector, control, pb_result, split_trials

METHOD = "exact poisson-binomial, one-sided (null given the cards already out)"


def count_facts(facts: DealingFacts) -> dict[str, dict[str, Trials]]:
    """{dealer: {"first": first turn-ups, "run": run turn-ups}}; keys keep the input order (deal, then run)."""
    if len(facts.tu_deal) == 0:
        return {}
    d = facts.tu_deal
    dealer = facts.seat_player[d, 0]
    key = facts.order[d] * 16 + facts.tu_run.astype(np.int64)
    out: dict[str, dict[str, Trials]] = {}
    for stream, m in (("first", facts.tu_run == 0), ("run", facts.tu_run > 0)):
        for name, t in split_trials(dealer[m], facts.players, key[m], facts.tu_jack[m], facts.tu_p[m]).items():
            out.setdefault(name, {})[stream] = t
    return out


class TurnupJack(TrialsDetector):
    name = "turnup_jack"
    count_facts = staticmethod(count_facts)

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        subjects = sorted(s for s, st in counts.items() if len(st.get("first", Trials.empty())))
        level = exact.per_test_level(self.fdr, len(subjects))
        out = []
        for s in subjects:
            first = counts[s].get("first", Trials.empty())
            runs = counts[s].get("run", Trials.empty())
            t = Trials.concat([first, runs])
            controls = {}
            if self.details:
                controls = {"first_turnup": control(first), "run_turnups": control(runs)}
            out.append(pb_result(self.name, s, t, level, METHOD, controls, {"turnups": len(t), "deals": len(first)},
                                 details=self.details, fixed=runs,
                                 cheat="turns up a Jack as the first turn-up"))
        return out
