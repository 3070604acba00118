"""The independent season generator (bench/indep/simulate.py): its honest deals replay with no finding under the
auditor, and its planted Jack stacker really is dealt the Jack of trumps far more often than chance."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIM_PATH = ROOT / "bench" / "indep" / "simulate.py"


def load_sim():
    spec = importlib.util.spec_from_file_location("indep_simulate", SIM_PATH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["indep_simulate"] = mod
    spec.loader.exec_module(mod)
    return mod


def write(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs), encoding="utf-8")


def replay(path: Path) -> tuple[int, dict]:
    r = subprocess.run(
        [sys.executable, "-m", "auditor", "replay", "--json", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    return r.returncode, json.loads(r.stdout)


def test_generator_imports_nothing_from_auditor():
    tree = ast.parse(SIM_PATH.read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.split(".")[0] == "auditor"]


def test_honest_deals_replay_without_findings(tmp_path):
    sim = load_sim()
    recs = sim.season(400, 11, sim.Cheats(), "club")
    path = tmp_path / "honest.jsonl"
    write(path, recs)
    code, doc = replay(path)
    assert doc["findings"] == []
    assert code == 0
    assert doc["deals"] == len(recs) >= 400
    # The season covers what it claims: both games, Foster sets of six, five and six players, runs, logged decks.
    sizes = {(r["game"], len(r["players"])) for r in recs}
    assert {("scotch_whist", 2), ("scotch_whist", 3), ("scotch_whist", 5), ("scotch_whist", 6)} <= sizes
    assert {("all_fours", 2), ("all_fours", 4)} <= sizes
    assert any(r.get("beg") == "run" for r in recs)
    assert any("deck" in r for r in recs) and any("deck" not in r for r in recs)
    # Every game that ended has a winner recorded on its last deal, and the replay agrees on it.
    mine = {r["game_id"]: r["recorded"].get("winner") for r in recs}
    assert all(g["winner"] == mine[g["game_id"]] for g in doc["games_summary"])


def test_corner_layouts_replay_without_findings(tmp_path):
    """The 'wide' mix: Foster at 7 and 8, the 36th shown, the 6 of clubs out, must-trump; Russian at 2, 3 and 5
    (the eldest's eighth card, two cards in the last trick); All Fours at 3."""
    sim = load_sim()
    recs = sim.season(300, 12, sim.Cheats(), "wide")
    path = tmp_path / "wide.jsonl"
    write(path, recs)
    code, doc = replay(path)
    assert doc["findings"] == [] and code == 0
    assert any(len(r["tricks"][-1]) == 6 for r in recs if r["rules"] == "russian" and len(r["players"]) == 5)
    assert any("shown" in r for r in recs)
    assert {len(r["players"]) for r in recs if r["game"] == "all_fours"} == {3}


def test_jack_stacker_is_dealt_the_jack_far_more_often_than_chance(tmp_path):
    sim = load_sim()
    recs = sim.season(5000, 5, sim.Cheats(jack_stacker={"m07": 0.5}), "club", club_size=36)
    stats = {"m07": [0, 0.0, 0], "others": [0, 0.0, 0]}  # observed, expected, deals
    for r in recs:
        if r["game"] != "scotch_whist":
            continue
        d = r["dealer"]
        hand = r["hands"][d]
        pack = sum(len(h) for h in r["hands"])
        jack = "J" + r["turn_up"][1]
        row = stats["m07" if r["players"][d] == "m07" else "others"]
        row[0] += jack in hand
        # Chance under a uniform deal: the turn-up (his last card) is a Jack, which makes it the Jack of trumps,
        # or else the trump Jack is among his other cards.
        h = len(hand)
        row[1] += 4 / pack + (1 - 4 / pack) * (h - 1) / (pack - 1)
        row[2] += 1
    obs, exp, n = stats["m07"]
    assert n >= 40
    sd = (exp * (1 - exp / n)) ** 0.5
    assert (obs - exp) / sd > 4.0, stats
    assert obs / n > 1.5 * exp / n, stats
    obs_o, exp_o, n_o = stats["others"]
    assert abs(obs_o - exp_o) / (exp_o * (1 - exp_o / n_o)) ** 0.5 < 3.5, stats
    # The stacking is in the pack: the deal stays consistent with the logged deck, so the replay finds nothing.
    path = tmp_path / "stacked.jsonl"
    write(path, recs)
    code, doc = replay(path)
    assert doc["findings"] == [] and code == 0


def test_honest_slips_are_revokes_that_pay_as_often_as_the_revoke_test_s_null_says(tmp_path):
    """`--slip`: every member revokes now and then by accident, the card uniform over the cards he may not play.
    Without it the generator's output is unchanged; with it the replay finds the revokes, spread over many members,
    and the share of them that paid is the null's (the sum of each revoke's chance pi of paying)."""
    from auditor.audit import replay_for_audit
    from auditor.detectors.revoke_pattern import RevokePattern

    sim = load_sim()
    assert sim.season(300, 8, sim.Cheats(), "club", 60) == sim.season(300, 8, sim.Cheats(slip=0.0), "club", 60)
    recs = sim.season(6000, 8, sim.Cheats(slip=0.02), "club", 60)
    path = tmp_path / "slips.jsonl"
    write(path, recs)
    rep = replay_for_audit([str(path)])
    revokes = [f for f in rep.findings if f.code == "revoke"]
    assert len(revokes) > 300
    rev = RevokePattern().count(rep.table).revokes
    paid = expected = var = 0.0
    members = 0
    for a, b in rev.spans().values():
        members += 1
        for pi, (n, k) in rev.totals(a, b).items():
            paid += k
            expected += n * float(pi)
            var += n * float(pi) * (1 - float(pi))
    assert members >= 40
    assert expected > 50
    assert abs(paid - expected) / var**0.5 < 3.5, (paid, expected, var)
