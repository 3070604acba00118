"""Chain edges (issue 12): a gap in deal numbers is one `deal_sequence` whatever its size, in bounded time and
memory; huge and non-positive deal numbers; dealer rotation across a huge gap by the modulus; recorded totals that
re-anchor unknown running totals and reach the target end the game there.

Every log is made of the hand-made deals of fixtures/replay/chain_edges.jsonl (built by
fixtures/replay/fixtures_chain_edges.py, the points of each deal worked out there). Each case runs through the
reference engine, the batch engine (`replay_records(..., "batch")`), the column pipeline and the CLI.
"""

from __future__ import annotations

import copy
import json
import resource
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.dealog import read_records
from auditor.fast import pipeline
from auditor.replay.chain import GAP_LISTED, gap_message
from auditor.replay.run import replay_records
from conftest import REPLAY_FIXTURES

FIXTURE = REPLAY_FIXTURES / "chain_edges.jsonl"
ENGINES = ["reference", "batch"]
TARGET_SW = 41


@pytest.fixture(autouse=True)
def _bounded_address_space():
    """While a test of this file runs, the process may grow by 2 GB at most: a regression to spelling out a huge
    gap then fails with MemoryError instead of taking the machine (the soft limit is restored afterwards)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/status") as f:
            vm = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmSize:"))
    except (OSError, StopIteration):
        yield
        return
    cap = vm + 2 * 2 ** 30
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _lines() -> list[dict]:
    return [json.loads(x) for x in FIXTURE.read_text().splitlines()]


def _deal(game_id: str, deal_no: int) -> dict:
    return copy.deepcopy(next(r for r in _lines() if r.get("game_id") == game_id and r.get("deal_no") == deal_no))


# clean Scotch Whist deals (4 players, sides 0+2 / 1+3) dealt by each seat, with their points (fixture comments)
def sw_by_dealer(dealer: int) -> tuple[dict, list[int]]:
    rec, pts = {3: (_deal("gap-huge", 1), [23, 9]), 2: (_deal("gap-huge", 10 ** 9), [9, 23]),
                1: (_deal("gap-2^64-1", 2 ** 64 - 1), [12, 20]), 0: (_deal("reanchor-win", 2), [9, 23])}[dealer]
    assert rec["dealer"] == dealer
    rec.pop("recorded", None)
    return rec, pts


def make(game_id: str, deal_no: int, dealer: int, recorded: dict | None = None) -> dict:
    rec, _ = sw_by_dealer(dealer)
    rec["game_id"], rec["deal_no"] = game_id, deal_no
    if recorded is not None:
        rec["recorded"] = recorded
    return rec


def unscored_sw(game_id: str) -> dict:
    """D-SW-1 with wrong hand sizes and nothing recorded: the game's totals become unknown."""
    rec = _deal("reanchor-win", 1)
    rec["game_id"] = game_id
    return rec


def write(tmp_path, recs, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs))
    return p


def replay_all(path) -> dict:
    """The document of every engine: reference, batch (records), the column pipeline; they must agree."""
    ref = replay_records(read_records([str(path)]), "reference").to_json()
    bat = replay_records(read_records([str(path)]), "batch").to_json()
    fast = pipeline.replay_paths([str(path)]).to_json()
    assert bat == ref
    assert fast == ref
    return ref


def cli(path, engine):
    out = CliRunner().invoke(app, ["replay", str(path), "--json", "--engine", engine])
    return out.exit_code, json.loads(out.stdout)


def codes(doc, game_id=None) -> list[tuple]:
    return [(f["code"], f["deal_no"]) for f in doc["findings"] if game_id is None or f["game_id"] == game_id]


def game(doc, game_id) -> dict:
    return next(g for g in doc["games_summary"] if g["game_id"] == game_id)


# ---------------------------------------------------------------- gaps


