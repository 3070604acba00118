"""The monitor's guarantee and its detection delay, measured (issue 17).

    python bench/study_monitor.py [--years 200] [--delays 100] [--seed 17] [--workers 2] [--json out.json]

Honest room-years. A room of 60 players deals about 100 deals a day for 365 days: 70 Scotch Whist deals (Foster,
tables of four in pairs) and 30 All Fours deals (Foster, tables of four; thrown-in deals dealt again), from the
dealing generator `auditor.dealgen` (uniform shuffles, the exact dealing of the rules; `DealingFacts` read off the
decks as the detectors read them). The deals are cut into days in the order they were dealt; the room looks once
a day. The monitor updates the `dealer_jack` and `turnup_jack` e-processes of every dealer at each look with the
same functions `auditor monitor` uses (`monitor.eprocess`, `monitor.state.subject_weight`, the shares of
`monitor.core.monitored_shares`) and alarms at E >= 1 / (level x weight). The monitor's budget also holds
`revoke_pattern`'s share, which these dealing-only rooms do not use (play is not simulated here): the measured
rate is that of the two dealing streams, under the budget of all three.

Next to it, the naive alternative: the fixed-sample exact tests re-run every day on each dealer's running totals
(exact binomial / Poisson-binomial, one-sided), each flagging at the per-test level a one-off audit of these two
tests would use for a lone result, level x share_t / m_t (shares of the two renormalised, m_t = the dealers seen).
A room-year "raises an alarm" when any dealer of either test alarms (flags) on any day.

Delays. A Jack stacker (Scotch Whist, q = 0.25: in a quarter of his deals he moves the Jack of trumps into his
hand) starts on day 1 or on day 180 of such a room (the same seatings and packs with and without the cheat, so
before his start day his deals are honest); the number of deals he dealt from his start day to the look that
alarmed, over `--delays` rooms; next to the number of his deals a fixed-sample exact binomial test with a known
horizon needs for 90% power at the same level the monitor spends on his stream (and at the one-off audit's level).

Prints one JSON document (and writes it with --json).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats as st_

from auditor import dealgen
from auditor.cards import RJ
from auditor.facts import held_prob
from auditor.monitor.core import monitored_shares
from auditor.monitor.eprocess import START_GRID, Q_GRID, advance, group_log_lr_many, log_e_many, threshold_log
from auditor.monitor.state import DEFAULT_CAPACITY, subject_weight
from auditor.stats import exact

DAYS = 365
PLAYERS = 60
SW_PER_DAY = 70
AF_PER_DAY = 30
LEVEL = 0.05
DELAY_DAYS = 730  # the stacker's rooms run two years, so that a start on day 180 is not cut short by the year's end


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    ph = k / n
    c = (ph + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, c - h), min(1.0, c + h)]


def _rng(seed: int, *tags: int) -> np.random.Generator:
    return np.random.default_rng([seed, *tags])


def daily_counts(subject: np.ndarray, day: np.ndarray, p: np.ndarray, x: np.ndarray, days: int,
                 players: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trials grouped per (day, subject, distinct p): (p values [G], n [days, players, G], k [days, players, G])."""
    pv, g = np.unique(p, return_inverse=True)
    n = np.zeros((days, players, len(pv)))
    k = np.zeros_like(n)
    np.add.at(n, (day, subject, g), 1)
    np.add.at(k, (day, subject, g), x)
    return pv, n, k


def sw_trials(season: dealgen.Season, days: int) -> tuple[np.ndarray, ...]:
    f = season.facts()
    card = f.trump.astype(np.int64) * 13 + RJ
    x = (f.holder[np.arange(len(f)), card] == 0).astype(float)
    per_cfg = np.array([float(held_prob(c, 0, RJ)) for c in f.configs])
    p = per_cfg[f.cfg]
    dealer = np.array([int(f.players[i][1:]) for i in f.seat_player[:, 0]])
    day = np.arange(len(f)) * days // len(f)
    return dealer, day, p, x


