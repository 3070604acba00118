"""Studies of `marked_ten`'s score-gated statistic (issue 14, "cheating only when it matters").

The cheat: the simulator's `CheaterSpec(player, "marked_ten", q, mode="score")`, a marked-Ten player who uses his
knowledge only on the deals where, before the deal, his side is within 10 points of the game target or trails the
leading other side by 10 or more (about a third of his deals), and plays honestly otherwise.

The statistic (`auditor.detectors.marked_ten.gated_test`): the pooled test over all his scored decisions and the
same test over the deals where the score "mattered" (`score_gate`), combined as the better of the two with the
exact correction for their correlation. Each study reports today's pooled p beside the combined p, from the same
fit (the pooled p is the combined test's own part: `detail.score_gate.p_pooled`).

Club: 60 members at 15 Scotch Whist tables of four in partnerships (the `calibrate_audit.POWER` marked-Ten club),
the cheater a strong player; the season's size set by the deals each member plays. Flags at the audit-wide level
marked_ten is given: its share of the error budget (0.20 of 0.05 = 0.01), Benjamini-Hochberg over the family of
the season's players (the test alone, as `calibrate_play` does; the audit's weighted BH over every test gives a lone
cheater about the same per-test level).

Studies (every season seeded from (seed, study, season index)):

- `gated_power_q{q}_{d}`: the score-gated cheater, q in `GATED_QS`, about d deals played each;
- `full_power_{q}`: the every-deal cheater of `calibrate_audit.POWER` (q = 1 and 0.5, ~400 deals played): the power
  lost to the combination;
- `honest_{k}`: all-honest seasons with accidental revokes at k times the simulator's rate (k = 1, 10): the rates
  of p <= 0.01, 0.05 over the players, pooled and combined, with the binomial bound.
"""

from __future__ import annotations

import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from scipy.stats import binom

from .calibrate_play import SKILLS
from .detectors.marked_ten import MarkedTen
from .simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships, simulate_season
from .simulate.spec import player_names
from .dealog import record_from_obj
from .replay.run import replay_records

CHEATER = "cheat"
LEVEL = 0.20 * 0.05  # marked_ten's share of the audit's error budget
ALPHAS = (0.01, 0.05)
GATED_QS = (1.0, 0.5)
BASE_REVOKE = 1 / 300  # the simulator's accidental revoke rate (SeasonSpec.revoke_rate)


def _rng(seed: int, study: str, i: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(study.encode()), int(i)])


def club_spec(q: float = 0.0, mode: str | None = None, deals_each: int = 400, n_players: int = 60,
              revoke_rate: float = BASE_REVOKE) -> SeasonSpec:
    """The club: n_players at Scotch Whist tables of four in pairs; one strong cheater when q > 0."""
    tables = [TableSpec(f"sw4-{j}", 4, sides=partnerships(4, "pairs")) for j in range(n_players // 4)]
    names = ([CHEATER] + player_names(n_players - 1)) if q > 0 else player_names(n_players)
    cheaters = [CheaterSpec(CHEATER, "marked_ten", q, mode=mode)] if q > 0 else []
    return SeasonSpec(tables=tables, n_deals=deals_each * n_players // 4, players=names, cheaters=cheaters,
                      skills={CHEATER: "strong"} if q > 0 else {}, skill_mix={s: 0.25 for s in SKILLS},
                      deck=False, time=False, revoke_rate=revoke_rate, season="gm")


def bh_flags(pvals: dict[str, float], level: float = LEVEL) -> set[str]:
    """Benjamini-Hochberg at `level` over one family: the subjects flagged."""
    items = sorted(pvals.items(), key=lambda kv: (kv[1], kv[0]))
    m = len(items)
    k = 0
    for j, (_, p) in enumerate(items, 1):
        if p <= level * j / m:
            k = j
    return {s for s, _ in items[:k]}


def season(seed: int, study: str, i: int, q: float, mode: str | None, deals_each: int,
           revoke_rate: float = BASE_REVOKE, n_players: int = 60) -> dict:
    """One season: every player's pooled and combined p (both gate rules), the cheater's flags."""
    t0 = time.perf_counter()
    sim = simulate_season(club_spec(q, mode, deals_each, n_players, revoke_rate), _rng(seed, study, i))
    rep = replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(sim.records)],
                         engine="batch", table=True)
    det = MarkedTen(details=False)
    assert rep.table is not None
    counts = det.count(rep.table)
    out: dict[str, Any] = {"seconds": 0.0, "played": sum(CHEATER in r["players"] for r in sim.records)}
    for rule in ("any", "own"):
        tests = MarkedTen(details=False, gate_rule=rule).finalize(counts)
        rows = {t.subject: {"p": t.pvalue, "p_pooled": t.detail["score_gate"]["p_pooled"] if t.detail else
                            t.controls["pooled"]["p"], "part": t.controls and (
                                "gated" if t.controls["score_gated"]["p"] < t.controls["pooled"]["p"] else "pooled"),
                            "gated_share": (t.controls["score_gated"]["deals"] / max(t.controls["pooled"]["deals"], 1))}
                for t in tests}
        new = bh_flags({s: r["p"] for s, r in rows.items()})
        old = bh_flags({s: r["p_pooled"] for s, r in rows.items()})
        out[rule] = {"rows": rows, "flag_new": CHEATER in new, "flag_old": CHEATER in old,
                     "false_new": len(new - {CHEATER}), "false_old": len(old - {CHEATER})}
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def _task(args: tuple) -> tuple[tuple, dict]:
    return args, season(*args)


