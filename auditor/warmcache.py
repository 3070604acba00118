"""`auditor warm-cache`: the numba kernels compiled into their cache before the first real audit (issue 15).

The replay, the detectors and the statistics compile their kernels with `@njit(cache=True)` the first time each is
called, into the cache directory of `auditor.numba_cache`. On a fresh machine that first call is slow: the demo
season's audit took 43.4 s with an empty cache and 6.0 s once the kernels were cached (8,000 deals, 2 cores), the
issue-like 300k season's 42.7 s against 23.7 s. On a Dask cluster each worker machine pays it again, once per
worker process that starts with an empty cache (worker containers made from an image start empty every time).

`warm(...)` pays it once, where it is run: it simulates a small club season of the demo's make-up (Scotch Whist at
every table size the demo has, All Fours, planted cheaters, so that every test has subjects) into a temporary
folder and runs the commands a room runs on it, each in its own process as a user would, so that each compiles
what it needs into the same cache: `replay`, `convert` to Parquet, `audit` of the JSON Lines with the HTML report,
`audit` of the Parquet file in several parts on two workers (the path of a large input), `investigate` one player
and `monitor` the log. What they compile is kept; the temporary folder is removed. The kernels are compiled for the
arguments those runs give them: a log that calls a kernel with other argument types (rare) still compiles that
once, on first use.

It also byte-compiles the auditor's own modules (`byte_compile`) where they can be written: Python reads a
module's compiled form when it is current, and compiles the source again in every process otherwise, which it does
when it may not write that form (PYTHONDONTWRITEBYTECODE, as on the CI machine) or when the source changed after it.
An editable install (`pip install -e`) has none at first; `pip install .` compiles them itself. Issue 15, speed:
with the forms stale or missing, each audit compiled the package in its own process and again in its fork server:
the 300k season's audit took 14.1 s against 13.0-13.1 s once compiled.

numba keys its cache by the kernel's source file and by the machine's CPU type: a cache made on another CPU model,
or by another install of the auditor, is not used (the kernels are compiled again, correctly). So run it where the
audits run: on the worker image built for the nodes that will run it, with NUMBA_CACHE_DIR pointing into the image,
or once after `pip install` on a server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import numba_cache
from .errors import AuditorError
from .simulate import club_season_spec, simulate_season

DEFAULT_DEALS = 3000  # enough whole games at every table of the demo's make-up for every test to have subjects
SEED = 15  # a fixed season: the same commands compile the same kernels every time

Runner = Callable[[Sequence[str], dict[str, str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class Step:
    """One command of the warm-up: its arguments after `auditor`, and the exit codes that mean it ran (replay,
    audit, investigate and monitor say 1 when they find something, as they do on a season with cheaters)."""

    what: str
    args: tuple[str, ...]
    ok: tuple[int, ...] = (0, 1)


@dataclass(frozen=True)
class WarmResult:
    """What `warm` did: the cache directory, the compiled kernels found there before and after (numba's index
    files, one per kernel and source file), the steps run and the seconds taken."""

    cache_dir: str
    kernels_before: int
    kernels_after: int
    steps: tuple[str, ...]
    seconds: float
    bytecode: bool = True  # whether the auditor's modules' compiled forms are current (`byte_compile`)

    @property
    def added(self) -> int:
        return self.kernels_after - self.kernels_before


def steps(folder: str, deals: int, player: str) -> list[Step]:
    """The commands run on the season written to `folder` (season.jsonl, with `deals` deals); `player`: one who
    plays in it, for `investigate`."""
    jsonl = os.path.join(folder, "season.jsonl")
    parquet = os.path.join(folder, "season.parquet")
    part = str(max(200, deals // 3))
    return [
        Step("replay", ("replay", "--json", jsonl)),
        Step("convert to Parquet", ("convert", jsonl, parquet), ok=(0,)),
        Step("audit with the HTML report", ("audit", jsonl, "--out", os.path.join(folder, "report.html"))),
        Step("audit in parts on two workers", ("audit", "--json", parquet, "--part-deals", part, "--workers", "2")),
        Step("investigate a player", ("investigate", jsonl, "--player", player)),
        Step("monitor", ("monitor", "--state", os.path.join(folder, "state"), parquet)),
    ]


def count_kernels(cache_dir: str | None) -> int:
    """numba's index files (`*.nbi`: one per cached kernel and source file) under `cache_dir`."""
    if not cache_dir or not os.path.isdir(cache_dir):
        return 0
    n = 0
    for _root, _dirs, files in os.walk(cache_dir):
        n += sum(1 for f in files if f.endswith(".nbi"))
    return n


