"""`auditor calibrate --audit`: the audit as a whole, on simulated clubs, through the same path as `auditor audit`.

(a) Honest clubs: seasons in which nobody cheats, of varied make-up (40, 60 or 80 members; the simulator's novice,
    club, strong and reader skill mixes in turn; tables of every size the simulator deals, Scotch Whist under both
    presets and All Fours, in pairs, teams or every man for himself; dealers who shuffle by hand at some tables;
    one to three clumsy members who revoke by accident on 1 chance in 30; the deck logged or not). Each season is
    written as deal-log/1 and audited by `auditor.audit.audit_paths`, exactly as the CLI does. Reported: the share
    of seasons with any flag (the audit's promise: at most its level), with a Wilson 95% interval; the mean number
    of flags per season; per test, the rates of p <= 0.001 / 0.01 / 0.05 among its tests.
(b) A lone cheater in an otherwise honest club (the issue's power table): a Jack stacker (q = 0.25, ~200 deals
    dealt, 60 members at Foster tables of four in pairs), a marked-Ten player at full and half strength (~400 deals
    played, same club), an All Fours turn-up stacker (q = 0.25, ~60 deals dealt, two-player tables). Reported: the
    share of seasons in which he is flagged (on his own test, and on any), the per-test level the audit-wide
    procedure gave his test in that audit, and beside it the oracle: the exact single test at that level (the exact
    binomial power for the Jack tests; for the marked Ten, the simulator's own likelihood-ratio yardstick at that
    level). Also the realised false-discovery proportion: flags naming an honest member, over flags.

Every season's generator is seeded from (seed, study, season): the numbers are reproducible; seasons run in worker
processes (`workers`), each season whole in one process, so the result does not depend on how many there are.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .audit import audit_paths
from .pools import closing_pool
from .calibrate_play import REVOKER_Q, lr_yardstick
from .dealog import record_from_obj
from .replay.reference import DealResult, replay_deal
from .simulate import CheaterSpec, SeasonSpec, SimulationError, TableSpec, partnerships, simulate_season
from .simulate.spec import player_names
from .stats import exact

ALPHAS = (0.001, 0.01, 0.05)
CHEATER = "cheat"  # the lone cheater's name in the power studies
CONFEDERATE = "confed"  # a cutter_stacker's confederate (honest otherwise)

# the simulator's skill mixes, in turn: most members novices, club players, strong players, readers
MIXES = {
    "novice": {"novice": 0.6, "club": 0.3, "strong": 0.1, "reader": 0.0},
    "club": {"novice": 0.2, "club": 0.45, "strong": 0.25, "reader": 0.1},
    "strong": {"novice": 0.05, "club": 0.35, "strong": 0.5, "reader": 0.1},
    "reader": {"novice": 0.1, "club": 0.3, "strong": 0.2, "reader": 0.4},
}

# (game, rules, players, sides): every table size the simulator deals
TABLE_KINDS = (
    ("scotch_whist", "foster", 2, None), ("scotch_whist", "foster", 3, None),
    ("scotch_whist", "foster", 4, "pairs"), ("scotch_whist", "foster", 4, None),
    ("scotch_whist", "foster", 5, None), ("scotch_whist", "foster", 6, "pairs"),
    ("scotch_whist", "foster", 6, "teams"), ("scotch_whist", "foster", 6, None),
    ("scotch_whist", "foster", 7, None), ("scotch_whist", "foster", 8, "pairs"),
    ("scotch_whist", "russian", 4, "pairs"), ("scotch_whist", "russian", 5, None),
    ("scotch_whist", "russian", 6, "pairs"),
    ("all_fours", "foster", 2, None), ("all_fours", "foster", 3, None), ("all_fours", "foster", 4, "pairs"),
)
CLUMSY_RATE = 1 / 30


def _rng(seed: int, study: str, i: int) -> np.random.Generator:
    import zlib

    return np.random.default_rng([int(seed), zlib.crc32(study.encode()), int(i)])


def honest_club_spec(rng: np.random.Generator, i: int, n_deals: int):
    """The i-th honest club: its make-up drawn from `rng` (skill mixes in turn by i; every table kind appears
    within a few seasons)."""

    members = int(rng.choice([40, 60, 80]))
    mix_name = list(MIXES)[i % len(MIXES)]
    k = int(rng.integers(4, 9))
    first = i % len(TABLE_KINDS)  # each season has the next kind in turn, plus others drawn at random
    kinds = [first] + [int(x) for x in rng.choice(len(TABLE_KINDS), size=k - 1)]
    tables, seats = [], 0
    for j, kind in enumerate(kinds):
        game, rules, n, sides = TABLE_KINDS[kind]
        if seats + n > members:
            break
        seats += n
        tables.append(TableSpec(f"t{j}-{game[:2]}{n}", n, game=game, rules=rules,
                                sides=partnerships(n, sides) if sides else None,
                                packs=("red", "blue") if rng.random() < 0.3 else (),
                                human_shuffle=bool(rng.random() < 0.3)))

    names = player_names(members)
    clumsy = [str(x) for x in rng.choice(names, size=int(rng.integers(1, 4)), replace=False)]
    return SeasonSpec(tables=tables, n_deals=n_deals, players=names, skill_mix=dict(MIXES[mix_name]),
                      revoke_rates={p: CLUMSY_RATE for p in clumsy}, deck=bool(rng.random() < 0.7),
                      season=f"h{i}"), {"members": members, "mix": mix_name, "tables": len(tables),
                                        "kinds": sorted({TABLE_KINDS[k][0][:2] + str(TABLE_KINDS[k][2])
                                                         for k in kinds[:len(tables)]}),
                                        "clumsy": len(clumsy),
                                        "human_tables": sum(t.human_shuffle for t in tables)}


@dataclass(frozen=True)
class PowerStudy:
    """A lone cheater in an otherwise honest club (60 members unless `members` says otherwise)."""

    key: str
    test: str  # the test meant to catch him
    kind: str  # the simulator's cheat
    q: float
    game: str
    table_size: int
    deals: int  # deals of the season (so that each member deals or plays about as the target says)
    target: float  # the share of seasons in which he must be flagged
    per: str  # what the season's size counts for him: deals dealt, deals played or pair deals
    mode: str | None = None  # the cheat's mode (a score-gated marked Ten: "score")
    confederate: bool = False  # a cutter_stacker's confederate (CONFEDERATE, an honest player otherwise)
    members: int = 60
    revoke_rate: float | None = None  # the club's accidental revokes per chance (None: the simulator's 1/300)

    @property
    def subject(self) -> str:
        """The subject of `test` that names the cheat (a pair test names dealer+cutter)."""
        return f"{CHEATER}+{CONFEDERATE}" if self.confederate else CHEATER

    def spec(self):

        n = self.table_size
        tables = [TableSpec(f"t{j}", n, game=self.game, sides=partnerships(n, "pairs") if n == 4 else None)
                  for j in range(self.members // n)]
        skill = "strong" if self.kind == "marked_ten" else "club"
        others = player_names(self.members - 1)
        if self.confederate:
            others = [CONFEDERATE] + others[:-1]
        cheat = CheaterSpec(CHEATER, self.kind, self.q, mode=self.mode,
                            partner=CONFEDERATE if self.confederate else None)
        spec = SeasonSpec(tables=tables, n_deals=self.deals, players=[CHEATER] + others, skills={CHEATER: skill},
                          cheaters=[cheat], deck=False,
                          log_decisions=self.kind == "marked_ten" and self.mode is None, season=self.key)
        if self.revoke_rate is not None:
            spec.revoke_rate = self.revoke_rate
        return spec


POWER = {
    "jack_stacker": PowerStudy("jack_stacker", "dealer_jack", "jack_stacker", 0.25, "scotch_whist", 4, 12_000,
                               0.90, "deals dealt"),
    "marked_ten_full": PowerStudy("marked_ten_full", "marked_ten", "marked_ten", 1.0, "scotch_whist", 4, 6_000,
                                  0.95, "deals played"),
    "marked_ten_half": PowerStudy("marked_ten_half", "marked_ten", "marked_ten", 0.5, "scotch_whist", 4, 6_000,
                                  0.80, "deals played"),
    "turnup_stacker": PowerStudy("turnup_stacker", "turnup_jack", "turnup_jack", 0.25, "all_fours", 2, 3_600,
                                 0.80, "deals dealt"),
    # issue 14: the cheats that slipped through
    "revoker_alone": PowerStudy("revoker_alone", "revoke_pattern", "revoker", REVOKER_Q, "scotch_whist", 4,
                                15_000, 0.90, "deals played", revoke_rate=0.0),
    "revoker_field": PowerStudy("revoker_field", "revoke_pattern", "revoker", REVOKER_Q, "scotch_whist", 4,
                                15_000, 0.90, "deals played"),
    "partner_stacker": PowerStudy("partner_stacker", "partner_jack", "partner_stacker", 0.3, "scotch_whist", 4,
                                  15_000, 0.90, "deals dealt"),
    "cutter_stacker": PowerStudy("cutter_stacker", "dealer_cutter", "cutter_stacker", 0.5, "scotch_whist", 4,
                                 13_200, 0.80, "pair deals", confederate=True, members=12),
    "af_own_jack": PowerStudy("af_own_jack", "af_dealer_jack", "af_own_jack", 0.3, "all_fours", 2, 9_000, 0.90,
                              "deals dealt"),
    "marked_ten_score": PowerStudy("marked_ten_score", "marked_ten", "marked_ten", 1.0, "scotch_whist", 4, 30_000,
                                   0.80, "deals played", mode="score"),
}


def _named(subject: str) -> set[str]:
    return set(subject.split("+"))


def _audit_records(records: list[dict], seed: int) -> dict:
    """The records written as deal-log/1 and audited as `auditor audit` does; the document without games."""
    import orjson


    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "season.jsonl")
        with open(path, "wb") as fh:
            for r in records:
                fh.write(orjson.dumps(r) + b"\n")
        rep = audit_paths([path], fdr=0.05, seed=seed)
    return rep.to_json(games=False)


def _rates(doc: dict) -> dict:
    """Per test: how many tests, and how many at p <= each of ALPHAS."""
    out: dict[str, list[int]] = {}
    for t in doc["tests"]:
        row = out.setdefault(t["test"], [0] * (1 + len(ALPHAS)))
        row[0] += 1
        p = t["pvalue"] if t["pvalue"] is not None else 1.0
        for j, a in enumerate(ALPHAS):
            row[1 + j] += p <= a
    return out


def honest_season(seed: int, i: int, n_deals: int) -> dict:

    t0 = time.perf_counter()
    rng = _rng(seed, "honest", i)
    spec, about = honest_club_spec(rng, i, n_deals)
    sim = simulate_season(spec, rng)
    doc = _audit_records(sim.records, seed=int(rng.integers(2**31)))
    return {"i": i, "about": about, "deals": doc["deals"], "tests": doc["audit"]["tests"],
            "flags": [(f["test"], f["subject"], f["pvalue"], f["strong"]) for f in doc["flags"]],
            "strong": doc["audit"]["strong"], "rates": _rates(doc), "seconds": round(time.perf_counter() - t0, 2)}


def power_season(seed: int, key: str, i: int) -> dict:

    st = POWER[key]
    t0 = time.perf_counter()
    rng = _rng(seed, key, i)
    sim = simulate_season(st.spec(), rng)
    doc = _audit_records(sim.records, seed=int(rng.integers(2**31)))
    mine = next((t for t in doc["tests"] if t["test"] == st.test and t["subject"] == st.subject), None)
    level = doc["audit"]["per_test_level"].get(st.test)
    flags = doc["flags"]
    dealt = played = pair = 0
    for r in sim.records:
        if CHEATER in r["players"]:
            players = r["players"]
            played += 1
            if players[r["dealer"]] == CHEATER:
                dealt += 1
                pair += players[r.get("cutter", (r["dealer"] - 1) % len(players))] == CONFEDERATE
    out = {"i": i, "deals": doc["deals"], "tests": doc["audit"]["tests"], "level": level,
           "p": None if mine is None else mine["pvalue"], "n": None if mine is None else mine["n"],
           "expected": None if mine is None else mine["expected"],
           "flagged_own": bool(mine and mine["flagged"]), "strong_own": bool(mine and mine["strong"]),
           "flagged_any": any(CHEATER in _named(f["subject"]) for f in flags),
           "false_flags": sum(CHEATER not in _named(f["subject"]) for f in flags), "flags": len(flags),
           "dealt": dealt, "played": played, "pair": pair}
    if st.kind == "marked_ten" and st.mode is None and level is not None:
        results = [_replay_simulated(r, k) for k, r in enumerate(sim.records)]
        ys = lr_yardstick(sim, results, st.q, {CHEATER}).get(CHEATER)
        out["yardstick_p"] = None if ys is None else ys["p"]
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def _replay_simulated(obj: dict, k: int) -> DealResult:
    """The reference replay of the simulator's k-th record (which the simulator writes valid)."""
    rec = record_from_obj(obj, "sim", 0, k + 1)
    if rec.deal is None:
        raise SimulationError(f"simulated record {k + 1} is not a valid deal: {rec.error}")
    return replay_deal(rec.deal)


