"""The switch values the kernel says it replays (`auditor.fast.kernel.KERNEL_SUPPORTS`), and what happens to a
deal whose rules have any other value: the reference engine replays it, counted under "unsupported_rule".

Every value the kernel claims is held here to the reference engine, one value at a time (the option sets of
test_batch_differential.py cover the combinations that matter most).
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from auditor.dealog import read_records
from auditor.fast import kernel, pipeline
from auditor.replay.batch import replay_batch
from auditor.replay.reference import replay_deal
from auditor.rules import PRESETS, SWITCHES, resolve
from auditor.testing.generate import Style, random_log
from auditor.testing.mutate import mutate_log, to_jsonl

RESULT_FIELDS = ("findings", "cards_ok", "hands", "trump", "replayed_tricks", "plays", "winners", "revokes",
                 "scored", "sw_steps", "af_events", "af_capped_sides", "penalty_revokes", "gift_sides", "points")
COUNTS = {"scotch_whist": (2, 3, 4, 5, 6, 8), "all_fours": (2, 3, 4)}


def _deals(path) -> list:
    """The valid deals of a file (the mutations spoil some records: those are the reader's, not the kernel's)."""
    return [r.deal for r in read_records([str(path)]) if r.deal is not None]


def _write(tmp_path, lines: list) -> str:
    path = tmp_path / "log.jsonl"
    path.write_bytes(to_jsonl(lines))
    return str(path)


def _lines(seed: str, game: str, options: dict, counts: tuple[int, ...], rate: float = 0.3, claims: float = 0.4,
           games: int = 2) -> list:
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    lines: list = []
    for n in counts:
        recs = random_log(rng, games, game=game, preset="foster", n=n, options=options,
                          style=Style(revoke_rate=0.05, claim_revokes=claims), id_prefix=f"{seed}/{n}/")
        lines += mutate_log(rng, recs, rate=rate)
    return lines


def _same_as_reference(deals: list) -> dict:
    """Batch results field by field equal to the reference engine's; returns the batch statistics."""
    results, stats = replay_batch(deals)
    for d, got in zip(deals, results, strict=True):
        want = replay_deal(d)
        for f in RESULT_FIELDS:
            assert getattr(got, f) == getattr(want, f), (d.source, f)
    return stats


def test_the_kernel_claims_every_value_the_rules_know_today():
    """Today the kernel replays every switch value of rules.py. A value added there falls back to the reference
    engine until someone makes the kernel handle it, adds it to KERNEL_SUPPORTS, and this file holds it to the
    reference engine."""
    for game, switches in SWITCHES.items():
        claimed = kernel.KERNEL_SUPPORTS[game]
        assert set(claimed) == set(switches), game
        for name, values in switches.items():
            assert list(claimed[name]) == list(values), (game, name)
    for R in PRESETS.values():
        assert kernel.unsupported_switches(R) == []


_NON_DEFAULT = [(game, name, value) for game, switches in kernel.KERNEL_SUPPORTS.items()
                for name, values in switches.items() for value in values
                if value != PRESETS[(game, "foster")].switches[name]]


@pytest.mark.parametrize("game,name,value", _NON_DEFAULT, ids=[f"{g}.{k}={v}" for g, k, v in _NON_DEFAULT])
def test_each_claimed_value_equals_the_reference(tmp_path, game, name, value):
    """Each value the kernel claims, alone on the Foster preset, clean and mutated deals: the kernel's results are
    the reference engine's, and the kernel did the work."""
    path = _write(tmp_path, _lines(f"{game}.{name}={value}", game, {name: value}, COUNTS[game]))
    stats = _same_as_reference(_deals(path))
    assert stats["kernel"] > 0
    assert "unsupported_rule" not in stats["fallback_reasons"]


def test_a_value_the_kernel_does_not_claim_goes_to_the_reference_engine(tmp_path, monkeypatch):
    """With `must_trump_if_able` struck from the kernel's list, the deals of that rule are replayed by the reference
    engine (counted as "unsupported_rule"), the others by the kernel; the results and the whole document are the
    same as with the kernel replaying them."""
    must = _lines("must", "scotch_whist", {"void_rule": "must_trump_if_able"}, (3, 4), rate=0.2, claims=0.0, games=3)
    plain = _lines("plain", "scotch_whist", {}, (4,), rate=0.0, claims=0.0)
    path = _write(tmp_path, must + plain)
    deals = _deals(path)
    before = pipeline.replay_paths([path])
    assert "unsupported_rule" not in before.stats["fallback_reasons"]

    monkeypatch.setitem(kernel.KERNEL_SUPPORTS["scotch_whist"], "void_rule", ("trump_or_discard",))
    R = resolve("scotch_whist", "foster", {"void_rule": "must_trump_if_able"})
    assert kernel.unsupported_switches(R) == [("void_rule", "must_trump_if_able")]
    assert kernel.unsupported_switches(PRESETS[("scotch_whist", "foster")]) == []
    # the deals the kernel reads from its columns (lenient spellings are "record" fallbacks either way)
    kernel_read = [d for d in deals if "record" not in replay_batch([d])[1]["fallback_reasons"]]
    n_must = sum(1 for d in kernel_read if d.ruleset.void_rule == "must_trump_if_able")
    assert n_must > 10
    stats = _same_as_reference(deals)
    assert stats["fallback_reasons"]["unsupported_rule"] == n_must
    assert stats["kernel"] == sum(1 for d in kernel_read if d.ruleset.void_rule != "must_trump_if_able") - sum(
        v for k, v in stats["fallback_reasons"].items() if k not in ("record", "unsupported_rule"))
    assert stats["kernel"] > 0
    after = pipeline.replay_paths([path])
    assert after.stats["fallback_reasons"]["unsupported_rule"] == n_must
    assert after.stats["kernel"] < before.stats["kernel"]
    assert after.stats["kernel"] + after.stats["fallback"] == before.stats["kernel"] + before.stats["fallback"]
    assert after.to_json() == before.to_json()


def test_an_unknown_game_or_switch_is_unsupported():
    R = PRESETS[("all_fours", "foster")]
    assert kernel.unsupported_switches(R) == []
    odd = replace(R, switches=MappingProxyType(dict(R.switches) | {"new_switch": "x", "target": 7.0}))
    assert kernel.unsupported_switches(odd) == [("target", 7.0), ("new_switch", "x")]
    assert kernel.unsupported_switches(replace(R, game="euchre")) == [("game", "euchre")]
