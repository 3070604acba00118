"""(issue 16) What the replay can check of a score-sheet record: a deal known by what the table saw, not by its cards.

A score-sheet record (`Deal.is_sheet`, docs/spec/deal-log.md) carries the dealer, the turn-up, who played the Jack
of trumps and who took the Ten of trumps (`observed`), and the points and totals the table wrote down; no hands
and no tricks. The reference engine (`replay_deal`) gives it to `check_sheet` instead of replaying cards; the
chain (`chain_games`) adds it to its game with its recorded points, as every deal it cannot score, so the totals,
the dealer rotation and the deal sequence are checked as for any deal; `sheet_winner` settles a deal that takes
two sides past the target as far as the sheet allows.

What the rules fix and the sheet must agree with (docs/spec/rules.md):
- Scotch Whist: the Jack of trumps always wins its trick, so the seat that played it was dealt it and its side
  scores its 11 points; the Ten's 10 go to the side that took it. A side that played the Jack and took the Ten
  scored at least 21 (only where nothing can take points away: `revoke_penalty = lose_game`, `cards_under =
  zero`). A Jack or Ten of trumps can be out of play only where the layout leaves cards undealt (Russian 2 or 3
  players, Foster's shown 36th card); elsewhere a blank is a finding. A turned-up Jack is in its owner's hand
  (the dealer; the eldest in Russian 5-player deals). The points of a deal add up to at most the 30 of the honours
  plus the most cards-over the layout allows.
- All Fours: a turned-up Jack is a point for the dealer, counted first, and is in no hand (unless the cards were
  run, which changes trumps): nobody plays it.

Findings use the replay's codes (outputs.md): `unknown_card`, `card_outside_pack` and `duplicate_card` for the
turn-up and shown card, `turn_up_mismatch` (Scotch Whist) or `duplicate_card` (All Fours) for a turned-up Jack
played by the wrong seat, `score_mismatch` for points the observed facts rule out.
"""

from __future__ import annotations

from ..cards import CARD_STR, RJ, parse_card, rank_of, suit_of
from ..dealog import Deal
from ..findings import Finding
from ..rules import SW_HONOURS, Layout

RT = 8  # the Ten's rank index
SW_HONOUR_TOTAL = sum(SW_HONOURS.values())  # 30


def _finding(d: Deal, code: str, message: str, seat: int | None = None, card: str | None = None) -> Finding:
    return Finding(code, d.game_id, d.deal_no, None, seat, d.players[seat] if seat is not None else None, card,
                   d.source, message)


def _who(d: Deal, seat: int) -> str:
    return f"{d.players[seat]} (seat {seat})"


def _side_name(d: Deal, side: int) -> str:
    seats = d.sides[side] if d.sides else [side]
    return f"side {side} ({', '.join(d.players[s] for s in seats)})"


def check_sheet(d: Deal, L: Layout) -> tuple[list[Finding], int | None, bool]:
    """The findings of one score-sheet record on its own, its trump suit (None when the turn-up is not a card) and
    whether its cards (turn-up, shown card) are sound."""
    out: list[Finding] = []
    n = d.n
    cards: dict[str, int] = {}
    for kind, x in (("the turn-up", d.turn_up), ("the shown card", d.shown)):
        if x is None:
            continue
        c = parse_card(x)
        if c is None:
            out.append(_finding(d, "unknown_card", f"{x!r} is not a card ({kind})", card=x))
            continue
        if not (L.pack >> c) & 1:
            out.append(_finding(d, "card_outside_pack", f"{CARD_STR[c]} is not in the {L.pack_size}-card pack of "
                                f"a {n}-player deal ({kind})", card=CARD_STR[c]))
        cards[kind] = c
    tu = cards.get("the turn-up")
    if tu is None:
        return out, None, False
    shown = cards.get("the shown card")
    if shown is not None and shown == tu:
        out.append(_finding(d, "duplicate_card", f"{CARD_STR[tu]} appears twice (the shown card)",
                            card=CARD_STR[tu]))
    if out:
        return out, suit_of(tu), False
    trump = suit_of(tu)
    obs = d.observed or {}
    jack, ten = obs.get("jack"), obs.get("ten")
    if d.game == "all_fours":
        out += _af_checks(d, tu, jack)
    else:
        out += _sw_checks(d, L, tu, shown, jack, ten)
    return out, trump, True


