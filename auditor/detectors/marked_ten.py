"""`marked_ten`: does a player's play follow where the Ten of trumps really is, beyond what he could legally know?

Scotch Whist, deals played in one set (4 to 8 players, Russian 2-3 players). The design (docs/decisions.md,
section "Play-knowledge tests"):

Decisions. Every card play by the player where the target card (the Ten of trumps) is unplayed, not his, not
publicly known (the turn-up) and not out of play, and where he has a real choice of "trump aggression":

  - a lead, scored x = +1 for leading the boss trump (the highest trump not yet played: a sure winner),
    0 for another trump, -1 for a non-trump; relevant when his hand offers two of these;
  - following a trump lead with trumps, x = +1 for playing the boss (the highest trump not yet played), -1 for
    another trump; relevant when he holds the boss and another trump.

Every other play is excluded and counted by reason (`detail.excluded`).

Fit. The Ten's location class g: for a lead +1 when an opponent holds it, -1 when a partner does, 0 when it is
aside (undealt); for a follow +1 when its holder is still to play to this trick, 0 otherwise. The fit of a
decision is f(d, loc) = x(d) g(loc): leading the boss when an opponent holds the Ten (+1), keeping off trumps
when the partner holds it (+1), and the mirror cases (-1).

Null. Under H0 the decision depends on the Ten's location only through what he knew, I_t. With P(loc | I_t) the
posterior of the Ten's location given I_t, the decision's score is

    s_t = (x(d_t) - c_t) * (g(true loc) - sum_loc P(loc | I_t) g(loc))

which has mean zero given I_t for any c_t that is a function of I_t. c_t is the field's mean x in the same
decision context (fitted on the other players): it removes noise (a player who always leads trumps adds little
variance) and makes the score doubly robust: its bias is the product of the errors of c_t and of the posterior.

Statistic and p-value (sequential randomisation). Each decision's term, given what the player knew, is drawn
from the posterior: x_t - c_t is fixed and g takes the value of each possible place with its posterior
probability. These terms are martingale differences within a deal (the posterior is updated decision by
decision), so their sum has the null mean and variance of independent blocks, and its one-sided tail is computed
by the Lugannani-Rice saddlepoint over the blocks (skewed terms: a normal tail on a self-normalised sum was
measured anti-conservative). The deal is the unit of the variance check: phi = the field's (other players')
ratio of the empirical variance of the per-deal sums S_d to the model variance; the null is widened by max(1,
phi). A randomisation of the whole deal at the player's last decision (`last_decision_crt`) is valid too but was
measured conservative and less powerful, so it is not used (docs/decisions.md).

Posterior. P(loc | I_t) is a conditional logit over the seats that may hold the Ten: seats shown void in trumps
have none; the others have the offset log(unknown cards) (the exact hard-fact prior when nobody has shown a void)
plus fitted weights on (a) the sum of the log likelihood ratios of the seat's plays so far in the deal under a
model of how holders and non-holders of the Ten play (binned frequencies over the whole field: after the fact
every deal's hands are known) and (b) plain-suit voids shown. The model for a player's decisions is fitted on
the other players only (K folds of players), so a cheater cannot teach the model his own habits.

Controls reported beside the primary test (`controls`, in no family): the same test with the hard-fact posterior
(unknown-card counts and voids only: what a detector that ignores legal signals would say), the exact opening-lead
component (a deal's first lead: the hard-fact posterior is exact for every honest policy), early vs late decisions,
the per-deal sums read as a self-normalised normal Z, the same test for unmarked cards (the trump Queen, the Ten of
the next suit), a placebo on deals where the Ten is his own (the trump Ace standing in for the Ten), the test per
`pack` when records carry one, and the field comparison (`auditor.detectors.field`).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.special import ndtr

from ..cards import SUIT_MASK, rank_of, suit_of
from ..columns import DEAL_NO_MAX
from ..rules import trump_strength
from ..stats.family import TestResult
from .base import timeline
from .play_facts import (
    ACE,
    QUEEN,
    TEN,
    PlayState,
    card_of,
    deal_exclusion,
    popcount,
    walk,
)
from .spec import TestSpec

NAME = "marked_ten"

# targets: the marked card and its controls
TARGETS = ("ten", "queen", "plain_ten", "placebo")
TARGET_LABEL = {"ten": "Ten of trumps", "queen": "Queen of trumps (unmarked control)",
                "plain_ten": "Ten of the next suit (unmarked control)",
                "placebo": "trump Ace on deals where the Ten is his own (placebo)"}

KIND_LEAD, KIND_FOLLOW = 0, 1
N_FEAT = 5  # conditional logit features: log u, llr sum, one plain void, two+ plain voids, aside
LLR_CLIP = 6.0
MIN_DEALS = 5  # a player with fewer scored deals gets no test


def target_card(name: str, trump: int) -> int:
    if name == "ten":
        return card_of(trump, TEN)
    if name == "queen":
        return card_of(trump, QUEEN)
    if name == "plain_ten":
        return card_of((trump + 1) % 4, TEN)
    return card_of(trump, ACE)  # placebo


# ---------------------------------------------------------------- per-play model of holders and non-holders

# play context: partnership (2) x kind (3) x situation (3) x last to play (2) x stage (3); outcome 0..3
N_CTX = 2 * 3 * 3 * 2 * 3
N_OUT = 4  # 0: target suit above target, 1: target suit below target, 2: another suit, 3: the target itself


def _above(game: str, trump: int, a: int, b: int) -> bool:
    """Card a ranks above card b of the same suit."""
    if suit_of(a) == trump:
        return trump_strength(game, rank_of(a)) > trump_strength(game, rank_of(b))
    return rank_of(a) > rank_of(b)


def play_cell(st: PlayState, target: int) -> int | None:
    """Context x outcome cell of seat `st.seat`'s play relative to `target` (None: a play that says nothing of it,
    i.e. following another suit with that suit)."""
    s, c = st.seat, st.card
    ts = suit_of(target)
    if st.pos == 0:
        kind = 0
        situation = 0
    elif st.lead_suit == ts and st.hold[s] & SUIT_MASK[ts]:
        kind = 1  # following the target's suit with that suit: the target could be played
        w_seat, w_card = st.current_winner()
        if st.sure_for_side(s):
            situation = 0  # the partner's sure winner: a safe place to drop the target
        elif st.beats(target, w_card):
            situation = 2  # the target would win the trick now
        else:
            situation = 1
    elif not (st.hold[s] & SUIT_MASK[st.lead_suit]):
        kind = 2  # void in the suit led: the target could be thrown (or trumped in)
        situation = 0 if st.sure_for_side(s) else (1 if st.side_of[st.current_winner()[0]] != st.side_of[s] else 2)
    else:
        return None
    last = 1 if st.pos == len(st.trick_seats) - 1 else 0
    stage = 0 if st.k == 0 else (1 if 2 * st.k < st.n_tricks else 2)
    ctx = (((int(st.partnership) * 3 + kind) * 3 + situation) * 2 + last) * 3 + stage
    if c == target:
        out = 3
    elif suit_of(c) == ts:
        out = 0 if _above(st.game, st.trump, c, target) else 1
    else:
        out = 2
    return ctx * N_OUT + out


# ---------------------------------------------------------------- decisions


def boss_trump(st: PlayState) -> int | None:
    """The highest trump that is not yet played or publicly out of play."""
    gone = st.played | st.out_of_play_public
    for c in st.trump_order:
        if not (gone >> c) & 1:
            return c
    return None


def decision_x(st: PlayState) -> tuple[int, dict[int, int], int] | None:
    """(kind, x per legal card, context for the field's mean x), or None when the play is not a trump-aggression
    choice."""
    i, trump, legal = st.seat, st.trump, st.legal
    tmask = SUIT_MASK[trump]
    if st.pos != 0 and (st.lead_suit != trump or not legal & tmask or popcount(legal) < 2):
        return None
    if st.pos == 0 and (popcount(legal) < 2 or not legal & tmask):
        return None
    boss = boss_trump(st)
    if st.pos == 0:
        xs: dict[int, int] = {}
        m = legal
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            xs[c] = (1 if c == boss else 0) if suit_of(c) == trump else -1
        pattern = (int(boss is not None and (legal >> boss) & 1) << 2) | (int(bool(legal & tmask & ~(
            (1 << boss) if boss is not None else 0))) << 1) | int(bool(legal & ~tmask))
        stage = 0 if st.k == 0 else (1 if 2 * st.k < st.n_tricks else 2)
        return KIND_LEAD, xs, (int(st.partnership) * 8 + pattern) * 3 + stage
    if st.lead_suit == trump and legal & tmask:
        w_seat, w_card = st.current_winner()
        xs = {}
        m = legal
        while m:
            low = m & -m
            c = low.bit_length() - 1
            m ^= low
            xs[c] = 1 if c == boss else -1
        n_opts = min(popcount(legal), 4)
        partner_winning = int(st.side_of[w_seat] == st.side_of[i])
        last = int(st.pos == len(st.trick_seats) - 1)
        return KIND_FOLLOW, xs, 48 + ((int(st.partnership) * 5 + n_opts) * 2 + partner_winning) * 2 + last
    return None


N_XCTX = 48 + 2 * 5 * 2 * 2


P_COLS = ("deal", "order", "seat", "cell", "holds")
D_COLS = ("deal", "order", "seat", "kind", "x", "xctx", "early", "opening")
C_COLS = ("dec", "seat", "u", "nv", "g", "true")
MAX_SEATS = 8
COL_DTYPE = {"deal": np.int32, "dec": np.int32, "order": np.int16, "cell": np.int16, "xctx": np.int16}  # else int8


@dataclass
class MarkedTenCounts:
    """What `count` keeps of one partition, as numpy columns (so that a million deals fit in memory):

    per deal: `keys` (a 64-bit hash of the deal's content: the order of deals in `finalize`, so any partition of
    the input gives the same result), `players` (ids into `names`, -1 past the table's seats), `pack` (id into
    `pack_names`, -1 none) and `share` (each seat's side's share of the deal's points: his results);
    per target: `plays` (the rows of the holder model: deal, play order, seat, context x outcome cell, whether the
    seat holds the card), `decisions` (deal, order, seat, kind, x, context of x, early, opening lead) and
    `cands` (per decision, the places the card may be: decision, seat or -1 aside, unknown cards, plain voids
    shown, location class g, truth). `merge` concatenates, re-indexing deals, decisions, players and packs."""

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    players: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.int32))
    pack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    share: np.ndarray = field(default_factory=lambda: np.zeros((0, MAX_SEATS), np.float32))
    names: list[str] = field(default_factory=list)
    pack_names: list[str] = field(default_factory=list)
    game: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # index into `games`
    deal_no: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    games: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)  # file:line of each deal
    targets: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)
    excluded_deals: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, dict[str, int]] = field(default_factory=dict)  # player -> reason -> plays

    @property
    def n_deals(self) -> int:
        return len(self.keys)


class _Builder:
    """Flat lists filled deal by deal, turned into `MarkedTenCounts` columns at the end of `count`."""

    def __init__(self, counts: MarkedTenCounts):
        self.c = counts
        self.keys: list[int] = []
        self.players: list[list[int]] = []
        self.pack: list[int] = []
        self.share: list[list[float]] = []
        self.pid: dict[str, int] = {}
        self.packid: dict[str, int] = {}
        self.gid: dict[str, int] = {}
        self.game: list[int] = []
        self.deal_no: list[int] = []
        self.source: list[str] = []
        self.cols = {t: {"plays": {k: [] for k in P_COLS}, "decisions": {k: [] for k in D_COLS},
                         "cands": {k: [] for k in C_COLS}} for t in TARGETS}

    def player(self, name: str) -> int:
        i = self.pid.get(name)
        if i is None:
            i = self.pid[name] = len(self.pid)
        return i

    def finish(self) -> MarkedTenCounts:
        c = self.c
        c.keys = np.asarray(self.keys, np.uint64)
        c.players = np.asarray(self.players, np.int32).reshape(-1, MAX_SEATS)
        c.pack = np.asarray(self.pack, np.int32)
        c.share = np.asarray(self.share, np.float32).reshape(-1, MAX_SEATS)
        c.names = sorted(self.pid, key=self.pid.get)
        c.pack_names = sorted(self.packid, key=self.packid.get)
        c.game = np.asarray(self.game, np.int32)
        c.deal_no = np.asarray(self.deal_no, np.int64)
        c.games = sorted(self.gid, key=self.gid.get)
        c.source = self.source
        c.targets = {t: {part: {k: np.asarray(v, COL_DTYPE.get(k, np.int8)) for k, v in cols.items()}
                         for part, cols in tc.items()} for t, tc in self.cols.items()}
        return c


_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
_FMIX1, _FMIX2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53  # the 64-bit finaliser of MurmurHash3
_M64 = (1 << 64) - 1
_STR_HASH: dict[str, int] = {}


def _str_hash(text: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes of `text` (memoised: tables, games and players repeat)."""
    h = _STR_HASH.get(text)
    if h is None:
        h = _FNV_OFFSET
        for b in text.encode("utf-8"):
            h = ((h ^ b) * _FNV_PRIME) & _M64
        if len(_STR_HASH) < 1 << 16:
            _STR_HASH[text] = h
    return h


def _deal_key(res) -> int:
    """A 64-bit hash of the deal's content (table, game, deal number, seats, dealer, turn-up and every card played):
    FNV-1a over 64-bit words (the strings by their `_str_hash`, the parsed turn-up or -1, each play as trick << 16
    | seat << 8 | card), then the Murmur finaliser. Plain integer steps, so `marked_ten_fast` computes the same key
    over the columns."""
    from ..cards import parse_card

    d = res.deal
    tu = parse_card(d.turn_up)
    words = [_str_hash(d.table), _str_hash(d.game_id), min(d.deal_no, DEAL_NO_MAX), d.n, *map(_str_hash, d.players), d.dealer,
             -1 if tu is None else tu, *[(k << 16) | (s << 8) | c for k, s, c in res.plays]]
    h = _FNV_OFFSET
    for w in words:
        h = ((h ^ (w & _M64)) * _FNV_PRIME) & _M64
    h ^= h >> 33
    h = (h * _FMIX1) & _M64
    h ^= h >> 33
    h = (h * _FMIX2) & _M64
    return h ^ (h >> 33)


def _bump(dct: dict, key: str, by: int = 1) -> None:
    dct[key] = dct.get(key, 0) + by


def extract_deal(res, counts: MarkedTenCounts, B: _Builder) -> bool:
    """Add one deal's plays and decisions to the builder; False (and the reason counted) when it is excluded."""
    d = res.deal
    if d.game != "scotch_whist":
        _bump(counts.excluded_deals, "not_scotch_whist")
        return False
    why = deal_exclusion(res)
    if why is None and res.revokes:
        why = "revoke_in_deal"  # a revoke shows a false void: the hard facts of the deal are not facts
    if why is None:
        from ..rules import layout

        if layout(d.ruleset, d.n, d.dealer).n_sets > 1:
            why = "played_in_sets"
    if why is not None:
        _bump(counts.excluded_deals, why)
        return False
    trump = res.trump
    tcards = {t: target_card(t, trump) for t in TARGETS}
    ten = tcards["ten"]
    di = len(B.keys)
    B.keys.append(_deal_key(res))
    B.game.append(B.gid.setdefault(d.game_id, len(B.gid)))
    B.deal_no.append(min(d.deal_no, DEAL_NO_MAX))
    B.source.append(d.source)
    B.players.append([B.player(p) for p in d.players] + [-1] * (MAX_SEATS - d.n))
    if d.pack is None:
        B.pack.append(-1)
    else:
        B.pack.append(B.packid.setdefault(d.pack, len(B.packid)))
    pts = res.points or [0] * d.n_sides
    tot = sum(pts)
    side = d.side_of
    B.share.append([(pts[side[s]] / tot) if tot > 0 else 0.0 for s in range(d.n)] + [0.0] * (MAX_SEATS - d.n))
    cols = B.cols
    order = 0
    for st in walk(res):
        order += 1
        if st.two_card_turn:
            continue
        i = st.seat
        player = d.players[i]
        # the holder model's plays (every seat, every target still hidden from at least someone)
        cells: dict[int, int | None] = {}
        for t in ("ten", "queen", "plain_ten", "placebo"):
            c = tcards[t]
            if c in cells:
                cell = cells[c]
            else:
                cell = None
                if not ((st.played | st.out_of_play_public) >> c) & 1 and not (
                        st.turnup_owner is not None and c == st.turn_up):
                    cell = play_cell(st, c)
                cells[c] = cell
            if cell is not None:
                pc = cols[t]["plays"]
                pc["deal"].append(di)
                pc["order"].append(order)
                pc["seat"].append(i)
                pc["cell"].append(cell)
                pc["holds"].append((st.hold[i] >> c) & 1)
        # the decision
        exc = counts.excluded.setdefault(player, {})
        ten_own = bool((st.hold[i] >> ten) & 1)
        if ten_own:
            ten_state = "ten_own"
        elif (st.played >> ten) & 1:
            ten_state = "ten_played"
        elif st.visible(i, ten):
            ten_state = "ten_public"  # the turn-up, or out of play
        else:
            ten_state = None
        dx = decision_x(st)
        if dx is not None and len(set(dx[1].values())) < 2:
            dx = None
        if ten_state is not None:
            _bump(exc, ten_state)
        elif popcount(st.legal) == 1:
            _bump(exc, "forced")
        elif dx is None:
            _bump(exc, "no_trump_choice")
        if dx is None:
            continue
        kind, xs, xctx = dx
        x = xs[st.card]
        early = int(2 * st.k < st.n_tricks)
        opening = int(st.k == 0 and st.pos == 0)
        n_scored = 0
        for t in TARGETS:
            c = tcards[t]
            if t == "placebo" and not ten_own:
                continue
            if st.visible(i, c):
                continue
            cands = _candidates(st, i, c, kind)
            if cands is None:
                continue
            dc, cc = cols[t]["decisions"], cols[t]["cands"]
            dec = len(dc["deal"])
            for k, v in zip(D_COLS, (di, order, i, kind, x, xctx, early, opening)):
                dc[k].append(v)
            for row in cands:
                cc["dec"].append(dec)
                for k, v in zip(C_COLS[1:], row):
                    cc[k].append(v)
            n_scored += t == "ten"
        if ten_state is None:
            _bump(exc, "scored" if n_scored else "no_candidate")
    return True


def _candidates(st: PlayState, i: int, target: int, kind: int) -> tuple | None:
    """Where `target` may be, from seat i's view: (seat, unknown cards, plain voids shown, g, is_true)."""
    ts = suit_of(target)
    holder = st.holder(target)
    after = set(st.seats_after())
    side = st.side_of
    out = []
    for j in range(st.n):
        if j == i:
            continue
        u = st.unknown_slots(i, j)
        if u == 0 or (st.void[j] >> ts) & 1:
            continue
        nv = popcount(st.void[j] & ~(1 << ts))
        if kind == KIND_LEAD:
            g = -1 if side[j] == side[i] else 1
        else:
            g = 1 if j in after else 0
        out.append((j, u, nv, g, int(j == holder)))
    if st.aside:
        u = popcount(st.aside)
        out.append((-1, u, 0, 0, int(holder is None)))
    if not out or not any(c[4] for c in out):
        return None
    return tuple(out)


# ---------------------------------------------------------------- the detector


SPEC = TestSpec(
    name='marked_ten',
    title='Players whose play follows the hidden Ten of trumps',
    what="Whether a player's leads and plays fit where the Ten of trumps really is better than anything he could "
         'legally know explains. Controls beside the score (unmarked cards, deals where he holds the Ten himself, '
         'late against early decisions) separate a good card reader from a cheat.',
    unit='deals scored',
    unit_short='deals scored',
    event="played to the Ten's true place",
    cheat="knowing the Ten's place on a share of decisions",
    honest='an honest player',
    subject='player',
    chart='score',
    section=6,
    cost=40,
    chart_controls=('queen', 'plain_ten', 'placebo'),
    sentence="{subject}'s play fitted the true place of the Ten of trumps with a score of {obs} over {over}; for "
             'an honest player, whatever he could legally know, about {exp}{z}; {pq}.',
    sentence_needs_n=False,
)


class MarkedTen:
    """Detector interface (`auditor.detectors.base`): count / merge / finalize. `count` keeps, per deal, the plays
    and decisions the test needs (plain tuples); `merge` concatenates them, so any split of the input by table
    gives the same result; `finalize` fits the field's model and scores every player."""
    spec = SPEC

    name = NAME

    def __init__(self, fdr: float = 0.05, details: bool = True, folds: int = 5, min_deals: int = MIN_DEALS,
                 targets: Sequence[str] = TARGETS, **_: Any):
        self.fdr = fdr
        self.details = details
        self.folds = folds
        self.min_deals = min_deals
        self.targets = tuple(targets)

    def count(self, results: Sequence[Any], rng: np.random.Generator | None = None, facts: Any = None
              ) -> MarkedTenCounts:
        c = MarkedTenCounts()
        B = _Builder(c)
        for res in results:
            extract_deal(res, c, B)
        return B.finish()

    def count_columns(self, cols: Any, rng: np.random.Generator | None = None, facts: Any = None
                      ) -> MarkedTenCounts:
        """`count` over the audit's columns (`auditor.columns.AuditColumns`): the same counts, the walk in numba
        (`marked_ten_fast`)."""
        from .marked_ten_fast import count_columns

        return count_columns(cols)

    def merge(self, parts: Sequence[MarkedTenCounts]) -> MarkedTenCounts:
        return merge_counts(parts)

    def finalize(self, counts: MarkedTenCounts, rng: np.random.Generator | None = None) -> list[TestResult]:
        scores = score_all(counts, folds=self.folds, targets=self.targets)
        return results_from_scores(scores, counts, self.min_deals, self.details)


def run(results: Sequence[Any], folds: int = 5) -> list[TestResult]:
    det = MarkedTen(folds=folds)
    return det.finalize(det.count(results))


# ---------------------------------------------------------------- fitting and scoring


def _fold_of(player: str, folds: int) -> int:
    return zlib.crc32(player.encode()) % folds if folds > 1 else 0


@dataclass
class TargetArrays:
    """One target's plays and decision rows as arrays. Decisions (and their candidate rows, grouped by decision) in
    key order of their deals, then play order; plays in the counts' deal order, then play order. Integer columns
    keep the counts' small dtypes (a million deals: tens of millions of rows); deal and player ids are int64."""

    # plays: the holder model's rows
    p_deal: np.ndarray  # the deal's index in the counts (not its key rank: the plays are read deal by deal)
    p_order: np.ndarray
    p_seat: np.ndarray
    p_cell: np.ndarray
    p_holds: np.ndarray
    p_off: np.ndarray  # the plays of the counts' deal d: p_off[d]:p_off[d + 1]
    seat_player: np.ndarray  # per deal of the counts and seat (deal * MAX_SEATS + seat): the player's sorted id
    # decisions
    d_deal: np.ndarray  # the deal's place in key order
    d_src: np.ndarray  # the deal's index in the counts
    d_order: np.ndarray
    d_seat: np.ndarray
    d_player: np.ndarray
    d_kind: np.ndarray
    d_x: np.ndarray
    d_xctx: np.ndarray
    d_early: np.ndarray
    d_opening: np.ndarray
    # candidate rows (grouped by decision, in order)
    c_dec: np.ndarray
    c_seat: np.ndarray
    c_u: np.ndarray
    c_nv: np.ndarray
    c_g: np.ndarray
    c_true: np.ndarray


def merge_counts(parts: Sequence[MarkedTenCounts]) -> MarkedTenCounts:
    """Exact merge: concatenation with deals, decisions, players and packs re-indexed."""
    out = MarkedTenCounts()
    names: dict[str, int] = {}
    packs: dict[str, int] = {}
    keys, players, pack, share = [], [], [], []
    games: dict[str, int] = {}
    game, deal_no, source = [], [], []
    tcols: dict[str, dict[str, dict[str, list]]] = {}
    n_deals = 0
    n_dec: dict[str, int] = {}
    for p in parts:
        pmap = np.array([names.setdefault(nm, len(names)) for nm in p.names] + [-1], np.int32)
        kmap = np.array([packs.setdefault(nm, len(packs)) for nm in p.pack_names] + [-1], np.int32)
        keys.append(p.keys)
        gmap = np.array([games.setdefault(g, len(games)) for g in p.games] + [-1], np.int32)
        game.append(gmap[p.game])
        deal_no.append(p.deal_no)
        source += p.source
        players.append(pmap[p.players])  # -1 indexes the trailing -1
        pack.append(kmap[p.pack])
        share.append(p.share)
        for t, tc in p.targets.items():
            dst = tcols.setdefault(t, {"plays": {k: [] for k in P_COLS}, "decisions": {k: [] for k in D_COLS},
                                       "cands": {k: [] for k in C_COLS}})
            for part, cols in tc.items():
                for k, v in cols.items():
                    if k == "deal":
                        v = v.astype(np.int64) + n_deals
                    elif k == "dec":
                        v = v.astype(np.int64) + n_dec.get(t, 0)
                    dst[part][k].append(v)
            n_dec[t] = n_dec.get(t, 0) + len(tc["decisions"]["deal"])
        n_deals += p.n_deals
        for k, v in p.excluded_deals.items():
            _bump(out.excluded_deals, k, v)
        for pl, dct in p.excluded.items():
            e = out.excluded.setdefault(pl, {})
            for k, v in dct.items():
                _bump(e, k, v)
    if parts:
        out.keys = np.concatenate(keys)
        out.players = np.concatenate(players).astype(np.int32)
        out.pack = np.concatenate(pack).astype(np.int32)
        out.share = np.concatenate(share)
        out.game = np.concatenate(game).astype(np.int32)
        out.deal_no = np.concatenate(deal_no).astype(np.int64)
    out.games = sorted(games, key=games.get)
    out.source = source
    out.names = sorted(names, key=names.get)
    out.pack_names = sorted(packs, key=packs.get)
    out.targets = {t: {part: {k: (np.concatenate(v) if v else np.zeros(0, COL_DTYPE.get(k, np.int8)))
                              for k, v in cols.items()} for part, cols in tc.items()} for t, tc in tcols.items()}
    return out


def _arrays(c: MarkedTenCounts, target: str, rank: np.ndarray, pid: np.ndarray,
            seat_player: np.ndarray | None = None) -> TargetArrays:
    """One target's rows with deals renumbered by `rank` (their place in key order) and players by `pid` (local
    id -> sorted name index); decisions (and their candidates) in deal order then play order; plays in the counts'
    deal order then play order.

    `count` and `merge` write a deal's plays and decisions together and in play order, and a decision's candidate
    rows right after it; then ordering the decisions is ordering whole deals by rank, a gather of segments (no sort
    of the rows). Counts in any other order are sorted first (`_sorted_rows`)."""
    from .marked_ten_fit import segment_rows

    n_deals = len(c.keys)
    tc = c.targets.get(target)
    if tc is None:
        z8 = np.zeros(0, np.int8)
        z = np.zeros(0, np.int64)
        tc = {"plays": {k: z8 for k in P_COLS}, "decisions": {k: z8 for k in D_COLS}, "cands": {k: z8 for k in C_COLS}}
        tc["plays"]["deal"] = tc["decisions"]["deal"] = tc["cands"]["dec"] = z
    P, D, C = _sorted_rows(tc["plays"], tc["decisions"], tc["cands"])
    p_off = np.concatenate([[0], np.cumsum(np.bincount(P["deal"], minlength=n_deals))])
    d_off = np.concatenate([[0], np.cumsum(np.bincount(D["deal"], minlength=n_deals))])
    c_off = np.concatenate([[0], np.cumsum(np.bincount(C["dec"], minlength=len(D["deal"])))])
    by_rank = np.empty(n_deals, np.int64)
    by_rank[rank] = np.arange(n_deals)
    perm, _ = segment_rows(d_off, by_rank)  # decisions: deal by deal in key order, each in play order
    crow, c_dec = segment_rows(c_off, perm)  # their candidate rows, decision by decision
    d_src = D["deal"][perm].astype(np.int64)
    d_seat = D["seat"][perm]
    if seat_player is None:
        seat_player = pid[c.players].reshape(-1)  # deal * MAX_SEATS + seat -> sorted player id
    return TargetArrays(
        p_deal=P["deal"], p_order=P["order"], p_seat=P["seat"], p_cell=P["cell"], p_holds=P["holds"], p_off=p_off,
        seat_player=seat_player,
        d_deal=rank[d_src], d_src=d_src, d_order=D["order"][perm], d_seat=d_seat,
        d_player=seat_player[d_src * MAX_SEATS + d_seat], d_kind=D["kind"][perm], d_x=D["x"][perm],
        d_xctx=D["xctx"][perm], d_early=D["early"][perm], d_opening=D["opening"][perm],
        c_dec=c_dec, c_seat=C["seat"][crow], c_u=C["u"][crow], c_nv=C["nv"][crow], c_g=C["g"][crow],
        c_true=C["true"][crow])


def _sorted_rows(P: dict, D: dict, C: dict) -> tuple[dict, dict, dict]:
    """The plays sorted by (deal, play order), the decisions too, and the candidate rows by decision (stable), each
    only if not already so; decisions renumbered in the candidate rows."""
    def ordered(deal: np.ndarray, order: np.ndarray) -> bool:
        key = deal.astype(np.int64) * 4096 + order
        return bool(np.all(key[1:] > key[:-1]))

    if not ordered(P["deal"], P["order"]):
        o = np.lexsort((P["order"], P["deal"]))
        P = {k: v[o] for k, v in P.items()}
    if not ordered(D["deal"], D["order"]):
        o = np.lexsort((D["order"], D["deal"]))
        inv = np.empty(len(o), np.int64)
        inv[o] = np.arange(len(o))
        D = {k: v[o] for k, v in D.items()}
        C = dict(C, dec=inv[C["dec"]])
    if not np.all(C["dec"][1:] >= C["dec"][:-1]):
        o = np.argsort(C["dec"], kind="stable")
        C = {k: v[o] for k, v in C.items()}
    return P, D, C


def llr_table(cells: np.ndarray, holds: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Log likelihood ratio of each (context, outcome) cell: log P(outcome | context, holds the card) -
    log P(outcome | context, does not), from binned field frequencies with add-alpha smoothing."""
    n1 = np.bincount(cells[holds == 1], minlength=N_CTX * N_OUT)
    n0 = np.bincount(cells[holds == 0], minlength=N_CTX * N_OUT)
    return llr_from_counts(n1, n0, alpha)


def llr_from_counts(n1: np.ndarray, n0: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """`llr_table` from the plays' counts per cell, of holders (`n1`) and of the others (`n0`)."""
    n1 = n1.reshape(N_CTX, N_OUT).astype(float)
    n0 = n0.reshape(N_CTX, N_OUT).astype(float)
    p1 = (n1 + alpha) / (n1.sum(1, keepdims=True) + alpha * N_OUT)
    p0 = (n0 + alpha) / (n0.sum(1, keepdims=True) + alpha * N_OUT)
    return np.clip(np.log(p1) - np.log(p0), -LLR_CLIP, LLR_CLIP).ravel()


def _seat_llr_sums(A: TargetArrays, llr: np.ndarray, c_start: np.ndarray | None = None,
                   c_end: np.ndarray | None = None, out: np.ndarray | None = None,
                   ranges: tuple | None = None) -> np.ndarray:
    """For each candidate row, the sum of the LLRs of that seat's plays earlier in the deal (the cards aside: 0),
    clipped to +-3 LLR_CLIP (the feature's range). `ranges`: `marked_ten_fit.play_ranges` of A, if known."""
    from .marked_ten_fit import play_ranges, seat_llr_sums

    if c_start is None:
        c_start, c_end = _dec_bounds(A)
    if out is None:
        out = np.zeros(len(A.c_dec))
    if len(A.c_dec) == 0:
        return out
    lo, hi, first = ranges if ranges is not None else play_ranges(A.p_off, A.p_order, A.d_src, A.d_order)
    return seat_llr_sums(np.asarray(llr, float), lo, hi, first, A.p_seat, A.p_cell, c_start, c_end, A.c_seat,
                         3 * LLR_CLIP, out)


def _dec_bounds(A: TargetArrays) -> tuple[np.ndarray, np.ndarray]:
    """Each decision's candidate rows, c_start:c_end (the rows are grouped by decision, in order)."""
    n = np.bincount(A.c_dec, minlength=len(A.d_deal))
    end = np.cumsum(n)
    return end - n, end


def _design(A: TargetArrays) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's design over the candidate rows is x = (log unknown cards, the seat's LLR sum (clipped), one
    plain void shown, two or more, aside); here its columns but the LLR sum, compactly: log unknown cards, and the
    three flags as bits of a code (1, 2, 4)."""
    from .marked_ten_fit import design

    log_u = np.log(np.maximum(np.arange(int(A.c_u.max(initial=0)) + 2), 1).astype(float))
    return design(A.c_u, A.c_nv, A.c_seat, log_u)


def _group_softmax(eta: np.ndarray, grp: np.ndarray, n_groups: int) -> np.ndarray:
    mx = np.full(n_groups, -np.inf)
    np.maximum.at(mx, grp, eta)
    e = np.exp(eta - mx[grp])
    den = np.bincount(grp, weights=e, minlength=n_groups)
    return e / den[grp]


def fit_clogit(X: np.ndarray, grp: np.ndarray, chosen: np.ndarray, n_groups: int, ridge: float = 1.0,
               init: np.ndarray | None = None, iters: int = 30) -> np.ndarray:
    """Conditional logit (one chosen row per group) by Newton's method with a small ridge towards `init`
    (`marked_ten_fit.newton`, `clogit_pass`)."""
    from .marked_ten_fit import clogit_pass, newton

    k = X.shape[1]
    beta0 = np.zeros(k) if init is None else np.asarray(init, float).copy()
    if len(X) == 0:
        return beta0
    o = np.argsort(grp, kind="stable")  # the groups' rows together (the likelihood does not see their order)
    n = np.bincount(grp, minlength=n_groups)
    end = np.cumsum(n)
    Xo = np.ascontiguousarray(X[o], dtype=float)
    cho = np.asarray(chosen)[o] == 1
    return newton(lambda b, h: clogit_pass(b, Xo, cho, end - n, end, h), beta0, beta0, ridge, iters)[0]


@dataclass
class Blocks:
    """Independent blocks of a randomisation test: per block the statistic's value for every place the card may be
    (`V`), their probabilities (`P`) and which is the truth (`true`). Rows are grouped by block (`grp`)."""

    deal: np.ndarray  # deal index per block
    grp: np.ndarray  # block index per row
    V: np.ndarray
    P: np.ndarray
    true: np.ndarray  # 0/1 per row

    def __len__(self) -> int:
        return len(self.deal)

    def select(self, keep_blocks: np.ndarray) -> "Blocks":
        rows = keep_blocks[self.grp]
        remap = np.cumsum(keep_blocks) - 1
        return Blocks(self.deal[keep_blocks], remap[self.grp[rows]], self.V[rows], self.P[rows], self.true[rows])

    def moments(self) -> tuple[float, float, float]:
        """(observed sum, null mean, null variance)."""
        nb = len(self)
        t = float((self.V * self.true).sum())
        mean_b = np.bincount(self.grp, weights=self.P * self.V, minlength=nb)
        var_b = np.bincount(self.grp, weights=self.P * self.V ** 2, minlength=nb) - mean_b ** 2
        return t, float(mean_b.sum()), float(max(var_b.sum(), 0.0))

    def test(self, phi: float = 1.0) -> dict:
        """Observed sum, null mean, z and the one-sided saddlepoint p-value. `phi` >= 1 widens the null around its
        mean (the deal-level variance guard)."""
        if len(self) == 0:
            return {"deals": 0, "observed": 0.0, "expected": 0.0, "z": 0.0, "p": 1.0, "phi": 1.0}
        t, mean, var = self.moments()
        sd = math.sqrt(var)
        z = (t - mean) / (sd * math.sqrt(phi)) if sd > 1e-12 else 0.0
        t_adj = mean + (t - mean) / math.sqrt(phi)
        p = saddlepoint_sf(t_adj, self.V, self.P, self.grp, len(self))
        return {"deals": int(len(_deal_index(self.deal)[0])), "observed": t, "expected": mean, "z": float(z),
                "p": float(p), "phi": float(phi)}


def saddlepoint_sf(t: float, V: np.ndarray, P: np.ndarray, grp: np.ndarray, nb: int) -> float:
    """P(sum over blocks of X_b >= t), X_b independent, X_b = V[row] with probability P[row] for the rows of block
    b: the Lugannani-Rice saddlepoint approximation (relative accuracy far into the tail), normal near the mean,
    exact at the top of the support. Rows of probability 0 carry no mass and are dropped.

    Near the mean the formula divides by the small w and u, so they are computed to full relative precision: on
    centred values (each block's null mean subtracted, and t by their sum), each block's cumulant generating function
    summed without cancellation (`marked_ten_fit.cgf`), and the saddlepoint polished by one more Newton step once
    K'(s) is within 1e-9 sd of t (u = s sqrt(K''(s)) would otherwise carry the stopping point's error, relative
    1e-9 / z)."""
    from .marked_ten_fit import cgf as block_cgf
    from .marked_ten_fit import group_max

    keep = P > 0
    if not keep.all():
        V, P, grp = V[keep], P[keep], grp[keep]
    V = np.ascontiguousarray(V, dtype=float)
    grp = np.ascontiguousarray(grp, dtype=np.int64)
    P = P / np.bincount(grp, weights=P, minlength=nb)[grp]
    exact = _exact_sf_short(t, V, P, grp, nb)
    if exact is not None:
        return exact
    vmax_b = group_max(V, grp, nb)
    tmax = float(vmax_b.sum())
    spread = float(np.abs(V).max()) if len(V) else 0.0
    if t >= tmax - 1e-9 * max(1.0, spread):
        at_max = np.bincount(grp, weights=P * (V >= vmax_b[grp] - 1e-12), minlength=nb)
        return float(np.exp(np.log(np.maximum(at_max, 1e-300)).sum()))
    mu = np.bincount(grp, weights=P * V, minlength=nb)
    V = V - mu[grp]
    t = t - float(mu.sum())
    vhi = group_max(V, grp, nb)
    vlo = -group_max(-V, grp, nb)
    lin = np.bincount(grp, weights=P * V, minlength=nb)

    def cgf(s: float) -> tuple[float, float, float]:
        return block_cgf(float(s), V, P, grp, nb, vlo, vhi, lin)

    _, mean, var = cgf(0.0)
    if var <= 1e-18:
        return 1.0 if t <= mean + 1e-12 else 0.0
    sd = math.sqrt(var)
    if abs(t - mean) < 1e-3 * sd:
        return float(ndtr(-(t - mean) / sd))
    # K'(s) = t: Newton steps kept inside a bracket that bisection narrows
    lo, hi = (0.0, math.inf) if t > mean else (-math.inf, 0.0)
    s = (t - mean) / var
    for _ in range(200):
        K, k1, k2 = cgf(s)
        if abs(k1 - t) <= 1e-9 * max(sd, 1e-12):
            if k2 > 0:
                s += (t - k1) / k2
            break
        if k1 < t:
            lo = s
        else:
            hi = s
        s_new = s + (t - k1) / max(k2, 1e-300)
        if not lo < s_new < hi:
            if math.isinf(hi):
                s_new = 2 * s if s > 0 else 1.0 / sd
            elif math.isinf(lo):
                s_new = 2 * s if s < 0 else -1.0 / sd
            else:
                s_new = 0.5 * (lo + hi)
        s = s_new
    K, k1, k2 = cgf(s)
    w2 = 2.0 * (s * t - K)
    if w2 <= 0 or k2 <= 0:
        return float(ndtr(-(t - mean) / sd))
    w = math.copysign(math.sqrt(w2), s)
    u = s * math.sqrt(k2)
    if abs(w) < 1e-4 or abs(u) < 1e-8:
        return float(ndtr(-(t - mean) / sd))
    phi = math.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
    p = float(ndtr(-w)) + phi * (1.0 / u - 1.0 / w)
    if t < mean:
        # Below the null mean the result points away from cheating, and there the formula (a lower-tail
        # approximation read as 1 - F) can leave [0, 1] for a short, lumpy sum near its minimum: a sum far below
        # its mean was read as p = 0, a strong flag on an honest player of 14 deals. The one-sided p is taken at
        # least the normal tail there (>= 1/2): conservative, and never a flag.
        p = max(p, float(ndtr(-(t - mean) / sd)))
    return float(min(1.0, max(p, 0.0)))


EXACT_STATES = 1 << 16  # a sum of blocks with at most this many outcomes is summed exactly


def _exact_sf_short(t: float, V: np.ndarray, P: np.ndarray, grp: np.ndarray, nb: int) -> float | None:
    """P(sum >= t) by enumerating every outcome when the blocks have at most EXACT_STATES outcomes together (None
    otherwise). A short, lumpy sum is where the saddlepoint is poorest: measured on random sums of up to five blocks
    of two or three values, it gave a quarter of the exact tail at worst (anti-conservative at the atoms), while
    the enumeration costs at most 65,536 sums."""
    sizes = np.bincount(grp, minlength=nb)
    if nb == 0 or float(np.prod(sizes.astype(float))) > EXACT_STATES:
        return None
    order = np.argsort(grp, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)))
    vals = np.zeros(1)
    probs = np.ones(1)
    for b in range(nb):
        rows = order[starts[b]:starts[b + 1]]
        if len(rows) == 0:
            continue
        vals = (vals[:, None] + V[rows][None, :]).ravel()
        probs = (probs[:, None] * P[rows][None, :]).ravel()
    spread = float(np.abs(V).max()) if len(V) else 0.0
    tol = 1e-9 * max(1.0, spread) * max(1, nb)
    return float(min(1.0, probs[vals >= t - tol].sum()))


def blocks_mc(b: Blocks, rng: np.random.Generator, draws: int = 20000) -> float:
    """Monte-Carlo p-value of the same randomisation test (validates the saddlepoint)."""
    nb = len(b)
    t = float((b.V * b.true).sum())
    total = np.zeros(draws)
    starts = np.searchsorted(b.grp, np.arange(nb))
    ends = np.searchsorted(b.grp, np.arange(nb), side="right")
    for k in range(nb):
        v = b.V[starts[k]:ends[k]]
        p = b.P[starts[k]:ends[k]]
        total += v[rng.choice(len(v), size=draws, p=p / p.sum())]
    return float((1 + np.sum(total >= t - 1e-12)) / (draws + 1))


def _deal_index(deals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(deals, return_inverse=True)`, without the sort when `deals` is sorted (a player's decisions are
    in deal order)."""
    if len(deals) == 0 or np.any(deals[1:] < deals[:-1]):
        u, inv = np.unique(deals, return_inverse=True)
        return u, inv.reshape(-1)
    new = np.concatenate([[True], deals[1:] != deals[:-1]])
    return deals[new], np.cumsum(new) - 1


@dataclass
class TargetScores:
    """One target's scored decisions for every player: the arrays the tests are built from."""

    A: TargetArrays
    w: np.ndarray  # per decision: x - c
    p_soft: np.ndarray  # per candidate row: posterior fitted on the field (other players' folds)
    p_hard: np.ndarray  # per candidate row: unknown cards and voids only
    G_soft: np.ndarray  # per decision: posterior mean of g
    G_hard: np.ndarray
    c_start: np.ndarray
    c_end: np.ndarray
    by_player: dict[int, np.ndarray]  # player -> decision indexes sorted by deal then play order
    diag: dict

    def blocks(self, sel: np.ndarray, hard: bool = False) -> Blocks:
        """Every decision of `sel` its own block, with the posterior at that decision (places where g is the same
        merged: `marked_ten_fit.decision_blocks`)."""
        A = self.A
        if len(sel) == 0:
            z = np.zeros(0)
            return Blocks(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, np.zeros(0, np.int64))
        from .marked_ten_fit import decision_blocks

        grp, V, P, true = decision_blocks(np.asarray(sel, np.int64), self.c_start, self.c_end, self.w, A.c_g,
                                          A.c_true, self.p_hard if hard else self.p_soft)
        return Blocks(A.d_deal[sel], grp, V, P, true)

    def dec_moments(self, hard: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Per decision, g at the card's true place and the posterior variance of g (computed once, over every
        player's decisions)."""
        key = "dec_moments_hard" if hard else "dec_moments"
        got = self.diag.get(key)
        if got is None:
            A = self.A
            G = self.G_hard if hard else self.G_soft
            P = self.p_hard if hard else self.p_soft
            gtrue = np.bincount(A.c_dec, weights=A.c_g * A.c_true, minlength=len(A.d_deal))
            dev2 = np.bincount(A.c_dec, weights=P * (A.c_g - G[A.c_dec]) ** 2, minlength=len(A.d_deal))
            got = self.diag[key] = (gtrue, dev2)
        return got

    def deal_sums(self, sel: np.ndarray, hard: bool = False) -> tuple[np.ndarray, float]:
        """Per deal, the sum of the decision scores (x - c)(g(true) - E g), and the model variance of their sum."""
        A = self.A
        G = self.G_hard if hard else self.G_soft
        gtrue, dev2 = self.dec_moments(hard)
        inc = self.w[sel] * (gtrue[sel] - G[sel])
        S = np.bincount(_deal_index(A.d_deal[sel])[1], weights=inc)
        return S, float((self.w[sel] ** 2 * dev2[sel]).sum())

    def field_variance(self, hard: bool = False) -> dict[int, tuple[float, float]]:
        """Per player: (sum of squared deal sums, model variance of their total)."""
        out = {}
        for pl, sel in self.by_player.items():
            S, vm = self.deal_sums(sel, hard)
            out[pl] = (float((S ** 2).sum()), vm)
        return out

    def phi(self, pl: int, hard: bool = False) -> float:
        """The deal-level variance guard for player `pl`: max(1, the field's ratio of the empirical variance of the
        deal sums to the model's), the field taken without `pl` (a cheater's own deals, whose decisions share the
        Ten's place, must not widen his null)."""
        key = "fv_hard" if hard else "fv_soft"
        fv = self.diag.get(key)
        if fv is None:
            fv = self.diag[key] = self.field_variance(hard)
            self.diag[key + "_tot"] = (sum(a for a, _ in fv.values()), sum(b for _, b in fv.values()))
        ea, mb = self.diag[key + "_tot"]
        a, b = fv.get(pl, (0.0, 0.0))
        if mb - b <= 0:
            return 1.0
        return max(1.0, (ea - a) / (mb - b))

    def test(self, sel: np.ndarray, hard: bool = False, phi: float = 1.0) -> dict:
        """The test of the decisions `sel`: sequential randomisation blocks, saddlepoint p, null widened by the
        variance guard `phi`."""
        return self.blocks(sel, hard).test(phi)


def score_target(A: TargetArrays, n_players: int, fold_of: np.ndarray, folds: int,
                 center: np.ndarray | None = None) -> TargetScores:
    """Fit the holder model and the posterior fold by fold (a player's decisions are scored by the model fitted on
    the other folds) and return the scored decisions. `center`: per decision, the c_t subtracted from x.

    Per fold: the holder model's counts are the whole field's minus the fold's own (the same integers as counting
    the other folds' plays), the seat LLR sums one pass over the deals (`marked_ten_fit.seat_llr_sums`), the
    conditional logit fitted by Newton's method over the other folds' decisions (`marked_ten_fit.clogit_pass5`;
    started from the previous fold's fit: the same optimum, the fits of folds being close) and the posterior
    computed for the fold's own decisions."""
    from .marked_ten_fit import (
        chosen_rows,
        clogit_pass5,
        clogit_probs5,
        decision_sums,
        holder_counts,
        newton,
        play_ranges,
    )

    n_dec = len(A.d_deal)
    diag: dict = {"decisions": int(n_dec), "fits": []}
    p_soft = np.zeros(len(A.c_dec))
    c_start, c_end = _dec_bounds(A)
    dec_fold = fold_of[A.d_player] if n_dec else np.zeros(0, np.int64)
    nf = max(folds, 1)
    cnt = holder_counts(A.p_deal, A.p_seat, A.p_cell, A.p_holds, A.seat_player, MAX_SEATS, fold_of,
                        nf if folds > 1 else 1, N_CTX * N_OUT)
    total = cnt.sum(0)
    x0, code = _design(A)
    c_pos = chosen_rows(c_start, c_end, A.c_true == 1)
    ranges = play_ranges(A.p_off, A.p_order, A.d_src, A.d_order)
    s = np.zeros(len(A.c_dec))
    init = np.array([1.0, 0.5, 0.0, 0.0, 0.0])
    start = init
    for k in range(nf):
        if folds > 1:
            tr_d, te_d = dec_fold != k, dec_fold == k
            n1, n0 = total[1] - cnt[k, 1], total[0] - cnt[k, 0]
        else:
            tr_d = te_d = np.ones(n_dec, bool)
            n1, n0 = total[1], total[0]
        if not te_d.any():
            continue
        _seat_llr_sums(A, llr_from_counts(n1, n0), c_start, c_end, s, ranges)
        beta = init.copy()
        if tr_d.any():
            beta, ok = newton(lambda b, h: clogit_pass5(b, x0, s, code, c_pos, c_start, c_end, tr_d, h), init,
                              start, 1.0, 30)
            start = beta if ok else init
        diag["fits"].append([round(float(b), 4) for b in beta])
        clogit_probs5(beta, x0, s, code, c_start, c_end, te_d, p_soft)
    p_hard, G_soft, G_hard, gtrue, dev_soft, dev_hard = decision_sums(c_start, c_end, A.c_u, A.c_g, A.c_true, p_soft)
    diag["dec_moments"], diag["dec_moments_hard"] = (gtrue, dev_soft), (gtrue, dev_hard)
    w = A.d_x.astype(float) - (center if center is not None else 0.0)
    # decisions are in deal then play order: grouping them by player (stably) keeps that order within a player
    order = np.argsort(A.d_player, kind="stable")
    bounds = np.searchsorted(A.d_player[order], np.arange(n_players + 1))
    by_player = {pl: order[bounds[pl]:bounds[pl + 1]] for pl in range(n_players) if bounds[pl + 1] > bounds[pl]}
    return TargetScores(A, w, p_soft, p_hard, G_soft, G_hard, c_start, c_end, by_player, diag)


def last_decision_crt(ts: TargetScores, sel: np.ndarray) -> Blocks:
    """The alternative design: one block per deal, the card's place redrawn from the posterior at the player's last
    scored decision of the deal (a conditional randomisation test of the whole deal). Measured in
    `auditor.calibrate_play`: valid but conservative (the posterior at the last decision carries the model's
    errors on everything played since the earlier decisions), so it is not the primary statistic."""
    A = ts.A
    deals, grp, V, Pl, tr = [], [], [], [], []
    if len(sel):
        dd = A.d_deal[sel]
        cuts = np.nonzero(np.diff(dd))[0] + 1
        for part in np.split(sel, cuts):
            last = part[-1]
            a, b = ts.c_start[last], ts.c_end[last]
            seats = A.c_seat[a:b].tolist()
            vals = np.zeros(b - a)
            for t in part:
                gmap = dict(zip(A.c_seat[ts.c_start[t]:ts.c_end[t]].tolist(),
                                A.c_g[ts.c_start[t]:ts.c_end[t]].tolist()))
                for k, j in enumerate(seats):
                    vals[k] += ts.w[t] * gmap.get(j, 0)
            blk = len(deals)
            deals.append(int(A.d_deal[last]))
            grp += [blk] * (b - a)
            V += vals.tolist()
            Pl += ts.p_soft[a:b].tolist()
            tr += A.c_true[a:b].tolist()
    return Blocks(np.asarray(deals, np.int64), np.asarray(grp, np.int64), np.asarray(V, float),
                  np.asarray(Pl, float), np.asarray(tr, np.int64))


def znorm(S: np.ndarray) -> tuple[float, float]:
    """Self-normalised sum Z = sum S / sqrt(sum S^2) and its one-sided p-value from N(0, 1)."""
    ss = float((S * S).sum())
    if ss <= 0:
        return 0.0, 1.0
    z = float(S.sum() / math.sqrt(ss))
    return z, float(ndtr(-z))


def score_all(counts: MarkedTenCounts, folds: int = 5, targets: Sequence[str] = TARGETS) -> dict:
    order = np.argsort(counts.keys, kind="stable")  # equal keys: identical deals
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    players = sorted(counts.names)
    where = {p: i for i, p in enumerate(players)}
    pid = np.array([where[p] for p in counts.names] + [-1], np.int64)
    fold_of = np.array([_fold_of(p, folds) for p in players], dtype=np.int64)
    # per deal in key order: its pack; per player: the sum and count of his points share (his results)
    pack = counts.pack[order]
    seated = counts.players >= 0
    who = pid[counts.players[seated]]
    share_sum = np.bincount(who, weights=counts.share[seated].astype(float), minlength=len(players))
    share_n = np.bincount(who, minlength=len(players))
    out: dict = {"players": players, "pack": pack, "pack_names": counts.pack_names, "share_sum": share_sum,
                 "share_n": share_n, "targets": {}, "order": order, "counts": counts}
    # centring: the field's mean x per decision context, fold by fold (x is the same for every target: taken
    # from the Ten's decisions)
    seat_player = pid[counts.players].reshape(-1)
    A_ten = _arrays(counts, "ten", rank, pid, seat_player)
    nf = max(folds, 1)
    xsum = np.zeros((nf, N_XCTX))
    xcnt = np.zeros((nf, N_XCTX))
    dec_fold = fold_of[A_ten.d_player] if len(A_ten.d_player) else np.zeros(0, dtype=np.int64)
    for k in range(nf):
        tr = dec_fold != k if folds > 1 else np.ones(len(A_ten.d_x), bool)
        xsum[k] = np.bincount(A_ten.d_xctx[tr], weights=A_ten.d_x[tr].astype(float), minlength=N_XCTX)
        xcnt[k] = np.bincount(A_ten.d_xctx[tr], minlength=N_XCTX)
    for t in targets:
        A = A_ten if t == "ten" else _arrays(counts, t, rank, pid, seat_player)
        fk = fold_of[A.d_player] if (folds > 1 and len(A.d_player)) else np.zeros(len(A.d_deal), dtype=np.int64)
        n_ctx = xcnt[fk, A.d_xctx]
        center = np.where(n_ctx > 0, xsum[fk, A.d_xctx] / np.maximum(n_ctx, 1), 0.0)
        out["targets"][t] = score_target(A, len(players), fold_of, folds, center)
    return out


def results_from_scores(scores: dict, counts: MarkedTenCounts, min_deals: int = MIN_DEALS,
                        details: bool = True) -> list[TestResult]:
    from .field import field_compare

    players = scores["players"]
    main: TargetScores | None = scores["targets"].get("ten")
    if main is None:
        return []
    A = main.A
    share_sum, share_n = scores["share_sum"], scores["share_n"]
    rows: dict[str, dict] = {}
    for pl, sel in main.by_player.items():
        n_deals = len(_deal_index(A.d_deal[sel])[0])
        if n_deals < min_deals:
            continue
        phi = main.phi(pl)
        rows[players[pl]] = {"sel": sel, "pl": pl, "test": main.test(sel, phi=phi), "deals": n_deals, "phi": phi}
    zs = {n: r["test"]["z"] for n, r in rows.items()}
    fc = field_compare(zs, {n: r["deals"] for n, r in rows.items()},
                       {n: float(share_sum[r["pl"]] / max(share_n[r["pl"]], 1)) for n, r in rows.items()})
    out: list[TestResult] = []
    for name in sorted(rows):
        r = rows[name]
        sel, pl, main_t, phi = r["sel"], r["pl"], r["test"], r["phi"]
        controls: dict[str, Any] = {}
        S, _ = main.deal_sums(sel)
        zm, pm = znorm(S)
        controls["deal_sums_normal"] = {"z": zm, "p": pm}
        controls["hard_facts_null"] = _ctl(main.test(sel, hard=True, phi=main.phi(pl, hard=True)))
        opening = sel[A.d_opening[sel] == 1]
        controls["opening_leads_exact"] = _ctl(main.test(opening, hard=True))
        early = A.d_early[sel] == 1
        controls["early"] = _ctl(main.test(sel[early], phi=phi))
        controls["late"] = _ctl(main.test(sel[~early], phi=phi))
        # a sure read shows from the first trick; reading the legal signals builds up as the play goes on
        ze, zl = controls["early"]["z"], controls["late"]["z"]
        controls["early_minus_late"] = {"z": (ze - zl) / math.sqrt(2), "note": "z(early) - z(late), over sqrt(2)"}
        for t in ("queen", "plain_ten", "placebo"):
            ts: TargetScores | None = scores["targets"].get(t)
            tsel = ts.by_player.get(pl) if ts is not None else None
            if tsel is None or len(tsel) == 0:
                controls[t] = {"z": None, "p": None, "deals": 0, "card": TARGET_LABEL[t]}
                continue
            controls[t] = _ctl(ts.test(tsel, phi=ts.phi(pl))) | {"card": TARGET_LABEL[t]}
        pk = scores["pack"][A.d_deal[sel]]
        packs = sorted(set(np.unique(pk).tolist()) - {-1}, key=lambda k: scores["pack_names"][k])
        if packs:
            controls["packs"] = {scores["pack_names"][k]: _ctl(main.test(sel[pk == k], phi=phi)) for k in packs}
            if len(packs) >= 2:
                controls["pack_contrast"] = _pack_contrast(main, sel, pk, packs, scores["pack_names"], phi)
        controls["field"] = fc.get(name, {})
        if details:
            top = _top_deals(main, sel, scores)
        detail = {"decisions": int(len(sel)), "deals": r["deals"], "variance_guard": phi,
                  "excluded": dict(sorted(counts.excluded.get(name, {}).items())),
                  "deals_excluded_in_input": dict(sorted(counts.excluded_deals.items())),
                  "top_deals": top, "timeline": _deal_timeline(main, sel, phi, scores)} if details else {}
        out.append(TestResult(
            test=NAME, subject=name, n=r["deals"], observed=main_t["observed"], expected=main_t["expected"],
            statistic=main_t["z"], pvalue=main_t["p"],
            method="decision fit to the Ten's place vs a field-fitted posterior of what he knew; sequential "
                   "randomisation, saddlepoint one-sided p, deal-level variance guard",
            controls=controls, detail=detail))
    return out


def input_rank(scores: dict) -> np.ndarray:
    """Per deal (in key order), its place in the input: its `source` ("path:line"; simulated deals "game#deal")
    read as (path, line), ties and unreadable sources by key order. The counts keep no file index, so files are
    taken in the order of their paths (one file, or files named in date order: the input order)."""
    got = scores.get("input_rank")
    if got is None:
        src = scores["counts"].source
        heads, lines = _source_places(src)
        order = scores["order"]
        perm = np.lexsort((np.arange(len(order)), lines[order], heads[order])) if len(order) else order
        got = np.empty(len(order), np.int64)
        got[perm] = np.arange(len(order))
        scores["input_rank"] = got
    return got


def _source_places(src: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(rank of the path among the sorted paths, line) of each "path:line" (or "name#number"); -1 as the line when
    the source ends in neither."""
    n = len(src)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    parts = [s.rpartition(":") for s in src]
    tails = np.array([p[2] for p in parts])
    ok = np.char.isdigit(tails) & np.array([bool(p[1]) for p in parts])
    heads = [p[0] if good else s for p, s, good in zip(parts, src, ok.tolist())]
    lines = np.full(n, -1, np.int64)
    if ok.any():
        lines[ok] = tails[ok].astype(np.int64)
    for j in np.flatnonzero(~ok).tolist():  # rare: simulated deals, hand-made sources
        head, sep, tail = src[j].rpartition("#")
        if sep and tail.isdigit():
            heads[j], lines[j] = head, int(tail)
    rank_of_head = {h: k for k, h in enumerate(sorted(set(heads)))}
    return np.array([rank_of_head[h] for h in heads], np.int64), lines


def _deal_timeline(main: TargetScores, sel: np.ndarray, phi: float, scores: dict) -> list[list]:
    """The primary test over the player's scored deals in input order: per deal, observed = sum of (x - c) g(true
    place) over his decisions, expected = sum of (x - c) E g under the posterior (their difference is the deal sum
    S_d), variance = sum of (x - c)^2 Var g; cumulated, the variance widened by the guard `phi` as the test is. The
    last point is the test's (deals, observed, expected, variance)."""
    A = main.A
    gtrue, dev2 = main.dec_moments()
    if len(sel) == 0:
        return []
    w = main.w[sel]
    deals, inv = _deal_index(A.d_deal[sel])
    obs = np.bincount(inv, weights=w * gtrue[sel], minlength=len(deals))
    exp_ = np.bincount(inv, weights=w * main.G_soft[sel], minlength=len(deals))
    var = np.bincount(inv, weights=w ** 2 * dev2[sel], minlength=len(deals))
    o = np.argsort(input_rank(scores)[deals], kind="stable")
    return timeline(obs[o], exp_[o], variance=np.cumsum(var[o]) * phi, counts=False)


def _top_deals(main: TargetScores, sel: np.ndarray, scores: dict, k: int = 10) -> list[dict]:
    """The k deals whose decisions fit the Ten's true place most beyond what he knew (largest per-deal sum of
    (x - c)(g(true) - E g)); equal sums (to 1e-12: deals whose decisions carry nothing, or the same decisions) in
    key order, so that rounding in the sums does not reorder them."""
    A = main.A
    S, _ = main.deal_sums(sel)
    deals, inv = _deal_index(A.d_deal[sel])
    n_dec = np.bincount(inv, minlength=len(deals))
    c = scores["counts"]
    out = []
    for j in np.argsort(-np.round(S, 12), kind="stable")[:k]:
        orig = int(scores["order"][deals[j]])
        out.append({"game_id": c.games[int(c.game[orig])], "deal_no": int(c.deal_no[orig]),
                    "source": c.source[orig], "contribution": float(S[j]),
                    "what": f"{int(n_dec[j])} decision(s) fit the Ten's place {round(S[j], 2) + 0.0:+.2f} beyond what "
                            "they knew"})  # + 0.0: a sum of -1e-17 (rounding) reads +0.00, not -0.00
    return out


def _pack_contrast(main: TargetScores, sel: np.ndarray, pk: np.ndarray, packs: list[int], names: list[str],
                   phi: float) -> dict:
    """The pack whose decisions fit the Ten best against the others: z = (z_best - mean z_others) /
    sqrt(1 + 1/(K-1)) over K packs (the packs' deals are disjoint, so their z are independent), p = K * Phi(-z)
    (which pack is marked is not known in advance; with two packs this is the exact two-sided p). A marked pack shows
    the effect and the other does not (the seeds' advice: two packs); skill shows with every pack."""
    zs = []
    for k in packs:
        t, mean, var = main.blocks(sel[pk == k]).moments()
        zs.append(((t - mean) / math.sqrt(var * phi) if var > 0 else 0.0, k))
    z_best, k_best = max(zs)
    others = [z for z, k in zs if k != k_best]
    K = len(zs)
    z = (z_best - sum(others) / len(others)) / math.sqrt(1 + 1 / (K - 1))
    return {"pack": names[k_best], "z": float(z), "p": float(min(1.0, K * ndtr(-z)))}


def _ctl(t: dict) -> dict:
    return {"z": t["z"], "p": t["p"], "deals": t["deals"], "observed": t["observed"], "expected": t["expected"]}
