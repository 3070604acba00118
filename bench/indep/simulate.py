"""An independent generator of deal-log/1 seasons (Scotch Whist and All Fours).

Written from the contracts alone -- docs/spec/deal-log.md, docs/spec/rules.md, docs/spec/examples/ and the seed
texts -- and deliberately importing nothing from the ``auditor`` package: its purpose is to give the audit data that
its own simulator (``auditor/simulate``) did not make, so that a misreading shared by the simulator and the replay
cannot hide, and so that false-flag rates are not measured only on data shaped like the project's own.

What it makes: a club of members who meet on numbered nights and sit at a fixed set of tables (mix ``club``:
Scotch Whist with 2 and 3 players (Foster's sets of six), 4 players in two pairs, 5 players each for himself (the 6
of spades out), 6 players in three pairs, 6 players each for himself under the Russian preset; All Fours with 2
players and 4 players in two pairs; mix ``pairs`` leans on partnerships). Each table plays whole games (to 41 / to 7),
deal after deal, the deal passing to the left; every record carries ``recorded`` points, totals and, on the last
deal, the winner, computed by the scoring of rules.md. About half the tables log the ``deck``.

Cheats, each optional (``--jack-stacker``, ``--turnup-stacker``, ``--revoker``, ``NAME:Q``):
- Jack stacker (Scotch Whist): when he deals, with probability q he arranges the pack so that the Jack of trumps
  is among his own cards (the rest of the deal stays uniform: the Jack is swapped into one of his positions).
- Turn-up stacker (All Fours): when he deals, with probability q he turns up a Jack (a random Jack is swapped into
  the turn-up position).
- Revoker (Scotch Whist): with probability q, when a plain suit is led, an opponent is winning the trick, none of
  his cards of that suit can win it and one of his trumps can, he trumps although he could follow (an unclaimed
  revoke, so no penalty is applied and the scores are computed as played).

Honest slips (``--slip RATE``, not a cheat): at every chance to revoke (following, holding a card he may not play),
any member drops, with probability RATE, one of the cards he may not play, chosen uniformly, whatever it does for
him (unclaimed, scored as played).

Usage: python bench/indep/simulate.py --deals 15000 --seed 1 --out season.jsonl [--jack-stacker m17:0.25]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from dataclasses import dataclass, field

import numpy as np

SUITS = "shdc"
SW_RANKS = "6789TJQKA"  # Scotch Whist 36-card pack
AF_RANKS = "23456789TJQKA"  # All Fours 52-card pack
PLAIN_ORDER = "23456789TJQKA"  # low -> high, every plain suit (and All Fours trumps)
SW_TRUMP_ORDER = "6789TQKAJ"  # low -> high, Scotch Whist trumps: the Jack is the best card

SW_HONOURS = {"J": 11, "T": 10, "A": 4, "K": 3, "Q": 2}  # trump honours, Scotch Whist
AF_PIPS = {"T": 10, "A": 4, "K": 3, "Q": 2, "J": 1}  # "Game" counting values, every suit, All Fours
SW_TARGET = 41
AF_TARGET = 7


# ----------------------------------------------------------------------------------------------------------------
# Cards and tricks
# ----------------------------------------------------------------------------------------------------------------


def rank(card: str) -> str:
    return card[0]


def suit(card: str) -> str:
    return card[1]


def strength(card: str, game: str, trump: str) -> int:
    """Order of a card within its own suit (higher wins); trumps of Scotch Whist put the Jack on top."""
    if game == "scotch_whist" and suit(card) == trump:
        return SW_TRUMP_ORDER.index(rank(card))
    return PLAIN_ORDER.index(rank(card))


def beats(card: str, best: str, lead: str, game: str, trump: str) -> bool:
    """Does ``card`` take the trick from the card now winning it (``best``)? Highest trump, else highest of lead."""
    if suit(card) == trump:
        if suit(best) != trump:
            return True
        return strength(card, game, trump) > strength(best, game, trump)
    if suit(best) == trump or suit(card) != lead:
        return False
    return strength(card, game, trump) > strength(best, game, trump)


def trick_winner_index(cards: list[str], game: str, trump: str) -> int:
    """Index (play order) of the card that wins a complete trick."""
    best = 0
    lead = suit(cards[0])
    for i in range(1, len(cards)):
        if beats(cards[i], cards[best], lead, game, trump):
            best = i
    return best


def legal_cards(hand: list[str], lead: str | None, game: str, trump: str, must_trump: bool = False) -> list[str]:
    """The cards a player may play. Scotch Whist: follow suit if able, else anything (``must_trump``, the option
    void_rule = must_trump_if_able: else a trump if he has one). All Fours: follow suit or trump if able to follow
    (trumping is always allowed), else anything."""
    if lead is None:
        return list(hand)
    same = [c for c in hand if suit(c) == lead]
    if not same:
        trumps = [c for c in hand if suit(c) == trump]
        if must_trump and trumps:
            return trumps
        return list(hand)
    if game == "all_fours":
        return [c for c in hand if suit(c) == lead or suit(c) == trump]
    return same


def is_counting(card: str, game: str, trump: str) -> bool:
    """Cards whose capture scores: Scotch Whist trump honours; All Fours trumps and the Game-counting cards."""
    if game == "scotch_whist":
        return suit(card) == trump and rank(card) in SW_HONOURS
    return suit(card) == trump or rank(card) in AF_PIPS


def cheap_key(card: str, game: str, trump: str) -> tuple[int, int, int]:
    """Sort key, cheapest card to give away first: non-counting before counting, plain before trump, low first."""
    return (int(is_counting(card, game, trump)), int(suit(card) == trump), strength(card, game, trump))


# ----------------------------------------------------------------------------------------------------------------
# Players: one honest policy for everybody, plus the revoker's one deviation
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Cheats:
    """Planted cheaters: member name -> probability q."""

    jack_stacker: dict[str, float] = field(default_factory=dict)
    turnup_stacker: dict[str, float] = field(default_factory=dict)
    revoker: dict[str, float] = field(default_factory=dict)
    slip: float = 0.0  # not a cheat: every member's chance of an accidental revoke at each chance (--slip)


def choose_card(
    rng: np.random.Generator,
    hand: list[str],
    trick: list[str],
    trick_seats: list[int],
    seat: int,
    side_of: list[int],
    n_to_play: int,
    game: str,
    trump: str,
    revoke_q: float,
    must_trump: bool = False,
    slip: float = 0.0,
) -> str:
    """The honest policy (legal only): a random legal card now and then; otherwise lead an Ace of a plain suit or a
    low plain card, and when following win cheaply if a card can win (always when the trick holds a counting card or
    he plays last), else throw the cheapest card. ``revoke_q`` > 0 makes the one deliberate deviation (see module)."""
    lead = suit(trick[0]) if trick else None
    legal = legal_cards(hand, lead, game, trump, must_trump)
    if slip > 0.0 and trick:
        off = [c for c in hand if c not in legal]
        if off and rng.random() < slip:  # an honest slip: any card he may not play, whatever it does for him
            return off[int(rng.integers(len(off)))]
    if revoke_q > 0.0 and trick and lead != trump and game == "scotch_whist":
        best_i = trick_winner_index(trick, game, trump)
        opponent_winning = side_of[trick_seats[best_i]] != side_of[seat]
        can_follow = any(suit(c) == lead for c in hand)
        legal_wins = [c for c in legal if beats(c, trick[best_i], lead, game, trump)]
        revoke_wins = [c for c in hand if suit(c) == trump and beats(c, trick[best_i], lead, game, trump)]
        if opponent_winning and can_follow and not legal_wins and revoke_wins and rng.random() < revoke_q:
            return min(revoke_wins, key=lambda c: strength(c, game, trump))
    if rng.random() < 0.15:
        return legal[int(rng.integers(len(legal)))]
    if not trick:
        plain = [c for c in legal if suit(c) != trump]
        aces = [c for c in plain if rank(c) == "A"]
        if aces:
            return aces[int(rng.integers(len(aces)))]
        if plain:
            return min(plain, key=lambda c: cheap_key(c, game, trump))
        return max(legal, key=lambda c: strength(c, game, trump))
    best_i = trick_winner_index(trick, game, trump)
    partner_winning = side_of[trick_seats[best_i]] == side_of[seat]
    winners = [c for c in legal if beats(c, trick[best_i], lead, game, trump)]
    worth = any(is_counting(c, game, trump) for c in trick) or n_to_play == 1 or rng.random() < 0.5
    if winners and worth and not (partner_winning and n_to_play == 1):
        return min(winners, key=lambda c: (int(suit(c) == trump), strength(c, game, trump)))
    return min(legal, key=lambda c: cheap_key(c, game, trump))


def play_tricks(
    rng: np.random.Generator,
    hands_in_play: list[list[str]],
    leader: int,
    side_of: list[int],
    players: list[str],
    cheats: Cheats,
    game: str,
    trump: str,
    must_trump: bool = False,
) -> tuple[list[list[str]], list[int]]:
    """Play every card; return the tricks (cards in play order) and the seat that won each. A seat holding one card
    more than the others (the Russian 5-player eldest) plays his last two cards together at his turn in the last
    trick: leading, the chosen card first; following, both in a random order (he cannot revoke with them)."""
    n = len(hands_in_play)
    held = [list(h) for h in hands_in_play]
    tricks: list[list[str]] = []
    winners: list[int] = []
    n_tricks = min(len(h) for h in held)
    while len(tricks) < n_tricks:
        trick: list[str] = []
        seats: list[int] = []
        last = len(tricks) == n_tricks - 1
        for k in range(n):
            seat = (leader + k) % n
            q = cheats.revoker.get(players[seat], 0.0)
            if last and len(held[seat]) > 1 and trick:
                both = [held[seat][i] for i in rng.permutation(len(held[seat]))]
                held[seat] = []
                trick.extend(both)
                seats.extend([seat] * len(both))
                continue
            card = choose_card(rng, held[seat], trick, seats, seat, side_of, n - k, game, trump, q, must_trump,
                               cheats.slip)
            held[seat].remove(card)
            trick.append(card)
            seats.append(seat)
            if last and held[seat]:
                trick.extend(held[seat])
                seats.extend([seat] * len(held[seat]))
                held[seat] = []
        w = seats[trick_winner_index(trick, game, trump)]
        tricks.append(trick)
        winners.append(w)
        leader = w
    return tricks, winners


# ----------------------------------------------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class TableSpec:
    """A table of the club: its game, preset, player count, partnerships and whether it logs the deck."""

    name: str
    game: str
    rules: str
    n: int
    sides: list[list[int]] | None
    log_deck: bool
    games_per_night: int
    options: dict[str, str] | None = None  # overrides of the preset's switches, written to the log as ``options``

    def option(self, name: str, default: str) -> str:
        return (self.options or {}).get(name, default)

    def side_of(self) -> list[int]:
        if self.sides is None:
            return list(range(self.n))
        out = [0] * self.n
        for s, seats in enumerate(self.sides):
            for seat in seats:
                out[seat] = s
        return out

    def n_sides(self) -> int:
        return self.n if self.sides is None else len(self.sides)


MIXES: dict[str, list[TableSpec]] = {
    # Scotch Whist at 4 (two pairs), 5 (individual), 6 (three pairs), 6 Russian (individual); All Fours at 2 and 4.
    "club": [
        TableSpec("parlour", "scotch_whist", "foster", 4, [[0, 2], [1, 3]], True, 4),
        TableSpec("bay-window", "scotch_whist", "foster", 5, None, False, 3),
        TableSpec("long-table", "scotch_whist", "foster", 6, [[0, 3], [1, 4], [2, 5]], True, 3),
        TableSpec("samovar", "scotch_whist", "russian", 6, None, False, 3),
        TableSpec("den", "scotch_whist", "foster", 3, None, True, 2),
        TableSpec("alcove", "scotch_whist", "foster", 2, None, False, 2),
        TableSpec("snug-a", "all_fours", "foster", 2, None, True, 4),
        TableSpec("snug-b", "all_fours", "foster", 2, None, False, 4),
        TableSpec("card-room", "all_fours", "foster", 4, [[0, 2], [1, 3]], True, 4),
    ],
    # Seldom-seen layouts, to try the replay on the corners of the rules: Foster at 7 and 8, the 36th shown, the 6 of
    # clubs out, must-trump; Russian at 2, 3 and 5 (the eldest's 8th card, two cards in the last trick); All Fours
    # at 3 (the gift to both adversaries).
    "wide": [
        TableSpec("seven", "scotch_whist", "foster", 7, None, True, 2),
        TableSpec("eight", "scotch_whist", "foster", 8, [[0, 4], [1, 5], [2, 6], [3, 7]], False, 2),
        TableSpec("shown-five", "scotch_whist", "foster", 5, None, True, 2, {"odd_pack": "show_36th_dead"}),
        TableSpec("club-six", "scotch_whist", "foster", 5, None, True, 2, {"odd_pack": "remove_club_six"}),
        TableSpec(
            "trumping", "scotch_whist", "foster", 4, [[0, 2], [1, 3]], True, 2, {"void_rule": "must_trump_if_able"}
        ),
        TableSpec("russian-five", "scotch_whist", "russian", 5, None, True, 2),
        TableSpec("russian-three", "scotch_whist", "russian", 3, None, True, 2),
        TableSpec("russian-two", "scotch_whist", "russian", 2, None, False, 2),
        TableSpec("three-hand", "all_fours", "foster", 3, None, True, 4),
    ],
    # A second mix: Scotch Whist only at 5 and 6, All Fours mostly in pairs.
    "pairs": [
        TableSpec("east", "scotch_whist", "foster", 6, [[0, 3], [1, 4], [2, 5]], False, 3),
        TableSpec("west", "scotch_whist", "foster", 5, None, True, 3),
        TableSpec("north", "scotch_whist", "foster", 4, [[0, 2], [1, 3]], False, 2),
        TableSpec("den", "scotch_whist", "foster", 3, None, False, 2),
        TableSpec("south-1", "all_fours", "foster", 4, [[0, 2], [1, 3]], True, 5),
        TableSpec("south-2", "all_fours", "foster", 4, [[0, 2], [1, 3]], False, 5),
        TableSpec("nook", "all_fours", "foster", 2, None, True, 5),
    ],
}


# ----------------------------------------------------------------------------------------------------------------
# Scotch Whist
# ----------------------------------------------------------------------------------------------------------------


def sw_pack(table: TableSpec) -> list[str]:
    """The pack: 36 cards (6 to A). Foster at 5 or 7 players: the 6 of spades out (odd_pack = remove_spade_six, the
    default), the 6 of clubs out (remove_club_six) or all 36 with the 36th shown (show_36th_dead); 8 players: all
    sixes out. Russian: always 36 (2-3 players deal 10 each and put the rest aside; 5 players give the 36th to the
    eldest)."""
    cards = [r + s for s in SUITS for r in SW_RANKS]
    if table.rules == "foster" and table.n in (5, 7):
        odd = table.option("odd_pack", "remove_spade_six")
        if odd == "remove_spade_six":
            cards.remove("6s")
        elif odd == "remove_club_six":
            cards.remove("6c")
    if table.rules == "foster" and table.n == 8:
        cards = [c for c in cards if rank(c) != "6"]
    return cards


def shuffle_and_cut(rng: np.random.Generator, pack: list[str]) -> list[str]:
    """A uniform shuffle, then the cut (at least four cards in each packet): the order dealt from, top first."""
    order = [pack[i] for i in rng.permutation(len(pack))]
    cut = int(rng.integers(4, len(order) - 3))
    return order[cut:] + order[:cut]


def sw_layout(table: TableSpec, dealer: int, size: int) -> tuple[list[int | None], int]:
    """Where each card of the deck goes (a seat, or None: aside or shown) and the index of the turn-up.

    4 players and more: one card at a time from the eldest round to the dealer until the pack is exhausted, the last
    card turned up (the dealer's). Foster 5/7 with the 36th shown: 35 dealt, the 35th turned up, the 36th shown and
    dead. Foster 2-3 players (sets of six, round_robin_by_hand): card k to hand k mod 6, hand h to seat
    (eldest + h) mod n; the 36th card (the dealer's last) turned up. Russian 2-3 players: 10 each one at a time, the
    rest aside, the dealer's 10th card turned up. Russian 5 players: 35 dealt, the 36th turned up and given to the
    eldest."""
    n = table.n
    eldest = (dealer + 1) % n
    one_at_a_time: list[int | None] = [(eldest + k) % n for k in range(size)]
    if table.rules == "foster" and n <= 3:
        return [(eldest + k % 6) % n for k in range(size)], size - 1
    if table.rules == "russian" and n <= 3:
        return one_at_a_time[: 10 * n] + [None] * (size - 10 * n), 10 * n - 1
    if table.rules == "russian" and n == 5:
        return one_at_a_time[:35] + [eldest], 35
    if table.rules == "foster" and n in (5, 7) and table.option("odd_pack", "") == "show_36th_dead":
        return one_at_a_time[:35] + [None], 34
    return one_at_a_time, size - 1


def sw_deal(deck: list[str], table: TableSpec, dealer: int) -> list[list[str]]:
    """Each seat's cards as the log lists them: in the order received; at 2 or 3 players under Foster the seat's
    first hand of six, then its second (then its third), each in the order received."""
    n = table.n
    hands: list[list[str]] = [[] for _ in range(n)]
    if table.rules == "foster" and n <= 3:
        eldest = (dealer + 1) % n
        for h in range(6):
            hands[(eldest + h) % n].extend(deck[h::6])
        return hands
    owners, _turn = sw_layout(table, dealer, len(deck))
    for k, seat in enumerate(owners):
        if seat is not None:
            hands[seat].append(deck[k])
    return hands


def sw_stack_jack(rng: np.random.Generator, deck: list[str], table: TableSpec, dealer: int) -> None:
    """The Jack stacker's arrangement: the Jack of the turn-up's suit moves into one of the dealer's positions (a
    uniform one other than the turn-up), swapping with the card there; the rest of the deal stays uniform."""
    owners, turn = sw_layout(table, dealer, len(deck))
    jack = "J" + suit(deck[turn])
    pos = deck.index(jack)
    if owners[pos] == dealer:
        return
    mine = [k for k in range(len(deck)) if owners[k] == dealer and k != turn]
    k = mine[int(rng.integers(len(mine)))]
    deck[pos], deck[k] = deck[k], deck[pos]


def sw_play(
    rng: np.random.Generator,
    hands: list[list[str]],
    table: TableSpec,
    players: list[str],
    dealer: int,
    cheats: Cheats,
    trump: str,
) -> tuple[list[list[str]], list[int]]:
    """Play the hand. 4 players and more: one hand, led by the eldest. 2 or 3 players: the sets of six in the order
    dealt, set 1 led by the eldest, each later set by the winner of the last trick of the set before."""
    n = table.n
    leader = (dealer + 1) % n
    must = table.option("void_rule", "trump_or_discard") == "must_trump_if_able"
    if n >= 4 or table.rules == "russian":
        return play_tricks(rng, hands, leader, table.side_of(), players, cheats, "scotch_whist", trump, must)
    tricks: list[list[str]] = []
    winners: list[int] = []
    for s in range(len(hands[0]) // 6):
        part = [h[6 * s : 6 * s + 6] for h in hands]
        t, w = play_tricks(rng, part, leader, table.side_of(), players, cheats, "scotch_whist", trump, must)
        tricks += t
        winners += w
        leader = w[-1]
    return tricks, winners


def sw_score(
    tricks: list[list[str]], winners: list[int], hands: list[list[str]], table: TableSpec, trump: str
) -> tuple[list[int], dict[str, list[int]]]:
    """Points per side for one hand: trump honours by capture, plus cards taken above cards dealt (never below 0).
    Also returns the per-item points (ten, cards, A, K, Q, J) for a count-out."""
    side_of = table.side_of()
    ns = table.n_sides()
    items = {k: [0] * ns for k in ("T", "cards", "A", "K", "Q", "J")}
    taken = [0] * ns
    for trick, w in zip(tricks, winners, strict=True):
        s = side_of[w]
        taken[s] += len(trick)
        for c in trick:
            if suit(c) == trump and rank(c) in SW_HONOURS:
                items[rank(c)][s] += SW_HONOURS[rank(c)]
    dealt = [0] * ns
    for seat, h in enumerate(hands):
        dealt[side_of[seat]] += len(h)
    for s in range(ns):
        items["cards"][s] = max(0, taken[s] - dealt[s])
    points = [sum(items[k][s] for k in items) for s in range(ns)]
    return points, items


def sw_winner(before: list[int], points: list[int], items: dict[str, list[int]]) -> int | None:
    """Who wins on this hand, if anyone: one side reaching 41 wins; several: count out Ten, cards, A, K, Q, J from
    the totals before the hand; two passing together at the cards step: the higher running total, equal: count on
    with A, K, Q, J among those two only; still equal: no winner (the game still ends)."""
    after = [b + p for b, p in zip(before, points, strict=True)]
    over = [s for s, t in enumerate(after) if t >= SW_TARGET]
    if not over:
        return None
    if len(over) == 1:
        return over[0]
    run = list(before)
    contenders = list(range(len(before)))
    for step in ("T", "cards", "A", "K", "Q", "J"):
        for s in contenders:
            run[s] += items[step][s]
        reached = [s for s in contenders if run[s] >= SW_TARGET]
        if len(reached) == 1:
            return reached[0]
        if len(reached) > 1:
            top = max(run[s] for s in reached)
            best = [s for s in reached if run[s] == top]
            if len(best) == 1:
                return best[0]
            contenders = best
    return -1  # equal to the end: the game ends without a winner


# ----------------------------------------------------------------------------------------------------------------
# All Fours
# ----------------------------------------------------------------------------------------------------------------


def af_stack_turnup(rng: np.random.Generator, deck: list[str], n: int) -> None:
    """The turn-up stacker's arrangement: a random Jack is swapped into the first turn-up's position (card 6n)."""
    jacks = [k for k, c in enumerate(deck) if rank(c) == "J"]
    k = jacks[int(rng.integers(len(jacks)))]
    t = 6 * n
    deck[k], deck[t] = deck[t], deck[k]


def af_keep_key(card: str, trump: str) -> tuple[int, int, int]:
    """Sort key for keeping cards after a run (highest kept): trumps first, then counting cards, then rank."""
    return (int(suit(card) == trump), AF_PIPS.get(rank(card), 0), PLAIN_ORDER.index(rank(card)))


@dataclass
class AFDeal:
    """One All Fours deal as played (everything the record and the scoring need)."""

    hands: list[list[str]]
    turn_up: str
    beg: str
    runs: list[dict]
    discards: list[list[str]] | None
    tricks: list[list[str]] | None
    bunched: bool
    points: list[int]
    winner: int | None


def af_play_deal(
    rng: np.random.Generator,
    deck: list[str],
    table: TableSpec,
    players: list[str],
    dealer: int,
    totals: list[int],
    cheats: Cheats,
) -> AFDeal:
    """Deal 3+3 from the eldest, turn up card 6n; the eldest stands or begs; the dealer gives one or runs the cards
    (3 each, turn the next, again while the original suit turns up; the pack running out bunches the deal); discard
    to six; play six tricks; count turned Jacks, the gift, High, Low, Jack, Game one point at a time, stopping when
    a side reaches 7."""
    n = table.n
    eldest = (dealer + 1) % n
    side_of = table.side_of()
    ns = table.n_sides()
    hands: list[list[str]] = [[] for _ in range(n)]
    p = 0
    for _round in range(2):
        for j in range(n):
            hands[(eldest + j) % n].extend(deck[p : p + 3])
            p += 3
    first = deck[p]
    p += 1
    trump = suit(first)
    # Points before play, in counting order: each entry (side, reason).
    pre: list[int] = []
    if rank(first) == "J":
        pre.append(side_of[dealer])
    dealer_out = totals[side_of[dealer]] + len(pre) >= AF_TARGET
    strong = [c for c in hands[eldest] if suit(c) == trump and rank(c) in "JQKA"]
    beg = "stand"
    # The gift ("take one") goes to every side but the dealer's: with individuals every adversary (in seat order
    # from the eldest), with partnerships the eldest's side. It may not put anyone out: then the dealer must run.
    if table.sides is None:
        gift = [side_of[(eldest + j) % n] for j in range(n) if (eldest + j) % n != dealer]
    else:
        gift = [side_of[eldest]]
    if not dealer_out and rng.random() < (0.5 if not strong else 0.05):
        beg = "take_one"
        if any(totals[g] + 1 >= AF_TARGET for g in gift) or rng.random() < 0.5:
            beg = "run"
    runs: list[dict] = []
    in_play = [list(h) for h in hands]
    if beg == "take_one":
        pre.extend(gift)
    elif beg == "run":
        while True:
            if p + 3 * n + 1 > len(deck):
                return AFDeal(hands, first, beg, runs, None, None, True, [0] * ns, None)
            cards = [[] for _ in range(n)]
            for j in range(n):
                cards[(eldest + j) % n] = deck[p : p + 3]
                p += 3
            new = deck[p]
            p += 1
            runs.append({"cards": cards, "turn_up": new})
            for seat in range(n):
                in_play[seat].extend(cards[seat])
            if suit(new) != suit(first):
                trump = suit(new)
                if rank(new) == "J":
                    pre.append(side_of[dealer])
                break
    discards = None
    if runs:
        discards = []
        for seat in range(n):
            ranked = sorted(in_play[seat], key=lambda c: af_keep_key(c, trump), reverse=True)
            drop = ranked[6:]
            drop_set = set(drop)
            discards.append([c for c in in_play[seat] if c in drop_set])
            in_play[seat] = [c for c in in_play[seat] if c not in drop_set]
    tricks, winners = play_tricks(rng, in_play, eldest, side_of, players, cheats, "all_fours", trump)
    # Count the points after play: High, Low (to the dealt holder), Jack (to the trick's winner), Game.
    holder = {c: seat for seat in range(n) for c in in_play[seat]}
    trumps = [c for c in holder if suit(c) == trump]
    post: list[int] = []
    if trumps:
        high = max(trumps, key=lambda c: PLAIN_ORDER.index(rank(c)))
        low = min(trumps, key=lambda c: PLAIN_ORDER.index(rank(c)))
        post.append(side_of[holder[high]])
        post.append(side_of[holder[low]])
        jack = "J" + trump
        if jack in holder:
            for trick, w in zip(tricks, winners, strict=True):
                if jack in trick:
                    post.append(side_of[w])
    pips = [0] * ns
    for trick, w in zip(tricks, winners, strict=True):
        pips[side_of[w]] += sum(AF_PIPS.get(rank(c), 0) for c in trick)
    top = max(pips)
    best = [s for s in range(ns) if pips[s] == top]
    if len(best) == 1 and top > 0:
        post.append(best[0])
    else:
        # Tie, or no counting card: the tied side nearest the dealer's left (the elder hand) scores it.
        tied = best if top > 0 else list(range(ns))
        for j in range(n):
            if side_of[(eldest + j) % n] in tied:
                post.append(side_of[(eldest + j) % n])
                break
    points = [0] * ns
    winner = None
    for s in pre + post:
        points[s] += 1
        if totals[s] + points[s] >= AF_TARGET:
            winner = s
            break
    return AFDeal(hands, first, beg, runs, discards, tricks, False, points, winner)


# ----------------------------------------------------------------------------------------------------------------
# The season
# ----------------------------------------------------------------------------------------------------------------


def members(count: int) -> list[str]:
    """The club's member ids."""
    return [f"m{i:02d}" for i in range(1, count + 1)]


def record_base(table: TableSpec, game_id: str, deal_no: int, time: str, players: list[str], dealer: int) -> dict:
    rec: dict = {"format": "deal-log/1", "game": table.game, "rules": table.rules}
    if table.options:
        rec["options"] = dict(table.options)
    rec["table"] = table.name
    rec.update({"game_id": game_id, "deal_no": deal_no, "time": time, "players": players})
    if table.sides is not None:
        rec["sides"] = table.sides
    rec["dealer"] = dealer
    return rec


def play_game(
    rng: np.random.Generator, table: TableSpec, players: list[str], game_id: str, clock: _dt.datetime, cheats: Cheats
) -> tuple[list[dict], _dt.datetime]:
    """A whole game at one table: deal after deal until a side wins. Returns its records and the clock after it."""
    n = table.n
    ns = table.n_sides()
    totals = [0] * ns
    dealer = int(rng.integers(n))  # the first dealer, by the cut for deal
    out: list[dict] = []
    deal_no = 0
    while True:
        deal_no += 1
        rec = record_base(table, game_id, deal_no, clock.strftime("%Y-%m-%dT%H:%M:%SZ"), players, dealer)
        name = players[dealer]
        if table.game == "scotch_whist":
            deck = shuffle_and_cut(rng, sw_pack(table))
            q = cheats.jack_stacker.get(name, 0.0)
            if q > 0.0 and rng.random() < q:
                sw_stack_jack(rng, deck, table, dealer)
            hands = sw_deal(deck, table, dealer)
            owners, turn = sw_layout(table, dealer, len(deck))
            trump = suit(deck[turn])
            tricks, winners = sw_play(rng, hands, table, players, dealer, cheats, trump)
            points, items = sw_score(tricks, winners, hands, table, trump)
            winner = sw_winner(totals, points, items)
            if table.log_deck:
                rec["deck"] = deck
            rec.update({"hands": hands, "turn_up": deck[turn]})
            if table.rules == "foster" and turn == 34 and len(deck) == 36:
                rec["shown"] = deck[35]
            rec["tricks"] = tricks
            totals = [t + p for t, p in zip(totals, points, strict=True)]
            rec["recorded"] = {"points": points, "totals": list(totals)}
            next_dealer = (dealer + 1) % n
            clock += _dt.timedelta(minutes=int(rng.integers(4, 9)))
        else:
            deck = shuffle_and_cut(rng, [r + s for s in SUITS for r in AF_RANKS])
            q = cheats.turnup_stacker.get(name, 0.0)
            if q > 0.0 and rng.random() < q:
                af_stack_turnup(rng, deck, n)
            d = af_play_deal(rng, deck, table, players, dealer, totals, cheats)
            winner = d.winner
            if table.log_deck:
                rec["deck"] = deck
            rec.update({"hands": d.hands, "turn_up": d.turn_up, "beg": d.beg})
            if d.runs:
                rec["runs"] = d.runs
            if d.discards is not None:
                rec["discards"] = d.discards
            if d.bunched:
                rec["bunched"] = True
            else:
                rec["tricks"] = d.tricks
            totals = [t + p for t, p in zip(totals, d.points, strict=True)]
            rec["recorded"] = {"points": d.points, "totals": list(totals)}
            next_dealer = dealer if d.bunched else (dealer + 1) % n  # a bunched deal: the same dealer again
            clock += _dt.timedelta(minutes=int(rng.integers(2, 5)))
        if winner is not None:
            if winner >= 0:
                rec["recorded"]["winner"] = winner
            out.append(rec)
            return out, clock
        out.append(rec)
        dealer = next_dealer


def season(deals: int, seed: int, cheats: Cheats, mix: str = "club", club_size: int = 44) -> list[dict]:
    """Nights of play until at least ``deals`` records: each night the members present are seated at random at
    every table of the mix (a random subset of the club, cheaters included like anyone else), each table plays its
    whole games, and no new night starts once the count is reached."""
    rng = np.random.default_rng(seed)
    tables = MIXES[mix]
    club = members(club_size)
    start = _dt.datetime(2027, 1, 4, 19, 0)
    out: list[dict] = []
    night = 0
    while len(out) < deals:
        date = start + _dt.timedelta(days=2 * night + int(night % 3 == 2))
        seats = sum(t.n for t in tables)
        present = [club[i] for i in rng.permutation(len(club))[:seats]]
        order = present
        for t in tables:
            players, order = order[: t.n], order[t.n :]
            clock = date + _dt.timedelta(minutes=int(rng.integers(0, 20)))
            for g in range(t.games_per_night):
                gid = f"{date:%Y-%m-%d}/{t.name}/{g + 1}"
                recs, clock = play_game(rng, t, players, gid, clock, cheats)
                out.extend(recs)
        night += 1
    out.sort(key=lambda r: (r["time"], r["table"], r["deal_no"]))
    return out


def parse_cheat(text: str) -> tuple[str, float]:
    name, _, q = text.partition(":")
    if not name or not q:
        raise argparse.ArgumentTypeError(f"expected NAME:Q, got {text!r}")
    value = float(q)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"Q must be in [0, 1], got {value}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Members are m01..mNN.")
    ap.add_argument("--deals", type=int, required=True, help="at least this many deal records (whole games)")
    ap.add_argument("--seed", type=int, required=True, help="seed of numpy.random.default_rng")
    ap.add_argument("--mix", choices=sorted(MIXES), default="club", help="the club's tables (default: club)")
    ap.add_argument("--members", type=int, default=44, help="club size (default 44)")
    ap.add_argument("--jack-stacker", type=parse_cheat, action="append", default=[], metavar="NAME:Q")
    ap.add_argument("--turnup-stacker", type=parse_cheat, action="append", default=[], metavar="NAME:Q")
    ap.add_argument("--revoker", type=parse_cheat, action="append", default=[], metavar="NAME:Q")
    ap.add_argument("--slip", type=float, default=0.0, metavar="RATE",
                    help="every member's chance of an accidental revoke at each chance (default 0)")
    ap.add_argument("--out", required=True, help="the JSON Lines file to write")
    a = ap.parse_args(argv)
    if not 0.0 <= a.slip <= 1.0:
        ap.error(f"--slip must be in [0, 1], got {a.slip}")
    cheats = Cheats(dict(a.jack_stacker), dict(a.turnup_stacker), dict(a.revoker), a.slip)
    club = set(members(a.members))
    for name in [*cheats.jack_stacker, *cheats.turnup_stacker, *cheats.revoker]:
        if name not in club:
            ap.error(f"{name} is not a member (m01..m{a.members:02d})")
    recs = season(a.deals, a.seed, cheats, a.mix, a.members)
    with open(a.out, "w", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    print(f"{len(recs)} deals written to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
