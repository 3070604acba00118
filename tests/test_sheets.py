"""Score sheets (issue 16): a club's paper sheet -> `auditor import` -> score-sheet records -> replay and audit.

- the blank sheet (CSV template, printable HTML) and the typed example of fixtures/sheets/;
- the round trip: a simulated season projected to the sheet a table would write, imported (CSV and .xlsx),
  replays with no finding and the same games as the full log; its Jack facts are the full log's;
- what the replay checks on a sheet: totals, dealer rotation, winner (the count-out as far as a sheet tells),
  the Jack's and Ten's points, a turned-up Jack; each planted error gives its finding;
- every bad cell is one line naming its row and column; exit codes 2 and 3, nothing written;
- the record kind itself: the reader, the schema, Parquet;
- calibration: an honest sheet season is not flagged by dealer_jack or turnup_jack, planted stackers are (fast,
  one season each); the false-positive rate over many honest sheet seasons (slow).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import jsonschema
import numpy as np
import orjson
import pytest
from scipy import stats as st
from typer.testing import CliRunner

from auditor.audit import audit_paths
from auditor.cli import app
from auditor.dealog import read_records, record_from_obj, validate, write_jsonl
from auditor.errors import RecordError
from auditor.facts import facts_from_columns, facts_from_results
from auditor.fast.convert import convert_file
from auditor.detectors import dealer_jack, partner_jack, turnup_jack
from auditor.detectors.partner_jack import sides_from_table
from auditor.replay.run import replay_paths, replay_records
from auditor.sheets.project import write_sheet
from auditor.sheets.read import read_sheet
from auditor.sheets.template import template_columns
from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from conftest import ROOT

SHEETS = ROOT / "fixtures" / "sheets"
EXAMPLE = SHEETS / "example.csv"
SCHEMA = json.loads((ROOT / "auditor" / "deal-log-1.schema.json").read_text(encoding="utf-8"))

# one table of each kind a sheet must carry: partnerships, individual play, the Russian deal of 3 (cards aside: the
# Jack may be out of play), Foster's shown 36th card, All Fours in pairs and threes (begging, bunched deals)
TABLES = [
    TableSpec("sw4", 4, sides=partnerships(4, "pairs")),
    TableSpec("sw5", 5),
    TableSpec("ru3", 3, rules="russian"),
    TableSpec("sw5d", 5, options={"odd_pack": "show_36th_dead"}),
    TableSpec("af4", 4, game="all_fours", sides=partnerships(4, "pairs")),
    TableSpec("af3", 3, game="all_fours"),
]


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _season(deals: int, seed: int, cheaters=(), tables=TABLES, players: int = 24) -> list[dict]:
    spec = SeasonSpec(tables=list(tables), n_deals=deals, players=players, cheaters=list(cheaters))
    return simulate_season(spec, seed=seed).records


def _import(records: list[dict], tmp: Path, name: str = "sheet") -> tuple[Path, list[dict]]:
    """Project the records to a CSV sheet, import it: (the log written, its records)."""
    sheet = tmp / f"{name}.csv"
    write_sheet(records, str(sheet))
    res = read_sheet(str(sheet))
    assert not res.problems, [p.line(str(sheet)) for p in res.problems[:5]]
    log = tmp / f"{name}.jsonl"
    write_jsonl(res.records, str(log))
    return log, list(res.records)


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("honest")
    recs = _season(1500, seed=16)
    full = tmp / "full.jsonl"
    write_jsonl(recs, str(full))
    log, sheet = _import(recs, tmp)
    return {"records": recs, "full": full, "log": log, "sheet": sheet, "tmp": tmp}


# ---------------------------------------------------------------- the blank sheet and the typed example


def test_blank_csv_template_is_the_fixture(tmp_path):
    out = tmp_path / "sheet.csv"
    r = run("score-sheet", out)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (SHEETS / "score_sheet.csv").read_bytes()
    header = out.read_text().strip().split(",")
    assert header == template_columns(4, 2)
    r = run("score-sheet", tmp_path / "af.csv", "--game", "all_fours", "--players", "3")
    assert r.exit_code == 0
    header = (tmp_path / "af.csv").read_text().strip().split(",")
    assert {"beg", "bunched", "seat_3", "points_3"} <= set(header) and "sides" not in header


def test_printable_sheet_html(tmp_path):
    out = tmp_path / "sheet.html"
    r = run("score-sheet", out, "--paper", "letter", "--rows", "12", "--title", "Club <7> & co")
    assert r.exit_code == 0, r.output
    html = out.read_text()
    assert "size: letter landscape" in html and "Club &lt;7&gt; &amp; co" in html and "<7>" not in html
    assert html.count("<tr>") == 13  # the header and 12 blank rows
    for c in template_columns(4, 2):
        assert f">{c}<" in html
    assert run("score-sheet", tmp_path / "a4.html").exit_code == 0
    assert "size: A4 landscape" in (tmp_path / "a4.html").read_text()


@pytest.mark.parametrize("args", [["sheet.pdf"], ["s.csv", "--players", "9"], ["s.csv", "--game", "all_fours",
                                  "--players", "5"], ["s.html", "--paper", "a3"], ["s.csv", "--sides", "1"]])
def test_blank_sheet_usage_errors(tmp_path, args):
    r = run("score-sheet", tmp_path / args[0], *args[1:])
    assert r.exit_code == 2 and "auditor:" in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / args[0]).exists()


def test_typed_example_imports_replays_and_audits_clean(tmp_path):
    log = tmp_path / "club.jsonl"
    r = run("import", EXAMPLE, "--out", log)
    assert r.exit_code == 0, r.stderr
    assert "9 deals of 4 games written" in r.stderr
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert recs[0] == {
        "format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "club-7",
        "game_id": "2026-11-06/club-7/1", "deal_no": 1, "time": "2026-11-06", "players": ["ann", "bob", "cy", "dee"],
        "sides": [[0, 2], [1, 3]], "dealer": 3, "turn_up": "7d", "recorded": {"points": [30, 2], "totals": [30, 2]},
        "observed": {"jack": 2, "ten": 2, "source": f"{EXAMPLE} row 2"}}
    r = run("replay", log, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["findings"] == []
    assert run("audit", log, "--json").exit_code == 0


# ---------------------------------------------------------------- the round trip


def test_round_trip_replays_clean_with_the_full_logs_games(honest):
    recs, sheet = honest["records"], honest["sheet"]
    assert len(sheet) == len(recs)
    for a, b in zip(recs, sheet, strict=True):  # what the sheet keeps of each deal
        for k in ("game", "rules", "table", "deal_no", "players", "sides", "dealer", "turn_up", "shown", "beg"):
            assert a.get(k) == b.get(k), k
        assert b.get("options", {}) == a.get("options", {}) and b["recorded"] == a["recorded"]
        assert "hands" not in b and "tricks" not in b
    full = replay_paths([str(honest["full"])]).to_json()
    batch = replay_paths([str(honest["log"])]).to_json()
    ref = replay_records(read_records([str(honest["log"])]), "reference").to_json()
    assert batch["findings"] == [] and ref["findings"] == []
    assert {f["code"] for f in full["findings"]} == {"revoke"}  # the season's accidental revokes: play, not sheet
    assert batch["games_summary"] == ref["games_summary"]
    gid = {}
    for a, b in zip(recs, sheet, strict=True):
        assert gid.setdefault(a["game_id"], b["game_id"]) == b["game_id"]
    mine = {g["game_id"]: g for g in batch["games_summary"]}
    for g in full["games_summary"]:
        assert {**g, "game_id": gid[g["game_id"]]} == mine[gid[g["game_id"]]]
    # claimed revokes (lose_game) and thrown-in All Fours deals came through the sheet
    assert any(g["ended_by"] == "revoke" for g in full["games_summary"])
    assert any(r.get("bunched") for r in sheet) and any(r["observed"].get("revoke") is not None for r in sheet)
    assert any(r["observed"]["jack"] is None for r in sheet if r["table"] == "ru3")


def test_xlsx_imports_as_the_csv(honest, tmp_path):
    rows = list(csv.reader(io.StringIO((honest["tmp"] / "sheet.csv").read_text())))[:80]
    xlsx = tmp_path / "sheet.xlsx"
    _write_xlsx(xlsx, [rows[0]] + [[int(v) if v.lstrip("-").isdigit() else v for v in r] for r in rows[1:]] +
                [[None] * len(rows[0])])
    r = run("import", xlsx, "--out", tmp_path / "x.jsonl")
    assert r.exit_code == 0, r.stderr
    got = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    want = copy.deepcopy(honest["sheet"][:79])
    for x in got + want:
        x["observed"].pop("source")
    assert got == want


def test_sheet_jack_facts_are_the_full_logs(honest):
    """dealer_jack and partner_jack count the same trials, events and nulls from the sheet as from the full
    log; turnup_jack's first turn-ups are the same events with the null of a deal whose hands are unknown (4/52);
    the oracle (`facts_from_results`) and the table's facts agree on sheet deals."""
    full = replay_paths([str(honest["full"])], table=True)
    sheet = replay_paths([str(honest["log"])], table=True)
    ff, fs = facts_from_columns(full.table), facts_from_columns(sheet.table)
    assert fs.skipped == 0 and not fs.hands_known.any() and ff.hands_known.all()
    sw = fs.game == 0
    assert fs.jack_known[sw].all()
    counts = [(dealer_jack.__name__, dealer_jack.count_facts(ff), dealer_jack.count_facts(fs)),
              (partner_jack.__name__, partner_jack.count_facts(ff, sides_from_table(full.table, ff)),
               partner_jack.count_facts(fs, sides_from_table(sheet.table, fs)))]
    for name, a, b in counts:
        assert set(a) == set(b)
        for player, streams in a.items():
            for s in ("deal", "other", "own", "opp", "others"):
                if s in streams:
                    assert _trials(streams[s]) == _trials(b[player][s]), (name, player, s)
            for s in ("ace", "ten"):  # the controls of other cards: no trial on a sheet
                assert s not in b[player] or len(b[player][s]) == 0, (name, player, s)
    first = fs.tu_run == 0
    assert np.allclose(fs.tu_p[first], 4 / 52) and len(fs.tu_p) == first.sum()
    assert np.array_equal(fs.tu_jack, ff.tu_jack[ff.tu_run == 0])
    assert sum(len(v["first"]) for v in turnup_jack.count_facts(fs).values()) == first.sum()
    # the oracle over DealResults
    rep = replay_records(read_records([str(honest["log"])]), "reference", table=True)
    fo = facts_from_results(rep.results)
    fc = facts_from_columns(rep.table)
    for name in ("order", "holder", "hands_known", "jack_known", "cfg", "seat_player", "turnup", "tu_deal",
                 "tu_jack", "tu_p", "tu_run"):
        assert np.array_equal(getattr(fo, name), getattr(fc, name)), name


