"""The dealing facts and the `shuffle_residue` / `trick_stack` rows from the audit columns equal the ones from the
replay results (`facts_from_results`, `count_results`: the executable specs), array for array, on the demo season,
random and mutated logs of every game / preset / player count / option set, simulated seasons with stacking and
shuffling cheats, hand-made broken deals and All Fours deals that ran the cards. Counting the whole input at once
equals counting each table and merging (what the audit did before)."""

from __future__ import annotations

import copy
import time
import zlib
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from auditor.columns import AuditColumns, from_results
from auditor.dealog import read_records
from auditor.detectors.shuffle_residue import ShuffleResidue, TrickStack, count_results, count_table, rows_of
from auditor.facts import DealingFacts, facts_from_columns, facts_from_results
from auditor.replay.run import replay_records
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "season.jsonl.gz"
CONFIGS = [(game, preset, n) for (game, preset), counts in PLAYER_COUNTS.items() for n in counts]
RESIDUE_FIELDS = ("key", "dealer", "label", "residue_obs", "residue_exp", "residue_max", "stack_obs", "stack_exp",
                  "stack_max")


def _results(lines, tmp_path, engine="reference"):
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    return replay_records(read_records([str(path)]), engine).results


def _same_array(a, b) -> bool:
    return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def facts_diff(want: DealingFacts, got: DealingFacts) -> list[str]:
    out = []
    for f in fields(DealingFacts):
        a, b = getattr(want, f.name), getattr(got, f.name)
        if isinstance(a, np.ndarray):
            if not _same_array(a, b):
                out.append(f"{f.name}: {a.dtype}{a.shape} vs {getattr(b, 'dtype', type(b))}{getattr(b, 'shape', '')}")
        elif a != b:
            out.append(f"{f.name}: {a!r} vs {b!r}")
    return out


def counts_diff(want: dict, got: dict, ordered: bool = True) -> list[str]:
    out = []
    if (list(want) if ordered else sorted(want)) != (list(got) if ordered else sorted(got)):
        out.append(f"tables {list(want)} vs {list(got)}")
    for t, w in want.items():
        if t not in got:
            continue
        if list(w) != list(got[t]) or list(w) != list(RESIDUE_FIELDS):
            out.append(f"{t}: fields {list(w)} vs {list(got[t])}")
            continue
        out += [f"{t}.{k}" for k, a in w.items() if not _same_array(a, got[t][k])]
    return out


def check(results) -> tuple[AuditColumns, DealingFacts, dict]:
    """Assert columns == results for the facts and both residue detectors, whole input == merged per table."""
    cols = from_results(results)
    facts = facts_from_results(results)
    assert facts_diff(facts, facts_from_columns(cols)) == []
    rows = count_results(results)
    assert counts_diff(rows, count_table(cols)) == []
    by_table: dict[str, list] = {}
    for r in results:
        by_table.setdefault(r.deal.table, []).append(r)
    for det in (ShuffleResidue(), TrickStack()):
        # the audit counts parts of whole tables and merges their bounded counts: the same tests as the whole
        merged = det.merge([det.count(from_results(by_table[t])) for t in sorted(by_table)])
        whole = det.count(cols, None, facts=facts_from_columns(cols))
        rng = np.random.default_rng(0)
        assert ([r.to_json() for r in det.finalize(merged, rng)]
                == [r.to_json() for r in det.finalize(whole, np.random.default_rng(0))])
    # per-table columns (AuditColumns.take) give each table's rows too
    for t in list(rows)[:3]:
        part = cols.take(np.flatnonzero(cols.table == cols.tables.index(t)))
        assert counts_diff({t: rows[t]}, count_table(part)) == []
    return cols, facts, rows


@pytest.fixture(scope="module")
def demo_results():
    return replay_records(read_records([str(DEMO)]), engine="batch").results


def test_demo_season(demo_results):
    cols, facts, rows = check(demo_results)
    assert len(cols) == 8000 and len(facts) > 7900 and len(cols.runs) > 500
    assert (facts.tu_run > 0).sum() > 500  # the All Fours runs' turn-ups are events
    assert sum(len(c["key"]) for c in rows.values()) > 7500
    assert all((~np.isnan(c["residue_obs"])).all() and (c["residue_obs"] > 0).any() for c in rows.values())


