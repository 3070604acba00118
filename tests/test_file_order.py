"""File order: an audit's result does not depend on how the log was split into files, nor on the order the files
are given in (issue 14). The demo season (a slice in the fast tier, the whole of it in the slow tier) is split into
files by contiguous ranges and interleaved, and every arrangement is audited with the same seed by both engines:
every test's numbers and flags, its whole entry but for `source` strings (timelines included: they follow the
canonical order of deals, table, time, game, deal number), and the findings as a set must be those of the log
given as one file."""

from __future__ import annotations

import gzip
import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from auditor.audit import audit, replay_for_audit
from auditor.columns import AuditColumns
from auditor.detectors.registry import make_detectors

DEMO = "fixtures/demo/season.jsonl.gz"
FIELDS = ("n", "observed", "expected", "statistic", "pvalue", "qvalue", "tier", "flagged", "strong")
# per-deal sequences still read in input order by a module outside this change: (test, detail key). Each entry is
# a known defect (ask in the helper's report), not a licence: remove it when the module keys its sequence by the
# table's `order`.
PENDING: set[tuple[str, str]] = set()  # every timeline follows the canonical order now


def _lines(n: int | None) -> list[str]:
    with gzip.open(DEMO, "rt") as f:
        lines = f.read().splitlines()
    return lines[:n] if n is not None else lines


def _write(tmp: Path, name: str, lines: list[str]) -> str:
    p = tmp / f"{name}.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _splits(tmp: Path, lines: list[str]) -> dict[str, list[str]]:
    """The log as one file, two contiguous halves, and three files interleaved line by line."""
    k = len(lines) // 2
    return {"whole": [_write(tmp, "whole", lines)],
            "halves": [_write(tmp, "a", lines[:k]), _write(tmp, "b", lines[k:])],
            "thirds": [_write(tmp, f"i{j}", lines[j::3]) for j in range(3)]}


def _arrangements(splits: dict[str, list[str]], every: bool) -> list[list[str]]:
    out = [splits["whole"]]
    for name in ("halves", "thirds"):
        perms = list(itertools.permutations(splits[name]))
        out += [list(p) for p in (perms if every else perms[-1:])]
    return out


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k != "source"}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _findings(doc: dict) -> Counter:
    return Counter(json.dumps(_strip(f), sort_keys=True) for f in doc["findings"])  # a replay document


def _tests(doc: dict) -> dict:
    out = {}
    for t in doc["tests"]:
        e = _strip(t)
        for test, key in PENDING:
            if t["test"] == test and isinstance(e.get("detail"), dict):
                e["detail"].pop(key, None)
        out[(t["test"], t["subject"])] = e
    return out


def _canonical_rows(c: AuditColumns) -> dict:
    """The table's rows in `order`, with everything that says where a row was read (file index, line) left out
    and the string indices turned into the strings."""
    o = np.argsort(c.order, kind="stable")
    assert (c.order[o] == np.arange(len(c))).all()  # a rank: 0..D-1, each once
    out = {}
    for k, a in c.arrays.items():
        if k in ("file_index", "line", "order"):
            continue
        a = a[o]
        lst = {"table": c.tables, "game": c.game_ids, "pack": c.packs, "seat_player": c.players}.get(k)
        if lst is not None:
            a = np.asarray(list(lst) + [""], dtype=object)[a]
        elif k == "rset":
            a = np.asarray([repr(r) for r in c.rulesets], dtype=object)[a]
        out[k] = a
    inv = np.empty(len(o), np.int64)
    inv[o] = np.arange(len(o))
    out["revokes"] = sorted(zip(inv[c.rev_row].tolist(), c.rev_trick.tolist(), c.rev_seat.tolist(), strict=True))
    out["tricks"] = [c.tricks_of(int(i)) for i in o]
    out["runs"] = {int(inv[i]): v for i, v in c.runs.items()}
    return out


