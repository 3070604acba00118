"""`auditor investigate PATH... --player NAME`: everything about one player, in the terminal and as HTML.

For each test that concerns the player (as a subject, or as one side of an ordered pair): the plain sentence, the
p- and q-value, the controls beside the score, the smallest cheat his play could have revealed, the timeline of his
cumulative excess, and the deals that contribute most to the score (game, deal, where in the logs, what happened).
Then the replay findings that name him and a summary of his play.

Where the deals come from: a detector may list them itself in its entry's `detail.top_deals` (a list of
`{game_id, deal_no, source, contribution, what}`); otherwise the deals are read off the replay for the tests whose
score is a count of deal events (`dealer_jack`, `turnup_jack`, `revoke_pattern`), each deal's contribution being
its event minus its honest probability; other tests say that they do not attribute their score to single deals.

The view is built by `build_investigation(doc, player, table)` from the audit document and the table of replayed
deals (`auditor.columns.AuditColumns`: the audit's own, kept by `audit(replay, keep_table=True)`), so the terminal
and the HTML say the same thing.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from markupsafe import Markup
from rich.markup import escape as _markup
from rich.table import Table

from .atomic import write_text
from .audit import audit, reproducibility_block
from .cards import CARD_STR, RJ, parse_card, rank_of
from .columns import AuditColumns, from_results
from .dealog import Record
from .errors import UsageError
from .facts import DealingFacts, facts_from_columns, held_prob
from .report import sentences, svg
from .report.html import environment, html_safe
from .report.console import SafeConsole
from .report.people import enough_data, person_views
from .report.view import reproducibility_view
from .report.values import as_dict, as_list, finite
from .report.verdict import Coverage
from .replay.reference import DealResult
from .replay.run import replay_paths, replay_records
from .select import records_chunks
from .textsafe import visible

TOP_DEALS = 10
FINDINGS_SHOWN = 20  # replay findings naming the player printed without --all (issue 16)
SUIT_WORDS = ("spades", "hearts", "diamonds", "clubs")


# ------------------------------------------------------------------ which entries concern the player


def concerns(subject: str, player: str) -> bool:
    """The subject is the player, or an ordered pair `a+b` with the player on one side."""
    subject = str(subject)
    return subject == player or subject.startswith(player + "+") or subject.endswith("+" + player)


def player_entries(doc: dict, player: str) -> list[dict]:
    tests = as_list(doc.get("tests"))
    out = [e for e in tests if isinstance(e, dict) and concerns(e.get("subject", ""), player)]
    return sorted(out, key=lambda e: (*sentences.section_key(e.get("test")), str(e.get("subject"))))


def known_players(doc: dict, table: AuditColumns | None = None) -> list[str]:
    """Every player of the replayed deals and every one-player subject of the document."""
    names: set[str] = set()
    if table is not None and len(table):
        seated = table.seat_player[table.seat_player >= 0]
        names.update(table.players[int(j)] for j in np.unique(seated))
    for e in as_list(doc.get("tests")):
        if isinstance(e, dict) and isinstance(e.get("subject"), str) and "+" not in e["subject"]:
            names.add(e["subject"])
    return sorted(names)


def suggest(player: str, names: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(player, list(names), n=5, cutoff=0.5)


# ------------------------------------------------------------------ the deals behind a score


@dataclass
class Deals:
    """What the per-deal views read: the table of replayed deals (`auditor.columns.AuditColumns`), its dealing
    facts (the exact nulls, computed when first asked for) and the replay's revoke findings, by deal and seat."""

    table: AuditColumns
    findings: Sequence[Any] = ()  # the document's replay findings (dicts, as outputs.md writes them)

    @classmethod
    def of(cls, deals: AuditColumns | Sequence[DealResult] | None, findings: Sequence[Any] = ()) -> Deals | None:
        """The table as given, or the table of per-deal results (`columns.from_results`); None for no deals."""
        if deals is None:
            return None
        table = deals if isinstance(deals, AuditColumns) else from_results(list(deals))
        return cls(table, findings)

    @cached_property
    def facts(self) -> DealingFacts:
        return facts_from_columns(self.table)

    @cached_property
    def revoke_messages(self) -> dict[tuple[str, str, Any, Any], str]:
        """(source, game, trick, seat) -> the message of the deal's first revoke finding there."""
        out: dict[tuple[str, str, Any, Any], str] = {}
        for f in self.findings:
            if isinstance(f, dict) and f.get("code") == "revoke":
                key = (str(f.get("source")), str(f.get("game_id")), f.get("trick"), f.get("seat"))
                out.setdefault(key, str(f.get("message")))
        return out

    def player_index(self, player: str) -> int | None:
        return self.table.players.index(player) if player in self.table.players else None

    def dealt_by(self, player: str) -> np.ndarray:
        """The rows the player dealt, in table order."""
        t, pid = self.table, self.player_index(player)
        if pid is None or not len(t):
            return np.zeros(0, np.int64)
        dealer = t.seat_player[np.arange(len(t)), t.dealer.astype(np.int64)]
        return np.flatnonzero(dealer == pid)

    def row(self, i: int) -> dict[str, Any]:
        """The columns every listed deal shows: game, deal number, where in the logs, and its input order."""
        t = self.table
        return {"game_id": t.game_ids[int(t.game[i])], "deal_no": int(t.deal_no[i]), "source": t.source(i),
                "_order": (int(t.file_index[i]), int(t.line[i]))}

    def seats(self, i: int) -> list[str]:
        t = self.table
        return [t.players[int(j)] for j in t.seat_player[i, : int(t.n[i])]]


