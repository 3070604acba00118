"""The investigation notebook (notebooks/investigate_season.py, jupytext percent format) runs end to end on a small
season in a real Jupyter kernel, and its drill-down agrees with the audit document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "investigate_season.py"


def test_notebook_executes_on_a_small_season(tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("AUDITOR_NB_DEALS", "1500")
    monkeypatch.setenv("AUDITOR_NB_SEED", "7")
    monkeypatch.setenv("AUDITOR_NB_OUT", str(tmp_path))
    nb = jupytext.read(NOTEBOOK)
    assert sum(c.cell_type == "code" for c in nb.cells) >= 8
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(
        tmp_path)}})
    client.execute()  # raises CellExecutionError on any failing cell (the notebook asserts its own numbers)
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "deals written to" in outputs and "HTML report:" in outputs
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "suspect.png").stat().st_size > 10_000
    key = json.loads((tmp_path / "season.key.json").read_text(encoding="utf-8"))
    assert key["seed"] == 7 and any(c["kind"] == "jack_stacker" for c in key["cheaters"])


def test_notebook_round_trips_through_jupytext():
    """Kept diffable: the percent script converts to a notebook and back without change."""
    jupytext = pytest.importorskip("jupytext")
    text = NOTEBOOK.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")

    def body(s: str) -> list[str]:  # the header's version stamps follow the installed jupytext
        return [line for line in s.splitlines() if "_version:" not in line]

    assert body(jupytext.writes(nb, fmt="py:percent")) == body(text)
