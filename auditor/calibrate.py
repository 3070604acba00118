"""`auditor calibrate`: how often the dealing tests accuse honest dealers, and how soon they catch stackers.

(a) Honest seasons: the false-positive rate (honest subjects flagged at the family's FDR), the realised FDR (the
    mean over seasons of false flags / flags; in an all-honest season every flag is false, so it is the chance of
    any flag), and the rate of p <= alpha for alpha = 0.001, 0.01, 0.05, 0.1 next to alpha. Exact discrete p-values
    are conservative, never uniform, so the check is rate <= alpha (within Monte-Carlo error), not a KS test.
(b) Power: seasons with one stacker of strength q among honest dealers; the share of seasons in which the stacker
    is flagged at FDR 5%, next to the exact oracle test that knows who the suspect is (the one-sided exact test of
    his deals alone) at the same per-test false-positive rate, computed exactly and checked by simulation.
(c) A power curve over q (PNG or SVG via matplotlib).
(d) Human shuffling: deals played at tables whose dealers riffle the gathered tricks (Gilbert-Shannon-Reeds) instead
    of shuffling perfectly, and what that does to each test's false-positive rate.

The dealing-only generator (`auditor.dealgen`) makes seasons of tens of thousands of deals in milliseconds, so (a)
to (c) run on hundreds of seasons; (d) needs play and uses `dealgen.table_sequence` (or the simulator when present).
Every season's generator is seeded from (seed, study, season): the printed numbers are reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import dealgen
from .audit import audit
from .cards import RJ
from .dealgen import Cheat
from .dealog import record_from_obj
from .detectors.partner_jack import count_facts as partner_counts
from .detectors.registry import DETECTORS, SHARES, make_detectors
from .errors import UsageError
from .facts import config, held_prob
from .replay.result import Replay
from .replay.run import replay_records
from .report.console import Col, SafeConsole, print_table
from .rules import resolve
from .simulate import SeasonSpec, TableSpec, simulate_season
from .stats import exact
from .stats.family import bh_qvalues

ALPHAS = (0.001, 0.01, 0.05, 0.1)
STACKER = "stacker"


@dataclass(frozen=True)
class Study:
    """A season shape and the test it calibrates."""

    key: str
    test: str
    rules: str
    table_size: int
    honest: int  # honest dealers
    deals_each: int
    cheat_kind: str  # "jack", "turnup", "partner", "cutter" or "af_own_jack"
    sides: str | None = None  # dealgen.SIDES name: partnership tables
    share: float = 1.0  # the test's share of the audit's budget: flags and the oracle at fdr x share
    qs: tuple[float, ...] = (0.1, 0.25)  # the cheat strengths of the power table
    curve: bool = True  # a power curve over q
    target: tuple[float, float] | None = None  # (q, power) the issue asks for, at fdr x share
    seasons_factor: float = 1.0  # share of the requested seasons this study runs (its power is near 1 or 0 and its
    # honest rates pool 100 subjects a season: half the seasons suffice, and keep `--fast` fast)
    cost: int = 300  # (issue 16) about how many milliseconds one season takes on one core: the progress estimate

    def cheat(self, q: float) -> Cheat:
        return {"jack": lambda: Cheat.jack_stacker(q), "turnup": lambda: Cheat("turnup_jack", q),
                "partner": lambda: Cheat.partner_stacker(q),
                "cutter": lambda: Cheat.cutter_stacker(q, CONFEDERATE),
                "af_own_jack": lambda: Cheat.af_own_jack(q)}[self.cheat_kind]()

    @property
    def suspect(self) -> str:
        """The subject the cheat should flag: the stacker, or (dealer_cutter) the stacker with his confederate."""
        return f"{STACKER}+{CONFEDERATE}" if self.cheat_kind == "cutter" else STACKER

    def describe(self) -> str:
        out = f"{self.rules} {self.table_size}p, {self.honest}+1 dealers, {self.deals_each} deals each"
        if self.sides:
            out += f", partners {self.sides.replace('_', ' ')}"
        if self.cheat_kind == "cutter":
            out += f" (about {self.deals_each // self.honest} cut by each other player)"
        if self.share != 1.0:
            out += f"; flags at fdr x {self.share} (its share of the audit)"
        return out


CONFEDERATE = "p000"  # the cutter_stacker's confederate in the dealer_cutter study
STUDIES = {
    "dealer_jack": Study("dealer_jack", "dealer_jack", "scotch_whist/foster", 4, 100, 200, "jack", cost=330),
    "turnup_jack": Study("turnup_jack", "turnup_jack", "all_fours/foster", 4, 100, 60, "turnup", cost=280),
    # issue 14, each at the audit-wide level (family BH at fdr x its registry share), its target beside it
    "partner_jack": Study("partner_jack", "partner_jack", "scotch_whist/foster", 4, 100, 250, "partner",
                          sides="pairs_opposite", share=SHARES["partner_jack"], qs=(0.15, 0.3), curve=False,
                          target=(0.3, 0.90), seasons_factor=0.5, cost=700),
    "dealer_cutter": Study("dealer_cutter", "dealer_cutter", "scotch_whist/foster", 4, 11, 1100, "cutter",
                           share=SHARES["dealer_cutter"], qs=(0.25, 0.5), curve=False, target=(0.5, 0.80),
                           seasons_factor=0.5, cost=200),
    "af_dealer_jack": Study("af_dealer_jack", "af_dealer_jack", "all_fours/foster", 4, 100, 150, "af_own_jack",
                            share=SHARES["af_dealer_jack"], qs=(0.15, 0.3), curve=False, target=(0.3, 0.90),
                            seasons_factor=0.5, cost=560),
}


def _season_rng(seed: int, study: str, kind: str, i: int) -> np.random.Generator:
    import zlib

    return np.random.default_rng([int(seed), zlib.crc32(study.encode()), zlib.crc32(kind.encode()), int(i)])


def _detector(test: str, fdr: float):

    return DETECTORS[test](fdr=fdr, details=False)


def _season_results(study: Study, q: float | None, rng: np.random.Generator, fdr: float,
                    test: str | None = None):
    """(subjects, p-values, stacker's index or None) of one simulated season."""
    names = [f"p{i:03d}" for i in range(study.honest + (1 if q is not None else 0))]
    cheats = {}
    if q is not None:
        names[-1] = STACKER
        cheats = {STACKER: study.cheat(q)}
    s = dealgen.season(study.rules, study.table_size, len(names), study.deals_each, rng, cheats, names=names,
                       sides=study.sides)
    det = _detector(test or study.test, fdr)
    facts = s.facts()
    counts = partner_counts(facts, s.side_rel()) if det.name == "partner_jack" else det.count(None, rng, facts=facts)
    res = det.finalize(counts, rng)
    subj = [r.subject for r in res]
    p = np.array([r.pvalue for r in res])
    return subj, p, (subj.index(study.suspect) if study.suspect in subj else None), res


@dataclass
class HonestResult:
    test: str
    seasons: int
    subjects: int  # per season (mean)
    flagged: int
    tests: int
    seasons_with_flag: int
    alpha_rates: dict[float, float]
    fdp: list[float] = field(default_factory=list)

    @property
    def fpr(self) -> float:
        return self.flagged / max(1, self.tests)

    @property
    def realised_fdr(self) -> float:
        return float(np.mean(self.fdp)) if self.fdp else 0.0

    def to_json(self) -> dict:
        se = np.sqrt(self.realised_fdr * (1 - self.realised_fdr) / max(1, self.seasons))
        return {"test": self.test, "seasons": self.seasons, "subjects_per_season": self.subjects,
                "false_positive_rate": self.fpr, "false_flags": self.flagged, "honest_tests": self.tests,
                "realised_fdr": self.realised_fdr, "realised_fdr_se": float(se),
                "seasons_with_a_flag": self.seasons_with_flag,
                "p_le_alpha": {str(a): r for a, r in self.alpha_rates.items()}}


def honest_study(study: Study, seasons: int, seed: int, fdr: float = 0.05, test: str | None = None,
                 season_fn: Callable | None = None, tick: Callable[[], None] | None = None) -> HonestResult:
    """All-honest seasons of `study` (or of `season_fn(rng) -> (subjects, p)`)."""
    all_p = []
    flagged = tests = with_flag = 0
    fdp = []
    subjects = 0
    for i in range(seasons):
        rng = _season_rng(seed, study.key + (test or ""), "honest", i)
        if season_fn is not None:
            _subj, p = season_fn(rng)
        else:
            _subj, p, _, _ = _season_results(study, None, rng, fdr, test)
        q = np.array(bh_qvalues(list(p)))
        f = int((q <= fdr).sum())
        flagged += f
        tests += len(p)
        subjects += len(p)
        with_flag += f > 0
        fdp.append(1.0 if f else 0.0)
        all_p.append(p)
        if tick is not None:
            tick()
    ps = np.concatenate(all_p) if all_p else np.zeros(0)
    rates = {a: float((ps <= a).mean()) if len(ps) else 0.0 for a in ALPHAS}
    return HonestResult(test or study.test, seasons, subjects // max(1, seasons), flagged, tests, with_flag, rates,
                        fdp)


@dataclass
class PowerResult:
    test: str
    q: float
    seasons: int
    flagged: int  # seasons in which the stacker was flagged at FDR
    oracle_alpha: float
    oracle_exact: float
    oracle_sim: float
    other_false_flags: int
    fdp: list[float] = field(default_factory=list)

    @property
    def power(self) -> float:
        return self.flagged / max(1, self.seasons)

    def to_json(self) -> dict:
        return {"test": self.test, "q": self.q, "seasons": self.seasons, "power_at_fdr": self.power,
                "power_se": float(np.sqrt(self.power * (1 - self.power) / max(1, self.seasons))),
                "oracle_alpha": self.oracle_alpha, "oracle_power_exact": self.oracle_exact,
                "oracle_power_simulated": self.oracle_sim, "honest_flagged_alongside": self.other_false_flags,
                "realised_fdr": float(np.mean(self.fdp)) if self.fdp else 0.0}


def power_study(study: Study, q: float, seasons: int, seed: int, fdr: float = 0.05,
                oracle_alpha: float | None = None, tick: Callable[[], None] | None = None) -> PowerResult:
    """Seasons with one stacker of strength q: flagged at FDR (BH over every dealer) v. the exact oracle test.
    `fdr` is the family's level (the callers pass the audit's level x the study's share when the study has one).
    A season in which the suspect has no test (a pair under `min_deals`) counts as not flagged."""
    flagged = sims_oracle = false_flags = 0
    groups = None
    alpha = oracle_alpha
    fdp = []
    for i in range(seasons):
        rng = _season_rng(seed, study.key, f"power{q}", i)
        subj, p, k, res = _season_results(study, q, rng, fdr)
        qv = np.array(bh_qvalues(list(p)))
        flag = qv <= fdr
        mine = bool(flag[k]) if k is not None else False
        flagged += mine
        nf = int(flag.sum()) - int(mine)
        false_flags += nf
        fdp.append(nf / flag.sum() if flag.any() else 0.0)
        if tick is not None:
            tick()
        if alpha is None:
            alpha = exact.per_test_level(fdr, len(p))
        if k is None:
            continue
        # the oracle: the stacker's own exact test at level alpha
        sims_oracle += p[k] <= alpha
        if groups is None:
            groups = _groups_of(study, res[k])
    if alpha is None:  # no season to take the per-test level from, and none given
        raise UsageError("a power study needs at least one season or an oracle_alpha")
    oracle_exact = exact.power(groups, alpha, q) if groups else float("nan")
    return PowerResult(study.test, q, seasons, flagged, float(alpha), float(oracle_exact),
                       sims_oracle / max(1, seasons), false_flags, fdp)


def _groups_of(study: Study, r) -> tuple:
    """The null trial groups of the stacker's test (the exact oracle's input): his deals' null probabilities."""
    p0 = r.expected / r.n if r.n else 0.0
    if study.cheat_kind != "turnup":  # one configuration: every trial has the same exact null
        return ((float(p0), int(r.n)),)
    # All Fours: the first turn-ups are the trials the cheat acts on (about 1/13 each); runs are left alone
    first = int(r.detail.get("deals", study.deals_each)) if isinstance(r.detail, Mapping) else study.deals_each
    return ((1 / 13, first),)


def oracle_power_curve(study: Study, qs, alpha: float) -> list[float]:
    groups = ((float(_null_rate(study)), _trials_of(study)),)
    return [exact.power(groups, alpha, q) for q in qs]


def _null_rate(study: Study) -> float:
    game, preset = study.rules.split("/")
    cfg = config(resolve(game, preset), study.table_size)
    if study.cheat_kind in ("jack", "cutter"):
        return float(held_prob(cfg, 0, RJ))
    if study.cheat_kind == "partner":
        side = dealgen.SIDES[study.sides or "pairs_opposite"][study.table_size]
        mates = next(g for g in side if 0 in g)
        return float(sum(held_prob(cfg, r, RJ) for r in mates if r != 0))
    if study.cheat_kind == "af_own_jack":
        return cfg.hand_sizes[0] / (cfg.pack_size - 1)
    return 1 / 13


def _trials_of(study: Study) -> int:
    """The suspect's trials in a season of the study (the exact oracle at FDR/m): his deals, or the pair's."""
    if study.cheat_kind == "cutter":
        return study.deals_each // study.honest
    if study.cheat_kind == "af_own_jack":  # a turned-up Jack of the turned suit is no trial
        return int(round(study.deals_each * 12 / 13))
    return study.deals_each


# ---------------------------------------------------------------- human shuffling


SHUFFLE_SCENARIOS = {
    "perfect": None,
    "human_4_riffles": 4,
    "human_2_riffles": 2,
    "human_mixed_2_to_6": "mixed",
}


def _rates(tests_per_season: list[list], seasons: int, honest: set[str] | None = None) -> dict:
    pvals: dict[str, list[float]] = {}
    any_flag: dict[str, int] = {}
    for tests in tests_per_season:
        flagged_here: set[str] = set()
        for tr in tests:
            if honest is not None and tr.subject not in honest:
                continue
            pvals.setdefault(tr.test, []).append(tr.pvalue)
            if tr.flagged:
                flagged_here.add(tr.test)
        for t in flagged_here:
            any_flag[t] = any_flag.get(t, 0) + 1
    return {test: {"subjects": len(ps), "p_le_alpha": {str(a): float(np.mean(np.array(ps) <= a)) for a in ALPHAS},
                   "seasons_with_a_flag": any_flag.get(test, 0), "seasons": seasons}
            for test, ps in sorted(pvals.items())}


def human_shuffle_season(spec: int | str | None, rng: np.random.Generator, tables: int = 6,
                         deals_per_table: int = 240) -> Replay:
    """One season of `human_shuffle_study`'s honest tables of four (Scotch Whist, Foster), replayed with its table:
    `spec` is a scenario's value in `SHUFFLE_SCENARIOS` (None: uniform shuffles; an int: that many riffles for
    every dealer; "mixed": 2 to 6 riffles, drawn per dealer)."""
    recs = []
    for t in range(tables):
        players = [f"t{t}p{k}" for k in range(4)]
        rif: dict[str, int | None]
        if spec is None:
            rif = {}
        elif spec == "mixed":
            rif = {p: int(rng.integers(2, 7)) for p in players}
        else:
            rif = {p: int(spec) for p in players}
        recs += list(dealgen.table_sequence("scotch_whist/foster", players, deals_per_table, rng, rif,
                                            table=f"t{t}"))
    return replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(recs)], engine="batch",
                          table=True)


