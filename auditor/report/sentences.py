"""Plain-language words of the report, from the audit JSON document: what each result says, the controls beside
it, the smallest cheat it could have revealed, the audit-wide and per-test sentences.

What a test is (its title, unit, words, whether a result names a pair, whether its count is of Bernoulli trials)
is read from its description beside its code (`auditor.detectors.registry.SPECS`, see `auditor.detectors.spec`);
a test this version does not know (a document from another version) gets a plain description (`spec_of`).
`auditor.report.view.build_view` assembles these words and the charts into the report's view. Strings that came
from a log (player ids, game ids, sources, finding messages) are kept raw here: each renderer escapes them for its
own medium. Nothing here reads a clock or draws a random number, so the same document gives the same words.

Every key of a test entry beyond `test`, `subject` and `tier` is optional: a detector that lacks a field gets a
plainer sentence, never an exception.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Iterable

from ..detectors.registry import SPECS
from ..detectors.spec import TestSpec
from ..stats.family import WATCH_P, WATCH_Q
from .values import as_dict, finite
from .verdict import NOT_SELECTED_WORDS

# ------------------------------------------------------------------ what each test is, in plain words

# a test this version does not know is placed after every known one (sections sort by (section, name))
UNKNOWN_SECTION = 1 + max((s.section for s in SPECS.values()), default=0)


def spec_of(test: Any) -> TestSpec:
    """What `test` is: its registered description, or a plain one for a test this version does not know (a
    document from another version)."""
    spec = SPECS.get(test) if isinstance(test, str) else None
    return spec if spec is not None else _unknown_spec(str(test))


@lru_cache(maxsize=64)
def _unknown_spec(test: str) -> TestSpec:
    """A plain description, its section after every known test's."""
    human = test.replace("_", " ").strip() or "test"
    return TestSpec(name=test, title=human[:1].upper() + human[1:], what=f"The {human} test.",
                    unit="observations", unit_short="observations", event="scored", cheat="a cheat of strength",
                    honest="an honest player", subject="player", chart="evidence", section=UNKNOWN_SECTION, cost=1)


def section_key(test: Any) -> tuple[int, str]:
    """The place of a test's section: dealing tests first, then play; unknown tests last, by name."""
    return spec_of(test).section, str(test)


TIER_WORDS = {
    "report": "flagged",
    "watch": "watch",
    "clear": "not flagged",
}

CONTROL_SHORT = 140  # characters of a control shown in a table cell (the investigation shows it whole)

MONTHLY_NOTE = (
    "Each test here is a fixed-sample test: it is calibrated for one look at one body of evidence. Re-running it "
    "every month on a log that keeps growing gives an honest player a fresh chance to be flagged at every run, so "
    "the real false-accusation rate over a year is higher than the rate stated here. Treat a repeated audit as a "
    "new look, not as confirmation, and prefer a fresh period of play to confirm a flag."
)

NOT_CLEAN_NOTE = (
    "A test can only catch a cheat that is strong enough for the amount of "
    "play it saw: for each player the report states the smallest cheat their play could have revealed."
)

HOW_TO_READ = [
    ("p-value", "how surprising the result would be for an honest player: the chance that honest play alone "
                "gives a result at least this extreme. Small is suspicious; it is not the chance that the player is "
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
                 "did not deal, deals where they hold the card themselves). A cheat stands out in the test but not "
                 "in the controls; a lucky or skilled honest player tends to stand out in both."),
]


