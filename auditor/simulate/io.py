"""Writing a simulation: the deal log (JSONL, gzip by name, or Parquet), the key and the decisions."""

from __future__ import annotations

import json

from ..dealog import write_jsonl
from ..errors import UsageError


def write_simulation(sim, out: str, fmt: str = "jsonl", key_path: str | None = None,
                     decisions_path: str | None = None) -> int:
    """Write `sim.records` to `out` (fmt "jsonl" or "parquet"), the key and the decisions if asked.
    Returns the number of records written."""
    if fmt == "jsonl":
        count = write_jsonl(sim.records, out)
    elif fmt == "parquet":
        try:
            from .. import parquet
        except ImportError:
            raise UsageError("Parquet output needs auditor.parquet, which this build does not have; "
                             "use --format jsonl") from None
        writer = getattr(parquet, "write_parquet", None) or getattr(parquet, "write_records", None)
        if writer is None:
            raise UsageError("auditor.parquet has no writer (write_parquet); use --format jsonl")
        writer(sim.records, out)
        count = len(sim.records)
    else:
        raise UsageError(f"--format must be 'jsonl' or 'parquet', got {fmt!r}")
    if key_path:
        with open(key_path, "w", encoding="utf-8") as f:
            json.dump(sim.key, f, indent=1, sort_keys=False)
            f.write("\n")
    if decisions_path:
        if sim.decisions is None:
            raise UsageError("no decisions were logged (SeasonSpec.log_decisions=False)")
        write_jsonl(sim.decisions, decisions_path)
    return count
