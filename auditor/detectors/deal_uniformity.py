"""`deal_uniformity`: per dealer, where the trump honours land relative to him, and `dealer_cutter`: per ordered
pair (dealer, cutter), the trump honours dealt to the dealer.

`deal_uniformity` tabulates, over a dealer's deals, each trump honour (Scotch Whist T J Q K A; All Fours also the
2, the sure Low) by location class: the dealer, the eldest and each other seat relative to the dealer, the turn-up
itself, and the cards not dealt (aside, dead, the All Fours stock). The expected count of every cell is exact (the
sum over his deals of each configuration's rule-derived probability, `auditor.facts.location_probs`). The statistic
is Pearson's X² over the cells; its null distribution is simulated deal by deal under each deal's own
configuration (a uniform shuffle), with the sequential Monte-Carlo p-value of Besag & Clifford (1991): stop once
`h` simulated statistics reach the observed one (p = h / l after l draws), else p = (g + 1) / (L + 1) after the
cap L = 2 m / fdr for a family of m (so a lone strong cheat can reach half the threshold fdr / m; fdr is the
test's share of the audit's level). The p-value is one-sided in X² (a dealer whose table is *more* uneven than chance); it catches stacking of
any honour to any seat, not only the Jack to the dealer (which `dealer_jack` tests with more power). Two ways
spare most of that Monte Carlo (issue 15): a table far beyond it gets the closed-form likelihood-ratio bound
(`lr_pvalue`), and a dealer who has not stopped after `IS_AFTER` draws gets Harrison's importance-sampling
p-value (`is_pvalue`) from `IS_DRAWS` seasons of a proposal that tilts one cell at a time, instead of the
Besag-Clifford draws that would run to about 10 / p or to the cap.

`dealer_cutter` (subject "dealer+cutter", tables of 3 or more players): the deals that cutter cut for that dealer in
which the dealer was dealt the Jack of trumps, against each deal's exact null (Scotch Whist: `dealer_jack`'s;
All Fours: `af_dealer_jack`'s), an exact one-sided Poisson-binomial test: a stacked pack survives only a friendly
cut. The event is the one card a stack moves (issue 14: counting all five trump honours diluted it about three
times), and at two players the cutter is the dealer's one opponent on every deal, so the pair would only repeat the
dealer's own test (and filled the family with such pairs): those deals are not counted. Control (in no family): the
same dealer with every other cutter — a dealer high with one cutter only is the interaction. Pairs with fewer than
`min_deals` deals are not tested (they cannot carry evidence and would only dilute the family).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator, Sequence

import numba
import numpy as np
from scipy.special import chdtrc

from ..cards import RJ, cards_of
from ..columns import TIME_NONE, AuditColumns
from ..facts import (
    MAX_SEATS,
    N_CLASSES,
    TURNUP,
    UNDEALT,
    Config,
    DealingFacts,
    facts_from_columns,
    honour_ranks,
    held_prob,
    location_probs,
)
from ..stats import exact, scipy_stats
from ..stats.family import TestResult
from .af_dealer_jack import dealt_probs as af_dealt_probs
from .af_dealer_jack import trial_deals as af_trial_deals
from .base import (
    MIN_DETECTABLE_POWER,
    Timeline,
    TrialSummary,
    control,
    funnel,
    merge_summaries,
    merge_summaries_into,
    pb_result,
    points_many,
    shard_of,
    subject_rng,
    summarise,
)
from .spec import TestSpec

COLS = (8, 9, 10, 11, 12, 0)  # table columns: trump T J Q K A, and the 2 (All Fours)
RANK_NAMES = ("T", "J", "Q", "K", "A", "2")
MC_H = 10  # exceedances before the sequential Monte Carlo stops
MC_MAX = None  # cap on simulated seasons per subject: by default 2 m / fdr (2,000 to 200,000), so that the
# smallest attainable p, about fdr / (2 m), lets a lone strong cheat be flagged in a family of m; `fdr` is the
# test's part of the audit's budget (issue 11: 0.005 at the default level), hence 24,000 draws for 60 dealers


def _class_names(n_max: int) -> list[str]:
    names = ["dealer", "eldest"] + [f"dealer+{k}" for k in range(2, MAX_SEATS)]
    return names[:MAX_SEATS] + ["turn_up", "undealt"]


# ---------------------------------------------------------------- counting


@dataclass
class UniformityCounts:
    """One dealer's bounded counts: per configuration he dealt (`configs`), his number of deals `deals[c]` and the
    table `obs[c]` [N_CLASSES, 6] of his honours by location class (ranks padded to the All Fours six); and the
    `Timeline` of the honours dealt to himself. The X² statistic, its Monte-Carlo null (which depends only on each
    configuration and its number of deals) and every detail are functions of these alone."""

    configs: list[Config] = field(default_factory=list)
    deals: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    obs: np.ndarray = field(default_factory=lambda: np.zeros((0, N_CLASSES, 6), np.int64))
    timeline: Timeline = field(default_factory=Timeline)

    def __len__(self) -> int:
        return int(self.deals.sum())

    def by_cfg(self) -> dict[Config, tuple[int, np.ndarray]]:
        """{config: (deals, obs table)} in `canonical_cfgs` order."""
        return canonical_cfgs({c: (int(d), o) for c, d, o in zip(self.configs, self.deals.tolist(), self.obs,
                                                                    strict=True)})

    @staticmethod
    def merge(parts: Sequence["UniformityCounts"]) -> "UniformityCounts":
        parts = [p for p in parts if len(p.configs)]
        if len(parts) == 1:
            return parts[0]
        index: dict[Config, int] = {}
        for p in parts:
            for c in p.configs:
                index.setdefault(c, len(index))
        deals = np.zeros(len(index), np.int64)
        obs = np.zeros((len(index), N_CLASSES, 6), np.int64)
        for p in parts:
            at = np.array([index[c] for c in p.configs], np.int64)
            np.add.at(deals, at, p.deals)
            np.add.at(obs, at, p.obs)
        return UniformityCounts(list(index), deals, obs, Timeline.merge([p.timeline for p in parts]))


def canonical_cfgs(by_cfg: dict) -> dict:
    """A subject's configurations in a fixed order (by the configuration itself, not by first appearance), so that
    Monte-Carlo draws and sums do not depend on how the input was split before counting."""
    return dict(sorted(by_cfg.items(), key=lambda kv: repr(kv[0])))


def facts_time(facts: DealingFacts, rows: np.ndarray) -> np.ndarray:
    """The deals' times (TIME_NONE where the facts carry none: generated deals)."""
    if len(facts.time) == len(facts):
        return facts.time[rows]
    return np.full(len(rows), TIME_NONE, np.int64)


def honour_locations(facts: DealingFacts) -> tuple[np.ndarray, np.ndarray]:
    """(deals, loc [k, 6]): the deals whose dealt hands are known, and each trump honour's location class in the
    table column of its rank (`COLS`; -1 where the game has no such honour)."""
    rows = np.flatnonzero(facts.hands_known)
    loc = np.full((len(rows), 6), -1, np.int64)
    if not len(rows):
        return rows, loc
    trump = facts.trump[rows].astype(np.int64)
    af = facts.game[rows] == 1
    turnup = facts.turnup[rows].astype(np.int64)
    for col, r in enumerate(COLS):
        card = trump * 13 + r
        h = facts.holder[rows, card].astype(np.int64)
        cls = np.where(h < 0, UNDEALT, h)
        cls = np.where(card == turnup, TURNUP, cls)
        loc[:, col] = cls if r != 0 else np.where(af, cls, -1)
    return rows, loc


