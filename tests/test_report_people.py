"""Issue 16: the verdict per person (auditor/report/people.py) and the watch list's "enough play" rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from auditor.report import view as report_view
from auditor.report.people import enough_data, flag_clause, odds_words, person_views

sys.path.insert(0, str(Path(__file__).parent))
from test_report_data import synthetic_doc  # noqa: E402

DJ = {"test": "dealer_jack", "subject": "kate", "n": 77, "observed": 54, "expected": 21.1, "pvalue": 7e-15,
      "qvalue": 4e-13, "tier": "report", "flagged": True, "strong": True}
AF = {"test": "af_dealer_jack", "subject": "kate", "n": 54, "observed": 34, "expected": 6.35, "pvalue": 7e-19,
      "qvalue": 4e-16, "tier": "report", "flagged": True, "strong": True}
DU = {"test": "deal_uniformity", "subject": "kate", "n": 136, "observed": 280, "expected": 40, "pvalue": 2e-5,
      "qvalue": 0.002, "tier": "report", "flagged": True,
      "detail": {"cells": [{"rank": "J", "location": "dealer", "observed": 82, "expected": 18.9}]}}
PAIR = {"test": "collusion", "subject": "rosa+gus", "n": 114, "observed": 41, "expected": 8.9, "pvalue": 3e-4,
        "qvalue": 0.03, "tier": "report", "flagged": True}


@pytest.mark.parametrize("p,words", [(0.3, "about 1 in 3.3"), (0.04, "about 1 in 25"), (0.0012, "about 1 in 833"),
                                     (3e-5, "about 1 in 33 thousand"), (1e-3, "about 1 in a thousand"),
                                     (7e-8, "about 1 in 14 million"), (2e-10, "about 1 in 5 billion"),
                                     (1e-15, "less than 1 in a million million"), (0.7, "about as likely as not"),
                                     (None, "of unknown odds")])
def test_odds_in_words(p, words):
    assert odds_words(p) == words


def test_one_paragraph_brings_a_persons_flags_together_and_says_what_each_count_counts():
    audit = {"level": 0.05, "tests": 2377}
    people = person_views([DU, DJ, AF, PAIR], audit)
    assert [p["person"] for p in people] == ["kate", "gus", "rosa"]  # strongest evidence first
    kate = people[0]
    assert kate["n_flags"] == 3 and kate["strong"]
    text = kate["paragraph"]
    # strongest first, the name once, each count with its game; the count over both games says so
    assert text.startswith("kate dealt themselves the Jack of the suit they turned up in 34 of 54 All Fours deals dealt "
                           "(an honest dealer: about 6.3); received the Jack of trumps in 54 of 77 Scotch Whist "
                           "deals dealt (an honest dealer: about 21); ")
    assert "over 136 deals dealt in all games: the trump Jack in the dealer's hand 82 times" in text
    assert "less than 1 in a million million" in text and "all 2,377 checks" in text and "strong flag" in text
    gus = people[1]  # a pair flag is in both players' paragraphs, the giver named
    assert gus["paragraph"].startswith("rosa gave counting cards (to gus) in 41 of 114 deals with a chance")
    assert "flagged at the 5% level" in gus["paragraph"] and "not proof" in gus["paragraph"]
    assert people[2]["paragraph"] == gus["paragraph"]
    # a count over every game says nothing of games when no clause beside it names one
    assert flag_clause(DU) == ("kate dealt an unusual pattern of honours over 136 deals dealt: the trump Jack in "
                               "the dealer's hand 82 times, where a fair deal gives about 19")


def test_the_watch_list_keeps_only_results_with_enough_play():
    thin = {"test": "collusion", "subject": "a+b", "n": 1, "observed": 1, "expected": 0.009, "pvalue": 0.009,
            "qvalue": 1, "tier": "watch"}
    thick = dict(thin, subject="c+d", n=40, observed=9, expected=2.5)
    hopeless = {"test": "dealer_jack", "subject": "e", "n": 12, "observed": 8, "expected": 3.3, "pvalue": 0.004,
                "tier": "watch", "detail": {"min_detectable": None}}  # even a full cheat could go unseen
    able = dict(hopeless, subject="f", n=15, detail={"min_detectable": 0.6})
    assert not enough_data(thin) and enough_data(thick) and not enough_data(hopeless) and enough_data(able)
    view = report_view.build_view({"tests": [thin, thick, hopeless, able], "flags": []}, charts=False)
    assert [w["subject"] for w in view["watch"]] == ["f", "c+d"] and view["watch_hidden"] == 2


def test_a_test_with_nothing_to_show_is_one_line_and_flags_keep_their_rows():
    doc = synthetic_doc(seed=7)
    view = report_view.build_view(doc, charts=False)
    quiet = {f["test"] for f in view["quiet_families"]}
    for fam in view["families"]:
        assert fam["quiet"] == (fam["test"] in quiet) == (fam["n_flagged"] == 0 and fam["n_watch_shown"] == 0)
        assert fam["rows_more"] == fam["n_subjects"] - len(fam["rows"]) >= 0
        flagged_rows = [r for r in fam["rows"] if r["tier"] == "report"]
        assert len(flagged_rows) == fam["n_flagged"]
    assert quiet  # the synthetic collusion pairs: nothing flagged, nothing worth watching


def test_a_score_control_never_reads_as_a_negative_count():
    """Issue 16: 'late: 12.1 of 25 (about -0.9 expected)' read as a count with a negative expectation."""
    from auditor.report.sentences import controls_sentence

    entry = {"test": "marked_ten", "subject": "walt", "controls": {
        "late": {"deals": 25, "observed": 12.1, "expected": -0.9, "p": 2e-5},
        "not_dealing": {"n": 276, "observed": 42, "expected": 50.2, "pvalue": 0.92}}}
    text = controls_sentence(entry)
    assert "late in the play: score 12.1 over 25 deals (honest play: about -0.9), p = 2e-05" in text
    assert "not dealing: 42 of 276 (about 50 expected), p = 0.92" in text and "of 25" not in text
