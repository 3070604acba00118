"""`marked_ten` counted over the audit's columns (`auditor.columns.AuditColumns`): `count_columns(cols)` returns
exactly what `MarkedTen.count(results)` returns when `cols = from_results(results)`, array for array.

`MarkedTen.count` (the executable spec) walks every play of every deal in Python with
`auditor.detectors.play_facts.walk`, about 0.5 ms per deal it keeps. Here the same walk is one numba loop per deal
(about 4 us) over small ints (each seat's unplayed cards, the cards played, the voids shown, the trick's winner:
uint64 bitmasks and bytes), transcribing `walk`, `play_cell`, `decision_x` and `_candidates` line for line for the
deals the detector keeps (Scotch Whist played in one set and without a revoke: the branches of `walk` for sets, All
Fours and revokes are not needed). Rows go into preallocated arrays; when a deal's worst case no longer fits, the
kernel stops, the arrays grow and it resumes at that deal, so the walk runs once.

What stays in Python or numpy: which deals are excluded and why (vectorised over the rows), the layout of each
(ruleset, players, dealer) combination (a handful per input), the ids of players, packs and games in the order the
Python builder first meets them, the points shares, and the deal key's per-string hashes (`_str_hash`, once per
distinct string).
"""

from __future__ import annotations

import numba
import numpy as np

from ..rules import trump_strength
from . import marked_ten as M
from .play_columns import beats, strength

# the reasons of `MarkedTenCounts.excluded`, in the kernel's column order
PLAY_REASONS = ("ten_own", "ten_played", "ten_public", "forced", "no_trump_choice", "scored", "no_candidate")
R_OWN, R_PLAYED, R_PUBLIC, R_FORCED, R_NO_CHOICE, R_SCORED, R_NO_CAND = range(7)

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_SUIT_MASK = np.array([((1 << 13) - 1) << (13 * s) for s in range(4)], np.uint64)
# Scotch Whist trumps from the strongest down: the Jack, then Ace, King, Queen, Ten, 9 ... 2
_TRUMP_ORDER = np.array(sorted(range(13), key=lambda r: -trump_strength("scotch_whist", r)), np.int64)
_TEN, _QUEEN, _ACE = M.TEN, M.QUEEN, M.ACE
_FNV_OFFSET = np.uint64(M._FNV_OFFSET)
_FNV_PRIME = np.uint64(M._FNV_PRIME)
_FMIX1 = np.uint64(M._FMIX1)
_FMIX2 = np.uint64(M._FMIX2)
_S33 = np.uint64(33)


@numba.njit(cache=True, inline="always")
def _bit(c):
    return _U1 << np.uint64(c)


@numba.njit(cache=True, inline="always")
def _has(m, c):
    return (m >> np.uint64(c)) & _U1 != _U0


@numba.njit(cache=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, inline="always")
def _strength(rank):
    """`trump_strength` of Scotch Whist (`play_columns.strength`, the game fixed)."""
    return strength(False, rank)


@numba.njit(cache=True, inline="always")
def _beats(a, b, trump):
    """`PlayState.beats` for Scotch Whist (`play_columns.beats`, the game fixed)."""
    return beats(False, trump, a, b)


@numba.njit(cache=True, inline="always")
def _above(a, b, trump):
    """`marked_ten._above`: card a ranks above card b of the same suit."""
    if a // 13 == trump:
        return _strength(a % 13) > _strength(b % 13)
    return a % 13 > b % 13


@numba.njit(cache=True, inline="always")
def _mix(h, w):
    return (h ^ w) * _FNV_PRIME


