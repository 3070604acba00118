"""Rules as data: every switch of rules.md Part C, the presets of Part G, and the deal layout they imply.

A `Rules` is a frozen record of switches. Engines read switches; nothing outside this module tests a preset's
name. `layout(rules, n, dealer)` turns rules + player count + dealer into the concrete deal: the pack, who gets
which card of the deck, the sets, the turn-up's owner and the cards-over base of each seat.

Product decisions on points rules.md leaves open (documented in docs/decisions.md):
- `extra_card_play = unspecified` is replayed like `two_cards_in_last_trick` (the only mechanism on record).
- `deal_packet = other` and `two_three_player_deal_order = record_supplied`: the deck cannot say who got which
  card, so hands are not compared with the deck card by card; the turn-up is still the deck's last dealt card.
- `turnup_36th_to_eldest` with 7 players works as with 5 (35 dealt, the 36th to the eldest).
- `countout_cards_collision = unresolved_error` ends the game without a winner.
- `negative_scores = floor_zero` floors the running total after the Russian −10.
- `trump_card_pickup`, `revoke_stakes_payer`, `partnership_*`, `bunch_by_agreement_2p`,
  `turnup_jack_void_on_misdeal`, `gift_partnership`: accepted, no effect on the replay (stakes or table talk).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from .cards import RANKS, SUITS, make

Switch = Any
"""A switch's value: a JSON value a log may give (a str, int or bool). `Any`, so that an engine reads a switch as
the type it knows that switch has (`rules.target` an int, `rules.void_rule` a str)."""

# Every switch: name -> allowed values, default first. Values are the JSON values a log may give.
SW_SWITCHES: dict[str, tuple[Switch, ...]] = {
    "odd_pack": ("remove_spade_six", "show_36th_dead", "remove_club_six", "turnup_36th_to_eldest"),
    "extra_card_play": ("two_cards_in_last_trick", "unspecified"),
    "extra_card_base": ("cards_received", "nominal"),
    "small_table_deal": ("sets_of_six", "ten_each_rest_aside"),
    "two_three_player_deal_order": ("round_robin_by_hand", "packet_per_hand", "record_supplied"),
    "set_leader": ("last_trick_winner", "eldest"),
    "trump_card_pickup": ("dealer_first_trick", "with_last_hand", "with_second_hand"),
    "deal_packet": ("one_at_a_time", "other"),
    "partnership_4": ("pairs_opposite", "none"),
    "partnership_6": ("none", "two_sides_of_three_alternate", "three_pairs_opposite"),
    "partnership_8": ("none", "two_sides_of_four_alternate", "four_pairs"),
    "void_rule": ("trump_or_discard", "must_trump_if_able"),
    "revoke_penalty": ("lose_game", "minus_10"),
    "revoke_requires_claim": (True, False),
    "revoke_stakes_payer": ("side", "individual"),
    "cards_under": ("zero", "negative"),
    "countout_cards_collision": ("higher_running_total", "more_cards", "unresolved_error"),
    "target": (41,),
    "negative_scores": ("allowed", "floor_zero"),
}

AF_SWITCHES: dict[str, tuple[Switch, ...]] = {
    "target": (7, 10, 11),
    "game_tie": ("elder_hand", "nobody"),
    "game_tie_multi": ("nearest_dealers_left", "nobody"),
    "low_to": ("dealt_holder", "trick_winner"),
    "after_run": ("discard_to_six", "keep_if_nine_else_discard", "keep_all"),
    "pack_exhausted": ("bunch_same_dealer", "other"),
    "jack_on_rejected_turnup": ("no_point", "point"),
    "gift_three_players": ("both_adversaries", "eldest_only"),
    "gift_cannot_win": (True, False),
    "second_beg": ("forbidden", "by_agreement"),
    "bunch_by_agreement_2p": ("allowed", "forbidden"),
    "revoke": ("foster_graduated", "one_point"),
    "turnup_jack_void_on_misdeal": (True,),
    "gift_partnership": ("one_point_to_side",),
}

SWITCHES = {"scotch_whist": SW_SWITCHES, "all_fours": AF_SWITCHES}


@dataclass(frozen=True)
class Rules:
    """One game's rules: the game, the preset it came from, the player range and every switch."""

    game: str
    preset: str
    min_players: int
    max_players: int
    switches: MappingProxyType[str, Switch] = field(hash=False, compare=True)

    def __getattr__(self, name: str) -> Switch:  # switches read as attributes: rules.void_rule
        sw = self.__dict__.get("switches")
        if sw is not None and name in sw:
            return sw[name]
        raise AttributeError(name)

    @property
    def key(self) -> tuple[str, str, tuple[tuple[str, Switch], ...]]:
        return (self.game, self.preset, tuple(sorted(self.switches.items(), key=lambda kv: kv[0])))

    def with_options(self, options: dict[str, Switch]) -> Rules:
        allowed = SWITCHES[self.game]
        prefix = "sw." if self.game == "scotch_whist" else "af."
        sw = dict(self.switches)
        for k, v in options.items():
            name = k.removeprefix(prefix)  # "af.target" is no option of Scotch Whist
            if name not in allowed:
                raise KeyError(k)
            if not any(type(v) is type(a) and v == a for a in allowed[name]):
                raise ValueError((k, v))
            sw[name] = v
        return replace(self, switches=MappingProxyType(sw))


