"""Per-play facts from replayed deals: who played what, from which cards, with which legal options, and what he
could legally know at that moment.

`walk(res)` steps through one complete `DealResult` play by play and yields one `PlayState` (the same object,
updated in place: copy what you keep). At each play it holds

- the true state: every seat's unplayed cards of the current set (`hold`), so the true location of any card;
- the seat's legal options (`legal`, `auditor.legal.legal_mask`), the lead suit, the cards already in the trick,
  and whether the play was a revoke;
- the public record: cards played so far (`played`), suits each seat has shown void in (`void`), the turn-up and
  its owner (in Scotch Whist the turn-up is seen by all and stays known to be its owner's until played), the shown
  dead card, and which cards are not in play at all.

What a seat `i` could legally know at a play is its own unplayed cards plus the public record; `unknown_slots(j)`
counts seat j's unplayed cards that `i` cannot name. The hands are taken from the play itself (every dealt card of a
complete deal is played, set by set), so All Fours runs and discards and the 2- and 3-player sets need no special
case.

`deal_exclusion(res)` says why a deal cannot be walked (None when it can): it is not complete (not scored), a
card was played from a hand that did not hold it, or the hands are unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..cards import SUIT_MASK, parse_card, rank_of, suit_of
from ..legal import legal_mask
from ..rules import AF_PIPS, SW_HONOURS, layout, trump_strength

TEN = 8  # rank index of the Ten
QUEEN, KING, ACE, JACK = 10, 11, 12, 9
SW_COUNTING_RANKS = frozenset(r for r in SW_HONOURS if r != JACK)  # T A K Q of trumps


def card_of(suit: int, rank: int) -> int:
    return suit * 13 + rank


def counting(game: str, trump: int, card: int) -> bool:
    """A counting card a player can give to another's trick: Scotch Whist, the trump Ten, Ace, King and Queen (the
    Jack always wins its trick); All Fours, every card worth Game pips (Ten, Ace, King, Queen, Jack) and the trump
    Jack."""
    r = rank_of(card)
    if game == "scotch_whist":
        return suit_of(card) == trump and r in SW_COUNTING_RANKS
    return r in AF_PIPS or (suit_of(card) == trump and r == JACK)


def popcount(x: int) -> int:
    return x.bit_count()


def deal_exclusion(res: Any) -> str | None:
    """Why `res` cannot be walked play by play, or None."""
    if res.hands is None:
        return "no_hands"
    if not res.scored or res.trump is None:
        return "incomplete"
    if any(f.code == "card_not_in_hand" for f in res.findings):
        return "card_not_in_hand"
    return None


def tricks_per_set(res: Any) -> tuple[int, ...]:
    d = res.deal
    if d.game == "all_fours":
        return (len(res.winners),)
    return layout(d.ruleset, d.n, d.dealer).tricks_per_set


@dataclass(slots=True)
class PlayState:
    """The state at one play (updated in place by `walk`)."""

    game: str
    n: int
    trump: int
    dealer: int
    side_of: list[int]
    partnership: bool  # some side has two or more seats
    n_tricks: int
    turn_up: int
    turnup_owner: int | None  # Scotch Whist: the seat holding the turn-up; All Fours: None (out of play)
    out_of_play_public: int  # cards known by all to be out of play (All Fours turn-up, the shown dead card)
    aside: int  # cards in the pack that no seat holds (Russian 2-3 players, All Fours stock): unknown, not in play
    n_sets: int
    # per play
    k: int = 0  # trick, 0-based
    pos: int = 0  # position in the trick, 0 = lead
    seat: int = 0
    card: int = 0
    set_index: int = 0
    hold: list[int] = field(default_factory=list)  # per seat, unplayed cards of the current set (before the play)
    future: list[int] = field(default_factory=list)  # per seat, cards of later sets (2 and 3 players)
    legal: int = 0
    lead_suit: int | None = None
    trick_seats: list[int] = field(default_factory=list)  # seats of this trick in play order
    trick: list[tuple[int, int]] = field(default_factory=list)  # (seat, card) already in this trick
    played: int = 0  # public: cards played before this play
    void: list[int] = field(default_factory=list)  # public: per seat, suits shown void in this set (bit s)
    revoke: bool = False  # this play is a revoke found by the replay
    two_card_turn: bool = False  # Russian 5 players: the eldest's two cards in the last trick (no choice made)
    winner: int = 0  # seat that won this trick (known after the fact)
    win: tuple[int, int] | None = None  # (seat, card) winning the trick so far (None when leading)
    trump_order: tuple[int, ...] = ()  # trumps from the strongest down

    # ------------------------------------------------------------ knowledge
    def holder(self, card: int) -> int | None:
        """The seat whose unplayed cards (any set) hold `card`, else None (played, aside or out of play)."""
        bit = 1 << card
        for s in range(self.n):
            if (self.hold[s] | self.future[s]) & bit:
                return s
        return None

    def public_known(self, seat: int) -> int:
        """Cards every player knows `seat` still holds: the turn-up, for its owner, until he plays it."""
        if self.turnup_owner == seat and not (self.played >> self.turn_up) & 1:
            return 1 << self.turn_up
        return 0

    def unknown_slots(self, viewer: int, seat: int) -> int:
        """How many of `seat`'s unplayed cards (all sets) `viewer` cannot name."""
        if seat == viewer:
            return 0
        cards = self.hold[seat] | self.future[seat]
        return popcount(cards & ~self.public_known(seat))

    def visible(self, viewer: int, card: int) -> bool:
        """`viewer` knows where `card` is: played, his own, publicly known (turn-up, shown card) or out of play."""
        bit = 1 << card
        if self.played & bit or self.out_of_play_public & bit:
            return True
        if (self.hold[viewer] | self.future[viewer]) & bit:
            return True
        return bool(self.turnup_owner is not None and card == self.turn_up)

    def current_winner(self) -> tuple[int, int] | None:
        """(seat, card) winning the trick so far, or None when leading."""
        return self.win

    def beats(self, a: int, b: int) -> bool:
        """Card a, played after b, beats b in this trick (a trump beats a non-trump; same suit: higher rank)."""
        sa, sb = suit_of(a), suit_of(b)
        if sa == sb:
            if sa == self.trump:
                return trump_strength(self.game, rank_of(a)) > trump_strength(self.game, rank_of(b))
            return rank_of(a) > rank_of(b)
        return sa == self.trump

    def winner_is_sure(self) -> bool:
        """Public knowledge: no card still out (outside this trick) can beat the trick's current winner."""
        w = self.current_winner()
        if w is None:
            return False
        wc = w[1]
        if suit_of(wc) != self.trump:
            return False  # a plain winner can be trumped
        trick_mask = 0
        for _, c in self.trick:
            trick_mask |= 1 << c
        out = ~self.played & ~trick_mask & ~self.out_of_play_public & SUIT_MASK[self.trump]
        strength = trump_strength(self.game, rank_of(wc))
        while out:
            low = out & -out
            c = low.bit_length() - 1
            out ^= low
            if trump_strength(self.game, rank_of(c)) > strength:
                return False
        return True

    def sure_for_side(self, seat: int) -> bool:
        """Public knowledge: seat's partner is winning the trick and no card still out can beat it (or every seat
        still to play is a partner)."""
        w = self.current_winner()
        if w is None:
            return False
        ws = w[0]
        side = self.side_of
        if ws == seat or side[ws] != side[seat]:
            return False
        if all(side[o] == side[seat] for o in self.seats_after()):
            return True
        return self.winner_is_sure()

    def seats_after(self) -> list[int]:
        """Seats still to play to this trick after the current play."""
        return self.trick_seats[self.pos + 1:]

    def boss_trump(self) -> int | None:
        """The highest trump not yet played (before this play): a sure winner for whoever holds it."""
        unplayed = SUIT_MASK[self.trump] & ~self.played & ~self.out_of_play_public
        unplayed &= ~self.aside
        best, best_key = None, -1
        m = unplayed
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            key = trump_strength(self.game, rank_of(c))
            if key > best_key:
                best, best_key = c, key
        return best


