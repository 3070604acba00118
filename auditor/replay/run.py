"""Replay a whole input: records or files -> one `Replay` (`auditor.replay.result`), whichever engine ran.

`replay_records(records, engine)` works on `Record`s in memory and keeps every `DealResult` (the per-card view).
`replay_paths(paths, engine)` is what the CLI uses: with the batch engine it reads the files in columns
(`auditor.fast.pipeline`) and never builds a Python object per clean deal; the document is the same. Either builds
the table of replayed deals when asked (`table=True`): the audit's input.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np

from ..columns import DEAL_NO_MAX, canonical_order, from_results, time_keys
from ..dealog import Deal, Record, read_records
from ..fast.pipeline import replay_paths as replay_paths_batch
from ..findings import Finding
from .batch import replay_batch
from .chain import chain_games
from .reference import DealResult, replay_deal
from .result import Replay, bad_record_finding, dump_document

ENGINES = ("batch", "reference")
__all__ = ["ENGINES", "Replay", "bad_record_finding", "dump_document", "replay_paths", "replay_records"]


def replay_records(records: Iterable[Record], engine: str = "reference",
                   progress: Callable[[int], None] | None = None, table: bool = False) -> Replay:
    """Replay every record. `engine` is "reference" (per card) or "batch" (numpy, same results)."""
    bad: list[tuple[tuple[int, int], Finding]] = []
    deals: list[Deal] = []
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
        results, stats = replay_batch(deals)
    else:
        results = [replay_deal(d) for d in deals]
    set_orders(results)
    summaries, outcomes = chain_games(results)
    keyed: list[tuple[tuple[int, int], Finding]] = list(bad)
    for i, r in enumerate(results):
        key = (r.deal.file_index, r.deal.line or 0)
        keyed += [(key, f) for f in r.findings]
        oc = outcomes.get(i)
        if oc is not None:
            keyed += [(key, f) for f in oc.findings]
    keyed.sort(key=lambda kf: kf[0])  # stable: within a record, deal findings before game findings
    games = len({d.game_id for d in deals})
    return Replay(deals=n_read, games=games, findings=[f for _, f in keyed], games_summary=summaries, stats=stats,
                  table=from_results(results) if table else None, results=results, outcomes=outcomes)


def set_orders(results: list[DealResult]) -> None:
    """Give every result its rank in the canonical order of these deals (`DealResult.order`): what the table's
    `order` holds, whichever subset of the results it is built from."""
    tables: dict[str, int] = {}
    games: dict[str, int] = {}
    t = np.fromiter((tables.setdefault(r.deal.table, len(tables)) for r in results), np.int64, len(results))
    g = np.fromiter((games.setdefault(r.deal.game_id, len(games)) for r in results), np.int64, len(results))
    order = canonical_order(
        t, list(tables), time_keys([r.deal.time for r in results]), g, list(games),
        np.fromiter((min(r.deal.deal_no, DEAL_NO_MAX) for r in results), np.int64, len(results)),
        np.fromiter((r.deal.file_index for r in results), np.int64, len(results)),
        np.fromiter((r.deal.line or 0 for r in results), np.int64, len(results)))
    for r, k in zip(results, order.tolist(), strict=True):
        r.order = k


def replay_paths(paths: list[str], engine: str = "batch", progress: Callable[[int], None] | None = None,
                 table: bool = False, chunks: Callable | None = None) -> Replay:
    """Replay files with either engine. `chunks` (batch engine only): a function (paths, registry) -> chunks to
    read instead of the files (the audit's selection, `auditor.select`)."""
    if engine == "batch":
        return replay_paths_batch(list(paths), progress=progress, table=table, chunks=chunks)
    if chunks is not None:
        raise ValueError("a chunk source is read by the batch engine only")

    def records() -> Iterator[Record]:
        for i, rec in enumerate(read_records(paths), 1):
            if progress is not None and i % 4096 == 0:
                progress(i)
            yield rec

    return replay_records(records(), engine=engine, table=table)
