"""The batch replay: many deals of one rules + player count at once, trick by trick, in numpy.

Seats are handled relative to the eldest hand (relative seat o = (seat - eldest) % n), which makes the layout of
every deal of a group the same whatever its dealer. For each group the kernel checks what the reference engine
checks before play (cards in the pack, no card twice, hand sizes, the turn-up's owner, the deck, All Fours
begging and discards) and sends every deal that would get such a finding to the reference engine (`fallback`,
with a reason); the rest it plays: card in hand, revoke, trick winner, then the points of the hand. Revokes and
cards not in hand are found here, with the reference engine's messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..cards import CARD_STR, RJ
from ..findings import Finding
from ..rules import AF_PIPS, SW_HONOURS, Rules, layout
from .cols import NOCARD, Chunk, Registry

SUIT_NAME = ("spade", "heart", "diamond", "club")

# lookup tables over card codes 0..255 (255: no card)
_codes = np.arange(256)
SUIT = np.where(_codes < 52, _codes // 13, 7).astype(np.int8)
RANK = np.where(_codes < 52, _codes % 13, 0).astype(np.int8)
BIT = np.where(_codes < 52, np.left_shift(np.uint64(1), np.minimum(_codes, 63).astype(np.uint64)),
               np.uint64(0)).astype(np.uint64)
SUITMASK = np.array([((1 << 13) - 1) << (13 * s) for s in range(4)] + [0] * 4, dtype=np.uint64)
AF_PIP = np.array([AF_PIPS.get(int(r), 0) for r in RANK], np.int16)
SW_STEP_NAMES = ("penalty", "ten", "cards", "ace", "king", "queen", "jack")
_SW_HON_STEP = {8: 1, 12: 3, 11: 4, 10: 5, 9: 6}  # rank -> index in SW_STEP_NAMES

AF_LABELS = ("turned_jack", "gift", "revoke_penalty", "high", "low", "jack", "game")
FALLBACK_REASONS = ("no_play", "hand_size", "play_shape", "cards", "turn_up", "deck", "begging", "two_cards")


@dataclass
class ChunkResult:
    """What the kernel found for the column rows of one chunk (rows it did not handle: `handled` False)."""

    n: int
    S: int
    handled: np.ndarray  # bool
    reason: np.ndarray  # int8: index into FALLBACK_REASONS, -1 handled
    scored: np.ndarray  # bool
    points: np.ndarray  # int32 [n, S]
    steps: np.ndarray  # int16 [n, 7, S] (Scotch Whist)
    events: np.ndarray  # int8 [n, E] sides in counting order, -1 none (All Fours)
    elabel: np.ndarray  # int8 [n, E] index into AF_LABELS
    gift: np.ndarray  # int8 [n, 3] gift sides, -1 none
    tj: np.ndarray  # int8 turned-Jack points of the dealer's side before the gift
    penal: np.ndarray  # int16 number of revokes that carry a penalty (revoke_requires_claim = false)
    findings: list = field(default_factory=list)  # (row, trick, pos, Finding)
    revokes: dict = field(default_factory=dict)  # row -> [(trick 1-based, seat)]
    detail: dict = field(default_factory=dict)  # row -> (hands masks, trump, plays, winners) when asked


def ragged_any(rg, rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Per row, whether any value of its ragged list has `table[value]` True."""
    lens = rg.lens()[rows]
    total = int(lens.sum())
    out = np.zeros(len(rows), bool)
    if not total:
        return out
    start = np.zeros(len(rows), np.int64)
    np.cumsum(lens[:-1], out=start[1:])
    idx = np.repeat(rg.off[:-1][rows] - start, lens) + np.arange(total)
    hit = table[rg.data[idx]]
    if hit.any():
        out[np.repeat(np.arange(len(rows)), lens)[hit]] = True
    return out


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x)