def _task(args: tuple) -> tuple:
    what = args[0]
    if what == "honest":
        return args, honest_season(*args[1:])
    return args, power_season(*args[1:])


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion k / n (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, c - h), min(1.0, c + h))


def summarise_honest(rows: list[dict], level: float = 0.05) -> dict:
    n = len(rows)
    any_flag = sum(bool(r["flags"]) for r in rows)
    lo, hi = wilson(any_flag, n)
    per: dict[str, list[int]] = {}
    for r in rows:
        for t, c in r["rates"].items():
            row = per.setdefault(t, [0] * len(c))
            for j, x in enumerate(c):
                row[j] += x
    rates = {t: {"tests": c[0], **{f"p<={a:g}": round(c[1 + j] / c[0], 5) if c[0] else None
                                   for j, a in enumerate(ALPHAS)}} for t, c in sorted(per.items())}
    by_mix: dict[str, list[int]] = {}
    for r in rows:
        m = by_mix.setdefault(r["about"]["mix"], [0, 0])
        m[0] += 1
        m[1] += bool(r["flags"])
    share = any_flag / n if n else 0.0
    return {
        "seasons": n, "deals_per_season": round(sum(r["deals"] for r in rows) / n) if n else 0,
        "tests_per_season": round(sum(r["tests"] for r in rows) / n) if n else 0,
        "seasons_with_any_flag": any_flag, "share_with_any_flag": round(share, 4),
        "standard_error": round(math.sqrt(share * (1 - share) / n), 4) if n else None,
        "wilson_95": [round(lo, 4), round(hi, 4)], "level": level,
        "mean_flags_per_season": round(sum(len(r["flags"]) for r in rows) / n, 4) if n else 0.0,
        "seasons_with_a_strong_flag": sum(r["strong"] > 0 for r in rows),
        "flags": [{"season": r["i"], "test": f[0], "subject": f[1], "p": f[2], "strong": f[3]}
                  for r in rows for f in r["flags"]],
        "by_mix": {k: {"seasons": v[0], "with_flag": v[1]} for k, v in sorted(by_mix.items())},
        "per_test_rates": rates,
        "seconds": round(sum(r["seconds"] for r in rows), 1),
    }


