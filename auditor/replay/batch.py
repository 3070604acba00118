"""The batch replay engine: many deals at once in numpy (`auditor.fast.kernel`), the reference engine's results.

`replay_batch(deals)` returns one `DealResult` per deal, equal to what `reference.replay_deal` gives (findings,
hands, plays, winners, revokes, points), and statistics: how many deals the kernel replayed and how many it handed
to the reference engine, by reason. Deals the columns cannot hold (lenient card spellings, unknown card strings,
claims), deals with a structural finding (cards, hand sizes, turn-up, deck, begging, the shape of the play), deals
where a card played is not in its player's hand, and deals whose rules have a switch value the kernel does not
claim (`kernel.KERNEL_SUPPORTS`) go to the reference engine; revokes are found by the kernel.

The CLI does not come through here for large inputs: `auditor.fast.pipeline` replays files without building a
`DealResult` per deal.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..dealog import Deal
from ..findings import Finding
from ..fast.cols import ChunkBuilder, Registry
from ..fast.kernel import AF_LABELS, FALLBACK_REASONS, SW_STEP_NAMES, ChunkResult, replay_chunk
from .reference import SW_STEPS, DealResult, replay_deal

CHUNK = 65536


def replay_batch(deals: list[Deal]) -> tuple[list[DealResult], dict]:
    assert SW_STEP_NAMES == SW_STEPS
    reg = Registry()
    results: list[DealResult] = []
    reasons: Counter[str] = Counter()
    kernel = 0
    for start in range(0, len(deals), CHUNK):
        part = deals[start:start + CHUNK]
        b = ChunkBuilder(reg, 0, "")
        for d in part:
            b.add_deal(d)
        ch = b.finish()
        ch.sources = [d.source for d in part]
        out = replay_chunk(ch, reg, detail=True)
        by_row: dict[int, list[Finding]] = {}
        for row, _k, _p, f in sorted(out.findings, key=lambda x: (x[0], x[1], x[2])):
            by_row.setdefault(row, []).append(f)
        for i, d in enumerate(part):
            if ch.status[i] != 0:
                reasons["record"] += 1
                results.append(replay_deal(d))
                continue
            if not out.handled[i]:
                reasons[FALLBACK_REASONS[out.reason[i]]] += 1
                results.append(replay_deal(d))
                continue
            kernel += 1
            results.append(_result(d, i, out, by_row.get(i, []), AF_LABELS))
    stats = {"engine": "batch", "deals": len(deals), "kernel": kernel, "fallback": sum(reasons.values()),
             "fallback_reasons": dict(sorted(reasons.items()))}
    return results, stats


def _result(d: Deal, i: int, out: ChunkResult, findings: list[Finding], af_labels: tuple[str, ...]) -> DealResult:
    masks, trump, plays, winners, nt = out.detail[i]
    r = DealResult(d)
    r.findings = list(findings)
    r.cards_ok = True
    r.hands = masks
    r.trump = trump
    r.replayed_tricks = nt
    r.plays = plays
    r.winners = winners
    r.revokes = list(out.revokes.get(i, []))
    if not out.scored[i]:
        return r
    r.scored = True
    ns = d.n_sides
    if d.game == "scotch_whist":
        r.sw_steps = {name: [int(x) for x in out.steps[i, j, :ns]] for j, name in enumerate(SW_STEPS)}
        r.penalty_revokes = list(out.penalties.get(i, []))  # claimed, or any when no claim is needed
    else:
        ev = out.events[i]
        lab = out.elabel[i]
        r.af_events = [(int(s), af_labels[int(lb)]) for s, lb in zip(ev, lab, strict=True) if s >= 0]
        r.gift_sides = [int(g) for g in out.gift[i] if g >= 0]
    return r


def result_points(r: DealResult) -> np.ndarray | None:
    pts = r.points
    return None if pts is None else np.asarray(pts)
