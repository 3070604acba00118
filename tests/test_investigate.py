"""`auditor investigate`: one player's tests, controls, the deals behind each score, timeline; terminal and HTML."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from auditor.cards import RJ, parse_card
from auditor.dealgen import Cheat, season
from auditor.dealog import read_records
from auditor.cards import CARD_STR, rank_of
from auditor.errors import UsageError
from auditor.facts import facts_from_results, held_prob
from auditor.investigate import (Deals, build_investigation, concerns, known_players, player_entries,
                                 player_summary, print_investigation, render_investigation_html, top_deals,
                                 write_investigation)
from auditor.replay.run import replay_paths, replay_records
from auditor.select import records_chunks

sys.path.insert(0, str(Path(__file__).parent))
from test_report import HTML_ELEMENTS, _assert_inert, _parse  # noqa: E402
from test_report_data import EVIL, synthetic_doc  # noqa: E402

STACKER = "p007"


@pytest.fixture(scope="module")
def club(tmp_path_factory):
    """A seeded dealing season (four-player Foster) with one Jack stacker, written as deal-log/1 and replayed."""
    s = season("scotch_whist/foster", 4, 8, 60, np.random.default_rng(11),
               cheats={STACKER: Cheat.jack_stacker(0.5)})
    path = tmp_path_factory.mktemp("club") / "club.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for rec in s.records():
            fh.write(json.dumps(rec) + "\n")
    rep = replay_records(read_records([str(path)]), table=True)
    assert rep.findings == []
    return s, rep, path


def test_the_deals_behind_a_dealer_jack_score_are_the_ones_he_held_the_jack(club):
    s, rep, _ = club
    rows, total, origin = top_deals({"test": "dealer_jack", "subject": STACKER}, Deals.of(rep.table), STACKER,
                                    k=1000)
    assert origin == "replay"
    # independently from the records: deals he dealt holding the Jack of the turn-up's suit
    expect = set()
    records = list(s.records())
    for rec in records:
        if rec["players"][rec["dealer"]] != STACKER:
            continue
        jack = parse_card(rec["turn_up"]) // 13 * 13 + RJ
        if jack in {parse_card(c) for c in rec["hands"][rec["dealer"]]}:
            expect.add((rec["game_id"], rec["deal_no"]))
    assert {(r["game_id"], r["deal_no"]) for r in rows} == expect and total == len(expect)
    # every deal the cheat acted on is among them (the stack put the Jack in his hand)
    stacked = {(records[i]["game_id"], records[i]["deal_no"]) for i in np.nonzero(s.stacked)[0]}
    assert stacked and stacked <= expect
    # contribution = 1 - the exact null of the four-player Foster dealer, 11/35
    assert all(abs(r["contribution"] - (1 - 11 / 35)) < 1e-12 for r in rows)
    assert all(r["source"].endswith(f":{int(r['source'].rsplit(':', 1)[1])}") for r in rows)


def test_detector_listed_deals_take_precedence():
    e = {"test": "marked_ten", "subject": "al", "detail": {"top_deals": [
        {"game_id": "g1", "deal_no": 2, "source": "a:3", "contribution": 0.2, "what": "led the Ace"},
        {"game_id": "g1", "deal_no": 5, "source": "a:6", "contribution": 0.9, "what": "kept off trumps"}]}}
    rows, total, origin = top_deals(e, None, "al", k=1)
    assert origin == "detector" and total == 2 and rows[0]["what"] == "kept off trumps"
    rows, total, origin = top_deals({"test": "marked_ten", "subject": "al"}, [], "al")
    assert (rows, total, origin) == ([], 0, "none")


def test_pairs_concern_both_players():
    assert concerns("ann+bob", "ann") and concerns("ann+bob", "bob") and not concerns("ann+bobby", "bob")
    doc = {"tests": [{"test": "collusion", "subject": "ann+bob"}, {"test": "dealer_jack", "subject": "bob"},
                     {"test": "dealer_jack", "subject": "ann"}]}
    assert [e["subject"] for e in player_entries(doc, "bob")] == ["bob", "ann+bob"]


def _club_doc(s, rep, player):
    """An audit document for the club: the synthetic report document with the club's player names."""
    doc = synthetic_doc(seed=5, evil=False, n_dealers=len(s.players))
    rename = {f"p{i:02d}": name for i, name in enumerate(s.players)}
    rename["p07"] = player
    for e in doc["tests"] + doc["flags"]:
        if "+" in e["subject"]:
            a, b = e["subject"].split("+")
            e["subject"] = f"{rename.get(a, a)}+{rename.get(b, b)}"
        else:
            e["subject"] = rename.get(e["subject"], e["subject"])
    doc["replay"] = rep.to_json()
    return doc