_PER = {"deals dealt": "dealt", "deals played": "played", "pair deals": "pair"}


def oracle_exact(st: PowerStudy, rows: list[dict]) -> float | None:
    """The exact binomial test of the cheater's own deals alone at the per-test level the audit gave him, averaged
    over the seasons (his deals and the level vary a little from season to season)."""

    vals = []
    for r in rows:
        if r["n"] and r["level"] and r["expected"] is not None:
            p0 = r["expected"] / r["n"]  # one configuration per study: every trial has the same null rate
            vals.append(exact.power(((p0, int(r["n"])),), float(r["level"]), st.q))
    return round(float(np.mean(vals)), 4) if vals else None


def summarise_power(key: str, rows: list[dict]) -> dict:
    st = POWER[key]
    n = len(rows)
    own = sum(r["flagged_own"] for r in rows)
    anyf = sum(r["flagged_any"] for r in rows)
    lo, hi = wilson(own, n)
    flags = sum(r["flags"] for r in rows)
    false = sum(r["false_flags"] for r in rows)
    out = {
        "cheat": f"{st.kind} q = {st.q:g}", "test": st.test, "seasons": n, "target": st.target,
        "per_cheater": f"about {round(np.mean([r[_PER[st.per]] for r in rows]))}"
                       f" {st.per}" if n else "",
        "power_own_test": round(own / n, 4) if n else None, "power_wilson_95": [round(lo, 4), round(hi, 4)],
        "power_any_test": round(anyf / n, 4) if n else None,
        "strong_own_test": round(sum(r["strong_own"] for r in rows) / n, 4) if n else None,
        "per_test_level": float(np.median([r["level"] for r in rows if r["level"]])) if n else None,
        "median_p": float(np.median([r["p"] for r in rows if r["p"] is not None])) if n else None,
        # the false-discovery rate is the mean over seasons of false flags / flags (0 for a season without flags);
        # the pooled share weighs seasons by their number of flags
        "realised_fdr": round(float(np.mean([r["false_flags"] / r["flags"] if r["flags"] else 0.0 for r in rows])), 4)
        if n else 0.0,
        "false_share_pooled": round(false / flags, 4) if flags else 0.0,
        "seasons_with_a_false_flag": sum(r["false_flags"] > 0 for r in rows),
        "met": bool(n) and own / n >= st.target,
        "seconds": round(sum(r["seconds"] for r in rows), 1),
    }
    if st.kind == "revoker" or (st.kind == "marked_ten" and st.mode is not None):
        # no closed-form oracle (the revokes' nulls vary; the marked-Ten yardstick assumes a cheat on every
        # decision): his own test alone at the per-test level, with no search over the other subjects
        own_p = [r for r in rows if r["p"] is not None and r["level"]]
        out["oracle"] = "his own test alone at the same per-test level"
        out["oracle_power"] = round(sum(r["p"] <= r["level"] for r in own_p) / n, 4) if n else None
    elif st.kind == "marked_ten":
        ys = [r for r in rows if r.get("yardstick_p") is not None]
        out["oracle"] = "likelihood-ratio yardstick at the same per-test level"
        out["oracle_power"] = round(sum(r["yardstick_p"] <= r["level"] for r in ys) / len(ys), 4) if ys else None
    else:
        out["oracle"] = "exact binomial test of his deals alone at the same per-test level"
        out["oracle_power"] = oracle_exact(st, rows)
    return out


