"""Inputs at scale (issue 15): a directory is the log files under it, in natural order; a hive-style dataset gives
its partition values back as columns; a bad directory is a one-line error."""

from __future__ import annotations

import os

import numpy as np
import orjson
import pytest

from auditor.errors import InputError
from auditor.fast.convert import convert_file
from auditor.fast.pipeline import replay_paths
from auditor.inputs import expand_inputs
from auditor.parquet import hive_values
from auditor.testing.generate import Style, random_log


def _write(path, recs: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))


def test_directory_is_its_log_files_in_natural_order(tmp_path) -> None:
    for rel in ("b/part-10.parquet", "b/part-2.parquet", "a.jsonl", "b/x.jsonl.gz", "b/_SUCCESS", ".hidden/z.jsonl",
                "notes.txt", "c/d/e.jsonl"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")
    got = [os.path.relpath(p, tmp_path) for p in expand_inputs([tmp_path])]
    assert got == ["a.jsonl", "b/part-2.parquet", "b/part-10.parquet", "b/x.jsonl.gz", "c/d/e.jsonl"]
    f = str(tmp_path / "a.jsonl")
    assert expand_inputs([f, str(tmp_path / "c")]) == [f, str(tmp_path / "c/d/e.jsonl")]


def test_empty_directory_is_a_one_line_error(tmp_path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(InputError) as e:
        expand_inputs([tmp_path / "empty"])
    msg = str(e.value)
    assert "\n" not in msg and "no .parquet, .jsonl or .jsonl.gz file" in msg and "empty" in msg


def test_hive_values_of_a_path() -> None:
    assert hive_values("d/table=club%207/month=2026-11/part-0.parquet") == {"table": "club 7"}
    assert hive_values("d/table=__HIVE_DEFAULT_PARTITION__/p.parquet") == {"table": None}  # a null column
    assert hive_values("table=x.parquet") == {}  # the file's own name is not a partition


@pytest.mark.parametrize("layout", ["auditor", "records"])
def test_hive_dataset_gives_the_table_back(tmp_path, layout: str) -> None:
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyarrow.compute")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(7)
    recs = []
    tables = ("club-7", "club-10", "af 2") if layout == "auditor" else ("club-7", "club-10", "club 2")
    # (a records table of mixed Scotch Whist and All Fours records made by pa.Table.from_pylist is misread today,
    # with or without partitions: reported, not this test's subject)
    for t in tables:
        game = "all_fours" if t.startswith("af") else "scotch_whist"
        recs += random_log(rng, 3, game=game, n=4 if game == "scotch_whist" else 2, sides=None if game == "all_fours"
                           else "random", table=t, style=Style(with_time=True), id_prefix=f"{t}-")
    for r in recs:  # an extra field used as a second partition (a game within one month)
        r["month"] = f"2026-{1 + int(r['game_id'].rsplit('-', 1)[1]) % 2:02d}"
    src = tmp_path / "all.jsonl"
    _write(src, recs)
    if layout == "auditor":
        whole = tmp_path / "all.parquet"
        convert_file(str(src), str(whole))
        table = pq.read_table(whole)
        extra = pa.array([orjson.loads(e)["month"] for e in table.column("extra").to_pylist()])
        table = table.append_column("month", extra)
    else:
        table = pa.Table.from_pylist(recs)
    # pyarrow's own writer (it may reorder rows inside a partition: only the tables' deals are compared)
    pq.write_to_dataset(table, str(tmp_path / "pa"), partition_cols=["table", "month"])
    rep = replay_paths(expand_inputs([tmp_path / "pa"]), table=True)
    assert rep.table is not None
    per_table = {t: int((rep.table.table == j).sum()) for j, t in enumerate(rep.table.tables)}
    assert per_table == {t: sum(r["table"] == t for r in recs) for t in tables}
    # the same layout written in input order
    ds = tmp_path / "ds"
    for t in tables:
        for m in ("2026-01", "2026-02"):
            keep = pa.compute.and_(pa.compute.equal(table.column("table"), t), pa.compute.equal(table.column("month"), m))
            part = table.filter(keep).drop_columns(["table", "month"])
            d = ds / f"table={t.replace(' ', '%20')}" / f"month={m}"
            d.mkdir(parents=True)
            pq.write_table(part, str(d / "part-0.parquet"))
    files = expand_inputs([ds])
    assert len(files) == 6 and all("table=" in f for f in files)
    assert "table" not in pq.read_schema(files[0]).names  # dropped by write_to_dataset
    rep = replay_paths(files, table=True)
    direct = replay_paths([str(src)], table=True)
    assert rep.deals == direct.deals == len(recs)
    assert rep.table is not None and direct.table is not None
    assert sorted(rep.table.tables) == sorted(direct.table.tables) == sorted(tables)
    got = {g.game_id: g.to_json() for g in rep.games_summary}
    assert got == {g.game_id: g.to_json() for g in direct.games_summary}
    assert [f.code for f in rep.findings] == [] == [f.code for f in direct.findings]
