"""Dealing facts: what each deal's dealing shows (who was dealt which trump honour, the turn-up, the cutter), as
numpy arrays built once from the replay results, and the exact rule-derived null probabilities of each deal's
configuration.

Everything is relative to the dealer: "relative seat" r is seat (dealer + r) mod n, so 0 is the dealer and 1 the
eldest hand. A card's *location class* is its relative seat (0..n-1), `TURNUP` for the card turned up for trump
(in Scotch Whist it is also in its owner's hand), or `UNDEALT` (Russian 2-3 players' cards put aside, Foster's
shown 36th card, the All Fours stock).

The nulls come from `auditor.rules.layout`: under a uniform shuffle the turn-up is a uniform card of the pack, its
suit is trumps, and every other card is uniform over the remaining deck positions. So, for a card of the trump suit
of rank r (the turn-up itself or not):

    P(at class C) = sum over turn-up cards c of 1/P * ( [rank(c) = r] * [C = TURNUP]
                                                        + [rank(c) != r, trump r-card in pack] * slots(C) / (P - 1) )

with P the pack size and slots(C) the deck positions other than the turn-up's that go to C. At four players this
gives the dealer 11/35 for the trump Jack (his 8 cards plus the turn-up) and every other seat 8/35.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Sequence

import numpy as np

from .cards import N_CARDS, RJ, cards_of, parse_card, rank_of, suit_of
from .rules import Layout, Rules, layout

MAX_SEATS = 8
TURNUP = MAX_SEATS  # location class of the turn-up
UNDEALT = MAX_SEATS + 1  # aside, dead, or stock
N_CLASSES = MAX_SEATS + 2
NOWHERE = -1  # holder code of a card in no hand

SW_HONOUR_RANKS = (8, 9, 10, 11, 12)  # T J Q K A of trumps
AF_HONOUR_RANKS = (0, 8, 9, 10, 11, 12)  # 2 (Low), T (Game), J, Q, K, A (High)


def honour_ranks(game: str) -> tuple[int, ...]:
    return AF_HONOUR_RANKS if game == "all_fours" else SW_HONOUR_RANKS


# ---------------------------------------------------------------- configurations and exact nulls


@dataclass(frozen=True)
class Config:
    """One deal configuration (rules + player count), relative to the dealer."""

    game: str
    n: int
    pack: int
    pack_size: int
    turnup_index: int
    slot_class: tuple[int, ...]  # per deck index: relative seat, TURNUP or UNDEALT
    turnup_owner: int | None  # relative seat whose hand holds the turn-up (Scotch Whist), else None
    hand_sizes: tuple[int, ...]  # per relative seat, cards dealt (the turn-up included for its owner)
    label: str

    @property
    def in_hand_turnup(self) -> bool:
        return self.turnup_owner is not None


@lru_cache(maxsize=256)
def config(rules: Rules, n: int) -> Config:
    """The configuration of an n-player deal under `rules` (the layout with dealer 0: seats are relative)."""
    L: Layout = layout(rules, n, 0)
    cls = []
    for k in range(L.deck_len):
        seat = L.deal_seat[k]
        if k == L.turnup_index:
            cls.append(TURNUP)
        elif seat is None:
            cls.append(UNDEALT)
        else:
            cls.append(seat)
    owner = L.turnup_owner if rules.game == "scotch_whist" else None
    sw = rules.switches
    label = f"{rules.game}/{rules.preset}/{n}p"
    if rules.game == "scotch_whist":
        if n in (2, 3):
            label += f"/{sw['small_table_deal']}"
        if n in (5, 7):
            label += f"/{sw['odd_pack']}"
    return Config(rules.game, n, L.pack, L.pack_size, L.turnup_index, tuple(cls), owner, tuple(L.hand_sizes), label)


@lru_cache(maxsize=256)
def location_probs(cfg: Config) -> tuple[tuple[Fraction, ...], ...]:
    """Exact P(the trump card of rank r is at location class C), as [class][rank] Fractions (0 where the card is
    not in the pack)."""
    P = cfg.pack_size
    slots = [0] * N_CLASSES
    for c in cfg.slot_class:
        if c != TURNUP:
            slots[c] += 1
    out = [[Fraction(0)] * 13 for _ in range(N_CLASSES)]
    for c in cards_of(cfg.pack):
        t = suit_of(c)
        for r in range(13):
            card = t * 13 + r
            if not (cfg.pack >> card) & 1:
                continue
            if rank_of(c) == r:
                out[TURNUP][r] += Fraction(1, P)
            else:
                for C in range(N_CLASSES):
                    if slots[C]:
                        out[C][r] += Fraction(slots[C], P * (P - 1))
    return tuple(tuple(row) for row in out)


def held_prob(cfg: Config, rel_seat: int, rank: int) -> Fraction:
    """Exact P(relative seat `rel_seat` is dealt the trump card of `rank`), its hand including a turn-up it owns."""
    lp = location_probs(cfg)
    p = lp[rel_seat][rank]
    if cfg.turnup_owner == rel_seat:
        p += lp[TURNUP][rank]
    return p


@lru_cache(maxsize=256)
def honours_held_pmf(cfg: Config, rel_seat: int, ranks: tuple[int, ...]) -> tuple[Fraction, ...]:
    """Exact distribution of the number of trump cards of `ranks` dealt to `rel_seat` (mixture over the turn-up of
    hypergeometrics)."""
    P = cfg.pack_size
    owns = cfg.turnup_owner == rel_seat
    m = cfg.hand_sizes[rel_seat] - (1 if owns else 0)  # positions of this seat other than the turn-up
    pmf = [Fraction(0)] * (len(ranks) + 1)
    for c in cards_of(cfg.pack):
        t = suit_of(c)
        hon = [t * 13 + r for r in ranks if (cfg.pack >> (t * 13 + r)) & 1]
        fixed = 0
        rest = len(hon)
        if c in hon:
            rest -= 1
            fixed = 1 if owns else 0
        total = comb(P - 1, m)
        for k in range(0, min(rest, m) + 1):
            w = Fraction(comb(rest, k) * comb(P - 1 - rest, m - k), total)
            pmf[fixed + k] += w / P
    return tuple(pmf)


# ---------------------------------------------------------------- per-deal facts


@dataclass
class DealingFacts:
    """Arrays over the deals whose dealing can be audited (cards valid, hand sizes as the rules give).

    `holder[i, card]` is the relative seat that was dealt the card (NOWHERE if no hand); `order` sorts deals in
    input order (file index, line); `seat_player[i, r]` is the index in `players` of relative seat r (-1 past n).
    All Fours turn-up events (the first turn-up and each run's) are in the `tu_*` arrays, each with its exact null
    probability of being a Jack given the cards already out before it."""

    players: list[str]
    configs: list[Config]
    tables: list[str]
    order: np.ndarray  # int64
    table: np.ndarray  # int32 index into tables
    cfg: np.ndarray  # int32 index into configs
    n: np.ndarray  # int8
    seat_player: np.ndarray  # int32 [D, MAX_SEATS]
    cutter_rel: np.ndarray  # int8: the cutter's relative seat
    turnup: np.ndarray  # int8: the (first) turn-up card
    holder: np.ndarray  # int8 [D, 52]
    result_index: np.ndarray  # int64: index into the replay results (-1 for generated deals)
    hands_known: np.ndarray  # bool: the dealt hands are known (All Fours: not when only the play after a run is)
    tu_deal: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tu_jack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    tu_p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tu_run: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))  # 0: first turn-up; j: run j
    skipped: int = 0  # deals that could not be audited for dealing (bad cards, wrong sizes)

    def __len__(self) -> int:
        return len(self.order)

    @property
    def game(self) -> np.ndarray:
        g = np.array([1 if c.game == "all_fours" else 0 for c in self.configs] or [0], dtype=np.int8)
        return g[self.cfg] if len(self.cfg) else np.zeros(0, np.int8)

    @property
    def trump(self) -> np.ndarray:
        return (self.turnup.astype(np.int64) // 13).astype(np.int8)

    def dealer(self) -> np.ndarray:
        """Player index of each deal's dealer."""
        return self.seat_player[:, 0]

    def trump_card(self, rank: int) -> np.ndarray:
        return self.trump.astype(np.int64) * 13 + rank

    def location(self, cards: np.ndarray) -> np.ndarray:
        """Location class of the given card of each deal: relative seat, TURNUP, or UNDEALT."""
        idx = np.arange(len(self))
        h = self.holder[idx, cards].astype(np.int64)
        loc = np.where(h == NOWHERE, UNDEALT, h)
        return np.where(cards == self.turnup, TURNUP, loc)

    def held_by(self, cards: np.ndarray, rel: int | np.ndarray) -> np.ndarray:
        """Whether relative seat `rel` was dealt the card (its hand includes a turn-up it owns)."""
        idx = np.arange(len(self))
        return self.holder[idx, cards].astype(np.int64) == rel


def _order_key(file_index: int, line: int | None) -> int:
    return (int(file_index) << 32) | int(line or 0)


def _parse_all(xs: Sequence[str]) -> list[int] | None:
    out = []
    for x in xs:
        c = parse_card(x)
        if c is None:
            return None
        out.append(c)
    return out


def _jack_p(seen: int) -> float:
    """P(the next unseen card is a Jack) given the set of cards already seen (a bitmask)."""
    jacks = sum(1 for s in range(4) if not (seen >> (s * 13 + RJ)) & 1)
    return jacks / (N_CARDS - bin(seen).count("1"))


def facts_from_results(results: Sequence) -> DealingFacts:
    """Build the dealing facts of every replayed deal (`DealResult`s of `auditor.replay`)."""
    b = _Builder()
    for i, r in enumerate(results):
        b.add_result(i, r)
    return b.build()


class _Builder:
    def __init__(self):
        self.players: dict[str, int] = {}
        self.configs: dict[Config, int] = {}
        self.tables: dict[str, int] = {}
        self.rows: list[tuple] = []
        self.holders: list[np.ndarray] = []
        self.tu: list[tuple[int, int, float, int]] = []
        self.skipped = 0

    def _pid(self, name: str) -> int:
        return self.players.setdefault(name, len(self.players))

    def add_result(self, i: int, r) -> None:
        d = r.deal
        n = d.n
        try:
            cfg = config(d.ruleset, n)
        except Exception:  # a configuration the rules cannot lay out: not auditable for dealing
            self.skipped += 1
            return
        L = layout(d.ruleset, n, d.dealer)
        tu = parse_card(d.turn_up)
        if tu is None or not (cfg.pack >> tu) & 1:
            self.skipped += 1
            return
        af = d.game == "all_fours"
        hands = r.hands
        hands_ok = hands is not None and len(hands) == n
        union = 0
        if hands_ok:
            total = 0
            for s in range(n):
                h = hands[s]
                if bin(h).count("1") != L.hand_sizes[s] or h & ~cfg.pack:
                    hands_ok = False
                    break
                union |= h
                total += L.hand_sizes[s]
            hands_ok = hands_ok and bin(union).count("1") == total
            if d.hands is not None and any(len(h) != len(set(h)) for h in d.hands):
                hands_ok = False  # a card listed twice in one hand
            if af and (union >> tu) & 1:
                hands_ok = False
        if af:
            # All Fours hands derived from the play are the cards in play (hand + run cards - discards): they are
            # the dealt hands only when nobody ran the cards
            if d.hands is not None and not hands_ok:
                self.skipped += 1
                return
            hands_known = hands_ok and (d.hands is not None or not d.runs)
        else:
            if not hands_ok:
                self.skipped += 1
                return
            hands_known = True
        if not hands_known:
            union = 0
        holder = np.full(N_CARDS, NOWHERE, dtype=np.int8)
        if hands_known:
            for s in range(n):
                rel = (s - d.dealer) % n
                for c in cards_of(hands[s]):
                    holder[c] = rel
        row = len(self.rows)
        tu_events: list[tuple[int, int, float, int]] = []
        if af:
            seen = union
            tu_events.append((row, int(rank_of(tu) == RJ), _jack_p(seen), 0))
            seen |= 1 << tu
            for j, run in enumerate(d.runs or [], 1):
                cards = []
                for h in run["cards"]:
                    got = _parse_all(h)
                    if got is None:
                        self.skipped += 1
                        return
                    cards += got
                rt = parse_card(run["turn_up"])
                if rt is None or any((seen >> c) & 1 for c in cards) or len(set(cards)) != len(cards):
                    self.skipped += 1
                    return
                for c in cards:
                    seen |= 1 << c
                if (seen >> rt) & 1:
                    self.skipped += 1
                    return
                tu_events.append((row, int(rank_of(rt) == RJ), _jack_p(seen), j))
                seen |= 1 << rt
        sp = [-1] * MAX_SEATS
        for rel in range(n):
            sp[rel] = self._pid(d.players[(d.dealer + rel) % n])
        self.rows.append((
            _order_key(d.file_index, d.line), self.tables.setdefault(d.table, len(self.tables)),
            self.configs.setdefault(cfg, len(self.configs)), n, sp, (d.cutter_seat - d.dealer) % n, tu, i,
            hands_known,
        ))
        self.holders.append(holder)
        self.tu += tu_events

    def build(self) -> DealingFacts:
        rows = self.rows
        D = len(rows)
        tu = self.tu
        return DealingFacts(
            players=list(self.players), configs=list(self.configs), tables=list(self.tables),
            order=np.array([r[0] for r in rows], dtype=np.int64),
            table=np.array([r[1] for r in rows], dtype=np.int32),
            cfg=np.array([r[2] for r in rows], dtype=np.int32),
            n=np.array([r[3] for r in rows], dtype=np.int8),
            seat_player=np.array([r[4] for r in rows], dtype=np.int32).reshape(D, MAX_SEATS),
            cutter_rel=np.array([r[5] for r in rows], dtype=np.int8),
            turnup=np.array([r[6] for r in rows], dtype=np.int8),
            holder=np.array(self.holders, dtype=np.int8).reshape(D, N_CARDS),
            result_index=np.array([r[7] for r in rows], dtype=np.int64),
            hands_known=np.array([r[8] for r in rows], dtype=bool),
            tu_deal=np.array([t[0] for t in tu], dtype=np.int64),
            tu_jack=np.array([t[1] for t in tu], dtype=np.int8),
            tu_p=np.array([t[2] for t in tu], dtype=float),
            tu_run=np.array([t[3] for t in tu], dtype=np.int8),
            skipped=self.skipped,
        )


def config_arrays(facts: DealingFacts, fn) -> np.ndarray:
    """Evaluate `fn(config)` once per configuration and spread it over the deals."""
    if not facts.configs:
        return np.zeros(0)
    vals = np.array([fn(c) for c in facts.configs], dtype=float)
    return vals[facts.cfg]