def test_gap_message_lists_a_few_numbers_and_names_the_ends_of_a_long_gap():
    assert gap_message("g", 1, 3) == "game 'g' has no deal 2 before deal 3"
    assert gap_message("g", 1, 2 + GAP_LISTED) == \
        "game 'g' has no deal " + ", ".join(str(k) for k in range(2, 2 + GAP_LISTED)) + f" before deal {2 + GAP_LISTED}"
    assert gap_message("g", 1, 10 ** 9) == "game 'g' has no deals 2 to 999999999 (999999998 deals) before deal 1000000000"
    t = time.perf_counter()
    msg = gap_message("g", 1, 2 ** 64 - 1)
    assert time.perf_counter() - t < 0.01 and len(msg) < 120


GAPS = [3, 4, 5, 1000, 10 ** 9, 2 ** 31 + 7, 2 ** 32 + 1, 2 ** 62 - 1, 2 ** 62, 2 ** 62 + 1, 2 ** 63 + 1,
        2 ** 64 - 1]


@pytest.mark.parametrize("deal_no", GAPS)
def test_one_deal_sequence_per_gap_and_rotation_by_the_modulus(tmp_path, deal_no):
    """Deal 1 (dealer 3) then deal N: one deal_sequence on deal N; the deal passes to seat (3 + N - 1) mod 4.
    Dealt by that seat: no dealer_rotation; by the next seat: one, naming the seat due. The chain goes on
    (totals of both deals); every engine agrees."""
    due = (3 + deal_no - 1) % 4
    wrong = (due + 1) % 4
    recs = [make("right", 1, 3), make("right", deal_no, due), make("wrong", 1, 3), make("wrong", deal_no, wrong)]
    doc = replay_all(write(tmp_path, recs))
    assert codes(doc, "right") == [("deal_sequence", deal_no)]
    assert codes(doc, "wrong") == [("deal_sequence", deal_no), ("dealer_rotation", deal_no)]
    rot = [f for f in doc["findings"] if f["code"] == "dealer_rotation"][0]
    assert rot["seat"] == wrong and rot["message"].endswith(f"should have passed to seat {due}")
    seq = [f for f in doc["findings"] if f["code"] == "deal_sequence"][0]
    assert seq["message"] == gap_message("right", 1, deal_no) and len(seq["message"]) < 150
    for gid, seat in (("right", due), ("wrong", wrong)):
        totals = [a + b for a, b in zip(sw_by_dealer(3)[1], sw_by_dealer(seat)[1], strict=True)]
        g = game(doc, gid)
        assert g["totals"] == totals and g["deals"] == 2
        assert g["winner"] == (0 if totals[0] >= TARGET_SW else None)


def test_several_gaps_in_one_game_give_one_finding_each(tmp_path):
    """Deals 1 (seat 3: A 23, B 9), 4 (seat 2, due (3 + 3) mod 4 = 2: A 9, B 23; 32, 32), 10**9 (seat 1; due
    (2 + 10**9 - 4) mod 4 = 2: a rotation finding; A 12, B 20: both past 41, count-out from 32, 32: the Ten
    takes A to 42 alone: A wins), 10**9 + 3: after the game. One deal_sequence per gap, none for the deal after
    the game."""
    recs = [make("g", 1, 3), make("g", 4, 2), make("g", 10 ** 9, 1), make("g", 10 ** 9 + 3, 0)]
    doc = replay_all(write(tmp_path, recs))
    assert codes(doc) == [("deal_sequence", 4), ("deal_sequence", 10 ** 9), ("dealer_rotation", 10 ** 9),
                          ("play_after_game_end", 10 ** 9 + 3)]
    assert [f["message"] for f in doc["findings"] if f["code"] == "deal_sequence"] == \
        ["game 'g' has no deal 2, 3 before deal 4",
         "game 'g' has no deals 5 to 999999999 (999999995 deals) before deal 1000000000"]
    g = game(doc, "g")
    assert g["winner"] == 0 and g["ended_by"] == "points" and g["totals"] == [23 + 9 + 12, 9 + 23 + 20]


def test_late_start_at_a_huge_number(tmp_path):
    doc = replay_all(write(tmp_path, [make("g", 10 ** 15, 3)]))
    assert codes(doc) == [("deal_sequence", 10 ** 15)]
    assert doc["findings"][0]["message"] == f"game 'g' starts at deal {10 ** 15}, not 1"
    assert game(doc, "g")["totals"] == [23, 9]


