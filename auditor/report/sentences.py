"""Plain-language sentences and the report's content, built once from the audit JSON document.

`build_view(doc)` turns the document of outputs.md (`auditor audit --json`) into plain data — headings, sentences,
table rows, numbers already formatted — that the HTML, Markdown and terminal renderers only lay out. Strings that
came from a log (player ids, game ids, sources, finding messages) are kept raw here: each renderer escapes them for
its own medium. Nothing here reads a clock or draws a random number, so the same document gives the same view.

Every key of a test entry beyond `test`, `subject` and `tier` is optional: a detector that lacks a field gets a
plainer sentence, never an exception.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..stats.family import WATCH_P, WATCH_Q

# ------------------------------------------------------------------ what each test is, in plain words

# title, what it asks, unit of n (plural), event (verb phrase, past tense), cheat (noun phrase for the sensitivity
# sentence), honest (who the null describes), whether n counts deals the subject dealt
TESTS: dict[str, dict[str, str]] = {
    "dealer_jack": {
        "title": "Dealers who receive the Jack of trumps",
        "what": "How often each dealer ends up holding the Jack of trumps (worth 11 points in Catch the Ten), "
                "against the exact chance the rules give the dealer on each of his deals. The dealer holds the "
                "turn-up, so an honest dealer gets the Jack more often than the other players.",
        "unit": "deals they dealt", "unit_short": "deals dealt", "event": "received the Jack of trumps",
        "cheat": "a stacking rate", "honest": "an honest dealer",
    },
    "turnup_jack": {
        "title": "Dealers who turn up a Jack (All Fours)",
        "what": "How often each dealer turns up a Jack, a free point for the dealer, against the exact chance of "
                "each turn-up given the cards already out.",
        "unit": "turn-ups they made", "unit_short": "turn-ups", "event": "turned up a Jack",
        "cheat": "a Jack-turning rate", "honest": "an honest dealer",
    },
    "deal_uniformity": {
        "title": "Where the trump honours land",
        "what": "Whether the trump honours and the turn-up land on the seats around each dealer as a fair deal "
                "would put them, so that stacking of any card is caught, not only the Jack.",
        "unit": "deals they dealt", "unit_short": "deals dealt", "event": "dealt an unusual pattern of honours",
        "cheat": "a stacking rate", "honest": "a fair deal",
    },
    "dealer_cutter": {
        "title": "Dealer and cutter together",
        "what": "For each dealer and the player who cut for him, how many trump honours the dealer was dealt: a "
                "stacked pack survives only a friendly cut, so a dealer who does well only after one cutter is "
                "suspicious together with that cutter.",
        "unit": "deals after this cut", "unit_short": "deals", "event": "was dealt trump honours",
        "cheat": "a stacking rate", "honest": "a fair deal",
    },
    "shuffle_residue": {
        "title": "Tricks that survive the shuffle",
        "what": "Whether the cards of the previous deal's tricks stay together through a dealer's shuffle more "
                "than they do for the other dealers of the same table or club.",
        "unit": "deals they dealt", "unit_short": "deals dealt", "event": "left tricks together",
        "cheat": "a share of unshuffled deals", "honest": "the other dealers",
    },
    "trick_stack": {
        "title": "Dealers who deal themselves the previous deal's tricks",
        "what": "How many pairs of cards from one trick of the previous deal end up together in the dealer's own "
                "hand, against the other dealers of the same tables: a dealer who puts a rich trick back into his "
                "own hand while gathering the cards leaves this trace.",
        "unit": "deals they dealt", "unit_short": "deals dealt", "event": "held cards of one previous trick",
        "cheat": "a share of stacked deals", "honest": "the other dealers",
    },
    "marked_ten": {
        "title": "Players whose play follows the hidden Ten of trumps",
        "what": "Whether a player's leads and plays fit where the Ten of trumps really is better than anything "
                "he could legally know explains. Controls beside the score (unmarked cards, deals where he holds "
                "the Ten himself, late against early decisions) separate a good card reader from a cheat.",
        "unit": "deals scored", "unit_short": "deals scored", "event": "played to the Ten's true place",
        "cheat": "knowing the Ten's place on a share of decisions", "honest": "an honest player",
    },
    "collusion": {
        "title": "Pairs who feed each other counting cards",
        "what": "For each ordered pair of players at individual-play tables, how often the first gives counting "
                "cards to tricks the second is winning, against what honest play gives.",
        "unit": "chances to give", "unit_short": "chances to give", "event": "gave counting cards",
        "cheat": "a feeding rate", "honest": "an honest pair",
    },
    "revoke_pattern": {
        "title": "Revokes that pay",
        "what": "Whether a player's revokes (failures to follow suit) win him points more often than the "
                "accidental revokes of the field do, and whether he revokes more often than the field.",
        "unit": "revokes", "unit_short": "revokes", "event": "won a counting card by revoking",
        "cheat": "a share of deliberate revokes", "honest": "an honest player",
    },
}

TIER_WORDS = {
    "report": "flagged",
    "watch": "watch",
    "clear": "not flagged",
}

# the order of the test sections: dealing first, then play
ORDER = ("dealer_jack", "turnup_jack", "deal_uniformity", "dealer_cutter", "trick_stack", "shuffle_residue",
         "marked_ten", "collusion", "revoke_pattern")

# tests whose `observed` counts Bernoulli trials (one per unit of `n`): a binomial spread is a fair "±"
BERNOULLI_TESTS = ("dealer_jack", "turnup_jack", "collusion", "revoke_pattern")

ROWS_SHOWN = 15
WATCH_SHOWN = 10  # watch-list rows shown before the fold
PAIR_TESTS = ("collusion", "dealer_cutter")  # subjects "a+b" name two players
CONTROL_SHORT = 140  # characters of a control shown in a table cell (the investigation shows it whole)  # rows of a test's table shown before the "all subjects" fold

MONTHLY_NOTE = (
    "Each test here is a fixed-sample test: it is calibrated for one look at one body of evidence. Re-running it "
    "every month on a log that keeps growing gives an honest player a fresh chance to be flagged at every run, so "
    "the real false-accusation rate over a year is higher than the rate stated here. Treat a repeated audit as a "
    "new look, not as confirmation, and prefer a fresh period of play to confirm a flag."
)

NOT_CLEAN_NOTE = (
    "A test can only catch a cheat that is strong enough for the amount of "
    "play it saw: for each player the report states the smallest cheat his play could have revealed."
)

HOW_TO_READ = [
    ("p-value", "how surprising the result would be for an honest player: the chance that honest play alone "
                "gives a result at least this extreme. Small is suspicious; it is not the chance that he is "
                "honest."),
    ("q-value", "the p-value adjusted for every test this audit made, of every player and pair (a weighted "
                "Benjamini-Hochberg over the whole audit, each test holding a share of the error budget fixed in "
                "advance). Flagging everyone with q at or below the audit's level keeps the chance that an honest "
                "club is accused at all, and the expected share of false flags among the flags, at or below that "
                "level."),
    ("tiers", "'Flagged' means q is at or below the audit's level; 'strong' marks a flag that an honest club "
              "would show less than once in a thousand audits of this size, even counting every test made; the "
              f"'watch list' (q up to {WATCH_Q:g} or p up to {WATCH_P:g}) is shown for attention, is expected to "
              "hold some honest players, and is not an accusation."),
    ("controls", "the same measurement on something a cheat cannot use (another card, deals where the player "
                 "did not deal, deals where he holds the card himself). A cheat stands out in the test but not "
                 "in the controls; a lucky or skilled honest player tends to stand out in both."),
]


def test_info(test: str) -> dict[str, str]:
    info = TESTS.get(test)
    if info is not None:
        return info
    human = str(test).replace("_", " ").strip() or "test"
    return {"title": human[:1].upper() + human[1:], "what": f"The {human} test.", "unit": "observations",
            "unit_short": "observations", "event": "scored", "cheat": "a cheat of strength",
            "honest": "an honest player"}


# ------------------------------------------------------------------ numbers


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt_p(p: Any) -> str:
    """A p- or q-value the way people read it: 0.03, 0.004, 0.0003, 2e-07."""
    v = _finite(p)
    if v is None:
        return "n/a"
    if v >= 0.995:
        return "1"
    if v >= 0.01:
        return f"{v:.2f}"
    if v >= 0.001:
        return f"{v:.3f}"
    if v >= 0.0001:
        return f"{v:.4f}"
    if v <= 0:
        return "0"
    return f"{v:.0e}"


def fmt_num(x: Any, digits: int = 3) -> str:
    """A count or score: integers as integers (with thousands separators), others to `digits` significant."""
    v = _finite(x)
    if v is None:
        return "n/a"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fmt_about(x: Any) -> str:
    """An expected value for a sentence: 255, 12.4, 0.83."""
    v = _finite(x)
    if v is None:
        return "n/a"
    if abs(v) >= 10:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.1f}"
    return f"{v:.2g}"


def fmt_rate(x: Any) -> str:
    v = _finite(x)
    if v is None:
        return "n/a"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"


def times_in(power: float) -> str:
    """0.8 -> '4 times in 5'."""
    for k in (2, 3, 4, 5, 10, 20, 100):
        j = power * k
        if abs(j - round(j)) < 1e-9 and 0 < round(j) <= k:
            return f"{round(j)} times in {k}" if round(j) < k else "every time"
    return f"{power:.0%} of the time"


def null_sd(entry: dict) -> float | None:
    """The honest spread of `observed`: the detector's own (`detail.sd` / `detail.null_sd`) or, for counts, the
    binomial spread at the average null rate (a close upper bound of the Poisson-binomial's)."""
    detail = entry.get("detail") if isinstance(entry.get("detail"), dict) else {}
    for key in ("sd", "null_sd", "expected_sd"):
        v = _finite(detail.get(key))
        if v is not None and v >= 0:
            return v
    if entry.get("test") not in BERNOULLI_TESTS:
        return None
    n, e = _finite(entry.get("n")), _finite(entry.get("expected"))
    obs = _finite(entry.get("observed"))
    if n is None or e is None or obs is None or n <= 0 or not (0 <= e <= n) or obs != int(obs):
        return None
    p = e / n
    return math.sqrt(n * p * (1 - p))


# ------------------------------------------------------------------ sentences


def pq_text(entry: dict) -> str:
    out = f"p = {fmt_p(entry.get('pvalue'))}"
    if _finite(entry.get("qvalue")) is not None:
        out += f", q = {fmt_p(entry.get('qvalue'))}"
    return out


def _pair(subject: str) -> tuple[str, str]:
    a, _, b = str(subject).partition("+")
    return (a, b) if b else (str(subject), "?")


def _biggest_cell(detail: dict) -> str:
    """deal_uniformity: the seat x card cell that departs most from a fair deal, in words."""
    cells = detail.get("cells")
    if not isinstance(cells, list):
        return ""
    best, best_z = None, 0.0
    for c in cells:
        if not isinstance(c, dict):
            continue
        o, e = _finite(c.get("observed")), _finite(c.get("expected"))
        if o is None or e is None or e <= 0:
            continue
        z = (o - e) / math.sqrt(e)
        if z > best_z:
            best, best_z = c, z
    if best is None:
        return ""
    rank = {"T": "Ten", "J": "Jack", "Q": "Queen", "K": "King", "A": "Ace", "2": "two"}.get(
        str(best.get("rank")), str(best.get("rank")))
    loc = str(best.get("location", "?"))
    where = {"dealer": "in the dealer's hand", "eldest": "in the eldest hand", "turnup": "as the turn-up",
             "turn-up": "as the turn-up", "turn_up": "as the turn-up", "undealt": "undealt",
             "aside": "put aside", "stock": "left in the stock"}.get(loc, f"at {loc}")
    return (f" Most of it: the trump {rank} {where} {fmt_num(best.get('observed'))} times, where a fair deal "
            f"gives about {fmt_about(best.get('expected'))}.")


def result_sentence(entry: dict) -> str:
    """'bob received the Jack of trumps in 301 of the 812 deals they dealt; an honest dealer would in about
    255 ± 13; p = 0.0003, q = 0.02' (test-specific wording; a plainer sentence when fields are missing)."""
    test = str(entry.get("test", ""))
    info = test_info(test)
    subject = str(entry.get("subject", "?"))
    n, obs, exp = entry.get("n"), entry.get("observed"), entry.get("expected")
    detail = entry.get("detail") if isinstance(entry.get("detail"), dict) else {}
    pq = pq_text(entry)
    if _finite(obs) is None or _finite(exp) is None:
        return f"{subject}: {info['title'].lower()}; {pq}."
    sd = null_sd(entry)
    spread = f" ± {fmt_about(sd)}" if sd is not None and sd > 0 else ""
    has_n = _finite(n) is not None
    if test in ("dealer_jack", "turnup_jack") and has_n:
        return (f"{subject} {info['event']} in {fmt_num(obs)} of the {fmt_num(n)} {info['unit']}; "
                f"{info['honest']} would in about {fmt_about(exp)}{spread}; {pq}.")
    if test == "shuffle_residue" and has_n:
        return (f"{subject}'s deals kept {fmt_num(obs)} pairs of cards from the previous deal's tricks side by side "
                f"over the {fmt_num(n)} deals they dealt; the other dealers of the same tables would keep about "
                f"{fmt_about(exp)}; {pq}.")
    if test == "trick_stack" and has_n:
        return (f"{subject}'s own hand held {fmt_num(obs)} pairs of cards from one trick of the previous deal over "
                f"the {fmt_num(n)} deals they dealt; the other dealers of the same tables would hold about "
                f"{fmt_about(exp)}; {pq}.")
    if test == "deal_uniformity" and has_n:
        return (f"Over the {fmt_num(n)} deals {subject} dealt, the trump honours landed on the seats around the "
                f"dealer with a misfit of {fmt_num(obs)} (Pearson X², about {fmt_about(exp)} for a fair deal); "
                f"{pq}.{_biggest_cell(detail)}")
    if test == "dealer_cutter" and has_n:
        dealer, cutter = _pair(subject)
        return (f"When {cutter} cut for {dealer}, {dealer} was dealt {fmt_num(obs)} trump honours in {fmt_num(n)} "
                f"deals; a fair deal gives about {fmt_about(exp)}; {pq}.")
    if test == "collusion" and has_n:
        giver, taker = _pair(subject)
        return (f"{giver} gave a counting card to a trick {taker} was winning in {fmt_num(obs)} of the "
                f"{fmt_num(n)} chances they had; players in the same situations give about {fmt_about(exp)}; "
                f"{pq}.")
    if test == "revoke_pattern" and has_n:
        return (f"{fmt_num(obs)} of {subject}'s {fmt_num(n)} revokes won a counting card; accidental revokes in "
                f"the field would win about {fmt_about(exp)}; {pq}.")
    if test == "marked_ten":
        dec = _finite(detail.get("decisions"))
        z = _finite(entry.get("statistic"))
        over = f"{fmt_num(n)} {info['unit']}" + (f" ({fmt_num(dec)} decisions)" if dec is not None else "")
        zt = f" (z = {z:.1f})" if z is not None else ""
        return (f"{subject}'s play fitted the true place of the Ten of trumps with a score of {fmt_num(obs)} over "
                f"{over}; for an honest player, whatever he could legally know, about {fmt_about(exp)}{zt}; {pq}.")
    unit = f" {detail['unit']}" if isinstance(detail.get("unit"), str) else ""
    where = f" over {fmt_num(n)} {info['unit']}" if has_n else ""
    return f"{subject}: {fmt_num(obs)}{unit} observed{where}, about {fmt_about(exp)}{spread} expected; {pq}."


def min_detectable(entry: dict) -> tuple[float | None, float]:
    """(smallest detectable cheat strength, power) from `detail.min_detectable` (a number, or a dict with
    `rate`/`strength` and `power`). A value of 1 or more, or an explicit null, means even a full-strength cheat
    could go unseen (`math.inf` is returned); a missing key means the detector did not compute it (None)."""
    detail = entry.get("detail") if isinstance(entry.get("detail"), dict) else {}
    if "min_detectable" not in detail:
        return None, 0.8
    md = detail.get("min_detectable")
    power = _finite(detail.get("min_detectable_power")) or 0.8
    if isinstance(md, dict):
        power = _finite(md.get("power")) or power
        md = md.get("rate", md.get("strength", md.get("q")))
    v = _finite(md)
    if v is None or v >= 1:
        return math.inf, power
    return max(v, 0.0), power


def sensitivity_sentence(entry: dict) -> str:
    """'With 212 deals dealt, a stacking rate above 0.19 would have been caught 4 times in 5.'"""
    info = test_info(entry.get("test", ""))
    n = _finite(entry.get("n"))
    amount = f"With {fmt_num(n)} {info['unit_short']}" if n is not None else "With this amount of play"
    md, power = min_detectable(entry)
    if md is None:
        return (f"{amount}, the size of cheat this test could have revealed was not computed: not being flagged "
                f"here does not show that no cheating took place.")
    if math.isinf(md):
        return (f"{amount}, even a cheat at full strength could have gone unflagged (caught less than "
                f"{times_in(power)}): this test says little about this subject yet.")
    return f"{amount}, {info['cheat']} above {fmt_rate(md)} would have been caught {times_in(power)}."


def _label(key: str) -> str:
    return str(key).replace("_", " ")


def _pick(d: dict, *keys):
    for k in keys:
        if k in d and _finite(d.get(k)) is not None:
            return _finite(d.get(k))
    return None


def _field_text(val: dict) -> str:
    """The field comparison of a play test: where the player's score sits among similar players."""
    parts = []
    pct, k = _finite(val.get("percentile")), _finite(val.get("neighbours"))
    if pct is not None and k is not None:
        med = _finite(val.get("neighbour_median_z"))
        parts.append(f"{_ordinal(pct)} percentile among his {fmt_num(k)} most similar players"
                     + (f" (their median score {med:.2g})" if med is not None else ""))
    pall, m = _finite(val.get("percentile_all")), _finite(val.get("field_players"))
    if pall is not None:
        parts.append(f"{_ordinal(pall)} percentile of all {fmt_num(m)} players" if m is not None
                     else f"{_ordinal(pall)} percentile of the field")
    pe = _finite(val.get("p_empirical"))
    if pe is not None:
        parts.append(f"p = {fmt_p(pe)} against the field's own null")
    return ", ".join(parts)


def _ordinal(pct: float) -> str:
    k = int(round(pct))
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _compact(v: Any) -> str:
    """A short plain rendering of a value inside a control: numbers formatted, dicts as 'key value' pairs (a
    naming field first), lists joined."""
    if _finite(v) is not None:
        return fmt_num(v)
    if isinstance(v, dict):
        name = next((str(v[k]) for k in ("stratum", "name", "table", "label") if isinstance(v.get(k), str)), None)
        parts = [f"{_label(k)} {_compact(x)}" for k, x in v.items()
                 if k not in ("stratum", "name", "table", "label") and not isinstance(x, (dict, list))
                 and x is not None]
        return (f"{name}: " if name else "") + ", ".join(parts)
    if isinstance(v, (list, tuple)):
        return ", ".join(_compact(x) for x in v[:12])
    return "n/a" if v is None else str(v)


def _control_text(val: dict) -> tuple[str, float | None, float | None, float | None, float | None, float | None]:
    """(text, n, observed, expected, statistic, pvalue) of one control given as a small test."""
    n = _pick(val, "n", "deals", "decisions", "opportunities")
    obs, exp = _pick(val, "observed", "revokes", "gifts"), _finite(val.get("expected"))
    stat = _pick(val, "statistic", "z")
    pv = _pick(val, "pvalue", "p")
    parts = []
    if obs is not None and exp is not None:
        if n is not None:
            parts.append(f"{fmt_num(obs)} {'of' if obs <= n else 'over'} {fmt_num(n)} "
                         f"(about {fmt_about(exp)} expected)")
        else:
            parts.append(f"{fmt_num(obs)} (about {fmt_about(exp)} expected)")
    elif exp is not None:
        parts.append(f"about {fmt_about(exp)} expected")
    elif stat is not None:
        parts.append(f"score {stat:.2f}" + (f" over {fmt_num(n)} deals" if n is not None else ""))
    elif obs is not None:
        parts.append(fmt_num(obs))
    if pv is not None:
        parts.append(f"p = {fmt_p(pv)}")
    if isinstance(val.get("card"), str):
        parts.append(f"card {val['card']}")
    if parts and isinstance(val.get("note"), str):
        parts.append(val["note"])
    if not parts:
        if "percentile" in val or "percentile_all" in val:
            parts.append(_field_text(val))
        elif n == 0 or val.get("deals") == 0:
            parts.append("no deals to score")
        else:
            parts.append(", ".join(f"{_label(k)} {_compact(v)}" for k, v in val.items()
                                   if not isinstance(v, (dict, list)) and v is not None))
    return ", ".join(p for p in parts if p) or "n/a", n, obs, exp, stat, pv


def control_items(entry: dict) -> list[dict]:
    """The entry's controls as rows: label, text, and the numbers when the control is itself a small test.
    A control that holds several sub-controls (e.g. one per pack) gives one row each."""
    controls = entry.get("controls")
    if not isinstance(controls, dict):
        return []
    rows = []

    def row(key: str, label: str, text: str, n=None, obs=None, exp=None, stat=None, pv=None) -> None:
        is_test = pv is not None or stat is not None or (obs is not None and exp is not None)
        short = text if len(text) <= CONTROL_SHORT else text[: CONTROL_SHORT - 1].rstrip() + "…"
        rows.append({"key": key, "label": label, "text": text, "short": short, "is_test": is_test, "pvalue": pv,
                     "statistic": stat, "n": n, "observed": obs, "expected": exp})

    for key, val in controls.items():
        key = str(key)
        if isinstance(val, dict):
            subs = [(k, v) for k, v in val.items() if isinstance(v, dict)]
            if subs and len(subs) == len(val):
                for k, v in subs:
                    text, n, obs, exp, stat, pv = _control_text(v)
                    row(f"{key}.{k}", f"{_label(key)} {k}", text, n, obs, exp, stat, pv)
                continue
            if "percentile" in val or "percentile_all" in val:
                row(key, _label(key), _field_text(val) or "n/a")
                continue
            text, n, obs, exp, stat, pv = _control_text(val)
            row(key, _label(key), text, n, obs, exp, stat, pv)
        elif isinstance(val, (list, tuple)):
            more = f"; {len(val) - 12} more" if len(val) > 12 else ""
            row(key, _label(key), "; ".join(_compact(v) for v in val[:12]) + more)
        else:
            row(key, _label(key), fmt_num(val) if _finite(val) is not None else str(val))
    return rows


def controls_sentence(entry: dict) -> str:
    """The controls that are small tests of their own, in one sentence (diagnostics stay in the tables)."""
    items = [c for c in control_items(entry) if c["is_test"]]
    if not items:
        return ""
    return "Controls: " + "; ".join(f"{c['label']}: {c['text']}" for c in items) + "."


def sensitivity_note(test: str, entries: list[dict]) -> str:
    """What the last column of a test's table means."""
    powers = sorted({round(min_detectable(e)[1], 6) for e in entries if min_detectable(e)[0] is not None})
    info = test_info(test)
    if not powers:
        return ("This test did not compute the size of cheat each subject's play could reveal; a subject who is "
                "not flagged may still cheat.")
    power = times_in(powers[0]) if len(powers) == 1 else "with the stated probability"
    return (f"The last column is the smallest cheat each subject's amount of play would have revealed {power} "
            f"({info['cheat']}): a subject who is not flagged may still cheat below that size.")


STRONG_WORDS = ("'Strong' marks a flag so extreme that an honest club would show one like it less than once in a "
                "thousand audits of this size, even counting every test made.")


def audit_sentence(doc: dict) -> str:
    """The audit-wide error level and the false flags it implies, in plain words ("" for a document without the
    audit block)."""
    a = doc.get("audit") if isinstance(doc.get("audit"), dict) else None
    if a is None:
        return ""
    level = _finite(a.get("level"))
    m = _finite(a.get("tests"))
    if level is None or not m:
        return ""  # nothing was tested: no level to speak of
    flags = int(_finite(a.get("flags")) or 0)
    expect = _finite(a.get("expected_false_flags_if_all_honest"))
    text = (f"All {fmt_num(m)} tests of this audit were judged together at a level of {level:.0%}: if no one "
            f"here cheated, the chance that the audit would flag anyone at all is at most {level:.0%}")
    if expect is not None:
        text += f" (about {expect:.2g} false flags expected)"
    text += "."
    if flags:
        text += (f" Of its {flags} flag{'s' if flags != 1 else ''}, on average at most {flags * level:.2g} "
                 "would be false.")
        strong = int(_finite(a.get("strong")) or 0)
        if strong:
            text += f" {strong} of them {'are' if strong != 1 else 'is'} strong. " + STRONG_WORDS
    return text


def family_sentence(fam: dict, n_flagged: int, n_watch: int) -> str:
    """The test's size, its share of the audit's error budget and what it takes to be flagged on it."""
    m = int(_finite(fam.get("tests")) or 0)
    fdr = _finite(fam.get("fdr"))
    noun = "subject" if m == 1 else "subjects"
    if fdr is None:
        return f"{m} {noun} tested."
    share = _finite(fam.get("share"))
    level = _finite(fam.get("per_test_level"))
    parts = [f"{m} {noun} tested."]
    if share is not None and level is not None and share < 1:
        parts.append(f"This test holds {share:.0%} of the audit's error budget: a subject is flagged on it alone "
                     f"when p ≤ {fmt_p(level)}, or a little above that when the audit finds other flags.")
    if n_flagged:
        parts.append(f"{n_flagged} flag{'s' if n_flagged != 1 else ''} here.")
    watch_expect = m * WATCH_P
    parts.append(f"The watch list is looser: honest chance alone puts about {watch_expect:.2g} of {m} there "
                 f"(p ≤ {WATCH_P:g}), plus some through q ≤ {WATCH_Q:g}; it holds {n_watch} now.")
    return " ".join(parts)


# ------------------------------------------------------------------ findings

FINDING_WORDS = {
    "bad_record": "records that could not be read or break the log format",
    "unknown_card": "strings that are not cards",
    "card_outside_pack": "cards that are not in the pack used",
    "duplicate_card": "cards dealt twice",
    "wrong_hand_size": "hands of the wrong size",
    "turn_up_mismatch": "turn-ups not in the right hand",
    "deck_mismatch": "hands that the logged deck does not deal",
    "card_not_in_hand": "cards played by a seat that did not hold them",
    "revoke": "revokes (failing to follow suit while able)",
    "incomplete_play": "deals with missing or extra tricks",
    "claim_mismatch": "claimed revokes the replay does not find",
    "score_mismatch": "deal scores that differ from the computed ones",
    "total_mismatch": "running totals that differ from the computed ones",
    "winner_mismatch": "recorded winners that differ from the computed ones",
    "dealer_rotation": "deals dealt by the wrong player",
    "deal_sequence": "missing or repeated deal numbers",
    "play_after_game_end": "deals played after the game was won",
    "beg_irregular": "irregular begging (All Fours)",
}


def _where(f: dict) -> str:
    parts = []
    if f.get("game_id") is not None:
        parts.append(f"game {f.get('game_id')}")
    if f.get("deal_no") is not None:
        parts.append(f"deal {f.get('deal_no')}")
    if f.get("trick") is not None:
        parts.append(f"trick {f.get('trick')}")
    if f.get("player") is not None:
        parts.append(f"player {f.get('player')}")
    return ", ".join(parts)


# ------------------------------------------------------------------ the view


MAX_FINDINGS_SHOWN = 500  # findings listed in the HTML (all are in the JSON)
FINDINGS_SHOWN = 25  # of which shown before the fold


def _entries(doc: dict, key: str) -> list[dict]:
    val = doc.get(key)
    return [e for e in val if isinstance(e, dict)] if isinstance(val, list) else []


def entry_view(e: dict) -> dict:
    info = test_info(e.get("test", ""))
    md, power = min_detectable(e)
    return {
        "test": str(e.get("test", "")), "title": info["title"], "subject": str(e.get("subject", "?")),
        "tier": str(e.get("tier") or ("report" if e.get("flagged") else "clear")),
        "tier_words": TIER_WORDS.get(str(e.get("tier")), str(e.get("tier"))),
        "n": fmt_num(e.get("n")), "observed": fmt_num(e.get("observed")),
        "expected": fmt_about(e.get("expected")), "p": fmt_p(e.get("pvalue")), "q": fmt_p(e.get("qvalue")),
        "method": str(e.get("method", "")),
        "sentence": result_sentence(e), "sensitivity": sensitivity_sentence(e),
        "min_detectable": "n/a" if md is None else ("too little play" if math.isinf(md) else fmt_rate(md)),
        "power": power,
        "controls": control_items(e), "controls_sentence": controls_sentence(e),
        "pvalue": _finite(e.get("pvalue")), "qvalue": _finite(e.get("qvalue")),
        "strong": bool(e.get("strong")),
    }


def players_named(entries: Iterable[dict]) -> set[str]:
    """The players an entry names: its subject, or both sides of an ordered pair of a pair test."""
    out: set[str] = set()
    for e in entries:
        subject = str(e.get("subject", "?"))
        if e.get("test") in PAIR_TESTS and "+" in subject:
            out.update(_pair(subject))
        else:
            out.add(subject)
    return out


def _sort_key_p(e: dict) -> tuple:
    p = _finite(e.get("pvalue"))
    return (p if p is not None else 2.0, str(e.get("test", "")), str(e.get("subject", "")))


def build_view(doc: dict, charts: bool = True) -> dict:
    """Everything the report says, as plain data (charts as SVG strings when `charts`)."""
    from . import svg

    doc = doc if isinstance(doc, dict) else {}
    tests = _entries(doc, "tests")
    flags = _entries(doc, "flags") or [e for e in tests if e.get("flagged")]
    families = _entries(doc, "families")
    replay = doc.get("replay") if isinstance(doc.get("replay"), dict) else {}
    findings = _entries(replay, "findings")
    deals = doc.get("deals", replay.get("deals"))
    games = doc.get("games", replay.get("games"))

    watch = sorted((e for e in tests if e.get("tier") == "watch"), key=_sort_key_p)
    by_test: dict[str, list[dict]] = {}
    for e in tests:
        by_test.setdefault(str(e.get("test", "")), []).append(e)
    fam_of = {str(f.get("test", "")): f for f in families}
    for t in by_test:  # a test without a declared family still gets a section
        if t not in fam_of:
            fam_of[t] = {"test": t, "tests": len(by_test[t])}
    fdrs = sorted({_finite(f.get("fdr")) for f in fam_of.values() if _finite(f.get("fdr")) is not None})

    # findings by code, most frequent first
    counts: dict[str, int] = {}
    for f in findings:
        counts[str(f.get("code", "?"))] = counts.get(str(f.get("code", "?")), 0) + 1
    by_code = [{"code": c, "count": k, "words": FINDING_WORDS.get(c, c.replace("_", " "))}
               for c, k in sorted(counts.items(), key=lambda ck: (-ck[1], ck[0]))]
    finding_rows = [{"code": str(f.get("code", "")), "source": str(f.get("source") or ""),
                     "where": _where(f), "message": str(f.get("message") or "")}
                    for f in findings[:MAX_FINDINGS_SHOWN]]

    n_flags = len(flags)
    flagged_players = sorted(players_named(flags))
    from .verdict import Coverage  # issue 12: nothing to audit never reads as all clear
    cover = Coverage.of_doc(doc)
    if n_flags:
        headline = (f"{n_flags} flag{'s' if n_flags != 1 else ''} naming {len(flagged_players)} "
                    f"player{'s' if len(flagged_players) != 1 else ''}: " + ", ".join(flagged_players))
    elif cover.audited:
        headline = f"No one is flagged among {cover.audited:,} deal{'s' if cover.audited != 1 else ''} audited"
    else:
        headline = cover.nothing_headline()
    headline += cover.unread_clause()
    if findings:
        headline += f"; {len(findings):,} irregularit{'ies' if len(findings) != 1 else 'y'} in the logs"
    elif cover.audited:
        headline += "; the logs replay without irregularities"

    fam_views = []
    for t in sorted(fam_of, key=lambda t: (ORDER.index(t) if t in ORDER else len(ORDER), t)):
        fam = fam_of[t]
        entries = sorted(by_test.get(t, []), key=lambda e: (_sort_key_p(e)))
        info = test_info(t)
        nf = sum(1 for e in entries if e.get("tier") == "report" or e.get("flagged"))
        nw = sum(1 for e in entries if e.get("tier") == "watch")
        fv = {
            "test": t, "title": info["title"], "what": info["what"],
            "size": int(_finite(fam.get("tests")) or len(entries)),
            "fdr": _finite(fam.get("fdr")), "method": str(fam.get("method", "")), "share": _finite(fam.get("share")),
            "sentence": family_sentence(fam, nf, nw), "n_flagged": nf, "n_watch": nw,
            "rows": [entry_view(e) for e in entries], "charts": [],
            "sensitivity_note": sensitivity_note(t, entries),
        }
        if charts and entries:
            fv["charts"] = svg.charts_for_family(t, entries, fam)
        fam_views.append(fv)

    timelines = []
    for e in flags:
        ev = entry_view(e)
        chart = svg.timeline(e) if charts else ""
        timelines.append({"test": ev["test"], "title": ev["title"], "subject": ev["subject"],
                          "sentence": ev["sentence"], "svg": chart})

    subjects: dict[str, list[dict]] = {}
    for e in tests:
        subjects.setdefault(str(e.get("subject", "?")), []).append(entry_view(e))
    subject_views = [{"subject": s, "tests": sorted(v, key=lambda x: x["test"])}
                     for s, v in sorted(subjects.items())]

    fdr_text = ", ".join(f"{f:.0%}" for f in fdrs) if fdrs else "n/a"
    if isinstance(doc.get("audit"), dict) and _finite(doc["audit"].get("level")) is not None:
        fdr_text = f"{_finite(doc['audit'].get('level')):.0%}"
    return {
        "title": "Fair-play audit",
        "deals": fmt_num(deals), "games": fmt_num(games), "seed": "n/a" if doc.get("seed") is None
        else str(doc.get("seed")), "fdr": fdr_text,
        "headline": headline, "n_flags": n_flags,
        "flags": [entry_view(e) for e in flags], "watch": [entry_view(e) for e in watch],
        "n_findings": len(findings), "findings_by_code": by_code, "findings": finding_rows,
        "findings_omitted": max(0, len(findings) - MAX_FINDINGS_SHOWN),
        "families": fam_views, "timelines": timelines, "subjects": subject_views,
        "how_to_read": HOW_TO_READ, "monthly_note": MONTHLY_NOTE, "not_clean_note": NOT_CLEAN_NOTE,
        "n_tests": fmt_num(len(tests)), "n_families": len(fam_views), "rows_shown": ROWS_SHOWN,
        "watch_shown": WATCH_SHOWN,
        "findings_shown": FINDINGS_SHOWN,
        "selection": selection_sentence(doc.get("selection")),
        "audit_sentence": audit_sentence(doc),
    }


NOT_SELECTED_WORDS = {"table": "at another table", "game": "of another game", "time": "started outside the dates",
                      "no_time": "with no time to place them"}


def selection_sentence(sel) -> str:
    """One line on what the audit looked at when `--table`, `--game`, `--since` or `--until` narrowed it ("" when
    nothing did)."""
    if not isinstance(sel, dict):
        return ""
    parts = []
    if sel.get("tables"):
        parts.append("table " + ", ".join(str(t) for t in sel["tables"]))
    if sel.get("games"):
        parts.append("game " + ", ".join(str(g) for g in sel["games"]))
    if sel.get("since"):
        parts.append(f"games started from {sel['since']}")
    if sel.get("until"):
        parts.append(f"games started until {sel['until']}")
    text = "Selection: " + "; ".join(parts) if parts else "Selection: everything"
    read = _finite(sel.get("records_read"))
    chosen = _finite(sel.get("deals_selected"))
    if read is not None and chosen is not None:
        text += f" ({fmt_num(chosen)} of {fmt_num(read)} records"
        ns = sel.get("not_selected") if isinstance(sel.get("not_selected"), dict) else {}
        left = [f"{fmt_num(k)} {NOT_SELECTED_WORDS.get(str(w), str(w))}" for w, k in sorted(ns.items())
                if _finite(k)]
        if left:
            text += "; left out: " + ", ".join(left)
        bad = _finite(sel.get("bad_records"))
        if bad:
            text += f"; {fmt_num(bad)} unreadable record{'s' if bad != 1 else ''} kept as findings"
        text += ")"
    return text
