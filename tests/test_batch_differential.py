"""The batch engine against the reference engine: random legal deals and mutated ones, every preset and player
count, identical findings, points and games.

Three ways through the batch code are compared with the reference (`replay_records(..., "reference")`):
`replay_records(..., "batch")` (per-deal results, field by field), the column pipeline from JSONL
(`auditor.fast.pipeline.replay_paths`), and the same pipeline with the JSONL parsed by worker processes. The
Parquet path is compared in test_parquet.py. The fast tier runs a few thousand records; `-m slow` runs many more.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from auditor.dealog import read_records
from auditor.fast import pipeline, read
from auditor.replay.run import replay_records
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

RESULT_FIELDS = ("findings", "cards_ok", "hands", "trump", "replayed_tricks", "plays", "winners", "revokes",
                 "scored", "sw_steps", "af_events", "af_capped_sides", "penalty_revokes", "gift_sides", "points")

CONFIGS = [(game, preset, n) for (game, preset), counts in PLAYER_COUNTS.items() for n in counts]


def _log(rng, game, preset, n, options, games, rate, style=None):
    recs = random_log(rng, games, game=game, preset=preset, n=n, options=options,
                      style=style or Style(revoke_rate=0.03, claim_revokes=0.4, extra_field=True),
                      id_prefix=f"{game}/{preset}/{n}/{len(options)}/")
    return mutate_log(rng, recs, rate=rate)


def _compare(path, require_batch_work=True):
    ref = replay_records(read_records([str(path)]), "reference")
    bat = replay_records(read_records([str(path)]), "batch")
    doc = ref.to_json()
    assert bat.to_json() == doc
    for a, b in zip(ref.results, bat.results, strict=True):
        for f in RESULT_FIELDS:
            assert getattr(a, f) == getattr(b, f), (a.deal.source, f)
    fast = pipeline.replay_paths([str(path)])
    assert fast.to_json() == doc
    assert fast.to_json_bytes() == _dumps(doc)
    if require_batch_work:
        assert bat.stats["kernel"] > 0
    return doc, bat.stats, fast.stats


def _dumps(doc):
    import json

    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


@pytest.mark.parametrize("game,preset,n", CONFIGS)
def test_every_preset_and_player_count(tmp_path, game, preset, n):
    """Clean and mutated games of every preset and player count: the three batch paths equal the reference."""
    rng = np.random.default_rng(zlib.crc32(f"{game}/{preset}/{n}".encode()))
    lines = _log(rng, game, preset, n, {}, games=10, rate=0.35)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    doc, stats, _ = _compare(path)
    assert doc["deals"] == len(lines)


@pytest.mark.parametrize("game,options", [(g, o) for g, sets in OPTION_SETS.items() for o in sets if o])
def test_every_option_set(tmp_path, game, options):
    """Each switch the generator covers, at the player counts where it matters."""
    rng = np.random.default_rng(zlib.crc32(f"{game}/{sorted(options.items())}".encode()))
    preset = "foster"
    counts = {"scotch_whist": (2, 3, 4, 5, 7), "all_fours": (2, 3, 4)}[game]
    lines = []
    for n in counts:
        lines += _log(rng, game, preset, n, options, games=3, rate=0.3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    _compare(path)


def test_clean_logs_are_replayed_by_the_kernel(tmp_path):
    """On clean logs of every configuration the kernel replays every deal itself (no fallback): the engine is
    not the reference engine in disguise."""
    rng = np.random.default_rng(11)
    for game, preset, n in CONFIGS:
        recs = random_log(rng, 3, game=game, preset=preset, n=n, style=Style(revoke_rate=0.05))
        path = tmp_path / f"{game}-{preset}-{n}.jsonl"
        path.write_bytes(to_jsonl(recs))
        doc, stats, fast_stats = _compare(path)
        assert stats["fallback"] == 0, (game, preset, n, stats)
        assert fast_stats["fallback"] == 0, (game, preset, n, fast_stats)
        assert stats["kernel"] == len(recs)


def test_mutations_produce_the_findings_they_are_meant_to(tmp_path):
    """Every mutator applied to records of every configuration: the logs carry every finding code, so that
    agreement on them means something."""
    from auditor.findings import CODES
    from auditor.testing.mutate import LOG_MUTATORS, RECORD_MUTATORS

    rng = np.random.default_rng(5)
    lines = []
    for game, preset, n in CONFIGS:
        recs = random_log(rng, 2, game=game, preset=preset, n=n, style=Style(revoke_rate=0.05, claim_revokes=0.5),
                          id_prefix=f"{game}/{preset}/{n}/")
        for mut in RECORD_MUTATORS.values():
            lines.append(mut(rng, recs[int(rng.integers(len(recs)))]))
        for mut in LOG_MUTATORS.values():
            lines = mut(rng, lines)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    doc, stats, _ = _compare(path)
    codes = {f["code"] for f in doc["findings"]}
    assert codes == set(CODES), set(CODES) - codes
    assert stats["kernel"] > 0 and stats["fallback"] > 0


def test_parallel_jsonl_workers_equal_the_reference(tmp_path, monkeypatch):
    """Large plain JSONL files are parsed by worker processes in byte ranges; with tiny ranges (many workers'
    results, line numbers renumbered, ids remapped) the document is still the reference's."""
    rng = np.random.default_rng(17)
    lines = []
    for game, preset, n in CONFIGS[::2]:
        lines += _log(rng, game, preset, n, {}, games=3, rate=0.4)
    data = to_jsonl(lines).replace(b"\n", b"\n\n", 5) + b'{"format": "deal-log/1", "truncated'
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    ref = replay_records(read_records([str(path)]), "reference").to_json()
    monkeypatch.setattr(read, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read, "SEGMENT_BYTES", 2000)
    assert read._parallel_ok(str(path))
    assert len(read._segments(str(path), 2000)) > 10
    assert pipeline.replay_paths([str(path)]).to_json() == ref


