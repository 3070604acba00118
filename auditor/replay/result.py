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
from typing import IO, TYPE_CHECKING, Any, Protocol, Sequence

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


_TAIL = b"[]\n}"


@dataclass
class Replay:
    """What a replay found (module docstring)."""

    deals: int  # records read
    games: int
    findings: list[Finding]
    games_summary: Sequence[GameSummary]  # a list, or the batch pipeline's GameList
    stats: dict[str, Any] = field(default_factory=dict)
    table: AuditColumns | None = None  # the table of replayed deals, when asked for
    results: list[DealResult] | None = None  # per-deal results (replays of in-memory records only)
    outcomes: dict[int, DealOutcome] = field(default_factory=dict)  # index in `results` -> game outcome

    def to_json(self) -> dict[str, Any]:
        return {"deals": self.deals, "games": self.games, "findings": [f.to_json() for f in self.findings],
                "games_summary": [g.to_json() for g in self.games_summary]}

    def head_json(self) -> dict[str, Any]:
        """The document with an empty `games_summary` (what the audit document embeds before the games)."""
        return {"deals": self.deals, "games": self.games, "findings": [f.to_json() for f in self.findings],
                "games_summary": []}

    def _entries(self) -> GameEntries | None:
        gs = self.games_summary
        return gs if len(gs) and hasattr(gs, "json_entries") else None  # type: ignore[return-value]

    def to_json_bytes(self) -> bytes:
        """The document as `json.dumps(self.to_json(), indent=2, ensure_ascii=False)` writes it (see
        `dump_document`), built without a Python object per game when the summary can write itself."""
        entries = self._entries()
        if entries is None:
            return dump_document(self.to_json())
        text = dump_document(self.head_json())
        assert text.endswith(_TAIL)
        return text[:-len(_TAIL)] + b"[\n" + entries.json_entries() + b"\n  ]\n}"

    def write_json(self, out: IO[bytes]) -> None:
        """Write the document (as `to_json_bytes`) to a binary stream, without joining it into one bytes."""
        entries = self._entries()
        if entries is None:
            out.write(dump_document(self.to_json()))
            return
        text = dump_document(self.head_json())
        assert text.endswith(_TAIL)
        out.write(text[:-len(_TAIL)] + b"[\n")
        pieces = getattr(entries, "json_pieces", None)
        if pieces is not None:  # a summary merged from parts (`auditor.parts`): block by block, never joined
            for piece in pieces():
                out.write(piece)
        else:
            out.write(entries.json_buffer())
        out.write(b"\n  ]\n}")

    def counts(self) -> dict[str, int]:
        """Findings by code."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out