def human_shuffle_study(seasons: int, seed: int, tables: int = 6, deals_per_table: int = 240, fdr: float = 0.05,
                        scenarios: dict[str, int | str | None] | None = None, simulator_deals: int = 4000,
                        tick: Callable[[int], None] | None = None) -> dict:
    """Honest tables of four (Scotch Whist, Foster) whose dealers shuffle the gathered tricks as people do; the rate
    of p <= alpha of every dealing test and the seasons with any (false) flag, per scenario. With the simulator
    present, also its club season's human-shuffle tables with every cheater removed (`simulator_club`)."""

    only = ["dealer_jack", "deal_uniformity", "shuffle_residue", "trick_stack"]
    out = {}
    for name, spec in (scenarios or SHUFFLE_SCENARIOS).items():
        per_season = []
        t0 = time.perf_counter()
        for i in range(seasons):
            rng = _season_rng(seed, "shuffle", name, i)
            rep = human_shuffle_season(spec, rng, tables, deals_per_table)
            dets = make_detectors(fdr=fdr, details=False, only=only)
            for d in dets:
                if hasattr(d, "mc_max"):
                    d.mc_max = 2000
            tests = audit(rep, fdr=fdr, seed=int(rng.integers(2**31)), detectors=dets).tests
            per_season.append(tests)
            if tick is not None:
                tick(SHUFFLE_COST)
        out[name] = _rates(per_season, seasons)
        out[name]["_seconds"] = round(time.perf_counter() - t0, 2)
    if simulator_deals:
        per_season = []
        t0 = time.perf_counter()
        for i in range(seasons):
            rng = _season_rng(seed, "shuffle", "simulator", i)
            club = SeasonSpec(
                tables=[TableSpec(f"sw4-{k}", 4, human_shuffle=True) for k in range(3)]
                + [TableSpec("sw5", 5, human_shuffle=True), TableSpec("af4", 4, game="all_fours", human_shuffle=True)],
                n_deals=simulator_deals, players=30, season=f"cal{i}")
            sim = simulate_season(club, rng)
            rep = replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(sim.records)],
                                 engine="batch", table=True)
            dets = make_detectors(fdr=fdr, details=False, only=only + ["turnup_jack"])
            for d in dets:
                if hasattr(d, "mc_max"):
                    d.mc_max = 2000
            tests = audit(rep, fdr=fdr, seed=int(rng.integers(2**31)), detectors=dets).tests
            per_season.append(tests)
            if tick is not None:
                tick(SIMULATOR_COST)
        out["simulator_club_2_to_4_riffles"] = _rates(per_season, seasons)
        out["simulator_club_2_to_4_riffles"]["_seconds"] = round(time.perf_counter() - t0, 2)
    return out