def _interleave(a: list, b: list) -> list:
    """b's items spread evenly through a (a study cut short still has some of each)."""
    if not a or not b:
        return a + b
    out, step, j = [], len(a) / len(b), 0
    for i, x in enumerate(a):
        out.append(x)
        while j < len(b) and (j + 1) * step <= i + 1:
            out.append(b[j])
            j += 1
    return out + b[j:]


def calibrate_audit(seed: int = 0, honest: int = 200, deals: int = 10_000, power: int = 100,
                    workers: int | None = None, studies: tuple[str, ...] | None = None,
                    progress: Callable[[str], None] | None = None, rows_path: str | None = None) -> dict:
    """The study: `honest` honest clubs of `deals` deals, and `power` seasons of each lone-cheater study.
    `rows_path`: every season's row is appended there (JSON Lines) as it comes, so a long run can be read
    before it ends (`summarise_rows`)."""
    say = progress or (lambda _m: None)
    workers = workers or min(2, os.cpu_count() or 1)
    power_tasks: list[tuple] = []
    for key in (studies if studies is not None else tuple(POWER)):
        power_tasks += [("power", seed, key, i) for i in range(power)]
    power_tasks.sort(key=lambda t: (t[3], t[2]))  # season 0 of every study, then season 1, ...
    tasks = _interleave([("honest", seed, i, deals) for i in range(honest)], power_tasks)
    t0 = time.perf_counter()
    got: dict[tuple, dict] = {}
    sink = open(rows_path, "a", encoding="utf-8") if rows_path else None
    if workers > 1 and len(tasks) > 1:
        import multiprocessing as mp

        with closing_pool(mp.get_context("fork"), workers) as pool:
            for k, (args, res) in enumerate(pool.imap_unordered(_task, tasks), 1):
                got[args] = res
                _sink(sink, args, res)
                if k % 10 == 0 or k == len(tasks):
                    el = time.perf_counter() - t0
                    say(f"{k}/{len(tasks)} seasons, {el:.0f} s, about {el / k * (len(tasks) - k):.0f} s left")
    else:
        for k, args in enumerate(tasks, 1):
            got[args] = _task(args)[1]
            _sink(sink, args, got[args])
            if k % 10 == 0 or k == len(tasks):
                say(f"{k}/{len(tasks)} seasons, {time.perf_counter() - t0:.0f} s")
    if sink is not None:
        sink.close()
    out = summarise(got, workers)
    out["seed"] = seed
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def _sink(sink, args: tuple, res: dict) -> None:
    if sink is not None:
        import json

        sink.write(json.dumps({"task": list(args), "row": res}) + "\n")
        sink.flush()


