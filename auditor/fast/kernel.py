"""The batch replay: many deals of one rules + player count at once, trick by trick, in numpy.

Seats are handled relative to the eldest hand (relative seat o = (seat - eldest) % n), which makes the layout of
every deal of a group the same whatever its dealer. For each group the kernel checks what the reference engine
checks before play (cards in the pack, no card twice, hand sizes, the turn-up's owner, the deck, All Fours
begging and discards) and sends every deal that would get such a finding to the reference engine (`fallback`,
with a reason); the rest it plays: card in hand, revoke, trick winner, then the points of the hand. Revokes are
found here, with the reference engine's messages; a deal where a card played is not in its player's hand goes to
the reference engine too (reason "not_in_hand"), so every finding about it is the reference engine's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..cards import CARD_STR, RJ
from ..findings import Finding
from ..rules import AF_PIPS, SW_HONOURS, Rules, layout, trump_strength
from .cols import NOCARD, Chunk, Registry, uniq

SUIT_NAME = ("spade", "heart", "diamond", "club")

# lookup tables over card codes 0..255 (255: no card)
_codes = np.arange(256)
SUIT = np.where(_codes < 52, _codes // 13, 7).astype(np.int8)
RANK = np.where(_codes < 52, _codes % 13, 0).astype(np.int8)
BIT = np.where(_codes < 52, np.left_shift(np.uint64(1), np.minimum(_codes, 63).astype(np.uint64)),
               np.uint64(0)).astype(np.uint64)
STRENGTH_SW = np.array([trump_strength("scotch_whist", int(r)) for r in RANK], np.int8)  # J of trumps > A
SUITBIT = np.where(_codes < 52, np.left_shift(1, SUIT.clip(0, 7)), 0).astype(np.uint8)
HONOUR_BIT = np.zeros(256, np.uint8)  # bit of the honour (Ten, Ace, King, Queen, Jack) a card would be in trumps
for _c in range(52):
    _r = _c % 13
    if _r in (8, 12, 11, 10, 9):
        HONOUR_BIT[_c] = 1 << (8, 12, 11, 10, 9).index(_r)
AF_PIP = np.array([AF_PIPS.get(int(r), 0) for r in RANK], np.int16)
SW_STEP_NAMES = ("penalty", "ten", "cards", "ace", "king", "queen", "jack")
_SW_HON_STEP = {8: 1, 12: 3, 11: 4, 10: 5, 9: 6}  # rank -> index in SW_STEP_NAMES

AF_LABELS = ("turned_jack", "gift", "revoke_penalty", "high", "low", "jack", "game")
FALLBACK_REASONS = ("no_play", "hand_size", "play_shape", "cards", "turn_up", "deck", "begging", "two_cards",
                    "not_in_hand", "unsupported_rule", "claims")

# The switch values the kernel replays, per game (rules.md Part C; `auditor.rules.SWITCHES` lists every value the
# rules know). A deal whose rules have a switch or a value not listed here goes to the reference engine (fallback
# reason "unsupported_rule"), never replayed wrongly. To add a value: make the kernel handle it, hold it to the
# reference engine in tests/test_batch_support.py, then list it here.
KERNEL_SUPPORTS: dict[str, dict[str, tuple[object, ...]]] = {
    "scotch_whist": {
        "odd_pack": ("remove_spade_six", "show_36th_dead", "remove_club_six", "turnup_36th_to_eldest"),
        "extra_card_play": ("two_cards_in_last_trick", "unspecified"),
        "extra_card_base": ("cards_received", "nominal"),
        "small_table_deal": ("sets_of_six", "ten_each_rest_aside"),
        "two_three_player_deal_order": ("round_robin_by_hand", "packet_per_hand", "record_supplied"),
        "set_leader": ("last_trick_winner", "eldest"),
        "trump_card_pickup": ("dealer_first_trick", "with_last_hand", "with_second_hand"),
        "deal_packet": ("one_at_a_time", "other"),
        "partnership_4": ("pairs_opposite", "none"),
        "partnership_6": ("none", "two_sides_of_three_alternate", "three_pairs_opposite"),
        "partnership_8": ("none", "two_sides_of_four_alternate", "four_pairs"),
        "void_rule": ("trump_or_discard", "must_trump_if_able"),
        "revoke_penalty": ("lose_game", "minus_10"),
        "revoke_requires_claim": (True, False),
        "revoke_stakes_payer": ("side", "individual"),
        "cards_under": ("zero", "negative"),
        "countout_cards_collision": ("higher_running_total", "more_cards", "unresolved_error"),
        "target": (41,),
        "negative_scores": ("allowed", "floor_zero"),
    },
    "all_fours": {
        "target": (7, 10, 11),
        "game_tie": ("elder_hand", "nobody"),
        "game_tie_multi": ("nearest_dealers_left", "nobody"),
        "low_to": ("dealt_holder", "trick_winner"),
        "after_run": ("discard_to_six", "keep_if_nine_else_discard", "keep_all"),
        "pack_exhausted": ("bunch_same_dealer", "other"),
        "jack_on_rejected_turnup": ("no_point", "point"),
        "gift_three_players": ("both_adversaries", "eldest_only"),
        "gift_cannot_win": (True, False),
        "second_beg": ("forbidden", "by_agreement"),
        "bunch_by_agreement_2p": ("allowed", "forbidden"),
        "revoke": ("foster_graduated", "one_point"),
        "turnup_jack_void_on_misdeal": (True,),
        "gift_partnership": ("one_point_to_side",),
    },
}


def unsupported_switches(R: Rules) -> list[tuple[str, object]]:
    """The switches of `R` whose value the kernel does not replay (`KERNEL_SUPPORTS`), as (name, value).
    Values compare as `Rules.with_options` checks them: same type and equal (True is not 1)."""
    known = KERNEL_SUPPORTS.get(R.game)
    if known is None:
        return [("game", R.game)]
    out: list[tuple[str, object]] = []
    for name, value in R.switches.items():
        if not any(type(value) is type(a) and value == a for a in known.get(name, ())):
            out.append((name, value))
    return out


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
    penal: np.ndarray  # int16 number of revokes that carry a penalty (claimed, or revoke_requires_claim = false)
    findings: list = field(default_factory=list)  # (row, trick, pos, Finding)
    penalties: dict = field(default_factory=dict)  # row with penal > 0 -> its penalty revokes, sorted (trick, seat)
    revokes: dict = field(default_factory=dict)  # row -> [(trick 1-based, seat)]
    detail: dict = field(default_factory=dict)  # row -> (hands masks, trump, plays, winners) when asked
    cols: list = field(default_factory=list)  # detail="cols": per group (rows, eldest, masks, trump, cards, ...)


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


def _block(rg, rows: np.ndarray, L: int, ok: np.ndarray) -> np.ndarray:
    """[N, L] uint8: the first L values of each row where `ok` (whose length is L); a view of the ragged data when
    the rows lie back to back, else a gather."""
    N = len(rows)
    data = rg.data if rg.data.size else np.zeros(1, np.uint8)
    if N and ok.all() and rows[-1] - rows[0] == N - 1:
        a = int(rg.off[rows[0]])
        if int(rg.off[rows[-1] + 1]) - a == L * N:
            return data[a:a + L * N].reshape(N, L)
    idx = rg.off[rows][:, None] + np.arange(L)
    return data[np.where(ok[:, None], idx, 0)]


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x)


def replay_chunk(ch: Chunk, reg: Registry, detail: bool | str = False) -> ChunkResult:
    """`detail`: True keeps a (masks, trump, plays, winners) tuple per handled row (`replay_batch`); "cols" keeps
    the same per group as arrays (`ChunkResult.cols`, for the audit)."""
    n_rows = ch.n
    S = max(1, int(ch.rp.shape[1]))
    # sides per row can exceed the recorded width: use the largest
    col = np.flatnonzero(ch.status == 0)
    if col.size:
        combos = uniq(ch.sides[col].astype(np.int64) * 16 + ch.nplayers[col])
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
    if key.min() == key.max():
        groups = [np.arange(len(col))]
    else:
        order = np.argsort(key, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(key[order])) + 1)
    for grp in groups:
        rows = col[grp]
        rs = int(ch.rset[rows[0]])
        n = int(ch.nplayers[rows[0]])
        R = reg.rulesets[rs]
        if unsupported_switches(R):
            out.reason[rows] = FALLBACK_REASONS.index("unsupported_rule")
            continue
        g = _Group(ch, reg, rows, R, n, out, detail)
        if R.game == "scotch_whist":
            g.run_sw()
        else:
            g.run_af()
    return out


class _Group:
    """One rules + player count. Arrays keep the deals on the last axis (contiguous per seat, slot, trick)."""

    def __init__(self, ch: Chunk, reg: Registry, rows: np.ndarray, R: Rules, n: int, out: ChunkResult,
                 detail: bool | str):
        self.ch, self.reg, self.rows, self.R, self.n, self.out, self.detail = ch, reg, rows, R, n, out, detail
        self.L0 = layout(R, n, n - 1)  # eldest = seat 0: the relative layout
        self.pack = np.uint64(self.L0.pack)
        # the deck is dealt out whole and compared card by card: a deck that matches holds the hands' cards
        self.deck_whole = self.L0.deck_checkable and all(x is not None for x in self.L0.deal_seat)

    # ------------------------------------------------------------ helpers
    def fail(self, rows: np.ndarray, reason: str) -> None:
        r = self.out.reason
        rows = rows[r[rows] < 0]
        r[rows] = FALLBACK_REASONS.index(reason)

    def side_rel(self, rows: np.ndarray, eldest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Side of each relative seat [n, N] and the number of sides [N]."""
        n = self.n
        reg = self.reg
        sides = self.ch.sides[rows]
        so = np.empty((n, len(rows)), np.int8)
        ns = np.empty(len(rows), np.int8)
        for sd in uniq(sides).tolist():
            m = sides == sd
            so[:, m] = reg.side_of_row(sd, n).astype(np.int8)[:, None]
            ns[m] = reg.n_sides(sd, n)
        rot = (eldest[None, :] + np.arange(n)[:, None]) % n
        return np.take_along_axis(so, rot, 0), ns

    def gather_hands(self, rows: np.ndarray, sizes_rel: tuple[int, ...], eldest: np.ndarray, rg, lens_rg):
        """Hands [n, Hmax, N] in relative seats, in the order received (NOCARD padding), for rows whose per-seat
        lengths are `sizes_rel` rotated by their eldest; and the mask of the rows that have that shape."""
        n = self.n
        N = len(rows)
        ok = rg.has[rows] & (lens_rg.lens()[rows] == n)
        lens = np.zeros((N, n), np.int64)
        okr = np.flatnonzero(ok)
        lens[okr] = lens_rg.data[lens_rg.off[rows[okr]][:, None] + np.arange(n)]
        sz = np.asarray(sizes_rel, np.int64)
        rel_of_abs = (np.arange(n)[None, :] - eldest[:, None]) % n
        expect_abs = sz[rel_of_abs]
        ok &= (lens == expect_abs).all(1)
        Hmax = int(sz.max())
        if (sz == Hmax).all():  # every seat the same size: one block, turned to relative seats
            absh = _block(rg, rows, n * Hmax, ok).reshape(N, n, Hmax)
            rot = (eldest[:, None] + np.arange(n)[None, :]) % n
            rel = np.take_along_axis(absh, rot[:, :, None], 1)
            return np.ascontiguousarray(rel.transpose(1, 2, 0)), ok
        start_abs = np.zeros((N, n), np.int64)
        np.cumsum(expect_abs[:, :-1], axis=1, out=start_abs[:, 1:])
        start_abs += rg.off[rows][:, None]
        rot = (eldest[:, None] + np.arange(n)[None, :]) % n
        start_rel = np.take_along_axis(start_abs, rot, 1).T  # [n, N]
        valid = np.arange(Hmax)[None, :] < sz[:, None]  # [n, Hmax]
        idx = start_rel[:, None, :] + np.arange(Hmax)[None, :, None]
        idx = np.where(valid[:, :, None] & ok[None, None, :], idx, 0)
        data = rg.data if rg.data.size else np.zeros(1, np.uint8)
        cards = data[idx]
        cards[~valid] = NOCARD
        return cards, ok

    def gather_tricks(self, rows: np.ndarray, sizes: list[int]):
        """Tricks [T, P, N] (NOCARD padding) and the mask of rows whose tricks have exactly these sizes."""
        ch = self.ch
        T = len(sizes)
        P = max(sizes) if sizes else 1
        N = len(rows)
        ok = ch.tricks.has[rows] & (ch.trick_lens.lens()[rows] == T)
        okr = np.flatnonzero(ok)
        if okr.size and T:
            tl = ch.trick_lens.data[ch.trick_lens.off[rows[okr]][:, None] + np.arange(T)]
            ok[okr] &= (tl == np.asarray(sizes)).all(1)
        if T and all(sz == P for sz in sizes):
            blk = _block(ch.tricks, rows, T * P, ok).reshape(N, T, P)
            return np.ascontiguousarray(blk.transpose(1, 2, 0)), ok
        flat = np.full((T, P), -1, np.int64)
        p0 = 0
        for k, sz in enumerate(sizes):
            flat[k, :sz] = np.arange(p0, p0 + sz)
            p0 += sz
        idx = flat.reshape(-1)[:, None] + ch.tricks.off[rows][None, :]
        idx = np.where((flat.reshape(-1)[:, None] >= 0) & ok[None, :], idx, 0)
        data = ch.tricks.data if ch.tricks.data.size else np.zeros(1, np.uint8)
        cards = data[idx].reshape(T, P, N)
        cards[flat < 0] = NOCARD
        return cards, ok

    def gather_deck(self, rows: np.ndarray, D: int):
        ch = self.ch
        has = ch.deck.has[rows]
        ok_len = ch.deck.lens()[rows] == D
        return np.ascontiguousarray(_block(ch.deck, rows, D, has & ok_len).T), has, ok_len

    def deck_outside(self, rows, deck, has_deck, len_ok) -> np.ndarray:
        """Rows whose deck holds a card outside the pack (a deck of any length)."""
        bad = np.zeros(len(rows), bool)
        full = has_deck & len_ok
        if full.any():
            dor = np.bitwise_or.reduce(BIT[deck], axis=0)
            bad |= full & ((dor & ~self.pack) != 0)
        odd = has_deck & ~len_ok
        if odd.any():
            pack_bit = np.zeros(256, bool)
            pack_bit[[c for c in range(52) if (self.L0.pack >> c) & 1]] = True
            bad[odd] = ragged_any(self.ch.deck, rows[odd], ~pack_bit)
        return bad

    def check_deck(self, deck, has_deck, len_ok, hands, turn_up, shown, runs) -> np.ndarray:
        """Rows whose deck disagrees with the hands, turn-up, shown card or run cards (a deck_mismatch)."""
        L0 = self.L0
        bad = has_deck & ~len_ok
        chk = has_deck & len_ok
        if not chk.any():
            return bad
        D = L0.deck_len
        if not self.deck_whole:
            dup = np.bitwise_count(np.bitwise_or.reduce(BIT[deck], axis=0)) != D
            bad |= chk & dup
        if L0.deck_checkable:
            ks = [k for k, s in enumerate(L0.deal_seat) if s is not None]
            seat = np.array([L0.deal_seat[k] for k in ks])
            slot = np.array([L0.deal_slot[k] for k in ks])
            got = hands[seat, slot, :]
            bad |= chk & (got != deck[ks]).any(0)
        bad |= chk & (turn_up != deck[L0.turnup_index])
        if L0.shown_index is not None:
            bad |= chk & (shown != NOCARD) & (shown != deck[L0.shown_index])
        n = self.n
        for pos, cards_rel, tu in runs:  # All Fours runs: (deck index, [n, 3, N] relative, [N])
            for o in range(n):
                bad |= chk & (cards_rel[o] != deck[pos + 3 * o:pos + 3 * o + 3]).any(0)
            bad |= chk & (tu != deck[pos + 3 * n])
        return bad

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
        if not keep.all():
            rows, eldest, hands, tricks = rows[keep], eldest[keep], hands[:, :, keep], tricks[:, :, keep]
        if not rows.size:
            return
        turn_up = ch.turn_up[rows]
        shown = ch.shown[rows]
        has_shown = shown != NOCARD
        pack = self.pack
        # cards in the pack, no card twice among the dealt cards (hands, shown)
        bits = BIT[hands]
        set_masks = [np.bitwise_or.reduce(bits[:, a:b, :], axis=1) for a, b in L0.sets[0]]  # each [n, N]
        hand_mask = set_masks[0].copy()
        for m in set_masks[1:]:
            hand_mask |= m
        shown_bit = np.where(has_shown, BIT[shown], np.uint64(0))
        all_mask = np.bitwise_or.reduce(hand_mask, axis=0) | shown_bit
        count = sum(L0.hand_sizes) + has_shown
        bad = np.bitwise_count(all_mask) != count
        bad |= (all_mask & ~pack) != 0
        bad |= (BIT[turn_up] & pack) == 0
        # (cards of the tricks outside the pack: only possible where a card is not in hand; judged in the play)
        deck, has_deck, deck_len_ok = self.gather_deck(rows, L0.deck_len)
        if has_deck.any() and not self.deck_whole:
            bad |= self.deck_outside(rows, deck, has_deck, deck_len_ok)
        self.fail(rows[bad], "cards")
        # the turn-up in its owner's (last) set
        owner = L0.turnup_owner
        own = set_masks[-1][owner] if L0.turnup_in_last_set else hand_mask[owner]
        tu_bad = (own & BIT[turn_up]) == 0
        self.fail(rows[tu_bad & ~bad], "turn_up")
        deck_bad = self.check_deck(deck, has_deck, deck_len_ok, hands, turn_up, shown, []) \
            if has_deck.any() else np.zeros(len(rows), bool)
        self.fail(rows[deck_bad & ~bad & ~tu_bad], "deck")
        keep = ~(bad | tu_bad | deck_bad)
        if not keep.all():
            rows, eldest, hands, tricks, turn_up = rows[keep], eldest[keep], hands[:, :, keep], \
                tricks[:, :, keep], turn_up[keep]
            set_masks = [m[:, keep] for m in set_masks]
        if not rows.size:
            return
        trump = SUIT[turn_up]
        must = R.switches.get("void_rule") == "must_trump_if_able"
        reset = R.switches.get("set_leader", "last_trick_winner") == "eldest"
        play = play_tricks(self, rows, eldest, tricks, sizes, L0.tricks_per_set, set_masks, reset, trump, False,
                           must, L0.extra_card_seat, pack)
        side, ns = self.side_rel(rows, eldest)
        self.score_sw(rows, play, side, ns, trump, eldest)
        self.finish(rows, play, eldest, hands, trump)

    def sw_penalties(self, rows, play: "PlayOut", eldest) -> dict[int, list[tuple[int, int]]]:
        """The revokes that carry a penalty, per local deal index (relative seats), as `reference._claims` of a
        complete play decides them: each claimed revoke the play found, and every revoke found when a revoke
        needs no claim. A deal with a claim the play does not confirm (a `claim_mismatch`) goes to the reference
        engine (`PlayOut.drop`, reason "claims"), which words that finding."""
        n = self.n
        out: dict[int, list[tuple[int, int]]] = {}
        if not self.R.revoke_requires_claim:
            out = {i: sorted(rv) for i, rv in play.revokes.items()}
        claims = self.ch.claims
        if not claims:
            return out
        local = np.flatnonzero(np.isin(rows, np.fromiter(claims, np.int64, len(claims))))
        mismatch = []
        for i in local.tolist():
            e = int(eldest[i])
            found = set(play.revokes.get(i, ()))
            want = {(k, (s - e) % n) for k, s in claims[int(rows[i])]}
            if not want <= found:
                mismatch.append(i)
            elif want:
                out[i] = sorted(set(out.get(i, ())) | want)
        if mismatch:
            play.drop_deals(np.array(mismatch, np.int64), FALLBACK_REASONS.index("claims"))
            for i in mismatch:
                out.pop(i, None)
        return out

    def score_sw(self, rows, play: "PlayOut", side, ns, trump, eldest) -> None:
        R, L0, out = self.R, self.L0, self.out
        N = len(rows)
        S = out.S
        cards = play.cards  # [T, P, N]
        wside = np.take_along_axis(side, play.winners.astype(np.int64), 0)  # [T, N]
        istr = SUIT[cards] == trump[None, None, :]
        # honours: which of Ten, Ace, King, Queen, Jack of trumps each trick holds, as bits; each to its side
        hb = np.zeros(wside.shape, np.uint8)
        for p in range(cards.shape[1]):
            hb |= HONOUR_BIT[cards[:, p]] * istr[:, p]
        steps = np.zeros((7, S, N), np.int32)
        for sd in range(S):
            shb = np.bitwise_or.reduce(hb * (wside == sd), axis=0)
            for b, r in enumerate((8, 12, 11, 10, 9)):
                steps[_SW_HON_STEP[r], sd] = SW_HONOURS[r] * ((shb >> b) & 1)
        sizes = np.asarray(play.sizes)[:, None]
        base = np.zeros((S, N), np.int64)
        for o in range(self.n):
            base[side[o].astype(np.int64), np.arange(N)] += L0.cards_base[o]
        for sd in range(S):
            won = ((wside == sd) * sizes).sum(0)
            over = won - base[sd]
            val = over if R.cards_under == "negative" else np.maximum(over, 0)
            steps[2, sd] = np.where(sd < ns, val, 0)
        n = self.n
        for i, rv in self.sw_penalties(rows, play, eldest).items():
            out.penal[rows[i]] = len(rv)
            out.penalties[int(rows[i])] = sorted((k, (o + int(eldest[i])) % n) for k, o in rv)
            if R.revoke_penalty == "minus_10":
                for _t, o in rv:
                    steps[0, side[o, i], i] -= 10
        out.steps[rows] = steps.transpose(2, 0, 1)
        out.points[rows] = steps.sum(0).T
        out.scored[rows] = True

    # ------------------------------------------------------------ All Fours
    def run_af(self) -> None:
        ch, n = self.ch, self.n
        rows = self.rows
        if ch.claims:  # a claimed revoke changes the All Fours count (rules.md Part G): the reference engine's
            claimed = np.isin(rows, np.fromiter(ch.claims, np.int64, len(ch.claims)))
            self.fail(rows[claimed], "claims")
            rows = rows[~claimed]
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
        for r in uniq(nruns).tolist():
            self.run_af_runs(rows[nruns == r], int(r))

    def run_af_runs(self, rows: np.ndarray, r: int) -> None:
        ch, R, n, L0 = self.ch, self.R, self.n, self.L0
        eldest = ((ch.dealer[rows].astype(np.int64) + 1) % n)
        hands, ok = self.gather_hands(rows, L0.hand_sizes, eldest, ch.hands, ch.hand_lens)
        self.fail(rows[~ok], "hand_size")
        rows, eldest, hands = rows[ok], eldest[ok], hands[:, :, ok]
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
        abs_of_rel = (eldest[None, :] + np.arange(n)[:, None]) % n  # [n, N]
        if r:
            roff = ch.runs.off[rows]
            # [r, n, 3, N] relative seats; run turn-ups [r, N]
            idx = (roff[None, None, None, :] + (np.arange(r) * w)[:, None, None, None]
                   + 3 * abs_of_rel[None, :, None, :] + np.arange(3)[None, None, :, None])
            rcards = ch.runs.data[idx]
            rtu = ch.runs.data[roff[None, :] + (np.arange(r) * w + 3 * n)[:, None]]
        else:
            rcards = np.zeros((0, n, 3, N), np.uint8)
            rtu = np.zeros((0, N), np.uint8)
        # begging (rules.md B.4; outputs.md beg_irregular)
        irr = np.zeros(N, bool)
        is_run = beg == 3
        irr |= ~bunched & (is_run if r == 0 else ~is_run)
        if R.second_beg == "forbidden":
            for j in range(1, r):
                irr |= SUIT[rtu[j - 1]] != first_suit
        if r:
            irr |= ~bunched & (SUIT[rtu[r - 1]] == first_suit)
        keep_rule = R.after_run
        size = 6 if (r == 0 or keep_rule == "discard_to_six" or (keep_rule == "keep_if_nine_else_discard"
                                                                   and r >= 2)) else 6 + 3 * r
        need = 6 + 3 * r - size
        has_disc = ch.discards.has[rows]
        hand_mask = np.bitwise_or.reduce(BIT[hands], axis=1)  # [n, N]
        run_mask = np.bitwise_or.reduce(BIT[rcards], axis=(0, 2)) if r else np.zeros((n, N), np.uint64)
        dmask = np.zeros((n, N), np.uint64)
        if need:
            irr |= ~bunched & ~has_disc
            dok = has_disc & (ch.disc_lens.lens()[rows] == n)
            dr = np.flatnonzero(dok)
            dl = np.zeros((N, n), np.int64)
            dl[dr] = ch.disc_lens.data[ch.disc_lens.off[rows[dr]][:, None] + np.arange(n)]
            dok &= (dl == need).all(1)
            irr |= ~bunched & has_disc & ~dok
            doff = ch.discards.off[rows]
            didx = doff[None, None, :] + need * abs_of_rel[:, None, :] + np.arange(need)[None, :, None]
            didx = np.where(dok[None, None, :], didx, 0)
            ddata = ch.discards.data if ch.discards.data.size else np.zeros(1, np.uint8)
            disc = ddata[didx]  # [n, need, N]
            dmask = np.bitwise_or.reduce(BIT[disc], axis=1)
            held = hand_mask | run_mask
            dwrong = ((np.bitwise_count(dmask) != need) | ((dmask & ~held) != 0)).any(0)
            irr |= ~bunched & has_disc & dwrong
        else:
            irr |= ~bunched & has_disc  # discards without a run (or with nothing to discard)
        # cards: no card twice among hands, turn-up, shown, run cards and run turn-ups
        total = np.bitwise_or.reduce(hand_mask | run_mask, axis=0) | BIT[turn_up] | \
            np.where(has_shown, BIT[shown], np.uint64(0))
        if r:
            total |= np.bitwise_or.reduce(BIT[rtu], axis=0)
        count = 6 * n + 1 + has_shown + r * (3 * n + 1)
        bad = np.bitwise_count(total) != count
        tricks, okt = self.gather_tricks(rows, [n] * size)
        play_bad = ~bunched & ~okt
        deck, has_deck, deck_len_ok = self.gather_deck(rows, 52)
        runs_chk = [(6 * n + 1 + j * w, rcards[j], rtu[j]) for j in range(r)]
        deck_bad = self.check_deck(deck, has_deck, deck_len_ok, hands, turn_up, shown, runs_chk) \
            if has_deck.any() else np.zeros(N, bool)
        self.fail(rows[bad], "cards")
        self.fail(rows[irr], "begging")
        self.fail(rows[deck_bad], "deck")
        self.fail(rows[play_bad], "play_shape")
        keep = ~(bad | irr | deck_bad | play_bad)
        # bunched deals: checked, not played, not scored
        bun = keep & bunched
        self.out.handled[rows[bun]] = True
        if self.detail == "cols" and bun.any():
            tsuit = SUIT[rtu[r - 1]] if r else first_suit
            b = np.flatnonzero(bun)
            nb = len(b)
            self.out.cols.append((rows[b], eldest[b], hand_mask[:, b], tsuit[b], np.zeros((0, n, nb), np.uint8),
                                  np.zeros((0, n, nb), np.int8), np.zeros((0, nb), np.int8), [], n))
        elif self.detail:
            tsuit = SUIT[rtu[r - 1]] if r else first_suit
            for i in np.flatnonzero(bun):
                self.out.detail[int(rows[i])] = (self._abs_masks(hand_mask[:, i], int(eldest[i])), int(tsuit[i]),
                                                 [], [], 0)
        keep &= ~bunched
        if not keep.any():
            return
        sel = np.flatnonzero(keep)
        rows, eldest, hands = rows[sel], eldest[sel], hands[:, :, sel]
        tricks = tricks[:, :, sel]
        hold = ((hand_mask | run_mask) & ~dmask)[:, sel]
        last_tu = rtu[r - 1, sel] if r else turn_up[sel]
        trump = SUIT[last_tu]
        play = play_tricks(self, rows, eldest, tricks, [n] * size, (size,), [hold], False, trump, True, False, None)
        side, ns = self.side_rel(rows, eldest)
        self.score_af(rows, play, side, ns, trump, turn_up[sel], rtu[:, sel], first_suit[sel], beg[sel])
        self.finish(rows, play, eldest, hands, trump)

    def score_af(self, rows, play: "PlayOut", side, ns, trump, turn_up, rtu, first_suit, beg) -> None:
        R, n, out = self.R, self.n, self.out
        N = len(rows)
        ar = np.arange(N)
        dealer_side = side[n - 1]  # the dealer is relative seat n - 1
        ev = np.full((16, N), -1, np.int8)
        lab = np.full(16, -1, np.int8)
        e = 0
        tj = np.zeros(N, np.int8)
        m = RANK[turn_up] == RJ
        ev[e, m] = dealer_side[m]
        lab[e] = 0
        tj += m
        e += 1
        for j in range(rtu.shape[0]):
            m = (RANK[rtu[j]] == RJ) & ((SUIT[rtu[j]] != first_suit) | (R.jack_on_rejected_turnup == "point"))
            ev[e, m] = dealer_side[m]
            lab[e] = 0
            tj += m
            e += 1
        # sides in order from the eldest hand
        first_seat = np.full((8, N), 99, np.int64)
        for o in range(n - 1, -1, -1):
            first_seat[side[o].astype(np.int64), ar] = o
        gift = np.full((3, N), -1, np.int8)
        take = beg == 2
        if take.any():
            sds = self.ch.sides[rows]
            partner = np.array([sd >= 0 and any(len(x) > 1 for x in self.reg.sides[sd]) for sd in sds.tolist()],
                               bool)
            one = take & ((n == 2) | partner | (R.gift_three_players == "eldest_only"))
            gift[0, one] = side[0, one]
            many = take & ~one
            if many.any():
                order = np.argsort(first_seat, axis=0, kind="stable")  # sides by first relative seat
                for i in np.flatnonzero(many):
                    lst = [int(x) for x in order[:, i] if first_seat[x, i] < 99 and x != dealer_side[i]]
                    gift[:len(lst), i] = lst
            for gcol in range(3):
                ev[e] = gift[gcol]
                lab[e] = 1
                e += 1
        T, P = play.cards.shape[:2]
        cards = play.cards.reshape(T * P, N)
        seats = play.seats.reshape(T * P, N).astype(np.int64)
        trick_of = np.repeat(np.arange(T), P)
        istr = (SUIT[cards] == trump[None, :]) & (cards != NOCARD)
        rk = RANK[cards].astype(np.int16)
        any_tr = istr.any(0)
        hi = np.argmax(np.where(istr, rk, -1), axis=0)
        lo = np.argmin(np.where(istr, rk, 99), axis=0)
        hi_side = side[seats[hi, ar], ar]
        if R.low_to == "dealt_holder":
            lo_seat = seats[lo, ar]
        else:
            lo_seat = play.winners[trick_of[lo], ar].astype(np.int64)
        lo_side = side[lo_seat, ar]
        ev[e, any_tr] = hi_side[any_tr]
        ev[e + 1, any_tr] = lo_side[any_tr]
        jk = istr & (rk == RJ)
        has_j = jk.any(0)
        jpos = np.argmax(jk, axis=0)
        j_side = side[play.winners[trick_of[jpos], ar].astype(np.int64), ar]
        ev[e + 2, has_j] = j_side[has_j]
        lab[e:e + 3] = (3, 4, 5)
        e += 3
        # Game: pips per side
        wside = np.take_along_axis(side, play.winners.astype(np.int64), 0)  # [T, N]
        pip_tr = AF_PIP[play.cards].sum(1)  # [T, N]
        pips = np.full((8, N), -1, np.int64)
        for sd in range(8):
            live = sd < ns
            pips[sd, live] = (pip_tr * (wside == sd)).sum(0)[live]
        best = pips.max(0)
        top = pips == best[None, :]
        ntop = top.sum(0)
        top_first = np.where(top, first_seat, 99).argmin(0)  # the top side nearest the dealer's left
        # a tie goes to the tied side nearest the dealer's left unless game_tie (or, with more than two players,
        # game_tie_multi) says nobody
        nobody = R.game_tie == "nobody" or (n > 2 and R.game_tie_multi == "nobody")
        gside = np.where((ntop == 1) | (not nobody), top_first, -1)
        ev[e] = gside
        lab[e] = 6
        e += 1
        # compact the events (keep their order)
        evt = ev[:e].T  # [N, e]
        present = evt >= 0
        pos = np.cumsum(present, axis=1) - 1
        rr, cc = np.nonzero(present)
        evc = np.full((N, 16), -1, np.int8)
        evc[rr, pos[rr, cc]] = evt[rr, cc]
        evl = np.full((N, 16), -1, np.int8)
        evl[rr, pos[rr, cc]] = lab[cc]
        out.events[rows] = evc
        out.elabel[rows] = evl
        out.gift[rows] = gift.T
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

    def finish(self, rows, play: "PlayOut", eldest, hands, trump) -> None:
        """The results of the played deals; the deals the play left to the reference engine (`play.drop`) are
        handed back as unhandled, with their reason, and keep nothing of the kernel's."""
        out = self.out
        out.handled[rows] = True
        n = self.n
        if play.drop.size:
            gone = rows[play.drop]
            out.handled[gone] = False
            out.scored[gone] = False
            out.points[gone] = 0
            out.steps[gone] = 0
            out.events[gone] = -1
            out.elabel[gone] = -1
            out.gift[gone] = -1
            out.tj[gone] = 0
            out.penal[gone] = 0
            for r in gone.tolist():
                out.penalties.pop(int(r), None)
            for reason in np.unique(play.drop_reason).tolist():
                self.fail(gone[play.drop_reason == reason], FALLBACK_REASONS[reason])
        # a dropped deal has no finding and no revoke of the kernel: the play judges only deals played as held
        for i, lst in play.revokes.items():
            out.revokes[int(rows[i])] = [(k, (o + int(eldest[i])) % n) for k, o in lst]  # play order
        for i, k, p, f in play.findings:
            out.findings.append((int(rows[i]), k, p, f))
        if not self.detail:
            return
        masks = np.bitwise_or.reduce(BIT[hands], axis=1)  # [n, N]
        if self.detail == "cols":  # the audit's columns (auditor.fast.audit_cols): arrays, no object per deal
            out.cols.append((np.asarray(rows), np.asarray(eldest), masks, np.asarray(trump), play.cards, play.seats,
                             play.winners, list(play.sizes), n))
            return
        cards, seats, winners = play.cards, play.seats, play.winners
        kept = np.ones(len(rows), bool)
        kept[play.drop] = False
        for i in np.flatnonzero(kept).tolist():
            e = int(eldest[i])
            plays = []
            for k, sz in enumerate(play.sizes):
                for p in range(sz):
                    plays.append((k, (int(seats[k, p, i]) + e) % n, int(cards[k, p, i])))
            wins = [(int(x) + e) % n for x in winners[:, i]]
            out.detail[int(rows[i])] = (self._abs_masks(masks[:, i], e), int(trump[i]), plays, wins, len(play.sizes))


