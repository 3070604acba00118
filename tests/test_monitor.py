"""`auditor monitor` (issue 17): the e-processes' guarantee, their power, the trials read off a look, the state
(deals never counted twice, conflicts reported), the alarm page, and the study's smoke version.

Statistical tests use fixed seeds; the full study (200 honest room-years, the stacker's delays) is slow-marked."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st_
from typer.testing import CliRunner

from auditor.audit import replay_for_audit
from auditor.cli import app
from auditor.detectors.dealer_jack import DealerJack
from auditor.detectors.turnup_jack import TurnupJack
from auditor.facts import facts_from_columns
from auditor.monitor.core import monitored_shares, update_streams
from auditor.monitor.eprocess import (
    Q_GRID,
    START_GRID,
    Stream,
    advance,
    betting_log_lr,
    group_log_lr_many,
    log_e_many,
    threshold_log,
)
from auditor.monitor.page import render_alarm
from auditor.monitor.state import DEFAULT_CAPACITY, STATE_FILE, new_state, subject_weight
from auditor.monitor.trials import LookTrials, dealer_jack_trials, marked_ten_trials, turnup_jack_trials

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
P4 = 11 / 35  # a four-player Foster dealer's chance of the Jack of trumps


@pytest.fixture(scope="module")
def day_files(tmp_path_factory) -> list[Path]:
    """The first three days of the demo season, one file per day (as docs/monitor.md splits it)."""
    d = tmp_path_factory.mktemp("days")
    by_day: dict[str, list[str]] = {}
    with gzip.open(DEMO, "rt", encoding="utf-8") as fh:
        for line in fh:
            by_day.setdefault(json.loads(line)["time"][:10], []).append(line)
    out = []
    for day in sorted(by_day)[:3]:
        p = d / f"{day}.jsonl"
        p.write_text("".join(by_day[day]), encoding="utf-8")
        out.append(p)
    return out


def _run(args: list[str]):
    return CliRunner().invoke(app, [str(a) for a in args])


# ---------------------------------------------------------------- the e-process


def test_e_process_has_mean_one_under_the_null_exactly():
    """E[E_T] = 1 under the null, start components included: enumerate every outcome of five looks of four trials
    at p = 11/35 (the component starting at 16 trials joins at the fifth look)."""
    assert 16 in START_GRID
    pmf = st_.binom.pmf(np.arange(5), 4, P4)
    total = 0.0
    for ks in itertools.product(range(5), repeat=5):
        s = Stream.new()
        for k in ks:
            s.update(np.array([P4]), np.array([4]), np.array([k]))
        total += float(np.prod(pmf[list(ks)])) * math.exp(s.log_e)
    assert total == pytest.approx(1.0, abs=1e-9)


def _null_streams(rng, K, looks, per_look, p):
    comp = np.zeros((K, len(Q_GRID), len(START_GRID)))
    trials = np.zeros(K, np.int64)
    best = np.zeros(K)
    naive_p = np.ones(K)
    kk = np.zeros(K)
    for _ in range(looks):
        k = rng.binomial(per_look, p, size=K)
        advance(comp, trials, group_log_lr_many(np.array([p]), np.full((K, 1), per_look), k[:, None]))
        trials += per_look
        kk += k
        best = np.maximum(best, log_e_many(comp))
        naive_p = np.minimum(naive_p, st_.binom.sf(kk - 1, trials, p))
    return best, naive_p


def test_alarm_rate_under_the_null_stays_at_the_level_however_often_one_looks():
    """3,000 honest streams looked at 120 times: the share whose evidence ever reaches 1/a is at most a (Ville),
    while re-running the fixed-sample test at level a at every look flags far more."""
    rng = np.random.default_rng(17)
    a = 0.05
    best, naive_p = _null_streams(rng, 3000, 120, 2, P4)
    rate = float((best >= -math.log(a)).mean())
    assert rate <= a + 3 * math.sqrt(a * (1 - a) / 3000)
    assert float((naive_p <= a).mean()) > 3 * a  # the naive daily re-test: inflated (measured about 0.3)


def test_stacker_is_caught_near_the_fixed_sample_number():
    """A q = 0.25 Jack stacker at four-player tables, two deals a look, under the weight of one of 100 dealers of
    the room: alarmed within 300 deals in at least 90% of 400 runs (the fixed-sample exact test at that level
    needs about 190 deals for 90% power)."""
    rng = np.random.default_rng(25)
    w = subject_weight(monitored_shares()["dealer_jack"], 1, DEFAULT_CAPACITY)
    thr = threshold_log(0.05, w)
    K, alt = 400, P4 + 0.25 * (1 - P4)
    comp = np.zeros((K, len(Q_GRID), len(START_GRID)))
    trials = np.zeros(K, np.int64)
    hit = np.zeros(K, bool)
    for _ in range(150):
        k = rng.binomial(2, alt, size=K)
        advance(comp, trials, group_log_lr_many(np.array([P4]), np.full((K, 1), 2), k[:, None]))
        trials += 2
        hit |= log_e_many(comp) >= thr
    assert hit.mean() >= 0.9


def test_betting_stream_is_valid_on_mean_zero_scores_and_grows_on_positive_ones():
    """The score streams' factors (marked_ten): on bounded scores of null mean 0 the chance of ever reaching 1/a
    is at most a; on scores with a positive mean the evidence grows."""
    rng = np.random.default_rng(6)
    a, K, looks = 0.05, 3000, 60
    q = np.asarray(Q_GRID)

    def run(chance_of_three: float) -> np.ndarray:
        comp = np.zeros((K, len(Q_GRID), len(START_GRID)))
        trials = np.zeros(K, np.int64)
        best = np.zeros(K)
        for _ in range(looks):
            # three deals a look; a deal's score is +3 or -1 (bound M = 1): null mean 0 at chance 1/4
            S = np.where(rng.random((K, 3)) < chance_of_three, 3.0, -1.0)
            advance(comp, trials, np.log1p(q[None, :, None] * S[:, None, :]).sum(2))
            trials += 3
            best = np.maximum(best, log_e_many(comp))
        return best

    assert float((run(0.25) >= -math.log(a)).mean()) <= a + 3 * math.sqrt(a * (1 - a) / K)
    assert float((run(0.4) >= -math.log(a)).mean()) > 0.9  # mean +0.6 a deal
    # the same factors through the stream the monitor keeps
    s = Stream.new()
    S = np.array([3.0, -1.0, -1.0, 3.0])
    s.update_llr(betting_log_lr(S, np.ones(4)), 4, float(S.sum()), 0.0)
    assert s.log_e == pytest.approx(float(log_e_many(
        np.log1p(q[:, None] * S[None, :]).sum(1)[None, :, None] * (np.asarray(START_GRID) == 0)[None, None, :])[0]))


def test_weights_of_every_subject_that_can_come_sum_to_the_share():
    share, cap = 0.3, 100
    total = sum(subject_weight(share, r, cap) for r in range(1, 200_000))
    assert total <= share
    assert total == pytest.approx(share, rel=1e-4)
    assert sum(monitored_shares().values()) == pytest.approx(1.0)


# ---------------------------------------------------------------- the trials of a look


def test_look_trials_are_the_detectors_own_counts(day_files):
    """The monitor's dealer_jack and turnup_jack trials per dealer equal the detectors' groups (p, n, k)."""
    table = replay_for_audit([str(p) for p in day_files[:2]]).table
    facts = facts_from_columns(table)
    for mine, det, stream in ((dealer_jack_trials(table, facts), DealerJack(), "deal"),
                              (turnup_jack_trials(table, facts), TurnupJack(), "first")):
        theirs = {s: v[stream] for s, v in det.count(table, facts=facts).items() if stream in v}
        assert mine and set(mine) == set(theirs)
        for s, t in mine.items():
            assert np.allclose(t.p, theirs[s].p) and np.array_equal(t.n, theirs[s].n)
            assert np.array_equal(t.k, theirs[s].k)
            assert len(t.events) == int(t.k.sum())


def test_marked_ten_look_is_finite_and_bounded(day_files):
    """Every marked_ten deal factor is positive (S_d >= -M_d): each player's log likelihood ratios are finite, and
    at the smallest bet the log factor is within [log(1 - lam), log(1 + lam x the largest ratio)]."""
    table = replay_for_audit([str(p) for p in day_files]).table
    got = marked_ten_trials(table)
    assert len(got) >= 20
    for lt in got.values():
        assert lt.llr is not None and np.isfinite(lt.llr).all() and lt.trials > 0
        assert lt.llr[0] >= lt.trials * math.log1p(-Q_GRID[0]) - 1e-9


# ---------------------------------------------------------------- the command and its state


def test_monitor_over_day_files_and_a_resent_day_changes_nothing(day_files, tmp_path):
    st = tmp_path / "state"
    r1 = _run(["monitor", "--state", st, day_files[0], "--json"])
    assert r1.exit_code in (0, 1), r1.output
    doc1 = json.loads(r1.stdout)
    assert doc1["look"]["look"] == 1 and doc1["look"]["deals_new"] > 250
    assert {"alarms", "subjects", "monitored", "audit_only"} <= set(doc1)
    assert set(doc1["monitored"]) >= {"dealer_jack", "turnup_jack", "marked_ten", "revoke_pattern"}
    r2 = _run(["monitor", "--state", st, day_files[1]])
    assert r2.exit_code in (0, 1) and r2.stdout.startswith("auditor monitor ")
    before = (st / STATE_FILE).read_bytes()
    again = _run(["monitor", "--state", st, day_files[0], "--json"])
    assert again.exit_code == 0
    doc = json.loads(again.stdout)
    assert doc["look"]["deals_new"] == 0 and doc["look"]["deals_repeated"] == doc1["look"]["deals_new"]
    assert (st / STATE_FILE).read_bytes() == before  # nothing changed, byte for byte
    r3 = _run(["monitor", "--state", st, day_files[2], "--json"])
    doc3 = json.loads(r3.stdout)
    assert doc3["look"]["look"] == 3
    assert r3.exit_code == (1 if doc3["new_alarms"] else 0)
    for a in doc3["alarms"]:
        assert {"test", "subject", "since", "evidence", "threshold", "pvalue"} <= set(a)
        assert a["evidence"] >= a["threshold"] * 0.999 or a["since"] < 3
    dj = {e["subject"]: e for e in doc3["subjects"] if e["test"] == "dealer_jack"}
    assert sum(e["trials"] for e in dj.values()) > 0


def test_cutting_the_same_deals_into_other_files_counts_them_once(day_files, tmp_path):
    """Two days as two files, or as one file with the lines reversed plus a copy of one day: the same streams."""
    a = _run(["monitor", "--state", tmp_path / "a", day_files[0], day_files[1], "--json"])
    lines = day_files[0].read_text().splitlines(keepends=True) + day_files[1].read_text().splitlines(keepends=True)
    one = tmp_path / "both.jsonl"
    one.write_text("".join(reversed(lines)))
    b = _run(["monitor", "--state", tmp_path / "b", one, day_files[1], "--json"])
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert db["look"]["deals_repeated"] == len(day_files[1].read_text().splitlines())
    assert da["look"]["deals_new"] == db["look"]["deals_new"]
    def key(d: dict) -> dict:
        return {(e["test"], e["subject"]): (e["trials"], round(e["log10_evidence"], 9)) for e in d["subjects"]}

    assert key(da) == key(db)


def test_a_resent_deal_with_other_content_is_reported_and_not_counted(day_files, tmp_path):
    st = tmp_path / "state"
    _run(["monitor", "--state", st, day_files[0]])
    rec = json.loads(day_files[0].read_text().splitlines()[0])
    rec["turn_up"], changed = ("9d", True) if rec["turn_up"] != "9d" else ("8d", True)
    bad = tmp_path / "resent.jsonl"
    bad.write_text(json.dumps(rec) + "\n")
    r = _run(["monitor", "--state", st, bad, "--json"])
    assert changed and r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["look"]["deals_new"] == 0 and doc["look"]["deals_conflicting"] == 1
    c = doc["conflicts"][0]
    assert (c["table"], c["game_id"], c["deal_no"]) == (rec["table"], rec["game_id"], rec["deal_no"])
    assert "sent again with other content" in r.stderr
    assert doc["conflicts_total"] == 1


def test_usage_errors_and_no_input(day_files, tmp_path):
    st = tmp_path / "state"
    assert _run(["monitor", "--state", st, day_files[0], "--level", "0.1"]).exit_code in (0, 1)
    r = _run(["monitor", "--state", st, day_files[1], "--level", "0.05"])
    assert r.exit_code == 2 and "differs from the state's" in r.stderr
    assert _run(["monitor", "--state", st, day_files[1], "--level", "2"]).exit_code == 2
    assert _run(["monitor", "--state", st, tmp_path / "missing.jsonl"]).exit_code == 3
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / STATE_FILE).write_bytes(b"not gzip")
    r = _run(["monitor", "--state", bad, day_files[0]])
    assert r.exit_code == 2 and "cannot read the monitor state" in r.stderr and "Traceback" not in r.output


# ---------------------------------------------------------------- what a fair-play team sees


def test_alarm_page_shows_the_evidence_and_escapes_names():
    state = new_state(0.05, 100, monitored_shares())
    name = "<script>alert(1)</script>\x1b[31m"
    alt = P4 + 0.5 * (1 - P4)
    rng = np.random.default_rng(3)
    for look in range(1, 40):
        n = 4
        k = int(rng.binomial(n, alt))
        lt = LookTrials(np.array([P4]), np.array([n]), np.array([k]),
                        events=[{"table": "t<1>", "game_id": "g", "deal_no": look, "p": P4}] * k)
        update_streams(state, {"dealer_jack": {name: lt}}, look, f"2026-01-{look % 28 + 1:02d}T20:00:00Z")
    entry = state["streams"]["dealer_jack"][name]
    assert entry["alarm"] is not None
    html = render_alarm(state, "dealer_jack", name)
    assert "<script>" not in html and "\x1b" not in html
    assert "&lt;script&gt;" in html and "alarm threshold" in html and "<svg" in html
    assert "The deals that moved it most" in html and "t&lt;1&gt;" in html


# ---------------------------------------------------------------- the study


def _study():
    spec = importlib.util.spec_from_file_location("study_monitor", ROOT / "bench" / "study_monitor.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_study_smoke():
    doc = _study().main(["--years", "1", "--delays", "3", "--seed", "5"])
    h = doc["honest"]
    assert h["room_years"] == 1 and 35_000 < h["mean_deals"] < 38_000
    assert h["naive_any_flag"] >= h["monitor_any_alarm"]
    d1 = doc["jack_stacker_q025"]["day_1"]
    assert d1["alarmed"] == 3 and 50 < d1["median_deals_to_alarm"] < 400
    assert doc["jack_stacker_q025"]["fixed_sample_90pct_power"]["n_at_stream_level"] > 100


def _room_study():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("study_monitor_room", ROOT / "bench" / "study_monitor_room.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        # registered under its name: its workers' tasks are pickled by reference to `study_monitor_room.room_year`
        # (unregistered, the full study failed at once: "import of module 'study_monitor_room' failed")
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return mod


@pytest.mark.parametrize("generator", ["indep", "project"])
def test_room_study_smoke_every_monitored_stream_is_fed(generator, tmp_path):
    """The whole-room study with play (bench/study_monitor_room.py), a few days of one room from either generator:
    every monitored test gets streams, the revoke stream gets the honest slips, a room's line is written once
    and the summary refuses a room counted twice."""
    mod = _room_study()
    out = tmp_path / "rooms.jsonl"
    mod.main(["run", "--generator", generator, "--rooms", "1", "--days", "8", "--out", str(out)])
    mod.main(["run", "--generator", generator, "--rooms", "1", "--days", "8", "--out", str(out)])  # already there
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    y = json.loads(lines[0])
    assert y["deals"] == 800 and y["looks"] == 8
    assert y["deals_by_game"]["scotch_whist"] > 200 and y["deals_by_game"]["all_fours"] > 100
    for t in ("dealer_jack", "turnup_jack", "marked_ten"):
        assert y[t]["streams"] >= 20, (t, y[t])
    assert y["revoke_pattern"]["trials"] >= 3
    doc = mod.summary([str(out)], None)
    assert doc["room_years"] == 1 and doc["by_test"]["dealer_jack"]["streams"] == y["dealer_jack"]["streams"]
    with pytest.raises(SystemExit, match="twice"):
        mod.summary([str(out), str(out)], None)


def test_stored_room_study_is_its_rooms_summed_and_keeps_the_bar():
    """docs/studies/monitor_rooms_indep_seed19.json is the summary of its 200 room lines (recomputed here), and it
    meets the issue's bar: the upper end of the Wilson interval of the room-years with any alarm at most 1.6 level,
    the naive daily re-audit's rate shown beside it (and far above the level)."""
    mod = _room_study()
    stored = json.loads((ROOT / "docs" / "studies" / "monitor_rooms_indep_seed19.json").read_text())
    again = mod.summary([str(ROOT / "docs" / "studies" / "monitor_rooms_indep_seed19.jsonl")], None)
    assert again == stored
    assert stored["room_years"] >= 200 and stored["looks_per_room"] == [365] and stored["mean_deals"] >= 36_000
    assert all(stored["by_test"][t]["streams"] == 60 * stored["room_years"] for t in stored["by_test"])
    assert stored["monitor_wilson95"][1] <= 1.6 * stored["level"]
    assert stored["naive_rate"] > 4 * stored["level"]


