"""`auditor warm-cache` (issue 15, running on a cluster): the kernels compiled into their cache before the first
audit, by running a room's commands on a small simulated season. The orchestration is tested here with a runner
that records the commands; the slow test runs it for real in an empty cache and checks that an audit of another
season in parts then compiles nothing more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import numba_cache, warmcache
from auditor.errors import AuditorError


class Recorder:
    """A runner that records each command (and what its files hold when it runs) and answers with `codes`."""

    def __init__(self, codes=None, stderr=""):
        self.calls: list[tuple[tuple[str, ...], dict[str, str]]] = []
        self.codes = codes or {}
        self.stderr = stderr
        self.folder: Path | None = None
        self.players: list[str] = []

    def __call__(self, args, env):
        self.calls.append((tuple(args), dict(env)))
        for jsonl in (Path(a) for a in args if a.endswith("season.jsonl")):
            self.folder = jsonl.parent
            assert jsonl.is_file() and jsonl.stat().st_size > 0  # the season is there while the steps run
            with open(jsonl, encoding="utf-8") as fh:
                self.players = sorted({p for line in fh for p in json.loads(line)["players"]})
        return subprocess.CompletedProcess(list(args), self.codes.get(args[0], 0), "", self.stderr)


@pytest.fixture()
def kept_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "auditor_x").mkdir(parents=True)
    (cache / "auditor_x" / "a.k-1.py311.nbi").write_bytes(b"")
    (cache / "auditor_x" / "a.k-1.py311.1.nbc").write_bytes(b"")
    monkeypatch.setattr(numba_cache, "_CONFIGURED", (str(cache), True, str(cache)))
    return cache


def test_steps_cover_a_rooms_commands(tmp_path):
    got = warmcache.steps(str(tmp_path), 3000, "ada")
    commands = [s.args[0] for s in got]
    assert commands == ["replay", "convert", "audit", "audit", "investigate", "monitor"]
    parts = next(s for s in got if "--part-deals" in s.args)
    assert parts.args[parts.args.index("--part-deals") + 1] == "1000" and "--workers" in parts.args
    assert str(tmp_path / "season.parquet") in parts.args  # the large-input path reads the Parquet file
    assert any("--out" in s.args and s.args[s.args.index("--out") + 1].endswith(".html") for s in got)
    assert next(s for s in got if s.args[0] == "investigate").args[-1] == "ada"
    assert next(s for s in got if s.args[0] == "convert").ok == (0,)  # convert has no "found something" code


def test_warm_runs_each_step_into_the_cache_and_cleans_up(kept_cache, monkeypatch):
    rec = Recorder()
    seen = []
    compiled: list[str] = []
    monkeypatch.setattr(warmcache, "byte_compile", lambda d: compiled.append(d) or True)
    got = warmcache.warm(300, runner=rec, progress=seen.append)
    assert compiled == [os.path.dirname(os.path.abspath(warmcache.__file__))] and got.bytecode
    assert seen.pop(0) == "byte-compiling the auditor's modules"
    assert [c[0][0] for c in rec.calls] == ["replay", "convert", "audit", "audit", "investigate", "monitor"]
    assert all(env[numba_cache.ENV] == str(kept_cache) for _, env in rec.calls)
    assert got.cache_dir == str(kept_cache) and got.kernels_before == got.kernels_after == 1 and got.added == 0
    assert len(got.steps) == 6 and seen[0].startswith("simulating a season of 300 deals")
    player = rec.calls[4][0][-1]
    assert player in rec.players  # investigate asks about someone who plays in the season
    assert rec.folder is not None and not rec.folder.exists()  # the temporary folder is gone


def test_byte_compile_writes_missing_and_stale_forms_and_says_when_it_cannot(tmp_path):
    """`warmcache.byte_compile`: a module's compiled form written where missing, and again once the source
    changed, whatever PYTHONDONTWRITEBYTECODE says (the CI machine sets it); False, not an error, where the folder
    cannot be written."""
    import importlib.util

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    src = pkg / "mod.py"
    src.write_text("X = 1\n")
    pyc = Path(importlib.util.cache_from_source(str(src)))
    assert not pyc.exists()
    assert warmcache.byte_compile(str(pkg)) is True
    first = pyc.read_bytes()
    src.write_text("X = 22\n")
    st = src.stat()
    os.utime(src, (st.st_atime, st.st_mtime + 5))  # stale now (compileall compares the source's time, in seconds)
    assert warmcache.byte_compile(str(pkg)) is True
    assert pyc.read_bytes() != first
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(tmp_path))
    code = f"import sys; sys.path.insert(0, {str(pkg)!r}); import mod; print(mod.X, mod.__cached__ is not None)"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert got.stdout.split() == ["22", "True"]
    pyc.unlink()
    (pkg / "__pycache__").rmdir()
    (pkg / "__pycache__").write_text("")  # a file where the folder should be: nothing can be written (even by root)
    assert warmcache.byte_compile(str(pkg)) is False
    assert warmcache.byte_compile(str(tmp_path / "nothing-here")) is False


def test_a_failing_step_is_named_with_its_last_line(kept_cache):
    rec = Recorder(codes={"audit": 3}, stderr="progress\nauditor: no deal was replayed\n\n")
    with pytest.raises(AuditorError) as e:
        warmcache.warm(300, runner=rec)
    msg = str(e.value)
    assert "'audit with the HTML report'" in msg and "exit code 3" in msg and "no deal was replayed" in msg
    assert "\n" not in msg
    assert [c[0][0] for c in rec.calls] == ["replay", "convert", "audit"]  # nothing after the failure
    assert rec.folder is not None and not rec.folder.exists()


def test_found_something_is_not_a_failure(kept_cache):
    rec = Recorder(codes={"replay": 1, "audit": 1, "investigate": 1, "monitor": 1})
    assert len(warmcache.warm(300, runner=rec).steps) == 6
    with pytest.raises(AuditorError, match="'convert to Parquet'.*exit code 1"):
        warmcache.warm(300, runner=Recorder(codes={"convert": 1}))


def test_refused_when_nothing_would_be_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(numba_cache, "_CONFIGURED", (str(tmp_path / "private"), False, "/no/such/dir"))
    with pytest.raises(AuditorError, match=r"cannot be kept: /no/such/dir cannot be written"):
        warmcache.warm(300, runner=Recorder())
    monkeypatch.setattr(numba_cache, "_CONFIGURED", (None, False, "/no/such/dir"))
    with pytest.raises(AuditorError, match="cannot be kept"):
        warmcache.warm(300, runner=Recorder())
    with pytest.raises(AuditorError, match="at least 200"):
        warmcache.warm(100, runner=Recorder())


def test_count_kernels(tmp_path):
    assert warmcache.count_kernels(None) == 0 and warmcache.count_kernels(str(tmp_path / "none")) == 0
    for d, names in (("a_1", ["x.f-1.py311.nbi", "x.f-1.py311.1.nbc", "x.f-1.py311.2.nbc"]), ("b_2", ["y.g-9.py311.nbi"])):
        (tmp_path / d).mkdir()
        for n in names:
            (tmp_path / d / n).write_bytes(b"")
    assert warmcache.count_kernels(str(tmp_path)) == 2


def test_configure_knows_a_private_directory(monkeypatch, tmp_path):
    """Whether the cache outlives the process, also when `configure` is called again (it then reads back the
    private directory it set itself)."""
    monkeypatch.setattr(numba_cache, "_CONFIGURED", (None, False, ""))
    monkeypatch.setattr(numba_cache, "_PRIVATE", set())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(numba_cache.ENV, str(blocker / "numba"))  # cannot be made: its parent is a file
    first = numba_cache.configure()
    assert first is not None and first != str(blocker / "numba")
    assert numba_cache.current_dir() == first and not numba_cache.is_persistent()
    assert numba_cache.wanted_dir() == str(blocker / "numba")
    assert numba_cache.configure() == first and not numba_cache.is_persistent()  # read back: still private
    assert numba_cache.wanted_dir() == str(blocker / "numba")
    mine = tmp_path / "mine"
    monkeypatch.setenv(numba_cache.ENV, str(mine))
    assert numba_cache.configure() == str(mine) and numba_cache.is_persistent()


def test_cli_refuses_too_few_deals_in_one_line():
    out = subprocess.run([sys.executable, "-m", "auditor", "warm-cache", "--deals", "50"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == "auditor: --deals must be at least 200 (whole games at every table), got 50"


@pytest.mark.slow
def test_warm_cache_compiles_what_an_audit_in_parts_needs(tmp_path):
    """For real, in an empty cache: then an audit of another season (another seed, a Parquet file in parts on two
    workers) and a replay of it compile nothing more."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")

    def auditor(*args, ok=(0, 1)):
        out = subprocess.run([sys.executable, "-m", "auditor", *args], env=env, capture_output=True, text=True,
                             timeout=1200)
        assert out.returncode in ok, out.stderr
        return out

    got = auditor("warm-cache", "--deals", "2000", ok=(0,))
    assert "compiled kernels in " + str(tmp_path / "cache") in got.stderr
    auditor("simulate", "--preset", "club-season", "--deals", "6000", "--seed", "3", "--out",
            str(tmp_path / "other.parquet"))  # (the simulator's own Parquet writer may compile something: before)
    sigs = sorted(str(p) for p in (tmp_path / "cache").rglob("*.nbc"))
    assert len(sigs) >= 25  # 35 signatures were written here (this session), from an empty cache
    auditor("audit", "--json", str(tmp_path / "other.parquet"), "--part-deals", "2000", "--workers", "2")
    auditor("replay", str(tmp_path / "other.parquet"))
    assert sorted(str(p) for p in (tmp_path / "cache").rglob("*.nbc")) == sigs


def test_a_process_that_cannot_be_started_is_one_error(kept_cache):
    def runner(args, env):
        raise FileNotFoundError(2, "No such file or directory", "/gone/python")

    with pytest.raises(AuditorError) as e:
        warmcache.warm(300, runner=runner)
    assert str(e.value) == "warm-cache: /gone/python: No such file or directory"