def _defaults(game: str) -> dict[str, Switch]:
    return {k: v[0] for k, v in SWITCHES[game].items()}


PRESETS: dict[tuple[str, str], Rules] = {
    ("scotch_whist", "foster"): Rules("scotch_whist", "foster", 2, 8, MappingProxyType(_defaults("scotch_whist"))),
    ("scotch_whist", "russian"): Rules(
        "scotch_whist", "russian", 2, 6,
        MappingProxyType(_defaults("scotch_whist") | {
            "small_table_deal": "ten_each_rest_aside",
            "odd_pack": "turnup_36th_to_eldest",
            "extra_card_base": "cards_received",
            "revoke_penalty": "minus_10",
            "negative_scores": "allowed",
        }),
    ),
    ("all_fours", "foster"): Rules("all_fours", "foster", 2, 4, MappingProxyType(_defaults("all_fours"))),
}


def resolve(game: str, preset: str, options: dict[str, Switch] | None = None) -> Rules:
    """The rules a record names. Raises KeyError (unknown game/preset/option) or ValueError (bad value)."""
    base = PRESETS[(game, preset)]
    return base.with_options(options) if options else base


# ---------------------------------------------------------------- layout of one deal


@dataclass(frozen=True)
class Layout:
    """The concrete deal for one rules + player count + dealer.

    `deal_seat[k]` / `deal_slot[k]`: the seat receiving card k of the deck and its index in that seat's received
    order (None past the dealt cards). `hand_sizes[s]`: cards dealt to seat s. `sets[s]`: the seat's hands in play
    order as (start, stop) slices of its received order. `turnup_index`: the deck index of the turn-up.
    """

    game: str
    n: int
    dealer: int
    eldest: int
    pack: int  # bitmask of the cards in use
    pack_size: int
    deck_len: int  # expected length of `deck`
    hand_sizes: tuple[int, ...]
    sets: tuple[tuple[tuple[int, int], ...], ...]
    n_sets: int
    tricks_per_set: tuple[int, ...]
    turnup_owner: int | None  # Scotch Whist: the seat whose hand holds the turn-up
    turnup_index: int
    turnup_in_last_set: bool
    shown_index: int | None
    deal_seat: tuple[int | None, ...]
    deal_slot: tuple[int | None, ...]
    deck_checkable: bool
    cards_base: tuple[int, ...]  # cards-over base per seat
    extra_card_seat: int | None  # Russian 5: the eldest plays two cards in the last trick

    @property
    def n_tricks(self) -> int:
        return sum(self.tricks_per_set)


def _pack_mask(cards_out: list[int]) -> int:
    full = 0
    for s in range(4):
        for r in range(4, 13):  # 6..A
            full |= 1 << (s * 13 + r)
    for c in cards_out:
        full &= ~(1 << c)
    return full


@lru_cache(maxsize=512)
def layout(rules: Rules, n: int, dealer: int) -> Layout:
    if rules.game == "all_fours":
        return _af_layout(n, dealer)
    return _sw_layout(rules, n, dealer)


