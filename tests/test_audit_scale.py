"""The audit at any size (issue 15): parts of whole tables counted apart and merged give the document of the
whole, whoever computes them (this process, local worker processes, a Dask LocalCluster), and saved counts plus
new logs give the audit of all the logs."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
from pathlib import Path

import numpy as np
import orjson
import pytest

from auditor.audit import audit, audit_input, fingerprint, replay_for_audit
from auditor.countfile import CountsFileError, load_counts, save_counts
from auditor.detectors.registry import make_detectors

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "season.jsonl.gz"


def _doc(report) -> bytes:
    buf = io.BytesIO()
    try:
        report.write_json(buf)
    finally:
        report.close()
    return buf.getvalue()


@pytest.fixture(scope="module")
def months(tmp_path_factory) -> tuple[Path, Path]:
    """The demo's first 2,400 deals or so, as two 'months': every game in the month of its first deal."""
    d = tmp_path_factory.mktemp("months")
    recs = [json.loads(line) for line in gzip.open(DEMO)]
    first: dict[str, str] = {}
    for r in recs:
        first.setdefault(r["game_id"], r["time"])
    times = sorted(first.values())
    cut1, cut2 = times[len(times) * 3 // 20], times[len(times) * 3 // 10]
    a = [r for r in recs if first[r["game_id"]] < cut1]
    b = [r for r in recs if cut1 <= first[r["game_id"]] < cut2]
    assert len(a) > 800 and len(b) > 800
    out = []
    for name, rs in (("m1.jsonl", a), ("m2.jsonl", b)):
        p = d / name
        p.write_text("".join(json.dumps(r) + "\n" for r in rs))
        out.append(p)
    return out[0], out[1]


@pytest.fixture(scope="module")
def whole(months) -> bytes:
    paths = [str(p) for p in months]
    return audit(replay_for_audit(paths)).json_bytes()


def test_parts_here_and_in_workers_give_the_document_of_the_whole(months, whole):
    paths = [str(p) for p in months]
    assert _doc(audit_input(paths)) == whole  # one part: today's path
    assert _doc(audit_input(paths, part_deals=500)) == whole  # several parts, one after the other
    # each part in a fresh process (the default for parts of 100,000 deals and more: `isolated`)
    assert _doc(audit_input(paths, part_deals=500, isolate=True)) == whole
    assert _doc(audit_input(paths, part_deals=500, workers=2)) == whole


def test_working_files_go_as_soon_as_the_audit_is_done_with_them(months, whole, tmp_path, monkeypatch):
    """The split's bucket files are removed once the parts are replayed, the detectors' spilled counts once their
    tests are done (`audit._Remover`, threads beside the audit); the games and findings the document streams stay
    until it is written; then nothing is left."""
    import auditor.audit as A

    events: list[tuple[str, list[str]]] = []
    real_finalize, real_remove = A.finalize_counts, A._Remover.remove

    def finalize(counts, **kw):
        events.append(("tests", []))
        return real_finalize(counts, **kw)

    def remove(self, paths):
        paths = list(paths)
        events.append(("remove", [os.path.basename(p) for p in paths]))
        real_remove(self, paths)
        self.join()

    monkeypatch.setattr(A, "finalize_counts", finalize)
    monkeypatch.setattr(A._Remover, "remove", remove)
    report = audit_input([str(p) for p in months], part_deals=500, workdir=str(tmp_path))
    (wd,) = list(tmp_path.iterdir())
    assert [e[0] for e in events] == ["remove", "tests", "remove"]
    assert events[0][1] and all(n.startswith("bucket-") for n in events[0][1])
    assert events[2][1][0] == "counts"
    left = sorted(os.listdir(wd))
    assert not any(n.startswith("bucket-") for n in left) and "counts" not in left
    assert any(n.startswith("games-") for n in left) and any(n.startswith("findings-") for n in left)
    assert _doc(report) == whole  # `_doc` closes the report: the folder goes
    assert list(tmp_path.iterdir()) == []


def test_jsonl_read_in_parallel_segments_splits_into_parts(months, whole, monkeypatch):
    """A large plain JSONL is parsed in segments by worker processes, several chunks a segment; the split forgets
    each chunk's line-ups once it is spilled. The chunks of a segment were renumbered all at once, before the
    first was spilled, so the next one's players pointed into the forgotten list: a 300,000-deal JSONL audit
    ended in an IndexError (found in issue 15's eleventh session). Here with small segments and chunks."""
    from auditor.fast import read

    monkeypatch.setattr(read, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read, "SEGMENT_BYTES", 150_000)
    monkeypatch.setattr(read, "CHUNK_ROWS", 64)
    paths = [str(p) for p in months]
    assert all(read._parallel_ok(p) and len(read._segments(p, read.SEGMENT_BYTES)) >= 3 for p in paths)
    assert _doc(audit_input(paths, part_deals=500)) == whole


def test_tests_in_fresh_processes_give_the_same_bytes(months, whole, monkeypatch):
    """With parts, the detectors' tests run in fresh processes from the fork server, each sent its detector's
    counts (`finalize_counts(fresh=True)`), when the input is large enough for worker processes: forced here."""
    import auditor.audit as A

    monkeypatch.setattr(A, "PARALLEL_MIN_DEALS", 0)
    sent: list[str] = []
    real = A._only
    monkeypatch.setattr(A, "_only", lambda counts, name: sent.append(name) or real(counts, name))
    paths = [str(p) for p in months]
    assert _doc(audit_input(paths, part_deals=500)) == whole
    # every detector's tests went out; those tested in groups of subjects in two pieces, one for each worker
    names = [d.name for d in A.make_detectors()]
    assert sorted(sent) == sorted(names + ["collusion", "dealer_cutter"])


def test_parquet_split_in_two_processes_gives_the_same_bytes(months, tmp_path, monkeypatch):
    """A Parquet input of at least `parts.HELPER_MIN_ROWS` rows is split by this process and one from the fork
    server, half its row groups each (issue 15, a twenty-third session): forced here on the months as Parquet files
    of small row groups, the document is the one process's, and the second process did take its half."""
    from auditor import parts as P
    from auditor.fast.convert import convert_file

    pytest.importorskip("pyarrow")
    paths = []
    for p in months:
        dst = tmp_path / (p.stem + ".parquet")
        convert_file(str(p), str(dst), rows=100)
        paths.append(str(dst))
    one = audit(replay_for_audit(paths)).json_bytes()
    monkeypatch.setattr(P, "HELPER_MIN_ROWS", 0)
    pieces: list[int] = []
    real = P._split_in_pieces
    monkeypatch.setattr(P, "_split_in_pieces", lambda parts, *a: [real(parts, *a), pieces.append(parts.pieces)][0])
    assert _doc(audit_input(paths, part_deals=500)) == one
    assert _doc(audit_input(paths, part_deals=500, workers=2)) == one  # the parts in a pool: the same split
    assert _doc(audit_input(paths, part_deals=500, isolate=False)) == one  # all in this process: one pass
    assert pieces == [2, 2]


def test_a_part_reads_only_its_rows_of_each_file(months, tmp_path):
    """A part's rows of one file are a slice of a batch that holds other files' rows too (`parts._PartSource`): the
    slice's checks read its own bytes only (issue 15, a twenty-eighth session: a card code that names no card, in
    one file's row, failed the check of the other file's slice with a traceback, and every slice's checks read
    the whole batch). The document is the one of the input read in one part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from auditor.fast.convert import convert_file

    paths = []
    for k, p in enumerate(months):
        dst = tmp_path / (p.stem + ".parquet")
        convert_file(str(p), str(dst))
        if k == 0:  # a trick card code of 60 in the first file's first row that has tricks
            t = pq.read_table(dst)
            tricks = t.column("tricks").to_pylist()
            i = next(j for j, v in enumerate(tricks) if v)
            tricks[i] = bytes([60]) + tricks[i][1:]
            t = t.set_column(t.schema.get_field_index("tricks"), t.schema.field("tricks"),
                             pa.array(tricks, t.schema.field("tricks").type))
            pq.write_table(t, dst)
        paths.append(str(dst))
    one = audit(replay_for_audit(paths)).json_bytes()
    assert b'"unknown_card"' in one
    assert _doc(audit_input(paths, part_deals=500)) == one
    assert _doc(audit_input(paths, part_deals=500, isolate=True)) == one


def test_the_audits_own_process_does_not_import_pandas(months, tmp_path):
    """The audit's own process splits a Parquet input, merges the parts and writes the document without importing
    pandas (issue 15, a twenty-ninth session: pyarrow imports it at the first `pa.array` or `Array.to_numpy`, some
    0.2 s of the split and as much of the document's merge, both on the audit's critical path; the fork server
    imports it once for the parts and the tests). The document is the one of the input read in one part."""
    import subprocess
    import sys

    from auditor.fast.convert import convert_file

    paths = []
    for p in months:
        dst = tmp_path / (p.stem + ".parquet")
        convert_file(str(p), str(dst))
        paths.append(str(dst))
    code = ("import io, sys\n"
            "from auditor.audit import audit_input\n"
            f"r = audit_input({paths!r}, part_deals=500, isolate=True)\n"
            "buf = io.BytesIO()\n"
            "r.write_json(buf)\n"
            "r.close()\n"
            "sys.stdout.buffer.write(buf.getvalue())\n"
            "sys.stderr.write('pandas' if 'pandas' in sys.modules else 'no pandas')\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stderr.decode().endswith("no pandas")
    assert got.stdout == audit(replay_for_audit(paths)).json_bytes()


def test_a_part_reads_its_rows_of_several_files_as_one_chunk(months, tmp_path):
    """A part's batch of spilled rows is one chunk whichever files its rows come from (`Chunk.fis`; issue 15, a
    twenty-eighth session: cut file by file, a dataset of many small files made as many small chunks): every row
    keeps its own file index and path:line source."""
    from auditor.fast.cols import Registry
    from auditor.parts import _PartSource, split_input

    paths = [str(p) for p in months]
    parts = split_input(paths, str(tmp_path / "w"), 500)
    spanning = 0
    lines = {fi: len(Path(p).read_bytes().splitlines()) for fi, p in enumerate(paths)}
    for k in range(len(parts)):
        for ch in _PartSource(parts, k)(paths, Registry()):
            fis = ch.file_indices()
            spanning += len(set(fis.tolist())) > 1
            assert (ch.fis is None) == (len(set(fis.tolist())) == 1)
            for i in range(ch.n):
                assert ch.source(i) == f"{paths[int(fis[i])]}:{int(ch.line[i])}"
                assert 1 <= ch.line[i] <= lines[int(fis[i])]
    parts.cleanup()
    assert spanning  # the two months' rows of a table met in one batch


def test_dask_local_cluster_gives_the_same_bytes(months, whole):
    pytest.importorskip("distributed")
    paths = [str(p) for p in months]
    assert _doc(audit_input(paths, part_deals=500, dask="local:2")) == whole


def test_dask_parts_in_fresh_processes_of_the_workers_give_the_same_bytes(months, whole):
    """`--dask local:N` with parts large enough to be isolated (forced here): each part runs in a fresh process of
    its worker's own fork server (the LocalCluster's workers are started as no daemons, so they may start
    processes), and the document does not change."""
    pytest.importorskip("distributed")
    paths = [str(p) for p in months]
    assert _doc(audit_input(paths, part_deals=500, dask="local:2", isolate=True)) == whole


def test_a_dask_part_runs_in_a_fresh_process_only_where_the_worker_may_start_one(months, tmp_path, monkeypatch):
    """The worker's side of the choice (`_numbered_part_task`): an isolated part goes to `call_in_fresh_process`
    unless the worker is a daemon (a room's cluster left at `distributed.worker.daemon: true`), where it runs in
    the worker itself; a part not isolated always runs in the worker. The result is the part's either way."""
    import multiprocessing as mp

    import auditor.audit as A
    from auditor.parts import split_input

    parts = split_input([str(p) for p in months], str(tmp_path), 500)
    assert len(parts) >= 2
    task = (parts, 1, 0.05, A.DEFAULT_SEED, 1)
    fresh: list[str] = []
    real = A.call_in_fresh_process
    monkeypatch.setattr(A, "call_in_fresh_process",
                        lambda ctx, fn, args, path, name: fresh.append(name) or real(ctx, fn, args, path, name))
    k, (rep, counts) = A._numbered_part_task((1, task, True))
    assert k == 1 and fresh == [f"part 2 of {len(parts)}"]
    k, (rep_here, counts_here) = A._numbered_part_task((1, task, False))
    assert len(fresh) == 1
    assert rep.deals == rep_here.deals > 0
    assert pickle_bytes(counts.by_test["dealer_jack"]) == pickle_bytes(counts_here.by_test["dealer_jack"])
    monkeypatch.setattr(mp.current_process(), "daemon", True)
    A._numbered_part_task((1, task, True))
    assert len(fresh) == 1  # a daemon may not start processes: the part ran here


def pickle_bytes(x) -> bytes:
    import pickle

    return pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)


