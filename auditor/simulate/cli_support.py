"""Turning the `auditor simulate` command line into a `SeasonSpec` (kept here so the CLI stays thin)."""

from __future__ import annotations

from ..errors import UsageError
from .spec import CHEAT_KINDS, CheaterSpec, SeasonSpec, TableSpec, club_season_spec, partnerships, player_names

PRESETS = ("club-season",)


def _value(text: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        return text.strip()


def parse_options(items: list[str]) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise UsageError(f"--option must be NAME=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        out[k.strip()] = _value(v)
    return out


def parse_cheat(text: str) -> CheaterSpec:
    parts = text.split(":")
    if len(parts) < 3:
        raise UsageError(f"--cheat must be KIND:PLAYER:Q[:PARTNER or MODE], got {text!r}")
    kind, player, q = parts[0].strip(), parts[1].strip(), parts[2].strip()
    if kind not in CHEAT_KINDS:
        raise UsageError(f"--cheat {text!r}: unknown kind {kind!r} ({', '.join(CHEAT_KINDS)})")
    try:
        qv = float(q)
    except ValueError:
        raise UsageError(f"--cheat {text!r}: strength {q!r} is not a number") from None
    extra = parts[3].strip() if len(parts) > 3 else None
    if kind in ("colluder", "cutter_stacker"):
        return CheaterSpec(player, kind, qv, partner=extra)
    if kind == "bad_shuffler":
        return CheaterSpec(player, kind, qv, mode=extra or "weak")
    if kind == "marked_ten":
        return CheaterSpec(player, kind, qv, mode=extra or None)
    if extra:
        raise UsageError(f"--cheat {text!r}: {kind} takes no fourth part")
    return CheaterSpec(player, kind, qv)


def build_spec(*, preset, deals, game, rules, options, players, tables, club, sides, deck, time, pack, recorded,
               human_shuffle, cheats, decisions) -> SeasonSpec:
    flags = {k: v for k, v in (("deck", deck), ("time", time), ("recorded", recorded)) if v is not None}
    if preset is not None:
        if preset not in PRESETS:
            raise UsageError(f"unknown preset {preset!r} ({', '.join(PRESETS)})")
        spec = club_season_spec(deals if deals is not None else 20000, packs=pack if pack is not None else True,
                                log_decisions=decisions, **flags)
        if cheats:
            spec.cheaters = [parse_cheat(c) for c in cheats]
        spec.check()
        return spec
    if players < 2:
        raise UsageError(f"--players must be at least 2, got {players}")
    if tables < 1:
        raise UsageError(f"--tables must be at least 1, got {tables}")
    shape = sides
    if shape == "auto":
        shape = "pairs" if players == 4 else "none"
    side_list = partnerships(players, None if shape == "none" else shape)
    two = ("red", "blue") if pack else ()
    opts = parse_options(options)
    tabs = [TableSpec(f"t{i + 1}", players, game=game, rules=rules, options=opts, sides=side_list, packs=two,
                      human_shuffle=human_shuffle) for i in range(tables)]
    members = player_names(club) if club else player_names(players * tables)
    spec = SeasonSpec(tables=tabs, n_deals=deals if deals is not None else 1000, players=members,
                      cheaters=[parse_cheat(c) for c in cheats], log_decisions=decisions, **flags)
    spec.check()
    return spec
