"""The reference replay: per card, one rule in one place. This is the executable spec of rules.md and outputs.md.

`replay_deal(deal)` checks one record on its own (cards, hands, turn-up, deck, begging, play, revokes, points
before counting stops). `replay_games` (in `chain.py`) chains the deals of each game. The fast batch engine must
agree with this module on every deal.

The state order follows rules.md Part F:
  1. cards: unknown strings, cards outside the pack, duplicates (scan order of outputs.md)
  2. hand sizes, All Fours begging and discards
  3. the turn-up's owner (Scotch Whist), the deck
  4. the play, trick by trick: follow suit, revokes, trick winners, sets for 2 and 3 players
  5. claims
  6. the points of the hand (Scotch Whist items in count-out order; All Fours points in counting order)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cards import CARD_STR, SUIT_MASK, RJ, parse_card, rank_of, suit_of
from ..dealog import Deal
from ..findings import Finding
from ..legal import revoke_kind, seats_of_trick, trick_size, trick_winner
from ..rules import AF_PIPS, SW_HONOURS, Layout, layout
from .sheet import check_sheet

SUIT_NAME = ("spade", "heart", "diamond", "club")

# Scotch Whist count-out order (rules.md A.6): Ten, cards, Ace, King, Queen, Jack.
SW_STEPS = ("penalty", "ten", "cards", "ace", "king", "queen", "jack")
_SW_STEP_OF_RANK = {8: "ten", 12: "ace", 11: "king", 10: "queen", 9: "jack"}


@dataclass
class DealResult:
    """Everything the replay learned about one deal, for the chain, the detectors and the differential test."""

    deal: Deal
    findings: list[Finding] = field(default_factory=list)
    cards_ok: bool = False  # every card string parsed and in the pack, no duplicates
    hands: list[int] | None = None  # dealt cards per seat as bitmasks (recorded or derived from the play)
    trump: int | None = None
    replayed_tricks: int = 0  # tricks fully replayed
    plays: list[tuple[int, int, int]] = field(default_factory=list)  # (trick 0-based, seat, card)
    winners: list[int] = field(default_factory=list)  # winner seat of each replayed trick
    revokes: list[tuple[int, int]] = field(default_factory=list)  # (trick 1-based, seat)
    scored: bool = False
    # Scotch Whist: per step of SW_STEPS, the points of each side
    sw_steps: dict[str, list[int]] | None = None
    # All Fours: points in counting order as (side, label); revoking sides capped at target - 1
    af_events: list[tuple[int, str]] | None = None
    af_capped_sides: frozenset[int] = frozenset()
    penalty_revokes: list[tuple[int, int]] = field(default_factory=list)  # (trick, seat) that carry a penalty
    gift_sides: list[int] = field(default_factory=list)
    # the deal's rank in the canonical order of the whole input (`columns.canonical_order`: table, time, game, deal
    # number, then file and line), set by `replay.run.replay_records`; None for a deal replayed on its own
    order: int | None = None

    @property
    def points(self) -> list[int] | None:
        """The hand's points before any counting stops (Scotch Whist: exact; All Fours: all events)."""
        d = self.deal
        if not self.scored:
            return None
        pts = [0] * d.n_sides
        if self.sw_steps is not None:
            for step in SW_STEPS:
                for s, v in enumerate(self.sw_steps[step]):
                    pts[s] += v
        elif self.af_events is not None:
            for s, _ in self.af_events:
                pts[s] += 1
        return pts


class _Deal:
    """Working state for one deal's replay."""

    def __init__(self, deal: Deal):
        self.d = deal
        self.R = deal.ruleset
        self.n = deal.n
        self.L: Layout = layout(self.R, self.n, deal.dealer)
        self.res = DealResult(deal)
        self.side_of = deal.side_of
        self.claims_done = False

    def add(self, code: str, message: str, trick: int | None = None, seat: int | None = None,
            card: str | None = None) -> None:
        d = self.d
        self.res.findings.append(Finding(
            code, d.game_id, d.deal_no, trick, seat, d.players[seat] if seat is not None else None, card,
            d.source, message))

    def who(self, seat: int) -> str:
        return f"{self.d.players[seat]} (seat {seat})"


