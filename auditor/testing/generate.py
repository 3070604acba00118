"""Random legal deals and games in deal-log/1, for every game, preset and player count.

Dealing uses `auditor.dealing` (a uniformly shuffled pack dealt under the layout of the rules), play is uniform
among the legal cards of `auditor.legal` (optionally with deliberate revokes), and each record's `recorded`
points, totals and winner are what the reference replay and the game chain count, so a clean generated game
replays without a finding. Every random choice draws from the `numpy.random.Generator` passed in.

    rng = np.random.default_rng(7)
    records = random_game(rng, "scotch_whist", "foster", 4, game_id="g1", sides=[[0, 2], [1, 3]])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ..cards import CARD_STR, cards_of, mask_of, suit_of, rank_of, RJ
from ..dealing import af_run, deal, shuffled_pack
from ..dealog import FIELD_ORDER, FORMAT, validate
from ..legal import legal_mask, seats_of_trick, trick_size, trick_winner
from ..replay.chain import count_af, sw_countout
from ..replay.reference import replay_deal
from ..rules import PRESETS, Rules, layout, resolve

NAMES = ("ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jo", "kim", "lou")

# (game, preset) -> player counts
PLAYER_COUNTS = {
    ("scotch_whist", "foster"): tuple(range(2, 9)),
    ("scotch_whist", "russian"): tuple(range(2, 7)),
    ("all_fours", "foster"): (2, 3, 4),
}

# option sets worth covering besides the presets' defaults (each is valid for its game)
OPTION_SETS = {
    "scotch_whist": (
        {},
        {"void_rule": "must_trump_if_able"},
        {"odd_pack": "show_36th_dead"},
        {"odd_pack": "remove_club_six"},
        {"odd_pack": "turnup_36th_to_eldest", "extra_card_base": "nominal"},
        {"set_leader": "eldest", "two_three_player_deal_order": "packet_per_hand"},
        {"two_three_player_deal_order": "record_supplied", "deal_packet": "other"},
        {"small_table_deal": "ten_each_rest_aside"},
        {"cards_under": "negative"},
        {"countout_cards_collision": "more_cards"},
        {"countout_cards_collision": "unresolved_error"},
        {"revoke_penalty": "minus_10", "negative_scores": "floor_zero"},
        {"revoke_requires_claim": False},
    ),
    "all_fours": (
        {},
        {"target": 10, "game_tie": "nobody"},
        {"target": 11, "low_to": "trick_winner", "game_tie_multi": "nobody"},
        {"after_run": "keep_if_nine_else_discard", "jack_on_rejected_turnup": "point"},
        {"after_run": "keep_all", "gift_three_players": "eldest_only"},
        {"revoke": "one_point", "gift_cannot_win": False},
    ),
}


def sides_choices(game: str, n: int) -> list[list[list[int]] | None]:
    """Partnership layouts a log may give for `n` players (None: every player for himself)."""
    if n == 4:
        return [None, [[0, 2], [1, 3]]]
    if game == "scotch_whist" and n == 6:
        return [None, [[0, 2, 4], [1, 3, 5]], [[0, 3], [1, 4], [2, 5]]]
    if game == "scotch_whist" and n == 8:
        return [None, [[0, 2, 4, 6], [1, 3, 5, 7]], [[0, 4], [1, 5], [2, 6], [3, 7]]]
    return [None]


@dataclass
class Style:
    """How the simulated table plays and logs."""

    revoke_rate: float = 0.0  # at a play where an illegal card exists, the chance to play one
    beg: tuple[float, float, float] = (0.5, 0.2, 0.3)  # All Fours eldest: stand, beg and get one, beg and run
    with_deck: bool = True
    with_time: bool = False
    extra_field: bool = False  # add an unknown top-level field (kept by convert, ignored by the replay)
    claim_revokes: float = 0.0  # chance that the table claims a revoke that happened


def _pick(rng: np.random.Generator, mask: int) -> int:
    cards = cards_of(mask)
    return cards[int(rng.integers(len(cards)))]


def _side_of(n: int, sides) -> list[int]:
    if not sides:
        return list(range(n))
    out = [0] * n
    for i, s in enumerate(sides):
        for x in s:
            out[x] = i
    return out


def _play_tricks(rng: np.random.Generator, rules: Rules, L, sets: list[list[list[int]]], trump: int,
                 tricks_per_set: tuple[int, ...], style: Style) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Play every trick: (tricks as card codes, revokes as (trick 1-based, seat))."""
    game, n = rules.game, L.n
    must_trump = rules.switches.get("void_rule") == "must_trump_if_able"
    set_leader = rules.switches.get("set_leader", "last_trick_winner")
    n_tricks = sum(tricks_per_set)
    tricks: list[list[int]] = []
    revokes: list[tuple[int, int]] = []
    leader = L.eldest
    k = 0
    for j, cnt in enumerate(tricks_per_set):
        hold = [mask_of(sets[s][j]) for s in range(n)]
        if j > 0 and set_leader == "eldest":
            leader = L.eldest
        for _ in range(cnt):
            last = k == n_tricks - 1
            size = trick_size(L, last)
            seats = seats_of_trick(L, leader, size, last)
            trick: list[int] = []
            lead_suit = None
            for s in seats:
                two_card_turn = size == n + 1 and s == L.extra_card_seat
                ok = hold[s] if two_card_turn else legal_mask(game, hold[s], lead_suit, trump, must_trump)
                if style.revoke_rate and lead_suit is not None and not two_card_turn:
                    illegal = hold[s] & ~ok
                    if illegal and rng.random() < style.revoke_rate:
                        ok = illegal
                        revokes.append((k + 1, s))
                c = _pick(rng, ok)
                hold[s] &= ~(1 << c)
                trick.append(c)
                if lead_suit is None:
                    lead_suit = suit_of(c)
            leader = seats[trick_winner(game, trick, trump)]
            tricks.append(trick)
            k += 1
    return tricks, revokes


