"""What a test is, in one record beside its code: the words the report and `investigate` use, the kind of subject
and chart, and what it costs to run. Each detector module defines one `TestSpec` (`SPEC`) and its detector class
carries it (`spec`); the registry (`registry.SPECS`) is how the report, `investigate` and the scheduler read them.
Nothing below the report keys a table by test name.

The sentence is a `str.format` template over these fields, filled by `auditor.report.sentences.result_sentence`:
``subject``, ``first`` and ``second`` (the two sides of a pair subject ``a+b``), ``n``, ``obs``, ``exp`` (formatted
numbers), ``spread`` (" ± sd" of the exact null when known), ``pq`` (p- and q-value), ``over`` ("n unit", with the
number of decisions when the detail has it), ``z`` (" (z = …)" when the statistic is finite), ``cell`` (the cell
that misfits most, when the detail has cells), ``scope`` (" where …" when the result rests on part of the test's
data: `detail.score_gate.scope_text`, issue 14) and every word field of the spec (``unit``, ``event``, ``honest``).
An empty template gives the report's plain sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

SUBJECT_KINDS = ("dealer", "player", "pair")  # a pair subject is "first+second"
CHART_KINDS = ("funnel", "score", "evidence")  # funnel: count v. deals with the exact null's funnel; score: scores and
# controls against exposure; evidence: -log10 p against exposure


@dataclass(frozen=True)
class TestSpec:
    """One test's description (see the module docstring)."""

    __test__ = False  # not a pytest test class

    name: str  # the family name in the document (`test` of every entry)
    title: str  # the section heading
    what: str  # what it asks, in two or three plain sentences
    unit: str  # what n counts, plural ("deals they dealt")
    unit_short: str  # the same for a table's column head
    event: str  # what `observed` counts, as a past-tense verb phrase
    cheat: str  # the modelled cheat, for the sensitivity sentence ("a stacking rate")
    honest: str  # who the null describes ("an honest dealer")
    subject: str  # one of SUBJECT_KINDS
    chart: str  # one of CHART_KINDS
    section: int  # place of its section in the report (dealing tests first, then play)
    cost: int  # relative running time on a large input (the scheduler starts the costliest first)
    bernoulli: bool = False  # observed counts Bernoulli trials, one per unit of n (a binomial "±" is fair)
    chart_controls: tuple[str, ...] = ()  # controls drawn beside a subject's mark (cards a cheat cannot use)
    sentence: str = ""  # the result sentence template (module docstring)
    sentence_needs_n: bool = True  # the template needs a finite n (else the plain sentence)
    games: tuple[str, ...] = ()  # issue 16: the games whose deals n counts ("scotch_whist", "all_fours"); () every game
    # issue 16: the report's plain label of each control (its key in the document: `controls.<key>`); a key not
    # listed is shown with its underscores as spaces
    control_words: tuple[tuple[str, str], ...] = ()
    # a pair test's control that says the first player does the same without the second (`controls.<key>`: n,
    # observed): when the first does it there beyond doubt and the pair does not stand out from it, the report
    # does not name the second player (`report.sentences.second_cleared`)
    second_cleared_by: str = ""

    def __post_init__(self) -> None:
        if self.subject not in SUBJECT_KINDS:
            raise ValueError(f"test {self.name!r}: subject kind {self.subject!r} is not one of {SUBJECT_KINDS}")
        if self.chart not in CHART_KINDS:
            raise ValueError(f"test {self.name!r}: chart kind {self.chart!r} is not one of {CHART_KINDS}")

    def control_label(self, key: str) -> str:
        """The plain label of control `key` (see `control_words`)."""
        return dict(self.control_words).get(key, key.replace("_", " "))

    @property
    def pair(self) -> bool:
        return self.subject == "pair"