def _uniformity_counts(facts: DealingFacts) -> dict[str, UniformityCounts]:
    """{dealer: UniformityCounts} of the deals whose dealt hands are known (one bincount over (dealer, config,
    class, rank)); the per-deal arrays live only here."""
    out: dict[str, UniformityCounts] = {}
    if len(facts) == 0:
        return out
    rows, loc = honour_locations(facts)
    if not len(rows):
        return out
    C = len(facts.configs)
    dealer = facts.seat_player[rows, 0].astype(np.int64)
    cfg = facts.cfg[rows].astype(np.int64)
    P = len(facts.players)
    sc = dealer * C + cfg
    deals = np.bincount(sc, minlength=P * C).reshape(P, C)
    ok = loc >= 0
    cell = (sc[:, None] * N_CLASSES + np.where(ok, loc, 0)) * 6 + np.arange(6)[None, :]
    table = np.bincount(cell[ok], minlength=P * C * N_CLASSES * 6).reshape(P, C, N_CLASSES, 6)
    # the dealer's own honours (the turn-up too when he owns it) and their expectation, per deal
    e_own = np.array([_own_expected(c) for c in facts.configs])
    owns = np.array([c.turnup_owner == 0 for c in facts.configs])
    got = ((loc == 0) | ((loc == TURNUP) & owns[cfg][:, None])).sum(axis=1)
    time = facts_time(facts, rows)
    tab = facts.table[rows]
    o = np.argsort(dealer, kind="stable")
    cuts = np.flatnonzero(np.diff(dealer[o])) + 1
    for seg in np.split(o, cuts):
        pi = int(dealer[seg[0]])
        used = np.flatnonzero(deals[pi])
        tl = Timeline.of(facts.tables, tab[seg], time[seg], got[seg], e_own[cfg[seg]])
        out[facts.players[pi]] = UniformityCounts([facts.configs[int(c)] for c in used], deals[pi, used],
                                                  table[pi, used], tl)
    return out


def _merge_counts(parts: Sequence[dict]) -> dict:
    acc: dict[str, list[UniformityCounts]] = {}
    for part in parts:
        for subj, c in part.items():
            acc.setdefault(subj, []).append(c)
    return {s: UniformityCounts.merge(v) for s, v in acc.items()}


# ---------------------------------------------------------------- the X² table and its simulation


def _expected(cfg: Config) -> np.ndarray:
    """[N_CLASSES, H] exact probabilities of each honour's location class for one deal of `cfg`."""
    lp = location_probs(cfg)
    ranks = honour_ranks(cfg.game)
    return np.array([[float(lp[c][r]) for r in ranks] for c in range(N_CLASSES)])


def _table(by_cfg: dict[Config, tuple]) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts, [N_CLASSES, 6] (ranks padded to the All Fours six), from {config: (deals,
    observed table)} in canonical order (the expected sums add in that order)."""
    obs = np.zeros((N_CLASSES, 6))
    exp_ = np.zeros((N_CLASSES, 6))
    for cfg, (D, table) in by_cfg.items():
        cols = _cols(cfg)
        e = _expected(cfg)
        obs += table
        for j, col in enumerate(cols):
            exp_[:, col] += e[:, j] * D
    return obs, exp_


def _own_expected(cfg: Config) -> float:
    """Expected honours dealt to the dealer in one deal of `cfg` (the turn-up too when he owns it)."""
    e = _expected(cfg)
    return float(e[0].sum() + (e[TURNUP].sum() if cfg.turnup_owner == 0 else 0.0))


def _n_deals(v) -> int:
    """The number of deals of a configuration's entry: an int, or (deals, ...) with deals an int or an array of
    one row per deal."""
    if isinstance(v, tuple):
        v = v[0]
    return int(v) if np.ndim(v) == 0 else len(v)


def _cols(cfg: Config) -> list[int]:
    return [COLS.index(r) for r in honour_ranks(cfg.game)]


def _x2(obs: np.ndarray, exp_: np.ndarray) -> float:
    m = exp_ > 0
    return float((((obs - exp_) ** 2)[m] / exp_[m]).sum())


def _df(mask: np.ndarray) -> int:
    """X²'s degrees of freedom: the cells with an expectation, less one per honour rank that has any."""
    return int(mask.sum() - mask.any(axis=0).sum())


@lru_cache(maxsize=256)
def _null_plan(cfg: Config) -> tuple[np.ndarray, tuple[tuple[int, tuple[int, ...]], ...], np.ndarray]:
    """The per-deal null of one configuration, grouped by what the turn-up decides: (probabilities of the
    turn-up types, the types as (table column of the turned honour or -1, table columns of the trump honours in
    the pack and not turned), deck slots other than the turn-up's per location class)."""
    ranks = honour_ranks(cfg.game)
    cols = _cols(cfg)
    pack = cards_of(cfg.pack)
    types: dict[tuple[int, tuple[int, ...]], int] = {}
    for c in pack:
        suit, rank = divmod(int(c), 13)
        turned = next((cols[j] for j, r in enumerate(ranks) if r == rank), -1)
        rest = tuple(cols[j] for j, r in enumerate(ranks)
                     if r != rank and (cfg.pack >> (suit * 13 + r)) & 1)
        key = (turned, rest)
        types[key] = types.get(key, 0) + 1
    keys = tuple(sorted(types))
    probs = np.array([types[k] for k in keys], dtype=float) / len(pack)
    slots = np.bincount([c for k, c in enumerate(cfg.slot_class) if k != cfg.turnup_index], minlength=N_CLASSES)
    return probs, keys, slots


INVERSION_MEAN = 30.0  # a binomial whose smaller side has mean n min(q, 1 - q) at most this is drawn by inversion
# (`binomial_draw`), a larger one by numpy's own algorithm (the bound numpy's `binomial` itself switches at)


@dataclass(frozen=True)
class Chain:
    """The binomial chain of the multinomials with probabilities p [S, C] (`chain_of`), per category c < C - 1 and
    state s [C - 1, S]: `q`, the chance of c among the categories from c on; for the inversion its smaller side
    lo = min(q, 1 - q), log1p(-lo) and lo / (1 - lo), computed once per stage (`_stage_chains`)."""

    q: np.ndarray
    lo: np.ndarray
    l1m: np.ndarray
    ratio: np.ndarray


def chain_of(p: np.ndarray) -> Chain:
    """`Chain` of the multinomials with probabilities p [S, C]."""
    mass = np.ones(p.shape[0])
    qs = []
    for c in range(p.shape[1] - 1):
        qs.append(np.clip(np.divide(p[:, c], mass, out=np.zeros_like(mass), where=mass > 0), 0.0, 1.0))
        mass = mass - p[:, c]
    q = np.array(qs, dtype=float).reshape(p.shape[1] - 1, p.shape[0])
    lo = np.minimum(q, 1.0 - q)  # at most 1/2: its logs and ratio are finite
    l1m = np.array([math.log1p(-x) for x in lo.ravel()]).reshape(lo.shape)  # libm's, as the kernel's
    return Chain(q, lo, l1m, lo / (1.0 - lo))


def binomial_draw(n: int, q: float, lo: float, l1m: float, ratio: float, rng: np.random.Generator) -> int:
    """One Binomial(n, q) draw (lo, l1m, ratio: `Chain`'s), the spec of `_binomial_kernel`: none (no random number
    drawn) when n or q is 0, n when q is 1; by inversion when n lo <= INVERSION_MEAN: one uniform u, then k the
    smallest count of the smaller side whose cumulative pmf reaches u (the pmf from (1 - lo)^n by the ratio of
    consecutive terms, as numpy's inversion; n - k when q > 1/2); else numpy's `binomial` (BTPE). Exact in
    distribution up to the doubles' rounding, as numpy's. Issue 15, speed: numpy's per-element draws cost about
    95 ns each, this kernel's about 40."""
    if n <= 0 or q <= 0.0:
        return 0
    if q >= 1.0:
        return n
    if n * lo > INVERSION_MEAN:
        return int(rng.binomial(n, q))
    pk = math.exp(n * l1m)
    u = rng.random()
    k = 0
    cdf = pk
    while u > cdf and k < n:
        pk = pk * (float(n - k) * ratio / float(k + 1))
        k += 1
        cdf += pk
    return n - k if q > 0.5 else k


