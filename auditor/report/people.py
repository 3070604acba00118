"""A verdict per person (issue 16): every flag that names a player brought together in one plain paragraph.

The report opens with these paragraphs, in the words a club secretary uses: what was seen (each flag as one clause
whose every count says what it counts, the game included when a test looks at one game only: `TestSpec.games`),
how unusual it is (the odds of the strongest result for an honest player, then what the audit-wide level says),
and what deals it rests on. A pair flag (`rosa+gus`) appears in both players' paragraphs, except a dealer and
cutter pair whose dealer did as much with the other cutters: it names the dealer alone
(`sentences.second_cleared`). Everything is built from the flag entries of the audit document and the tests'
specs; no test is named here.

Strings that came from a log (player ids) are kept raw: each renderer escapes them for its own medium.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from .sentences import biggest_cell_words, fmt_about, fmt_num, min_detectable, pair_of, players_named, spec_of
from .values import as_dict, finite

GAME_WORDS = {"scotch_whist": "Scotch Whist", "all_fours": "All Fours"}

_BIG = [(1e12, "a million million"), (1e9, "a billion"), (1e6, "a million"), (1e3, "a thousand")]


def odds_words(p: Any) -> str:
    """A p-value as odds for an honest player: 'about 1 in 20', 'about 1 in 3,000', 'about 1 in 40 million',
    'less than 1 in a million million'."""
    v = finite(p)
    if v is None or v < 0:
        return "of unknown odds"
    if v >= 0.5:
        return "about as likely as not"
    if v < 1e-12:
        return "less than 1 in a million million"
    inv = 1.0 / v
    for big, word in _BIG:
        if inv >= big:
            k = inv / big
            k = round(k) if k >= 10 else round(k, 1)
            return f"about 1 in {fmt_num(k)} {word.split(' ', 1)[1] if word.startswith('a ') else word}" \
                if k != 1 else f"about 1 in {word}"
    return f"about 1 in {fmt_num(round(inv) if inv >= 10 else round(inv, 1))}"


def game_scope(test: Any) -> str:
    """'Scotch Whist', 'All Fours' or '' (every game): the games whose deals the test's n counts."""
    games = spec_of(test).games
    return " and ".join(GAME_WORDS.get(g, g) for g in games)


def _actor(entry: dict) -> tuple[str, str]:
    """(who did it, with whom): the first of a pair subject acts; a one-player subject acts alone."""
    subject = str(entry.get("subject", "?"))
    if spec_of(entry.get("test")).pair and "+" in subject:
        return pair_of(subject)
    return subject, ""


def flag_clause(entry: dict, all_games: bool = False, name: bool = True) -> str:
    """One flag as a clause that says what every count counts: 'kate received the Jack of trumps in 54 of 77
    Scotch Whist deals dealt (an honest dealer: about 21)'. `all_games`: say so of a count over every game (when
    another clause beside it counts one game only); `name`: begin with the actor's name."""
    spec = spec_of(entry.get("test"))
    actor, partner = _actor(entry)
    n, obs, exp = finite(entry.get("n")), finite(entry.get("observed")), finite(entry.get("expected"))
    scope = game_scope(entry.get("test"))
    units = f"{scope} {spec.unit_short}" if scope else spec.unit_short + (" in all games" if all_games else "")
    event = spec.event + (f" (to {partner})" if partner else "")
    who = f"{actor} " if name or partner else ""
    detail = as_dict(entry.get("detail"))
    if spec.bernoulli and n is not None and obs is not None and exp is not None:
        return f"{who}{event} in {fmt_num(obs)} of {fmt_num(n)} {units} ({spec.honest}: about {fmt_about(exp)})"
    over = f" over {fmt_num(n)} {units}" if n is not None else ""
    cell = biggest_cell_words(detail)
    if cell:
        return f"{who}{event}{over}: {cell}"
    if obs is not None and exp is not None:
        unit = detail.get("unit")
        if isinstance(unit, str) and len(unit) > 24:  # 'pairs of cards of one previous trick in ...': 'pairs'
            unit = unit.split(" of ")[0]
        what = f"{fmt_num(obs)} {unit}" if isinstance(unit, str) else f"a score of {fmt_num(obs)}"
        return f"{who}{event}{over}: {what}, where {spec.honest} would be at about {fmt_about(exp)}"
    return f"{who}{event}{over}"


def _strength(entries: list[dict]) -> float:
    ps = [p for p in (finite(e.get("pvalue")) for e in entries) if p is not None]
    return min(ps) if ps else 1.0


def person_views(flags: Iterable[dict], audit: dict | None = None) -> list[dict[str, Any]]:
    """One view per flagged person, strongest evidence first: name, the flags naming them, whether any is strong,
    and the paragraph (plain text)."""
    flags = [f for f in flags if isinstance(f, dict)]
    audit = as_dict(audit)
    level = finite(audit.get("level"))
    m = finite(audit.get("tests"))
    out = []
    for person in sorted(players_named(flags)):
        mine = [f for f in flags if person in players_named([f])]
        mine.sort(key=lambda f: (finite(f.get("pvalue")) if finite(f.get("pvalue")) is not None else 2.0,
                                 str(f.get("test")), str(f.get("subject"))))
        strong = any(bool(f.get("strong")) for f in mine)
        scoped = any(game_scope(f.get("test")) for f in mine)
        clauses = [flag_clause(f, all_games=scoped, name=(i == 0)) for i, f in enumerate(mine)]
        text = "; ".join(clauses) + "."  # a player's id is never capitalised: it is quoted as logged
        p = _strength(mine)
        checks = f"all {fmt_num(m)} checks" if m else "every check"
        text += f" The odds of this by chance alone: {odds_words(p)}"
        if strong:
            text += f"; a strong flag: beyond luck even allowing for {checks} of this audit."
        elif level is not None:
            text += (f"; counting {checks} of this audit it is still flagged at the {level:.0%} level: worth a "
                     "close look and fresh evidence, not proof.")
        else:
            text += "."
        out.append({"person": person, "n_flags": len(mine), "strong": strong, "paragraph": text,
                    "tests": [spec_of(f.get("test")).title for f in mine], "strength": p,
                    "subjects": [str(f.get("subject")) for f in mine]})
    out.sort(key=lambda v: (v["strength"], v["person"]))
    for v in out:
        v.pop("strength")
    return out


def enough_data(entry: dict, min_units: int = 20) -> bool:
    """Whether a result rests on enough play to mean something (the watch list shows only these, issue 16): the
    test computed the smallest cheat this play could reveal and it is below full strength; or, when it did not,
    the subject has at least `min_units` units of play (deals dealt, deals with a chance, revokes...)."""
    md, _ = min_detectable(entry)
    if md is not None:
        return not math.isinf(md)
    n = finite(entry.get("n"))
    return n is not None and n >= min_units and not math.isinf(n)
