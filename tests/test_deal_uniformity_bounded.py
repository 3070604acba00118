"""Issue 15: deal_uniformity's and dealer_cutter's counts are bounded and merge exactly (3 parts of whole tables, 2
time-disjoint pieces of each table), and the numba tally of the per-deal null equals its numpy spec."""

import json

import numpy as np
import pytest

from auditor.audit import replay_for_audit
from auditor.detectors.base import MAX_BINS
from auditor.testing.partition import parts_of_whole_tables, time_pieces
from auditor.detectors import deal_uniformity as du
from auditor.detectors.deal_uniformity import DealerCutter, DealUniformity
from auditor.facts import config, facts_from_columns
from auditor.rules import PRESETS

DEMO = "fixtures/demo/season.jsonl.gz"


@pytest.fixture(scope="module")
def demo_table():
    return replay_for_audit([DEMO]).table


def _docs(det, counts, seed=0):
    return [json.dumps(t.to_json(), sort_keys=True) for t in det.finalize(counts, np.random.default_rng(seed))]


@pytest.mark.parametrize("cls", [DealUniformity, DealerCutter])
def test_parts_and_time_pieces_merge_to_the_whole(demo_table, cls):
    det = cls(fdr=0.005, mc_max=400) if cls is DealUniformity else cls(fdr=0.005)
    cnt = lambda cols: det.count(cols, None, facts=facts_from_columns(cols))  # noqa: E731
    whole = cnt(demo_table)
    want = _docs(det, whole)
    assert len(want) >= 2
    assert _docs(det, det.merge([cnt(p) for p in parts_of_whole_tables(demo_table)])) == want
    early, late = time_pieces(demo_table)
    assert _docs(det, det.merge([cnt(late), cnt(early)])) == want


def test_uniformity_counts_are_bounded(demo_table):
    c = DealUniformity().count(demo_table, None, facts=facts_from_columns(demo_table))
    for u in c.values():
        assert u.obs.shape == (len(u.configs), du.N_CLASSES, 6) and len(u.timeline) <= MAX_BINS
    assert sum(len(u) for u in c.values()) > 7000


@pytest.mark.parametrize("preset,n,D", [(("scotch_whist", "foster"), 4, 50), (("all_fours", "foster"), 3, 40),
                                         (("scotch_whist", "russian"), 5, 7)])
def test_tally_kernel_equals_its_numpy_spec(preset, n, D):
    cfg = config(PRESETS[preset], n)
    rng = np.random.default_rng(3)
    ranks = np.array(du.honour_ranks(cfg.game), np.int64)
    pack = np.array(du.cards_of(cfg.pack), np.int64)
    other = np.array([c for k, c in enumerate(cfg.slot_class) if k != cfg.turnup_index], np.int64)
    tu = pack[rng.integers(len(pack), size=(64, D))]
    pos = rng.integers(len(pack) - 1, size=(64, D, len(ranks)))
    in_pack = np.array([[(cfg.pack >> (s * 13 + r)) & 1 for r in ranks] for s in range(4)], dtype=bool)
    cols = np.array(du._cols(cfg), np.int64)
    out = np.zeros((64, du.N_CLASSES * 6), np.int64)
    du._tally_kernel(tu, pos, other, ranks, in_pack, cols, out)
    assert (out == du.tally_per_deal(tu, pos, other, ranks, in_pack, cols)).all() and out.sum() > 0
    flat = pos.reshape(-1, len(ranks))
    spec = (np.diff(np.sort(flat, axis=1), axis=1) == 0).any(axis=1)
    assert (du._collide(flat) == spec).all() and spec.any() and not spec.all()
