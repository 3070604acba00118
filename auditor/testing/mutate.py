"""Mutators: turn clean deal-log/1 records into the irregular ones the replay must find.

Record mutators take (rng, record dict) and return a new record (the input is not changed) or raw bytes (a
line that is not a valid record). Log mutators take and return a list of records/lines (missing, repeated,
reordered deals, a deal after the game ended). `mutate_log` applies a random selection. Every choice draws from
the `numpy.random.Generator` passed in.
"""

from __future__ import annotations

import copy
import gzip
import json
from typing import Any, Callable

import numpy as np
import orjson

from ..cards import CARD_STR, parse_card
from ..dealog import FIELD_ORDER
from ..replay.reference import walk_seats
from ..rules import layout, resolve

Line = Any  # dict (a record) or bytes (a raw line)


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def _card_places(rec: dict) -> list[tuple[Any, int | str]]:
    """Every place holding a card string: (container, index or key)."""
    out: list[tuple[Any, int | str]] = []
    for key in ("deck",):
        if isinstance(rec.get(key), list):
            out += [(rec[key], i) for i in range(len(rec[key]))]
    for key in ("hands", "discards", "tricks"):
        if isinstance(rec.get(key), list):
            for h in rec[key]:
                out += [(h, i) for i in range(len(h))]
    for r in rec.get("runs") or []:
        for h in r["cards"]:
            out += [(h, i) for i in range(len(h))]
        out.append((r, "turn_up"))
    out.append((rec, "turn_up"))
    if "shown" in rec:
        out.append((rec, "shown"))
    return out


# ---------------------------------------------------------------- record mutators


def swap_hand_cards(rng, rec):
    """Swap one card between two seats' hands (the play then shows cards not in hand; the deck disagrees)."""
    rec = copy.deepcopy(rec)
    hands = rec.get("hands")
    if not hands or len(hands) < 2:
        return rec
    a, b = rng.choice(len(hands), 2, replace=False)
    if not hands[a] or not hands[b]:
        return rec
    i, j = int(rng.integers(len(hands[a]))), int(rng.integers(len(hands[b])))
    hands[a][i], hands[b][j] = hands[b][j], hands[a][i]
    return rec


def wrong_hand_size(rng, rec):
    """Move a card from one seat's hand to another's (both seats now hold the wrong number)."""
    rec = copy.deepcopy(rec)
    hands = rec.get("hands")
    if not hands or len(hands) < 2:
        return rec
    a, b = rng.choice(len(hands), 2, replace=False)
    if hands[a]:
        hands[b].append(hands[a].pop(int(rng.integers(len(hands[a])))))
    return rec


def out_of_turn(rng, rec):
    """Swap two cards of one trick: each is played at the other's turn."""
    rec = copy.deepcopy(rec)
    tricks = rec.get("tricks")
    if not tricks:
        return rec
    t = _pick(rng, tricks)
    if len(t) >= 2:
        i, j = rng.choice(len(t), 2, replace=False)
        t[i], t[j] = t[j], t[i]
    return rec


def swap_across_tricks(rng, rec):
    """Swap two played cards of different tricks."""
    rec = copy.deepcopy(rec)
    tricks = rec.get("tricks")
    if not tricks or len(tricks) < 2:
        return rec
    a, b = rng.choice(len(tricks), 2, replace=False)
    i, j = int(rng.integers(len(tricks[a]))), int(rng.integers(len(tricks[b])))
    tricks[a][i], tricks[b][j] = tricks[b][j], tricks[a][i]
    return rec


