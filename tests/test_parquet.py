"""deal-log/1 in Parquet: the layout, lossless both ways, streamed reading, and the replay from Parquet."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor import parquet  # noqa: E402
from auditor.dealog import read_records, validate  # noqa: E402
from auditor.errors import RecordError  # noqa: E402
from auditor.fast.convert import convert_file  # noqa: E402
from auditor.fast.pipeline import replay_paths  # noqa: E402
from auditor.replay.run import replay_records  # noqa: E402
from auditor.testing.generate import PLAYER_COUNTS, Style, random_log  # noqa: E402
from auditor.testing.mutate import mutate_log, to_jsonl  # noqa: E402


def _mixed_log(seed: int, games: int = 3) -> list:
    rng = np.random.default_rng(seed)
    lines = []
    for (game, preset), counts in PLAYER_COUNTS.items():
        for n in counts:
            recs = random_log(rng, games, game=game, preset=preset, n=n, id_prefix=f"{game}-{preset}-{n}-",
                              style=Style(revoke_rate=0.03, claim_revokes=0.5, extra_field=True, with_time=True))
            lines += mutate_log(rng, recs, rate=0.4)
    return lines


def _canonical_lines(data: bytes) -> list[bytes]:
    """What a lossless conversion must give back: canonical records, other lines byte for byte, no blanks."""
    out = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            out.append(orjson.dumps(validate(orjson.loads(raw)).to_canonical()))
        except (RecordError, orjson.JSONDecodeError):
            out.append(raw)
    return out


def _norm(doc: dict, name: str) -> dict:
    return json.loads(json.dumps(doc).replace(name, "LOG"))


def test_layout_and_metadata(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(to_jsonl(random_log(np.random.default_rng(1), 2, n=4, sides=[[0, 2], [1, 3]])))
    out = tmp_path / "a.parquet"
    convert_file(str(src), str(out))
    pf = pq.ParquetFile(out)
    meta = pf.schema_arrow.metadata
    assert meta[b"deal-log"] == b"deal-log/1" and meta[b"auditor.layout"] == b"2"
    t = pf.read()
    assert t.schema.field("claims").type == pa.string()
    assert t.schema.field("hands").type == pa.binary()
    assert t.schema.field("turn_up").type == pa.uint8()
    assert pa.types.is_dictionary(t.schema.field("game_id").type)
    row = t.slice(0, 1).to_pylist()[0]
    first = orjson.loads(src.read_bytes().split(b"\n")[0])
    from auditor.cards import parse_card

    assert list(row["hands"]) == [parse_card(c) for h in first["hands"] for c in h]
    assert list(row["hand_lens"]) == [len(h) for h in first["hands"]]
    assert list(row["trick_lens"]) == [len(t) for t in first["tricks"]]
    assert row["raw"] is None and row["rec_points"] == first["recorded"]["points"]


@pytest.mark.parametrize("seed", [1, 2])
def test_round_trip_is_lossless(tmp_path, seed):
    """JSONL -> Parquet -> JSONL gives the canonical records and every bad line byte for byte; Parquet ->
    JSONL -> Parquet -> JSONL is stable; so is .jsonl.gz."""
    data = to_jsonl(_mixed_log(seed)) + b"\n\n" + b"\xff\xfe not utf-8\n" + b'{"format": "deal-log/1"'
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    p1, j1, p2, g2, j3, p3 = (tmp_path / x for x in ("1.parquet", "1.jsonl", "2.parquet", "2.jsonl.gz", "3.jsonl",
                                                     "3.parquet"))
    r = convert_file(str(src), str(p1))
    assert not r.lost and r.raw > 0
    convert_file(str(p1), str(j1))
    want = _canonical_lines(data)
    got = j1.read_bytes().split(b"\n")
    assert got[-1] == b"" and got[:-1] == want
    convert_file(str(j1), str(p2))
    convert_file(str(p2), str(g2))
    convert_file(str(g2), str(j3))
    assert j3.read_bytes() == j1.read_bytes()
    convert_file(str(j3), str(p3))  # from canonical JSONL the Parquet rows are the same
    assert pq.read_table(p2).to_pylist() == pq.read_table(p3).to_pylist()


def test_unknown_fields_survive(tmp_path):
    recs = random_log(np.random.default_rng(3), 2, n=4, style=Style(extra_field=True, with_time=True))
    recs[0]["zz_note"] = "é ☃"
    recs[1]["pack"] = "blue"
    recs[1]["cutter"] = 2
    src, mid, back = tmp_path / "a.jsonl", tmp_path / "a.parquet", tmp_path / "b.jsonl"
    src.write_bytes(to_jsonl(recs))
    convert_file(str(src), str(mid))
    convert_file(str(mid), str(back))
    objs = [orjson.loads(x) for x in back.read_bytes().splitlines()]
    assert objs[0]["zz_note"] == "é ☃" and objs[0]["room_note"] == recs[0]["room_note"]
    assert objs[1]["pack"] == "blue" and objs[1]["cutter"] == 2 and objs[1]["time"] == recs[1]["time"]
    assert objs == [validate(r).to_canonical() for r in recs]


def test_replay_from_parquet_equals_replay_from_jsonl(tmp_path):
    """Same records, same findings and games (sources say file:row); the reference reader of Parquet rows and
    the column pipeline agree."""
    lines = _mixed_log(4)
    src, pqt = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    src.write_bytes(to_jsonl(lines))
    convert_file(str(src), str(pqt))
    ref_jsonl = replay_records(read_records([str(src)]), "reference").to_json()
    ref_pq = replay_records(read_records([str(pqt)]), "reference").to_json()
    fast_pq = replay_paths([str(pqt)]).to_json()
    assert fast_pq == ref_pq
    assert _norm(ref_pq, str(pqt)) == _norm(ref_jsonl, str(src))
    assert any(f["source"] == f"{pqt}:1" or f["source"].startswith(f"{pqt}:") for f in fast_pq["findings"])


def test_rows_are_numbered_from_one_across_batches(tmp_path):
    lines = _mixed_log(5, games=2)
    src, pqt = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    src.write_bytes(to_jsonl(lines))
    convert_file(str(src), str(pqt), rows=20)  # many row groups
    assert pq.ParquetFile(pqt).metadata.num_row_groups > 3
    recs = list(read_records([str(pqt)]))
    assert [r.line for r in recs] == list(range(1, len(lines) + 1))
    reg_docs = [replay_paths([str(pqt)]).to_json()]
    import auditor.parquet as P

    chunks = list(P.iter_parquet_chunks(str(pqt), 0, __import__("auditor.fast.cols", fromlist=["Registry"]).Registry(),
                                        rows=7))
    assert max(c.n for c in chunks) <= 7 and sum(c.n for c in chunks) == len(lines)
    assert reg_docs[0]["deals"] == len(lines)


def test_foreign_rows_that_break_the_schema_are_bad_records(tmp_path):
    """A Parquet file written by someone else in this layout, with values the columns allow but deal-log/1
    does not: the reader reports each as the JSONL reader would."""
    src, pqt = tmp_path / "a.jsonl", tmp_path / "a.parquet"
    src.write_bytes(to_jsonl(random_log(np.random.default_rng(6), 1, n=4)))
    convert_file(str(src), str(pqt))
    t = pq.read_table(pqt)
    n = t.num_rows
    dealer = pa.array([9] + [0] * (n - 1), pa.int8())  # a seat out of range in the first row
    t2 = t.set_column(t.schema.get_field_index("dealer"), "dealer", dealer)
    bad = tmp_path / "bad.parquet"
    pq.write_table(t2, bad)
    recs = list(read_records([str(bad)]))
    assert recs[0].deal is None and "dealer" in recs[0].error and recs[0].source == f"{bad}:1"
    doc = replay_paths([str(bad)]).to_json()
    assert doc == replay_records(read_records([str(bad)]), "reference").to_json()
    assert doc["findings"][0]["code"] == "bad_record" and doc["findings"][0]["source"] == f"{bad}:1"


def test_not_a_deal_log_parquet_file(tmp_path):
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), other)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    for path in (other, junk):
        recs = list(read_records([str(path)]))
        assert len(recs) == 1 and recs[0].deal is None and recs[0].line is None
        doc = replay_paths([str(path)]).to_json()
        assert doc["deals"] == 1 and doc["findings"][0]["code"] == "bad_record"
        assert doc["findings"][0]["source"] == str(path)


def test_reading_is_streamed(tmp_path):
    """The reader asks pyarrow for record batches, never the whole table."""
    src, pqt = tmp_path / "a.jsonl", tmp_path / "a.parquet"
    src.write_bytes(to_jsonl(random_log(np.random.default_rng(8), 30, n=4)))
    convert_file(str(src), str(pqt), rows=16)
    seen = []
    orig = pq.ParquetFile.iter_batches

    def spy(self, *a, **k):
        for b in orig(self, *a, **k):
            seen.append(b.num_rows)
            yield b

    pq.ParquetFile.iter_batches = spy
    try:
        list(parquet.iter_parquet_chunks(str(pqt), 0, __import__("auditor.fast.cols", fromlist=["x"]).Registry(),
                                         rows=10))
    finally:
        pq.ParquetFile.iter_batches = orig
    assert seen and max(seen) <= 10 and sum(seen) == pq.ParquetFile(pqt).metadata.num_rows


def test_parquet_audit_table_keeps_time(tmp_path):
    """The audit's table of a Parquet log has the deals' time, as that of the same log in JSON Lines: the same
    `time` column and the same canonical `order` (time is its second key: game 'g1' started before 'g0' here, so
    a table without time would put 'g0' first)."""
    from auditor.columns import TIME_NONE

    rng = np.random.default_rng(15)
    recs = random_log(rng, 2, table="t1", id_prefix="g", style=Style(with_time=True))
    recs += random_log(rng, 1, table="t2", id_prefix="h", style=Style(with_time=True))
    for r in recs:  # g0 starts a day after g1; t2's deals keep the generator's times
        if r["game_id"] == "g0":
            r["time"] = r["time"].replace("2026-01-01", "2026-01-02")
    src, pqt = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    src.write_bytes(to_jsonl(recs))
    convert_file(str(src), str(pqt), rows=7)  # several row groups and batches
    a = replay_paths([str(src)], table=True).table
    b = replay_paths([str(pqt)], table=True).table
    assert a is not None and b is not None and len(a) == len(b) == len(recs)
    assert (a.time != TIME_NONE).all()
    np.testing.assert_array_equal(b.time, a.time)
    np.testing.assert_array_equal(b.order, a.order)
    first = int(np.flatnonzero(a.order == 0)[0])
    assert a.game_ids[int(a.game[first])] == "g1"


def test_chunks_read_from_parquet_convert_back_to_the_same_rows(tmp_path):
    """`chunk_to_table` of chunks read from a Parquet file (their card columns can be slices of larger buffers,
    whose offsets do not start at 0), some rows without a deck: the same rows as the file's."""
    from auditor.fast.cols import Registry

    rng = np.random.default_rng(3)
    recs = random_log(rng, 12, n=4, style=Style(with_time=True))
    for r in recs[::3]:
        r.pop("deck", None)
    src, pqt = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    src.write_bytes(to_jsonl(recs))
    convert_file(str(src), str(pqt), rows=11)
    want = pq.read_table(pqt)
    reg = Registry()
    got = [parquet.chunk_to_table(ch, reg) for ch in parquet.iter_parquet_chunks(str(pqt), 0, reg, keep_all=True,
                                                                                  rows=8)]
    assert len(got) > 3
    t = pa.concat_tables(got)
    for name in ("deck", "hands", "hand_lens", "tricks", "trick_lens", "time", "table", "game_id", "players"):
        assert t.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_mixed_records_table_is_read_exactly(tmp_path):
    """A table of records (one column per field) of mixed Scotch Whist and All Fours records replays as its JSON
    Lines do, written with every field as a column (pyarrow with the union of the keys, or pandas). What looked
    like a misread All Fours log ("card not held" findings) is `pa.Table.from_pylist(records)` itself: it takes
    its columns from the FIRST record's keys, so a Scotch Whist record first drops All Fours' `beg`, `runs` and
    `discards` from the file (the reader cannot give back what is not there)."""
    from auditor.testing.generate import PLAYER_COUNTS

    rng = np.random.default_rng(7)
    recs: list = []
    for (game, preset), counts in PLAYER_COUNTS.items():
        for n in counts:
            recs += random_log(rng, 1, game=game, preset=preset, n=n, id_prefix=f"{game}-{preset}-{n}-",
                               table=f"{game}-{n}", style=Style(with_time=True, revoke_rate=0.03, claim_revokes=0.5))
    assert recs[0]["game"] == "scotch_whist" and any("runs" in r for r in recs)
    src = tmp_path / "log.jsonl"
    src.write_bytes(to_jsonl(recs))
    want = _norm(replay_paths([str(src)]).to_json(), str(src))
    keys = list(dict.fromkeys(k for r in recs for k in r))
    full = tmp_path / "full.parquet"
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in recs]), str(full), row_group_size=9)
    assert _norm(replay_paths([str(full)]).to_json(), str(full)) == want
    pd = pytest.importorskip("pandas")
    frame = tmp_path / "pandas.parquet"
    pd.DataFrame(recs).to_parquet(str(frame))
    assert _norm(replay_paths([str(frame)]).to_json(), str(frame)) == want
    naive = pa.Table.from_pylist(recs)  # the first record's keys only
    assert not {"beg", "runs", "discards"} & set(naive.schema.names)