def test_more_workers_run_the_tests_in_more_pieces_with_the_same_bytes(months, whole, monkeypatch):
    """`--workers N` is the tests' width too, not only the parts': the detectors tested in groups of subjects run
    in N pieces (here 3, beyond the default of 2), and the document does not change."""
    import auditor.audit as A

    monkeypatch.setattr(A, "PARALLEL_MIN_DEALS", 0)
    sent: list[str] = []
    real = A._only
    monkeypatch.setattr(A, "_only", lambda counts, name: sent.append(name) or real(counts, name))
    paths = [str(p) for p in months]
    assert _doc(audit_input(paths, part_deals=500, workers=3)) == whole
    names = [d.name for d in A.make_detectors()]
    assert sorted(sent) == sorted(names + ["collusion", "dealer_cutter"] * 2)


def _on_cluster(months, whole, monkeypatch, workers: int, threads: int = 1) -> list[str]:
    """The months audited in parts on a LocalCluster of `workers` processes of `threads` threads, this machine's
    `tests_at_once()` set to two: asserts the document of the whole, returns the keys of the tasks the cluster
    ran."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster, get_task_stream

    import auditor.audit as A

    monkeypatch.setattr(A, "PARALLEL_MIN_DEALS", 0)
    monkeypatch.setattr(A, "tests_at_once", lambda: 2)
    paths = [str(p) for p in months]
    with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        with get_task_stream(client) as stream:
            assert _doc(audit_input(paths, part_deals=500, dask=cluster.scheduler_address)) == whole
    ran = [str(t["key"]) for t in stream.data]
    assert sum("_numbered_part_task" in k for k in ran) >= 2  # the parts ran there
    return ran


def test_tests_run_on_the_dask_cluster_with_the_same_bytes(months, whole, monkeypatch):
    """With `--dask` on a cluster wider than this machine's default (three workers against two processes), the
    detectors' tests run on the cluster's workers as the parts did (the scheduler saw `_finalize_task` tasks, one
    per detector and two more per detector cut in three pieces), and the document does not change."""
    ran = _on_cluster(months, whole, monkeypatch, workers=3)
    n_dets = len(make_detectors())
    assert sum("_finalize_task" in k for k in ran) == n_dets + 4  # collusion and dealer_cutter in three pieces


def test_a_cluster_no_wider_than_this_machine_leaves_the_tests_here(months, whole, monkeypatch):
    """`--dask local:2` on a machine whose default is two test processes: the parts run on the cluster, the tests
    in fresh processes here (a long-lived Dask worker ran them about 30% slower at 10M deals)."""
    ran = _on_cluster(months, whole, monkeypatch, workers=2)
    assert not any("_finalize_task" in k for k in ran)


def test_a_dask_worker_of_several_threads_gives_the_same_bytes(months, whole, monkeypatch):
    """A room's Dask workers may run several tasks at once in threads of one process: parts counted, then
    detectors tested, side by side in one worker must not read each other's counts (the audit's tasks set no
    global that another thread could overwrite). One worker of three threads: wider than the default two, so the
    tests run there too."""
    ran = _on_cluster(months, whole, monkeypatch, workers=1, threads=3)
    assert any("_finalize_task" in k for k in ran)


def test_saved_counts_plus_new_logs_equal_the_audit_of_all_logs(months, whole, tmp_path):
    m1, m2 = months
    saved = tmp_path / "m1.counts"
    first = audit_input([str(m1)], part_deals=500, save_counts=str(saved))
    alone = _doc(first)
    assert json.loads(alone)["deals"] < json.loads(whole)["deals"]
    assert _doc(audit_input([str(m2)], add_counts=[str(saved)])) == whole
    # the saved counts alone re-audited with nothing new: the first month's audit
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    again = json.loads(_doc(audit_input([str(empty)], add_counts=[str(saved)])))
    assert again["tests"] == json.loads(alone)["tests"]


def test_parts_folded_in_place_are_the_merge_of_all_parts(months, tmp_path):
    """The audit folds each part into the running total (`fold_counts`: `merge_into` where a detector has it, in
    place); the counts are those of one merge of all the parts, every detector's, byte for byte as saved."""
    from auditor.audit import fold_counts, merge_counts, run_parts
    from auditor.parts import split_input

    dets = make_detectors(fdr=0.05)
    parts = split_input([str(p) for p in months], str(tmp_path / "wd"), 300)
    got = [c for _, c in run_parts(parts, 0.05, 0)]
    assert len(got) >= 4
    assert {d.name for d in dets if hasattr(d, "merge_into")} >= {"dealer_jack", "dealer_cutter", "collusion"}
    whole = merge_counts(got, dets)
    total = merge_counts(got[:2], dets)
    for c in got[2:]:
        total = fold_counts(total, c, dets)
    assert total.deals_audited == whole.deals_audited and total.tables == whole.tables
    save_counts(tmp_path / "a.counts", whole.by_test)
    save_counts(tmp_path / "b.counts", total.by_test)
    assert (tmp_path / "a.counts").read_bytes() == (tmp_path / "b.counts").read_bytes()
    parts.cleanup()