@dataclass
class PlayOut:
    """The play of N deals: cards [T, P, N], relative seats [T, P, N], winners [T, N], the kernel's findings
    (local deal index, trick, position, Finding) and revokes per deal (trick 1-based, relative seat).

    `drop`: the deals left to the reference engine (local indices), each with its reason (`drop_reason`, an index
    into FALLBACK_REASONS): a card played that is not in the player's hand, or is played twice ("not_in_hand"),
    or a card of the tricks outside the pack ("cards")."""

    cards: np.ndarray
    sizes: list
    seats: np.ndarray
    winners: np.ndarray
    findings: list
    revokes: dict
    drop: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    drop_reason: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    def drop_deals(self, idx: np.ndarray, reason: int) -> None:
        """Leave more deals to the reference engine after the play: they keep no finding and no revoke here."""
        gone = set(idx.tolist())
        self.drop = np.concatenate([self.drop, idx.astype(np.int64)])
        self.drop_reason = np.concatenate([self.drop_reason, np.full(len(idx), reason, np.int8)])
        self.findings = [f for f in self.findings if f[0] not in gone]
        for i in gone:
            self.revokes.pop(i, None)


def trick_keys(tricks: np.ndarray, trump: np.ndarray, af: bool) -> np.ndarray:
    """`legal.trick_key` of every card of the tricks [T, P, N] (the suit led: each trick's first card; trump [N]),
    -1 where there is no card. The kernel's vectorised form of the rule, held to it by tests/test_replay_legal.py."""
    S = SUIT[tricks]
    Rk = RANK[tricks]
    strength = Rk if af else STRENGTH_SW[tricks]
    is_tr = S == trump
    key = is_tr * (strength + np.int8(32)) + ((S == S[:, :1, :]) & ~is_tr) * (Rk + np.int8(16))
    key[tricks == NOCARD] = -1
    return key