@pytest.mark.parametrize("game,preset,n", CONFIGS)
def test_every_configuration_clean_and_mutated(tmp_path, game, preset, n):
    """Random games of each configuration (two tables, packs alternating at one), a third of the records mutated
    (bad cards, wrong sizes, missing hands / tricks / deck, revokes, reordered and repeated deals...)."""
    rng = np.random.default_rng(zlib.crc32(f"cols/{game}/{preset}/{n}".encode()))
    lines = []
    for j, table in enumerate(("a", "b")):
        recs = random_log(rng, 12, game=game, preset=preset, n=n, table=table, id_prefix=f"{table}-",
                          style=Style(revoke_rate=0.03, claim_revokes=0.4))
        if j == 1:
            for k, rec in enumerate(recs):
                if k % 5:  # some deals name no pack: they are their own sequence
                    rec["pack"] = ("red", "blue")[k % 2]
        lines += mutate_log(rng, recs, rate=0.4)
    results = _results(lines, tmp_path)
    _, facts, rows = check(results)
    assert len(facts) > 0 and facts.skipped > 0
    assert sum(len(c["key"]) for c in rows.values()) > 0


def test_every_option_set_and_mixed_configurations_at_one_table(tmp_path):
    """Every option set at the player counts where it matters, all at one table: consecutive deals of different
    packs (5 and 4 players, the spade six out or in) are not compared."""
    rng = np.random.default_rng(3)
    lines = []
    for game, sets in OPTION_SETS.items():
        counts = {"scotch_whist": (2, 3, 4, 5, 7, 8), "all_fours": (2, 3, 4)}[game]
        for options in sets:
            for n in counts:
                recs = random_log(rng, 1, game=game, n=n, options=options, table="t1",
                                  id_prefix=f"{game}/{n}/{sorted(options.items())}/")
                lines += mutate_log(rng, recs, rate=0.2, log_mutations=1)
    results = _results(lines, tmp_path)
    cols, facts, rows = check(results)
    assert len(facts.configs) > 10 and len(cols.log_tricks) > 0
    assert len(rows["t1"]["key"]) < len(results) - 5  # deals after a deal of another pack are left out


def test_simulated_seasons_with_cheats(tmp_path):
    """Simulated seasons: human shufflers, alternating packs, a weak and a stacking bad shuffler, a Jack stacker
    and a turn-up cheat, tables of every game and preset."""
    from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, simulate_season

    tables = [TableSpec("sw4", 4, packs=("a", "b"), human_shuffle=True), TableSpec("sw5", 5, human_shuffle=True),
              TableSpec("sw2", 2), TableSpec("sw8", 8, packs=("a", "b")),
              TableSpec("ru3", 3, rules="russian", human_shuffle=True), TableSpec("ru6", 6, rules="russian"),
              TableSpec("af4", 4, game="all_fours", packs=("a", "b"), human_shuffle=True),
              TableSpec("af3", 3, game="all_fours"), TableSpec("af2", 2, game="all_fours", human_shuffle=True)]
    players = [f"p{i:02d}" for i in range(40)]
    cheaters = [CheaterSpec("p01", "bad_shuffler", 0.6, mode="stack"),
                CheaterSpec("p02", "bad_shuffler", 0.6, mode="weak"),
                CheaterSpec("p03", "jack_stacker", 0.5), CheaterSpec("p04", "turnup_jack", 0.5)]
    spec = SeasonSpec(tables=tables, n_deals=1500, players=players, cheaters=cheaters)
    sim = simulate_season(spec, np.random.default_rng(12))
    _, facts, rows = check(_results(sim.records, tmp_path, engine="batch"))
    assert set(rows) == {t.name for t in tables}
    assert (facts.tu_run > 0).any()
    stack = np.concatenate([c["stack_obs"] for c in rows.values()])
    assert np.nanmax(stack) >= 3  # the stacking shuffler puts tricks in his hand


def _by_game(rng, game, n, games=2):
    return random_log(rng, games, game=game, n=n, table=f"{game}{n}",
                      style=Style(beg=(0.0, 0.0, 1.0)) if game == "all_fours" else None,
                      id_prefix=f"{game}{n}-")