def af_trials(season: dealgen.Season, days: int) -> tuple[np.ndarray, ...]:
    f = season.facts()
    first = np.flatnonzero(f.tu_run == 0)
    rows = f.tu_deal[first]
    dealer = np.array([int(f.players[i][1:]) for i in f.seat_player[rows, 0]])
    day = rows * days // len(f)
    return dealer, day, f.tu_p[first].astype(float), f.tu_jack[first].astype(float)


def monitor_run(pv: np.ndarray, n: np.ndarray, k: np.ndarray, weight: np.ndarray, level: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """The e-processes of every subject over the days: (first alarm day per subject or -1, trials at each day's
    end [days, players])."""
    days, players, _ = n.shape
    comp = np.zeros((players, len(Q_GRID), len(START_GRID)))
    trials = np.zeros(players, np.int64)
    alarm = np.full(players, -1)
    thr = np.array([threshold_log(level, w) if w > 0 else np.inf for w in weight])
    seen = np.zeros((days, players), np.int64)
    for d in range(days):
        active = n[d].sum(1) > 0
        if active.any():
            llr = group_log_lr_many(pv, n[d][active], k[d][active])
            sub = comp[active]
            advance(sub, trials[active], llr)
            comp[active] = sub
            trials[active] += n[d][active].sum(1).astype(np.int64)
            le = log_e_many(comp[active])
            idx = np.flatnonzero(active)
            hit = idx[(le >= thr[idx]) & (alarm[idx] < 0)]
            alarm[hit] = d
        seen[d] = trials
    return alarm, seen


def weights(n: np.ndarray, share: float, capacity: int) -> np.ndarray:
    """Each subject's weight by the order of his first trial (ties: by name, as the monitor ranks them)."""
    first = np.where(n.sum(2).any(0), np.argmax(n.sum(2) > 0, axis=0), n.shape[0] + 1)
    order = sorted(range(n.shape[1]), key=lambda s: (first[s], s))
    w = np.zeros(n.shape[1])
    for rank, s in enumerate(order, 1):
        if first[s] <= n.shape[0]:
            w[s] = subject_weight(share, rank, capacity)
    return w


def naive_run(pv: np.ndarray, n: np.ndarray, k: np.ndarray, share: float, level: float) -> np.ndarray:
    """The fixed-sample exact test re-run each day on the running totals: first flag day per subject or -1."""
    days, players, _ = n.shape
    N, K = np.cumsum(n, 0), np.cumsum(k, 0).sum(2)
    flag = np.full(players, -1)
    for d in range(days):
        m_t = int((N[d].sum(1) > 0).sum())
        if m_t == 0:
            continue
        alpha = level * share / m_t
        mean = (N[d] * pv[None, :]).sum(1)
        var = (N[d] * pv[None, :] * (1 - pv[None, :])).sum(1)
        z = (K[d] - mean) / np.sqrt(np.maximum(var, 1e-12))
        for s in np.flatnonzero((z > 2.5) & (flag < 0)).tolist():  # the exact tail only where it can be small
            groups = tuple((float(p), int(c)) for p, c in zip(pv, N[d, s], strict=True) if c > 0 and 0 < p < 1)
            pval = exact.pb_sf(float(K[d, s]), groups) if groups else 1.0
            if pval <= alpha:
                flag[s] = d
    return flag


def room_year(args: tuple[int, int, float]) -> dict:
    seed, i, level = args
    rng = _rng(seed, 1, i)
    shares = monitored_shares()
    sw = dealgen.season("scotch_whist/foster", 4, PLAYERS, SW_PER_DAY * DAYS // PLAYERS, rng, sides="pairs_opposite")
    af = dealgen.season("all_fours/foster", 4, PLAYERS, AF_PER_DAY * DAYS // PLAYERS, rng)
    out: dict = {"seed": [seed, 1, i], "deals": len(sw) + len(af)}
    naive_share = {"dealer_jack": shares["dealer_jack"] / (shares["dealer_jack"] + shares["turnup_jack"]),
                   "turnup_jack": shares["turnup_jack"] / (shares["dealer_jack"] + shares["turnup_jack"])}
    for test, trials in (("dealer_jack", sw_trials(sw, DAYS)), ("turnup_jack", af_trials(af, DAYS))):
        subj, day, p, x = trials
        pv, n, k = daily_counts(subj, day, p, x, DAYS, PLAYERS)
        alarm, _ = monitor_run(pv, n, k, weights(n, shares[test], DEFAULT_CAPACITY), level)
        flag = naive_run(pv, n, k, naive_share[test], level)
        out[test] = {"monitor_alarms": int((alarm >= 0).sum()), "naive_flags": int((flag >= 0).sum()),
                     "monitor_first_day": int(alarm[alarm >= 0].min()) if (alarm >= 0).any() else None,
                     "naive_first_day": int(flag[flag >= 0].min()) if (flag >= 0).any() else None}
    out["monitor_any"] = any(out[t]["monitor_alarms"] for t in ("dealer_jack", "turnup_jack"))
    out["naive_any"] = any(out[t]["naive_flags"] for t in ("dealer_jack", "turnup_jack"))
    return out


def fixed_sample_n(p: float, q: float, alpha: float, power: float = 0.9) -> int:
    """Smallest n at which the exact one-sided binomial test at `alpha` has the power against p + q (1 - p)."""
    alt = p + q * (1 - p)
    lo, hi = 1, 20_000
    while lo < hi:
        mid = (lo + hi) // 2
        c = int(st_.binom.isf(alpha, mid, p)) + 1  # smallest count with sf(c - 1) <= alpha
        while st_.binom.sf(c - 1, mid, p) > alpha:
            c += 1
        while c > 0 and st_.binom.sf(c - 2, mid, p) <= alpha:
            c -= 1
        if st_.binom.sf(c - 1, mid, alt) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def stacker_delay(args: tuple[int, int, float, float, int]) -> dict:
    """One room with a Jack stacker (player p000) from `start` (a day index): deals he dealt from then to alarm."""
    seed, i, level, q, start = args
    shares = monitored_shares()
    per = SW_PER_DAY * DELAY_DAYS // PLAYERS
    honest = dealgen.season("scotch_whist/foster", 4, PLAYERS, per, _rng(seed, 2, i), sides="pairs_opposite")
    cheat = dealgen.season("scotch_whist/foster", 4, PLAYERS, per, _rng(seed, 2, i), sides="pairs_opposite",
                           cheats={"p000": dealgen.Cheat.jack_stacker(q)})
    hs, cs = sw_trials(honest, DELAY_DAYS), sw_trials(cheat, DELAY_DAYS)
    assert np.array_equal(hs[0], cs[0]) and np.array_equal(hs[1], cs[1]), "the two rooms must deal alike"
    use = hs[1] >= start
    subj, day, p = cs[0], cs[1], cs[2]
    x = np.where(use, cs[3], hs[3])
    pv, n, k = daily_counts(subj, day, p, x, DELAY_DAYS, PLAYERS)
    w = weights(n, shares["dealer_jack"], DEFAULT_CAPACITY)
    alarm, seen = monitor_run(pv, n[:, :1], k[:, :1], w[:1], level)
    before = int(seen[start - 1, 0]) if start > 0 else 0
    d = int(alarm[0])
    return {"alarm_day": d if d >= 0 else None, "deals_to_alarm": int(seen[d, 0]) - before if d >= 0 else None,
            "deals_available": int(seen[-1, 0]) - before, "weight": float(w[0])}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--years", type=int, default=200)
    ap.add_argument("--delays", type=int, default=100)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--level", type=float, default=LEVEL)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args(argv)
    t0 = time.time()
    tasks = [(a.seed, i, a.level) for i in range(a.years)]
    dtasks = [(a.seed, i, a.level, 0.25, s) for s in (0, 179) for i in range(a.delays)]
    if a.workers > 1:
        with ProcessPoolExecutor(a.workers) as ex:
            years = list(ex.map(room_year, tasks, chunksize=2))
            delays = list(ex.map(stacker_delay, dtasks, chunksize=2))
    else:
        years = [room_year(t) for t in tasks]
        delays = [stacker_delay(t) for t in dtasks]
    mon = sum(y["monitor_any"] for y in years)
    nai = sum(y["naive_any"] for y in years)
    p = 11 / 35
    w = subject_weight(monitored_shares()["dealer_jack"], 1, DEFAULT_CAPACITY)
    audit_level = a.level * (monitored_shares()["dealer_jack"] / (monitored_shares()["dealer_jack"]
                                                                   + monitored_shares()["turnup_jack"])) / PLAYERS
    fixed = {"stream_level": a.level * w, "n_at_stream_level": fixed_sample_n(p, 0.25, a.level * w),
             "audit_level": audit_level, "n_at_audit_level": fixed_sample_n(p, 0.25, audit_level)}
    delay_out = {}
    for s, label in ((0, "day_1"), (179, "day_180")):
        got = [d for d, t in zip(delays, dtasks, strict=True) if t[4] == s]
        deals = [d["deals_to_alarm"] for d in got if d["deals_to_alarm"] is not None]
        censored = sorted(deals) + [math.inf] * (len(got) - len(deals))  # never alarmed: past every count
        med = float(np.median(censored)) if len(deals) * 2 > len(got) else None
        delay_out[label] = {
            "rooms": len(got), "alarmed": len(deals),
            "median_deals_to_alarm": med,
            "quartiles_of_alarmed": [float(np.quantile(deals, 0.25)), float(np.quantile(deals, 0.75))]
            if deals else None,
            "p90_deals_to_alarm": float(np.quantile(censored, 0.9)) if len(deals) >= 0.9 * len(got) else None,
            "median_alarm_day": float(np.median([d["alarm_day"] for d in got if d["alarm_day"] is not None]))
            if deals else None,
            "ratio_to_fixed_sample": med / fixed["n_at_stream_level"] if med is not None else None,
            "ratio_to_fixed_sample_audit_level": med / fixed["n_at_audit_level"] if med is not None else None}
    doc = {
        "study": "monitor (issue 17)", "seed": a.seed, "level": a.level, "days": DAYS, "players": PLAYERS,
        "deals_per_day": SW_PER_DAY + AF_PER_DAY, "capacity": DEFAULT_CAPACITY, "shares": monitored_shares(),
        "strengths": list(Q_GRID), "starts": list(START_GRID),
        "honest": {"room_years": len(years), "mean_deals": float(np.mean([y["deals"] for y in years])),
                   "monitor_any_alarm": mon, "monitor_rate": mon / len(years),
                   "monitor_wilson95": wilson(mon, len(years)),
                   "naive_any_flag": nai, "naive_rate": nai / len(years), "naive_wilson95": wilson(nai, len(years)),
                   "monitor_alarms_by_test": {t: sum(y[t]["monitor_alarms"] for y in years)
                                              for t in ("dealer_jack", "turnup_jack")},
                   "naive_flags_by_test": {t: sum(y[t]["naive_flags"] for y in years)
                                           for t in ("dealer_jack", "turnup_jack")},
                   "naive_first_days": sorted(min(d for d in (y["dealer_jack"]["naive_first_day"],
                                                             y["turnup_jack"]["naive_first_day"]) if d is not None)
                                              for y in years if y["naive_any"])},
        "jack_stacker_q025": {"fixed_sample_90pct_power": fixed, **delay_out},
        "marked_ten": "not monitored (audit only): no delay measured", "delay_days": DELAY_DAYS,
        "seconds": round(time.time() - t0, 1),
    }
    emit(doc, a.json_out)
    return doc


def emit(doc: dict, json_out: str | None) -> None:
    """The study's numbers on stdout, and (whole or not at all) in `json_out` when given."""
    text = json.dumps(doc, indent=2)
    if json_out:
        from auditor.atomic import write_text

        write_text(json_out, text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
