"""Small Parquet files read together (`fast.read.iter_chunks`, `parquet.small_files_chunk`; issue 15, a twenty-eighth
session): a dataset of many small files is read into few chunks, each row keeping its own file and row. Held equal
to reading each file on its own, including the files and rows that are not plain deals."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.fast import read
from auditor.inputs import expand_inputs
from auditor.replay.run import replay_paths
from conftest import REPLAY_FIXTURES

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _dataset(tmp_path: Path) -> Path:
    """The replay fixtures as a hive dataset of small Parquet files, with what a room's folder may also hold: a
    bad card code in one file, a file whose `table` comes from its `table=` directory, a file of another schema
    (no `pack` column), a damaged file, an empty file and a JSON Lines file between them."""
    from auditor.fast.convert import convert_file

    ds = tmp_path / "ds"
    fixtures = sorted(REPLAY_FIXTURES.glob("*.jsonl"))
    assert len(fixtures) >= 8
    for k, src in enumerate(fixtures):
        folder = ds / f"month=2026-{k + 1:02d}"
        folder.mkdir(parents=True)
        if k == 5:  # a JSON Lines file among the Parquet files
            (folder / "part-0.jsonl").write_bytes(src.read_bytes())
            continue
        dst = folder / "part-0.parquet"
        convert_file(str(src), str(dst))
        t = pq.read_table(dst)
        if k == 1 and t.num_rows:  # a trick card code of 60 in the first row with tricks
            tricks = t.column("tricks").to_pylist()
            i = next((j for j, v in enumerate(tricks) if v), None)
            if i is not None:
                tricks[i] = bytes([60]) + tricks[i][1:]
                t = t.set_column(t.schema.get_field_index("tricks"), t.schema.field("tricks"),
                                 pa.array(tricks, t.schema.field("tricks").type))
                pq.write_table(t, dst)
        if k == 2 and "pack" in t.schema.names:  # another schema
            pq.write_table(t.drop(["pack"]), dst)
        if k == 3:  # the table from the directory
            hive = ds / f"month=2026-{k + 1:02d}" / "table=club-7"
            hive.mkdir()
            pq.write_table(t.drop(["table"]), hive / "part-0.parquet")
            dst.unlink()
        if k == 4:  # damaged: cut in the middle
            data = dst.read_bytes()
            dst.write_bytes(data[: len(data) // 2])
    (ds / "month=2026-99").mkdir()
    first = ds / "month=2026-01" / "part-0.parquet"  # (k = 0: left as converted)
    pq.write_table(pq.read_table(first).slice(0, 0), ds / "month=2026-99" / "part-0.parquet")
    return ds


def test_small_files_read_together_give_the_replay_of_each_file(tmp_path, monkeypatch):
    ds = _dataset(tmp_path)
    paths = expand_inputs([str(ds)])
    together = replay_paths(paths)
    chunks: list = []
    real = read.small_files_chunk
    monkeypatch.setattr(read, "small_files_chunk", lambda b, *a: chunks.append(len(b)) or real(b, *a))
    again = replay_paths(paths)
    assert chunks and max(chunks) >= 3  # several small files did go into one chunk
    monkeypatch.setattr(read, "SMALL_FILE_SHARE", 10**9)  # no file is small: each read on its own
    alone = replay_paths(paths)
    for got in (together, again):
        assert got.to_json_bytes() == alone.to_json_bytes()
    doc = alone.to_json()
    sources = {f["source"].rsplit(":", 1)[0] for f in doc["findings"]}
    assert any("month=2026-02" in s for s in sources)  # the bad card's file
    assert any("month=2026-05" in s for s in sources)  # the damaged file
    assert any(f["code"] == "unknown_card" for f in doc["findings"])


def test_rows_of_small_files_keep_their_file_and_row(tmp_path):
    ds = _dataset(tmp_path)
    paths = expand_inputs([str(ds)])
    from auditor.fast.cols import Registry

    seen = 0
    for ch in read.iter_chunks(paths, Registry(), keep_all="meta"):
        fis = ch.file_indices()
        for i in range(ch.n):
            assert ch.source(i) == f"{paths[int(fis[i])]}:{int(ch.line[i])}" or ch.sources is not None
        if ch.fis is not None:
            seen += 1
            rows = {}
            for i in range(ch.n):  # each file's rows numbered from 1, in order
                f = int(fis[i])
                assert int(ch.line[i]) == rows.get(f, 0) + 1
                rows[f] = int(ch.line[i])
    assert seen
