"""Which report a file name asks for: `.html`, `.md` or `.json` by its suffix; `.parquet` or `.csv` ask for the
table of tests (issue 16).

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
    if suffix == ".parquet":  # issue 16: the tests table (`auditor.api.tests_frame`), not a report
        return "parquet"
    if suffix == ".csv":
        return "csv"
    raise UsageError(f"--out {str(path)!r}: the report's file name must end in .html, .md or .json (or .parquet, "
                     f".csv for the table of tests)")
