"""Calibration of the play-knowledge tests (`marked_ten`, `collusion`, `revoke_pattern`) with the simulator.

`calibrate_play(...)` returns the numbers as a dict (`format_report` prints them); `auditor calibrate` can call it
as its play section, `auditor calibrate-play` runs it alone, `bench/bench_calibrate_play.py` runs the full study.

Studies (every season seeded from (seed, study, season index): the numbers are reproducible):

- `marked_honest`: all-honest club seasons, 60 players at 15 Scotch Whist tables of four in partnerships, about
  400 deals played each, the four skill levels in equal shares (readers included). For each skill level: the rate
  of p <= alpha next to alpha, and how often a player is flagged at FDR 5% (family = the season's players); the
  realised FDR (the share of seasons with any flag: in an all-honest season every flag is false). The same with
  every table shuffling like people (`marked_human`).
- `marked_power`: the same club with one marked-Ten player (the simulator's cheat, strength q = 1 and 0.5): the
  share of seasons in which he is flagged at FDR 5%, his p-values, and the optimal likelihood-ratio yardstick that
  knows the simulator's honest and cheating policies: for each of his decisions the log ratio of the cheat
  mixture q * cheat + (1 - q) * honest to the honest probability of the card he played (from the decision log),
  summed over his decisions; its null (his decisions drawn from the honest policy) by the same saddlepoint. Power
  ratio = power of `marked_ten` / power of the yardstick at the same per-test level (FDR / number of players,
  Benjamini-Hochberg's threshold for a lone cheat).
- `collusion`: one colluding pair sitting together at Scotch Whist tables of five (individual play), about 500
  deals played; honest seasons of the same shape for the false-positive rate.
- `revoke` (`REVOKE_STUDIES`), `revoke_pattern` alone at the audit-wide level of its family (level x its share of
  the budget): a deliberate revoker revoking in about one deal in 40, about 1,000 deals played, 20 players at
  tables of four, where the others revoke by accident (1 in 300 chances) and where nobody else ever revokes, with
  the exact single-test oracle's power beside the measured one; honest seasons of the same shape with accidental
  revokes at 1 in 300 chances, at ten times that, and with five clumsy members at 1 in 30: the rates of p <= alpha
  (alpha = 0.01, 0.05, 0.1) of the test and of its timing and Fisher controls, and the null's own check (the
  honest revokes that paid against the sum of their pi).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ProcessPoolExecutor
from types import SimpleNamespace
from typing import Any, Callable, cast

import numpy as np

from .audit import audit
from .cards import parse_card
from .dealog import record_from_obj
from .detectors.marked_ten import Blocks
from .detectors.play_facts import deal_exclusion, walk
from .detectors.registry import DETECTORS, SHARES
from .detectors.revoke_pattern import RevokePattern, revoke_chances
from .replay.reference import DealResult
from .replay.result import Replay
from .replay.run import replay_records
from .rules import layout
from .simulate import CheaterSpec, SeasonSpec, Simulation, TableSpec, partnerships, simulate_season
from .simulate.play import marked_ten_probs
from .simulate.policy import Public, tables
from .stats import exact

ALPHAS = (0.001, 0.01, 0.05)
SKILLS = ("novice", "club", "strong", "reader")
CHEATER = "ada"
PARTNER = "ben"
# the simulator's revoker revokes at a share q of the chances where a revoke pays (`simulate.play`): q = 0.021 is
# about one deal in 40 at Scotch Whist tables of four in pairs (measured in the key: 1 in 36 to 1 in 47 over seeded
# seasons of 1,000 deals)
REVOKER_Q = 0.021
REVOKE = "revoke_pattern"
ACCIDENTAL_RATE = 1 / 300  # the simulator's accidental revokes per chance (`SeasonSpec.revoke_rate`)
CLUMSY_RATE = 1 / 30  # a clumsy honest member's own rate


# ---------------------------------------------------------------- seasons


def _rng(seed: int, study: str, i: int) -> np.random.Generator:
    import zlib

    return np.random.default_rng([int(seed), zlib.crc32(study.encode()), int(i)])


def marked_spec(q: float = 0.0, n_players: int = 60, deals_each: int = 400, human: bool = False,
                cheater_skill: str = "strong", log_decisions: bool = False, equal_skills: bool = True) -> SeasonSpec:

    tables = [TableSpec(f"sw4-{i}", 4, sides=partnerships(4, "pairs"), human_shuffle=human)
              for i in range(n_players // 4)]
    cheaters = [CheaterSpec(CHEATER, "marked_ten", q)] if q > 0 else []
    spec = SeasonSpec(tables=tables, n_deals=deals_each * n_players // 4, players=n_players, cheaters=cheaters,
                      skills={CHEATER: cheater_skill} if q > 0 else {}, deck=False, time=False,
                      log_decisions=log_decisions, season="cal")
    if equal_skills:
        spec.skill_mix = {s: 0.25 for s in SKILLS}
    return spec


def collusion_spec(q: float = 0.0, n_tables: int = 3, deals_each: int = 500, human: bool = False) -> SeasonSpec:

    tables = [TableSpec(f"sw5-{i}", 5, human_shuffle=human) for i in range(n_tables)]
    cheaters = [CheaterSpec(CHEATER, "colluder", q, partner=PARTNER),
                CheaterSpec(PARTNER, "colluder", q, partner=CHEATER)] if q > 0 else []
    return SeasonSpec(tables=tables, n_deals=deals_each * n_tables, players=5 * n_tables, cheaters=cheaters,
                      deck=False, time=False, season="cal")


def revoke_spec(q: float = 0.0, n_players: int = 20, deals_each: int = 1000, human: bool = False,
                revoke_rate: float = ACCIDENTAL_RATE, clumsy: int = 0, clumsy_rate: float = CLUMSY_RATE) -> SeasonSpec:
    """The revoke study's club: `n_players` at Scotch Whist tables of four in partnerships, each playing about
    `deals_each` deals; honest members revoke by accident at `revoke_rate` per chance, the first `clumsy` honest
    members (never the revoker) at their own `clumsy_rate`; with q > 0, the deliberate revoker `CHEATER`."""
    tables = [TableSpec(f"sw4-{i}", 4, sides=partnerships(4, "pairs"), human_shuffle=human)
              for i in range(n_players // 4)]
    cheaters = [CheaterSpec(CHEATER, "revoker", q)] if q > 0 else []
    spec = SeasonSpec(tables=tables, n_deals=deals_each * n_players // 4, players=n_players, cheaters=cheaters,
                      deck=False, time=False, season="cal", revoke_rate=revoke_rate)
    spec.revoke_rates = {m: clumsy_rate for m in [x for x in spec.member_names() if x != CHEATER][:clumsy]}
    return spec


def _replay(records: list[dict]) -> Replay:
    """The simulated records replayed as the audit replays them, with the table (and each deal's result, which
    the likelihood-ratio yardstick reads)."""
    return replay_records([record_from_obj(r, "sim", 0, k + 1) for k, r in enumerate(records)], engine="batch",
                          table=True)


def _detect(name: str, rep: Replay, fdr: float) -> list:
    """One test alone through the audit (`auditor.audit.audit` with that one detector: its family at the whole
    level, as a study of one test needs)."""
    return audit(rep, fdr=fdr, seed=0, detectors=[DETECTORS[name](fdr=fdr, details=True)], keep_table=True).tests


# ---------------------------------------------------------------- the likelihood-ratio yardstick


def _logged_card(text: str) -> int:
    """A card of the simulator's decision log (it writes canonical spellings only)."""
    code = parse_card(text)
    assert code is not None, f"decision log card {text!r}"
    return code


