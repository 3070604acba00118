"""How the report reads one value of the audit document, which may come from another version or be damaged: a
number is finite or absent, a mapping or a list is itself or empty. Shared by the words, the charts and the verdict
(nothing else of the report is imported here)."""

from __future__ import annotations

import math
from typing import Any

from ..replay.result import DocEntries


def finite(x: Any) -> float | None:
    """`x` as a finite float, or None (booleans, None, text that is not a number, nan and infinities): the one
    reading of "a number" for the report's words and charts."""
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def as_dict(x: Any) -> dict[str, Any]:
    """`x` when it is a dict, else an empty one (a missing or malformed block reads as empty)."""
    return x if isinstance(x, dict) else {}


def as_list(x: Any) -> list[Any]:
    """`x` when it is a list (or a document list not held, `DocEntries`: a large input's findings, read as they
    are iterated), else an empty one."""
    return x if isinstance(x, (list, DocEntries)) else []  # type: ignore[return-value]
