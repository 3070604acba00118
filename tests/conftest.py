"""Shared helpers for the replay tests: where the fixtures are, and replaying a file or a list of records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPLAY_FIXTURES = ROOT / "fixtures" / "replay"


def replay_path(*paths):
    """The ReplayReport of the reference engine for these files."""
    from auditor.dealog import read_records
    from auditor.replay.run import replay_records

    return replay_records(read_records([str(p) for p in paths]))


def replay_objs(objs, tmp_path: Path, name: str = "t.jsonl"):
    """Write records (dicts, or raw lines as str) to a file and replay it."""
    p = tmp_path / name
    with open(p, "w", encoding="utf-8") as f:
        for o in objs:
            f.write(o if isinstance(o, str) else json.dumps(o, ensure_ascii=False))
            f.write("\n")
    return replay_path(p)


def counted(report, game_id: str, deal_no: int, nth: int = 0):
    """The points the chain counted for one deal (the nth record with that game and deal number)."""
    hits = [i for i, r in enumerate(report.results) if r.deal.game_id == game_id and r.deal.deal_no == deal_no]
    return report.outcomes[hits[nth]].counted


def summary(report, game_id: str) -> dict:
    return next(g.to_json() for g in report.games_summary if g.game_id == game_id)


@pytest.fixture(scope="session")
def fixture_reports():
    """Every fixture file of fixtures/replay replayed once: name -> ReplayReport."""
    return {p.stem: replay_path(p) for p in sorted(REPLAY_FIXTURES.glob("*.jsonl"))}