def _trials(t) -> tuple:
    """A TrialSummary's trials (null probabilities, trials and events at each), without its timeline (the sheet's
    deals carry their date, the full log's their minute)."""
    return (t.p.tolist(), t.n.tolist(), t.k.tolist())


# ---------------------------------------------------------------- what the replay checks on a sheet


def _rows() -> list[list[str]]:
    return list(csv.reader(io.StringIO(EXAMPLE.read_text())))


def _set(rows: list[list[str]], row: int, **cells) -> None:
    """Set cells of spreadsheet row `row` (the header is row 1)."""
    for k, v in cells.items():
        rows[row - 1][rows[0].index(k)] = str(v)


def _findings(rows: list[list[str]], tmp_path: Path) -> list[tuple[int, str, str]]:
    """(sheet row, code, message) of every replay finding of the typed sheet `rows`."""
    sheet = tmp_path / "typed.csv"
    with sheet.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    res = read_sheet(str(sheet))
    assert not res.problems, res.problems
    log = tmp_path / "typed.jsonl"
    write_jsonl(res.records, str(log))
    batch = replay_paths([str(log)]).to_json()["findings"]
    ref = replay_records(read_records([str(log)]), "reference").to_json()["findings"]
    assert batch == ref
    return [(int(f["source"].rsplit(":", 1)[1]) + 1, f["code"], f["message"]) for f in batch]


