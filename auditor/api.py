"""Tables for analysts (issue 16): the audit and the replayed deals as polars DataFrames.

    import auditor
    deals = auditor.read_deals(["season.jsonl.gz"])            # one row per replayed deal
    audit = auditor.run_audit(["season.jsonl.gz"], seed=0)     # the audit of `auditor audit season.jsonl.gz`
    audit.tests, audit.flags, audit.findings, audit.games      # polars DataFrames; .to_pandas() through polars

Nothing here computes a number of its own: `run_audit` is the CLI's audit (`auditor.audit.audit_input`, or
`audit(replay_for_audit(...))` for the reference engine) with the same options under the CLI's flag names, and its
tables are read off the audit document (`AuditReport.to_json()`, docs/spec/outputs.md "audit"); `read_deals` is the
table of replayed deals the detectors read (`auditor.columns.AuditColumns`), with names instead of indices. Column
names and dtypes: docs/spec/outputs.md "Tables for analysts (issue 16)". `write_frame` writes a table as Parquet or
CSV, atomically (`auditor audit --out tests.parquet|tests.csv`).

Everything is held in memory: this is for the seasons an analyst opens in a notebook; a log of hundreds of millions
of deals is audited with the CLI (`--workers`, `--dask`), whose `--out tests.parquet` gives the same tests table.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from . import dealog
from .atomic import atomic_open
from .audit import DEFAULT_SEED, PART_DEALS, AuditReport, audit, audit_input, check_options, replay_for_audit
from .cards import CARD_STR, RJ, SUITS
from .columns import TIME_NONE, AuditColumns
from .errors import NoInputError, UsageError
from .facts import config_of, held_prob
from .inputs import expand_inputs
from .logparse import check_input
from .report.sentences import result_sentence
from .rules import PRESETS, Rules
from .select import Selection

PathArg = str | os.PathLike[str]

# ---------------------------------------------------------------- the tables' columns and dtypes (outputs.md)

TESTS_SCHEMA: dict[str, Any] = {
    "test": pl.String, "subject": pl.String, "tier": pl.String, "flagged": pl.Boolean, "strong": pl.Boolean,
    "n": pl.Int64, "observed": pl.Float64, "expected": pl.Float64, "statistic": pl.Float64,
    "pvalue": pl.Float64, "qvalue": pl.Float64, "per_test_level": pl.Float64, "method": pl.String,
    "sentence": pl.String, "controls": pl.String,
}

FINDINGS_SCHEMA: dict[str, Any] = {
    "code": pl.String, "source": pl.String, "file": pl.String, "line": pl.Int64, "game_id": pl.String,
    "deal_no": pl.Int64, "trick": pl.Int64, "seat": pl.Int64, "player": pl.String, "card": pl.String,
    "message": pl.String,
}

GAMES_SCHEMA: dict[str, Any] = {
    "game_id": pl.String, "deals": pl.Int64, "totals": pl.List(pl.Int64), "winner": pl.Int64,
    "loser": pl.Int64, "ended_by": pl.String,
}

DEALS_SCHEMA: dict[str, Any] = {
    "order": pl.Int64, "source": pl.String, "file": pl.String, "line": pl.Int64,
    "table": pl.String, "game_id": pl.String, "deal_no": pl.Int64, "time": pl.Datetime("us", "UTC"),
    "game": pl.String, "rules": pl.String, "options": pl.String, "pack": pl.String,
    "n_players": pl.Int8, "players": pl.List(pl.String), "sides": pl.List(pl.Int8),
    "dealer": pl.Int8, "dealer_player": pl.String, "cutter": pl.Int8, "cutter_player": pl.String,
    "turn_up": pl.String, "shown": pl.String, "trump": pl.String,
    "jack_seat": pl.Int8, "jack_player": pl.String, "jack_where": pl.String, "dealer_jack_null": pl.Float64,
    "scored": pl.Boolean, "points": pl.List(pl.Int16), "revokes": pl.Int32, "findings": pl.Int32,
    "sheet": pl.Boolean,
}

_INT64 = (-(1 << 63), (1 << 63) - 1)


# ---------------------------------------------------------------- the result


@dataclass(frozen=True)
class AuditTables:
    """What `run_audit` returns. `tests`: one row per (test, subject), in the document's order; `flags`: the flagged
    rows, most significant first (the document's `flags`); `findings`: the replay's findings; `games`: the games
    summary; `document`: the audit JSON document (`auditor audit --json`, games summary included) for everything
    else (families, the audit block, controls and details); `report`: the `AuditReport` it was made from."""

    tests: pl.DataFrame
    flags: pl.DataFrame
    findings: pl.DataFrame
    games: pl.DataFrame
    document: dict[str, Any]
    report: AuditReport = dataclasses.field(repr=False, compare=False)


# ---------------------------------------------------------------- options (the CLI's flags)


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def input_paths(paths: PathArg | Iterable[PathArg]) -> list[str]:
    """The inputs as the CLI takes them: one path or several, a directory as the logs under it. `NoInputError`
    (exit 3's meaning) when none can be opened; the others are read, an unreadable one being a `bad_record`."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    expanded = expand_inputs(items)
    if not expanded:
        raise NoInputError("no input file was given")
    why = {p: check_input(p) for p in expanded}
    if all(w is not None for w in why.values()):
        raise NoInputError("no input could be read: " + "; ".join(f"{p}: {w}" for p, w in why.items()))
    return expanded


def selection_of(table: str | Iterable[str] | None = None, game: str | Iterable[str] | None = None,
                 since: str | None = None, until: str | None = None) -> Selection:
    """`--table`, `--game`, `--since`, `--until` as a `Selection` (`UsageError` for a bad date or window)."""
    return Selection(tables=_names(table), games=_names(game), since=since, until=until)


class _RecordLimit:
    """`--max-record-bytes` for the duration of one call (the reader's limit is a setting of the process)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.before = dealog.MAX_RECORD_BYTES

    def __enter__(self) -> None:
        if self.limit is not None:
            dealog.set_max_record_bytes(self.limit)

    def __exit__(self, *exc: object) -> None:
        dealog.set_max_record_bytes(self.before)


# ---------------------------------------------------------------- run_audit


def run_audit(paths: PathArg | Iterable[PathArg], *, fdr: float = 0.05, seed: int = DEFAULT_SEED,
              engine: str = "batch", table: str | Iterable[str] | None = None,
              game: str | Iterable[str] | None = None, since: str | None = None, until: str | None = None,
              max_record_bytes: int | None = None, workers: int | None = None, dask: str | None = None,
              part_deals: int = PART_DEALS, save_counts: PathArg | None = None,
              add_counts: PathArg | Iterable[PathArg] | None = None, workdir: str | None = None) -> AuditTables:
    """The audit of `auditor audit PATHS...` with the same options (keyword names = the CLI's flags, `-` as `_`),
    as tables. Raises `UsageError` for a bad option, `NoInputError` when no input can be read, `InputError` for a
    bad counts file. An input of which no deal could be replayed gives empty tests and its findings."""
    adds = [str(p) for p in ([add_counts] if isinstance(add_counts, (str, os.PathLike)) else add_counts or ())]
    scaled = bool(workers and workers > 1) or dask is not None or save_counts is not None or bool(adds)
    check_options(fdr, seed, engine, workers, part_deals, scaled, max_record_bytes, workdir)
    sel = selection_of(table, game, since, until)
    files = input_paths(paths)
    with _RecordLimit(max_record_bytes):
        if engine == "batch":
            report = audit_input(files, fdr=fdr, seed=seed, selection=sel, part_deals=part_deals, workers=workers,
                                 dask=dask, add_counts=adds,
                                 save_counts=None if save_counts is None else str(save_counts), workdir=workdir)
        else:
            report = audit(replay_for_audit(files, engine=engine, selection=sel), fdr=fdr, seed=seed,
                           selection=sel)
    try:
        doc = report.to_json()  # the games summary read while the parts' files are there
        games = list(report.replay.games_summary)
    finally:
        report.close()
    report = dataclasses.replace(report, replay=dataclasses.replace(report.replay, games_summary=games),
                                 cleanup=None)
    tests = tests_frame(doc)
    flags = frame_of([_test_row(e, doc) for e in doc.get("flags", [])], TESTS_SCHEMA)
    return AuditTables(tests=tests, flags=flags, findings=findings_frame(doc["replay"]["findings"]),
                       games=games_frame(doc["replay"]["games_summary"]), document=doc, report=report)


def frame_of(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    """Rows as a frame of exactly `schema` (an empty frame keeps its columns and dtypes)."""
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _test_row(e: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    levels = ((doc.get("audit") or {}).get("per_test_level") or {})
    n = e.get("n")
    return {
        "test": e.get("test"), "subject": e.get("subject"), "tier": e.get("tier"), "flagged": bool(e.get("flagged")),
        "strong": bool(e.get("strong")), "n": _int64(n),
        "observed": _float(e.get("observed")), "expected": _float(e.get("expected")),
        "statistic": _float(e.get("statistic")), "pvalue": _float(e.get("pvalue")),
        "qvalue": _float(e.get("qvalue")), "per_test_level": _float(levels.get(e.get("test"))),
        "method": e.get("method"), "sentence": result_sentence(e),
        "controls": orjson.dumps(e.get("controls") or {}).decode(),
    }


def tests_frame(doc: dict[str, Any]) -> pl.DataFrame:
    """The document's `tests`, one row per (test, subject), in its order (`TESTS_SCHEMA`)."""
    return frame_of([_test_row(e, doc) for e in doc.get("tests", [])], TESTS_SCHEMA)


def _float(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _int64(x: Any) -> int | None:
    """An int that fits int64, else None (a deal number the reader took beyond int64: its `source` still points
    at it)."""
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return x if isinstance(x, int) and not isinstance(x, bool) and _INT64[0] <= x <= _INT64[1] else None


def _file_line(source: str) -> tuple[str, int | None]:
    """'club.jsonl:88' -> ('club.jsonl', 88); a source without a line (a file that could not be read) -> (it,
    None)."""
    head, sep, tail = source.rpartition(":")
    if sep and tail.isdigit() and head:
        return head, _int64(int(tail))
    return source, None


def findings_frame(findings: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """The replay's findings as outputs.md writes them, plus `file` and `line` split from `source`."""
    rows = []
    for f in findings:
        source = str(f.get("source", ""))
        file, line = _file_line(source)
        rows.append({"code": f.get("code"), "source": source, "file": file, "line": line,
                     "game_id": f.get("game_id"), "deal_no": _int64(f.get("deal_no")), "trick": _int64(f.get("trick")),
                     "seat": _int64(f.get("seat")), "player": f.get("player"), "card": f.get("card"),
                     "message": f.get("message")})
    return frame_of(rows, FINDINGS_SCHEMA)


def games_frame(games: Sequence[dict[str, Any]]) -> pl.DataFrame:
    rows = [{"game_id": g.get("game_id"), "deals": _int64(g.get("deals")),
             "totals": None if g.get("totals") is None else [_int64(t) for t in g["totals"]],
             "winner": _int64(g.get("winner")), "loser": _int64(g.get("loser")), "ended_by": g.get("ended_by")}
            for g in games]
    return frame_of(rows, GAMES_SCHEMA)


# ---------------------------------------------------------------- writing a table (auditor audit --out t.parquet)


def write_frame(frame: pl.DataFrame, path: PathArg) -> None:
    """`frame` to `path` as Parquet (`.parquet`) or CSV (`.csv`, UTF-8, a header line, nulls as empty fields),
    whole or not at all. `UsageError` for another suffix or a path that cannot be written."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise UsageError(f"{str(path)!r}: a table is written as .parquet or .csv")
    try:
        with atomic_open(path, "wb") as fh:
            if suffix == ".parquet":
                frame.write_parquet(fh)
            else:
                frame.write_csv(fh)
    except OSError as e:
        raise UsageError(f"cannot write {str(path)!r}: {e.strerror or e}") from None


# ---------------------------------------------------------------- read_deals


def read_deals(paths: PathArg | Iterable[PathArg], *, engine: str = "batch",
               table: str | Iterable[str] | None = None, game: str | Iterable[str] | None = None,
               since: str | None = None, until: str | None = None,
               max_record_bytes: int | None = None) -> pl.DataFrame:
    """One row per replayed deal (`DEALS_SCHEMA`), in input order (file, line); `order` is the deal's rank in the
    canonical order every detector follows (table, time, game, deal number). Records that could not be replayed
    are not rows: they are `bad_record` findings (`run_audit(...).findings`)."""
    check_options(engine=engine, max_record_bytes=max_record_bytes)
    sel = selection_of(table, game, since, until)
    files = input_paths(paths)
    with _RecordLimit(max_record_bytes):
        rep = replay_for_audit(files, engine=engine, selection=sel)
    assert rep.table is not None
    counts = Counter(f.source for f in rep.findings)
    return deals_frame(rep.table, counts)


def _options_text(rules: Rules) -> str | None:
    """The switches a deal's rules set away from its preset, as a JSON object (None: the preset as it is)."""
    base = PRESETS.get((rules.game, rules.preset))
    diff = {k: v for k, v in rules.switches.items() if base is None or base.switches.get(k) != v}
    return orjson.dumps(diff, option=orjson.OPT_SORT_KEYS).decode() if diff else None


def _ragged(mat: np.ndarray, lengths: np.ndarray, dtype: Any, valid: np.ndarray | None = None) -> pl.Series:
    """Row i of `mat` cut to its first `lengths[i]` values, as a list column (null where `valid` is False), built
    from flat values and offsets (no Python list per row)."""
    lengths = np.clip(np.asarray(lengths, np.int64), 0, mat.shape[1])
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = mat[np.arange(mat.shape[1])[None, :] < lengths[:, None]]
    mask = None if valid is None else pa.array(~np.asarray(valid, bool))
    arr = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values), mask=mask)
    return pl.Series(pl.from_arrow(arr)).cast(dtype)


def deals_frame(cols: AuditColumns, findings: Counter[str] | None = None) -> pl.DataFrame:
    """The table of replayed deals with names for indices (`DEALS_SCHEMA`); `findings`: count of findings by
    `source`, for the `findings` column."""
    D = len(cols)
    if D == 0:
        return pl.DataFrame(schema=DEALS_SCHEMA)
    a = cols.arrays
    rows = np.arange(D)
    n = a["n"].astype(np.int64)
    names = np.array(list(cols.players) + [None], dtype=object)  # index -1 -> None
    seat_names = names[a["seat_player"]]
    players = _ragged(seat_names, n, DEALS_SCHEMA["players"])
    sides = _ragged(a["side_of"], n, DEALS_SCHEMA["sides"])
    dealer = a["dealer"].astype(np.int64)
    cutter = a["cutter"].astype(np.int64)
    in_range = (dealer >= 0) & (dealer < n)
    dealer_player = np.where(in_range, seat_names[rows, np.clip(dealer, 0, 7)], None)
    cut_ok = (cutter >= 0) & (cutter < n)
    cutter_player = np.where(cut_ok, seat_names[rows, np.clip(cutter, 0, 7)], None)

    cards = np.array(CARD_STR + [None], dtype=object)
    turn_up = a["turn_up"].astype(np.int64)
    shown = a["shown"].astype(np.int64)
    trump = a["trump"].astype(np.int64)
    suits = np.array(list(SUITS) + [None], dtype=object)

    # where the Jack of trumps went: the seat whose dealt hand holds it; on a score sheet (issue 16), the seat the
    # sheet says played it (-1: nobody, out of play; -2: not known)
    sheet = a["sheet"] if "sheet" in a else np.zeros(D, bool)
    sheet_jack = a["jack_seat"].astype(np.int64) if "jack_seat" in a else np.full(D, -2)
    by_sheet = sheet & (sheet_jack >= -1)
    has = (a["has_hands"] & (trump >= 0) & ~sheet) | by_sheet
    jack = np.where(trump >= 0, trump * 13 + RJ, 0).astype(np.uint64)
    held = ((a["hands"] >> jack[:, None]) & np.uint64(1)).astype(bool) & (has & ~sheet)[:, None]
    any_held = held.any(axis=1) | (by_sheet & (sheet_jack >= 0))
    jseat = np.where(by_sheet, sheet_jack, np.where(held.any(axis=1), held.argmax(axis=1), -1))
    side = a["side_of"].astype(np.int64)
    same_side = side[rows, np.clip(jseat, 0, 7)] == side[rows, np.clip(dealer, 0, 7)]
    where = np.full(D, None, dtype=object)
    where[has] = "not_dealt"
    where[has & (turn_up == jack.astype(np.int64)) & ~any_held] = "turn_up"
    where[any_held] = "opponent"
    where[any_held & same_side] = "partner"
    where[any_held & (jseat == dealer)] = "dealer"
    jack_player = np.where(any_held, seat_names[rows, np.clip(jseat, 0, 7)], None)

    # the dealer_jack test's exact null for this deal (Scotch Whist): the chance an honest deal gives him the Jack
    p_cache: dict[tuple[int, int], float | None] = {}
    rset = a["rset"].astype(np.int64)
    p_jack = np.full(D, np.nan)
    for key in set(zip(rset.tolist(), n.tolist(), strict=True)):
        rules = cols.rulesets[key[0]]
        cfg = config_of(rules, key[1]) if rules.game == "scotch_whist" else None
        p_cache[key] = None if cfg is None else float(held_prob(cfg, 0, RJ))
    for (rs, k), p in p_cache.items():
        if p is not None:
            p_jack[(rset == rs) & (n == k)] = p

    n_sides = a["n_sides"].astype(np.int64)
    points = _ragged(a["points"], n_sides, DEALS_SCHEMA["points"], valid=a["scored"])
    revokes = np.bincount(cols.rev_row, minlength=D)[:D] if len(cols.rev_row) else np.zeros(D, np.int64)
    sources = [cols.source(i) for i in range(D)]
    counts = findings or Counter()
    time = a["time"]
    packs = np.array(list(cols.packs) + [None], dtype=object)
    ruleset_names = [r.preset for r in cols.rulesets]
    options = [_options_text(r) for r in cols.rulesets]
    game_names = [r.game for r in cols.rulesets]
    deal_no = a["deal_no"]

    data = {
        "order": a["order"], "source": sources,
        "file": np.array(cols.paths, dtype=object)[a["file_index"]] if cols.paths else [None] * D,
        "line": a["line"], "table": np.array(cols.tables, dtype=object)[a["table"]],
        "game_id": np.array(cols.game_ids, dtype=object)[a["game"]], "deal_no": deal_no,
        "time": pl.Series(np.where(time == TIME_NONE, 0, time)).cast(pl.Datetime("us", "UTC")),
        "game": np.array(game_names, dtype=object)[rset], "rules": np.array(ruleset_names, dtype=object)[rset],
        "options": np.array(options + [None], dtype=object)[rset], "pack": packs[a["pack"]],
        "n_players": a["n"], "players": players, "sides": sides, "dealer": a["dealer"],
        "dealer_player": dealer_player, "cutter": a["cutter"], "cutter_player": cutter_player,
        "turn_up": cards[np.where(turn_up >= 0, turn_up, -1)], "shown": cards[np.where(shown >= 0, shown, -1)],
        "trump": suits[np.where(trump >= 0, trump, -1)],
        "jack_seat": np.where(any_held, jseat, 0).astype(np.int8), "jack_player": jack_player,
        "jack_where": where, "dealer_jack_null": p_jack, "scored": a["scored"], "points": points,
        "revokes": revokes.astype(np.int32), "findings": np.array([counts.get(s, 0) for s in sources], np.int32),
        "sheet": sheet,
    }
    out = pl.DataFrame([pl.Series(k, v, dtype=DEALS_SCHEMA[k], strict=False) if not isinstance(v, pl.Series)
                        else v.alias(k) for k, v in data.items()])
    nulls = {"time": time == TIME_NONE, "jack_seat": ~any_held, "dealer_jack_null": np.isnan(p_jack),
             "dealer": ~in_range, "cutter": ~cut_ok}
    out = out.with_columns([pl.when(pl.Series(m)).then(None).otherwise(pl.col(c)).alias(c)
                            for c, m in nulls.items()]).select(list(DEALS_SCHEMA))
    # input order: the batch engine appends the deals it leaves to the reference engine after its own
    return out.select(pl.all().gather(np.lexsort((a["line"], a["file_index"]))))
