"""The one result of a replay, whichever engine ran: `Replay`.

`Replay` holds what every later stage reads: the number of records read (`deals`) and of games, the findings in
input order, the summary of every game, the engine's statistics and, when asked (the audit), the table of replayed
deals (`table`, an `auditor.columns.AuditColumns`: one row per replayed deal, the only input of the detectors).
A replay of in-memory records (`replay_records`) also keeps each deal's `DealResult` and game outcome
(`results`, `outcomes`): the per-card view the differential tests and the oracles read.

The JSON document (`to_json`, `to_json_bytes`, `write_json`) is the replay document of outputs.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, Sequence

from ..dealog import Record
from ..findings import Finding

if TYPE_CHECKING:  # types only: the table and the per-deal results are built by the stages that import this one
    from ..columns import AuditColumns
    from .chain import DealOutcome, GameSummary
    from .reference import DealResult


class GameEntries(Protocol):
    """A games summary that writes its own JSON entries (the batch pipeline's `GameList`): no object per game."""

    def __len__(self) -> int: ...

    def json_entries(self) -> bytes: ...

    def json_buffer(self) -> Any: ...

    # optional: `json_pieces() -> Iterator[bytes]`, the entries as consecutive pieces (written one at a time)


def dump_document(doc: dict[str, Any]) -> bytes:
    """The JSON document, indented by 2 and UTF-8 (orjson when it can; `json.dumps(doc, indent=2,
    ensure_ascii=False)` otherwise, e.g. for an integer beyond 64 bits). The two agree except in how some floats
    are spelled: orjson writes 1e-05 as 0.00001 (the same number)."""
    try:
        import orjson

        return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    except (ImportError, TypeError):  # e.g. an integer beyond 64 bits
        import json

        return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def bad_record_finding(rec: Record) -> Finding:
    """The `bad_record` finding of a record that could not be read as a deal."""
    raw = rec.raw if isinstance(rec.raw, dict) else {}
    gid = raw.get("game_id") if isinstance(raw.get("game_id"), str) else None
    dno = raw.get("deal_no") if isinstance(raw.get("deal_no"), int) and not isinstance(raw.get("deal_no"), bool) \
        else None
    return Finding("bad_record", gid, dno, None, None, None, None, rec.source, rec.error or "unreadable record")


def entry_bytes(obj: Any) -> bytes:
    """One item of a list as the replay document writes it, with the separator before it: ",\n    {...}" (4 spaces
    deep; `write_spliced` drops the first item's ",\n" and indents it further where the list is deeper)."""
    return b",\n    " + dump_document(obj).replace(b"\n", b"\n    ")


def streamed(findings: Any) -> bool:
    """Whether these findings are written out, not held (a large input's parts: `parts.MergedFindings`, whose
    `json_pieces()` the document writers splice in) and not empty."""
    return hasattr(findings, "json_pieces") and len(findings) > 0


def forward_slice(items: Iterable[Any], key: Any) -> list[Any] | None:
    """`items[key]` read by iteration, for a slice from a start to a stop with step 1 (what the reports take: the
    first entries), so that a sequence that is not held is not made whole for it; else None."""
    if isinstance(key, slice) and key.step in (None, 1) and (key.start or 0) >= 0 and key.stop is not None \
            and key.stop >= 0:
        return list(islice(items, key.start or 0, key.stop))
    return None


class DocEntries(Sequence[dict]):
    """A document list that is not held (issue 15): the `to_json()` dicts of a streamed sequence (the findings of a
    large input), made as they are read. Reports iterate it, count it and take its first entries; the JSON writers
    splice its `json_pieces()` in instead of serialising it."""

    def __init__(self, items: Any) -> None:
        self.items = items
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        """`make()`, kept under `key`: what a report derives from every entry (`report.verdict.findings_digest`)
        is read once, not once per report that asks (the entries do not change once the list is made)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[dict]:
        for x in self.items:
            yield x.to_json()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int) and isinstance(self.items, (list, tuple)):  # held items: one entry made
            return self.items[key].to_json()
        head = forward_slice(self.items, key)
        if head is not None:
            return [x.to_json() for x in head]
        return list(self)[key]

    def json_pieces(self) -> Iterator[bytes]:
        return self.items.json_pieces()


def write_spliced(text: bytes, splices: Sequence[tuple[bytes, Any, bytes]], out: IO[bytes]) -> None:
    """Write the document `text` to `out` with each empty list that ends a `marker` (`...: []`, in document order)
    filled with its `pieces`: entries as the replay document writes them (4 spaces deep), the first without its
    ",\\n", and `indent` more in front of every line (the audit document nests the replay one level deeper)."""
    pos = 0
    for marker, pieces, indent in splices:
        assert text.count(marker) == 1, marker  # our own keys and newlines: no log string holds a raw newline
        at = text.index(marker, pos)
        out.write(text[pos:at] + marker[:-1] + b"\n")
        first = True
        for piece in pieces:
            piece = piece.replace(b"\n", b"\n" + indent) if indent else piece
            out.write((indent if first else b"") + piece)
            first = False
        out.write(b"\n" + indent + b"  ]")
        pos = at + len(marker)
    out.write(text[pos:])


def entry_pieces(entries: Any) -> Iterator[bytes]:
    """A games summary's (or findings') document entries as consecutive pieces: block by block when it can give
    them so (merged from parts, never joined), else its one buffer."""
    pieces = getattr(entries, "json_pieces", None)
    if pieces is not None:
        yield from pieces()
    else:
        yield bytes(entries.json_buffer())


@dataclass
class Replay:
    """What a replay found (module docstring)."""

    deals: int  # records read
    games: int
    findings: Sequence[Finding]  # a list; a large input's parts: `parts.MergedFindings`, written out, not held
    games_summary: Sequence[GameSummary]  # a list, or the batch pipeline's GameList
    stats: dict[str, Any] = field(default_factory=dict)
    table: AuditColumns | None = None  # the table of replayed deals, when asked for
    results: list[DealResult] | None = None  # per-deal results (replays of in-memory records only)
    outcomes: dict[int, DealOutcome] = field(default_factory=dict)  # index in `results` -> game outcome

    def to_json(self) -> dict[str, Any]:
        return {"deals": self.deals, "games": self.games, "findings": [f.to_json() for f in self.findings],
                "games_summary": [g.to_json() for g in self.games_summary]}

    def head_json(self) -> dict[str, Any]:
        """The document with an empty `games_summary` (what the audit document embeds before the games); findings
        that are written out, not held (`streamed`), as a `DocEntries`."""
        found = DocEntries(self.findings) if streamed(self.findings) else [f.to_json() for f in self.findings]
        return {"deals": self.deals, "games": self.games, "findings": found, "games_summary": []}

    def _entries(self) -> GameEntries | None:
        gs = self.games_summary
        return gs if len(gs) and hasattr(gs, "json_entries") else None  # type: ignore[return-value]

    def to_json_bytes(self) -> bytes:
        """The document as `json.dumps(self.to_json(), indent=2, ensure_ascii=False)` writes it (see
        `dump_document`), built without a Python object per game when the summary can write itself."""
        import io

        buf = io.BytesIO()
        self.write_json(buf)
        return buf.getvalue()

    def write_json(self, out: IO[bytes]) -> None:
        """Write the document (as `to_json_bytes`) to a binary stream, without joining it into one bytes: the games
        summary and streamed findings (a large input's parts) are spliced in block by block."""
        entries = self._entries()
        found = streamed(self.findings)
        if entries is None and not found:
            out.write(dump_document(self.to_json()))
            return
        head = self.head_json()
        splices: list[tuple[bytes, Any, bytes]] = []
        if found:
            head["findings"] = []
            splices.append((b'\n  "games": %d,\n  "findings": []' % self.games, entry_pieces(self.findings), b""))
        if entries is None:
            head["games_summary"] = [g.to_json() for g in self.games_summary]
        else:
            splices.append((b'\n  "games_summary": []', entry_pieces(entries), b""))
        write_spliced(dump_document(head), splices, out)

    def counts(self) -> dict[str, int]:
        """Findings by code."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out