def _dealer_jack_deals(deals: Deals, player: str) -> list[dict]:
    """The Scotch Whist deals he dealt and held the Jack of trumps, each adding 1 minus the exact chance that the
    dealer holds it (the deals of the test's count: those whose dealing the facts could audit)."""
    t, facts = deals.table, deals.facts
    p_of = {int(r): float(held_prob(facts.configs[int(c)], 0, RJ))  # exact, relative seat 0 = the dealer
            for r, c in zip(facts.result_index, facts.cfg, strict=True)}
    out = []
    for i in deals.dealt_by(player).tolist():
        if t.rules(i).game != "scotch_whist" or not t.has_hands[i] or t.trump[i] < 0 or i not in p_of:
            continue
        jack = int(t.trump[i]) * 13 + RJ
        if not (int(t.hands[i, int(t.dealer[i])]) >> jack) & 1:
            continue
        turn_up = int(t.turn_up[i])
        what = (f"{player} dealt and held the Jack of trumps ({CARD_STR[jack]})"
                + (", the turn-up itself" if turn_up == jack else f"; the turn-up was {CARD_STR[turn_up]}"))
        out.append({**deals.row(i), "contribution": 1.0 - p_of[i], "what": what})
    return out


def _turnup_jack_deals(deals: Deals, player: str) -> list[dict]:
    """Each Jack he turned up in All Fours (the first turn-up or a run's), adding 1 minus the Jacks' share of the
    cards not yet seen."""
    t = deals.table
    out = []
    for i in deals.dealt_by(player).tolist():
        if t.rules(i).game != "all_fours":
            continue
        n = int(t.n[i])
        first = int(t.turn_up[i])
        turnups = [first if first >= 0 else None] + [parse_card(run.get("turn_up")) for run in t.runs.get(i) or []
                                                     if isinstance(run, dict)]
        for k, c in enumerate(turnups):
            if c is None or rank_of(c) != RJ:
                continue
            out_before = 6 * n + k * (3 * n + 1)  # cards dealt and turned before this turn-up
            p0 = 4 / max(1, 52 - out_before)  # the Jacks' share of the unseen cards, on average
            what = (f"{player} turned up {CARD_STR[c]}" + (" on the first turn-up" if k == 0 else
                                                             f" when running the cards (run {k})"))
            row = deals.row(i)
            out.append({**row, "contribution": 1.0 - p0, "what": what, "_order": (*row["_order"], k)})
    return out


def _revoke_deals(deals: Deals, player: str) -> list[dict]:
    """Each revoke he made, adding 1, with the replay's message about it."""
    t, pid = deals.table, deals.player_index(player)
    if pid is None:
        return []
    out = []
    for j in range(len(t.rev_row)):
        i, trick, seat = int(t.rev_row[j]), int(t.rev_trick[j]), int(t.rev_seat[j])
        if int(t.seat_player[i, seat]) != pid:
            continue
        row = deals.row(i)
        msg = deals.revoke_messages.get((row["source"], row["game_id"], trick, seat),
                                        f"{player} revoked in trick {trick}")
        out.append({**row, "contribution": 1.0, "what": f"trick {trick}: {msg}", "_order": (*row["_order"], trick)})
    return out


REPLAY_ATTRIBUTION = {"dealer_jack": _dealer_jack_deals, "turnup_jack": _turnup_jack_deals,
                      "revoke_pattern": _revoke_deals}