def test_the_untouched_example_has_no_finding(tmp_path):
    assert _findings(_rows(), tmp_path) == []


# fixtures/sheets/example.csv, rows 2-10: game 1 (rows 2-3), game 2 (4-5), game 3 (6-7), game 4 (8-10)
@pytest.mark.parametrize("changes, want", [
    ({3: {"total_1": 31}}, [(3, "total_mismatch")]),                           # 30 + 0 is not 31
    ({5: {"dealer": "cy"}}, [(5, "dealer_rotation")]),                         # ann dealt deal 1, so bob deals 2
    ({9: {"winner": 1}}, [(9, "winner_mismatch")]),                            # 36 v 28: nobody has 41 yet
    ({3: {"winner": ""}}, []),                                                 # an absent winner is no finding
    ({3: {"winner": 1}}, [(3, "winner_mismatch")]),                            # 30 v 42: side 2 won
    ({2: {"jack": ""}}, [(2, "score_mismatch")]),                              # every card is in play at 4
    ({2: {"points_1": 12, "total_1": 12}, 3: {"total_1": 12}},
     [(2, "score_mismatch")]),                                                 # cy took the Jack and the Ten: 21
    ({7: {"points_2": 9, "total_2": 24, "winner": ""}}, [(7, "score_mismatch")]),  # bob played the Jack: 11
    ({10: {"points_1": 99, "total_1": 135}}, [(10, "score_mismatch")]),        # more than 30 + 18 in one deal
    ({2: {"turn_up": "Jd"}}, [(2, "turn_up_mismatch")]),                       # dee dealt, so dee had the Jd
    ({2: {"turn_up": "5d"}}, [(2, "card_outside_pack")]),                      # no 5 in Scotch Whist
    ({4: {"revoke": "bob"}}, [(5, "play_after_game_end")]),                    # bob's revoke lost the game
])
def test_planted_errors_give_their_findings(tmp_path, changes, want):
    rows = _rows()
    for row, cells in changes.items():
        _set(rows, row, **cells)
    got = [(r, c) for r, c, _ in _findings(rows, tmp_path)]
    assert got == want


