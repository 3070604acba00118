"""What one look adds to each monitored stream: grouped Bernoulli trials per (test, subject), read off the table of
the look's new deals with the detectors' own nulls (issue 17).

- `dealer_jack`: each Scotch Whist deal whose dealing can be audited (`facts.DealingFacts`), the dealer's trial:
  event = he holds the Jack of trumps, null = `facts.held_prob(config, 0, Jack)` (the exact chance of his seat under
  the deal's rules, the same as the detector's). The tests hold these groups equal to the detector's counts.
- `turnup_jack`: each All Fours deal's first turn-up, the dealer's trial: event = a Jack, null = `facts.tu_p` (the
  exact chance given the cards already out).
- `revoke_pattern`: each revoke the replay found, the revoker's trial: event = the revoke paid, null = its chance
  pi of paying if the revoke card were an accident (`RevokePattern.count`'s own groups: no field is fitted).

Each stream's look is kept as groups (p, trials, events) -- all the likelihood ratio needs -- and, for the dealing
tests, the deals where the event happened (their keys, for the alarm page's "deals that moved it most").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..cards import RJ
from ..columns import AuditColumns
from ..detectors.marked_ten import MarkedTen, score_all
from ..detectors.revoke_pattern import RevokePattern
from ..facts import DealingFacts, held_prob
from .eprocess import betting_log_lr

MONITORED: tuple[str, ...] = ("dealer_jack", "turnup_jack", "marked_ten", "revoke_pattern")
MARKED_FOLDS = 5


@dataclass
class LookTrials:
    """One stream's trials in one look: groups of equal null probability, and the deals with the event."""

    p: np.ndarray
    n: np.ndarray
    k: np.ndarray
    events: list[dict] = field(default_factory=list)  # {"table", "game_id", "deal_no", "p"}
    llr: np.ndarray | None = None  # a score stream (`marked_ten`): the look's log likelihood ratios themselves
    trials: int = 0  # ... over this many deals,
    score: float = 0.0  # with this observed score
    score_expected: float = 0.0  # against this null mean

    @staticmethod
    def of(p: np.ndarray, x: np.ndarray) -> "LookTrials":
        vals, inv = np.unique(np.asarray(p, float), return_inverse=True)
        n = np.bincount(inv, minlength=len(vals)).astype(np.int64)
        k = np.bincount(inv, weights=np.asarray(x, float), minlength=len(vals)).round().astype(np.int64)
        return LookTrials(vals, n, k)


def _deal_ref(table: AuditColumns, row: int, p: float) -> dict:
    return {"table": table.tables[int(table.table[row])], "game_id": table.game_ids[int(table.game[row])],
            "deal_no": int(table.deal_no[row]), "p": p}


def _by_subject(table: AuditColumns, facts: DealingFacts, subject: np.ndarray, rows: np.ndarray, x: np.ndarray,
                p: np.ndarray) -> dict[str, LookTrials]:
    out: dict[str, LookTrials] = {}
    for s in np.unique(subject).tolist():
        m = subject == s
        t = LookTrials.of(p[m], x[m])
        t.events = [_deal_ref(table, int(facts.result_index[r]), float(pp))
                    for r, xx, pp in zip(rows[m].tolist(), x[m].tolist(), p[m].tolist(), strict=True) if xx]
        out[facts.players[int(s)]] = t
    return out


def dealer_jack_trials(table: AuditColumns, facts: DealingFacts) -> dict[str, LookTrials]:
    """{dealer: his trials} of the Scotch Whist deals of the table (`facts` of the same table)."""
    rows = np.flatnonzero(facts.game == 0) if len(facts) else np.zeros(0, np.int64)
    if not len(rows):
        return {}
    card = facts.trump[rows].astype(np.int64) * 13 + RJ
    x = (facts.holder[rows, card] == 0).astype(np.int8)
    per_cfg = np.array([float(held_prob(c, 0, RJ)) for c in facts.configs] or [0.0])
    p = per_cfg[facts.cfg[rows]]
    return _by_subject(table, facts, facts.seat_player[rows, 0], rows, x, p)


def turnup_jack_trials(table: AuditColumns, facts: DealingFacts) -> dict[str, LookTrials]:
    """{dealer: his first turn-ups} of the All Fours deals of the table."""
    first = np.flatnonzero(facts.tu_run == 0)
    if not len(first):
        return {}
    rows = facts.tu_deal[first]
    return _by_subject(table, facts, facts.seat_player[rows, 0], rows, facts.tu_jack[first].astype(np.int8),
                       facts.tu_p[first].astype(float))