def summarise_rows(path: str, workers: int = 0) -> dict:
    """The study's summary from the rows a run appended to `path` (complete or not)."""
    import json

    got = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                got[tuple(d["task"])] = d["row"]
    out = summarise(got, workers)
    out["seed"] = next(iter(got))[1] if got else None
    out["seconds"] = round(sum(r["seconds"] for r in got.values()), 1)
    return out


def summarise(got: dict[tuple, dict], workers: int) -> dict:
    tasks = sorted(got, key=str)
    rows_h = [got[t] for t in tasks if t[0] == "honest"]
    out: dict = {"level": 0.05, "machine": {"cpus": os.cpu_count(), "workers": workers}}
    if rows_h:
        out["honest"] = summarise_honest(rows_h)
    out["power"] = {}
    for key in POWER:
        rows = [got[t] for t in tasks if t[0] == "power" and t[2] == key]
        if rows:
            out["power"][key] = summarise_power(key, rows)
    return out


def targets(res: dict) -> list[tuple[str, bool, str]]:
    """The issue's targets: (description, met, measured)."""
    rows = []
    h = res.get("honest")
    if h:
        share, se, hi = h["share_with_any_flag"], h["standard_error"], h["wilson_95"][1]
        rows.append((f"honest audits with any flag <= {h['level']:.0%} + 1 s.e., upper 95% end <= 8% "
                     f"({h['seasons']} seasons)", share <= h["level"] + se and hi <= 0.08,
                     f"{share:.1%} (s.e. {se:.1%}; 95% {h['wilson_95'][0]:.1%} to {hi:.1%})"))
    for p in res.get("power", {}).values():
        rows.append((f"{p['cheat']} alone, {p['per_cheater']}: flagged >= {p['target']:.0%}", p["met"],
                     f"{p['power_own_test']:.0%} (oracle {p['oracle_power']:.0%} at p <= {p['per_test_level']:.2g})"
                     if p["oracle_power"] is not None else f"{p['power_own_test']:.0%}"))
    return rows