def _sheet_game(deals: list[dict]) -> list[dict]:
    base = {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "t", "game_id": "g",
            "players": ["a", "b", "c", "d"], "sides": [[0, 2], [1, 3]]}
    return [base | {"deal_no": k + 1, "dealer": k % 4} | d for k, d in enumerate(deals)]


def _replay(objs: list[dict]) -> dict:
    recs = [record_from_obj(o, f"x:{i + 1}", 0, i + 1) for i, o in enumerate(objs)]
    return replay_records(recs, "reference").to_json()


@pytest.mark.parametrize("ten, points, winner", [
    (0, [12, 20], 0),   # rules.md D-SW-2: 35 + the Ten reach 41 first, though side 1 ends higher (58 v 47)
    (0, [12, 20], 1),
    (1, [6, 21], 1),    # 38 + the Ten: side 1 first, though side 0 reaches 41 too
    (1, [6, 21], 0),
])
def test_count_out_on_a_sheet_counts_the_ten_first(ten, points, winner):
    totals = [35 + points[0], 38 + points[1]]
    objs = _sheet_game([
        {"turn_up": "7s", "recorded": {"points": [20, 20], "totals": [20, 20]}, "observed": {"jack": 1, "ten": 0}},
        {"turn_up": "7c", "recorded": {"points": [15, 18], "totals": [35, 38]}, "observed": {"jack": 1, "ten": 0}},
        {"turn_up": "7h", "recorded": {"points": points, "totals": totals, "winner": winner},
         "observed": {"jack": 3, "ten": ten}},
    ])
    assert min(totals) >= 41
    doc = _replay(objs)
    assert [f["code"] for f in doc["findings"]] == ([] if winner == ten else ["winner_mismatch"])
    assert doc["games_summary"][0]["winner"] == ten


def test_count_out_the_sheet_cannot_settle_takes_the_recorded_winner():
    # 25 + 10 < 41: the Ten alone takes nobody out; which side reached 41 first depends on cards the sheet never saw
    for w in (0, 1):
        objs = _sheet_game([
            {"turn_up": "7s", "recorded": {"points": [12, 13], "totals": [12, 13]}, "observed": {"jack": 1, "ten": 0}},
            {"turn_up": "7c", "recorded": {"points": [13, 12], "totals": [25, 25]}, "observed": {"jack": 1, "ten": 0}},
            {"turn_up": "7h", "recorded": {"points": [21, 20], "totals": [46, 45], "winner": w},
             "observed": {"jack": 0, "ten": 1}},
        ])
        doc = _replay(objs)
        assert doc["findings"] == [] and doc["games_summary"][0]["winner"] == w


