"""Which report a file name asks for: `.html`, `.md` or `.json` by its suffix.

A module of its own, importing nothing of the report, so that the command line can check `--out` before the work
starts without loading the view (which reads the detectors' registry: numba and scipy, seconds to import)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError


def format_of(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".md", ".markdown"):
        return "md"
    if suffix == ".json":
        return "json"
    raise UsageError(f"--out {str(path)!r}: the report's file name must end in .html, .md or .json")