def walk_seats(L: Layout, game: str, set_leader: str, tricks: Sequence[Sequence[int | None]], trump: int | None,
               tricks_per_set: tuple[int, ...]) -> list[list[int] | None]:
    """Seats that play each card, following the leads (None from the first trick that cannot be placed)."""
    out: list[list[int] | None] = []
    leader: int | None = L.eldest
    n_tricks = sum(tricks_per_set)
    set_starts = {sum(tricks_per_set[:j]) for j in range(1, len(tricks_per_set))}
    for k, t in enumerate(tricks):
        if k in set_starts and set_leader == "eldest":
            leader = L.eldest
        if leader is None:
            out.append(None)
            continue
        seats = seats_of_trick(L, leader, len(t), k == n_tricks - 1)
        out.append(seats)
        cards = [c for c in t if c is not None]
        if len(t) != len(seats) or len(cards) != len(t) or trump is None:
            leader = None
        else:
            leader = seats[trick_winner(game, cards, trump)]
    return out


def _code(x: str) -> int:
    """The code of a card string of a deal whose every card string parsed (checked first by `_replay`)."""
    c = parse_card(x)
    assert c is not None, x
    return c


def replay_deal(deal: Deal) -> DealResult:
    if deal.is_sheet:  # (issue 16) a score-sheet record: its observed facts, no cards to replay (`sheet.py`)
        res = DealResult(deal)
        res.findings, res.trump, res.cards_ok = check_sheet(deal, layout(deal.ruleset, deal.n, deal.dealer))
        revoke = (deal.observed or {}).get("revoke")
        if revoke is not None:  # a claimed revoke (its trick unknown: 0) carries its penalty (the chain's lose_game)
            res.penalty_revokes = [(0, revoke)]
        return res
    st = _Deal(deal)
    _replay(st)
    if not st.claims_done:
        _claims(st)  # claims on tricks that were not replayed are not judged: the table's ruling stands
    return st.res