@numba.njit(cache=True)
def _deal_keys(rows, table, game, deal_no, n_arr, seat_player, dealer, turn_up, play_card, play_seat,
               play_trick, n_plays, table_h, game_h, player_h):
    """`marked_ten._deal_key` of every row of `rows` (the same words, the same mixing)."""
    out = np.empty(len(rows), np.uint64)
    for j in range(len(rows)):
        r = rows[j]
        h = _FNV_OFFSET
        h = _mix(h, table_h[table[r]])
        h = _mix(h, game_h[game[r]])
        h = _mix(h, np.uint64(np.int64(deal_no[r])))
        n = np.int64(n_arr[r])
        h = _mix(h, np.uint64(n))
        for s in range(n):
            h = _mix(h, player_h[seat_player[r, s]])
        h = _mix(h, np.uint64(np.int64(dealer[r])))
        h = _mix(h, np.uint64(np.int64(turn_up[r])))
        for p in range(n_plays[r]):
            w = (np.int64(play_trick[r, p]) << 16) | (np.int64(play_seat[r, p]) << 8) | np.int64(play_card[r, p])
            h = _mix(h, np.uint64(w))
        h ^= h >> _S33
        h *= _FMIX1
        h ^= h >> _S33
        h *= _FMIX2
        h ^= h >> _S33
        out[j] = h
    return out


