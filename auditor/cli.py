"""The `auditor` command line (typer). Data on stdout, progress and errors on stderr.

Exit codes (outputs.md): 0 nothing found; 1 findings (replay) or flags (audit); 2 usage error; 3 no input read.
Imports are lazy so that start-up stays cheap.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Replay and audit Scotch Whist and All Fours deal logs (deal-log/1).")


def _err(msg: str) -> None:
    sys.stderr.write(msg.rstrip("\n") + "\n")


def _check_paths(paths: list[str]) -> None:
    """Report unreadable files on stderr (they still become bad_record findings); exit 3 if none is readable."""
    readable = 0
    for p in paths:
        path = Path(p)
        if path.is_dir():
            _err(f"auditor: {p}: is a directory, not a log file")
        elif not path.exists():
            _err(f"auditor: {p}: no such file")
        else:
            try:
                with open(path, "rb"):
                    readable += 1
            except OSError as e:
                _err(f"auditor: {p}: cannot open: {e.strerror}")
    if readable == 0:
        raise typer.Exit(3)


def _dump_json(obj) -> None:
    import json

    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


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
    paths: list[str] = typer.Argument(..., help="deal-log/1 files: .jsonl, .jsonl.gz or .parquet"),
    json_out: bool = typer.Option(False, "--json", help="print the JSON document of outputs.md on stdout"),
    engine: str = typer.Option("reference", "--engine", help="batch (fast) or reference (per card)"),
    stats: bool = typer.Option(False, "--stats", help="print engine statistics on stderr"),
) -> None:
    """Replay every deal under its rules and report every irregularity."""
    if engine not in ("batch", "reference"):
        _err(f"auditor: --engine must be 'batch' or 'reference', got {engine!r}")
        raise typer.Exit(2)
    _check_paths(paths)
    from .replay.run import replay_records

    show = not json_out and sys.stderr.isatty()
    report = replay_records(_progress_reader(paths, show), engine=engine)
    if stats:
        _err(f"engine stats: {report.stats}")
    if json_out:
        _dump_json(report.to_json())
    else:
        from .report.terminal import print_replay

        print_replay(report)
    raise typer.Exit(1 if report.findings else 0)


@app.command()
def schema() -> None:
    """Print the JSON Schema of deal-log/1."""
    from importlib.resources import files

    sys.stdout.write(files("auditor").joinpath("deal-log-1.schema.json").read_text(encoding="utf-8"))


@app.command()
def audit(
    paths: list[str] = typer.Argument(..., help="deal-log/1 files: .jsonl, .jsonl.gz or .parquet"),
    json_out: bool = typer.Option(False, "--json", help="print the audit JSON document of outputs.md on stdout"),
    fdr: float = typer.Option(0.05, "--fdr", help="false-discovery rate of every test family (0 < fdr < 1)"),
    seed: int = typer.Option(0, "--seed", help="seed of every Monte-Carlo step (recorded in the output)"),
    out: Optional[str] = typer.Option(None, "--out", help="also write the document: .json (or .html / .md report)"),
    engine: str = typer.Option("reference", "--engine", help="replay engine: reference or batch"),
) -> None:
    """Replay the logs and run every fairness test; flags are Benjamini-Hochberg discoveries per test family."""
    if not 0.0 < fdr < 1.0:
        _err(f"auditor: --fdr must be between 0 and 1, got {fdr}")
        raise typer.Exit(2)
    if seed < 0:
        _err(f"auditor: --seed must be a non-negative integer, got {seed}")
        raise typer.Exit(2)
    if engine not in ("batch", "reference"):
        _err(f"auditor: --engine must be 'batch' or 'reference', got {engine!r}")
        raise typer.Exit(2)
    _check_paths(paths)
    from .audit import audit_records
    from .errors import UsageError

    show = not json_out and sys.stderr.isatty()
    report = audit_records(_progress_reader(paths, show), fdr=fdr, seed=seed, engine=engine)
    doc = report.to_json()
    if out is not None:
        try:
            if out.lower().endswith(".json"):
                import json

                with open(out, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh, indent=2, ensure_ascii=False)
                    fh.write("\n")
            else:
                from .report.html import write_report

                write_report(doc, out)
        except UsageError as e:
            _err(f"auditor: {e}")
            raise typer.Exit(2)
        except OSError as e:
            _err(f"auditor: cannot write {out!r}: {e.strerror or e}")
            raise typer.Exit(2)
    if json_out:
        _dump_json(doc)
    else:
        from rich.console import Console
        from rich.table import Table

        con = Console()
        con.print(f"[bold]{doc['deals']}[/] records, [bold]{doc['games']}[/] games, "
                  f"[bold]{len(doc['replay']['findings'])}[/] replay findings, seed {seed}")
        t = Table(title=f"Test families (FDR {fdr:g}, Benjamini-Hochberg)")
        for col in ("test", "subjects", "flagged", "watch"):
            t.add_column(col)
        for f in doc["families"]:
            t.add_row(f["test"], str(f["tests"]), str(f["flagged"]), str(f["watch"]))
        con.print(t)
        if doc["flags"]:
            ft = Table(title="Flags (most significant first)")
            for col in ("test", "subject", "n", "observed", "expected", "p", "q"):
                ft.add_column(col)
            for e in doc["flags"]:
                ft.add_row(e["test"], e["subject"], str(e["n"]), f"{e['observed']:.4g}", f"{e['expected']:.4g}",
                           f"{e['pvalue']:.2g}", f"{e['qvalue']:.2g}")
            con.print(ft)
        con.print("Fixed-sample tests: re-running them on a growing log raises the real false-accusation rate.")
    raise typer.Exit(1 if doc["flags"] else 0)


def main() -> None:  # console script entry point
    try:
        app()
    except KeyboardInterrupt:
        _err("auditor: interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
