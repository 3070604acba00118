"""Issue 12, hostile input to the readers: bounded memory on any input (the record-size limit, gzip bombs), a record
that cannot kill the parallel reader, any number of tricks, FIFOs, devices and symlink loops refused at once, a
damaged gzip keeps every line before the damage, and Parquet tables of records written by pandas or pyarrow.

Every case is checked with both engines: the batch reader (`auditor.fast.pipeline`) and the reference reader
(`auditor.dealog.read_records`) must give the same document."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib

import pytest
from typer.testing import CliRunner

from auditor import dealog
from auditor.cli import app
from auditor.dealog import LongLine, open_lines, read_records
from auditor.fast import read
from auditor.fast.pipeline import replay_paths
from auditor.replay.run import replay_records
from conftest import REPLAY_FIXTURES, ROOT

EXAMPLES = ROOT / "fixtures" / "examples.jsonl"
PY = sys.executable


@pytest.fixture(autouse=True)
def _default_limit():
    """The CLI sets the record-size limit for the process: put it back after each test."""
    yield
    dealog.set_max_record_bytes(1 << 20)


def _recs():
    return [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]


def _lines():
    return [x for x in EXAMPLES.read_bytes().splitlines() if x.strip()]


def _norm(doc: dict, *paths) -> dict:
    text = json.dumps(doc)
    for p in paths:
        text = text.replace(str(p), "LOG")
    return json.loads(text)


def both(*paths) -> dict:
    """The document of the batch reader, checked equal to the reference reader's."""
    batch = replay_paths([str(p) for p in paths]).to_json()
    ref = replay_records(read_records([str(p) for p in paths]), "reference").to_json()
    assert batch == ref
    return batch


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _bad(doc):
    return [f for f in doc["findings"] if f["code"] == "bad_record"]


# ---------------------------------------------------------------- the record-size limit


def test_a_line_past_the_limit_is_one_bad_record_and_the_others_are_read(tmp_path):
    good = _lines()
    p = tmp_path / "long.jsonl"
    p.write_bytes(good[0] + b"\n" + b'{"format":"' + b"x" * (3 << 20) + b'"}\n' + b"\n".join(good[1:]) + b"\n")
    doc = both(p)
    assert doc["deals"] == len(good) + 1
    bad = _bad(doc)
    assert len(bad) == 1 and bad[0]["source"] == f"{p}:2"
    assert "longer than the record-size limit" in bad[0]["message"] and str((3 << 20) + 13) in bad[0]["message"]
    assert doc["games"] == 5


def test_a_file_of_zeros_without_a_newline_is_one_bad_record(tmp_path):
    p = tmp_path / "zeros.jsonl"
    with open(p, "wb") as f:
        f.truncate(5 << 20)  # sparse: 5 MB of zero bytes, no newline
    doc = both(p)
    assert doc["deals"] == 1 and len(_bad(doc)) == 1 and _bad(doc)[0]["source"] == f"{p}:1"
    assert f"line of {5 << 20} bytes" in _bad(doc)[0]["message"]


@pytest.mark.parametrize("limit", [1, 60, 1000, 5000])
def test_the_limit_is_exact_and_lines_are_not_cut(tmp_path, limit):
    """Lines of length limit - 1, limit and limit + 1 (without the newline), plain and gzip, in blocks that do and
    do not align with the line ends: exactly the longer ones are LongLines, the others come through whole."""
    lines = [b"a" * n for n in (limit - 1, limit, limit + 1, 3 * limit + 7, 0, limit)] * 3
    data = b"\n".join(lines)  # the last line has no newline
    for name, raw in (("p.jsonl", data), ("g.jsonl.gz", gzip.compress(data))):
        p = tmp_path / name
        p.write_bytes(raw)
        got = list(open_lines(str(p), max_bytes=limit))
        assert len(got) == len(lines)
        for want, item in zip(lines, got, strict=False):
            if len(want) > limit:
                assert isinstance(item, LongLine) and item.size == len(want)
            else:
                assert item.rstrip(b"\n") == want


