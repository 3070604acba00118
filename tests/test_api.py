"""Tables for analysts (issue 16): `auditor.run_audit` and `auditor.read_deals` return polars DataFrames that say
exactly what the audit document says, and `auditor audit --out tests.parquet|tests.csv` writes the same tests table.

One small simulated season (1,500 deals, seed 7, with planted cheaters) is audited once for the module; the deals
table is checked against the raw records of fixtures/examples.jsonl (hand-readable) and against the dealer_jack
test's own numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import auditor
from auditor import api, atomic
from auditor.cli import app
from auditor.errors import NoInputError, UsageError
from auditor.simulate import club_season_spec, simulate_season

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "fixtures" / "examples.jsonl"


@pytest.fixture(scope="module")
def season(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("api")
    sim = simulate_season(club_season_spec(n_deals=1500), seed=7)
    path = folder / "season.jsonl"
    sim.write(str(path), key_path=str(folder / "season.key.json"))
    return path


@pytest.fixture(scope="module")
def audited(season):
    return auditor.run_audit(season, seed=0)


@pytest.fixture(scope="module")
def deals(season):
    return auditor.read_deals([season])


def test_part_deals_default_is_the_audits():
    """The CLI's --part-deals default (a literal, so that `auditor --help` imports nothing heavy) is the API's."""
    import inspect

    from auditor import cli
    from auditor.audit import PART_DEALS

    assert inspect.signature(cli.audit).parameters["part_deals"].default.default == PART_DEALS
    assert inspect.signature(api.run_audit).parameters["part_deals"].default == PART_DEALS
    assert inspect.signature(api.check_options).parameters["part_deals"].default == PART_DEALS


def test_tests_are_the_documents_tests(audited):
    doc = audited.document
    t = audited.tests
    assert dict(t.schema) == api.TESTS_SCHEMA
    assert t.height == len(doc["tests"]) > 100
    for row, e in zip(t.iter_rows(named=True), doc["tests"], strict=True):
        assert (row["test"], row["subject"], row["tier"], row["flagged"], row["strong"]) == \
            (e["test"], e["subject"], e["tier"], e["flagged"], e["strong"])
        assert (row["n"], row["observed"], row["expected"], row["pvalue"], row["qvalue"]) == \
            (e["n"], e["observed"], e["expected"], e["pvalue"], e["qvalue"])
        assert row["per_test_level"] == doc["audit"]["per_test_level"][e["test"]]
        assert json.loads(row["controls"]) == e["controls"]
        assert row["sentence"].startswith(e["subject"].split("+")[0]) or e["subject"] in row["sentence"]


def test_flags_are_the_documents_flags(audited):
    doc = audited.document
    f = audited.flags
    assert len(doc["flags"]) >= 1  # the planted trick stacker is caught in this season
    assert f.select("test", "subject").rows() == [(e["test"], e["subject"]) for e in doc["flags"]]
    assert f["flagged"].all() and (f["tier"] == "report").all()
    flagged = audited.tests.filter(pl.col("flagged"))
    assert sorted(flagged.select("test", "subject").rows()) == sorted(f.select("test", "subject").rows())
    assert f["pvalue"].to_list() == sorted(f["pvalue"].to_list())  # most significant first


def test_findings_and_games(audited):
    doc = audited.document
    fin = audited.findings
    assert dict(fin.schema) == api.FINDINGS_SCHEMA
    assert fin.height == len(doc["replay"]["findings"]) > 0
    for row, f in zip(fin.iter_rows(named=True), doc["replay"]["findings"], strict=True):
        assert {k: row[k] for k in f} == f
        assert f"{row['file']}:{row['line']}" == f["source"]
    g = audited.games
    assert dict(g.schema) == api.GAMES_SCHEMA
    assert g.height == len(doc["replay"]["games_summary"]) == doc["games"]
    assert g["deals"].sum() == doc["deals"]
    assert audited.report.replay.games_summary and len(audited.report.replay.games_summary) == g.height


def test_to_pandas(audited):
    pdf = audited.tests.to_pandas()
    assert pdf.shape == audited.tests.shape
    assert str(pdf["pvalue"].dtype) == "float64" and str(pdf["flagged"].dtype) == "bool"
    assert list(pdf.loc[pdf["flagged"], "subject"]) == audited.tests.filter(pl.col("flagged"))["subject"].to_list()
    assert audited.findings.to_pandas()["code"].tolist() == audited.findings["code"].to_list()


def test_cli_out_tests_parquet_round_trips(audited, season, tmp_path):
    out = tmp_path / "tests.parquet"
    r = CliRunner().invoke(app, ["audit", str(season), "--seed", "0", "--json", "--out", str(out)])
    assert r.exit_code == 1, r.output  # flags: exit codes unchanged
    assert f"wrote {out}" in r.stderr
    assert json.loads(r.stdout)["tests"] == audited.document["tests"]
    assert_frame_equal(pl.read_parquet(out), audited.tests)
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left beside it


def test_tests_csv_round_trips(audited, tmp_path):
    """`--out tests.csv` takes the same branch as .parquet (format_of), through write_frame."""
    out = tmp_path / "tests.csv"
    api.write_frame(audited.tests, out)
    assert_frame_equal(pl.read_csv(out, schema=api.TESTS_SCHEMA), audited.tests)
    header = out.read_text(encoding="utf-8").splitlines()[0]
    assert header == ",".join(api.TESTS_SCHEMA)


def test_a_table_is_written_whole_or_not_at_all(audited, tmp_path, monkeypatch):
    out = tmp_path / "tests.parquet"
    out.write_bytes(b"older")

    def half(self, fh, *a, **k):
        fh.write(b"PAR1 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", half)
    with pytest.raises(UsageError, match="No space left on device"):
        api.write_frame(audited.tests, out)
    assert out.read_bytes() == b"older"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(atomic.TMP_PREFIX)] == []
    with pytest.raises(UsageError, match=r"\.parquet or \.csv"):
        api.write_frame(audited.tests, tmp_path / "tests.xlsx")


def test_cli_refuses_a_table_it_cannot_write(season, tmp_path):
    r = CliRunner().invoke(app, ["audit", str(season), "--out", str(tmp_path / "nofolder" / "tests.csv")])
    assert r.exit_code == 2 and "no such folder" in r.stderr


def test_deals_table_of_the_season(deals, audited, season):
    doc = audited.document
    assert dict(deals.schema) == api.DEALS_SCHEMA
    assert deals.height == doc["deals"] == 1502  # every record of the simulated season was replayed
    assert sorted(deals["order"].to_list()) == list(range(deals.height))
    recs = [json.loads(line) for line in season.read_text(encoding="utf-8").splitlines()]
    assert deals["time"].to_list() == [datetime.fromisoformat(r["time"]).astimezone(timezone.utc) for r in recs]
    assert deals["line"].to_list() == list(range(1, len(recs) + 1))
    # the findings column counts the replay's findings at each deal's file:line
    by_source = Counter(f["source"] for f in doc["replay"]["findings"])
    assert dict(zip(deals["source"], deals["findings"], strict=True)) == \
        {s: by_source.get(s, 0) for s in deals["source"]}
    assert deals["findings"].sum() == sum(by_source.values())
    assert deals["revokes"].sum() == sum(f["code"] == "revoke" for f in doc["replay"]["findings"])


def test_deals_give_the_dealer_jack_tests_numbers(deals, audited):
    """The deals a dealer dealt, where the Jack went and its exact null give his dealer_jack entry back."""
    dj = audited.tests.filter(pl.col("test") == "dealer_jack")
    mine = (deals.filter((pl.col("game") == "scotch_whist") & pl.col("jack_where").is_not_null())
            .group_by("dealer_player")
            .agg(pl.len().cast(pl.Int64).alias("n_deals"), (pl.col("jack_where") == "dealer").sum().alias("held"),
                 pl.col("dealer_jack_null").sum().alias("null_sum")))
    j = dj.join(mine, left_on="subject", right_on="dealer_player", how="left")
    assert j.height == dj.height > 20
    assert (j["n"] == j["n_deals"]).all()
    assert (j["observed"] == j["held"].cast(pl.Float64)).all()
    assert ((j["expected"] - j["null_sum"]).abs() <= 1e-5 * j["null_sum"]).all()  # the document keeps 6 digits


def test_deals_against_the_raw_records():
    """Every row of examples.jsonl read off the record itself: names, the turn-up, trumps, who held the Jack of
    trumps, the recorded points."""
    recs = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    d = auditor.read_deals(str(EXAMPLES))
    assert d.height == len(recs)
    for row, rec in zip(d.iter_rows(named=True), recs, strict=True):
        assert (row["table"], row["game_id"], row["deal_no"], row["game"], row["rules"]) == \
            (rec["table"], rec["game_id"], rec["deal_no"], rec["game"], rec["rules"])
        assert row["players"] == rec["players"] and row["n_players"] == len(rec["players"])
        assert row["dealer"] == rec["dealer"] and row["dealer_player"] == rec["players"][rec["dealer"]]
        assert row["turn_up"] == rec["turn_up"] and row["time"] is None and row["options"] is None
        assert row["scored"] and row["findings"] == 0
        if "winner" not in rec["recorded"]:
            assert row["points"] == rec["recorded"]["points"]
        else:  # the points made in the deal; the table counted only what reached the target (All Fours deal 5)
            assert all(p >= q for p, q in zip(row["points"], rec["recorded"]["points"], strict=True))
        if rec.get("runs"):
            continue  # All Fours: a run may change trumps
        suit = rec["turn_up"][1]
        assert row["trump"] == suit
        jack = "J" + suit
        holders = [s for s, hand in enumerate(rec["hands"]) if jack in hand]
        assert row["jack_seat"] == (holders[0] if holders else None)
        if holders:
            assert row["jack_player"] == rec["players"][holders[0]]
            side = {seat: k for k, group in enumerate(rec.get("sides") or [[s] for s in range(len(rec["players"]))])
                    for seat in group}
            assert row["jack_where"] == ("dealer" if holders[0] == rec["dealer"] else "partner"
                                         if side[holders[0]] == side[rec["dealer"]] else "opponent")
        else:
            assert row["jack_where"] == ("turn_up" if rec["turn_up"] == jack else "not_dealt")
        if rec["game"] == "all_fours":
            assert row["dealer_jack_null"] is None
    # Foster, 36 cards, the turn-up in the dealer's hand: it is a Jack (4 of 36 cards), else the Jack of its suit is
    # one of the other 35 cards, of which the dealer holds 17 at two players (18 cards each), 8 at four (9 each):
    # 1/9 + (8/9)(17/35) = 19/35 and 1/9 + (8/9)(8/35) = 11/35 (the README's number)
    for n, hand in ((2, 18), (4, 9)):
        p = d.filter((pl.col("game") == "scotch_whist") & (pl.col("n_players") == n))["dealer_jack_null"]
        want = Fraction(1, 9) + Fraction(8, 9) * Fraction(hand - 1, 35)
        assert want == (Fraction(19, 35) if n == 2 else Fraction(11, 35))
        assert p.len() and ((p - float(want)).abs() < 1e-12).all()


def test_score_sheet_deals_say_where_the_jack_went(tmp_path):
    """A score-sheet record (issue 16: `observed` instead of hands and tricks) gives the same jack columns as the
    full record it was written from."""
    recs = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    recs = [r for r in recs if r["game"] == "scotch_whist"]
    sheets = []
    for r in recs:
        jack = "J" + r["turn_up"][1]
        holder = next((s for s, hand in enumerate(r["hands"]) if jack in hand), None)
        sheet = {k: v for k, v in r.items() if k not in ("hands", "tricks", "deck")}
        sheet["observed"] = {"jack": holder}
        sheets.append(sheet)
    path = tmp_path / "sheet.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in sheets), encoding="utf-8")
    full = auditor.read_deals(EXAMPLES).filter(pl.col("game") == "scotch_whist")
    got = auditor.read_deals(path)
    assert got["sheet"].all() and not full["sheet"].any()
    cols = ["jack_seat", "jack_player", "jack_where", "dealer_jack_null"]
    assert_frame_equal(got.select(cols), full.select(cols))
    assert got["jack_where"].null_count() == 0


def test_selection_and_options(season):
    d = auditor.read_deals(season, table="sw4-a")
    assert d.height > 0 and d["table"].unique().to_list() == ["sw4-a"]
    a = auditor.run_audit(season, table=["sw4-a"], fdr=0.1, seed=3)
    assert a.document["selection"]["tables"] == ["sw4-a"] and a.document["fdr"] == 0.1 and a.document["seed"] == 3
    assert a.document["deals"] == d.height
    with pytest.raises(UsageError, match="--fdr"):
        auditor.run_audit(season, fdr=1.5)
    with pytest.raises(UsageError, match="--engine reference"):
        auditor.run_audit(season, engine="reference", workers=2)
    with pytest.raises(UsageError, match="--since"):
        auditor.read_deals(season, since="2026-12-01", until="2026-01-01")
    with pytest.raises(NoInputError, match="no input could be read"):
        auditor.run_audit(season.parent / "missing.jsonl")


def test_nothing_replayed_gives_empty_frames_and_the_findings(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n{\"format\": \"deal-log/1\"}\n", encoding="utf-8")
    a = auditor.run_audit(bad)
    assert a.tests.height == 0 and dict(a.tests.schema) == api.TESTS_SCHEMA and a.flags.height == 0
    assert a.findings["code"].to_list() == ["bad_record", "bad_record"] and a.findings["line"].to_list() == [1, 2]
    d = auditor.read_deals(bad)
    assert d.height == 0 and dict(d.schema) == api.DEALS_SCHEMA


def test_import_auditor_stays_cheap():
    code = ("import sys, auditor; assert 'polars' not in sys.modules and 'numba' not in sys.modules; "
            "assert {'read_deals', 'run_audit', 'AuditTables'} <= set(dir(auditor)); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert auditor.run_audit is api.run_audit and auditor.read_deals is api.read_deals
    assert auditor.AuditTables is api.AuditTables
    with pytest.raises(AttributeError):
        auditor.no_such_name  # noqa: B018


@pytest.mark.slow
def test_demo_season_tables_equal_the_cli_document(tmp_path):
    """The demo season (8,000 deals, seven planted cheaters): the API's flags are the CLI's, and its tests table is
    the one `--out tests.parquet` writes."""
    demo = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
    a = auditor.run_audit(demo)
    out = tmp_path / "tests.parquet"
    r = CliRunner().invoke(app, ["audit", str(demo), "--json", "--out", str(out)])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["tests"] == a.document["tests"] and doc["flags"] == a.document["flags"]
    assert_frame_equal(pl.read_parquet(out), a.tests)
    assert a.flags.height == len(doc["flags"]) >= 7
    d = auditor.read_deals(demo)
    assert d.height == doc["deals"] - sum(f["code"] == "bad_record" for f in doc["replay"]["findings"])
