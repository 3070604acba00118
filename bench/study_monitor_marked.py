"""The monitor's `marked_ten` stream on simulated play (issue 17): its calibration on honest rooms and the delay to
alarm of a marked-Ten player at full strength (q = 1) who starts on day 1 or on day 180.

    python bench/study_monitor_marked.py [--honest 12] [--days 120] [--delays 8] [--seed 17] [--workers 2]
                                         [--json out.json]

A room is the play calibration's club (`calibrate_play.marked_spec`: 60 members at 15 Scotch Whist tables of four
in pairs, the four skill levels in equal shares) dealing 100 deals a day, simulated with `auditor.simulate` and
replayed day by day; every day is one look of the monitor's code (`monitor.trials.marked_ten_trials`,
`monitor.core.update_streams`, with the state's weights). Play simulation costs about 1 ms a deal, so the honest
rooms are shorter than a year (`--days`) and fewer than the dealing study's 200.

Calibration: over every honest player-stream, the share whose evidence ever reached 1/a, for several a (Ville:
at most a if the hard-fact posterior were the exact null), and the rooms with any `marked_ten` alarm at the
room's thresholds (level 0.05).

Delay: the marked-Ten player `CHEATER` of `calibrate_play` in such a room, cheating from day 1, or from day 180
(the first 179 days an honest season of the same club: his stream goes on across the two); the deals he played
and the deals scored for him from his start to the alarm. Next to it the fixed-sample yardstick: the share of
these rooms in which the audit's own `marked_ten` test (fitted on the whole room) flags him at the stream's level
after his first N deals played, for N in `HORIZONS`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from auditor.calibrate_play import CHEATER, marked_spec
from auditor.dealog import record_from_obj
from auditor.detectors.marked_ten import MarkedTen
from auditor.monitor.core import monitored_shares, update_streams
from auditor.monitor.eprocess import Stream
from study_monitor import emit  # the script's folder is on sys.path
from auditor.monitor.state import DEFAULT_CAPACITY, new_state
from auditor.monitor.trials import marked_ten_trials
from auditor.replay.run import replay_records
from auditor.simulate import simulate_season

PER_DAY = 100
POSTERIOR = ["hard"]  # set by --posterior (the worker processes fork after it is set)
LEVEL = 0.05
ALPHAS = (0.5, 0.2, 0.1, 0.05, 0.01)
HORIZONS = (25, 50, 75, 100, 125, 150, 175, 200, 250, 300)


def _rng(seed: int, study: str, i: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(study.encode()), i])


def _table(records: list[dict], base: int):
    return replay_records([record_from_obj(r, "sim", 0, base + k + 1) for k, r in enumerate(records)],
                          engine="batch", table=True).table


def _season(q: float, days: int, rng: np.random.Generator) -> list[dict]:
    sim = simulate_season(marked_spec(q, 60, days * PER_DAY * 4 // 60), rng)
    return sim.records


def run_days(state: dict, records: list[dict], first_look: int) -> list[int]:
    """Each day of `records` one look of the monitor's marked_ten stream; the looks' numbers. The season is
    replayed once; a day's table is its rows (the rows are in input order)."""
    table = _table(records, 0)
    assert len(table) == len(records)
    looks = []
    for d in range(0, len(records), PER_DAY):
        look = first_look + d // PER_DAY
        day = table.take(np.arange(d, min(d + PER_DAY, len(records))))
        update_streams(state, {"marked_ten": marked_ten_trials(day, POSTERIOR[0])}, look, None)
        looks.append(look)
    return looks


def honest_room(args: tuple[int, int, int]) -> dict:
    seed, i, days = args
    state = new_state(LEVEL, DEFAULT_CAPACITY, monitored_shares())
    run_days(state, _season(0.0, days, _rng(seed, "monitor-marked-honest", i)), 1)
    streams = state["streams"]["marked_ten"]
    best = [Stream.from_json(e["e"]).max_log_e for e in streams.values()]
    return {"players": len(best), "max_log_e": best, "alarms": sum(e["alarm"] is not None for e in streams.values())}