def test_repeated_huge_number(tmp_path):
    """The same huge number twice: the later record is a repeat, not a gap."""
    recs = [make("g", 1, 3), make("g", 2 ** 62 + 1, 3), make("g", 2 ** 62 + 1, 3)]
    doc = replay_all(write(tmp_path, recs))
    # 23 + 23 = 46: the game is won at deal 2**62 + 1; the repeat of that number is a repeat (deal_sequence)
    assert codes(doc) == [("deal_sequence", 2 ** 62 + 1), ("deal_sequence", 2 ** 62 + 1)]
    assert "logged twice" in doc["findings"][1]["message"]
    assert game(doc, "g") == {"game_id": "g", "deals": 3, "totals": [46, 18], "winner": 0, "ended_by": "points",
                              "loser": None}


BAD_DEAL_NO = [0, -1, -(10 ** 9), -(2 ** 63), 1.5, True, "7", None]


@pytest.mark.parametrize("engine", ENGINES)
def test_non_positive_or_non_integer_deal_no_is_a_bad_record(tmp_path, engine):
    recs = [make("ok", 1, 3)]
    for i, no in enumerate(BAD_DEAL_NO):
        r = make(f"bad{i}", 1, 3)
        r["deal_no"] = no
        recs.append(r)
    path = write(tmp_path, recs)
    code, doc = cli(path, engine)
    assert code == 1
    bad = [f for f in doc["findings"] if f["code"] == "bad_record"]
    assert [f["game_id"] for f in bad] == [f"bad{i}" for i in range(len(BAD_DEAL_NO))]
    assert [f["deal_no"] for f in bad] == [0, -1, -(10 ** 9), -(2 ** 63), None, None, None, None]
    assert all("deal_no" in f["message"] and "\n" not in f["message"] for f in bad)
    assert len(doc["findings"]) == len(BAD_DEAL_NO)  # the good record replays clean
    assert doc["games_summary"] == [{"game_id": "ok", "deals": 1, "totals": [23, 9], "winner": None,
                                     "ended_by": None, "loser": None}]
    assert doc == replay_all(path)


_GUARD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 * 2 ** 30, 2 * 2 ** 30))
from auditor.dealog import read_records
from auditor.fast import pipeline
from auditor.replay.run import replay_records
path = sys.argv[1]
out = {}
for name, run in (("reference", lambda: replay_records(read_records([path]), "reference").to_json()),
                  ("batch", lambda: replay_records(read_records([path]), "batch").to_json()),
                  ("pipeline", lambda: pipeline.replay_paths([path]).to_json())):
    run()  # warm (imports, compiled kernels)
    t = time.perf_counter()
    doc = run()
    out[name] = [time.perf_counter() - t, doc]
out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def test_gap_of_a_billion_is_quick_and_small(tmp_path):
    """Deals 1 and 10**9 (the log that once took 22 GB): each engine replays it in well under a few seconds,
    within a 2 GB address space, with one short deal_sequence. Run in a child process so that a regression fails
    this test instead of eating the machine."""
    path = write(tmp_path, [make("g", 1, 3), make("g", 10 ** 9, 2), make("h", 1, 3), make("h", 2 ** 63 + 1, 3)])
    p = subprocess.run([sys.executable, "-c", _GUARD, str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    docs = []
    for name in ("reference", "batch", "pipeline"):
        secs, doc = out[name]
        assert secs < 3.0, (name, secs)
        docs.append(doc)
        assert codes(doc) == [("deal_sequence", 10 ** 9), ("deal_sequence", 2 ** 63 + 1)]
        assert max(len(f["message"]) for f in doc["findings"]) < 150
    assert docs[0] == docs[1] == docs[2]
    assert out["maxrss_kb"] < 1024 * 1024  # under 1 GB resident (measured ~0.1-0.2 GB)


def _limit_memory():  # for the CLI child processes
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2 ** 30, 2 * 2 ** 30))


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_gap_of_a_billion(tmp_path, engine):
    """`auditor replay --json` on deals 1 and 10**9: exit 1 (a finding), one deal_sequence, quickly."""
    path = write(tmp_path, [make("g", 1, 3), make("g", 10 ** 9, 2)])
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "auditor", "replay", str(path), "--json", "--engine", engine],
                       capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory)
    secs = time.perf_counter() - t
    assert p.returncode == 1, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    doc = json.loads(p.stdout)
    assert codes(doc) == [("deal_sequence", 10 ** 9)]
    assert game(doc, "g")["totals"] == [32, 32]
    assert secs < 20  # the whole process, imports included (about 1 s alone on the machine)