def test_broken_deals(tmp_path):
    """Deals the dealing tests must skip or keep without hands: each breakage on its own record."""
    rng = np.random.default_rng(8)
    sw = _by_game(rng, "scotch_whist", 4, games=25)
    assert len(sw) >= 2 * 15
    af = _by_game(rng, "all_fours", 3, games=6)
    assert sum(1 for r in af if r.get("runs")) >= 2 * 13

    def edit(rec, fn):
        rec = copy.deepcopy(rec)
        fn(rec)
        return rec

    def set_hand_card(s, k, card):
        def fn(rec):
            rec["hands"][s][k] = card
        return fn

    breaks = [
        set_hand_card(0, 0, "Zz"),  # not a card
        set_hand_card(0, 0, "2c"),  # outside the Scotch Whist pack
        lambda rec: rec["hands"][1].__setitem__(0, rec["hands"][1][1]),  # listed twice in one hand
        lambda rec: rec["hands"][1].append(rec["hands"][1][0]),  # listed twice, the hand one card long
        lambda rec: rec["tricks"].__setitem__(2, []),  # an empty trick
        lambda rec: rec["hands"][1].__setitem__(0, rec["hands"][2][0]),  # in two hands
        lambda rec: rec["hands"][2].pop(),  # a short hand
        lambda rec: rec.pop("hands"),  # hands from the play
        lambda rec: rec.pop("deck"),
        lambda rec: rec.pop("tricks"),
        lambda rec: rec["deck"].__setitem__(3, "Xx"),
        lambda rec: rec["deck"].pop(),
        lambda rec: rec["tricks"][0].__setitem__(0, "Qq"),
        lambda rec: rec.__setitem__("turn_up", "??"),
        lambda rec: rec.__setitem__("turn_up", "3h"),
        lambda rec: (rec.pop("hands"), rec.pop("deck")),
        lambda rec: (rec.pop("deck"), rec["hands"].reverse()),
    ]
    lines = []
    for k, rec in enumerate(sw):
        lines.append(edit(rec, breaks[k % len(breaks)]) if k % 2 else rec)

    def run_card(j, s, k, card):
        def fn(rec):
            rec["runs"][j]["cards"][s][k] = card
        return fn

    af_breaks = [
        run_card(0, 0, 0, "Zz"),  # a run card that is no card
        lambda rec: run_card(0, 0, 0, rec["hands"][1][0])(rec),  # a run card already dealt
        lambda rec: run_card(0, 1, 1, rec["runs"][0]["cards"][1][0])(rec),  # twice in one run
        lambda rec: rec["runs"][0].__setitem__("turn_up", "??"),
        lambda rec: rec["runs"][0].__setitem__("turn_up", rec["turn_up"]),  # the first turn-up again
        lambda rec: rec["runs"][0].__setitem__("turn_up", rec["runs"][0]["cards"][0][0]),
        lambda rec: rec.pop("hands"),  # hands from the play of a deal that ran: not the dealt hands
        lambda rec: (rec.pop("hands"), rec.pop("discards", None)),
        lambda rec: rec.__setitem__("turn_up", rec["hands"][0][0]),  # the turn-up is in a hand
        set_hand_card(2, 1, "Zz"),
        # without the dealt hands the replay stops at no bad card before the runs are checked
        lambda rec: (rec.pop("hands"), run_card(0, 2, 2, "Zz")(rec)),
        lambda rec: (rec.pop("hands"), rec["runs"][0].__setitem__("turn_up", "??")),
        lambda rec: (rec.pop("hands"), run_card(0, 0, 0, rec["turn_up"])(rec)),
    ]
    k = 0
    for rec in af:
        if rec.get("runs"):
            lines.append(edit(rec, af_breaks[k % len(af_breaks)]))
            k += 1
        lines.append(rec)
    results = _results(lines, tmp_path)
    _, facts, rows = check(results)
    assert facts.skipped >= 15
    assert (~facts.hands_known).any()  # All Fours deals that ran, without their dealt hands
    assert np.isnan(np.concatenate([c["residue_obs"] for c in rows.values()])).any()  # no deck


def test_empty_and_single_deal(tmp_path):
    recs = random_log(np.random.default_rng(2), 1, n=4)[:1]
    check(_results(recs, tmp_path))
    cols = from_results([])
    assert facts_diff(facts_from_results([]), facts_from_columns(cols)) == []
    assert count_table(cols) == {}


def test_both_residue_tests_read_one_counting_of_a_table(demo_results):
    """Both residue tests read one counting of a table; another table is counted afresh."""
    cols = from_results(demo_results[:2000])
    a = rows_of(cols)
    assert rows_of(cols) is a
    other = from_results(demo_results[:1000])
    b = rows_of(other)
    assert b is not a and counts_diff(count_results(demo_results[:1000]), b[0]) == []


@pytest.mark.slow
def test_speed_on_the_demo_tiled(demo_results):
    """>= 100k deals (the demo season 13 times over, each copy its own file): the columns' facts and rows equal the
    specs', at >= 100k deals/s each."""
    results = demo_results
    copies = 13
    tiled = []
    for k in range(copies):
        for r in results:
            r2 = copy.copy(r)
            r2.deal = copy.copy(r.deal)
            r2.deal.file_index = k
            tiled.append(r2)
    cols = from_results(tiled)
    assert len(cols) >= 100_000
    ShuffleResidue().count(from_results(results[:50]))  # compile outside the timing
    t0 = time.perf_counter()
    got_facts = facts_from_columns(cols)
    t1 = time.perf_counter()
    got_rows = count_table(cols)
    t2 = time.perf_counter()
    assert facts_diff(facts_from_results(tiled), got_facts) == []
    assert counts_diff(count_results(tiled), got_rows) == []
    assert len(cols) / (t1 - t0) > 100_000 and len(cols) / (t2 - t1) > 100_000, (t1 - t0, t2 - t1)
