"""The monitor's guarantee on whole honest rooms with play: every monitored stream at once (issue 17).

    python bench/study_monitor_room.py run --rooms 200 [--first 0] [--seed 19] [--days 365] [--workers 2]
                                           --out rooms.jsonl
    python bench/study_monitor_room.py summary rooms.jsonl [more.jsonl ...] [--json out.json]

A room is a club of 60 members dealing about 100 deals a day with play, simulated by `auditor.simulate`: eleven
Scotch Whist tables of four in pairs and four All Fours tables of four in pairs (Foster's rules), the default mix
of skills, honest slips (accidental revokes at the simulator's default rate, three clumsy members at
`calibrate_play.CLUMSY_RATE`, half of all revokes claimed). The season is replayed as the audit replays it and cut
into days of 100 deals in the order they were dealt; every day is one look of `auditor monitor`'s own code: the
look's table (`AuditColumns.take`), `facts_from_columns`, `monitor.trials.look_trials` (all four monitored
tests: `dealer_jack`, `turnup_jack`, `marked_ten`, `revoke_pattern`) and `monitor.core.update_streams` on a state
made by `monitor.state.new_state` with the monitor's shares and capacity. A room-year "raises an alarm" when any
stream of any test alarms on any day: the chance the issue bounds by the level.

Next to it, the naive alternative: the fixed-sample exact tests of the three Bernoulli streams (`dealer_jack`,
`turnup_jack`, `revoke_pattern`: one-sided exact binomial / Poisson-binomial on each subject's running totals)
re-run every day, each flagging at level x share_t / m_t (the three tests' shares renormalised, m_t = the
subjects seen so far), as `study_monitor.naive_run` does for the dealing study. `marked_ten`'s fixed-sample test
fits its null on the whole field and is not re-run daily here (its naive rate can only add to the shown one).

`run` appends one JSON line per room to `--out` as each room ends, so that a long study can be cut into several
runs (`--first`); `summary` reads the lines (duplicates of a room are refused) and prints the rates with Wilson 95%
intervals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from auditor.audit import replay_for_audit
from auditor.calibrate_play import CLUMSY_RATE
from auditor.dealog import record_from_obj
from auditor.facts import facts_from_columns
from auditor.monitor.core import monitored_shares, update_streams
from auditor.monitor.state import DEFAULT_CAPACITY, new_state
from auditor.monitor.trials import MONITORED, look_trials
from auditor.replay.run import replay_records
from auditor.simulate import simulate_season
from auditor.simulate.spec import SeasonSpec, TableSpec, partnerships
from study_monitor import emit, naive_run, wilson  # the script's folder is on sys.path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "indep"))
import simulate as indep  # noqa: E402  (bench/indep/simulate.py: imports nothing from auditor)

PER_DAY = 100
LEVEL = 0.05
ALPHAS = (0.5, 0.2, 0.1, 0.05, 0.01)
NAIVE = ("dealer_jack", "turnup_jack", "revoke_pattern")
CLUMSY = 3
SLIP = 1 / 300  # the independent generator's honest slips per chance (the project simulator's default rate)


def room_spec(days: int, per_day: int = PER_DAY) -> SeasonSpec:
    tables = [TableSpec(f"sw4-{i}", 4, sides=partnerships(4, "pairs")) for i in range(11)]
    tables += [TableSpec(f"af4-{i}", 4, game="all_fours", sides=partnerships(4, "pairs")) for i in range(4)]
    spec = SeasonSpec(tables=tables, n_deals=days * per_day, players=60, deck=False, time=False, season="room")
    spec.revoke_rates = {m: CLUMSY_RATE for m in spec.member_names()[:CLUMSY]}
    return spec


def _rng(seed: int, room: int) -> np.random.Generator:
    return np.random.default_rng([seed, 20261202, room])


def _naive_counts(daily: list[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]], days: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The days' grouped trials of one test as `study_monitor.daily_counts` arrays (subjects by first sight)."""
    names: dict[str, int] = {}
    pvals: dict[float, int] = {}
    for day in daily:
        for s, (p, _, _) in day.items():
            names.setdefault(s, len(names))
            for v in p.tolist():
                pvals.setdefault(float(v), len(pvals))
    n = np.zeros((days, max(len(names), 1), max(len(pvals), 1)))
    k = np.zeros_like(n)
    for d, day in enumerate(daily):
        for s, (p, nn, kk) in day.items():
            for v, a, b in zip(p.tolist(), nn.tolist(), kk.tolist(), strict=True):
                n[d, names[s], pvals[float(v)]] += a
                k[d, names[s], pvals[float(v)]] += b
    pv = np.array(sorted(pvals, key=pvals.get) or [0.5])
    return pv, n, k