def revoke(rng, rec):
    """Make a seat fail to follow suit: swap a card it followed with, with a card of another suit it played
    later (same seat), so that it held the suit led."""
    rec = copy.deepcopy(rec)
    tricks = rec.get("tricks")
    if not tricks:
        return rec
    # a record the rules cannot walk (unknown game or option, missing field, odd value) is left as it is
    try:
        rules = resolve(rec["game"], rec["rules"], rec.get("options") or {})
        n = len(rec["players"])
        L = layout(rules, n, rec["dealer"])
        codes = [[parse_card(x) for x in t] for t in tricks]
        trump_str = rec["runs"][-1]["turn_up"] if rec.get("runs") else rec["turn_up"]
    except (KeyError, ValueError, TypeError, IndexError, AttributeError, ZeroDivisionError):
        return rec
    trump_card = parse_card(trump_str)
    if trump_card is None:
        return rec
    trump = trump_card // 13
    per_set = L.tricks_per_set if rules.game == "scotch_whist" else (len(tricks),)
    seats = walk_seats(L, rules.game, rules.switches.get("set_leader", "last_trick_winner"), codes, trump, per_set)
    cands = []
    for k, t in enumerate(codes):
        seats_k = seats[k]
        cards = [c for c in t if c is not None]
        if seats_k is None or len(cards) != len(t):
            continue
        lead = cards[0] // 13
        for p in range(1, len(cards)):
            if cards[p] // 13 != lead:
                continue
            s = seats_k[p]
            for k2 in range(k + 1, len(codes)):
                seats_k2 = seats[k2]
                if seats_k2 is None:
                    continue
                for p2, s2 in enumerate(seats_k2):
                    c2 = codes[k2][p2] if p2 < len(codes[k2]) else None
                    if s2 == s and c2 is not None and c2 // 13 not in (lead, trump):
                        cands.append((k, p, k2, p2))
    if not cands:
        return rec
    k, p, k2, p2 = _pick(rng, cands)
    tricks[k][p], tricks[k2][p2] = tricks[k2][p2], tricks[k][p]
    return rec


def wrong_points(rng, rec):
    rec = copy.deepcopy(rec)
    recd = rec.setdefault("recorded", {})
    what = int(rng.integers(5))
    ns = len(rec["sides"]) if rec.get("sides") else len(rec["players"])
    if what == 0 and "points" in recd:
        recd["points"][int(rng.integers(ns))] += int(rng.choice([-2, -1, 1, 3]))
    elif what == 1 and "totals" in recd:
        recd["totals"][int(rng.integers(ns))] += int(rng.choice([-1, 1, 10]))
    elif what == 2:
        recd["winner"] = int(rng.integers(ns))
    elif what == 3:
        recd.pop("points", None)
        recd.pop("totals", None)
    else:
        recd.pop("winner", None)
        recd.pop("totals", None)
    return rec


def bad_deck(rng, rec):
    rec = copy.deepcopy(rec)
    deck = rec.get("deck")
    if not deck:
        return rec
    what = int(rng.integers(4))
    if what == 0:
        i, j = rng.choice(len(deck), 2, replace=False)
        deck[i], deck[j] = deck[j], deck[i]
    elif what == 1:
        deck.pop()
    elif what == 2:
        deck[int(rng.integers(len(deck)))] = deck[int(rng.integers(len(deck)))]
    else:
        i = int(rng.integers(len(deck) - 1))
        deck[i], deck[-1] = deck[-1], deck[i]  # the turn-up dealt from the bottom...
    return rec


def unknown_card(rng, rec):
    rec = copy.deepcopy(rec)
    places = _card_places(rec)
    cont, i = _pick(rng, places)
    cont[i] = str(_pick(rng, ["Xx", "1s", "", "Tz", "♠", "10", "Ace of spades"]))
    return rec


def outside_pack(rng, rec):
    rec = copy.deepcopy(rec)
    places = _card_places(rec)
    cont, i = _pick(rng, places)
    cont[i] = str(_pick(rng, ["5c", "2h", "4d", "3s", "6s", "6c"]))
    return rec


def duplicate_card(rng, rec):
    rec = copy.deepcopy(rec)
    places = [p for p in _card_places(rec) if p[0] is not rec.get("deck")]
    (c1, i1), (c2, i2) = _pick(rng, places), _pick(rng, places)
    c1[i1] = c2[i2]
    return rec


