"""Every file the auditor writes is written whole or not at all (issue 12).

`atomic_path(dest)` gives a temporary path beside `dest` (same folder, so the rename cannot cross file systems),
named `.auditor-tmp-PID-RANDOM.NAME` so that it keeps the destination's suffix (writers that choose gzip or Parquet
by the name still do) and is hidden from a plain `ls`. When the block ends normally the file is flushed to disk
(fsync) and renamed over `dest` (os.replace, atomic on POSIX); when it raises -- an error, Ctrl-C, SIGTERM (the
CLI's handler removes the temporary files of the process before it exits) -- the temporary file is removed and an
older file at `dest` is left as it was.
Only SIGKILL or a power cut can leave a hidden `.auditor-tmp-*` file behind; never a half-written `dest`. The same
handler removes the working folders a process registered (`track_folder`: the audit's `auditor-parts-*`).

`check_writable(dest)` is the CLI's check before the work starts: the folder exists, `dest` is not a folder, a
file can be created in the folder, an existing `dest` is writable.
"""

from __future__ import annotations

import os
import secrets
import shutil
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator
from typing import IO, Any

from .errors import UsageError

TMP_PREFIX = ".auditor-tmp-"
_ACTIVE: set[str] = set()  # temporary files of this process not yet renamed or removed


_FOLDERS: set[str] = set()  # working folders of this process (`track_folder`), removed with the temporaries


def track_folder(path: str) -> None:
    """A working folder of this process (the audit's parts, spilled counts, games summaries: gigabytes at 10M
    deals) that SIGTERM removes too; `untrack_folder` when the owner has removed it."""
    _FOLDERS.add(path)


def untrack_folder(path: str) -> None:
    _FOLDERS.discard(path)


def remove_temporaries() -> None:
    """Remove every temporary file this process is writing, and its working folders (the CLI's SIGTERM handler calls
    it just before `os._exit`: raising an exception at an arbitrary point, inside an extension module's import say,
    is not safe)."""
    for path in list(_ACTIVE):
        _remove(Path(path))
        _ACTIVE.discard(path)
    for folder in list(_FOLDERS):
        shutil.rmtree(folder, ignore_errors=True)
        _FOLDERS.discard(folder)


def temp_name(dest: str | os.PathLike[str]) -> Path:
    dest = Path(dest)
    return dest.with_name(f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}.{dest.name}")


def _fsync_path(path: Path, directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        if directory:
            return  # some file systems do not open folders: the rename is still atomic
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        pass  # nothing more can be done; the destination is untouched either way


def _reserve(tmp: Path, mode: int) -> Path:
    """Create the temporary file now (so that a writer that opens the path itself finds it and the name cannot be
    taken by another process) and register it for removal on SIGTERM."""
    # registered before it exists: a SIGTERM handled between the file's creation and its registration (a loaded
    # machine can deschedule the process right there) would otherwise leave it behind
    _ACTIVE.add(str(tmp))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except BaseException:
        _ACTIVE.discard(str(tmp))
        raise
    os.close(fd)
    return tmp


@contextmanager
def atomic_path(dest: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path to write `dest` through; on success it is fsynced and renamed over `dest`."""
    dest = Path(dest)
    # mode 0666 less the umask, as open() would give `dest`
    tmp = _reserve(temp_name(dest), 0o666)
    try:
        yield str(tmp)
        _fsync_path(tmp)
        os.replace(tmp, dest)
    except BaseException:
        _remove(tmp)
        raise
    finally:
        _ACTIVE.discard(str(tmp))
    _fsync_path(dest.parent if str(dest.parent) else Path("."), directory=True)


@contextmanager
def scratch_path(near: str | os.PathLike[str]) -> Iterator[str]:
    """A hidden temporary path beside `near` (ending like it) for an intermediate file, removed when the block
    ends, whatever happens."""
    tmp = _reserve(temp_name(near), 0o600)
    try:
        yield str(tmp)
    finally:
        _remove(tmp)
        _ACTIVE.discard(str(tmp))


@contextmanager
def atomic_open(dest: str | os.PathLike[str], mode: str = "wb", encoding: str | None = None,
                newline: str | None = None) -> Iterator[IO[Any]]:
    """`open(dest, mode)` written through `atomic_path`: the file object is flushed, fsynced and closed before the
    rename. `mode` is "wb" or "w"."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open writes new files: mode {mode!r}")
    with atomic_path(dest) as tmp:
        fh = open(tmp, mode, encoding=encoding if "b" not in mode else None, newline=newline)
        try:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fh.close()


def write_bytes(dest: str | os.PathLike[str], data: bytes) -> int:
    with atomic_open(dest, "wb") as fh:
        fh.write(data)
    return len(data)


def write_text(dest: str | os.PathLike[str], text: str) -> int:
    return write_bytes(dest, text.encode("utf-8"))


def check_writable(dest: str | os.PathLike[str], what: str = "--out") -> Path:
    """Raise `UsageError` (exit 2) unless `dest` can be written through `atomic_path`. Creates and removes a
    probe file in the destination's folder (the only sure test of a read-only mount, ACLs, quotas of zero)."""
    text = str(dest)
    if not text:
        raise UsageError(f"{what}: an empty file name")
    dest = Path(dest)
    folder = dest.parent if str(dest.parent) else Path(".")
    if dest.is_dir():
        raise UsageError(f"{what} {text!r}: cannot write: is a folder, not a file name")
    if not folder.exists():
        raise UsageError(f"{what} {text!r}: cannot write: no such folder {str(folder)!r}")
    if not folder.is_dir():
        raise UsageError(f"{what} {text!r}: cannot write: {str(folder)!r} is not a folder")
    if dest.exists() and not os.access(dest, os.W_OK):
        raise UsageError(f"{what} {text!r}: cannot write: the file exists and is read-only")
    probe = temp_name(dest)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise UsageError(f"{what} {text!r}: cannot write in {str(folder)!r}: {e.strerror or e}") from None
    os.close(fd)
    _remove(probe)
    return dest


def human_size(n: int) -> str:
    """'532 bytes', '14.1 kB', '1.2 MB' (decimal units)."""
    if n < 1000:
        return f"{n} byte{'s' if n != 1 else ''}"
    x = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        x /= 1000.0
        if x < 999.95 or unit == "TB":
            return f"{x:.1f} {unit}"
    return f"{x:.1f} TB"  # pragma: no cover


def wrote_line(path: str | os.PathLike[str]) -> str:
    """'auditor: wrote report.html (1.2 MB)' for stderr."""
    try:
        size = human_size(os.path.getsize(path))
    except OSError:
        size = "size unknown"
    return f"auditor: wrote {path} ({size})"