def _replay(st: _Deal) -> None:
    d, L, R, res = st.d, st.L, st.R, st.res
    af = d.game == "all_fours"
    n = st.n
    runs = d.runs or []
    # ---------------------------------------------------------- 1. parse every card string, in scan order
    places: list[tuple[str, int | None, int | None, str]] = []  # (kind, seat, trick 1-based, string)
    if d.hands is not None:
        for s, h in enumerate(d.hands):
            places += [("hand", s, None, x) for x in h]
    places.append(("turn_up", None, None, d.turn_up))
    if d.shown is not None:
        places.append(("shown", None, None, d.shown))
    for r in runs:
        for s, h in enumerate(r["cards"]):
            places += [("run", s, None, x) for x in h]
        places.append(("run_turn_up", None, None, r["turn_up"]))
    if d.discards is not None:
        for s, h in enumerate(d.discards):
            places += [("discard", s, None, x) for x in h]
    tricks_raw = d.tricks or []
    for k, t in enumerate(tricks_raw):
        places += [("trick", p, k + 1, x) for p, x in enumerate(t)]  # seat filled in once known
    deck_raw = d.deck or []
    code_of: dict[str, int | None] = {}
    for x in {p[3] for p in places} | set(deck_raw):
        code_of[x] = parse_card(x)
    trump_str = runs[-1]["turn_up"] if (af and runs) else d.turn_up
    trump_code = code_of.get(trump_str)
    trump_seen = suit_of(trump_code) if trump_code is not None else None
    tricks_seen = [[code_of[x] for x in t] for t in tricks_raw]  # None: not a card
    walked: list[list[list[int] | None]] = []

    def seat_walk() -> list[list[int] | None]:
        """Who played each card, following the leads: needed only to place a bad card found in the tricks or to
        derive hands from the play, so it is computed on first use (the play itself walks the tricks again)."""
        if not walked:
            walked.append(walk_seats(L, d.game, R.switches.get("set_leader", "last_trick_winner"), tricks_seen,
                                     trump_seen, _tricks_per_set(st)))
        return walked[0]

    def place_seat(kind: str, seat: int | None, trick: int | None) -> int | None:
        if kind != "trick" or seat is None or trick is None:
            return seat
        seats = seat_walk()[trick - 1]
        return seats[seat] if seats is not None and seat < len(seats) else None

    unknown_seen: set[str] = set()
    for kind, seat, trick, x in places:
        if code_of[x] is None and x not in unknown_seen:
            unknown_seen.add(x)
            st.add("unknown_card", f"{x!r} is not a card ({_where(kind, seat, trick, st)})", trick,
                   place_seat(kind, seat, trick), x)
    for x in deck_raw:
        if code_of[x] is None and x not in unknown_seen:
            unknown_seen.add(x)
            st.add("unknown_card", f"{x!r} is not a card (in deck)", None, None, x)
    if unknown_seen:
        return
    # from here on every string is a card
    code = {x: c for x, c in code_of.items() if c is not None}
    tricks = [[code[x] for x in t] for t in tricks_raw]
    trump = suit_of(code[trump_str])
    outside_seen: set[int] = set()
    for kind, seat, trick, x in places:
        c = code[x]
        if not (L.pack >> c) & 1 and c not in outside_seen:
            outside_seen.add(c)
            st.add("card_outside_pack", f"{CARD_STR[c]} is not in the {L.pack_size}-card pack of a {n}-player "
                   f"deal ({_where(kind, seat, trick, st)})", trick, place_seat(kind, seat, trick), CARD_STR[c])
    for x in deck_raw:
        c = code[x]
        if not (L.pack >> c) & 1 and c not in outside_seen:
            outside_seen.add(c)
            st.add("card_outside_pack", f"{CARD_STR[c]} is not in the {L.pack_size}-card pack (in deck)",
                   None, None, CARD_STR[c])
    # duplicates among the dealt cards: hands, (All Fours) turn-up, shown, runs, then the tricks when there are
    # no hands. The Scotch Whist turn-up names a card of its owner's hand; discards name held cards. Without
    # hands, the dealt cards are the tricks and (All Fours) the discards: run cards are among them.
    dealt_kinds = {"hand", "shown", "run", "run_turn_up"} | ({"turn_up"} if af else set())
    if d.hands is None:
        dealt_kinds.add("trick")
        if af:
            dealt_kinds -= {"run"}
            dealt_kinds.add("discard")
    seen: set[int] = set()
    dup_seen: set[int] = set()  # one finding per card, at its second copy (a third copy is no new finding)
    dup = False
    for kind, seat, trick, x in places:
        if kind not in dealt_kinds:
            continue
        c = code[x]
        if c in seen and c not in dup_seen:
            dup = True
            dup_seen.add(c)
            at_seat = place_seat(kind, seat, trick) if kind in ("hand", "run", "trick") else None
            st.add("duplicate_card", f"{CARD_STR[c]} appears twice ({_where(kind, seat, trick, st)})",
                   trick if kind == "trick" else None, at_seat, CARD_STR[c])
        seen.add(c)
    structural = bool(outside_seen) or dup
    # ---------------------------------------------------------- 2. hand sizes, begging, discards
    bad_size: set[int] = set()
    if d.hands is not None:
        for s, h in enumerate(d.hands):
            if len(h) != L.hand_sizes[s]:
                bad_size.add(s)
                st.add("wrong_hand_size", f"{st.who(s)} was dealt {len(h)} cards; the rules give "
                       f"{L.hand_sizes[s]}", None, s)
    if af:
        for s in range(n):
            if s in bad_size:
                continue
            for j, r in enumerate(runs):
                if len(r["cards"][s]) != 3:
                    bad_size.add(s)
                    st.add("wrong_hand_size", f"{st.who(s)} got {len(r['cards'][s])} cards in run {j + 1}; "
                           "a run gives 3", None, s)
                    break
    structural |= bool(bad_size)
    if af:
        structural |= _af_begging(st, code)
    res.cards_ok = not structural
    # recorded hands as masks
    if d.hands is not None:
        hands_mask = [0] * n
        for s, h in enumerate(d.hands):
            for x in h:
                hands_mask[s] |= 1 << code[x]
        res.hands = hands_mask
    res.trump = trump
    # ---------------------------------------------------------- 3. the turn-up's owner and the deck
    if not af and d.hands is not None:
        _sw_turn_up(st, code, d.hands)
    if d.deck is not None and d.hands is not None:
        _check_deck(st, code, d.deck, [[code[x] for x in h] for h in d.hands], sequences=True)
    # ---------------------------------------------------------- 4. the play
    if d.tricks is None or d.bunched:
        if d.tricks is None and d.deck is not None and d.hands is None:
            pass  # a deck with neither hands nor tricks cannot be compared (schema requires one of them)
        return
    if structural:
        return
    if d.hands is None:
        derived, known = _derive_hands(st, tricks, seat_walk())
        res.hands = [0] * n
        for s in range(n):
            for part in derived[s]:
                for c in part:
                    res.hands[s] |= 1 << c
        if not af:
            _sw_turn_up_derived(st, code, derived, known)
        if d.deck is not None and known:
            # only whole hands can be compared with the deck (docs/decisions.md): the play must be complete.
            # All Fours: a seat was dealt what it played plus what it discarded (hand and run cards together).
            dealt = [[c for part in derived[s] for c in part] for s in range(n)]
            if af and d.discards is not None:
                discards = d.discards
                dealt = [dealt[s] + [code[x] for x in discards[s]] for s in range(n)]
            _check_deck(st, code, d.deck, dealt, sequences=False, parts=derived)
        holdings_by_set = derived
    else:
        holdings_by_set = _holdings_from_hands(st, code, d.hands)
    complete = _play(st, tricks, holdings_by_set, trump)
    if complete:
        _claims(st, complete=True)
        if af:
            _af_score(st)
        else:
            _sw_score(st)


