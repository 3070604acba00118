"""The detector interface.

A detector turns replayed deals into `TestResult`s in two steps so that its statistics add exactly across
partitions of the input by table:

    counts = detector.count(results, rng)      # per-subject sufficient statistics of one partition
    total = detector.merge([c1, c2, ...])       # exact sum of partitions
    tests = detector.finalize(total, rng)       # p-values etc. from the summed counts

`run(results, rng)` is `finalize(count(results))`. `results` is the list of `DealResult` of the replay
(`auditor.replay.reference.DealResult`: the deal record, dealt hands as bitmasks, plays, winners, revokes).
Randomness only through the `numpy.random.Generator` passed in.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from ..stats.family import TestResult


class Detector(Protocol):
    name: str

    def count(self, results: Sequence[Any], rng: np.random.Generator) -> Any: ...

    def merge(self, parts: Sequence[Any]) -> Any: ...

    def finalize(self, counts: Any, rng: np.random.Generator) -> list[TestResult]: ...


def run(detector: Detector, results: Sequence[Any], rng: np.random.Generator) -> list[TestResult]:
    return detector.finalize(detector.count(results, rng), rng)