def cheater_room(args: tuple[int, int, int]) -> dict:
    """The cheater from day `start` (1-based); his deals and scored deals from then to the alarm (None: none
    within 150 days of cheating)."""
    seed, i, start = args
    state = new_state(LEVEL, DEFAULT_CAPACITY, monitored_shares())
    look = 1
    if start > 1:
        honest = _season(0.0, start - 1, _rng(seed, "monitor-marked-before", i))
        look = run_days(state, honest, 1)[-1] + 1
    cheat = _season(1.0, 150, _rng(seed, "monitor-marked-cheat", i))
    played = 0
    scored_before = 0
    entry = state["streams"]["marked_ten"].get(CHEATER)
    if entry is not None:
        scored_before = Stream.from_json(entry["e"]).trials
    out: dict = {"start_day": start, "alarm": None}
    horizon_flags = {}
    table = _table(cheat, 0)
    assert len(table) == len(cheat)
    for d in range(0, len(cheat), PER_DAY):
        day = cheat[d:d + PER_DAY]
        played += sum(CHEATER in r["players"] for r in day)
        rows = np.arange(d, min(d + PER_DAY, len(cheat)))
        update_streams(state, {"marked_ten": marked_ten_trials(table.take(rows), POSTERIOR[0])}, look, None)
        entry = state["streams"]["marked_ten"].get(CHEATER)
        if entry is not None and entry["alarm"] is not None:
            out["alarm"] = {"look": look, "deals_played": played,
                            "deals_scored": Stream.from_json(entry["e"]).trials - scored_before}
            break
        look += 1
    if start == 1:  # the fixed-sample yardstick: the audit's test on the room's first deals, by his deals played
        w = state["streams"]["marked_ten"][CHEATER]["weight"]
        seen = np.cumsum([CHEATER in r["players"] for r in cheat])
        for h in HORIZONS:
            upto = int(np.searchsorted(seen, h)) + 1
            if upto > len(cheat):
                break
            det = MarkedTen()
            tests = det.finalize(det.count(table.take(np.arange(upto))))
            p = next((t.pvalue for t in tests if t.subject == CHEATER), 1.0)
            horizon_flags[h] = bool(p <= LEVEL * w)
        out["fixed_sample_flagged"] = horizon_flags
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--honest", type=int, default=12)
    ap.add_argument("--days", type=int, default=120)
    ap.add_argument("--delays", type=int, default=8)
    ap.add_argument("--late-start", type=int, default=180)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--posterior", choices=("hard", "soft"), default="hard")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args(argv)
    POSTERIOR[0] = a.posterior
    t0 = time.time()
    h_tasks = [(a.seed, i, a.days) for i in range(a.honest)]
    d_tasks = [(a.seed, i, s) for s in (1, a.late_start) for i in range(a.delays)]
    if a.workers > 1:
        with ProcessPoolExecutor(a.workers) as ex:
            honest = list(ex.map(honest_room, h_tasks))
            delays = list(ex.map(cheater_room, d_tasks))
    else:
        honest = [honest_room(t) for t in h_tasks]
        delays = [cheater_room(t) for t in d_tasks]
    best = np.array([x for r in honest for x in r["max_log_e"]])
    calib = {str(al): {"streams": int(len(best)), "reached": int((best >= -math.log(al)).sum()),
                       "share": float((best >= -math.log(al)).mean()) if len(best) else None}
             for al in ALPHAS}
    delay_out = {}
    for s in (1, a.late_start):
        got = [d for d in delays if d["start_day"] == s]
        played = sorted(d["alarm"]["deals_played"] for d in got if d["alarm"])
        scored = sorted(d["alarm"]["deals_scored"] for d in got if d["alarm"])
        cens = played + [math.inf] * (len(got) - len(played))
        delay_out[f"day_{s}"] = {"rooms": len(got), "alarmed": len(played),
                                 "median_deals_played_to_alarm": float(np.median(cens)) if len(played) * 2 > len(got)
                                 else None,
                                 "deals_played_to_alarm": played, "deals_scored_to_alarm": scored}
    first = [d for d in delays if d["start_day"] == 1]
    fixed = {str(h): sum(d.get("fixed_sample_flagged", {}).get(h, False) for d in first) / max(len(first), 1)
             for h in HORIZONS}
    n90 = next((h for h in HORIZONS if fixed[str(h)] >= 0.9), None)
    doc = {"study": "monitor marked_ten (issue 17)", "seed": a.seed, "posterior": a.posterior, "level": LEVEL, "deals_per_day": PER_DAY,
           "honest": {"rooms": len(honest), "days": a.days, "player_streams": int(len(best)),
                      "rooms_with_a_marked_ten_alarm": sum(r["alarms"] > 0 for r in honest),
                      "ever_reached_1_over_a": calib},
           "marked_ten_q1": {**delay_out, "fixed_sample_share_flagged_by_deals_played": fixed,
                             "fixed_sample_deals_for_90pct": n90,
                             "ratio_day_1": (delay_out["day_1"]["median_deals_played_to_alarm"] / n90
                                             if n90 and delay_out["day_1"]["median_deals_played_to_alarm"] else None)},
           "seconds": round(time.time() - t0, 1)}
    emit(doc, a.json_out)
    return doc


if __name__ == "__main__":
    main(sys.argv[1:])