# ---------------------------------------------------------------- the whole calibration


QUICK = {"honest_seasons": 6, "power_seasons": 6, "curve_seasons": 1, "uniformity_seasons": 0, "shuffle_seasons": 0}
"""(issue 16) `auditor calibrate --quick`: every dealing study once over, wide error bars, under a minute on 2 cores."""
FAST = {"honest_seasons": 40, "power_seasons": 40, "curve_seasons": 20, "uniformity_seasons": 2, "shuffle_seasons": 1}
FULL = {"honest_seasons": 200, "power_seasons": 200, "curve_seasons": 100, "uniformity_seasons": 20,
        "shuffle_seasons": 10}
CURVE_QS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
UNIFORMITY_COST = 5000  # milliseconds a season of deal_uniformity takes (its Monte-Carlo null), for the estimate
SHUFFLE_COST = 3000  # a human-shuffling season of one scenario (play replayed, four dealing tests)
SIMULATOR_COST = 8000  # a season of the simulator's club with human shuffles


def work_units(honest_seasons: int = 200, power_seasons: int = 200, curve_seasons: int = 100,
               uniformity_seasons: int = 20, shuffle_seasons: int = 0, simulator_deals: int = 4000,
               curve_qs=CURVE_QS) -> int:
    """The work of `calibrate` with these sizes, in the units its `advance` callback counts (about a millisecond of
    one core each): the total of the progress bar, whose estimate of the time left is the time so far scaled by
    the work left."""
    total = 0
    for st in STUDIES.values():
        hs, ps = (max(1, int(round(x * st.seasons_factor))) if x else 0 for x in (honest_seasons, power_seasons))
        total += st.cost * (hs + ps * len(st.qs) + (curve_seasons * len(curve_qs) if st.curve else 0))
    total += UNIFORMITY_COST * 2 * uniformity_seasons
    if shuffle_seasons:
        total += shuffle_seasons * (SHUFFLE_COST * len(SHUFFLE_SCENARIOS) + (SIMULATOR_COST if simulator_deals else 0))
    return total


