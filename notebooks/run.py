"""Run the investigation notebook with one command, from the root of a clone:

    python notebooks/run.py [--deals 6000] [--seed 7] [--out notebook-out]

It executes notebooks/investigate_season.py (a jupytext "percent" script) in a Jupyter kernel and writes, in the
--out folder: the simulated season (season.jsonl, season.key.json), the HTML report, the suspect's chart and the
executed notebook with its outputs, investigate_season.ipynb (open it in Jupyter or VS Code). Needs the notebook
extras: `pip install -e '.[notebook]'`. Exit 0 when every cell ran; 1 with the failing cell's error otherwise;
2 for a bad option."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parent / "investigate_season.py"


def execute(out: Path, deals: int, seed: int, timeout: int = 1800):
    """The notebook executed on a season of `deals` deals simulated with `seed`, its files in `out`; returns the
    executed notebook (nbformat) after writing it to out/investigate_season.ipynb."""
    import jupytext
    import nbclient
    import nbformat

    from auditor.atomic import write_text

    out.mkdir(parents=True, exist_ok=True)
    os.environ.update({"AUDITOR_NB_DEALS": str(deals), "AUDITOR_NB_SEED": str(seed),
                       "AUDITOR_NB_OUT": str(out.resolve())})  # the kernel inherits them
    nb = jupytext.read(NOTEBOOK)
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(out)}})
    try:
        client.execute()
    finally:  # the notebook as far as it ran, its error included
        write_text(out / "investigate_season.ipynb", nbformat.writes(nb))
    return nb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Execute the investigation notebook on a simulated club season.")
    ap.add_argument("--deals", type=int, default=6000, help="deals in the simulated season (default 6000)")
    ap.add_argument("--seed", type=int, default=7, help="the simulation's seed (default 7)")
    ap.add_argument("--out", default="notebook-out", help="folder of the outputs (default notebook-out)")
    args = ap.parse_args(argv)
    if args.deals < 1 or args.seed < 0:
        print("run.py: --deals must be at least 1 and --seed non-negative", file=sys.stderr)
        return 2
    try:
        import nbclient.exceptions
    except ImportError as e:
        print(f"run.py: {e.name} is not installed: pip install -e '.[notebook]'", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        execute(out, args.deals, args.seed)
    except nbclient.exceptions.CellExecutionError as e:
        last = [line for line in str(e).strip().splitlines() if line.strip()]
        print(f"run.py: a cell failed: {last[-1] if last else e}", file=sys.stderr)
        print(f"run.py: the notebook as far as it ran: {out / 'investigate_season.ipynb'}", file=sys.stderr)
        return 1
    print(f"run.py: wrote {out / 'investigate_season.ipynb'} (and report.html, suspect.png, the season) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