@numba.njit(cache=True)
def _walk(start, rows, n_arr, side_of, seat_player, turn_up, shown, trump_arr, play_card, play_seat, play_trick,
          n_plays, n_tricks_arr, owner_arr, pack_arr, extra_arr, must_arr,
          p_deal, p_order, p_seat, p_cell, p_holds,
          d_deal, d_order, d_seat, d_kind, d_x, d_xctx, d_early, d_opening,
          c_dec, c_seat, c_u, c_nv, c_g, c_true,
          n_p, n_d, n_c, exc):
    """Walk the deals rows[start:] (deal index = position in `rows`), appending each target's plays, decisions and
    candidate rows at n_p / n_d / n_c (per target, updated; each output column is a tuple of one array per target).
    Returns the position of the first deal not walked: len(rows), or a deal whose worst case does not fit the arrays
    (the caller grows them and calls again). `exc[player, reason]` counts every play's reason (`PLAY_REASONS`)."""
    hold = np.zeros(8, np.uint64)
    void = np.zeros(8, np.int64)
    side = np.zeros(8, np.int64)
    tseats = np.zeros(max(play_card.shape[1], 1), np.int64)
    tcard = np.zeros(4, np.int64)
    for j in range(start, len(rows)):
        r = rows[j]
        n = np.int64(n_arr[r])
        np_ = np.int64(n_plays[r])
        # the worst case of one deal: every play a row of every target, a decision, and n candidate rows
        for t in range(4):
            if n_p[t] + np_ > len(p_deal[t]) or n_d[t] + np_ > len(d_deal[t]) or n_c[t] + np_ * n > len(c_dec[t]):
                return j
        trump = np.int64(trump_arr[r])
        tu = np.int64(turn_up[r])
        owner = np.int64(owner_arr[r])
        extra = np.int64(extra_arr[r])
        must = must_arr[r]
        n_tricks = np.int64(n_tricks_arr[r])
        tmask = _SUIT_MASK[trump]
        partnership = 0
        for s in range(n):
            side[s] = side_of[r, s]
            void[s] = 0
            hold[s] = _U0
        for s in range(n):
            for s2 in range(s + 1, n):
                if side[s] == side[s2]:
                    partnership = 1
        in_hands = _U0
        for p in range(np_):
            b = _bit(play_card[r, p])
            hold[play_seat[r, p]] |= b
            in_hands |= b
        out_public = _U0
        if shown[r] >= 0:
            out_public = _bit(shown[r])
        aside = pack_arr[r] & ~in_hands & ~out_public
        tu_bit = _U0
        if tu >= 0:
            tu_bit = _bit(tu)
        aside &= ~tu_bit
        n_aside = _popcount(aside)
        tcard[0] = trump * 13 + _TEN
        tcard[1] = trump * 13 + _QUEEN
        tcard[2] = ((trump + 1) % 4) * 13 + _TEN
        tcard[3] = trump * 13 + _ACE
        ten = tcard[0]
        played = _U0
        order = 0
        i = 0
        for k in range(n_tricks):
            i0 = i
            while i < np_ and play_trick[r, i] == k:
                i += 1
            m = i - i0
            for p in range(m):
                tseats[p] = play_seat[r, i0 + p]
            lead = -1
            win_seat = -1
            win_card = -1
            trick_mask = _U0
            stage = 0 if k == 0 else (1 if 2 * k < n_tricks else 2)
            for pos in range(m):
                s = np.int64(play_seat[r, i0 + pos])
                c = np.int64(play_card[r, i0 + pos])
                cs = c // 13
                order += 1
                two = extra >= 0 and s == extra and m == n + 1 and k == n_tricks - 1
                if not two:
                    h = hold[s]
                    # legal_mask (Scotch Whist)
                    legal = h
                    if lead >= 0 and h != _U0:
                        follow = h & _SUIT_MASK[lead]
                        if follow != _U0:
                            legal = follow
                        elif must and (h & tmask) != _U0:
                            legal = h & tmask
                    last = 1 if pos == m - 1 else 0
                    gone = played | out_public
                    # sure_for_side(s): the partner's winner no card still out can beat
                    sure = False
                    if pos > 0 and win_seat != s and side[win_seat] == side[s]:
                        sure = True
                        for q in range(pos + 1, m):
                            if side[tseats[q]] != side[s]:
                                sure = False
                        if not sure and win_card // 13 == trump:  # winner_is_sure
                            sure = True
                            outm = ~played & ~trick_mask & ~out_public & tmask
                            ws = _strength(win_card % 13)
                            for rk in range(13):
                                if _has(outm, trump * 13 + rk) and _strength(rk) > ws:
                                    sure = False
                    # the holder model's plays
                    for t in range(4):
                        tc = tcard[t]
                        if _has(gone, tc) or (owner >= 0 and tc == tu):
                            continue
                        ts = tc // 13
                        kind = -1
                        situation = 0
                        if pos == 0:
                            kind = 0
                        elif lead == ts and (h & _SUIT_MASK[ts]) != _U0:
                            kind = 1
                            if sure:
                                situation = 0
                            elif _beats(tc, win_card, trump):
                                situation = 2
                            else:
                                situation = 1
                        elif (h & _SUIT_MASK[lead]) == _U0:
                            kind = 2
                            if sure:
                                situation = 0
                            elif side[win_seat] != side[s]:
                                situation = 1
                            else:
                                situation = 2
                        if kind < 0:
                            continue
                        ctx = (((partnership * 3 + kind) * 3 + situation) * 2 + last) * 3 + stage
                        if c == tc:
                            oc = 3
                        elif cs == ts:
                            oc = 0 if _above(c, tc, trump) else 1
                        else:
                            oc = 2
                        q = n_p[t]
                        p_deal[t][q] = j
                        p_order[t][q] = order
                        p_seat[t][q] = s
                        p_cell[t][q] = ctx * 4 + oc
                        p_holds[t][q] = 1 if _has(h, tc) else 0
                        n_p[t] = q + 1
                    # the decision
                    pl = seat_player[r, s]
                    ten_own = _has(h, ten)
                    if ten_own:
                        ten_state = R_OWN
                    elif _has(played, ten):
                        ten_state = R_PLAYED
                    elif _has(out_public, ten) or (owner >= 0 and ten == tu):
                        ten_state = R_PUBLIC
                    else:
                        ten_state = -1
                    n_legal = _popcount(legal)
                    dkind = -1
                    x = 0
                    xctx = 0
                    if pos == 0:
                        if n_legal >= 2 and (legal & tmask) != _U0:
                            dkind = M.KIND_LEAD
                    elif lead == trump and (legal & tmask) != _U0 and n_legal >= 2:
                        dkind = M.KIND_FOLLOW
                    if dkind >= 0:
                        boss = -1
                        for q in range(13):
                            bc = trump * 13 + _TRUMP_ORDER[q]
                            if not _has(gone, bc):
                                boss = bc
                                break
                        boss_bit = _U0
                        if boss >= 0:
                            boss_bit = _bit(boss)
                        has_boss = (legal & boss_bit) != _U0
                        other_trump = (legal & tmask & ~boss_bit) != _U0
                        if dkind == M.KIND_LEAD:
                            plain = (legal & ~tmask) != _U0
                            # the x values of the legal cards: 1 (boss), 0 (another trump), -1 (no trump)
                            if int(has_boss) + int(other_trump) + int(plain) < 2:
                                dkind = -1
                            else:
                                x = (1 if c == boss else 0) if cs == trump else -1
                                pattern = (int(has_boss) << 2) | (int(other_trump) << 1) | int(plain)
                                xctx = (partnership * 8 + pattern) * 3 + stage
                        else:
                            if not (has_boss and other_trump):
                                dkind = -1
                            else:
                                x = 1 if c == boss else -1
                                n_opts = min(n_legal, 4)
                                pw = 1 if side[win_seat] == side[s] else 0
                                xctx = 48 + ((partnership * 5 + n_opts) * 2 + pw) * 2 + last
                    if ten_state >= 0:
                        exc[pl, ten_state] += 1
                    elif n_legal == 1:
                        exc[pl, R_FORCED] += 1
                    elif dkind < 0:
                        exc[pl, R_NO_CHOICE] += 1
                    if dkind >= 0:
                        early = 1 if 2 * k < n_tricks else 0
                        opening = 1 if (k == 0 and pos == 0) else 0
                        n_scored = 0
                        for t in range(4):
                            tc = tcard[t]
                            if t == 3 and not ten_own:
                                continue
                            if _has(gone, tc) or _has(h, tc) or (owner >= 0 and tc == tu):
                                continue  # visible to him
                            # _candidates: where tc may be, from his view
                            ts = tc // 13
                            holder = -1
                            for q in range(n):
                                if _has(hold[q], tc):
                                    holder = q
                                    break
                            dec = n_d[t]
                            base = n_c[t]
                            q = base
                            any_true = False
                            for o in range(n):
                                if o == s:
                                    continue
                                known = _U0
                                if owner == o and not _has(played, tu):
                                    known = tu_bit
                                u = _popcount(hold[o] & ~known)
                                if u == 0 or ((void[o] >> ts) & 1) != 0:
                                    continue
                                nv = _popcount(np.uint64(void[o] & ~(1 << ts)))
                                if dkind == M.KIND_LEAD:
                                    g = -1 if side[o] == side[s] else 1
                                else:
                                    g = 0
                                    for a in range(pos + 1, m):
                                        if tseats[a] == o:
                                            g = 1
                                c_dec[t][q] = dec
                                c_seat[t][q] = o
                                c_u[t][q] = u
                                c_nv[t][q] = nv
                                c_g[t][q] = g
                                c_true[t][q] = 1 if o == holder else 0
                                any_true = any_true or o == holder
                                q += 1
                            if n_aside > 0:
                                c_dec[t][q] = dec
                                c_seat[t][q] = -1
                                c_u[t][q] = n_aside
                                c_nv[t][q] = 0
                                c_g[t][q] = 0
                                c_true[t][q] = 1 if holder < 0 else 0
                                any_true = any_true or holder < 0
                                q += 1
                            if not any_true:
                                continue  # no candidate holds it: the rows written are dropped
                            n_c[t] = q
                            d_deal[t][dec] = j
                            d_order[t][dec] = order
                            d_seat[t][dec] = s
                            d_kind[t][dec] = dkind
                            d_x[t][dec] = x
                            d_xctx[t][dec] = xctx
                            d_early[t][dec] = early
                            d_opening[t][dec] = opening
                            n_d[t] = dec + 1
                            if t == 0:
                                n_scored += 1
                        if ten_state < 0:
                            exc[pl, R_SCORED if n_scored else R_NO_CAND] += 1
                # the public consequences of the play
                b = _bit(c)
                if lead >= 0 and cs != lead and not two:
                    void[s] |= 1 << lead
                    if must and cs != trump:
                        void[s] |= 1 << trump
                hold[s] &= ~b
                played |= b
                trick_mask |= b
                if win_seat < 0 or _beats(c, win_card, trump):
                    win_seat = s
                    win_card = c
                if lead < 0:
                    lead = cs
    return len(rows)


