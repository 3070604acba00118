"""`MarkedTen.count` (numba over the table, `AuditColumns`) against `marked_ten.count_results` (Python over
`DealResult`s, the spec): every array equal (values and dtypes), the same names, packs, games and sources, the same
exclusions. On the demo season, simulated seasons of every table size the detector keeps or excludes, and generated
logs of every configuration and option set with mutated records (revokes, cards not in hand, missing hands and
tricks). Counting every deal at once equals merging the counts of each table."""

from __future__ import annotations

import time
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.columns import AuditColumns, from_results
from auditor.dealog import read_records, record_from_obj
from auditor.detectors import marked_ten as M
from auditor.replay.run import replay_records
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

DEMO = "fixtures/demo/season.jsonl.gz"
DEAL_FIELDS = ("keys", "players", "pack", "share", "game", "deal_no", "side") + M.LEDGER_FIELDS
LIST_FIELDS = ("names", "pack_names", "games", "source", "excluded_deals", "excluded", "ledger_games")


def _diff(a: M.MarkedTenCounts, b: M.MarkedTenCounts) -> list:
    """Where two counts differ: arrays by dtype, shape and value; lists and dicts by equality."""
    bad: list = []
    for k in DEAL_FIELDS:
        x, y = getattr(a, k), getattr(b, k)
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
            bad.append(k)
    bad += [k for k in LIST_FIELDS if getattr(a, k) != getattr(b, k)]
    if set(a.targets) != set(b.targets):
        return bad + ["targets"]
    for t, parts in a.targets.items():
        for part, cols in parts.items():
            for k, x in cols.items():
                y = b.targets[t][part][k]
                if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
                    bad.append((t, part, k))
    return bad


def _check(results) -> M.MarkedTenCounts:
    det = M.MarkedTen()
    spec = M.count_results(results)
    got = det.count(from_results(results))
    assert _diff(spec, got) == []
    return got


def _n_rows(c: M.MarkedTenCounts, part: str) -> int:
    return sum(len(tc[part]["deal" if part != "cands" else "dec"]) for tc in c.targets.values())


# ---------------------------------------------------------------- (a) the demo season


@pytest.fixture(scope="module")
def demo_results():
    return replay_records(read_records([DEMO]), engine="batch").results


def test_demo_season(demo_results):
    c = _check(demo_results)
    assert c.n_deals > 3000 and _n_rows(c, "cands") > 10000
    assert c.excluded_deals["not_scotch_whist"] > 0 and c.excluded_deals["revoke_in_deal"] > 0
    assert len(np.unique(c.keys)) == c.n_deals  # the key tells the deals apart


# ---------------------------------------------------------------- (b) simulated seasons


def _sim_tables() -> list[TableSpec]:
    return [
        TableSpec("f4", 4, sides=partnerships(4, "pairs"), packs=("red", "blue")),
        TableSpec("f5", 5),
        TableSpec("f6", 6, sides=partnerships(6, "teams")),
        TableSpec("f7", 7, options={"odd_pack": "show_36th_dead"}),
        TableSpec("f8", 8, sides=partnerships(8, "pairs")),
        TableSpec("f4m", 4, sides=partnerships(4, "pairs"), options={"void_rule": "must_trump_if_able"}),
        TableSpec("r2", 2, rules="russian"),  # ten each, the rest aside: one set
        TableSpec("r3", 3, rules="russian"),
        TableSpec("r5", 5, rules="russian"),  # the eldest plays two cards in the last trick
        TableSpec("f2", 2),  # sets of six: excluded
        TableSpec("f3", 3),
        TableSpec("af4", 4, game="all_fours", sides=partnerships(4, "pairs")),  # excluded
        TableSpec("af3", 3, game="all_fours"),
    ]


@pytest.fixture(scope="module")
def sim_results():
    spec = SeasonSpec(tables=_sim_tables(), n_deals=700, players=64,
                      cheaters=[CheaterSpec("ada", "marked_ten", 1.0)], revoke_rate=1 / 100, time=False)
    sim = simulate_season(spec, np.random.default_rng(7))
    # sources "sim:line", and some that do not end with their line (`AuditColumns.source_of`)
    return replay_records(record_from_obj(r, f"sim{'-' if i % 50 == 7 else ':'}{i + 1}", 0, i + 1)
                          for i, r in enumerate(sim.records)).results


def test_simulated_seasons(sim_results):
    c = _check(sim_results)
    tables = [r.deal.table for r in sim_results]
    ex = c.excluded_deals
    assert ex["not_scotch_whist"] == sum(t.startswith("af") for t in tables)
    assert ex["played_in_sets"] + sum(1 for r in sim_results if r.deal.table in ("f2", "f3") and r.revokes) \
        >= sum(t in ("f2", "f3") for t in tables)
    assert ex["revoke_in_deal"] > 0
    table_of = {r.deal.source: r.deal.table for r in sim_results}
    assert len(table_of) == len(sim_results)
    kept_tables = {table_of[s] for s in c.source}
    assert any("-" in s for s in c.source)
    assert {"f4", "f5", "f6", "f7", "f8", "f4m", "r2", "r3", "r5"} <= kept_tables
    assert not kept_tables & {"f2", "f3", "af4", "af3"}
    ten = c.targets["ten"]
    assert (ten["cands"]["seat"] == -1).any()  # cards aside (Russian 2-3 players, 5 and 7 without a six)
    assert set(np.unique(ten["decisions"]["kind"]).tolist()) == {M.KIND_LEAD, M.KIND_FOLLOW}
    assert len(c.pack_names) == 2


