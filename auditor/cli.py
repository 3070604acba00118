"""The `auditor` command line (typer). Data on stdout, progress and errors on stderr.

Exit codes (outputs.md): 0 nothing found; 1 findings (replay) or flags (audit); 2 usage error; 3 no input read.
Issue 12: 3 whenever no deal was replayed (nothing was audited); 4 when standard output cannot be written (a closed
pipe, a full disk). Every file is written whole or not at all (`auditor.atomic`); every string from a log that
reaches the terminal or stderr goes through `auditor.textsafe.visible`.
Imports are lazy so that start-up stays cheap.
"""

from __future__ import annotations

import contextlib
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Sequence

import typer

from .errors import AuditorError, InputError, NoInputError, RulesError, UsageError

EXIT_CODES = ("Exit codes: 0 nothing found; 1 findings (replay) or flags (audit); 2 usage error (a bad option, an "
              "--out that cannot be written); 3 no deal was replayed (no input readable, an empty or unreadable "
              "input, a selection that matches nothing); 4 standard output could not be written (a closed pipe, "
              "a full disk); 5 the command could not finish (a process of its own failed: the line says which).")
EXIT_NOTHING = 3  # issue 12: no deal was replayed
EXIT_STDOUT = 4  # issue 12: stdout closed or full
EXIT_FAILED = 5  # issue 15: the command could not finish (a part's process died); no partial output left behind



# ---------------------------------------------------------------- --help (issue 16)
# typer's own help shows Python types (`<list[str]>`, `<bool>`) and `{paths}`; every command and the group render
# their help here instead (`report.console.print_help`): argument names as metavars (`PATH...`), options with a
# plain placeholder (`--seed N`, `--out FILE`), and the exit codes as the epilog of every command.

_PLACEHOLDER = {int: "N", float: "NUMBER", str: "TEXT", bool: "BOOL"}
_NAMED = {"--out": "FILE", "--key": "FILE", "--decisions": "FILE", "--save-counts": "FILE", "--add-counts": "FILE",
          "--commit": "FILE", "--report": "FILE", "--workdir": "DIR", "--dask": "ADDRESS", "--since": "DATE",
          "--until": "DATE", "--table": "TABLE", "--game": "GAME", "--player": "NAME", "--preset": "NAME",
          "--rules": "PRESET", "--engine": "batch|reference", "--format": "jsonl|parquet", "--fdr": "LEVEL",
          "--option": "NAME=VALUE", "--cheat": "KIND:PLAYER:Q", "--sides": "HOW", "--plot": "FILE",
          "--state": "DIR"}
"""Placeholders of options declared without a metavar, by option name (else by type: N, NUMBER, TEXT)."""


def _placeholder(p) -> str:
    for o in p.opts:
        if o in _NAMED:
            return _NAMED[o]
    ann = getattr(getattr(p, "type_descriptor", None), "annotation", None)
    args = getattr(ann, "__args__", None)
    if args and len(args) == 1:  # list[X]: a repeatable option takes one X each time
        ann = args[0]
    if isinstance(ann, type) and issubclass(ann, Path):
        return "PATH"
    return _PLACEHOLDER.get(ann, "VALUE") if isinstance(ann, type) else "VALUE"


def _param_words(p) -> str:
    words = " ".join((getattr(p, "help", None) or "").split())
    default = getattr(p, "default", None)
    if (getattr(p, "show_default", True) is not False and not getattr(p, "is_flag", False) and not callable(default)
            and default not in (None, "", [], ())):
        words += f" [default: {default}]"
    if getattr(p, "required", False):
        words += " [required]"
    return words.strip()


def _help_sections(cmd, ctx) -> list[tuple[str, list[tuple[str, str]]]]:
    args, opts = [], []
    for p in cmd.get_params(ctx):
        if getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            name = (p.metavar or p.name.upper()) + ("..." if p.nargs != 1 else "")
            args.append((name if p.required else f"[{name}]", _param_words(p)))
            continue
        name = ", ".join(p.opts) + ("".join(f" / {s}" for s in p.secondary_opts))
        if not getattr(p, "is_flag", False):
            name += " " + (p.metavar or _placeholder(p))
        opts.append((name, _param_words(p)))
    return [("Arguments", args), ("Options", opts)]


def _paragraphs(text: str | None) -> list[str]:
    import inspect

    return [" ".join(x.replace("\b", "").split()) for x in inspect.cleandoc(text or "").split("\n\n") if x.strip()]


def _usage_args(cmd, ctx) -> str:
    out = []
    for p in cmd.get_params(ctx):
        if p.param_type_name == "argument":
            name = (p.metavar or p.name.upper()) + ("..." if p.nargs != 1 else "")
            out.append(name if p.required else f"[{name}]")
    return " ".join(out)


def _epilog(cmd) -> list[str]:
    own = _paragraphs(getattr(cmd, "epilog", None))
    return own + ([] if any(x.startswith("Exit codes") for x in own) else [EXIT_CODES])


class _Command(typer.core.TyperCommand):
    def format_help(self, ctx, formatter) -> None:
        from .report.console import print_help

        print_help(f"{ctx.command_path} [OPTIONS] {_usage_args(self, ctx)}".rstrip(), _paragraphs(self.help),
                   _help_sections(self, ctx), _epilog(self))


class _Group(typer.core.TyperGroup):
    def format_help(self, ctx, formatter) -> None:
        from .report.console import print_help

        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not getattr(cmd, "hidden", False):
                rows.append((name, (_paragraphs(cmd.help) or [""])[0]))
        print_help(f"{ctx.command_path} [OPTIONS] COMMAND [ARGS]...", _paragraphs(self.help),
                   [("Commands", rows), *_help_sections(self, ctx)[1:]], _epilog(self))


class _App(typer.Typer):
    """Every command gets the help above, also the ones added later."""

    def command(self, *args, **kwargs):
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)


app = _App(cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
           help="Replay and audit Scotch Whist and All Fours deal logs (deal-log/1).")