# ---------------------------------------------------------------- re-anchoring


def test_reanchored_totals_that_reach_the_target_end_the_game(tmp_path):
    """Deal 1 unscored with nothing recorded: totals unknown. Deal 2 (dealer 0: A 9, B 23) records totals
    50, 20 and winner 0: re-anchored, A past 41: A wins at deal 2 (no winner_mismatch); deal 3 is after the game,
    replayed on its own (its wrong points are judged) and not chained."""
    recs = [unscored_sw("g"), make("g", 2, 0, {"totals": [50, 20], "winner": 0}),
            make("g", 3, 1, {"points": [12, 21]})]
    doc = replay_all(write(tmp_path, recs))
    assert codes(doc) == [("wrong_hand_size", 1), ("wrong_hand_size", 1), ("play_after_game_end", 3),
                          ("score_mismatch", 3)]
    assert game(doc, "g") == {"game_id": "g", "deals": 3, "totals": [50, 20], "winner": 0, "ended_by": "points",
                              "loser": None}


def test_reanchored_end_without_a_recorded_winner(tmp_path):
    recs = [unscored_sw("g"), make("g", 2, 0, {"totals": [20, 41]}), make("g", 3, 1)]
    doc = replay_all(write(tmp_path, recs))
    assert ("play_after_game_end", 3) in codes(doc) and not [c for c in codes(doc) if c[0] == "winner_mismatch"]
    assert game(doc, "g")["winner"] == 1 and game(doc, "g")["ended_by"] == "points"


def test_reanchored_end_still_judges_a_wrong_winner(tmp_path):
    recs = [unscored_sw("g"), make("g", 2, 0, {"totals": [50, 20], "winner": 1})]
    doc = replay_all(write(tmp_path, recs))
    wm = [f for f in doc["findings"] if f["code"] == "winner_mismatch"]
    assert [f["message"] for f in wm] == ["winner 1 recorded; the replay gives 0"]
    assert game(doc, "g")["winner"] == 0


def test_reanchored_totals_below_the_target_do_not_end_the_game(tmp_path):
    """Re-anchored at 30, 20: not over; a recorded winner there is a winner_mismatch; the next deal is chained
    (30 + 12 = 42: A wins at deal 3)."""
    recs = [unscored_sw("g"), make("g", 2, 0, {"totals": [30, 20], "winner": 0}), make("g", 3, 1)]
    doc = replay_all(write(tmp_path, recs))
    assert codes(doc) == [("wrong_hand_size", 1), ("wrong_hand_size", 1), ("winner_mismatch", 2)]
    assert game(doc, "g") == {"game_id": "g", "deals": 3, "totals": [42, 40], "winner": 0, "ended_by": "points",
                              "loser": None}


@pytest.mark.parametrize("totals,winner", [([45, 50], 0), ([41, 60], 1), ([60, 44], 0)])
def test_reanchored_count_out(tmp_path, totals, winner):
    """Both sides past 41 in the re-anchored totals: the count-out from the totals less the hand (A: Ace 4,
    King 3, Queen 2; B: Ten 10, cards 2, Jack 11). 45, 50: from 36, 27: Ten B 37, cards B 39, Ace A 40, King A
    43: A. 41, 60: from 32, 37: Ten B 47: B. 60, 44: from 51, 21: A is past 41 before the hand and alone after
    the Ten (B 31): A."""
    recs = [unscored_sw("g"), make("g", 2, 0, {"totals": totals, "winner": winner}), make("g", 3, 1)]
    doc = replay_all(write(tmp_path, recs))
    assert [c for c in codes(doc) if c[0] != "wrong_hand_size"] == [("play_after_game_end", 3)]
    assert game(doc, "g")["winner"] == winner and game(doc, "g")["totals"] == totals