def _tricks_per_set(st: _Deal) -> tuple[int, ...]:
    if st.d.game == "all_fours":
        return (_af_hand_size(st),)
    return st.L.tricks_per_set


def _af_hand_size(st: _Deal) -> int:
    r = len(st.d.runs or [])
    rule = st.R.after_run
    if r == 0 or rule == "discard_to_six" or (rule == "keep_if_nine_else_discard" and r >= 2):
        return 6
    return 6 + 3 * r


def _af_discard_count(st: _Deal) -> int:
    return 6 + 3 * len(st.d.runs or []) - _af_hand_size(st)


def _where(kind: str, seat: int | None, trick: int | None, st: _Deal) -> str:
    if kind == "hand" and seat is not None:
        return f"in the hand of {st.who(seat)}"
    if kind == "run" and seat is not None:
        return f"in the run cards of {st.who(seat)}"
    if kind == "discard" and seat is not None:
        return f"in the discards of {st.who(seat)}"
    if kind == "trick":
        return f"in trick {trick}"
    return {"turn_up": "the turn-up", "shown": "the shown card", "run_turn_up": "a run's turn-up"}[kind]


def _af_begging(st: _Deal, code_of: dict[str, int]) -> bool:
    """All Fours begging checks. Returns True when the discards are wrong or missing (the play is not replayed)."""
    d, R = st.d, st.R
    runs = d.runs or []
    beg = d.beg or "stand"
    dealer, eldest = d.dealer, st.L.eldest
    first_suit = suit_of(code_of[d.turn_up])
    if not d.bunched:
        if beg == "run" and not runs:
            st.add("beg_irregular", "beg is 'run' but no runs are logged", None, dealer)
        elif runs and beg != "run":
            st.add("beg_irregular", f"{len(runs)} run(s) logged but beg is {beg!r}", None, dealer)
    for j in range(len(runs)):
        if j >= 1 and suit_of(code_of[runs[j - 1]["turn_up"]]) != first_suit and R.second_beg == "forbidden":
            st.add("beg_irregular", f"run {j + 1} follows a new trump suit: a second beg", None, eldest)
            break
    if runs and not d.bunched and suit_of(code_of[runs[-1]["turn_up"]]) == first_suit:
        st.add("beg_irregular", f"the last run turned {CARD_STR[code_of[runs[-1]['turn_up']]]}, the original "
               "suit, and the dealer stopped", None, dealer)
    if d.bunched:
        return False
    need = _af_discard_count(st)
    if d.discards is None:
        if need:
            st.add("beg_irregular", f"after {len(runs)} run(s) each seat must discard {need}; no discards logged")
            return True
        return False
    if not runs:
        st.add("beg_irregular", "discards logged without a run of the cards")
        return True
    bad = False
    for s in range(st.n):
        ds = [code_of[x] for x in d.discards[s]]
        held: set[int] = set()
        if d.hands is not None:
            held |= {code_of[x] for x in d.hands[s]}
            for r in runs:
                held |= {code_of[x] for x in r["cards"][s]}
        wrong = len(ds) != need or len(set(ds)) != len(ds) or (d.hands is not None and not set(ds) <= held)
        if wrong:
            bad = True
            st.add("beg_irregular", f"{st.who(s)} discarded {[CARD_STR[c] for c in ds]}; the rules want {need} of "
                   "the cards held", None, s)
    return bad


