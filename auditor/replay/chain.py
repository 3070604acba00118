"""Chaining deals into games: running totals, the winner at the target, count-out, revoke penalties, dealer
rotation, deal sequence, deals after the game was won, and the table's recorded points, totals and winner.

Engine-independent: it takes each deal's `DealResult` (from the reference or the batch engine) and applies the
game-level rules of outputs.md "What a finding does to the rest of the replay".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dealog import Deal
from ..findings import Finding
from .reference import SW_STEPS, DealResult
from .sheet import sheet_winner


@dataclass
class GameSummary:
    game_id: str
    deals: int = 0
    totals: list[int] | None = None
    winner: int | None = None
    ended_by: str | None = None
    loser: int | None = None

    def to_json(self) -> dict:
        return {"game_id": self.game_id, "deals": self.deals, "totals": self.totals, "winner": self.winner,
                "ended_by": self.ended_by, "loser": self.loser}


@dataclass
class DealOutcome:
    """What chaining decided for one deal: counted points, totals after it, whether it was chained."""

    chained: bool = False
    counted: list[int] | None = None
    totals_after: list[int] | None = None
    ends_game: bool = False
    findings: list[Finding] = field(default_factory=list)


def _finding(d: Deal, code: str, message: str, seat: int | None = None) -> Finding:
    return Finding(code, d.game_id, d.deal_no, None, seat, d.players[seat] if seat is not None else None, None,
                   d.source, message)


GAP_LISTED = 3  # a gap of up to this many deals names each missing number; a longer one names its ends


def gap_message(game_id: str, last: int, deal_no: int) -> str:
    """The `deal_sequence` message for the deals missing between deal `last` and deal `deal_no` (last + 1 <
    deal_no): its length does not grow with the gap (deal numbers 1 and 10**9 are one short message)."""
    gap = deal_no - last - 1
    if gap <= GAP_LISTED:
        missing = ", ".join(str(k) for k in range(last + 1, deal_no))
        return f"game {game_id!r} has no deal {missing} before deal {deal_no}"
    return f"game {game_id!r} has no deals {last + 1} to {deal_no - 1} ({gap} deals) before deal {deal_no}"


def _target(d: Deal) -> int:
    return d.ruleset.target


def _af_events(res: DealResult) -> list[tuple[int, str]]:
    if res.af_events is None:
        raise ValueError(f"{res.deal.source}: not a scored All Fours deal")
    return res.af_events


def _sw_steps(res: DealResult) -> dict[str, list[int]]:
    if res.sw_steps is None:
        raise ValueError(f"{res.deal.source}: not a scored Scotch Whist deal")
    return res.sw_steps


def count_af(res: DealResult, before: list[int] | None) -> tuple[list[int], int | None]:
    """All Fours: count the points one at a time in order; stop at the target. Returns (points, winner side)."""
    d = res.deal
    target = _target(d)
    t = list(before) if before is not None else [0] * d.n_sides
    start = list(t)
    winner = None
    for s, _label in _af_events(res):
        if s in res.af_capped_sides and t[s] + 1 > target - 1:
            continue
        t[s] += 1
        if before is not None and t[s] >= target:
            winner = s
            break
    return [a - b for a, b in zip(t, start, strict=True)], winner


def sw_countout(res: DealResult, before: list[int]) -> tuple[list[int], int | None, bool]:
    """Scotch Whist: totals after the hand, the winner, and whether the game ended (count-out of rules.md A.6)."""
    d = res.deal
    R = d.ruleset
    target = R.target
    ns = d.n_sides
    steps = _sw_steps(res)
    t = list(before)
    for i in range(ns):  # the Russian -10 comes before anything else is counted
        t[i] += steps["penalty"][i]
        if R.negative_scores == "floor_zero" and t[i] < 0:
            t[i] = 0
    after = [t[i] + sum(steps[k][i] for k in SW_STEPS[1:]) for i in range(ns)]
    reached_end = [i for i in range(ns) if after[i] >= target]
    if not reached_end:
        return after, None, False
    if len(reached_end) == 1:
        return after, reached_end[0], True
    # count out: Ten, cards, Ace, King, Queen, Jack; the first side to reach the target wins
    contenders: list[int] | None = None  # sides tied at the cards step: only they go on
    for step in SW_STEPS[1:]:
        for i in range(ns):
            t[i] += steps[step][i]
        if contenders is not None:
            # rules.md Part G: "equal: go on with A, K, Q, J" -- the first of the tied sides to score an honour
            # now leads the others and wins; a side that had not reached the target cannot win
            gainers = [i for i in contenders if steps[step][i] > 0]
            if len(gainers) == 1:
                return after, gainers[0], True
            continue
        new = [i for i in range(ns) if t[i] >= target]
        if len(new) == 1:
            return after, new[0], True
        if len(new) > 1:  # only the cards step can carry two sides past the target together
            rule = R.countout_cards_collision
            if rule == "unresolved_error":
                return after, None, True
            key = (lambda i: t[i]) if rule == "higher_running_total" else (lambda i: steps["cards"][i])
            best = max(key(i) for i in new)
            top = [i for i in new if key(i) == best]
            if len(top) == 1:
                return after, top[0], True
            contenders = top
    return after, None, True  # still equal at the end: no winner


def chain_games(results: list[DealResult]) -> tuple[list[GameSummary], dict[int, DealOutcome]]:
    """Chain every valid deal into its game. `results` in input order. Returns summaries (in order of first
    appearance) and per-deal outcomes keyed by the index in `results`."""
    by_game: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        by_game.setdefault(r.deal.game_id, []).append(i)
    summaries: list[GameSummary] = []
    outcomes: dict[int, DealOutcome] = {}
    for gid, idxs in by_game.items():
        idxs.sort(key=lambda i: (results[i].deal.deal_no, i))
        g = GameSummary(gid, deals=len(idxs))
        totals: list[int] | None = None  # the auditor's running totals
        prev_recorded: list[int] | None = None
        prev: Deal | None = None
        started = False
        over = False
        for i in idxs:
            res = results[i]
            d = res.deal
            out = DealOutcome()
            outcomes[i] = out
            rec = d.recorded or {}
            repeated = prev is not None and d.deal_no == prev.deal_no
            if repeated:
                out.findings.append(_finding(d, "deal_sequence", f"deal {d.deal_no} of game {gid!r} is logged "
                                             "twice; this record is not chained"))
            elif over:
                out.findings.append(_finding(d, "play_after_game_end", f"game {gid!r} was already over before "
                                             f"deal {d.deal_no}"))
            if repeated or over:
                _own_checks(res, out)
                continue
            # ---- sequence and dealer rotation
            if not started:
                if d.deal_no != 1:
                    out.findings.append(_finding(d, "deal_sequence", f"game {gid!r} starts at deal {d.deal_no}, "
                                                 "not 1"))
                n_sides = d.n_sides
                totals = [0] * n_sides
                started = True
            elif prev is not None:  # (a started game has a previous deal)
                step = d.deal_no - prev.deal_no
                if step > 1:  # one finding, whatever the size of the gap
                    out.findings.append(_finding(d, "deal_sequence", gap_message(gid, prev.deal_no, d.deal_no)))
                expected = (prev.dealer + step - (1 if prev.bunched else 0)) % d.n
                if d.dealer != expected:
                    out.findings.append(_finding(
                        d, "dealer_rotation", f"{d.players[d.dealer]} (seat {d.dealer}) dealt deal {d.deal_no}; "
                        f"the deal should have passed to seat {expected}", d.dealer))
            if totals is not None and len(totals) != d.n_sides:
                totals = None
            out.chained = True
            # ---- points of this deal
            before = totals
            lose_game = _lose_game_revoke(res)
            winner: int | None = None
            ends = False
            counted: list[int] | None
            if res.scored:
                if d.game == "all_fours":
                    counted, winner = count_af(res, before)
                    ends = winner is not None
                    if before is not None:
                        _af_gift_check(res, before, out)
                        totals = [a + b for a, b in zip(before, counted, strict=True)]
                else:
                    counted = res.points
                    if before is not None:
                        totals, winner, ends = sw_countout(res, before)
                out.counted = counted if (d.game == "scotch_whist" or before is not None) else None
                _score_check(res, out, out.counted)
            else:
                counted = rec.get("points")
                if d.bunched and d.game == "all_fours":
                    counted = [0] * d.n_sides
                    _score_check(res, out, counted)
                if counted is not None and before is not None:
                    totals = [a + b for a, b in zip(before, counted, strict=True)]
                elif rec.get("totals") is not None:
                    totals = list(rec["totals"])
                else:
                    totals = None
                out.counted = counted
                if totals is not None and not lose_game:
                    reached = [i for i, v in enumerate(totals) if v >= _target(d)]
                    if reached:
                        ends = True
                        winner = reached[0] if len(reached) == 1 else None
                        if winner is None and d.is_sheet:  # (issue 16) as far as the sheet tells
                            winner = sheet_winner(d, before, totals)
            # ---- the table's totals
            if rec.get("totals") is not None:
                base = prev_recorded if prev_recorded is not None else before
                if base is not None and len(base) != d.n_sides:
                    base = None  # the sides changed within the game: nothing to add to
                pts = out.counted if res.scored else counted
                if res.scored and d.game == "all_fours" and before is None and base is not None:
                    pts, _ = count_af(res, base)
                if base is not None and pts is not None:
                    if res.scored and d.game == "scotch_whist":
                        expect = sw_countout(res, base)[0]  # the Russian -10, floored where floor_zero says
                    else:
                        expect = [a + b for a, b in zip(base, pts, strict=True)]
                    if expect != rec["totals"]:
                        out.findings.append(_finding(d, "total_mismatch", f"recorded totals {rec['totals']}; "
                                                     f"previous totals {base} plus this deal's points {pts} "
                                                     f"make {expect}"))
                if totals is None:
                    totals = list(rec["totals"])  # re-anchor where the auditor's totals were unknown
                    if not ends and lose_game is None:
                        ends, winner = _reanchored_end(res, totals)
                prev_recorded = list(rec["totals"])
            else:
                prev_recorded = None
            # ---- end of the game
            if lose_game is not None:
                ends = True
                loser = res.deal.side_of[lose_game[1]]
                others = [s for s in range(d.n_sides) if s != loser]
                winner = others[0] if len(others) == 1 else None
                g.ended_by, g.loser = "revoke", loser
            elif ends:
                g.ended_by = "points"
            if ends:
                g.winner = winner
                over = True
            _winner_check(res, out, ends, winner, totals is not None or lose_game is not None)
            out.totals_after = totals
            out.ends_game = ends
            prev = d
        g.totals = totals
        summaries.append(g)
    return summaries, outcomes


def _reanchored_end(res: DealResult, totals: list[int]) -> tuple[bool, int | None]:
    """Does the deal whose recorded totals re-anchored the game (`totals`, after it) end the game, and who wins?

    It ends the game when a side's total has reached the target. One such side wins. Several: a scored deal
    decides as it would have from the totals before it that its own points imply (Scotch Whist: the count-out
    from the recorded totals less the hand's points after the Russian -10; All Fours: the first side to reach
    the target in the counting order, from the recorded totals less every point of the hand); an unscored deal
    has no winner (as the unscored deals re-anchored from their recorded totals above)."""
    d = res.deal
    target = _target(d)
    reached = [i for i, v in enumerate(totals) if v >= target]
    if not reached:
        return False, None
    if len(reached) == 1:
        return True, reached[0]
    if not res.scored:
        return True, None
    if d.game == "scotch_whist":
        st = _sw_steps(res)
        # sw_countout adds the penalty back first: t after it is the totals less the rest of the hand's points
        implied = [totals[i] - sum(st[k][i] for k in SW_STEPS) for i in range(d.n_sides)]
        return True, sw_countout(res, implied)[1]
    every, _ = count_af(res, None)
    return True, count_af(res, [a - b for a, b in zip(totals, every, strict=True)])[1]


def _lose_game_revoke(res: DealResult) -> tuple[int, int] | None:
    """The (trick, seat) of the first revoke that costs the game under `lose_game`, if any."""
    d = res.deal
    if d.game != "scotch_whist" or d.ruleset.revoke_penalty != "lose_game":
        return None
    return min(res.penalty_revokes) if res.penalty_revokes else None


def _af_gift_check(res: DealResult, before: list[int], out: DealOutcome) -> None:
    d = res.deal
    if not res.gift_sides or not d.ruleset.gift_cannot_win:
        return
    pre = [e for e in _af_events(res) if e[1] == "turned_jack"]
    t = list(before)
    for s, _ in pre:
        t[s] += 1
    for s in res.gift_sides:
        if t[s] + 1 >= d.ruleset.target:
            out.findings.append(Finding(
                "beg_irregular", d.game_id, d.deal_no, None, d.dealer, d.players[d.dealer], None, d.source,
                f"the dealer gave a point that puts side {s} out ({t[s]} + 1 >= {d.ruleset.target}); he had to "
                "run the cards"))
            return


def _score_check(res: DealResult, out: DealOutcome, counted: list[int] | None) -> None:
    d = res.deal
    rec = d.recorded or {}
    if counted is None or rec.get("points") is None:
        return
    if list(rec["points"]) != list(counted):
        out.findings.append(_finding(d, "score_mismatch", f"recorded points {rec['points']}; the replay counts "
                                     f"{counted}"))


def _winner_check(res: DealResult, out: DealOutcome, ends: bool, winner: int | None, known: bool) -> None:
    d = res.deal
    rec = d.recorded or {}
    w = rec.get("winner")
    if w is None or not known:
        return
    if not ends:
        out.findings.append(_finding(d, "winner_mismatch", f"winner {w} recorded, but the game is not over "
                                     f"after deal {d.deal_no}"))
    elif w != winner:
        out.findings.append(_finding(d, "winner_mismatch", f"winner {w} recorded; the replay gives "
                                     f"{'no winner' if winner is None else winner}"))


def _own_checks(res: DealResult, out: DealOutcome) -> None:
    """A deal replayed on its own (repeated or after the game): its points are still checked."""
    d = res.deal
    if not res.scored:
        if d.bunched and d.game == "all_fours":
            _score_check(res, out, [0] * d.n_sides)
        return
    counted = res.points if d.game == "scotch_whist" else count_af(res, None)[0]
    out.counted = counted
    _score_check(res, out, counted)
