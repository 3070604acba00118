"""marked_ten at any size (issue 15): counts spilled to memory-mapped files, merged as a list of parts, and a
finalize that streams over the parts (`finalize_parts`), against the in-memory spec (`score_all` +
`results_from_scores` over the concatenated counts)."""

from __future__ import annotations

import copy
import math
import os
import pickle
import tracemalloc

import numpy as np
import pytest

from auditor.columns import from_results
from auditor.countfile import load_counts, save_counts
from auditor.detectors import marked_ten as M

from test_marked_ten import _pin_season


@pytest.fixture(scope="module")
def season():
    return _pin_season()


@pytest.fixture(scope="module")
def whole(season):
    return M.count_results(season)


@pytest.fixture(scope="module")
def want(whole):
    """The spec: the in-memory finalize of the whole's counts, as it was before issue 15."""
    return [t.to_json() for t in M.results_from_scores(M.score_all(whole), whole)]


def _spilling(path) -> M.MarkedTen:
    det = M.MarkedTen()
    det.spill_dir = str(path)
    return det


def _by_table(season) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in season:
        out.setdefault(r.deal.table, []).append(r)
    return out


def _floats(a, b, path=""):
    """(floats compared, equal bit for bit, where they differ at 6 significant digits) of two JSON trees that must
    be equal in everything else (values below 1e-12 in both taken as equal: rounding around an exact zero)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        got = [_floats(a[k], b[k], f"{path}/{k}") for k in a]
    elif isinstance(a, list):
        assert len(a) == len(b), path
        got = [_floats(x, y, f"{path}/{i}") for i, (x, y) in enumerate(zip(a, b, strict=True))]
    elif isinstance(a, float):
        # a sum that cancels to zero in one order may leave 1e-16 in another (a top deal's contribution): equal
        # at the test's resolution (its sentence reads +0.00 either way)
        near = abs(a) < 1e-12 and abs(b) < 1e-12
        return 1, int(a == b or (math.isnan(a) and math.isnan(b))), [] if near or f"{a:.6g}" == f"{b:.6g}" else [path]
    else:
        assert a == b, (path, a, b)
        return 0, 0, []
    return sum(g[0] for g in got), sum(g[1] for g in got), [p for g in got for p in g[2]]


def test_one_part_spilled_or_not_gives_the_spec_bit_for_bit(season, whole, want, tmp_path):
    """On one part the streamed finalize is the in-memory spec's, every number bit for bit, whether the counts
    are in memory or spilled (counted over the columns, pickled as a worker returns them)."""
    assert want and [t.to_json() for t in M.MarkedTen().finalize(whole)] == want
    det = _spilling(tmp_path / "spill")
    c = det.count(from_results(season))
    assert isinstance(c.source, M.StrColumn) and M._file_of(c.targets["ten"]["cands"]["dec"]) is not None
    assert list(c.source) == whole.source and list(c.games) == whole.games
    blob = pickle.dumps(c)
    assert len(blob) < 50_000  # file names, not rows
    back = pickle.loads(blob)
    assert np.array_equal(back.targets["ten"]["plays"]["cell"], whole.targets["ten"]["plays"]["cell"])
    assert [t.to_json() for t in det.finalize(back)] == want
    assert [t.to_json() for t in M.MarkedTen().finalize(back)] == want  # working files beside the parts
    # the in-memory merge is today's concatenation; a spilled part makes it a list of parts
    assert isinstance(M.MarkedTen().merge([whole, whole]), M.MarkedTenCounts)
    assert isinstance(det.merge([back]), M.MarkedTenParts)


def test_three_parts_of_whole_tables_spilled_match_the_whole(season, want, tmp_path):
    """Three parts of whole tables, spilled, merged as a list and streamed: every number as the whole's to 6
    significant digits, everything else equal (the Newton sums add part by part: only their last bits may
    differ, and the fitted coefficients absorb them)."""
    det = _spilling(tmp_path)
    by = _by_table(season)
    tables = sorted(by)
    groups = [tables[0::3], tables[1::3], tables[2::3]]
    parts = [det.count(from_results([r for t in g for r in by[t]])) for g in groups]
    merged = det.merge(parts)
    assert isinstance(merged, M.MarkedTenParts) and len(merged.parts) == 3
    got = [t.to_json() for t in det.finalize(merged)]
    n, same, off = _floats(want, got)
    print(f"3 parts: {n} floats, {n - same} differ in the last bits, {len(off)} at 6 significant digits")
    assert n > 1000 and off == []
    # the parts in another order: the same tests (up to the last bits again)
    got2 = [t.to_json() for t in det.finalize(det.merge(parts[::-1]))]
    assert _floats(want, got2)[2] == []


def test_time_disjoint_pieces_of_each_table_match_the_whole(season, whole, want, tmp_path):
    """Each table cut in two pieces of its deals (first and second half, as last month's saved counts and this
    month's log): games run across the pieces, so their pre-deal scores are taken from both pieces' ledgers
    (`_shared_game_gates`); the gate, hence every decision count, is the whole's exactly."""
    det = _spilling(tmp_path)
    first, second = [], []
    for rs in _by_table(season).values():
        first += rs[:len(rs) // 2]
        second += rs[len(rs) // 2:]
    parts = [det.count(from_results(first)), det.count(from_results(second))]
    hashes = [M._name_hashes(p.ledger_games) for p in parts]
    fixes = M._shared_game_gates(parts, hashes, "any")
    assert fixes and sum(len(d) for d, _ in fixes.values()) > 0
    # the fix has teeth: gated alone, the pieces' first deals of the split games lose their known score
    g0 = M.score_gate(M.merge_counts([M._reopened(p) for p in parts]))
    alone = np.concatenate([M.score_gate(M._reopened(p)) for p in parts])
    assert not np.array_equal(g0, alone)
    fixed = np.concatenate([M.score_gate(M._reopened(p)) for p in parts])
    for k, (rows, gate) in fixes.items():
        off = sum(parts[j].n_deals for j in range(k))
        fixed[off + rows] = gate
    assert np.array_equal(g0, fixed)
    got = [t.to_json() for t in det.finalize(det.merge(parts))]
    assert _floats(want, got)[2] == []
    for a, b in zip(want, got, strict=True):
        assert a["detail"]["score_gate"]["decisions_gated"] == b["detail"]["score_gate"]["decisions_gated"]


def test_spilled_parts_save_and_load(season, tmp_path):
    """Merged spilled parts save with `countfile` (the rows are read from their files) and load back in memory;
    the loaded parts finalize exactly as the spilled ones, and merge on with new spilled parts."""
    det = _spilling(tmp_path / "spill")
    by = _by_table(season)
    tables = sorted(by)
    parts = [det.count(from_results([r for t in g for r in by[t]])) for g in (tables[:2], tables[2:])]
    merged = det.merge(parts)
    save_counts(tmp_path / "c.counts", {"marked_ten": merged})
    loaded = load_counts(tmp_path / "c.counts")[0]["marked_ten"]
    assert isinstance(loaded, M.MarkedTenParts) and len(loaded.parts) == 2
    assert M._file_of(loaded.parts[0].keys) is None  # in memory
    a = [t.to_json() for t in det.finalize(merged)]
    assert [t.to_json() for t in M.MarkedTen().finalize(loaded)] == a
    again = det.merge([M.MarkedTenParts(loaded.parts[:1]), parts[1]])
    assert [t.to_json() for t in det.finalize(again)] == a


def _renamed(c: M.MarkedTenCounts, k: int) -> M.MarkedTenCounts:
    """The same part as if played by other players at other tables in other games (its spilled arrays
    shared)."""
    out = copy.copy(c)
    out.names = [f"{n}#{k}" for n in c.names]
    out.tables = [f"{n}#{k}" for n in c.tables]
    out.games = M.StrColumn.of([f"{n}#{k}" for n in c.games])
    out.ledger_games = M.StrColumn.of([f"{n}#{k}" for n in c.ledger_games])
    return out


def _finalize_peak(det: M.MarkedTen, parts: list) -> int:
    """The peak of memory traced during `finalize` beyond what it returns (its results: a few per player)."""
    merged = M.MarkedTenParts(parts)
    tracemalloc.start()
    try:
        res = det.finalize(merged)
        cur, peak = tracemalloc.get_traced_memory()
        assert res
        return peak - cur
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("few, many", [(1, 3), pytest.param(2, 8, marks=pytest.mark.slow)])
def test_finalize_memory_does_not_grow_with_the_parts(whole, tmp_path, few, many):
    """At a fixed part size (the season, as played by new players at new tables in new games each time), the
    streamed finalize's working memory (its peak beyond its results) is about the same over `few` parts and over
    `many`; the in-memory working arrays (no spill folder) grow with the parts (the measure has teeth)."""
    det = M.MarkedTen(details=False)
    det.spill_dir = str(tmp_path)
    part = M.spill_counts(copy.deepcopy(whole), str(tmp_path))
    _finalize_peak(det, [_renamed(part, 0)])  # compiled, caches filled
    peaks = {K: _finalize_peak(det, [_renamed(part, k) for k in range(K)]) for K in (few, many)}
    print({K: f"{v / 2**20:.2f} MB" for K, v in peaks.items()})
    assert peaks[many] < 1.3 * peaks[few]
    mem = M.MarkedTen(details=False)
    inmem = {K: _finalize_peak(mem, [_renamed(whole, k) for k in range(K)]) for K in (few, many)}
    print("in memory", {K: f"{v / 2**20:.2f} MB" for K, v in inmem.items()})
    assert inmem[many] > 0.5 * many / few * inmem[few]


@pytest.mark.parametrize("folder", [True, False])
def test_the_store_reads_rows_without_mapping_its_files(tmp_path, folder):
    """`_Store.read_rows` (what the players' sweeps read, issue 15): the rows a0:a1 of every array of a set, equal
    to the slices of `get_all`, as new writable arrays; from files it reads them without mapping the files (a map
    keeps every page it touched resident: some 600 MB of a 10M audit's finalize)."""
    import os

    st = M._Store(str(tmp_path) if folder else None)
    n = 100
    handles = st.put_all({"a": np.arange(n, dtype=np.int64), "b": np.arange(3 * n, dtype=np.float32).reshape(n, 3),
                          "c": (np.arange(n) % 3 == 0)})
    st.put_one(handles, "p", np.linspace(0.0, 1.0, n))
    fds: dict[str, int] = {}

    def fd_of(path: str) -> int:
        if path not in fds:  # (not setdefault: that would open the file again on every call)
            fds[path] = os.open(path, os.O_RDONLY)
        return fds[path]

    try:
        got = {(a0, a1): st.read_rows(handles, a0, a1, fd_of) for a0, a1 in [(0, 0), (0, n), (17, 42), (n - 1, n)]}
        if folder:
            with open("/proc/self/maps") as f:
                assert st.dir is not None and st.dir not in f.read()  # nothing of the store mapped
        whole = st.get_all(handles)
        for (a0, a1), rows in got.items():
            assert list(rows) == list(whole)
            for k, v in rows.items():
                assert v.dtype == whole[k].dtype and v.shape == whole[k][a0:a1].shape
                assert np.array_equal(v, whole[k][a0:a1]) and v.flags.writeable
        del whole
    finally:
        for fd in fds.values():
            os.close(fd)
        st.close()


def test_reopened_counts_map_every_file_afresh_their_strings_too(whole, tmp_path):
    """`_reopened` (what each pass of the streamed finalize reads): every spilled array, the per-deal and per-game
    strings' buffers included, is a new map of the same file, so the pages a pass touches go when it drops them.
    (Issue 15: the `StrColumn`s were shared, and the games' names read through them stayed resident, some 3 MB a
    part of the 1M season.)"""
    c = M.spill_counts(copy.deepcopy(whole), str(tmp_path))
    r = M._reopened(c)
    seen = 0
    for name in M.STR_FIELDS:
        a, b = getattr(c, name), getattr(r, name)
        assert isinstance(b, M.StrColumn)
        for x, y in ((a.data, b.data), (a.off, b.off)):
            if not x.size:
                continue
            seen += 1
            assert M._file_of(y) == M._file_of(x) is not None
            assert np.shares_memory(x, x) and not np.shares_memory(x, y)  # another map of the same file
        assert list(b) == list(a)
    assert seen >= 4
    assert M._file_of(r.keys) == M._file_of(c.keys) and not np.shares_memory(r.keys, c.keys)
    assert np.array_equal(r.keys, c.keys)


def test_the_finalize_store_writes_a_fold_over_the_last_folds_file(tmp_path):
    """`_Store.put_into`: an array of the same dtype and shape goes into the file the handle names (no new file:
    a fold's seat sums and posterior over the last fold's), read back as written; another shape, or a store in
    memory, is a plain `put`."""
    st = M._Store(str(tmp_path))
    h = st.put(np.arange(1000, dtype=float))
    files = sorted(os.listdir(st.dir))
    again = np.linspace(-3.0, 7.0, 1000)
    assert st.put_into(h, again) == h and np.array_equal(st.get(h), again)
    assert sorted(os.listdir(st.dir)) == files
    other = st.put_into(h, np.arange(10, dtype=np.int64))
    assert other != h and np.array_equal(st.get(other), np.arange(10)) and np.array_equal(st.get(h), again)
    assert st.put_into(None, np.ones(3))[0] != h[0]
    mem = M._Store(None)
    x = np.ones(4)
    assert mem.put_into(None, x) is x
    st.close()


@pytest.mark.parametrize("folder", [True, False])
def test_the_store_writes_a_set_from_its_arrays_and_zeros_by_length(tmp_path, folder):
    """`_Store.put_all` writes each array of a set from the array itself, padded to 64 bytes, and `_Store.zeros`
    makes a file of zeros by its length (issue 15, a twenty-ninth session): both read back as `put` of the same
    arrays would, in a folder and in memory, the empty set and the empty array included."""
    st = M._Store(str(tmp_path) if folder else None)
    arrays = {"a": np.arange(7, dtype=np.int64), "b": np.arange(30, dtype=np.float32).reshape(10, 3),
              "c": np.zeros(0, np.int32), "d": np.arange(5) % 2 == 0, "e": np.arange(6, dtype=np.int16)[::2]}
    h = st.put_all(arrays)
    got = st.get_all(h)
    assert list(got) == list(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v)
    if folder:
        blob = h[""]
        size = os.path.getsize(blob.handle[0])
        assert size == blob.handle[2][0] == sum(-(-v.nbytes // 64) * 64 for v in arrays.values())
        with open(blob.handle[0], "rb") as f:
            raw = f.read()
        assert raw[56:64] == bytes(8) and raw[64:64 + 120] == arrays["b"].tobytes()  # a's padding, then b
    assert st.get_all(st.put_all({})) == {}
    for n in (0, 1, 1000):
        z = st.get(st.zeros(n))
        assert z.dtype == np.float64 and z.shape == (n,) and not z.any()
    h2 = st.zeros(50)
    again = np.linspace(0.0, 1.0, 50)
    assert np.array_equal(st.get(st.put_into(h2, again)), again)
    st.close()


def test_two_processes_give_the_one_process_finalize_bit_for_bit(season, tmp_path, monkeypatch):
    """Where its process may fork a helper (`pools.allow_helpers`: a test's own fresh process), the finalize over
    parts runs its targets' fits and its players' tests in two processes (`_Run.fit_in_two`, `results(helper=
    True)`): every number is the one process's bit for bit, and the helper did run (two forks: the fits, the
    players)."""
    det = _spilling(tmp_path)
    by = _by_table(season)
    tables = sorted(by)
    parts = [det.count(from_results([r for t in tables[i::3] for r in by[t]])) for i in range(3)]
    merged = det.merge(parts)
    one = [t.to_json() for t in det.finalize(merged)]
    monkeypatch.setattr(M, "HELPER_MIN_DEALS", 1)
    forks: list[str] = []
    real = M.fork_helper

    def counted(fn, folder, name):
        forks.append(name)
        return real(fn, folder, name)

    monkeypatch.setattr(M, "fork_helper", counted)
    assert [t.to_json() for t in det.finalize(merged)] == one and forks == []  # not allowed here: one process
    two = M.finalize_parts(merged.parts, work_dir=str(tmp_path), helper=True)
    assert len(forks) == 2  # the fits, then the players
    assert [t.to_json() for t in two] == one
    assert len(one) > 10
    run = M._Run(merged.parts, 5, M.TARGETS, "any", M._Store(str(tmp_path)))
    run.prepare()
    assert 0 < run._cut() < len(run.players)
    assert sorted(run.work(t) > 0 for t in run.targets) == [True] * 4
    run.store.close()