def calibrate(seed: int = 0, honest_seasons: int = 200, power_seasons: int = 200, fdr: float = 0.05,
              curve_qs=CURVE_QS, curve_seasons: int = 100,
              uniformity_seasons: int = 20, shuffle_seasons: int = 0, simulator_deals: int = 4000,
              progress: Callable[[str], None] | None = None, advance: Callable[[int], None] | None = None) -> dict:
    """Every dealing study. `progress(step)` names each step as it starts; `advance(units)` counts the work done,
    out of `work_units(...)` of the same sizes (issue 16: the progress bar and its estimate)."""
    say = progress or (lambda _m: None)
    step = advance or (lambda _k: None)
    out: dict = {"seed": seed, "fdr": fdr, "studies": {}, "machine": _machine()}
    t_all = time.perf_counter()
    for key, st in STUDIES.items():
        t0 = time.perf_counter()
        level = fdr * st.share  # the family's level: the audit's level x the test's share (1: the old studies)
        hs, ps = (max(1, int(round(x * st.seasons_factor))) if x else 0 for x in (honest_seasons, power_seasons))
        say(f"{key}: {hs} honest seasons")
        def tick(cost: int = st.cost) -> None:
            step(cost)

        h = honest_study(st, hs, seed, level, tick=tick)
        m = _family_size(st)
        oracle_alpha = h.fpr if h.flagged else exact.per_test_level(level, m)
        pw = {}
        for q in st.qs:
            say(f"{key}: {ps} seasons with a stacker at q = {q}")
            pw[str(q)] = power_study(st, q, ps, seed, level, oracle_alpha, tick=tick).to_json()
            pw[str(q)]["oracle_power_exact_at_fdr_over_m"] = exact.power(
                ((_null_rate(st), _trials_of(st)),), exact.per_test_level(level, m), q)
            pw[str(q)]["level"] = level
        curve = []
        if st.curve:
            say(f"{key}: power curve")
            for q in curve_qs:
                r = power_study(st, q, curve_seasons, seed + 1, level, exact.per_test_level(level, m), tick=tick)
                curve.append({"q": q, "power_at_fdr": r.power, "oracle_exact": r.oracle_exact})
        out["studies"][key] = {"setup": st.describe(), "honest": h.to_json(), "power": pw, "curve": curve,
                               "oracle_alpha": oracle_alpha, "level": level,
                               "seconds": round(time.perf_counter() - t0, 1)}
    if uniformity_seasons:
        st = STUDIES["dealer_jack"]
        t0 = time.perf_counter()
        say(f"deal_uniformity: {uniformity_seasons} honest seasons and {uniformity_seasons} with a stacker")
        h = honest_study(st, uniformity_seasons, seed, fdr, test="deal_uniformity",
                         tick=lambda: step(UNIFORMITY_COST))
        flagged = 0
        for i in range(uniformity_seasons):
            rng = _season_rng(seed, "uniformity", "power", i)
            subj, p, k, _ = _season_results(st, 0.25, rng, fdr, test="deal_uniformity")
            flagged += bool(np.array(bh_qvalues(list(p)))[k] <= fdr)
            step(UNIFORMITY_COST)
        out["studies"]["deal_uniformity"] = {
            "setup": st.describe() + " (omnibus)", "honest": h.to_json(),
            "power": {"0.25": {"power_at_fdr": flagged / uniformity_seasons, "seasons": uniformity_seasons}},
            "seconds": round(time.perf_counter() - t0, 1)}
    if shuffle_seasons:
        say(f"human shuffling: {shuffle_seasons} seasons per scenario")
        out["human_shuffling"] = human_shuffle_study(shuffle_seasons, seed, fdr=fdr, simulator_deals=simulator_deals,
                                                     tick=step)
    out["seconds"] = round(time.perf_counter() - t_all, 1)
    return out