@pytest.mark.slow
def test_room_study_full_two_hundred_honest_room_years(tmp_path):
    """The whole-room study as committed (about 80 minutes on 2 cores): the same numbers again."""
    mod = _room_study()
    out = tmp_path / "rooms.jsonl"
    mod.main(["run", "--rooms", "200", "--seed", "19", "--workers", "2", "--out", str(out)])
    stored = json.loads((ROOT / "docs" / "studies" / "monitor_rooms_indep_seed19.json").read_text())
    again = mod.summary([str(out)], None)
    assert {k: v for k, v in again.items() if k != "cpu_seconds"} == \
        {k: v for k, v in stored.items() if k != "cpu_seconds"}


@pytest.mark.slow
def test_study_full_honest_room_years_and_delays(tmp_path):
    """The issue's study: 200 honest room-years keep the rate of any alarm at most the level (upper end of the
    Wilson 95% interval at most 1.6 level) while the naive daily re-audit's is far above; the stacker's median
    delay from day 1 at most 1.5 times the fixed-sample number."""
    import subprocess
    import sys

    out = tmp_path / "study.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "study_monitor.py"), "--years", "200", "--delays", "100",
                    "--workers", "2", "--json", str(out)], check=True, capture_output=True)
    doc = json.loads(out.read_text())
    h = doc["honest"]
    assert h["monitor_wilson95"][1] <= 1.6 * doc["level"]
    assert h["naive_rate"] > 2 * doc["level"]
    assert doc["jack_stacker_q025"]["day_1"]["ratio_to_fixed_sample"] <= 1.5


@pytest.mark.slow
def test_readme_block_monitors_the_demo_day_by_day(tmp_path):
    """The README's "Continuous monitoring" block, run as written (in a copy of the demo's folder): the stackers
    and the revoker of the demo's key raise alarms."""
    import re
    import shutil
    import subprocess

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Continuous monitoring"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    (tmp_path / "fixtures" / "demo").mkdir(parents=True)
    shutil.copy(DEMO, tmp_path / "fixtures" / "demo" / DEMO.name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text(f". {ROOT / '.venv' / 'bin' / 'activate'}\n")
    subprocess.run(["bash", "-c", block.group(1)], cwd=tmp_path, check=True, capture_output=True)
    r = _run(["monitor", "--state", tmp_path / "demo-state", tmp_path / "demo-days" / "2026-01-05.jsonl", "--json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["looks"] == 26
    alarmed = {(a["test"], a["subject"]) for a in doc["alarms"]}
    assert {("turnup_jack", "otto"), ("dealer_jack", "kate"), ("revoke_pattern", "ray")} <= alarmed
    assert len(list((tmp_path / "demo-state" / "alarms").glob("*.html"))) == len(alarmed)