def test_investigation_view_terminal_and_html(club, tmp_path):
    s, rep, _ = club
    doc = _club_doc(s, rep, STACKER)
    view = build_investigation(doc, STACKER, rep.table)
    assert view == build_investigation(doc, STACKER, rep.results)  # per-deal results are read through their table
    # issue 16: the flagged result in full, every other test on one line; --all (show_all) gives them all in full
    assert [t["test"] for t in view["tests"]] == ["dealer_jack"] and view["tests"][0]["tier"] == "report"
    assert {q["test"] for q in view["quiet"]} == {e["test"] for e in doc["tests"] if e["subject"] == STACKER
                                                  or STACKER in e["subject"].split("+")} - {"dealer_jack"}
    assert view["paragraph"].startswith(f"{STACKER} received the Jack of trumps in ")
    every = build_investigation(doc, STACKER, rep.table, show_all=True)
    assert [t["test"] for t in every["tests"]][:2] == ["dealer_jack", "marked_ten"] and every["quiet"] == []
    assert len(every["tests"]) == view["n_tests"] == len(view["tests"]) + sum(q["count"] for q in view["quiet"])
    dj = view["tests"][0]
    assert dj["deals"] and dj["deals_origin"] == "replay" and "held the Jack of trumps" in dj["deals"][0]["what"]
    assert dj["controls"] and dj["timeline"].startswith("<svg")
    summary = view["summary"]
    assert summary["dealt"] == int((np.array(s.dealer) == s.players.index(STACKER)).sum())
    assert summary["deals"] == int((np.array(s.seats) == s.players.index(STACKER)).any(axis=1).sum())
    buf = io.StringIO()
    print_investigation(view, Console(file=buf, width=160, color_system=None))
    out = buf.getvalue()
    assert "deals that weigh most" in out and "held the Jack of trumps" in out
    html = render_investigation_html(build_investigation(doc, STACKER, rep.table))
    _assert_inert(_parse(html), HTML_ELEMENTS)
    assert html == render_investigation_html(build_investigation(doc, STACKER, rep.table))
    out_path = tmp_path / "inv.html"
    write_investigation(build_investigation(doc, STACKER, rep.table), out_path)
    assert out_path.read_text(encoding="utf-8") == html
    with pytest.raises(UsageError):
        write_investigation(view, tmp_path / "inv.md")


def test_investigation_escapes_hostile_names():
    doc = synthetic_doc(seed=7)
    for name in EVIL:
        html = render_investigation_html(build_investigation(doc, name, None))
        parsed = _parse(html)
        _assert_inert(parsed, HTML_ELEMENTS)
        assert name in "".join(parsed.text)
        buf = io.StringIO()
        print_investigation(build_investigation(doc, name, None), Console(file=buf, width=200, color_system=None))
        assert name in buf.getvalue().replace("\n", "")


def test_an_unknown_player_gets_no_tests():
    view = build_investigation(synthetic_doc(seed=7), "nobody", None)
    assert view["tests"] == [] and view["headline"] == ("No test of this audit concerns nobody; 1 record not read "
                                                        "(1 breaking the deal-log/1 schema)")  # issue 12


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_report import _entry  # noqa: E402


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(_entry, max_size=5), player=st.sampled_from(["", "a", "a+b", "<x>"]))
def test_odd_documents_never_crash_the_investigation(entries, player):
    for e in entries[::2]:
        e["subject"] = player
    doc = {"tests": entries, "families": [{"test": "dealer_jack", "tests": None}], "replay": {"findings": [
        {"player": player, "code": None}, 3]}}
    view = build_investigation(doc, player, [])
    html = render_investigation_html(view)
    _assert_inert(_parse(html), HTML_ELEMENTS)
    print_investigation(build_investigation(doc, player, []), Console(file=io.StringIO(), width=100))


def test_batch_investigation_equals_the_reference_one():
    """`investigate` audits through the columns and replays only the player's deals into results: the same view
    and document as the reference audit of every deal."""
    from auditor.dealog import read_records
    from auditor.investigate import investigate_records

    recs = list(read_records(["fixtures/demo/season.jsonl.gz"]))
    v1, d1 = investigate_records(recs, "walt", engine="batch")
    v2, d2 = investigate_records(recs, "walt", engine="reference")
    assert d1 == d2
    assert v1 == v2
    assert v1["n_flagged"] >= 1  # the demo's marked-Ten cheater


# ------------------------------------------------------------------ the per-deal views: the table = the oracle

# The views as they were written over the reference engine's per-deal results (`DealResult`): the executable
# spec of what the table-based views (`auditor.investigate`) must list. The deals behind a dealer_jack score are
# the deals the test counts: those whose dealing the facts can audit (`facts_from_results`, the facts' own oracle).


