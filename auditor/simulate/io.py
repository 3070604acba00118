"""Writing a simulation: the deal log (JSON Lines, gzip when the name ends in .gz, or Parquet through the project's
converter), the key and the decisions. Each file is written whole or not at all (`auditor.atomic`, issue 12): a
failure or an interruption leaves no partial file and keeps an older file of the same name."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..atomic import atomic_open, atomic_path, scratch_path
from ..dealog import write_jsonl
from ..errors import UsageError
from ..fast.convert import convert_file


class Simulated(Protocol):
    """What is written of a simulation (`auditor.simulate.season.Simulation`)."""

    @property
    def records(self) -> Sequence[dict[str, Any]]: ...

    @property
    def key(self) -> Mapping[str, Any]: ...

    @property
    def decisions(self) -> Sequence[dict[str, Any]] | None: ...


def format_of(path: str) -> str:
    return "parquet" if str(path).endswith(".parquet") else "jsonl"


def write_simulation(sim: Simulated, out: str, fmt: str | None = None, key_path: str | None = None,
                     decisions_path: str | None = None) -> int:
    """Write `sim.records` to `out` ("jsonl" or "parquet"; default from the name), the key and the decisions if
    asked. Returns the number of records written."""
    fmt = fmt or format_of(out)
    if fmt == "jsonl":
        with atomic_path(out) as tmp:  # the temporary name ends like `out`: gzip when it ends in .gz
            count = write_jsonl(sim.records, tmp)
    elif fmt == "parquet":
        if not str(out).endswith(".parquet"):
            raise UsageError(f"{out}: a Parquet output must end in .parquet")
        # the JSON Lines go through a hidden temporary file beside `out`, removed whatever happens; the Parquet
        # file itself is written atomically by convert_file
        with scratch_path(out + ".jsonl") as tmp:
            write_jsonl(sim.records, tmp)
            res = convert_file(tmp, out)
        if res.lost or res.raw:
            raise UsageError(f"{out}: the Parquet writer did not keep every record: {res.lost[:3]}")
        count = res.records
    else:
        raise UsageError(f"the format must be 'jsonl' or 'parquet', got {fmt!r}")
    if key_path:
        with atomic_open(key_path, "w", encoding="utf-8") as f:
            json.dump(sim.key, f, indent=1)
            f.write("\n")
    if decisions_path:
        if sim.decisions is None:
            raise UsageError("no decisions were logged (SeasonSpec.log_decisions=False)")
        with atomic_path(decisions_path) as tmp:
            write_jsonl(sim.decisions, tmp)
    return count
