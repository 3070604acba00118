"""One look of the monitor (issue 17): add new logs to the saved state, update every stream's e-process, raise
alarms that stay honest however often the room looks.

    result = run_look(paths, state_dir, level=None, capacity=None)   # a `LookResult`; the state is saved
    result.document                                                 # the `auditor monitor --json` document

The guarantee (docs/monitor.md, docs/decisions.md "Continuous monitoring (issue 17)"): each stream k = (test,
subject) has a weight w_k fixed before its first trial (the test's share of the level x the subject's weight by
arrival, `state.subject_weight`; over every stream that can ever come the weights sum to at most 1) and alarms
the first time its e-process reaches 1 / (level x w_k). Each e-process is a nonnegative martingale of mean 1 under
the null (`eprocess`), so by Ville's inequality and the union bound the chance that an honest room ever raises any
alarm, over any number of looks, is at most `level` (family-wise, under any dependence between streams).

A deal is the same deal when its (table, game_id, deal_no) is: one already in the state is never counted again,
however the logs are cut into files. Sent again with the same content (the hash of what the tests read) it is
skipped and counted as `repeated`; with other content it is a `conflict`, reported (and kept in the state) and not
counted either: the first version counted stays counted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..audit import replay_for_audit
from ..columns import TIME_NONE, AuditColumns
from ..detectors.registry import REGISTRY, SHARES
from ..errors import UsageError
from ..facts import facts_from_columns
from .eprocess import Q_GRID, Stream, threshold_log
from .state import DEFAULT_CAPACITY, load_state, new_state, save_state, subject_weight
from .trials import MONITORED, LookTrials, look_trials

DOC_FORMAT = "auditor-monitor/1"
KEEP_EVENTS = 200  # a stream keeps its latest event deals (for the alarm page)
AUDIT_ONLY_WHY: dict[str, str] = {}


def monitored_shares() -> dict[str, float]:
    """The registry's shares of the monitored tests, renormalised to sum to 1."""
    tot = sum(SHARES[t] for t in MONITORED)
    return {t: SHARES[t] / tot for t in MONITORED}


def audit_only() -> list[dict[str, str]]:
    return [{"test": r.spec.name, "why": AUDIT_ONLY_WHY.get(r.spec.name, "not yet monitored: audit only")}
            for r in REGISTRY if r.spec.name not in MONITORED]


@dataclass(frozen=True)
class Alarm:
    test: str
    subject: str
    since: int  # the first look at which it alarmed
    since_at: str | None  # that look's last deal time
    new: bool  # raised by this look


@dataclass(frozen=True)
class LookResult:
    document: dict[str, Any]
    new_alarms: tuple[Alarm, ...]
    state: dict[str, Any]
    summary: str


# ---------------------------------------------------------------- deals already seen


def content_hash(t: AuditColumns, i: int) -> str:
    """A 64-bit hash of what the tests read of row i: players by seat, dealer, turn-up, hands, plays, deck, time."""
    n = int(t.n[i])
    h = hashlib.blake2b(digest_size=8)
    h.update("\x1f".join(t.players[int(x)] for x in t.seat_player[i, :n]).encode("utf-8"))
    for name in ("dealer", "turn_up", "time", "deck_len"):
        h.update(np.asarray(getattr(t, name)[i]).astype(np.int64).tobytes())
    h.update(np.ascontiguousarray(t.hands[i, :n]).tobytes())
    h.update(np.ascontiguousarray(t.play_card[i, :int(t.n_plays[i])]).tobytes())
    h.update(np.ascontiguousarray(t.deck[i]).tobytes())
    return h.hexdigest()