def _sw_turn_up(st: _Deal, code_of: dict[str, int], hands: list[list[str]]) -> None:
    d, L = st.d, st.L
    owner = L.turnup_owner
    if owner is None:  # (a Scotch Whist layout always has the turn-up's owner)
        return
    tu = code_of[d.turn_up]
    cards = [code_of[x] for x in hands[owner]]
    if L.turnup_in_last_set:
        a, b = L.sets[owner][-1]
        cards = cards[a:b]
    if tu not in cards:
        holder = next((s for s in range(st.n) if tu in {code_of[x] for x in hands[s]}), None)
        where = f"it is in the hand of {st.who(holder)}" if holder is not None else "it is in no hand"
        st.add("turn_up_mismatch", f"the turn-up {CARD_STR[tu]} should be {st.who(owner)}'s"
               f"{' last-set' if L.turnup_in_last_set else ''} card; {where}", None, owner, CARD_STR[tu])


def _sw_turn_up_derived(st: _Deal, code_of: dict[str, int], derived: list[list[list[int]]], known: bool) -> None:
    owner = st.L.turnup_owner
    if owner is None:  # (a Scotch Whist layout always has the turn-up's owner)
        return
    tu = code_of[st.d.turn_up]
    cards = derived[owner][-1] if st.L.turnup_in_last_set else [c for part in derived[owner] for c in part]
    played = any(tu in part for hand in derived for part in hand)
    if tu not in cards and (known or played):  # unplayed in an incomplete play: where it was is not known
        st.add("turn_up_mismatch", f"the turn-up {CARD_STR[tu]} was not played by {st.who(owner)}, who should "
               "hold it", None, owner, CARD_STR[tu])


def _check_deck(st: _Deal, code_of: dict[str, int], deck_raw: list[str], hands: list[list[int]], sequences: bool,
                parts: list[list[list[int]]] | None = None) -> None:
    """Deal from `deck` under the rules and compare with the hands, run cards, turn-up and shown card."""
    d, L = st.d, st.L
    deck = [code_of[x] for x in deck_raw]
    af = d.game == "all_fours"
    n = st.n
    problems: list[str] = []
    if len(deck) != L.deck_len:
        problems.append(f"the deck has {len(deck)} cards, not {L.deck_len}")
    if len(set(deck)) != len(deck):
        twice = next(c for c in deck if deck.count(c) > 1)
        problems.append(f"{CARD_STR[twice]} is twice in the deck")

    def at(k: int) -> int | None:
        return deck[k] if k < len(deck) else None

    def name_at(k: int) -> str:
        c = at(k)
        return CARD_STR[c] if c is not None else "missing"

    # the cards each seat should have received, in order
    expect: list[list[int | None]] = [[None] * L.hand_sizes[s] for s in range(n)]
    for k, (seat, slot) in enumerate(zip(L.deal_seat, L.deal_slot, strict=True)):
        if seat is not None and slot is not None:
            expect[seat][slot] = at(k)
    runs = d.runs or []
    got = [list(h) for h in hands]
    if af:
        pos = 6 * n + 1
        for _run in runs:
            for off in range(n):
                s = (L.eldest + off) % n
                expect[s] += [at(pos + i) for i in range(3)]
                pos += 3
            pos += 1
        if sequences:  # recorded hands: add each seat's run cards (derived hands already hold them)
            for s in range(n):
                for r in runs:
                    got[s] += [code_of[x] for x in r["cards"][s]]
    if L.deck_checkable:
        for s in range(n):
            if sequences:
                same = got[s] == expect[s]
            elif af:  # derived: the cards played and discarded, against hand and run cards dealt
                same = None not in expect[s] and sorted(got[s]) == sorted(c for c in expect[s] if c is not None)
            else:  # hands derived from the play: compare the cards of each set
                assert parts is not None  # (derived hands come with their sets)
                same = True
                for j, (a, b) in enumerate(L.sets[s]):
                    if sorted(parts[s][j]) != sorted(c for c in expect[s][a:b] if c is not None) or \
                            None in expect[s][a:b]:
                        same = False
            if not same:
                st.add("deck_mismatch", f"{st.who(s)} holds {' '.join(CARD_STR[c] for c in got[s])}; dealing "
                       f"from the deck gives {' '.join(CARD_STR[c] if c is not None else '?' for c in expect[s])}",
                       None, s)
    tu = code_of[d.turn_up]
    if at(L.turnup_index) != tu:
        problems.append(f"the turn-up is {CARD_STR[tu]} but the deck's card {L.turnup_index + 1} is "
                        f"{name_at(L.turnup_index)}")
    if af:
        pos = 6 * n + 1
        for j, r in enumerate(runs):
            pos += 3 * n
            rt = code_of[r["turn_up"]]
            if at(pos) != rt:
                problems.append(f"run {j + 1} turned {CARD_STR[rt]} but the deck's card {pos + 1} is "
                                f"{name_at(pos)}")
            pos += 1
    if L.shown_index is not None and d.shown is not None:
        sh = code_of[d.shown]
        if at(L.shown_index) != sh:
            problems.append(f"the shown card is {CARD_STR[sh]} but the deck's card {L.shown_index + 1} is "
                            f"{name_at(L.shown_index)}")
    if problems:
        st.add("deck_mismatch", "; ".join(problems))