def _family_size(study: Study) -> int:
    """Subjects of the study's family in a season with the cheat: every dealer, or (dealer_cutter) every ordered
    pair of the club (each has about deals_each / honest deals, above `min_deals`)."""
    players = study.honest + 1
    return players * (players - 1) if study.cheat_kind == "cutter" else players


def _machine() -> dict:
    import os
    import platform

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__}


def targets(res: dict) -> list[tuple[str, bool, str]]:
    """The issue's targets: (description, met, measured)."""
    out = []
    dj = res["studies"].get("dealer_jack")
    if dj:
        p = dj["power"]["0.25"]["power_at_fdr"]
        out.append(("Foster 4p, 100 honest + 1 stacker q=0.25, 200 deals: flagged at FDR 5% in >= 90% of seasons",
                    p >= 0.90, f"{p:.1%} of {dj['power']['0.25']['seasons']} seasons"))
        h = dj["honest"]
        f, se, m, k = h["realised_fdr"], h["realised_fdr_se"], h["seasons"], h["seasons_with_a_flag"]
        # in all-honest seasons every flag is false: the realised FDR is the share of seasons with a flag. The
        # target fails when that share is significantly above 5% (one-sided exact binomial test at 5%).
        from scipy.stats import binom

        above = m > 0 and binom.sf(k - 1, m, res["fdr"]) < 0.05
        met = (not above) if m >= 200 else None
        out.append(("realised FDR over >= 200 honest seasons <= 5% (within Monte-Carlo error)", met,
                    f"{f:.1%} ± {se:.1%} over {m} seasons"))
    tj = res["studies"].get("turnup_jack")
    if tj:
        p = tj["power"]["0.25"]["power_at_fdr"]
        out.append(("All Fours turn-up stacker q=0.25 flagged within 60 deals in >= 80% of seasons", p >= 0.80,
                    f"{p:.1%} of {tj['power']['0.25']['seasons']} seasons (100 honest dealers beside him)"))
    for key, st in STUDIES.items():  # issue 14's targets, at the audit-wide level
        got = res["studies"].get(key)
        if not got or st.target is None or str(st.target[0]) not in got["power"]:
            continue
        q, want = st.target
        pw = got["power"][str(q)]
        p = pw["power_at_fdr"]
        what = {"partner": "partner stacker", "cutter": "cooperating cutter pair",
                "af_own_jack": "All Fours dealer's own Jack"}[st.cheat_kind]
        out.append((f"{key}: {what} q={q} ({st.describe()}) flagged at fdr x share in >= {want:.0%} of seasons",
                    p >= want, f"{p:.1%} of {pw['seasons']} seasons; exact oracle at FDR/m "
                               f"{pw['oracle_power_exact_at_fdr_over_m']:.3f}"))
        h = got["honest"]
        ok = all(h["p_le_alpha"][str(a)] <= a + 3 * np.sqrt(a * (1 - a) / max(1, h["honest_tests"])) for a in ALPHAS)
        out.append((f"{key}: honest p <= alpha at most alpha (within 3 se), alpha = {ALPHAS}", ok,
                    ", ".join(f"{h['p_le_alpha'][str(a)]:.4f}" for a in ALPHAS)))
    return out


