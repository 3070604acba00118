"""Parts of whole tables (issue 15, `auditor.parts`): split, replay each part, merge = the direct replay.

The merged replay document is byte for byte the direct one, and the union of the parts' tables is the direct table
row for row (sorted by `order`, the global canonical rank, `order` values included)."""

from __future__ import annotations

import gzip
import os

import numpy as np
import orjson
import pytest

from auditor.columns import AuditColumns
from auditor.fast.audit_cols import reorder
from auditor.fast.convert import convert_file
from auditor.fast.pipeline import replay_paths
from auditor.parts import WORK_BASE, bucket_of, merge_replays, replay_part, split_input
from auditor.replay.result import dump_document
from auditor.select import Selection
from auditor.testing.generate import Style, random_game, random_log


def _dumps(recs: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def _interleave(rng: np.random.Generator, games: list[list[dict]]) -> list[dict]:
    """The deals of several games in one stream, each game's deals in order (as a room logs its tables)."""
    out: list[dict] = []
    pos = [0] * len(games)
    live = [i for i, g in enumerate(games) if g]
    while live:
        i = live[int(rng.integers(len(live)))]
        out.append(games[i][pos[i]])
        pos[i] += 1
        if pos[i] == len(games[i]):
            live.remove(i)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Four files, many tables: Scotch Whist and All Fours, a table spread over two files, a table with a single
    deal, a bad line and an unparseable record, JSON Lines (plain and gzip) and Parquet."""
    d = tmp_path_factory.mktemp("parts_in")
    rng = np.random.default_rng(15)
    style = Style(with_time=True)
    sw = [random_log(rng, 6, table=f"club-{t}", style=style, id_prefix=f"c{t}-") for t in (1, 2, 10, 11)]
    af = [random_log(rng, 4, game="all_fours", preset="foster",
                     n=2, sides=None, table=f"af-{t}", style=style, id_prefix=f"af{t}-") for t in (3, 30)]
    solo = random_game(rng, "scotch_whist", "foster", 4, game_id="solo-1", table="solo", max_deals=1)
    a = _interleave(rng, [sw[0], sw[1][: len(sw[1]) // 2], af[0]])
    b = _interleave(rng, [sw[2], af[1]])
    c = _interleave(rng, [sw[3], sw[1][len(sw[1]) // 2:]]) + solo
    p1 = d / "a.jsonl"
    lines = _dumps(a).split(b"\n")
    lines.insert(5, b"{not json")
    lines.insert(9, orjson.dumps({"format": "deal-log/1", "game": "scotch_whist", "table": "club-1"}))
    p1.write_bytes(b"\n".join(lines))
    p2 = d / "b.jsonl.gz"
    p2.write_bytes(gzip.compress(_dumps(b)))
    src = d / "c.jsonl"
    src.write_bytes(_dumps(c) + b'{"format": "deal-log/1", "game_id": 7}\n')
    p3 = d / "c.parquet"
    convert_file(str(src), str(p3))
    p4 = d / "d.jsonl"
    sheet = {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "sheet-1",  # a score
             "game_id": "sheet-1/1", "deal_no": 1, "players": ["ann", "bob", "cy", "dee"],  # sheet's row: read the
             "sides": [[0, 2], [1, 3]], "dealer": 3, "turn_up": "7d",  # slow way, a deal all the same
             "recorded": {"points": [30, 2], "totals": [30, 2]}, "observed": {"jack": 2, "ten": 2}}
    p4.write_bytes(_dumps(random_log(rng, 2, table="club-2", style=style, id_prefix="late-")) + orjson.dumps(sheet)
                   + b"\n")
    return [str(p1), str(p2), str(p3), str(p4)]


def _sorted_table(c: AuditColumns) -> AuditColumns:
    return reorder(c, np.argsort(c.order, kind="stable"))


def _check(paths: list[str], workdir: str, part_deals: int, min_parts: int = 3, buckets: int = 64,
           pieces: int = 1) -> None:
    direct = replay_paths(paths, table=True)
    parts = split_input(paths, workdir, part_deals, buckets=buckets, helper=pieces > 1, helper_min_rows=0)
    assert parts.pieces == pieces
    assert not parts.single
    assert len(parts) >= min_parts
    reps = [replay_part(parts, k) for k in reversed(range(len(parts)))]  # any order
    tables = [r.table for r in reps]
    for r in reps:
        r.table = None
    merged = merge_replays(reps)
    assert dump_document(merged.to_json()) == dump_document(direct.to_json())
    assert merged.to_json_bytes() == direct.to_json_bytes()
    assert merged.stats == direct.stats
    assert direct.table is not None
    union = AuditColumns.concat([t for t in tables if t is not None])
    assert sorted(union.order.tolist()) == list(range(len(direct.table)))
    assert _sorted_table(union).equal(_sorted_table(direct.table)) == []
    assert sum(parts.table_deals.values()) == len(direct.table)
    work: dict[str, int] = {}  # each table's work for the parts' balance: WORK_BASE plus the players, per deal
    for t, n in zip(direct.table.table.tolist(), direct.table.n.tolist(), strict=True):
        work[direct.table.tables[t]] = work.get(direct.table.tables[t], 0) + WORK_BASE + n
    assert parts.table_work == work
    parts.cleanup()
    assert not os.listdir(workdir)


def test_parts_merge_to_the_direct_replay(inputs: list[str], tmp_path) -> None:
    _check(inputs, str(tmp_path / "w"), part_deals=25)


def test_one_bucket_per_table_and_one_table_per_part(inputs: list[str], tmp_path) -> None:
    _check(inputs, str(tmp_path / "w"), part_deals=1, min_parts=5, buckets=256)


def test_tables_of_one_bucket_go_to_parts_of_their_own(inputs: list[str], tmp_path) -> None:
    """Every table's name hashed to the one bucket: the parts are still made of tables (units), each part reading
    only its own units' rows of the shared bucket file (issue 15, a twenty-fifth session: at 10M deals two tables
    in one of 256 buckets made a part of 228,339 deals, larger than any table)."""
    from auditor.parts import LOOSE, unit_of

    _check(inputs, str(tmp_path / "w"), part_deals=1, min_parts=9, buckets=1)
    parts = split_input(inputs, str(tmp_path / "p"), 1, buckets=1)
    names = {unit_of(t): t for t in parts.table_deals}
    assert len(names) == len(parts.table_deals) == 8
    assert sorted(u for g in parts.parts for u in g) == sorted([*names, LOOSE])  # each unit in one part
    assert all(len(g) == 1 for g in parts.parts)
    assert len(os.listdir(tmp_path / "p")) == 1  # one bucket file for all of them
    parts.cleanup()
    # parts of about 40 deals: whole tables, the union of their tables every table once
    parts = split_input(inputs, str(tmp_path / "q"), 40, buckets=1)
    assert len(parts) > 2
    seen = [names[u] for g in parts.parts for u in g if u != LOOSE]
    assert sorted(seen) == sorted(parts.table_deals)
    for g in parts.parts:
        assert len(g) == 1 or sum(parts.table_deals[names[u]] for u in g if u != LOOSE) <= 40
    parts.cleanup()
    _check(inputs, str(tmp_path / "w2"), part_deals=40, min_parts=3, buckets=1)


def test_parts_depend_only_on_the_input_and_size(inputs: list[str], tmp_path) -> None:
    a = split_input(inputs, str(tmp_path / "a"), 25, buckets=64)
    b = split_input(inputs, str(tmp_path / "b"), 25, buckets=64)
    assert a.parts == b.parts and a.table_offset == b.table_offset and a.table_deals == b.table_deals
    assert a.table_offset["club-2"] < a.table_offset["club-10"]  # natural order of table names
    assert a.table_deals["solo"] == 1
    assert [bucket_of(t, 64) for t in ("club-1", "af-3")] == [bucket_of(t, 64) for t in ("club-1", "af-3")]
    # bad records (no table) are the unit LOOSE, in bucket 0, in one part
    assert sum(g.count(0) for g in a.parts) == 1


def test_small_input_is_one_part_of_the_original_paths(inputs: list[str], tmp_path) -> None:
    parts = split_input(inputs, str(tmp_path / "w"), 10 ** 6)
    assert parts.single and len(parts) == 1
    rep = replay_part(parts, 0)
    assert rep.to_json_bytes() == replay_paths(inputs).to_json_bytes()
    assert merge_replays([rep]) is rep
    assert not (tmp_path / "w").exists() or not os.listdir(tmp_path / "w")


def test_small_gzip_input_read_once_then_one_part(inputs: list[str], tmp_path) -> None:
    gz = [p for p in inputs if p.endswith(".gz")]
    parts = split_input(gz, str(tmp_path / "w"), 10 ** 6)  # a gzip file cannot be counted before reading
    assert parts.single and parts.records > 0
    assert not os.listdir(tmp_path / "w")


def test_split_tells_the_size_before_the_pass_when_it_is_known(inputs: list[str], tmp_path) -> None:
    """`sized` (the audit starts its fork server then, while the input is split): called once with the count of
    Parquet metadata and plain lines before the pass; not for a small input (one part), nor when a gzip file
    cannot be counted."""
    plain = [p for p in inputs if not p.endswith(".gz")]
    want = sum(len(open(p, "rb").read().splitlines()) for p in plain if p.endswith(".jsonl"))
    want += sum(pq_rows(p) for p in plain if p.endswith(".parquet"))
    told: list[int] = []
    split_input(plain, str(tmp_path / "a"), 25, sized=told.append)
    assert told == [want]
    told.clear()
    split_input(plain, str(tmp_path / "b"), 10 ** 6, sized=told.append)
    assert told == []
    split_input(inputs, str(tmp_path / "c"), 25, sized=told.append)  # one of them gzip: unknown before the pass
    assert told == []


def pq_rows(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def test_selection_parts(inputs: list[str], tmp_path) -> None:
    sel = Selection(games=("all_fours",))
    direct_sel = Selection(games=("all_fours",))
    from auditor.select import selected_chunks

    direct = replay_paths(inputs, table=True, chunks=selected_chunks(direct_sel))
    parts = split_input(inputs, str(tmp_path / "w"), 10, selection=sel, buckets=64)
    assert len(parts) >= 2
    merged = merge_replays([replay_part(parts, k) for k in range(len(parts))])
    assert merged.to_json_bytes() == direct.to_json_bytes()
    assert sel.summary() == direct_sel.summary()


def test_merged_replay_writes_its_games_piece_by_piece(inputs: list[str], tmp_path, monkeypatch) -> None:
    """`Replay.write_json` of a merged replay streams the games entries and the findings block by block (small
    blocks here): the bytes of the direct document, and neither is joined or made into objects in memory."""
    import io

    from auditor import parts as P

    monkeypatch.setattr(P, "ENTRY_BATCH", 3)
    direct = replay_paths(inputs)
    parts = split_input(inputs, str(tmp_path / "w"), 25, buckets=64)
    merged = merge_replays([replay_part(parts, k, table=False) for k in range(len(parts))])

    def joined(self):  # noqa: ANN001, ANN202
        raise AssertionError("the merged games summary was joined")

    monkeypatch.setattr(P.MergedGames, "json_buffer", joined)
    monkeypatch.setattr(P.MergedGames, "json_entries", joined)
    # the findings too are written out by the parts and spliced in, never held as objects (issue 15)
    assert isinstance(merged.findings, P.MergedFindings) and len(merged.findings) == len(direct.findings) > 0
    assert list(merged.findings) == list(direct.findings)

    def held(self):  # noqa: ANN001, ANN202
        raise AssertionError("the merged findings were made into objects")

    monkeypatch.setattr(P.MergedFindings, "__iter__", held)
    sizes: list[int] = []

    class Out(io.BytesIO):
        def write(self, b) -> int:  # noqa: ANN001
            sizes.append(len(b))
            return super().write(b)

    out = Out()
    merged.write_json(out)
    assert out.getvalue() == direct.to_json_bytes()
    # head, then one write per merged block (at most a block of 3 from each part), tail
    assert len(sizes) > 2 + len(merged.games_summary) // (3 * len(parts))
    parts.cleanup()


def test_merged_entries_are_a_k_way_merge_of_the_parts(tmp_path, monkeypatch) -> None:
    """`_MergedEntries` holds a block of each part, not the keys of all: its entries are those of the sort by (file
    index, line, part), each part's own order kept, whatever the blocks; equal keys that run over a block's end and
    over several parts included (a line with several findings)."""
    import pyarrow as pa

    from auditor import parts as P

    rng = np.random.default_rng(5)
    for batch in (1, 2, 3, 7, 1000):
        monkeypatch.setattr(P, "ENTRY_BATCH", batch)
        files, rows = [], []
        for j in range(4):
            n = int(rng.integers(0, 40))
            fi = np.sort(rng.integers(0, 2, n))
            line = np.zeros(n, np.int64)
            for f in (0, 1):  # lines in order within a file, with repeats
                m = fi == f
                line[m] = np.sort(rng.integers(0, 12, int(m.sum())))
            ents = [b",\n    " + f"[{j},{i}]".encode() for i in range(n)]
            path = str(tmp_path / f"e{batch}-{j}.arrow")
            P._write_entries(path, pa.array(ents, pa.large_binary()), fi, line)
            files.append(P.PartFindings(path, n))
            rows += [(int(fi[i]), int(line[i]), j, i, ents[i]) for i in range(n)]
        want = [r[4] for r in sorted(rows, key=lambda r: r[:4])]
        got = b"".join(P._MergedEntries(files).json_pieces())
        assert got == (b"".join(want)[2:] if want else b""), batch


def _hive_dataset(tmp_path) -> list[str]:
    """A hive-style dataset (`table=T/part-0.parquet`, the table column dropped from the files), in input order."""
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    pq = pytest.importorskip("pyarrow.parquet")
    from auditor.inputs import expand_inputs

    rng = np.random.default_rng(8)
    recs: list[dict] = []
    tables = ("club-7", "club-10", "club 2", "af-1")
    for t in tables:
        game = "all_fours" if t.startswith("af") else "scotch_whist"
        recs += random_log(rng, 3, game=game, n=4 if game == "scotch_whist" else 2,
                           sides=None if game == "all_fours" else "random", table=t, id_prefix=f"{t}-",
                           style=Style(with_time=True))
    src = tmp_path / "all.jsonl"
    src.write_bytes(_dumps(recs))
    whole = tmp_path / "all.parquet"
    convert_file(str(src), str(whole))
    table = pq.read_table(whole)
    for t in tables:
        d = tmp_path / "ds" / f"table={t.replace(' ', '%20')}"
        d.mkdir(parents=True)
        part = table.filter(pc.equal(table.column("table"), t)).drop_columns(["table"])
        pq.write_table(part, str(d / "part-0.parquet"), row_group_size=7)
    files = expand_inputs([tmp_path / "ds"])
    assert len(files) == len(tables) and "table" not in pq.read_schema(files[0]).names
    assert pa is not None
    return files


def test_hive_dataset_parts(tmp_path) -> None:
    """A Parquet dataset whose table is in its directories: the split's batches get it back (parquet.hive_values)."""
    files = _hive_dataset(tmp_path)
    _check(files, str(tmp_path / "w"), part_deals=1, min_parts=2, buckets=64)