def _derive_hands(st: _Deal, tricks: list[list[int]],
                  seat_walk: list[list[int] | None]) -> tuple[list[list[list[int]]], bool]:
    """Hands from the play alone: each card belongs to the seat whose turn it was, set by set. The flag says
    whether every trick of the deal could be placed (the hands are then whole)."""
    n = st.n
    per_set = _tricks_per_set(st)
    out: list[list[list[int]]] = [[[] for _ in per_set] for _ in range(n)]
    k = 0
    for j, cnt in enumerate(per_set):
        for _ in range(cnt):
            seats = seat_walk[k] if k < len(tricks) else None
            if seats is None or len(tricks[k]) != len(seats):
                return out, False  # the play stops here; _play reports it
            for c, s in zip(tricks[k], seats, strict=True):
                out[s][j].append(c)
            k += 1
    return out, True


def _holdings_from_hands(st: _Deal, code_of: dict[str, int], hands: list[list[str]]) -> list[list[list[int]]]:
    """Per seat, the cards of each set in play (All Fours: hand + run cards - discards)."""
    d, L, n = st.d, st.L, st.n
    out: list[list[list[int]]] = []
    for s in range(n):
        cards = [code_of[x] for x in hands[s]]
        if d.game == "all_fours":
            for r in d.runs or []:
                cards += [code_of[x] for x in r["cards"][s]]
            if d.discards is not None:
                gone = {code_of[x] for x in d.discards[s]}
                cards = [c for c in cards if c not in gone]
            out.append([cards])
        else:
            out.append([cards[a:b] for a, b in L.sets[s]])
    return out


