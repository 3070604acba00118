"""Reading deal-log/1: bad input never raises; every record read is accounted for; a file that cannot be read is
one bad_record; a truncated .jsonl.gz keeps its complete lines; lenient spellings in, canonical out."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from auditor.dealog import dumps_canonical, open_lines, read_records, record_from_obj, write_jsonl
from conftest import REPLAY_FIXTURES, replay_objs, replay_path

GOOD = REPLAY_FIXTURES / "sw_foster_4p.jsonl"


def _lines(path):
    return [ln for ln in path.read_bytes().splitlines() if ln.strip()]


def test_empty_file_is_read(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    rep = replay_path(p)
    assert rep.deals == 0 and rep.games == 0 and rep.findings == []


def test_blank_lines_are_not_records(tmp_path):
    p = tmp_path / "blank.jsonl"
    p.write_bytes(b"\n  \n" + b"\n\n".join(_lines(GOOD)) + b"\n\t\n")
    assert replay_path(p).deals == len(_lines(GOOD))


@pytest.mark.parametrize("name,make,message", [
    ("missing.jsonl", None, "no such file"),
    ("adir", "dir", "is a directory"),
])
def test_unreadable_file_is_one_bad_record_and_others_go_on(tmp_path, name, make, message):
    p = tmp_path / name
    if make == "dir":
        p.mkdir()
    recs = list(read_records([str(p), str(GOOD)]))
    assert recs[0].deal is None and recs[0].line is None and recs[0].source == str(p)
    assert message in recs[0].error
    assert sum(r.deal is not None for r in recs) == len(_lines(GOOD))
    rep = replay_path(p, GOOD)
    bad = [f for f in rep.findings if f.code == "bad_record"]
    assert len(bad) == 1 and bad[0].source == str(p)
    assert rep.deals == len(_lines(GOOD)) + 1  # the unreadable file counts as one record read (docs/decisions.md)


def test_truncated_gzip_keeps_complete_lines(tmp_path):
    lines = _lines(REPLAY_FIXTURES / "af_2p.jsonl") * 20
    data = gzip.compress(b"\n".join(lines) + b"\n")
    cut = data[: len(data) * 2 // 3]
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(cut)
    # independently: how many complete lines does the cut stream hold?
    decoded = zlib.decompressobj(wbits=31).decompress(cut)
    complete = decoded.count(b"\n")
    assert 10 < complete < len(lines)
    recs = list(read_records([str(p)]))
    assert len(recs) == complete + 1
    assert all(r.deal is not None for r in recs[:-1])
    last = recs[-1]
    assert last.deal is None and last.line == complete + 1 and last.source == f"{p}:{complete + 1}"
    assert "truncated" in last.error


def test_corrupt_gzip_never_raises(tmp_path):
    data = bytearray(gzip.compress(GOOD.read_bytes() * 30))
    for pos in range(20, len(data) - 10, max(1, len(data) // 40)):
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        p = tmp_path / "bad.jsonl.gz"
        p.write_bytes(bytes(bad))
        recs = list(read_records([str(p)]))  # must not raise
        rep = replay_path(p)
        assert rep.deals == len(recs) == len(rep.results) + sum(f.code == "bad_record" for f in rep.findings)


def test_gzip_members_and_padding(tmp_path):
    a, b = _lines(GOOD)[:3], _lines(GOOD)[3:]
    p = tmp_path / "two.jsonl.gz"
    p.write_bytes(gzip.compress(b"\n".join(a) + b"\n") + gzip.compress(b"\n".join(b) + b"\n") + b"\0" * 16)
    recs = list(read_records([str(p)]))
    assert len(recs) == len(a) + len(b) and all(r.deal is not None for r in recs)
    assert list(open_lines(str(p)))[-1].endswith(b"\n")


def test_gzip_is_recognised_by_content(tmp_path):
    p = tmp_path / "plain_name.jsonl"
    p.write_bytes(gzip.compress(GOOD.read_bytes()))
    assert sum(r.deal is not None for r in read_records([str(p)])) == len(_lines(GOOD))


def test_byte_order_mark_and_crlf(tmp_path):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + GOOD.read_bytes().replace(b"\n", b"\r\n"))
    recs = list(read_records([str(p)]))
    assert all(r.deal is not None for r in recs) and len(recs) == len(_lines(GOOD))


def test_non_utf8_line(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(_lines(GOOD)[0] + b"\n" + '{"table": "café"}'.encode("latin-1") + b"\n" + _lines(GOOD)[1] + b"\n")
    recs = list(read_records([str(p)]))
    assert [r.deal is not None for r in recs] == [True, False, True]
    assert "not UTF-8" in recs[1].error and recs[1].source == f"{p}:2"


def test_binary_file_never_raises(tmp_path):
    import random

    rnd = random.Random(7)
    p = tmp_path / "noise.jsonl"
    p.write_bytes(bytes(rnd.randrange(256) for _ in range(20000)))
    rep = replay_path(p)
    assert rep.deals == sum(f.code == "bad_record" for f in rep.findings) + len(rep.results)


def test_truncated_lines(tmp_path):
    lines = _lines(GOOD)
    p = tmp_path / "cut.jsonl"
    p.write_bytes(b"\n".join([lines[0], lines[1][: len(lines[1]) // 2], lines[2], lines[3][:-1]]) + b"\n")
    recs = list(read_records([str(p)]))
    assert [r.deal is not None for r in recs] == [True, False, True, False]
    assert recs[1].source.endswith(":2") and "not valid JSON" in recs[1].error


def test_bad_record_finding_keeps_game_and_deal(tmp_path):
    obj = json.loads(_lines(GOOD)[0])
    obj["rules"] = "vienna"
    rep = replay_objs([obj], tmp_path)
    (f,) = rep.findings
    assert (f.code, f.game_id, f.deal_no, f.trick, f.seat) == ("bad_record", obj["game_id"], 1, None, None)
    assert "unknown preset 'vienna'" in f.message


def test_lenient_in_canonical_out():
    obj = json.loads(_lines(GOOD)[0])
    lenient = json.loads(json.dumps(obj))
    lenient["hands"] = [[c.replace("T", "10").lower() for c in h] for h in obj["hands"]]
    lenient["turn_up"] = "6♥"
    lenient["game"] = "Scotch Whist"
    lenient["rules"] = "Foster"
    lenient["zz_extra"] = {"kept": True}
    rec = record_from_obj(lenient, "x", 0, 1)
    assert rec.deal is not None
    canon = rec.deal.to_canonical()
    assert canon["hands"] == obj["hands"] and canon["turn_up"] == "6h"
    assert canon["game"] == "scotch_whist" and canon["rules"] == "foster"
    assert list(canon)[:3] == ["format", "game", "rules"] and canon["zz_extra"] == {"kept": True}
    assert json.loads(dumps_canonical(canon)) == canon


def test_write_jsonl_gz_is_deterministic(tmp_path):
    objs = [json.loads(ln) for ln in _lines(GOOD)]
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    assert write_jsonl(objs, str(a)) == len(objs)
    write_jsonl(objs, str(b))
    assert a.read_bytes() == b.read_bytes()
    assert [r.deal.game_id for r in read_records([str(a)])] == [o["game_id"] for o in objs]


def test_records_keep_file_and_line():
    recs = list(read_records([str(GOOD), str(REPLAY_FIXTURES / "af_3p.jsonl")]))
    assert recs[0].source == f"{GOOD}:1" and recs[0].file_index == 0
    assert recs[-1].file_index == 1 and recs[-1].line == len(_lines(REPLAY_FIXTURES / "af_3p.jsonl"))
