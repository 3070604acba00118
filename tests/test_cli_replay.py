"""`auditor replay` and `auditor schema` from the command line: the JSON document, the terminal summary, exit codes
(0 nothing found, 1 findings, 2 usage, 3 no input could be read), bad input never a traceback."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from collections import Counter

import pytest
from rich.console import Console
from typer.testing import CliRunner

from auditor.cli import app
from auditor.report.terminal import estimate_records, print_replay, replay_progress
from conftest import REPLAY_FIXTURES, ROOT, replay_path

EXAMPLES = ROOT / "fixtures" / "examples.jsonl"
ENGINES = ["reference", "batch"]


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _doc(result) -> dict:
    return json.loads(result.stdout)


def _line(source):
    tail = source.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


@pytest.mark.parametrize("engine", ENGINES)
def test_examples_json_document(engine):
    out = run("replay", EXAMPLES, "--json", "--engine", engine)
    assert out.exit_code == 0, out.output
    assert _doc(out) == json.loads((ROOT / "fixtures" / "examples_replay.json").read_text())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", sorted(REPLAY_FIXTURES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_fixtures_through_the_cli(path, engine):
    """`auditor replay` on each fixture reports exactly its expected findings and games, with either engine."""
    exp = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    out = run("replay", path, "--json", "--engine", engine)
    doc = _doc(out)
    bad = sum(1 for f in exp["findings"] if f["code"] == "bad_record")
    # issue 12: exit 3 when no deal was replayed (only bad records, or none at all)
    assert out.exit_code == (3 if exp["deals"] == bad else 1 if exp["findings"] else 0)
    assert (doc["deals"], doc["games"]) == (exp["deals"], exp["games"])
    got = Counter((f["code"], f["game_id"], f["deal_no"], f["trick"], f["seat"], _line(f["source"]))
                  for f in doc["findings"])
    want = Counter((f["code"], f["game_id"], f["deal_no"], f["trick"], f["seat"], f["line"]) for f in exp["findings"])
    assert got == want
    assert {g["game_id"]: g for g in doc["games_summary"]} == {g["game_id"]: g for g in exp["games_summary"]}


def test_readme_first_command_prints_a_summary():
    out = run("replay", EXAMPLES)
    assert out.exit_code == 0
    assert "15 records read" in out.stdout and "5 games" in out.stdout and "No findings." in out.stdout
    assert "ex-foster-2p" in out.stdout and "54  12" in out.stdout


def test_summary_with_findings():
    out = run("replay", REPLAY_FIXTURES / "find_play.jsonl", "--engine", "reference")
    assert out.exit_code == 1
    for text in ("Findings by code", "card_not_in_hand", "revoke", "find_play.jsonl:1", "claim-not-judged",
                 "ended by"):
        assert text in out.stdout, text


def test_summary_caps_long_listings():
    rep = replay_path(REPLAY_FIXTURES / "bad_input.jsonl")
    buf = io.StringIO()
    print_replay(rep, Console(file=buf, width=120))
    text = buf.getvalue()
    assert f"50 of {len(rep.findings)} shown" in text and "--json for all" in text


def test_exit_1_on_findings_and_stderr_quiet():
    out = run("replay", REPLAY_FIXTURES / "find_cards.jsonl", "--json")
    assert out.exit_code == 1 and _doc(out)["findings"]


def test_empty_file_exit_3(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    out = run("replay", p, "--json")  # issue 12: the file is read (0 deals), but nothing was replayed: exit 3
    assert out.exit_code == 3 and _doc(out) == {"deals": 0, "games": 0, "findings": [], "games_summary": []}


@pytest.mark.parametrize("args", [[], ["--json"], ["--no-such-option", "x.jsonl"]])
def test_usage_errors_exit_2(args):
    assert run("replay", *args).exit_code == 2


def test_unknown_engine_exit_2():
    out = run("replay", EXAMPLES, "--engine", "quantum")
    assert out.exit_code == 2 and "--engine" in out.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_nothing_readable_exit_3(tmp_path, engine):
    (tmp_path / "d").mkdir()
    out = run("replay", tmp_path / "missing.jsonl", tmp_path / "d", "--json", "--engine", engine)
    assert out.exit_code == 3
    # (issue 15, a twenty-eighth session: a directory is the logs under it, as for `audit`; one with none is
    # refused in one line before any file is read)
    assert "d: a directory with no .parquet, .jsonl or .jsonl.gz file under it" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.output
    out = run("replay", tmp_path / "missing.jsonl", "--json", "--engine", engine)
    assert out.exit_code == 3 and "missing.jsonl: no such file" in out.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_file_next_to_a_good_one(tmp_path, engine):
    missing = tmp_path / "missing.jsonl"
    out = run("replay", missing, EXAMPLES, "--json", "--engine", engine)
    assert out.exit_code == 1
    assert f"{missing}: no such file" in out.stderr
    doc = _doc(out)
    (bad,) = [f for f in doc["findings"] if f["code"] == "bad_record"]
    assert bad["source"] == str(missing)
    assert doc["deals"] == 15 + 1 and doc["games"] == 5  # the examples are still replayed


@pytest.mark.parametrize("engine", ENGINES)
def test_truncated_gzip(tmp_path, engine):
    lines = (REPLAY_FIXTURES / "af_2p.jsonl").read_bytes().splitlines() * 20
    data = gzip.compress(b"\n".join(lines) + b"\n")
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    out = run("replay", p, "--json", "--engine", engine)
    assert out.exit_code == 1 and "Traceback" not in out.output
    doc = _doc(out)
    bad = [f for f in doc["findings"] if f["code"] == "bad_record"]
    assert len(bad) == 1 and bad[0]["source"].startswith(f"{p}:")
    assert f"auditor: {bad[0]['source']}: unreadable after line" in out.stderr
    assert doc["deals"] > 10


@pytest.mark.parametrize("engine", [
    "reference",
    "batch",
])
def test_corrupt_gzip_no_traceback(tmp_path, engine):
    data = bytearray(gzip.compress((REPLAY_FIXTURES / "bad_input.jsonl").read_bytes()))
    data[89] ^= 0x5A  # a damaged block: zlib "invalid distance too far back"
    p = tmp_path / "bad.jsonl.gz"
    p.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "auditor", "replay", str(p), "--json", "--engine", engine],
                          capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 3  # issue 12: the damage is in the first block, so no deal was replayed
    assert "auditor: no deal was replayed:" in proc.stderr
    doc = json.loads(proc.stdout)
    assert any(f["code"] == "bad_record" and f["source"].startswith(str(p)) for f in doc["findings"])


def test_schema_command():
    out = run("schema")
    assert out.exit_code == 0
    schema = json.loads(out.stdout)
    assert schema["title"] == "deal-log/1" and "turn_up" in schema["required"]


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "auditor", "replay", str(EXAMPLES), "--json"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0 and json.loads(proc.stdout)["deals"] == 15


def test_progress_bar_on_long_inputs(tmp_path):
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=100)
    with replay_progress([str(EXAMPLES)], console=con, threshold=0) as progress:
        for k in (4096, 8192, 12000):
            progress(k)
    assert "replaying" in buf.getvalue()
    # short inputs: no bar at all
    buf2 = io.StringIO()
    with replay_progress([str(EXAMPLES)], console=Console(file=buf2, force_terminal=True)) as progress:
        progress(10)
    assert buf2.getvalue() == ""


def test_estimate_records(tmp_path):
    lines = (REPLAY_FIXTURES / "af_2p.jsonl").read_bytes().splitlines() * 50
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    for p in (plain, gz):
        est = estimate_records([str(p)])
        assert 0.5 * len(lines) <= est <= 2 * len(lines), (p, est)
    assert estimate_records([str(tmp_path / "missing")]) == 0


def test_a_directory_is_the_logs_under_it(tmp_path):
    """`auditor replay DIR` reads the log files under DIR in natural order of their paths, as `auditor audit` does
    (issue 15, a twenty-eighth session: it refused a directory that the audit read); an empty one exits 3."""
    files = sorted(REPLAY_FIXTURES.glob("*.jsonl"))[:3]
    ds = tmp_path / "ds"
    for k, src in enumerate(files):
        d = ds / f"month=2026-{k + 9:02d}"  # 2026-09, 2026-10, 2026-11: natural order is this order
        d.mkdir(parents=True)
        (d / "part-0.jsonl").write_bytes(src.read_bytes())
    paths = [str(ds / f"month=2026-{k + 9:02d}" / "part-0.jsonl") for k in range(len(files))]
    whole = run("replay", ds, "--json")
    listed = run("replay", *paths, "--json")
    assert whole.exit_code == listed.exit_code and whole.exit_code in (0, 1), whole.output
    assert _doc(whole) == _doc(listed) and _doc(whole)["deals"] > 0
    (tmp_path / "empty").mkdir()
    out = run("replay", tmp_path / "empty")
    assert out.exit_code == 3 and "Traceback" not in out.output