# issue 16: every term and symbol the report uses, explained once at its end (the first four are HOW_TO_READ's)
GLOSSARY = HOW_TO_READ + [
    ("flag", "a result strong enough to act on after counting every check this audit made: a reason to look "
             "closely and to gather fresh evidence, not proof on its own."),
    ("check", "one test applied to one player or pair; an audit makes many (every test of every dealer, player "
              "and pair), and the flags allow for all of them."),
    ("expected (honest chance)", "what an honest player or a fair deal would give on the same deals, on "
                                 "average: the number the observed count is compared with. A score can be "
                                 "negative where the test measures a departure in either direction."),
    ("± (spread)", "the usual spread of an honest result around its expected value (one standard deviation, "
                   "sd): about two honest results in three fall within it."),
    ("sd", "standard deviation: the usual size of chance's spread."),
    ("z", "how many standard deviations a result lies above its expected value; beyond 3 is rare for an honest "
          "player."),
    ("Pearson X² (misfit)", "one number for how far a dealer's trump honours landed from where a fair deal puts "
                            "them, summed over the seats and cards; about as large as its expected value when "
                            "the deal is fair. Its chart adds it up cell by cell (seat and card), largest first."),
    ("score", "for the play tests, how closely a player's choices followed something they should not know; about "
              "zero (or the expected value shown) for an honest player."),
    ("deals with a chance", "for a pair, the deals where one of them could give counting cards to a trick the "
                            "other was winning."),
    ("odds", "'1 in a million' means an honest player would show a result this extreme about once in a million "
             "tries; the q-value then allows for the many checks made."),
    ("evidence (charts)", "the charts' scale for the p-value, where higher is stranger: it counts the p-value's "
                          "places after the decimal point, so 2 means p = 0.01 and 6 means p = 0.000001."),
    ("standardised", "measured in standard deviations, so that an honest result is usually between -2 and 2."),
    ("percentile", "the share of players, in hundredths, whose score is at or below this one: the 95th percentile "
                   "is higher than 95 players in 100."),
    ("funnel plot", "dealers placed by deals dealt and how often the event happened; honest dealers stay inside "
                    "the funnel, which narrows as the deals add up."),
    ("QQ plot", "every p-value of a test against what honest chance gives; honest players follow the diagonal, "
                "cheats stand above it at the right."),
    ("cumulative excess (timeline)", "observed minus expected, added up deal after deal: a steady climb is a "
                                     "steady excess, a jump a cluster of deals."),
    ("smallest cheat this play could reveal", "the weakest cheat of the test's kind that the player's amount of "
                                              "play would have shown, with the stated probability; below it, not "
                                              "flagged says little."),
    ("error budget, level", "the audit's chance of flagging anyone in a club where no one cheats (5% by "
                            "default), shared out between the tests in advance."),
    ("method words", "'exact Poisson-binomial': the p-value is computed exactly from each deal's own chance, "
                     "not approximated; 'one-sided': only results in the cheat's direction count; 'Monte-Carlo': "
                     "the p-value is estimated by simulating honest play (with the recorded seed); 'importance "
                     "sampling': the same estimate from honest deals drawn leaning towards unusual tables and weighted "
                     "back, so that a small p-value needs far fewer simulations; 'closed-form bound': a p-value from a "
                     "formula, with no simulation, used when a result lies far beyond what simulation can reach; "
                     "'Benjamini-Hochberg': the way q-values allow for the many checks made."),
    ("Method", "the line at the end of each test's section that names its statistical method, for a statistician "
               "who wants to check the work ('null' there is the honest chance a result is compared with); the rest "
               "of the report does not need it."),
    ("SHA-256", "a fingerprint of a file: any change to the file changes it. The reproducibility block lists one "
                "per input, so that anyone can check that the same logs were audited."),
    ("commitment", "`auditor audit --commit FILE` seals the flag list with a random salt kept in FILE and prints "
                   "the SHA-256 of salt and list; published before names are reviewed, it shows later that the "
                   "flags were not changed (`auditor verify-commit`)."),
]

# ------------------------------------------------------------------ numbers


def fmt_p(p: Any) -> str:
    """A p- or q-value the way people read it: 0.03, 0.004, 0.0003, 2e-07."""
    v = finite(p)
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
    v = finite(x)
    if v is None:
        return "n/a"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fmt_about(x: Any) -> str:
    """An expected value for a sentence: 255, 12.4, 0.83."""
    v = finite(x)
    if v is None:
        return "n/a"
    if abs(v) >= 10:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.1f}"
    return f"{v:.2g}"


def fmt_rate(x: Any) -> str:
    v = finite(x)
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
    detail = as_dict(entry.get("detail"))
    for key in ("sd", "null_sd", "expected_sd"):
        v = finite(detail.get(key))
        if v is not None and v >= 0:
            return v
    if not spec_of(entry.get("test")).bernoulli:
        return None
    n, e = finite(entry.get("n")), finite(entry.get("expected"))
    obs = finite(entry.get("observed"))
    if n is None or e is None or obs is None or n <= 0 or not (0 <= e <= n) or obs != int(obs):
        return None
    p = e / n
    return math.sqrt(n * p * (1 - p))


# ------------------------------------------------------------------ sentences


def pq_text(entry: dict) -> str:
    out = f"p = {fmt_p(entry.get('pvalue'))}"
    if finite(entry.get("qvalue")) is not None:
        out += f", q = {fmt_p(entry.get('qvalue'))}"
    return out


