"""`collusion` and `revoke_pattern` over the table: `count(from_results(results))` must return exactly what the
Python counters (`count_results(results)`, the spec) return, field for field and type for type, on the
demo season, simulated seasons with planted revokers and colluders at every kind of table, and random logs of
every preset, player count and option set with mutated records; and counting every deal at once must equal
merging per-table counts (how the audit used to count)."""

from __future__ import annotations

import time
import zlib
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
import pytest

from auditor.columns import AuditColumns, from_results
from auditor.dealog import read_records, validate
from auditor.detectors import collusion, revoke_pattern
from auditor.detectors.collusion import Collusion
from auditor.detectors.play_columns import (
    P_CARD,
    P_HOLD,
    P_LEAD,
    P_LEGAL,
    P_PLAYED,
    P_POS,
    P_REVOKE,
    P_SEAT,
    P_TRICK,
    P_TWO,
    P_VOIDS,
    P_WIN_CARD,
    P_WIN_SEAT,
    T_COUNT,
    T_FIRST,
    WALK_LEGAL,
    WALK_VOIDS,
    WALK_WINNER,
    walk_buffers,
    walk_deal,
    walk_setup,
)
from auditor.detectors.play_facts import deal_exclusion, walk
from auditor.detectors.revoke_pattern import RevokePattern, sum_fractions
from auditor.replay.reference import replay_deal
from auditor.replay.run import replay_records
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
DETECTORS = (Collusion, RevokePattern)
ORACLE = {Collusion: collusion.count_results, RevokePattern: revoke_pattern.count_results}  # the per-card spec


def typed(x):
    """x with the type of every leaf, dicts as sorted items: equal only when the values and their Python types are
    (a numpy integer where the spec has an int would pass `==` and fail here)."""
    if isinstance(x, dict):
        return ("dict", sorted(((repr(k), typed(k), typed(v)) for k, v in x.items()), key=lambda t: t[0]))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [typed(v) for v in x])
    return (type(x).__name__, x)


def assert_same(got, want) -> None:
    assert type(got) is type(want)
    for f in want.__dataclass_fields__:
        assert getattr(got, f) == getattr(want, f), f
        assert typed(getattr(got, f)) == typed(getattr(want, f)), f
    assert got == want


def check(results, cols=None) -> dict:
    """count (over the table) == count_results (the spec) for both detectors; returns the counts."""
    cols = from_results(results) if cols is None else cols
    out = {}
    for D in DETECTORS:
        want = ORACLE[D](results)
        got = D().count(cols)
        assert_same(got, want)
        out[D.__name__] = got
    return out


def by_table(results) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        rows.setdefault(r.deal.table, []).append(i)
    return rows


def check_merge(results) -> None:
    """Counting all deals at once (columns) == merging the per-table Python counts == merging per-table columns
    counts (tables merged in reverse order)."""
    cols = from_results(results)
    tables = by_table(results)
    assert len(tables) > 1
    for D in DETECTORS:
        det = D()
        whole = det.count(cols)
        parts = [ORACLE[D]([results[i] for i in tables[t]]) for t in sorted(tables, reverse=True)]
        assert_same(whole, det.merge(parts))
        parts_c = [det.count(cols.take(np.asarray(tables[t]))) for t in sorted(tables, reverse=True)]
        assert_same(whole, det.merge(parts_c))


# ---------------------------------------------------------------- the demo season


@pytest.fixture(scope="module")
def demo():
    """The demo season replayed: (results, columns, the Python counts per detector)."""
    results = replay_records(read_records([str(DEMO)]), engine="batch").results
    return results, from_results(results), {D: ORACLE[D](results) for D in DETECTORS}


def test_demo_season(demo):
    results, cols, want = demo
    for D in DETECTORS:
        assert_same(D().count(cols), want[D])
    c, r = want[Collusion], want[RevokePattern]
    assert c.deals > 2000 and len(c.pairs) > 1000 and len(c.bins) > 1000
    assert sum(v[1] for v in r.cells.values()) > 300 and len(r.revokes)
    assert r.excluded_deals.get("incomplete", 0) > 0


def test_demo_collusion_without_details(demo):
    """Without details the trials are kept summed (`deals_of`), not binned: the column count is the spec's, whole and
    merged by table, and its pairs' trials are the binned counts' summed over time."""
    results, cols, want = demo
    flat = collusion.count_results(results, details=False)
    det = Collusion(details=False)
    assert_same(det.count(cols), flat)
    tables = by_table(results)
    assert_same(det.merge([det.count(cols.take(np.asarray(tables[t]))) for t in sorted(tables, reverse=True)]), flat)
    binned = want[Collusion]
    assert not len(flat.bins) and not binned.deals_of and len(flat.deals_of) > 1000
    spans = binned.bins.spans()
    assert all(collusion.patterns_of(binned, p, spans) == pats for p, pats in flat.deals_of.items())


