"""Which records an audit looks at: `auditor audit --table T --game G --since D --until D`.

The unit of selection is the game, so that a selected game is replayed whole (its totals, winner and deal
sequence stay right):

- `--table T` (repeatable): the deal's `table` is one of them;
- `--game G` (repeatable): the deal's `game_id` is G, or its game is G (`scotch_whist`, `all_fours`, or any name
  the reader accepts for them, such as `seven_up`);
- `--since D` / `--until D`: the game *started* in the window, i.e. the `time` of its earliest timed deal is at or
  after `since` and at or before `until`. A date alone means the whole day (`--until 2026-11-30` keeps games that
  started on the 30th); a time without a zone is read as UTC. A game with no `time` on any deal cannot be placed
  in a window and is not selected when a window is given; it is counted under `not_selected.no_time`.

Records that are not valid deals (`bad_record`) belong to no table or game: they are always audited (they are
findings about the log) and counted under `bad_records`. Nothing is dropped silently: `Selection.summary()` says
how many records were read and why each one left out was.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator
from typing import Any

from .dealog import read_records
from .errors import UsageError
from .fast.cols import Chunk, ChunkBuilder, ChunkSource, Registry
from .fast.read import CHUNK_ROWS
from .logparse import GAME_ALIASES, Deal, Record, norm_name


def parse_when(text: str, end: bool) -> _dt.datetime:
    """An ISO-8601 date or date-time as an aware datetime (UTC when no zone); a bare date is the start of the day,
    or with `end` its last instant."""
    s = text.strip()
    try:
        if len(s) == 10 and s[4] == "-" and s[7] == "-":
            d = _dt.date.fromisoformat(s)
            t = _dt.datetime.combine(d, _dt.time.max if end else _dt.time.min)
        else:
            t = _dt.datetime.fromisoformat(s)
    except (ValueError, IndexError):
        raise UsageError(f"{text!r} is not an ISO-8601 date or time (e.g. 2026-11-01 or 2026-11-01T20:00:00Z)") \
            from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t


def deal_time(text: object) -> _dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return parse_when(text, end=False)
    except UsageError:
        return None


@dataclass
class Selection:
    tables: tuple[str, ...] = ()
    games: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    read: int = 0
    selected: int = 0
    bad_records: int = 0
    not_selected: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._since = parse_when(self.since, end=False) if self.since else None
        self._until = parse_when(self.until, end=True) if self.until else None
        if self._since and self._until and self._since > self._until:
            raise UsageError(f"--since {self.since} is after --until {self.until}")
        kinds = {GAME_ALIASES.get(norm_name(g)) for g in self.games}
        self._kinds = {k for k in kinds if k}

    @property
    def active(self) -> bool:
        return bool(self.tables or self.games or self.since or self.until)

    def _why_not(self, d: Deal) -> str | None:
        if self.tables and d.table not in self.tables:
            return "table"
        if self.games and d.game_id not in self.games and d.game not in self._kinds:
            return "game"
        return None

    def filter(self, records: Iterable[Record]) -> list[Record]:
        """The selected records, in input order; the counts of the others in `not_selected`."""
        recs = list(records)
        self.read = len(recs)
        self.bad_records = 0
        self.not_selected = {}
        start: dict[str, _dt.datetime | None] = {}
        if self._since or self._until:
            for r in recs:
                d = r.deal
                if d is None:
                    continue
                t = deal_time(d.time)
                first = start.get(d.game_id)
                if t is not None and (first is None or t < first):
                    start[d.game_id] = t
                else:
                    start.setdefault(d.game_id, None)
        out = []
        for r in recs:
            d = r.deal
            if d is None:
                self.bad_records += 1
                out.append(r)
                continue
            why = self._why_not(d)
            if why is None and (self._since or self._until):
                t = start.get(d.game_id)
                if t is None:
                    why = "no_time"
                elif (self._since and t < self._since) or (self._until and t > self._until):
                    why = "time"
            if why is None:
                out.append(r)
            else:
                self.not_selected[why] = self.not_selected.get(why, 0) + 1
        self.selected = len(out) - self.bad_records
        return out

    def summary(self) -> dict[str, Any]:
        return {"tables": list(self.tables), "games": list(self.games), "since": self.since, "until": self.until,
                "records_read": self.read, "deals_selected": self.selected, "bad_records": self.bad_records,
                "not_selected": dict(sorted(self.not_selected.items()))}


def selected_chunks(selection: Selection) -> ChunkSource:
    """A `chunks` function for `auditor.fast.pipeline.replay_paths`: the selected records of the files, as
    chunks (through the record reader: a selection reads every record as a `Deal`)."""
    def chunks(paths: list[str], reg: Registry) -> Iterator[Chunk]:
        recs = selection.filter(read_records([str(p) for p in paths]))
        yield from records_chunks(recs, paths)(paths, reg)

    return chunks


def records_chunks(records: list[Record], paths: list[str] | None = None) -> ChunkSource:
    """A `chunks` function for `replay_paths` over records already read (in input order); `paths` are the input
    files by file index (else taken from the records' sources)."""
    def chunks(_paths: list[str], reg: Registry) -> Iterator[Chunk]:
        names = [str(p) for p in paths] if paths is not None else _paths_of(records)
        reg.paths.extend(names)
        by_file: dict[int, list[Record]] = {}
        for r in records:
            by_file.setdefault(r.file_index, []).append(r)
        for fi in sorted(by_file):
            path = names[fi] if fi < len(names) else ""
            b = ChunkBuilder(reg, fi, path, keep_all="meta")
            for r in by_file[fi]:
                if r.deal is None:
                    b.add_record(r)
                else:
                    b.add_deal(r.deal)
                if b.rows >= CHUNK_ROWS:
                    yield b.finish()
                    b = ChunkBuilder(reg, fi, path, keep_all="meta")
            if b.rows:
                yield b.finish()

    return chunks


def _paths_of(records: list[Record]) -> list[str]:
    out: list[str] = []
    for r in records:
        while len(out) <= r.file_index:
            out.append("")
        if not out[r.file_index]:
            src = r.source
            out[r.file_index] = src[:-len(f":{r.line}")] if r.line is not None and src.endswith(f":{r.line}") else src
    return out
