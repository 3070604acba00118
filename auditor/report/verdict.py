"""What a run actually looked at (issue 12): how many deals were replayed, how many records were not read and why.

Nothing to audit must never read as all clear. `Coverage` is counted from the replay's findings (every record
read is a replayed deal or a `bad_record`) and the selection summary; the report's verdict
(`view.build_view`), the terminal summaries and the CLI's exit-3 line all say it in these words:

- "No one is flagged among 8,001 deals audited" only when deals were audited;
- "; 3 records not read (2 not valid JSON, 1 unreadable file)" when some were not;
- "Nothing was audited, no deal was replayed: 2 records read, 2 not readable (bad_record: 2 not valid JSON)" when
  none was (and on stderr, before exit 3: "auditor: no deal was replayed: 2 records read, ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .values import as_dict, as_list

_LINE = re.compile(r":\d+$")

# why a record was not read, in the order the words are listed when counts tie
REASONS = {
    "json": "not valid JSON",
    "utf8": "not UTF-8 text",
    "schema": "breaking the deal-log/1 schema",
    "file": "unreadable file",
    "cut": "file broken off (the rest of it unread)",
}

# why a deal was left out by the selection (`select.Selection.summary`'s `not_selected`), in words
NOT_SELECTED_WORDS = {"table": "at another table", "game": "of another game", "time": "started outside the dates",
                      "no_time": "with no time to place them"}


def _get(f, key: str):
    return f.get(key) if isinstance(f, dict) else getattr(f, key, None)


@dataclass(frozen=True)
class FindingsDigest:
    """What the reports read of every finding, from one pass over them (issue 15: a large input's findings are
    streamed from the parts' files, and the coverage, the report's count by code and the pretty-printing hint each
    read them all again, up to eight passes for one `audit --out report.html`).

    - `by_code`: the findings that are dicts (the document's entries), counted by `str(code)` ("?" without one);
      `n_entries` of them in all;
    - `unread` and `first`: the `bad_record` findings (dicts or objects) by reason, and the first as
      "source: message" (`Coverage`);
    - `hints`: the bad records that say their file looks like pretty-printed JSON (`console.pretty_hints`)."""

    n_entries: int
    by_code: tuple[tuple[str, int], ...]
    unread: tuple[tuple[str, int], ...]
    first: str
    hints: tuple[str, ...]


def findings_digest(findings) -> FindingsDigest:
    """`FindingsDigest` of a findings list (or of a `DocEntries`, whose digest is kept with it: a streamed
    document list does not change once made)."""
    memo = getattr(findings, "memo", None)
    if memo is not None:
        return memo("digest", lambda: _digest(findings))
    return _digest(findings)


def _digest(findings) -> FindingsDigest:
    by_code: dict[str, int] = {}
    unread: dict[str, int] = {}
    hints: list[str] = []
    first = ""
    n = 0
    for f in findings or ():
        if isinstance(f, dict):
            n += 1
            c = str(f.get("code", "?"))
            by_code[c] = by_code.get(c, 0) + 1
        if _get(f, "code") == "bad_record":
            src, msg = _get(f, "source"), _get(f, "message")
            r = reason_of(src, msg)
            unread[r] = unread.get(r, 0) + 1
            if not first:
                first = f"{src}: {msg}"
            if isinstance(msg, str) and "looks like pretty-printed JSON" in msg:
                hints.append(f"{src}: {msg[msg.index('this file looks'):]}")
    return FindingsDigest(n, tuple(by_code.items()), tuple(unread.items()), first, tuple(hints))


def reason_of(source, message) -> str:
    """The key of REASONS for one `bad_record` finding."""
    msg = str(message or "")
    if msg.startswith("unreadable after line"):
        return "cut"
    if not _LINE.search(str(source or "")):
        return "file"  # a finding about the whole file (no line): cannot open, not Parquet, not gzip...
    if msg.startswith("not valid JSON"):
        return "json"
    if msg.startswith("not UTF-8"):
        return "utf8"
    return "schema"


def _n(k: int, one: str, many: str | None = None) -> str:
    return f"{k:,} {one if k == 1 else (many or one + 's')}"


@dataclass
class Coverage:
    read: int = 0  # records the replay saw (with a selection: the selected deals and every bad record)
    unread: dict = field(default_factory=dict)  # reason -> bad_record findings
    selection: dict | None = None  # the selection summary (select.Selection.summary), when one was given
    first: str = ""  # "source: message" of the first bad record (the exit-3 line quotes it)

    @classmethod
    def of(cls, deals, findings, selection=None) -> "Coverage":
        d = findings_digest(findings)
        try:
            read = int(deals or 0)
        except (TypeError, ValueError):
            read = 0
        return cls(read, dict(d.unread), selection if isinstance(selection, dict) else None, d.first)

    @classmethod
    def of_doc(cls, doc: dict) -> "Coverage":
        doc = doc if isinstance(doc, dict) else {}
        block = doc.get("replay")
        replay = block if isinstance(block, dict) else doc
        findings = as_list(replay.get("findings"))
        return cls.of(doc.get("deals", replay.get("deals")), findings, doc.get("selection"))

    @property
    def not_read(self) -> int:
        return sum(self.unread.values())

    @property
    def audited(self) -> int:
        """Deals replayed: records read that are not bad records (each bad record, a file that cannot be read or
        one broken off included, counts as one record read)."""
        return max(0, self.read - self.not_read)

    def reasons_words(self) -> str:
        order = list(REASONS)
        items = sorted(self.unread.items(), key=lambda rk: (-rk[1], order.index(rk[0])))
        return ", ".join(f"{k:,} {REASONS[r]}" for r, k in items)

    def unread_clause(self) -> str:
        """'; 3 records not read (2 not valid JSON, 1 unreadable file)', or '' when every record was read (or
        when nothing was audited: `nothing_reason` says it then)."""
        if not self.not_read or not self.audited:
            return ""
        return f"; {_n(self.not_read, 'record')} not read ({self.reasons_words()})"

    def selection_matched_nothing(self) -> bool:
        sel = self.selection
        if not sel:
            return False
        read, chosen, bad = sel.get("records_read"), sel.get("deals_selected"), sel.get("bad_records") or 0
        return isinstance(read, int) and chosen == 0 and read > bad

    def nothing_reason(self) -> str:
        """Why no deal was replayed: '2 records read, 2 not readable (bad_record: 2 not valid JSON)'."""
        sel = self.selection
        if sel and self.selection_matched_nothing():
            what = []
            for key, word in (("tables", "table"), ("games", "game")):
                if sel.get(key):
                    what.append(f"{word} " + ", ".join(repr(str(x)) for x in sel[key]))
            if sel.get("since"):
                what.append(f"since {sel['since']}")
            if sel.get("until"):
                what.append(f"until {sel['until']}")
            ns = as_dict(sel.get("not_selected"))
            left = ", ".join(f"{k:,} {NOT_SELECTED_WORDS.get(str(w), str(w))}" for w, k in sorted(ns.items())
                             if isinstance(k, int) and k)
            text = (f"the selection ({'; '.join(what) or 'everything'}) matches none of the "
                    f"{_n(sel['records_read'], 'record')} read")
            if left:
                text += f" ({left})"
            bad = sel.get("bad_records") or 0
            if bad:
                text += f"; {_n(bad, 'record')} not readable ({self.reasons_words()})"
            return text
        if self.read == 0 and not self.not_read:
            return "the input holds no record (an empty file)"
        text = f"{_n(self.read, 'record')} read"
        if self.not_read:
            text += f", {self.not_read:,} not readable (bad_record: {self.reasons_words()})"
        return text


    def nothing_headline(self) -> str:
        return "Nothing was audited, no deal was replayed: " + self.nothing_reason()

    def nothing_line(self) -> str:
        """The CLI's line on stderr before exit 3 (with the first unreadable record, cut to 160 characters)."""
        first = self.first if len(self.first) <= 160 else self.first[:159] + "…"
        return "auditor: no deal was replayed: " + self.nothing_reason() + (f"; first: {first}" if first else "")