def _run(args: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace", check=False)


def _last_line(text: str) -> str:
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return lines[-1].strip() if lines else "(nothing on stderr)"


def warm(deals: int = DEFAULT_DEALS, runner: Runner | None = None,
         progress: Callable[[str], None] | None = None) -> WarmResult:
    """Compile the kernels into the cache by running `steps` on a simulated season (module docstring). Raises
    AuditorError, naming the step and quoting its last line on stderr, when a step ends otherwise than it should;
    the temporary folder is removed either way."""
    if deals < 200:
        raise AuditorError(f"--deals must be at least 200 (whole games at every table), got {deals}")
    cache_dir = numba_cache.current_dir()
    if cache_dir is None or not numba_cache.is_persistent():
        raise AuditorError(f"the kernel cache cannot be kept: {numba_cache.wanted_dir()} cannot be written (set "
                           f"{numba_cache.ENV} to a folder that can)")
    before = count_kernels(cache_dir)
    env = dict(os.environ)
    env[numba_cache.ENV] = cache_dir  # every step compiles into this process's cache
    t0 = time.perf_counter()
    if progress is not None:
        progress("byte-compiling the auditor's modules")
    bytecode = byte_compile(os.path.dirname(os.path.abspath(__file__)))
    try:
        done = _steps_in_a_folder(deals, env, runner or _run, progress)
    except OSError as e:  # the temporary folder, the season or a process that cannot be made
        raise AuditorError(f"warm-cache: {e.filename or 'a temporary folder'}: {e.strerror or e}") from None
    return WarmResult(cache_dir, before, count_kernels(cache_dir), tuple(done), time.perf_counter() - t0, bytecode)


def byte_compile(package_dir: str) -> bool:
    """The compiled form of every module under `package_dir` written where it is missing or stale (`compileall`,
    which writes them whatever PYTHONDONTWRITEBYTECODE says). False when one could not be written (an install
    that cannot be written to: its modules are then compiled in each process, as before); nothing printed."""
    import compileall

    if not os.path.isdir(package_dir):
        return False
    try:
        return bool(compileall.compile_dir(package_dir, quiet=2))
    except OSError:
        return False


def _steps_in_a_folder(deals: int, env: dict[str, str], run: Runner,
                       progress: Callable[[str], None] | None) -> list[str]:
    done: list[str] = []
    with tempfile.TemporaryDirectory(prefix="auditor-warm-") as folder:
        if progress is not None:
            progress(f"simulating a season of {deals} deals")
        jsonl = os.path.join(folder, "season.jsonl")
        simulate_season(club_season_spec(n_deals=deals), seed=SEED).write(jsonl)
        with open(jsonl, "rb") as fh:
            player = str(json.loads(fh.readline())["players"][0])  # the first deal's first seat: one who plays
        for step in steps(folder, deals, player):
            if progress is not None:
                progress(step.what)
            got = run(step.args, env)
            if got.returncode not in step.ok:
                raise AuditorError(f"warm-cache: '{step.what}' (auditor {step.args[0]}) ended with exit code "
                                   f"{got.returncode}: {_last_line(got.stderr)}")
            done.append(step.what)
    return done
