"""`auditor simulate`: the demo preset, the flags, usage errors, Parquet, and the shipped demo fixture."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.dealog import read_records
from auditor.replay.run import replay_records
from auditor.simulate import CHEAT_KINDS, club_season_spec, simulate_season

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
# the demo season plants one cheater of each kind the simulator had before issue 14; the new dealing cheats
# are planted by their own studies (tests/test_simulate_issue14.py), not in the shipped demo
DEMO_KINDS = set(CHEAT_KINDS) - {"partner_stacker", "cutter_stacker", "af_own_jack"}
runner = CliRunner()


def _run(*args):
    return runner.invoke(app, ["simulate", *map(str, args)])


def test_club_season_preset_has_the_promised_shape():
    spec = club_season_spec()
    spec.check()
    assert spec.n_deals >= 20000
    assert 55 <= len(spec.member_names()) <= 65
    sw = {(t.n, bool(t.sides)) for t in spec.tables if t.game == "scotch_whist"}
    assert {(4, True), (5, False)} <= sw and any(n == 6 for n, _ in sw)
    assert any(t.game == "all_fours" and t.n == 4 and t.sides for t in spec.tables)
    assert any(t.human_shuffle for t in spec.tables) and any(not t.human_shuffle for t in spec.tables)
    assert {c.kind for c in spec.cheaters} == DEMO_KINDS


def test_cli_writes_log_key_and_decisions(tmp_path):
    out, key, dec = tmp_path / "s.jsonl", tmp_path / "k.json", tmp_path / "d.jsonl"
    r = _run("--preset", "club-season", "--deals", 300, "--seed", 5, "--out", out, "--key", key,
             "--decisions", dec)
    assert r.exit_code == 0, r.output
    recs = list(read_records([str(out)]))
    assert len(recs) >= 300 and all(x.deal is not None for x in recs)
    assert {x.deal.game for x in recs} == {"scotch_whist", "all_fours"}
    k = json.loads(key.read_text())
    assert k["seed"] == 5 and k["deals"] == len(recs)
    assert {c["kind"] for c in k["cheaters"]} == DEMO_KINDS
    rep = replay_records(recs)
    found = sorted((f.game_id, f.deal_no, f.trick, f.seat) for f in rep.findings)
    assert found == sorted((v["game_id"], v["deal_no"], v["trick"], v["seat"]) for v in k["revokes"])
    rows = [json.loads(x) for x in dec.read_text().splitlines()]
    assert len(rows) == sum(len(t) for x in recs for t in (x.deal.tricks or []) )


def test_cli_custom_table_flags(tmp_path):
    out = tmp_path / "a.jsonl.gz"
    r = _run("--game", "all_fours", "--players", 3, "--tables", 2, "--club", 8, "--deals", 120, "--no-deck",
             "--no-time", "--pack", "--human-shuffle", "--option", "after_run=keep_all",
             "--cheat", "turnup_jack:ada:0.5", "--out", out)
    assert r.exit_code == 0, r.output
    recs = [x.deal for x in read_records([str(out)])]
    assert len(recs) >= 120
    assert {d.table for d in recs} == {"t1", "t2"}
    assert all(d.deck is None and d.time is None and d.pack in ("red", "blue") for d in recs)
    assert all(d.options == {"after_run": "keep_all"} and d.n == 3 for d in recs)
    assert len({p for d in recs for p in d.players}) == 8
    out2 = tmp_path / "b.jsonl"
    r = _run("--players", 6, "--sides", "teams", "--deals", 30, "--no-recorded", "--out", out2)
    assert r.exit_code == 0, r.output
    recs = [x.deal for x in read_records([str(out2)])]
    assert all(d.sides == [[0, 2, 4], [1, 3, 5]] and d.recorded is None for d in recs)


@pytest.mark.parametrize("args,needle", [
    (["--players", 9], "2 to 8 players"),
    (["--game", "all_fours", "--players", 5], "2 to 4 players"),
    (["--cheat", "foo:ada:1"], "unknown kind"),
    (["--cheat", "jack_stacker:nobody:0.5"], "not a member"),
    (["--cheat", "jack_stacker:ada:x"], "not a number"),
    (["--option", "bogus=1"], "bogus"),
    (["--option", "void_rule=never"], "bad option value"),
    (["--preset", "nope"], "unknown preset"),
    (["--players", 5, "--sides", "pairs"], "cannot sit in pairs"),
    (["--format", "csv"], "jsonl or parquet"),
    (["--deals", 0], "at least 1"),
])
def test_cli_usage_errors_exit_2_with_a_message(tmp_path, args, needle):
    r = _run(*args, "--out", tmp_path / "x.jsonl")
    assert r.exit_code == 2
    assert needle in r.output
    assert "Traceback" not in r.output


def test_cli_unwritable_output_is_a_usage_error(tmp_path):
    r = _run("--deals", 5, "--out", tmp_path / "no" / "such" / "dir" / "x.jsonl")
    assert r.exit_code == 2 and "cannot write" in r.output


def test_parquet_output_holds_the_same_records(tmp_path):
    a, b = tmp_path / "s.jsonl", tmp_path / "s.parquet"
    assert _run("--preset", "club-season", "--deals", 150, "--out", a).exit_code == 0
    r = _run("--preset", "club-season", "--deals", 150, "--out", b)
    assert r.exit_code == 0, r.output
    ja = [x.deal.to_canonical() for x in read_records([str(a)])]
    jb = [x.deal.to_canonical() for x in read_records([str(b)])]
    assert ja == jb and len(ja) >= 150


def test_demo_fixture_is_what_the_documented_command_makes(tmp_path):
    log, key = tmp_path / "season.jsonl.gz", tmp_path / "season.key.json"
    r = _run("--preset", "club-season", "--deals", 8000, "--seed", 2027, "--out", log, "--key", key)
    assert r.exit_code == 0, r.output
    assert log.read_bytes() == (DEMO / "season.jsonl.gz").read_bytes()
    assert key.read_bytes() == (DEMO / "season.key.json").read_bytes()
    assert (DEMO / "season.jsonl.gz").stat().st_size < 3_000_000


def test_demo_fixture_replays_with_only_its_planted_revokes():
    recs = list(read_records([str(DEMO / "season.jsonl.gz")]))
    key = json.loads((DEMO / "season.key.json").read_text())
    assert 8000 <= len(recs) <= 8100 and key["deals"] == len(recs)
    rep = replay_records(recs)
    assert {f.code for f in rep.findings} == {"revoke"}
    assert len(rep.findings) == len(key["revokes"])
    kinds = {v["kind"] for v in key["revokes"]}
    assert kinds == {"accidental", "deliberate"}


@pytest.mark.slow
def test_club_season_20000_deals_in_under_30_seconds_of_cpu():
    t = time.process_time()
    sim = simulate_season(club_season_spec(20000), np.random.default_rng(1))
    dt = time.process_time() - t
    assert len(sim.records) >= 20000
    assert dt < 30, dt