def _play(st: _Deal, tricks: list[list[int]], holdings_by_set: list[list[list[int]]], trump: int) -> bool:
    """Replay the tricks; returns True when every dealt card was played in well-formed tricks."""
    d, L, R, res = st.d, st.L, st.R, st.res
    n, game = st.n, d.game
    af = game == "all_fours"
    per_set = _tricks_per_set(st)
    n_tricks = sum(per_set)
    must_trump = R.switches.get("void_rule") == "must_trump_if_able"
    set_leader = R.switches.get("set_leader", "last_trick_winner")
    leader = L.eldest
    k = 0
    for j, cnt in enumerate(per_set):
        hold = [0] * n
        for s in range(n):
            for c in holdings_by_set[s][j]:
                hold[s] |= 1 << c
        if j > 0 and set_leader == "eldest":
            leader = L.eldest
        for _ in range(cnt):
            if k >= len(tricks):
                st.add("incomplete_play", f"the play stops after {len(tricks)} tricks; the deal has {n_tricks}",
                       k + 1)
                return False
            t = tricks[k]
            size = trick_size(L, k == n_tricks - 1)
            if len(t) != size:
                st.add("incomplete_play", f"trick {k + 1} has {len(t)} cards, not {size}", k + 1)
                return False
            seats = seats_of_trick(L, leader, size, k == n_tricks - 1)
            lead_suit = suit_of(t[0])
            for p, (c, s) in enumerate(zip(t, seats, strict=True)):
                bit = 1 << c
                if not hold[s] & bit:
                    holder = next((o for o in range(n) if hold[o] & bit), None)
                    why = (f"held by {st.who(holder)}" if holder is not None else "not held by anyone now")
                    st.add("card_not_in_hand", f"{st.who(s)} played {CARD_STR[c]} in trick {k + 1}, a card {why}",
                           k + 1, s, CARD_STR[c])
                    if holder is not None:
                        hold[holder] &= ~bit
                else:
                    two_card_turn = s == L.extra_card_seat and size == n + 1
                    if p > 0 and not two_card_turn:
                        _check_revoke(st, k, s, c, hold[s], lead_suit, trump, af, must_trump)
                    hold[s] &= ~bit
                res.plays.append((k, s, c))
            win = seats[trick_winner(game, t, trump)]
            res.winners.append(win)
            leader = win
            k += 1
            res.replayed_tricks = k
    if len(tricks) > n_tricks:
        st.add("incomplete_play", f"{len(tricks)} tricks logged; the deal has {n_tricks}", n_tricks + 1)
        return False
    return True


def _check_revoke(st: _Deal, k: int, s: int, c: int, held: int, lead: int, trump: int, af: bool,
                  must_trump: bool) -> None:
    """A revoke when `c`, played out of `held`, breaks the follow-suit rule (`legal.revoke_kind`); the message
    names the lowest card of the suit that obliged the seat."""
    kind = revoke_kind(st.d.game, held, c, lead, trump, must_trump)
    if kind == "lead":
        what = "neither followed suit nor trumped" if af else "did not follow suit"
        _revoke(st, k, s, c, held & SUIT_MASK[lead], lead, what)
    elif kind == "trump":
        _revoke(st, k, s, c, held & SUIT_MASK[trump], lead, "discarded while holding a trump (must trump)")


def _revoke(st: _Deal, k: int, s: int, c: int, could: int, lead: int, what: str) -> None:
    example = CARD_STR[(could & -could).bit_length() - 1]
    st.add("revoke", f"{st.who(s)} played {CARD_STR[c]} to a {SUIT_NAME[lead]} lead while holding {example}: "
           f"{what}", k + 1, s, CARD_STR[c])
    st.res.revokes.append((k + 1, s))


def _claims(st: _Deal, complete: bool = False) -> None:
    """Claimed revokes: confirmed, a `claim_mismatch`, or not judged (a trick that was not replayed). When the
    whole play was replayed, a claim on a trick the deal does not have is judged too: no revoke was found there."""
    d, R, res = st.d, st.R, st.res
    st.claims_done = True
    found = set(res.revokes)
    penal: set[tuple[int, int]] = set()
    seen: set[tuple[int, int]] = set()
    for cl in d.claims or []:
        key = (cl["trick"], cl["revoke"])
        if key in seen:
            continue
        seen.add(key)
        if cl["trick"] <= res.replayed_tricks or complete:
            if key in found:
                penal.add(key)
            else:
                st.add("claim_mismatch", f"a revoke by {st.who(cl['revoke'])} is claimed in trick {cl['trick']}; "
                       "the replay finds none", cl["trick"], cl["revoke"])
        else:
            penal.add(key)  # not judged: the table's ruling stands
    if d.game == "scotch_whist" and not R.revoke_requires_claim:
        penal |= found
    res.penalty_revokes = sorted(penal)