def print_report(res: dict, console=None) -> None:
    """The numbers as tables at the terminal's width (issue 16: never wider; a table that cannot fit goes one row
    per block, `report.console.print_table`), then each study's set-up and the targets, wrapped between words."""
    con = console or SafeConsole(highlight=False)
    con.print(f"[bold]auditor calibrate[/]  seed {res['seed']}, FDR {res['fdr']}, {res['seconds']} s "
              f"({res['machine']['cpus']} cpus)")
    heads = [Col("test", "token"), Col("seasons", "num"), Col("FPR", "num"), Col("realised FDR", "num")]
    rows = []
    for key, st in res["studies"].items():
        h = st["honest"]
        rows.append(([key, str(h["seasons"]), f"{h['false_positive_rate']:.1e}",
                      f"{h['realised_fdr']:.3f}±{h['realised_fdr_se']:.3f}",
                      *[f"{h['p_le_alpha'][str(a)]:.4f}" for a in ALPHAS]], None))
    print_table(con, "(a) Honest seasons: false positives; rate of p <= alpha next to alpha",
                heads + [Col(f"p<={str(a)[1:]}", "num") for a in ALPHAS], rows, compact=True)

    def f(x):
        return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"

    rows = []
    for key, st in res["studies"].items():
        for q, p in st["power"].items():
            alpha = p.get("oracle_alpha")
            rows.append(([key, q, str(p["seasons"]), f"{p['power_at_fdr']:.3f}",
                          "-" if alpha is None else f"{alpha:.1e}", f(p.get("oracle_power_exact")),
                          f(p.get("oracle_power_simulated")), f(p.get("oracle_power_exact_at_fdr_over_m"))], None))
    print_table(con, "(b) Power against stackers: flagged at FDR over every dealer v. the exact oracle test",
                [Col("test", "token")] + [Col(c, "num") for c in ("q", "seasons", "flagged at FDR", "oracle alpha",
                                                                  "oracle exact", "oracle sim.", "oracle at FDR/m")],
                rows, compact=True)
    hs = res.get("human_shuffling")
    if hs:
        rows = []
        for scen, tests in hs.items():
            for test, v in tests.items():
                if test.startswith("_"):
                    continue
                rows.append(([scen, test, str(v["subjects"]), *[f"{v['p_le_alpha'][str(a)]:.3f}" for a in ALPHAS],
                              f"{v['seasons_with_a_flag']}/{v['seasons']}"], None))
        print_table(con, "(d) Human shuffling at honest tables: rate of p <= alpha, and seasons with any flag",
                    [Col("shuffle", "token"), Col("test", "token"), Col("subjects", "num")]
                    + [Col(f"p<={str(a)[1:]}", "num") for a in ALPHAS] + [Col("seasons flagged", "num")], rows,
                    compact=True)
    for key, st in res["studies"].items():
        con.print(f"  {key}: {st['setup']}")
    for desc, ok, measured in targets(res):
        word = "[yellow]TOO FEW SEASONS[/]" if ok is None else ("[green]MET[/]" if ok else "[red]NOT MET[/]")
        con.print(f"{word}  {desc}: {measured}")


def plot_power_curve(res: dict, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k, st in res["studies"].items() if st.get("curve")]
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=False):
        st = res["studies"][key]
        qs = [c["q"] for c in st["curve"]]
        ax.plot(qs, [c["power_at_fdr"] for c in st["curve"]], "o-", label="flagged at FDR 5% (BH, all dealers)")
        ax.plot(qs, [c["oracle_exact"] for c in st["curve"]], "s--", label="exact oracle test at FDR/m")
        ax.axhline(0.8, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("cheat strength q")
        ax.set_ylabel("power")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{key}: {st['setup']}", fontsize=8)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
