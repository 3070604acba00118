"""Revoke claims replayed by the kernel (issue 15): a Scotch Whist deal whose claims the play confirms no longer
goes to the reference engine (2% of a club season's deals did, half the replay's time), and the Parquet layout 2
keeps the claims in a column of their own. Everything is held to the reference engine and to layout 1."""

from __future__ import annotations

import zlib

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditor.dealog import read_records
from auditor.fast.convert import convert_file
from auditor.replay.batch import replay_batch
from auditor.replay.run import replay_paths
from auditor.testing.generate import Style, random_log
from auditor.testing.mutate import to_jsonl
from test_batch_support import _same_as_reference  # the kernel's results held to the reference engine's

SW_OPTIONS = [{}, {"revoke_penalty": "minus_10"}, {"revoke_requires_claim": False},
              {"revoke_penalty": "minus_10", "revoke_requires_claim": False}]


def _records(seed: str, game: str = "scotch_whist", options: dict | None = None, counts=(2, 3, 4, 5, 6),
             games: int = 3, claim: float = 1.0) -> list[dict]:
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    out: list[dict] = []
    for n in counts:
        out += random_log(rng, games, game=game, preset="foster", n=n, options=options,
                          style=Style(revoke_rate=0.08, claim_revokes=claim), id_prefix=f"{seed}/{n}/")
    return out


def _deals(tmp_path, recs: list[dict], name: str = "log.jsonl") -> list:
    path = tmp_path / name
    path.write_bytes(to_jsonl(recs))
    return [r.deal for r in read_records([str(path)]) if r.deal is not None]


@pytest.mark.parametrize("options", SW_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "foster")
def test_confirmed_claims_are_replayed_by_the_kernel(tmp_path, options):
    recs = _records(f"claims-{sorted(options.items())}", options=options)
    claimed = sum(1 for r in recs if r.get("claims"))
    assert claimed >= 10  # the test means something: many deals carry a claim
    stats = _same_as_reference(_deals(tmp_path, recs))
    assert stats["fallback"] == 0, stats  # every claimed deal in the kernel, none in the reference engine
    assert stats["kernel"] == len(recs)


def _with_claims(recs: list[dict], claims_of) -> list[dict]:
    out = []
    for r in recs:
        r = dict(r)
        cl = claims_of(r)
        if cl is not None:
            r["claims"] = cl
        out.append(r)
    return out


def test_a_claim_the_play_does_not_confirm_goes_to_the_reference_engine(tmp_path):
    recs = _records("mismatch", options={"revoke_penalty": "minus_10"}, counts=(4,), games=4, claim=1.0)
    # every deal also claims a revoke by seat 0 in trick 1 (which mostly did not happen), and some claim twice
    recs = _with_claims(recs, lambda r: list(r.get("claims", [])) + [{"revoke": 0, "trick": 1}] * (1 + len(r["players"]) % 2))
    deals = _deals(tmp_path, recs)
    stats = _same_as_reference(deals)
    results, _ = replay_batch(deals)
    mismatch = sum(1 for r in results if any(f.code == "claim_mismatch" for f in r.findings))
    assert mismatch > 0
    assert stats["fallback_reasons"].get("claims", 0) == mismatch  # exactly those deals left the kernel


def test_duplicate_and_empty_claims_equal_the_reference(tmp_path):
    recs = _records("dup", options={"revoke_penalty": "minus_10"}, counts=(3, 4), games=3, claim=1.0)
    recs = _with_claims(recs, lambda r: (r["claims"] * 2) if r.get("claims") else [])
    stats = _same_as_reference(_deals(tmp_path, recs))
    assert stats["fallback"] == 0, stats


def test_all_fours_claims_stay_with_the_reference_engine(tmp_path):
    recs = _records("af", game="all_fours", counts=(2, 3, 4), games=3, claim=1.0)
    claimed = sum(1 for r in recs if r.get("claims"))
    assert claimed > 0
    stats = _same_as_reference(_deals(tmp_path, recs))
    assert stats["fallback_reasons"].get("claims", 0) == claimed


def test_claims_not_in_canonical_form_are_judged_the_slow_way(tmp_path):
    recs = _records("noncanon", counts=(4, 5), games=8, claim=1.0)
    odd = [dict(r) for r in recs]
    k = 0
    for r in odd:
        if r.get("claims"):
            k += 1
            cl = r["claims"][0]
            r["claims"] = [{"trick": cl["trick"], "revoke": cl["revoke"]}] if k % 2 else \
                [{"revoke": cl["revoke"], "trick": cl["trick"], "note": "x"}]
    assert k >= 4
    path = tmp_path / "odd.jsonl"
    path.write_bytes(to_jsonl(odd))
    rep = replay_paths([str(path)])
    assert rep.stats["fallback_reasons"].get("record", 0) == k  # the reader did not take them into the columns
    want = replay_paths([str(path)], engine="reference")
    assert rep.to_json_bytes() == want.to_json_bytes()