def trick_winners(tricks: np.ndarray, trump: np.ndarray, af: bool) -> np.ndarray:
    """`legal.trick_winner` of every trick [T, P, N]: the position [T, N] of the highest key, the first of equal
    ones."""
    key = trick_keys(tricks, trump, af)
    T, P, N = tricks.shape
    best = key[:, 0].copy()
    pos = np.zeros((T, N), np.int8)
    for p in range(1, P):
        better = key[:, p] > best
        pos[better] = p
        np.maximum(best, key[:, p], out=best)
    return pos


def play_tricks(g: _Group, rows, eldest, tricks, sizes, tps, holds, reset, trump, af, must, extra,
                pack: np.uint64 | None = None) -> PlayOut:
    """All tricks of N deals at once. The winning position of a trick depends only on its cards, so it is found
    for every trick in one pass; only the leaders follow one another. Then each trick is turned to seat order
    (the card each seat played): a deal where every seat played exactly the cards it held is judged in bulk (a
    seat still holds a suit when it plays that suit in a later trick of the set); a deal where some card is not
    in hand is left to the reference engine (`PlayOut.drop`)."""
    n = g.n
    T, P, N = tricks.shape
    ar = np.arange(N)
    lead = SUIT[tricks[:, 0, :]]  # [T, N]
    pos = trick_winners(tricks, trump, af)
    # leaders, winners (relative seats)
    leaders = np.zeros((T, N), np.int8)
    winners = np.zeros((T, N), np.int8)
    set_of = np.zeros(T, np.int64)
    starts = []
    k0 = 0
    for j, cnt in enumerate(tps):
        set_of[k0:k0 + cnt] = j
        starts.append(k0)
        k0 += cnt
    ld = np.zeros(N, np.int8)
    nn = np.int8(n)
    extra_k = [k for k in range(T) if sizes[k] == n + 1]
    for k in range(T):
        if k in starts and k > 0 and reset:
            ld = np.zeros(N, np.int8)
        leaders[k] = ld
        if k in extra_k:
            w = _extra_seats(ld, n)[pos[k], ar]
        else:
            w = (ld + pos[k]) % nn
        winners[k] = w
        ld = w
    # seat order: the card each seat played in each trick (tricks of n cards)
    oo = np.arange(n, dtype=np.int8)[None, :, None]
    cbs = np.zeros((T, n, N), np.uint8)  # the card of seat o: tricks[k, (o - leader) % n] (masks multiply fast)
    for r in range(n):
        m = leaders == r
        for o in range(n):
            cbs[:, o] += tricks[:, (o - r) % n] * m
    if extra_k:  # the eldest's two cards in the last trick: his first in seat order, the second aside
        k = extra_k[0]
        q = (-leaders[k].astype(np.int64)) % n
        sk = _extra_seats(leaders[k], n)
        cb = np.zeros((n, N), np.uint8)
        second = np.zeros(N, np.uint8)
        for p in range(n + 1):
            is_second = p == q + 1
            for o in range(n):
                cb[o] += tricks[k, p] * ((sk[p] == o) & ~is_second)
            second += tricks[k, p] * is_second
        cbs[k] = cb
    bits = BIT[cbs]
    if extra_k:
        bits[extra_k[0], 0] |= BIT[second]
    ok = np.ones(N, bool)
    for j, k0 in enumerate(starts):
        ok &= (np.bitwise_or.reduce(bits[k0:k0 + tps[j]], axis=0) == holds[j]).all(0)
    seats = np.zeros((T, P, N), np.int8)
    for k in range(T):
        if k in extra_k:
            seats[k] = _extra_seats(leaders[k], n)
        else:
            seats[k, :n] = (leaders[k][None, :] + np.arange(n, dtype=np.int8)[:, None]) % nn
    out = PlayOut(tricks, list(sizes), seats, winners, [], {})
    # revokes, in seat order: the suits each seat plays in the later tricks of the set
    sb = SUITBIT[cbs]  # the suit each seat played, as a bit
    if extra_k:
        sb[extra_k[0], 0] |= SUITBIT[second]
    later = np.empty_like(sb)
    for j, k0 in enumerate(starts):
        acc = np.zeros((n, N), np.uint8)
        for k in range(k0 + tps[j] - 1, k0 - 1, -1):
            later[k] = acc
            acc = acc | sb[k]
    not_leader = oo != leaders[:, None, :]
    lead_b = (np.uint8(1) << lead.astype(np.uint8))[:, None, :]
    held_lead = (later & lead_b) != 0
    off = not_leader & ((sb & lead_b) == 0)
    if extra_k:  # the two-card turn is never a revoke; nobody else can revoke in the last trick
        off[extra_k[0]] = False
    rv = off & held_lead
    trump_b = (np.uint8(1) << trump.astype(np.uint8))
    if af:
        rv &= (sb & trump_b) == 0
    rv2 = None
    if must:
        held_tr = (later & trump_b) != 0
        rv2 = off & ~held_lead & ((sb & trump_b) == 0) & held_tr
    events = []
    hit = rv & ok
    if hit.any():
        for k, o, i in zip(*np.nonzero(hit), strict=True):
            events.append((int(i), int(k), (int(o) - int(leaders[k, i])) % n, int(lead[k, i]), "lead"))
    if rv2 is not None:
        hit2 = rv2 & ok
        if hit2.any():
            for k, o, i in zip(*np.nonzero(hit2), strict=True):
                events.append((int(i), int(k), (int(o) - int(leaders[k, i])) % n, int(trump[i]), "trump"))
    what = "neither followed suit nor trumped" if af else "did not follow suit"
    for i, k, p, suit_held, kind in sorted(events):
        seat_rel = int(seats[k, p, i])
        j = set_of[k]
        later_cards = [int(tricks[k2, p2, i]) for k2 in np.flatnonzero(set_of == j).tolist() if k2 > k
                       for p2 in range(sizes[k2]) if int(seats[k2, p2, i]) == seat_rel
                       and SUIT[tricks[k2, p2, i]] == suit_held]
        example = CARD_STR[min(later_cards)]
        card = int(tricks[k, p, i])
        msg_what = what if kind == "lead" else "discarded while holding a trump (must trump)"
        _add_revoke(g, out, rows, eldest, i, k, p, seat_rel, card, int(lead[k, i]), example, msg_what)
    # deals with a card not in hand (or played twice): the reference engine replays them, card by card; a card of
    # the tricks outside the pack is its own finding there ("cards", as the checks before the play)
    bad = np.flatnonzero(~ok)
    if bad.size:
        why = np.full(bad.size, FALLBACK_REASONS.index("not_in_hand"), np.int8)
        if pack is not None:
            tor = np.bitwise_or.reduce(BIT[tricks[:, :, bad]].reshape(-1, bad.size), axis=0)
            why[(tor & ~pack) != 0] = FALLBACK_REASONS.index("cards")
        out.drop, out.drop_reason = bad, why
    return out


def _extra_seats(leader: np.ndarray, n: int) -> np.ndarray:
    """Seats [n + 1, N] of a trick where the eldest (relative seat 0) plays two cards at his turn."""
    p_ = np.arange(n + 1)[:, None]
    ld = leader.astype(np.int64)[None, :]
    q = (-ld) % n
    return np.where(p_ <= q, (ld + p_) % n, np.where(p_ == q + 1, 0, (ld + p_ - 1) % n)).astype(np.int8)


def _add_revoke(g: _Group, out: PlayOut, rows, eldest, i, k, p, seat_rel, card, lead, example, what) -> None:
    ch = g.ch
    r = int(rows[i])
    players = g.reg.lineups[int(ch.lineup[r])]
    seat = (seat_rel + int(eldest[i])) % g.n
    msg = (f"{players[seat]} (seat {seat}) played {CARD_STR[card]} to a {SUIT_NAME[lead]} lead while holding "
           f"{example}: {what}")
    f = Finding("revoke", ch.game_id_of(r), int(ch.deal_no[r]), k + 1, seat, players[seat],
                CARD_STR[card], ch.source(r), msg)
    out.findings.append((i, k, p, f))
    out.revokes.setdefault(i, []).append((k + 1, seat_rel))