def test_counts_spilled_part_by_part_fold_to_the_counts_held_in_memory(months, tmp_path):
    """`SpilledCounts`: a detector's parts written one file per part and folded back where its tests run are the
    counts the in-memory fold makes, byte for byte as saved; marked_ten (which spills its own rows) stays in
    memory."""
    from auditor.audit import SpilledCounts, fold_counts, merge_counts, run_parts, spill_part, spills
    from auditor.parts import split_input

    dets = make_detectors(fdr=0.05)
    assert [d.name for d in dets if not spills(d)] == ["marked_ten"]
    parts = split_input([str(p) for p in months], str(tmp_path / "wd"), 300)
    got = [c for _, c in run_parts(parts, 0.05, 0)]
    total = merge_counts(got[:2], dets)
    for c in got[2:]:
        total = fold_counts(total, c, dets)
    saved_first = merge_counts(got[:1], dets)  # as added counts: the first part's, not merged
    for d in dets:
        if not spills(d):
            continue
        paths = tuple(spill_part(c.by_test[d.name], str(tmp_path / f"{k}.{d.name}")) for k, c in enumerate(got))
        for folded in (SpilledCounts(d.name, paths).fold(d),
                       SpilledCounts(d.name, paths[1:], saved_first.by_test[d.name], False).fold(d)):
            save_counts(tmp_path / "a.counts", {d.name: total.by_test[d.name]})
            save_counts(tmp_path / "b.counts", {d.name: folded})
            assert (tmp_path / "a.counts").read_bytes() == (tmp_path / "b.counts").read_bytes(), d.name
    assert SpilledCounts("collusion", ()).fold(dets[[d.name for d in dets].index("collusion")]).deals == 0
    parts.cleanup()


