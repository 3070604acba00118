"""(issue 16) Full deal-log/1 records -> the score sheet a table would have written: one row per deal.

What a table sees without writing down the cards (`auditor.sheets.read` for the columns): the date, the table, the
game and deal numbers, the players by seat, the sides, the dealer, the turn-up, who played the Jack of trumps, who
took the Ten of trumps in a trick, the points and totals per side and the winner. The play gives the last two
(the replay's plays and trick winners, `replay_deal`); a record without tricks gives the Jack's holder from its
hands and leaves the Ten blank (nobody saw who took it).

The sheet's game is `{date}/{table}/{game_no}`: `date` is the day of the game's first deal, `game_no` the game's
place among that table's games of that day, in the order they started. Used by the tests and studies to make
simulated sheet seasons (`simulate_season` -> `sheet_rows` -> CSV -> `read_sheet`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..cards import RJ
from ..dealog import validate
from ..replay.reference import replay_deal
from .read import POINTS, SEATS, TOTALS
from .template import write_csv

RT = 8


def sheet_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, str]]:
    """The sheet rows of these records (valid deal-log/1 objects), in the same order."""
    recs = list(records)
    first: dict[str, tuple[str, str]] = {}  # game_id -> (time of its first deal, table)
    for r in recs:
        t = str(r.get("time") or "")
        gid = r["game_id"]
        if gid not in first or t < first[gid][0]:
            first[gid] = (t, r["table"])
    day = {g: t[:10] for g, (t, _) in first.items()}
    numbers: dict[tuple[str, str], list[str]] = {}
    for g, (_t, table) in sorted(first.items(), key=lambda kv: (kv[1][0], kv[0])):
        numbers.setdefault((day[g], table), []).append(g)
    game_no = {g: k for gs in numbers.values() for k, g in enumerate(gs, 1)}
    return [_row(r, day[r["game_id"]], game_no[r["game_id"]]) for r in recs]


def _row(rec: dict[str, Any], date: str, game_no: int) -> dict[str, str]:
    d = validate(rec)
    res = replay_deal(d)
    players = d.players
    row: dict[str, str] = {"date": date, "table": d.table, "game_no": str(game_no), "deal_no": str(d.deal_no),
                           "game": d.game, "rules": d.rules}
    if d.options:
        row["options"] = "; ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in d.options.items())
    for s, p in enumerate(players):
        row[SEATS[s]] = p
    if d.sides:
        row["sides"] = " / ".join("+".join(players[s] for s in side) for side in d.sides)
    row["dealer"] = players[d.dealer]
    row["turn_up"] = d.turn_up
    if d.shown is not None:
        row["shown"] = d.shown
    if d.beg is not None:
        row["beg"] = d.beg
    if d.bunched:
        row["bunched"] = "yes"
    claims = sorted((c["trick"], c["revoke"]) for c in d.claims or [])
    if claims:
        row["revoke"] = players[claims[0][1]]  # the first claimed revoke, as the table would write it
    trump = res.trump
    jack = ten = None
    if trump is not None:
        jc, tc = trump * 13 + RJ, trump * 13 + RT
        for k, s, c in res.plays:
            if c == jc:
                jack = s
            if c == tc and k < len(res.winners):
                ten = res.winners[k]
        if not res.plays and res.hands is not None:
            jack = next((s for s, h in enumerate(res.hands) if (h >> jc) & 1), None)
    row["jack"] = "" if jack is None else players[jack]
    row["ten"] = "" if ten is None else players[ten]
    rec_ = d.recorded or {}
    for k, v in enumerate(rec_.get("points") or []):
        row[POINTS[k]] = str(v)
    for k, v in enumerate(rec_.get("totals") or []):
        row[TOTALS[k]] = str(v)
    if rec_.get("winner") is not None:
        row["winner"] = str(rec_["winner"] + 1)
    return row


def sheet_columns(rows: Sequence[dict[str, str]]) -> list[str]:
    """The columns these rows need, in the template's order (`game` and `rules` only when a row is not Scotch
    Whist under Foster's rules; `sides`, `shown`, `beg`, `winner` only when some row has one)."""
    have = {k for r in rows for k, v in r.items() if v != ""}
    plain = all(r.get("game") == "scotch_whist" and r.get("rules") == "foster" for r in rows)
    plain = plain and "options" not in have
    cols = ["date", "table", "game_no", "deal_no"] + ([] if plain else ["game", "rules", "options"])
    cols += [c for c in SEATS if c in have]
    cols += [c for c in ("sides", "dealer", "turn_up", "shown", "beg", "bunched") if c in have
             or c in ("dealer", "turn_up")]
    cols += ["jack", "ten"] + (["revoke"] if "revoke" in have else [])
    cols += [c for c in POINTS if c in have] + [c for c in TOTALS if c in have]
    if "winner" in have:
        cols.append("winner")
    return cols


def write_sheet(records: Iterable[dict[str, Any]], path: str) -> int:
    """Project the records and write them as a CSV score sheet. Returns the rows written."""
    rows = sheet_rows(records)
    return write_csv(path, sheet_columns(rows), rows)