def pair_of(subject: str) -> tuple[str, str]:
    """The two sides of a pair subject 'a+b' (a one-player subject: itself and '?')."""
    a, _, b = str(subject).partition("+")
    return (a, b) if b else (str(subject), "?")


def _biggest_cell(detail: dict) -> str:
    """deal_uniformity: the seat x card cell that departs most from a fair deal, as a sentence ('' without cells)."""
    words = biggest_cell_words(detail)
    return f" Most of it: {words}." if words else ""


def biggest_cell_words(detail: dict) -> str:
    """The seat x card cell that departs most from a fair deal, in words: 'the trump Jack in the dealer's hand 82
    times, where a fair deal gives about 19' ('' when the detail has no cells)."""
    cells = detail.get("cells")
    if not isinstance(cells, list):
        return ""
    best, best_z = None, 0.0
    for c in cells:
        if not isinstance(c, dict):
            continue
        o, e = finite(c.get("observed")), finite(c.get("expected"))
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
    return (f"the trump {rank} {where} {fmt_num(best.get('observed'))} times, where a fair deal gives about "
            f"{fmt_about(best.get('expected'))}")


# the fields a test's sentence template may use (`auditor.detectors.spec`): the entry's own, then the spec's words
SENTENCE_FIELDS = ("subject", "first", "second", "n", "obs", "exp", "spread", "pq", "over", "z", "cell", "scope")
WORD_FIELDS = ("title", "what", "unit", "unit_short", "event", "cheat", "honest")


def sentence_fields(entry: dict, spec: TestSpec) -> dict[str, str]:
    """The values of `SENTENCE_FIELDS` and `WORD_FIELDS` for one entry, formatted for a sentence."""
    subject = str(entry.get("subject", "?"))
    n, obs, exp = entry.get("n"), entry.get("observed"), entry.get("expected")
    detail = as_dict(entry.get("detail"))
    sd = null_sd(entry)
    first, second = pair_of(subject)
    dec = finite(detail.get("decisions"))
    z = finite(entry.get("statistic"))
    fields = {
        "subject": subject, "first": first, "second": second,
        "n": fmt_num(n), "obs": fmt_num(obs), "exp": fmt_about(exp),
        "spread": f" ± {fmt_about(sd)}" if sd is not None and sd > 0 else "",
        "pq": pq_text(entry),
        "over": f"{fmt_num(n)} {spec.unit}" + (f" ({fmt_num(dec)} decisions)" if dec is not None else ""),
        "z": f" (z = {z:.1f})" if z is not None else "",
        "cell": _biggest_cell(detail),
        # the part of a test's data its result rests on, when not all of it (marked_ten: the score-gated deals)
        "scope": str(as_dict(detail.get("score_gate")).get("scope_text", "")),
    }
    fields.update({k: getattr(spec, k) for k in WORD_FIELDS})
    return fields


def result_sentence(entry: dict) -> str:
    """'bob received the Jack of trumps in 301 of the 812 deals they dealt; an honest dealer would in about
    255 ± 13; p = 0.0003, q = 0.02': the test's own template (`TestSpec.sentence`), or a plainer sentence when
    the test has none, or fields are missing."""
    spec = spec_of(entry.get("test", ""))
    subject = str(entry.get("subject", "?"))
    n, obs, exp = entry.get("n"), entry.get("observed"), entry.get("expected")
    detail = as_dict(entry.get("detail"))
    pq = pq_text(entry)
    if finite(obs) is None or finite(exp) is None:
        return f"{subject}: {spec.title.lower()}; {pq}."
    has_n = finite(n) is not None
    if spec.sentence and (has_n or not spec.sentence_needs_n):
        return spec.sentence.format(**sentence_fields(entry, spec))
    sd = null_sd(entry)
    spread = f" ± {fmt_about(sd)}" if sd is not None and sd > 0 else ""
    unit = f" {detail['unit']}" if isinstance(detail.get("unit"), str) else ""
    where = f" over {fmt_num(n)} {spec.unit}" if has_n else ""
    return f"{subject}: {fmt_num(obs)}{unit} observed{where}, about {fmt_about(exp)}{spread} expected; {pq}."


MIN_DETECTABLE_KEYS = ("min_detectable", "min_detectable_power")  # what `min_detectable` reads of `detail`


