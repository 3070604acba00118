"""Imported by the fork server of the audit's fresh processes (`auditor.pools.fresh_context`), so that each process
forked from it starts with what every part needs already loaded: the modules the replay and the counts import
lazily (pandas through pyarrow's conversions, pyarrow.compute), scipy.stats for the tests' processes, and numba's
typing and target registries (about 0.3 s per process otherwise, before the first cached kernel can be loaded).
And the CLI: a process forked from the server imports the main module of the audit's process again
(multiprocessing's `spawn.prepare`), and `python -m auditor` and the `auditor` script both import `auditor.cli`
(typer and its kin: 30-60 ms of each of the 15 processes of a 300,000-deal audit, before this; issue 15, a
twenty-seventh session). Nothing here starts a thread. The objects imported here are frozen out of the garbage
collector's passes (below)."""

from __future__ import annotations

import gc


# The collector is off while importing (its passes over the growing heap: 0.15 s of the server's start), and the
# modules' objects are then kept out of its reach in every process forked from here (issue 15, a thirtieth
# session). A full collection walks every tracked object, these included: in the parts' and the tests' processes
# that was 7% of the 300k audit's CPU time (perf: `gc_collect_main`, `visit_decref`, `visit_reachable`), and with
# them frozen the audit took 1.5-1.9 s less CPU and 0.8-1.0 s less wall time (the same document). What was already
# garbage is collected first, so that freezing keeps nothing that was meant to go. An import that fails leaves the
# collector on (multiprocessing's server ignores a preload's ImportError and serves on).
_was_on = gc.isenabled()
gc.disable()
try:
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
    gc.collect()
    gc.freeze()
    from auditor.pools import tune_gc

    tune_gc()  # and its passes fewer (auditor.pools.tune_gc)
finally:
    if _was_on:
        gc.enable()
