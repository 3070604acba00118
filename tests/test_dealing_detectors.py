"""The dealing detectors, tested statistically with fixed seeds: honest dealers are rarely flagged (p <= alpha at
most about alpha of the time), planted cheats are found, controls say what they should."""

import numpy as np
import pytest

from auditor import dealgen
from auditor.columns import from_results
from auditor.dealgen import Cheat
from auditor.dealog import record_from_obj
from auditor.detectors.deal_uniformity import DealerCutter, DealUniformity, sequential_mc_pvalue
from auditor.detectors.dealer_jack import DealerJack
from auditor.detectors.shuffle_residue import ShuffleResidue, TrickStack, residue, stack_pairs
from auditor.detectors.turnup_jack import TurnupJack
from auditor.replay.reference import replay_deal
from auditor.stats.family import apply_families


def _run(det, facts, seed=0):
    rng = np.random.default_rng(seed)
    return {r.subject: r for r in apply_families(det.finalize(det.count(None, rng, facts=facts), rng))[0]}


def test_dealer_jack_flags_the_stacker_and_spares_the_others():
    rng = np.random.default_rng(21)
    s = dealgen.season("scotch_whist/foster", 4, 41, 200, rng, {"p007": Cheat.jack_stacker(0.3)})
    res = _run(DealerJack(), s.facts())
    assert res["p007"].flagged and res["p007"].pvalue < 1e-6
    assert sum(r.flagged for r in res.values()) == 1
    r = res["p007"]
    assert r.n == 200 and r.expected == pytest.approx(200 * 11 / 35)
    assert r.method.startswith("exact poisson-binomial")
    # his controls are normal: he stacks the Jack when dealing, he is not lucky in general
    assert r.controls["not_dealing"]["pvalue"] > 0.01
    assert r.controls["trump_ace_as_dealer"]["pvalue"] > 0.01
    assert r.controls["not_dealing"]["null_rate"] == pytest.approx(8 / 35, abs=1e-4)
    d = r.detail
    assert d["null_rate"] == pytest.approx(11 / 35, abs=1e-6)
    assert d["timeline"][-1] == [200, r.observed, pytest.approx(r.expected, abs=1e-3)]
    assert len(d["timeline"]) <= 200
    lo95, hi95 = d["funnel"]["limits"]["95"]
    lo998, hi998 = d["funnel"]["limits"]["99.8"]
    assert lo998 <= lo95 < r.expected < hi95 <= hi998 < r.observed
    assert 0.15 < d["min_detectable"] < 0.3 and d["min_detectable_level"] == pytest.approx(0.05 / 41)


def test_dealer_jack_honest_p_values_are_conservative():
    ps = []
    for k in range(30):
        s = dealgen.season("scotch_whist/foster", 4, 20, 60, np.random.default_rng(1000 + k))
        det = DealerJack(details=False)
        ps += [r.pvalue for r in det.finalize(det.count(None, facts=s.facts()))]
    ps = np.array(ps)  # 600 honest dealers
    for a in (0.01, 0.05, 0.1):
        assert (ps <= a).mean() <= a + 3 * np.sqrt(a * (1 - a) / len(ps))


def test_dealer_jack_mixes_configurations_with_their_own_nulls():
    # a player dealing at a 4-player and a 5-player (6 of spades out) and a Russian 3-player table: one exact test
    rng = np.random.default_rng(3)
    parts = [dealgen.season(r, n, n, 40, rng, names=["ann"] + [f"x{n}{i}" for i in range(n - 1)])
             for r, n in (("scotch_whist/foster", 4), ("scotch_whist/foster", 5), ("scotch_whist/russian", 3))]
    det = DealerJack()
    counts = det.merge([det.count(None, facts=p.facts()) for p in parts])
    ann = {r.subject: r for r in det.finalize(counts)}["ann"]
    assert ann.n == 120
    expect = 40 * 11 / 35 + 40 * (4 / 35 + 31 / 35 * 6 / 34) + 40 * (4 / 36 + 32 / 36 * 9 / 35)
    assert ann.expected == pytest.approx(expect)