def lenient(rng, rec):
    """Valid lenient spellings: 10 for T, upper-case suits, suit symbols, lower-case ranks."""
    rec = copy.deepcopy(rec)
    for cont, i in _card_places(rec):
        if rng.random() < 0.3:
            c = parse_card(cont[i])
            if c is None:
                continue
            r, s = CARD_STR[c][0], CARD_STR[c][1]
            form = int(rng.integers(4))
            if form == 0:
                cont[i] = ("10" if r == "T" else r) + s
            elif form == 1:
                cont[i] = r + s.upper()
            elif form == 2:
                cont[i] = r + "♠♥♦♣"["shdc".index(s)]
            else:
                cont[i] = r.lower() + s
    return rec


def bad_trick_shape(rng, rec):
    rec = copy.deepcopy(rec)
    tricks = rec.get("tricks")
    if not tricks:
        return rec
    what = int(rng.integers(4))
    if what == 0:
        tricks.pop()
    elif what == 1:
        t = _pick(rng, tricks)
        t.pop()
    elif what == 2:
        tricks.append(list(tricks[-1]))
    else:
        del tricks[int(rng.integers(len(tricks))):]
    return rec


def wrong_turn_up(rng, rec):
    rec = copy.deepcopy(rec)
    hands = rec.get("hands")
    if hands:
        h = _pick(rng, hands)
        if h:
            rec["turn_up"] = _pick(rng, h)
    return rec


def hand_order(rng, rec):
    """A hand listed sorted (legal) or shuffled."""
    rec = copy.deepcopy(rec)
    hands = rec.get("hands")
    if hands:
        h = _pick(rng, hands)
        h.sort()
    return rec


def hands_only(rng, rec):
    rec = copy.deepcopy(rec)
    rec.pop("tricks", None)
    return rec


def tricks_only(rng, rec):
    rec = copy.deepcopy(rec)
    if rec.get("tricks"):
        rec.pop("hands", None)
        if rng.random() < 0.5:
            rec.pop("discards", None)
    return rec


def claim(rng, rec):
    rec = copy.deepcopy(rec)
    n = len(rec["players"])
    k = len(rec.get("tricks") or [1])
    rec.setdefault("claims", []).append({"revoke": int(rng.integers(n)), "trick": int(rng.integers(1, k + 2))})
    return rec


def wrong_dealer(rng, rec):
    rec = copy.deepcopy(rec)
    n = len(rec["players"])
    rec["dealer"] = (rec["dealer"] + int(rng.integers(1, n))) % n
    return rec


def begging(rng, rec):
    """All Fours: beg without its runs, runs without the beg, missing or wrong discards, a bunched flag."""
    rec = copy.deepcopy(rec)
    if rec.get("game") != "all_fours":
        return rec
    what = int(rng.integers(6))
    if what == 0:
        rec["beg"] = "run"
    elif what == 1:
        rec["beg"] = _pick(rng, ["stand", "take_one"])
    elif what == 2:
        rec.pop("discards", None)
    elif what == 3 and rec.get("discards"):
        d = _pick(rng, rec["discards"])
        if d:
            d[0] = rec["hands"][0][0]
    elif what == 4:
        rec["bunched"] = not rec.get("bunched", False)
    else:
        rec.pop("runs", None)
    return rec


def schema_break(rng, rec) -> Line:
    """A record that breaks the schema (a bad_record)."""
    rec = copy.deepcopy(rec)
    what = int(rng.integers(12))
    if what == 0:
        rec.pop(_pick(rng, ["format", "game", "rules", "table", "game_id", "deal_no", "players", "dealer",
                            "turn_up"]), None)
    elif what == 1:
        rec["deal_no"] = _pick(rng, ["3", 0, -1, 2.0, True, None])
    elif what == 2:
        rec["dealer"] = _pick(rng, [len(rec["players"]), -1, "0", True])
    elif what == 3:
        rec["players"] = rec["players"][:1] + rec["players"][:-1]
    elif what == 4:
        rec["sides"] = [[0], [0]]
    elif what == 5:
        rec["recorded"] = {"points": [1]}
    elif what == 6:
        rec["beg"] = "maybe"
    elif what == 7:
        rec["bunched"] = "yes"
    elif what == 8:
        rec["options"] = {"no_such_switch": 1}
    elif what == 9:
        rec["rules"] = "hoyle"
    elif what == 10:
        rec["hands"] = "all of them"
    else:
        rec["players"] = rec["players"] + ["extra1", "extra2", "extra3", "extra4", "extra5", "extra6", "x7"]
    return rec