def _oracle_dealer_jack(results, player):
    facts = facts_from_results(results)
    p_of = {int(r): float(held_prob(facts.configs[int(c)], 0, RJ))
            for r, c in zip(facts.result_index, facts.cfg, strict=True)}
    out = []
    for i, r in enumerate(results):
        d = r.deal
        if d.game != "scotch_whist" or r.hands is None or r.trump is None or d.players[d.dealer] != player:
            continue
        jack = r.trump * 13 + RJ
        if not (r.hands[d.dealer] >> jack) & 1 or i not in p_of:
            continue
        turned = parse_card(d.turn_up) == jack
        what = (f"{player} dealt and held the Jack of trumps ({CARD_STR[jack]})"
                + (", the turn-up itself" if turned else f"; the turn-up was {d.turn_up}"))
        out.append({"game_id": d.game_id, "deal_no": d.deal_no, "source": d.source,
                    "contribution": 1.0 - p_of[i], "what": what, "_order": (d.file_index, d.line)})
    return out


def _oracle_turnup_jack(results, player):
    out = []
    for r in results:
        d = r.deal
        if d.game != "all_fours" or d.players[d.dealer] != player:
            continue
        turnups = [d.turn_up] + [run.get("turn_up") for run in (d.runs or []) if isinstance(run, dict)]
        for k, t in enumerate(turnups):
            c = parse_card(t)
            if c is None or rank_of(c) != RJ:
                continue
            p0 = 4 / max(1, 52 - (6 * d.n + k * (3 * d.n + 1)))
            what = (f"{player} turned up {CARD_STR[c]}" + (" on the first turn-up" if k == 0 else
                                                             f" when running the cards (run {k})"))
            out.append({"game_id": d.game_id, "deal_no": d.deal_no, "source": d.source,
                        "contribution": 1.0 - p0, "what": what, "_order": (d.file_index, d.line, k)})
    return out


def _oracle_revoke(results, player):
    out = []
    for r in results:
        d = r.deal
        for trick, seat in r.revokes:
            if d.players[seat] != player:
                continue
            msg = next((f.message for f in r.findings if f.code == "revoke" and f.trick == trick and f.seat == seat),
                       f"{player} revoked in trick {trick}")
            out.append({"game_id": d.game_id, "deal_no": d.deal_no, "source": d.source, "contribution": 1.0,
                        "what": f"trick {trick}: {msg}", "_order": (d.file_index, d.line, trick)})
    return out


def _oracle_summary(results, player):
    if not results:
        return {}
    deals = dealt = 0
    games, tables, partners = set(), set(), {}
    for r in results:
        d = r.deal
        if player not in d.players:
            continue
        deals += 1
        games.add(d.game_id)
        tables.add(d.table)
        seat = d.players.index(player)
        dealt += d.dealer == seat
        if d.sides:
            for s, name in enumerate(d.players):
                if s != seat and d.side_of[s] == d.side_of[seat]:
                    partners[name] = partners.get(name, 0) + 1
    top = sorted(partners.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return {"deals": deals, "dealt": dealt, "games": len(games), "tables": sorted(tables),
            "partners": [{"name": n, "deals": c} for n, c in top]}


ORACLES = {"dealer_jack": _oracle_dealer_jack, "turnup_jack": _oracle_turnup_jack, "revoke_pattern": _oracle_revoke}
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "fixtures" / "replay").glob("*.jsonl")) + [
    "fixtures/examples.jsonl"]


@pytest.mark.parametrize("path", FIXTURES)
def test_the_tables_deals_are_the_per_deal_oracles(path):
    """On every replay fixture (both games, every preset and player count, findings of every kind), with the
    table of either engine: the deals behind each player's dealer_jack, turnup_jack and revoke_pattern scores,
    his summary and the players known are what the per-deal results give."""
    recs = list(read_records([str(ROOT / path)]))
    ref = replay_records(recs, engine="reference", table=True)
    batch = replay_paths([], table=True, chunks=records_chunks(recs))
    findings = [f.to_json() for f in ref.findings]
    players = sorted({p for r in recs if r.deal is not None for p in r.deal.players})
    assert known_players({}, ref.table) == known_players({}, batch.table) == players
    for table in (ref.table, batch.table):
        deals = Deals(table, findings)
        for p in players:
            for test, oracle in ORACLES.items():
                want = sorted(oracle(ref.results, p), key=lambda x: (-x["contribution"], x["_order"]))
                for x in want:
                    x.pop("_order")
                assert top_deals({"test": test, "subject": p}, deals, p, k=10**6) == (want, len(want), "replay"), \
                    (test, p)
            assert player_summary(deals, p) == _oracle_summary(ref.results, p), p


def test_the_deals_behind_a_dealer_jack_score_are_its_count():
    """The deals listed behind a dealer_jack score are the deals the test counted (`observed`), on a fixture
    with cards outside the pack (deals the dealing facts cannot audit and the test does not count)."""
    from auditor.investigate import investigate_records

    recs = list(read_records([str(ROOT / "fixtures/replay/find_cards.jsonl")]))
    view, doc = investigate_records(recs, "eve", engine="batch", show_all=True)  # every test in full
    entry = next(e for e in doc["tests"] if e["test"] == "dealer_jack" and e["subject"] == "eve")
    shown = next(t for t in view["tests"] if t["test"] == "dealer_jack")
    assert shown["deals_total"] == entry["observed"] == 1