def test_max_record_bytes_option(tmp_path):
    sizes = sorted(len(x) for x in _lines())
    limit = sizes[len(sizes) // 2]
    out = run("replay", EXAMPLES, "--json", "--max-record-bytes", limit)
    doc = json.loads(out.stdout)
    assert out.exit_code == 1 and doc["deals"] == len(_lines())
    assert [f["source"] for f in _bad(doc)] == [f"{EXAMPLES}:{i}" for i, x in enumerate(_lines(), 1)
                                                if len(x) > limit]
    assert all(f"longer than the record-size limit ({limit} bytes" in f["message"] for f in _bad(doc))
    for engine in ("batch", "reference"):
        out = run("replay", EXAMPLES, "--json", "--engine", engine, "--max-record-bytes", 1 << 20)
        assert out.exit_code == 0
    assert run("replay", EXAMPLES, "--max-record-bytes", 0).exit_code == 2
    assert run("audit", EXAMPLES, "--json", "--max-record-bytes", 0).exit_code == 2


# ---------------------------------------------------------------- gzip bombs and damage


def _peak_rss_mb(code: str) -> float:
    """Peak resident memory (MB) of a fresh interpreter running `code`."""
    prog = code + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run([PY, "-c", prog], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.split()[-1]) / 1024


def test_gzip_bomb_is_read_in_bounded_memory(tmp_path):
    """A 200 KB gzip that inflates to 200 MB of one line: one bad_record, in little memory, with both readers."""
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(_lines()[0] + b"\n")
        block = b"\0" * (1 << 20)
        for _ in range(200):
            f.write(block)
    assert bomb.stat().st_size < 1 << 20
    doc = both(bomb)
    assert doc["deals"] == 2 and len(_bad(doc)) == 1 and _bad(doc)[0]["source"] == f"{bomb}:2"
    base = _peak_rss_mb(f"from auditor.fast.pipeline import replay_paths; replay_paths([{str(EXAMPLES)!r}])")
    for code in (f"from auditor.fast.pipeline import replay_paths; replay_paths([{str(bomb)!r}])",
                 f"from auditor.dealog import read_records; list(read_records([{str(bomb)!r}]))"):
        assert _peak_rss_mb(code) - base < 150  # the line is 200 MB: it was never held


def _inflatable(data: bytes) -> tuple[bytes, bool]:
    """Independently: what a damaged gzip inflates to before the damage, and whether zlib finds damage at all."""
    d = zlib.decompressobj(wbits=31)
    out = []
    for i in range(len(data)):
        try:
            out.append(d.decompress(data[i:i + 1]))
        except zlib.error:
            return b"".join(out), True
    return b"".join(out), not d.eof


def test_small_corrupt_gzip_keeps_every_line_before_the_damage(tmp_path):
    """A damaged gzip under 64 KB (one read block): the lines before the damage are kept, then one bad_record
    "unreadable after line N"."""
    lines = _lines() * 3
    original = b"\n".join(lines) + b"\n"
    data = gzip.compress(original)
    assert len(data) < 1 << 16
    checked = 0
    for frac in (0.3, 0.5, 0.7, 0.9):
        bad = bytearray(data)
        pos = int(len(bad) * frac)
        bad[pos] ^= 0xFF
        prefix, damaged = _inflatable(bytes(bad))
        if not damaged:
            continue
        keep = prefix.count(b"\n")  # what inflates before zlib sees the damage (may end in garbage)
        same = next((i for i, (x, y) in enumerate(zip(prefix, original, strict=False)) if x != y), len(prefix))
        intact = original[:same].count(b"\n")  # lines that inflate exactly as written
        if intact == 0:
            continue
        p = tmp_path / f"bad{frac}.jsonl.gz"
        p.write_bytes(bytes(bad))
        recs = list(read_records([str(p)]))
        assert len(recs) == keep + 1
        assert [r.deal is not None for r in recs[:intact]] == [True] * intact
        assert [r.deal.game_id for r in recs[:intact]] == [json.loads(x)["game_id"] for x in lines[:intact]]
        assert recs[-1].deal is None and recs[-1].line == keep + 1
        assert recs[-1].error.startswith(f"unreadable after line {keep}:")
        doc = both(p)
        assert doc["deals"] == keep + 1 and _bad(doc)[-1]["source"] == f"{p}:{keep + 1}"
        checked += 1
    assert checked >= 2


# ---------------------------------------------------------------- the parallel reader


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _deep_lines(tmp_path):
    """A JSONL file of good records with deeply nested values in several fields, and ~100 more good lines."""
    rec = _recs()[0]
    lines = [json.dumps(r) for r in _recs()]
    for depth in (600, 1000, 1100):
        for field in ("recorded", "options", "players", "tricks", "zzz"):
            r = dict(rec, game_id=f"deep-{depth}-{field}")
            r[field] = "@@"
            lines.append(json.dumps(r).replace('"@@"', _deep(depth)))
        r = dict(rec, game_id=f"deep-{depth}-points")
        r["recorded"] = "@@"
        lines.append(json.dumps(r).replace('"@@"', '{"points": %s}' % _deep(depth)))
    for k in range(8):
        lines += [json.dumps(dict(r, game_id=f"{r['game_id']}-{k}")) for r in _recs()]
    p = tmp_path / "deep.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_deep_records_are_bad_records_with_short_messages(tmp_path):
    p = _deep_lines(tmp_path)
    doc = both(p)
    assert doc["deals"] == len(p.read_text().splitlines())
    bad = _bad(doc)
    assert len(bad) == 3 * 5 + 1  # the deep unknown field "zzz" is valid under 1024 levels (JSON's limit here)
    assert all(len(f["message"]) < 200 for f in bad)


@pytest.mark.parametrize("break_workers", [False, True])
def test_parallel_reader_survives_deep_records(tmp_path, monkeypatch, break_workers):
    """The parallel reader (forced on a small file) gives the same document as the serial one; even when a
    worker's results cannot be sent back (here: a deep value kept in a bad record), its segment is read again."""
    p = _deep_lines(tmp_path)
    want = both(p)
    monkeypatch.setattr(read, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(read, "SEGMENT_BYTES", 4096)
    again = []
    here = read._segment_here
    monkeypatch.setattr(read, "_segment_here", lambda job, reg: again.append(job[2]) or here(job, reg))
    if break_workers:
        monkeypatch.setattr(dealog, "slim_raw", lambda obj: obj)
    assert read._parallel_ok(str(p)) and len(read._segments(str(p), 4096)) > 4
    assert replay_paths([str(p)]).to_json() == want
    assert bool(again) == break_workers  # the broken segments were read again in this process


def test_segments_cut_at_line_starts_whatever_the_line_lengths(tmp_path):
    lines = [b"x" * n for n in (10, 100000, 5, 70000, 1, 0, 3)]
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    segs = read._segments(str(p), 1000)
    data = p.read_bytes()
    assert segs[0][0] == 0 and segs[-1][1] == len(data)
    assert all(a == b for (_, a), (b, _) in zip(segs, segs[1:], strict=False))
    assert all(data[a - 1:a] == b"\n" for a, _ in segs[1:])


# ---------------------------------------------------------------- any number of tricks


@pytest.mark.parametrize("record,ntricks", [(0, 90), (0, 300), (2, 90), (2, 1000), (4, 120)])
def test_any_number_of_tricks_is_a_finding(tmp_path, record, ntricks):
    """90 or more tricks (more than 255 cards) used to overflow a uint8 count: now the deal is incomplete_play in
    both engines, the rest of the file is replayed, through JSONL and through Parquet."""
    from auditor.fast.convert import convert_file

    recs = _recs()
    r = dict(recs[record])
    r["tricks"] = (r["tricks"] * (ntricks // len(r["tricks"]) + 1))[:ntricks]
    p = tmp_path / "many.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [r] + recs) + "\n")
    doc = both(p)
    assert doc["deals"] == len(recs) + 1
    first = [f for f in doc["findings"] if f["source"] == f"{p}:1"]
    assert [f["code"] for f in first] == ["incomplete_play"] and f"{ntricks} tricks logged" in first[0]["message"]
    pq_path = tmp_path / "many.parquet"
    convert_file(str(p), str(pq_path))
    assert _norm(both(pq_path), pq_path) == _norm(doc, p)


def test_a_trick_or_hand_of_hundreds_of_cards(tmp_path):
    recs = _recs()
    r1 = dict(recs[0], tricks=[sum(recs[0]["tricks"], []) * 10] + recs[0]["tricks"][1:])
    r2 = dict(recs[0], game_id="g2", hands=[h * 20 for h in recs[0]["hands"]])
    p = tmp_path / "big.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [r1, r2] + recs) + "\n")
    doc = both(p)
    assert doc["deals"] == len(recs) + 2
    assert {f["source"] for f in doc["findings"]} >= {f"{p}:1", f"{p}:2"}


# ---------------------------------------------------------------- what is not a regular file


def _cli(*args, timeout=60):
    return subprocess.run([PY, "-m", "auditor", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("engine", ["batch", "reference"])
def test_fifo_and_device_are_refused_at_once(tmp_path, engine):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "is a FIFO (named pipe), not a log file"),
                       ("/dev/zero", "is a character device, not a log file")):
        out = _cli("replay", "--json", "--engine", engine, path)  # a hang would be the timeout
        assert out.returncode == 3 and out.stderr.strip() == f"auditor: {path}: {kind}"
        out = _cli("replay", "--json", "--engine", engine, path, EXAMPLES)
        assert out.returncode == 1 and out.stderr.strip() == f"auditor: {path}: {kind}"
        doc = json.loads(out.stdout)
        assert _bad(doc) and _bad(doc)[0]["source"] == str(path) and _bad(doc)[0]["message"] == kind
        assert doc["deals"] == len(_lines()) + 1
    pq = tmp_path / "pipe.parquet"
    os.mkfifo(pq)
    out = _cli("replay", "--json", "--engine", engine, pq, EXAMPLES)
    assert out.returncode == 1
    assert _bad(json.loads(out.stdout))[0]["message"] == "is a FIFO (named pipe), not a log file"


def test_symlink_loop_and_broken_symlink_are_named(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    os.symlink(b, a)
    os.symlink(a, b)
    os.symlink(tmp_path / "gone.jsonl", c)
    out = _cli("replay", "--json", a, c, EXAMPLES)
    assert out.returncode == 1
    assert f"auditor: {a}: symlink loop (too many levels of symbolic links)" in out.stderr.splitlines()
    assert any(line.startswith(f"auditor: {c}: broken symlink") for line in out.stderr.splitlines())
    doc = both(a, c, EXAMPLES)
    assert [f["message"].split(" (")[0] for f in _bad(doc)] == ["symlink loop", "broken symlink"]
    assert _cli("replay", a).returncode == 3


# ---------------------------------------------------------------- Parquet tables of records


def _valid_fixture_records():
    """Records of the replay fixtures that are JSON objects (bad lines cannot be a Parquet row of records)."""
    out = {}
    for path in sorted(REPLAY_FIXTURES.glob("*.jsonl")):
        objs = []
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                objs.append(json.loads(line))
            except ValueError:  # (UnicodeDecodeError too)
                break
        else:
            if objs and all(isinstance(o, dict) for o in objs):
                out[path.stem] = objs
    return out


def _pyarrow_table(recs):
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in recs for k in r))
    return pa.table({k: pa.array([r.get(k) for r in recs]) for k in keys})


def _write(recs, path, how: str) -> bool:
    """Write records as a Parquet table of records; False when the writer itself cannot (mixed types)."""
    pd = pytest.importorskip("pandas")
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if how == "pandas":
            pd.DataFrame(recs).to_parquet(path)
        elif how == "pyarrow":
            pq.write_table(_pyarrow_table(recs), path)
        else:  # "json": recorded and options as JSON text, the rest as pyarrow infers
            t = _pyarrow_table([{k: (json.dumps(v) if k in ("recorded", "options") else v) for k, v in r.items()}
                                for r in recs])
            pq.write_table(t, path)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("how", ["pandas", "pyarrow", "json"])
def test_records_table_of_the_examples_replays_as_the_jsonl(tmp_path, how):
    pytest.importorskip("pyarrow")
    p = tmp_path / "ex.parquet"
    assert _write(_recs(), p, how)
    doc = both(p)
    assert doc["deals"] == 15 and doc["games"] == 5
    assert _norm(doc, p) == _norm(both(EXAMPLES), EXAMPLES)


@pytest.mark.parametrize("how", ["pandas", "pyarrow"])
def test_records_tables_of_the_fixtures_replay_as_the_jsonl(tmp_path, how):
    pytest.importorskip("pyarrow")
    written = 0
    for stem, recs in _valid_fixture_records().items():
        src = REPLAY_FIXTURES / f"{stem}.jsonl"
        if any(not line.strip() for line in src.read_bytes().splitlines()):
            continue  # blank lines: JSONL line numbers are not row numbers
        p = tmp_path / f"{stem}.parquet"
        if not _write(recs, p, how):
            continue
        written += 1
        assert _norm(both(p), p) == _norm(both(src), src), stem
    assert written >= 10


def test_records_table_with_gaps_and_extra_columns(tmp_path):
    """pandas writes an integer column with gaps as float and a missing object as NaN; an unknown column is an
    unknown field; a non-default index is not a field."""
    pd = pytest.importorskip("pandas")
    recs = _recs()
    for i, r in enumerate(recs):
        if i % 2:
            r["cutter"] = (r["dealer"] + 1) % len(r["players"])
        r["note"] = f"row {i}"
    p = tmp_path / "gaps.parquet"
    df = pd.DataFrame(recs)
    assert df["cutter"].dtype == float
    df.index = [f"r{i}" for i in range(len(df))]
    df.to_parquet(p)
    src = tmp_path / "gaps.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert _norm(both(p), p) == _norm(both(src), src)
    got = [r.deal for r in read_records([str(p)])]
    assert all(d is not None for d in got)
    assert [d.cutter for d in got] == [r.get("cutter") for r in recs]
    assert [d.extra for d in got] == [{"note": f"row {i}"} for i in range(len(recs))]


def test_records_table_column_of_the_wrong_type_is_refused_naming_it(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = _recs()
    t = _pyarrow_table(recs)
    t = t.set_column(t.schema.get_field_index("hands"), "hands", pa.array(list(range(len(recs))), pa.int64()))
    p = tmp_path / "wrong.parquet"
    pq.write_table(t, p)
    doc = both(p)
    assert doc["deals"] == 1 and len(_bad(doc)) == 1 and _bad(doc)[0]["source"] == str(p)
    msg = _bad(doc)[0]["message"]
    assert "column 'hands' has type int64" in msg and "list<list<string>>" in msg
    t2 = _pyarrow_table(recs)
    t2 = t2.set_column(t2.schema.get_field_index("deal_no"), "deal_no", pa.array([str(r["deal_no"]) for r in recs]))
    pq.write_table(t2, p)
    assert "column 'deal_no' has type string" in _bad(both(p))[0]["message"]


def test_records_table_bad_json_text_is_a_bad_record(tmp_path):
    import pyarrow.parquet as pq

    recs = _recs()
    rows = [{k: (json.dumps(v) if k == "recorded" else v) for k, v in r.items()} for r in recs]
    rows[3]["recorded"] = "{not json"
    p = tmp_path / "text.parquet"
    pq.write_table(_pyarrow_table(rows), p)
    doc = both(p)
    bad = _bad(doc)
    assert len(bad) == 1 and bad[0]["source"] == f"{p}:4" and "column 'recorded': not valid JSON" in bad[0]["message"]
    assert doc["deals"] == len(recs)


def test_records_table_converts_to_jsonl(tmp_path):
    """`auditor convert` reads a table of records too: canonical records out, the same replay."""
    from auditor.fast.convert import convert_file

    p = tmp_path / "ex.parquet"
    assert _write(_recs(), p, "pandas")
    out = tmp_path / "ex.jsonl"
    res = convert_file(str(p), str(out))
    assert res.records == 15 and not res.lost
    assert _norm(both(out), out) == _norm(both(EXAMPLES), EXAMPLES)
