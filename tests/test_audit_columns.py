"""The audit of files through the batch pipeline (its table built from the kernel's arrays) against the audit of
the same records replayed by the reference engine (its table built from the DealResults, `from_results`): the same
document, test for test. And the detectors run in forked workers give what they give one after the other."""

from __future__ import annotations

import json

import numpy as np

from auditor import audit
from auditor.audit import audit_paths, audit_records, run_detectors
from auditor.dealog import read_records
from auditor.fast.pipeline import replay_paths
from auditor.testing.generate import Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

DEMO = "fixtures/demo/season.jsonl.gz"


def test_demo_season_columns_equal_records():
    a = audit_paths([DEMO])
    b = audit_records(read_records([DEMO]), engine="batch")
    da, db = a.to_json(), b.to_json()
    for k in db:
        assert da[k] == db[k], k
    assert json.loads(a.json_bytes()) == db
    assert a.json_bytes() == a.json_bytes(a.to_json(games=False))
    assert da["flags"]  # the demo's planted cheats are found either way


def test_mixed_and_mutated_log_columns_equal_records(tmp_path):
    rng = np.random.default_rng(2026)
    lines = []
    for game, preset, n in (("scotch_whist", "foster", 4), ("scotch_whist", "russian", 3),
                            ("all_fours", "foster", 4), ("scotch_whist", "foster", 6)):
        recs = random_log(rng, 6, game=game, preset=preset, n=n, options={},
                          style=Style(revoke_rate=0.05, claim_revokes=0.5), id_prefix=f"{game}/{preset}/{n}/")
        lines += mutate_log(rng, recs, rate=0.2)
    p = tmp_path / "mixed.jsonl"
    p.write_bytes(to_jsonl(lines))
    a = audit_paths([str(p)], seed=3).to_json()
    b = audit_records(read_records([str(p)]), engine="reference", seed=3).to_json()
    assert a == b


def test_parallel_detectors_equal_serial(monkeypatch):
    cols = replay_paths([DEMO], table=True).table
    monkeypatch.setattr(audit, "PARALLEL_MIN_DEALS", 1)
    par = run_detectors(cols, seed=5)
    monkeypatch.setattr(audit, "PARALLEL_MIN_DEALS", 10**12)
    ser = run_detectors(cols, seed=5)
    assert [t.to_json() for t in par[0]] == [t.to_json() for t in ser[0]]
    assert [f.to_json() for f in par[1]] == [f.to_json() for f in ser[1]]
    assert par[2] == ser[2]