def min_detectable(entry: dict) -> tuple[float | None, float]:
    """(smallest detectable cheat strength, power) from `detail.min_detectable` (a number, or a dict with
    `rate`/`strength` and `power`). A value of 1 or more, or an explicit null, means even a full-strength cheat
    could go unseen (`math.inf` is returned); a missing key means the detector did not compute it (None)."""
    detail = as_dict(entry.get("detail"))
    if "min_detectable" not in detail:
        return None, 0.8
    md = detail.get("min_detectable")
    power = finite(detail.get("min_detectable_power")) or 0.8
    if isinstance(md, dict):
        power = finite(md.get("power")) or power
        md = md.get("rate", md.get("strength", md.get("q")))
    v = finite(md)
    if v is None or v >= 1:
        return math.inf, power
    return max(v, 0.0), power


def sensitivity_sentence(entry: dict) -> str:
    """'With 212 deals dealt, a stacking rate above 0.19 would have been caught 4 times in 5.'"""
    spec = spec_of(entry.get("test", ""))
    n = finite(entry.get("n"))
    amount = f"With {fmt_num(n)} {spec.unit_short}" if n is not None else "With this amount of play"
    md, power = min_detectable(entry)
    if md is None:
        return (f"{amount}, the size of cheat this test could have revealed was not computed: not being flagged "
                f"here does not show that no cheating took place.")
    if math.isinf(md):
        return (f"{amount}, even a cheat at full strength could have gone unflagged (caught less than "
                f"{times_in(power)}): this test says little about this subject yet.")
    return f"{amount}, {spec.cheat} above {fmt_rate(md)} would have been caught {times_in(power)}."


def _label(key: str) -> str:
    return str(key).replace("_", " ")


def _pick(d: dict, *keys):
    for k in keys:
        if k in d and finite(d.get(k)) is not None:
            return finite(d.get(k))
    return None


def _field_text(val: dict) -> str:
    """The field comparison of a play test: where the player's score sits among similar players."""
    parts = []
    pct, k = finite(val.get("percentile")), finite(val.get("neighbours"))
    if pct is not None and k is not None:
        med = finite(val.get("neighbour_median_z"))
        parts.append(f"{_ordinal(pct)} percentile among their {fmt_num(k)} most similar players"
                     + (f" (their median score {med:.2g})" if med is not None else ""))
    pall, m = finite(val.get("percentile_all")), finite(val.get("field_players"))
    if pall is not None:
        parts.append(f"{_ordinal(pall)} percentile of all {fmt_num(m)} players" if m is not None
                     else f"{_ordinal(pall)} percentile of the field")
    pe = finite(val.get("p_empirical"))
    if pe is not None:
        parts.append(f"p = {fmt_p(pe)} against the field's own null")
    return ", ".join(parts)


def _peers_text(val: dict) -> str:
    """The random-effects comparison with the other dealers (shuffle tests), in words: how far this dealer's
    deals sit above what a fair deal leaves, in standard deviations, against the other dealers'."""
    out = f"{fmt_num(val.get('peers'))} other dealers"
    own, peers = finite(val.get("mean_excess_sd_units")), finite(val.get("peers_mean"))
    if own is not None:
        out += f"; this dealer's average excess {own:.2g} standard deviations"
        if peers is not None:
            out += f" (theirs {peers:.2g})"
    between, within = finite(val.get("between_people_sd")), finite(val.get("within_sd"))
    if between is not None and within is not None:
        out += f"; spread between dealers {between:.2g}, within one dealer's deals {within:.2g}"
    t = finite(val.get("t"))
    if t is not None:
        out += f"; standardised difference from the others {t:.2g}"
    return out


