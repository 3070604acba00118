"""Strings from a log made harmless for a terminal or a Markdown file (issue 12), by one rule written once.

A deal log is input from anyone: a `game_id`, a `table`, a player id or a line quoted in a finding can hold escape
sequences (clear the screen, recolour it, plant an OSC 8 link, set the window title) or bidirectional controls that
reverse the text around them (a name that reads "bob" but sorts as "bod"...). Before such a string reaches a
terminal, stderr or a Markdown report, `visible(text)` replaces each of these characters by a visible escape:

- C0 controls U+0000-U+001F (newline, tab and ESC included), DEL U+007F and C1 controls U+0080-U+009F become
  ``\\xNN`` (ESC is ``\\x1b``, newline ``\\x0a``);
- the bidirectional marks, embeddings, overrides and isolates U+061C, U+200E, U+200F, U+202A-U+202E and
  U+2066-U+2069, and the line and paragraph separators U+2028, U+2029, become ``\\uNNNN``.

Everything else is kept (accents, other scripts, emoji). The JSON outputs keep the exact strings (JSON escapes its
own controls); the HTML report keeps them escaped by jinja2 and passes its whole text through `visible` with
`keep="\\t\\n\\r"` so that its layout survives.
"""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
UNSAFE = frozenset((*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI))


def _escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}"


_TABLE = {cp: _escape(cp) for cp in UNSAFE}


def _table(keep: str) -> dict[int, str]:
    if not keep:
        return _TABLE
    t = dict(_TABLE)
    for ch in keep:
        t.pop(ord(ch), None)
    return t


def visible(text: object, keep: str = "") -> str:
    """`text` (any value; None is "") with every control and bidirectional character as a visible escape.
    `keep`: characters to leave as they are (the HTML report keeps its own newlines and tabs)."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable():  # the common case: nothing to do
        return s
    return s.translate(_table(keep))


def is_safe(text: str) -> bool:
    """No character that `visible` would escape."""
    return not any(ord(c) in UNSAFE for c in text)
