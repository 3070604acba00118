"""Property tests: valid records from the fixtures, mutated (fields dropped or altered, types changed, cards
swapped or replaced, tricks truncated, options and claims changed, raw text cut or damaged), never make the
reader, the replay or the chain raise, and every record is accounted for: replayed, or one bad_record."""

from __future__ import annotations

import copy
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.dealog import FIELD_ORDER, Record, record_from_obj
from auditor.findings import CODES
from auditor.logparse import json_loader as _loads
from auditor.logparse import parse_line as _parse_line
from auditor.replay.reference import replay_deal
from auditor.replay.run import replay_records
from auditor.rules import AF_SWITCHES, SW_SWITCHES
from conftest import REPLAY_FIXTURES

PACK = [r + s for s in "shdc" for r in "23456789TJQKA"]


def _base_records() -> list[dict]:
    out = []
    for name in ("sw_foster_2p", "sw_foster_4p", "sw_foster_5p", "sw_foster_7p", "sw_russian", "sw_countout",
                 "af_2p", "af_3p", "af_4p", "find_chain", "find_begging", "find_turnup_deck"):
        for line in (REPLAY_FIXTURES / f"{name}.jsonl").read_bytes().splitlines():
            obj = json.loads(line)
            if record_from_obj(obj, "x", 0, 1).deal is not None:
                out.append(obj)
    return out


BASES = _base_records()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(allow_nan=False, width=16) | st.text(max_size=4)
    | st.sampled_from(PACK),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
card_like = st.sampled_from(PACK) | st.text(max_size=4) | json_values


def _card_slots(rec: dict) -> list[tuple]:
    """Paths to every card string in the record."""
    slots = []
    for key in ("hands", "tricks", "discards"):
        v = rec.get(key)
        if isinstance(v, list):
            for i, part in enumerate(v):
                if isinstance(part, list):
                    slots += [(key, i, j) for j in range(len(part))]
    if isinstance(rec.get("deck"), list):
        slots += [("deck", j) for j in range(len(rec["deck"]))]
    if isinstance(rec.get("runs"), list):
        for r, run in enumerate(rec["runs"]):
            if isinstance(run, dict) and isinstance(run.get("cards"), list):
                for i, part in enumerate(run["cards"]):
                    if isinstance(part, list):
                        slots += [("runs", r, "cards", i, j) for j in range(len(part))]
    return slots


def _get(rec, path):
    for p in path[:-1]:
        rec = rec[p]
    return rec, path[-1]


