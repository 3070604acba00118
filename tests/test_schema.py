"""The published JSON Schema of deal-log/1 (auditor/deal-log-1.schema.json) and the reader's validator
(auditor.dealog.check_record) agree on a corpus of valid and invalid records.

Where they may differ, and why:
- Reader-only checks (the schema cannot express them; the reader rejects, the schema accepts): seat numbers
  below the player count (dealer, cutter, sides, claims); `sides` partitioning the seats; one entry per seat in
  hands, runs[].cards and discards; recorded points / totals with one entry per side and recorded.winner below
  the number of sides; integers written with a fraction part (1.0: an integer to JSON Schema, a float to the
  reader).
- Reader leniency (the reader accepts, the schema describes the canonical form): game and preset names in
  another case or spelling ("Scotch Whist", "seven-up", "Foster").
Card strings are only strings to the schema: an unparseable card is the replay's `unknown_card`.
"""

from __future__ import annotations

import copy
import json
from importlib.resources import files

import jsonschema
import pytest

from auditor.dealog import FIELD_ORDER, check_record
from auditor.rules import AF_SWITCHES, SW_SWITCHES
from conftest import REPLAY_FIXTURES, ROOT

SCHEMA = json.loads(files("auditor").joinpath("deal-log-1.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# the reader's messages for the checks the schema cannot make
READER_ONLY = (
    "entries for",            # per-seat lists and recorded arrays of the wrong length
    "must be a seat 0..",     # a seat number out of range (also rejected by the schema when not an integer)
    "does not partition",     # sides
    "recorded.winner must be a side",
    "must be an integer >= 1, got 1.0",
    "cannot be 41.0", "cannot be 7.0",
)


def _schema_ok(obj) -> bool:
    return VALIDATOR.is_valid(obj)


def _valid_records() -> list[dict]:
    out = []
    for path in sorted(REPLAY_FIXTURES.glob("*.jsonl")) + [ROOT / "fixtures" / "examples.jsonl"]:
        for line in path.read_bytes().splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and check_record(obj) is None:
                out.append(obj)
    return out


VALID = _valid_records()
BASE_SW = next(o for o in VALID if o["game"] == "scotch_whist" and o.get("sides") and o.get("deck"))
BASE_AF = next(o for o in VALID if o["game"] == "all_fours" and o.get("runs") and o.get("discards"))

REPLACEMENTS = [None, 0, 1, -1, 1.5, "x", "", True, [], {}, ["x"], [["x"]], [0], {"a": 1}]


def _mutations(base: dict):
    """(description, record) for every top-level field and nested field replaced by values of every type."""
    for key in FIELD_ORDER + ("extra_field",):
        rec = copy.deepcopy(base)
        rec.pop(key, None)
        yield f"drop {key}", rec
        for v in REPLACEMENTS:
            rec = copy.deepcopy(base)
            rec[key] = v
            yield f"{key} = {v!r}", rec
    nested = {
        "hands": lambda r, v: r["hands"].__setitem__(0, v),
        "hands[0][0]": lambda r, v: r["hands"][0].__setitem__(0, v),
        "tricks[0]": lambda r, v: r["tricks"].__setitem__(0, v),
        "tricks[0][0]": lambda r, v: r["tricks"][0].__setitem__(0, v),
        "sides[0]": lambda r, v: r["sides"].__setitem__(0, v) if r.get("sides") else None,
        "sides[0][0]": lambda r, v: r["sides"][0].__setitem__(0, v) if r.get("sides") else None,
        "recorded.points": lambda r, v: r.setdefault("recorded", {}).__setitem__("points", v),
        "recorded.points[0]": lambda r, v: r.setdefault("recorded", {"points": [0] * 2}).get("points", [0]).__setitem__(0, v),
        "recorded.totals": lambda r, v: r.setdefault("recorded", {}).__setitem__("totals", v),
        "recorded.winner": lambda r, v: r.setdefault("recorded", {}).__setitem__("winner", v),
        "recorded": lambda r, v: r.__setitem__("recorded", v),
        "claims": lambda r, v: r.__setitem__("claims", [v]),
        "claims[0].revoke": lambda r, v: r.__setitem__("claims", [{"revoke": v, "trick": 1}]),
        "claims[0].trick": lambda r, v: r.__setitem__("claims", [{"revoke": 0, "trick": v}]),
        "runs[0]": lambda r, v: r.__setitem__("runs", [v]),
        "runs[0].cards": lambda r, v: r["runs"][0].__setitem__("cards", v) if r.get("runs") else None,
        "runs[0].turn_up": lambda r, v: r["runs"][0].__setitem__("turn_up", v) if r.get("runs") else None,
        "options": lambda r, v: r.__setitem__("options", {"void_rule": v} if r["game"] == "scotch_whist"
                                              else {"game_tie": v}),
        "options.target": lambda r, v: r.__setitem__("options", {"target": v}),
        "players[0]": lambda r, v: r["players"].__setitem__(0, v),
    }
    for name, fn in nested.items():
        for v in REPLACEMENTS:
            rec = copy.deepcopy(base)
            try:
                fn(rec, copy.deepcopy(v))
            except (KeyError, IndexError, TypeError, AttributeError):
                continue
            yield f"{name} = {v!r}", rec


def _agree(desc: str, obj) -> None:
    reader = check_record(obj)
    schema = _schema_ok(obj)
    if (reader is None) == schema:
        return
    if reader is not None and schema:
        assert any(m in reader for m in READER_ONLY), f"{desc}: only the reader rejects it: {reader}"
        return
    errors = [e.message for e in VALIDATOR.iter_errors(obj)]
    pytest.fail(f"{desc}: only the schema rejects it: {errors}")


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_valid_fixture_record_is_valid_to_the_schema():
    assert len(VALID) > 100
    for obj in VALID:
        errors = [e.message for e in VALIDATOR.iter_errors(obj)]
        assert not errors, (obj.get("game_id"), errors)


def test_bad_input_fixture_agrees():
    for line in (REPLAY_FIXTURES / "bad_input.jsonl").read_bytes().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # not JSON at all: neither can take it
        _agree(str(obj)[:60], obj)


@pytest.mark.parametrize("base", [BASE_SW, BASE_AF], ids=["scotch_whist", "all_fours"])
def test_mutated_records_agree(base):
    n = 0
    for desc, rec in _mutations(base):
        _agree(desc, rec)
        n += 1
    assert n > 300


def test_reader_only_checks_are_documented():
    """Each reader-only check: the reader rejects, the schema accepts."""
    base = BASE_SW
    cases = {
        "dealer out of range": {"dealer": 4},
        "cutter out of range": {"cutter": 9},
        "sides overlap": {"sides": [[0, 2], [2, 3]]},
        "sides seat out of range": {"sides": [[0, 2], [1, 4]]},
        "claim seat out of range": {"claims": [{"revoke": 7, "trick": 1}]},
        "hands for three seats": {"hands": base["hands"][:3]},
        "recorded points for three sides": {"recorded": {"points": [1, 2, 3]}},
        "recorded winner not a side": {"recorded": {"winner": 5}},
        "deal_no 1.0": {"deal_no": 1.0},
    }
    for desc, change in cases.items():
        rec = copy.deepcopy(base) | change
        assert check_record(rec) is not None, desc
        assert _schema_ok(rec), desc
    af = copy.deepcopy(BASE_AF)
    af["runs"][0]["cards"] = af["runs"][0]["cards"][:1]
    assert check_record(af) is not None and _schema_ok(af)
    af = copy.deepcopy(BASE_AF)
    af["discards"] = af["discards"][:1]
    assert check_record(af) is not None and _schema_ok(af)


def test_reader_leniency_is_outside_the_schema():
    """Lenient spellings in (deal-log.md): the reader takes them, the schema names the canonical form."""
    for change in ({"game": "Scotch Whist"}, {"game": "catch_the_ten"}, {"rules": "Foster"}):
        rec = copy.deepcopy(BASE_SW) | change
        assert check_record(rec) is None, change
        assert not _schema_ok(rec), change
    rec = copy.deepcopy(BASE_AF) | {"game": "seven-up"}
    assert check_record(rec) is None and not _schema_ok(rec)


def test_player_counts_per_preset():
    for game, rules, n, ok in [("scotch_whist", "foster", 8, True), ("scotch_whist", "foster", 9, False),
                               ("scotch_whist", "russian", 6, True), ("scotch_whist", "russian", 7, False),
                               ("all_fours", "foster", 4, True), ("all_fours", "foster", 5, False),
                               ("scotch_whist", "foster", 1, False)]:
        rec = {"format": "deal-log/1", "game": game, "rules": rules, "table": "t", "game_id": "g", "deal_no": 1,
               "players": [f"p{i}" for i in range(n)], "dealer": 0, "turn_up": "As", "tricks": []}
        assert (check_record(rec) is None) == ok, (game, rules, n)
        assert _schema_ok(rec) == ok, (game, rules, n)


def test_unknown_card_strings_are_schema_valid():
    rec = copy.deepcopy(BASE_SW)
    rec["hands"][0][0] = "Zz"
    rec["turn_up"] = "joker"
    assert check_record(rec) is None and _schema_ok(rec)


def test_options_in_the_schema_match_the_rules_module():
    for prefix, switches in (("sw", SW_SWITCHES), ("af", AF_SWITCHES)):
        for name, values in switches.items():
            assert SCHEMA["$defs"][f"{prefix}_{name}"]["enum"] == list(values), name
        then = next(b["then"] for b in SCHEMA["allOf"]
                    if b["if"]["properties"]["game"]["const"] == ("scotch_whist" if prefix == "sw" else "all_fours")
                    and "rules" not in b["if"]["properties"])
        props = then["properties"]["options"]["properties"]
        assert set(props) == set(switches) | {f"{prefix}.{k}" for k in switches}
    # a switch with the other game's prefix is unknown
    rec = copy.deepcopy(BASE_SW) | {"options": {"af.target": 10}}
    assert check_record(rec) is not None and not _schema_ok(rec)


def test_cli_prints_the_packaged_schema():
    from typer.testing import CliRunner

    from auditor.cli import app

    out = CliRunner().invoke(app, ["schema"])
    assert out.exit_code == 0
    assert json.loads(out.stdout) == SCHEMA
