"""Statistics: exact tests, multiple-testing families."""

from typing import Any


def scipy_stats() -> Any:
    """`scipy.stats`, imported at its first use: its import takes some 0.6 s, which the audit's own process paid at
    start-up, before the split, though only the tests use it; they run in processes forked from a server that
    preloads it (`auditor.warm`). Issue 15, a nineteenth session."""
    import scipy.stats

    return scipy.stats