def test_known_totals_are_not_re_anchored(tmp_path):
    """The contract: recorded totals re-anchor only where the totals had become unknown. Known totals 23, 9
    plus 9, 23 are 32, 32; the table's 50, 20 is a total_mismatch and does not end the game."""
    recs = [make("g", 1, 3), make("g", 2, 0, {"totals": [50, 20], "winner": 0})]
    doc = replay_all(write(tmp_path, recs))
    assert codes(doc) == [("total_mismatch", 2), ("winner_mismatch", 2)]
    assert game(doc, "g")["totals"] == [32, 32] and game(doc, "g")["winner"] is None


def test_reanchor_by_an_unscored_deal_that_records_totals(tmp_path):
    """An unscored deal with recorded totals re-anchors the game where it was unknown, and ends it when they
    reach the target (as before issue 12: the unscored path)."""
    second = unscored_sw("g")
    second["deal_no"], second["recorded"] = 2, {"totals": [44, 30], "winner": 0}
    doc = replay_all(write(tmp_path, [unscored_sw("g"), second, make("g", 3, 1)]))
    assert ("play_after_game_end", 3) in codes(doc)
    assert not [c for c in codes(doc) if c[0] == "winner_mismatch"]
    assert game(doc, "g")["winner"] == 0 and game(doc, "g")["totals"] == [44, 30]


@pytest.mark.parametrize("totals,winner", [([3, 7], 1), ([7, 8], 1), ([7, 5], 0)])
def test_reanchored_all_fours(tmp_path, totals, winner):
    """All Fours (to 7): deal 1 not scored (unknown card), nothing recorded; deal 2 (gift 1, High 1, Low 0, Game 1)
    re-anchors. 3, 7 and 7, 5: one seat at 7 or more wins. 7, 8, both: from 7 - 1, 8 - 3 = 6, 5 the gift gives
    seat 1 his 6th point and High his 7th, before seat 0's Low: seat 1."""
    first = _deal("reanchor-af", 1)
    second = _deal("reanchor-af", 2)
    second["recorded"] = {"totals": totals, "winner": winner}
    third = _deal("reanchor-af", 3)
    doc = replay_all(write(tmp_path, [first, second, third]))
    assert codes(doc) == [("unknown_card", 1), ("play_after_game_end", 3)]
    assert game(doc, "reanchor-af") == {"game_id": "reanchor-af", "deals": 3, "totals": totals, "winner": winner,
                                        "ended_by": "points", "loser": None}


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_on_the_fixture(engine):
    """`auditor replay --json` on chain_edges.jsonl: exit 1, the hand-worked expectations, and one document for
    both engines."""
    code, doc = cli(FIXTURE, engine)
    assert code == 1
    exp = json.loads(FIXTURE.with_name("chain_edges.expected.json").read_text())
    assert [(f["code"], f["game_id"], f["deal_no"]) for f in doc["findings"]] == \
        [(f["code"], f["game_id"], f["deal_no"]) for f in exp["findings"]]
    assert doc["games_summary"] == exp["games_summary"]
    assert doc == replay_all(FIXTURE)


def test_cli_exit_zero_when_a_long_game_is_clean(tmp_path):
    """Exit 0 still: deals 1 and 2 in order, nothing wrong (a control for the exit-code tests above)."""
    path = write(tmp_path, [make("g", 1, 3), make("g", 2, 0)])
    for engine in ENGINES:
        code, doc = cli(path, engine)
        assert (code, doc["findings"]) == (0, [])


def test_parquet_gives_the_same_chain(tmp_path):
    """The fixture converted to Parquet (deal numbers up to 2**64 - 1 included): the same findings and games with
    both engines as from JSON Lines (sources aside: Parquet rows are named by row)."""
    pq = tmp_path / "chain_edges.parquet"
    out = CliRunner().invoke(app, ["convert", str(FIXTURE), str(pq)])
    assert out.exit_code == 0, out.output

    def key(doc):
        return [(f["code"], f["game_id"], f["deal_no"], f["seat"], f["message"]) for f in doc["findings"]], \
            doc["games_summary"]

    want = key(replay_all(FIXTURE))
    for engine in ENGINES:
        code, doc = cli(pq, engine)
        assert code == 1 and key(doc) == want, engine