def summarise(seasons: list[dict], rule: str) -> dict:
    n = len(seasons)
    if n == 0:
        return {}
    s = [x[rule] for x in seasons]
    out: dict[str, Any] = {"seasons": n, "played": round(float(np.mean([x["played"] for x in seasons]))),
                           "power_new": sum(x["flag_new"] for x in s) / n,
                           "power_old": sum(x["flag_old"] for x in s) / n,
                           "false_flags_new": sum(x["false_new"] for x in s),
                           "false_flags_old": sum(x["false_old"] for x in s)}
    ch = [x["rows"].get(CHEATER) for x in s]
    ch = [c for c in ch if c is not None]
    if ch:
        out["cheater_median_p_new"] = float(np.median([c["p"] for c in ch]))
        out["cheater_median_p_old"] = float(np.median([c["p_pooled"] for c in ch]))
        out["cheater_gated_share"] = round(float(np.mean([c["gated_share"] for c in ch])), 3)
    honest = [r for x in s for subj, r in x["rows"].items() if subj != CHEATER]
    m = len(honest)
    out["honest_tests"] = m
    for a in ALPHAS:
        for key, name in (("p", "new"), ("p_pooled", "old")):
            k = sum(r[key] <= a for r in honest)
            out[f"rate_{name}_p<={a:g}"] = round(k / m, 5) if m else None
            # the largest count a level-a test gives with probability 0.999 (one-sided binomial bound)
            out[f"bound_p<={a:g}"] = int(binom.ppf(0.999, m, a)) / m if m else None
    return out


SIZES_FAST = {"gated": 1, "full": 1, "honest": 1}
SIZES_FULL = {"gated": 40, "full": 40, "honest": 20}
GATED_DEALS = (1000, 2000)


def calibrate_marked(seed: int = 0, sizes: dict | None = None, workers: int = 2,
                     gated_deals: tuple[int, ...] = GATED_DEALS, n_players: int = 60) -> dict:
    n = sizes or SIZES_FULL
    tasks: list[tuple] = []
    for q in GATED_QS:
        for d in gated_deals:
            for i in range(n["gated"]):
                tasks.append((seed, f"gated_power_q{q}_{d}", i, q, "score", d, BASE_REVOKE, n_players))
    for q in (1.0, 0.5):
        for i in range(n["full"]):
            tasks.append((seed, f"full_power_{q}", i, q, None, 400, BASE_REVOKE, n_players))
    for k in (1, 10):
        for i in range(n["honest"]):
            tasks.append((seed, f"honest_{k}", i, 0.0, None, 400, k * BASE_REVOKE, n_players))
    done: dict[str, list[dict]] = {}
    t0 = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as ex:
            results = list(ex.map(_task, tasks))
    else:
        results = [_task(t) for t in tasks]
    for args, r in results:
        done.setdefault(args[1], []).append(r)
    out: dict[str, Any] = {"seed": seed, "sizes": n, "level": LEVEL, "seconds": round(time.perf_counter() - t0, 1),
                           "studies": {}}
    for study, rows in sorted(done.items()):
        out["studies"][study] = {rule: summarise(rows, rule) for rule in ("any", "own")}
    return out


def format_report(res: dict) -> str:
    lines = [f"marked_ten score gate: seed {res['seed']}, level {res['level']:g} (BH over the players), "
             f"{res['seconds']} s"]
    for study, by_rule in res["studies"].items():
        for rule, s in by_rule.items():
            if not s:
                continue
            lines.append(f"{study:24s} rule={rule:3s} seasons={s['seasons']:3d} played~{s['played']:5d} "
                         f"power new={s['power_new']:.2f} old={s['power_old']:.2f} "
                         f"false new={s['false_flags_new']} old={s['false_flags_old']} "
                         + " ".join(f"{k}={v}" for k, v in s.items() if k.startswith(("rate_", "cheater_"))))
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    import sys

    fast = "--fast" in sys.argv
    print(format_report(calibrate_marked(sizes=SIZES_FAST if fast else None, workers=2)))
