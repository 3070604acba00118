"""`auditor convert IN OUT` between .jsonl, .jsonl.gz and .parquet: round trips, exit codes, what is reported."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.dealog import validate
from auditor.errors import RecordError
from auditor.parquet import _dict_col
from auditor.testing.generate import Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

runner = CliRunner()


def _log(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    recs = []
    for game, preset, n in (("scotch_whist", "foster", 4), ("scotch_whist", "russian", 5), ("all_fours", "foster", 3)):
        recs += random_log(rng, 3, game=game, preset=preset, n=n, id_prefix=f"{preset}{n}-",
                           style=Style(extra_field=True, revoke_rate=0.05, claim_revokes=0.5))
    return to_jsonl(mutate_log(rng, recs, rate=0.3))


def _run(*args):
    res = runner.invoke(app, ["convert", *map(str, args)])
    return res.exit_code, res.output


@pytest.mark.parametrize("fmt", ["parquet", "jsonl.gz", "jsonl"])
def test_round_trip_through_each_format(tmp_path, fmt):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_log(1))
    mid, back = tmp_path / f"mid.{fmt}", tmp_path / "back.jsonl"
    code, out = _run(src, mid)
    assert code == 0, out
    assert "records written" in out
    assert _run(mid, back)[0] == 0
    got = back.read_bytes().splitlines()
    want = []
    for raw in src.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            want.append(orjson.dumps(validate(orjson.loads(raw)).to_canonical()))
        except (RecordError, orjson.JSONDecodeError):  # not a deal, or not JSON: the converter keeps the line
            want.append(raw)
    assert got == want
    if fmt == "jsonl.gz":
        assert gzip.decompress(mid.read_bytes()).splitlines() == want


def test_convert_is_deterministic(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_log(2))
    for name in ("a.jsonl.gz", "b.jsonl.gz"):
        assert _run(src, tmp_path / name)[0] == 0
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()


def test_convert_to_parquet_writes_the_same_bytes_in_every_process(tmp_path):
    """Each conversion in its own process, as a user runs it: two rule sets of one preset (Scotch Whist's and All
    Fours' "foster") once made the `rules` and `options` dictionaries hold a value twice, and Arrow's writer then
    left bytes of those dictionary pages unset: other bytes at each run, the same values read back."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(_log(2))
    digests = set()
    for k in range(3):
        dst = tmp_path / f"out{k}.parquet"
        res = subprocess.run([sys.executable, "-m", "auditor", "convert", str(src), str(dst)], capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        digests.add(hashlib.sha256(dst.read_bytes()).hexdigest())
    assert len(digests) == 1


def test_parquet_dictionaries_hold_each_value_once_and_sorted():
    codes = np.array([2, 0, 1, 2, -1, 3])
    values = ["foster", "foster", "alpha", None]  # codes 0 and 1 carry one value; code 3 and -1 are null
    col = _dict_col(codes, values, np.array([True, True, True, True, True, False]))
    assert col.dictionary.to_pylist() == ["alpha", "foster"]
    assert col.to_pylist() == ["alpha", "foster", "foster", "alpha", None, None]
    empty = _dict_col(np.array([0, 0]), [None], np.array([True, True]))
    assert empty.to_pylist() == [None, None] and len(empty.dictionary) == 1


def test_usage_errors_and_unreadable_input(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_log(3))
    assert _run(src, tmp_path / "out.csv")[0] == 2
    assert _run(src, src)[0] == 2
    code, out = _run(tmp_path / "missing.jsonl", tmp_path / "out.parquet")
    assert code == 3 and "no such file" in out
    assert not (tmp_path / "out.parquet").exists()


def test_what_cannot_be_kept_is_reported(tmp_path):
    """A gzip stream that breaks off: the records before it are written, the break is reported, exit 1."""
    src = tmp_path / "in.jsonl.gz"
    full = gzip.compress(_log(4))
    src.write_bytes(full[: len(full) // 2])
    code, out = _run(src, tmp_path / "out.jsonl")
    assert code == 1
    assert "not converted" in out and "unreadable after line" in out
    assert (tmp_path / "out.jsonl").read_bytes().count(b"\n") > 0


def test_empty_input(tmp_path):
    src = tmp_path / "empty.jsonl"
    src.write_bytes(b"\n\n")
    assert _run(src, tmp_path / "e.parquet")[0] == 0
    assert _run(tmp_path / "e.parquet", tmp_path / "e.jsonl")[0] == 0
    assert (tmp_path / "e.jsonl").read_bytes() == b""