def _sw_layout(rules: Rules, n: int, dealer: int) -> Layout:
    eldest = (dealer + 1) % n
    six_s, six_c = make("6", "s"), make("6", "c")
    out: list[int] = []
    deck_len = 36
    shown_index = None
    extra_seat = None
    odd = rules.odd_pack
    if n in (5, 7):
        if odd == "remove_spade_six":
            out = [six_s]
        elif odd == "remove_club_six":
            out = [six_c]
    if n == 8:
        out = [make("6", s) for s in SUITS]
    pack = _pack_mask(out)
    pack_size = 36 - len(out)
    deck_len = pack_size
    seat_of: list[int | None] = [None] * deck_len
    slot_of: list[int | None] = [None] * deck_len
    counts = [0] * n
    deck_checkable = True
    in_last_set = False

    def give(k: int, seat: int) -> None:
        seat_of[k] = seat
        slot_of[k] = counts[seat]
        counts[seat] += 1

    if n in (2, 3) and rules.small_table_deal == "sets_of_six":
        order = rules.two_three_player_deal_order
        n_sets = 6 // n
        # hand h (0..5) belongs to seat (eldest + h) % n and is that seat's set h // n
        per_hand: list[list[int]] = [[] for _ in range(6)]
        for k in range(36):
            h = k % 6 if order != "packet_per_hand" else k // 6
            per_hand[h].append(k)
        for seat_off in range(n):
            seat = (eldest + seat_off) % n
            for st in range(n_sets):
                for k in per_hand[st * n + seat_off]:
                    give(k, seat)
        sets = tuple(tuple((6 * j, 6 * j + 6) for j in range(n_sets)) for _ in range(n))
        tricks_per_set = (6,) * n_sets
        turnup_index = 35
        in_last_set = True
        deck_checkable = order != "record_supplied"
    elif n in (2, 3):  # ten each, the rest aside
        n_sets = 1
        for k in range(10 * n):
            give(k, (eldest + k) % n)
        sets = tuple(((0, 10),) for _ in range(n))
        tricks_per_set = (10,)
        turnup_index = 10 * n - 1
    else:
        n_sets = 1
        dealt = 35 if (n in (5, 7) and odd in ("show_36th_dead", "turnup_36th_to_eldest")) else deck_len
        for k in range(dealt):
            give(k, (eldest + k) % n)
        turnup_index = dealt - 1
        if n in (5, 7) and odd == "show_36th_dead":
            shown_index = 35
        if n in (5, 7) and odd == "turnup_36th_to_eldest":
            give(35, eldest)
            turnup_index = 35
            extra_seat = eldest
        per = dealt // n
        sets = tuple(((0, counts[s]),) for s in range(n))
        tricks_per_set = (per,)
        deck_checkable = rules.deal_packet == "one_at_a_time"
    owner = seat_of[turnup_index]
    if extra_seat is not None and rules.extra_card_base == "nominal":
        base = tuple(c - 1 if s == extra_seat else c for s, c in enumerate(counts))
    else:
        base = tuple(counts)
    return Layout(
        game="scotch_whist", n=n, dealer=dealer, eldest=eldest, pack=pack, pack_size=pack_size,
        deck_len=deck_len, hand_sizes=tuple(counts), sets=sets, n_sets=n_sets, tricks_per_set=tricks_per_set,
        turnup_owner=owner, turnup_index=turnup_index, turnup_in_last_set=in_last_set, shown_index=shown_index,
        deal_seat=tuple(seat_of), deal_slot=tuple(slot_of), deck_checkable=deck_checkable, cards_base=base,
        extra_card_seat=extra_seat,
    )


def _af_layout(n: int, dealer: int) -> Layout:
    eldest = (dealer + 1) % n
    seat_of: list[int | None] = [None] * 52
    slot_of: list[int | None] = [None] * 52
    counts = [0] * n
    k = 0
    for _round in range(2):
        for off in range(n):
            seat = (eldest + off) % n
            for _ in range(3):
                seat_of[k] = seat
                slot_of[k] = counts[seat]
                counts[seat] += 1
                k += 1
    return Layout(
        game="all_fours", n=n, dealer=dealer, eldest=eldest, pack=(1 << 52) - 1, pack_size=52, deck_len=52,
        hand_sizes=tuple(counts), sets=tuple(((0, 6),) for _ in range(n)), n_sets=1, tricks_per_set=(6,),
        turnup_owner=None, turnup_index=6 * n, turnup_in_last_set=False, shown_index=None,
        deal_seat=tuple(seat_of), deal_slot=tuple(slot_of), deck_checkable=True, cards_base=tuple(counts),
        extra_card_seat=None,
    )


# ---------------------------------------------------------------- card strength and points

SW_HONOURS = {RANKS.index("J"): 11, RANKS.index("T"): 10, RANKS.index("A"): 4, RANKS.index("K"): 3,
              RANKS.index("Q"): 2}
AF_PIPS = {RANKS.index("T"): 10, RANKS.index("A"): 4, RANKS.index("K"): 3, RANKS.index("Q"): 2,
           RANKS.index("J"): 1}


def trump_strength(game: str, rank: int) -> int:
    """Order of a trump by rank; the Scotch Whist Jack of trumps beats the Ace."""
    if game == "scotch_whist" and rank == 9:
        return 13
    return rank