def broken_line(rng, rec) -> Line:
    raw = orjson.dumps(rec)
    what = int(rng.integers(5))
    if what == 0:
        return raw[: int(rng.integers(1, len(raw)))]
    if what == 1:
        return raw[:20] + b"\xff\xfe" + raw[20:]
    if what == 2:
        return b"[1, 2, 3]"
    if what == 3:
        return b"{}"
    return b'"just a string"'


def extra_field(rng, rec):
    rec = copy.deepcopy(rec)
    rec["x_" + str(int(rng.integers(100)))] = {"nested": [1, 2, {"a": None}], "s": "é"}
    return rec


def cosmetic(rng, rec):
    """Valid variations that change nothing: lenient names, explicit nulls, stand written out."""
    rec = copy.deepcopy(rec)
    what = int(rng.integers(4))
    if what == 0:
        rec["game"] = {"scotch_whist": "Scotch Whist", "all_fours": "Seven-Up"}[rec["game"]]
    elif what == 1:
        rec["rules"] = rec["rules"].upper()
    elif what == 2:
        rec["time"] = None
        rec["cutter"] = None
        rec["shown"] = rec.get("shown")
    else:
        if rec.get("game") == "all_fours" and "beg" not in rec:
            rec["beg"] = "stand"
        rec["options"] = dict(rec.get("options") or {})
    return rec


RECORD_MUTATORS: dict[str, Callable] = {
    "swap_hand_cards": swap_hand_cards, "wrong_hand_size": wrong_hand_size, "out_of_turn": out_of_turn, "swap_across_tricks": swap_across_tricks,
    "revoke": revoke, "wrong_points": wrong_points, "bad_deck": bad_deck, "unknown_card": unknown_card,
    "outside_pack": outside_pack, "duplicate_card": duplicate_card, "lenient": lenient,
    "bad_trick_shape": bad_trick_shape, "wrong_turn_up": wrong_turn_up, "hand_order": hand_order,
    "hands_only": hands_only, "tricks_only": tricks_only, "claim": claim, "wrong_dealer": wrong_dealer,
    "begging": begging, "schema_break": schema_break, "broken_line": broken_line, "extra_field": extra_field,
    "cosmetic": cosmetic,
}


# ---------------------------------------------------------------- log mutators