def test_parquet_columns_of_other_types(inputs: list[str], tmp_path) -> None:
    """A Parquet file of the layout written with other column types: plain strings for the dictionary columns and
    int64 numbers are cast to the spill's types; a dealer out of int8's range cannot be cast, and that batch is
    spilled as rebuilt rows (its bad record as the direct run reports it)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    src = [p for p in inputs if p.endswith(".parquet")][0]
    t = pq.read_table(src)
    cols = {}
    for f in t.schema:
        c = t.column(f.name)
        if pa.types.is_dictionary(f.type):
            c = c.cast(pa.string())
        elif f.name in ("deal_no", "dealer"):
            c = c.cast(pa.int64())
        cols[f.name] = c
    plain = pa.table(cols)
    a = tmp_path / "plain.parquet"
    pq.write_table(plain, str(a), row_group_size=10)
    dealer = plain.column("dealer").to_pylist()
    i = next(j for j, v in enumerate(dealer) if v is not None)
    dealer[i] = 300
    b = tmp_path / "dealer.parquet"
    pq.write_table(plain.set_column(plain.schema.get_field_index("dealer"), "dealer", pa.array(dealer, pa.int64())),
                   str(b), row_group_size=10)
    direct = replay_paths([str(b)])
    assert any(f.code == "bad_record" and f.source == f"{b}:{i + 1}" for f in direct.findings)
    _check([str(a), str(b)], str(tmp_path / "w"), part_deals=10, min_parts=2, buckets=64)


# -- the split in two processes (issue 15, a twenty-third session)


@pytest.fixture(scope="module")
def row_groups(inputs: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The inputs as Parquet files of the layout in row groups of 7 rows: the JSON Lines ones converted (their bad
    line and bad record become rows of `raw`), the Parquet one as it is. Tables spread over files and row groups."""
    d = tmp_path_factory.mktemp("row_groups")
    out = []
    for p in inputs:
        if p.endswith(".parquet"):
            out.append(p)
            continue
        dst = d / (os.path.basename(p).split(".")[0] + ".parquet")
        convert_file(p, str(dst), rows=7)
        out.append(str(dst))
    return out


