"""Issue 15: the residue tests' counts are bounded and merge exactly: the demo split into 3 parts of whole tables,
and each table into 2 pieces disjoint in time (the first half of its deals, then the second), gives the whole's
results; the carried first and last deals of a pack id join the pieces."""

import json

import numpy as np
import pytest

from auditor.audit import replay_for_audit
from auditor.detectors.base import MAX_BINS
from auditor.testing.partition import parts_of_whole_tables, time_pieces
from auditor.detectors.shuffle_residue import ShuffleResidue, TableCounts, TrickStack, merge_tables

DEMO = "fixtures/demo/season.jsonl.gz"


@pytest.fixture(scope="module")
def demo_table():
    return replay_for_audit([DEMO]).table


def _docs(det, counts):
    return [json.dumps(t.to_json(), sort_keys=True) for t in det.finalize(counts)]


@pytest.mark.parametrize("cls", [ShuffleResidue, TrickStack])
def test_parts_and_time_pieces_merge_to_the_whole(demo_table, cls):
    det = cls(fdr=0.0025)
    whole = det.count(demo_table)
    want = _docs(det, whole)
    assert len(want) > 20
    parts = parts_of_whole_tables(demo_table)
    assert _docs(det, det.merge([det.count(p) for p in parts])) == want
    early, late = time_pieces(demo_table)
    pieces = [det.count(late), det.count(early)]  # any order: the merge joins them in time order
    merged = det.merge(pieces)
    assert _docs(det, merged) == want
    # the junctions were counted: the same integer sums as the whole, table by table
    for t, c in whole.items():
        m = merged[t]
        key = lambda c, j: (c.labels[j], c.dealers[j])  # noqa: E731
        a = {key(c, j): (int(c.n[j]), int(c.sx[j]), int(c.sxx[j])) for j in range(len(c.labels))}
        b = {key(m, j): (int(m.n[j]), int(m.sx[j]), int(m.sxx[j])) for j in range(len(m.labels))}
        assert a == b and m.overlaps == 0
    # without the carry (the later pieces' first deals not joined) the sums would be short: the test has teeth
    cut = {t: TableCounts(**{**c.__dict__, "runs": []}) for t, c in det.count(late).items()}
    short = det.merge([det.count(early), cut])
    assert sum(int(c.n.sum()) for c in short.values()) < sum(int(c.n.sum()) for c in whole.values())


def test_counts_are_bounded(demo_table):
    """The counts hold no per-deal array: their size is set by tables, labels, dealers and pack ids."""
    c = ShuffleResidue().count(demo_table)
    for tc in c.values():
        assert len(tc.n) == len(set(zip(tc.labels, tc.dealers, strict=True))) <= 60
        assert all(len(tl) <= MAX_BINS for tl in tc.timelines)
        assert len(tc.runs) <= len(demo_table.packs) + 1


def test_overlapping_pieces_are_counted(demo_table):
    det = ShuffleResidue()
    cols = demo_table
    t = int(cols.table[0])
    rows = np.flatnonzero(cols.table == t)
    rows = rows[np.argsort(cols.order[rows])]
    a = (np.arange(len(rows)) // 2) % 2 == 0  # pairs of deals (both packs: they alternate) taken in turn
    odd, even = cols.take(rows[a]), cols.take(rows[~a])  # interleaved in time: the junctions overlap
    name = cols.tables[t]
    m = merge_tables([det.count(odd)[name], det.count(even)[name]], name, det.stat)
    assert m.overlaps >= 1
    whole = det.count(cols.take(rows))[name]
    assert int(m.n.sum()) == int(whole.n.sum())  # as many rows, but not the whole's: each piece kept its own chain
    assert int(m.sxx.sum()) != int(whole.sxx.sum())
