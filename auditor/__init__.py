"""auditor: replay, test and report on Scotch Whist and All Fours deal logs (deal-log/1)."""

__version__ = "0.1.0"

from . import numba_cache as _numba_cache  # noqa: E402 - before any numba import: kernels cached outside the package

_numba_cache.configure()
