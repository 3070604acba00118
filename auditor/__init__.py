"""auditor: replay, test and report on Scotch Whist and All Fours deal logs (deal-log/1).

Tables for analysts (issue 16), as polars DataFrames (`auditor.api`):

    auditor.read_deals(paths)              one row per replayed deal
    auditor.run_audit(paths, **options)    the audit: .tests, .flags, .findings, .games, .document, .report

They are imported on first use, so that `import auditor` (and the command line) does not load polars, numba or
the detectors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

from . import numba_cache as _numba_cache  # noqa: E402 - before any numba import: kernels cached outside the package

_numba_cache.configure()

if TYPE_CHECKING:
    from .api import AuditTables, read_deals, run_audit

__all__ = ["AuditTables", "read_deals", "run_audit", "__version__"]

_LAZY = {"read_deals": "auditor.api", "run_audit": "auditor.api", "AuditTables": "auditor.api"}


def __getattr__(name: str) -> Any:
    """The analysts' API, loaded when first asked for (`auditor.read_deals`, `auditor.run_audit`)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'auditor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