def _ordinal(pct: float) -> str:
    k = int(round(pct))
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _compact(v: Any) -> str:
    """A short plain rendering of a value inside a control: numbers formatted, dicts as 'key value' pairs (a
    naming field first), lists joined."""
    if finite(v) is not None:
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
    obs, exp = _pick(val, "observed", "revokes", "gifts"), finite(val.get("expected"))
    stat = _pick(val, "statistic", "z")
    pv = _pick(val, "pvalue", "p")
    parts = []
    if obs is not None and exp is not None and (obs != int(obs) or obs < 0 or exp < 0):
        # issue 16: a score, not a count (it may be negative): never "12.1 of 25 (about -0.9 expected)"
        over = f" over {fmt_num(n)} {'decisions' if 'decisions' in val else 'deals'}" if n is not None else ""
        parts.append(f"score {fmt_num(obs)}{over} (honest play: about {fmt_about(exp)})")
    elif obs is not None and exp is not None:
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
        elif "peers" in val and "mean_excess_sd_units" in val:
            parts.append(_peers_text(val))
        elif isinstance(val.get("unit"), str) and finite(val.get("mean")) is not None:
            parts.append(f"{fmt_num(val['mean'])} {val['unit']}, on average"
                         + (f" (other players: {fmt_num(val['field_mean'])})"
                            if finite(val.get("field_mean")) is not None else ""))
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

    spec = spec_of(entry.get("test"))
    for key, val in controls.items():
        key = str(key)
        label = spec.control_label(key)  # issue 16: the spec's plain words, never the document's key
        if isinstance(val, dict):
            subs = [(k, v) for k, v in val.items() if isinstance(v, dict)]
            if subs and len(subs) == len(val):
                for k, v in subs:
                    text, n, obs, exp, stat, pv = _control_text(v)
                    row(f"{key}.{k}", f"{label} {k}", text, n, obs, exp, stat, pv)
                continue
            if "percentile" in val or "percentile_all" in val:
                row(key, label, _field_text(val) or "n/a")
                continue
            text, n, obs, exp, stat, pv = _control_text(val)
            row(key, label, text, n, obs, exp, stat, pv)
        elif isinstance(val, (list, tuple)):
            more = f"; {len(val) - 12} more" if len(val) > 12 else ""
            row(key, label, "; ".join(_compact(v) for v in val[:12]) + more)
        else:
            row(key, label, fmt_num(val) if finite(val) is not None else str(val))
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
    cheat = spec_of(test).cheat
    if not powers:
        return ("This test did not compute the size of cheat each subject's play could reveal; a subject who is "
                "not flagged may still cheat.")
    power = times_in(powers[0]) if len(powers) == 1 else "with the stated probability"
    return (f"The last column is the smallest cheat each subject's amount of play would have revealed {power} "
            f"({cheat}): a subject who is not flagged may still cheat below that size.")


STRONG_WORDS = ("'Strong' marks a flag so extreme that an honest club would show one like it less than once in a "
                "thousand audits of this size, even counting every test made.")


def audit_sentence(doc: dict) -> str:
    """The audit-wide error level and the false flags it implies, in plain words ("" for a document without the
    audit block)."""
    a = doc.get("audit")
    if not isinstance(a, dict):
        return ""
    level = finite(a.get("level"))
    m = finite(a.get("tests"))
    if level is None or not m:
        return ""  # nothing was tested: no level to speak of
    flags = int(finite(a.get("flags")) or 0)
    expect = finite(a.get("expected_false_flags_if_all_honest"))
    text = (f"All {fmt_num(m)} tests of this audit were judged together at a level of {level:.0%}: if no one "
            f"here cheated, the chance that the audit would flag anyone at all is at most {level:.0%}")
    if expect is not None:
        text += f" (about {expect:.2g} false flags expected)"
    text += "."
    if flags:
        text += (f" Of its {flags} flag{'s' if flags != 1 else ''}, on average at most {flags * level:.2g} "
                 "would be false.")
        strong = int(finite(a.get("strong")) or 0)
        if strong:
            text += f" {strong} of them {'are' if strong != 1 else 'is'} strong. " + STRONG_WORDS
    return text


def family_sentence(fam: dict, n_flagged: int, n_watch: int) -> str:
    """The test's size, its share of the audit's error budget and what it takes to be flagged on it."""
    m = int(finite(fam.get("tests")) or 0)
    fdr = finite(fam.get("fdr"))
    noun = "subject" if m == 1 else "subjects"
    if fdr is None:
        return f"{m} {noun} tested."
    share = finite(fam.get("share"))
    level = finite(fam.get("per_test_level"))
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


def finding_where(f: dict) -> str:
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


def entry_view(e: dict) -> dict:
    md, power = min_detectable(e)
    return {
        "test": str(e.get("test", "")), "title": spec_of(e.get("test", "")).title, "subject": str(e.get("subject", "?")),
        "tier": str(e.get("tier") or ("report" if e.get("flagged") else "clear")),
        "tier_words": TIER_WORDS.get(str(e.get("tier")), str(e.get("tier"))),
        "n": fmt_num(e.get("n")), "observed": fmt_num(e.get("observed")),
        "expected": fmt_about(e.get("expected")), "p": fmt_p(e.get("pvalue")), "q": fmt_p(e.get("qvalue")),
        "method": str(e.get("method", "")),
        "sentence": (result_sentence(e) + " " + cleared_words(e)).strip(), "sensitivity": sensitivity_sentence(e),
        "min_detectable": "n/a" if md is None else ("too little play" if math.isinf(md) else fmt_rate(md)),
        "power": power,
        "controls": control_items(e), "controls_sentence": controls_sentence(e),
        "pvalue": finite(e.get("pvalue")), "qvalue": finite(e.get("qvalue")),
        "strong": bool(e.get("strong")),
    }


