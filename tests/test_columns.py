"""The audit's columns (`auditor.columns.AuditColumns`) two ways: from the reference engine's results
(`from_results`, the spec) and straight from the batch kernel (`replay_paths(..., table=True)`). They must be
equal on every deal: clean and mutated logs of every preset, player count and option set, the demo season, and the
Parquet path."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from auditor.columns import AuditColumns, from_results, natural_key
from auditor.dealog import read_records
from auditor.fast import pipeline
from auditor.replay.run import replay_records
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

CONFIGS = [(game, preset, n) for (game, preset), counts in PLAYER_COUNTS.items() for n in counts]


def _log(rng, game, preset, n, options, games, rate):
    recs = random_log(rng, games, game=game, preset=preset, n=n, options=options,
                      style=Style(revoke_rate=0.03, claim_revokes=0.4, extra_field=True),
                      id_prefix=f"{game}/{preset}/{n}/{len(options)}/")
    return mutate_log(rng, recs, rate=rate)


def _compare(paths: list[str], kernel_rows: bool = True) -> AuditColumns:
    ref = replay_records(read_records(paths), "reference")
    spec = from_results(ref.results)
    fast = pipeline.replay_paths(paths, table=True)
    got = fast.table
    assert got.equal(spec) == []
    assert len(got) == len(ref.results)
    if kernel_rows:
        assert fast.stats["kernel"] > 0
    # the replay document is unchanged by collecting the columns
    assert fast.to_json() == ref.to_json()
    return got


@pytest.mark.parametrize("game,preset,n", CONFIGS)
def test_every_preset_and_player_count(tmp_path, game, preset, n):
    rng = np.random.default_rng(zlib.crc32(f"cols/{game}/{preset}/{n}".encode()))
    lines = _log(rng, game, preset, n, {}, games=8, rate=0.35)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    _compare([str(path)])


@pytest.mark.parametrize("game,options", [(g, o) for g, sets in OPTION_SETS.items() for o in sets if o])
def test_every_option_set(tmp_path, game, options):
    rng = np.random.default_rng(zlib.crc32(f"cols/{game}/{sorted(options.items())}".encode()))
    counts = {"scotch_whist": (2, 3, 4, 5, 7), "all_fours": (2, 3, 4)}[game]
    lines = []
    for n in counts:
        lines += _log(rng, game, "foster", n, options, games=2, rate=0.3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    _compare([str(path)])


def test_two_files_and_parquet(tmp_path):
    """Several files (file index in the order key) and the Parquet reader give the same columns."""
    from auditor.fast.convert import convert_file

    rng = np.random.default_rng(11)
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_bytes(to_jsonl(_log(rng, "scotch_whist", "foster", 4, {}, games=3, rate=0.2)))
    b.write_bytes(to_jsonl(_log(rng, "all_fours", "foster", 3, {}, games=3, rate=0.2)))
    cols = _compare([str(a), str(b)])
    assert set(np.unique(cols.file_index).tolist()) == {0, 1}
    assert (np.diff((cols.file_index.astype(np.int64) << 32) | cols.line) > 0).all()  # rows in input order
    # `order`: each row's rank in the canonical order (table name first, then time, game id, deal number)
    assert sorted(cols.order.tolist()) == list(range(len(cols)))
    by = np.argsort(cols.order)
    names = [(natural_key(cols.tables[int(cols.table[i])]), int(cols.time[i]),
              natural_key(cols.game_ids[int(cols.game[i])]), int(cols.deal_no[i])) for i in by]
    assert names == sorted(names)
    assert cols.tables[int(cols.table[by[0]])] == min(cols.tables, key=natural_key)
    pq = tmp_path / "b.parquet"
    convert_file(str(b), str(pq))
    _compare([str(a), str(pq)])


def test_demo_season():
    _compare(["fixtures/demo/season.jsonl.gz"])


def test_take_and_concat_round_trip():
    ref = replay_records(read_records(["fixtures/examples.jsonl"]), "reference")
    c = from_results(ref.results)
    k = len(c) // 2
    again = AuditColumns.concat([c.take(np.arange(k)), c.take(np.arange(k, len(c)))])
    assert again.equal(c) == []
    assert c.take(np.arange(k)).equal(c) != []  # the comparison can fail