def _card(text: object) -> int:
    """The card `text` names, -1 when it names none (as the table holds it)."""
    c = parse_card(text)
    return -1 if c is None else c


def _bit(text: object) -> int:
    """The bitmask of the card `text` names, 0 when it names none (as `play_columns.walk_setup` reads it)."""
    c = parse_card(text)
    return 0 if c is None else 1 << c


def walk(res: Any) -> Iterator[PlayState]:
    """Yield the state at every play of a complete deal (see `deal_exclusion`), in play order."""
    d = res.deal
    game, n = d.game, d.n
    L = layout(d.ruleset, n, d.dealer)
    trump = res.trump
    side = d.side_of
    partnership = any(side.count(x) > 1 for x in set(side))
    per_set = tricks_per_set(res)
    n_tricks = sum(per_set)
    set_of_trick: list[int] = []
    for j, cnt in enumerate(per_set):
        set_of_trick += [j] * cnt
    # each seat's cards per set, from the play itself
    by_set = [[0] * len(per_set) for _ in range(n)]
    for k, s, c in res.plays:
        by_set[s][set_of_trick[k]] |= 1 << c
    turn_up = _card(d.turn_up)
    if game == "all_fours" and d.runs:
        turn_up = _card(d.runs[-1]["turn_up"])
    out_public = 0
    owner = None
    if game == "all_fours":
        out_public |= _bit(d.turn_up)
        for r in d.runs or []:
            out_public |= _bit(r["turn_up"])
    else:
        owner = L.turnup_owner
        if d.shown is not None:
            out_public |= _bit(d.shown)
    in_hands = 0
    for s in range(n):
        for j in range(len(per_set)):
            in_hands |= by_set[s][j]
    aside = L.pack & ~in_hands & ~out_public
    if game == "scotch_whist":
        aside &= ~_bit(d.turn_up)
    st = PlayState(game=game, n=n, trump=trump, dealer=d.dealer, side_of=side, partnership=partnership,
                   n_tricks=n_tricks, turn_up=turn_up, turnup_owner=owner, out_of_play_public=out_public,
                   aside=aside, n_sets=len(per_set))
    st.void = [0] * n
    st.trump_order = tuple(sorted(range(13 * trump, 13 * trump + 13), key=lambda c: -trump_strength(game, c % 13)))
    revokes = set(res.revokes)
    extra = L.extra_card_seat
    must_trump = d.ruleset.switches.get("void_rule") == "must_trump_if_able"
    played = 0
    i = 0
    plays = res.plays
    for k in range(n_tricks):
        j = set_of_trick[k]
        if k == 0 or set_of_trick[k - 1] != j:
            st.hold = [by_set[s][j] for s in range(n)]
            st.future = [sum(by_set[s][j + 1:]) if j + 1 < len(per_set) else 0 for s in range(n)]
            st.set_index = j
            st.void = [0] * n  # a new hand: voids shown in the last set say nothing of it
        trick_plays = []
        while i < len(plays) and plays[i][0] == k:
            trick_plays.append(plays[i])
            i += 1
        seats = [s for _, s, _ in trick_plays]
        lead_suit = None
        st.trick = []
        st.win = None
        st.trick_seats = seats
        st.k = k
        w = res.winners[k]
        for p, (_, s, c) in enumerate(trick_plays):
            two = extra is not None and s == extra and len(trick_plays) == n + 1 and k == n_tricks - 1
            st.pos = p
            st.seat = s
            st.card = c
            st.lead_suit = lead_suit
            st.played = played
            st.two_card_turn = two
            st.revoke = p > 0 and (k + 1, s) in revokes and suit_of(c) != lead_suit
            st.legal = st.hold[s] if two else legal_mask(game, st.hold[s], lead_suit, trump, must_trump)
            st.winner = w
            yield st
            # public consequences of the play
            if lead_suit is not None and suit_of(c) != lead_suit and not two and not st.revoke:
                if game == "scotch_whist" or suit_of(c) != trump:  # All Fours: trumping shows nothing
                    st.void[s] |= 1 << lead_suit
                if game == "scotch_whist" and must_trump and suit_of(c) != trump:
                    st.void[s] |= 1 << trump
            st.hold[s] &= ~(1 << c)
            played |= 1 << c
            st.trick.append((s, c))
            if st.win is None or st.beats(c, st.win[1]):
                st.win = (s, c)
            if lead_suit is None:
                lead_suit = suit_of(c)