def _same_rows(a: dict, b: dict) -> list[str]:
    bad = []
    for k, v in a.items():
        w = b[k]
        if isinstance(v, np.ndarray):
            if v.ndim == 2:  # padded widths may differ between builds
                m = min(v.shape[1], w.shape[1])
                v, w = v[:, :m], w[:, :m]
            if not np.array_equal(v, w):
                bad.append(k)
        elif v != w:
            bad.append(k)
    return bad


def _detectors():
    dets = make_detectors()
    for d in dets:
        if hasattr(d, "mc_max"):
            d.mc_max = 300  # fewer Monte-Carlo draws: the same draws for every arrangement all the same
    return dets


def _check(tmp: Path, n: int | None, every: bool, engines: tuple[str, ...], audits: int | None) -> None:
    """Every arrangement by every engine: its table in canonical order and its findings equal the first's; the
    first `audits` arrangements of each engine (None: all) audited, every test equal to the first audit's."""
    splits = _splits(tmp, _lines(n))
    want_rows = want_doc = None
    for engine in engines:
        for k, paths in enumerate(_arrangements(splits, every)):
            rep = replay_for_audit(paths, engine=engine)
            assert rep.table is not None
            rows = _canonical_rows(rep.table)
            if want_rows is None:
                want_rows, want_find = rows, _findings(rep.to_json())
            assert _same_rows(want_rows, rows) == [], (engine, paths)
            assert _findings(rep.to_json()) == want_find, (engine, paths)
            if audits is not None and k >= audits:
                continue
            doc = audit(rep, seed=7, detectors=_detectors()).to_json()
            got = _tests(doc)
            if want_doc is None:
                want_doc = got
                assert any(t["flagged"] for t in got.values())  # the demo's cheats are in the slice
            assert set(got) == set(want_doc), (engine, paths)
            for key, e in want_doc.items():
                assert {f: got[key][f] for f in FIELDS} == {f: e[f] for f in FIELDS}, (engine, paths, key)
                assert got[key] == e, (engine, paths, key)


def test_file_order_changes_nothing(tmp_path):
    """A 200-deal slice: the table in canonical order and the findings for every arrangement (batch engine); the
    audit of the one file and of the thirds in a rotated order (batch engine) and of the halves the other way round
    (reference engine, whose table is `from_results` keyed by `DealResult.order`)."""
    _check(tmp_path, 200, every=True, engines=("batch",), audits=0)
    ref = _arrangements(_splits(tmp_path, _lines(200)), every=False)
    docs = []
    for engine, paths in (("batch", ref[0]), ("batch", ref[2]), ("reference", ref[1])):
        rep = replay_for_audit(paths, engine=engine)
        docs.append(_tests(audit(rep, seed=7, detectors=_detectors()).to_json()))
    assert len(docs[0]) > 100
    for d in docs[1:]:
        assert d == docs[0]


@pytest.mark.slow
def test_slice_every_arrangement_both_engines(tmp_path):
    """600 deals: every arrangement's table and findings by both engines, a few audits each. (400 until the demo was
    made again with honest slips, commit 93d6ad6: its first 400 deals then held no flag; the first 600 hold otto's
    turned-up Jacks.)"""
    _check(tmp_path, 600, every=True, engines=("batch", "reference"), audits=3)


def test_the_check_can_fail(tmp_path):
    """The comparison sees a change of order: the same rows keyed by input position are not the canonical rows."""
    splits = _splits(tmp_path, _lines(300))
    c = replay_for_audit(list(reversed(splits["thirds"]))).table
    want = _canonical_rows(c)
    c.arrays["order"] = ((c.file_index.astype(np.int64) << 32) | c.line).argsort().argsort()
    assert _same_rows(want, _canonical_rows(c)) != []


@pytest.mark.slow
def test_demo_every_permutation_both_engines(tmp_path):
    """The whole demo season: every permutation of the halves and of the thirds, both engines, every test."""
    _check(tmp_path, None, every=True, engines=("batch", "reference"), audits=None)
