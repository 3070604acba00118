"""`collusion` on honest seasons now that honest players slip (issue 14): honest players give counting cards to
other players' winning tricks at individual-play tables, so the test has a live null, and it holds its level.

Fast tier: one honest season has gifts in the field and no pair below 0.01 more often than the binomial bound
allows. Slow tier: 40 seasons (bench/study_collusion_honest.py is the same study with its numbers)."""

from __future__ import annotations

import sys

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


@pytest.mark.slow
def test_honest_all_fours_tables_of_three_hold_the_level(monkeypatch):
    """Honest All Fours tables of three (bench/study_collusion_honest.py --all-fours): the givers differ (slips of
    1-4% by skill), which one field rate per situation does not allow for; against the field alone the test
    rejected at 2.9% / 7.7% at alpha 0.01 / 0.05 (seed 14, 40 seasons). The giver's own rate as a second null
    (intersection-union) brings it to the level: measured 0.7% / 2.8%."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("study", "bench/study_collusion_honest.py")
    study = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "study", study)  # its workers' function is pickled by module name
    spec.loader.exec_module(study)
    doc = study.study_af(40, SEED, 2)
    n = doc["pair_tests"]
    for a in (0.01, 0.05):
        k = round(doc["per_deal"][f"rate_p<={a}"] * n)
        assert binom.sf(k - 1, n, a) > 0.001, (a, k, n)
    assert doc["per_deal"]["seasons_with_a_false_flag"] <= 5  # at collusion's whole level 0.05, not its share


def test_the_pair_must_be_unusual_against_the_field_and_the_givers_own_habit():
    """The p-value is the larger of the two nulls' (an intersection-union test), on every pair of the demo."""
    rep = replay_for_audit([DEMO])
    tests = audit(rep, seed=0, detectors=make_detectors(0.05, only=["collusion"], audit_wide=False)).tests
    both = 0
    for t in tests:
        pf = t.controls["against_field"]["pvalue"]
        own = t.controls.get("giver_to_others")
        assert t.pvalue == pytest.approx(max(pf, own["pvalue"]) if own else pf, rel=1e-5)  # controls are rounded
        both += own is not None and own["pvalue"] > pf * 1.01
    assert both > 40  # the giver's null binds on many pairs (57 of the demo's)