def test_demo_whole_equals_merged_tables(demo):
    """The demo counted at once == merged per-table column counts (== the Python count of the whole, which
    test_demo_season equates with it; the Python per-table merge is checked on the smaller inputs below)."""
    results, cols, want = demo
    tables = by_table(results)
    for D in DETECTORS:
        det = D()
        parts = [det.count(cols.take(np.asarray(tables[t]))) for t in sorted(tables, reverse=True)]
        assert_same(det.merge(parts), want[D])


def test_rows_out_of_input_order(demo):
    """Rows not in input order (the bins must still come out canonical): the demo's odd rows, then its even rows."""
    results, cols, want = demo
    D = len(cols)
    mixed = AuditColumns.concat([cols.take(np.arange(1, D, 2)), cols.take(np.arange(0, D, 2))])
    assert (np.diff(mixed.order) < 0).any()
    for Det in DETECTORS:
        assert_same(Det().count(mixed), want[Det])


# ---------------------------------------------------------------- simulated seasons


def _season_spec(n_deals: int) -> SeasonSpec:
    tables = [
        TableSpec("sw2", 2), TableSpec("sw3", 3), TableSpec("sw5", 5), TableSpec("sw7", 7), TableSpec("sw8", 8),
        TableSpec("sw4-must", 4, options={"void_rule": "must_trump_if_able"}),
        TableSpec("sw5-dead", 5, options={"odd_pack": "show_36th_dead"}),
        TableSpec("sw6-teams", 6, sides=partnerships(6, "teams")),
        TableSpec("ru2", 2, rules="russian"), TableSpec("ru3", 3, rules="russian"),
        TableSpec("ru5", 5, rules="russian"),
        TableSpec("ru4-pairs", 4, rules="russian", sides=partnerships(4, "pairs")),
        TableSpec("af2", 2, game="all_fours"), TableSpec("af3", 3, game="all_fours"),
        TableSpec("af4-pairs", 4, game="all_fours", sides=partnerships(4, "pairs")),
    ]
    return SeasonSpec(tables=tables, n_deals=n_deals, players=70, revoke_rate=0.02, season="h2",
                      cheaters=[CheaterSpec("ada", "revoker", 0.6),
                                CheaterSpec("ben", "colluder", 0.8, partner="cora")])


@pytest.fixture(scope="module")
def season():
    sim = simulate_season(_season_spec(1600), seed=11)
    return [replay_deal(validate(r)) for r in sim.records]


def test_simulated_season_every_kind_of_table(season):
    counts = check(season)
    cols = from_results(season)
    su = walk_setup(cols)
    walked = su.why == 0
    # the walk's special cases are all in the input
    assert (walked & (su.extra >= 0)).any()  # Russian 5: the eldest's two cards in the last trick
    assert (walked & (su.n_sets > 1)).any()  # 2 and 3 players dealt sets of six
    assert (walked & su.must_trump).any()
    assert (walked & ~su.af & (su.out_public != 0)).any()  # the shown dead card
    assert (walked & su.af).any() and cols.runs
    assert {(R.game, R.preset) for R in cols.rulesets} >= {("scotch_whist", "russian"), ("all_fours", "foster")}
    two_card = [i for i in np.flatnonzero(walked & (su.extra >= 0))
                if (cols.play_trick[i, :cols.n_plays[i]] == cols.play_trick[i, cols.n_plays[i] - 1]).sum()
                == cols.n[i] + 1]
    assert two_card
    c, r = counts["Collusion"], counts["RevokePattern"]
    assert c.pairs.get(("ben", "cora")) and {cell[0] for cell in c.field} == {"scotch_whist", "all_fours"}
    assert {n for _, (_, n) in r.cells} >= {2, 3, 4, 5, 6}
    ada = [v for (pl, _), v in r.cells.items() if pl == "ada"]
    assert sum(v[1] for v in ada) >= 5 and r.revokes.n[slice(*r.revokes.spans()["ada"])].sum() == sum(v[1] for v in ada)
    assert any(v[3] != 0 and v[3].denominator > 1 for v in r.cells.values())  # fractional gains summed exactly


@numba.njit
def _walked(row, arrays):
    """One deal's walk: its plays' rows and each play's (first play, size) of its trick."""
    buf = walk_buffers(arrays)
    d = walk_deal(row, arrays, buf, WALK_WINNER | WALK_LEGAL | WALK_VOIDS)
    W = buf.plays[:d.n_plays].copy()
    trick = np.zeros((d.n_plays, 2), np.int64)
    for i in range(d.n_plays):
        trick[i, 0] = buf.tricks[W[i, P_TRICK], T_FIRST]
        trick[i, 1] = buf.tricks[W[i, P_TRICK], T_COUNT]
    return W, trick