def _sw_score(st: _Deal) -> None:
    d, L, res = st.d, st.L, st.res
    ns = d.n_sides
    side = st.side_of
    steps = {k: [0] * ns for k in SW_STEPS}
    won_cards = [0] * ns
    trick_sizes: dict[int, int] = {}
    for k, _s, c in res.plays:
        trick_sizes[k] = trick_sizes.get(k, 0) + 1
        if suit_of(c) == res.trump and rank_of(c) in SW_HONOURS:
            w = side[res.winners[k]]
            steps[_SW_STEP_OF_RANK[rank_of(c)]][w] += SW_HONOURS[rank_of(c)]
    for k, size in trick_sizes.items():
        won_cards[side[res.winners[k]]] += size
    base = [0] * ns
    for s in range(st.n):
        base[side[s]] += L.cards_base[s]
    for i in range(ns):
        over = won_cards[i] - base[i]
        steps["cards"][i] = over if (over > 0 or st.R.cards_under == "negative") else 0
    if st.R.revoke_penalty == "minus_10":
        for _trick, seat in res.penalty_revokes:
            steps["penalty"][side[seat]] -= 10
    res.sw_steps = steps
    res.scored = True


def _af_score(st: _Deal) -> None:
    d, L, R, res = st.d, st.L, st.R, st.res
    side = st.side_of
    n = st.n
    ns = d.n_sides
    ev: list[tuple[int, str]] = []
    dealer_side = side[d.dealer]
    eldest = L.eldest
    from_eldest = [(eldest + i) % n for i in range(n)]
    sides_from_eldest: list[int] = []
    for s in from_eldest:
        if side[s] not in sides_from_eldest:
            sides_from_eldest.append(side[s])
    first = _code(d.turn_up)
    if rank_of(first) == RJ:
        ev.append((dealer_side, "turned_jack"))
    for r in d.runs or []:
        c = _code(r["turn_up"])
        if rank_of(c) == RJ and (suit_of(c) != suit_of(first) or R.jack_on_rejected_turnup == "point"):
            ev.append((dealer_side, "turned_jack"))
    if (d.beg or "stand") == "take_one":
        partnerships = any(len(s) > 1 for s in (d.sides or []))
        if n == 2 or partnerships or R.gift_three_players == "eldest_only":
            gift = [side[eldest]]
        else:
            gift = [x for x in sides_from_eldest if x != dealer_side]
        res.gift_sides = gift
        ev += [(g, "gift") for g in gift]
    trump = res.trump
    trumps_played = [(c, s, k) for k, s, c in res.plays if suit_of(c) == trump]
    jack_in_play = any(rank_of(c) == RJ for c, _, _ in trumps_played)
    revoking = {side[seat] for _, seat in res.penalty_revokes}
    graduated = R.revoke == "foster_graduated"
    for _trick, seat in res.penalty_revokes:
        amount = 2 if (graduated and jack_in_play) else 1
        for x in sides_from_eldest:
            if x != side[seat]:
                ev += [(x, "revoke_penalty")] * amount
    if trumps_played:
        hi = max(trumps_played, key=lambda t: rank_of(t[0]))
        lo = min(trumps_played, key=lambda t: rank_of(t[0]))
        ev.append((side[hi[1]], "high"))
        low_seat = lo[1] if R.low_to == "dealt_holder" else res.winners[lo[2]]
        ev.append((side[low_seat], "low"))
        jack = next((t for t in trumps_played if rank_of(t[0]) == RJ), None)
        if jack is not None:
            js = side[res.winners[jack[2]]]
            if not (graduated and js in revoking):
                ev.append((js, "jack"))
    pips = [0] * ns
    for k, _s, c in res.plays:
        pips[side[res.winners[k]]] += AF_PIPS.get(rank_of(c), 0)
    best = max(pips)
    top = [x for x in sides_from_eldest if pips[x] == best]
    game_side: int | None
    if len(top) == 1:
        game_side = top[0]
    else:
        # a tie goes to the tied side nearest the dealer's left (game_tie = elder_hand); with more than two
        # players -- three, or partnerships -- game_tie_multi decides too (rules.md Part C)
        multi = n > 2
        nobody = R.game_tie == "nobody" or (multi and R.game_tie_multi == "nobody")
        game_side = None if nobody else top[0]
    # the revoking side cannot score Game; a tie that goes to it is scored by nobody (rules.md Part G), not by
    # the next tied side
    if game_side is not None and not (graduated and game_side in revoking):
        ev.append((game_side, "game"))
    res.af_events = ev
    res.af_capped_sides = frozenset(revoking) if graduated else frozenset()
    res.scored = True