def test_turnup_jack_flags_the_all_fours_stacker():
    rng = np.random.default_rng(8)
    s = dealgen.season("all_fours/foster", 4, 40, 60, rng, {"p003": Cheat("turnup_jack", 0.3)})
    res = _run(TurnupJack(), s.facts())
    assert res["p003"].flagged
    assert sum(r.flagged for r in res.values()) == 1
    c = res["p003"].controls
    assert c["first_turnup"]["observed"] > c["first_turnup"]["expected"] + 8
    # the test is the first turn-ups (issue 11); runs and all turn-ups are controls
    assert c["first_turnup"]["n"] == res["p003"].n and c["first_turnup"]["observed"] == res["p003"].observed
    assert c["all_turnups"]["n"] == c["first_turnup"]["n"] + c["run_turnups"]["n"]


def test_deal_uniformity_catches_a_stack_of_another_card():
    """An Ace-of-trumps stacker is invisible to dealer_jack but not to deal_uniformity."""
    rng = np.random.default_rng(12)
    s = dealgen.season("scotch_whist/foster", 4, 12, 150, rng, {"p002": Cheat("stacker", 0.4, rank=12)})
    f = s.facts()
    uni = _run(DealUniformity(mc_max=4000), f)
    jack = _run(DealerJack(), f)
    assert uni["p002"].flagged and uni["p002"].pvalue < 1e-3
    assert not jack["p002"].flagged
    cells = {(c["location"], c["rank"]): c for c in uni["p002"].detail["cells"]}
    ace_dealer = cells[("dealer", "A")]
    assert ace_dealer["observed"] > ace_dealer["expected"] + 20
    assert sum(r.flagged for r in uni.values()) == 1


def test_deal_uniformity_honest_p_values():
    ps = []
    for k in range(6):
        s = dealgen.season("all_fours/foster", 3, 12, 40, np.random.default_rng(50 + k))
        det = DealUniformity(details=False, mc_max=1000)
        ps += [r.pvalue for r in det.finalize(det.count(None, facts=s.facts()), np.random.default_rng(k))]
    ps = np.array(ps)  # 72 honest dealers
    assert (ps <= 0.05).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(ps))
    assert 0.35 < np.median(ps) < 0.65


def test_sequential_monte_carlo_p_value_is_valid():
    rng = np.random.default_rng(0)
    # a null statistic drawn from the same law as the simulations: p is (super-)uniform
    ps = [sequential_mc_pvalue(rng.standard_normal(), lambda b, g: g.standard_normal(b), rng, cap=500)[0]
          for _ in range(3000)]
    ps = np.array(ps)
    for a in (0.02, 0.05, 0.2):
        assert (ps <= a).mean() <= a + 3 * np.sqrt(a * (1 - a) / len(ps))
    p, draws = sequential_mc_pvalue(10.0, lambda b, g: g.standard_normal(b), rng, cap=500)
    assert p == pytest.approx(1 / 501) and draws == 500


def test_dealer_cutter_finds_the_friendly_cut():
    rng = np.random.default_rng(5)
    # fixed seating (four players, one table): the friend always cuts for the stacker
    s = dealgen.season("scotch_whist/foster", 4, 4, 300, rng, {"p001": Cheat.jack_stacker(0.5, partner="p000")})
    f = s.facts()
    res = _run(DealerCutter(), f)
    # p001's cutter is the player on his right, whoever that is each session; his deals cut by p000 are stacked
    pair = res["p001+p000"]
    assert pair.flagged
    others = pair.controls["with_other_cutters"]
    assert others["pvalue"] > 0.01
    assert all(not r.flagged for k, r in res.items() if not k.startswith("p001+p000"))


def test_residue_arithmetic():
    tricks = [[0, 1, 2, 3], [4, 5, 6, 7]]
    deck = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    obs, exp_, mx = residue(deck, tricks, 9)
    assert obs == 6 and mx == 6
    assert exp_ == pytest.approx(8 * (12 + 12) / (9 * 8))
    obs, _, _ = residue([0, 4, 1, 5, 2, 6, 3, 7, 8], tricks, 9)
    assert obs == 0


