"""The test support itself: random legal deals replay clean under the reference engine, scores are what the
reference counts, seeds reproduce, mutators break what they say, and the bulk generator of the benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.dealog import read_records, record_from_obj
from auditor.replay.run import replay_records
from auditor.testing.generate import OPTION_SETS, PLAYER_COUNTS, Style, random_game, random_log
from auditor.testing.mutate import RECORD_MUTATORS, mutate_log, to_jsonl


def _replay(objs):
    recs = [record_from_obj(o, f"x:{i + 1}", 0, i + 1) for i, o in enumerate(objs)]
    return replay_records(recs, "reference")


@pytest.mark.parametrize("game,preset,n", [(g, p, n) for (g, p), cs in PLAYER_COUNTS.items() for n in cs])
def test_random_legal_games_replay_clean(game, preset, n):
    rng = np.random.default_rng(n * 101 + len(preset))
    for options in OPTION_SETS[game][:4]:
        recs = random_log(rng, 3, game=game, preset=preset, n=n, options=options)
        rep = _replay(recs)
        assert rep.findings == [], rep.findings[:3]
        # every game but the last one cut short ends with a winner or a count-out
        assert all(g.ended_by == "points" for g in rep.games_summary)


def test_revokes_are_planted_and_found():
    rng = np.random.default_rng(3)
    recs = random_log(rng, 10, game="scotch_whist", preset="foster", n=4, style=Style(revoke_rate=0.2))
    rep = _replay(recs)
    assert sum(f.code == "revoke" for f in rep.findings) > 5
    assert {f.code for f in rep.findings} <= {"revoke"}


def test_seeds_reproduce():
    a = random_log(np.random.default_rng(9), 4, game="all_fours", preset="foster", n=3)
    b = random_log(np.random.default_rng(9), 4, game="all_fours", preset="foster", n=3)
    c = random_log(np.random.default_rng(10), 4, game="all_fours", preset="foster", n=3)
    assert a == b and a != c
    assert to_jsonl(mutate_log(np.random.default_rng(1), a)) == to_jsonl(mutate_log(np.random.default_rng(1), b))


def test_all_fours_begging_is_exercised():
    rng = np.random.default_rng(5)
    recs = []
    for n in (2, 3, 4):
        recs += random_log(rng, 6, game="all_fours", preset="foster", n=n)
    begs = {r.get("beg", "stand") for r in recs}
    assert begs == {"stand", "take_one", "run"}
    assert any(r.get("runs") for r in recs)


@pytest.mark.parametrize("name", sorted(RECORD_MUTATORS))
def test_each_mutator_changes_records(name):
    rng = np.random.default_rng(7)
    recs = random_game(rng, "scotch_whist", "foster", 4, game_id="g") + \
        random_game(rng, "all_fours", "foster", 2, game_id="h")
    changed = sum(RECORD_MUTATORS[name](rng, r) != r for r in recs)
    assert changed > 0
    assert all(isinstance(RECORD_MUTATORS[name](rng, r), (dict, bytes)) for r in recs)


def test_bulk_generator_matches_the_reference(tmp_path):
    """The benchmark's numpy generator: legal deals, recorded scores the reference agrees with."""
    from auditor.testing.fastgen import bench_games, jsonl_lines

    rng = np.random.default_rng(12)
    lines = []
    for b in bench_games(rng, 1500, concurrent=300):
        lines += jsonl_lines(b, 4)
    path = tmp_path / "bulk.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    rep = replay_records(read_records([str(path)]), "reference")
    assert rep.deals == 1500 and rep.findings == []
    assert sum(g.winner is not None for g in rep.games_summary) > 400
    # individual players too (no sides)
    lines = []
    for b in bench_games(np.random.default_rng(13), 400, n=6, sides=None, concurrent=100):
        lines += jsonl_lines(b, 6, sides=None)
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert replay_records(read_records([str(path)]), "reference").findings == []