def _without_sources(doc: dict) -> tuple:
    strip = [{k: v for k, v in f.items() if k != "source"} for f in doc["findings"]]
    return doc["deals"], doc["games"], sorted(orjson.dumps(f, option=orjson.OPT_SORT_KEYS) for f in strip)


def test_the_layout_rewritten_by_other_tools_reads_as_written(tmp_path):
    """An analyst loads the converted log with polars or pandas and writes it back, whole or as a hive-style
    dataset (issue 15): polars writes its categoricals with uint32 indices and large strings, binaries and lists;
    pandas writes a nullable integer column that has nulls as double. The replay reads every one as the
    original (once: uint32 indices could not be read, large lists' 64-bit offsets were read as 32-bit ones, and
    double columns were refused)."""
    pl = pytest.importorskip("polars")
    from auditor.inputs import expand_inputs

    src, orig = tmp_path / "log.jsonl", tmp_path / "log.parquet"
    src.write_bytes(to_jsonl(_mixed_log(7)))
    convert_file(str(src), str(orig))
    want = _without_sources(replay_paths([str(orig)]).to_json())
    assert want[0] > 100 and len(want[2]) > 10

    df = pl.read_parquet(orig)
    by_polars = tmp_path / "polars"
    df.with_columns(pl.col("table").cast(pl.Utf8)).write_parquet(by_polars, partition_by=["table"])
    one_polars = tmp_path / "polars.parquet"
    df.write_parquet(one_polars, row_group_size=50)
    by_pandas = tmp_path / "pandas.parquet"
    pq.read_table(orig).to_pandas().to_parquet(by_pandas)
    by_arrow = tmp_path / "arrow"
    pq.write_to_dataset(pq.read_table(orig), by_arrow, partition_cols=["table"])

    polars_types = {str(f.type) for f in pq.read_schema(next(by_polars.rglob("*.parquet")))}
    assert "dictionary<values=string, indices=uint32, ordered=0>" in polars_types
    assert "large_list<element: int32>" in polars_types and "large_binary" in polars_types
    assert "double" in {str(f.type) for f in pq.read_schema(by_pandas)}
    for path in (by_polars, one_polars, by_pandas, by_arrow):
        files = expand_inputs([str(path)])
        fast = replay_paths(files).to_json()
        assert _without_sources(fast) == want, path
        assert fast == replay_records(read_records(files), "reference").to_json()