def random_play(rng: np.random.Generator, rules: Rules, n: int, dealer: int, sides=None,
                totals: list[int] | None = None, style: Style | None = None) -> dict:
    """The dealt and played part of one record (deck, hands, turn-up, begging, tricks, claims), as card strings."""
    style = style or Style()
    L = layout(rules, n, dealer)
    deck = shuffled_pack(L, rng)
    dealt = deal(L, deck)
    out: dict = {}
    if style.with_deck:
        out["deck"] = deck
    out["hands"] = [list(h) for h in dealt.hands]
    out["turn_up"] = dealt.turn_up
    if dealt.shown is not None:
        out["shown"] = dealt.shown
    if rules.game == "scotch_whist":
        sets = [[dealt.hands[s][a:b] for a, b in L.sets[s]] for s in range(n)]
        trump = suit_of(dealt.turn_up)
        tricks, revokes = _play_tricks(rng, rules, L, sets, trump, L.tricks_per_set, style)
    else:
        first = dealt.turn_up
        side = _side_of(n, sides)
        p = np.asarray(style.beg, dtype=float)
        beg = ("stand", "take_one", "run")[int(rng.choice(3, p=p / p.sum()))]
        if beg == "take_one" and rules.gift_cannot_win and totals is not None:
            t = list(totals)
            if rank_of(first) == RJ:
                t[side[dealer]] += 1
            partnerships = any(len(s) > 1 for s in (sides or []))
            eldest = L.eldest
            if n == 2 or partnerships or rules.gift_three_players == "eldest_only":
                gift = [side[eldest]]
            else:
                gift = [side[(eldest + i) % n] for i in range(n) if side[(eldest + i) % n] != side[dealer]]
            if any(t[g] + 1 >= rules.target for g in gift):
                beg = "run"
        if beg != "stand":
            out["beg"] = beg
        runs: list[dict] = []
        pos = dealt.next_pos
        if beg == "run":
            while True:
                cards, tu, pos = af_run(deck, pos, n, L.eldest)
                if tu is None:
                    out["bunched"] = True
                    break
                runs.append({"cards": cards, "turn_up": tu})
                if suit_of(tu) != suit_of(first):
                    break
            if runs:
                out["runs"] = runs
        if out.get("bunched"):
            return _strings(out)
        r = len(runs)
        rule = rules.after_run
        keep = r == 0 or rule == "keep_all" or (rule == "keep_if_nine_else_discard" and r == 1)
        size = 6 if (r == 0 or not keep) else 6 + 3 * r
        held = [list(dealt.hands[s]) + [c for run in runs for c in run["cards"][s]] for s in range(n)]
        if size < 6 + 3 * r:
            discards = []
            for s in range(n):
                idx = rng.choice(len(held[s]), size=len(held[s]) - size, replace=False)
                ds = [held[s][i] for i in sorted(idx)]
                discards.append(ds)
                held[s] = [c for c in held[s] if c not in ds]
            out["discards"] = discards
        trump = suit_of(runs[-1]["turn_up"] if runs else first)
        tricks, revokes = _play_tricks(rng, rules, L, [[h] for h in held], trump, (size,), style)
    out["tricks"] = tricks
    if revokes and style.claim_revokes:
        claims = [{"revoke": s, "trick": k} for k, s in revokes if rng.random() < style.claim_revokes]
        if claims:
            out["claims"] = claims
    return _strings(out)


