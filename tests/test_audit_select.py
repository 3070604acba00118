"""`auditor audit --table/--game/--since/--until`: which games the audit looks at, counted so that nothing leaves
silently; and the batch audit (columns) against the reference audit (DealResults) on the same selection."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.dealog import read_records
from auditor.errors import UsageError
from auditor.select import Selection, parse_when

DEMO = "fixtures/demo/season.jsonl.gz"
runner = CliRunner()


def _records():
    return list(read_records([DEMO]))


def test_parse_when_dates_are_whole_days():
    a = parse_when("2026-11-30", end=False)
    b = parse_when("2026-11-30", end=True)
    assert a.isoformat() == "2026-11-30T00:00:00+00:00"
    assert b.hour == 23 and b.minute == 59 and b.tzinfo is not None
    assert parse_when("2026-11-30T20:00:00+01:00", end=False).utcoffset().total_seconds() == 3600
    with pytest.raises(UsageError, match="'30/11/2026'"):
        parse_when("30/11/2026", end=False)


def test_every_record_is_accounted_for():
    recs = _records()
    sel = Selection(tables=("sw4-a", "af3"))
    kept = sel.filter(recs)
    s = sel.summary()
    assert s["records_read"] == len(recs) == 8000
    assert {r.deal.table for r in kept if r.deal} == {"sw4-a", "af3"}
    assert s["deals_selected"] == 503 + 955  # the demo's sw4-a and af3 deals, counted from the raw lines
    assert s["deals_selected"] + s["bad_records"] + sum(s["not_selected"].values()) == s["records_read"]
    assert s["not_selected"] == {"table": 8000 - 503 - 955 - s["bad_records"]}


def test_game_kind_and_game_id():
    recs = _records()
    sel = Selection(games=("seven_up",))  # a name the reader accepts for All Fours
    kept = sel.filter(recs)
    assert {r.deal.game for r in kept if r.deal} == {"all_fours"}
    assert sel.selected == 4089  # the demo's All Fours deals
    gid = next(r.deal.game_id for r in recs if r.deal)
    sel = Selection(games=(gid,))
    kept = sel.filter(recs)
    assert {r.deal.game_id for r in kept if r.deal} == {gid}


def test_time_window_selects_whole_games():
    recs = _records()
    sel = Selection(since="2026-02-01", until="2026-02-28")
    kept = [r.deal for r in sel.filter(recs) if r.deal]
    assert kept and sel.not_selected["time"] > 0
    starts: dict[str, str] = {}
    for r in recs:
        if r.deal:
            starts[r.deal.game_id] = min(starts.get(r.deal.game_id, r.deal.time), r.deal.time)
    chosen = {d.game_id for d in kept}
    assert all("2026-02-01" <= starts[g][:10] <= "2026-02-28" for g in chosen)
    # whole games: every deal of a chosen game is kept, even one played after midnight on the 28th
    for g in chosen:
        assert sum(1 for d in kept if d.game_id == g) == sum(1 for r in recs if r.deal and r.deal.game_id == g)


def test_deals_without_time_are_counted_not_dropped(tmp_path):
    lines = [x for x in open("fixtures/examples.jsonl", encoding="utf-8").read().splitlines() if x.strip()]
    objs = [json.loads(x) for x in lines]
    for o in objs:
        o.pop("time", None)
    p = tmp_path / "untimed.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in objs) + "\n", encoding="utf-8")
    sel = Selection(since="2026-01-01")
    kept = sel.filter(read_records([str(p)]))
    assert kept == [] and sel.not_selected == {"no_time": len(objs)}


def test_since_after_until_is_a_usage_error():
    with pytest.raises(UsageError, match="after"):
        Selection(since="2026-03-01", until="2026-02-01")
    res = runner.invoke(app, ["audit", DEMO, "--since", "2026-03-01", "--until", "2026-02-01", "--json"])
    assert res.exit_code == 2 and "after" in res.output


def test_cli_table_filter_batch_equals_reference(tmp_path):
    """The same selection through the batch audit (columns) and the reference audit (DealResults): the same
    document, and its `selection` block counts every record read."""
    docs = []
    for engine in ("batch", "reference"):
        res = runner.invoke(app, ["audit", DEMO, "--table", "sw4-b", "--table", "af2", "--engine", engine,
                                  "--json"])
        assert res.exit_code in (0, 1), res.output[-2000:]
        docs.append(json.loads(res.stdout))
    a, b = docs
    assert a == b
    sel = a["selection"]
    assert sel["records_read"] == 8000 and sel["deals_selected"] == 515 + 820
    assert a["deals"] == sel["deals_selected"] + sel["bad_records"]
    tables = {e["subject"] for e in a["tests"]}
    assert tables  # tests ran on the selection
    assert a["dealing"]["tables"] == 2


def test_report_says_what_was_selected(tmp_path):
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["audit", DEMO, "--game", "all_fours", "--since", "2026-03-01", "--out", str(out)])
    assert res.exit_code in (0, 1), res.output[-2000:]
    html = out.read_text(encoding="utf-8")
    assert "Selection: game all_fours; games started from 2026-03-01" in html
    assert "Selection:" in res.output
    md = tmp_path / "r.md"
    runner.invoke(app, ["audit", DEMO, "--game", "all_fours", "--since", "2026-03-01", "--out", str(md)])
    assert "Selection: game all\\_fours" in md.read_text(encoding="utf-8")