def test_counts_spilled_in_groups_fold_whole_to_the_counts_held_in_memory(months, tmp_path):
    """The two detectors spilled in groups of subjects: their `fold` (`--save-counts`) folds each group and joins
    them (`join_shards`, in the merged context's order), and gives the in-memory fold byte for byte as saved, with
    and without added counts first, in 4 groups and in 16; a group's pair missing from the context is refused."""
    from auditor.audit import SpilledCounts, fold_counts, merge_counts, run_parts, shards, spill_shards
    from auditor.parts import split_input

    dets = make_detectors(fdr=0.05)
    parts = split_input([str(p) for p in months], str(tmp_path / "wd"), 300)
    got = [c for _, c in run_parts(parts, 0.05, 0)]
    assert len(got) >= 3
    total = merge_counts(got[:2], dets)
    for c in got[2:]:
        total = fold_counts(total, c, dets)
    grouped = [d for d in dets if shards(d) > 1]
    assert {d.name for d in grouped} == {"collusion", "dealer_cutter"}
    for d in grouped:
        save_counts(tmp_path / "a.counts", {d.name: total.by_test[d.name]})
        for n in (4, 16):
            stems = tuple(spill_shards(d, c.by_test[d.name], str(tmp_path / f"{k}.{d.name}.{n}"), n)
                          for k, c in enumerate(got))
            first = spill_shards(d, merge_counts(got[:1], dets).by_test[d.name], str(tmp_path / f"first.{d.name}.{n}"),
                                 n)
            for sp in (SpilledCounts(d.name, stems, shards=n),
                       SpilledCounts(d.name, stems[1:], None, False, n, first)):
                save_counts(tmp_path / "b.counts", {d.name: sp.fold(d)})
                assert (tmp_path / "a.counts").read_bytes() == (tmp_path / "b.counts").read_bytes(), (d.name, n)
        sp = SpilledCounts(d.name, stems, shards=16)
        groups = [sp.fold_shard(d, j) for j in range(16)]
        context = sp.context(d)
        first_key = next(iter(context))
        for key in [k for k in context if k[0] == first_key[0]]:  # a dealer's pairs, a giver's pairs
            context.pop(key)
        with pytest.raises(ValueError, match="the context does not"):
            d.join_shards(groups, context)
    parts.cleanup()


