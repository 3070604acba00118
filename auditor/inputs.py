"""Input arguments at scale: a directory means the log files under it (issue 15).

`expand_inputs(paths)` turns every directory argument into the `.parquet`, `.jsonl` and `.jsonl.gz` files under it,
recursively, in a deterministic natural order (path components compared by `columns.natural_key`: `part-2` before
`part-10`, `table=club-7` before `table=club-10`); files given by name stay as given, in place. Hidden entries and
pyarrow's bookkeeping files (names starting with `.` or `_`, such as `_SUCCESS` or `_common_metadata`) are skipped.
A hive-style dataset (`table=club-7/month=2026-11/part-0.parquet`, as `pyarrow.parquet.write_to_dataset(...,
partition_cols=[...])` writes it) needs nothing more here: the Parquet reader gives the partition values of the
deal-log fields back as columns when a file lacks them (`auditor.parquet.hive_values`).

A directory with no such file, or one that cannot be listed, raises `InputError` with a one-line message naming it
(the command line prints it; never a traceback).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .columns import natural_key
from .errors import InputError

LOG_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz")


def is_log_file(name: str) -> bool:
    return name.endswith(LOG_SUFFIXES) and not name.startswith((".", "_"))


def _sort_key(rel: str) -> tuple[tuple, ...]:
    return tuple(natural_key(part) for part in rel.split(os.sep))


def files_under(directory: str) -> list[str]:
    """The log files under a directory, recursively, in natural order of their relative paths."""
    problems: list[OSError] = []

    def onerror(e: OSError) -> None:
        problems.append(e)

    found: list[str] = []
    for root, dirs, files in os.walk(directory, onerror=onerror, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        rel_root = os.path.relpath(root, directory)
        for f in files:
            if is_log_file(f):
                found.append(f if rel_root == "." else os.path.join(rel_root, f))
    if problems:
        e = problems[0]
        where = getattr(e, "filename", None) or directory
        raise InputError(f"cannot be listed ({where}: {e.strerror or type(e).__name__})", directory)
    if not found:
        raise InputError("a directory with no .parquet, .jsonl or .jsonl.gz file under it", directory)
    found.sort(key=_sort_key)
    return [os.path.join(directory, rel) for rel in found]


def expand_inputs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Every argument as a list of files: a directory as the log files under it (`files_under`), anything else as
    given (a missing or unreadable file is the reader's finding, as today)."""
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if os.path.isdir(s):
            out.extend(files_under(s))
        else:
            out.append(s)
    return out


__all__ = ["expand_inputs", "files_under", "is_log_file", "LOG_SUFFIXES"]
