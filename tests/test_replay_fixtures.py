"""Every fixture of fixtures/replay replays to exactly its expected findings (code, game, deal, trick, seat,
line) and games; the fixtures are what build.py makes; every finding code of outputs.md has a fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from auditor.findings import CODES
from conftest import REPLAY_FIXTURES, replay_path

FIXTURE_FILES = sorted(REPLAY_FIXTURES.glob("*.jsonl"))


def _expected(path):
    return json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))


def _line(source: str) -> int | None:
    tail = source.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture_replays_as_expected(path):
    exp = _expected(path)
    rep = replay_path(path)
    doc = rep.to_json()
    assert doc["deals"] == exp["deals"]
    assert doc["games"] == exp["games"]
    got = Counter((f["code"], f["game_id"], f["deal_no"], f["trick"], f["seat"], _line(f["source"]))
                  for f in doc["findings"])
    want = Counter((f["code"], f["game_id"], f["deal_no"], f["trick"], f["seat"], f["line"]) for f in exp["findings"])
    assert got == want, {"unexpected": dict(got - want), "missing": dict(want - got)}
    assert {g["game_id"]: g for g in doc["games_summary"]} == {g["game_id"]: g for g in exp["games_summary"]}
    # every record read is accounted for: replayed, or one bad_record
    bad = sum(1 for f in doc["findings"] if f["code"] == "bad_record")
    assert len(rep.results) + bad == doc["deals"]
    # findings name the file and line, and the player on the seat they point at
    for f in doc["findings"]:
        assert f["source"].startswith(str(path))
        if f["seat"] is not None:
            rec = next(r.deal for r in rep.results if r.deal.game_id == f["game_id"])
            assert f["player"] == rec.players[f["seat"]]


def test_every_finding_code_has_a_fixture():
    seen = set()
    for path in FIXTURE_FILES:
        seen |= {f["code"] for f in _expected(path)["findings"]}
    assert seen == set(CODES), set(CODES) - seen


def test_fixtures_are_what_build_py_makes(tmp_path):
    """The committed fixtures are the builder's output (the builder also checks every play is legal and every
    trick winner written by hand is the winner by the rules)."""
    out = subprocess.run([sys.executable, str(REPLAY_FIXTURES / "build.py"), str(tmp_path)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    made = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in REPLAY_FIXTURES.iterdir() if p.suffix in (".jsonl", ".json"))
    assert made == committed
    for name in made:
        assert (tmp_path / name).read_bytes() == (REPLAY_FIXTURES / name).read_bytes(), name


def test_clean_fixtures_have_no_findings():
    """The per-preset fixtures (sw_*, af_*) hold only the findings their revokes and gifts are meant to give."""
    for path in FIXTURE_FILES:
        if path.stem.startswith(("sw_", "af_")):
            codes = {f["code"] for f in _expected(path)["findings"]}
            assert codes <= {"revoke", "beg_irregular"}, (path.stem, codes)