def test_values_the_layout_cannot_hold_are_judged_row_by_row(tmp_path):
    """Another tool's wider or floating columns: a value the layout's type cannot hold is not cast (a dealer of
    65,538 read as int16 was seat 2) but judged as the JSON Lines reader would, in its own row; whole floats are
    the integers they stand for; a stored -1 cutter is not taken for a missing one; the rest of the file reads as
    before."""
    src, pqt = tmp_path / "a.jsonl", tmp_path / "a.parquet"
    src.write_bytes(to_jsonl(random_log(np.random.default_rng(6), 2, n=4)))
    convert_file(str(src), str(pqt))
    t = pq.read_table(pqt)
    n = t.num_rows
    dealer = t.column("dealer").to_pylist()
    wide = pa.array([65538 + dealer[0]] + dealer[1:], pa.int64())  # seat 2 if cast to int16
    as_float = pa.array([float(x) for x in dealer[:2]] + [dealer[2] + 0.5] + [float(x) for x in dealer[3:]],
                        pa.float64())
    cutter = t.column("cutter").to_pylist()
    stored_none = pa.array(cutter[:1] + [-1] + cutter[2:], pa.int8())  # -1 is the reader's "no cutter": not a seat
    for k, (name, col) in enumerate((("dealer", wide), ("dealer", as_float), ("cutter", stored_none))):
        t2 = t.set_column(t.schema.get_field_index(name), name, col)
        bad = tmp_path / f"bad{k}.parquet"
        pq.write_table(t2, bad)
        doc = replay_paths([str(bad)]).to_json()
        assert doc == replay_records(read_records([str(bad)]), "reference").to_json()
        row = (1, 3, 2)[k]
        assert doc["deals"] == n
        hit = [f for f in doc["findings"] if f["source"] == f"{bad}:{row}"]
        assert hit and hit[0]["code"] == "bad_record" and name in hit[0]["message"], hit
        others = [f for f in doc["findings"] if f["code"] == "bad_record" and f["source"] != f"{bad}:{row}"]
        assert not others