def season_table(generator: str, seed: int, room: int, days: int):
    """The room's year of deals (cut at days x 100) and its replayed table, in the order dealt."""
    n = days * PER_DAY
    if generator == "project":
        records = simulate_season(room_spec(days), _rng(seed, room)).records[:n]
        table = replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(records)],
                               engine="batch", table=True).table
    else:
        records = indep.season(n, seed * 1_000_003 + room, indep.Cheats(slip=SLIP), "club", 60)[:n]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "room.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
            table = replay_for_audit([path]).table
    assert len(table) == len(records)
    return records, table


def room_year(args: tuple[str, int, int, int, float]) -> dict:
    generator, seed, room, days, level = args
    t0 = time.time()
    records, table = season_table(generator, seed, room, days)
    state = new_state(level, DEFAULT_CAPACITY, monitored_shares())
    first_alarm: dict[str, int | None] = {t: None for t in MONITORED}
    daily: dict[str, list] = {t: [] for t in NAIVE}
    deals = {"scotch_whist": 0, "all_fours": 0}
    for g in (r["game"] for r in records):
        deals[g] += 1
    looks = 0
    for d in range(0, len(records), PER_DAY):
        looks += 1
        sub = table.take(np.arange(d, min(d + PER_DAY, len(records))))
        trials = look_trials(sub, facts_from_columns(sub))
        for a in update_streams(state, trials, looks, None):
            if first_alarm[a.test] is None:
                first_alarm[a.test] = looks
        for t in NAIVE:
            daily[t].append({s: (lt.p, lt.n, lt.k) for s, lt in trials[t].items()})
    out: dict = {"generator": generator, "seed": seed, "room": room, "days": days, "level": level, "deals": len(records),
                 "deals_by_game": deals, "looks": looks}
    shares = monitored_shares()
    tot = sum(shares[t] for t in NAIVE)
    for t in MONITORED:
        streams = state["streams"].get(t, {})
        peak = [max((h[1] for h in e["history"]), default=0.0) for e in streams.values()]
        ent = {"streams": len(streams), "alarms": sum(e["alarm"] is not None for e in streams.values()),
               "first_alarm_look": first_alarm[t],
               "trials": int(sum(e["history"][-1][2] for e in streams.values() if e["history"])),
               "ever_reached": {str(a): int(sum(p >= np.log(1 / a) for p in peak)) for a in ALPHAS}}
        if t in NAIVE:
            pv, n, k = _naive_counts(daily[t], looks)
            flag = naive_run(pv, n, k, shares[t] / tot, level)
            ent["naive_flags"] = int((flag >= 0).sum())
            ent["naive_first_look"] = int(flag[flag >= 0].min()) + 1 if (flag >= 0).any() else None
        out[t] = ent
    out["monitor_any"] = any(out[t]["alarms"] for t in MONITORED)
    out["naive_any"] = any(out[t]["naive_flags"] for t in NAIVE)
    out["seconds"] = round(time.time() - t0, 1)
    return out


