"""Issue 12, outputs, exit codes and terminal safety:

- nothing to audit never reads as all clear: no deal replayed is exit 3 with one line on stderr saying why, a
  partly unreadable input says in the verdict how many records were not read and why, "No one is flagged" comes
  with the number of deals audited;
- every file is written whole or not at all (a temporary file beside it, fsynced and renamed): no leftover, an
  older file kept on failure or SIGTERM; --out is checked before the replay; "auditor: wrote X (size)" on stderr;
- a closed or full stdout is one line on stderr and exit 4, never a traceback;
- no control or bidirectional character from a log reaches the terminal, stderr, Markdown or HTML raw.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor import atomic
from auditor.cli import app
from auditor.report import view as report_view
from auditor.textsafe import UNSAFE, is_safe, visible
from conftest import ROOT

EXAMPLES = ROOT / "fixtures" / "examples.jsonl"
DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
PY = sys.executable

# the characters the issue names: C0, ESC, DEL, C1, bidi overrides / isolates / marks
RAW = ["\x00", "\x07", "\x08", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\x9b", "\u200e", "\u200f", "\u202a",
       "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
HOSTILE = "\x1b[2J\x1b[H\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\x1b]0;pwned\x07\x9b31m\u202eevil\u2066x\u2069"


def run(*args, **kw):
    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def _has_raw(text: str) -> list[str]:
    """The unsafe characters in `text` other than the newlines and tabs a layout uses."""
    return sorted({repr(c) for c in text if ord(c) in UNSAFE and c not in "\n\t\r"})


def _tmp_leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(atomic.TMP_PREFIX) or ".part" in p.name)


def _records() -> list[dict]:
    return [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]


def _write_jsonl(path: Path, objs, extra_lines=()) -> Path:
    lines = [json.dumps(o) for o in objs] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ the one rule


@pytest.mark.parametrize("ch", RAW)
def test_visible_escapes_every_named_character(ch):
    out = visible(f"a{ch}b")
    assert ch not in out and is_safe(out)
    assert out == "a" + (f"\\x{ord(ch):02x}" if ord(ch) <= 0xFF else f"\\u{ord(ch):04x}") + "b"


def test_visible_keeps_ordinary_text_and_what_it_is_told_to_keep():
    for s in ("ann", "Zoë Ωmega 李 😀", "a+b", "C:\\logs\\x.jsonl", ""):
        assert visible(s) == s
    assert visible(None) == ""
    assert visible("a\nb\x1b", keep="\n") == "a\nb\\x1b"
    assert visible("\x1b[2J") == "\\x1b[2J"


# ------------------------------------------------------------------ nothing to audit


def _empty(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    return p, "the input holds no record (an empty file)"


def _csv(tmp_path):
    p = tmp_path / "club.csv"
    p.write_text("game,table,player\n1,a,ann\n")
    return p, "2 records read, 2 not readable (bad_record: 2 not valid JSON)"


def _bad_parquet(tmp_path):
    p = tmp_path / "log.parquet"
    p.write_bytes(b"PAR1 this is not parquet at all")
    return p, "1 record read, 1 not readable (bad_record: 1 unreadable file)"


def _bad_gzip(tmp_path):
    data = bytearray(gzip.compress(EXAMPLES.read_bytes()))
    data[20:60] = bytes(40)  # the first block destroyed
    p = tmp_path / "log.jsonl.gz"
    p.write_bytes(bytes(data))
    return p, "1 record read, 1 not readable (bad_record: 1 file broken off (the rest of it unread))"


NOTHING = [_empty, _csv, _bad_parquet, _bad_gzip]


@pytest.mark.parametrize("make", NOTHING, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("engine", ["batch", "reference"])
def test_audit_of_nothing_is_exit_3_and_never_all_clear(tmp_path, make, engine):
    path, why = make(tmp_path)
    r = run("audit", path, "--engine", engine)
    assert r.exit_code == 3, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("auditor: no deal was replayed")]
    assert len(lines) == 1 and lines[0].startswith(f"auditor: no deal was replayed: {why}"), r.stderr
    assert "No one is flagged" not in r.stdout
    assert "Nothing was audited, no deal was replayed" in r.stdout
    assert "Traceback" not in r.output


@pytest.mark.parametrize("make", NOTHING, ids=lambda f: f.__name__.strip("_"))
def test_replay_of_nothing_is_exit_3_and_still_prints_the_document(tmp_path, make):
    path, why = make(tmp_path)
    r = run("replay", path, "--json")
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    assert doc["games"] == 0 and all(f["code"] == "bad_record" for f in doc["findings"])
    assert r.stderr.strip().splitlines()[-1].startswith(f"auditor: no deal was replayed: {why}")
    t = run("replay", path)
    assert t.exit_code == 3 and "Nothing was replayed." in t.stdout and "No findings" not in t.stdout


def test_a_selection_that_matches_nothing_is_exit_3_and_says_so(tmp_path):
    for engine in ("batch", "reference"):
        r = run("audit", EXAMPLES, "--table", "exampel", "--engine", engine)
        assert r.exit_code == 3
        assert r.stderr.strip().splitlines()[-1] == (
            "auditor: no deal was replayed: the selection (table 'exampel') matches none of the 15 records read "
            "(15 at another table)")
        assert "No one is flagged" not in r.stdout and "matches none of the 15 records" in r.stdout
    r = run("audit", EXAMPLES, "--since", "2999-01-01", "--json")
    assert r.exit_code == 3 and "matches none of the 15 records read" in r.stderr
    assert json.loads(r.stdout)["selection"]["deals_selected"] == 0


def test_nothing_audited_writes_no_report_and_keeps_the_older_one(tmp_path):
    old = tmp_path / "report.html"
    old.write_text("last month's report")
    path, _ = _csv(tmp_path)
    r = run("audit", path, "--out", old)
    assert r.exit_code == 3
    assert old.read_text() == "last month's report" and "wrote" not in r.stderr
    assert _tmp_leftovers(tmp_path) == []


def test_investigate_of_nothing_is_exit_3(tmp_path):
    path, why = _csv(tmp_path)
    r = run("investigate", path, "--player", "ann")
    assert r.exit_code == 3 and r.stderr.strip().startswith(f"auditor: no deal was replayed: {why}")


def test_a_partly_unreadable_input_says_so_in_every_verdict(tmp_path):
    bad = ['{"format": "deal-log/1", "game": "scotch_whist"', "not json at all", '{"format": "deal-log/1"}']
    log = _write_jsonl(tmp_path / "log.jsonl", _records(), bad)
    want = ("No one is flagged among 15 deals audited; 3 records not read (2 not valid JSON, 1 breaking the "
            "deal-log/1 schema); 3 irregularities in the logs")
    r = run("audit", log)
    assert r.exit_code == 0, r.output
    assert want in " ".join(r.stdout.split())  # the terminal may wrap the line
    for suffix in ("md", "html"):
        out = tmp_path / f"report.{suffix}"
        r = run("audit", log, "--out", out)
        assert r.exit_code == 0
        text = out.read_text()
        if suffix == "md":
            text = text.replace("\\", "")  # Markdown escapes of '-' and '/' are not in this sentence anyway
        assert want in " ".join(text.split())
    r = run("audit", EXAMPLES)
    assert "No one is flagged among 15 deals audited; the logs replay without irregularities." in \
        " ".join(r.stdout.split())


def test_the_verdict_counts_deals_with_thousands_separators():
    doc = {"deals": 8001, "replay": {"deals": 8001, "findings": []}, "tests": [], "flags": []}
    assert report_view.build_view(doc, charts=False)["headline"] == (
        "No one is flagged among 8,001 deals audited; the logs replay without irregularities")
    one = {"deals": 1, "replay": {"findings": []}}
    assert report_view.build_view(one, charts=False)["headline"].startswith("No one is flagged among 1 deal audited;")


# ------------------------------------------------------------------ atomic outputs


def test_atomic_path_renames_on_success_and_keeps_the_older_file_on_failure(tmp_path):
    dest = tmp_path / "out.jsonl.gz"
    dest.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(dest) as tmp:
            assert tmp.endswith(".out.jsonl.gz") and Path(tmp).parent == tmp_path
            Path(tmp).write_bytes(b"half")
            raise RuntimeError("disk on fire")
    assert dest.read_bytes() == b"old" and _tmp_leftovers(tmp_path) == []
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_open(dest) as fh:
            fh.write(b"half")
            raise KeyboardInterrupt
    assert dest.read_bytes() == b"old" and _tmp_leftovers(tmp_path) == []
    atomic.write_bytes(dest, b"new")
    assert dest.read_bytes() == b"new" and _tmp_leftovers(tmp_path) == []
    mask = os.umask(0o022)
    os.umask(mask)
    assert (dest.stat().st_mode & 0o777) == (0o666 & ~mask)  # as open() would have made it, not 0600


def test_human_size():
    assert [atomic.human_size(n) for n in (0, 1, 999, 1000, 46_411, 1_234_567, 5 * 10**9)] == \
        ["0 bytes", "1 byte", "999 bytes", "1.0 kB", "46.4 kB", "1.2 MB", "5.0 GB"]


@pytest.mark.parametrize("suffix", ["html", "md", "json"])
def test_audit_out_is_written_whole_and_said_on_stderr(tmp_path, suffix):
    out = tmp_path / f"report.{suffix}"
    out.write_text("older")
    r = run("audit", EXAMPLES, "--out", out)
    assert r.exit_code == 0
    size = atomic.human_size(out.stat().st_size)
    assert f"auditor: wrote {out} ({size})" in r.stderr.splitlines()
    assert out.read_text() != "older" and _tmp_leftovers(tmp_path) == []
    if suffix == "json":
        assert json.loads(out.read_text())["deals"] == 15


def test_a_failing_report_leaves_the_older_file_and_no_temporary(tmp_path, monkeypatch):
    import auditor.report.html as html

    out = tmp_path / "report.html"
    out.write_text("older")

    def half_then_full(dest, text):  # the disk fills up after part of the report was written
        with atomic.atomic_open(dest) as fh:
            fh.write(text.encode()[:100])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(html, "write_text", half_then_full)
    r = run("audit", EXAMPLES, "--out", out)
    assert r.exit_code == 2 and "No space left on device" in r.stderr and "Traceback" not in r.output
    assert out.read_text() == "older" and _tmp_leftovers(tmp_path) == []


@pytest.mark.parametrize("out,needle", [
    ("nofolder/report.html", "no such folder"),
    ("report.txt", "must end in .html, .md or .json"),
    ("adir.html", "is a folder"),
    ("/proc/report.html", "cannot write"),
])
def test_a_bad_out_is_exit_2_before_the_replay(tmp_path, monkeypatch, out, needle):
    import auditor.audit

    (tmp_path / "adir.html").mkdir()
    called = []
    monkeypatch.setattr(auditor.audit, "audit_paths", lambda *a, **k: called.append(1))
    monkeypatch.setattr(auditor.audit, "replay_for_audit", lambda *a, **k: called.append(1))
    monkeypatch.chdir(tmp_path)
    r = run("audit", EXAMPLES, "--out", out)
    assert r.exit_code == 2 and needle in r.stderr and not called, r.output
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_folder_is_exit_2(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = run("audit", EXAMPLES, "--out", ro / "r.html")
        assert r.exit_code == 2 and "cannot write" in r.stderr
    finally:
        ro.chmod(0o700)


def test_a_bad_out_is_exit_2_within_a_second_on_a_real_log(tmp_path):
    t0 = time.perf_counter()
    p = subprocess.run([PY, "-m", "auditor", "audit", str(DEMO), "--out", str(tmp_path / "no" / "r.html")],
                       capture_output=True, text=True, cwd=ROOT)
    took = time.perf_counter() - t0
    assert p.returncode == 2 and "no such folder" in p.stderr and p.stdout == ""
    assert took < 3.0, took  # the interpreter's start-up and imports; the replay of 8,001 deals is not started


def test_investigate_and_calibrate_check_out_first(tmp_path, monkeypatch):
    import auditor.calibrate
    import auditor.investigate

    monkeypatch.setattr(auditor.investigate, "investigate_records", lambda *a, **k: 1 / 0)
    monkeypatch.setattr(auditor.calibrate, "calibrate", lambda *a, **k: 1 / 0)
    r = run("investigate", EXAMPLES, "--player", "ann", "--out", tmp_path / "no" / "x.html")
    assert r.exit_code == 2 and "no such folder" in r.stderr
    r = run("calibrate", "--fast", "--out", tmp_path / "no" / "x.json", "--plot", "")
    assert r.exit_code == 2 and "no such folder" in r.stderr
    r = run("calibrate", "--fast", "--plot", tmp_path / "no" / "p.png")
    assert r.exit_code == 2 and "no such folder" in r.stderr


def test_investigate_out_is_atomic_and_said(tmp_path):
    out = tmp_path / "ann.html"
    r = run("investigate", EXAMPLES, "--player", "ann", "--out", out)
    assert r.exit_code in (0, 1), r.output
    assert f"auditor: wrote {out} (" in r.stderr and out.read_text().startswith("<!DOCTYPE html>")
    assert _tmp_leftovers(tmp_path) == []


def test_simulate_checks_every_output_first_and_writes_them_whole(tmp_path):
    log, key = tmp_path / "s.jsonl.gz", tmp_path / "s.key.json"
    r = run("simulate", "--deals", 5, "--out", log, "--key", tmp_path / "no" / "k.json")
    assert r.exit_code == 2 and "--key" in r.stderr and not log.exists()
    for out in (log, tmp_path / "s.parquet"):
        r = run("simulate", "--deals", 5, "--out", out, "--key", key)
        assert r.exit_code == 0, r.output
        for p in (out, key):
            assert f"auditor: wrote {p} ({atomic.human_size(p.stat().st_size)})" in r.stderr.splitlines()
        assert _tmp_leftovers(tmp_path) == []
    assert gzip.decompress(log.read_bytes()).count(b"\n") >= 5


def test_convert_failure_leaves_no_part_file_and_keeps_the_older_output(tmp_path, monkeypatch):
    from auditor.fast import convert

    dst = tmp_path / "out.parquet"
    dst.write_bytes(b"older")
    real = convert.iter_chunks

    def broken(*a, **k):
        gen = real(*a, **k)
        yield next(gen)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(convert, "iter_chunks", broken)
    r = run("convert", DEMO, dst)
    assert r.exit_code == 2 and "Input/output error" in r.stderr
    assert dst.read_bytes() == b"older" and _tmp_leftovers(tmp_path) == []


def test_convert_killed_by_sigterm_leaves_nothing_behind(tmp_path):
    src = tmp_path / "big.jsonl"
    data = gzip.decompress(DEMO.read_bytes())
    with open(src, "wb") as fh:
        for _ in range(6):
            fh.write(data)
    dst = tmp_path / "big.jsonl.gz"
    dst.write_bytes(b"older")
    proc = subprocess.Popen([PY, "-m", "auditor", "convert", str(src), str(dst)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    _terminate_when(proc, lambda: bool(_tmp_leftovers(tmp_path)), "conversion", 60, 0.01)
    assert dst.read_bytes() == b"older" and _tmp_leftovers(tmp_path) == []


def _terminate_when(proc: subprocess.Popen, ready, what: str, wait: float, poll: float) -> None:
    """SIGTERM to `proc` once `ready()` (skip the test if it ended first): it exits 143, says so, no traceback."""
    deadline = time.time() + wait
    while time.time() < deadline and not ready() and proc.poll() is None:
        time.sleep(poll)
    if proc.poll() is not None:
        pytest.skip(f"the {what} finished before it could be interrupted")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "auditor: terminated" in err and "Traceback" not in err


def test_audit_killed_by_sigterm_removes_its_working_folder(tmp_path):
    """The audit's working folder (`auditor-parts-*` in TMPDIR: the parts, spilled counts and games summaries,
    gigabytes at 10M deals) goes with the process on SIGTERM, as its temporary outputs do."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = tmp_path / "doc.json"
    proc = subprocess.Popen([PY, "-m", "auditor", "audit", str(DEMO), "--part-deals", "500", "--json", "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)

    def spilled() -> bool:  # the working folder exists and a part's counts are in it
        return any(p.name.endswith(".pickle") for d in tmp_path.glob("auditor-parts-*") for p in d.glob("*/*"))

    _terminate_when(proc, spilled, "audit", 120, 0.05)
    assert list(tmp_path.glob("auditor-parts-*")) == [] and not out.exists()


def test_calibrate_json_is_written_whole(tmp_path, monkeypatch):
    import auditor.calibrate

    monkeypatch.setattr(auditor.calibrate, "calibrate", lambda **k: {"seed": k["seed"], "ok": True})
    monkeypatch.setattr(auditor.calibrate, "print_report", lambda res: None)
    out = tmp_path / "cal.json"
    r = run("calibrate", "--out", out, "--plot", "", "--seed", 4)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text()) == {"seed": 4, "ok": True}
    assert f"auditor: wrote {out} (" in r.stderr and _tmp_leftovers(tmp_path) == []


# ------------------------------------------------------------------ a closed or full stdout


def _closed_pipe(args) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([PY, "-m", "auditor", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.read(10)  # `| head -c 10`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


@pytest.mark.parametrize("args", [
    ["replay", DEMO, "--json"],
    ["audit", DEMO, "--json"],
    ["replay", DEMO],
])
def test_a_closed_pipe_is_exit_4_and_one_line(args):
    p = _closed_pipe(args)
    assert p.returncode == 4, p.stderr
    assert p.stderr.strip().splitlines() == ["auditor: cannot write to standard output: Broken pipe"]


@pytest.mark.parametrize("args", [["replay", EXAMPLES], ["replay", EXAMPLES, "--json"], ["audit", EXAMPLES],
                                  ["schema"]])
def test_a_full_stdout_is_exit_4_and_one_line(args):
    with open("/dev/full", "w") as full:
        p = subprocess.run([PY, "-m", "auditor", *map(str, args)], stdout=full, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
    assert p.returncode == 4
    assert p.stderr.strip().splitlines() == ["auditor: cannot write to standard output: No space left on device"]


def test_a_closed_stdout_is_exit_4():
    p = subprocess.run(f"'{PY}' -m auditor replay '{EXAMPLES}' >&-", shell=True, capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 4 and "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("auditor: cannot write to standard output")


def test_help_documents_the_exit_codes():
    r = run("--help")
    text = " ".join(r.stdout.split())
    assert "3 no deal was replayed" in text and "4 standard output could not be written" in text


# ------------------------------------------------------------------ terminal injection


def _hostile_log(tmp_path) -> Path:
    recs = _records()
    for r in recs:
        r["game_id"] = "g" + HOSTILE + r["game_id"]
        r["table"] = "t" + HOSTILE
        r["players"] = [("ann" if p == "ann" else p) + HOSTILE if i == 0 else p for i, p in enumerate(r["players"])]
    recs[0]["tricks"][0][1], recs[0]["tricks"][1][1] = recs[0]["tricks"][1][1], recs[0]["tricks"][0][1]  # findings
    bad = {"format": "deal-log/1", "game": "scotch_whist", "rules": "foster" + HOSTILE, "game_id": "b" + HOSTILE}
    return _write_jsonl(tmp_path / ("log" + ".jsonl"), recs, [json.dumps(bad), "no json" + HOSTILE])


def test_replay_and_audit_never_print_a_raw_control(tmp_path):
    log = _hostile_log(tmp_path)
    table = "t" + HOSTILE
    for args in (["replay", log], ["replay", log, "--engine", "reference"], ["audit", log, "--table", table],
                 ["audit", log, "--table", table, "--engine", "reference"], ["audit", log, "--table", "x" + HOSTILE]):
        r = run(*args)
        assert r.exit_code in (0, 1, 3), r.output
        assert _has_raw(r.stdout) == [] and _has_raw(r.stderr) == [], args
        assert "\\x1b[2J" in r.stdout, args  # shown (the game ids, the selection line), not obeyed
    assert r.exit_code == 3 and "x\\x1b[2J" in r.stderr  # the selection that matches nothing, quoted safely
    r = run("replay", log)
    assert "\\u202e" in r.stdout and "\\x9b" in r.stdout and "\\x07" in r.stdout
    doc = json.loads(run("replay", log, "--json").stdout)  # the JSON keeps the exact strings
    assert any(g["game_id"].startswith("g" + HOSTILE) for g in doc["games_summary"])


def test_markdown_and_html_reports_hold_no_raw_control(tmp_path):
    log = _hostile_log(tmp_path)
    for suffix in ("md", "html"):
        out = tmp_path / f"r.{suffix}"
        r = run("audit", log, "--out", out, "--engine", "reference")
        assert r.exit_code in (0, 1), r.output
        text = out.read_text(encoding="utf-8")
        assert _has_raw(text) == [], suffix
        assert re.search(r"x1b\\?\[2J", text), suffix  # visible in both (Markdown escapes '\\' and '[')


def test_investigate_never_prints_a_raw_control(tmp_path):
    log = _hostile_log(tmp_path)
    name = "ann" + HOSTILE
    out = tmp_path / "inv.html"
    r = run("investigate", log, "--player", name, "--out", out)
    assert r.exit_code in (0, 1), r.output
    assert _has_raw(r.stdout) == [] and _has_raw(out.read_text()) == []
    assert "ann\\x1b[2J" in r.stdout
    r = run("investigate", log, "--player", "an" + HOSTILE)  # unknown: the suggestion quotes log names
    assert r.exit_code == 2 and _has_raw(r.stderr) == [] and "did you mean" in r.stderr


def test_stderr_lines_are_escaped_too(tmp_path):
    missing = tmp_path / ("no" + HOSTILE + ".jsonl")
    r = run("replay", missing, EXAMPLES)
    assert r.exit_code == 1  # the missing file is a bad_record finding
    assert _has_raw(r.stderr) == [] and "no\\x1b[2J" in r.stderr
    trunc = tmp_path / ("cut" + "\x1b]0;t\x07" + ".jsonl.gz")
    g = gzip.compress(EXAMPLES.read_bytes())
    trunc.write_bytes(g[: len(g) // 2])
    r = run("replay", trunc)  # the "unreadable after line" message names the file
    assert "unreadable after line" in r.stderr and _has_raw(r.stderr) == []
    assert re.search(r"cut\\x1b\]0;t\\x07\.jsonl\.gz", r.stderr)


def test_the_documents_writer_thread_keeps_order_bounds_memory_and_raises_its_error():
    """`cli._WriterThread` (the audit's document written to stdout by a thread while it is made): every write in
    order, a reused buffer copied, at most `limit` bytes waiting (but a larger write alone), and a failed write raised
    in the caller, by its next write or by `close`."""
    import threading

    from auditor.cli import _WriterThread

    class Slow:
        def __init__(self):
            self.got = []
            self.gate = threading.Event()

        def write(self, data):
            self.gate.wait()
            self.got.append(bytes(data))

    out = Slow()
    w = _WriterThread(out, limit=10)
    w.BLOCK = 1  # each write handed over alone (by default they are gathered into blocks of 1 MB)
    buf = bytearray(b"abc")
    w.write(buf)
    buf[:] = b"xyz"  # reused by its owner after the write returned
    t = threading.Thread(target=lambda: [w.write(b"%d" % i) for i in range(20)])
    t.start()
    t.join(0.3)
    assert t.is_alive() and w._waiting <= 10  # held back: the reader has not taken anything
    out.gate.set()
    t.join()
    w.write(b"0123456789ABCDEF")  # larger than the limit: written alone
    w.close()
    assert b"".join(out.got) == b"abc" + b"".join(b"%d" % i for i in range(20)) + b"0123456789ABCDEF"

    class Broken:
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    stuck = Slow()  # a reader that never reads: Ctrl-C or an error drops what waits (`abandon`)
    w = _WriterThread(stuck, limit=10)
    w.BLOCK = 1
    w.write(b"x" * 5)
    w.write(b"y" * 5)
    w.abandon()
    assert w._waiting == 0 and not w._queue
    stuck.gate.set()
    w._thread.join(5)
    assert not w._thread.is_alive() and b"y" * 5 not in stuck.got

    gathered = Slow()
    gathered.gate.set()
    w = _WriterThread(gathered)
    for i in range(1000):
        w.write(b"%04d" % i)
    w.close()
    assert gathered.got == [b"".join(b"%04d" % i for i in range(1000))]  # one block

    w = _WriterThread(Broken())
    w.BLOCK = 1
    w.write(b"a")
    with pytest.raises(BrokenPipeError):
        for _ in range(1000):
            w.write(b"b")
            __import__("time").sleep(0.001)
    with pytest.raises(BrokenPipeError):
        w.close()
