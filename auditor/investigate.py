"""`auditor investigate PATH... --player NAME`: everything about one player, in the terminal and as HTML.

For each test that concerns the player (as a subject, or as one side of an ordered pair): the plain sentence, the
p- and q-value, the controls beside the score, the smallest cheat his play could have revealed, the timeline of his
cumulative excess, and the deals that contribute most to the score (game, deal, where in the logs, what happened).
Then the replay findings that name him and a summary of his play.

Where the deals come from: a detector may list them itself in its entry's `detail.top_deals` (a list of
`{game_id, deal_no, source, contribution, what}`); otherwise the deals are read off the replay for the tests whose
score is a count of deal events (`dealer_jack`, `turnup_jack`, `revoke_pattern`), each deal's contribution being
its event minus its honest probability; other tests say that they do not attribute their score to single deals.

The view is built by `build_investigation(doc, player, results)` from the audit document and the replayed deals,
so the terminal and the HTML say the same thing.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from markupsafe import Markup
from rich.markup import escape as _markup
from rich.table import Table

from .atomic import write_text
from .cards import CARD_STR, RJ, parse_card, rank_of
from .errors import RulesError, UsageError
from .facts import config, held_prob
from .report import sentences, svg
from .report.html import environment, html_safe
from .report.terminal import SafeConsole
from .report.verdict import Coverage
from .textsafe import visible

TOP_DEALS = 10
SUIT_WORDS = ("spades", "hearts", "diamonds", "clubs")


# ------------------------------------------------------------------ which entries concern the player


def concerns(subject: str, player: str) -> bool:
    """The subject is the player, or an ordered pair `a+b` with the player on one side."""
    subject = str(subject)
    return subject == player or subject.startswith(player + "+") or subject.endswith("+" + player)


def player_entries(doc: dict, player: str) -> list[dict]:
    tests = doc.get("tests") if isinstance(doc.get("tests"), list) else []
    out = [e for e in tests if isinstance(e, dict) and concerns(e.get("subject", ""), player)]
    return sorted(out, key=lambda e: (*sentences.section_key(e.get("test")), str(e.get("subject"))))


def known_players(doc: dict, results: Sequence | None = None) -> list[str]:
    names: set[str] = set()
    for r in results or ():
        names.update(r.deal.players)
    for e in doc.get("tests", []) if isinstance(doc.get("tests"), list) else []:
        if isinstance(e, dict) and isinstance(e.get("subject"), str) and "+" not in e["subject"]:
            names.add(e["subject"])
    return sorted(names)


def suggest(player: str, names: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(player, list(names), n=5, cutoff=0.5)


# ------------------------------------------------------------------ the deals behind a score


def _dealer_jack_deals(results: Sequence, player: str) -> list[dict]:
    out = []
    for r in results:
        d = r.deal
        if d.game != "scotch_whist" or r.hands is None or r.trump is None or d.players[d.dealer] != player:
            continue
        jack = r.trump * 13 + RJ
        if not (r.hands[d.dealer] >> jack) & 1:
            continue
        try:
            p0 = float(held_prob(config(d.ruleset, d.n), 0, RJ))  # exact, relative seat 0 = the dealer
        except (RulesError, LookupError, ValueError, ArithmeticError):  # a layout the rules cannot give: the
            # replay has already reported the record
            continue
        turned = parse_card(d.turn_up) == jack
        what = (f"{player} dealt and held the Jack of trumps ({CARD_STR[jack]})"
                + (", the turn-up itself" if turned else f"; the turn-up was {d.turn_up}"))
        out.append({"game_id": d.game_id, "deal_no": d.deal_no, "source": d.source,
                    "contribution": 1.0 - p0, "what": what, "_order": (d.file_index, d.line)})
    return out


def _turnup_jack_deals(results: Sequence, player: str) -> list[dict]:
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
            out_before = 6 * d.n + k * (3 * d.n + 1)  # cards dealt and turned before this turn-up
            p0 = 4 / max(1, 52 - out_before)  # the Jacks' share of the unseen cards, on average
            what = (f"{player} turned up {CARD_STR[c]}" + (" on the first turn-up" if k == 0 else
                                                             f" when running the cards (run {k})"))
            out.append({"game_id": d.game_id, "deal_no": d.deal_no, "source": d.source,
                        "contribution": 1.0 - p0, "what": what, "_order": (d.file_index, d.line, k)})
    return out


def _revoke_deals(results: Sequence, player: str) -> list[dict]:
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


REPLAY_ATTRIBUTION = {"dealer_jack": _dealer_jack_deals, "turnup_jack": _turnup_jack_deals,
                      "revoke_pattern": _revoke_deals}


def top_deals(entry: dict, results: Sequence | None, player: str, k: int = TOP_DEALS) -> tuple[list[dict], int, str]:
    """(the k deals that contribute most, how many contribute, where they come from)."""
    detail = entry.get("detail") if isinstance(entry.get("detail"), dict) else {}
    listed = detail.get("top_deals", detail.get("deals"))
    if isinstance(listed, list) and listed and all(isinstance(x, dict) for x in listed):
        rows = []
        for x in listed:
            contrib = sentences.finite(x.get("contribution", x.get("score")))
            rows.append({"game_id": x.get("game_id"), "deal_no": x.get("deal_no"), "source": x.get("source"),
                         "contribution": contrib, "what": str(x.get("what") or x.get("message") or "")})
        rows.sort(key=lambda x: -(x["contribution"] if x["contribution"] is not None else -math.inf))
        return rows[:k], len(rows), "detector"
    fn = REPLAY_ATTRIBUTION.get(str(entry.get("test")))
    if fn is None or results is None or str(entry.get("subject")) != player:
        return [], 0, "none"
    rows = fn(results, player)
    rows.sort(key=lambda x: (-x["contribution"], x["_order"]))
    for x in rows:
        x.pop("_order", None)
    return rows[:k], len(rows), "replay"


# ------------------------------------------------------------------ the view


def _fmt_contrib(x: Any) -> str:
    v = sentences.finite(x)
    return "n/a" if v is None else f"{v:+.2f}"


def player_summary(results: Sequence | None, player: str) -> dict:
    if not results:
        return {}
    deals = dealt = 0
    games: set[str] = set()
    tables: set[str] = set()
    partners: dict[str, int] = {}
    for r in results:
        d = r.deal
        if player not in d.players:
            continue
        deals += 1
        games.add(d.game_id)
        tables.add(d.table)
        seat = d.players.index(player)
        if d.dealer == seat:
            dealt += 1
        if d.sides:
            side = d.side_of
            for s, name in enumerate(d.players):
                if s != seat and side[s] == side[seat]:
                    partners[name] = partners.get(name, 0) + 1
    top_partners = sorted(partners.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return {"deals": deals, "dealt": dealt, "games": len(games), "tables": sorted(tables),
            "partners": [{"name": n, "deals": c} for n, c in top_partners]}


def build_investigation(doc: dict, player: str, results: Sequence | None = None, charts: bool = True,
                        k: int = TOP_DEALS) -> dict:
    """Everything the audit says about `player`, as plain data (charts as SVG strings when `charts`)."""
    doc = doc if isinstance(doc, dict) else {}
    entries = player_entries(doc, player)
    fams = {str(f.get("test")): f for f in doc.get("families", []) if isinstance(f, dict)} \
        if isinstance(doc.get("families"), list) else {}
    tests = []
    for e in entries:
        ev = sentences.entry_view(e)
        rows, total, origin = top_deals(e, results, player, k)
        fam = fams.get(ev["test"], {})
        tests.append({
            **ev,
            "family_size": sentences.fmt_num(fam.get("tests")) if fam else "n/a",
            "deals": [{"game_id": "" if r["game_id"] is None else str(r["game_id"]),
                       "deal_no": "" if r["deal_no"] is None else str(r["deal_no"]),
                       "source": "" if r["source"] is None else str(r["source"]),
                       "contribution": _fmt_contrib(r["contribution"]), "what": r["what"]} for r in rows],
            "deals_total": total, "deals_origin": origin,
            "deals_note": _deals_note(ev["test"], total, len(rows), origin),
            "timeline": svg.timeline(e) if charts else "",
        })
    replay = doc.get("replay") if isinstance(doc.get("replay"), dict) else {}
    findings = [f for f in replay.get("findings", []) if isinstance(f, dict) and f.get("player") == player] \
        if isinstance(replay.get("findings"), list) else []
    flagged = [t for t in tests if t["tier"] == "report"]
    watch = [t for t in tests if t["tier"] == "watch"]
    if flagged:
        headline = f"{player} is flagged by {len(flagged)} test{'s' if len(flagged) != 1 else ''}: " + \
            ", ".join(t["test"] for t in flagged)
    elif watch:
        headline = f"{player} is not flagged; on the watch list of " + ", ".join(t["test"] for t in watch)
    elif tests:
        headline = f"{player} is not flagged by any of {len(tests)} tests"
    else:
        headline = f"No test of this audit concerns {player}"
    headline += Coverage.of_doc(doc).unread_clause()  # issue 12: "; 3 records not read (2 not valid JSON, ...)"
    return {
        "player": player, "headline": headline, "n_flagged": len(flagged), "tests": tests,
        "findings": [{"code": str(f.get("code", "")), "source": str(f.get("source") or ""),
                      "where": sentences.finding_where(f), "message": str(f.get("message") or "")} for f in findings],
        "summary": player_summary(results, player), "seed": "n/a" if doc.get("seed") is None else str(doc["seed"]),
        "not_clean_note": sentences.NOT_CLEAN_NOTE, "monthly_note": sentences.MONTHLY_NOTE,
        "how_to_read": sentences.HOW_TO_READ,
    }


def _deals_note(test: str, total: int, shown: int, origin: str) -> str:
    if origin == "none":
        return "This test does not attribute its score to single deals."
    if total == 0:
        return f"No deal of this player {sentences.spec_of(test).event}."
    more = f" (the {shown} that weigh most are listed)" if total > shown else ""
    return (f"{total} deal{'s add' if total != 1 else ' adds'} to the score{more}. Contribution: what the deal added "
            f"to observed minus expected (a rarer event adds more).")


# ------------------------------------------------------------------ rendering


def render_investigation_html(view: dict) -> str:
    for t in view["tests"]:
        t["timeline"] = Markup(t["timeline"])
    return html_safe(environment().get_template("investigate.html.j2").render(v=view))


def print_investigation(view: dict, console=None) -> None:
    def escape(text) -> str:  # issue 12: no control or bidi character from a log reaches the terminal
        return _markup(visible(text))

    con = console or SafeConsole()
    style = "bold red" if view["n_flagged"] else "bold"
    con.print(f"[{style}]{escape(view['headline'])}.[/]")
    s = view["summary"]
    if s:
        partners = ", ".join(f"{p['name']} ({p['deals']})" for p in s["partners"])
        con.print(escape(f"{s['deals']:,} deals played in {s['games']:,} games at {len(s['tables'])} table(s); "
                         f"{s['dealt']:,} dealt" + (f"; partners: {partners}" if partners else "")))
    for t in view["tests"]:
        colour = {"report": "red", "watch": "yellow"}.get(t["tier"], "green")
        con.rule(f"[{colour}]{escape(t['title'])} — {escape(t['tier_words'])}[/]")
        con.print(escape(t["sentence"]))
        con.print(f"[dim]{escape(t['sensitivity'])} Family of {escape(t['family_size'])} subjects.[/]")
        if t["controls"]:
            ct = Table(title="controls (in no family: they inform, they do not flag)", title_justify="left")
            ct.add_column("control")
            ct.add_column("result", overflow="fold")
            for c in t["controls"]:
                ct.add_row(escape(c["label"]), escape(c["text"]))
            con.print(ct)
        if t["deals"]:
            dt = Table(title="deals that weigh most", title_justify="left")
            for col in ("game", "deal", "where", "contribution", "what happened"):
                dt.add_column(col, overflow="fold", justify="right" if col == "contribution" else "left")
            for d in t["deals"]:
                dt.add_row(escape(d["game_id"]), escape(d["deal_no"]), escape(d["source"]), d["contribution"],
                           escape(d["what"]))
            con.print(dt)
        con.print(f"[dim]{escape(t['deals_note'])}[/]")
    if view["findings"]:
        ft = Table(title=f"replay findings naming {escape(view['player'])}")
        for col in ("where in the logs", "code", "game / deal / trick", "what happened"):
            ft.add_column(col, overflow="fold")
        for f in view["findings"][:200]:
            ft.add_row(escape(f["source"]), escape(f["code"]), escape(f["where"]), escape(f["message"]))
        con.print(ft)
    con.print(f"[dim]Not flagged is not clean. {escape(view['not_clean_note'])}[/]")


# ------------------------------------------------------------------ the command


def write_investigation(view: dict, path) -> None:
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--out {str(path)!r}: the investigation is written as HTML (.html)")
    try:
        write_text(path, render_investigation_html(view))  # whole or not at all (issue 12)
    except OSError as e:
        raise UsageError(f"cannot write {str(path)!r}: {e.strerror or e}") from None


def investigate_records(records, player: str, fdr: float = 0.05, seed: int = 0, engine: str = "reference",
                        k: int = TOP_DEALS) -> tuple[dict, dict]:
    """Audit the records (every player, so that the families and q-values are the audit's own) and build the
    investigation of `player`. Returns (view, audit document). An unknown player is a `UsageError` (with the
    nearest names), found before the audit runs."""
    from .audit import audit_records
    from .errors import UsageError

    records = list(records)
    names = sorted({name for rec in records if rec.deal is not None for name in rec.deal.players})
    if player not in names:
        near = suggest(player, names)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        raise UsageError(f"no player {player!r} in these logs{hint}")
    if engine == "batch":
        # the audit through the table (as `auditor audit`); the deals behind the scores are his deals only, so
        # only those are replayed into per-deal results
        from .audit import audit
        from .replay.run import replay_paths, replay_records
        from .select import records_chunks

        report = audit(replay_paths([], table=True, chunks=records_chunks(records)), fdr=fdr, seed=seed)
        results = replay_records([r for r in records if r.deal is not None and player in r.deal.players],
                                 engine="batch").results
    else:
        report = audit_records(records, fdr=fdr, seed=seed, engine=engine)
        results = report.replay.results
    doc = report.to_json()
    return build_investigation(doc, player, results, k=k), doc