def new_rows(t: AuditColumns, state: dict[str, Any], look: int) -> tuple[np.ndarray, int, list[dict]]:
    """The rows of deals not yet in the state (in canonical order; recorded in the state as they are taken), the
    number re-sent with the same content, and the conflicts (re-sent with other content)."""
    seen = state["deals"]
    rows: list[int] = []
    repeated = 0
    conflicts: list[dict] = []
    for i in np.argsort(t.order, kind="stable").tolist():
        tb, g, dn = t.tables[int(t.table[i])], t.game_ids[int(t.game[i])], str(int(t.deal_no[i]))
        h = content_hash(t, i)
        kept = seen.setdefault(tb, {}).setdefault(g, {}).get(dn)
        if kept is None:
            seen[tb][g][dn] = h
            rows.append(i)
        elif kept == h:
            repeated += 1
        else:
            conflicts.append({"table": tb, "game_id": g, "deal_no": int(dn), "look": look, "source": t.source(i),
                              "hash_kept": kept, "hash_sent": h})
    return np.array(sorted(rows), np.int64), repeated, conflicts


def _iso(us: int) -> str | None:
    if us == int(TIME_NONE):
        return None
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(us))).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- one look


def update_streams(state: dict[str, Any], trials: dict[str, dict[str, LookTrials]], look: int,
                   at: str | None) -> list[Alarm]:
    """Add one look's trials to the state's streams; return the alarms this look raised."""
    level, cap = float(state["level"]), int(state["capacity"])
    raised: list[Alarm] = []
    for test in sorted(trials):
        streams = state["streams"].setdefault(test, {})
        share = float(state["shares"][test])
        for subject in sorted(trials[test]):
            lt = trials[test][subject]
            entry = streams.get(subject)
            if entry is None:
                rank = len(streams) + 1
                entry = streams[subject] = {"rank": rank, "weight": subject_weight(share, rank, cap),
                                            "e": Stream.new().to_json(), "history": [], "alarm": None,
                                            "events": []}
            s = Stream.from_json(entry["e"])
            if lt.llr is not None:
                s.update_llr(lt.llr, lt.trials, lt.score, lt.score_expected)
            else:
                s.update(lt.p, lt.n, lt.k)
            entry["e"] = s.to_json()
            entry["history"].append([look, round(s.log_e, 9), s.trials, s.events])
            if lt.events:
                q = s.best_q()
                entry["events"] = (entry["events"] + [
                    ev | {"look": look, "log_lr": round(math.log((ev["p"] + q * (1 - ev["p"])) / ev["p"]), 6)}
                    for ev in lt.events])[-KEEP_EVENTS:]
            if entry["alarm"] is None and s.max_log_e >= threshold_log(level, entry["weight"]):
                entry["alarm"] = {"look": look, "at": at, "log_e": s.log_e, "trials": s.trials}
                raised.append(Alarm(test, subject, look, at, True))
    return raised


def run_look(paths: Sequence[str], state_dir: str, level: float | None = None, capacity: int | None = None,
             save: bool = True) -> LookResult:
    """Replay `paths`, add their new deals to the state in `state_dir` (made when absent) and save it."""
    state = load_state(state_dir)
    if state is None:
        state = new_state(0.05 if level is None else level, DEFAULT_CAPACITY if capacity is None else capacity,
                          monitored_shares())
    else:
        for name, given, kept in (("--level", level, state["level"]), ("--capacity", capacity, state["capacity"])):
            if given is not None and given != kept:
                raise UsageError(f"{name} {given} differs from the state's {kept}: the guarantee needs it fixed "
                                 f"for the life of the state (start a new --state folder to change it)")
    look = len(state["looks"]) + 1
    replay = replay_for_audit([str(p) for p in paths])
    table = replay.table if replay.table is not None else AuditColumns()
    rows, repeated, conflicts = new_rows(table, state, look)
    sub = table.take(rows)
    facts = facts_from_columns(sub)
    times = sub.time[sub.time != TIME_NONE] if len(sub) else np.zeros(0, np.int64)
    at = _iso(int(times.max())) if len(times) else None
    trials = look_trials(sub, facts)
    raised = update_streams(state, trials, look, at)
    state["conflicts"].extend(conflicts)
    recorded = bool(len(rows) or conflicts)  # a look that brings nothing new leaves the state as it was
    look_doc = {"look": look, "recorded": recorded, "files": [str(p) for p in paths], "deals_read": int(len(table)),
                "deals_new": int(len(rows)), "deals_repeated": repeated, "deals_conflicting": len(conflicts),
                "deals_not_auditable": int(facts.skipped), "findings": len(replay.findings),
                "first_deal_time": _iso(int(times.min())) if len(times) else None, "last_deal_time": at,
                "alarms_raised": len(raised)}
    if recorded:
        state["looks"].append(look_doc)
        if save:
            save_state(state_dir, state)
    doc = document(state, look_doc, conflicts, {(a.test, a.subject) for a in raised})
    return LookResult(doc, tuple(raised), state, summary_line(doc))