def test_added_counts_with_parts_spilled_give_the_same_document(months, whole, tmp_path):
    """Saved counts added to new logs in several parts (the detectors' counts spilled, `SpilledCounts.first` the
    saved ones): the whole audit; and twice-added counts (merged before the parts) the same document whether the
    counts are saved too or not (`--save-counts`, which folds them once for the file, group by group and joined,
    and again for the tests: the first fold leaves the added counts as they were)."""
    m1, m2 = months
    saved = tmp_path / "m1.counts"
    audit_input([str(m1)], save_counts=str(saved)).close()
    assert _doc(audit_input([str(m2)], add_counts=[str(saved)], part_deals=500)) == whole
    twice = [str(saved), str(saved)]
    spilled = _doc(audit_input([str(m2)], add_counts=twice, part_deals=500))
    saved_too = _doc(audit_input([str(m2)], add_counts=twice, part_deals=500, save_counts=str(tmp_path / "x")))
    assert spilled == saved_too and spilled != whole


def test_one_added_counts_file_is_spilled_as_it_is_read(months, whole, tmp_path, monkeypatch):
    """With one counts file added and parts (issue 15: the 10M bench's counts, read whole before any was spilled,
    peaked at 3.5 GB), each detector spilled in groups of subjects is written out as soon as the file's reader
    has it, before the next detector is read, and the document is the whole audit's."""
    import auditor.audit as A
    import auditor.countfile as C

    m1, m2 = months
    saved = tmp_path / "m1.counts"
    audit_input([str(m1)], save_counts=str(saved)).close()
    events: list[str] = []
    real_spill, real_node = A.spill_shards, C._Reader.node

    def spill(det, counts, stem, n):  # noqa: ANN001, ANN202
        events.append(f"spill {stem.rsplit('/', 1)[-1]}")
        return real_spill(det, counts, stem, n)

    def node(self):  # noqa: ANN001, ANN202
        got = real_node(self)
        if isinstance(got, dict) and "collusion" in got:
            events.append("tree read")  # never: the root is read by `root`, a detector at a time
        return got

    read: list[str] = []
    real_root = C._Reader.root

    def root(self, each):  # noqa: ANN001, ANN202
        def seen(name, value):  # noqa: ANN001, ANN202
            read.append(name)
            events.append(f"read {name}")
            return each(name, value)
        return real_root(self, seen)

    monkeypatch.setattr(A, "spill_shards", spill)
    monkeypatch.setattr(C._Reader, "node", node)
    monkeypatch.setattr(C._Reader, "root", root)
    assert _doc(audit_input([str(m2)], add_counts=[str(saved)], part_deals=500)) == whole
    grouped = [d.name for d in make_detectors() if getattr(d, "SHARDS", 1) > 1]
    assert grouped and "tree read" not in events
    for name in grouped:  # spilled right after it was read, before the next detector was read
        i = events.index(f"read {name}")
        assert events[i + 1] == f"spill first.{name}", events[i:i + 3]
    assert read == [d.name for d in make_detectors() if d.name in read] and len(read) == len(make_detectors())


def test_saved_marked_ten_parts_come_back_memory_mapped_and_equal(months, tmp_path):
    """`--add-counts` reads marked_ten's saved decision rows (the count that grows with deals) as memory-mapped
    files in the audit's working folder, not into memory (issue 15); they are the saved arrays exactly."""
    from auditor.detectors.marked_ten import MarkedTenParts, StrColumn, _file_of

    m1, _ = months
    saved = tmp_path / "m1.counts"
    _doc(audit_input([str(m1)], part_deals=500, save_counts=str(saved)))
    plain, _, _ = load_counts(saved)
    mapped, _, _ = load_counts(saved, spill_dir=str(tmp_path / "spill"))
    mt, mt_plain = mapped["marked_ten"], plain["marked_ten"]
    assert isinstance(mt, MarkedTenParts) and len(mt.parts) > 1
    n_mapped = 0
    for part, ref in zip(mt.parts, mt_plain.parts, strict=True):
        for f in dataclasses.fields(part):
            a, b = getattr(part, f.name), getattr(ref, f.name)
            arrays = [(a.data, b.data), (a.off, b.off)] if isinstance(a, StrColumn) else [(a, b)]
            for x, y in arrays:
                if isinstance(x, np.ndarray) and x.size:
                    assert _file_of(x) is not None and not x.flags.writeable
                    assert x.dtype == y.dtype and np.array_equal(x, y)
                    n_mapped += 1
    assert n_mapped > 10
    # the other detectors' counts are in memory as before
    assert all(_file_of(t.p) is None for d in mapped["dealer_jack"].values() for t in d.values())


