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

import numba
import numpy as np

from .cards import N_CARDS, RJ, cards_of, parse_card, parse_cards, rank_of, suit_of
from .columns import TIME_NONE, result_order, sheet_jack_seat, time_key
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


def config_of(rules: Rules, n: int) -> Config | None:
    """`config` for a player count the game allows (the range `dealog.validate` checks); None for any other count,
    which the rules cannot always lay out: such a deal is not auditable for dealing."""
    if not rules.min_players <= n <= rules.max_players:
        return None
    return config(rules, n)


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

    `holder[i, card]` is the relative seat that was dealt the card (NOWHERE if no hand); `order` is the deal's key in
    the canonical order of deals (`AuditColumns.order`, `columns.result_order`); `seat_player[i, r]` is the index in `players` of relative seat r (-1 past n).
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
    # int64: the deal's time in microseconds since 1970 UTC (`columns.time_key`), TIME_NONE when absent; with the
    # table it places a trial in a timeline's bins (`detectors.base.Timeline`, issue 15)
    time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tu_deal: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tu_jack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    tu_p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tu_run: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))  # 0: first turn-up; j: run j
    skipped: int = 0  # deals that could not be audited for dealing (bad cards, wrong sizes)
    # bool (issue 16): the holder of the Jack of the (first) turn-up's suit is known, `holder` holding it (NOWHERE:
    # in no hand), though the hands may not be: a score-sheet record knows who played the Jack of trumps, no other
    # card. Every deal whose hands are known; a sheet deal (All Fours: unless the cards were run). The tests of the
    # Jack read every such deal; those of other cards (the controls, the honours' locations) `hands_known` ones.
    jack_known: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def __post_init__(self) -> None:
        if len(self.time) != len(self.order):  # facts made without times (generated deals): every deal untimed
            self.time = np.full(len(self.order), TIME_NONE, np.int64)
        if len(self.jack_known) != len(self.order):  # facts made without sheets: the Jack is known with the hands
            self.jack_known = np.asarray(self.hands_known, bool).copy()

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