# ---------------------------------------------------------------- the document


def stream_entry(test: str, subject: str, entry: dict[str, Any], level: float) -> dict[str, Any]:
    s = Stream.from_json(entry["e"])
    w = float(entry["weight"])
    thr = threshold_log(level, w)
    return {"test": test, "subject": subject, "evidence": _exp(s.log_e), "log10_evidence": s.log_e / math.log(10),
            "max_evidence": _exp(s.max_log_e), "threshold": _exp(thr), "pvalue": s.pvalue,
            "adjusted_pvalue": min(1.0, s.pvalue / w), "weight": w, "trials": s.trials, "events": s.events,
            "expected": s.expected, "strength": s.best_q() if s.log_e > 0 else None,
            "alarm": entry["alarm"] is not None}


def _exp(x: float) -> float:
    return math.exp(min(x, 700.0))


def document(state: dict[str, Any], look_doc: dict[str, Any], conflicts: list[dict],
             new: set[tuple[str, str]]) -> dict[str, Any]:
    level = float(state["level"])
    subjects, alarms = [], []
    for test in sorted(state["streams"]):
        for subject, entry in sorted(state["streams"][test].items()):
            e = stream_entry(test, subject, entry, level)
            subjects.append(e)
            if entry["alarm"] is not None:
                a = entry["alarm"]
                alarms.append(e | {"since": a["look"], "since_at": a["at"], "trials_at_alarm": a["trials"],
                                   "new": (test, subject) in new})
    alarms.sort(key=lambda a: (not a["new"], a["adjusted_pvalue"], a["test"], a["subject"]))
    return {"format": DOC_FORMAT, "level": level, "capacity": state["capacity"], "shares": state["shares"],
            "guarantee": "family-wise: if nobody cheats, the chance that any alarm is ever raised, over every "
                         "subject, test and look, is at most 'level' (e-processes, Ville's inequality, weights "
                         "fixed in advance)",
            "strengths": list(Q_GRID), "monitored": list(MONITORED), "audit_only": audit_only(),
            "look": look_doc, "looks": len(state["looks"]), "conflicts": conflicts,
            "conflicts_total": len(state["conflicts"]),
            "alarms": alarms, "new_alarms": sum(1 for a in alarms if a["new"]), "subjects": subjects}


def summary_line(doc: dict[str, Any]) -> str:
    """One line for a log or a chat message (every name escaped by the caller before a terminal)."""
    lk = doc["look"]
    day = lk["last_deal_time"][:10] if lk["last_deal_time"] else ("undated" if lk["deals_new"] else "nothing new")
    top = max(doc["subjects"], key=lambda e: (e["log10_evidence"] - math.log10(e["threshold"]), e["test"],
                                               e["subject"]), default=None)
    strongest = "" if top is None else (
        f"; closest: {top['test']} {top['subject']} E={top['evidence']:.3g} of {top['threshold']:.3g}")
    new = [f"{a['test']} {a['subject']}" for a in doc["alarms"] if a["new"]]
    alarms = f"NEW ALARM: {', '.join(new)}" if new else "no new alarm"
    return (f"auditor monitor {day} look {lk['look']}: {lk['deals_new']} new deals ({lk['deals_repeated']} repeated,"
            f" {lk['deals_conflicting']} conflicting), {len(doc['subjects'])} subjects x tests; {alarms} "
            f"({len(doc['alarms'])} in all, level {doc['level']:g}){strongest}")
