"""`collusion` on honest seasons now that honest players slip (issue 14): honest players give counting cards to
other players' winning tricks at individual-play tables, so the test has a live null, and it holds its level.

Fast tier: one honest season has gifts in the field and no pair below 0.01 more often than the binomial bound
allows. Slow tier: 40 seasons (bench/study_collusion_honest.py is the same study with its numbers)."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from auditor.audit import audit, replay_for_audit
from auditor.calibrate_play import collusion_season
from auditor.detectors.registry import make_detectors

SEED = 14


def _assert_level(seasons: list[dict]) -> None:
    ps = [p for s in seasons for p in s["p_honest"]]
    n = len(ps)
    assert n > 100
    assert sum(p < 1 for p in ps) > 0.02 * n  # honest pairs do give: the null is not degenerate
    for a in (0.01, 0.05):
        k = sum(p <= a for p in ps)
        assert binom.sf(k - 1, n, a) > 0.001, (a, k, n)
    flagged = sum(s["false_flags"] > 0 for s in seasons)
    assert flagged == 0 or binom.sf(flagged - 1, len(seasons), 0.05) > 0.001, flagged


def test_one_honest_season_gives_and_holds_the_level():
    _assert_level([collusion_season(SEED, 0, 0.0)])


@pytest.mark.slow
def test_forty_honest_seasons_hold_the_level_and_colluders_are_caught():
    _assert_level([collusion_season(SEED, i, 0.0) for i in range(40)])
    caught = [any(collusion_season(SEED, i, 0.7)["pair_flagged"]) for i in range(5)]
    assert sum(caught) >= 4, caught


DEMO = "fixtures/demo/season.jsonl.gz"


def test_demo_flags_the_colluders_and_no_honest_pair():
    """The regenerated demo (fixtures/demo/README.md): `collusion` alone, at the whole level 0.05 (more lenient than
    its audit-wide share), flags rosa+gus and gus+rosa (the planted colluders) and no honest pair. Before the per-deal trial the honest iris+kate was flagged: 5 gifts
    in 5 chances (p 1.5e-7 as independent chances), 4 of them in one All Fours deal; as deals, 2 of 2."""
    rep = replay_for_audit([DEMO])
    tests = audit(rep, seed=0, detectors=make_detectors(0.05, only=["collusion"], audit_wide=False)).tests
    flagged = {t.subject for t in tests if t.flagged}
    assert flagged == {"rosa+gus", "gus+rosa"}, flagged
    ik = next(t for t in tests if t.subject == "iris+kate")
    assert (ik.n, ik.observed) == (2, 2) and ik.detail["opportunities"] == 5 and ik.detail["gifts"] == 5
    assert ik.controls["per_chance"]["pvalue"] < 1e-6 < ik.pvalue
