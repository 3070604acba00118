"""`auditor convert IN OUT` between .jsonl, .jsonl.gz and .parquet: round trips, exit codes, what is reported."""

from __future__ import annotations

import gzip

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.dealog import validate
from auditor.errors import RecordError
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