# ---------------------------------------------------------------- (c) generated logs, mutated


@pytest.fixture(scope="module")
def mutated_results(tmp_path_factory):
    """One file per configuration and per option set (three players to seven), a third of the records mutated,
    replayed together by the reference engine."""
    tmp = tmp_path_factory.mktemp("mt")
    style = Style(revoke_rate=0.01, claim_revokes=0.4)
    paths = []

    def write(name: str, rng, recs) -> None:
        path = tmp / f"{name}.jsonl"
        path.write_bytes(to_jsonl(mutate_log(rng, recs, rate=0.35)))
        paths.append(str(path))

    for (game, preset), counts in PLAYER_COUNTS.items():
        for n in counts:
            rng = np.random.default_rng(zlib.crc32(f"mt/{game}/{preset}/{n}".encode()))
            write(f"{game}-{preset}-{n}", rng, random_log(rng, 5, game=game, preset=preset, n=n, style=style,
                                                          table=f"{preset}{n}", id_prefix=f"{game}/{preset}/{n}/"))
    for j, options in enumerate(o for o in OPTION_SETS["scotch_whist"] if o):
        rng = np.random.default_rng(zlib.crc32(f"mt/options/{sorted(options.items())}".encode()))
        recs = []
        for n in (3, 4, 5, 7):
            recs += random_log(rng, 2, n=n, options=options, style=style, table=f"o{j}n{n}", id_prefix=f"o{j}/{n}/")
        write(f"options{j}", rng, recs)
    return replay_records(read_records(paths), "reference").results


def test_every_configuration_with_mutations(mutated_results):
    c = _check(mutated_results)
    # every reason a deal is excluded for shows up, and the deals kept are many
    assert set(c.excluded_deals) >= {"not_scotch_whist", "no_hands", "incomplete", "card_not_in_hand",
                                     "revoke_in_deal", "played_in_sets"}, c.excluded_deals
    assert c.n_deals > 150, c.n_deals
    # every reason a play is not scored for (but "no_candidate": only a false void hides the Ten's holder, and deals
    # with a revoke are out)
    assert set().union(*(d.keys() for d in c.excluded.values())) == {
        "ten_own", "ten_played", "ten_public", "forced", "no_trump_choice", "scored"}


def test_one_deal_at_a_time_and_none(mutated_results):
    """Any slice of the input, a single deal, and no deal at all: the same counts both ways."""
    for r in mutated_results[::97]:
        _check([r])
    _check(mutated_results[50:250])
    _check([])
    empty = M.MarkedTen().count(AuditColumns())
    assert empty.n_deals == 0 and empty.players.shape == (0, M.MAX_SEATS)


def test_small_arrays_grow(sim_results, monkeypatch):
    """The kernel stops when its arrays are full and resumes after they grow: force it from a tiny start."""
    cols = from_results(sim_results[:300])
    want = M.count_table(cols)
    real = M._Rows.__init__
    monkeypatch.setattr(M._Rows, "__init__", lambda self, caps: real(self, {k: 1 for k in caps}))
    assert _diff(want, M.count_table(cols)) == []


# ---------------------------------------------------------------- all at once == merged per table


def _canonical(c: M.MarkedTenCounts) -> dict:
    """The counts with deals in source order and ids replaced by names: what must not depend on how the input was
    split."""
    perm = np.argsort(np.asarray(c.source, dtype=object), kind="stable")
    rank = np.empty(len(perm), np.int64)
    rank[perm] = np.arange(len(perm))
    names = np.array(list(c.names) + [""], dtype=object)
    packs = np.array(list(c.pack_names) + [""], dtype=object)
    out: dict = {"keys": c.keys[perm], "players": names[c.players[perm]], "pack": packs[c.pack[perm]],
                 "share": c.share[perm], "game": [c.games[g] for g in c.game[perm]], "deal_no": c.deal_no[perm],
                 "source": [c.source[i] for i in perm], "excluded_deals": c.excluded_deals, "excluded": c.excluded}
    for t, tc in c.targets.items():
        P, D, C = tc["plays"], tc["decisions"], tc["cands"]
        pp = np.argsort(rank[P["deal"]], kind="stable")
        out[t, "plays"] = {k: (rank[v] if k == "deal" else v)[pp] for k, v in P.items()}
        dp = np.argsort(rank[D["deal"]], kind="stable")
        out[t, "decisions"] = {k: (rank[v] if k == "deal" else v)[dp] for k, v in D.items()}
        dinv = np.empty(len(dp), np.int64)
        dinv[dp] = np.arange(len(dp))
        cp = np.argsort(dinv[C["dec"]], kind="stable")
        out[t, "cands"] = {k: (dinv[v] if k == "dec" else v)[cp] for k, v in C.items()}
    return out