def test_counts_of_other_settings_are_refused(months, tmp_path):
    m1, _ = months
    saved = tmp_path / "m1.counts"
    _doc(audit_input([str(m1)], save_counts=str(saved)))
    counts, meta, blobs = load_counts(saved)
    fp = meta["fingerprint"]
    assert fp == json.loads(json.dumps(fingerprint(make_detectors(fdr=0.05))))
    # counted by an audit with another share of the budget: refused, the message says what differs
    fp["tests"]["dealer_jack"]["share"] = 0.5
    other = tmp_path / "other.counts"
    save_counts(other, counts, dict(meta, fingerprint=fp), blobs)
    with pytest.raises(CountsFileError, match="dealer_jack"):
        audit_input([str(m1)], add_counts=[str(other)])
    # not a counts file at all
    with pytest.raises(CountsFileError):
        audit_input([str(m1)], add_counts=[str(m1)])


def test_cli_add_counts_refusal_is_one_line(months, tmp_path):
    from typer.testing import CliRunner

    from auditor.cli import app

    m1, _ = months
    res = CliRunner().invoke(app, ["audit", "--json", "--add-counts", str(m1), str(m1)])
    assert res.exit_code == 2
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("auditor:") and "Traceback" not in res.output


def test_streamed_document_equals_the_plain_dump_of_the_whole(months, whole):
    """The writer splices the findings, the games and the tests in one at a time (issue 15): its bytes are those of
    the one-piece dump of the whole document."""
    from auditor.replay.result import dump_document

    report = audit(replay_for_audit([str(p) for p in months]))
    doc = report.to_json()
    assert len(doc["tests"]) > 100 and doc["replay"]["findings"]
    assert dump_document(doc) == whole


def test_tests_details_are_packed_and_read_back_as_they_were(months, whole):
    """The tests' controls and details are held packed (issue 15: some 2 GB of Python objects at 10M deals), read
    back on access; the document written from tests made one at a time (`held=False`) is the same bytes, and a
    packed detail equals, pickles and reads like the dict it packs."""
    import pickle

    from auditor.replay.result import DocEntries
    from auditor.stats.family import Packed, packed

    report = audit(replay_for_audit([str(p) for p in months]))
    kinds = {type(t.detail) for t in report.tests} | {type(t.controls) for t in report.tests}
    assert Packed in kinds
    with_timeline = next(t for t in report.tests if isinstance(t.detail, Packed) and "timeline" in t.detail)
    plain = with_timeline.detail.decoded()
    assert with_timeline.detail == plain and plain == with_timeline.detail
    assert dict(with_timeline.detail) == plain and len(with_timeline.detail) == len(plain)
    assert pickle.loads(pickle.dumps(with_timeline)) == with_timeline
    held = [t.detail for t in report.tests if isinstance(t.detail, Packed)]
    assert sum(len(d.blob) for d in held) < sum(len(json.dumps(d.decoded())) for d in held) / 2
    lazy = report.to_json(games=False, held=False)
    assert isinstance(lazy["tests"], DocEntries) and len(lazy["tests"]) == len(report.tests)
    assert report.json_bytes(lazy) == whole
    # what compact JSON cannot hold stays a dict; nothing is packed for nothing
    assert not isinstance(packed({"n": 2**70}), Packed) and packed({"n": 2**70}) == {"n": 2**70}
    assert packed({}) == {} and not isinstance(packed({}), Packed)
    assert packed({"x": float("nan"), "y": (1, 2)}) == {"x": None, "y": [1, 2]}