# ---------------------------------------------------------------- the driver

DEAL_REASONS = ("not_scotch_whist", "no_hands", "incomplete", "card_not_in_hand", "revoke_in_deal", "played_in_sets")
_PART_COLS = {"plays": M.P_COLS, "decisions": M.D_COLS, "cands": M.C_COLS}


def _first_seen(ids: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids >= 0 of `ids` (flattened, in order) in the order first met, and the map id -> rank in that
    order (size + 1 entries, the last -1 so that -1 maps to -1)."""
    remap = np.full(size + 1, -1, np.int64)
    seen = _first_seen_kernel(np.ascontiguousarray(ids).ravel(), remap)
    return seen, remap


@numba.njit(cache=True)
def _first_seen_kernel(flat, remap):
    seen = np.empty(len(remap), np.int64)
    k = 0
    for x in flat:
        if x >= 0 and remap[x] < 0:
            remap[x] = k
            seen[k] = x
            k += 1
    return seen[:k]


def _hashes(strings: list) -> np.ndarray:
    return np.array([M._str_hash(x) for x in strings] + [0], np.uint64)


class _Rows:
    """Growable output arrays of the kernel: per part and column, one array per target (trimmed in place at the
    end, so the rows are not copied once more)."""

    def __init__(self, caps: dict[str, int]):
        self.a = {part: {k: [np.empty(caps[part], M.COL_DTYPE.get(k, np.int8)) for _ in M.TARGETS] for k in cols}
                  for part, cols in _PART_COLS.items()}

    def grow(self, part: str, t: int, need: int) -> None:
        """Room for `need` rows of `part` for target t (half as much again at least, so that growing stays
        linear)."""
        cols = self.a[part]
        cap = len(next(iter(cols.values()))[t])
        if need <= cap:
            return
        new = max(need, cap + cap // 2 + 1024)
        for v in cols.values():
            w = np.empty(new, v[t].dtype)
            w[:cap] = v[t]
            v[t] = w

    def args(self) -> list[tuple]:
        return [tuple(self.a[part][k]) for part, cols in _PART_COLS.items() for k in cols]

    def trim(self, part: str, t: int, n: int) -> dict[str, np.ndarray]:
        out = {}
        for k, v in self.a[part].items():
            a = v[t]
            v[t] = None
            a.resize(n, refcheck=False)  # shrinks in place
            out[k] = a
        return out


def count_columns(cols) -> "M.MarkedTenCounts":
    """`MarkedTen.count(results)` over `cols = from_results(results)` (see the module docstring)."""
    from ..rules import layout

    c = M.MarkedTenCounts()
    D = len(cols)
    if D == 0:
        return M._Builder(c).finish()
    # which deals are excluded, and why: `extract_deal`'s checks in its order
    is_sw = np.array([R.game == "scotch_whist" for R in cols.rulesets], bool)[cols.rset]
    n_rev = np.bincount(cols.rev_row, minlength=D)[:D]
    reason = np.full(D, -1, np.int64)
    todo = np.ones(D, bool)
    for code, bad in enumerate((~is_sw, ~cols.has_hands, ~cols.scored | (cols.trump < 0), cols.not_in_hand,
                                n_rev > 0)):
        reason[todo & bad] = code
        todo &= ~bad
    # the layout of each (ruleset, players, dealer) of the deals still in
    combo = (cols.rset.astype(np.int64) * 16 + cols.n) * 16 + cols.dealer
    uc, inv = np.unique(combo[todo], return_inverse=True)
    lay = np.zeros((len(uc), 6), np.int64)  # n_sets, n_tricks, owner, extra seat, must trump
    pack_of = np.zeros(len(uc), np.uint64)
    for j, key in enumerate(uc.tolist()):
        R = cols.rulesets[key >> 8]
        L = layout(R, (key >> 4) & 15, key & 15)
        lay[j] = (L.n_sets, L.n_tricks, -1 if L.turnup_owner is None else L.turnup_owner,
                  -1 if L.extra_card_seat is None else L.extra_card_seat,
                  int(R.switches.get("void_rule") == "must_trump_if_able"), 0)
        pack_of[j] = np.uint64(L.pack)
    in_rows = np.flatnonzero(todo)
    sets = lay[inv, 0] > 1
    reason[in_rows[sets]] = len(DEAL_REASONS) - 1
    keep = ~sets
    rows = in_rows[keep]
    inv = inv[keep]
    per = np.bincount(reason[reason >= 0], minlength=len(DEAL_REASONS))
    c.excluded_deals = {DEAL_REASONS[k]: int(v) for k, v in enumerate(per) if v}

    # per deal: key, ids in the order the builder first meets them, points shares, source
    c.keys = _deal_keys(rows, cols.table, cols.game, cols.deal_no, cols.n, cols.seat_player, cols.dealer,
                        cols.turn_up, cols.play_card, cols.play_seat, cols.play_trick, cols.n_plays,
                        _hashes(cols.tables), _hashes(cols.game_ids), _hashes(cols.players))
    sp = cols.seat_player[rows]
    seen, remap = _first_seen(sp, len(cols.players))
    c.players = remap[sp].astype(np.int32)
    c.names = [cols.players[k] for k in seen.tolist()]
    seen, remap = _first_seen(cols.pack[rows], len(cols.packs))
    c.pack = remap[cols.pack[rows]].astype(np.int32)
    c.pack_names = [cols.packs[k] for k in seen.tolist()]
    seen, remap = _first_seen(cols.game[rows], len(cols.game_ids))
    c.game = remap[cols.game[rows]].astype(np.int32)
    c.games = [cols.game_ids[k] for k in seen.tolist()]
    c.deal_no = cols.deal_no[rows].astype(np.int64)
    pts = cols.points[rows].astype(np.float64)
    tot = pts.sum(1)
    side = cols.side_of[rows].astype(np.int64)
    mine = np.take_along_axis(pts, np.maximum(side, 0), 1)
    ok = (side >= 0) & (tot > 0)[:, None]
    share = np.zeros((len(rows), M.MAX_SEATS), np.float64)
    share[ok] = (mine / np.where(tot > 0, tot, 1.0)[:, None])[ok]
    c.share = share.astype(np.float32)
    paths = cols.paths
    c.source = [f"{paths[a]}:{b}" for a, b in zip(cols.file_index[rows].tolist(), cols.line[rows].tolist())]
    for j in np.flatnonzero(np.isin(rows, np.fromiter(cols.source_of, np.int64, len(cols.source_of)))).tolist():
        c.source[j] = cols.source_of[int(rows[j])]

    # the walk
    D_rows = len(rows)
    n_arr = cols.n
    n_tricks = np.zeros(D, np.int64)
    owner = np.full(D, -1, np.int64)
    extra = np.full(D, -1, np.int64)
    must = np.zeros(D, np.bool_)
    pack = np.zeros(D, np.uint64)
    n_tricks[rows], owner[rows], extra[rows] = lay[inv, 1], lay[inv, 2], lay[inv, 3]
    must[rows] = lay[inv, 4] == 1
    pack[rows] = pack_of[inv]
    total = int(cols.n_plays[rows].sum())
    out = _Rows({"plays": total // 2 + 4096, "decisions": total // 8 + 4096, "cands": total // 3 + 4096})
    n_p = np.zeros(4, np.int64)
    n_d = np.zeros(4, np.int64)
    n_c = np.zeros(4, np.int64)
    exc = np.zeros((len(cols.players) + 1, len(PLAY_REASONS)), np.int64)
    start = 0
    while True:
        start = _walk(start, rows, n_arr, cols.side_of, cols.seat_player, cols.turn_up, cols.shown, cols.trump,
                      cols.play_card, cols.play_seat, cols.play_trick, cols.n_plays, n_tricks, owner, pack, extra,
                      must, *out.args(), n_p, n_d, n_c, exc)
        if start >= D_rows:
            break
        np_, n = int(cols.n_plays[rows[start]]), int(n_arr[rows[start]])
        for part, used, worst in (("plays", n_p, np_), ("decisions", n_d, np_), ("cands", n_c, np_ * n)):
            for t in range(len(M.TARGETS)):
                out.grow(part, t, int(used[t]) + worst)
    used = {"plays": n_p, "decisions": n_d, "cands": n_c}
    c.targets = {t: {part: out.trim(part, ti, int(used[part][ti])) for part in _PART_COLS}
                 for ti, t in enumerate(M.TARGETS)}
    c.excluded = {cols.players[p]: {PLAY_REASONS[k]: int(v) for k, v in enumerate(exc[p]) if v}
                  for p in np.flatnonzero(exc[:-1].sum(1)).tolist()}
    return c
