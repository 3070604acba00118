"""Partitions of a table of replayed deals, for the tests that hold merged counts equal to the whole's (issue 15):
parts of whole tables, and each table cut in two pieces disjoint in the canonical order (last month, this month)."""

from __future__ import annotations

import numpy as np

from ..columns import AuditColumns, natural_key


def parts_of_whole_tables(cols: AuditColumns, k: int = 3) -> list[AuditColumns]:
    """`k` parts, the tables dealt to them in turn in natural order."""
    names = sorted(cols.tables, key=natural_key)
    groups = [names[i::k] for i in range(k)]
    return [cols.take(np.flatnonzero(np.isin(cols.table, [cols.tables.index(t) for t in g]))) for g in groups]


def time_pieces(cols: AuditColumns) -> tuple[AuditColumns, AuditColumns]:
    """Each table's deals split at the middle of its canonical order: (earlier deals, later deals)."""
    early = np.zeros(len(cols), bool)
    for t in np.unique(cols.table):
        rows = np.flatnonzero(cols.table == t)
        rows = rows[np.argsort(cols.order[rows])]
        early[rows[: len(rows) // 2]] = True
    return cols.take(np.flatnonzero(early)), cols.take(np.flatnonzero(~early))
