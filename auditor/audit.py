"""The audit: replay every record, run every detector of the registry, decide the flags over the whole audit (one
weighted Benjamini–Hochberg, `auditor.stats.family.apply_audit`, with the registry's shares), and build the
`auditor audit --json` document of outputs.md.

Detectors count per table and the counts are merged exactly (`Detector.merge`), so the result does not depend on
how the input is split across files or tables. Monte-Carlo steps draw from generators seeded from `seed` and the
detector's name: the same input and seed give the same document.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

from .detectors.registry import SHARES, make_detectors
from .facts import DealingFacts, facts_from_results
from .stats.family import AuditWide, Family, TestResult, apply_audit, cleaned, most_significant_first

DEFAULT_SEED = 0

NOTES = [
    "Flags are decided over the whole audit: one weighted Benjamini-Hochberg over every test and subject, each "
    "test name holding a share of the error budget fixed in advance ('audit'). If nobody cheats, the chance that "
    "the audit flags anyone is at most 'fdr'; with cheaters, the expected share of false flags among flags is at "
    "most 'fdr'. Test names ('families') group the report. Only tier 'report' (q <= fdr) is a flag; 'strong' marks "
    "flags past the audit-wide Bonferroni bound at 'audit.strong_level'; 'watch' is shown to people and is not an "
    "accusation.",
    "These are fixed-sample tests. Re-running them on a growing log (every month, say) and acting on the first "
    "flag raises the real false-accusation rate above the stated FDR; sequential monitoring is not implemented yet.",
    "Controls and diagnostics are inside each test's entry and are in no family: they inform, they do not dilute.",
    "dealer_jack and turnup_jack use exact nulls derived from each deal's rules; deal_uniformity and "
    "shuffle_residue use Monte-Carlo p-values drawn from the recorded seed; shuffle_residue compares each dealer "
    "with the other dealers of his table (people do not shuffle perfectly).",
]


@dataclass
class AuditReport:
    replay: object  # ReplayReport, or the batch pipeline's Replayed
    seed: int
    fdr: float
    tests: list[TestResult]
    families: list[Family]
    dealing: dict = field(default_factory=dict)
    audit: AuditWide | None = None
    selection: dict | None = None
    _tests_json: dict | None = field(default=None, repr=False, compare=False)

    @property
    def flags(self) -> list[TestResult]:
        return most_significant_first(t for t in self.tests if t.flagged)

    def to_json(self, games: bool = True) -> dict:
        """The audit document. `games=False` leaves `replay.games_summary` empty (what the reports read; a
        million-deal log has half a million game entries, which `json_bytes` splices in as bytes)."""
        if games:
            rep = self.replay.to_json()
        else:
            rep = {"deals": self.replay.deals, "games": self.replay.games,
                   "findings": [f.to_json() for f in self.replay.findings], "games_summary": []}
        if self._tests_json is None:  # each test serialised once (a flag is one of the tests)
            self._tests_json = {id(t): t.to_json() for t in self.tests}
        tj = self._tests_json
        doc = {
            "deals": rep["deals"], "games": rep["games"], "replay": rep, "seed": self.seed, "fdr": self.fdr,
            "audit": self.audit.to_json() if self.audit is not None else None,
            "families": [f.to_json() for f in self.families],
            "tests": [tj[id(t)] for t in self.tests],
            "flags": [tj[id(t)] if id(t) in tj else t.to_json() for t in self.flags],
            "dealing": self.dealing,
            "notes": NOTES,
        }
        if self.selection is not None:
            doc["selection"] = self.selection
        return doc

    def json_bytes(self, doc: dict | None = None) -> bytes:
        """The document as `replay --json` writes its own (orjson, 2-space indent, UTF-8), with the games summary
        spliced in from the replay's own byte writer (no Python object per game). `doc`: `to_json(games=False)` if
        the caller has it already."""
        from .replay.run import dump_document

        gs = self.replay.games_summary
        if not len(gs) or not hasattr(gs, "json_entries"):
            return dump_document(self.to_json())
        text = dump_document(doc if doc is not None else self.to_json(games=False))
        marker = b'"games_summary": []'
        assert text.count(marker) == 1  # a key written by us: log strings in JSON cannot hold an unescaped quote
        entries = gs.json_entries()  # indented for the replay document (4 spaces); here it is one level deeper
        entries = b"  " + entries.replace(b"\n", b"\n  ")
        return text.replace(marker, b'"games_summary": [\n' + entries + b"\n    ]")


def detector_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def run_detectors(results: list, fdr: float = 0.05, seed: int = DEFAULT_SEED, detectors=None,
                  details: bool = True) -> tuple[list[TestResult], list[Family], dict]:
    """`run_detectors_audit` without the audit-wide summary (tests, families, dealing)."""
    tested, fams, dealing, _ = run_detectors_audit(results, fdr, seed, detectors, details)
    return tested, fams, dealing


def run_detectors_audit(results: list, fdr: float = 0.05, seed: int = DEFAULT_SEED, detectors=None,
                        details: bool = True) -> tuple[list[TestResult], list[Family], dict, AuditWide]:
    """Every detector over the replayed deals, counted per table and merged; then the families."""
    by_table: dict[str, list] = {}
    for r in results:
        by_table.setdefault(r.deal.table, []).append(r)
    facts: dict[str, DealingFacts] = {t: facts_from_results(rs) for t, rs in by_table.items()}
    dets = detectors if detectors is not None else make_detectors(fdr=fdr, details=details)
    tests: list[TestResult] = []
    for det in dets:
        rng = detector_rng(seed, det.name)
        parts = [det.count(by_table[t], rng, facts=facts[t]) for t in sorted(by_table)]
        tests += det.finalize(det.merge(parts), rng)
    tested, fams, wide = apply_audit(tests, fdr, SHARES)
    dealing = {"deals_audited": int(sum(len(f) for f in facts.values())),
               "deals_not_auditable": int(sum(f.skipped for f in facts.values())),
               "tables": len(by_table)}
    return tested, fams, dealing, wide


def run_detectors_columns(cols, fdr: float = 0.05, seed: int = DEFAULT_SEED, detectors=None,
                          details: bool = True) -> tuple[list[TestResult], list[Family], dict, AuditWide]:
    """Every detector over the replayed deals as columns (`auditor.columns.AuditColumns`), counted once over the
    whole input (the counts are the merge of per-table counts: the same numbers as `run_detectors`)."""
    from .facts import facts_from_columns

    t0 = _clock()
    facts = facts_from_columns(cols)
    _stage("dealing facts", t0)
    dets = detectors if detectors is not None else make_detectors(fdr=fdr, details=details)
    tests: list[TestResult] = []
    t0 = _clock()
    for got in _each_detector(cols, facts, list(dets), seed):
        tests += got
    _stage("detectors' counts and tests", t0)
    t0 = _clock()
    tested, fams, wide = apply_audit(tests, fdr, SHARES)
    _stage("audit-wide flags", t0)
    dealing = {"deals_audited": int(len(facts)), "deals_not_auditable": int(facts.skipped),
               "tables": int(len(np.unique(cols.table))) if len(cols) else 0}
    return tested, fams, dealing, wide


def _clock() -> float:
    import time

    return time.perf_counter()


def _stage(what: str, t0: float) -> None:
    """With AUDITOR_TIMING=1 in the environment, the wall time of each stage on stderr (for bench/)."""
    import os
    import sys

    if os.environ.get("AUDITOR_TIMING"):
        print(f"auditor timing: {what} {_clock() - t0:.2f} s", file=sys.stderr, flush=True)


PARALLEL_MIN_DEALS = 100_000  # below this the detectors run one after the other
HEAVY_FIRST = ("marked_ten", "deal_uniformity", "dealer_cutter", "collusion")  # scheduled first when parallel
_SHARED: tuple | None = None  # what forked workers read (copy-on-write): columns, facts, detectors, seed


def _one_detector(i: int):
    cols, facts, dets, seed = _SHARED
    det = dets[i]
    rng = detector_rng(seed, det.name)
    t0 = _clock()
    out = det.finalize(det.count_columns(cols, rng, facts=facts), rng)
    # the JSON form of the details is made here, in the worker when there are workers
    out = [replace(t, controls=cleaned(t.controls), detail=cleaned(t.detail)) for t in out]
    _stage(f"  {det.name}", t0)
    return i, out


def _each_detector(cols, facts, dets: list, seed: int, workers: int | None = None) -> list[list[TestResult]]:
    """Every detector's results, in the detectors' order. On a large input with two or more cores the detectors
    run in forked worker processes that read the columns copy-on-write (each detector owns its random generator,
    so the results are the same whichever process runs it); otherwise one after the other."""
    global _SHARED
    import os

    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    _SHARED = (cols, facts, dets, seed)
    try:
        if workers > 1 and len(dets) > 1 and len(cols) >= PARALLEL_MIN_DEALS:
            import multiprocessing as mp

            try:
                ctx = mp.get_context("fork")
            except ValueError:
                ctx = None
            if ctx is not None:
                order = sorted(range(len(dets)), key=lambda i: (HEAVY_FIRST.index(dets[i].name)
                                                                 if dets[i].name in HEAVY_FIRST else len(HEAVY_FIRST)))
                with ctx.Pool(workers) as pool:
                    got = dict(pool.imap_unordered(_one_detector, order))
                return [got[i] for i in range(len(dets))]
        return [_one_detector(i)[1] for i in range(len(dets))]
    finally:
        _SHARED = None


def audit_paths(paths: list[str], fdr: float = 0.05, seed: int = DEFAULT_SEED, progress=None, selection=None,
                detectors=None, status=None) -> AuditReport:
    """The audit of files through the batch pipeline: the replay builds the detectors' columns chunk by chunk
    (no Python object per deal), then every detector counts them once. `selection`: an `auditor.select.Selection`
    (records outside it are not read into the audit; its summary goes into the document). `progress(records)`
    follows the replay; `status(text)`, a context manager, is entered while the tests run (the CLI's spinner)."""
    rep = replay_for_audit(paths, progress=progress, selection=selection)
    return audit_replayed(rep, fdr=fdr, seed=seed, selection=selection, detectors=detectors, status=status)


def replay_for_audit(paths: list[str], progress=None, selection=None):
    """The first half of `audit_paths`: the replay, with the audit's columns."""
    from .fast.pipeline import replay_paths

    chunks = None
    if selection is not None and selection.active:
        from .select import selected_chunks

        chunks = selected_chunks(selection)
    t0 = _clock()
    rep = replay_paths([str(p) for p in paths], progress=progress, columns=True, chunks=chunks)
    _stage("replay and columns", t0)
    return rep


def audit_replayed(rep, fdr: float = 0.05, seed: int = DEFAULT_SEED, selection=None, detectors=None,
                   status=None) -> AuditReport:
    """The second half of `audit_paths`: every test over the replay's columns, then the families."""
    import contextlib

    t0 = _clock()
    with (status or (lambda text: contextlib.nullcontext()))(f"running the tests on {len(rep.columns):,} deals"):
        tests, fams, dealing, wide = run_detectors_columns(rep.columns, fdr=fdr, seed=seed, detectors=detectors)
    _stage("detectors", t0)
    rep.columns = None  # the report does not need them any more
    sel = selection.summary() if selection is not None and selection.active else None
    return AuditReport(rep, seed, fdr, tests, fams, dealing, selection=sel, audit=wide)


def audit_records(records: Iterable, fdr: float = 0.05, seed: int = DEFAULT_SEED, engine: str = "reference",
                  detectors=None) -> AuditReport:
    from .replay.run import replay_records

    rep = replay_records(records, engine=engine)
    tests, fams, dealing, wide = run_detectors_audit(rep.results, fdr=fdr, seed=seed, detectors=detectors)
    return AuditReport(rep, seed, fdr, tests, fams, dealing, audit=wide)