def test_detectors_tested_in_groups_of_subjects_give_the_tests_of_the_whole(months, tmp_path):
    """A detector spilled in groups of subjects (`SHARDS`: collusion by giver, dealer_cutter by dealer) and tested
    one group at a time with the whole input's context gives the tests its `results` gives over the whole counts,
    byte for byte as JSON, in any number of groups and with saved counts first (issue 15: the finalize worker holds
    one group's counts)."""
    from auditor.audit import SpilledCounts, _sharded_results, detector_rng, merge_counts, run_parts, shards, \
        spill_shards
    from auditor.parts import split_input

    dets = make_detectors(fdr=0.05)
    assert {d.name for d in dets if shards(d) > 1} == {"collusion", "dealer_cutter"}
    parts = split_input([str(p) for p in months], str(tmp_path / "wd"), 300)
    got = [c for _, c in run_parts(parts, 0.05, 0)]
    assert len(got) >= 4
    total = merge_counts(got, dets)
    saved_first = merge_counts(got[:1], dets)

    def as_json(tests) -> list[bytes]:  # noqa: ANN001
        return sorted(orjson.dumps(t.to_json(), option=orjson.OPT_SORT_KEYS) for t in tests)

    cutter = next(d for d in dets if d.name == "dealer_cutter")
    sizes = sorted(len(t) for cs in total.by_test["dealer_cutter"].values() for t in cs.values())
    cutter.min_deals = sizes[len(sizes) // 2]  # the season is short: half the pairs tested (the family's size is
    # the whole input's number of pairs over min_deals, from the context)
    for d in dets:
        if shards(d) < 2:
            continue
        want = as_json(d.results(total.by_test[d.name], detector_rng(0, d.name)))
        assert len(want) > 10, d.name
        for n in (2, 5):
            stems = tuple(spill_shards(d, c.by_test[d.name], str(tmp_path / f"{k}.{d.name}.{n}"), n)
                          for k, c in enumerate(got))
            first = spill_shards(d, saved_first.by_test[d.name], str(tmp_path / f"first.{d.name}.{n}"), n)
            for sp in (SpilledCounts(d.name, stems, shards=n),
                       SpilledCounts(d.name, stems[1:], None, False, n, first)):
                per_group = [list(d.results(sp.fold_shard(d, j), detector_rng(0, d.name), context=sp.context(d)))
                             for j in range(n)]
                assert sum(1 for g in per_group if g) >= 2, (d.name, n)  # the subjects are spread over groups
                assert as_json(t for g in per_group for t in g) == want, (d.name, n)
                assert as_json(_sharded_results(d, sp, detector_rng(0, d.name))) == want
                # in pieces, each its share of the groups, with a generator of its own (the audit runs the pieces
                # in two processes): the tests draw nothing from it, so the pieces give the tests of the whole
                split = [t for k, (lo, hi) in enumerate(((0, n // 2), (n // 2, n)))
                         for t in _sharded_results(d, sp, detector_rng(k + 7, d.name), lo, hi)]
                assert as_json(split) == want
    parts.cleanup()


def test_a_part_writes_its_spilled_counts_itself(months, tmp_path):
    """`Parts.count_spill` (issue 15, a tenth session): the part's process writes the counts the audit holds out of
    memory, the very files the audit's process would write from the counts sent back (the same bytes), and sends
    back their paths (`PartSpill`) instead: a detector spilled in groups as its groups and their context, the
    others whole."""
    import os
    import pickle

    from auditor.audit import PartSpill, _part_task, shards, spills
    from auditor.parts import split_input

    dets = make_detectors(fdr=0.05)
    parts = split_input([str(p) for p in months], str(tmp_path / "wd"), 500)
    assert len(parts) >= 2
    _, held = _part_task((parts, 1, 0.05, 0, None))
    plan = {d.name: shards(d) for d in dets if spills(d)}
    assert any(n > 1 for n in plan.values()) and any(n == 1 for n in plan.values())
    parts.count_spill = plan
    os.makedirs(os.path.join(parts.workdir, "counts"))
    _, sent = _part_task((parts, 1, 0.05, 0, None))
    assert set(sent.by_test) == set(held.by_test)
    for d in dets:
        got = sent.by_test[d.name]
        if d.name not in plan:
            assert not isinstance(got, PartSpill)  # marked_ten: its own rows spilled as it counts
            continue
        assert isinstance(got, PartSpill)
        stem = os.path.join(parts.workdir, "counts", f"1.{d.name}")
        n = plan[d.name]
        if n > 1:
            assert got.path == stem
            want = [d.shard_context(held.by_test[d.name])] + list(d.shard(held.by_test[d.name], n))
            files = [f"{stem}.ctx"] + [f"{stem}.{j}" for j in range(n)]
            assert not os.path.exists(f"{stem}.pickle"), d.name
        else:
            assert got.path == f"{stem}.pickle"
            want, files = [held.by_test[d.name]], [got.path]
        for w, f in zip(want, files, strict=True):
            with open(f, "rb") as fh:
                assert fh.read() == pickle.dumps(w, protocol=pickle.HIGHEST_PROTOCOL), (d.name, f)
    parts.cleanup()


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> Path:
    """The demo season three times, each copy's tables, game ids and players renamed (`c0.` ...): three clubs
    whose members' statistics are equal but for the last bits of sums over parts (the 10M bench's build)."""
    p = tmp_path_factory.mktemp("copies") / "x3.jsonl"
    lines = []
    for k in range(3):
        pre = f"c{k}."
        for line in gzip.open(DEMO):
            r = json.loads(line)
            r["table"], r["game_id"] = pre + r["table"], pre + r["game_id"]
            r["players"] = [pre + x for x in r["players"]]
            lines.append(json.dumps(r) + "\n")
    p.write_text("".join(lines))
    return p


def test_equal_members_give_the_same_document_whatever_the_parts(copies):
    """Ranks and orders are decided on values to RANK_DIGITS digits (`stats.family.rank_value`, issue 15, a tenth
    session): with members whose data are equal, the order of their flags and their field percentiles
    (marked_ten) changed with `--part-deals`, the last bits of sums over the parts breaking their ties."""
    docs = [_doc(audit_input([str(copies)], part_deals=pd)) for pd in (30_000, 5_000)]
    assert docs[0] == docs[1]
    doc = json.loads(docs[0])
    zs = {t["subject"]: t["statistic"] for t in doc["tests"] if t["test"] == "marked_ten"}
    assert sum(zs.get(f"c1.{s[3:]}") == z for s, z in zs.items() if s.startswith("c0.")) >= 5  # copies tie
    flagged = [(f["test"], f["subject"], f["pvalue"]) for f in doc["flags"]]
    pairs = [(a, b) for a, b in zip(flagged[:-1], flagged[1:], strict=True) if a[0] == b[0] and a[2] == b[2]]
    assert pairs and all(a[1] < b[1] for a, b in pairs)  # equal flags of a test in name order


@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_saved_replay_head_streams_the_bytes_of_its_json(n):
    """`--save-counts` writes the replay's head (deals, games, stats, findings) a finding at a time
    (`_replay_head`): the bytes of `orjson.dumps` of the whole head, its announced size theirs."""
    import orjson

    from auditor.audit import _replay_head
    from auditor.findings import Finding
    from auditor.replay.result import Replay

    fs = [Finding(code="revoke", game_id=f"g{i}", deal_no=i, trick=2, seat=0, player='a"\u00e9', card="Tc",
                  source=f"x:{i}", message="m\n") for i in range(n)]
    r = Replay(deals=5, games=2, findings=fs, games_summary=[], stats={"a": [1, 2.5], "b": None})
    head = _replay_head(r)
    got = b"".join(head.pieces())
    assert got == orjson.dumps({"deals": 5, "games": 2, "stats": r.stats, "findings": [f.to_json() for f in fs]})
    assert head.size == len(got)


def test_chained_findings_write_the_bytes_of_one_list(months, tmp_path, monkeypatch):
    """`ChainedFindings` (saved findings, then this input's) is written into the documents a block at a time, and
    the bytes are those of the one list (issue 15): held lists of findings, cut into blocks at every place, and a
    held list followed by a large input's streamed findings (`MergedFindings` of its parts)."""
    import auditor.audit as A
    from auditor.parts import split_input
    from auditor.replay.result import Replay

    m1, m2 = months
    parts = split_input([str(m2)], str(tmp_path / "w"), 500)
    assert len(parts) > 1
    saved = replay_for_audit([str(m1)])
    streamed = A.merge_replays([A.replay_part(parts, k) for k in range(len(parts))])
    plain = replay_for_audit([str(m2)])
    held, new = list(saved.findings), list(plain.findings)
    assert len(held) > 5 and len(new) > 5 and hasattr(streamed.findings, "json_pieces")

    def doc(findings) -> bytes:  # noqa: ANN001
        return Replay(deals=1, games=0, findings=findings, games_summary=[]).to_json_bytes()

    want = doc(held + new)
    for block in (1, 2, 3, len(held), 10_000):
        monkeypatch.setattr(A, "FINDINGS_BLOCK", block)
        assert doc(A.ChainedFindings([held, [], new])) == want
    assert doc(A.ChainedFindings([held, streamed.findings])) == want
    assert doc(A.ChainedFindings([[], held])) == doc(held)
    assert list(A.ChainedFindings([held, new])[2:7]) == (held + new)[2:7]
    assert len(A.ChainedFindings([held, new])) == len(held) + len(new)
    parts.cleanup()


def test_saved_games_written_in_small_pieces_give_the_same_document(months, whole, tmp_path, monkeypatch):
    """A saved audit's games summary goes into the document in pieces cut anywhere (`SavedGames.json_pieces`,
    GAMES_PIECE bytes: issue 15, not re-indented whole), and into a counts file saved again the same way: the
    document is the whole audit's, and the games saved again read back in as many pieces."""
    import auditor.audit as A

    m1, m2 = months
    saved = tmp_path / "m1.counts"
    audit_input([str(m1)], save_counts=str(saved)).close()
    monkeypatch.setattr(A, "GAMES_PIECE", 7)
    again = tmp_path / "again.counts"
    assert _doc(audit_input([str(m2)], add_counts=[str(saved)], save_counts=str(again))) == whole
    games = A.load_saved(str(again), fingerprint(make_detectors()))[0].games_summary
    assert len(list(games.json_pieces())) > 100


def test_saved_games_and_head_read_into_files_give_the_same_document(months, whole, tmp_path, monkeypatch):
    """Added counts whose replay head and games summary are long blobs (`countfile.BLOB_SPILL`) come back as files of
    the audit's working folder, read a piece at a time into the document (issue 15: the 10M bench's 0.7 GB of
    saved games were held whole, twice, when its counts were added): the document is the whole audit's, with the
    counts saved again from them too."""
    import auditor.audit as A
    import auditor.countfile as cf

    m1, m2 = months
    monkeypatch.setattr(cf, "PIECE", 1000)
    monkeypatch.setattr(cf, "BLOB_SPILL", 1)  # every blob of two rows or more
    monkeypatch.setattr(A, "GAMES_PIECE", 777)
    saved = tmp_path / "m1.counts"
    audit_input([str(m1)], save_counts=str(saved)).close()
    replay, _ = A.load_saved(str(saved), fingerprint(make_detectors()), spill_dir=str(tmp_path / "spill"))
    assert isinstance(replay.games_summary.entries, cf.BlobFile)
    assert b"".join(replay.games_summary.json_pieces()) == replay.games_summary.entries.read()
    again = tmp_path / "again.counts"
    assert _doc(audit_input([str(m2)], add_counts=[str(saved)], save_counts=str(again))) == whole
    assert _doc(audit_input([], add_counts=[str(again)])) == whole
