"""The investigation notebook (notebooks/investigate_season.py, jupytext percent format) runs end to end on a small
season in a real Jupyter kernel through its one documented command (`python notebooks/run.py`, issue 16), takes its
tables from the analysts' API, and its drill-down agrees with the audit document (the notebook asserts its own
numbers: a failing assertion fails its cell, and the command exits 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "investigate_season.py"
RUN = ROOT / "notebooks" / "run.py"
COMMAND = "python notebooks/run.py"


def test_the_documented_command_runs_the_notebook(tmp_path):
    pytest.importorskip("jupytext")
    pytest.importorskip("nbclient")
    out = tmp_path / "nb"
    r = subprocess.run([sys.executable, str(RUN), "--deals", "1500", "--seed", "7", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "investigate_season.ipynb" in r.stdout
    nb = json.loads((out / "investigate_season.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 8 and all(c.get("execution_count") for c in code)
    outputs = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
    assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert "deals written to" in outputs and "HTML report:" in outputs and "caught:" in outputs
    assert (out / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (out / "suspect.png").stat().st_size > 10_000
    key = json.loads((out / "season.key.json").read_text(encoding="utf-8"))
    assert key["seed"] == 7 and any(c["kind"] == "jack_stacker" for c in key["cheaters"])


def test_a_failing_cell_is_exit_1_and_a_bad_option_exit_2(tmp_path, monkeypatch, capsys):
    """The command does not pass when a cell fails (the notebook's own assertions live in its cells)."""
    nbclient = pytest.importorskip("nbclient")
    import importlib.util

    spec = importlib.util.spec_from_file_location("nb_run", RUN)
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)

    def failing(out, deals, seed):
        raise nbclient.exceptions.CellExecutionError("Traceback ...", "AssertionError: his deals", "AssertionError")

    monkeypatch.setattr(run, "execute", failing)
    assert run.main(["--deals", "10", "--out", str(tmp_path)]) == 1
    assert "a cell failed" in capsys.readouterr().err
    assert run.main(["--deals", "0"]) == 2


def test_the_notebook_uses_the_api_and_its_command_is_documented():
    text = NOTEBOOK.read_text(encoding="utf-8")
    assert "auditor.run_audit(" in text and "auditor.read_deals(" in text
    assert "report.replay.results" not in text  # the tables come from the API, not rebuilt by hand
    for doc in (ROOT / "notebooks" / "README.md", ROOT / "README.md"):
        assert COMMAND in doc.read_text(encoding="utf-8"), doc


def test_notebook_round_trips_through_jupytext():
    """Kept diffable: the percent script converts to a notebook and back without change."""
    jupytext = pytest.importorskip("jupytext")
    text = NOTEBOOK.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")

    def body(s: str) -> list[str]:  # the header's version stamps follow the installed jupytext
        return [line for line in s.splitlines() if "_version:" not in line]

    assert body(jupytext.writes(nb, fmt="py:percent")) == body(text)
