"""`auditor audit`: the JSON document of outputs.md, exit codes, determinism, and counts that add exactly across
any partition of the input by table."""

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor import dealgen
from auditor.audit import audit_records, detector_rng, run_detectors
from auditor.columns import from_results
from auditor.cli import app
from auditor.dealgen import Cheat
from auditor.dealog import read_records, write_jsonl
from auditor.detectors.registry import DETECTORS, make_detectors
from auditor.replay.run import replay_records

runner = CliRunner()
DEALING = {"dealer_jack", "turnup_jack", "deal_uniformity", "shuffle_residue", "dealer_cutter", "trick_stack"}

TEST_FIELDS = {"test", "subject", "n", "observed", "expected", "statistic", "pvalue", "qvalue", "method", "flagged",
               "tier", "controls", "detail"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Scotch Whist (with a Jack stacker), All Fours (with a turn-up stacker) and played tables (one bad
    shuffler), in three files."""
    d = tmp_path_factory.mktemp("logs")
    rng = np.random.default_rng(17)
    sw = dealgen.season("scotch_whist/foster", 4, 12, 60, rng, {"p000": Cheat.jack_stacker(0.6)})
    af = dealgen.season("all_fours/foster", 4, 8, 50, rng, {"q001": Cheat("turnup_jack", 0.6)},
                        names=[f"q{i:03d}" for i in range(8)])
    write_jsonl(sw.records(with_deck=True, table_prefix="sw"), str(d / "sw.jsonl"))
    write_jsonl(af.records(table_prefix="af"), str(d / "af.jsonl"))
    played = []
    for t in range(3):
        players = [f"r{t}{k}" for k in range(4)]
        rif = {p: 4 for p in players}
        if t == 0:
            rif["r00"] = 1
        played += list(dealgen.table_sequence("scotch_whist/foster", players, 80, rng, rif, table=f"played{t}"))
    write_jsonl(played, str(d / "played.jsonl"))
    return [str(d / "sw.jsonl"), str(d / "af.jsonl"), str(d / "played.jsonl")]


def test_audit_document_follows_outputs_md(logs):
    res = runner.invoke(app, ["audit", *logs, "--json", "--seed", "7"])
    assert res.exit_code == 1, res.output  # flags
    doc = json.loads(res.stdout)
    assert {"deals", "games", "replay", "seed", "families", "tests", "flags"} <= set(doc)
    assert doc["seed"] == 7
    assert doc["replay"]["deals"] == doc["deals"] == 720 + sum(1 for _ in read_records([logs[1]])) + 240
    assert doc["replay"]["findings"] == []
    tests = doc["tests"]
    assert DEALING <= {t["test"] for t in tests}  # and the play detectors registered beside them
    for t in tests:
        assert TEST_FIELDS <= set(t)
        assert 0 <= t["pvalue"] <= 1 and 0 <= t["qvalue"] <= 1
        assert t["tier"] in ("clear", "watch", "report") and t["flagged"] == (t["tier"] == "report")
    fam = {f["test"]: f for f in doc["families"]}
    for name, f in fam.items():
        assert f["tests"] == sum(1 for t in tests if t["test"] == name)
        assert f["method"] == "audit-wide weighted benjamini-hochberg" and f["fdr"] == 0.05
        assert f["flagged"] == sum(1 for t in tests if t["test"] == name and t["flagged"])
        assert f["per_test_level"] == pytest.approx(0.05 * f["share"] / f["tests"], rel=1e-5)
    # the audit-wide block (issue 11): one procedure over every test, the shares of the tests present sum to 1
    a = doc["audit"]
    assert a["level"] == 0.05 and a["tests"] == len(tests) and a["flags"] == len(doc["flags"])
    assert sum(a["shares"].values()) == pytest.approx(1.0, abs=1e-5) and set(a["shares"]) == set(fam)
    assert a["strong"] == sum(1 for t in tests if t["strong"]) and all(t["flagged"] for t in tests if t["strong"])
    assert a["expected_false_flags_if_all_honest"] == pytest.approx(0.05 / 0.95 ** 2, rel=1e-5)
    flagged = {(f["test"], f["subject"]) for f in doc["flags"]}
    assert ("dealer_jack", "p000") in flagged
    assert ("turnup_jack", "q001") in flagged
    assert ("shuffle_residue", "r00") in flagged
    assert [f["qvalue"] for f in doc["flags"]] == sorted(f["qvalue"] for f in doc["flags"])
    assert all(f["flagged"] for f in doc["flags"])
    assert any("growing log" in n for n in doc["notes"])
    dj = next(t for t in tests if t["test"] == "dealer_jack" and t["subject"] == "p000")
    assert dj["method"] == "exact poisson-binomial, one-sided"
    assert set(dj["controls"]) == {"not_dealing", "trump_ace_as_dealer", "trump_ten_as_dealer"}
    assert {"timeline", "null_rate", "min_detectable", "funnel"} <= set(dj["detail"])


def test_same_seed_same_document_and_out_file(logs, tmp_path):
    out = tmp_path / "report.json"
    a = runner.invoke(app, ["audit", *logs[1:], "--json", "--seed", "3", "--out", str(out)])
    b = runner.invoke(app, ["audit", *logs[1:], "--json", "--seed", "3"])
    assert a.stdout == b.stdout
    assert json.loads(out.read_text()) == json.loads(a.stdout)


def test_exit_codes(logs, tmp_path):
    honest = tmp_path / "honest.jsonl"
    s = dealgen.season("scotch_whist/foster", 4, 4, 10, np.random.default_rng(1))
    write_jsonl(s.records(), str(honest))
    r = runner.invoke(app, ["audit", str(honest), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["flags"] == []
    assert runner.invoke(app, ["audit", str(honest), "--fdr", "1.5"]).exit_code == 2
    assert runner.invoke(app, ["audit", str(honest), "--seed", "-1"]).exit_code == 2
    assert runner.invoke(app, ["audit", str(tmp_path / "missing.jsonl")]).exit_code == 3
    assert runner.invoke(app, ["audit", str(honest), "--out", str(tmp_path / "x.pdf")]).exit_code == 2


def test_bad_input_is_a_finding_not_a_traceback(tmp_path):
    p = tmp_path / "bad.jsonl"
    s = dealgen.season("scotch_whist/foster", 4, 4, 3, np.random.default_rng(2))
    recs = list(s.records())
    recs[0]["hands"][0][0] = recs[0]["hands"][1][0]  # a duplicate card
    lines = [json.dumps(r) for r in recs] + ["{not json", '{"format": "deal-log/1"}']
    p.write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["audit", str(p), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit)
    doc = json.loads(r.stdout)
    codes = {f["code"] for f in doc["replay"]["findings"]}
    assert {"bad_record", "duplicate_card"} <= codes
    assert doc["dealing"]["deals_not_auditable"] == 1
    assert doc["dealing"]["deals_audited"] == len(recs) - 1


def test_terminal_summary_runs(logs):
    r = runner.invoke(app, ["audit", logs[1]])
    assert r.exit_code == 1
    out = " ".join(r.stdout.split())  # rich wraps long lines
    assert "q001" in out and "turned up a Jack" in out and "repeated audit" in out


def _docs(tests):
    return [t.to_json() for t in sorted(tests, key=lambda t: (t.test, t.subject))]


@pytest.mark.parametrize("split_seed", [0, 1, 2])
def test_any_split_by_table_gives_identical_results(logs, split_seed):
    """Count each group of tables separately, merge, finalize: identical to counting everything at once."""
    rep = replay_records(read_records(logs))
    results = rep.results
    tables = sorted({r.deal.table for r in results})
    rng = np.random.default_rng(split_seed)
    groups = rng.integers(0, 1 + split_seed + 1, size=len(tables))
    for name in DETECTORS:
        det = make_detectors(only=[name])[0]
        if hasattr(det, "mc_max"):
            det.mc_max = 300
        whole = det.finalize(_count(det, results, detector_rng(5, name)), detector_rng(5, name))
        parts = []
        order = list(rng.permutation(int(groups.max()) + 1))
        for g in order:  # partitions counted in any order
            mine = {t for t, k in zip(tables, groups, strict=False) if k == g}
            sub = [r for r in results if r.deal.table in mine]
            if sub:
                parts.append(_count(det, sub, detector_rng(5, name)))
        merged = det.finalize(det.merge(parts), detector_rng(5, name))
        assert _docs(merged) == _docs(whole), name
        assert whole or name not in DEALING, name


def _count(det, results, rng):
    """A detector's count of the table of these deals."""
    return det.count(from_results(results), rng)


def test_audit_counts_per_table_equal_whole(logs):
    """The audit counts the whole table at once; counting each table's deals apart and merging gives the same
    families."""
    rep = replay_records(read_records(logs), table=True)
    tests, fams, _, _ = run_detectors(rep.table, seed=9)
    by_table: dict = {}
    for r in rep.results:
        by_table.setdefault(r.deal.table, []).append(r)
    whole = []
    for det in make_detectors():
        rng = detector_rng(9, det.name)
        whole += det.finalize(det.merge([_count(det, rs, rng) for _, rs in sorted(by_table.items())]), rng)
    from auditor.detectors.registry import SHARES
    from auditor.stats.family import apply_audit

    tested, fams2, _ = apply_audit(whole, 0.05, SHARES)
    assert _docs(tested) == _docs(tests)
    assert [f.to_json() for f in fams2] == [f.to_json() for f in fams]


def test_console_script_entry_point(logs):
    r = subprocess.run([sys.executable, "-m", "auditor", "audit", logs[1], "--json"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1
    assert json.loads(r.stdout)["flags"][0]["subject"] == "q001"


def test_audit_records_api(logs):
    rep = audit_records(read_records(logs[1:2]), fdr=0.01, seed=4)
    doc = rep.to_json()
    assert doc["fdr"] == 0.01 and doc["seed"] == 4
    assert all(f["fdr"] == 0.01 for f in doc["families"])