def jack_p(seen: int) -> float:
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
        cfg = config_of(d.ruleset, n)
        if cfg is None:
            self.skipped += 1
            return
        L = layout(d.ruleset, n, d.dealer)
        tu = parse_card(d.turn_up)
        if tu is None or not (cfg.pack >> tu) & 1:
            self.skipped += 1
            return
        af = d.game == "all_fours"
        if d.is_sheet:  # (issue 16) a score-sheet record: who played the Jack of trumps, no other card
            self._add_sheet(i, r, cfg, tu)
            return
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
            tu_events.append((row, int(rank_of(tu) == RJ), jack_p(seen), 0))
            seen |= 1 << tu
            for j, run in enumerate(d.runs or [], 1):
                cards = []
                for h in run["cards"]:
                    got = parse_cards(h)
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
                tu_events.append((row, int(rank_of(rt) == RJ), jack_p(seen), j))
                seen |= 1 << rt
        self._append(i, r, cfg, tu, hands_known, hands_known, holder)
        self.tu += tu_events

    def _append(self, i: int, r, cfg: Config, tu: int, hands_known: bool, jack_known: bool,
                holder: np.ndarray) -> None:
        d = r.deal
        n = d.n
        sp = [-1] * MAX_SEATS
        for rel in range(n):
            sp[rel] = self._pid(d.players[(d.dealer + rel) % n])
        self.rows.append((
            result_order(r), self.tables.setdefault(d.table, len(self.tables)),
            self.configs.setdefault(cfg, len(self.configs)), n, sp, (d.cutter_seat - d.dealer) % n, tu, i,
            hands_known, time_key(d.time), jack_known,
        ))
        self.holders.append(holder)

    def _add_sheet(self, i: int, r, cfg: Config, tu: int) -> None:
        """A score-sheet deal (`columns.sheet_jack_seat`): the Jack of the turn-up's suit at the seat that played
        it (known unless an All Fours deal ran the cards); the first turn-up of an All Fours deal is a trial of
        `turnup_jack` with no card seen before it (null 4/52: no hand is known)."""
        d = r.deal
        seat = sheet_jack_seat(d)
        holder = np.full(N_CARDS, NOWHERE, dtype=np.int8)
        if seat >= 0:
            holder[(tu // 13) * 13 + RJ] = (seat - d.dealer) % d.n
        row = len(self.rows)
        self._append(i, r, cfg, tu, False, seat >= -1, holder)
        if d.game == "all_fours":
            self.tu.append((row, int(rank_of(tu) == RJ), jack_p(0), 0))

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
            time=np.array([r[9] for r in rows], dtype=np.int64),
            jack_known=np.array([r[10] for r in rows], dtype=bool),
            tu_deal=np.array([t[0] for t in tu], dtype=np.int64),
            tu_jack=np.array([t[1] for t in tu], dtype=np.int8),
            tu_p=np.array([t[2] for t in tu], dtype=float),
            tu_run=np.array([t[3] for t in tu], dtype=np.int8),
            skipped=self.skipped,
        )


# ---------------------------------------------------------------- the same facts from the audit columns


_JACKS = sum(1 << (s * 13 + RJ) for s in range(4))


@numba.njit(cache=True)
def _holders(hands, rel_of_seat, n, rows):  # pragma: no cover - compiled
    """holder[j, card]: the relative seat dealt the card in deal rows[j] (NOWHERE if none; the hands are
    disjoint)."""
    out = np.full((len(rows), N_CARDS), NOWHERE, np.int8)
    for j in range(len(rows)):
        i = rows[j]
        for s in range(n[i]):
            h = hands[i, s]
            rel = rel_of_seat[i, s]
            for c in range(N_CARDS):
                if (h >> np.uint64(c)) & np.uint64(1):
                    out[j, c] = rel
    return out


def _jack_p_array(seen: np.ndarray) -> np.ndarray:
    """`jack_p` of each mask."""
    out_jacks = np.bitwise_count(seen & np.uint64(_JACKS)).astype(np.int64)
    return (4 - out_jacks) / (N_CARDS - np.bitwise_count(seen).astype(np.int64))


def _first_seen_order(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """For ints in [0, size): (distinct values in order of first appearance, each value's rank in that order) - the
    order a dict filled by `setdefault` while walking `values` would give."""
    first = np.full(size, len(values), np.int64)
    np.minimum.at(first, values, np.arange(len(values)))
    uniq = np.flatnonzero(first < len(values))
    uniq = uniq[np.argsort(first[uniq], kind="stable")]
    rank = np.full(size, -1, np.int64)
    rank[uniq] = np.arange(len(uniq))
    return uniq, rank[values]


def _run_checks(cols, rows: np.ndarray, seen0: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The All Fours runs of deals `rows` (their cards known out so far: `seen0`) checked as `_Builder.add_result`
    does: every run card a card, none already out, none twice, the run's turn-up a card not out. Returns the rows
    that fail and the turn-up events (row, jack, p, run) of the others."""
    code: dict = {}

    def parse(x) -> int:
        c = parse_card(x)
        return -1 if c is None else c

    run_row, run_j, run_tu, run_len, cards = [], [], [], [], []
    for i in rows.tolist():
        for j, run in enumerate(cols.runs[i] or [], 1):
            try:
                got = [code[x] for h in run["cards"] for x in h]
            except (KeyError, TypeError):  # first sight of a spelling (or no string): the parser, then the cache
                got = [parse(x) for h in run["cards"] for x in h]
                for h in run["cards"]:
                    for x in h:
                        if isinstance(x, str):
                            code[x] = parse(x)
            run_row.append(i)
            run_j.append(j)
            run_tu.append(parse(run["turn_up"]))
            run_len.append(len(got))
            cards += got
    R = len(run_row)
    run_row_a = np.asarray(run_row, np.int64)
    run_j_a = np.asarray(run_j, np.int64)
    rt = np.asarray(run_tu, np.int64)
    counts = np.asarray(run_len, np.int64)
    codes = np.asarray(cards, np.int64)
    seg = np.repeat(np.arange(R), counts)
    bad = np.zeros(R, bool)
    bad[seg[codes < 0]] = True
    mask = np.zeros(R, np.uint64)
    np.bitwise_or.at(mask, seg, np.uint64(1) << np.maximum(codes, 0).astype(np.uint64))
    bad |= np.bitwise_count(mask).astype(np.int64) != counts  # a card twice in the run
    bad |= rt < 0
    rt_bit = np.uint64(1) << np.maximum(rt, 0).astype(np.uint64)
    pos = np.searchsorted(rows, run_row_a)
    seen = seen0.copy()
    failed = np.zeros(len(rows), bool)
    p = np.zeros(R)
    for j in range(1, int(run_j_a.max(initial=0)) + 1):  # the runs of a deal in turn
        k = np.flatnonzero(run_j_a == j)
        s = seen[pos[k]]
        out = s | mask[k]
        fail = bad[k] | ((s & mask[k]) != 0) | ((out & rt_bit[k]) != 0)
        failed[pos[k[fail]]] = True
        p[k] = _jack_p_array(out)
        seen[pos[k]] = out | rt_bit[k]
    keep = ~failed[pos]
    events = [run_row_a[keep], (rt[keep] % 13 == RJ).astype(np.int8), p[keep], run_j_a[keep].astype(np.int8)]
    return rows[failed], events


def facts_from_columns(cols) -> DealingFacts:
    """`facts_from_results(results)` from `auditor.columns.from_results(results)` (or the batch pipeline's
    columns): the same arrays, lists and `skipped`, computed as array operations. `result_index` is the row.

    The checks of `_Builder.add_result` per row: one `config` per (ruleset, player count) group, the turn-up in the
    pack, each seat's hand of the rules' size and inside the pack, the hands disjoint, no card listed twice in a
    recorded hand, (All Fours) the turn-up in no hand, the runs' cards new and their turn-ups new."""
    D = len(cols)
    n = cols.n.astype(np.int64)
    dealer = cols.dealer.astype(np.int64)
    tu = cols.turn_up.astype(np.int64)
    # ---- one configuration per (ruleset, player count)
    gkey = cols.rset.astype(np.int64) * 256 + (n + 128)
    gkeys, ginv = np.unique(gkey, return_inverse=True)
    ginv = ginv.reshape(-1)
    G = len(gkeys)
    g_ok = np.zeros(G, bool)
    g_cfg: list[Config | None] = [None] * G
    g_pack = np.zeros(G, np.uint64)
    g_af = np.zeros(G, bool)
    g_sizes = np.zeros((G, MAX_SEATS), np.int64)  # cards dealt per relative seat
    for g, k in enumerate(gkeys.tolist()):
        rules, gn = cols.rulesets[k >> 8], (k & 0xFF) - 128
        cfg = config_of(rules, gn)
        if cfg is None:
            continue
        g_ok[g] = True
        g_cfg[g] = cfg
        g_pack[g] = cfg.pack
        g_af[g] = cfg.game == "all_fours"
        g_sizes[g, :gn] = cfg.hand_sizes
    ok = g_ok[ginv]
    pack = g_pack[ginv]
    af = g_af[ginv]
    # ---- the turn-up is a card of the pack
    tu_bit = np.uint64(1) << np.maximum(tu, 0).astype(np.uint64)
    ok &= (tu >= 0) & ((pack & tu_bit) != 0)
    # ---- the hands: sizes by the rules, inside the pack, disjoint, no card listed twice
    seat = np.arange(MAX_SEATS)
    in_deal = seat[None, :] < n[:, None]
    rel_of_seat = (seat[None, :] - dealer[:, None]) % np.maximum(n, 1)[:, None]  # relative seat of each seat
    want = np.where(in_deal, g_sizes[ginv[:, None], rel_of_seat], 0)
    hands = cols.hands
    fits = (np.bitwise_count(hands) == want) & ((hands & ~pack[:, None]) == 0)
    hands_ok = cols.has_hands & (fits | ~in_deal).all(1)
    union = np.bitwise_or.reduce(np.where(in_deal, hands, np.uint64(0)), axis=1)
    hands_ok &= np.bitwise_count(union).astype(np.int64) == want.sum(1)
    hands_ok &= ~(cols.rec_hands & cols.hands_dup)
    hands_ok &= ~(af & ((union & tu_bit) != 0))
    has_runs = np.zeros(D, bool)
    has_runs[[i for i, runs in cols.runs.items() if runs]] = True
    # All Fours hands derived from the play are the cards in play (hand + run cards - discards): they are the
    # dealt hands only when nobody ran the cards
    sheet = cols.sheet  # (issue 16) score-sheet records: no hands, the seat that played the Jack of trumps
    ok &= np.where(af, ~(cols.rec_hands & ~hands_ok), hands_ok | sheet)
    hands_known = np.where(af, hands_ok & (cols.rec_hands | ~has_runs), True) & ~sheet
    union = np.where(hands_known, union, np.uint64(0))
    # ---- the runs (All Fours deals that ran the cards)
    ran = np.flatnonzero(ok & af & has_runs)
    failed, run_ev = _run_checks(cols, ran, union[ran] | tu_bit[ran])
    ok[failed] = False
    rows = np.flatnonzero(ok)
    A = len(rows)
    # ---- per kept row
    n_k, dealer_k = n[rows], dealer[rows]
    in_k = in_deal[rows]
    abs_seat = (dealer_k[:, None] + seat[None, :]) % np.maximum(n_k, 1)[:, None]
    sp_rows = cols.seat_player[rows[:, None], abs_seat][in_k]
    uniq_p, pid = _first_seen_order(sp_rows.astype(np.int64), len(cols.players))
    seat_player = np.full((A, MAX_SEATS), -1, np.int32)
    seat_player[in_k] = pid
    uniq_t, table = _first_seen_order(cols.table[rows].astype(np.int64), len(cols.tables))
    # configurations: equal Configs of two (ruleset, n) groups are one entry, listed in order of first use
    cfg_ids: dict[Config, int] = {}
    g_id = np.full(G, -1, np.int64)
    for g in _first_seen_order(ginv[rows], G)[0].tolist():
        g_id[g] = cfg_ids.setdefault(g_cfg[g], len(cfg_ids))
    known = hands_known[rows]
    holder = np.full((A, N_CARDS), NOWHERE, np.int8)
    if known.any():
        holder[known] = _holders(hands, rel_of_seat, n, rows[known])
    jseat = cols.jack_seat[rows].astype(np.int64)
    sheet_k = sheet[rows]
    jack_known = known | (sheet_k & (jseat >= -1))
    at = np.flatnonzero(sheet_k & (jseat >= 0))
    if len(at):
        holder[at, (tu[rows[at]] // 13) * 13 + RJ] = (jseat[at] - dealer_k[at]) % n_k[at]
    # ---- turn-up events: each All Fours deal's first turn-up, then its runs'
    pos = np.full(D, -1, np.int64)
    pos[rows] = np.arange(A)
    first = rows[af[rows]]
    ev_deal = np.concatenate([pos[first], pos[run_ev[0]]])
    ev_jack = np.concatenate([(tu[first] % 13 == RJ).astype(np.int8), run_ev[1]])
    ev_p = np.concatenate([_jack_p_array(union[first]), run_ev[2]])
    ev_run = np.concatenate([np.zeros(len(first), np.int8), run_ev[3]])
    o = np.lexsort((ev_run, ev_deal))
    return DealingFacts(
        players=[cols.players[p] for p in uniq_p.tolist()], configs=list(cfg_ids),
        tables=[cols.tables[t] for t in uniq_t.tolist()],
        order=cols.order[rows].astype(np.int64),
        table=table.astype(np.int32),
        cfg=g_id[ginv[rows]].astype(np.int32),
        n=n_k.astype(np.int8),
        seat_player=seat_player,
        cutter_rel=((cols.cutter[rows].astype(np.int64) - dealer_k) % np.maximum(n_k, 1)).astype(np.int8),
        turnup=tu[rows].astype(np.int8),
        holder=holder,
        result_index=rows.astype(np.int64),
        hands_known=known.astype(bool),
        time=cols.time[rows].astype(np.int64),
        jack_known=jack_known.astype(bool),
        tu_deal=ev_deal[o], tu_jack=ev_jack[o], tu_p=ev_p[o].astype(float), tu_run=ev_run[o],
        skipped=D - A,
    )

def config_arrays(facts: DealingFacts, fn) -> np.ndarray:
    """Evaluate `fn(config)` once per configuration and spread it over the deals."""
    if not facts.configs:
        return np.zeros(0)
    vals = np.array([fn(c) for c in facts.configs], dtype=float)
    return vals[facts.cfg]