def test_several_files_and_unreadable_ones(tmp_path):
    """Several inputs at once, games spanning files, an empty file, a missing file and a directory."""
    rng = np.random.default_rng(23)
    recs = random_log(rng, 8, game="scotch_whist", preset="foster", n=4, style=Style(revoke_rate=0.05))
    a, b, e = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", tmp_path / "empty.jsonl"
    a.write_bytes(to_jsonl(recs[::2]))
    import gzip

    b.write_bytes(gzip.compress(to_jsonl(recs[1::2])))
    e.write_bytes(b"")
    paths = [str(a), str(b), str(e), str(tmp_path / "missing.jsonl"), str(tmp_path)]
    ref = replay_records(read_records(paths), "reference").to_json()
    assert pipeline.replay_paths(paths).to_json() == ref
    assert replay_records(read_records(paths), "batch").to_json() == ref
    assert sum(f["code"] == "bad_record" for f in ref["findings"]) == 2


def test_chain_slices(tmp_path, monkeypatch):
    """The array chain works in slices of whole games; tiny slices give the same games and findings."""
    from auditor.fast import chain

    rng = np.random.default_rng(29)
    lines = []
    for game, preset, n in [("scotch_whist", "foster", 4), ("all_fours", "foster", 2), ("scotch_whist", "russian", 5)]:
        lines += _log(rng, game, preset, n, {}, games=10, rate=0.3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    ref = replay_records(read_records([str(path)]), "reference").to_json()
    monkeypatch.setattr(chain, "SLICE", 5)
    assert pipeline.replay_paths([str(path)]).to_json() == ref


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_differential_large(tmp_path, seed):
    """Tens of thousands of records: every configuration and option set, heavier mutation."""
    rng = np.random.default_rng(1000 + seed)
    lines = []
    for game, preset, n in CONFIGS:
        for options in OPTION_SETS[game]:
            lines += _log(rng, game, preset, n, options, games=8, rate=0.3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    doc, _, _ = _compare(path)
    assert doc["deals"] > 3000


def test_damaged_and_odd_files(tmp_path):
    """A byte-order mark, a truncated .jsonl.gz and a corrupt one: the same records and bad_record as the
    reference reader (every complete line kept)."""
    import gzip

    data = to_jsonl(random_log(np.random.default_rng(41), 6, n=4))
    z = gzip.compress(data)
    files = {"bom.jsonl": b"\xef\xbb\xbf" + data, "cut.jsonl.gz": z[: len(z) * 2 // 3],
             "bad.jsonl.gz": z[:100] + b"\x00garbage" + z[108:]}
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content)
        ref = replay_records(read_records([str(path)]), "reference").to_json()
        assert pipeline.replay_paths([str(path)]).to_json() == ref, name
        if name != "bom.jsonl":
            assert ref["findings"][-1]["message"].startswith("unreadable after line")
