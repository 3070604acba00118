"""Writing a simulation: the deal log (JSON Lines, gzip when the name ends in .gz, or Parquet through the project's
converter), the key and the decisions."""

from __future__ import annotations

import json
import os

from ..dealog import write_jsonl
from ..errors import UsageError


def format_of(path: str) -> str:
    return "parquet" if str(path).endswith(".parquet") else "jsonl"


def write_simulation(sim, out: str, fmt: str | None = None, key_path: str | None = None,
                     decisions_path: str | None = None) -> int:
    """Write `sim.records` to `out` ("jsonl" or "parquet"; default from the name), the key and the decisions if
    asked. Returns the number of records written."""
    fmt = fmt or format_of(out)
    if fmt == "jsonl":
        count = write_jsonl(sim.records, out)
    elif fmt == "parquet":
        if not str(out).endswith(".parquet"):
            raise UsageError(f"{out}: a Parquet output must end in .parquet")
        from ..fast.convert import convert_file

        tmp = f"{out}.sim{os.getpid()}.jsonl"
        try:
            write_jsonl(sim.records, tmp)
            res = convert_file(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        if res.lost or res.raw:
            raise UsageError(f"{out}: the Parquet writer did not keep every record: {res.lost[:3]}")
        count = res.records
    else:
        raise UsageError(f"the format must be 'jsonl' or 'parquet', got {fmt!r}")
    if key_path:
        with open(key_path, "w", encoding="utf-8") as f:
            json.dump(sim.key, f, indent=1)
            f.write("\n")
    if decisions_path:
        if sim.decisions is None:
            raise UsageError("no decisions were logged (SeasonSpec.log_decisions=False)")
        write_jsonl(sim.decisions, decisions_path)
    return count