def multinomial_spec(n: np.ndarray, chain: Chain, rng: np.random.Generator) -> np.ndarray:
    """The spec of `_multinomial`: multinomial counts [B, S, C] of n [B, S] trials, per (b, s) in row order one
    `binomial_draw` per category of the chain, of the trials not yet placed."""
    B, S = n.shape
    C1 = chain.q.shape[0]
    out = np.zeros((B, S, C1 + 1), dtype=np.int64)
    for b in range(B):
        for s in range(S):
            left = int(n[b, s])
            for c in range(C1):
                k = binomial_draw(left, float(chain.q[c, s]), float(chain.lo[c, s]), float(chain.l1m[c, s]),
                                  float(chain.ratio[c, s]), rng)
                out[b, s, c] = k
                left -= k
            out[b, s, C1] = left
    return out


def _multinomial(n: np.ndarray, chain: Chain, rng: np.random.Generator) -> np.ndarray:
    """Multinomial counts [B, S, C] of n [B, S] trials with the probabilities whose binomial chain is `chain`
    (`chain_of`): `multinomial_spec` in one numba call (held equal to it, draw for draw, by
    tests/test_deal_uniformity_speed.py)."""
    out = np.empty(n.shape + (chain.q.shape[0] + 1,), dtype=np.int64)
    _multinomial_kernel(np.ascontiguousarray(n, dtype=np.int64), chain.q, chain.lo, chain.l1m, chain.ratio, rng,
                        out)
    return out


@lru_cache(maxsize=1024)
def _stage_chains(slots: tuple[int, ...], k: int) -> tuple[Chain, ...]:
    """`chain_of` every stage of `_stages(slots, k)` (computed once per configuration, not per batch)."""
    return tuple(chain_of(p) for p, _flat, _starts in _stages(slots, k))


@numba.njit(cache=True)
def _binomial_kernel(n, q, lo, l1m, ratio, g):  # pragma: no cover - numba
    """`binomial_draw` (numba's `Generator.binomial` draws numpy's stream)."""
    if n <= 0 or q <= 0.0:
        return 0
    if q >= 1.0:
        return n
    if n * lo > INVERSION_MEAN:
        return g.binomial(n, q)
    pk = math.exp(n * l1m)
    u = g.random()
    k = 0
    cdf = pk
    while u > cdf and k < n:
        pk = pk * (float(n - k) * ratio / float(k + 1))
        k += 1
        cdf += pk
    return n - k if q > 0.5 else k


@numba.njit(cache=True)
def _multinomial_kernel(n, q, lo, l1m, ratio, g, out):  # pragma: no cover - numba
    """`multinomial_spec` into out."""
    B, S = n.shape
    C1 = q.shape[0]
    for b in range(B):
        for s in range(S):
            left = n[b, s]
            for c in range(C1):
                k = _binomial_kernel(left, q[c, s], lo[c, s], l1m[c, s], ratio[c, s], g)
                out[b, s, c] = k
                left -= k
            out[b, s, C1] = left


def stage_tally(m: np.ndarray, flat: np.ndarray, starts: np.ndarray, out: np.ndarray, live: np.ndarray,
                col: int) -> np.ndarray:
    """The spec of `_stage_kernel` (numpy): adds the placed honours m [B, S, C] (per occupancy state, per live
    class) into out [B, N_CLASSES, 6] at column `col`, and returns the deals per next occupancy state [B, S']
    (`_stages`' flat indices and run starts; [B, 0] after the last stage)."""
    B = m.shape[0]
    out[:, live, col] += m.sum(axis=1)
    if len(starts):
        return np.add.reduceat(m.reshape(B, -1)[:, flat], starts, axis=1)
    return np.zeros((B, 0), np.int64)