def _table_results(riffles_by_table, deals, seed, with_deck=True):
    rng = np.random.default_rng(seed)
    recs = []
    for t, rif in enumerate(riffles_by_table):
        players = [f"t{t}p{k}" for k in range(4)]
        recs += list(dealgen.table_sequence("scotch_whist/foster", players, deals, rng,
                                            {p: rif[k] for k, p in enumerate(players)}, table=f"t{t}",
                                            with_deck=with_deck))
    return [replay_deal(record_from_obj(r, "x", 0, i + 1).deal) for i, r in enumerate(recs)]


def test_stack_pairs_arithmetic():
    tricks = [[0, 1, 2, 3], [4, 5, 6, 7]]
    obs, exp_, mx = stack_pairs([0, 1, 2, 3, 8], tricks, 9)
    assert obs == 6 and mx == 6
    assert exp_ == pytest.approx(12 * 5 * 4 / (9 * 8))
    assert stack_pairs([0, 4, 8], tricks, 9)[0] == 0


def test_shuffle_residue_flags_the_bad_shuffler_among_human_peers():
    results = _table_results([(1, 4, 4, 4), (4, 4, 4, 4), (3, 3, 3, 3)], 160, seed=11, with_deck=False)
    det = ShuffleResidue()
    res = {r.subject: r for r in apply_families(det.finalize(det.count(from_results(results))))[0]}
    assert res["t0p0"].flagged
    assert [k for k, r in res.items() if r.flagged] == ["t0p0"]
    c = res["t0p0"].controls
    assert c["perfect_shuffle"]["observed"] > 3 * c["perfect_shuffle"]["expected"]
    assert c["peers"]["peers"] == 11  # everyone else, the tables only centre the residues
    assert [t["stratum"] for t in c["tables"]] == ["t0"]
    assert res["t1p0"].detail["min_detectable"] < 0.2


def test_people_who_shuffle_less_are_not_accused():
    """Honest people differ: at a table where one riffles twice and the others four or five times, the sloppy one
    is inside the peers' range once the peers differ among themselves; the permutation-style comparison with
    identical peers would accuse him."""
    results = _table_results([(2, 4, 5, 3), (3, 4, 5, 2), (4, 2, 3, 5)], 240, seed=4)
    det = ShuffleResidue()
    res = {r.subject: r for r in apply_families(det.finalize(det.count(from_results(results))))[0]}
    assert not any(r.flagged for r in res.values())


def test_trick_stack_finds_the_dealer_who_keeps_a_trick():
    """A dealer who puts a trick of the previous deal into his own hand (the rest shuffled as usual)."""
    rng = np.random.default_rng(6)
    recs = []
    for t in range(3):
        players = [f"s{t}{k}" for k in range(5)]
        seq = list(dealgen.table_sequence("scotch_whist/foster", players, 150, rng, {p: 3 for p in players},
                                          table=f"s{t}"))
        recs += seq
    # stack: in s00's deals, swap the cards of the previous deal's first trick into his hand (a third of them)
    from auditor.cards import CARD_STR, parse_card

    prev = None
    for rec in recs:
        if rec["table"] == "s0" and prev is not None and rec["players"][rec["dealer"]] == "s00" and \
                rng.random() < 0.6:
            trick = [parse_card(x) for x in prev["tricks"][0]]
            hands = [[parse_card(x) for x in h] for h in rec["hands"]]
            d = rec["dealer"]
            mine = [c for c in hands[d] if parse_card(rec["turn_up"]) != c]
            for c in trick[:len(mine)]:
                if c in hands[d] or c == parse_card(rec["turn_up"]):
                    continue
                owner = next(s for s in range(5) if c in hands[s])
                give = next(x for x in hands[d] if x not in trick and x != parse_card(rec["turn_up"]))
                hands[owner][hands[owner].index(c)] = give
                hands[d][hands[d].index(give)] = c
            rec["hands"] = [[CARD_STR[c] for c in h] for h in hands]
            rec.pop("deck", None)
            rec.pop("tricks", None)  # the play no longer matches: this deal is audited for dealing only
        if rec["table"] == "s0":
            prev = rec if "tricks" in rec else None
    results = [replay_deal(record_from_obj(r, "x", 0, i + 1).deal) for i, r in enumerate(recs)]
    det = TrickStack()
    res = {r.subject: r for r in apply_families(det.finalize(det.count(from_results(results))))[0]}
    assert res["s00"].flagged
    assert [k for k, r in res.items() if r.flagged] == ["s00"]