def _sw_checks(d: Deal, L: Layout, tu: int, shown: int | None, jack: int | None, ten: int | None) -> list[Finding]:
    out: list[Finding] = []
    R = d.ruleset
    trump = suit_of(tu)
    undealt = sum(1 for s in L.deal_seat if s is None) - (1 if shown is not None else 0)  # unknown cards aside
    for rank, seat, name in ((RJ, jack, "Jack"), (RT, ten, "Ten")):
        card = trump * 13 + rank
        verb = "played" if rank == RJ else "took"
        if shown == card and seat is not None:
            out.append(_finding(d, "score_mismatch", f"the {name} of trumps ({CARD_STR[card]}) is the shown card, "
                                f"out of play; the sheet says {_who(d, seat)} {verb} it", seat, CARD_STR[card]))
        elif seat is None and shown != card and undealt <= 0:
            out.append(_finding(d, "score_mismatch", f"the sheet says nobody {verb} the {name} of trumps "
                                f"({CARD_STR[card]}), but every card is in play in this deal; it scores "
                                f"{SW_HONOURS[rank]} for the side that takes it", None, CARD_STR[card]))
    owner = L.turnup_owner
    if rank_of(tu) == RJ and owner is not None and jack != owner:
        said = "nobody played it" if jack is None else f"{_who(d, jack)} played it"
        out.append(_finding(d, "turn_up_mismatch", f"the turn-up {CARD_STR[tu]} is the Jack of trumps, in the hand "
                            f"of {_who(d, owner)}; the sheet says {said}", owner, CARD_STR[tu]))
    pts = (d.recorded or {}).get("points")
    if pts is None:
        return out
    side_of = d.side_of
    need = [0] * d.n_sides
    why: list[list[str]] = [[] for _ in range(d.n_sides)]
    if jack is not None:
        need[side_of[jack]] += SW_HONOURS[RJ]
        why[side_of[jack]].append(f"played the Jack of trumps ({SW_HONOURS[RJ]})")
    if ten is not None:
        need[side_of[ten]] += SW_HONOURS[RT]
        why[side_of[ten]].append(f"took the Ten ({SW_HONOURS[RT]})")
    if R.revoke_penalty == "lose_game" and R.cards_under == "zero":  # nothing can take points away
        for s in range(d.n_sides):
            if pts[s] < need[s]:
                what = " and ".join(why[s]) if why[s] else "scores nothing below zero"
                out.append(_finding(d, "score_mismatch", f"recorded points {pts}: {_side_name(d, s)} {what}, so it "
                                    f"scored at least {need[s]}, not {pts[s]}"))
                break
    base = [0] * d.n_sides
    for s in range(d.n):
        base[side_of[s]] += L.cards_base[s]
    most = SW_HONOUR_TOTAL + sum(L.hand_sizes) - min(base)
    if sum(pts) > most:
        out.append(_finding(d, "score_mismatch", f"recorded points {pts} add up to {sum(pts)}; a deal of this "
                            f"layout scores at most {most} ({SW_HONOUR_TOTAL} for the honours and {most - 30} "
                            "cards over)"))
    return out


def _af_checks(d: Deal, tu: int, jack: int | None) -> list[Finding]:
    out: list[Finding] = []
    turned_jack = rank_of(tu) == RJ
    ran = d.beg == "run"
    if turned_jack and not ran and jack is not None:
        out.append(_finding(d, "duplicate_card", f"the turn-up {CARD_STR[tu]} is the Jack of trumps, on the stock "
                            f"and in no hand; the sheet says {_who(d, jack)} played it", jack, CARD_STR[tu]))
    pts = (d.recorded or {}).get("points")
    if pts is None:
        return out
    if any(p < 0 for p in pts):
        out.append(_finding(d, "score_mismatch", f"recorded points {pts}: All Fours points are never negative"))
    elif turned_jack and not d.bunched:
        side = d.side_of[d.dealer]
        if pts[side] < 1:
            out.append(_finding(d, "score_mismatch", f"recorded points {pts}: the dealer {_who(d, d.dealer)} turned "
                                f"up {CARD_STR[tu]}, a point for {_side_name(d, side)} counted before any other"))
    return out


def sheet_winner(d: Deal, before: list[int] | None, after: list[int]) -> int | None:
    """The winner of a score-sheet deal that takes several sides to the target (`after`: the totals after it), as
    far as the sheet can tell: Scotch Whist counts the Ten first (rules.md A.6; after a claimed revoke's Russian
    -10), so the side that took it wins if the Ten alone takes it there; All Fours counts a turned-up Jack first, for the dealer's side. Otherwise the
    sheet cannot tell which side got there first: its recorded winner stands when it is one of those sides; else
    None."""
    target = d.ruleset.target
    reached = [i for i, v in enumerate(after) if v >= target]
    obs = d.observed or {}
    tu = parse_card(d.turn_up)
    if before is not None and tu is not None:
        first: int | None = None
        if d.game == "scotch_whist" and obs.get("ten") is not None:
            start = list(before)
            R = d.ruleset
            if obs.get("revoke") is not None and R.revoke_penalty == "minus_10":  # counted before the Ten
                r = d.side_of[obs["revoke"]]
                start[r] -= 10
                if R.negative_scores == "floor_zero":
                    start[r] = max(start[r], 0)
            s = d.side_of[obs["ten"]]
            first = s if start[s] + SW_HONOURS[RT] >= target else None
        elif d.game == "all_fours" and rank_of(tu) == RJ and d.beg != "run":
            s = d.side_of[d.dealer]
            first = s if before[s] + 1 >= target else None
        if first is not None:
            return first
    w = (d.recorded or {}).get("winner")
    return w if w in reached else None