def test_all_fours_turned_jack_on_a_sheet():
    base = {"format": "deal-log/1", "game": "all_fours", "rules": "foster", "table": "t", "game_id": "g",
            "deal_no": 1, "players": ["a", "b"], "dealer": 0, "turn_up": "Jh"}
    ok = base | {"recorded": {"points": [1, 2]}, "observed": {"jack": None, "ten": 1}}
    no_point = base | {"recorded": {"points": [0, 3]}, "observed": {"jack": None, "ten": 1}}
    played = base | {"recorded": {"points": [1, 2]}, "observed": {"jack": 1, "ten": 1}}
    ran = base | {"beg": "run", "recorded": {"points": [1, 2]}, "observed": {"jack": 1, "ten": 1}}
    assert [f["code"] for f in _replay([ok])["findings"]] == []
    assert [f["code"] for f in _replay([no_point])["findings"]] == ["score_mismatch"]
    assert [f["code"] for f in _replay([played])["findings"]] == ["duplicate_card"]
    assert [f["code"] for f in _replay([ran])["findings"]] == []  # a run made another suit trumps


# ---------------------------------------------------------------- bad cells, exit codes


def test_every_bad_cell_is_named_by_row_and_column(tmp_path):
    rows = _rows()
    _set(rows, 2, dealer="Bobb")
    _set(rows, 3, turn_up="1x")
    _set(rows, 4, points_2="")
    _set(rows, 5, date="6/11/2026")
    _set(rows, 6, sides="ann+cy / bob")
    _set(rows, 7, game_no="two", jack="zed")
    _set(rows, 8, seat_3="", winner="3")
    sheet = tmp_path / "bad.csv"
    with sheet.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    out = tmp_path / "bad.jsonl"
    r = run("import", sheet, "--out", out)
    assert r.exit_code == 2 and "Traceback" not in r.output and not out.exists()
    lines = r.stderr.strip().splitlines()
    assert lines[:-1] == [
        f"auditor: {sheet} row 2, column 'dealer': 'Bobb' is not a player at this table (ann, bob, cy, dee)",
        f"auditor: {sheet} row 3, column 'turn_up': '1x' is not a card (rank and suit, e.g. 9d, Ts, Jh, Qc)",
        f"auditor: {sheet} row 4, column 'points_2': blank, and a deal needs every side's points",
        f"auditor: {sheet} row 5, column 'date': '6/11/2026' is not a date (write it as YYYY-MM-DD, e.g. 2026-11-01)",
        f"auditor: {sheet} row 6, column 'sides': 'ann+cy / bob' must name every player once, in groups like "
        "ann+cy / bob+dee (dee in no side)",
        f"auditor: {sheet} row 7, column 'game_no': 'two' is not a whole number",
        f"auditor: {sheet} row 7, column 'jack': 'zed' is not a player at this table (ann, bob, cy, dee)",
        f"auditor: {sheet} row 8, column 'seat_3': blank, but 'seat_4' is not: seats are numbered clockwise from "
        "seat_1 without gaps",
    ]
    assert lines[-1] == f"auditor: 8 bad cell(s) in {sheet}; nothing written"


def test_header_problems_and_unreadable_sheets(tmp_path):
    bad = tmp_path / "h.csv"
    bad.write_text("date,table,game_no,deal_no,seat_1,seat_2,dealr,turn_up,jack,ten,points_1,points_2\n"
                   "2026-11-01,t,1,1,a,b,a,9s,,,1,2\n")
    r = run("import", bad, "--out", tmp_path / "o.jsonl")
    assert r.exit_code == 2
    assert f"{bad} row 1, column 'dealr': not a score-sheet column" in r.stderr
    assert f"{bad} row 1, column 'dealer': the column is missing" in r.stderr
    (tmp_path / "d.csv").mkdir()
    blank = tmp_path / "blank.csv"
    blank.write_text((SHEETS / "score_sheet.csv").read_text() + ",,,,,,,,,,,,,,,,,,\n")
    junk = tmp_path / "junk.xlsx"
    junk.write_bytes(b"not a workbook")
    for path, code, words in [(tmp_path / "missing.csv", 3, "no such file"), (tmp_path / "d.csv", 3, "directory"),
                              (blank, 3, "no deal in the sheet (1 blank rows)"), (junk, 3, "cannot read"),
                              (tmp_path / "s.ods", 2, "must end in .csv or .xlsx")]:
        r = run("import", path, "--out", tmp_path / "o.jsonl")
        assert r.exit_code == code and words in r.stderr and "Traceback" not in r.output, (path, r.output)
    r = run("import", EXAMPLE, "--out", tmp_path / "o.parquet")
    assert r.exit_code == 2 and ".jsonl" in r.stderr
    r = run("import", EXAMPLE, "--out", tmp_path / "o.jsonl", "--rules", "vegas")
    assert r.exit_code == 2 and "vegas" in r.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_spreadsheet_csv_dialects(tmp_path):
    """What spreadsheets write: a byte-order mark, semicolons (decimal-comma locales), a column named twice."""
    text = EXAMPLE.read_text()
    want = [json.loads(x) for x in _imported(EXAMPLE, tmp_path / "want.jsonl")]
    for x in want:
        x["observed"].pop("source")
    for name, data in (("bom.csv", "\ufeff" + text), ("semi.csv", text.replace(",", ";"))):
        (tmp_path / name).write_text(data, encoding="utf-8")
        got = [json.loads(x) for x in _imported(tmp_path / name, tmp_path / f"{name}.jsonl")]
        for x in got:
            assert x["observed"].pop("source").startswith(f"{tmp_path / name} row ")
        assert got == want, name
    lines = text.splitlines()
    dup = tmp_path / "dup.csv"
    dup.write_text("\n".join([lines[0] + ",dealer"] + [x + ",ann" for x in lines[1:]]) + "\n")
    r = run("import", dup, "--out", tmp_path / "dup.jsonl")
    assert r.exit_code == 2 and f"{dup} row 1, column 'dealer': the column is named twice" in r.stderr