def _bucket_rows(parts, b: int):  # noqa: ANN001, ANN202
    """A bucket's spilled rows, its pieces in order, as one table (None without rows)."""
    import pyarrow as pa

    batches = []
    for piece in range(parts.pieces):
        path = parts.bucket_path(b, piece)
        if os.path.exists(path):
            with pa.OSFile(path, "rb") as f:
                batches.extend(pa.ipc.open_stream(f))
    return pa.Table.from_batches(batches).combine_chunks() if batches else None


def _same_split(one, two) -> None:  # noqa: ANN001
    assert (one.parts, one.table_deals, one.table_offset, one.table_work, one.records) == (
        two.parts, two.table_deals, two.table_offset, two.table_work, two.records)
    for b in range(one.buckets):
        a, c = _bucket_rows(one, b), _bucket_rows(two, b)
        assert (a is None) == (c is None), b
        if a is not None:
            assert a.equals(c), b


def test_split_in_two_processes_spills_what_one_pass_spills(row_groups: list[str], tmp_path) -> None:
    """The input cut at the row group boundary nearest its middle, the second piece split by a process from the
    fork server into bucket files of its own: every bucket holds the rows of one pass, in the same order (the
    first piece's, then the second's), bad records included; within one file cut in two as across files."""
    from auditor.parts import _pieces_plan

    pq = pytest.importorskip("pyarrow.parquet")
    big = max(row_groups, key=lambda p: pq.ParquetFile(p).metadata.num_row_groups)
    for paths in ([big], row_groups):
        plan = _pieces_plan(paths, 0)
        assert plan is not None and plan[0] and plan[1]
        if paths == [big]:
            assert plan[0][-1][0] == plan[1][0][0] == 0 and plan[0][-1][2] == plan[1][0][1]  # cut inside the file
        one = split_input(paths, str(tmp_path / "one"), 25, buckets=64)
        told: list[int] = []  # the progress: both processes' rows, never backwards, all of them at the end
        two = split_input(paths, str(tmp_path / "two"), 25, buckets=64, helper=True, helper_min_rows=0,
                          progress=told.append)
        assert (one.pieces, two.pieces) == (1, 2)
        assert told == sorted(told) and told[-1] == two.records
        assert any(os.path.exists(two.bucket_path(b, 1)) for b in range(64))
        _same_split(one, two)
        two.cleanup()
        assert not os.listdir(tmp_path / "two")
        one.cleanup()
    # and so the parts replay to the direct run, also when every table shares the one bucket (each part then
    # takes its own tables' rows from both pieces' files)
    _check(row_groups, str(tmp_path / "w"), part_deals=25, pieces=2)
    _check(row_groups, str(tmp_path / "w1"), part_deals=25, pieces=2, buckets=1)
    # below the threshold, or for an input that is not all Parquet in the layout, one pass
    assert split_input(row_groups, str(tmp_path / "x"), 25, helper=True, helper_min_rows=10 ** 6).pieces == 1
    assert _pieces_plan(row_groups + [inputs_jsonl(row_groups)], 0) is None