def format_report(res: dict) -> str:
    lines = [f"Audit-wide calibration (seed {res['seed']}, {res['machine']['workers']} workers, "
             f"{res['seconds']:.0f} s)"]
    h = res.get("honest")
    if h:
        lines.append(f"Honest clubs: {h['seasons']} seasons of about {h['deals_per_season']:,} deals and "
                     f"{h['tests_per_season']:,} tests each")
        lines.append(f"  seasons with any flag: {h['seasons_with_any_flag']} ({h['share_with_any_flag']:.1%}, "
                     f"95% {h['wilson_95'][0]:.1%} to {h['wilson_95'][1]:.1%}); mean flags "
                     f"{h['mean_flags_per_season']:.3f}; with a strong flag: {h['seasons_with_a_strong_flag']}")
        lines.append("  per test, share of tests at p <= 0.001 / 0.01 / 0.05:")
        for t, r in h["per_test_rates"].items():
            lines.append(f"    {t:<16} {r['tests']:>7} tests  {r['p<=0.001']:.4f} / {r['p<=0.01']:.4f} / "
                         f"{r['p<=0.05']:.4f}")
    for p in res.get("power", {}).values():
        lines.append(f"Lone cheater, {p['cheat']} ({p['per_cheater']}, {p['seasons']} seasons): flagged on "
                     f"{p['test']} in {p['power_own_test']:.0%} (any test {p['power_any_test']:.0%}); per-test "
                     f"level {p['per_test_level']:.2g}; oracle {p['oracle_power']}; false flags in "
                     f"{p['seasons_with_a_false_flag']} seasons, realised FDR {p['realised_fdr']:.1%}")
    lines.append("Targets:")
    for what, ok, got in targets(res):
        lines.append(f"  [{'met' if ok else 'NOT met'}] {what}: {got}")
    return "\n".join(lines)
