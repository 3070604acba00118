"""Anytime-valid evidence for one stream of Bernoulli trials with exact null probabilities (issue 17).

A stream is one (test, subject): trials i with null probability p_i of the event (the dealer receives the Jack of
trumps, a turn-up is a Jack, a revoke pays) and outcome x_i. The alternative "cheats with strength q" moves each
trial's probability to p_i' = p_i + q (1 - p_i) (the project's model of a stacker: in a fraction q of his chances he
makes the event happen). The likelihood ratio of the trials so far,

    L_q = prod_i (p_i' / p_i)^x_i ((1 - p_i') / (1 - p_i))^(1 - x_i),

is a nonnegative martingale of mean 1 under the null (each factor has conditional mean 1), whatever the p_i as long
as each is fixed before its outcome is seen. The stream's e-process is a mixture with weights fixed in advance:

    E_t = sum_q sum_s  w_q pi_s  L_q(trials after start s),

over a grid of strengths q (`Q_GRID`, weights `Q_WEIGHTS`) and of start points s (`START_GRID`, weights
`START_WEIGHTS`), a component with start s being 1 until the subject has s trials and the likelihood ratio of the
trials after that from the next look on (a cheat that begins late is not diluted by a year of honest play). The
start is fixed by the trial count before a look, so every component is a martingale and so is E. By Ville's
inequality P(sup_t E_t >= 1/a) <= a under the null, however often and whenever one looks: the always-valid p-value
is 1 / max_t E_t.

Trials at p = 0 or p = 1 carry no evidence (the alternative keeps them where they are). Everything is kept in logs
(`log_components`, shape [len(Q_GRID), len(START_GRID)]) and updated from grouped counts (p, trials, events): the
product over a look's trials does not depend on their order, so a look's counts are all it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Q_GRID: tuple[float, ...] = (0.03, 0.06, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8)
Q_WEIGHTS: tuple[float, ...] = tuple(1.0 / len(Q_GRID) for _ in Q_GRID)
# start points: the subject's trial count; 0 holds half the weight, the later starts (16 x 2^(j/2)) share the rest
START_GRID: tuple[int, ...] = (0,) + tuple(int(round(16 * 2 ** (j / 2))) for j in range(26))
START_WEIGHTS: tuple[float, ...] = (0.5,) + tuple(0.5 / (len(START_GRID) - 1) for _ in START_GRID[1:])

_LOG_W = np.log(np.outer(np.asarray(Q_WEIGHTS), np.asarray(START_WEIGHTS)))
_Q = np.asarray(Q_GRID)


def group_log_lr_many(p: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log L_q of K streams of grouped trials: null probabilities p[G], trials n[K, G], events k[K, G];
    returns [K, len(Q_GRID)] (the studies' vectorised form; `Stream.update` goes through it too)."""
    p = np.asarray(p, float)
    inner = (p > 0) & (p < 1)
    n = np.asarray(n, float)[:, inner]
    k = np.asarray(k, float)[:, inner]
    p = p[inner]
    if not len(p):
        return np.zeros((n.shape[0], len(_Q)))
    alt = p[None, :] + _Q[:, None] * (1 - p[None, :])  # [q, group]
    up = np.log(alt / p[None, :])
    down = np.log1p(-alt) - np.log1p(-p[None, :])
    return k @ up.T + (n - k) @ down.T


def advance(log_components: np.ndarray, trials: np.ndarray, llr: np.ndarray) -> None:
    """Add a look's log likelihood ratios llr[K, Q] to the components [K, Q, S] of K streams, in place: only the
    components whose start is at most the stream's trial count before the look (`trials[K]`)."""
    active = np.asarray(START_GRID)[None, :] <= np.asarray(trials)[:, None]  # [K, S]
    log_components += llr[:, :, None] * active[:, None, :]


def log_e_many(log_components: np.ndarray) -> np.ndarray:
    """log E of K streams' components [K, Q, S]."""
    a = _LOG_W[None] + log_components
    m = a.max(axis=(1, 2))
    return m + np.log(np.exp(a - m[:, None, None]).sum(axis=(1, 2)))


