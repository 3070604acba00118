"""Issue 16, item 4 ("Terminal and help"): at 80 columns no path, place, id or name is cut across lines and the
verdict comes first; `--help` shows clean argument names and the exit codes; a JSON syntax error names its column
and the parser's reason, and a pretty-printed file gets one hint; `calibrate` shows progress with an estimate on
stderr, has a quick mode, and writes plots only where it is told."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from auditor import calibrate as cal
from auditor.calibrate_play import SIZES_QUICK, season_count, wrap_lines
from auditor.cli import EXIT_CODES, app
from auditor.replay.run import replay_paths
from auditor.report.console import Col, StudyProgress, print_replay, print_table
from auditor.report.terminal import print_audit
from conftest import REPLAY_FIXTURES, ROOT

DEMO = ROOT / "fixtures" / "demo" / "season.jsonl.gz"
EXAMPLES = ROOT / "fixtures" / "examples.jsonl"


def render(fn, width: int) -> str:
    buf = io.StringIO()
    fn(Console(file=buf, width=width, color_system=None, highlight=False))
    return buf.getvalue()


def assert_tokens_whole(fn, tokens, widths=(40, 80, 120)) -> None:
    """Each token occurs as often at `widths` as in a render too wide to wrap anything: a token cut across two
    lines is one occurrence fewer (and a cut that leaves a shorter token behind is one more). Tokens that would
    not fit on a line beside a label (16 columns) are not held to it."""
    wide = render(fn, 5000)
    tokens = sorted({t for t in tokens if t and wide.count(t)})
    assert tokens
    for w in widths:
        text = render(fn, w)
        assert max(len(line) for line in text.splitlines()) <= w, w
        cut = {t: (wide.count(t), text.count(t)) for t in tokens
               if wide.count(t) != text.count(t) and len(t) <= w - 16}  # a token longer than a line cannot stay
        assert not cut, (w, sorted(cut.items())[:5])


# ------------------------------------------------------------------ the terminal


@pytest.fixture(scope="module")
def demo_replay():
    return replay_paths([str(DEMO)])


def _replay_tokens(rep) -> set[str]:
    out = set()
    for f in rep.findings[:50]:
        path, _, line = f.source.rpartition(":")
        out |= {f"{Path(path).name}:{line}", f.game_id or "", f.player or ""}
    return out | {g.game_id for g in rep.games_summary[:50]}


def test_replay_summary_never_cuts_a_token_and_says_the_verdict_first(demo_replay):
    assert_tokens_whole(lambda con: print_replay(demo_replay, con), _replay_tokens(demo_replay))
    text = render(lambda con: print_replay(demo_replay, con), 80)
    first = text.splitlines()[0]
    assert first.startswith(f"{len(demo_replay.findings)} findings in 8000 deals replayed: revoke")
    assert text.index(first) < text.index("Findings by code") < text.index("Games")


def test_a_long_file_name_and_long_ids_stay_whole(tmp_path):
    """The issue's 'se | ason.jsonl.gz:13 | 31': a file name longer than the place column was, long game ids."""
    src = tmp_path / ("club-seven-season-" * 3 + "final.jsonl")
    lines = (REPLAY_FIXTURES / "find_play.jsonl").read_text().splitlines()
    objs = [json.loads(x) for x in lines if x.strip()]
    for o in objs:
        o["game_id"] = "2026-11-01/the-long-table-name-of-the-club/" + str(o["game_id"])
    src.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    rep = replay_paths([str(src)])
    assert rep.findings
    assert_tokens_whole(lambda con: print_replay(rep, con), _replay_tokens(rep))
    narrow = render(lambda con: print_replay(rep, con), 80)
    assert f"{src.name}:1" in narrow  # the place column holds it whole (one row per block below that)


def test_print_table_layouts():
    cells = [("a-very-long-token-that-must-stay-whole", "12", "words that may wrap between them " * 3)]
    rows = [(list(c), None) for c in cells]
    cols = [Col("id", "token"), Col("n", "num"), Col("what")]

    def table(con):
        print_table(con, "T", cols, rows)

    assert "┃ id" in render(table, 200)  # a table at its natural width
    mid = render(table, 60)  # the id whole, the words wrapped
    assert "a-very-long-token-that-must-stay-whole" in mid and "┃" in mid and len(mid.splitlines()) > 5
    narrow = render(table, 44)  # no room for a table: one block per row, header: value
    assert narrow.splitlines()[:2] == ["T", "a-very-long-token-that-must-stay-whole"]
    assert "  n:" in narrow and "┃" not in narrow


@pytest.mark.slow
def test_audit_summary_never_cuts_a_token_slow():
    _audit_tokens_check()


