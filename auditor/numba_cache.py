"""Where numba keeps the compiled kernels: a user cache directory, never inside the installed package.

The detectors and the batch engine compile their kernels with `@njit(cache=True)`. By default numba writes that
cache next to the source, i.e. into `site-packages/auditor/**/__pycache__/`. pip does not know those files, so
`pip uninstall` (or `pip install -e .` over `pip install .`) leaves an `auditor/` folder behind that shadows the
editable package: `auditor audit` then fails with `No module named 'auditor.detectors.registry'`. So the cache goes
to a user cache directory, chosen before numba is first imported (`auditor/__init__.py` calls `configure()`):

1. `NUMBA_CACHE_DIR`, when the user set it (non-empty);
2. else `$XDG_CACHE_HOME/auditor/numba` (an absolute `XDG_CACHE_HOME`);
3. else `~/.cache/auditor/numba`.

If that directory cannot be created or written, the kernels are compiled for this process only: a private
temporary directory, removed at exit (no cache, still working); if not even that can be had, numba's caching is
switched off. Nothing is printed either way.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

ENV = "NUMBA_CACHE_DIR"
_CONFIGURED: tuple[str | None, bool, str] = (None, False, "")  # what `configure` last chose: (the directory, kept
# after this process or not, the directory wanted)
_PRIVATE: set[str] = set()  # the private directories made here (removed at exit)


def default_dir(environ: Mapping[str, str] | None = None) -> str:
    """The cache directory to use (not created): NUMBA_CACHE_DIR, $XDG_CACHE_HOME/auditor/numba or
    ~/.cache/auditor/numba."""
    env = os.environ if environ is None else environ
    given = env.get(ENV, "")
    if given:
        return os.path.expanduser(given)
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "auditor", "numba")
    return os.path.join(os.path.expanduser("~"), ".cache", "auditor", "numba")


def _usable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # what numba's locator checks: the directory is writable
        return True
    except (OSError, ValueError):
        return False


def _private_dir() -> str | None:
    try:
        path = tempfile.mkdtemp(prefix="auditor-numba-")
    except OSError:
        return None
    atexit.register(shutil.rmtree, path, True)
    _PRIVATE.add(path)
    return path


def _disable_caching() -> None:
    """Last resort: no directory at all can be written. `cache=True` then compiles without a cache."""
    try:
        # numba is imported here only, on this last resort: it costs seconds of start-up
        from numba.core import dispatcher

        cls: Any = dispatcher.Dispatcher  # replacing a method of numba's class, which its types do not allow
        cls.enable_caching = lambda self: None
    except (ImportError, AttributeError):  # numba missing or changed: it then does what it does
        pass


def configure() -> str | None:
    """Point numba's cache at a user directory (see the module docstring). Returns the directory, or None when
    caching is off. Safe to call more than once, and after numba was imported."""
    global _CONFIGURED
    wanted = default_dir()
    path: str | None
    if wanted in _PRIVATE:  # a second call reads back the private directory the first one set: still private
        path, wanted = wanted, _CONFIGURED[2]
    else:
        path = wanted if _usable(wanted) else _private_dir()
    _CONFIGURED = (path, path is not None and path not in _PRIVATE, wanted)
    if path is None:
        _disable_caching()
        return None
    os.environ[ENV] = path  # read when numba is first imported, and again whenever numba reloads its config
    cfg: Any = sys.modules.get("numba.core.config")  # a module found at run time: its attributes are unknown
    if cfg is not None:  # numba was imported before auditor
        cfg.CACHE_DIR = path  # kernels decorated from now on use it (a reload reads the same from the environment)
    return path


def current_dir() -> str | None:
    """The cache directory `configure` chose for this process (None: caching is off)."""
    return _CONFIGURED[0]


def is_persistent() -> bool:
    """Whether that directory outlives this process (the user's cache directory, not a private temporary one)."""
    return _CONFIGURED[1]


def wanted_dir() -> str:
    """The directory `configure` wanted (the user's, usable or not)."""
    return _CONFIGURED[2] or default_dir()