def revoke_trials(table: AuditColumns) -> dict[str, LookTrials]:
    """{revoker: his revokes} (group = the revoke's chance pi of paying, event = it paid)."""
    if not len(table):
        return {}
    rev = RevokePattern().count(table).revokes
    out: dict[str, LookTrials] = {}
    for pl, (a, b) in sorted(rev.spans().items()):
        tot = rev.totals(a, b)
        pis = sorted(tot)
        out[pl] = LookTrials(np.array(pis, float), np.array([tot[g][0] for g in pis], np.int64),
                             np.array([tot[g][1] for g in pis], np.int64))
    return out


def marked_ten_trials(table: AuditColumns, posterior: str = "hard") -> dict[str, LookTrials]:
    """{player: his scored deals} of `marked_ten` over the table: per deal d the sum S_d of his decisions'
    centred scores under the hard-fact posterior (the Ten uniform over the unknown cards of the seats not shown
    void in trumps: no model fitted), bounded below by -M_d (the sum of each decision's worst case), as the
    betting factors of `eprocess.betting_log_lr`. The decisions and their centring come from the detector
    (`score_all`: the centring c_t is the field's mean aggression in the decision's context, fitted on the other
    players' folds of this look). `posterior="soft"`: the detector's fitted posterior instead (fitted on the other
    players' folds of the look: not predictable; for the study's comparison only)."""
    if not len(table):
        return {}
    counts = MarkedTen().count(table)
    if counts.n_deals == 0:
        return {}
    scores = score_all(counts, folds=MARKED_FOLDS, targets=("ten",))
    main = scores["targets"].get("ten")
    if main is None:
        return {}
    out: dict[str, LookTrials] = {}
    A = main.A
    for pl, sel in sorted(main.by_player.items()):
        S, M, obs, mean = _deal_scores(A, main, np.asarray(sel, np.int64),
                                       main.p_soft if posterior == "soft" else main.p_hard)
        keep = M > 1e-12
        if not keep.any():
            continue
        out[scores["players"][pl]] = LookTrials(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64),
                                                llr=betting_log_lr(S[keep], M[keep]), trials=int(keep.sum()),
                                                score=obs, score_expected=mean)
    return out


def _deal_scores(A, main, sel: np.ndarray, post: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per deal of the decisions `sel`: the centred score S_d = sum_t w_t (g_t(true) - E g_t) under the hard-fact
    posterior, and its bound M_d = -(smallest S_d over the places the Ten can be: the seats that are candidates at
    every decision of the deal), so S_d >= -M_d whatever the place; and the observed and expected sums."""
    S: list[float] = []
    M: list[float] = []
    obs_all = mean_all = 0.0
    deal = A.d_deal[sel]
    cuts = np.flatnonzero(np.diff(deal)) + 1
    for part in np.split(sel, cuts):
        at: dict[int, float] = {}
        seen: dict[int, int] = {}
        obs = mean = 0.0
        for t in part.tolist():
            a, b = int(main.c_start[t]), int(main.c_end[t])
            w = float(main.w[t])
            g = A.c_g[a:b].astype(float)
            mean += w * float((post[a:b] * g).sum())
            obs += w * float((A.c_true[a:b] * g).sum())
            for seat, gv in zip(A.c_seat[a:b].tolist(), g.tolist(), strict=True):
                at[seat] = at.get(seat, 0.0) + w * gv
                seen[seat] = seen.get(seat, 0) + 1
        feasible = [v for seat, v in at.items() if seen[seat] == len(part)]
        low = min(feasible) if feasible else obs
        S.append(obs - mean)
        M.append(mean - low)
        obs_all += obs
        mean_all += mean
    return np.array(S), np.array(M), obs_all, mean_all


def look_trials(table: AuditColumns, facts: DealingFacts) -> dict[str, dict[str, LookTrials]]:
    """{test: {subject: trials}} of every monitored test over the table of one look's new deals."""
    return {"dealer_jack": dealer_jack_trials(table, facts), "turnup_jack": turnup_jack_trials(table, facts),
            "marked_ten": marked_ten_trials(table), "revoke_pattern": revoke_trials(table)}
