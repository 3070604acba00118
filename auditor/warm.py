"""Imported by the fork server of the audit's fresh processes (`auditor.pools.fresh_context`), so that each process
forked from it starts with what every part needs already loaded: the modules the replay and the counts import
lazily (pandas through pyarrow's conversions, pyarrow.compute), scipy.stats for the tests' processes, and numba's
typing and target registries (about 0.3 s per process otherwise, before the first cached kernel can be loaded).
And the CLI: a process forked from the server imports the main module of the audit's process again
(multiprocessing's `spawn.prepare`), and `python -m auditor` and the `auditor` script both import `auditor.cli`
(typer and its kin: 30-60 ms of each of the 15 processes of a 300,000-deal audit, before this; issue 15, a
twenty-seventh session). Nothing here starts a thread."""

from __future__ import annotations

import pandas  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.pandas_compat  # noqa: F401
import numba.typed  # noqa: F401
import scipy.stats  # noqa: F401  (the tests use it; the detectors import it at first use: `stats.scipy_stats`)
from numba.core.registry import cpu_target

import auditor.audit  # noqa: F401
import auditor.cli  # noqa: F401

cpu_target.typing_context.refresh()
cpu_target.target_context.refresh()
