"""The audit: one orchestration, `audit(replay, ...)`, over the one result of a replay.

    replay = replay_for_audit(paths, engine=..., selection=...)   # read, validate, replay: a `Replay` with its table
    report = audit(replay, fdr=..., seed=...)                      # every detector over the table, then the flags

`audit` runs every detector of the registry over the table of replayed deals (`Replay.table`), decides the flags
over the whole audit (one weighted Benjamini–Hochberg, `auditor.stats.family.apply_audit`, with the registry's
shares), and returns the `AuditReport` whose `to_json()` is the `auditor audit --json` document of outputs.md. The
CLI, `investigate` and the calibration studies all come through here.

Detectors count the table and their counts merge exactly (`Detector.merge`), so the result does not depend on how
the input is split across files or tables. Monte-Carlo steps draw from generators seeded from `seed` and the
detector's name: the same input and seed give the same document.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import multiprocessing as mp
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import IO, Any, Callable, ContextManager, Iterable, Iterator, Sequence, cast

import orjson

import numpy as np
import pyarrow as pa

from .version import __version__
from .atomic import track_folder, untrack_folder
from .columns import AuditColumns, from_results
from .dealog import Record, read_records
from .detectors.base import Detector
from .detectors.marked_ten import SPILL_PREFIX as MARKED_TEN_SPILL
from .detectors.registry import SHARES, SPECS, make_detectors
from .facts import DealingFacts, facts_from_columns
from .countfile import BlobFile, CountsFileError, Deferred, StreamedBlob, check_counts, load_counts, save_counts
from .findings import Finding
from .parts import Parts, merge_replays, replay_part, split_input, summed_stats
from .pools import (EARLY_MIN_DEALS, ISOLATE_MIN_DEALS, allow_helpers, call_in_fresh_process, closing_pool,
                    fresh_context, start_fork_server, stop_children, stop_fork_server, trim_heap,
                    use_system_memory_pool)
from .replay.chain import GameSummary
from .replay.result import (DocEntries, Replay, dump_document, entry_bytes, entry_pieces, forward_slice,
                            write_spliced)
from .replay.run import replay_paths, replay_records
from .select import Selection, selected_chunks
from .errors import UsageError
from .stats.family import AuditWide, Family, TestResult, apply_audit, most_significant_first, packed

DEFAULT_SEED = 0

NOTES = [
    "Flags are decided over the whole audit: one weighted Benjamini-Hochberg over every test and subject, each "
    "test name holding a share of the error budget fixed in advance ('audit'). If nobody cheats, the chance that "
    "the audit flags anyone is at most 'fdr'; with cheaters, the expected share of false flags among flags is at "
    "most 'fdr'. Test names ('families') group the report. Only tier 'report' (q <= fdr) is a flag; 'strong' marks "
    "flags past the audit-wide Bonferroni bound at 'audit.strong_level'; 'watch' is shown to people and is not an "
    "accusation.",
    "These are fixed-sample tests. Re-running them on a growing log (every month, say) and acting on the first "
    "flag raises the real false-accusation rate above the stated FDR; `auditor monitor` (anytime-valid evidence, "
    "docs/monitor.md) keeps its level however often it looks, for dealer_jack, turnup_jack, marked_ten and "
    "revoke_pattern.",
    "Controls and diagnostics are inside each test's entry and are in no family: they inform, they do not dilute.",
    "dealer_jack and turnup_jack use exact nulls derived from each deal's rules; deal_uniformity and "
    "shuffle_residue use Monte-Carlo p-values drawn from the recorded seed; shuffle_residue compares each dealer "
    "with the other dealers of his table (people do not shuffle perfectly).",
]


@dataclass
class AuditReport:
    replay: Replay
    seed: int
    fdr: float
    tests: list[TestResult]
    families: list[Family]
    dealing: dict = field(default_factory=dict)
    audit: AuditWide | None = None
    selection: dict | None = None
    presets: dict[str, int] | None = None  # issue 16: deals per "game/preset" seen in the logs audited
    reproducibility: dict | None = None  # issue 16: the block the CLI sets (`reproducibility_block`)
    _tests_json: dict | None = field(default=None, repr=False, compare=False)
    cleanup: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def close(self) -> None:
        """Remove the audit's working files (the parts of a large input, whose games summary the document streams
        from): call it once the document is written."""
        if self.cleanup is not None:
            self.cleanup()
            self.cleanup = None

    @property
    def flags(self) -> list[TestResult]:
        return most_significant_first(t for t in self.tests if t.flagged)

    def to_json(self, games: bool = True, held: bool = True) -> dict:
        """The audit document. `games=False` leaves `replay.games_summary` empty (what the reports read; a
        million-deal log has half a million game entries, which `json_bytes` splices in as bytes). `held=False`:
        `tests` is a `DocEntries`, each test's dict made as it is read (issue 15: the tests of a large audit are
        not all held decoded; `write_json` and the reports take it as they take streamed findings)."""
        rep = self.replay.to_json() if games else self.replay.head_json()
        if held:
            if self._tests_json is None:  # each test serialised once (a flag is one of the tests)
                self._tests_json = {id(t): t.to_json() for t in self.tests}
            tj = self._tests_json
            tests: Any = [tj[id(t)] for t in self.tests]
        else:
            tj, tests = {}, DocEntries(self.tests)
        doc = {
            "deals": rep["deals"], "games": rep["games"], "replay": rep, "seed": self.seed, "fdr": self.fdr,
            "audit": self.audit.to_json() if self.audit is not None else None,
            "families": [f.to_json() for f in self.families],
            "tests": tests,
            "flags": [tj[id(t)] if id(t) in tj else t.to_json() for t in self.flags],
            "dealing": self.dealing,
            "notes": NOTES,
        }
        if self.selection is not None:
            doc["selection"] = self.selection
        if self.reproducibility is not None:  # issue 16
            doc["reproducibility"] = self.reproducibility
        return doc

    def json_bytes(self, doc: dict | None = None) -> bytes:
        """The document as `replay --json` writes its own (orjson, 2-space indent, UTF-8), with the games summary
        spliced in from the replay's own byte writer (no Python object per game). `doc`: `to_json(games=False)` if
        the caller has it already."""
        buf = io.BytesIO()
        self.write_json(buf, doc)
        return buf.getvalue()

    def write_json(self, out: IO[bytes], doc: dict | None = None) -> None:
        """Write `json_bytes()` to a binary stream without holding the games summary or streamed findings: their
        entries are spliced in a block at a time (issue 15: what grows with the input is written out, not held)."""
        gs = self.replay.games_summary
        games = bool(len(gs)) and hasattr(gs, "json_entries")
        d = doc if doc is not None and games else self.to_json(games=not games)
        splices: list[tuple[bytes, Any, bytes]] = []
        rep = d.get("replay")
        if isinstance(rep, dict) and isinstance(rep.get("findings"), DocEntries):
            pieces = rep["findings"].json_pieces()
            d = dict(d, replay=dict(rep, findings=[]))
            splices.append((b'\n    "games": %d,\n    "findings": []' % rep["games"], pieces, b"  "))
        if games:
            splices.append((b'\n    "games_summary": []', entry_pieces(gs), b"  "))
        tests = d.get("tests")
        if isinstance(tests, (list, DocEntries)) and len(tests):  # one test at a time: no bytes of all at once
            d = dict(d, tests=[])
            splices.append((b'\n  "tests": []', _entries_of_list(tests), b""))
        write_spliced(dump_document(d), splices, out)


def _entries_of_list(items: Sequence[Any]) -> Iterator[bytes]:
    """A top-level list's items as `dump_document` writes them inside the document (4 spaces deep), one at a
    time, the first without its ",\n" (`write_spliced`)."""
    for i, item in enumerate(items):
        text = entry_bytes(item)
        yield text if i else text[2:]


def detector_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def clock() -> float:
    return time.perf_counter()


def stage(what: str, t0: float) -> None:
    """With AUDITOR_TIMING=1 in the environment, the wall time of each stage on stderr (for bench/)."""
    took(what, clock() - t0)


def took(what: str, seconds: float) -> None:
    """`stage`'s line for a time measured otherwise (a sum of pieces)."""
    if os.environ.get("AUDITOR_TIMING"):
        print(f"auditor timing: {what} {seconds:.2f} s", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the two stages


def replay_for_audit(paths: Sequence[str], engine: str = "batch", progress: Callable[[int], None] | None = None,
                     selection: Selection | None = None) -> Replay:
    """Read, validate and replay the files with the table the detectors read. `selection`: only the records it
    selects are replayed (its counts are kept in it for the document)."""
    t0 = clock()
    paths = [str(p) for p in paths]
    active = selection is not None and selection.active
    if engine == "batch":
        rep = replay_paths(paths, progress=progress, table=True,
                           chunks=selected_chunks(selection) if active and selection is not None else None)
    else:
        records: Iterable[Record] = read_records(paths)
        if active and selection is not None:
            records = selection.filter(records)
        rep = replay_records(_progressed(records, progress), engine=engine, table=True)
    stage("replay and columns", t0)
    return rep


def _progressed(records: Iterable[Record], progress: Callable[[int], None] | None) -> Iterable[Record]:
    if progress is None:
        yield from records
        return
    i = 0
    for i, rec in enumerate(records, 1):
        if i % 2048 == 0:
            progress(i)
        yield rec
    progress(i)


def audit(replay: Replay, fdr: float = 0.05, seed: int = DEFAULT_SEED, selection: Selection | None = None,
          detectors: Sequence[Detector] | None = None,
          status: Callable[[str], ContextManager[Any]] | None = None, keep_table: bool = False) -> AuditReport:
    """Every test over the replay's table, then the flags over the whole audit. `detectors`: instead of the
    registry's (a study of some tests). `status(text)`, a context manager, is entered while the tests run (the
    CLI's spinner). The table is dropped from the replay afterwards (the report does not read it) unless
    `keep_table` (`investigate` shows the deals behind a score)."""
    table = replay.table
    if table is None:
        if replay.results is None:
            raise ValueError("this replay kept neither its table nor its deals: replay with table=True")
        table = replay.table = from_results(replay.results)
    t0 = clock()
    with (status or (lambda text: contextlib.nullcontext()))(f"running the tests on {len(table):,} deals"):
        tests, fams, dealing, wide = run_detectors(table, fdr=fdr, seed=seed, detectors=detectors)
    stage("detectors", t0)
    if not keep_table:
        replay.table = None
    sel = selection.summary() if selection is not None and selection.active else None
    return AuditReport(replay, seed, fdr, tests, fams, dealing, selection=sel, audit=wide,
                       presets=presets_seen(table))


PART_DEALS = 200_000  # a large input is audited in parts of at most this many deals (whole tables). A part's process
# peaks at about 2.6 KB a deal; at 250,000 the parts of the 10M bench (120 tables of 63,000-121,000 deals, 52 parts)
# reached 248,000 deals and 661 MB, at 200,000 (60 parts) 198,000 and 523 MB, as at 1M, in the same time (issue 15,
# a twenty-fifth session)
COUNTS_LAYOUT = 1  # the version of the detectors' counts as --save-counts writes them


def check_options(fdr: float = 0.05, seed: int = DEFAULT_SEED, engine: str = "batch", workers: int | None = None,
                  part_deals: int = PART_DEALS, scaled: bool = False, max_record_bytes: int | None = None,
                  workdir: str | None = None) -> None:
    """`UsageError` (the CLI's exit 2) for an option the audit cannot take, in the CLI's words. Written here, beside
    the audit, so that the CLI checks its options without importing `auditor.api` (polars: 0.1 s of the audit's
    start); `auditor.api.check_options` is this function."""
    if not 0.0 < fdr < 1.0:
        raise UsageError(f"--fdr must be between 0 and 1, got {fdr}")
    if seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {seed}")
    if engine not in ("batch", "reference"):
        raise UsageError(f"--engine must be 'batch' or 'reference', got {engine!r}")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    if part_deals < 1:
        raise UsageError(f"--part-deals must be at least 1, got {part_deals}")
    if engine == "reference" and scaled:
        raise UsageError("--engine reference replays in one process: it cannot be combined with --workers, "
                         "--dask, --save-counts or --add-counts")
    if max_record_bytes is not None and max_record_bytes < 1:
        raise UsageError(f"--max-record-bytes must be at least 1, got {max_record_bytes}")
    if workdir is not None and not Path(workdir).is_dir():
        raise UsageError(f"--workdir {workdir!r} is not a folder")


def fingerprint(dets: Sequence[Detector]) -> dict:
    """What saved counts must share with the audit that adds them (`--add-counts`): the counts' layout, and every
    test with its class, share and counting parameters (not its error level: counts do not depend on it)."""
    tests = {}
    for d in dets:
        params = {k: v for k, v in sorted(vars(d).items())
                  if k not in ("fdr", "details") and (v is None or isinstance(v, (bool, int, float, str, tuple)))}
        tests[d.name] = {"class": f"{type(d).__module__}.{type(d).__qualname__}", "share": SHARES.get(d.name),
                         "params": {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}}
    return {"counts_layout": COUNTS_LAYOUT, "tests": tests}


def release_memory() -> None:
    """Give back to the system the memory that a part's freed buffers leave in the process (issue 15): Arrow's pool
    keeps freed pages for reuse, and so does malloc; after the split and after each part they are not reused soon
    enough to be worth their place in the resident set (the split of a 1M-deal Parquet file: 415 MB resident
    after it, 280 MB after this)."""
    pa.default_memory_pool().release_unused()
    trim_heap()


class _Remover:
    """Working files the audit no longer reads, removed by threads of their own while it goes on: the split's
    bucket files once the parts are replayed, the detectors' spilled counts once their tests are done (issue 15: at
    10M deals removing the 9 GB working folder at the end took 3 s, both cores otherwise idle). `join` before the
    folder itself is removed."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def remove(self, paths: Iterable[str]) -> None:
        t = threading.Thread(target=_remove_all, args=(list(paths),), name="auditor-remove", daemon=True)
        t.start()
        self.threads.append(t)

    def join(self) -> None:
        for t in self.threads:
            t.join()
        self.threads.clear()


def _remove_all(paths: Sequence[str]) -> None:
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.remove(p)
            except OSError:
                pass


def _part_task(args: tuple) -> tuple[Replay, Counts]:
    """One part of the input: replayed, counted by every detector, its table dropped (what a worker returns)."""
    parts, k, fdr, seed, workers = args
    use_system_memory_pool()  # in a worker process too (fork server, Dask)
    dets = make_detectors(fdr=fdr)
    if not parts.single and parts.workdir is not None:
        # marked_ten's decision rows are the one count that grows with deals: spilled to memory-mapped files beside
        # the parts' (every worker sees the folder), merged as a list and streamed by its finalize (issue 15)
        for d in dets:
            if hasattr(d, "spill_dir"):
                d.spill_dir = os.path.join(parts.workdir, "spill")
    rep = replay_part(parts, k, table=True)
    table = rep.table
    assert table is not None
    counts = count_table(table, dets, seed, workers=workers)
    rep.stats["presets"] = presets_seen(table)  # issue 16: what the reproducibility block names
    rep.table = None
    del table
    if parts.count_spill and parts.workdir is not None:
        _spill_where_counted(counts, dets, parts.count_spill, os.path.join(parts.workdir, "counts"), k)
    release_memory()
    return rep, counts


@dataclass(frozen=True)
class PartSpill:
    """A part's counts of one detector, written by the part's own process (`Parts.count_spill`): the path (or the
    stem of its groups) that `SpilledCounts` reads, in place of the counts."""

    path: str


def _spill_where_counted(counts: Counts, dets: Sequence[Detector], plan: dict[str, int],
                         spill_dir: str, k: int) -> None:
    """The part's counts of the detectors in `plan` written where they were counted, as the audit's process would
    write them when they arrive (the same files, the same bytes), each replaced by its `PartSpill` (issue 15, a
    tenth session: sent back whole, `dealer_cutter`'s were pickled by the part, unpickled by the audit's process
    and pickled again into its files, some 1 s of the last part's way to the tests)."""
    for d in dets:
        how = plan.get(d.name)
        if how is None or d.name not in counts.by_test:
            continue
        c = counts.by_test.pop(d.name)
        counts.by_test[d.name] = PartSpill(spill_part_counts(d, c, spill_dir, k, how))
        del c


def spill_part_counts(det: Detector, counts: Any, spill_dir: str, k: int, n: int) -> str:
    """Part k's counts of `det` written for `SpilledCounts` in `spill_dir`: in `n` groups of subjects (the stem's
    files) or whole (one file); the path to read them by."""
    stem = os.path.join(spill_dir, f"{k}.{det.name}")
    return spill_shards(det, counts, stem, n) if n > 1 else spill_part(counts, f"{stem}.pickle")


def isolated(parts: Parts, isolate: bool | None = None) -> bool:
    """Whether `run_parts`, on one machine without `workers`, replays each part in a fresh process: `isolate` if
    given; by default when there are two parts or more, of `ISOLATE_MIN_DEALS` deals on average, or of
    `EARLY_MIN_DEALS` deals in all on a machine of two cores or more. The fork server costs about 2 s once (it
    imports the audit's modules, `auditor/warm.py`) and each process some 20 ms more: nothing next to parts of
    250,000 deals, much next to the small parts of a test, whose process does not grow. The second case (issue 15,
    a twenty-eighth session): parts run here run one after the other on one core, so an input of 1M deals cut
    with `--part-deals 17000` into 12 parts spent 26.6 s in its parts against 14.3 s for the default 6 parts; an
    input that large has started the fork server before its split (`EARLY_MIN_DEALS`), and fresh processes run
    two parts at a time (`parts_at_once`)."""
    if parts.single or len(parts) < 2 or parts.workdir is None:
        return False
    if isolate is not None:
        return isolate
    return parts.records >= ISOLATE_MIN_DEALS * len(parts) or (
        parts.records >= EARLY_MIN_DEALS and (os.cpu_count() or 1) > 1)


def run_parts(parts: Parts, fdr: float, seed: int, workers: int | None = None,
              dask: "str | DaskSession | None" = None, progress: Callable[[int, int], None] | None = None,
              on_result: Callable[[int, tuple[Replay, Counts]], None] | None = None,
              isolate: bool | None = None) -> list[tuple[Replay, Counts]]:
    """Every part replayed and counted: one after the other (each in a fresh process when `isolated`, else in
    this one; the detectors of a part share the cores), in `workers` local processes, or on a Dask cluster
    (`dask`: a scheduler address, or `local:N` for a LocalCluster of N worker processes, or the audit's open
    `DaskSession`). The results come back in part order, whoever computed them: as a list, or (`on_result`) handed
    over one by one in part order as soon as each is next, so that the caller can fold them and hold no more than
    the parts that arrived early (then the list is empty). A single part (an input smaller
    than a part: the original paths) is always replayed here, where its paths are."""
    n = len(parts)
    say = progress or (lambda _done, _n: None)
    got: list[tuple[Replay, Counts]] = []
    early: dict[int, tuple[Replay, Counts]] = {}
    nxt = 0

    def arrive(k: int, res: tuple[Replay, Counts]) -> None:
        nonlocal nxt
        early[k] = res
        while nxt in early:
            r = early.pop(nxt)
            if on_result is not None:
                on_result(nxt, r)
            else:
                got.append(r)
            nxt += 1

    if dask and not parts.single:
        session = DaskSession(dask) if isinstance(dask, str) else dask
        try:
            _dask_parts(parts, fdr, seed, session, say, arrive, fresh=isolated(parts, isolate))
        finally:
            if session is not dask:
                session.close()
    elif workers is not None and workers > 1 and n > 1:
        # each worker from a fork server (`pools.fresh_context`): not a fork of this process, whose reader's and
        # numba's threads may hold locks at the fork (a hang was seen)
        # (a fresh worker for each part, maxtasksperchild=1, so that none carries the heap of the parts before it)
        with closing_pool(fresh_context(), min(workers, n), maxtasksperchild=1) as pool:
            for k, res in enumerate(pool.imap(_part_task, [(parts, k, fdr, seed, 1) for k in range(n)])):
                arrive(k, res)
                say(k + 1, n)
    elif isolated(parts, isolate):
        # each part in a fresh process (its detectors still share the cores in forks of it): the heap a part
        # leaves behind goes with its process (issue 15: run here, one part after the other, the audit's process
        # grew by some 250 MB over the 56 parts of a 10M-deal audit, Python's arenas pinned by a few objects each)
        width = parts_at_once(n)
        # a part counts in forks of its process only when it runs alone: two parts at once already fill two cores,
        # and their forks on top of them took 46 s of wall time on the issue-like 300k season against 40 s
        count_workers = 1 if width > 1 else None

        def one(k: int) -> tuple[Replay, Counts]:
            return _part_in_fresh_process((parts, k, fdr, seed, count_workers))

        _at_once(one, n, width, arrive, say, lambda: nxt)
    else:
        for k in range(n):
            arrive(k, _part_task((parts, k, fdr, seed, None)))
            say(k + 1, n)
    return got


PARTS_AT_ONCE = 2  # isolated parts run two at a time: on 2 cores one part's replay overlaps the other's (issue 15)


def parts_at_once(n: int) -> int:
    """How many of `n` isolated parts run at once by default: one per core, at most `PARTS_AT_ONCE` (as many as the
    finalize's processes; each part holds its own table, so on a big machine memory, not cores, bounds this:
    `--workers N` asks for more)."""
    return max(1, min(n, PARTS_AT_ONCE, os.cpu_count() or 1))


def _at_once(one: Callable[[int], tuple[Replay, Counts]], n: int, width: int,
             arrive: Callable[[int, tuple[Replay, Counts]], None], say: Callable[[int, int], None],
             folded: Callable[[], int]) -> None:
    """`one(k)` for k in 0..n-1, `width` at a time (each call waits for its own fresh process, in a thread of this
    process), every result handed to `arrive` as it comes. A part starts only while fewer than `2 * width` parts
    from the first one not yet folded (`folded()`) have started, so the results that come early and wait for a
    slow part stay few. On an error or an interrupt the parts' processes still running are stopped, then it is
    raised."""
    if width <= 1:
        for k in range(n):
            arrive(k, one(k))
            say(k + 1, n)
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pending: dict[Any, int] = {}
    started = done = 0
    ex = ThreadPoolExecutor(width, thread_name_prefix="auditor-part")
    try:
        while done < n:
            while started < n and len(pending) < width and started < folded() + 2 * width:
                pending[ex.submit(one, started)] = started
                started += 1
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=pending.__getitem__):
                k = pending.pop(f)
                arrive(k, f.result())
                done += 1
                say(done, n)
    except BaseException:
        stop_children()  # the other parts' processes: their threads then return (with errors nobody reads)
        ex.shutdown(wait=True, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


class DaskSession:
    """The Dask client of one audit (`--dask`: a scheduler address, or `local:N` for a LocalCluster of N worker
    processes), opened at first use and closed by `close()`: the parts and then the tests run on the same cluster,
    and an input too small for parts opens none."""

    def __init__(self, address: str):
        self.address = address
        self.client: Any = None
        self.cluster: Any = None

    def open(self) -> Any:
        if self.client is not None:
            return self.client
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("--dask needs the 'distributed' package: pip install 'auditor[dask]'") from None
        address = self.address
        if address.startswith("local:"):
            try:
                nw = int(address.split(":", 1)[1])
            except ValueError:
                raise UsageError(f"--dask local:N needs a number of workers, got {address!r}") from None
            if nw < 1:
                raise UsageError(f"--dask local:N needs at least one worker, got {address!r}")
            import dask

            # workers that may start processes: each part in a fresh one (`_numbered_part_task`), whose allocator
            # is the other modes' (Dask gives its workers' processes MALLOC_TRIM_THRESHOLD_=65536, so that a
            # long-lived worker hands freed memory back: a part's process hands it all back when it ends, and under
            # that setting the 1M audit took 108.6 s of CPU instead of 89.9 s; issue 15, a twenty-sixth session)
            environ = {k: v for k, v in (dask.config.get("distributed.nanny.pre-spawn-environ", None) or {}).items()
                       if k != "MALLOC_TRIM_THRESHOLD_"}
            with dask.config.set({"distributed.worker.daemon": False, "distributed.nanny.pre-spawn-environ": environ}):
                self.cluster = LocalCluster(n_workers=nw, threads_per_worker=1, processes=True,
                                            dashboard_address=None, silence_logs=40)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(address, timeout=30)
            except (OSError, TimeoutError, ValueError) as e:
                raise UsageError(f"--dask: cannot reach the scheduler at {address!r}: {e}") from None
        return self.client

    def width(self) -> int:
        """The cluster's worker threads: how many tasks run at once."""
        return max(1, sum(self.open().nthreads().values()))

    def close(self) -> None:
        if self.client is not None:
            if self.cluster is not None:
                # the workers' own fork servers (`_numbered_part_task`) stopped and waited for, as the CLI stops its
                # own, so that the parts' usage adds up in the workers'. Only on the cluster this audit started: on
                # a room's cluster another audit may be forking a part from them at this moment
                try:
                    self.client.run(stop_fork_server)
                except Exception:  # noqa: BLE001 - a worker already gone has nothing to stop
                    pass
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None


def dask_map(client: Any, fn: Callable[[Any], Any], args: Iterable[Any]) -> Iterator[Any]:
    """`fn(a)` for each of `args` on a Dask cluster, yielded as they finish; submitted in order, the earlier ones
    first where the cluster has to choose (priority). What is still pending when the caller stops is cancelled."""
    from distributed import as_completed

    todo = list(args)
    futures = [client.submit(fn, a, pure=False, priority=len(todo) - j) for j, a in enumerate(todo)]
    try:
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()
    finally:
        client.cancel([f for f in futures if not f.done()])


def _dask_parts(parts: Parts, fdr: float, seed: int, session: DaskSession, say: Callable[[int, int], None],
                arrive: Callable[[int, tuple[Replay, Counts]], None], fresh: bool = False) -> None:
    n = len(parts)
    for done, (k, res) in enumerate(dask_map(session.open(), _numbered_part_task,
                                             [(k, (parts, k, fdr, seed, 1), fresh) for k in range(n)]), 1):
        arrive(k, res)
        say(done, n)


def _numbered_part_task(args: tuple) -> tuple[int, tuple[Replay, Counts]]:
    """(k, `_part_task(task)`): the part's number beside its result, for `dask_map`'s order of completion.

    `fresh` (the parts are `isolated`): the part runs in a fresh process of the worker's own fork server, as it
    does in the other modes, when the worker may start processes (it is not a daemon: `--dask local:N` starts its
    workers so; a room's cluster does with `distributed.worker.daemon: false`), else in the worker itself. Issue 15:
    a long-lived worker kept some 430 MB between the parts it ran, and its peak was a part on top of that, so the
    more parts it ran the higher its peak reached (`--dask local:2`: 620 MB at 1M deals, 689 MB at 10M)."""
    k, task, fresh = args
    if fresh and task[0].workdir is not None and not mp.current_process().daemon:
        return k, _part_in_fresh_process(task)
    return k, _part_task(task)


def _part_in_fresh_process(task: tuple) -> tuple[Replay, Counts]:
    """`_part_task(task)` in a fresh process of this process's fork server (`pools.call_in_fresh_process`), its
    result passed back through a file of the parts' working folder."""
    parts, k = task[0], task[1]
    assert parts.workdir is not None
    return call_in_fresh_process(fresh_context(), _part_task, task,
                                 os.path.join(parts.workdir, f"result-{k:04d}.pickle"),
                                 name=f"part {k + 1} of {len(parts)}")


def audit_input(paths: Sequence[str], fdr: float = 0.05, seed: int = DEFAULT_SEED,
                selection: Selection | None = None, part_deals: int = PART_DEALS, workers: int | None = None,
                dask: str | None = None, add_counts: Sequence[str] = (), save_counts: str | None = None,
                workdir: str | None = None, progress: Callable[[int], None] | None = None,
                parts_progress: Callable[[int, int], None] | None = None,
                isolate: bool | None = None) -> AuditReport:
    """The audit of files at any size (issue 15): the input split into parts of whole tables (`auditor.parts`),
    each part replayed and counted on its own (here, in `workers` processes, or on Dask), the counts merged exactly
    and finalized once, so the document is the same whichever way it was computed. `add_counts`: counts saved by
    earlier audits (`save_counts`), merged before this input's (their logs come first, in the order given);
    `save_counts`: write the merged counts (and the replay's findings and games) for a later audit; `isolate`: each
    part in a fresh process or not (default: `isolated` decides, by the parts' size). The report's
    `close()` removes the working files (the games summary streams from them until then)."""
    use_system_memory_pool()  # Arrow's freed pages given back between parts (auditor.pools)
    dets = make_detectors(fdr=fdr)
    fp = fingerprint(dets)
    wd = tempfile.mkdtemp(prefix="auditor-parts-", dir=workdir)
    track_folder(wd)  # removed on SIGTERM too (the CLI's handler)
    session = DaskSession(dask) if dask else None  # the parts, then the tests, on the same cluster

    remover = _Remover()

    def remove_wd() -> None:
        remover.join()
        shutil.rmtree(wd, ignore_errors=True)
        untrack_folder(wd)

    try:
        for p in add_counts:  # a counts file that cannot be added is refused before the split (read after it)
            check_counts(p, fp)
        # the fork server's imports while the input is split, when the parts will be run in its processes; a large
        # Parquet input is split by a second process of it too (`parts.split_input`'s helper)
        early = (lambda n: start_fork_server() if n >= EARLY_MIN_DEALS and isolate is not False else None) \
            if not dask else None
        t0 = clock()
        parts = split_input([str(p) for p in paths], wd, part_deals, selection=selection, progress=progress,
                            sized=early, helper=not dask and isolate is not False)
        release_memory()
        stage(f"split: {len(parts)} parts" + (", in two processes" if parts.pieces > 1 else ""), t0)
        t0 = clock()
        replays: list[Replay] = []
        # the detectors' counts held out of memory until their tests run (`SpilledCounts`): with more than one part.
        # When the merged counts are to be saved, every detector's are folded whole (those spilled in groups of
        # subjects: group by group, then joined), one detector at a time, as the file is written (`write_saved`;
        # issue 15: merged here in memory, they took 9.4 GB at 10M deals)
        out_of_core = [d for d in dets if spills(d)] if len(parts) > 1 else []
        spill_dir = os.path.join(wd, "counts")
        if out_of_core:
            os.makedirs(spill_dir, exist_ok=True)
            # written by the parts' processes
            parts.count_spill = {d.name: shards(d) for d in out_of_core}
        in_memory = [d for d in dets if d not in out_of_core]
        # marked_ten's saved decision rows memory-mapped from the working folder, not read into memory; with one
        # counts file added, the detectors spilled in groups of subjects are spilled as the file is read, one at a
        # time (issue 15: the 10M bench's counts, all read before any was spilled, peaked at 3.5 GB)
        grouped = {d.name: d for d in out_of_core if shards(d) > 1} if len(add_counts) == 1 else {}

        def spill_first(d: Detector, c: Any) -> _FirstStem:  # saved counts of a detector held in groups
            stem = spill_shards(d, c, os.path.join(spill_dir, f"first.{d.name}"), shards(d))
            release_memory()
            return _FirstStem(stem)

        def as_read(name: str, c: Any) -> Any:
            return spill_first(grouped[name], c) if name in grouped else c

        saved = [load_saved(p, fp, spill_dir=os.path.join(wd, "spill"), each=as_read) for p in add_counts]
        first = merge_counts([c for _, c in saved], dets) if saved else None
        n_saved = len(saved)
        saved_replays = [r for r, _ in saved]
        del saved  # the loaded counts live on in `first` alone, so that what is spilled below leaves memory (issue
        # 15: the 10M bench's counts added held 1.2 GB of collusion's and dealer_cutter's through the whole audit)
        spilled = {}
        for d in out_of_core:
            got = first.by_test.pop(d.name) if first is not None else None
            if shards(d) > 1:  # the saved counts spilled in groups too
                if got is not None and not isinstance(got, _FirstStem):  # merged from several files
                    got = spill_first(d, got)
                stem = got.stem if got is not None else None
                spilled[d.name] = SpilledCounts(d.name, (), None, n_saved > 1, shards(d), stem)
            else:
                spilled[d.name] = SpilledCounts(d.name, (), got, n_saved > 1)
            del got
        folded = [first] if first is not None else []
        merged = [n_saved > 1]  # whether folded[0] came out of the detectors' merges (then it can take a part in)

        def fold(k: int, res: tuple[Replay, Counts]) -> None:  # in part order: the counts merged as they come
            replays.append(res[0])
            part = res[1]
            for d in out_of_core:  # written out (by the part itself, as a rule), in part order
                s = spilled[d.name]
                c = part.by_test.pop(d.name)
                path = c.path if isinstance(c, PartSpill) else spill_part_counts(d, c, spill_dir, k, s.shards)
                spilled[d.name] = replace(s, paths=s.paths + (path,))
                del c
            if not folded:
                folded[:] = [part]
            elif merged[0]:
                folded[:] = [fold_counts(folded[0], part, in_memory)]
            else:
                folded[:] = [merge_counts(folded + [part], in_memory)]
                merged[0] = True

        run_parts(parts, fdr, seed, workers=workers, dask=session, progress=parts_progress, on_result=fold,
                  isolate=isolate)
        stage(f"parts: {len(parts)} replayed and counted", t0)
        if not parts.single:  # the split's copy of the input, read by the parts alone
            remover.remove(parts.files(("bucket-",)))
        t0 = clock()
        new_replay = merge_replays(replays)
        presets = merged_presets(r.stats.get("presets") for r in replays)
        counts = folded[0] if folded else merge_counts([], in_memory)
        counts.by_test.update(spilled)
        replay = concat_replays(saved_replays + [new_replay]) if saved_replays else new_replay
        stage("merge", t0)
        if save_counts is not None:
            write_saved(save_counts, counts, replay, fp, dets)
        release_memory()  # before the finalize workers start (forks, without parts, start from this process)
        t0 = clock()
        # the detectors' tests in fresh processes when there were parts: a fork of this process would carry the
        # fold of every part (its resident set grows with the number of parts). They run as wide as the parts
        # did: `--workers N` processes (at least the default's), or on the Dask cluster's workers, which see the
        # working folder as the parts' processes did, when it has more of them than this machine would use (a test
        # in a long-lived Dask worker ran about 30% slower than in a fresh process at 10M deals: `--dask local:2`
        # on two cores gains nothing from it)
        several = len(parts) > 1
        width = max(workers, tests_at_once()) if workers is not None else tests_at_once()
        tests, fams, dealing, wide = finalize_counts(
            counts, fdr=fdr, seed=seed, dets=dets, fresh=several, workers=width if several else None,
            dask=session if several and session is not None and session.width() > width else None)
        stage("detectors' tests over the merged counts", t0)
        del counts, folded[:]  # the merged counts (about 1 GB at 10M deals) are not needed by the document
        release_memory()
        # nor are the detectors' spilled counts (the saved audits' blobs in "spill", which it reads, stay)
        spill = os.path.join(wd, "spill")
        remover.remove([spill_dir] + ([os.path.join(spill, n) for n in sorted(os.listdir(spill))
                                       if n.startswith(MARKED_TEN_SPILL)] if os.path.isdir(spill) else []))
    except BaseException:
        remove_wd()
        raise
    finally:
        if session is not None:
            session.close()
    sel = selection.summary() if selection is not None and selection.active else None
    return AuditReport(replay, seed, fdr, tests, fams, dealing, selection=sel, audit=wide, presets=presets,
                       cleanup=remove_wd)


# ---------------------------------------------------------------- saved counts (--save-counts, --add-counts)


def write_saved(path: str, counts: Counts, replay: Replay, fp: dict, dets: Sequence[Detector]) -> None:
    """The merged counts, the dealing summary's parts and the replay (findings, games summary, stats) as one
    counts file (`auditor.countfile`, no pickle): what a later audit adds with `--add-counts`. A detector's
    counts held out of memory (`SpilledCounts`; those held in groups of subjects are folded a group at a time and
    joined) are folded whole when the file reaches them and dropped once written, one detector at a time; `dets`
    are the detectors that fold them. The games summary and the findings are written block by block
    as the document's writer reads them."""
    by_name = {d.name: d for d in dets}
    by_test: dict[str, Any] = {}
    order = [d.name for d in dets if d.name in counts.by_test]  # the detectors' order, as a merge in memory gives
    for name in order + [n for n in counts.by_test if n not in by_name]:
        c = counts.by_test[name]
        if isinstance(c, SpilledCounts):
            by_test[name] = Deferred(lambda c=c, d=by_name[name]: c.fold(d), release_memory)
        else:
            by_test[name] = c
    gs = replay.games_summary
    games: Any
    if len(gs) and hasattr(gs, "json_pieces"):
        games = StreamedBlob(sum(len(b) for b in gs.json_pieces()), gs.json_pieces)
    elif len(gs) and hasattr(gs, "json_entries"):
        games = gs.json_entries()
    else:
        games = _entries_bytes(gs)
    meta = {"fingerprint": fp, "deals_audited": counts.deals_audited,
            "deals_not_auditable": counts.deals_not_auditable, "tables": counts.tables, "games": len(gs)}
    save_counts(path, by_test, meta, {"replay": _replay_head(replay), "games": games})


def _replay_head(replay: Replay) -> StreamedBlob:
    """The replay's head as `load_saved` reads it, `orjson.dumps({"deals", "games", "stats", "findings"})` byte for
    byte, written a finding at a time (issue 15: the list of a 10M-deal audit's findings as dicts was 0.6 GB, held
    while the whole file was written); its size from a first pass over the findings, which stream from the parts'
    files."""
    start = orjson.dumps({"deals": replay.deals, "games": replay.games, "stats": replay.stats})[:-1] + b',"findings":['

    def pieces() -> Iterator[bytes]:
        yield start
        for i, f in enumerate(replay.findings):
            yield (b"," if i else b"") + orjson.dumps(f.to_json())
        yield b"]}"
    return StreamedBlob(sum(len(p) for p in pieces()), pieces)


@dataclass(frozen=True)
class _FirstStem:
    """In place of a detector's saved counts: they were spilled in groups as the file was read (`audit_input`)."""

    stem: str


def load_saved(path: str, fp: dict, spill_dir: str | None = None,
               each: Callable[[str, Any], Any] | None = None) -> tuple[Replay, Counts]:
    """Counts saved by `write_saved`, refused (one-line `CountsFileError`) when their fingerprint is not `fp`
    (`spill_dir`, `each`: as `load_counts`'s)."""
    by_test, meta, blobs = load_counts(path, expect_fingerprint=fp, spill_dir=spill_dir, each=each)
    try:
        raw = blobs["replay"]
        head = orjson.loads(raw.read() if isinstance(raw, BlobFile) else raw)
        replay = Replay(deals=int(head["deals"]), games=int(head["games"]),
                        findings=[Finding(**f) for f in head["findings"]],
                        games_summary=SavedGames(blobs["games"], int(meta["games"])), stats=dict(head["stats"]))
        counts = Counts(dict(by_test), int(meta["deals_audited"]), int(meta["deals_not_auditable"]),
                        [str(x) for x in meta["tables"]])
    except (KeyError, TypeError, ValueError, orjson.JSONDecodeError) as e:
        raise CountsFileError(f"{path}: not the counts of an audit (auditor audit --save-counts): {e}") from None
    return replay, counts


def _entries_bytes(games: Sequence[GameSummary]) -> bytes:
    """Games entries as the replay document lays them out (4-space indent, joined by ",\n")."""
    text = dump_document({"games_summary": [g.to_json() for g in games]})
    body = text.split(b"[\n", 1)[1].rsplit(b"\n  ]", 1)[0] if games else b""
    return body


GAMES_PIECE = 1 << 24  # bytes of a saved games summary's entries per piece written


class SavedGames(Sequence[GameSummary]):
    """A saved audit's games summary: its document entries as bytes, or as the file `load_counts` copied them to
    (`BlobFile`: the 10M bench's are 0.7 GB, read a piece at a time as the document is written)."""

    def __init__(self, entries: "bytes | BlobFile", n: int) -> None:
        self.entries = entries
        self.n = n

    def __len__(self) -> int:
        return self.n

    def json_pieces(self) -> Iterator[bytes]:
        """The entries in pieces of GAMES_PIECE bytes (cut anywhere: the writers take any cut), so that a writer that
        re-indents them copies a piece at a time (issue 15: the 0.7 GB of the 10M bench's saved games, re-indented
        whole for the document, took as much again at the end of the audit)."""
        if not self.n:
            return
        if isinstance(self.entries, BlobFile):
            yield from self.entries.pieces(GAMES_PIECE)
            return
        for i in range(0, len(self.entries), GAMES_PIECE):
            yield self.entries[i:i + GAMES_PIECE]

    def json_entries(self) -> bytes:
        return self.entries.read() if isinstance(self.entries, BlobFile) else self.entries

    def json_buffer(self) -> bytes:
        return self.json_entries()

    def __iter__(self) -> Iterator[GameSummary]:
        if self.n:
            for d in orjson.loads(b"[" + self.json_entries() + b"]"):
                yield GameSummary(d["game_id"], deals=d["deals"], totals=d["totals"], winner=d["winner"],
                                  ended_by=d["ended_by"], loser=d["loser"])

    def __getitem__(self, key: Any) -> Any:
        return list(self)[key]


class ChainedGames(Sequence[GameSummary]):
    """Games summaries one after the other (a saved audit's, then this input's)."""

    def __init__(self, parts: Sequence[Sequence[GameSummary]]) -> None:
        self.parts = [g for g in parts if len(g)]

    def __len__(self) -> int:
        return sum(len(g) for g in self.parts)

    def json_pieces(self) -> Iterator[bytes]:
        for i, g in enumerate(self.parts):
            if hasattr(g, "json_pieces"):
                pieces: Iterable[bytes] = g.json_pieces()
            elif hasattr(g, "json_entries"):
                pieces = [g.json_entries()]
            else:
                pieces = [_entries_bytes(g)]
            for j, piece in enumerate(pieces):
                yield (b",\n" if i and not j else b"") + piece

    def json_entries(self) -> bytes:
        return b"".join(self.json_pieces())

    def json_buffer(self) -> bytes:
        return self.json_entries()

    def __iter__(self) -> Iterator[GameSummary]:
        for g in self.parts:
            yield from g

    def __getitem__(self, key: Any) -> Any:
        return list(self)[key]


FINDINGS_BLOCK = 2048  # held findings written into the document this many at a time (`ChainedFindings`)


class ChainedFindings(Sequence[Finding]):
    """Findings one after the other (a saved audit's, then this input's), written into the document as they come
    (`json_pieces`, spliced in by the writers like a large input's own findings) rather than as one list: issue
    15, the document of the 10M bench's counts added to new logs took 1.5 GB more at its end, the findings as
    dicts and as one block of JSON."""

    def __init__(self, parts: Sequence[Sequence[Finding]]) -> None:
        self.parts = [f for f in parts if len(f)]

    def __len__(self) -> int:
        return sum(len(f) for f in self.parts)

    def __iter__(self) -> Iterator[Finding]:
        for f in self.parts:
            yield from f

    def __getitem__(self, key: Any) -> Any:
        head = forward_slice(self, key)
        return head if head is not None else list(self)[key]

    def json_pieces(self) -> Iterator[bytes]:
        """The document's entries (`entry_bytes`, the first without its ",\n"), a block at a time."""
        first = True
        for f in self.parts:
            if hasattr(f, "json_pieces"):  # a large input's: its first piece has no ",\n"
                for j, piece in enumerate(f.json_pieces()):
                    yield piece if first or j else b",\n" + piece
                    first = False
                continue
            for i in range(0, len(f), FINDINGS_BLOCK):
                data = b"".join(entry_bytes(x.to_json()) for x in f[i:i + FINDINGS_BLOCK])
                yield data[2:] if first else data
                first = False


def concat_replays(replays: Sequence[Replay]) -> Replay:
    """Replays of inputs one after the other (a saved audit's logs, then this input's): findings and games in
    that order (the findings written out as they come: `ChainedFindings`), stats summed."""
    stats = summed_stats(replays)
    return Replay(deals=sum(r.deals for r in replays), games=sum(r.games for r in replays),
                  findings=ChainedFindings([r.findings for r in replays]),
                  games_summary=ChainedGames([r.games_summary for r in replays]), stats=stats)


def audit_paths(paths: Sequence[str], fdr: float = 0.05, seed: int = DEFAULT_SEED, engine: str = "batch",
                selection: Selection | None = None, detectors: Sequence[Detector] | None = None) -> AuditReport:
    """`audit(replay_for_audit(paths))`: the two stages in one call."""
    return audit(replay_for_audit(paths, engine=engine, selection=selection), fdr=fdr, seed=seed,
                 selection=selection, detectors=detectors)


def audit_records(records: Iterable[Record], fdr: float = 0.05, seed: int = DEFAULT_SEED,
                  engine: str = "reference", detectors: Sequence[Detector] | None = None) -> AuditReport:
    """`audit(replay_records(records, table=True))`: the audit of records in memory."""
    return audit(replay_records(records, engine=engine, table=True), fdr=fdr, seed=seed, detectors=detectors)


# ---------------------------------------------------------------- the detectors over the table


@dataclass
class Counts:
    """What the detectors counted on some deals, before any test: every detector's counts by name (bounded in
    subjects, never growing with deals: issue 15) and the parts of the dealing summary. Counts of parts of the input
    merge exactly (`merge_counts`); one finalize of the merged counts gives the audit (`finalize_counts`)."""

    by_test: dict[str, Any] = field(default_factory=dict)
    deals_audited: int = 0
    deals_not_auditable: int = 0
    tables: list[str] = field(default_factory=list)  # the tables counted, sorted


def count_table(table: AuditColumns, dets: Sequence[Detector], seed: int = DEFAULT_SEED,
                workers: int | None = None) -> Counts:
    """Every detector's counts of one table (one part of the input, or all of it). On a large table with two or
    more cores the detectors count in forked workers that read the table copy-on-write."""
    t0 = clock()
    facts = facts_from_columns(table)
    stage("dealing facts", t0)
    t0 = clock()
    got = _each(table, facts, list(dets), seed, _count_one, workers)
    stage("detectors' counts", t0)
    names = sorted({table.tables[int(i)] for i in np.unique(table.table)}) if len(table) else []
    return Counts({d.name: c for d, c in zip(dets, got, strict=True)}, int(len(facts)), int(facts.skipped), names)


def merge_counts(parts: Sequence[Counts], dets: Sequence[Detector]) -> Counts:
    """The exact merge of the counts of parts of the input, in the order given (floats add in that order)."""
    by_test = {}
    for d in dets:
        have = [p.by_test[d.name] for p in parts if d.name in p.by_test]
        by_test[d.name] = d.merge(have) if len(have) != 1 else have[0]
    return Counts(by_test, sum(p.deals_audited for p in parts), sum(p.deals_not_auditable for p in parts),
                  sorted({x for p in parts for x in p.tables}))


def fold_counts(total: Counts, part: Counts, dets: Sequence[Detector]) -> Counts:
    """`merge_counts([total, part], dets)` for a `total` that came out of `merge_counts` of two or more counts: a
    detector that can (`merge_into`) folds the part into its counts in `total`, which the caller gives up, at the
    cost of the part alone (issue 15: each fold re-built the whole total, some 4 s a part at 10M deals); the others
    merge. The same counts, exactly (tests/test_audit_scale.py)."""
    by_test = {}
    for d in dets:
        a, b = total.by_test.get(d.name), part.by_test.get(d.name)
        if a is None or b is None:
            have = [x for x in (a, b) if x is not None]
            by_test[d.name] = have[0] if len(have) == 1 else d.merge(have)
        else:
            by_test[d.name] = fold_one(d, a, True, b)[0]
    return Counts(by_test, total.deals_audited + part.deals_audited,
                  total.deals_not_auditable + part.deals_not_auditable, sorted({*total.tables, *part.tables}))


def fold_one(det: Detector, total: Any, merged: bool, part: Any) -> tuple[Any, bool]:
    """One detector's step of the fold of `audit_input`, as `merge_counts` / `fold_counts` take it for the whole
    counts: (the running total with `part` added, whether it came out of the detector's merges). The first part is
    the total; the second is merged with it; later ones are folded in place where the detector can."""
    if total is None:
        return part, False
    into = getattr(det, "merge_into", None)
    if merged and into is not None:
        return into(total, part), True
    return det.merge([total, part]), True


FOLD_BATCH = 8  # parts merged at once by `SpilledCounts.fold` where a detector's merge allows it


@dataclass(frozen=True)
class SpilledCounts:
    """A detector's counts held out of memory until its tests run (issue 15, memory): the parts' counts, one file per
    part in part order, written by `audit_input` as they arrive, and `first`, the merge of the saved counts added
    (`merged`: whether that came out of the detector's merge). `fold` reads them back in order and folds them
    exactly as the whole counts would have been folded (`fold_one`), in the process that runs the detector's tests:
    the audit's main process holds no detector's merged counts, and a finalize worker holds only its own
    detector's. The files are working files of this audit (pickles, written and read by this process and its
    forked workers, removed with the working folder), not the `--save-counts` layout.

    A detector that can (`SHARDS`, see `Detector`) is spilled in groups of subjects (`shards`): each part's path is
    then a stem, with one file per group (`{stem}.{j}`) and one of its context (`{stem}.ctx`); the saved counts are
    spilled so too (`first_stem`, `first` is None). `fold_shard(det, j)` folds one group as `fold` folds the whole,
    and `context(det)` merges the contexts: the worker holds one group's counts at a time; `fold` folds each group
    and joins them (`join_shards`: the whole fold, which `--save-counts` writes, without the whole's merges)."""

    name: str
    paths: tuple[str, ...]
    first: Any = None
    merged: bool = False
    shards: int = 1
    first_stem: str | None = None

    def fold(self, det: Detector) -> Any:
        """The fold of the parts, as in memory. `first` is left as it was (a fold may merge into its total in place,
        and `write_saved` folds in the audit's process before the tests fold again)."""
        if self.shards > 1:  # group by group, joined (issue 15: the whole's fold took 1.4 GB at 10M deals)
            groups = [self.fold_shard(det, j) for j in range(self.shards)]
            return det.join_shards(groups, self.context(det))  # type: ignore[attr-defined]
        first = copy.deepcopy(self.first) if self.merged and self.first is not None else self.first
        return _fold_files(det, first, self.merged, self.paths)

    def fold_shard(self, det: Detector, j: int) -> Any:
        """The fold of group j of the parts, as `fold` folds the whole."""
        first = _read_pickle(f"{self.first_stem}.{j}") if self.first_stem is not None else None
        return _fold_files(det, first, self.merged, tuple(f"{p}.{j}" for p in self.paths))

    def context(self, det: Detector) -> Any:
        """The merged `shard_context` of the saved counts and every part, in part order."""
        stems = ((self.first_stem,) if self.first_stem is not None else ()) + self.paths
        return det.merge_context([_read_pickle(f"{p}.ctx") for p in stems])  # type: ignore[attr-defined]


def _read_pickle(path: str) -> Any:
    with open(path, "rb") as f:
        return pickle.load(f)


def _fold_files(det: Detector, total: Any, merged: bool, paths: Sequence[str]) -> Any:
    """`first` and the counts in `paths` folded in order as `fold_one` folds them in memory. A detector whose merge
    is exact in any grouping (`MERGE_ANY_GROUPING`: integers and canonical forms only, keys in the order the parts
    give them) takes up to FOLD_BATCH parts per merge: its total is rebuilt FOLD_BATCH times less often
    (collusion's bins are merged whole, some seconds at 10M deals), and the counts are the same."""
    batch = FOLD_BATCH if getattr(det, "MERGE_ANY_GROUPING", False) else 1
    for i in range(0, len(paths), batch):
        got = [_read_pickle(path) for path in paths[i:i + batch]]
        if len(got) == 1:
            total, merged = fold_one(det, total, merged, got[0])
        else:
            total, merged = det.merge(([total] if total is not None else []) + got), True
        del got
    return total if total is not None else det.merge([])


def spill_part(counts: Any, path: str) -> str:
    """Write one part's counts of a detector for `SpilledCounts` (atomically: a whole file or none)."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(counts, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    return path


def spill_shards(det: Detector, counts: Any, stem: str, n: int) -> str:
    """Write one part's counts of a detector in `n` groups of subjects, and their context (`SpilledCounts`)."""
    spill_part(det.shard_context(counts), f"{stem}.ctx")  # type: ignore[attr-defined]
    for j, c in enumerate(det.shard(counts, n)):  # type: ignore[attr-defined]
        spill_part(c, f"{stem}.{j}")
    return stem


def shards(det: Detector) -> int:
    """How many groups of subjects `audit_input` spills a detector's counts in (1: whole)."""
    return int(getattr(det, "SHARDS", 1))


def spills(det: Detector) -> bool:
    """Whether `audit_input` holds `det`'s counts out of memory (`SpilledCounts`): every detector but those that
    spill their own rows as they count (marked_ten: `spill_dir`; what it holds in memory is small)."""
    return not hasattr(det, "spill_dir")


def finalize_counts(counts: Counts, fdr: float = 0.05, seed: int = DEFAULT_SEED,
                    dets: Sequence[Detector] | None = None, workers: int | None = None, fresh: bool = False,
                    dask: "DaskSession | None" = None,
                    ) -> tuple[list[TestResult], list[Family], dict[str, int], AuditWide]:
    """Every detector's tests from its merged counts, then the audit-wide flags: (tests, families, dealing summary,
    audit-wide summary). Each detector's generator is seeded from (seed, its name) for its finalize alone, so the
    result is the same however the counts were made. `fresh`: when the detectors run in worker processes, each is
    a fresh process from the fork server that receives its detector's counts (`_finalize_task`), not a fork of
    this process. `workers`: how many run at once (default `tests_at_once()`); `dask` (with `fresh`): they run
    on that cluster instead, as many at once as it has worker threads."""
    dets = list(dets) if dets is not None else make_detectors(fdr=fdr)
    t0 = clock()
    tests: list[TestResult] = []
    on_dask = dask if fresh else None
    for got in _each(counts, None, dets, seed, _finalize_one, on_dask.width() if on_dask is not None else workers,
                     size=counts.deals_audited, fresh=_finalize_task if fresh else None,
                     cost_of=lambda d: finalize_cost(d, counts), pieces=lambda d: _groups(counts, d),
                     dask=on_dask.open() if on_dask is not None else None):
        tests += got
    stage("detectors' tests", t0)
    t0 = clock()
    tested, fams, wide = apply_audit(tests, fdr, SHARES)
    stage("audit-wide flags", t0)
    dealing = {"deals_audited": counts.deals_audited, "deals_not_auditable": counts.deals_not_auditable,
               "tables": len(counts.tables)}
    return tested, fams, dealing, wide


def run_detectors(table: AuditColumns, fdr: float = 0.05, seed: int = DEFAULT_SEED,
                  detectors: Sequence[Detector] | None = None, details: bool = True,
                  ) -> tuple[list[TestResult], list[Family], dict[str, int], AuditWide]:
    """Every detector over the table (counted once over the whole input), then the audit-wide flags: (tests,
    families, dealing summary, audit-wide summary). `finalize_counts(count_table(table))`."""
    dets = list(detectors) if detectors is not None else make_detectors(fdr=fdr, details=details)
    return finalize_counts(count_table(table, dets, seed), fdr=fdr, seed=seed, dets=dets)


PARALLEL_MIN_DEALS = 100_000  # below this the detectors run one after the other
_SHARED: tuple[Any, DealingFacts | None, list[Detector], int] | None = None  # what forked workers read


def _count_one(i: int, shared: tuple | None = None) -> tuple[int, Any]:
    """Detector i's counts of the table (`_each`'s `one`): from `shared` (table, facts, detectors, seed), or, in
    a forked worker, from `_SHARED`, which the fork inherited."""
    got = shared if shared is not None else _SHARED
    assert got is not None
    table, facts, dets, seed = got
    det = dets[i]
    t0 = clock()
    out = det.count(table, detector_rng(seed, det.name), facts=facts)
    stage(f"  {det.name} counts", t0)
    return i, out


def _groups(counts: Counts, det: Detector) -> int:
    """How many groups of subjects `det`'s counts were spilled in (1: held whole): its tests can be run in that
    many pieces at most (`_each`'s `pieces`)."""
    got = counts.by_test.get(det.name)
    return got.shards if isinstance(got, SpilledCounts) else 1


Task = int | tuple[int, int, int]
"""What a worker of `_each` runs: a detector's index, or (index, k, n), the k-th of n pieces of its groups."""


def _finalize_one(task: Task, shared: tuple | None = None) -> tuple[Task, list[TestResult]]:
    """The tests of a detector, or of a piece of its groups (`Task`), from `shared` (counts, facts, detectors,
    seed), or, in a forked worker, from `_SHARED`."""
    got_shared = shared if shared is not None else _SHARED
    assert got_shared is not None
    counts, _facts, dets, seed = got_shared
    i, k, n = (task, 0, 1) if isinstance(task, int) else task
    det = dets[i]
    t0 = clock()
    got = counts.by_test.get(det.name)
    rng = detector_rng(seed, det.name)
    tests: Iterable[TestResult]
    if isinstance(got, SpilledCounts) and got.shards > 1:  # folded and tested a group of subjects at a time
        # (piece k of n: its share of the groups; these tests draw nothing from `rng`, so the pieces give the
        # tests of the whole)
        tests = _sharded_results(det, got, rng, got.shards * k // n, got.shards * (k + 1) // n)
        counts_d = None
    else:
        if isinstance(got, SpilledCounts):  # folded here, in the process that runs its tests
            got = got.fold(det)
        counts_d = got if got is not None else det.merge([])
        each = getattr(det, "results", None)  # the tests one at a time, where the detector gives them so
        tests = each(counts_d, rng) if each is not None else det.finalize(counts_d, rng)
    del got
    # the JSON form of the details is made here, in the worker when there are workers, and packed as each test
    # comes (issue 15: held as Python objects, the details of 76,180 tests took about 2 GB at 10M deals; a
    # detector's own list of them, collusion's 35,000 pairs, was held whole before it was packed)
    # (a `Packed` stands in for the field's dict: read-only, which a finished test's controls and detail are)
    out = [replace(t, controls=cast(dict, packed(t.controls)), detail=cast(dict, packed(t.detail))) for t in tests]
    del counts_d, tests
    stage(f"  {det.name}" + (f" ({k + 1} of {n})" if n > 1 else ""), t0)
    return task, out


def _finalize_task(args: tuple) -> tuple[Task, list[TestResult]]:
    """`_finalize_one(i)` in a fresh process (`finalize_counts(fresh=True)`): `args` carries the detectors, the
    seed and the counts of detector i alone (the spilled ones are paths to the working folder's files). No global is
    set: a Dask worker may run several of these at once in threads of one process."""
    i, dets, counts, seed = args
    return _finalize_one(i, (counts, None, dets, seed))


def _sharded_results(det: Detector, spilled: SpilledCounts, rng: np.random.Generator, lo: int = 0,
                     hi: int | None = None) -> Iterator[TestResult]:
    """The tests of a detector spilled in groups of subjects (groups lo..hi-1, default all): each group folded and
    tested with the whole input's context, one group in memory at a time (the document orders the tests by test
    and subject, so the order of the groups does not show)."""
    context = spilled.context(det)
    folding = 0.0  # the time its groups' folds took (AUDITOR_TIMING; issue 15: half of dealer_cutter's at 10M)
    for j in range(lo, spilled.shards if hi is None else hi):
        t0 = clock()
        group = spilled.fold_shard(det, j)
        folding += clock() - t0
        yield from det.results(group, rng, context=context)  # type: ignore[attr-defined]
        del group
    took(f"    {det.name}'s folds", folding)


def cost(det: Detector) -> int:
    """The scheduler's estimate of a detector's running time (its spec's `cost`; unknown: 0)."""
    spec = getattr(det, "spec", None) or SPECS.get(det.name)
    return int(spec.cost) if spec is not None else 0


def finalize_cost(det: Detector, counts: Counts) -> float:
    """The scheduler's estimate of a detector's tests over `counts`: its spec's `cost`, plus what the detector
    says its data add (`extra_cost`, where it has one: deal_uniformity's Monte Carlo depends on how close to
    significant its dealers are, not on the input's size; its counts, per dealer, are folded here for that when
    they were spilled, and dropped). Only the order of the tests depends on it, never their results."""
    extra = getattr(det, "extra_cost", None)
    got = counts.by_test.get(det.name)
    if extra is None or got is None or (isinstance(got, SpilledCounts) and got.shards > 1):
        return float(cost(det))
    if isinstance(got, SpilledCounts):
        got = got.fold(det)
    return float(cost(det)) + float(extra(got))


def _each(shared: Any, facts: DealingFacts | None, dets: list[Detector], seed: int, one: Callable[..., tuple],
          workers: int | None = None, size: int | None = None,
          fresh: Callable[[tuple], tuple] | None = None,
          cost_of: Callable[[Detector], float] | None = None,
          pieces: Callable[[Detector], int] | None = None, dask: Any = None) -> list:
    """`one(i)` for every detector, in the detectors' order. On a large input with two or more cores they run in
    forked worker processes that read `shared` copy-on-write, the costliest first (each detector owns its random
    generator, so the results are the same whichever process runs it); otherwise one after the other. `fresh`
    (with `shared` a `Counts`): the workers are fresh processes from the fork server instead, and `fresh((i, dets,
    the counts of detector i alone, seed))` is what each runs: a fork starts with this process's whole resident
    set, which at 10M deals holds the fold of 56 parts (issue 15: 420 MB against 260 MB at 1M, which every
    finalize worker carried). `cost_of(detector)`: the order's estimate when the detectors run in parallel
    (default: the specs' `cost`). `pieces(detector)`: in how many pieces its `one` may run (then `one` gets
    (i, k, n) for each piece k of n, and the detector's result is the pieces' lists joined): a detector tested in
    groups of subjects runs in as many pieces as there are workers, so that one long detector does not leave a
    core idle at the end (issue 15: at 1M deals collusion's 17 s and dealer_cutter's 12 s ran after one another
    beside marked_ten's 19 s). `dask` (a Dask client, with `fresh`): the fresh tasks run on its cluster instead."""
    global _SHARED
    workers = workers if workers is not None else tests_at_once()
    n = size if size is not None else len(shared)
    parallel = workers > 1 and len(dets) > 1 and n >= PARALLEL_MIN_DEALS
    # the costliest first (`cost_of`, else the specs'), estimated only when the order matters
    est = cost_of if cost_of is not None and parallel else cost
    costs = [est(d) for d in dets]
    split = [min(workers, pieces(d)) if parallel and pieces is not None else 1 for d in dets]
    each: list[Task] = [i if split[i] == 1 else (i, k, split[i]) for i in range(len(dets)) for k in range(split[i])]
    order = sorted(each, key=lambda t: -costs[_index(t)] / (1 if isinstance(t, int) else t[2]))

    def joined(got: dict) -> list:
        return [got[i] if split[i] == 1 else [x for k in range(split[i]) for x in got[(i, k, split[i])]]
                for i in range(len(dets))]

    if parallel and fresh is not None:
        tasks = ((t, dets, _only(shared, dets[_index(t)].name), seed) for t in order)
        if dask is not None:
            return joined(dict(dask_map(dask, fresh, tasks)))
        with closing_pool(fresh_context(), workers, maxtasksperchild=1) as pool:
            # each a fresh process with one thread: a detector may fork a helper in it (`pools.allow_helpers`)
            got = dict(pool.imap_unordered(partial(allow_helpers, fresh), tasks))
        return joined(got)
    if not (parallel and "fork" in mp.get_all_start_methods()):
        # here, one after the other, handed what they read (no global: a part's task may run in one of several
        # threads of a Dask worker, each counting its own part)
        return [one(i, (shared, facts, dets, seed))[1] for i in range(len(dets))]
    _SHARED = (shared, facts, dets, seed)  # what the forks inherit
    try:
        ctx = mp.get_context("fork")
        # a fresh fork for each detector (maxtasksperchild=1): a worker does not carry the heap the detector
        # before it left behind (issue 15: at 10M deals collusion's tests started in a worker already at
        # 0.97 GB from marked_ten's, against 0.75 GB for a fresh fork of the audit's process)
        with closing_pool(ctx, workers, maxtasksperchild=1) as pool:
            got = dict(pool.imap_unordered(one, order))
        return joined(got)
    finally:
        _SHARED = None


TESTS_AT_ONCE = 2  # the tests run in at most this many processes by default, as the parts (`PARTS_AT_ONCE`): each
# holds its detector's counts, so memory, not cores, bounds it on a big machine; `--workers N` asks for more


def tests_at_once() -> int:
    """How many detectors' tests run at once by default: one per core, at most `TESTS_AT_ONCE`."""
    return max(1, min(TESTS_AT_ONCE, os.cpu_count() or 1))


def _index(t: Task) -> int:
    return t if isinstance(t, int) else t[0]


def _only(counts: Counts, name: str) -> Counts:
    """`counts` with the counts of the detector `name` alone (what a fresh finalize worker is sent)."""
    mine = {name: counts.by_test[name]} if name in counts.by_test else {}
    return Counts(mine, counts.deals_audited, counts.deals_not_auditable, counts.tables)


# ---------------------------------------------------------------- the reproducibility block (issue 16)


def presets_seen(table: AuditColumns) -> dict[str, int]:
    """Deals per "game/preset" of the table (the rules each deal names; options are not listed)."""
    counts: list[int] = (np.bincount(np.asarray(table.rset, np.int64), minlength=len(table.rulesets)).tolist()
                         if len(table) else [])
    out: dict[str, int] = {}
    for r, k in zip(table.rulesets, counts, strict=False):
        if int(k):
            key = f"{r.game}/{r.preset}"
            out[key] = out.get(key, 0) + int(k)
    return dict(sorted(out.items()))


def merged_presets(parts: Iterable[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in parts:
        for key, k in (p or {}).items():
            out[str(key)] = out.get(str(key), 0) + int(k)
    return dict(sorted(out.items()))


def file_sha256(path: str, block: int = 1 << 20) -> tuple[str | None, int | None, str | None]:
    """(SHA-256 hex, size in bytes, None) of a file, or (None, None, why) when it cannot be read."""
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(block):
                h.update(chunk)
                size += len(chunk)
    except OSError as e:
        return None, None, str(e.strerror or type(e).__name__)
    return h.hexdigest(), size, None


def reproducibility_block(report: AuditReport, paths: Sequence[str], command: str) -> dict:
    """What it takes to run this audit again and check that it is the same (docs/spec/outputs.md,
    "reproducibility"): the tool and its version, the command, the seed and level, each input file's SHA-256 and
    size, and the rules presets of the deals audited (deals per "game/preset")."""
    inputs = []
    for p in paths:
        digest, size, why = file_sha256(str(p))
        entry: dict[str, Any] = {"path": str(p), "sha256": digest, "bytes": size}
        if why is not None:
            entry["error"] = why
        inputs.append(entry)
    return {"tool": "auditor", "version": __version__, "command": command, "seed": report.seed, "fdr": report.fdr,
            "inputs": inputs, "rules_presets": dict(report.presets or {})}