def _imported(sheet: Path, out: Path) -> list[str]:
    r = run("import", sheet, "--out", out)
    assert r.exit_code == 0, r.stderr
    return out.read_text().splitlines()


def test_rules_the_row_cannot_hold_are_named(tmp_path):
    rows = _rows()
    rows[0] += ["game", "options"]
    for r in rows[1:]:
        r += ["", ""]
    _set(rows, 2, game="all_fours")  # four players in pairs: an All Fours table too
    _set(rows, 3, options="odd_pack=show_36th_dead")
    _set(rows, 4, options="colour=red")
    _set(rows, 5, options="target")
    sheet = tmp_path / "o.csv"
    with sheet.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    res = read_sheet(str(sheet))
    assert [(p.row, p.column) for p in res.problems] == [(4, "options"), (5, "options")]
    assert "unknown option 'colour'" in res.problems[0].message and "name=value" in res.problems[1].message


# ---------------------------------------------------------------- the record kind


def test_the_reader_and_the_schema_take_sheet_records():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    rec = {
        "format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "t", "game_id": "g",
        "deal_no": 1, "players": ["a", "b", "c", "d"], "sides": [[0, 2], [1, 3]], "dealer": 0, "turn_up": "9d",
        "recorded": {"points": [20, 12]}, "observed": {"jack": 2, "ten": None, "revoke": 1, "source": "s.csv row 2"}}
    d = validate(rec)
    assert d.is_sheet and d.to_canonical()["observed"] == {"jack": 2, "ten": None, "revoke": 1,
                                                           "source": "s.csv row 2"}
    assert validator.is_valid(rec)
    for change, words in [({"observed": None}, "needs 'hands' or 'tricks'"),
                          ({"deck": ["9d"]}, "cannot carry 'deck'"),
                          ({"claims": [{"revoke": 0, "trick": 1}]}, "cannot carry 'claims'"),
                          ({"observed": {"jack": 4}}, "observed.jack must be a seat 0..3"),
                          ({"observed": [2]}, "'observed' must be an object")]:
        bad = rec | change
        with pytest.raises(RecordError, match=re.escape(words)):
            validate(bad)
        if "must be a seat" not in words:
            assert not validator.is_valid(bad), change
    # with hands or tricks the record is an ordinary one: observed is kept, not used
    full = {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster", "table": "t", "game_id": "g",
            "deal_no": 1, "players": ["a", "b"], "dealer": 0, "turn_up": "9d", "tricks": [], "observed": {}}
    assert not validate(full).is_sheet and validator.is_valid(full)


def test_sheet_records_survive_parquet(tmp_path):
    src = tmp_path / "a.jsonl"
    r = run("import", EXAMPLE, "--out", src)
    assert r.exit_code == 0
    convert_file(str(src), str(tmp_path / "a.parquet"))
    convert_file(str(tmp_path / "a.parquet"), str(tmp_path / "b.jsonl"))
    assert (tmp_path / "b.jsonl").read_bytes() == src.read_bytes()
    a = replay_paths([str(src)]).to_json()
    b = replay_paths([str(tmp_path / "a.parquet")]).to_json()
    assert a["games_summary"] == b["games_summary"] and a["findings"] == b["findings"] == []


# ---------------------------------------------------------------- calibration and power