@st.composite
def mutated(draw) -> dict:
    rec = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["drop", "set", "swap", "replace_card", "truncate", "cut_trick", "extra_trick",
                                     "options", "claims", "recorded", "seat", "nested_type", "runs"]))
        if kind == "drop":
            rec.pop(draw(st.sampled_from(FIELD_ORDER)), None)
        elif kind == "set":
            rec[draw(st.sampled_from(FIELD_ORDER))] = draw(json_values)
        elif kind in ("swap", "replace_card"):
            slots = _card_slots(rec)
            if not slots:
                continue
            a = draw(st.sampled_from(slots))
            pa, ka = _get(rec, a)
            if kind == "swap":
                b = draw(st.sampled_from(slots))
                pb, kb = _get(rec, b)
                pa[ka], pb[kb] = pb[kb], pa[ka]
            else:
                pa[ka] = draw(card_like)
        elif kind == "truncate" and isinstance(rec.get("tricks"), list):
            rec["tricks"] = rec["tricks"][: draw(st.integers(0, len(rec["tricks"])))]
        elif kind == "cut_trick" and isinstance(rec.get("tricks"), list) and rec["tricks"]:
            k = draw(st.integers(0, len(rec["tricks"]) - 1))
            if isinstance(rec["tricks"][k], list):
                rec["tricks"][k] = rec["tricks"][k][: draw(st.integers(0, len(rec["tricks"][k])))]
        elif kind == "extra_trick" and isinstance(rec.get("tricks"), list):
            rec["tricks"].append(draw(st.lists(st.sampled_from(PACK), max_size=9)))
        elif kind == "options":
            switches = draw(st.sampled_from([SW_SWITCHES, AF_SWITCHES]))
            name = draw(st.sampled_from(sorted(switches)))
            value = draw(st.sampled_from(switches[name]) | json_values)
            rec["options"] = {draw(st.sampled_from([name, "sw." + name, "af." + name])): value}
        elif kind == "claims":
            rec["claims"] = draw(st.lists(st.fixed_dictionaries({"revoke": st.integers(-1, 8),
                                                                 "trick": st.integers(-1, 20)}), max_size=3))
        elif kind == "recorded":
            ns = len(rec.get("sides") or rec.get("players") or [0, 0])
            ints = st.lists(st.integers(-15, 60), min_size=ns, max_size=ns)
            rec["recorded"] = draw(st.fixed_dictionaries({}, optional={"points": ints, "totals": ints,
                                                                      "winner": st.integers(-1, 8) | st.none()}))
        elif kind == "seat":
            rec[draw(st.sampled_from(["dealer", "cutter", "deal_no"]))] = draw(st.integers(-2, 9))
        elif kind == "nested_type":
            slots = _card_slots(rec)
            if slots:
                path = draw(st.sampled_from(slots))[:-1]
                parent, key = _get(rec, path)
                parent[key] = draw(json_values)
        elif kind == "runs":
            rec["beg"] = draw(st.sampled_from(["stand", "take_one", "run"]))
            rec["bunched"] = draw(st.booleans())
            if draw(st.booleans()):
                rec.pop("runs", None)
    return rec


def _check_result(res) -> None:
    d = res.deal
    for f in res.findings:
        assert f.code in CODES
        assert f.seat is None or 0 <= f.seat < d.n
        assert f.trick is None or f.trick >= 1
        assert f.source == d.source


# AUDITOR_PROPERTY_EXAMPLES=5000 for a longer hunt; the fast tier runs 200 per property
SETTINGS = settings(max_examples=int(os.environ.get("AUDITOR_PROPERTY_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(mutated())
def test_reader_and_replay_never_raise(rec):
    r = record_from_obj(rec, "m.jsonl:1", 0, 1)
    assert (r.deal is None) != (r.error is None)
    if r.deal is not None:
        res = replay_deal(r.deal)
        _check_result(res)
        if res.scored:
            assert len(res.points) == r.deal.n_sides


@SETTINGS
@given(st.lists(mutated(), min_size=1, max_size=8))
def test_every_record_is_accounted_for(recs):
    records = [record_from_obj(o, f"m.jsonl:{i}", 0, i) for i, o in enumerate(recs, 1)]
    rep = replay_records(records)
    doc = rep.to_json()
    json.dumps(doc)  # the document is JSON
    assert doc["deals"] == len(recs)
    bad = [f for f in doc["findings"] if f["code"] == "bad_record"]
    assert len(bad) + len(rep.results) == len(recs)
    assert {f["source"] for f in bad} == {r.source for r in records if r.deal is None}
    assert sum(g["deals"] for g in doc["games_summary"]) == len(rep.results)
    for g in doc["games_summary"]:
        assert g["ended_by"] in (None, "points", "revoke")


@SETTINGS
@given(st.sampled_from(BASES), st.data())
def test_damaged_lines_never_raise(rec, data):
    raw = json.dumps(rec, ensure_ascii=False).encode()
    how = data.draw(st.sampled_from(["cut", "flip", "insert"]))
    if how == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
    else:
        i = data.draw(st.integers(0, len(raw)))
        raw = raw[:i] + data.draw(st.binary(min_size=1, max_size=6)) + raw[i:]
    out = list(_parse_line(raw + b"\n", "d.jsonl", 0, 3, _loads()))
    assert len(out) <= 1
    for r in out:
        assert isinstance(r, Record) and (r.deal is None) != (r.error is None)
        if r.deal is not None:
            _check_result(replay_deal(r.deal))