def _audit_tokens_check():
    from auditor.audit import audit_input

    report = audit_input([str(DEMO)], fdr=0.05, seed=0)
    try:
        doc = report.to_json(games=False)
    finally:
        report.close()
    names = {p for f in doc["tests"] for p in str(f["subject"]).split("+")}
    tokens = names | {f["subject"] for f in doc["tests"]} | {f["test"] for f in doc["tests"]}
    assert_tokens_whole(lambda con: print_audit(doc, con), tokens, widths=(50, 80, 120))
    text = render(lambda con: print_audit(doc, con), 80)
    assert text.splitlines()[0].startswith(f"{len(doc['flags'])} flags naming")  # the verdict first
    assert text.index("flags naming") < text.index("Flagged (q")


def test_audit_summary_never_cuts_a_token(tmp_path):
    """A small audit of its own (the demo's is in the slow tier): the examples with long player names."""
    from auditor.audit import audit_input

    objs = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    for o in objs:
        o["players"] = [f"{p}-of-the-very-long-member-name" for p in o["players"]]
    src = tmp_path / "examples-with-long-member-names.jsonl"
    src.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    report = audit_input([str(src)], fdr=0.05, seed=0)
    try:
        doc = report.to_json(games=False)
    finally:
        report.close()
    tokens = {p for o in objs for p in o["players"]} | {f["test"] for f in doc["tests"]}
    assert_tokens_whole(lambda con: print_audit(doc, con), tokens, widths=(40, 80))
    assert render(lambda con: print_audit(doc, con), 80).startswith("No one is flagged")


# ------------------------------------------------------------------ --help


def _commands() -> list[str]:
    import typer

    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120])
def test_every_help_is_clean_and_has_the_exit_codes(width):
    codes = " ".join(EXIT_CODES.split())
    for cmd in [None, *_commands()]:
        r = CliRunner().invoke(app, ([cmd] if cmd else []) + ["--help"], env={"COLUMNS": str(width)})
        assert r.exit_code == 0, (cmd, r.output)
        out = r.stdout
        assert not re.search(r"<[a-z_\[\], ]+>|\{[a-z_]+\}", out), (cmd, out)  # <list[str]>, <bool>, {paths}
        assert codes in " ".join(out.split()), cmd
        assert max(len(line) for line in out.splitlines()) <= width, cmd
        assert out.startswith("Usage: "), cmd
    for cmd in ("replay", "audit", "investigate"):
        usage = CliRunner().invoke(app, [cmd, "--help"], env={"COLUMNS": "80"}).stdout.splitlines()[0]
        assert usage.endswith(f"{cmd} [OPTIONS] PATH..."), usage
    text = CliRunner().invoke(app, ["audit", "--help"], env={"COLUMNS": "80"}).stdout
    assert "--out FILE" in text and "--seed N" in text and "--json  " in text


# ------------------------------------------------------------------ JSON errors


@pytest.mark.parametrize("engine", ["batch", "reference"])
def test_a_json_syntax_error_names_the_column_and_the_reason(tmp_path, engine):
    good = EXAMPLES.read_text().splitlines()[0]
    cut = good.index('",', 30) + 1
    bad = good[:cut] + good[cut + 1:]  # a comma between two members left out
    bad2 = '{"format": "deal-log/1" "game": "scotch_whist"}'
    short = good[:120]  # a line cut short: the column is its end, not the next line's start
    p = tmp_path / "season.jsonl"
    p.write_text("\n".join([good, bad, bad2, short]) + "\n")
    rep = replay_paths([str(p)], engine=engine)
    msgs = {f.source: f.message for f in rep.findings if f.code == "bad_record"}
    assert msgs[f"{p}:3"].startswith("not valid JSON at column 25: unexpected character, expected ',' or '}'")
    assert msgs[f"{p}:2"].startswith(f"not valid JSON at column {cut + 1}: unexpected character, expected ',' or "
                                     "'}' (near '..."), msgs  # the text near the column, not the line's start
    assert msgs[f"{p}:4"] == f"not valid JSON at column 121: unexpected end of data (near '...{good[96:120]}')"
    assert not any("pretty-printed" in m for m in msgs.values())


def _pretty(tmp_path, array: bool) -> Path:
    objs = [json.loads(x) for x in EXAMPLES.read_text().splitlines()[:3]]
    p = tmp_path / ("array.json" if array else "pretty.jsonl")
    p.write_text(json.dumps(objs, indent=2) if array else "\n".join(json.dumps(o, indent=2) for o in objs))
    return p


@pytest.mark.parametrize("array", [False, True])
def test_a_pretty_printed_file_gets_one_hint_in_both_engines(tmp_path, array):
    p = _pretty(tmp_path, array)
    found = {}
    for engine in ("batch", "reference"):
        rep = replay_paths([str(p)], engine=engine)
        found[engine] = [(f.source, f.message) for f in rep.findings]
        hints = [m for _, m in found[engine] if "pretty-printed" in m]
        assert len(hints) == 1 and len(found[engine]) > 50, engine
        assert found[engine][0][0] == f"{p}:1" and "one record per line" in hints[0]
        assert ("jq -c '.[]'" if array else "jq -c .") in hints[0]
    assert found["batch"] == found["reference"]
    r = CliRunner().invoke(app, ["replay", str(p)], env={"COLUMNS": "80"})
    assert r.exit_code == 3 and r.stdout.count("hint: ") == 1
    assert r.stdout.index("hint: ") < r.stdout.index("Findings by code")  # said before the tables