def test_shuffle_residue_needs_peers():
    results = _table_results([(4, 4, 4, 4)], 40, seed=3)
    # a table of one dealer: only his deals, nobody to compare with
    solo = [r for r in results if r.deal.players[r.deal.dealer] == "t0p0"]
    det = ShuffleResidue()
    assert det.finalize(det.count(from_results(solo)), np.random.default_rng(0)) == []


@pytest.mark.slow
def test_shuffle_residue_is_calibrated_at_human_tables():
    """Honest tables whose dealers all riffle four times: the p-values are conservative."""
    ps = []
    for k in range(15):
        results = _table_results([(4, 4, 4, 4)] * 4, 160, seed=100 + k)
        det = ShuffleResidue(details=False)
        ps += [r.pvalue for r in det.finalize(det.count(from_results(results)))]
    ps = np.array(ps)  # 240 dealers
    for a in (0.01, 0.05, 0.1):
        assert (ps <= a).mean() <= a + 3 * np.sqrt(a * (1 - a) / len(ps))


@pytest.mark.parametrize("preset,n,deals", [("scotch_whist/foster", 4, 60), ("all_fours/foster", 3, 40),
                                            ("scotch_whist/russian", 5, 30)])
def test_deal_uniformity_count_form_matches_dealing_deal_by_deal(preset, n, deals):
    """The null tables drawn as counts per occupancy state have the distribution of tables dealt deal by deal:
    every cell's mean and variance, and the X² statistic's distribution (two-sample KS), agree at fixed seeds."""
    from scipy import stats as st

    from auditor.detectors import deal_uniformity as du
    from auditor.facts import config
    from auditor.rules import PRESETS

    game, name = preset.split("/")
    cfg = config(PRESETS[(game, name)], n)
    B = 6000
    a = du._simulate_per_deal(cfg, deals, B, np.random.default_rng(1)).astype(float)
    by_cfg = {cfg: (np.zeros(deals), None)}
    old_factor = du.COUNT_FORM_FACTOR
    du.COUNT_FORM_FACTOR = 10**9  # force the count form
    try:
        b = du._simulate_tables(by_cfg, B, np.random.default_rng(2)).reshape(B, -1).astype(float)
    finally:
        du.COUNT_FORM_FACTOR = old_factor
    assert (a.sum(axis=1) == b.sum(axis=1)).all()  # every honour in the pack lands somewhere, once
    live = a.var(axis=0) + b.var(axis=0) > 0
    z = np.abs(a.mean(axis=0) - b.mean(axis=0))[live] / np.sqrt((a.var(axis=0) + b.var(axis=0))[live] / B)
    assert z.max() < 4.5
    ratio = b.var(axis=0)[live] / a.var(axis=0)[live]
    assert np.all(np.abs(ratio - 1) < 0.15)
    e = a.mean(axis=0)
    m = e > 0
    xa = (((a - e) ** 2)[:, m] / e[m]).sum(axis=1)
    xb = (((b - e) ** 2)[:, m] / e[m]).sum(axis=1)
    assert st.ks_2samp(xa, xb).pvalue > 0.001
    # and a misfit is caught by the same comparison: four honours a season moved from one cell to another
    shifted = b.copy()
    shifted[:, int(np.nonzero(m)[0][-1])] -= 4
    shifted[:, int(np.nonzero(m)[0][0])] += 4
    xs = (((shifted - e) ** 2)[:, m] / e[m]).sum(axis=1)
    assert st.ks_2samp(xa, xs).pvalue < 0.001