def run(a: argparse.Namespace) -> None:
    tasks = [(a.generator, a.seed, r, a.days, a.level) for r in range(a.first, a.first + a.rooms)]
    done = set()
    if os.path.exists(a.out):
        with open(a.out, encoding="utf-8") as f:
            done = {(d["generator"], d["seed"], d["room"]) for d in map(json.loads, f) if d["days"] == a.days}
    tasks = [t for t in tasks if t[:3] not in done]

    def save(res: dict) -> None:
        with open(a.out, "a", encoding="utf-8") as f:  # one whole line per room: a cut run loses one room at most
            f.write(json.dumps(res, sort_keys=True) + "\n")
        print(f"room {res['room']}: any alarm {res['monitor_any']}, naive {res['naive_any']}, {res['seconds']} s",
              flush=True)

    if a.workers > 1:
        with ProcessPoolExecutor(a.workers) as ex:
            for res in ex.map(room_year, tasks):
                save(res)
    else:
        for t in tasks:
            save(room_year(t))


def summary(paths: list[str], json_out: str | None) -> dict:
    rooms: dict[tuple[int, int], dict] = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                key = (d["generator"], d["seed"], d["room"])
                if key in rooms:
                    raise SystemExit(f"room {key} appears twice")
                rooms[key] = d
    ys = [rooms[k] for k in sorted(rooms)]
    n = len(ys)
    mon = sum(y["monitor_any"] for y in ys)
    nai = sum(y["naive_any"] for y in ys)
    by_test = {}
    for t in MONITORED:
        streams = sum(y[t]["streams"] for y in ys)
        ent = {"streams": streams, "alarms": sum(y[t]["alarms"] for y in ys),
               "rooms_with_an_alarm": sum(bool(y[t]["alarms"]) for y in ys),
               "trials": sum(y[t]["trials"] for y in ys),
               "share_of_streams_ever_reaching_1_over_a": {
                   str(a): sum(y[t]["ever_reached"][str(a)] for y in ys) / max(streams, 1) for a in ALPHAS}}
        if t in NAIVE:
            ent["naive_rooms_flagged"] = sum(bool(y[t]["naive_flags"]) for y in ys)
        by_test[t] = ent
    doc = {"study": "monitor, honest rooms with play (issue 17)", "level": ys[0].get("level", LEVEL) if ys else LEVEL,
           "generators": sorted({y["generator"] for y in ys}), "seeds": sorted({y["seed"] for y in ys}), "room_years": n, "looks_per_room": sorted({y["looks"] for y in ys}),
           "mean_deals": float(np.mean([y["deals"] for y in ys])) if ys else 0.0,
           "mean_deals_by_game": {g: float(np.mean([y["deals_by_game"][g] for y in ys])) if ys else 0.0
                                  for g in ("scotch_whist", "all_fours")},
           "monitor_any_alarm": mon, "monitor_rate": mon / n if n else None, "monitor_wilson95": wilson(mon, n),
           "naive_any_flag": nai, "naive_rate": nai / n if n else None, "naive_wilson95": wilson(nai, n),
           "naive_first_looks": sorted(min(y[t]["naive_first_look"] for t in NAIVE if y[t]["naive_first_look"])
                                       for y in ys if y["naive_any"]),
           "by_test": by_test, "cpu_seconds": round(sum(y["seconds"] for y in ys), 1)}
    emit(doc, json_out)
    return doc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--generator", choices=("indep", "project"), default="indep")
    r.add_argument("--rooms", type=int, default=200)
    r.add_argument("--first", type=int, default=0)
    r.add_argument("--seed", type=int, default=19)
    r.add_argument("--days", type=int, default=365)
    r.add_argument("--level", type=float, default=LEVEL)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--out", required=True)
    s = sub.add_parser("summary")
    s.add_argument("paths", nargs="+")
    s.add_argument("--json", dest="json_out")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a)
    else:
        summary(a.paths, a.json_out)


if __name__ == "__main__":
    main(sys.argv[1:])