def test_the_table_walk_is_the_python_walk(season):
    """`play_columns.walk_deal` (what every play count reads) == `play_facts.walk`, play by play and field by field,
    on every walkable deal of the season (every kind of table)."""
    cols = from_results(season)
    su = walk_setup(cols)
    arrays = su.arrays(cols)
    walked = 0
    for row, res in enumerate(season):
        assert (su.why[row] == 0) == (deal_exclusion(res) is None)
        if su.why[row]:
            continue
        W, trick = _walked(row, arrays)
        states = [(st.seat, st.card, st.k, st.pos, len(st.trick_seats), -1 if st.lead_suit is None else st.lead_suit,
                   *(st.win or (-1, -1)), st.played, st.hold[st.seat], st.legal, int(st.two_card_turn),
                   int(st.revoke), sum(v << (4 * j) for j, v in enumerate(st.void))) for st in walk(res)]
        got = [(*(int(W[i, f]) for f in (P_SEAT, P_CARD, P_TRICK, P_POS)), int(trick[i, 1]),
                *(int(W[i, f]) for f in (P_LEAD, P_WIN_SEAT, P_WIN_CARD, P_PLAYED, P_HOLD, P_LEGAL, P_TWO, P_REVOKE,
                                         P_VOIDS))) for i in range(len(W))]
        assert got == states, res.deal.source
        assert all(trick[i, 0] == i - W[i, P_POS] for i in range(len(W)))
        walked += 1
    assert walked > 1000


def test_simulated_season_whole_equals_merged_tables(season):
    check_merge(season)


# ---------------------------------------------------------------- random logs, mutated records


def _mutated_log(seed: int, tmp_path: Path):
    rng = np.random.default_rng(seed)
    lines = []
    for (game, preset), counts in PLAYER_COUNTS.items():
        for n in counts:
            for options in (OPTION_SETS[game] if preset == "foster" else ({},)):
                recs = random_log(rng, 2, game=game, preset=preset, n=n, options=options,
                                  style=Style(revoke_rate=float(rng.choice([0.0, 0.03, 0.2])), claim_revokes=0.4),
                                  table=f"{game}/{preset}/{n}", id_prefix=f"{game}/{preset}/{n}/{len(options)}/")
                lines += mutate_log(rng, recs, rate=0.35, log_mutations=1)
    path = tmp_path / f"log{seed}.jsonl"
    path.write_bytes(to_jsonl(lines))
    return path, replay_records(read_records([str(path)]), "reference").results


@pytest.mark.parametrize("seed", [1, 2])
def test_random_and_mutated_deals(tmp_path, seed):
    """Every preset, player count and option set (clean and with revokes), a third of the records mutated (revokes,
    cards not in hand, hands or tricks missing, bad cards...); the columns as `from_results` builds them and as the
    batch pipeline builds them from the kernel (what the audit counts)."""
    from auditor.fast.pipeline import replay_paths

    path, results = _mutated_log(zlib.crc32(f"h2/{seed}".encode()), tmp_path)
    counts = check(results)
    check(results, replay_paths([str(path)], table=True).table)
    r = counts["RevokePattern"]
    assert set(r.excluded_deals) == {"no_hands", "incomplete", "card_not_in_hand"}
    assert sum(v[1] for v in r.cells.values()) > 20
    check_merge(results)


def test_nothing_to_walk():
    """No deal (empty columns), and only deals the counters exclude or skip."""
    for D in DETECTORS:
        assert_same(D().count(from_results([])), ORACLE[D]([]))
    rng = np.random.default_rng(5)
    recs = random_log(rng, 1, game="scotch_whist", n=4, sides=[[0, 2], [1, 3]])  # partnership: no collusion test
    for rec in recs:
        rec.pop("tricks", None)  # hands only: nothing played, every deal incomplete
    results = [replay_deal(validate(r)) for r in recs]
    counts = check(results)
    assert counts["Collusion"].deals == 0 and not counts["Collusion"].excluded_deals
    assert counts["RevokePattern"].excluded_deals == {"incomplete": len(results)}


def test_exact_fraction_sums():
    """The revokes' gains summed over a common denominator, in int64 and (huge numerators) in Python ints."""
    rng = np.random.default_rng(3)
    for scale in (10 ** 3, 10 ** 17):
        g = rng.integers(0, 5, 300)
        num = rng.integers(-scale, scale, 300)
        den = rng.integers(1, 19, 300)
        want = [sum((Fraction(int(a), int(b)) for a, b, k in zip(num, den, g, strict=True) if k == j), Fraction(0))
                for j in range(6)]
        got = sum_fractions(g, num, den, 6)
        assert got == want and all(type(x) is Fraction for x in got)


# ---------------------------------------------------------------- speed


@pytest.mark.slow
def test_speed_on_the_demo_tiled(demo):
    """>= 100k deals (the demo 13 times): the counts are 13 times the demo's (merge of 13 Python counts) and the
    columns count runs at well over 100k deals a second (measured ~0.8-1M/s on one core)."""
    results, cols, want = demo
    big = AuditColumns.concat([cols] * 13)
    assert len(big) >= 100_000
    for D in DETECTORS:
        det = D()
        det.count(cols)  # compiled
        t = time.perf_counter()
        got = det.count(big)
        dt = time.perf_counter() - t
        print(f"{D.__name__}.count: {len(big)} deals in {dt:.3f} s, {len(big) / dt:,.0f} deals/s")
        assert_same(got, det.merge([want[D]] * 13))
        assert len(big) / dt > 100_000