def lr_yardstick(sim: Simulation, results: list[DealResult], q: float,
                 players: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per player: the optimal likelihood-ratio statistic of his decisions, honest policy vs the marked-Ten
    mixture q * cheat + (1 - q) * honest (the simulator's own policies), and its one-sided p-value under the honest
    policy (saddlepoint over his decisions; each decision's term drawn from the honest probabilities)."""

    rows: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    for dec in sim.decisions or []:
        rows[(dec["game_id"], dec["deal_no"], dec["trick"], dec["seat"])] = dec
    V: dict[str, list[float]] = {}
    P: dict[str, list[float]] = {}
    T: dict[str, list[int]] = {}
    G: dict[str, list[int]] = {}
    count: dict[str, int] = {}
    for res in results:
        d = res.deal
        if d.game != "scotch_whist" or deal_exclusion(res) is not None:
            continue
        trump = res.trump
        assert trump is not None  # deal_exclusion passed: a scored deal, its trump known
        tab = tables(d.game, trump)
        ten = trump * 13 + 8
        pack = layout(d.ruleset, d.n, d.dealer).pack
        for st in walk(res):
            name = d.players[st.seat]
            if players is not None and name not in players:
                continue
            row = rows.get((d.game_id, d.deal_no, st.k + 1, st.seat))
            if row is None or row.get("revoke") or len(row["legal"]) < 2:
                continue
            legal = [_logged_card(x) for x in row["legal"]]
            honest = [float(x) for x in row["p_honest"]]
            holder = st.holder(ten)
            # marked_ten_probs reads these fields of the simulator's `Public` (its parameter type); the replay's
            # walk has them, not the engine's other fields (a Protocol of them in simulate.play would need no cast)
            pub = cast(Public, SimpleNamespace(trump=trump, side_of=st.side_of, lead_suit=st.lead_suit,
                                               order=st.trick_seats, pos=st.pos, played=st.played, pack=pack,
                                               tab=tab))
            cp = marked_ten_probs(pub, st.seat, st.hold[st.seat], legal, honest, holder)
            if cp is None:
                continue
            mix = [q * a + (1 - q) * b for a, b in zip(cp, honest, strict=False)]
            if all(abs(m - h) < 1e-12 for m, h in zip(mix, honest, strict=False)):
                continue  # the sure read does not change the play here: no evidence either way
            vals = [math.log(max(m, 1e-300)) - math.log(max(h, 1e-300)) for m, h in zip(mix, honest, strict=False)]
            k = count.get(name, 0)
            G.setdefault(name, []).extend([k] * len(legal))
            V.setdefault(name, []).extend(vals)
            P.setdefault(name, []).extend(honest)
            T.setdefault(name, []).extend(int(c == st.card) for c in legal)
            count[name] = count.get(name, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for name in V:
        b = Blocks(np.zeros(count[name], np.int64), np.asarray(G[name], np.int64), np.asarray(V[name]),
                   np.asarray(P[name]), np.asarray(T[name], np.int64))
        t = b.test()
        out[name] = {"llr": t["observed"], "z": t["z"], "p": t["p"], "decisions": count[name]}
    return out


# ---------------------------------------------------------------- one season of each study


def marked_season(seed: int, i: int, q: float, human: bool = False, fdr: float = 0.05, n_players: int = 60,
                  deals_each: int = 400, yardstick: bool = True) -> dict:

    t0 = time.perf_counter()
    study = f"marked-{q}-{int(human)}-{deals_each}"
    log = yardstick and q > 0
    sim = simulate_season(marked_spec(q, n_players, deals_each, human, log_decisions=log), _rng(seed, study, i))
    rep = _replay(sim.records)
    tests = _detect("marked_ten", rep, fdr)
    skills = {p: v["skill"] for p, v in sim.key["players"].items()}
    played: dict[str, int] = {}
    for r in sim.records:
        for p in r["players"]:
            played[p] = played.get(p, 0) + 1
    rows = []
    for t in tests:
        c = t.controls
        rows.append({"player": t.subject, "skill": skills[t.subject], "cheat": q > 0 and t.subject == CHEATER,
                     "p": t.pvalue, "z": t.statistic, "flagged": t.flagged, "deals": t.n,
                     "played": played.get(t.subject, 0),
                     "p_hard": c["hard_facts_null"]["p"], "p_opening": c["opening_leads_exact"]["p"],
                     "p_normal": c["deal_sums_normal"]["p"], "p_queen": c["queen"]["p"],
                     "p_plain_ten": c["plain_ten"]["p"], "p_placebo": c["placebo"]["p"]})
    out = {"rows": rows, "family": len(tests), "seconds": round(time.perf_counter() - t0, 2)}
    if log:
        ys = lr_yardstick(sim, rep.results or [], q)
        out["yardstick"] = ys
    return out


def collusion_season(seed: int, i: int, q: float, fdr: float = 0.05, deals_each: int = 500,
                     human: bool = False) -> dict:

    t0 = time.perf_counter()
    sim = simulate_season(collusion_spec(q, deals_each=deals_each, human=human),
                          _rng(seed, f"collusion-{q}" + ("-human" if human else ""), i))
    tests = _detect("collusion", _replay(sim.records), fdr)
    pair = {f"{CHEATER}+{PARTNER}", f"{PARTNER}+{CHEATER}"}
    played = sum(CHEATER in r["players"] for r in sim.records)
    return {"family": len(tests), "played": played,
            "false_flags": sum(t.flagged for t in tests if not (q > 0 and t.subject in pair)),
            "pair_flagged": [t.flagged for t in tests if q > 0 and t.subject in pair],
            "pair_p": [t.pvalue for t in tests if q > 0 and t.subject in pair],
            "p_honest": [t.pvalue for t in tests if not (q > 0 and t.subject in pair)],
            "seconds": round(time.perf_counter() - t0, 2)}


def revoke_season(seed: int, i: int, q: float, fdr: float = 0.05, deals_each: int = 1000,
                  human: bool = False, revoke_rate: float = ACCIDENTAL_RATE, clumsy: int = 0,
                  n_players: int = 20, share: float | None = None) -> dict:
    """One revoke season: `revoke_pattern` alone at the audit-wide level of its family (`fdr` x its share of the
    budget, `registry.SHARES`, unless `share` is given), with the honest members' p-values (the test's and its
    controls'), every honest revoke's pay flag and pi (the null's own check: paid - sum pi over sqrt(sum
    pi (1 - pi))), and for the revoker his flag, p-value, revokes and the exact single-test power of his
    revokes' pi at the per-test level for the strength his deliberate revokes give (`exact.power`)."""
    t0 = time.perf_counter()
    tag = f"revoke-{q}" + ("-human" if human else "") + (f"-r{revoke_rate:.6g}" if revoke_rate != ACCIDENTAL_RATE
                                                          else "") + (f"-c{clumsy}" if clumsy else "")
    sim = simulate_season(revoke_spec(q, n_players=n_players, deals_each=deals_each, human=human,
                                      revoke_rate=revoke_rate, clumsy=clumsy), _rng(seed, tag, i))
    level = fdr * (SHARES[REVOKE] if share is None else share)
    rep = _replay(sim.records)
    tests = _detect(REVOKE, rep, level)
    played = sum(CHEATER in r["players"] for r in sim.records)
    deliberate = sum(len(c.get("revokes", [])) for c in sim.key["cheaters"])
    is_cheat = [q > 0 and t.subject == CHEATER for t in tests]
    cheat = [t for t, c in zip(tests, is_cheat, strict=True) if c]
    honest = [t for t, c in zip(tests, is_cheat, strict=True) if not c]
    out: dict[str, Any] = {
        "family": len(tests), "level": level, "played": played, "deliberate": deliberate,
        "false_flags": sum(t.flagged for t in honest), "cheat_flagged": bool(cheat and cheat[0].flagged),
        "cheat_p": cheat[0].pvalue if cheat else None, "cheat_revokes": cheat[0].n if cheat else 0,
        "cheat_paid": int(cheat[0].observed) if cheat else 0,
        "p_honest": [t.pvalue for t in honest],
        "p_timing": [t.controls["timing"].get("pvalue") for t in honest],
        "p_fisher": [t.controls["gainful_vs_field"]["pvalue"] for t in honest],
        "honest_revokes": sum(t.n for t in honest), "honest_paid": sum(int(t.observed) for t in honest),
        "honest_expected": float(sum(t.expected for t in honest)),
        "seconds": 0.0}
    assert rep.table is not None
    chances = revoke_chances(RevokePattern().count(rep.table))  # each player's revokes' pi, one per revoke
    names = {t.subject for t in honest}
    out["honest_variance"] = float(sum(p * (1 - p) for pl, v in chances.items() if pl in names for p in v))
    if cheat and cheat[0].n:
        # the exact single-test oracle: his revokes' pi as they were, a share deliberate / n of them made to pay
        pis = chances[CHEATER]
        qd = min(1.0, deliberate / len(pis))
        out["oracle_power"] = exact.power(exact.group_probs(pis), exact.per_test_level(level, len(tests)), qd)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


# ---------------------------------------------------------------- summaries


def _rate_rows(rows: list[dict], key: str = "p") -> dict[str, Any]:
    ps = np.array([r[key] for r in rows if r.get(key) is not None], float)
    n = len(ps)
    out: dict[str, Any] = {"players": n}
    for a in ALPHAS:
        k = int(np.sum(ps <= a))
        out[f"p<={a}"] = k / n if n else None
        out[f"count<={a}"] = k
    return out


def summarise_marked_honest(seasons: list[dict], fdr: float) -> dict:
    rows = [r for s in seasons for r in s["rows"] if not r["cheat"]]
    out: dict = {"seasons": len(seasons), "by_skill": {}}
    for sk in SKILLS + ("all",):
        rs = [r for r in rows if sk == "all" or r["skill"] == sk]
        e = _rate_rows(rs)
        e["flagged"] = sum(r["flagged"] for r in rs)
        e["flag_rate"] = e["flagged"] / len(rs) if rs else None
        e["mean_z"] = float(np.mean([r["z"] for r in rs])) if rs else None
        e["hard_facts_null"] = _rate_rows(rs, "p_hard")
        e["opening_exact"] = _rate_rows(rs, "p_opening")
        e["deal_sums_normal"] = _rate_rows(rs, "p_normal")
        out["by_skill"][sk] = e
    with_flag = sum(any(r["flagged"] for r in s["rows"] if not r["cheat"]) for s in seasons)
    out["seasons_with_a_flag"] = with_flag
    out["realised_fdr"] = with_flag / len(seasons) if seasons else None
    out["per_test_level"] = fdr / max(1, int(np.median([s["family"] for s in seasons]))) if seasons else None
    return out


def summarise_marked_power(seasons: list[dict], fdr: float) -> dict:
    cheat = [r for s in seasons for r in s["rows"] if r["cheat"]]
    m = int(np.median([s["family"] for s in seasons])) if seasons else 1
    level = fdr / m
    out: dict[str, Any] = {"seasons": len(seasons), "family": m, "per_test_level": level}
    out["power_at_fdr"] = float(np.mean([r["flagged"] for r in cheat])) if cheat else None
    out["power_at_level"] = float(np.mean([r["p"] <= level for r in cheat])) if cheat else None
    out["median_p"] = float(np.median([r["p"] for r in cheat])) if cheat else None
    out["median_deals_played"] = float(np.median([r["played"] for r in cheat])) if cheat else None
    out["median_deals_scored"] = float(np.median([r["deals"] for r in cheat])) if cheat else None
    for key in ("p_hard", "p_opening", "p_normal", "p_queen", "p_plain_ten", "p_placebo"):
        vals = [r[key] for r in cheat if r[key] is not None]
        out[f"{key}_power_at_level"] = float(np.mean([v <= level for v in vals])) if vals else None
    ys = [s["yardstick"].get(CHEATER) for s in seasons if s.get("yardstick")]
    ys = [y for y in ys if y is not None]
    if ys:
        out["yardstick_power_at_level"] = float(np.mean([y["p"] <= level for y in ys]))
        out["yardstick_median_p"] = float(np.median([y["p"] for y in ys]))
        hon = [y["p"] for s in seasons for n, y in (s.get("yardstick") or {}).items() if n != CHEATER]
        out["yardstick_honest_rate_at_level"] = float(np.mean([p <= level for p in hon])) if hon else None
        yp = out["yardstick_power_at_level"]
        out["power_ratio"] = (out["power_at_level"] / yp) if yp else None
    hon_rows = [r for s in seasons for r in s["rows"] if not r["cheat"]]
    out["honest_in_these_seasons"] = _rate_rows(hon_rows)
    return out


def summarise_flags(seasons: list[dict], key: str) -> dict:
    ps = [p for s in seasons for p in s["p_honest"]]
    out: dict[str, Any] = {"seasons": len(seasons), "honest_tests": len(ps)}
    for a in ALPHAS:
        out[f"p<={a}"] = float(np.mean([p <= a for p in ps])) if ps else None
    out["seasons_with_a_false_flag"] = sum(s["false_flags"] > 0 for s in seasons)
    out["realised_fdr"] = out["seasons_with_a_false_flag"] / len(seasons) if seasons else None
    if key == "collusion":
        fl = [all(s["pair_flagged"]) for s in seasons if s["pair_flagged"]]
        any_fl = [any(s["pair_flagged"]) for s in seasons if s["pair_flagged"]]
        if fl:
            out["power_both_directions"] = float(np.mean(fl))
            out["power_either_direction"] = float(np.mean(any_fl))
            out["median_deals_played"] = float(np.median([s["played"] for s in seasons]))
    if key == "revoke":
        out |= summarise_revoke(seasons)
    return out


REVOKE_ALPHAS = (0.01, 0.05, 0.1)


def summarise_revoke(seasons: list[dict]) -> dict:
    """The revoke study's numbers: the honest members' rates of p <= alpha (the test, its timing and Fisher
    controls), the null's own check over every honest revoke (z of paid - sum pi), and for the revoker the share
    of seasons he was flagged in at the audit-wide level next to the exact single-test oracle's mean power."""
    out: dict[str, Any] = {}
    for name, key in (("", "p_honest"), ("timing_", "p_timing"), ("fisher_", "p_fisher")):
        ps = np.array([p for s in seasons for p in s.get(key, []) if p is not None], float)
        for a in REVOKE_ALPHAS:
            out[f"{name}rate<={a}"] = float(np.mean(ps <= a)) if len(ps) else None
            if not name:
                out[f"count<={a}"] = int(np.sum(ps <= a))
    var = sum(s.get("honest_variance", 0.0) for s in seasons)
    paid = sum(s.get("honest_paid", 0) for s in seasons)
    exp = sum(s.get("honest_expected", 0.0) for s in seasons)
    out["honest_revokes"] = sum(s.get("honest_revokes", 0) for s in seasons)
    out["honest_paid_z"] = float((paid - exp) / math.sqrt(var)) if var > 0 else None
    if any(s["deliberate"] for s in seasons):
        out["power"] = float(np.mean([s["cheat_flagged"] for s in seasons]))
        out["oracle_power"] = float(np.mean([s.get("oracle_power", 0.0) for s in seasons]))
        out["median_p"] = float(np.median([s["cheat_p"] if s["cheat_p"] is not None else 1.0 for s in seasons]))
        out["median_deals_played"] = float(np.median([s["played"] for s in seasons]))
        out["deliberate_per_deal"] = float(np.sum([s["deliberate"] for s in seasons]) /
                                           max(1, np.sum([s["played"] for s in seasons])))
        out["cheat_paid_share"] = float(np.sum([s["cheat_paid"] for s in seasons]) /
                                        max(1, np.sum([s["cheat_revokes"] for s in seasons])))
        out["median_family"] = float(np.median([s["family"] for s in seasons]))
    return out


# ---------------------------------------------------------------- the study


SIZES_FAST = {"marked_honest": 2, "marked_human": 1, "marked_power": 2, "marked_small": 0, "collusion": 3,
              "revoke": 2, "human_other": 1}
SIZES_QUICK = {"marked_honest": 1, "marked_human": 0, "marked_power": 1, "marked_small": 0, "collusion": 1,
               "revoke": 1, "human_other": 0}  # (issue 16) `--quick`: each study once, to see it run
SIZES_FULL = {"marked_honest": 100, "marked_human": 20, "marked_power": 50, "marked_small": 40, "collusion": 50,
              "revoke": 50, "human_other": 20}  # human_other: honest collusion and revoke seasons, hand shuffles
# the revoke studies: (name, q, revoke_season's keywords): honest clubs whose members revoke by accident at the
# simulator's rate, at ten times it, and with five clumsy members at 1/30; the deliberate revoker where the others
# revoke by accident and where nobody else ever revokes
REVOKE_STUDIES: tuple[tuple[str, float, dict[str, Any]], ...] = (
    ("revoke_honest", 0.0, {}),
    ("revoke_honest_x10", 0.0, {"revoke_rate": 10 * ACCIDENTAL_RATE}),
    ("revoke_clumsy", 0.0, {"clumsy": 5}),
    ("revoke_power", REVOKER_Q, {}),
    ("revoke_power_quiet", REVOKER_Q, {"revoke_rate": 0.0}),
)
SMALL_DEALS = 150  # `marked_small`: the power seasons again with about 150 deals played each


def _task(args: tuple) -> tuple[str, dict]:
    kind, seed, i, q, kw = args
    if kind.startswith("marked"):
        return kind, marked_season(seed, i, q, **kw)
    if kind.startswith("collusion"):
        return kind, collusion_season(seed, i, q, **kw)
    return kind, revoke_season(seed, i, q, **kw)


def season_count(fast: bool = False, sizes: dict | None = None, marked_qs: tuple[float, ...] = (1.0, 0.5)) -> int:
    """How many simulated seasons `calibrate_play` runs with these sizes: the total its `advance` counts to."""
    n = dict(SIZES_FAST if fast else SIZES_FULL)
    n.update(sizes or {})
    return len(_tasks(0, n, 0.05, marked_qs, 0.7))


def _tasks(seed: int, n: dict, fdr: float, marked_qs: tuple[float, ...], collusion_q: float) -> list[tuple]:
    tasks: list[tuple] = []
    for i in range(n["marked_honest"]):
        tasks.append(("marked_honest", seed, i, 0.0, {"fdr": fdr}))
    for i in range(n["marked_human"]):
        tasks.append(("marked_human", seed, i, 0.0, {"fdr": fdr, "human": True}))
    for q in marked_qs:
        for i in range(n["marked_power"]):
            tasks.append((f"marked_power_{q}", seed, i, q, {"fdr": fdr}))
        for i in range(n.get("marked_small", 0)):
            tasks.append((f"marked_small_{q}", seed, i, q, {"fdr": fdr, "deals_each": SMALL_DEALS}))
    for i in range(n["collusion"]):
        tasks.append(("collusion_honest", seed, i, 0.0, {"fdr": fdr}))
        tasks.append(("collusion_power", seed, i, collusion_q, {"fdr": fdr}))
    for i in range(n["revoke"]):
        for kind, q, kw in REVOKE_STUDIES:
            tasks.append((kind, seed, i, q, {"fdr": fdr} | kw))
    for i in range(n.get("human_other", 0)):
        tasks.append(("collusion_human", seed, i, 0.0, {"fdr": fdr, "human": True}))
        tasks.append(("revoke_human", seed, i, 0.0, {"fdr": fdr, "human": True}))
    return tasks


def calibrate_play(seed: int = 0, fast: bool = False, sizes: dict | None = None, fdr: float = 0.05,
                   workers: int = 1, progress: Callable[[str], None] | None = None,
                   marked_qs: tuple[float, ...] = (1.0, 0.5), collusion_q: float = 0.7,
                   advance: Callable[[int], None] | None = None) -> dict:
    """Run the play-knowledge studies. `sizes`: seasons per study (keys of SIZES_FULL). `advance(1)` after each
    season (issue 16: the progress bar; `season_count` is its total)."""
    say = progress or (lambda _m: None)
    step = advance or (lambda _k: None)
    n = dict(SIZES_FAST if fast else SIZES_FULL)
    n.update(sizes or {})
    tasks = _tasks(seed, n, fdr, marked_qs, collusion_q)
    t0 = time.perf_counter()
    done: dict[str, list[dict]] = {}
    say(f"{len(tasks)} simulated seasons on {workers} worker(s)")
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            for k, (kind, res) in enumerate(ex.map(_task, tasks, chunksize=1), 1):
                done.setdefault(kind, []).append(res)
                step(1)
                if k % 10 == 0:
                    say(f"{k}/{len(tasks)} seasons, {time.perf_counter() - t0:.0f} s")
    else:
        for k, t in enumerate(tasks, 1):
            kind, res = _task(t)
            done.setdefault(kind, []).append(res)
            step(1)
            if k % 10 == 0:
                say(f"{k}/{len(tasks)} seasons, {time.perf_counter() - t0:.0f} s")
    out: dict = {"seed": seed, "fdr": fdr, "sizes": n, "studies": {}}
    if "marked_honest" in done:
        out["studies"]["marked_honest"] = summarise_marked_honest(done["marked_honest"], fdr)
    if "marked_human" in done:
        out["studies"]["marked_human"] = summarise_marked_honest(done["marked_human"], fdr)
    for q in marked_qs:
        for study in (f"marked_power_{q}", f"marked_small_{q}"):
            if study in done:
                out["studies"][study] = summarise_marked_power(done[study], fdr) | {"q": q}
    if "collusion_honest" in done:
        out["studies"]["collusion_honest"] = summarise_flags(done["collusion_honest"], "collusion")
        out["studies"]["collusion_power"] = summarise_flags(done["collusion_power"], "collusion") | {"q": collusion_q}
    for kind, q, kw in REVOKE_STUDIES:
        if kind in done:
            out["studies"][kind] = summarise_flags(done[kind], "revoke") | {"q": q} | kw
    for key in ("collusion_human", "revoke_human"):
        if key in done:
            out["studies"][key] = summarise_flags(done[key], key.split("_")[0])
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["seconds_per_season"] = {k: float(np.mean([s["seconds"] for s in v])) for k, v in done.items()}
    out["targets"] = targets(out)
    import os
    import platform

    out["machine"] = {"cpus": os.cpu_count(), "workers": workers, "python": platform.python_version()}
    return out


def targets(res: dict) -> list[dict]:
    """The issue's targets, measured: (what, met, measured). `met` is None when the study was too small to say."""
    st = res["studies"]
    fdr = res["fdr"]
    out = []
    p1 = st.get("marked_power_1.0")
    if p1:
        met = p1["power_at_fdr"] >= 0.8
        out.append({"target": "marked-Ten player at q = 1 flagged at FDR 5% within ~400 deals played, >= 80% of "
                              "seasons", "met": met,
                    "measured": f"{p1['power_at_fdr']:.0%} of {p1['seasons']} seasons (median "
                                f"{p1['median_deals_played']:.0f} deals played)"})
        if p1.get("power_ratio") is not None:
            out.append({"target": "power ratio to the likelihood-ratio yardstick at the same level, aim >= 0.7",
                        "met": p1["power_ratio"] >= 0.7,
                        "measured": f"q=1: {p1['power_at_level']:.0%} / {p1['yardstick_power_at_level']:.0%} = "
                                    f"{p1['power_ratio']:.2f}"})
    p5 = st.get("marked_power_0.5")
    if p5 and p5.get("power_ratio") is not None:
        out.append({"target": "power ratio at q = 0.5 (aim >= 0.7)", "met": p5["power_ratio"] >= 0.7,
                    "measured": f"{p5['power_at_level']:.0%} / {p5['yardstick_power_at_level']:.0%} = "
                                f"{p5['power_ratio']:.2f}"})
    h = st.get("marked_honest")
    if h:
        from scipy.stats import binom

        rd = h["by_skill"]["reader"]
        n_r = rd["players"]
        level = h["per_test_level"] or fdr / 60
        # flagged no more often than nominal: reject when the readers' flag count is significantly above the
        # per-test level (one-sided exact binomial at 5%)
        above = n_r > 0 and binom.sf(rd["flagged"] - 1, n_r, level) < 0.05
        met = (not above) if h["seasons"] >= 100 else None
        out.append({"target": "honest strong readers flagged no more often than nominal, >= 100 honest seasons, "
                              "club of 60", "met": met,
                    "measured": f"{rd['flagged']} flags among {n_r} reader-seasons (nominal {level * n_r:.2f}); "
                                f"p<=0.01 rate {rd['p<=0.01']:.3f}; {h['seasons']} seasons"})
        k, m = h["seasons_with_a_flag"], h["seasons"]
        above = m > 0 and binom.sf(k - 1, m, fdr) < 0.05
        out.append({"target": "realised FDR of marked_ten in honest seasons <= 5%", "met": (not above) if m >= 100
                    else None, "measured": f"{k} of {m} seasons with a flag"})
    for key, where in (("revoke_power", "the others revoke by accident"),
                       ("revoke_power_quiet", "nobody else revokes")):
        rv = st.get(key)
        if rv and "power" in rv:
            out.append({"target": f"deliberate revoker (about one deal in 40; {where}) flagged within 1,000 deals "
                                  "at the audit-wide level in >= 90% of seasons",
                        "met": rv["power"] >= 0.9 if rv["seasons"] >= 20 else None,
                        "measured": f"{rv['power']:.0%} of {rv['seasons']} seasons (exact single-test oracle "
                                    f"{rv['oracle_power']:.0%}; median p {rv['median_p']:.2g}, median "
                                    f"{rv['median_deals_played']:.0f} deals, {rv['deliberate_per_deal']:.3f} "
                                    "deliberate revokes per deal)"})
    for key in ("revoke_honest", "revoke_honest_x10", "revoke_clumsy"):
        h = st.get(key)
        if h and h.get("rate<=0.05") is not None:
            from scipy.stats import binom

            n_t = h["honest_tests"]
            above = [a for a in REVOKE_ALPHAS if binom.sf(h[f"count<={a}"] - 1, n_t, a) < 0.001]
            out.append({"target": f"{key}: honest revokers' rate of p <= alpha at most alpha (0.01, 0.05, 0.1)",
                        "met": not above if n_t >= 200 else None,
                        "measured": ", ".join(f"{h[f'rate<={a}']:.4f}" for a in REVOKE_ALPHAS) +
                                    f" over {n_t} tests; {h['seasons_with_a_false_flag']} seasons with a false flag"
                                    + (f"; paid - sum pi: z = {h['honest_paid_z']:+.2f}"
                                       if h.get("honest_paid_z") is not None else "")})
    co = st.get("collusion_power")
    if co and "power_either_direction" in co:
        out.append({"target": "collusion at an individual table of 5 caught within 500 deals",
                    "met": co["power_either_direction"] >= 0.8,
                    "measured": f"{co['power_either_direction']:.0%} of {co['seasons']} seasons (both directions "
                                f"{co['power_both_directions']:.0%}; median {co['median_deals_played']:.0f} deals)"})
    return out


def format_report(res: dict, width: int | None = None) -> str:
    """The numbers as text, each line wrapped between words at `width` columns (issue 16; default: the terminal's
    width, at most 100)."""
    lines = [f"play-knowledge calibration: seed {res['seed']}, FDR {res['fdr']}, {res['seconds']} s "
             f"({res['machine']['cpus']} cpus, {res['machine']['workers']} workers)"]
    st = res["studies"]
    for key in ("marked_honest", "marked_human"):
        h = st.get(key)
        if not h:
            continue
        lines.append(f"{key}: {h['seasons']} seasons, realised FDR {h['realised_fdr']:.3f} "
                     f"({h['seasons_with_a_flag']} seasons with a flag)")
        for sk, e in h["by_skill"].items():
            lines.append(f"  {sk:7s} n={e['players']:5d}  p<=.001 {e['p<=0.001']:.4f}  p<=.01 {e['p<=0.01']:.4f}  "
                         f"p<=.05 {e['p<=0.05']:.4f}  flagged {e['flagged']}  mean z {e['mean_z']:+.3f}  "
                         f"| hard-facts null p<=.01 {e['hard_facts_null']['p<=0.01']:.4f}")
    for key in sorted(k for k in st if k.startswith(("marked_power", "marked_small"))):
        p = st[key]
        lines.append(f"{key}: {p['seasons']} seasons, flagged at FDR {p['power_at_fdr']:.0%}, p <= "
                     f"{p['per_test_level']:.2g}: {p['power_at_level']:.0%}, median p {p['median_p']:.2g}, "
                     f"deals played {p['median_deals_played']:.0f} (scored {p['median_deals_scored']:.0f})")
        if p.get("yardstick_power_at_level") is not None:
            lines.append(f"  LR yardstick: {p['yardstick_power_at_level']:.0%} (median p "
                         f"{p['yardstick_median_p']:.2g}); power ratio {p['power_ratio']:.2f}; yardstick honest "
                         f"rate {p['yardstick_honest_rate_at_level']:.4f}")
        lines.append("  controls at the same level: " + ", ".join(
            f"{k[2:-15]} {p[k]:.0%}" for k in p if k.endswith("_power_at_level") and k.startswith("p_")
            and p[k] is not None))
    for key in ("collusion_honest", "collusion_power", "collusion_human") + tuple(k for k, _, _ in REVOKE_STUDIES) + (
            "revoke_human",):
        s = st.get(key)
        if s:
            lines.append(f"{key}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                                for k, v in s.items()))
    lines.append("targets:")
    for t in res["targets"]:
        mark = {True: "met", False: "NOT met", None: "too few seasons to say"}[t["met"]]
        lines.append(f"  [{mark}] {t['target']}: {t['measured']}")
    return wrap_lines(lines, width)


def wrap_lines(lines: list[str], width: int | None = None) -> str:
    """`lines` joined, each longer one wrapped between words (never inside one) under its own indent plus four."""
    import shutil
    import textwrap

    width = width or min(100, shutil.get_terminal_size((100, 24)).columns)
    out = []
    for line in lines:
        indent = line[:len(line) - len(line.lstrip())]
        out.extend(textwrap.wrap(line, width, subsequent_indent=indent + "    ", break_long_words=False,
                                 break_on_hyphens=False) or [line])
    return "\n".join(out)
