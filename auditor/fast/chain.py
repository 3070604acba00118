"""The game chain over arrays: `auditor.replay.chain.chain_games` for many games at once.

Handles the games whose every deal was scored by the replay (or is a thrown-in All Fours deal), with no revoke
penalty and one number of sides: running totals are then cumulative sums in deal order, the game ends at the
first deal where a side reaches the target, and the count-out (Scotch Whist) or the counting stop (All Fours)
runs only on that deal. Every other game goes through `chain_games` itself (`complex_games`). The findings and
their messages are those of `chain.py`; the differential tests hold the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..findings import Finding
from ..replay.chain import gap_message

SW_STEP_IDX = {"ten": 1, "cards": 2, "ace": 3, "king": 4, "queen": 5, "jack": 6}
COLLISION = ("higher_running_total", "more_cards", "unresolved_error")


@dataclass
class DealArrays:
    """Per valid deal, in input order (index = the deal's position among valid records)."""

    gid: np.ndarray  # int64
    deal_no: np.ndarray  # int64
    dealer: np.ndarray  # int64
    n: np.ndarray  # int64 players
    ns: np.ndarray  # int64 sides
    game: np.ndarray  # uint8 (0 Scotch Whist, 1 All Fours)
    target: np.ndarray  # int64
    collision: np.ndarray  # int8 index of COLLISION
    gift_cannot_win: np.ndarray  # bool
    floor0: np.ndarray  # bool: Scotch Whist negative_scores = floor_zero (the table's totals floored at zero)
    bunched: np.ndarray  # bool
    scored: np.ndarray  # bool
    simple: np.ndarray  # bool: the deal can be chained here
    points: np.ndarray  # int64 [N, S] (All Fours: every event, before any stop)
    steps: np.ndarray  # int64 [N, 7, S]
    events: np.ndarray  # int8 [N, E]
    gift: np.ndarray  # int8 [N, 3]
    tj: np.ndarray  # int64 turned-Jack points before the gift (to the dealer's side)
    dealer_side: np.ndarray  # int64
    rp: np.ndarray  # int64 [N, S]
    rp_has: np.ndarray
    rt: np.ndarray
    rt_has: np.ndarray
    rw: np.ndarray  # int64, -1 none


@dataclass
class ChainOut:
    game_gid: np.ndarray  # gid of each simple game
    game_deals: np.ndarray
    game_totals: np.ndarray  # [G, S]
    game_ns: np.ndarray
    game_winner: np.ndarray  # -1 none
    game_ended: np.ndarray  # bool
    findings: list  # (deal index, Finding) in the chain's order per deal
    complex_gids: np.ndarray  # gids left to chain_games


def _lst(row: np.ndarray, ns: int) -> list[int]:
    return [int(x) for x in row[:ns]]


def chain_arrays(A: DealArrays, info) -> ChainOut:
    """`info(i)` -> (game_id, source, players) of deal i, for findings."""
    N = len(A.gid)
    S = A.points.shape[1]
    if N and A.gid.max() < 2 ** 31 and A.deal_no.max() < 2 ** 32:  # one stable sort on a combined key
        order = np.argsort((A.gid << 32) | A.deal_no, kind="stable")
    else:
        order = np.lexsort((np.arange(N), A.deal_no, A.gid))
    g_sorted = A.gid[order]
    start = np.ones(N, bool)
    start[1:] = g_sorted[1:] != g_sorted[:-1]
    seg = np.cumsum(start) - 1  # game segment of each sorted position
    n_games = int(seg[-1]) + 1 if N else 0
    seg_first = np.flatnonzero(start)
    # games that must go through chain_games
    bad = ~A.simple[order]
    bad_game = np.zeros(n_games, bool)
    np.logical_or.at(bad_game, seg, bad)
    for arr in (A.ns, A.game):
        v = arr[order]
        diff = np.zeros(N, bool)
        diff[1:] = (v[1:] != v[:-1]) & ~start[1:]
        np.logical_or.at(bad_game, seg, diff)
    complex_gids = g_sorted[seg_first[bad_game]]
    keep = ~bad_game[seg]
    o_all = order[keep]  # sorted positions of simple games
    del order, g_sorted, start, seg, keep
    findings: list = []
    if len(o_all) == 0:
        z = np.zeros(0, np.int64)
        return ChainOut(z, z, np.zeros((0, S), np.int64), z, z, np.zeros(0, bool), findings, complex_gids)
    # in slices of whole games, so that the temporaries stay small
    g_all = A.gid[o_all]
    cuts = [0]
    step = SLICE
    while cuts[-1] + step < len(o_all):
        c = cuts[-1] + step
        while c < len(o_all) and g_all[c] == g_all[c - 1]:
            c += 1
        cuts.append(c)
    cuts.append(len(o_all))
    del g_all
    parts = [_chain_slice(A, o_all[a:b], info, findings) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]
    cat = [np.concatenate([p[i] for p in parts]) for i in range(6)]
    return ChainOut(cat[0], cat[1], cat[2], cat[3], cat[4], cat[5], findings, complex_gids)


SLICE = 262144  # deals per slice of the chain


def _add_finding(findings: list, i: int, gid: str, d_no: int, players: list[str], src: str, code: str, msg: str,
                 seat: int | None = None) -> None:
    """One game finding of deal i (no trick, no card)."""
    findings.append((i, Finding(code, gid, d_no, None, seat, players[seat] if seat is not None else None, None, src,
                                msg)))


def _chain_slice(A: DealArrays, o: np.ndarray, info, findings: list):
    """Chain the simple games whose deals are at `o` (sorted by game, deal number, input order)."""
    S = A.points.shape[1]
    M = len(o)
    gs = A.gid[o]
    st = np.ones(M, bool)
    st[1:] = gs[1:] != gs[:-1]
    sg = np.cumsum(st) - 1
    G = int(sg[-1]) + 1
    first = np.flatnonzero(st)
    dn = A.deal_no[o]
    dup = np.zeros(M, bool)
    dup[1:] = ~st[1:] & (dn[1:] == dn[:-1])
    cand = ~dup
    game = A.game[o]
    target = A.target[o]
    ns = A.ns[o]
    pts = np.where(A.scored[o][:, None], A.points[o].astype(np.int64), 0)
    contrib = np.where(cand[:, None], pts, 0)
    cum = np.cumsum(contrib, axis=0)
    base = cum[first] - contrib[first]
    after = cum - base[sg]
    before = after - contrib
    live = np.arange(S)[None, :] < ns[:, None]
    reach = cand & ((after >= target[:, None]) & live).any(1)
    # the ending deal of each game: its first reaching candidate
    pos = np.arange(M)
    big = M + 1
    e_pos = np.full(G, big)
    np.minimum.at(e_pos, sg[reach], pos[reach])
    has_end = e_pos < big
    e_of = e_pos[sg]
    after_end = pos > e_of
    chained = cand & ~after_end
    e_dn = np.where(has_end, dn[np.minimum(e_pos, M - 1)], -1)[sg]
    repeated = (dup & ~after_end) | (after_end & (dn == e_dn))
    over = after_end & (dn != e_dn)
    # ---- the ending deals: winner and counted points
    ends = pos == e_of
    counted = pts.copy()
    winner_at = np.full(M, -1, np.int64)
    E = np.flatnonzero(ends)
    if E.size:
        sw = E[game[E] == 0]
        af = E[game[E] == 1]
        if sw.size:
            reached = (after[sw] >= target[sw][:, None]) & live[sw]
            nr = reached.sum(1)
            winner_at[sw] = np.where(nr == 1, reached.argmax(1), -1)
            multi = sw[nr > 1]  # two sides or more past the target: the count-out decides
            if multi.size:
                winner_at[multi] = _sw_countout(before[multi], A.steps[o[multi]].astype(np.int64), ns[multi],
                                                target[multi], A.collision[o[multi]])
        if af.size:
            af_pts, af_win = _af_count(before[af], A.events[o[af]], target[af])
            counted[af] = af_pts
            winner_at[af] = af_win
    totals_after = before + counted  # for chained deals (Scotch Whist at its end: every point)
    # ---- findings per deal, in the chain's order
    flag_seq_start = st & (dn != 1)
    prev_c = np.full(M, -1, np.int64)  # previous chained deal of the same game
    cidx = np.flatnonzero(chained)
    if cidx.size:
        pc = np.full(len(cidx), -1, np.int64)
        pc[1:] = cidx[:-1]
        same = np.zeros(len(cidx), bool)
        same[1:] = sg[cidx[1:]] == sg[cidx[:-1]]
        prev_c[cidx] = np.where(same, pc, -1)
    has_prev = chained & (prev_c >= 0)
    pcs = np.maximum(prev_c, 0)
    step = dn - dn[pcs]
    flag_gap = has_prev & (step > 1)
    dealer = A.dealer[o]
    nn = A.n[o]
    exp_dealer = (dealer[pcs] + step - A.bunched[o][pcs]) % nn
    flag_rot = has_prev & (dealer != exp_dealer)
    rp, rp_has = A.rp[o].astype(np.int64), A.rp_has[o]
    rt, rt_has = A.rt[o].astype(np.int64), A.rt_has[o]
    rw = A.rw[o]
    bunched = A.bunched[o]
    scored = A.scored[o]
    cnt_pts = np.where(scored[:, None], counted, 0)
    score_cmp = (scored | (bunched & (game == 1))) & rp_has
    flag_score = score_cmp & ((rp != cnt_pts) & live).any(1)
    # totals: base = the previous chained deal's recorded totals, else the computed totals before
    prev_rt = has_prev & rt_has[pcs]
    tbase = np.where(prev_rt[:, None], rt[pcs], before)
    floor = A.floor0[o] & scored & (game == 0)
    expect = np.where(floor[:, None], np.maximum(tbase, 0), tbase) + cnt_pts  # chain.sw_countout floors
    flag_total = chained & rt_has & ((expect != rt) & live).any(1)
    flag_win = chained & (rw >= 0) & (~ends | (rw != winner_at))
    # All Fours gift: a point that puts a side out
    gift = A.gift[o]
    flag_gift = np.zeros(M, bool)
    gcand = chained & (game == 1) & scored & (gift[:, 0] >= 0) & A.gift_cannot_win[o]
    gift_side = np.full(M, -1, np.int64)
    if gcand.any():
        gi = np.flatnonzero(gcand)
        t = before[gi].copy()
        ds = A.dealer_side[o[gi]]
        t[np.arange(len(gi)), ds] += A.tj[o[gi]]
        for c in range(3):
            gs_c = gift[gi, c].astype(np.int64)
            ok = (gs_c >= 0) & (gift_side[gi] < 0)
            hit = ok & (t[np.arange(len(gi)), np.maximum(gs_c, 0)] + 1 >= target[gi])
            gift_side[gi[hit]] = gs_c[hit]
        flag_gift[gi] = gift_side[gi] >= 0
    own_score = (repeated | over) & rp_has & (scored | (bunched & (game == 1)))
    flag_own = own_score & ((rp != np.where(scored[:, None], pts, 0)) & live).any(1)
    any_flag = flag_seq_start | flag_gap | flag_rot | flag_score | flag_total | flag_win | flag_gift | repeated | \
        over | flag_own
    for j in np.flatnonzero(any_flag).tolist():
        i = int(o[j])
        gid, src, players = info(i)
        d_no = int(dn[j])
        k = int(ns[j])
        add = partial(_add_finding, findings, i, gid, d_no, players, src)

        if repeated[j] or over[j]:
            if repeated[j]:
                add("deal_sequence", f"deal {d_no} of game {gid!r} is logged twice; this record is not chained")
            else:
                add("play_after_game_end", f"game {gid!r} was already over before deal {d_no}")
            if flag_own[j]:
                add("score_mismatch", f"recorded points {_lst(rp[j], k)}; the replay counts "
                                      f"{_lst(np.where(scored[j], pts[j], 0), k)}")
            continue
        if flag_seq_start[j]:
            add("deal_sequence", f"game {gid!r} starts at deal {d_no}, not 1")
        if flag_gap[j]:
            add("deal_sequence", gap_message(gid, int(dn[prev_c[j]]), d_no))  # one finding, whatever the gap
        if flag_rot[j]:
            s = int(dealer[j])
            add("dealer_rotation", f"{players[s]} (seat {s}) dealt deal {d_no}; the deal should have passed to "
                                   f"seat {int(exp_dealer[j])}", s)
        if flag_gift[j]:
            s = int(gift_side[j])
            t0 = int(before[j, s]) + (int(A.tj[i]) if s == int(A.dealer_side[i]) else 0)
            dl = int(dealer[j])
            findings.append((i, Finding(
                "beg_irregular", gid, d_no, None, dl, players[dl], None, src,
                f"the dealer gave a point that puts side {s} out ({t0} + 1 >= {int(target[j])}); he had to "
                "run the cards")))
        if flag_score[j]:
            add("score_mismatch", f"recorded points {_lst(rp[j], k)}; the replay counts {_lst(cnt_pts[j], k)}")
        if flag_total[j]:
            add("total_mismatch", f"recorded totals {_lst(rt[j], k)}; previous totals {_lst(tbase[j], k)} plus "
                                  f"this deal's points {_lst(cnt_pts[j], k)} make {_lst(expect[j], k)}")
        if flag_win[j]:
            w = int(rw[j])
            if not ends[j]:
                add("winner_mismatch", f"winner {w} recorded, but the game is not over after deal {d_no}")
            else:
                wa = int(winner_at[j])
                add("winner_mismatch", f"winner {w} recorded; the replay gives "
                                       f"{'no winner' if wa < 0 else wa}")
    # ---- game summaries
    last_chained = np.full(G, -1, np.int64)
    np.maximum.at(last_chained, sg[chained], pos[chained])
    g_totals = totals_after[last_chained]
    g_deals = np.bincount(sg, minlength=G)
    g_winner = np.where(has_end, winner_at[np.minimum(e_pos, M - 1)], -1)
    return gs[first], g_deals, g_totals, ns[first], g_winner, has_end


def _sw_countout(before, steps, ns, target, collision) -> np.ndarray:
    """The winner of each Scotch Whist deal that ends a game (-1: none), as `chain.sw_countout` decides."""
    M, S = before.shape
    live = np.arange(S)[None, :] < ns[:, None]
    tg = target[:, None]
    after = before + steps[:, 1:].sum(1)
    reached = (after >= tg) & live
    winner = np.full(M, -1, np.int64)
    done = np.zeros(M, bool)
    one = reached.sum(1) == 1
    winner[one] = reached[one].argmax(1)
    done |= one
    t = before.copy()
    cont = np.zeros((M, S), bool)
    has_cont = np.zeros(M, bool)
    for stp in range(1, 7):
        t = t + steps[:, stp]
        rc = ~done & has_cont
        if rc.any():
            gain = cont & (steps[:, stp] > 0)
            g1 = rc & (gain.sum(1) == 1)
            winner[g1] = gain[g1].argmax(1)
            done |= g1
        rn = ~done & ~has_cont
        new = (t >= tg) & live
        cnt = new.sum(1)
        o1 = rn & (cnt == 1)
        winner[o1] = new[o1].argmax(1)
        done |= o1
        many = rn & (cnt > 1)
        if many.any():
            unres = many & (collision == 2)
            done |= unres
            m2 = many & (collision != 2)
            key = np.where((collision == 0)[:, None], t, steps[:, 2])
            keyed = np.where(new, key, np.iinfo(np.int64).min)
            best = keyed.max(1)
            top = new & (key == best[:, None])
            t1 = m2 & (top.sum(1) == 1)
            winner[t1] = top[t1].argmax(1)
            done |= t1
            tc = m2 & ~t1
            cont[tc] = top[tc]
            has_cont |= tc
    return winner


def _af_count(before, events, target) -> tuple[np.ndarray, np.ndarray]:
    """All Fours: count the events one at a time, stop when a side reaches the target."""
    M, S = before.shape
    t = before.copy()
    ar = np.arange(M)
    stop = np.zeros(M, bool)
    winner = np.full(M, -1, np.int64)
    for e in range(events.shape[1]):
        s = events[:, e].astype(np.int64)
        act = (s >= 0) & ~stop
        if not act.any():
            continue
        si = np.maximum(s, 0)
        t[ar[act], si[act]] += 1
        hit = act & (t[ar, si] >= target)
        winner[hit] = s[hit]
        stop |= hit
    return t - before, winner