def _jack_flags(log: Path) -> list[tuple[str, str]]:
    rep = audit_paths([str(log)], seed=0)
    tested = {r.test for r in rep.tests if r.n}
    assert {"dealer_jack", "turnup_jack", "partner_jack", "af_dealer_jack"} <= tested  # the sheet was audited
    return sorted((r.test, r.subject) for r in rep.flags if r.test in ("dealer_jack", "turnup_jack"))


def test_an_honest_sheet_season_is_not_flagged(honest):
    assert _jack_flags(honest["log"]) == []


def test_planted_stackers_in_a_sheet_season_are_flagged(tmp_path):
    tables = [TableSpec("sw4", 4, sides=partnerships(4, "pairs")), TableSpec("sw5", 5),
              TableSpec("af4", 4, game="all_fours", sides=partnerships(4, "pairs"))]
    recs = _season(1500, seed=3, tables=tables, players=14,
                   cheaters=[CheaterSpec("ada", "jack_stacker", 0.4), CheaterSpec("ben", "turnup_jack", 0.4)])
    log, _ = _import(recs, tmp_path)
    flags = _jack_flags(log)
    assert ("dealer_jack", "ada") in flags and ("turnup_jack", "ben") in flags
    assert {s for _, s in flags} <= {"ada", "ben"}


@pytest.mark.slow
def test_false_positive_rate_over_honest_sheet_seasons(tmp_path):
    """60 honest sheet seasons of 1,500 deals: the share with any dealer_jack or turnup_jack flag stays within the
    audit's 1 in 20 (binomial 99.9% bound), and each subject's p-value is calibrated: P(p <= 0.05) <= 0.05 within
    its binomial bound over every subject of every season (the Poisson-binomial test is exact and discrete:
    conservative, never liberal)."""
    seasons, flagged, small, tests = 60, 0, 0, 0
    for k in range(seasons):
        log, _ = _import(_season(1500, seed=1000 + k), tmp_path, name=f"s{k}")
        rep = audit_paths([str(log)], seed=k)
        flagged += any(r.test in ("dealer_jack", "turnup_jack") for r in rep.flags)
        for r in rep.tests:
            if r.test in ("dealer_jack", "turnup_jack") and r.n:
                tests += 1
                small += r.pvalue <= 0.05
    print(f"honest sheet seasons: {flagged} of {seasons} with a dealer_jack/turnup_jack flag; "
          f"P(p <= 0.05) = {small}/{tests} = {small / tests:.4f}")
    assert flagged <= st.binom.ppf(0.999, seasons, 0.05), flagged
    assert tests > 1500
    assert small / tests <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / tests), (small, tests)


# ---------------------------------------------------------------- a minimal .xlsx writer (no extra dependency)


def _col(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _write_xlsx(path: Path, rows: list[list]) -> None:
    """One sheet of strings and numbers, as Office Open XML (what a spreadsheet saves)."""
    body = []
    for r, row in enumerate(rows, 1):
        cells = []
        for c, v in enumerate(row):
            ref = f"{_col(c)}{r}"
            if v is None or v == "":
                continue
            if isinstance(v, (int, float)):
                cells.append(f'<c r="{ref}"><v>{v}</v></c>')
            else:
                cells.append(f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(v))}</t></is></c>')
        body.append(f'<row r="{r}">{"".join(cells)}</row>')
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/'
                   'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/'
                   f'xml"/><Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/><Override '
                   f'PartName="/xl/worksheets/sheet1.xml" ContentType="{ct}.worksheet+xml"/></Types>')
        z.writestr("_rels/.rels", f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{pkg}"><Relationship '
                   f'Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
        z.writestr("xl/workbook.xml", f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" '
                   f'xmlns:r="{rel}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels", f'<?xml version="1.0" encoding="UTF-8"?><Relationships '
                   f'xmlns="{pkg}"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
                   '</Relationships>')
        z.writestr("xl/worksheets/sheet1.xml", f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}">'
                   f'<sheetData>{"".join(body)}</sheetData></worksheet>')


def test_orjson_round_trip_of_the_typed_example(tmp_path):
    """The log `import` writes is canonical deal-log/1: every line is its own canonical form."""
    log = tmp_path / "e.jsonl"
    assert run("import", EXAMPLE, "--out", log).exit_code == 0
    for line in log.read_bytes().splitlines():
        assert orjson.dumps(validate(orjson.loads(line)).to_canonical()) == line
