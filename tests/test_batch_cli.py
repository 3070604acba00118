"""`auditor replay` on the batch engine (the default): the same bytes, exit codes and summary as the reference."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.testing.generate import PLAYER_COUNTS, Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

runner = CliRunner()


@pytest.fixture(scope="module")
def messy_log(tmp_path_factory):
    rng = np.random.default_rng(31)
    lines = []
    for (game, preset), counts in PLAYER_COUNTS.items():
        for n in counts:
            recs = random_log(rng, 3, game=game, preset=preset, n=n, id_prefix=f"{game}-{preset}-{n}-",
                              style=Style(revoke_rate=0.03, claim_revokes=0.5))
            lines += mutate_log(rng, recs, rate=0.4)
    path = tmp_path_factory.mktemp("cli") / "messy.jsonl"
    path.write_bytes(to_jsonl(lines))
    return path


def _cli(*args):
    """The console script in a subprocess: the real stdout bytes and exit code."""
    p = subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True)
    return p.returncode, p.stdout, p.stderr


def test_json_output_is_byte_identical(messy_log):
    code_b, out_b, err_b = _cli("replay", messy_log, "--json", "--stats")
    code_r, out_r, _ = _cli("replay", messy_log, "--json", "--engine", "reference")
    assert code_b == code_r == 1
    assert out_b == out_r
    doc = json.loads(out_b)
    assert doc["findings"] and doc["games_summary"]
    stats = json.loads(err_b.decode().split("engine stats: ", 1)[1])
    assert stats["engine"] == "batch" and stats["kernel"] > 0 and stats["records"] == doc["deals"]


def test_examples_fixture(tmp_path):
    from pathlib import Path

    fx = Path(__file__).resolve().parent.parent / "fixtures" / "examples.jsonl"
    want = json.loads((fx.parent / "examples_replay.json").read_text())
    code, out, _ = _cli("replay", fx, "--json")
    assert code == 0 and json.loads(out) == want


def test_terminal_summary_and_bad_engine(messy_log):
    res = runner.invoke(app, ["replay", str(messy_log)])
    assert res.exit_code == 1
    assert "records read" in res.output and "Games" in res.output
    ref = runner.invoke(app, ["replay", str(messy_log), "--engine", "reference"])
    assert ref.output == res.output
    assert runner.invoke(app, ["replay", str(messy_log), "--engine", "fast"]).exit_code == 2


def test_parquet_input(messy_log, tmp_path):
    pq = tmp_path / "messy.parquet"
    assert runner.invoke(app, ["convert", str(messy_log), str(pq)]).exit_code == 0
    code_b, out_b, _ = _cli("replay", pq, "--json")
    code_r, out_r, _ = _cli("replay", pq, "--json", "--engine", "reference")
    assert code_b == code_r and out_b == out_r