def _strings(part: dict) -> dict:
    out = dict(part)
    for key in ("deck", "turn_up", "shown"):
        if key in out:
            v = out[key]
            out[key] = [CARD_STR[c] for c in v] if isinstance(v, list) else CARD_STR[v]
    for key in ("hands", "discards", "tricks"):
        if key in out:
            out[key] = [[CARD_STR[c] for c in h] for h in out[key]]
    if "runs" in out:
        out["runs"] = [{"cards": [[CARD_STR[c] for c in h] for h in r["cards"]], "turn_up": CARD_STR[r["turn_up"]]}
                       for r in out["runs"]]
    return out


def canonical_order(rec: dict) -> dict:
    """The record's keys in deal-log/1 order, unknown fields last."""
    out = {k: rec[k] for k in FIELD_ORDER if k in rec}
    out.update({k: v for k, v in rec.items() if k not in out})
    return out


@dataclass
class GameState:
    totals: list[int]
    over: bool = False
    winner: int | None = None
    deals: list[dict] = field(default_factory=list)


def score_record(rec: dict, totals: list[int]) -> tuple[list[int] | None, list[int], int | None, bool]:
    """What the table should record for `rec` after `totals`: (points, totals after, winner, game over), as the
    reference replay counts them."""
    d = validate(rec)
    res = replay_deal(d)
    if d.game == "all_fours" and d.bunched:
        return [0] * d.n_sides, list(totals), None, False
    if not res.scored:
        return None, list(totals), None, False
    if d.game == "scotch_whist":
        after, winner, ends = sw_countout(res, totals)
        lose = d.ruleset.revoke_penalty == "lose_game" and res.penalty_revokes
        if lose:
            loser = d.side_of[min(res.penalty_revokes)[1]]
            others = [s for s in range(d.n_sides) if s != loser]
            return res.points, after, (others[0] if len(others) == 1 else None), True
        return res.points, after, winner, ends
    counted, winner = count_af(res, totals)
    return counted, [a + b for a, b in zip(totals, counted, strict=True)], winner, winner is not None


def random_game(rng: np.random.Generator, game: str, preset: str, n: int, *, game_id: str,
                options: dict | None = None, sides=None, players: list[str] | None = None, table: str = "t1",
                first_dealer: int | None = None, style: Style | None = None, max_deals: int = 80) -> list[dict]:
    """One game of canonical deal-log/1 records, from deal 1 until a side wins (or `max_deals`)."""
    style = style or Style()
    rules = resolve(game, preset, options or {})
    players = list(players) if players is not None else list(NAMES[:n])
    ns = len(sides) if sides else n
    totals = [0] * ns
    dealer = int(rng.integers(n)) if first_dealer is None else first_dealer
    out: list[dict] = []
    for deal_no in range(1, max_deals + 1):
        rec: dict = {"format": FORMAT, "game": game, "rules": preset}
        if options:
            rec["options"] = dict(options)
        rec |= {"table": table, "game_id": game_id, "deal_no": deal_no}
        if style.with_time:
            rec["time"] = f"2026-01-01T00:{deal_no // 60 % 60:02d}:{deal_no % 60:02d}Z"
        rec["players"] = players
        if sides:
            rec["sides"] = [list(s) for s in sides]
        rec["dealer"] = dealer
        rec |= random_play(rng, rules, n, dealer, sides, totals, style)
        if style.extra_field:
            rec["room_note"] = {"seq": deal_no, "tags": ["x"]}
        rec = canonical_order(rec)
        points, after, winner, ends = score_record(rec, totals)
        recorded: dict = {}
        if points is not None:
            recorded["points"] = points
        recorded["totals"] = after
        if ends and winner is not None:
            recorded["winner"] = winner
        rec["recorded"] = recorded
        rec = canonical_order(rec)
        out.append(rec)
        totals = after
        if ends:
            break
        if not rec.get("bunched"):
            dealer = (dealer + 1) % n
    return out


def configurations(games=("scotch_whist", "all_fours")) -> Iterator[tuple[str, str, int, dict]]:
    """Every (game, preset, player count) with the default options, then every extra option set once per game
    at a player count where it matters."""
    for (game, preset), counts in PLAYER_COUNTS.items():
        if game not in games:
            continue
        for n in counts:
            yield game, preset, n, {}


def random_log(rng: np.random.Generator, n_games: int, *, game: str = "scotch_whist", preset: str = "foster",
               n: int = 4, options: dict | None = None, sides="random", table: str = "t1",
               style: Style | None = None, id_prefix: str = "g") -> list[dict]:
    """`n_games` games of one configuration, records in game order."""
    out: list[dict] = []
    choices = sides_choices(game, n)
    for g in range(n_games):
        sd = choices[int(rng.integers(len(choices)))] if sides == "random" else sides
        out += random_game(rng, game, preset, n, game_id=f"{id_prefix}{g}", options=options, sides=sd,
                           table=table, style=style)
    return out


def all_presets() -> list[tuple[str, str]]:
    return list(PRESETS)