def top_deals(entry: dict, deals: Deals | None, player: str, k: int = TOP_DEALS) -> tuple[list[dict], int, str]:
    """(the k deals that contribute most, how many contribute, where they come from)."""
    detail = as_dict(entry.get("detail"))
    listed = detail.get("top_deals", detail.get("deals"))
    if isinstance(listed, list) and listed and all(isinstance(x, dict) for x in listed):
        rows = []
        for x in listed:
            contrib = finite(x.get("contribution", x.get("score")))
            rows.append({"game_id": x.get("game_id"), "deal_no": x.get("deal_no"), "source": x.get("source"),
                         "contribution": contrib, "what": str(x.get("what") or x.get("message") or "")})
        rows.sort(key=lambda x: -(x["contribution"] if x["contribution"] is not None else -math.inf))
        return rows[:k], len(rows), "detector"
    fn = REPLAY_ATTRIBUTION.get(str(entry.get("test")))
    if fn is None or deals is None or str(entry.get("subject")) != player:
        return [], 0, "none"
    rows = fn(deals, player)
    rows.sort(key=lambda x: (-x["contribution"], x["_order"]))
    for x in rows:
        x.pop("_order", None)
    return rows[:k], len(rows), "replay"


# ------------------------------------------------------------------ the view


def _fmt_contrib(x: Any) -> str:
    v = finite(x)
    return "n/a" if v is None else f"{v:+.2f}"


def player_summary(deals: Deals | None, player: str) -> dict:
    """How much he played: deals, deals dealt, games, tables, and the partners he sat with most."""
    if deals is None or not len(deals.table):
        return {}
    t, pid = deals.table, deals.player_index(player)
    rows = np.zeros(0, np.int64) if pid is None else np.flatnonzero((t.seat_player == pid).any(axis=1))
    games: set[str] = set()
    tables: set[str] = set()
    partners: dict[str, int] = {}
    dealt = 0
    for i in rows.tolist():
        games.add(t.game_ids[int(t.game[i])])
        tables.add(t.tables[int(t.table[i])])
        names = deals.seats(i)
        seat = names.index(player)
        if int(t.dealer[i]) == seat:
            dealt += 1
        side = t.side_of[i]  # each seat its own side when the deal has none: no partner then
        for s, name in enumerate(names):
            if s != seat and side[s] == side[seat]:
                partners[name] = partners.get(name, 0) + 1
    top_partners = sorted(partners.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return {"deals": len(rows), "dealt": dealt, "games": len(games), "tables": sorted(tables),
            "partners": [{"name": n, "deals": c} for n, c in top_partners]}


def build_investigation(doc: dict, player: str, table: AuditColumns | Sequence[DealResult] | None = None,
                        charts: bool = True, k: int = TOP_DEALS, show_all: bool = False) -> dict:
    """Everything the audit says about `player`, as plain data (charts as SVG strings when `charts`). `table`:
    the replayed deals, for the deals behind his scores and the summary of his play (the audit's table; per-deal
    results are read through their table, `columns.from_results`).

    Issue 16: the flagged results and the watch-list results with enough play to mean something are shown in full
    (`tests`); every other result is summed up on one line per test (`quiet`: how many subjects with the player,
    none flagged, the most unusual of them), unless `show_all` (`auditor investigate --all`)."""
    doc = doc if isinstance(doc, dict) else {}
    deals = Deals.of(table, as_list(as_dict(doc.get("replay")).get("findings")))
    entries = player_entries(doc, player)
    fams = {str(f.get("test")): f for f in as_list(doc.get("families")) if isinstance(f, dict)}
    tests = []
    for e in entries:
        ev = sentences.entry_view(e)
        rows, total, origin = top_deals(e, deals, player, k)
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
            "enough": enough_data(e),
            "names_player": player in sentences.players_named([e]),  # not a cutter the flag clears
        })
    replay = as_dict(doc.get("replay"))
    findings = [f for f in as_list(replay.get("findings")) if isinstance(f, dict) and f.get("player") == player]
    flagged = [t for t in tests if t["tier"] == "report" and t["names_player"]]
    cleared = [t for t in tests if t["tier"] == "report" and not t["names_player"]]  # `sentences.second_cleared`
    watch = [t for t in tests if t["tier"] == "watch"]
    full = [t for t in tests if show_all or t["tier"] == "report" or (t["tier"] == "watch" and t["enough"])]
    quiet = _quiet_lines([t for t in tests if not any(t is f for f in full)])
    mine = [f for f in as_list(doc.get("flags")) if isinstance(f, dict) and concerns(f.get("subject", ""), player)]
    person = next((p for p in person_views(mine, as_dict(doc.get("audit"))) if p["person"] == player), None)
    if flagged:
        headline = f"{player} is flagged by {len(flagged)} test{'s' if len(flagged) != 1 else ''}: " + \
            ", ".join(t["test"] for t in flagged)
    elif cleared:
        headline = (f"{player} is not flagged: {len(cleared)} flag{'s' if len(cleared) != 1 else ''} with {player} "
                    f"({', '.join(sorted({t['test'] for t in cleared}))}) point{'' if len(cleared) != 1 else 's'} "
                    "at another player")
    elif watch:
        headline = f"{player} is not flagged; on the watch list of " + ", ".join(t["test"] for t in watch)
    elif tests:
        headline = f"{player} is not flagged by any of {len(tests)} tests"
    else:
        headline = f"No test of this audit concerns {player}"
    headline += Coverage.of_doc(doc).unread_clause()  # issue 12: "; 3 records not read (2 not valid JSON, ...)"
    return {
        "player": player, "headline": headline, "n_flagged": len(flagged), "tests": full, "quiet": quiet,
        "n_tests": len(tests), "show_all": show_all, "paragraph": person["paragraph"] if person else "",
        "reproducibility": reproducibility_view(doc),
        "findings": [{"code": str(f.get("code", "")), "source": str(f.get("source") or ""),
                      "where": sentences.finding_where(f), "message": str(f.get("message") or "")} for f in findings],
        "summary": player_summary(deals, player), "seed": "n/a" if doc.get("seed") is None else str(doc["seed"]),
        "not_clean_note": sentences.NOT_CLEAN_NOTE, "monthly_note": sentences.MONTHLY_NOTE,
        "how_to_read": sentences.HOW_TO_READ,
    }