def deal_log_lr(p: float, x: int, q: float) -> float:
    """One trial's log likelihood ratio at strength q (what a deal added to the evidence)."""
    if not 0 < p < 1:
        return 0.0
    alt = p + q * (1 - p)
    return math.log(alt / p) if x else math.log1p(-alt) - math.log1p(-p)


def log_sum_exp(a: np.ndarray) -> float:
    m = float(np.max(a))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.exp(a - m).sum()))


@dataclass
class Stream:
    """One (test, subject)'s e-process: the log of each component, the trial count, events, and the running
    maximum of log E (the always-valid p-value is exp(-max_log_e))."""

    log_components: np.ndarray  # [len(Q_GRID), len(START_GRID)]
    trials: int = 0
    events: float = 0  # Bernoulli streams: events (an integer); `marked_ten`: the observed decision score
    expected: float = 0.0
    max_log_e: float = 0.0

    @staticmethod
    def new() -> "Stream":
        return Stream(np.zeros((len(Q_GRID), len(START_GRID))))

    @property
    def log_e(self) -> float:
        """log E_t now (E_0 = 1: log 0)."""
        return log_sum_exp(_LOG_W + self.log_components)

    @property
    def pvalue(self) -> float:
        """The always-valid p-value: 1 / max over looks of E."""
        return min(1.0, math.exp(-self.max_log_e))

    def best_q(self) -> float:
        """The strength whose components hold most of E now (what the evidence points at)."""
        per_q = [log_sum_exp(_LOG_W[i] + self.log_components[i]) for i in range(len(Q_GRID))]
        return Q_GRID[int(np.argmax(per_q))]

    def update(self, p: np.ndarray, n: np.ndarray, k: np.ndarray) -> float:
        """Add one look's Bernoulli trials (grouped); return the change of log E."""
        llr = group_log_lr_many(p, np.asarray(n)[None], np.asarray(k)[None])[0]
        return self.update_llr(llr, int(np.asarray(n).sum()), int(np.asarray(k).sum()),
                               float((np.asarray(p, float) * np.asarray(n, float)).sum()))

    def update_llr(self, llr: np.ndarray, n_new: int, events: float, expected: float) -> float:
        """Add one look's log likelihood ratios (one per component of the grid) over `n_new` trials; return the
        change of log E. Components whose start is at most the trial count before this look take them; later
        starts stay at 1."""
        if n_new == 0:
            return 0.0
        before = self.log_e
        comp = self.log_components[None]
        advance(comp, np.array([self.trials]), np.asarray(llr, float)[None])
        self.log_components = comp[0]
        self.trials += n_new
        self.events += events
        self.expected += expected
        now = self.log_e
        self.max_log_e = max(self.max_log_e, now)
        return now - before

    def to_json(self) -> dict:
        return {"log_components": [[float(x) for x in row] for row in self.log_components.tolist()],
                "trials": self.trials, "events": self.events, "expected": self.expected,
                "max_log_e": self.max_log_e}

    @staticmethod
    def from_json(d: dict) -> "Stream":
        comp = np.asarray(d["log_components"], float)
        if comp.shape != (len(Q_GRID), len(START_GRID)):
            raise ValueError(f"a stream's components have shape {comp.shape}, expected "
                             f"{(len(Q_GRID), len(START_GRID))}")
        ev = d["events"]
        return Stream(comp, int(d["trials"]), ev if isinstance(ev, int) else float(ev), float(d["expected"]),
                      float(d["max_log_e"]))


def betting_log_lr(score: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """log of prod_d (1 + lam S_d / M_d) for each betting fraction lam of `Q_GRID` (the grid doubles as the bets
    of a score stream): S_d a deal's centred score (null mean 0 given everything before the deal), M_d > 0 a bound
    with S_d >= -M_d, so every factor is at least 1 - lam > 0. Each factor has null mean 1: a martingale over deals
    (`marked_ten`)."""
    r = np.asarray(score, float) / np.asarray(bound, float)
    if not len(r):
        return np.zeros(len(_Q))
    return np.log1p(_Q[:, None] * r[None, :]).sum(axis=1)


def threshold_log(level: float, weight: float) -> float:
    """log of the alarm threshold 1 / (level x weight): the stream alarms when log E reaches it."""
    return -math.log(level * weight)
