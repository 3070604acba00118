"""`columns.time_keys` (Arrow's RE2 and numpy for the usual ISO form) is held equal to `columns.time_key`, the
per-text spec (`select.deal_time`: Python's `datetime.fromisoformat`), on every text: the usual form with every
field at and past its range, near-misses of it, other ISO forms, and anything else."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.columns import TIME_NONE, _plain_time_keys, time_key, time_keys


def _two(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map(lambda v: f"{v:02d}")


@st.composite
def plain_form(draw: st.DrawFn, max_frac: int = 7) -> str:
    """The usual form, each field drawn past its range too (month 13, day 31 of a short month, hour 24, zone
    +24:00) and the fraction past six digits (Python keeps six), so that the range checks are exercised
    against Python's."""
    y = draw(st.integers(0, 9999))
    text = (f"{y:04d}-{draw(_two(0, 13))}-{draw(_two(0, 32))}T{draw(_two(0, 24))}:{draw(_two(0, 60))}:"
            f"{draw(_two(0, 60))}")
    if draw(st.booleans()):
        text += "." + draw(st.text("0123456789", min_size=1, max_size=max_frac))
    zone = draw(st.sampled_from(["", "Z", "+", "-"]))
    if zone in "+-" and zone:
        text += f"{zone}{draw(_two(0, 24))}:{draw(_two(0, 60))}"
    else:
        text += zone
    return text


@st.composite
def near_miss(draw: st.DrawFn) -> str:
    """The usual form with one character replaced, inserted or removed, or whitespace around it."""
    text = draw(plain_form())
    i = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["replace", "insert", "delete", "pad"]))
    c = draw(st.sampled_from(list("0123456789T:-+.Zz ,t\u0660")))
    if how == "replace" and i < len(text):
        return text[:i] + c + text[i + 1:]
    if how == "insert":
        return text[:i] + c + text[i:]
    if how == "delete" and i < len(text):
        return text[:i] + text[i + 1:]
    return " " + text + "\n"


texts = st.one_of(plain_form(), near_miss(), st.none(),
                  st.sampled_from(["2026-11-01", "2026-11-01T20:00", "2026-11-01 20:00:00", "20261101T200000Z",
                                   "2026-11-01T20:00:00+0100", "2026-11-01T20:00:00,5", "", "now"]),
                  st.text(max_size=30))


@settings(max_examples=600, deadline=None)
@given(st.lists(texts, max_size=40))
def test_time_keys_equal_the_spec_on_every_text(xs):
    got = time_keys(xs)
    assert got.dtype == np.int64
    assert got.tolist() == [time_key(x) for x in xs]


@st.composite
def valid_plain(draw: st.DrawFn) -> str:
    """A valid time of the usual form: every field in its range, up to six digits of fraction."""
    text = (f"{draw(st.integers(1, 9999)):04d}-{draw(_two(1, 12))}-{draw(_two(1, 28))}T{draw(_two(0, 23))}:"
            f"{draw(_two(0, 59))}:{draw(_two(0, 59))}")
    if draw(st.booleans()):
        text += "." + draw(st.text("0123456789", min_size=1, max_size=6))
    zone = draw(st.sampled_from(["", "Z", "+", "-"]))
    return text + (f"{zone}{draw(_two(0, 23))}:{draw(_two(0, 59))}" if zone in ("+", "-") else zone)


@settings(max_examples=300, deadline=None)
@given(st.lists(valid_plain(), min_size=1, max_size=40))
def test_a_valid_time_of_the_usual_form_is_read_without_the_spec(xs):
    """The fast path is really taken: no valid time of the usual form goes to the per-text spec."""
    out = np.full(len(xs), TIME_NONE, np.int64)
    assert _plain_time_keys(xs, out) == []
    assert out.tolist() == [time_key(x) for x in xs]


def test_values_that_are_not_text_go_to_the_spec_whole():
    xs = [1, "2026-11-01T20:00:00Z", None, 2.5]
    out = np.full(len(xs), TIME_NONE, np.int64)
    assert _plain_time_keys(xs, out) == [0, 1, 2, 3]
    assert time_keys(xs).tolist() == [TIME_NONE, 1793563200000000, TIME_NONE, TIME_NONE]


def test_known_instants():
    xs = ["1970-01-01T00:00:00Z", "1969-12-31T23:59:59.000001", "2026-11-01T20:00:00+01:00",
          "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "0001-01-01T00:00:00", None]
    assert time_keys(xs).tolist() == [0, -999999, 1793559600000000, 1709164800000000, TIME_NONE,
                                      -62135596800000000, TIME_NONE]