def _quiet_lines(tests: list[dict]) -> list[dict]:
    """One line per test for the results not shown in full: how many, the most unusual (lowest p) of them."""
    by: dict[str, list[dict]] = {}
    for t in tests:
        by.setdefault(t["test"], []).append(t)
    out = []
    for name, rows in by.items():
        rows = sorted(rows, key=lambda t: (t["pvalue"] if t["pvalue"] is not None else 2.0, t["subject"]))
        spec = sentences.spec_of(name)
        kind = "pair" if spec.pair else "result"
        n = len(rows)
        text = (f"{n} {kind}{'s' if n != 1 else ''} with this player, none flagged" if spec.pair
                else "not flagged")
        low = rows[0]
        watch_thin = sum(1 for t in rows if t["tier"] == "watch")
        if spec.pair and n > 1:
            text += f"; the most unusual: {low['subject']} ({low['sentence']})"
        else:
            text += f": {low['sentence']}"
        if watch_thin:
            text += (f" ({watch_thin} on the watch list on too little play to mean anything)" if spec.pair
                     else " (on the watch list, on too little play to mean anything)")
        out.append({"test": name, "title": spec.title, "count": n, "text": text})
    return out


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
    if view.get("paragraph"):  # issue 16: the per-person verdict of the report
        con.print(escape(view["paragraph"]))
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
    if view.get("quiet"):
        con.rule("[green]the other tests: nothing to show[/]")
        for q in view["quiet"]:
            con.print(f"[green]•[/] {escape(q['title'])}: {escape(q['text'])}")
    if view["findings"]:
        shown = view["findings"] if view.get("show_all") else view["findings"][:FINDINGS_SHOWN]
        ft = Table(title=f"replay findings naming {escape(view['player'])}")
        for col in ("where in the logs", "code", "game / deal / trick", "what happened"):
            ft.add_column(col, overflow="fold")
        for f in shown:
            ft.add_row(escape(f["source"]), escape(f["code"]), escape(f["where"]), escape(f["message"]))
        con.print(ft)
        if len(shown) < len(view["findings"]):
            con.print(f"[dim]{len(view['findings']) - len(shown)} more findings name {escape(view['player'])}: "
                      f"--all lists them, or --out NAME.html.[/]")
    if not view.get("show_all") and view.get("quiet"):
        con.print("[dim]--all shows every test in full.[/]")
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


def investigate_records(records: Iterable[Record], player: str, fdr: float = 0.05, seed: int = 0,
                        engine: str = "reference", k: int = TOP_DEALS, show_all: bool = False,
                        paths: Sequence[str] = (), command: str | None = None) -> tuple[dict, dict]:
    """Audit the records (every player, so that the families and q-values are the audit's own) and build the
    investigation of `player` from the same replay: its table gives the deals behind his scores. Returns (view,
    audit document). An unknown player is a `UsageError` (with the nearest names), found before the audit runs."""
    records = list(records)
    names = sorted({name for rec in records if rec.deal is not None for name in rec.deal.players})
    if player not in names:
        near = suggest(player, names)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        raise UsageError(f"no player {player!r} in these logs{hint}")
    if engine == "batch":  # through the batch pipeline, as `auditor audit` replays
        replay = replay_paths([], table=True, chunks=records_chunks(records))
    else:
        replay = replay_records(records, engine=engine, table=True)
    report = audit(replay, fdr=fdr, seed=seed, keep_table=True)
    if command is not None:  # issue 16: the reproducibility block of the command line (`paths`: the files read)
        report.reproducibility = reproducibility_block(report, paths, command)
    doc = report.to_json()
    return build_investigation(doc, player, replay.table, k=k, show_all=show_all), doc
