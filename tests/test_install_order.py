"""Issue 12, part 1: the README's set-up lines work in that order, twice, and numba never writes into the package.

`pip install .` then `pip install -e '.[test]'` used to leave site-packages/auditor/**/__pycache__ (numba's kernel
cache, files pip does not record) behind, shadowing the editable package. The kernels' cache now lives in a user
cache directory (auditor/numba_cache.py); `.ci/run` runs the README's first bash block as written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import numba_cache

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "auditor"


def _py(code: str, env: dict, cwd=None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=120)


def test_default_dir_precedence(tmp_path):
    home = os.path.expanduser("~")
    assert numba_cache.default_dir({}) == os.path.join(home, ".cache", "auditor", "numba")
    assert numba_cache.default_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "auditor" / "numba")
    assert numba_cache.default_dir({"XDG_CACHE_HOME": "relative/dir"}) == os.path.join(home, ".cache", "auditor",
                                                                                      "numba")
    assert numba_cache.default_dir({"XDG_CACHE_HOME": str(tmp_path), "NUMBA_CACHE_DIR": "/x/y"}) == "/x/y"
    assert numba_cache.default_dir({"NUMBA_CACHE_DIR": ""}) == os.path.join(home, ".cache", "auditor", "numba")


CHECK = """
import os, sys
{pre}
import auditor, numba
import auditor.facts as f
print(numba.config.CACHE_DIR)
print(os.environ.get("NUMBA_CACHE_DIR"))
print(f._holders._cache._cache_path)
"""


@pytest.mark.parametrize("numba_first", [False, True])
def test_kernels_cache_in_the_user_directory(tmp_path, numba_first):
    """XDG_CACHE_HOME/auditor/numba, also when numba was imported before auditor; never under the package."""
    out = _py(CHECK.format(pre="import numba" if numba_first else ""), {"XDG_CACHE_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    cfg, env, kernel = out.stdout.split()
    want = str(tmp_path / "auditor" / "numba")
    assert cfg == env == want
    assert kernel.startswith(want + os.sep)
    assert not kernel.startswith(str(PKG))
    assert (tmp_path / "auditor" / "numba").is_dir()


def test_numba_cache_dir_is_honoured(tmp_path):
    mine = tmp_path / "mine"
    out = _py(CHECK.format(pre=""), {"NUMBA_CACHE_DIR": str(mine), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0, out.stderr
    cfg, env, kernel = out.stdout.split()
    assert cfg == env == str(mine) and kernel.startswith(str(mine) + os.sep)
    assert not (tmp_path / "xdg").exists()


def test_unwritable_cache_dir_falls_back_silently(tmp_path):
    """A cache directory that cannot be made (its parent is a file): no cache kept, nothing printed, still works,
    and still nothing next to the package's sources."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code = CHECK.format(pre="") + """
import numpy as np
from auditor.cards import parse_card
print(f._holders._cache._cache_path.startswith(os.path.dirname(auditor.__file__)))
"""
    out = _py(code, {"NUMBA_CACHE_DIR": str(blocker / "numba")})
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    cfg, env, kernel, in_pkg = out.stdout.split()
    assert cfg == env and os.path.basename(cfg).startswith("auditor-numba-")
    assert in_pkg == "False"
    assert not os.path.exists(cfg)  # the private directory is removed at exit


def test_no_directory_at_all_disables_caching(monkeypatch, tmp_path):
    """No writable directory anywhere: numba's cache=True becomes a plain compile (no file written)."""
    code = """
import os, tempfile
tempfile.mkdtemp = lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "no"))
import auditor, numba
from numba.core.dispatcher import Dispatcher
import auditor.facts as f
print(type(f._holders._cache).__name__)
"""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = _py(code, {"NUMBA_CACHE_DIR": str(blocker / "numba")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["NullCache"]


def _readme_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^```bash[ \t]*\n(.*?)^```", text, re.S | re.M)
    assert m, "README.md has no bash block"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_readme_block_is_what_ci_runs():
    """The README opens with the two set-up commands .ci/run expects (it reads them from there)."""
    first = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash", 1)[0]
    assert first.count("\n") <= 3  # the block comes first
    install, tests = _readme_block()
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && auditor audit ")
    assert install.endswith("--out report.html")
    assert tests.startswith(". .venv/bin/activate && pip install -e '.[test]' && python -m pytest ")
    assert '-m "not slow"' in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "README.md" in ci and "eval" in ci
    out = subprocess.run(["bash", "-c", "awk '/^```bash[[:space:]]*$/ { inside = 1; next } inside && /^```/ "
                          "{ exit } inside && NF' README.md"], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.splitlines() == [install, tests]


@pytest.mark.slow
def test_install_then_editable_then_install_again(tmp_path):
    """The failure of issue 12: `pip install .`, run the audit, `pip install -e .`, run the audit, and once more,
    in a clone and a fresh venv (needs the package index; a few minutes)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PATH"] = str(venv / "bin") + os.pathsep + env["PATH"]

    def run(*args, ok=(0,)):
        r = subprocess.run(list(args), cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
        assert r.returncode in ok, (args, r.returncode, r.stderr[-3000:])
        assert "Traceback" not in r.stderr, r.stderr[-3000:]
        return r

    for _ in range(2):
        run(py, "-m", "pip", "install", "-q", ".")
        run(str(venv / "bin" / "auditor"), "audit", "fixtures/demo/season.jsonl.gz", "--out", "report.html",
            ok=(0, 1))
        site = Path(run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        assert not list((site / "auditor").rglob("*.nbi")), "numba wrote its cache into site-packages"
        run(py, "-m", "pip", "install", "-q", "-e", ".")
        assert not (site / "auditor").exists(), "pip left a folder behind that shadows the editable package"
        run(str(venv / "bin" / "auditor"), "audit", "fixtures/demo/season.jsonl.gz", "--out", "report.html",
            ok=(0, 1))