def _err(msg: str) -> None:
    """One line on stderr; control and bidirectional characters (from a log, a file name) shown as escapes."""
    from .textsafe import visible

    try:
        sys.stderr.write(visible(str(msg).rstrip("\n")) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed: nothing can be said
        pass


@contextmanager
def _stdout_guard():
    """Everything written to stdout inside the block is flushed before it ends; a closed pipe (`| head`), a full
    disk or a closed stdout becomes one line on stderr and exit 4, never a traceback."""
    try:
        if sys.stdout is None:
            raise OSError(9, "standard output is closed")
        yield
        sys.stdout.flush()
    except OSError as e:
        try:  # the interpreter flushes stdout again at exit: point it at /dev/null so that it stays quiet
            import os

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        _err(f"auditor: cannot write to standard output: {e.strerror or e}")
        raise typer.Exit(EXIT_STDOUT) from None


class _WriteAll:
    """stdout's byte stream, where a short write is not silent: BufferedWriter.write returns a short count when the
    reader goes away in the middle of a large write; the rest is written again, and that write raises EPIPE."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        total = len(view)
        while len(view):
            n = self._raw.write(view)
            if not n:
                raise OSError(5, "short write to standard output")
            view = view[n:]
        return total

    def flush(self) -> None:
        self._raw.flush()


class _WriterThread:
    """Writes handed to a thread of their own, in order, at most `limit` bytes waiting (issue 15: the 1.4 GB
    document of a 10M-deal audit was made and written by one thread, which spent about 40% of its 8.5 s waiting for
    the pipe's reader while the other core was idle). An error of a write is raised by the next `write` or by
    `close`, which waits for every write to be done."""

    BLOCK = 1 << 20

    def __init__(self, out, limit: int = 1 << 25) -> None:
        import threading
        from collections import deque

        self._out = out
        self._limit = limit
        self._block: list[bytes] = []
        self._held = 0
        self._queue: deque = deque()
        self._waiting = 0
        self._done = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="auditor-stdout", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._done:
                    self._cond.wait()
                if not self._queue:
                    return
                data = self._queue.popleft()
            try:
                if self._error is None:
                    self._out.write(data)
            except BaseException as e:  # noqa: BLE001 - raised in the writing thread by write() or close()
                self._error = e
            with self._cond:
                self._waiting -= len(data)
                self._cond.notify_all()

    def write(self, data) -> int:
        """Gathered into blocks of about BLOCK bytes, each handed over once (a hand-over per small write cost more
        than the write when the reader is fast: a file, /dev/null)."""
        if self._error is not None:
            raise self._error
        n = len(data)
        self._block.append(data if isinstance(data, bytes) else bytes(data))  # the caller may reuse its buffer
        self._held += n
        if self._held >= self.BLOCK:
            self._hand_over()
        return n

    def _hand_over(self) -> None:
        if not self._block:
            return
        data = self._block[0] if len(self._block) == 1 else b"".join(self._block)
        self._block, self._held = [], 0
        with self._cond:
            while self._waiting and self._waiting + len(data) > self._limit and self._error is None:
                self._cond.wait()
            self._queue.append(data)
            self._waiting += len(data)
            self._cond.notify_all()

    def abandon(self) -> None:
        """Drop what waits and let the thread end (it is a daemon: a write it is blocked in is left to the
        process's exit)."""
        with self._cond:
            self._block, self._held = [], 0
            self._queue.clear()
            self._waiting = 0
            self._done = True
            self._cond.notify_all()

    def close(self) -> None:
        self._hand_over()
        with self._cond:
            self._done = True
            self._cond.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error


def _stdout_is_pipe() -> bool:
    import os
    import stat

    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _stdout_bytes():
    buf = getattr(sys.stdout, "buffer", None)
    return None if buf is None else _WriteAll(buf)


def _check_out(path: str, what: str = "--out", inputs: Sequence[str] = ()) -> None:
    """Exit 2 before the work starts when `path` cannot be written (no such folder, a folder, read-only) or is one
    of the inputs."""
    from .atomic import check_writable
    from .errors import UsageError

    try:
        dest = check_writable(path, what)
        for p in inputs:
            if Path(p).exists() and dest.exists() and Path(p).resolve() == dest.resolve():
                raise UsageError(f"{what} {path!r}: the output would overwrite an input")
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None


def _wrote(path: str) -> None:
    from .atomic import wrote_line

    _err(wrote_line(path))


def _nothing_replayed(cover) -> None:
    """Exit 3 with one line on stderr when no deal was replayed (issue 12)."""
    if cover.audited == 0:
        _err(cover.nothing_line())
        raise typer.Exit(EXIT_NOTHING)


def _check_paths(paths: list[str], max_record_bytes: int | None = None) -> None:
    """Report unreadable files on stderr (they still become bad_record findings); exit 3 if none is readable.
    A FIFO, a device or a socket is refused at once (never opened to wait on), a symlink loop named as one
    (issue 12). `max_record_bytes`: the record-size limit of every reader (exit 2 when below 1)."""
    from .dealog import check_input, set_max_record_bytes

    if max_record_bytes is not None:
        if max_record_bytes < 1:
            _err(f"auditor: --max-record-bytes must be at least 1, got {max_record_bytes}")
            raise typer.Exit(2)
        set_max_record_bytes(max_record_bytes)
    readable = 0
    for p in paths:
        why = check_input(p)
        if why is None:
            readable += 1
        else:
            _err(f"auditor: {p}: {why}")
    if readable == 0:
        raise typer.Exit(3)


def _dump_json(obj) -> None:
    import json

    with _stdout_guard():
        sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def _write_json(obj, path: str) -> None:
    """Write `obj` as indented JSON to `path`, whole or not at all; a path that cannot be written is a usage error
    (exit 2)."""
    import json

    from .atomic import atomic_open

    try:
        with atomic_open(path, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2)
    except OSError as e:
        _err(f"auditor: cannot write {path!r}: {e.strerror or e}")
        raise typer.Exit(2) from None
    _wrote(path)


def _progress_reader(paths: list[str], show: bool):
    from .dealog import read_records

    if not show:
        yield from read_records(paths)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.console import Console

    console = Console(stderr=True)
    with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TextColumn("records"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("read", total=None)
        for i, rec in enumerate(read_records(paths), 1):
            if i % 2048 == 0:
                bar.update(task, completed=i)
            yield rec


@app.command()
def replay(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="deal-log/1 files: .jsonl, .jsonl.gz or .parquet, "
                                      "or a directory of them (a dataset)"),
    json_out: bool = typer.Option(False, "--json", help="print the JSON document of outputs.md on stdout"),
    engine: str = typer.Option("batch", "--engine", help="batch (fast, numpy; the default) or reference (per card)"),
    stats: bool = typer.Option(False, "--stats", help="print engine statistics on stderr (deals replayed by the "
                                                      "batch kernel, deals handed to the reference engine and why)"),
    max_record_bytes: int = typer.Option(1 << 20, "--max-record-bytes", help="longest line read as a record; a "
                                         "longer one is a bad_record (default 1 MiB)"),
) -> None:
    """Replay every deal under its rules and report every irregularity.

    Exit 0 when nothing is found, 1 with findings, 2 for a bad option, 3 when no deal was replayed (the document
    and the summary are still printed), 4 when stdout cannot be written."""
    if engine not in ("batch", "reference"):
        _err(f"auditor: --engine must be 'batch' or 'reference', got {engine!r}")
        raise typer.Exit(2)
    paths = _expanded(paths)  # a directory: the logs under it, as `audit` reads it (issue 15, a twenty-eighth session)
    _check_paths(paths, max_record_bytes)
    from .replay.run import replay_paths

    if not json_out and sys.stderr.isatty():
        from .report.console import replay_progress

        with replay_progress(paths) as progress:  # a bar on stderr when the input is long
            report = replay_paths(paths, engine=engine, progress=progress)
    else:
        report = replay_paths(paths, engine=engine)
    for f in report.findings:  # a file that broke off after some lines (truncated .gz): one line on stderr
        if f.code == "bad_record" and f.message.startswith("unreadable after line"):
            _err(f"auditor: {f.source}: {f.message}")
    if stats:
        import json

        _err(f"engine stats: {json.dumps(report.stats)}")
    with _stdout_guard():
        if json_out:
            out = _stdout_bytes()
            if out is not None:
                sys.stdout.flush()
                report.write_json(out)
                out.write(b"\n")
                out.flush()
            else:
                sys.stdout.write(report.to_json_bytes().decode() + "\n")
        else:
            from .report.console import print_replay

            print_replay(report)
    from .report.verdict import Coverage

    _nothing_replayed(Coverage.of(report.deals, report.findings))
    raise typer.Exit(1 if report.findings else 0)


@app.command()
def convert(
    src: str = typer.Argument(..., metavar="IN", help="input log: .jsonl, .jsonl.gz or .parquet"),
    dst: str = typer.Argument(..., metavar="OUT", help="output: .jsonl, .jsonl.gz or .parquet (the format follows the name)"),
) -> None:
    """Convert a deal log between JSON Lines and Parquet, losslessly.

    Valid records are written canonically (unknown top-level fields kept); lines that are not valid records are
    kept byte for byte (Parquet: the `raw` column). Exit 0 when everything was kept, 1 when something could not be
    (reported on stderr), 2 for a bad output name or an output that cannot be written (checked first), 3 when the
    input cannot be read. The output is written whole or not at all: an older file of that name is kept on failure."""
    from .fast.convert import convert_file, kind_of

    if kind_of(dst) is None:
        _err(f"auditor: {dst}: the output must end in .jsonl, .jsonl.gz or .parquet")
        raise typer.Exit(2)
    if Path(src).exists() and Path(dst).exists() and Path(src).resolve() == Path(dst).resolve():
        _err(f"auditor: {dst}: the output would overwrite the input")
        raise typer.Exit(2)
    _check_out(dst, "output")
    _check_paths([src])
    try:
        res = convert_file(src, dst)
    except OSError as e:
        _err(f"auditor: {dst}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    for msg in res.lost:
        _err(f"auditor: not converted: {msg}")
    _err(f"auditor: {res.records} records written to {dst}"
         + (f" ({res.raw} kept as read: not valid records)" if res.raw else ""))
    _wrote(dst)
    raise typer.Exit(1 if res.lost else 0)


@app.command()
def schema() -> None:
    """Print the JSON Schema of deal-log/1."""
    from importlib.resources import files

    with _stdout_guard():
        sys.stdout.write(files("auditor").joinpath("deal-log-1.schema.json").read_text(encoding="utf-8"))


@app.command()
def audit(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="deal-log/1 files: .jsonl, .jsonl.gz or .parquet"),
    json_out: bool = typer.Option(False, "--json", help="print the audit JSON document of outputs.md on stdout"),
    fdr: float = typer.Option(0.05, "--fdr", help="the audit-wide error level: false-discovery rate over every test and subject (0 < fdr < 1)"),
    seed: int = typer.Option(0, "--seed", help="seed of every Monte-Carlo step (recorded in the output)"),
    out: Optional[str] = typer.Option(None, "--out", help="also write the report: .html, .md or .json; or the "
                                      "table of tests: .parquet or .csv"),
    engine: str = typer.Option("batch", "--engine", help="replay engine: batch (fast) or reference (per card)"),
    since: Optional[str] = typer.Option(None, "--since", help="only games that started on or after this ISO date "
                                                              "or time (e.g. 2026-11-01)"),
    until: Optional[str] = typer.Option(None, "--until", help="only games that started on or before this ISO date "
                                                              "(the whole day) or time"),
    table: Optional[list[str]] = typer.Option(None, "--table", help="only this table (repeatable)"),
    game: Optional[list[str]] = typer.Option(None, "--game", help="only this game_id, or this game: scotch_whist, "
                                                                  "all_fours (repeatable)"),
    max_record_bytes: int = typer.Option(1 << 20, "--max-record-bytes", help="longest line read as a record; a "
                                         "longer one is a bad_record (default 1 MiB)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="replay and count the parts of a large input, "
                                          "and run its tests, in N local processes (the document is the same)"),
    dask: Optional[str] = typer.Option(None, "--dask", help="replay and count the parts, and run the tests, on "
                                       "a Dask cluster: the scheduler's address (tcp://host:8786), or local:N for N "
                                       "local workers"),
    save_counts: Optional[str] = typer.Option(None, "--save-counts", help="also write the merged counts (and the "
                                              "replay's findings and games) to FILE, for a later --add-counts"),
    add_counts: Optional[list[str]] = typer.Option(None, "--add-counts", help="counts saved by an earlier audit "
                                                   "(--save-counts), added before these logs (repeatable)"),
    part_deals: int = typer.Option(200_000, "--part-deals", help="a large input is audited in parts of at most this "
                                   "many deals (whole tables; a larger table is a part of its own); memory grows "
                                   "with it"),
    workdir: Optional[str] = typer.Option(None, "--workdir", help="where the parts of a large input are spilled "
                                          "(default: the temporary folder, TMPDIR); with --dask, a folder every "
                                          "worker sees"),
    commit: Optional[str] = typer.Option(None, "--commit", help="seal the flag list: write a random salt and the "
                                         "flags to FILE (keep it sealed) and print the salted SHA-256 commitment "
                                         "to publish (issue 16; check later with auditor verify-commit)"),
) -> None:
    """Replay the logs and run every fairness test; flags are decided over the whole audit (one error budget for
    every test and subject together). A directory stands for the logs under it (hive-style Parquet datasets too).

    Exit 0 when no one is flagged, 1 with flags, 2 for a bad option or an --out that cannot be written (checked
    before the replay), 3 when no deal was replayed (nothing to audit: an empty or unreadable input, a selection
    that matches nothing; --out is then not written), 4 when stdout cannot be written."""
    if engine == "batch" and dask is None:  # a large input's fork server imports while this process does (first:
        # the checks below import the audit's modules, a second)
        from .pools import start_fork_server_early

        start_fork_server_early(paths)
    if out is not None:  # issue 12: checked before anything is read
        from .errors import UsageError as _Usage
        from .report.formats import format_of

        try:
            format_of(out)
        except _Usage as e:
            _err(f"auditor: {e}")
            raise typer.Exit(2) from None
        _check_out(out, inputs=paths)
    # the option checks are written once, beside the audit (`auditor.run_audit` takes the same options): exit 2
    from .audit import check_options
    from .errors import UsageError as _BadOption

    scaled = bool(workers and workers > 1) or dask is not None or save_counts is not None or bool(add_counts)
    try:
        check_options(fdr, seed, engine, workers, part_deals, scaled, max_record_bytes, workdir)
    except _BadOption as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    if save_counts is not None:
        _check_out(save_counts, "--save-counts", inputs=paths)
    if commit is not None:  # issue 16: checked before the work, like --out
        _check_out(commit, "--commit", inputs=paths)
    command = _audit_command(paths, fdr=fdr, seed=seed, since=since, until=until, table=table, game=game,
                             max_record_bytes=max_record_bytes, add_counts=add_counts)
    paths = _expanded(paths)
    _check_paths(paths, max_record_bytes)
    from .errors import InputError, UsageError
    from .select import Selection

    try:
        sel = Selection(tables=tuple(table or ()), games=tuple(game or ()), since=since, until=until)
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    show = not json_out and sys.stderr.isatty()
    from .audit import audit, audit_input, replay_for_audit

    status = contextlib.nullcontext
    if show:
        from rich.console import Console

        from .report.console import replay_progress

        err_console = Console(stderr=True)
        status = err_console.status  # type: ignore[assignment]
    try:
        if engine == "batch":
            if show:
                with replay_progress(paths) as progress:  # the bar while the input is read and split
                    report = audit_input(paths, fdr=fdr, seed=seed, selection=sel, part_deals=part_deals,
                                         workers=workers, dask=dask, add_counts=tuple(add_counts or ()),
                                         save_counts=save_counts, workdir=workdir, progress=progress)
            else:
                report = audit_input(paths, fdr=fdr, seed=seed, selection=sel, part_deals=part_deals,
                                     workers=workers, dask=dask, add_counts=tuple(add_counts or ()),
                                     save_counts=save_counts, workdir=workdir)
        elif show:
            with replay_progress(paths) as progress:  # the bar, then a spinner while the tests run
                rep = replay_for_audit(paths, engine=engine, progress=progress, selection=sel)
            report = audit(rep, fdr=fdr, seed=seed, selection=sel, status=status)
        else:
            report = audit(replay_for_audit(paths, engine=engine, selection=sel), fdr=fdr, seed=seed, selection=sel)
    except (UsageError, InputError) as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    except OSError as e:  # the working folder: full, read-only
        _err(f"auditor: cannot write the parts of the input in {workdir or 'the temporary folder'}: "
             f"{e.strerror or e}")
        raise typer.Exit(2) from None
    from .audit import reproducibility_block

    report.reproducibility = reproducibility_block(report, [*paths, *(add_counts or ())], command)  # issue 16
    try:
        _finish_audit(report, json_out, out, show, commit)
    finally:
        report.close()


def _audit_command(paths: Sequence[str], *, fdr: float, seed: int, since: str | None, until: str | None,
                   table: Sequence[str] | None, game: Sequence[str] | None, max_record_bytes: int,
                   add_counts: Sequence[str] | None) -> str:
    """The command that gives this audit's document again (issue 16): the inputs as given and every option that
    changes the result; options that only choose where it goes or how it is computed (--out, --json, --workers,
    --dask, --part-deals, --workdir, --save-counts, --commit, --engine) are left out, so the document is the same
    whichever way it was run."""
    import shlex

    args = ["auditor", "audit", *map(str, paths), "--fdr", f"{fdr:g}", "--seed", str(seed)]
    for t in table or ():
        args += ["--table", t]
    for g in game or ():
        args += ["--game", g]
    if since is not None:
        args += ["--since", since]
    if until is not None:
        args += ["--until", until]
    if max_record_bytes != 1 << 20:
        args += ["--max-record-bytes", str(max_record_bytes)]
    for c in add_counts or ():
        args += ["--add-counts", c]
    return shlex.join(args)


def _expanded(paths: list[str]) -> list[str]:
    """Directories replaced by the logs under them (`inputs.expand_inputs`); a bad one is a one-line error."""
    from .errors import InputError
    from .inputs import expand_inputs

    try:
        return expand_inputs(paths)
    except InputError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(3) from None


def _finish_audit(report, json_out: bool, out: str | None, show: bool, commit: str | None = None) -> None:
    from .audit import clock, stage
    from .errors import UsageError

    t0 = clock()
    # what the reports read; --json streams the games summary in, and the tests a test at a time (issue 15)
    doc = report.to_json(games=False, held=False)
    stage("document", t0)
    from .report.verdict import Coverage

    cover = Coverage.of_doc(doc)
    view = None  # the report's view, which the terminal summary reads too (built once: issue 15)
    if out is not None and cover.audited:  # nothing audited: no report, an older one stays (exit 3 below)
        from .report.html import write_report

        from .report.formats import format_of

        try:
            if out.lower().endswith(".json"):
                _write_stream(lambda fh: (report.write_json(fh, doc), fh.write(b"\n")), out)
            elif format_of(out) in ("parquet", "csv"):  # issue 16: the tests table, one row per (test, subject)
                from .api import tests_frame, write_frame

                write_frame(tests_frame(doc), out)
            else:
                fmt = format_of(out)
                if fmt in ("html", "md"):
                    from .report.view import build_view

                    view = build_view(doc, charts=fmt == "html")
                write_report(doc, out, view)  # .html or .md by the suffix
        except UsageError as e:
            _err(f"auditor: {e}")
            raise typer.Exit(2) from None
        _wrote(out)
    with _stdout_guard():
        if json_out:
            t0 = clock()
            buf = _stdout_bytes()
            sys.stdout.flush()
            if buf is not None:
                # into a pipe, the document is made while its reader takes what is written (a file or
                # /dev/null takes it at once: there the hand-over would cost more than it saves). The thread
                # writes to the raw file, so that it holds no lock of the buffered stream
                raw = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
                w = _WriterThread(_WriteAll(raw)) if raw is not None and _stdout_is_pipe() else None
                try:
                    report.write_json(w or buf, doc)  # the games summary streamed, never joined in memory
                    (w or buf).write(b"\n")
                except BaseException:
                    if w is not None:
                        w.abandon()  # Ctrl-C, an error: what waits is dropped, not written to a reader that may
                        # never read it
                    raise
                if w is not None:
                    w.close()
                buf.flush()
            else:
                sys.stdout.write((report.json_bytes(doc) + b"\n").decode())
            stage("JSON bytes", t0)
        else:
            from .report.terminal import print_audit

            print_audit(doc, view=view)  # the report's view; every log string escaped for the terminal
    _nothing_replayed(cover)
    if commit is not None:
        _seal_flags(doc["flags"], commit)
    raise typer.Exit(1 if doc["flags"] else 0)


def _seal_flags(flags: list, path: str) -> None:
    """--commit FILE (issue 16): the salt and the flag list written to FILE (whole or not at all), the commitment
    printed on stderr (stdout may carry the JSON document)."""
    from .atomic import write_text
    from .report.commitment import seal, sealed_text

    sealed = seal(flags)
    try:
        write_text(Path(path), sealed_text(sealed))
    except OSError as e:
        _err(f"auditor: cannot write {path!r}: {e.strerror or e}")
        raise typer.Exit(2) from None
    n = len(sealed["flags"])
    _err(f"auditor: commitment {sealed['commitment']} to {n} flag{'s' if n != 1 else ''}; salt and flags sealed "
         f"in {path} (keep it closed until the review; check: auditor verify-commit {path} --commitment "
         f"{sealed['commitment']})")


@app.command("warm-cache")
def warm_cache(
    deals: int = typer.Option(3000, "--deals", help="deals of the small simulated season the commands run on"),
) -> None:
    """Compile the auditor's numba kernels into their cache before the first real audit.

    Runs replay, convert, audit (one part, and in parts on two workers), investigate and monitor on a small
    simulated season in a temporary folder, each in its own process, so that later commands find their kernels
    compiled: a fresh install audited the demo season in 43 s, then in 6 s. The cache is NUMBA_CACHE_DIR, else
    $XDG_CACHE_HOME/auditor/numba or ~/.cache/auditor/numba; numba keeps one per CPU type and auditor install, so
    run this where the audits will run (a worker image built for its nodes, with NUMBA_CACHE_DIR set inside it).
    It first writes the compiled form of the auditor's own modules where they are missing or stale (an editable
    install, or PYTHONDONTWRITEBYTECODE set, compiled them again in every process).

    Exit 0 when done, 2 when the cache cannot be kept (a folder that cannot be written) or a step failed."""
    from .errors import AuditorError
    from .warmcache import warm

    try:
        got = warm(deals, progress=lambda what: _err(f"auditor: warm-cache: {what} ..."))
    except AuditorError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    _err(f"auditor: {got.kernels_after} compiled kernels in {got.cache_dir} ({got.added} new, "
         f"{len(got.steps)} commands, {got.seconds:.0f} s)"
         + ("" if got.bytecode else "; the auditor's modules could not be byte-compiled where they are installed"))


@app.command("verify-commit")
def verify_commit(
    sealed_path: str = typer.Argument(..., metavar="SEALED", help="the file --commit wrote (salt and flags)"),
    commitment: Optional[str] = typer.Option(None, "--commitment", help="the commitment that was published "
                                             "(default: the one stored in the file)"),
    report: Optional[str] = typer.Option(None, "--report", help="an audit JSON document (auditor audit --json or "
                                         "--out report.json) whose flags must be the sealed ones"),
) -> None:
    """Check a sealed flag list: SHA-256 of the salt and the flags gives the published commitment, and
    (with --report) the audit's flags are the sealed ones. Exit 0 when everything matches, 1 when something does
    not (said on stderr), 2 for a file that cannot be read or is not a sealed record."""
    import json

    from .errors import UsageError
    from .report.commitment import read_sealed, verify

    try:
        try:
            sealed = read_sealed(Path(sealed_path).read_text(encoding="utf-8"), sealed_path)
            doc = json.loads(Path(report).read_text(encoding="utf-8")) if report is not None else None
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"cannot read {getattr(e, 'filename', None) or sealed_path!r}: "
                             f"{getattr(e, 'strerror', None) or e}") from None
        except ValueError as e:
            raise UsageError(f"{report!r} is not a JSON audit document: {e}") from None
        if doc is not None and not isinstance(doc, dict):
            raise UsageError(f"{report!r} is not a JSON audit document")
        if commitment is not None and not (len(commitment.strip()) == 64 and all(
                c in "0123456789abcdef" for c in commitment.strip().lower())):
            raise UsageError(f"--commitment {commitment!r} is not a SHA-256 hex digest (64 hex digits)")
        problems = verify(sealed, commitment, doc)
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    n = len(sealed["flags"])
    with _stdout_guard():
        if problems:
            for p in problems:
                _err(f"auditor: {p}")
        else:
            sys.stdout.write(f"the commitment matches the {n} sealed flag{'s' if n != 1 else ''}"
                             + (" and the document's flags" if doc is not None else "") + "\n")
    raise typer.Exit(1 if problems else 0)


def _write_stream(write, path: str) -> None:
    """`write(fh)` into `path`, atomically (whole or not at all)."""
    from .atomic import atomic_open

    try:
        with atomic_open(path, "wb") as fh:
            write(fh)
    except OSError as e:
        from .errors import UsageError

        raise UsageError(f"cannot write {path!r}: {e.strerror or e}") from None


def _write_bytes(data: bytes, path: str) -> None:
    from .atomic import write_bytes

    try:
        write_bytes(path, data)
    except OSError as e:
        from .errors import UsageError

        raise UsageError(f"cannot write {path!r}: {e.strerror or e}") from None


def _emit_study(res: dict, out: str | None, json_out: bool, fmt) -> None:
    """A study's numbers: to `--out` as JSON, then as JSON or as `fmt`'s text on stdout."""
    if out:
        _write_json(res, out)
    if json_out:
        _dump_json(res)
    else:
        with _stdout_guard():
            sys.stdout.write(fmt(res) + "\n")


@app.command()
def calibrate(
    seed: int = typer.Option(0, "--seed", help="seed of every simulated season (recorded in the output)"),
    fast: bool = typer.Option(False, "--fast", help="the CI tier: fewer seasons, wider error bars (minutes)"),
    quick: bool = typer.Option(False, "--quick", help="every study once over in under a minute (2 cores): to "
                               "see it run, not to judge the tests"),
    honest_seasons: Optional[int] = typer.Option(None, "--honest-seasons", help="all-honest seasons per test"),
    power_seasons: Optional[int] = typer.Option(None, "--power-seasons", help="seasons per stacker strength"),
    curve_seasons: Optional[int] = typer.Option(None, "--curve-seasons", help="seasons per point of the curve"),
    uniformity_seasons: Optional[int] = typer.Option(None, "--uniformity-seasons",
                                                     help="seasons for deal_uniformity (Monte-Carlo p-values)"),
    shuffle_seasons: Optional[int] = typer.Option(None, "--shuffle-seasons",
                                                  help="seasons per human-shuffling scenario (deals with play)"),
    fdr: float = typer.Option(0.05, "--fdr", help="false-discovery rate of every family"),
    plot: Optional[str] = typer.Option(None, "--plot", metavar="FILE",
                                       help="the power-curve image (.png or .svg): its name inside --out DIR "
                                            "(default power_curve.png; '' for none), or a path of its own"),
    play: bool = typer.Option(False, "--play", help="also run the play-knowledge study (as calibrate-play)"),
    audit: bool = typer.Option(False, "--audit", help="instead, the whole audit on simulated clubs: honest clubs "
                                                      "(any-flag rate v. the audit's level) and a lone cheater "
                                                      "(power v. the oracle); see --audit-seasons"),
    audit_seasons: int = typer.Option(400, "--audit-seasons", help="with --audit: honest club seasons"),
    audit_deals: int = typer.Option(10_000, "--audit-deals", help="with --audit: deals per honest season"),
    audit_power: int = typer.Option(100, "--audit-power", help="with --audit: seasons per lone-cheater study"),
    workers: int = typer.Option(2, "--workers", help="with --audit: processes to run seasons in"),
    json_out: bool = typer.Option(False, "--json", help="print the numbers as JSON on stdout"),
    out: Optional[str] = typer.Option(None, "--out", metavar="DIR|FILE.json",
                                      help="also write the numbers: a FILE.json, or a folder DIR (made if missing) "
                                           "for calibration.json and the power-curve plot"),
) -> None:
    """Simulate honest and cheating seasons: false positives, realised FDR, power v. the exact oracle test.

    With --play, also the play-knowledge tests (marked_ten, collusion, revoke_pattern) against the likelihood-ratio
    yardstick; their numbers go under "play". With --audit, the audit as a whole (issue 11): every test together,
    as `auditor audit` decides its flags."""
    if not 0.0 < fdr < 1.0:
        _err(f"auditor: --fdr must be between 0 and 1, got {fdr}")
        raise typer.Exit(2)
    if audit:
        if min(audit_seasons, audit_power) < 0 or audit_deals < 1 or workers < 1:
            _err("auditor: --audit-seasons and --audit-power must be >= 0, --audit-deals and --workers >= 1")
            raise typer.Exit(2)
        if out:
            _check_out(out)
        from .calibrate_audit import calibrate_audit, format_report as audit_report

        res = calibrate_audit(seed=seed, honest=audit_seasons, deals=audit_deals, power=audit_power,
                              workers=workers, progress=lambda m: _err(f"calibrate --audit: {m}"))
        _emit_study(res, out, json_out, audit_report)
        return
    from . import calibrate as cal

    if fast and quick:
        _err("auditor: --fast and --quick are two sizes: give one")
        raise typer.Exit(2)
    sizes = dict(cal.QUICK if quick else cal.FAST if fast else cal.FULL)
    given = {"honest_seasons": honest_seasons, "power_seasons": power_seasons, "curve_seasons": curve_seasons,
             "uniformity_seasons": uniformity_seasons, "shuffle_seasons": shuffle_seasons}
    for k, v in given.items():
        if v is not None:
            if v < 0:
                _err(f"auditor: --{k.replace('_', '-')} must be >= 0, got {v}")
                raise typer.Exit(2)
            sizes[k] = v
    json_path, plot = _calibrate_outputs(out, plot)
    if plot:
        _check_out(plot, "--plot")
    if json_path:
        _check_out(json_path)
    from .report.console import StudyProgress

    with StudyProgress(cal.work_units(**sizes), "calibrate") as meter:  # on stderr, with the time left
        res = cal.calibrate(seed=seed, fdr=fdr, progress=meter.say, advance=meter.advance, **sizes)
    if play:
        from .calibrate_play import SIZES_QUICK, calibrate_play as run_play, season_count

        play_sizes = dict(SIZES_QUICK) if quick else {}
        with StudyProgress(season_count(fast, play_sizes), "calibrate-play") as meter:
            res["play"] = run_play(seed=seed, fast=fast, sizes=play_sizes, fdr=fdr, workers=1, progress=meter.say,
                                   advance=meter.advance)
    if plot:
        from .atomic import atomic_path

        try:
            with atomic_path(plot) as tmp:  # the temporary name ends like `plot`: same image format
                cal.plot_power_curve(res, tmp)
            res["plot"] = plot
            _wrote(plot)
        except ImportError:
            _err("auditor: the power-curve plot needs matplotlib (pip install matplotlib); skipped")
        except OSError as e:
            _err(f"auditor: cannot write {plot!r}: {e.strerror or e}")
            raise typer.Exit(2) from None
    if json_path:
        _write_json(res, json_path)
    if json_out:
        _dump_json(res)
    else:
        with _stdout_guard():
            cal.print_report(res)
            if res.get("plot"):
                sys.stdout.write(f"power curve: {res['plot']}\n")
            if play:
                from .calibrate_play import format_report

                sys.stdout.write(format_report(res["play"]) + "\n")


def _calibrate_outputs(out: str | None, plot: str | None) -> tuple[str | None, str | None]:
    """(issue 16) Where `calibrate` writes its numbers and its plot: `--out FILE.json` the numbers there; `--out
    DIR` (made if missing, in a folder that exists) calibration.json and the plot (`--plot NAME`, default
    power_curve.png, '' for none) inside it; no --out, no file at all unless `--plot PATH` names one. Never a
    file in the working folder that was not asked for. Exit 2 for a bad name, checked before the work."""
    import os

    if plot and not plot.lower().endswith((".png", ".svg")):
        _err(f"auditor: --plot {plot!r}: the file name must end in .png or .svg")
        raise typer.Exit(2)
    if out is None or out.lower().endswith(".json"):
        return out, plot or None
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        _err(f"auditor: --out {out!r}: not a folder (name a folder for the numbers and the plot, or a .json file)")
        raise typer.Exit(2)
    if not folder.exists():
        if not folder.parent.is_dir():
            _err(f"auditor: --out {out!r}: no such folder {str(folder.parent)!r}")
            raise typer.Exit(2)
        try:
            folder.mkdir()
        except OSError as e:
            _err(f"auditor: --out {out!r}: cannot make the folder: {e.strerror or e}")
            raise typer.Exit(2) from None
    if plot and os.path.dirname(plot):
        _err(f"auditor: --plot {plot!r}: with --out DIR, give the plot's file name only (it goes inside DIR)")
        raise typer.Exit(2)
    name = "power_curve.png" if plot is None else plot
    return str(folder / "calibration.json"), (str(folder / name) if name else None)


@app.command()
def investigate(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="deal-log/1 files: .jsonl, .jsonl.gz or .parquet"),
    player: str = typer.Option(..., "--player", help="the player id as written in the logs"),
    out: Optional[str] = typer.Option(None, "--out", help="also write the investigation as HTML (.html)"),
    fdr: float = typer.Option(0.05, "--fdr", help="the audit-wide error level: false-discovery rate over every test and subject (0 < fdr < 1)"),
    seed: int = typer.Option(0, "--seed", help="seed of every Monte-Carlo step (use the audit's seed)"),
    top: int = typer.Option(10, "--top", help="deals listed per test"),
    engine: str = typer.Option("batch", "--engine", help="replay engine: batch (fast) or reference (per card)"),
    show_all: bool = typer.Option(False, "--all", help="every test in full, and every replay finding naming the "
                                  "player (by default: the flagged and watch-list results in full, the others on "
                                  "one line per test)"),
) -> None:
    """Everything about one player: each test with its controls, the deals behind each score, the timeline.

    Exit 1 when the player is flagged, 0 when not, 2 for an unknown player, a bad option or an --out that cannot be
    written (checked before the replay), 3 when no deal was replayed, 4 when stdout cannot be written."""
    if not 0.0 < fdr < 1.0:
        _err(f"auditor: --fdr must be between 0 and 1, got {fdr}")
        raise typer.Exit(2)
    if seed < 0 or top < 1:
        _err(f"auditor: --seed must be >= 0 and --top >= 1, got {seed} and {top}")
        raise typer.Exit(2)
    if engine not in ("batch", "reference"):
        _err(f"auditor: --engine must be 'batch' or 'reference', got {engine!r}")
        raise typer.Exit(2)
    if out is not None and not out.lower().endswith((".html", ".htm")):
        _err(f"auditor: --out {out!r}: the investigation is written as HTML (.html)")
        raise typer.Exit(2)
    if out is not None:
        _check_out(out, inputs=paths)
    _check_paths(paths)
    from .errors import UsageError
    from .investigate import investigate_records, print_investigation, write_investigation

    from .report.verdict import Coverage
    from .replay.run import bad_record_finding

    records = list(_progress_reader(paths, sys.stderr.isatty()))
    _nothing_replayed(Coverage.of(len(records), [bad_record_finding(r) for r in records if r.deal is None]))
    try:
        import shlex

        command = shlex.join(["auditor", "investigate", *map(str, paths), "--player", player, "--fdr", f"{fdr:g}",
                              "--seed", str(seed)])  # issue 16: the reproducibility block
        view, _ = investigate_records(records, player, fdr=fdr, seed=seed, engine=engine, k=top,
                                      show_all=show_all, paths=paths, command=command)
        if out is not None:
            write_investigation(view, out)
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    if out is not None:
        _wrote(out)
    with _stdout_guard():
        print_investigation(view)
    raise typer.Exit(1 if view["n_flagged"] else 0)


@app.command()
def simulate(
    out: str = typer.Option(..., "--out", help="the deal log to write: .jsonl, .jsonl.gz or .parquet"),
    preset: Optional[str] = typer.Option(None, "--preset", help="club-season: the demo season (mixed tables, "
                                         "about 60 players, planted cheaters)"),
    seed: int = typer.Option(2026, "--seed", help="random seed; the same seed and arguments give the same bytes"),
    deals: Optional[int] = typer.Option(None, "--deals", help="deals to simulate (whole games: a few more may "
                                        "come); default 20000 for club-season, else 1000"),
    key: Optional[str] = typer.Option(None, "--key", help="write the ground truth here (JSON: skills, cheaters, "
                                      "when they acted, planted revokes); never written into the log"),
    fmt: Optional[str] = typer.Option(None, "--format", help="jsonl or parquet (default: from --out's name)"),
    game: str = typer.Option("scotch_whist", "--game", help="scotch_whist or all_fours"),
    rules: str = typer.Option("foster", "--rules", help="the preset: foster or russian (Scotch Whist), foster "
                              "(All Fours)"),
    option: list[str] = typer.Option([], "--option", help="a rule switch NAME=VALUE (repeatable)"),
    players: int = typer.Option(4, "--players", help="players at each table"),
    tables: int = typer.Option(1, "--tables", help="number of tables"),
    club: Optional[int] = typer.Option(None, "--club", help="club members rotating across the tables "
                                       "(default: exactly the seats)"),
    sides: str = typer.Option("auto", "--sides", help="pairs, teams, none, or auto (pairs at 4 players, else none)"),
    deck: Optional[bool] = typer.Option(None, "--deck/--no-deck", help="log the whole deck (default: yes)"),
    time: Optional[bool] = typer.Option(None, "--time/--no-time", help="log each deal's start time (default: yes)"),
    pack: Optional[bool] = typer.Option(None, "--pack/--no-pack", help="tables alternate two packs and log the "
                                        "pack id (default: yes for club-season, no otherwise)"),
    recorded: Optional[bool] = typer.Option(None, "--recorded/--no-recorded", help="log the table's scores "
                                            "(default: yes)"),
    human_shuffle: bool = typer.Option(False, "--human-shuffle", help="dealers riffle the gathered tricks instead "
                                       "of shuffling perfectly"),
    cheat: list[str] = typer.Option([], "--cheat", help="plant a cheat KIND:PLAYER:Q[:PARTNER or MODE], e.g. "
                                    "jack_stacker:ada:0.3, colluder:ada:0.5:ben (repeatable)"),
    decisions: Optional[str] = typer.Option(None, "--decisions", help="also write one row per card played with "
                                            "the policies' probabilities (JSONL)"),
) -> None:
    """Simulate a club season of honest (and planted cheating) players as deal-log/1.

    Every file (--out, --key, --decisions) is checked before the simulation and written whole or not at all."""
    from .errors import AuditorError
    from .simulate.cli_support import build_spec

    for what, path in (("--out", out), ("--key", key), ("--decisions", decisions)):
        if path is not None:
            _check_out(path, what)

    try:
        spec = build_spec(preset=preset, deals=deals, game=game, rules=rules, options=option, players=players,
                          tables=tables, club=club, sides=sides, deck=deck, time=time, pack=pack, recorded=recorded,
                          human_shuffle=human_shuffle, cheats=cheat, decisions=decisions is not None)
        if fmt is not None and fmt not in ("jsonl", "parquet"):
            raise typer.BadParameter(f"--format must be jsonl or parquet, got {fmt!r}")
        from .simulate import simulate_season

        sim = simulate_season(spec, seed=seed)
        count = sim.write(out, fmt, key_path=key, decisions_path=decisions)
    except (AuditorError, typer.BadParameter) as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    except OSError as e:
        _err(f"auditor: {e.filename or out}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    _err(f"auditor: {count} deals ({sim.key['games']} games, seed {seed}) written to {out}"
         + (f"; key in {key}" if key else ""))
    for path in (out, key, decisions):
        if path is not None:
            _wrote(path)


@app.command("calibrate-play")
def calibrate_play(
    seed: int = typer.Option(0, "--seed", help="seed of every simulated season (recorded in the output)"),
    fast: bool = typer.Option(False, "--fast", help="the quick tier (CI): a few seasons, wide error bars"),
    workers: int = typer.Option(1, "--workers", help="processes to run seasons in"),
    marked_honest: Optional[int] = typer.Option(None, "--marked-honest", help="all-honest club seasons"),
    marked_human: Optional[int] = typer.Option(None, "--marked-human", help="honest seasons, human shuffles"),
    marked_power: Optional[int] = typer.Option(None, "--marked-power", help="seasons per marked-Ten strength"),
    collusion: Optional[int] = typer.Option(None, "--collusion", help="seasons of colluders (and honest)"),
    revoke: Optional[int] = typer.Option(None, "--revoke", help="seasons of a deliberate revoker (and honest)"),
    fdr: float = typer.Option(0.05, "--fdr", help="false-discovery rate of every family"),
    json_out: bool = typer.Option(False, "--json", help="print the numbers as JSON on stdout"),
    out: Optional[str] = typer.Option(None, "--out", help="also write the numbers as JSON to this file"),
) -> None:
    """Calibrate the play-knowledge tests (marked_ten, collusion, revoke_pattern) on simulated seasons."""
    if not 0.0 < fdr < 1.0:
        _err(f"auditor: --fdr must be between 0 and 1, got {fdr}")
        raise typer.Exit(2)
    given = {"marked_honest": marked_honest, "marked_human": marked_human, "marked_power": marked_power,
             "collusion": collusion, "revoke": revoke}
    for k, v in given.items():
        if v is not None and v < 0:
            _err(f"auditor: --{k.replace('_', '-')} must be >= 0, got {v}")
            raise typer.Exit(2)
    if workers < 1:
        _err(f"auditor: --workers must be >= 1, got {workers}")
        raise typer.Exit(2)
    if out:
        _check_out(out)
    from .calibrate_play import calibrate_play as run_play, format_report

    res = run_play(seed=seed, fast=fast, sizes={k: v for k, v in given.items() if v is not None}, fdr=fdr,
                   workers=workers, progress=lambda m: _err(f"calibrate-play: {m}"))
    _emit_study(res, out, json_out, format_report)


@app.command()
def monitor(
    paths: list[str] = typer.Argument(..., help="the new deal-log/1 files (a day's logs, say)"),
    state: str = typer.Option(..., "--state", help="the monitor's state folder (made on the first look)"),
    json_out: bool = typer.Option(False, "--json", help="print the monitor document of outputs.md on stdout"),
    level: Optional[float] = typer.Option(None, "--level", help="chance that an honest room ever raises any alarm "
                                          "(0 < level < 1; default 0.05, fixed when the state is made)"),
    capacity: Optional[int] = typer.Option(None, "--capacity", help="subjects per test that share 90% of its "
                                           "budget equally (default 100, fixed when the state is made)"),
    max_record_bytes: int = typer.Option(1 << 20, "--max-record-bytes", help="longest line read as a record"),
) -> None:
    """Continuous monitoring: add these logs to the saved state, update every subject's anytime-valid
    evidence and report alarms. Deals already in the state (same table, game and deal number) are never counted
    twice. Writes an HTML page per alarm into STATE/alarms/ and prints one summary line (or --json).

    Exit 0 when no new alarm is raised, 1 when one is, 2 for a bad option or state, 3 when no deal was replayed."""
    if level is not None and not 0.0 < level < 1.0:
        _err(f"auditor: --level must be between 0 and 1, got {level}")
        raise typer.Exit(2)
    if capacity is not None and capacity < 1:
        _err(f"auditor: --capacity must be at least 1, got {capacity}")
        raise typer.Exit(2)
    if Path(state).exists() and not Path(state).is_dir():
        _err(f"auditor: --state {state!r} is not a folder")
        raise typer.Exit(2)
    paths = _expanded(paths)
    _check_paths(paths, max_record_bytes)
    from .errors import InputError, UsageError
    from .monitor.core import run_look
    from .monitor.page import write_alarm_pages
    from .textsafe import visible

    try:
        res = run_look(paths, state, level=level, capacity=capacity, save=False)
        if res.document["look"]["deals_read"] == 0:
            _err("auditor: no deal was replayed: nothing to monitor (the state is unchanged)")
            raise typer.Exit(EXIT_NOTHING)
        from .monitor.state import save_state

        if res.document["look"]["recorded"]:  # nothing new: the state stays as it was, byte for byte
            save_state(state, res.state)
            write_alarm_pages(res.state, state)
    except (UsageError, InputError) as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    except OSError as e:
        _err(f"auditor: cannot write the monitor state in {state!r}: {e.strerror or e}")
        raise typer.Exit(2) from None
    for c in res.document["conflicts"]:
        _err(f"auditor: {c['source']}: deal {c['deal_no']} of game {c['game_id']!r} at table {c['table']!r} was "
             f"sent again with other content; the first version stays counted, this one is not")
    if json_out:
        _dump_json(res.document)
    else:
        with _stdout_guard():
            sys.stdout.write(visible(res.summary) + "\n")
    raise typer.Exit(1 if res.new_alarms else 0)


@app.command("import")
def import_sheet(
    sheet: str = typer.Argument(..., metavar="SHEET", help="the score sheet: .csv or .xlsx, a header row then one "
                                "row per deal (auditor score-sheet gives the blank one)"),
    out: str = typer.Option(..., "--out", help="the deal log to write: .jsonl or .jsonl.gz"),
    game: str = typer.Option("scotch_whist", "--game", help="the game of rows without a game cell: scotch_whist "
                             "or all_fours"),
    rules: str = typer.Option("foster", "--rules", help="the preset of rows without a rules cell: foster or "
                              "russian (Scotch Whist), foster (All Fours)"),
) -> None:
    """Turn a club's score sheet into a deal log of score-sheet records.

    Each row (date, table, game and deal numbers, players by seat, sides, dealer, turn-up, who played the Jack of
    trumps, who took the Ten, points and totals per side) becomes one deal-log/1 record without hands or tricks
    (docs/spec/deal-log.md, "Score-sheet records"); `auditor replay` and `auditor audit` then check the totals,
    the winner, the dealer's rotation and the Jack's and Ten's points, and run the Jack tests on it. Every bad
    cell is one line on stderr naming its row and column, and nothing is written (exit 2); a file that cannot be
    read as a sheet, or holds no deal, exits 3. The log is written whole or not at all."""
    from .atomic import atomic_path
    from .dealog import write_jsonl
    from .errors import InputError, UsageError
    from .sheets.read import problem_lines, read_sheet, sheet_kind

    if not (out.endswith(".jsonl") or out.endswith(".jsonl.gz")):
        _err(f"auditor: {out}: the log must end in .jsonl or .jsonl.gz")
        raise typer.Exit(2)
    if sheet_kind(sheet) is None:
        _err(f"auditor: {sheet}: a score sheet must end in .csv or .xlsx")
        raise typer.Exit(2)
    _check_out(out, "--out", inputs=[sheet])
    try:
        res = read_sheet(sheet, game=game, rules=rules)
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    except InputError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(EXIT_NOTHING) from None
    if res.problems:
        for line in problem_lines(sheet, res.problems):
            _err(f"auditor: {line}")
        _err(f"auditor: {len(res.problems)} bad cell(s) in {sheet}; nothing written")
        raise typer.Exit(2)
    if not res.records:
        _err(f"auditor: {sheet}: no deal in the sheet ({res.blank_rows} blank rows)")
        raise typer.Exit(EXIT_NOTHING)
    try:
        with atomic_path(out) as tmp:
            count = write_jsonl(res.records, tmp)
    except OSError as e:
        _err(f"auditor: {out}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    games = len({r["game_id"] for r in res.records})
    _err(f"auditor: {count} deals of {games} games written to {out}"
         + (f" ({res.blank_rows} blank rows skipped)" if res.blank_rows else ""))
    _wrote(out)


@app.command("score-sheet")
def score_sheet(
    out: str = typer.Argument(..., metavar="OUT", help="sheet.csv (the template to type into) or sheet.html (the "
                              "sheet to print)"),
    players: int = typer.Option(4, "--players", help="seats at the table"),
    sides: Optional[int] = typer.Option(None, "--sides", help="sides at the table (default: 2 at four players, "
                                        "else every player for himself)"),
    game: str = typer.Option("scotch_whist", "--game", help="scotch_whist or all_fours (All Fours adds the beg "
                             "and bunched columns)"),
    rules: str = typer.Option("foster", "--rules", help="the preset the sheet is for"),
    rows: int = typer.Option(20, "--rows", help="blank rows of the printed sheet"),
    paper: str = typer.Option("a4", "--paper", help="a4 or letter (the printed sheet, landscape)"),
    title: str = typer.Option("", "--title", help="a title over the printed sheet (the club's name)"),
) -> None:
    """Write a blank score sheet: a CSV template to type the deals into, or an HTML page to print.

    The columns are those `auditor import` reads; the printed sheet has the same column names over its boxes and
    a key to them below."""
    from .errors import UsageError
    from .sheets.template import template_kind, write_template

    if template_kind(out) is None:
        _err(f"auditor: {out}: the blank sheet must end in .csv or .html")
        raise typer.Exit(2)
    _check_out(out)
    try:
        write_template(out, players=players, sides=sides if sides is not None else (2 if players == 4 else players),
                       rows=rows, paper=paper.lower(), title=title, game=game, rules=rules)
    except UsageError as e:
        _err(f"auditor: {e}")
        raise typer.Exit(2) from None
    except OSError as e:
        _err(f"auditor: {out}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None
    _wrote(out)


_MAIN_PID = None


def _on_sigterm(signum, frame):
    """SIGTERM: remove the temporary files of the outputs being written, say so, exit 143. Not an exception raised
    wherever the program happens to be (an extension module's import can swallow it, or crash on it); a worker
    process forked by the reader inherits this handler and just exits."""
    import os

    if os.getpid() == _MAIN_PID:
        from .atomic import remove_temporaries
        from .pools import stop_children

        stop_children()  # a part's process (auditor.pools.call_in_fresh_process) does not outlive the audit
        remove_temporaries()
        _err("auditor: terminated (no partial output left behind)")
    os._exit(128 + signum)


def main() -> None:  # console script entry point
    import os
    import signal

    global _MAIN_PID
    _MAIN_PID = os.getpid()
    # Arrow's buffers from the C allocator for every command and the processes it starts, unless the user chose a
    # pool (auditor.pools.use_system_memory_pool says why); read by pyarrow when it first allocates, so set before
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # One BLAS thread per process, unless the user chose otherwise: the auditor runs its work in processes, one per
    # core, and its linear algebra is small (5x5 Newton steps); OpenBLAS's own threads only spun beside them
    # (`blas_thread_server`, 1% of a 300k audit's CPU time on 2 cores; issue 15, a thirtieth session). Read when
    # numpy is first imported, which is after this in the CLI and in the processes it starts.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .pools import tune_gc, tune_malloc

    tune_malloc()  # glibc's large blocks kept for reuse, in this process and those it starts (pools.tune_malloc)
    tune_gc()  # the collector's passes fewer (pools.tune_gc); the fork server's processes set it in auditor.warm
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main thread
        pass
    try:
        app()
    except KeyboardInterrupt:
        _err("auditor: interrupted")
        sys.exit(130)
    except AuditorError as e:  # one that no command caught: its line and a true code, never a traceback
        _err(f"auditor: {e}")
        sys.exit(_code_of(e))
    finally:
        from .pools import stop_fork_server

        stop_fork_server()  # the parts' processes counted in this process's usage (auditor.pools)


def _code_of(e: AuditorError) -> int:
    """The exit code of an error no command caught (`main`): 3 nothing could be read, 2 a bad input, option or
    rule, 5 anything else (the command could not finish: a part's process that died, a result that cannot be read
    back)."""
    if isinstance(e, NoInputError):
        return EXIT_NOTHING
    if isinstance(e, (UsageError, InputError, RulesError)):
        return 2
    return EXIT_FAILED


def entry() -> None:  # console script entry point (and `python -m auditor`)
    """`main`, then the process ends at once: the exit functions run (multiprocessing's finalizers, the numba
    cache's temporary folder) and the standard streams are flushed, but the interpreter is not torn down object by
    object: after a large audit that took 0.6-0.7 s of the wall time, with nothing left to write (every output is
    complete and closed by then; issue 15). Where another thread still runs, the usual exit waits for it."""
    try:
        main()
        code = 0
    except SystemExit as e:
        code = _exit_code(e.code)
    import threading

    if threading.active_count() > 1:
        sys.exit(code)
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started without it (`>&-`)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`auditor ... | head`): nothing more reaches it anyway
            pass
    os._exit(code)


def _exit_code(code: object) -> int:
    """The exit status `sys.exit(code)` gives: 0 for None, the number, else the message on stderr and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code) & 0xFF
    _err(str(code))
    return 1


if __name__ == "__main__":
    entry()