# ------------------------------------------------------------------ calibrate


def test_progress_says_what_is_left_on_stderr_only():
    ticks = iter(range(0, 1000, 10))
    err = io.StringIO()
    with StudyProgress(100, "calibrate", console=Console(file=err, width=80), clock=lambda: next(ticks)) as meter:
        meter.say("dealer_jack: 6 honest seasons")
        for _ in range(10):
            meter.advance(10)  # each tenth of the work takes 10 s of the fake clock
    lines = err.getvalue().splitlines()
    assert lines[0] == "calibrate: dealer_jack: 6 honest seasons (0% done)"
    assert lines[1] == "calibrate: 10% done, about 1 min 30 s left"  # 10 s for 10%: 90 s for the rest
    assert len(lines) == 10 and lines[-1].startswith("calibrate: 90% done, about 10 s left")


def test_work_units_count_what_calibrate_advances(monkeypatch):
    """The bar's total is what the study counts: a tiny run ends exactly at `work_units`."""
    sizes = {"honest_seasons": 1, "power_seasons": 1, "curve_seasons": 0, "uniformity_seasons": 0,
             "shuffle_seasons": 0}
    monkeypatch.setattr(cal, "STUDIES", {k: cal.STUDIES[k] for k in ("turnup_jack", "dealer_cutter")})
    done = []
    cal.calibrate(seed=3, advance=done.append, **sizes)
    assert sum(done) == cal.work_units(**sizes) > 0 and len(done) == 2 * (1 + 2)
    assert cal.work_units(**cal.QUICK) < cal.work_units(**cal.FAST) / 5
    assert season_count(sizes=SIZES_QUICK) == 1 + 2 + 2 + 5 and season_count(fast=True) > 20  # 5 revoke studies


def test_calibrate_out_dir_holds_the_plot_and_the_working_folder_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small = dict(cal.QUICK, honest_seasons=1, power_seasons=1, curve_seasons=1)
    monkeypatch.setattr(cal, "QUICK", small)
    monkeypatch.setattr(cal, "STUDIES", {k: cal.STUDIES[k] for k in ("turnup_jack",)})
    r = CliRunner().invoke(app, ["calibrate", "--quick"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert list(tmp_path.iterdir()) == []  # no power_curve.png in the working folder
    assert "calibrate: turnup_jack: 1 honest seasons (0% done)" in r.stderr and "% done" not in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    r = CliRunner().invoke(app, ["calibrate", "--quick", "--out", "cal", "--plot", "curve.svg"])
    assert r.exit_code == 0, r.output
    assert sorted(x.name for x in (tmp_path / "cal").iterdir()) == ["calibration.json", "curve.svg"]
    assert json.loads((tmp_path / "cal" / "calibration.json").read_text())["plot"] == str(Path("cal") / "curve.svg")
    assert (tmp_path / "cal" / "curve.svg").read_text().lstrip().startswith("<?xml")
    bad = CliRunner().invoke(app, ["calibrate", "--quick", "--out", "cal", "--plot", "sub/c.png"])
    assert bad.exit_code == 2 and "file name only" in bad.stderr
    assert CliRunner().invoke(app, ["calibrate", "--quick", "--fast"]).exit_code == 2
    missing = CliRunner().invoke(app, ["calibrate", "--quick", "--out", "no/such/dir"])
    assert missing.exit_code == 2 and "no such folder" in missing.stderr


@pytest.mark.slow
def test_quick_calibrate_finishes_in_under_a_minute(tmp_path):
    import subprocess
    import sys
    import time

    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "auditor", "calibrate", "--quick", "--out", str(tmp_path / "c")],
                       capture_output=True, text=True, cwd=tmp_path, env={"COLUMNS": "80", "PATH": "/usr/bin"})
    took = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    assert took < 60, took
    assert max(len(line) for line in p.stdout.splitlines() if not line.startswith("power curve: ")) <= 80
    assert "left" in p.stderr and (tmp_path / "c" / "power_curve.png").stat().st_size > 1000


def test_play_report_lines_wrap_between_words():
    line = "revoke_honest: " + ", ".join(f"key_{i} 0.{i:04d}" for i in range(30))
    out = wrap_lines([line, "  short"], width=80).splitlines()
    assert max(map(len, out)) <= 80 and out[-1] == "  short"
    assert " ".join(" ".join(out[:-1]).split()) == " ".join(line.split())  # nothing cut, nothing lost
    assert max(map(len, wrap_lines([line]).splitlines())) <= 100  # the default: the terminal's width, at most 100