def _same_canonical(a: dict, b: dict) -> list:
    bad = []
    for k, x in a.items():
        y = b[k]
        if isinstance(x, dict) and x and isinstance(next(iter(x.values())), np.ndarray):
            bad += [(k, f) for f in x if not np.array_equal(x[f], y[f])]
        elif isinstance(x, np.ndarray):
            if not np.array_equal(x, y):
                bad.append(k)
        elif x != y:
            bad.append(k)
    return bad


def test_all_at_once_equals_merged_tables(sim_results):
    det = M.MarkedTen()
    whole = det.count(from_results(sim_results))
    by_table: dict[str, list] = {}
    for r in sim_results:
        by_table.setdefault(r.deal.table, []).append(r)
    parts = [M.count_results(by_table[t]) for t in sorted(by_table, reverse=True)]
    merged = det.merge(parts)
    assert _same_canonical(_canonical(whole), _canonical(merged)) == []
    # and so the tests: the deals' order in `finalize` is their key's
    a = {t.subject: t.to_json() for t in det.finalize(whole)}
    assert a and a == {t.subject: t.to_json() for t in det.finalize(merged)}


# ---------------------------------------------------------------- speed


@pytest.mark.slow
def test_speed_on_a_hundred_thousand_deals(demo_results):
    cols = from_results(demo_results)
    big = AuditColumns.concat([cols] * 13)
    assert len(big) > 100_000
    det = M.MarkedTen()
    det.count(cols)  # compiled (or loaded from the cache)
    t = time.perf_counter()
    c = det.count(big)
    dt = time.perf_counter() - t
    assert c.n_deals == 13 * det.count(cols).n_deals
    print(f"MarkedTen.count: {len(big)} deals in {dt:.2f} s, {len(big) / dt:,.0f} deals/s")
    assert len(big) / dt > 50_000


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=150), st.booleans())
def test_the_hashes_of_many_names_are_the_spec_hash_of_each(names, repeat):
    """`_hashes` (numba FNV-1a over the UTF-8 bytes joined, from 64 names) is `_str_hash` of each name, then 0:
    any text (empty, accented, outside the BMP), few names and many, names repeated."""
    if repeat:
        names = names * 3
    got = M._hashes(names)
    want = np.array([M._str_hash(x) for x in names] + [0], np.uint64)
    assert got.dtype == np.uint64 and np.array_equal(got, want)


def test_a_name_that_is_not_utf8_is_refused_by_the_fast_hashes_as_by_the_spec():
    names = ["ok"] * 70 + ["bad \ud800"]
    with pytest.raises(UnicodeEncodeError):
        M._str_hash(names[-1])
    with pytest.raises(UnicodeEncodeError):
        M._hashes(names)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=150))
def test_the_game_hashes_of_the_parts_are_the_spec_hash_of_each_name(names):
    """`_name_hashes` (finding the games several parts share) is `_str_hash` of each name, with no trailing 0."""
    got = M._name_hashes(names)
    assert got.dtype == np.uint64 and np.array_equal(got, np.array([M._str_hash(x) for x in names], np.uint64))


def test_the_game_hashes_take_a_lone_surrogate_and_tell_names_apart():
    """A game id read from JSON may hold a lone surrogate (`"\\ud800"`): hashed by its bytes passed through, not
    refused, and different from its neighbours'."""
    got = M._name_hashes(["g\ud800", "g\ud801", "g", "g\ud800"])
    assert len(set(got[:3].tolist())) == 3 and got[0] == got[3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="gab/-0123456789é", max_size=10), min_size=64, max_size=200), st.booleans())
def test_a_string_column_is_ranked_from_its_buffers_as_the_spec_ranks_its_strings(names, surrogate):
    """`StrColumn.__arrow_array__`: `natural_order` of a column (game ids of spilled counts) reads its buffers
    as an Arrow array, and orders it as `natural_key` orders the strings: ASCII names on the fast path, any other
    (an accent, a lone surrogate passed through) by the spec. At least 64 names: fewer never reach the buffers."""
    import pyarrow as pa

    from auditor.columns import _spec_order, natural_order

    if surrogate:
        names = names + ["g\ud800"]
    col = M.StrColumn.of(names)
    assert list(col) == names
    if not surrogate:
        assert pa.array(col, type=pa.string()).to_pylist() == names
    assert np.array_equal(natural_order(col), _spec_order(names))


def test_a_spilled_column_of_game_ids_hashes_from_its_buffer_as_its_names_do():
    names = [f"g/{i}" for i in range(100)] + ["g\ud800", "", "é"]
    assert np.array_equal(M._name_hashes(M.StrColumn.of(names)), M._name_hashes(names))
