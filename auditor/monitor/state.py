"""The monitor's saved state: one versioned JSON document, `STATE_FILE` in the state folder, written atomically
(issue 17). No pickle: plain JSON, gzip-compressed.

Layout `monitor-state/1` (docs/monitor.md describes every field):

    {"layout": "monitor-state/1",
     "level": 0.05, "capacity": 100,                 fixed when the state is made: the guarantee needs them fixed
     "shares": {"dealer_jack": 0.5, ...},            each monitored test's share of the level (fixed likewise)
     "grid": {"q": [...], "q_weights": [...], "starts": [...], "start_weights": [...]},
     "looks": [{"look": 1, "at": ..., "files": [...], "deals_new": ..., ...}, ...],
     "streams": {test: {subject: {"rank": j, "weight": w,
                                  "e": {"log_components": [[...]], "trials", "events", "expected", "max_log_e"},
                                  "history": [[look, log_e, trials, events] per look he had trials in],
                                  "alarm": null | {"look", "at", "log_e", "trials"},
                                  "events": [the latest 200 deals with the event: {"table", "game_id", "deal_no",
                                             "p", "look", "log_lr"}]}}},
     "deals": {table: {game_id: {deal_no: content hash}}},
     "conflicts": [{"table", "game_id", "deal_no", "look", "source", "hash_kept", "hash_sent"}, ...]}

A subject's `rank` is the order in which he first appeared in the test (ties in one look: by name); his weight is
fixed then (`subject_weight`), before any of his trials is counted.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from ..atomic import write_bytes
from ..errors import InputError, UsageError
from .eprocess import Q_GRID, Q_WEIGHTS, START_GRID, START_WEIGHTS

LAYOUT = "monitor-state/1"
STATE_FILE = "state.json.gz"
DEFAULT_CAPACITY = 100
TAIL_SHARE = 0.1  # of each test's budget, kept for the subjects past the capacity


def subject_weight(share: float, rank: int, capacity: int) -> float:
    """The weight of a test's rank-th subject (1-based): the first `capacity` share (1 - TAIL_SHARE) of the test's
    share equally; later ones the tail TAIL_SHARE / (j (j + 1)) (j = rank - capacity), which sums to TAIL_SHARE: the
    weights of every subject that will ever come sum to the share, so the level holds however many come."""
    if rank <= capacity:
        return share * (1 - TAIL_SHARE) / capacity
    j = rank - capacity
    return share * TAIL_SHARE / (j * (j + 1))


def new_state(level: float, capacity: int, shares: dict[str, float]) -> dict[str, Any]:
    return {"layout": LAYOUT, "level": level, "capacity": capacity, "shares": dict(shares),
            "grid": grid(), "looks": [], "streams": {t: {} for t in shares}, "deals": {}, "conflicts": []}


def grid() -> dict[str, list]:
    return {"q": list(Q_GRID), "q_weights": list(Q_WEIGHTS), "starts": list(START_GRID),
            "start_weights": list(START_WEIGHTS)}


def state_path(folder: str | os.PathLike[str]) -> Path:
    return Path(folder) / STATE_FILE


def load_state(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The state saved in `folder`, or None when the folder holds none yet. A state that cannot be read, of
    another layout or of another grid is an `InputError` naming the file (never a fresh start over it)."""
    path = state_path(folder)
    if not path.exists():
        return None
    try:
        with gzip.open(path, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the monitor state: {e}", str(path)) from None
    if not isinstance(doc, dict) or doc.get("layout") != LAYOUT:
        got = doc.get("layout") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"not a monitor state of layout {LAYOUT!r} (found {got!r})", str(path))
    if doc.get("grid") != grid():
        raise InputError("the state was made with another grid of strengths and starts; its evidence cannot be "
                         "continued by this version", str(path))
    return doc


def save_state(folder: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write the state whole or not at all (`auditor.atomic`)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--state {str(folder)!r}: cannot make the folder: {e.strerror or e}") from None
    data = gzip.compress(json.dumps(state, separators=(",", ":"), sort_keys=True).encode("utf-8"), mtime=0)
    path = state_path(folder)
    write_bytes(path, data)
    return path
