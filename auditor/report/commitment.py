"""A salted commitment to an audit's flag list (issue 16, `auditor audit --commit FILE`, `auditor verify-commit`).

A fair-play committee can fix the flags before anyone reviews names, and show later that it did not change them
(the practice of bridge fair-play investigations). A plain hash of a short list of names could be found by trying
lists, hence a salt the committee keeps:

    salt        32 random bytes (`secrets.token_bytes`), written as 64 lowercase hex digits
    flags_json  the flag list as canonical JSON: the sorted list of [test, subject] pairs, ASCII only
                (`json.dumps(sorted(pairs), ensure_ascii=True, separators=(",", ":"))`)
    commitment  SHA-256 hex of  salt (the 32 bytes)  followed by  flags_json (its bytes)

`seal(flags)` draws the salt and gives the sealed record the CLI writes to FILE (`format`, `commitment`, `salt`,
`flags`, `flags_json`); the commitment alone is printed and published. `verify(sealed, commitment, doc)` recomputes
it from the salt and the flags (never from the stored text alone), and compares the flags with an audit document's
when one is given. docs/spec/outputs.md "commitment" is the contract; the one-line shell check is there too.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from typing import Any, Iterable

from ..errors import UsageError

FORMAT = "auditor-commitment/1"
SALT_BYTES = 32
_HEX64 = re.compile(r"[0-9a-f]{64}")


def flag_pairs(flags: Iterable[Any]) -> list[list[str]]:
    """The sorted [test, subject] pairs of a document's flag entries (or of pairs already)."""
    out = []
    for f in flags:
        if isinstance(f, dict):
            out.append([str(f.get("test", "")), str(f.get("subject", ""))])
        elif isinstance(f, (list, tuple)) and len(f) == 2:
            out.append([str(f[0]), str(f[1])])
        else:
            raise UsageError(f"a flag must be a [test, subject] pair, got {f!r}")
    return sorted(out)


def flags_json(flags: Iterable[Any]) -> str:
    """The canonical JSON of the flag list (module docstring): sorted pairs, ASCII only, no spaces."""
    return json.dumps(flag_pairs(flags), ensure_ascii=True, separators=(",", ":"))


def commitment(salt: bytes, flags: Iterable[Any]) -> str:
    """SHA-256 hex of the salt followed by the canonical flag list."""
    return hashlib.sha256(bytes(salt) + flags_json(flags).encode("ascii")).hexdigest()


def seal(flags: Iterable[Any], salt: bytes | None = None) -> dict[str, Any]:
    """The sealed record for FILE: a fresh random salt (or the one given, for tests), the flags, the commitment."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else bytes(salt)
    if len(salt) != SALT_BYTES:
        raise UsageError(f"the salt must be {SALT_BYTES} bytes, got {len(salt)}")
    pairs = flag_pairs(flags)
    return {"format": FORMAT, "commitment": commitment(salt, pairs), "salt": salt.hex(), "flags": pairs,
            "flags_json": flags_json(pairs)}


def sealed_text(sealed: dict[str, Any]) -> str:
    return json.dumps(sealed, indent=2, ensure_ascii=True) + "\n"


def read_sealed(text: str, where: str) -> dict[str, Any]:
    """A sealed record read back, checked for shape (a `UsageError` naming `where` otherwise)."""
    try:
        sealed = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}: not a sealed commitment (not valid JSON: {e.msg}, line {e.lineno})") from None
    if not isinstance(sealed, dict) or sealed.get("format") != FORMAT:
        raise UsageError(f"{where}: not a sealed commitment (no \"format\": \"{FORMAT}\")")
    salt = sealed.get("salt")
    if not isinstance(salt, str) or not _HEX64.fullmatch(salt):
        raise UsageError(f"{where}: \"salt\" must be {2 * SALT_BYTES} lowercase hex digits")
    if not isinstance(sealed.get("flags"), list):
        raise UsageError(f"{where}: \"flags\" must be a list of [test, subject] pairs")
    flag_pairs(sealed["flags"])  # raises on a malformed pair
    return sealed


def verify(sealed: dict[str, Any], published: str | None = None, doc: dict | None = None) -> list[str]:
    """What does not match, in words (an empty list: everything matches). Checks that the salt and flags give the
    published commitment (or the one stored in the record when none is given), and, with an audit document, that
    the document's flags are the sealed ones."""
    problems = []
    again = commitment(bytes.fromhex(sealed["salt"]), sealed["flags"])
    target = (published or str(sealed.get("commitment", ""))).strip().lower()
    if again != target:
        problems.append(f"the salt and the sealed flags give {again}, not the commitment {target}")
    if published and str(sealed.get("commitment", "")).lower() not in ("", published.strip().lower()):
        problems.append("the record's own commitment differs from the published one")
    if doc is not None:
        got = flag_pairs(f for f in (doc.get("flags") or []) if isinstance(f, dict))
        sealed_pairs = flag_pairs(sealed["flags"])
        if got != sealed_pairs:
            added = [p for p in got if p not in sealed_pairs]
            dropped = [p for p in sealed_pairs if p not in got]
            problems.append("the document's flags differ from the sealed ones"
                            + (f"; not sealed: {', '.join('/'.join(p) for p in added)}" if added else "")
                            + (f"; sealed, not in the document: {', '.join('/'.join(p) for p in dropped)}"
                               if dropped else ""))
    return problems
