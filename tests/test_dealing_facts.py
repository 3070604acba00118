"""Dealing facts: the generator's facts equal the facts of its records read back and replayed; cheats act as
specified; bad deals are skipped, not crashed on."""

import numpy as np
import pytest

from auditor import dealgen
from auditor.cards import RJ
from auditor.dealgen import Cheat
from auditor.columns import natural_key
from auditor.dealog import read_records, record_from_obj, write_jsonl
from auditor.facts import config, facts_from_results, held_prob
from auditor.replay.reference import replay_deal
from auditor.replay.run import replay_records
from auditor.rules import resolve


def _roundtrip(season, tmp_path, with_deck=True):
    path = tmp_path / "s.jsonl"
    write_jsonl(season.records(with_deck=with_deck), str(path))
    rep = replay_records(read_records([str(path)]))
    return rep, facts_from_results(rep.results)


@pytest.mark.parametrize("rules,n", [("scotch_whist/foster", 4), ("scotch_whist/foster", 2),
                                     ("scotch_whist/russian", 5), ("scotch_whist/russian", 3),
                                     ("scotch_whist/foster", 7), ("all_fours/foster", 4), ("all_fours/foster", 2)])
def test_generated_facts_equal_replayed_facts(rules, n, tmp_path):
    rng = np.random.default_rng(5)
    cheat = Cheat.jack_stacker(0.5) if rules.startswith("scotch") else Cheat("turnup_jack", 0.5)
    s = dealgen.season(rules, n, 2 * n + 1, 12, rng, {"p000": cheat}, beg_prob=0.6, run_prob=0.8)
    f = s.facts()
    rep, g = _roundtrip(s, tmp_path)
    assert rep.findings == []  # honest-looking records: the deck deals exactly the hands
    assert len(g) == len(f) == len(s) and g.skipped == 0
    names_f, names_g = np.array(f.players), np.array(g.players)
    assert (names_f[f.seat_player[:, :n]] == names_g[g.seat_player[:, :n]]).all()
    assert (f.holder == g.holder).all() and (f.turnup == g.turnup).all() and (f.cutter_rel == g.cutter_rel).all()
    # the generator's order is the line; the replay's is the canonical rank (table, time, game, deal number)
    lines = np.array([r.deal.line for r in rep.results])
    assert (f.order == lines).all()
    key = sorted(range(len(rep.results)), key=lambda i: (natural_key(rep.results[i].deal.table),
                                                         natural_key(rep.results[i].deal.game_id),
                                                         rep.results[i].deal.deal_no, i))
    assert (g.order[key] == np.arange(len(g))).all()
    assert np.array_equal(f.tu_deal, g.tu_deal) and np.array_equal(f.tu_jack, g.tu_jack)
    assert np.array_equal(f.tu_run, g.tu_run) and np.allclose(f.tu_p, g.tu_p)


def test_all_fours_thrown_in_deals_are_redealt_by_the_same_dealer(tmp_path):
    rng = np.random.default_rng(2)
    s = dealgen.season("all_fours/foster", 4, 8, 60, rng, beg_prob=1.0, run_prob=1.0)
    bunched = [i for i, b in enumerate(s.af) if b and b["bunched"]]
    assert bunched, "with every deal run, some packs run out"
    for i in bunched:
        assert s.dealer_seat[i + 1] == s.dealer_seat[i] and s.game[i + 1] == s.game[i]
    rep, g = _roundtrip(s, tmp_path, with_deck=False)
    assert rep.findings == []
    assert len(g) == len(s)
    # every run's turn-up is an event, with its null given the cards already out
    assert len(g.tu_p) == len(s) + sum(len(b["runs"]) for b in s.af if b)
    assert ((g.tu_p >= 0) & (g.tu_p <= 1)).all() and (g.tu_p == 0).any()  # 0 once all four Jacks are out
    k, mu, var = g.tu_jack.sum(), g.tu_p.sum(), (g.tu_p * (1 - g.tu_p)).sum()
    assert abs(k - mu) < 4 * np.sqrt(var)


def test_stacker_rate_is_q_plus_chance():
    rng = np.random.default_rng(9)
    q = 0.25
    s = dealgen.season("scotch_whist/foster", 4, 8, 1500, rng, {"p003": Cheat.jack_stacker(q)})
    f = s.facts()
    jack = f.trump_card(RJ)
    got = f.held_by(jack, 0)
    dealer = np.array(f.players)[f.dealer()]
    p0 = float(held_prob(config(resolve("scotch_whist", "foster"), 4), 0, RJ))
    for who, p in (("p003", q + (1 - q) * p0), ("p001", p0)):
        m = dealer == who
        k, N = got[m].sum(), m.sum()
        assert abs(k - N * p) < 4 * np.sqrt(N * p * (1 - p)), (who, k / N, p)


def test_turnup_stacker_rate():
    rng = np.random.default_rng(4)
    s = dealgen.season("all_fours/foster", 2, 4, 3000, rng, {"p001": Cheat("turnup_jack", 0.25)})
    f = s.facts()
    first = f.tu_run == 0
    dealer = np.array(f.players)[f.dealer()[f.tu_deal[first]]]
    jack = f.tu_jack[first]
    for who, p in (("p001", 0.25 + 0.75 / 13), ("p002", 1 / 13)):
        m = dealer == who
        k, N = jack[m].sum(), m.sum()
        assert abs(k - N * p) < 4 * np.sqrt(N * p * (1 - p)), (who, k / N, p)


def test_bad_deals_are_skipped_not_crashed():
    rng = np.random.default_rng(1)
    s = dealgen.season("scotch_whist/foster", 4, 4, 1, rng)
    recs = list(s.records())
    bad = [dict(recs[0]), dict(recs[1]), dict(recs[2]), dict(recs[3])]
    bad[0]["hands"] = [h[:] for h in bad[0]["hands"]]
    bad[0]["hands"][0][0] = bad[0]["hands"][1][0]  # a duplicate card
    bad[1]["hands"] = [h[:-1] for h in bad[1]["hands"]]  # wrong sizes
    bad[2]["turn_up"] = "Xx"  # not a card
    results = [replay_deal(record_from_obj(r, "x", 0, i + 1).deal) for i, r in enumerate(bad)]
    g = facts_from_results(results)
    assert len(g) == 1 and g.skipped == 3
