"""Mutators: turn clean deal-log/1 records into the irregular ones the replay must find.

Record mutators take (rng, record dict) and return a new record (the input is not changed) or raw bytes (a
line that is not a valid record). Log mutators take and return a list of records/lines (missing, repeated,
reordered deals, a deal after the game ended). `mutate_log` applies a random selection. Every choice draws from
the `numpy.random.Generator` passed in.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ..cards import CARD_STR, parse_card
from ..rules import resolve, layout
from ..replay.reference import walk_seats

Line = Any  # dict (a record) or bytes (a raw line)


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def _card_places(rec: dict) -> list[tuple]:
    """Every place holding a card string: (container, index)."""
    out = []
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
    try:
        rules = resolve(rec["game"], rec["rules"], rec.get("options") or {})
        n = len(rec["players"])
        L = layout(rules, n, rec["dealer"])
        codes = [[parse_card(x) for x in t] for t in tricks]
        trump_str = rec["runs"][-1]["turn_up"] if rec.get("runs") else rec["turn_up"]
        trump = parse_card(trump_str) // 13
        per_set = L.tricks_per_set if rules.game == "scotch_whist" else (len(tricks),)
        seats = walk_seats(L, rules.game, rules.switches.get("set_leader", "last_trick_winner"), codes, trump,
                           per_set)
    except Exception:
        return rec
    cands = []
    for k, t in enumerate(codes):
        if seats[k] is None or None in t:
            continue
        lead = t[0] // 13
        for p in range(1, len(t)):
            if t[p] // 13 != lead:
                continue
            s = seats[k][p]
            for k2 in range(k + 1, len(codes)):
                if seats[k2] is None:
                    continue
                for p2, s2 in enumerate(seats[k2]):
                    if s2 == s and p2 < len(codes[k2]) and codes[k2][p2] is not None and \
                            codes[k2][p2] // 13 not in (lead, trump):
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
    import orjson

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


def to_jsonl(lines: list[Line]) -> bytes:
    import orjson

    return b"".join((x if isinstance(x, bytes) else orjson.dumps(x)) + b"\n" for x in lines)
