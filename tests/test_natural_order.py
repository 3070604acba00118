"""`columns.natural_order` (byte keys built by numba and sorted by numpy) is held equal to sorting by
`columns.natural_key`, the spec, ties in the order given: game ids and table names of every shape, numbers with
leading zeros, zero itself, long numbers, control characters, and names that are not ASCII (the spec's way)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.columns import _natural_bytes, natural_key, natural_order, natural_ranks


def spec_order(names):
    return sorted(range(len(names)), key=lambda i: natural_key(names[i]))


pieces = st.one_of(
    st.sampled_from(["g", "scale/", "sw4-a", "/", "-", "af", "t", "club", "a", "b", "\x01", " ", ".", "_"]),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["0", "00", "007", "07", "7", "10", "010", "9", "99", "0000"]),
)
ascii_names = st.lists(pieces, max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(ascii_names, min_size=64, max_size=200))
def test_natural_order_equals_the_spec_on_ascii_names(names):
    assert natural_order(names).tolist() == spec_order(names)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(ascii_names, st.text(max_size=8)), min_size=0, max_size=150))
def test_natural_order_equals_the_spec_on_any_text(names):
    """Unicode digits (Python's \\d), NUL, surrogates: the spec's way, the same order."""
    assert natural_order(names).tolist() == spec_order(names)


@settings(max_examples=100, deadline=None)
@given(st.lists(ascii_names, min_size=2, max_size=30))
def test_the_byte_keys_compare_as_the_spec_does(names):
    """The fast path itself (whatever size `natural_order` sends to it): every pair of keys compares as the
    names' `natural_key`s do."""
    arr = [x.encode() for x in names]
    off = np.zeros(len(arr) + 1, np.int64)
    off[1:] = np.cumsum([len(x) for x in arr])
    data = np.frombuffer(b"".join(arr) or b"\0", np.uint8)
    width = 4 * max(1, max(len(x) for x in arr)) + 1
    keys = np.zeros((len(arr), width), np.uint8)
    _natural_bytes(off, data, keys)
    b = [bytes(k).rstrip(b"\0") for k in keys]
    for i in range(len(names)):
        for j in range(len(names)):
            ki, kj = natural_key(names[i]), natural_key(names[j])
            assert (b[i] < b[j]) == (ki < kj), (names[i], names[j])
            assert (b[i] == b[j]) == (ki == kj), (names[i], names[j])


def test_game_ids_of_a_season():
    names = [f"scale/{t}/{g}" for g in range(400, 0, -1) for t in ("sw4-b", "af2-a", "sw10-a", "sw4-a")]
    got = [names[i] for i in natural_order(names)]
    assert got[:5] == ["scale/af2-a/1", "scale/af2-a/2", "scale/af2-a/3", "scale/af2-a/4", "scale/af2-a/5"]
    assert got[-1] == "scale/sw10-a/400"
    assert natural_ranks(names).tolist() == np.argsort(spec_order(names)).tolist()