def _games(lines: list[Line]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, x in enumerate(lines):
        if isinstance(x, dict) and isinstance(x.get("game_id"), str):
            out.setdefault(x["game_id"], []).append(i)
    return out


def missing_deal(rng, lines):
    games = [g for g in _games(lines).values() if len(g) >= 2]
    if not games:
        return lines
    g = _pick(rng, games)
    drop = _pick(rng, g)
    return [x for i, x in enumerate(lines) if i != drop]


def repeated_deal(rng, lines):
    games = list(_games(lines).values())
    if not games:
        return lines
    i = _pick(rng, _pick(rng, games))
    out = list(lines)
    out.insert(i + 1, copy.deepcopy(lines[i]))
    return out


def after_game_end(rng, lines):
    games = list(_games(lines).values())
    if not games:
        return lines
    g = _pick(rng, games)
    last = copy.deepcopy(lines[g[-1]])
    if isinstance(last.get("deal_no"), int):
        last["deal_no"] += 1
    if isinstance(last.get("dealer"), int):
        last["dealer"] = (last["dealer"] + 1) % max(1, len(last.get("players") or [1]))
    if isinstance(last.get("recorded"), dict):
        last["recorded"].pop("winner", None)
    out = list(lines)
    out.insert(g[-1] + 1, last)
    return out


def reorder(rng, lines):
    out = list(lines)
    if len(out) >= 2:
        i, j = rng.choice(len(out), 2, replace=False)
        out[i], out[j] = out[j], out[i]
    return out


def renumber(rng, lines):
    games = list(_games(lines).values())
    if not games:
        return lines
    out = list(lines)
    g = _pick(rng, games)
    shift = int(rng.choice([1, 2, 5]))
    start = int(rng.integers(len(g)))
    for i in g[start:]:
        rec = copy.deepcopy(out[i])
        if isinstance(rec.get("deal_no"), int):
            rec["deal_no"] += shift
        out[i] = rec
    return out


LOG_MUTATORS: dict[str, Callable] = {
    "missing_deal": missing_deal, "repeated_deal": repeated_deal, "after_game_end": after_game_end,
    "reorder": reorder, "renumber": renumber,
}


def mutate_log(rng: np.random.Generator, records: list[dict], rate: float = 0.3, log_mutations: int = 3,
               mutators: list[str] | None = None) -> list[Line]:
    """Mutate about `rate` of the records (one random record mutator each) and apply `log_mutations` log
    mutators. Returns records (dicts) and raw lines (bytes) in file order."""
    names = mutators or list(RECORD_MUTATORS)
    out: list[Line] = []
    for rec in records:
        if rng.random() < rate:
            out.append(RECORD_MUTATORS[_pick(rng, names)](rng, rec))
        else:
            out.append(rec)
    for _ in range(log_mutations):
        out = LOG_MUTATORS[_pick(rng, list(LOG_MUTATORS))](rng, out)
    return out


def _dumps(x) -> bytes:
    """One record as a JSON line's bytes (the standard library for what orjson cannot write: integers beyond 64
    bits)."""
    try:
        return orjson.dumps(x)
    except TypeError:
        return json.dumps(x, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def to_jsonl(lines: list[Line]) -> bytes:
    return b"".join((x if isinstance(x, bytes) else _dumps(x)) + b"\n" for x in lines)


# ---------------------------------------------------------------- hostile input (issue 12: the fuzz suite)
#
# Each takes (rng, record dict) like the record mutators and returns a dict or raw bytes (a line). They make input
# that a log should never hold but a file can: lines too long to be records, values nested too deeply, bytes that
# are not UTF-8, control characters and bidi overrides in ids, deal numbers beyond any integer type, far too many
# tricks or cards, a random JSON value in any field. The file-level helpers below make damaged gzip streams and
# pandas-written Parquet.

HOSTILE_LIMIT = 8192
"""The record-size limit the fuzz tests set (`dealog.set_max_record_bytes`) so that an overlong line costs kilobytes,
not the default megabyte; `overlong_line` makes lines around it."""

ODD_STRINGS = (
    "\x00", "a\x00b", "\x1b[2J\x1b[31mred", "\x1b]0;title\x07", "\u202eevil\u202c", "\u2066iso\u2069", "\u061c",
    "line\nbreak", "cr\rreturn", "tab\there", "\x7f", "\u0085", "\u2028\u2029", "\ufeff", "zero\u200bwidth",
    "\x9b31m", "[bold red]markup[/]", "<script>alert(1)</script>", "| pipe | table |", "`code`", "*em*", "",
    " ", "é" * 3, "\U0001F0A1", "x" * 5000,
)

HUGE_INTS = (0, -1, -(2 ** 63), 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 30, -(10 ** 30))


def random_json(rng: np.random.Generator, depth: int = 0) -> Any:
    """A random JSON value: null, booleans, integers (up to beyond 64 bits), floats, odd strings, lists, objects."""
    kind = int(rng.integers(9 if depth < 3 else 6))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(2))
    if kind == 2:
        return int(rng.integers(-3, 60))
    if kind == 3:
        return _pick(rng, HUGE_INTS)
    if kind == 4:
        return float(_pick(rng, [0.0, -0.0, 0.5, 1.0, 2.0, 1e300, -1e-300, 3.75]))
    if kind == 5:
        return _pick(rng, ODD_STRINGS + ("As", "Th", "Jc", "10d", "scotch_whist", "all_fours", "foster", "deal-log/1"))
    if kind in (6, 7):
        return [random_json(rng, depth + 1) for _ in range(int(rng.integers(0, 6)))]
    return {str(_pick(rng, ("a", "cards", "turn_up", "revoke", "trick", "points", "totals", "winner", "")))
            : random_json(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))}


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a record: key/index paths to every value (the record itself excluded)."""
    out = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out += _paths(v, prefix + (k,))
    return out


def random_field(rng, rec):
    """A random JSON value in a random place: a top-level field (known or not) or anywhere inside one."""
    rec = copy.deepcopy(rec)
    if rng.random() < 0.5:
        rec[str(_pick(rng, FIELD_ORDER))] = random_json(rng)
        return rec
    places = _paths(rec)
    if not places:
        return rec
    path = _pick(rng, places)
    obj = rec
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = random_json(rng)
    return rec


def odd_ids(rng, rec):
    """Control characters, ANSI escapes, bidi overrides, markup and very long strings in ids (players, table,
    game_id, time, pack, rules, an unknown field's name)."""
    rec = copy.deepcopy(rec)
    s = str(_pick(rng, ODD_STRINGS))
    what = int(rng.integers(6))
    if what == 0 and rec.get("players"):
        i = int(rng.integers(len(rec["players"])))
        rec["players"][i] = rec["players"][i] + s if rng.random() < 0.5 else s
    elif what == 1:
        rec["game_id"] = str(rec.get("game_id", "")) + s
    elif what == 2:
        rec["table"] = s
    elif what == 3:
        rec[_pick(rng, ["time", "pack", "rules"])] = s
    elif what == 4:
        rec["x" + s] = s
    else:
        rec["game"] = s
    return rec


def huge_numbers(rng, rec):
    """Deal numbers, seats, scores and trick numbers at and beyond every integer width, negative, or floats;
    and gaps: a deal number far ahead of the game's last one."""
    rec = copy.deepcopy(rec)
    big = _pick(rng, HUGE_INTS + (1.0, 1.5, 1e300, -1e300, 10 ** 9, 2 ** 62))
    what = int(rng.integers(6))
    if what == 0:
        rec["deal_no"] = big
    elif what == 1 and isinstance(rec.get("deal_no"), int):
        rec["deal_no"] = rec["deal_no"] + int(_pick(rng, [10 ** 6, 10 ** 9, 2 ** 40, 2 ** 62]))
    elif what == 2:
        rec[_pick(rng, ["dealer", "cutter"])] = big
    elif what == 3:
        recd = rec.setdefault("recorded", {})
        ns = len(rec["sides"]) if rec.get("sides") else len(rec.get("players") or [0])
        key = _pick(rng, ["points", "totals"])
        vals = list(recd.get(key) or [0] * ns)
        if vals:
            vals[int(rng.integers(len(vals)))] = big
        recd[key] = vals
    elif what == 4:
        rec.setdefault("recorded", {})["winner"] = big
    else:
        rec.setdefault("claims", []).append({"revoke": 0, "trick": big})
    return rec


def too_many(rng, rec):
    """Far too many tricks, cards in a trick or a hand, runs, claims, sides or players."""
    rec = copy.deepcopy(rec)
    k = int(_pick(rng, [2, 3, 10, 100, 1000]))
    what = int(rng.integers(7))
    if what == 0 and rec.get("tricks"):
        rec["tricks"] = rec["tricks"] * k
    elif what == 1 and rec.get("tricks"):
        t = rec["tricks"][int(rng.integers(len(rec["tricks"])))]
        t.extend((t or ["As"]) * k)
    elif what == 2 and rec.get("hands"):
        h = rec["hands"][int(rng.integers(len(rec["hands"])))]
        h.extend((h or ["As"]) * k)
    elif what == 3:
        rec["deck"] = list(rec.get("deck") or ["As"]) * k
    elif what == 4 and rec.get("hands"):
        rec["runs"] = [{"cards": [list(h) for h in rec["hands"]], "turn_up": rec.get("turn_up", "As")}] * k
    elif what == 5:
        rec["claims"] = [{"revoke": 0, "trick": 1 + (j % 13)} for j in range(k)]
    else:
        n = len(rec.get("players") or [])
        rec["players"] = [f"p{j}" for j in range(n * k)]
    return rec


def overlong_line(rng, rec) -> bytes:
    """A valid record padded (an unknown field) to about the record-size limit `HOSTILE_LIMIT`: just under, at,
    just over, or several times over."""
    base = orjson.dumps(dict(rec, x_pad=""))
    target = HOSTILE_LIMIT + int(_pick(rng, [-1, 0, 1, 2, HOSTILE_LIMIT, 5 * HOSTILE_LIMIT + 7]))
    pad = max(0, target - len(base))
    return orjson.dumps(dict(rec, x_pad="p" * pad))


def deep_nesting(rng, rec) -> bytes:
    """A value nested hundreds to a hundred thousand levels deep, in a known or an unknown field (raw JSON, so
    that making it costs nothing)."""
    depth = int(_pick(rng, [64, 254, 255, 256, 257, 500, 1023, 1024, 1025, 5000, 100_000]))
    opener, closer = (b"[", b"]") if rng.random() < 0.5 else (b'{"a":', b"}")
    deep = opener * depth + b"1" + closer * depth
    key = _pick(rng, ["x_deep", "hands", "tricks", "options", "recorded", "runs", "claims", "sides", "players"])
    rec = {k: v for k, v in rec.items() if k != key}
    body = orjson.dumps(rec)
    return body[:-1] + b',"' + key.encode() + b'":' + deep + b"}"


BAD_UTF8 = (b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
            b"\x80", b"\xf8\x88\x80\x80\x80")


def invalid_utf8(rng, rec) -> bytes:
    """Bytes that are not UTF-8 (stray continuation bytes, overlong forms, encoded surrogates, beyond U+10FFFF) in a
    string or between tokens; or a JSON escape of a lone surrogate in an id (valid JSON, not valid Unicode)."""
    raw = orjson.dumps(rec)
    what = int(rng.integers(3))
    if what == 0:
        i = int(rng.integers(1, len(raw)))
        return raw[:i] + _pick(rng, BAD_UTF8) + raw[i:]
    if what == 1:  # inside a player id
        j = raw.find(b'"players":["')
        if j >= 0:
            j += len(b'"players":["')
            return raw[:j] + _pick(rng, BAD_UTF8) + raw[j:]
        return raw[:5] + b"\xff" + raw[5:]
    esc = _pick(rng, [b"\\ud800", b"\\udfff", b"\\ud83d", b"\\udc00x", b"\\u0000"])
    key = _pick(rng, [b'"game_id":"', b'"table":"', b'"players":["', b'"turn_up":"'])
    j = raw.find(key)
    if j < 0:
        return raw
    j += len(key)
    return raw[:j] + esc + raw[j:]


HOSTILE_MUTATORS: dict[str, Callable] = {
    "random_field": random_field, "odd_ids": odd_ids, "huge_numbers": huge_numbers, "too_many": too_many,
    "overlong_line": overlong_line, "deep_nesting": deep_nesting, "invalid_utf8": invalid_utf8,
}


def duplicates(rng, lines):
    """Duplicate records: the same line again (next to it or far away), the same game and deal number with
    other content, a JSON object with a key given twice."""
    out = list(lines)
    dicts = [i for i, x in enumerate(out) if isinstance(x, dict)]
    if not dicts:
        return out
    i = _pick(rng, dicts)
    what = int(rng.integers(4))
    if what == 0:
        out.insert(i + 1, copy.deepcopy(out[i]))
    elif what == 1:
        out.insert(int(rng.integers(len(out) + 1)), copy.deepcopy(out[i]))
    elif what == 2:
        other = copy.deepcopy(out[_pick(rng, dicts)])
        for k in ("game_id", "deal_no", "table", "game", "rules"):
            if k in out[i]:
                other[k] = out[i][k]
        out.insert(i + 1, other)
    else:
        raw = _dumps(out[i])
        key = _pick(rng, [b'"deal_no":', b'"dealer":', b'"game_id":', b'"turn_up":'])
        val = {b'"deal_no":': b"999", b'"dealer":': b"0", b'"game_id":': b'"other"', b'"turn_up":': b'"As"'}[key]
        out[i] = raw[:-1] + b"," + key + val + b"}"
    return out


def hostile_log(rng: np.random.Generator, records: list[dict], rate: float = 0.3, mutators: list[str] | None = None,
                log_mutations: int = 2, log_mutators: list[str] | None = None,
                counts: dict | None = None) -> list[Line]:
    """Like `mutate_log`, with the hostile mutators among the record mutators and `duplicates` among the log
    mutators. About `rate` of the records are mutated; `counts`, if given, gets how many by each mutator."""
    table = dict(RECORD_MUTATORS, **HOSTILE_MUTATORS)
    names = mutators or list(table)
    out: list[Line] = []
    for rec in records:
        if rng.random() < rate:
            name = _pick(rng, names)
            out.append(table[name](rng, rec))
            if counts is not None:
                counts[name] = counts.get(name, 0) + 1
        else:
            out.append(rec)
    logs = dict(LOG_MUTATORS, duplicates=duplicates)
    lnames = log_mutators or list(logs)
    for _ in range(log_mutations):
        name = _pick(rng, lnames)
        out = logs[name](rng, out)
        if counts is not None:
            counts[name] = counts.get(name, 0) + 1
    return out


def damaged_gzip(rng: np.random.Generator, data: bytes) -> bytes:
    """`data` gzip-compressed and then damaged: cut short, a byte flipped, garbage after it, two members, an empty
    member, the header only, or gzip of gzip."""
    gz = gzip.compress(data, mtime=0)
    what = int(rng.integers(8))
    if what == 0:
        return gz[: int(rng.integers(1, len(gz)))]
    if what == 1:
        i = int(rng.integers(10, len(gz)))
        return gz[:i] + bytes([gz[i] ^ (1 << int(rng.integers(8)))]) + gz[i + 1:]
    if what == 2:
        return gz + _pick(rng, [b"\x00" * 7, b"garbage", b"\x1f\x8b", b"\x1f\x8b\x08\x00"])
    if what == 3:
        cut = data.find(b"\n", len(data) // 2) + 1
        return gzip.compress(data[:cut], mtime=0) + gzip.compress(data[cut:], mtime=0)
    if what == 4:
        return gzip.compress(b"", mtime=0) + gz
    if what == 5:
        return gz[:10]
    if what == 6:
        return gzip.compress(gz, mtime=0)
    return gz[:-8] + b"\x00\x00\x00\x00" + gz[-4:]  # a wrong CRC


def pandas_parquet(rng: np.random.Generator, records: list[dict], path) -> bool:
    """Write dict records as a pandas DataFrame to Parquet (pandas' own choices: an index column, NaN for missing
    numbers, float columns, object columns), sometimes with a column dropped, renamed or of another type.
    Returns False when pandas/pyarrow refuse to write the frame (then there is no file)."""
    import pandas as pd  # only the fuzz tests need pandas (a test dependency); imported when asked
    import pyarrow as pa  # (heavy: imported when asked, as pandas)

    rows = [copy.deepcopy(r) for r in records if isinstance(r, dict)]
    df = pd.DataFrame(rows)
    what = int(rng.integers(6))
    if what == 1 and "time" in df:
        df = df.drop(columns=["time"])
    elif what == 2 and "deal_no" in df:
        df["deal_no"] = df["deal_no"].astype(float)
    elif what == 3 and len(df) > 1:
        df.loc[df.index[int(rng.integers(len(df)))], "deal_no"] = None  # the column becomes float64 with NaN
    elif what == 4:
        df = df.set_index("game_id", drop=False)
    elif what == 5 and "dealer" in df:
        df["dealer"] = df["dealer"].astype(str)
    try:
        df.to_parquet(path, engine="pyarrow", index=bool(rng.integers(2)) or what == 4)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):  # pyarrow cannot write every frame pandas
        return False  # can hold; that is not the reader's
    return True