def replay_chunk(ch: Chunk, reg: Registry, detail: bool = False) -> ChunkResult:
    n_rows = ch.n
    S = max(1, int(ch.rp.shape[1]))
    # sides per row can exceed the recorded width: use the largest
    col = np.flatnonzero(ch.status == 0)
    if col.size:
        combos = np.unique(ch.sides[col].astype(np.int64) * 16 + ch.nplayers[col])
        S = max([S] + [reg.n_sides(int(c // 16), int(c % 16)) for c in combos])
    out = ChunkResult(
        n=n_rows, S=S, handled=np.zeros(n_rows, bool), reason=np.full(n_rows, -1, np.int8),
        scored=np.zeros(n_rows, bool), points=np.zeros((n_rows, S), np.int32),
        steps=np.zeros((n_rows, 7, S), np.int16), events=np.full((n_rows, 16), -1, np.int8),
        elabel=np.full((n_rows, 16), -1, np.int8),
        gift=np.full((n_rows, 3), -1, np.int8), tj=np.zeros(n_rows, np.int8), penal=np.zeros(n_rows, np.int16),
    )
    if not col.size:
        return out
    key = ch.rset[col].astype(np.int64) * 16 + ch.nplayers[col]
    order = np.argsort(key, kind="stable")
    ks = key[order]
    bounds = np.flatnonzero(np.diff(ks)) + 1
    for grp in np.split(order, bounds):
        rows = col[grp]
        rs = int(ch.rset[rows[0]])
        n = int(ch.nplayers[rows[0]])
        R = reg.rulesets[rs]
        g = _Group(ch, reg, rows, R, n, out, detail)
        if R.game == "scotch_whist":
            g.run_sw()
        else:
            g.run_af()
    return out


class _Group:
    def __init__(self, ch: Chunk, reg: Registry, rows: np.ndarray, R: Rules, n: int, out: ChunkResult,
                 detail: bool):
        self.ch, self.reg, self.rows, self.R, self.n, self.out, self.detail = ch, reg, rows, R, n, out, detail
        self.L0 = layout(R, n, n - 1)  # eldest = seat 0: the relative layout

    # ------------------------------------------------------------ helpers
    def fail(self, rows: np.ndarray, reason: str) -> None:
        r = self.out.reason
        rows = rows[r[rows] < 0]
        r[rows] = FALLBACK_REASONS.index(reason)

    def side_rel(self, rows: np.ndarray, eldest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Side of each relative seat [N, n] and the number of sides [N]."""
        n = self.n
        reg = self.reg
        sides = self.ch.sides[rows]
        table = {}
        for sd in np.unique(sides).tolist():
            table[sd] = (reg.side_of_row(sd, n).astype(np.int8), reg.n_sides(sd, n))
        so = np.empty((len(rows), n), np.int8)
        ns = np.empty(len(rows), np.int8)
        for sd, (arr, k) in table.items():
            m = sides == sd
            so[m] = arr
            ns[m] = k
        idx = (eldest[:, None] + np.arange(n)) % n
        return np.take_along_axis(so, idx, 1), ns

    def gather_hands(self, rows: np.ndarray, sizes_rel: tuple[int, ...], eldest: np.ndarray, rg, lens_rg):
        """Hands [N, n, Hmax] in relative seats (NOCARD padding) for rows whose per-seat lengths are
        `sizes_rel` rotated by their eldest; also the mask of rows that have that shape."""
        n = self.n
        N = len(rows)
        ok = rg.has[rows] & (lens_rg.lens()[rows] == n)
        lens = np.zeros((N, n), np.int64)
        okr = np.flatnonzero(ok)
        lens[okr] = lens_rg.data[lens_rg.off[rows[okr]][:, None] + np.arange(n)]
        sizes_rel = np.asarray(sizes_rel, np.int64)
        rel_idx = (np.arange(n)[None, :] - eldest[:, None]) % n  # relative seat of absolute seat s
        expect_abs = sizes_rel[rel_idx]
        ok &= (lens == expect_abs).all(1)
        Hmax = int(sizes_rel.max())
        start_abs = np.zeros((N, n), np.int64)
        np.cumsum(expect_abs[:, :-1], axis=1, out=start_abs[:, 1:])
        start_abs += rg.off[rows][:, None]
        idx = start_abs[:, :, None] + np.arange(Hmax)
        valid = np.arange(Hmax)[None, None, :] < expect_abs[:, :, None]
        idx = np.where(valid & ok[:, None, None], idx, 0)
        data = rg.data if rg.data.size else np.zeros(1, np.uint8)
        cards = data[idx]
        cards[~valid] = NOCARD
        rot = (eldest[:, None] + np.arange(n)) % n
        rel = np.take_along_axis(cards, rot[:, :, None], 1)
        return rel, ok

    def gather_tricks(self, rows: np.ndarray, sizes: list[int]):
        """Tricks [N, T, P] (NOCARD padding) and the mask of rows whose tricks have exactly these sizes."""
        ch = self.ch
        T = len(sizes)
        P = max(sizes)
        N = len(rows)
        ok = ch.tricks.has[rows] & (ch.trick_lens.lens()[rows] == T)
        okr = np.flatnonzero(ok)
        if okr.size:
            tl = ch.trick_lens.data[ch.trick_lens.off[rows[okr]][:, None] + np.arange(T)]
            ok[okr] &= (tl == np.asarray(sizes)).all(1)
        flat = np.full((T, P), -1, np.int64)
        p0 = 0
        for k, sz in enumerate(sizes):
            flat[k, :sz] = np.arange(p0, p0 + sz)
            p0 += sz
        idx = ch.tricks.off[rows][:, None] + flat.reshape(-1)[None, :]
        idx = np.where((flat.reshape(-1)[None, :] >= 0) & ok[:, None], idx, 0)
        data = ch.tricks.data if ch.tricks.data.size else np.zeros(1, np.uint8)
        cards = data[idx].reshape(N, T, P)
        cards[:, flat < 0] = NOCARD
        return cards, ok

    def gather_deck(self, rows: np.ndarray, D: int):
        ch = self.ch
        has = ch.deck.has[rows]
        ok_len = ch.deck.lens()[rows] == D
        idx = ch.deck.off[rows][:, None] + np.arange(D)
        idx = np.where((has & ok_len)[:, None], idx, 0)
        data = ch.deck.data if ch.deck.data.size else np.zeros(1, np.uint8)
        return data[idx], has, ok_len

    # ------------------------------------------------------------ Scotch Whist
    def run_sw(self) -> None:
        ch, R, n, L0 = self.ch, self.R, self.n, self.L0
        rows = self.rows
        no_play = ~(ch.hands.has[rows] & ch.tricks.has[rows]) | ch.bunched[rows]
        self.fail(rows[no_play], "no_play")
        rows = rows[~no_play]
        if not rows.size:
            return
        eldest = ((ch.dealer[rows].astype(np.int64) + 1) % n)
        hands, ok = self.gather_hands(rows, L0.hand_sizes, eldest, ch.hands, ch.hand_lens)
        self.fail(rows[~ok], "hand_size")
        sizes = [n] * L0.n_tricks
        if L0.extra_card_seat is not None:
            sizes[-1] = n + 1
        tricks, okt = self.gather_tricks(rows, sizes)
        self.fail(rows[~okt], "play_shape")
        keep = ok & okt
        rows, eldest, hands, tricks = rows[keep], eldest[keep], hands[keep], tricks[keep]
        if not rows.size:
            return
        N = len(rows)
        turn_up = ch.turn_up[rows]
        shown = ch.shown[rows]
        has_shown = shown != NOCARD
        pack_bit = np.zeros(256, bool)
        pack_bit[[c for c in range(52) if (L0.pack >> c) & 1]] = True
        # cards in the pack
        bad = ~pack_bit[turn_up] | (has_shown & ~pack_bit[shown])
        hv = hands != NOCARD
        bad |= (hv & ~pack_bit[hands]).reshape(N, -1).any(1)
        bad |= (~pack_bit[tricks] & (tricks != NOCARD)).reshape(N, -1).any(1)
        deck, has_deck, deck_len_ok = self.gather_deck(rows, L0.deck_len)
        if has_deck.any():  # every deck card in the pack, whatever the deck's length
            bad |= ragged_any(ch.deck, rows, ~pack_bit)
        # duplicates among the dealt cards (hands, shown)
        bits = BIT[hands]
        hand_mask = np.bitwise_or.reduce(bits, axis=2)  # [N, n] relative
        all_mask = np.bitwise_or.reduce(hand_mask, axis=1) | np.where(has_shown, BIT[shown], np.uint64(0))
        count = hv.sum((1, 2)) + has_shown
        bad |= _popcount(all_mask) != count
        self.fail(rows[bad], "cards")
        # the turn-up in its owner's (last) set
        owner = L0.turnup_owner
        if L0.turnup_in_last_set:
            a, b = L0.sets[owner][-1]
            own = np.bitwise_or.reduce(bits[:, owner, a:b], axis=1)
        else:
            own = hand_mask[:, owner]
        tu_bad = (own & BIT[turn_up]) == 0
        self.fail(rows[tu_bad & ~bad], "turn_up")
        deck_bad = self.check_deck(deck, has_deck, deck_len_ok, hands, turn_up, shown, [])
        self.fail(rows[deck_bad & ~bad & ~tu_bad], "deck")
        keep = ~(bad | tu_bad | deck_bad)
        rows, eldest, hands, tricks, turn_up = rows[keep], eldest[keep], hands[keep], tricks[keep], turn_up[keep]
        if not rows.size:
            return
        trump = SUIT[turn_up]
        bits = BIT[hands]
        holds = [np.bitwise_or.reduce(bits[:, :, a:b], axis=2) for a, b in L0.sets[0]]
        must = R.switches.get("void_rule") == "must_trump_if_able"
        reset = R.switches.get("set_leader", "last_trick_winner") == "eldest"
        play = _Play(self, rows, eldest, tricks, sizes, L0.tricks_per_set, holds, reset, trump, False, must,
                     L0.extra_card_seat)
        play.run()
        side, ns = self.side_rel(rows, eldest)
        self.score_sw(rows, play, side, ns, trump)
        self.finish(rows, play, eldest, hands, trump)

    def check_deck(self, deck, has_deck, len_ok, hands, turn_up, shown, runs) -> np.ndarray:
        """Rows whose deck disagrees with the hands, turn-up, shown card or run cards (a deck_mismatch)."""
        L0 = self.L0
        N = len(has_deck)
        bad = has_deck & ~len_ok
        chk = has_deck & len_ok
        if not chk.any():
            return bad
        D = L0.deck_len
        dup = _popcount(np.bitwise_or.reduce(BIT[deck], axis=1)) != D
        bad |= chk & dup
        if L0.deck_checkable:
            ks = [k for k, s in enumerate(L0.deal_seat) if s is not None]
            seat = np.array([L0.deal_seat[k] for k in ks])
            slot = np.array([L0.deal_slot[k] for k in ks])
            got = hands[:, seat, slot]
            bad |= chk & (got != deck[:, ks]).any(1)
        bad |= chk & (turn_up != deck[:, L0.turnup_index])
        if L0.shown_index is not None:
            bad |= chk & (shown != NOCARD) & (shown != deck[:, L0.shown_index])
        for pos, cards_rel, tu in runs:  # All Fours runs: (deck index, [N, n, 3] relative, [N])
            n = self.n
            for o in range(n):
                bad |= chk & (cards_rel[:, o, :] != deck[:, pos + 3 * o:pos + 3 * o + 3]).any(1)
            bad |= chk & (tu != deck[:, pos + 3 * n])
        return bad

    def score_sw(self, rows, play: "_Play", side, ns, trump) -> None:
        R, L0, out = self.R, self.L0, self.out
        N = len(rows)
        S = out.S
        cards = play.cards
        wside = np.take_along_axis(side, play.winners.astype(np.int64), 1)  # [N, T]
        istr = SUIT[cards] == trump[:, None, None]
        rk = RANK[cards]
        steps = np.zeros((N, 7, S), np.int32)
        for r, st in _SW_HON_STEP.items():
            cnt = ((rk == r) & istr & (cards != NOCARD)).sum(2)  # [N, T]
            if not cnt.any():
                continue
            for sd in range(S):
                steps[:, st, sd] += SW_HONOURS[r] * (cnt * (wside == sd)).sum(1)
        sizes = np.asarray([s for s in play.sizes])
        base = np.zeros((N, S), np.int64)
        for o in range(self.n):
            base[np.arange(N), side[:, o]] += L0.cards_base[o]
        for sd in range(S):
            won = ((wside == sd) * sizes[None, :]).sum(1)
            over = won - base[:, sd]
            live = sd < ns
            val = over if R.cards_under == "negative" else np.maximum(over, 0)
            steps[:, 2, sd] = np.where(live, val, 0)
        if not R.revoke_requires_claim:
            for i, rv in play.revokes.items():
                out.penal[rows[i]] = len(rv)
                if R.revoke_penalty == "minus_10":
                    for _t, o in rv:
                        steps[i, 0, side[i, o]] -= 10
        out.steps[rows] = steps
        out.points[rows] = steps.sum(1)
        out.scored[rows] = True

    # ------------------------------------------------------------ All Fours
    def run_af(self) -> None:
        ch, R, n = self.ch, self.R, self.n
        rows = self.rows
        bunched = ch.bunched[rows]
        no_play = ~ch.hands.has[rows] | (~ch.tricks.has[rows] & ~bunched)
        self.fail(rows[no_play], "no_play")
        rows = rows[~no_play]
        if not rows.size:
            return
        w = 3 * n + 1
        rlen = ch.runs.lens()[rows]
        self.fail(rows[rlen % w != 0], "begging")
        rows = rows[rlen % w == 0]
        nruns = ch.runs.lens()[rows] // w
        for r in np.unique(nruns).tolist():
            self.run_af_runs(rows[nruns == r], int(r))

    def run_af_runs(self, rows: np.ndarray, r: int) -> None:
        ch, R, n, L0 = self.ch, self.R, self.n, self.L0
        N0 = len(rows)
        eldest = ((ch.dealer[rows].astype(np.int64) + 1) % n)
        hands, ok = self.gather_hands(rows, L0.hand_sizes, eldest, ch.hands, ch.hand_lens)
        self.fail(rows[~ok], "hand_size")
        rows, eldest, hands = rows[ok], eldest[ok], hands[ok]
        if not rows.size:
            return
        N = len(rows)
        bunched = ch.bunched[rows]
        beg = ch.beg[rows]
        turn_up = ch.turn_up[rows]
        shown = ch.shown[rows]
        has_shown = shown != NOCARD
        first_suit = SUIT[turn_up]
        w = 3 * n + 1
        # runs: [N, r, n(abs), 3] and turn-ups [N, r]
        if r:
            ridx = ch.runs.off[rows][:, None] + np.arange(r * w)
            rdata = ch.runs.data[ridx].reshape(N, r, w)
            rcards_abs = rdata[:, :, :3 * n].reshape(N, r, n, 3)
            rot = (eldest[:, None] + np.arange(n)) % n
            rcards = np.take_along_axis(rcards_abs, rot[:, None, :, None], 2)  # relative seats
            rtu = rdata[:, :, 3 * n]
        else:
            rcards = np.zeros((N, 0, n, 3), np.uint8)
            rtu = np.zeros((N, 0), np.uint8)
        # begging (rules.md B.4; outputs.md beg_irregular)
        irr = np.zeros(N, bool)
        is_run = beg == 3
        irr |= ~bunched & (is_run if r == 0 else ~is_run)
        if R.second_beg == "forbidden":
            for j in range(1, r):
                irr |= SUIT[rtu[:, j - 1]] != first_suit
        if r:
            irr |= ~bunched & (SUIT[rtu[:, r - 1]] == first_suit)
        keep_rule = R.after_run
        size = 6 if (r == 0 or keep_rule == "discard_to_six" or (keep_rule == "keep_if_nine_else_discard"
                                                                   and r >= 2)) else 6 + 3 * r
        need = 6 + 3 * r - size
        has_disc = ch.discards.has[rows]
        disc = np.zeros((N, n, max(need, 1)), np.uint8)
        if need:
            irr |= ~bunched & ~has_disc
            dok = has_disc & (ch.disc_lens.lens()[rows] == n)
            dr = np.flatnonzero(dok)
            dl = np.zeros((N, n), np.int64)
            dl[dr] = ch.disc_lens.data[ch.disc_lens.off[rows[dr]][:, None] + np.arange(n)]
            dok &= (dl == need).all(1)
            irr |= ~bunched & has_disc & ~dok
            didx = ch.discards.off[rows][:, None] + np.arange(n * need)
            didx = np.where(dok[:, None], didx, 0)
            ddata = ch.discards.data if ch.discards.data.size else np.zeros(1, np.uint8)
            dabs = ddata[didx].reshape(N, n, need)
            rot = (eldest[:, None] + np.arange(n)) % n
            disc = np.take_along_axis(dabs, rot[:, :, None], 1)
        else:
            irr |= ~bunched & has_disc  # discards without a run (or with nothing to discard)
        # cards: duplicates among hands, turn-up, shown, run cards and run turn-ups
        bad = np.zeros(N, bool)
        hbits = BIT[hands]
        hand_mask = np.bitwise_or.reduce(hbits, axis=2)
        run_mask = np.bitwise_or.reduce(BIT[rcards], axis=(1, 3)) if r else np.zeros((N, n), np.uint64)
        total = np.bitwise_or.reduce(hand_mask | run_mask, axis=1) | BIT[turn_up] | \
            np.where(has_shown, BIT[shown], np.uint64(0))
        if r:
            total |= np.bitwise_or.reduce(BIT[rtu], axis=1)
        count = 6 * n + 1 + has_shown + r * (3 * n + 1)
        bad |= _popcount(total) != count
        # discards: distinct and held (bunched deals: not judged)
        if need:
            dmask = np.bitwise_or.reduce(BIT[disc], axis=2)
            held = hand_mask | run_mask
            dwrong = ((_popcount(dmask) != need) | ((dmask & ~held) != 0)).any(1)
            irr |= ~bunched & has_disc & dwrong
        else:
            dmask = np.zeros((N, n), np.uint64)
        trick_cnt = size
        tricks, okt = (self.gather_tricks(rows, [n] * trick_cnt) if trick_cnt else (None, None))
        play_bad = ~bunched & ~okt
        deck, has_deck, deck_len_ok = self.gather_deck(rows, 52)
        runs_chk = [(6 * n + 1 + j * w, rcards[:, j], rtu[:, j]) for j in range(r)]
        deck_bad = self.check_deck(deck, has_deck, deck_len_ok, hands, turn_up, shown, runs_chk)
        self.fail(rows[bad], "cards")
        self.fail(rows[irr], "begging")
        self.fail(rows[deck_bad], "deck")
        self.fail(rows[play_bad], "play_shape")
        keep = ~(bad | irr | deck_bad | play_bad)
        # bunched deals: checked, not played, not scored
        bun = keep & bunched
        self.out.handled[rows[bun]] = True
        if self.detail:
            tsuit = SUIT[rtu[:, r - 1]] if r else first_suit
            for i in np.flatnonzero(bun):
                self.out.detail[int(rows[i])] = (self._abs_masks(hand_mask[i], int(eldest[i])), int(tsuit[i]), [],
                                                 [], 0)
        keep &= ~bunched
        if not keep.any():
            return
        sel = np.flatnonzero(keep)
        rows, eldest, hands = rows[sel], eldest[sel], hands[sel]
        tricks = tricks[sel]
        hold = (hand_mask | run_mask)[sel] & ~dmask[sel]
        last_tu = rtu[sel, r - 1] if r else turn_up[sel]
        trump = SUIT[last_tu]
        play = _Play(self, rows, eldest, tricks, [n] * size, (size,), [hold], False, trump, True, False, None)
        play.run()
        side, ns = self.side_rel(rows, eldest)
        self.score_af(rows, play, side, ns, trump, turn_up[sel], rtu[sel], first_suit[sel], beg[sel], eldest)
        self.finish(rows, play, eldest, hands, trump)

    def score_af(self, rows, play: "_Play", side, ns, trump, turn_up, rtu, first_suit, beg, eldest) -> None:
        R, n, out = self.R, self.n, self.out
        N = len(rows)
        ar = np.arange(N)
        dealer_side = side[:, n - 1]  # the dealer is relative seat n - 1
        ev = np.full((N, 16), -1, np.int8)
        lab = np.full(16, -1, np.int8)
        e = 0
        tj = np.zeros(N, np.int8)
        m = RANK[turn_up] == RJ
        ev[m, e] = dealer_side[m]
        lab[e] = 0
        tj += m
        e += 1
        for j in range(rtu.shape[1]):
            m = (RANK[rtu[:, j]] == RJ) & ((SUIT[rtu[:, j]] != first_suit) | (R.jack_on_rejected_turnup == "point"))
            ev[m, e] = dealer_side[m]
            lab[e] = 0
            tj += m
            e += 1
        # sides in order from the eldest hand
        first_seat = np.full((N, 8), 99, np.int64)
        for o in range(n - 1, -1, -1):
            first_seat[ar, side[:, o]] = o
        order = np.argsort(first_seat, axis=1, kind="stable")  # sides by first relative seat
        gift = np.full((N, 3), -1, np.int8)
        take = beg == 2
        if take.any():
            partner = self.ch.sides[rows] >= 0
            partner &= np.array([any(len(s) > 1 for s in self.reg.sides[sd]) if sd >= 0 else False
                                 for sd in self.ch.sides[rows].tolist()], bool)
            one = take & ((n == 2) | partner | (R.gift_three_players == "eldest_only"))
            gift[one, 0] = side[one, 0]
            many = take & ~one
            if many.any():
                for i in np.flatnonzero(many):
                    lst = [int(s) for s in order[i] if first_seat[i, s] < 99 and s != dealer_side[i]]
                    gift[i, :len(lst)] = lst
            for gcol in range(3):
                ev[:, e] = gift[:, gcol]
                lab[e] = 1
                e += 1
        cards = play.cards.reshape(N, -1)
        seats = play.seats.reshape(N, -1)
        T = play.cards.shape[1]
        P = play.cards.shape[2]
        trick_of = np.repeat(np.arange(T), P)
        istr = (SUIT[cards] == trump[:, None]) & (cards != NOCARD)
        rk = RANK[cards].astype(np.int16)
        any_tr = istr.any(1)
        hi = np.argmax(np.where(istr, rk, -1), axis=1)
        lo = np.argmin(np.where(istr, rk, 99), axis=1)
        hi_side = side[ar, seats[ar, hi]]
        if R.low_to == "dealt_holder":
            lo_seat = seats[ar, lo]
        else:
            lo_seat = play.winners[ar, trick_of[lo]]
        lo_side = side[ar, lo_seat]
        ev[any_tr, e] = hi_side[any_tr]
        ev[any_tr, e + 1] = lo_side[any_tr]
        jk = istr & (rk == RJ)
        has_j = jk.any(1)
        jpos = np.argmax(jk, axis=1)
        j_side = side[ar, play.winners[ar, trick_of[jpos]]]
        ev[has_j, e + 2] = j_side[has_j]
        lab[e:e + 3] = (3, 4, 5)
        e += 3
        # Game: pips per side
        wside = np.take_along_axis(side, play.winners.astype(np.int64), 1)  # [N, T]
        pip_tr = AF_PIP[play.cards].sum(2)  # [N, T]
        pips = np.full((N, 8), -1, np.int64)
        for sd in range(8):
            live = sd < ns
            pips[live, sd] = (pip_tr * (wside == sd))[live].sum(1)
        best = pips.max(1)
        top = pips == best[:, None]
        ntop = top.sum(1)
        top_first = np.where(top, first_seat, 99).argmin(1)  # the top side nearest the dealer's left
        # a tie goes to the tied side nearest the dealer's left unless game_tie (or, with more than two players,
        # game_tie_multi) says nobody
        nobody = R.game_tie == "nobody" or (n > 2 and R.game_tie_multi == "nobody")
        tie_ok = np.full(N, not nobody)
        gside = np.where((ntop == 1) | tie_ok, top_first, -1)
        ev[:, e] = gside
        lab[e] = 6
        e += 1
        # compact the events (keep their order)
        evc = np.full((N, 16), -1, np.int8)
        pos = np.cumsum(ev[:, :e] >= 0, axis=1) - 1
        rr, cc = np.nonzero(ev[:, :e] >= 0)
        evc[rr, pos[rr, cc]] = ev[rr, cc]
        evl = np.full((N, 16), -1, np.int8)
        evl[rr, pos[rr, cc]] = lab[cc]
        out.events[rows] = evc
        out.elabel[rows] = evl
        out.gift[rows] = gift
        out.tj[rows] = tj
        pts = np.zeros((N, out.S), np.int32)
        for sd in range(out.S):
            pts[:, sd] = (evc == sd).sum(1)
        out.points[rows] = pts
        out.scored[rows] = True

    # ------------------------------------------------------------ results
    def _abs_masks(self, rel_masks: np.ndarray, eldest: int) -> list[int]:
        n = self.n
        return [int(rel_masks[(s - eldest) % n]) for s in range(n)]

    def finish(self, rows, play: "_Play", eldest, hands, trump) -> None:
        out = self.out
        out.handled[rows] = True
        n = self.n
        for i, lst in play.revokes.items():
            out.revokes[int(rows[i])] = [(k, (o + int(eldest[i])) % n) for k, o in lst]  # play order
        for i, k, p, f in play.findings:
            out.findings.append((int(rows[i]), k, p, f))
        if not self.detail:
            return
        masks = np.bitwise_or.reduce(BIT[hands], axis=2)
        cards, seats, winners = play.cards, play.seats, play.winners
        for i in range(len(rows)):
            e = int(eldest[i])
            plays = []
            for k, sz in enumerate(play.sizes):
                for p in range(sz):
                    plays.append((k, (int(seats[i, k, p]) + e) % n, int(cards[i, k, p])))
            wins = [(int(x) + e) % n for x in winners[i]]
            out.detail[int(rows[i])] = (self._abs_masks(masks[i], e), int(trump[i]), plays, wins, len(play.sizes))


class _Play:
    """Trick-by-trick play of N deals: seats, card in hand, revokes, winners."""

    def __init__(self, g: _Group, rows, eldest, cards, sizes, tricks_per_set, holds, reset_leader, trump, af,
                 must_trump, extra_seat):
        self.g, self.rows, self.eldest, self.cards, self.sizes = g, rows, eldest, cards, sizes
        self.tps, self.holds, self.reset, self.trump, self.af = tricks_per_set, holds, reset_leader, trump, af
        self.must, self.extra = must_trump, extra_seat
        N, T, P = cards.shape
        self.seats = np.zeros((N, T, P), np.int8)
        self.winners = np.zeros((N, T), np.int8)
        self.revokes: dict[int, list] = {}
        self.findings: list = []

    def run(self) -> None:
        g = self.g
        n = g.n
        cards = self.cards
        N, T, P = cards.shape
        ar = np.arange(N)
        base = ar * n
        suit = SUIT[cards]
        rank = RANK[cards]
        trump = self.trump.astype(np.int8)
        strength = rank.astype(np.int16)
        if not self.af:
            strength = np.where(rank == RJ, 13, strength)
        key_trump = np.where(suit == trump[:, None, None], 32 + strength, 0)
        trump_mask = SUITMASK[trump]
        leader = np.zeros(N, np.int64)
        k = 0
        for j, cnt in enumerate(self.tps):
            hold = np.ascontiguousarray(self.holds[j]).reshape(-1).copy()
            if j > 0 and self.reset:
                leader[:] = 0
            for _ in range(cnt):
                size = self.sizes[k]
                if size == n + 1:  # the eldest plays two cards at his turn (relative seat 0)
                    q = (-leader) % n
                    p_ = np.arange(size)[None, :]
                    sk = np.where(p_ <= q[:, None], (leader[:, None] + p_) % n,
                                  np.where(p_ == q[:, None] + 1, 0, (leader[:, None] + p_ - 1) % n))
                    two = (p_ == q[:, None]) | (p_ == q[:, None] + 1)
                else:
                    sk = (leader[:, None] + np.arange(size)[None, :]) % n
                    two = None
                self.seats[:, k, :size] = sk
                lead = suit[:, k, 0]
                lead_mask = SUITMASK[lead]
                for p in range(size):
                    s = sk[:, p]
                    c = cards[:, k, p]
                    b = BIT[c]
                    fi = base + s
                    h = hold[fi]
                    inh = (h & b) != 0
                    if p > 0:
                        cs = suit[:, k, p]
                        follow = h & lead_mask
                        rv = inh & (cs != lead) & (follow != 0)
                        if self.af:
                            rv &= cs != trump
                        if two is not None:
                            rv &= ~two[:, p]
                        if rv.any():
                            self._revoke(np.flatnonzero(rv), k, p, s, c, follow, lead,
                                         "neither followed suit nor trumped" if self.af else "did not follow suit")
                        if self.must:
                            tm = h & trump_mask
                            rv2 = inh & (cs != lead) & (follow == 0) & (cs != trump) & (tm != 0)
                            if two is not None:
                                rv2 &= ~two[:, p]
                            if rv2.any():
                                self._revoke(np.flatnonzero(rv2), k, p, s, c, tm, lead,
                                             "discarded while holding a trump (must trump)")
                    hold[fi] = h & ~b
                    if not inh.all():
                        self._not_in_hand(np.flatnonzero(~inh), hold, k, p, s, c)
                key = np.where(suit[:, k, :size] == lead[:, None], 16 + rank[:, k, :size], 0)
                key = np.maximum(key, key_trump[:, k, :size])
                pos = key.argmax(1)
                w = sk[ar, pos]
                self.winners[:, k] = w
                leader = w.astype(np.int64)
                k += 1

    def who(self, i: int, o: int) -> tuple[int, str]:
        g = self.g
        seat = (o + int(self.eldest[i])) % g.n
        players = g.reg.lineups[int(g.ch.lineup[self.rows[i]])]
        return seat, f"{players[seat]} (seat {seat})"

    def _finding(self, i: int, code: str, k: int, seat: int, card: int, message: str) -> Finding:
        g = self.g
        r = int(self.rows[i])
        ch = g.ch
        players = g.reg.lineups[int(ch.lineup[r])]
        return Finding(code, g.reg.game_ids[int(ch.gid[r])], int(ch.deal_no[r]), k + 1, seat, players[seat],
                       CARD_STR[card], ch.source(r), message)

    def _revoke(self, idx, k, p, s, c, could, lead, what) -> None:
        for i in idx.tolist():
            seat, who = self.who(i, int(s[i]))
            cv = int(could[i])
            example = CARD_STR[(cv & -cv).bit_length() - 1]
            card = int(c[i])
            msg = (f"{who} played {CARD_STR[card]} to a {SUIT_NAME[int(lead[i])]} lead while holding {example}: "
                   f"{what}")
            self.findings.append((i, k, p, self._finding(i, "revoke", k, seat, card, msg)))
            self.revokes.setdefault(i, []).append((k + 1, int(s[i])))

    def _not_in_hand(self, idx, hold, k, p, s, c) -> None:
        n = self.g.n
        for i in idx.tolist():
            b = int(BIT[c[i]])
            e = int(self.eldest[i])
            holder = None
            for a in range(n):
                o = (a - e) % n
                if int(hold[i * n + o]) & b:
                    holder = a
                    hold[i * n + o] = np.uint64(int(hold[i * n + o]) & ~b)
                    break
            seat, who = self.who(i, int(s[i]))
            if holder is not None:
                players = self.g.reg.lineups[int(self.g.ch.lineup[self.rows[i]])]
                why = f"held by {players[holder]} (seat {holder})"
            else:
                why = "not held by anyone now"
            card = int(c[i])
            msg = f"{who} played {CARD_STR[card]} in trick {k + 1}, a card {why}"
            self.findings.append((i, k, p, self._finding(i, "card_not_in_hand", k, seat, card, msg)))