def inputs_jsonl(row_groups: list[str]) -> str:
    """A JSON Lines file beside the Parquet ones (the split of such an input stays in one process)."""
    p = os.path.join(os.path.dirname(row_groups[0]), "one.jsonl")
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(b"{}\n")
    return p


def test_split_in_two_processes_falls_back_to_one_pass_on_a_damaged_file(row_groups: list[str], tmp_path,
                                                                          monkeypatch) -> None:
    """A row group damaged after the metadata was read: the piece that meets it says so, and the whole input is
    split again in one pass, which reports the damage as the direct run does (the same parts, rows and finding)."""
    from auditor import parts as P

    pq = pytest.importorskip("pyarrow.parquet")
    tried: list = []
    real = P._split_in_pieces
    monkeypatch.setattr(P, "_split_in_pieces", lambda *a: tried.append(real(*a)) or tried[-1])
    big = max(row_groups, key=lambda p: pq.ParquetFile(p).metadata.num_row_groups)
    md = pq.ParquetFile(big).metadata
    col = md.row_group(md.num_row_groups * 3 // 4).column(3)
    data = bytearray(open(big, "rb").read())
    for i in range(col.data_page_offset, col.data_page_offset + min(col.total_compressed_size, 64)):
        data[i] = 0xAB
    bad = tmp_path / "damaged.parquet"
    bad.write_bytes(bytes(data))
    paths = [str(bad)] + [p for p in row_groups if p != big]
    one = split_input(paths, str(tmp_path / "one"), 5, buckets=64)
    two = split_input(paths, str(tmp_path / "two"), 5, buckets=64, helper=True, helper_min_rows=0)
    assert two.pieces == 1 and tried == [None]  # cut in two, then split again in one pass
    _same_split(one, two)
    direct = replay_paths(paths)
    merged = merge_replays([replay_part(two, k, table=False) for k in range(len(two))])
    assert merged.to_json_bytes() == direct.to_json_bytes()
    assert any("cannot read as Parquet" in f.message or "unreadable" in f.message for f in direct.findings)