def players_named(entries: Iterable[dict]) -> set[str]:
    """The players an entry names: its subject, or both sides of an ordered pair of a pair test (the first alone
    when the second is cleared: `second_cleared`)."""
    out: set[str] = set()
    for e in entries:
        subject = str(e.get("subject", "?"))
        if spec_of(e.get("test")).pair and "+" in subject:
            first, second = pair_of(subject)
            out.add(first)
            if not second_cleared(e):
                out.add(second)
        else:
            out.add(subject)
    return out


SECOND_CLEAR_CONTROL_P = 1e-3  # the first player does it without the second beyond doubt (the control's p-value)
SECOND_EXCESS_P = 1e-3  # and the pair's rate is not above the first's rate without the second at this level: a
# stacker's 59 cutters at the 1M bench season, tested at 0.05, named 5 of them (chance alone gives about 3 of 59);
# at 1e-3 none, about 0.06 on average for 60 innocent cutters


def second_cleared(entry: dict) -> bool:
    """Whether a pair flag does not implicate its second player: its test names a control of the first player
    without the second (`TestSpec.second_cleared_by`: `dealer_cutter`'s dealer with the other cutters), that
    control is itself beyond doubt (p ≤ SECOND_CLEAR_CONTROL_P), and the pair's rate does not stand out from it
    (one-sided Fisher exact test of the two rates, p > SECOND_EXCESS_P). A dealer who deals himself the Jack
    whoever cuts has every cutter's pair flagged: the flags are true (the pair is not a fair deal), but nothing in
    them points at the cutters (issue 15: the 1M bench season named 59 cutters of one stacker, "strong")."""
    key = spec_of(entry.get("test")).second_cleared_by
    if not key:
        return False
    c = as_dict(as_dict(entry.get("controls")).get(key))
    values = [finite(x) for x in (entry.get("n"), entry.get("observed"), c.get("n"), c.get("observed"))]
    pc = finite(c.get("pvalue"))
    if pc is None or pc > SECOND_CLEAR_CONTROL_P:
        return False
    counts = [int(x) for x in values if x is not None and x == int(x) and x >= 0]
    if len(counts) != 4 or counts[1] > counts[0] or counts[3] > counts[2]:
        return False
    return fisher_greater(*counts) > SECOND_EXCESS_P


@lru_cache(maxsize=4096)  # the people's paragraphs ask again for each player of each flag
def fisher_greater(n1: int, k1: int, n2: int, k2: int) -> float:
    """One-sided Fisher exact p-value that the first rate (k1 of n1) is above the second (k2 of n2): P(X ≥ k1)
    for X hypergeometric (n1 drawn from n1 + n2 holding k1 + k2 events), summed in logs (`math.lgamma`)."""
    total, events = n1 + n2, k1 + k2
    hi = min(n1, events)
    if k1 <= max(0, events - n2):
        return 1.0

    def log_choose(a: int, b: int) -> float:
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)

    base = log_choose(total, n1)
    logs = [log_choose(events, x) + log_choose(total - events, n1 - x) - base for x in range(k1, hi + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def cleared_words(entry: dict) -> str:
    """'' or the sentence that says why the second player of a pair flag is not named (`second_cleared`)."""
    if not second_cleared(entry):
        return ""
    first, second = pair_of(str(entry.get("subject", "?")))
    label = spec_of(entry.get("test")).control_label(spec_of(entry.get("test")).second_cleared_by)
    return (f"{first} did as much without {second} ({label}): nothing here points at {second}, who is not named "
            "for it.")



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
    read = finite(sel.get("records_read"))
    chosen = finite(sel.get("deals_selected"))
    if read is not None and chosen is not None:
        text += f" ({fmt_num(chosen)} of {fmt_num(read)} records"
        ns = as_dict(sel.get("not_selected"))
        left = [f"{fmt_num(k)} {NOT_SELECTED_WORDS.get(str(w), str(w))}" for w, k in sorted(ns.items())
                if finite(k)]
        if left:
            text += "; left out: " + ", ".join(left)
        bad = finite(sel.get("bad_records"))
        if bad:
            text += f"; {fmt_num(bad)} unreadable record{'s' if bad != 1 else ''} kept as findings"
        text += ")"
    return text