def _converted(tmp_path, recs: list[dict], name: str = "log.parquet"):
    """The records as a JSON Lines file and that file converted to Parquet: (jsonl, parquet)."""
    src = tmp_path / "log.jsonl"
    src.write_bytes(to_jsonl(recs))
    dst = tmp_path / name
    convert_file(str(src), str(dst))
    return src, dst


def _doc(path: str, engine: str = "batch") -> bytes:
    return replay_paths([path], engine=engine).to_json_bytes().replace(path.encode(), b"LOG")


def test_parquet_layout_2_keeps_claims_in_their_column(tmp_path):
    recs = _records("pq", options={"revoke_penalty": "minus_10"}, counts=(2, 4, 6), games=3)
    recs += _records("pq-af", game="all_fours", counts=(2, 4), games=2)
    src, dst = _converted(tmp_path, recs)
    t = pq.read_table(dst)
    claims = t.column("claims").to_pylist()
    raws = t.column("raw").to_pylist()
    with_claims = [i for i, r in enumerate(recs) if "claims" in r]
    assert len(with_claims) >= 10
    for i in with_claims:
        assert raws[i] is None and orjson.loads(claims[i]) == recs[i]["claims"]
    assert all(claims[i] is None for i in range(len(recs)) if i not in set(with_claims))
    # the same replay from JSON Lines and from Parquet, by both engines; the Parquet replay in the kernel
    assert _doc(str(dst)) == _doc(str(src)) == _doc(str(src), "reference")
    rep = replay_paths([str(dst)])
    assert rep.stats["fallback_reasons"] == {"claims": sum(1 for i in with_claims if recs[i]["game"] == "all_fours")}
    # back to JSON Lines: the same bytes
    back = tmp_path / "back.jsonl"
    convert_file(str(dst), str(back))
    assert back.read_bytes() == src.read_bytes()


def test_a_layout_1_file_with_claims_in_raw_reads_as_before(tmp_path):
    recs = _records("old", options={"revoke_penalty": "minus_10"}, counts=(4, 5), games=3)
    _src, new = _converted(tmp_path, recs, "new.parquet")
    t = pq.read_table(new)
    # layout 1: no claims column; a record with claims is its canonical JSON in `raw`, its columns null
    raws = t.column("raw").to_pylist()
    has = [r.get("claims") is not None for r in recs]
    raws = [orjson.dumps(r) if h else x for r, h, x in zip(recs, has, raws, strict=True)]
    mask = pa.array(has)
    cols = {}
    for f in t.schema:
        if f.name == "claims":
            continue
        c = t.column(f.name).combine_chunks()
        if f.name == "raw":
            c = pa.array(raws, pa.binary())
        else:
            c = pa.compute.if_else(mask, pa.nulls(len(c), c.type), c) if not pa.types.is_dictionary(c.type) else \
                pa.compute.if_else(mask, pa.nulls(len(c), c.type.value_type), c.dictionary_decode()) \
                .dictionary_encode()
        cols[f.name] = c
    meta = dict(t.schema.metadata)
    meta[b"auditor.layout"] = b"1"
    old = tmp_path / "old.parquet"
    pq.write_table(pa.table(cols).replace_schema_metadata(meta), old)
    assert sum(has) >= 5
    rep = replay_paths([str(old)])
    assert rep.stats["fallback_reasons"] == {"record": sum(has)}  # read as before: the reference engine
    assert _doc(str(old)) == _doc(str(new))


def test_a_newer_layout_is_refused_in_one_line(tmp_path):
    recs = _records("newer", counts=(4,), games=1)
    _src, dst = _converted(tmp_path, recs)
    t = pq.read_table(dst)
    meta = dict(t.schema.metadata)
    meta[b"auditor.layout"] = b"3"
    pq.write_table(t.replace_schema_metadata(meta), dst)
    rep = replay_paths([str(dst)])
    assert rep.stats["deals"] == 0  # one bad record naming the file, no deal
    (f,) = rep.findings
    assert f.code == "bad_record" and "layout '3'" in f.message and "\n" not in f.message
