"""The logs of the scale bench (issue 15, items 5 and 6), cached in bench/out/ (git-ignored).

    python bench/make_scale_logs.py season             # the 300,000-deal club seasons: cheaters, and no cheater
    python bench/make_scale_logs.py season --deals 30000 --which honest
    python bench/make_scale_logs.py base               # the 1M-deal demo-spec season (bench_audit.py's, seed 7)
    python bench/make_scale_logs.py tenfold            # the 10M log: the 1M Parquet file copied ten times
    python bench/make_scale_logs.py months             # the 300k season without cheaters as a dataset of months
    python bench/make_scale_logs.py all

`season`: a club season like the one of issue 15 item 5 (made by another simulator than ours): a club of 60 over
some 2,900 nights at eight tables — three Scotch Whist tables of 4 in pairs, two of 5 players, one of 6 as three
pairs, two All Fours tables of 2 —, half the tables logging the deck, with two Jack stackers, two marked-Ten
players, an All Fours turn-up stacker and a deliberate revoker; and the same season (same spec and seed) with no
cheater at all. Built with the project's simulator (`scale_season_spec`), written as JSON Lines, converted with
`auditor convert`. The simulator logs the deck at every table or none, so the deck is taken out of the records of
four of the eight tables (one of each kind) before they are written: what a club whose older tables do not log
the deck would give. The club nights are shorter than the demo's (21:15 to 23:00) to spread the deals over about
as many nights as the issue's season.

`base`: the demo club season's spec (`club_season_spec`) at 1,000,000 deals, seed 7: the same file
`bench/bench_audit.py --workdir bench/out` simulates (some 15 minutes), then `auditor convert` to Parquet.

`tenfold`: the 1M Parquet file copied ten times into one Parquet file, written directly with pyarrow batch by
batch: copy k renames every table, game id and player with the prefix `c{k}.` (the dictionaries of the `table`,
`game_id` and `players` columns are renamed, the indices kept; a row kept as `raw` JSON is renamed inside its
JSON), so that each copy is another club and no test sees a repeated deal of one person.

`months` (issue 15, a twenty-eighth session): the `season` Parquet file (`--which`, default the season without
cheaters) as a hive dataset of one file per month of its deals' `time` (`month=YYYY-MM/part-0.parquet`; the
simulated club plays some 2,900 nights, so about 330 files of 900 rows), each file's dictionaries its own: the
input of a room that writes a file a month. The audit of the folder and of the one file give the same tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
PY = [sys.executable, "-m", "auditor"]

NO_DECK = ("sw4-b", "sw5-b", "sw6-pairs", "af2-b")  # the tables that do not log the deck


def scale_season_spec(n_deals: int = 300_000, *, cheaters: bool = True):
    """The issue-15 club season: eight tables, 60 members, six planted cheaters (or none)."""
    from auditor.simulate import CheaterSpec, SeasonSpec, TableSpec, partnerships
    from auditor.simulate.spec import player_names

    two = ("red", "blue")
    tables = [
        TableSpec("sw4-a", 4, sides=partnerships(4, "pairs"), packs=two, human_shuffle=True),
        TableSpec("sw4-b", 4, sides=partnerships(4, "pairs"), packs=two),
        TableSpec("sw4-c", 4, sides=partnerships(4, "pairs")),
        TableSpec("sw5-a", 5, human_shuffle=True),
        TableSpec("sw5-b", 5),
        TableSpec("sw6-pairs", 6, sides=partnerships(6, "pairs")),
        TableSpec("af2-a", 2, game="all_fours"),
        TableSpec("af2-b", 2, game="all_fours", human_shuffle=True),
    ]
    planted = [
        CheaterSpec("kate", "jack_stacker", 0.3),
        CheaterSpec("hal", "jack_stacker", 0.15),
        CheaterSpec("walt", "marked_ten", 1.0),
        CheaterSpec("vera", "marked_ten", 1.0, mode="score"),
        CheaterSpec("otto", "turnup_jack", 0.3),
        CheaterSpec("ray", "revoker", 0.1),
    ] if cheaters else []
    skills = {"walt": "strong", "vera": "strong", "ray": "club", "tess": "reader", "max": "reader"}
    return SeasonSpec(tables=tables, n_deals=n_deals, players=player_names(60), skills=skills, cheaters=planted,
                      deck=True, time=True, recorded=True, season="scale", start="2026-01-05T21:15:00Z")


def convert(src: Path, dst: Path) -> None:
    if dst.exists():
        return
    print(f"auditor convert {src.name} -> {dst.name} ...", file=sys.stderr)
    subprocess.run(PY + ["convert", str(src), str(dst)], check=True)


def make_season(deals: int, seed: int, which: str) -> list[Path]:
    from auditor.simulate import simulate_season

    made = []
    for kind in (("cheat", "honest") if which == "both" else (which,)):
        stem = OUT / f"scale-{kind}-{deals}-s{seed}"
        jl, pq = stem.with_suffix(".jsonl"), stem.with_suffix(".parquet")
        if not jl.exists():
            print(f"simulating the {kind} season, {deals:,} deals (seed {seed}) ...", file=sys.stderr)
            t0 = time.perf_counter()
            sim = simulate_season(scale_season_spec(deals, cheaters=kind == "cheat"), seed=seed)
            for r in sim.records:
                if r["table"] in NO_DECK:
                    r.pop("deck", None)
            tmp = stem.with_suffix(".tmp.jsonl")
            sim.write(str(tmp), key_path=str(stem.with_suffix(".key.json")))
            tmp.replace(jl)
            print(f"  {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        convert(jl, pq)
        made.append(pq)
    return made


def make_base(deals: int, seed: int) -> Path:
    from auditor.simulate import club_season_spec, simulate_season

    jl = OUT / f"club-{deals}-s{seed}.jsonl"
    pq = jl.with_suffix(".parquet")
    if pq.exists() and not jl.exists():
        return pq  # the JSON Lines are only the simulator's output on the way to Parquet (843 MB): may be deleted
    if not jl.exists():
        print(f"simulating the demo spec at {deals:,} deals (seed {seed}) ...", file=sys.stderr)
        sim = simulate_season(club_season_spec(n_deals=deals), seed=seed)
        tmp = jl.with_suffix(".tmp.jsonl")
        sim.write(str(tmp))
        tmp.replace(jl)
    convert(jl, pq)
    return pq


def _renamed_raw(raw: bytes, prefix: str) -> bytes:
    import orjson

    o = orjson.loads(raw)
    if not isinstance(o, dict):
        return raw
    for k in ("table", "game_id"):
        if isinstance(o.get(k), str):
            o[k] = prefix + o[k]
    if isinstance(o.get("players"), list):
        o["players"] = [prefix + p if isinstance(p, str) else p for p in o["players"]]
    return orjson.dumps(o)


def tenfold(src: Path, dst: Path, copies: int = 10) -> int:
    """`copies` renamed copies of the Parquet log `src` in one Parquet file `dst` (schema and metadata kept)."""
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(src)
    schema = pf.schema_arrow
    tmp = dst.with_suffix(".tmp.parquet")
    rows = 0
    t0 = time.perf_counter()
    with pq.ParquetWriter(tmp, schema, compression="zstd", use_dictionary=True) as w:
        for k in range(copies):
            prefix = f"c{k}."
            memo: dict[tuple[str, int], pa.Array] = {}

            def renamed(col: str, arr: pa.DictionaryArray, prefix: str = prefix,
                        memo: dict = memo) -> pa.DictionaryArray:
                d = arr.dictionary
                key = (col, id(d))
                if key not in memo:  # a batch's dictionary: renamed once (the reader may share it across batches)
                    vals = d.to_pylist()
                    if col == "players":
                        new = [orjson.dumps([prefix + p for p in orjson.loads(v)]).decode() if v else v
                               for v in vals]
                    else:
                        new = [prefix + v if v else v for v in vals]
                    memo[key] = (d, pa.array(new, pa.string()))
                return pa.DictionaryArray.from_arrays(arr.indices, memo[key][1])

            for batch in pf.iter_batches(batch_size=65_536):
                cols = []
                for name in schema.names:
                    arr = batch.column(name)
                    if name in ("table", "game_id", "players"):
                        arr = renamed(name, arr)
                    elif name == "raw" and arr.null_count < len(arr):
                        arr = pa.array([None if v is None else _renamed_raw(v, prefix) for v in arr.to_pylist()],
                                       pa.binary())
                    cols.append(arr)
                w.write_table(pa.Table.from_arrays(cols, schema=schema))
                rows += batch.num_rows
            print(f"  copy {k}: {rows:,} rows, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    tmp.replace(dst)
    return rows


def months(src: Path, dst: Path) -> int:
    """`src` (a Parquet log in the auditor's layout) as a hive dataset under `dst`, one file per month of `time`, in
    the order of the months' first rows; returns the number of files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(src)
    meta = t.schema.metadata
    month = pc.utf8_slice_codeunits(t.column("time"), 0, 7).to_numpy(zero_copy_only=False)
    names, first = np.unique(month.astype(str), return_index=True)
    tmp = dst.with_name(dst.name + ".tmp")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    for m in names[np.argsort(first)]:
        sub = t.take(pa.array(np.flatnonzero(month == m)))
        cols = [pc.dictionary_encode(c.cast(pa.string())).cast(f.type) if pa.types.is_dictionary(f.type) else c
                for c, f in zip(sub.columns, sub.schema, strict=True)]  # each file's own dictionaries
        folder = tmp / f"month={m}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table(cols, schema=sub.schema).replace_schema_metadata(meta), folder / "part-0.parquet",
                       compression="zstd")
    tmp.replace(dst)
    return len(names)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("season", "base", "tenfold", "months", "all"))
    ap.add_argument("--deals", type=int, default=None, help="season: 300000; base: 1000000")
    ap.add_argument("--seed", type=int, default=None, help="season: 15; base: 7")
    ap.add_argument("--which", default="both", choices=("both", "cheat", "honest"))
    ap.add_argument("--copies", type=int, default=10)
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if a.what in ("season", "all"):
        for p in make_season(a.deals or 300_000, 15 if a.seed is None else a.seed, a.which):
            print(p)
    if a.what == "months":
        which = "honest" if a.which == "both" else a.which
        src = OUT / f"scale-{which}-{a.deals or 300_000}-s{15 if a.seed is None else a.seed}.parquet"
        if not src.exists():
            make_season(a.deals or 300_000, 15 if a.seed is None else a.seed, which)
        dst = OUT / (src.stem + "-months")
        if not dst.exists():
            print(f"{src.name} -> {dst.name}/month=.../part-0.parquet ...", file=sys.stderr)
            print(f"  {months(src, dst)} files", file=sys.stderr)
        print(dst)
    if a.what in ("base", "tenfold", "all"):
        base = make_base(1_000_000 if a.what == "all" else a.deals or 1_000_000, 7 if a.seed is None else a.seed)
        print(base)
        if a.what in ("tenfold", "all"):
            dst = base.with_name(base.stem + f"-x{a.copies}.parquet")
            if not dst.exists():
                print(f"{a.copies} renamed copies -> {dst.name} ...", file=sys.stderr)
                tenfold(base, dst, a.copies)
            print(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