@numba.njit(cache=True)
def _stage_kernel(m, flat, starts, out, live, col):  # pragma: no cover - numba
    """`stage_tally` (held equal to it by tests/test_deal_uniformity_speed.py): integer sums, so exact."""
    B, S, C = m.shape
    T = len(starts)
    nxt = np.zeros((B, T), np.int64)
    F = len(flat)
    for b in range(B):
        for s in range(S):
            for c in range(C):
                out[b, live[c], col] += m[b, s, c]
        for t in range(T):
            end = starts[t + 1] if t + 1 < T else F
            acc = 0
            for i in range(starts[t], end):
                f = flat[i]
                acc += m[b, f // C, f % C]
            nxt[b, t] = acc
    return nxt


@lru_cache(maxsize=256)
def _stages(slots: tuple[int, ...], k: int) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Placing k honours one at a time into distinct slots (slots[C] per live class C): per stage j, the
    probabilities [S_j, C] of the next honour's class from each occupancy state, and how the (state, class) pairs
    feed the next stage's states (flat indices sorted by target state, and the start of each target's run)."""
    s = np.array(slots, dtype=float)
    total = float(s.sum())
    states = [(0,) * len(slots)]
    out = []
    for j in range(k):
        occ = np.array(states, dtype=float)
        p = np.clip((s[None, :] - occ) / (total - j), 0.0, 1.0)
        index: dict[tuple[int, ...], int] = {}
        flat, target = [], []
        if j < k - 1:
            for si, st in enumerate(states):
                for c in range(len(slots)):
                    if p[si, c] > 0:
                        key = st[:c] + (st[c] + 1,) + st[c + 1:]
                        target.append(index.setdefault(key, len(index)))
                        flat.append(si * len(slots) + c)
        flat_a = np.array(flat, dtype=np.int64)
        target_a = np.array(target, dtype=np.int64)
        order = np.argsort(target_a, kind="stable")
        starts = np.searchsorted(target_a[order], np.arange(len(index)))
        out.append((p, flat_a[order], starts))
        states = list(index)
    return tuple(out)


def _simulate_per_deal(cfg: Config, D: int, B: int, rng: np.random.Generator) -> np.ndarray:
    """[B, N_CLASSES * 6] tables of B seasons of D deals of `cfg`, dealt deal by deal from uniform shuffles (cheaper
    than the count form for few deals at many seats)."""
    out = np.zeros((B, N_CLASSES * 6), dtype=np.int64)
    ranks = np.array(honour_ranks(cfg.game))
    H = len(ranks)
    pack = np.array(cards_of(cfg.pack), dtype=np.int64)
    P = len(pack)
    other = np.array([c for k, c in enumerate(cfg.slot_class) if k != cfg.turnup_index], dtype=np.int64)
    tu = pack[rng.integers(P, size=(B, D))]
    pos = rng.integers(P - 1, size=(B, D, H))
    flat_pos = pos.reshape(B * D, H)  # a view: redrawing its rows redraws pos's
    bad = np.flatnonzero(_collide(flat_pos))
    while len(bad):  # distinct positions for the honours (rejection; few rows collide; a good row stays good, so
        # only the redrawn rows are checked again; rows are redrawn in row order, as pos[mask] = ... would)
        flat_pos[bad] = rng.integers(P - 1, size=(len(bad), H))
        bad = bad[_collide(flat_pos[bad])]
    in_pack = np.array([[(cfg.pack >> (s * 13 + r)) & 1 for r in ranks] for s in range(4)], dtype=bool)
    cols = np.array(_cols(cfg), dtype=np.int64)
    _tally_kernel(tu, pos, other, ranks.astype(np.int64), in_pack, cols, out)
    return out


def tally_per_deal(tu: np.ndarray, pos: np.ndarray, other: np.ndarray, ranks: np.ndarray, in_pack: np.ndarray,
                   cols: np.ndarray) -> np.ndarray:
    """The spec of `_tally_kernel` (numpy): [B, N_CLASSES * 6] tables of dealt seasons, from the turn-up card tu
    [B, D] and the deck slots pos [B, D, H] (other than the turn-up's) of the H honours of each deal."""
    B = tu.shape[0]
    cls = other[pos]
    cls = np.where((tu % 13)[:, :, None] == ranks[None, None, :], TURNUP, cls)
    present = in_pack[tu // 13]  # [B, D, H]
    cell = cls * 6 + cols[None, None, :]
    flat = (np.arange(B)[:, None, None] * (N_CLASSES * 6) + cell)[present]
    return np.bincount(flat, minlength=B * N_CLASSES * 6).reshape(B, N_CLASSES * 6)


@numba.njit(cache=True)
def _tally_kernel(tu, pos, other, ranks, in_pack, cols, out):  # pragma: no cover - numba
    """`tally_per_deal`, added into out (held equal to it by tests/test_deal_uniformity_bounded.py)."""
    B, D, H = pos.shape
    W = 6
    for b in range(B):
        for d in range(D):
            t = tu[b, d]
            suit, rank = t // 13, t % 13
            for j in range(H):
                if not in_pack[suit, j]:
                    continue
                c = TURNUP if rank == ranks[j] else other[pos[b, d, j]]
                out[b, c * W + cols[j]] += 1


def _collide(pos: np.ndarray) -> np.ndarray:
    """Rows of pos [R, H] in which two entries are equal."""
    return _collide_kernel(np.ascontiguousarray(pos))


@numba.njit(cache=True)
def _collide_kernel(pos):  # pragma: no cover - numba
    R, H = pos.shape
    bad = np.zeros(R, np.bool_)
    for i in range(R):
        for a in range(H):
            for b in range(a + 1, H):
                if pos[i, a] == pos[i, b]:
                    bad[i] = True
    return bad


@lru_cache(maxsize=256)
def _count_cost(cfg: Config) -> int:
    """Binomial draws per simulated season of the count form for `cfg` (independent of the number of deals)."""
    _probs, types, slots = _null_plan(cfg)
    live = tuple(int(x) for x in slots[np.nonzero(slots)[0]])
    return sum(p.size for _t, rest in types for p, _f, _s in _stages(live, len(rest)))


COUNT_FORM_FACTOR = 0.5  # one honour placed per deal costs about half a binomial draw of the count form: measured
# on the dealers of the issue-15 300k season, 4,096 seasons each, 2 cores: ~21 ns an honour placed (numba) against
# ~37-52 ns a binomial; the factor was 6 before, which sent a 6-seat configuration of 522 deals (3,780 draws a
# season) to the count form at 0.58 s per 4,096 seasons instead of 0.22 s dealt deal by deal


def _simulate_tables(by_cfg: dict[Config, Any], B: int, rng: np.random.Generator) -> np.ndarray:
    """[B, N_CLASSES, 6] tables of B seasons of the same deals dealt from uniform shuffles; `by_cfg`: {config:
    its number of deals (`_n_deals`)} in canonical order. The draws depend only on these, in this order.

    Exact in distribution and independent of the number of deals: a season's table is a sum of independent
    per-deal tables, so it is drawn as counts. Per configuration, the deals split over the turn-up types
    (multinomial: which honour, if any, is turned, and which trump honours the pack holds); within a type the
    other honours go to distinct deck slots, uniformly. Placing them one rank at a time, the next honour's class
    depends only on how many earlier honours sit in each class (the occupancy), so the deals are tracked as
    counts per occupancy state and each rank's column is a multinomial per state with probabilities
    (slots[C] - occupied[C]) / (slots left). A configuration with few deals and many states (many seats) is
    dealt deal by deal instead (`_simulate_per_deal`): the same distribution, whichever is cheaper."""
    out = np.zeros((B, N_CLASSES, 6), dtype=np.int64)
    for cfg, entry in by_cfg.items():
        D = _n_deals(entry)
        if D == 0:
            continue
        if _count_cost(cfg) > COUNT_FORM_FACTOR * D * len(honour_ranks(cfg.game)):
            out += _simulate_per_deal(cfg, D, B, rng).reshape(B, N_CLASSES, 6)
            continue
        probs, types, slots = _null_plan(cfg)
        live = np.nonzero(slots)[0].astype(np.int64)  # classes with deck slots
        split = rng.multinomial(D, probs, size=B)  # [B, T]
        for t, (turned, rest) in enumerate(types):
            n = split[:, t:t + 1]  # [B, S] deals per occupancy state
            if turned >= 0:
                out[:, TURNUP, turned] += n[:, 0]
            live_slots = tuple(int(x) for x in slots[live])
            chains = _stage_chains(live_slots, len(rest))
            for j, (_p, flat, starts) in enumerate(_stages(live_slots, len(rest))):
                m = _multinomial(n, chains[j], rng)  # [B, S, C]
                n = _stage_kernel(m, flat, starts, out, live, rest[j])
    return out


LR_STEPS = (-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0)  # the tilts of one cell's log-odds
LR_SHORTCUT = 1e-15  # the closed-form bound replaces the Monte Carlo when it is at most this (module docstring)


def _per_cfg(by_cfg: dict[Config, Any]) -> list[tuple[int, np.ndarray, list[int]]]:
    """(deals, `_expected` [N_CLASSES, H], table columns of its ranks) per configuration, in `by_cfg`'s order."""
    return [(_n_deals(entry), _expected(cfg), _cols(cfg)) for cfg, entry in by_cfg.items()]


def _used_cells(per_cfg: list[tuple[int, np.ndarray, list[int]]]) -> np.ndarray:
    """[K, 2] the cells (location class, table column) that some configuration of `per_cfg` can fill, in table
    order: the cells the one-cell tilts of `lr_log_ratios` and `tilt_design` range over."""
    used = np.zeros((N_CLASSES, 6), bool)
    for _D, e, cols in per_cfg:
        for j, col in enumerate(cols):
            used[:, col] |= e[:, j] > 0
    return np.argwhere(used)


def tilt_log_normalisers(per_cfg: list[tuple[int, np.ndarray, list[int]]], cells: np.ndarray,
                         lams: np.ndarray) -> np.ndarray:
    """[K, S] Σ_deals log(1 - p + p e^λ) for each cell (location class, table column) of `cells` [K, 2] and each
    tilt λ of lams [K, S], p the cell's null probability in each deal (`_per_cfg`), added configuration by
    configuration: the log normaliser of a one-cell tilt, whose season likelihood ratio is exp(λ O - this), O the
    cell's count. The one formula of `lr_log_ratios` and `tilt_design`."""
    log_m = np.zeros(lams.shape)
    for D, e, cols in per_cfg:
        for j, col in enumerate(cols):
            sel = cells[:, 1] == col
            log_m[sel] += D * np.log1p(e[cells[sel, 0], j][:, None] * np.expm1(lams[sel]))
    return log_m


def log_mean_exp(logs: np.ndarray) -> np.ndarray:
    """log of the mean of exp(logs) over the last axis, without overflow."""
    top = logs.max(axis=-1)
    return top + np.log(np.exp(logs - top[..., None]).sum(axis=-1)) - np.log(logs.shape[-1])


def lr_log_ratios(by_cfg: dict[Config, Any], obs: np.ndarray) -> np.ndarray:
    """log LR of every alternative of `lr_pvalue`'s mixture (one per (cell, step), cells in table order, steps in
    `LR_STEPS` order) for the table `obs` [N_CLASSES, 6]; `by_cfg`: {config: its number of deals (`_n_deals`)}."""
    per_cfg = _per_cfg(by_cfg)
    cells = _used_cells(per_cfg)
    lams = np.broadcast_to(np.array(LR_STEPS), (len(cells), len(LR_STEPS)))
    o = np.asarray(obs, float)[cells[:, 0], cells[:, 1]]
    return (o[:, None] * lams - tilt_log_normalisers(per_cfg, cells, lams)).reshape(-1)


def lr_pvalue(by_cfg: dict[Config, Any], obs: np.ndarray) -> float:
    """A closed-form p-value for the dealer's table, valid under the exact null (issue 15): 1 / E, with E the
    likelihood ratio of a fixed mixture of alternatives against the null, so that E has mean 1 under the null and
    P(1/E <= u) <= u (Markov). Each alternative tilts one cell (location class x honour rank) of every deal by a
    fixed step λ of `LR_STEPS`: a deal's indicator Y of that cell, of null probability p, gets probability
    p e^λ / (1 - p + p e^λ), everything else as the null has it given Y. Its likelihood ratio for the season is
    exp(λ O - Σ_deals log(1 - p + p e^λ)), O the cell's observed count: a function of the counts alone, exact for
    the deals' own configurations (`lr_log_ratios`). The mixture weighs every (cell, λ) alike; the cells and steps
    are fixed before the data are seen. It is weak for a table that is uneven everywhere a little (the X² Monte
    Carlo is the test there) and strong for one cell far from its expectation: the stacked Jack, the turned Jack.
    Below the smallest positive double it is reported as that (a larger p-value stays valid)."""
    logs = lr_log_ratios(by_cfg, obs)
    if not len(logs):
        return 1.0
    log_e = float(log_mean_exp(logs))
    return float(min(1.0, max(float(np.exp(-log_e)), np.finfo(float).tiny)))


def sequential_mc_pvalue(stat: float, simulate, rng: np.random.Generator, h: int = MC_H,
                         cap: int = 20_000, stopped: bool = False) -> Any:
    """Besag–Clifford sequential Monte-Carlo p-value of an upper-tail statistic. `simulate(B, rng)` gives B
    null statistics. Returns (p, draws), and with `stopped` (p, draws, whether h exceedances were reached)."""
    g = 0
    drawn = 0
    batch = 32
    while drawn < cap:
        b = min(batch, cap - drawn)
        sims = simulate(b, rng)
        ge = sims >= stat - 1e-9 * max(1.0, abs(stat))
        if g + ge.sum() >= h:
            first = int(np.nonzero(np.cumsum(ge) + g >= h)[0][0])
            return (h / (drawn + first + 1), drawn + first + 1) + ((True,) if stopped else ())
        g += int(ge.sum())
        drawn += b
        batch = min(batch * 2, 4096)
    return ((g + 1) / (cap + 1), cap) + ((False,) if stopped else ())


# ---------------------------------------------------------------- importance sampling (issue 15, speed)

IS_AFTER = 2000  # Besag-Clifford draws before a dealer who has not reached MC_H exceedances goes to `is_pvalue`
IS_DRAWS = 2000  # seasons drawn from the importance-sampling proposal
IS_COST = 1.3  # an importance-sampling draw costs about 1.3 null draws (measured on the honest 300k season)
IS_Z = (-4.0, -3.0, 3.0, 4.0, 5.0, 6.0, 8.0)  # the proposal's tilts of one cell, in that cell's null standard
# deviations: a tilt λ = z / sd moves the cell's expected count by about z sd (the X² tail of an honest table is
# reached by a cell a few sd off; a stacked cell is many sd off)


@dataclass(frozen=True)
class TiltDesign:
    """The importance-sampling proposal of one dealer, fixed by his configurations alone (never by his table):
    the cells (location class, table column) with a null expectation, their tilts `lams` [K, len(IS_Z)] and each
    tilt's season log normaliser `log_m` [K, len(IS_Z)] = Σ_deals log(1 - p + p e^λ)."""

    cells: np.ndarray
    lams: np.ndarray
    log_m: np.ndarray

    def log_e(self, tables: np.ndarray) -> np.ndarray:
        """log of the mixture likelihood ratio (1/K·S) Σ_k,z dQ_k,z/dP for tables [B, N_CLASSES, 6]: each tilt's
        ratio is exp(λ O - log_m), O the tilted cell's count (`lr_log_ratios`' form)."""
        o = np.asarray(tables, float)[:, self.cells[:, 0], self.cells[:, 1]]  # [B, K]
        return log_mean_exp((o[:, :, None] * self.lams[None] - self.log_m[None]).reshape(len(o), self.lams.size))

    def weights(self, tables: np.ndarray) -> np.ndarray:
        """dP/dQ for the defensive proposal Q = P/2 + (mixture of tilts)/2: 1 / (1/2 + E/2), at most 2."""
        return np.exp(-np.logaddexp(np.log(0.5), np.log(0.5) + self.log_e(tables)))


def tilt_design(by_cfg: dict[Config, Any]) -> TiltDesign:
    """`TiltDesign` of a dealer from {config: its number of deals (`_n_deals`)}: per used cell, its null variance
    Σ_deals p(1 - p), λ = z / sd for z in `IS_Z`, and the exact log normalisers (`tilt_log_normalisers`)."""
    per_cfg = [x for x in _per_cfg(by_cfg) if x[0]]  # a configuration of no deal: no cell (its tilt would be infinite)
    cells = _used_cells(per_cfg)
    var = np.zeros(len(cells))
    for D, e, cols in per_cfg:
        for j, col in enumerate(cols):
            sel = cells[:, 1] == col
            p = e[cells[sel, 0], j]
            var[sel] += D * p * (1.0 - p)
    lams = np.array(IS_Z)[None, :] / np.sqrt(np.maximum(var, 1e-300))[:, None]
    return TiltDesign(cells, lams, tilt_log_normalisers(per_cfg, cells, lams))


def _simulate_tilted(by_cfg: dict[Config, Any], classes: np.ndarray, col: int, lam: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
    """[B, N_CLASSES, 6] tables of B = len(lam) seasons of the dealer's deals, each deal of season b drawn from
    the null tilted on the cell (classes[b], col) by lam[b]: P_λ(deal) ∝ P(deal) e^(λ Y), Y = 1 when the honour of
    table column col lies in location class classes[b]. In the count form of `_simulate_tables`: the turn-up types
    are weighted by E[e^(λY) | type] (Y is fixed by the type when the class is the turn-up; otherwise the honour,
    when the pack holds it and it is not turned, lies in the class with chance slots[class] / slots), and within a
    type the honour of column col is placed first, its class drawn with the tilted class's weight times e^λ; the
    others follow from the occupancy as in the null. A configuration no season's tilt can touch is dealt from the
    null as it is (`_simulate_tables`)."""
    B = len(lam)
    classes = np.asarray(classes, np.int64)
    el = np.exp(np.asarray(lam, float))
    out = np.zeros((B, N_CLASSES, 6), dtype=np.int64)
    for cfg, entry in by_cfg.items():
        D = _n_deals(entry)
        if D == 0:
            continue
        probs, types, slots = _null_plan(cfg)
        live = np.nonzero(slots)[0].astype(np.int64)
        live_slots = tuple(int(x) for x in slots[live])
        ci = np.full(N_CLASSES, -1, np.int64)
        ci[live] = np.arange(len(live))
        row_ci = ci[classes]  # [B] the tilted class's index among the live ones, -1 if none
        on_turnup = classes == TURNUP
        share = np.where(row_ci >= 0, slots[classes] / float(slots.sum()), 0.0)  # [B]
        y = np.array([np.where(on_turnup, float(turned == col), np.where(col in rest, share, 0.0))
                      for turned, rest in types]).T  # [B, T]: P(Y = 1 | type)
        if not y.any():
            out += _simulate_tables({cfg: D}, B, rng)
            continue
        w = probs[None, :] * (1.0 - y + y * el[:, None])
        split = rng.multinomial(D, w / w.sum(axis=1, keepdims=True))  # [B, T]
        rows = np.flatnonzero(row_ci >= 0)
        for t, (turned, rest) in enumerate(types):
            n = split[:, t:t + 1]  # [B, S] deals per occupancy state
            if turned >= 0:
                out[:, TURNUP, turned] += n[:, 0]
            tilt = col in rest and len(rows) > 0
            order = (col,) + tuple(r for r in rest if r != col) if tilt else tuple(rest)
            chains = _stage_chains(live_slots, len(order))
            for j, (p, flat, starts) in enumerate(_stages(live_slots, len(order))):
                if j == 0 and tilt:
                    pb = np.repeat(p[:1], B, axis=0)
                    pb[rows, row_ci[rows]] *= el[rows]
                    m = rng.multinomial(n[:, 0], pb / pb.sum(axis=1, keepdims=True))[:, None, :]
                else:
                    m = _multinomial(n, chains[j], rng)
                n = _stage_kernel(m, flat, starts, out, live, order[j])
    return out


def draw_proposal(by_cfg: dict[Config, Any], design: TiltDesign, draws: int, rng: np.random.Generator) -> np.ndarray:
    """[draws, N_CLASSES, 6] tables drawn independently from the proposal Q = P/2 + 1/2 of the uniform mixture of
    `design`'s tilts (grouped by kind of draw: the tables' order does not matter to `is_pvalue`)."""
    S = design.lams.shape[1]
    K = len(design.cells)
    comp = rng.integers(2 * K * S, size=draws)  # below K * S: tilt (k, z) = divmod(comp, S); else the null
    tables = [_simulate_tables(by_cfg, int((comp >= K * S).sum()), rng)]
    tilted = comp[comp < K * S]
    k, z = tilted // S, tilted % S
    for col in np.unique(design.cells[k, 1]):  # one pass per honour: the tilts of its cells differ by row
        at = design.cells[k, 1] == col
        tables.append(_simulate_tilted(by_cfg, design.cells[k[at], 0], int(col), design.lams[k[at], z[at]], rng))
    return np.concatenate(tables)


def is_pvalue(by_cfg: dict[Config, Any], obs: np.ndarray, stat_of, draws: int,
              rng: np.random.Generator) -> float:
    """Harrison's importance-sampling p-value (Biometrika 2012, "Conservative hypothesis tests and confidence
    intervals using importance sampling"): p = (w(x0) + Σ_i w(X_i) 1{T(X_i) >= T(x0)}) / (n + 1), X_1..X_n drawn
    from a proposal Q fixed before the table x0 is seen, w = dP/dQ exact. P(p <= u) <= u under the null for any n
    (docs/decisions.md). Q = P/2 + 1/2 of the uniform mixture of the one-cell tilts of `tilt_design` (defensive:
    w <= 2). `stat_of(tables)`: X² of tables [B, N_CLASSES, 6]."""
    design = tilt_design(by_cfg)
    tab = draw_proposal(by_cfg, design, draws, rng)
    stat = float(stat_of(np.asarray(obs, float)[None])[0])
    ge = stat_of(tab) >= stat - 1e-9 * max(1.0, abs(stat))
    w0 = float(design.weights(np.asarray(obs)[None])[0])
    return float(min(1.0, (w0 + float(design.weights(tab[ge]).sum())) / (draws + 1)))


def mc_pvalue(stat: float, by_cfg: dict[Config, Any], obs: np.ndarray, simulate, stat_of,
              rng: np.random.Generator, cap: int, is_after: int = IS_AFTER,
              is_draws: int = IS_DRAWS) -> tuple[float, int, int]:
    """The Monte Carlo p-value of a dealer: Besag–Clifford (`sequential_mc_pvalue`) up to min(cap, is_after)
    draws; a dealer who has not reached MC_H exceedances by then gets `is_pvalue` from `is_draws` further draws
    (is_draws 0: the Besag-Clifford p at the cap, as before). Valid as a whole (docs/decisions.md: for u below
    MC_H / (cap + 1) only the importance-sampling branch can report u; above it, the early stops' chance is what
    the capped Besag-Clifford p-value already bounds). Returns (p, Besag-Clifford draws, importance draws)."""
    bc_cap = min(cap, is_after) if is_draws else cap
    p, drawn, stopped = sequential_mc_pvalue(stat, simulate, rng, cap=bc_cap, stopped=True)
    if stopped or not is_draws:
        return p, drawn, 0
    return is_pvalue(by_cfg, obs, stat_of, is_draws, rng), drawn, is_draws


MC_METHOD = ("pearson X² over seat x honour cells, exact expected counts; sequential Monte-Carlo p-value "
             "(Besag-Clifford), one-sided")
IS_METHOD = ("pearson X² over seat x honour cells, exact expected counts; p-value: importance sampling over one-cell "
             "tilts of the exact null (Harrison 2012), after a sequential Monte Carlo that did not stop, one-sided")
LR_METHOD = ("pearson X² over seat x honour cells, exact expected counts; p-value: the closed-form likelihood-ratio "
             "bound (a fixed mixture of one-cell tilts against the exact null), below 1e-15, so no Monte Carlo")


UNIFORMITY_SPEC = TestSpec(
    name='deal_uniformity',
    title='Where the trump honours land',
    what='Whether the trump honours and the turn-up land on the seats around each dealer as a fair deal would put '
         'them, so that stacking of any card is caught, not only the Jack.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='dealt an unusual pattern of honours',
    cheat='a stacking rate',
    honest='a fair deal',
    subject='dealer',
    chart='evidence',
    control_words=(
        ('honours_to_dealer', 'trump honours dealt to the dealer'),
    ),
    section=2,
    cost=30,
    sentence='Over the {n} deals {subject} dealt, the trump honours landed on the seats around the dealer with a '
             'misfit of {obs} (Pearson X², about {exp} for a fair deal); {pq}.{cell}',
)


class DealUniformity:
    spec = UNIFORMITY_SPEC
    name = "deal_uniformity"

    def __init__(self, fdr: float = 0.05, details: bool = True, mc_max: int | None = MC_MAX,
                 is_draws: int = IS_DRAWS):
        self.fdr = fdr
        self.details = details
        self.mc_max = mc_max
        self.is_draws = is_draws

    def cap(self, m: int) -> int:
        if self.mc_max is not None:
            return int(self.mc_max)
        return int(min(200_000, max(2_000, np.ceil(2 * m / self.fdr))))

    def importance_draws(self) -> int:
        """`is_draws`, at most `mc_max` when a cap is set (a study or a test that caps the Monte Carlo for speed
        caps the importance sampling too)."""
        return self.is_draws if self.mc_max is None else min(self.is_draws, int(self.mc_max))

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        return _uniformity_counts(facts if facts is not None else facts_from_columns(table))

    def extra_cost(self, counts: dict) -> float:
        """The finalize's cost beyond its spec's, for the scheduler (`audit.finalize_cost`): its Monte Carlo, which
        depends on the data, not the size: about MC_H / p simulated seasons for a dealer of p-value p (up to the
        cap), some 0.5 ms each. p is guessed from X²'s chi-square approximation divided by 10: on sparse tables the
        exact tail is far heavier (the honest 300k season's human-shuffle dealers: 2.8e-3 and 8.2e-3 from the
        approximation, 3.8e-4 and 1.3e-3 from 35,000 simulated seasons, 22 s). A dealer the closed form settles
        costs nothing; one who reaches the importance sampling costs its draws, some IS_COST null draws each. In
        the spec's units (about a second each). Only an order: the results do not depend on it."""
        draws = 0.0
        cap = self.cap(len(counts))
        for s in counts:
            by_cfg = counts[s].by_cfg()
            obs, exp_ = _table(by_cfg)
            mask = exp_ > 0
            df = _df(mask)
            if df <= 0 or lr_pvalue(by_cfg, obs) <= LR_SHORTCUT:
                continue
            p = float(chdtrc(df, _x2(obs, exp_)))  # chi2.sf, without importing scipy.stats here
            guess = 10 * MC_H / max(p, 1e-300)
            if self.importance_draws() and guess > min(cap, IS_AFTER):  # Besag-Clifford, then importance sampling
                draws += min(cap, IS_AFTER) + IS_COST * self.importance_draws()
            else:
                draws += min(float(cap), guess)
        return 0.5e-3 * draws

    def merge(self, parts: Sequence[dict]) -> dict:
        return _merge_counts(parts)

    def finalize(self, counts: dict, rng: np.random.Generator) -> list[TestResult]:
        subjects = sorted(counts)
        base = int(rng.integers(2**63 - 1))
        level = exact.per_test_level(self.fdr, len(subjects))
        out = []
        for s in subjects:
            by_cfg = counts[s].by_cfg()
            n = len(counts[s])
            obs, exp_ = _table(by_cfg)
            stat = _x2(obs, exp_)
            mask = exp_ > 0

            def stat_of(t, exp_=exp_, mask=mask):
                return ((((t - exp_[None]) ** 2) / np.where(mask, exp_, 1.0)[None]) * mask[None]).sum(axis=(1, 2))

            def simulate(B, g, by_cfg=by_cfg, stat_of=stat_of):
                return stat_of(_simulate_tables(by_cfg, B, g))

            p_lr = lr_pvalue(by_cfg, obs)
            method = MC_METHOD
            is_draws = 0
            if p_lr <= LR_SHORTCUT:  # far beyond the Monte Carlo's smallest p: no season simulated (issue 15)
                p, draws, method = p_lr, 0, LR_METHOD
            else:
                p, draws, is_draws = mc_pvalue(stat, by_cfg, obs, simulate, stat_of, subject_rng(rng, base, s),
                                               cap=self.cap(len(subjects)), is_draws=self.importance_draws())
                method = IS_METHOD if is_draws else MC_METHOD
            df = _df(mask)
            detail: dict[str, Any] = {"mc_draws": draws, "is_draws": is_draws}
            controls: dict[str, Any] = {}
            if self.details:
                classes = _class_names(MAX_SEATS)
                cells = []
                for c in range(N_CLASSES):
                    for j in range(6):
                        if exp_[c, j] > 0:
                            cells.append({"location": classes[c], "rank": RANK_NAMES[j],
                                          "observed": int(obs[c, j]), "expected": round(float(exp_[c, j]), 3)})
                detail["cells"] = cells
                detail["df"] = df
                detail["null_rate"] = None
                # the dealer's own honours as the timeline (observed vs expected honours dealt to him)
                detail["timeline"] = counts[s].timeline.points()
                md = _min_detectable_x2(by_cfg, exp_, mask, df, level)
                detail["min_detectable"] = md
                detail["min_detectable_level"] = level
                detail["min_detectable_method"] = (
                    "approximate (non-central chi-square): the smallest q at which X² at the FDR-equivalent "
                    f"per-test level has power {MIN_DETECTABLE_POWER} against a dealer who deals themselves the "
                    "Jack of trumps in a fraction q of their deals")
                dealer_obs = float(obs[0].sum()) + (float(obs[TURNUP].sum()) if _owns_turnup(by_cfg) else 0.0)
                controls["honours_to_dealer"] = {"observed": dealer_obs}
            out.append(TestResult(test=self.name, subject=s, n=n, observed=round(stat, 4), expected=float(df),
                                  statistic=round(stat, 4), pvalue=p, method=method,
                                  controls=controls, detail=detail))
        return out


def _owns_turnup(by_cfg) -> bool:
    return all(c.turnup_owner == 0 for c in by_cfg)


def _min_detectable_x2(by_cfg, exp_, mask, df, level) -> float | None:
    """Non-central chi-square approximation for a Jack-of-trumps stacker of strength q."""
    if df <= 0:
        return None
    delta = np.zeros_like(exp_)
    for cfg, (D, _table) in by_cfg.items():
        e = _expected(cfg)
        ranks = honour_ranks(cfg.game)
        jj = ranks.index(9)
        j = COLS.index(9)
        own = [0] + ([TURNUP] if cfg.turnup_owner == 0 else [])
        moved = e[:, jj].copy()
        moved[own] = 0.0  # mass that a stack moves into the dealer's hand
        if TURNUP not in own:
            moved[TURNUP] = 0.0  # a turned Jack stays turned (moving it would change trumps)
        delta[:, j] -= moved * D
        delta[0, j] += moved.sum() * D
    lam1 = float((delta[mask] ** 2 / exp_[mask]).sum())  # non-centrality at q = 1 (scales with q²)
    _st = scipy_stats()
    crit = _st.chi2.isf(level, df)
    if _st.ncx2.sf(crit, df, lam1) < MIN_DETECTABLE_POWER:
        return None
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        if _st.ncx2.sf(crit, df, lam1 * mid * mid) >= MIN_DETECTABLE_POWER:
            hi = mid
        else:
            lo = mid
    return round(hi, 4)


# ---------------------------------------------------------------- dealer × cutter


def jack_to_dealer(facts: DealingFacts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(deal indices, dealt the Jack of trumps to the dealer, its exact null) of every deal that is a trial:
    Scotch Whist, `dealer_jack`'s event and null (the Jack of trumps in the dealer's hand, the turn-up included when
    he owns it: `held_prob(config, 0, J)`); All Fours, `af_dealer_jack`'s (the Jack of the turn-up's suit in his six
    dealt cards, 6/51 given a turn-up that is not that Jack)."""
    if len(facts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0)
    sw = np.nonzero(facts.game == 0)[0]
    p_sw = np.array([float(held_prob(c, 0, RJ)) if c.game != "all_fours" else 0.0 for c in facts.configs] or [0.0])
    card = facts.trump[sw].astype(np.int64) * 13 + RJ
    obs_sw = (facts.holder[sw, card] == 0).astype(np.int8)
    af = af_trial_deals(facts)
    p_af = af_dealt_probs(facts, af, RJ)[:, 0]
    af = af[p_af > 0]
    p_af = p_af[p_af > 0]
    card = facts.trump[af].astype(np.int64) * 13 + RJ
    obs_af = (facts.holder[af, card] == 0).astype(np.int8)
    idx = np.concatenate([sw, af])
    o = np.argsort(idx, kind="stable")
    return (idx[o], np.concatenate([obs_sw, obs_af])[o], np.concatenate([p_sw[facts.cfg[sw]], p_af])[o])


def _cutter_rows(facts: DealingFacts) -> dict[str, dict[str, TrialSummary]]:
    """{dealer: {cutter: TrialSummary}} (each with its timeline): per ordered pair, the deals at tables of 3 or more players that cutter cut for
    that dealer, each a trial of the Jack of trumps dealt to the dealer (`jack_to_dealer`). At 2 players the cutter
    is the dealer's one opponent on every deal: the pair is the dealer, whose own test is `dealer_jack`."""
    idx, obs, p = jack_to_dealer(facts)
    keep = facts.n[idx] >= 3
    idx, obs, p = idx[keep], obs[keep], p[keep]
    out: dict[str, dict[str, TrialSummary]] = {}
    if len(idx) == 0:
        return out
    P = len(facts.players)
    dealer = facts.seat_player[idx, 0].astype(np.int64)
    cutter = facts.seat_player[idx, facts.cutter_rel[idx].astype(np.int64)].astype(np.int64)
    pair = np.where((cutter >= 0) & (cutter != dealer), dealer * P + cutter, -1)
    uniq, sub = np.unique(pair, return_inverse=True)
    sub = np.where(pair >= 0, sub.reshape(-1), -1)
    names = [f"{int(u) // P}:{int(u) % P}" for u in uniq.tolist()]
    for k, t in summarise(sub, names, obs, p, facts.table[idx], facts.tables, facts_time(facts, idx)).items():
        a, b = (int(x) for x in k.split(":"))
        out.setdefault(facts.players[a], {})[facts.players[b]] = t
    return out


CUTTER_SPEC = TestSpec(
    name='dealer_cutter',
    title='Dealer and cutter together',
    what='For each dealer and the player who cut for them, at tables of three or more, how often the dealer was '
         'dealt the Jack of trumps (All Fours: the Jack of the suit they turned up), against the exact chance of each '
         'deal: a stacked pack survives only a friendly cut, so a dealer who gets the Jack only after one cutter '
         'is suspicious together with that cutter.',
    unit='deals after this cut',
    unit_short='deals',
    event='was dealt the Jack of trumps',
    cheat='a stacking rate after this cut',
    honest='a fair deal',
    subject='pair',
    chart='funnel',
    control_words=(
        ('with_other_cutters', 'the Jack with other cutters'),
    ),
    section=3,
    cost=45,  # the longest finalize at 1M and 10M deals (exact controls and power searches for every pair: 37-42 s
    # at 1M, where marked_ten took 26-30 s): started last at cost 3, it ended the tests some 10 s after the rest
    bernoulli=True,
    chart_controls=('with_other_cutters',),
    second_cleared_by='with_other_cutters',  # a dealer who stacks whoever cuts: the cutter is not named
    sentence='When {second} cut for {first}, {first} {event} in {obs} of {n} deals; a fair deal gives about '
             '{exp}{spread}; {pq}.',
)

CUTTER_METHOD = "exact poisson-binomial, one-sided (each deal's exact null of the Jack to the dealer)"
PAIR_POINTS = 64  # a pair's timeline in the document, as collusion's pairs (PAIR_BINS): a club of 60 has 3,540 pairs,
# and ten clubs' 35,400 timelines of 128 points were about 0.7 GB of the 10M audit's tests (issue 15)


class DealerCutter:
    spec = CUTTER_SPEC
    name = "dealer_cutter"

    def __init__(self, fdr: float = 0.05, details: bool = True, min_deals: int = 20):
        self.fdr = fdr
        self.details = details
        self.min_deals = min_deals

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        return _cutter_rows(facts if facts is not None else facts_from_columns(table))

    def merge(self, parts: Sequence[dict]) -> dict:
        return merge_summaries(parts)

    def merge_into(self, total: dict, part: dict) -> dict:
        """`merge([total, part])`, in place (see `Detector.merge_into`)."""
        return merge_summaries_into(total, part)

    SHARDS = 16  # the audit folds and tests the pairs in this many groups, by dealer (`shard`)

    def shard(self, counts: dict, n: int) -> list[dict]:
        """The pairs of each group of dealers (`shard_of` the dealer; see `Detector`): a pair's control sums the
        dealer's other pairs, all in his group; the family's size is in `shard_context`."""
        out: list[dict] = [{} for _ in range(n)]
        for dealer, cutters in counts.items():
            out[shard_of(dealer, n)][dealer] = cutters
        return out

    def shard_context(self, counts: dict) -> dict[tuple[str, str], int]:
        """Per (dealer, cutter): the number of trials (the tests are of the pairs with at least `min_deals`)."""
        return {(d, c): len(t) for d, cutters in counts.items() for c, t in cutters.items()}

    def merge_context(self, contexts: Sequence[dict[tuple[str, str], int]]) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for c in contexts:
            for pair, k in c.items():
                out[pair] = out.get(pair, 0) + k
        return out

    def join_shards(self, groups: Sequence[dict], context: dict[tuple[str, str], int]) -> dict:
        """The whole counts from the groups' (see `Detector`): each dealer's cutters from his group, the dealers in
        the order the whole fold meets them, which is the merged context's (its pairs in the order the parts first
        give them; a part gives a dealer's pairs together)."""
        n = len(groups)
        out: dict = {}
        for dealer, _cutter in context:
            if dealer not in out:
                out[dealer] = groups[shard_of(dealer, n)][dealer]
        if sum(len(g) for g in groups) != len(out):
            raise ValueError("dealer_cutter: the groups hold dealers that the context does not")
        return out

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        return list(self.results(counts, rng))

    def results(self, counts: dict, rng: np.random.Generator | None = None,
                context: dict[tuple[str, str], int] | None = None) -> Iterator[TestResult]:
        """The tests of `finalize`, one at a time (see `Detector`); `context`: the whole input's `shard_context`
        when `counts` are one group's (`shard`)."""
        pairs = [(d, c) for d in sorted(counts) for c in sorted(counts[d]) if len(counts[d][c]) >= self.min_deals]
        tested = pairs if context is None else [p for p, k in context.items() if k >= self.min_deals]
        level = exact.per_test_level(self.fdr, len(tested))
        totals: dict[str, tuple[TrialSummary, exact.PBPrefixes]] = {}
        drawn: dict[tuple[str, str], list] = {}  # the timelines' points of the next POINTS_BATCH pairs
        for j, (dealer, cutter) in enumerate(pairs):
            t = counts[dealer][cutter]
            if self.details and j % POINTS_BATCH == 0:
                batch = pairs[j:j + POINTS_BATCH]
                drawn = dict(zip(batch, points_many([_timeline_of(counts[d][c]) for d, c in batch], PAIR_POINTS),
                                 strict=True))
            controls: dict[str, Any] = {}
            detail: dict[str, Any] = {}
            if self.details:
                if dealer not in totals:
                    totals.clear()  # the pairs come dealer by dealer: one dealer's convolutions held at a time
                    whole = TrialSummary.merge([_untimed(v) for v in counts[dealer].values()])
                    totals[dealer] = (whole, exact.PBPrefixes(whole.groups(), narrow=True))
                whole, prefixes = totals[dealer]
                controls["with_other_cutters"] = control(_without(whole, t), prefixes)
                detail = {"funnel": funnel(t)}
            yield pb_result(self.name, f"{dealer}+{cutter}", t, level, CUTTER_METHOD, controls, detail,
                            details=self.details, cheat="deals themselves the Jack of trumps when this player cuts",
                            points=PAIR_POINTS, timeline_points=drawn.pop((dealer, cutter), None))


POINTS_BATCH = 512  # pairs whose timelines' points are made at once (`points_many`), a few MB of lists


def _timeline_of(t: TrialSummary) -> Timeline:
    """The pair's timeline as `TrialSummary.points` draws it (none: no points)."""
    return t.timeline if t.timeline is not None else Timeline()


def _untimed(t: TrialSummary) -> TrialSummary:
    """The trials without their timeline (a control shows none)."""
    return TrialSummary(t.p, t.n, t.k)


def _without(total: TrialSummary, t: TrialSummary) -> TrialSummary:
    """The merge of a dealer's other pairs (`TrialSummary.merge` of all his pairs but `t`, untimed), as his total
    less `t`: the same groups (every merged group has n >= 1, so a group is in the others' merge exactly when its
    count stays positive) and the same integers, without merging the other pairs again for each pair."""
    at = np.searchsorted(total.p, t.p)
    n = total.n.copy()
    k = total.k.copy()
    np.subtract.at(n, at, t.n)
    np.subtract.at(k, at, t.k)
    keep = n > 0
    return TrialSummary(total.p[keep], n[keep], k[keep])
