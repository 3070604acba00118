"""Replay a whole input: records → deal results → games → the JSON document of outputs.md.

`replay_records(records, engine)` works on `Record`s and keeps every `DealResult` (for the detectors).
`replay_paths(paths, engine)` is what `auditor replay` uses: with the batch engine it reads the files in columns
(`auditor.fast.pipeline`) and never builds a Python object per clean deal; the document is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..dealog import Record
from ..findings import Finding
from .chain import DealOutcome, GameSummary, chain_games
from .reference import DealResult, replay_deal


@dataclass
class ReplayReport:
    deals: int
    games: int
    findings: list[Finding]
    games_summary: list[GameSummary]
    results: list[DealResult] = field(default_factory=list)
    outcomes: dict[int, DealOutcome] = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "deals": self.deals,
            "games": self.games,
            "findings": [f.to_json() for f in self.findings],
            "games_summary": [g.to_json() for g in self.games_summary],
        }

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out


def bad_record_finding(rec: Record) -> Finding:
    raw = rec.raw if isinstance(rec.raw, dict) else {}
    gid = raw.get("game_id") if isinstance(raw.get("game_id"), str) else None
    dno = raw.get("deal_no") if isinstance(raw.get("deal_no"), int) and not isinstance(raw.get("deal_no"), bool) \
        else None
    return Finding("bad_record", gid, dno, None, None, None, None, rec.source, rec.error or "unreadable record")


def replay_records(records: Iterable[Record], engine: str = "reference",
                   progress: Callable[[int], None] | None = None) -> ReplayReport:
    """Replay every record. `engine` is "reference" (per card) or "batch" (numpy, same results)."""
    bad: list[tuple[tuple, Finding]] = []
    deals = []
    n_read = 0
    for rec in records:
        n_read += 1
        if progress is not None and n_read % 4096 == 0:
            progress(n_read)
        if rec.deal is None:
            bad.append(((rec.file_index, rec.line or 0), bad_record_finding(rec)))
        else:
            deals.append(rec.deal)
    stats: dict = {"engine": engine}
    if engine == "batch":
        from .batch import replay_batch

        results, stats = replay_batch(deals)
    else:
        results = [replay_deal(d) for d in deals]
    summaries, outcomes = chain_games(results)
    keyed: list[tuple[tuple, Finding]] = list(bad)
    for i, r in enumerate(results):
        key = (r.deal.file_index, r.deal.line)
        keyed += [(key, f) for f in r.findings]
        oc = outcomes.get(i)
        if oc is not None:
            keyed += [(key, f) for f in oc.findings]
    keyed.sort(key=lambda kf: kf[0])  # stable: within a record, deal findings before game findings
    games = len({d.game_id for d in deals})
    return ReplayReport(deals=n_read, games=games, findings=[f for _, f in keyed], games_summary=summaries,
                        results=results, outcomes=outcomes, stats=stats)


def replay_paths(paths: list[str], engine: str = "batch", progress: Callable[[int], None] | None = None):
    """Replay files. Returns an object with `deals`, `games`, `findings`, `games_summary`, `stats`, `to_json()`
    and `counts()` (a `ReplayReport` for the reference engine)."""
    if engine == "batch":
        from ..fast.pipeline import replay_paths as fast

        return fast(list(paths), progress=progress)
    from ..dealog import read_records

    def records():
        for i, rec in enumerate(read_records(paths), 1):
            if progress is not None and i % 4096 == 0:
                progress(i)
            yield rec

    return replay_records(records(), engine=engine)


def dump_document(doc: dict) -> bytes:
    """The JSON document, indented by 2 and UTF-8 (orjson when it can; `json.dumps(doc, indent=2,
    ensure_ascii=False)` otherwise, e.g. for an integer beyond 64 bits). The two agree except in how some floats
    are spelled: orjson writes 1e-05 as 0.00001 (the same number)."""
    try:
        import orjson

        return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    except (ImportError, TypeError):  # e.g. an integer beyond 64 bits
        import json

        return json.dumps(doc, indent=2, ensure_ascii=False).encode()
