"""The play of one deal: dealing from a deck, All Fours begging and running, and the tricks, card by card.

`Ctx` carries what one deal's play needs from the season: the seats (policy, cheat, accomplice), the uniform
random stream, the revoke rate, and the sinks for decisions and ground-truth events. The functions here return
the record's fields; the season turns them into deal-log/1 records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..cards import CARD_STR, R10, RJ, cards_of
from ..dealing import af_run, deal
from ..legal import legal_mask, seats_of_trick, shown_voids, trick_size
from ..rules import AF_PIPS, SW_HONOURS, Layout, Rules
from .policy import Policy, Public, View, af_keep_order, observe
from .spec import CheaterSpec


class Uniforms:
    """A stream of U(0,1) numbers drawn from the season's Generator in blocks (same seed, same stream)."""

    __slots__ = ("rng", "buf", "i")

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.buf: list[float] = []
        self.i = 0

    def __call__(self) -> float:
        if self.i >= len(self.buf):
            self.buf = self.rng.random(2048).tolist()
            self.i = 0
        x = self.buf[self.i]
        self.i += 1
        return x


class RevokeClock:
    """Accidental revokes: each chance is an independent Bernoulli(rate) trial. Drawing the geometric gap to the
    next success once (instead of one uniform per chance) gives the same law with far fewer draws."""

    __slots__ = ("rate", "u", "left", "_log1m")

    def __init__(self, rate: float, u: Uniforms):
        self.rate, self.u = rate, u
        self._log1m = math.log1p(-rate) if 0 < rate < 1 else 0.0
        self.left = self._gap()

    def _gap(self) -> int:
        if self.rate <= 0:
            return -1  # never
        if self.rate >= 1:
            return 1
        x = self.u()
        return int(math.log(1.0 - x) / self._log1m) + 1  # trials up to and including the next success

    def tick(self) -> bool:
        """One chance: True when it is a revoke."""
        if self.left < 0:
            return False
        self.left -= 1
        if self.left:
            return False
        self.left = self._gap()
        return True


@dataclass
class SeatInfo:
    name: str
    policy: Policy
    cheat: CheaterSpec | None = None
    ally: int = -1  # a colluder's accomplice's seat at this table
    revoke_rate: float | None = None  # a clumsy honest player's own rate of accidental revokes (None: the season's)


@dataclass
class Ctx:
    game: str
    rules: Rules
    seats: list[SeatInfo]
    side_of: list[int]
    u: Uniforms
    revoke_rate: float
    claim_rate: float
    game_id: str = ""
    deal_no: int = 0
    decisions: list | None = None
    revokes: list = field(default_factory=list)  # (trick 1-based, seat, kind, card) of this deal
    cheat_acts: dict = field(default_factory=dict)  # player -> count of decisions a play cheat changed
    holds: list = field(default_factory=list)  # the cards each seat holds now (the oracle of a marked-Ten cheat)
    clock: RevokeClock | None = None  # accidental revokes (shared by the season)
    beliefs: dict = field(default_factory=dict)  # readers' beliefs on the key card, this deal
    must_trump: bool = False
    gate_off: frozenset = frozenset()  # seats of score-gated cheaters whose gate is closed this deal (play honestly)

    def revoke_chance(self) -> bool:
        """One chance of an accidental revoke, on the season's clock."""
        if self.clock is None:
            raise ValueError("the season sets Ctx.clock before the play")
        return self.clock.tick()


def _boss_trump(pub: Public) -> int | None:
    gone = pub.played
    for c in pub.tab.trump_order:
        if (pub.pack >> c & 1) and not (gone >> c & 1):
            return c
    return None


def marked_ten_probs(pub: Public, seat: int, hand: int, legal: list[int], honest: list[float],
                     holder: int | None) -> list[float] | None:
    """The play of a marked-Ten cheater who knows that the Ten of trumps is at seat `holder` (None: not in a
    hand now). None when the sure read does not change his play."""
    if holder is None or holder == seat:
        return None
    trump = pub.trump
    friend = pub.side_of[holder] == pub.side_of[seat]
    lead = pub.lead_suit
    if lead is None:
        if not friend:
            boss = _boss_trump(pub)
            if boss is not None and hand >> boss & 1:
                return [1.0 if c == boss else 0.0 for c in legal]
            return None
        plain = [i for i, c in enumerate(legal) if c // 13 != trump]
        if not plain or len(plain) == len(legal):
            return None
        z = sum(honest[i] for i in plain)
        if z <= 0:
            return [1.0 / len(plain) if i in plain else 0.0 for i in range(len(legal))]
        keep = set(plain)
        return [honest[i] / z if i in keep else 0.0 for i in range(len(legal))]
    if lead != trump or holder not in pub.order[pub.pos + 1:]:
        return None
    target = _boss_trump(pub) if not friend else trump * 13 + RJ
    if target is None or target not in legal:
        return None
    return [1.0 if c == target else 0.0 for c in legal]


def choose(ctx: Ctx, pub: Public, s: int, hold: int, two_card: bool, trick_no: int) -> int:
    """The card seat `s` plays (a revoke is appended to `ctx.revokes`)."""
    trump, lead = pub.trump, pub.lead_suit
    if two_card or lead is None:
        legal = hold
    else:
        legal = legal_mask(pub.game, hold, lead, trump, ctx.must_trump)
    info = ctx.seats[s]
    cheat = info.cheat
    u = ctx.u
    if cheat is None and ctx.decisions is None:
        # an honest player, nothing logged: the same random draws as the general path below, in fewer steps
        if lead is not None and not two_card and hold != legal and ctx.revoke_chance():
            offc = cards_of(hold & ~legal)
            card = offc[min(int(u() * len(offc)), len(offc) - 1)]
            ctx.revokes.append((trick_no + 1, s, "accidental", card))
            return card
        if not legal & (legal - 1):
            return legal.bit_length() - 1
        legal_cards = []
        m = legal
        while m:
            low = m & -m
            legal_cards.append(low.bit_length() - 1)
            m ^= low
        probs = info.policy.weights(View(pub, s, hold, -1, ctx.beliefs.get(s) if ctx.beliefs else None),
                                    legal_cards)
        x = u()
        for c, p in zip(legal_cards, probs, strict=True):
            x -= p
            if x < 0.0:
                return c
        return legal_cards[-1]
    legal_cards = []
    m = legal
    while m:
        low = m & -m
        legal_cards.append(low.bit_length() - 1)
        m ^= low
    if len(legal_cards) == 1:
        honest = [1.0]
        bw = None
    else:
        bw = ctx.beliefs.get(s) if ctx.beliefs else None
        honest = info.policy.weights(View(pub, s, hold, -1, bw), legal_cards)
    used = honest
    kind = cheat.kind if cheat is not None else None
    if cheat is not None and kind == "marked_ten" and len(legal_cards) > 1 and s not in ctx.gate_off:
        key = trump * 13 + R10
        holder = next((o for o in range(pub.n) if ctx.holds[o] >> key & 1), None)
        cp = marked_ten_probs(pub, s, hold, legal_cards, honest, holder)
        if cp is not None:
            q = cheat.q
            used = [q * a + (1 - q) * b for a, b in zip(cp, honest, strict=True)]
            ctx.cheat_acts[info.name] = ctx.cheat_acts.get(info.name, 0) + 1
    elif cheat is not None and kind == "colluder" and info.ally >= 0 and len(legal_cards) > 1:
        cp = info.policy.weights(View(pub, s, hold, info.ally, bw), legal_cards)
        q = cheat.q
        used = [q * a + (1 - q) * b for a, b in zip(cp, honest, strict=True)]
        if any(abs(a - b) > 1e-12 for a, b in zip(cp, honest, strict=True)):
            ctx.cheat_acts[info.name] = ctx.cheat_acts.get(info.name, 0) + 1
    # ---- revokes: deliberate (the revoker, when a revoke takes or saves a counting card) or accidental
    revoke_card = None
    revoke_kind = None
    p_revoke = 0.0
    off = hold & ~legal
    if lead is not None and not two_card and off:
        rc = _deliberate_revoke(pub, s, hold, legal, off) if cheat is not None and kind == "revoker" else None
        if cheat is not None and rc is not None:
            q = cheat.q
            p_revoke = q + (1 - q) * ctx.revoke_rate
            x = u()
            if x < q:
                revoke_card, revoke_kind = rc, "deliberate"
                ctx.cheat_acts[info.name] = ctx.cheat_acts.get(info.name, 0) + 1
            elif x < p_revoke:
                offc = cards_of(off)
                revoke_card, revoke_kind = offc[min(int(u() * len(offc)), len(offc) - 1)], "accidental"
        elif info.revoke_rate is not None:  # a clumsy player: his own Bernoulli rate per chance
            p_revoke = info.revoke_rate
            if u() < p_revoke:
                offc = cards_of(off)
                revoke_card, revoke_kind = offc[min(int(u() * len(offc)), len(offc) - 1)], "accidental"
        else:
            p_revoke = ctx.revoke_rate
            if ctx.revoke_chance():
                offc = cards_of(off)
                revoke_card, revoke_kind = offc[min(int(u() * len(offc)), len(offc) - 1)], "accidental"
    if revoke_card is not None:
        card = revoke_card
        ctx.revokes.append((trick_no + 1, s, revoke_kind, card))
    elif len(legal_cards) == 1:
        card = legal_cards[0]
    else:
        x = u()
        card = legal_cards[-1]
        for c, p in zip(legal_cards, used, strict=True):
            x -= p
            if x < 0.0:
                card = c
                break
    if ctx.decisions is not None:
        ctx.decisions.append({
            "game_id": ctx.game_id, "deal_no": ctx.deal_no, "trick": trick_no + 1, "seat": s, "player": info.name,
            "card": CARD_STR[card], "legal": [CARD_STR[c] for c in legal_cards],
            "p_honest": [round(p, 12) for p in honest], "p_used": [round(p, 12) for p in used],
            "p_revoke": p_revoke, "revoke": revoke_card is not None,
        })
    return card


def counting_card(game: str, trump: int, c: int) -> bool:
    """A counting card for the revoker's rule: Scotch Whist, a trump honour (Jack, Ten, Ace, King, Queen); All
    Fours, a card with Game pips (Ten, Ace, King, Queen, Jack of any suit) or the Jack of trumps."""
    if game == "scotch_whist":
        return c // 13 == trump and c % 13 in SW_HONOURS
    return c % 13 in AF_PIPS or c == trump * 13 + RJ


def _deliberate_revoke(pub: Public, s: int, hold: int, legal: int, off: int) -> int | None:
    """The card a deliberate revoker would play here, or None when a revoke does not pay.

    A revoke pays (the definition the revoke test uses), when an opponent is winning the trick now and
    (a) Scotch Whist: a card he may not play beats the winning card while none of his legal (following) cards
    does: he plays the cheapest such card (a trump on a plain lead) and takes the trick; or
    (b) both games: the winning card beats every legal card he holds and every legal card is a counting card
    (`counting_card`): he revokes with his lowest non-counting card, keeping the counting card out of the
    opponent's trick (the bare Ten of trumps under an opponent's court trump)."""
    trump = pub.trump
    side = pub.side_of
    ws, wc = pub.win_seat, pub.win_card
    if ws < 0 or side[ws] == side[s]:
        return None
    lc = cards_of(legal)
    if any(pub.beats(c, wc) for c in lc):
        return None
    game = pub.game
    tab = pub.tab
    offc = cards_of(off)
    if game == "scotch_whist":
        takers = [c for c in offc if pub.beats(c, wc)]
        if takers:
            return min(takers, key=lambda c: (tab.spend[c], c))
    if not all(counting_card(game, trump, c) for c in lc):
        return None
    blanks = [c for c in offc if not counting_card(game, trump, c)]
    return min(blanks, key=lambda c: (c // 13 == trump, c % 13, c)) if blanks else None


def play_tricks(ctx: Ctx, L: Layout, holdings: list[list[int]], trump: int, turnup: int,
                turnup_owner: int | None, dead: int, tricks_per_set: tuple[int, ...]) -> list[list[int]]:
    """Play every trick. `holdings[s][j]`: seat s's cards (bitmask) in set j. Returns the tricks as card lists.
    Readers' beliefs, voids and the public state are kept here; revokes are appended to `ctx.revokes`."""
    n = L.n
    game = ctx.game
    R = ctx.rules
    must_trump = R.switches.get("void_rule") == "must_trump_if_able"
    ctx.must_trump = must_trump
    set_leader = R.switches.get("set_leader", "last_trick_winner")
    n_tricks = sum(tricks_per_set)
    n_sets = len(tricks_per_set)
    pub = Public(game, n, trump, L.pack, ctx.side_of, L.dealer, turnup, turnup_owner,
                 [h[0].bit_count() for h in holdings], n_tricks)
    pub.dead = dead
    tbit = 1 << turnup
    if turnup_owner is not None and n_sets > 1:  # the turn-up waits face up until its owner's last set
        pub.turnup_live = False
        pub.dead |= tbit
    beliefs = {s: [0.0 if o == s else 1.0 for o in range(n)] for s in range(n)
               if ctx.seats[s].policy.sk.infer}
    ctx.beliefs = beliefs
    extra = L.extra_card_seat
    tab = pub.tab
    hv = tab.hv
    beaten_by = tab.beaten_by
    tricks: list[list[int]] = []
    leader = L.eldest
    k = 0
    for j, cnt in enumerate(tricks_per_set):
        hold = [holdings[s][j] for s in range(n)]
        ctx.holds = hold
        if j > 0 and set_leader == "eldest":
            leader = L.eldest
        if turnup_owner is not None and n_sets > 1 and j == n_sets - 1:
            pub.dead &= ~tbit
            pub.turnup_live = True
        pub.sizes = [h.bit_count() for h in hold]
        for _ in range(cnt):
            last = k == n_tricks - 1
            seats = seats_of_trick(L, leader, trick_size(L, last), last)
            pub.order = seats
            pub.trick_size = len(seats)
            pub.lead_suit = None
            pub.trick_mask = 0
            pub.trick_hv = 0.0
            pub.win_seat = -1
            pub.win_card = -1
            trick: list[int] = []
            prev_seat = -1
            two_turn = last and extra is not None and len(seats) == n + 1
            for p, s in enumerate(seats):
                pub.pos = p
                if s == prev_seat:  # the eldest's second card in the Russian 5-player last trick
                    two_card = True
                    card = hold[s].bit_length() - 1
                else:
                    two_card = two_turn and s == extra
                    card = choose(ctx, pub, s, hold[s], two_card, k)
                prev_seat = s
                if beliefs:
                    observe(pub, beliefs, s, card)
                bit = 1 << card
                suit = card // 13
                if p == 0:
                    pub.lead_suit = suit
                    pub.win_seat, pub.win_card = s, card
                else:
                    if beaten_by[pub.win_card] >> card & 1:
                        pub.win_seat, pub.win_card = s, card
                    if not two_card:
                        pub.voids[s] |= shown_voids(game, suit, pub.lead_suit, trump, must_trump)
                hold[s] &= ~bit
                pub.sizes[s] -= 1
                pub.played |= bit
                pub.trick_mask |= bit
                pub.trick_hv += hv[card]
                if card == turnup:
                    pub.turnup_live = False
                trick.append(card)
            tricks.append(trick)
            leader = pub.win_seat
            pub.prev_trick_mask = pub.trick_mask
            k += 1
            pub.trick_no = k
    return tricks


# ---------------------------------------------------------------------- dealing and All Fours begging


def sw_holdings(L: Layout, hands: list[list[int]]) -> list[list[int]]:
    out = []
    for s in range(L.n):
        per = []
        for a, b in L.sets[s]:
            m = 0
            for c in hands[s][a:b]:
                m |= 1 << c
            per.append(m)
        out.append(per)
    return out


@dataclass
class AFDeal:
    hands: list[list[int]]
    turnup: int
    beg: str
    runs: list[tuple[list[list[int]], int]]
    discards: list[list[int]] | None
    bunched: bool
    trump: int
    holdings: list[int]  # cards in play per seat (bitmask)
    hand_size: int
    dead: int  # turn-ups seen by everyone


def af_deal(ctx: Ctx, L: Layout, deck: list[int], totals: list[int] | None, target: int) -> AFDeal:
    """Deal, let the eldest stand or beg and the dealer give or run; discard back to the rules' hand size."""
    n = L.n
    R = ctx.rules
    dealt = deal(L, deck)
    hands = dealt.hands
    turnup = dealt.turn_up
    t0 = turnup // 13
    dealer, eldest = L.dealer, L.eldest
    side = ctx.side_of
    masks = [sum(1 << c for c in h) for h in hands]
    u = ctx.u
    beg = "stand"
    runs: list[tuple[list[list[int]], int]] = []
    trump = t0
    bunched = False
    dead = 1 << turnup
    if u() >= ctx.seats[eldest].policy.stand_probability(masks[eldest], t0):
        # the eldest begs: the dealer gives one or runs the cards
        n_sides = max(side) + 1
        partnerships = n_sides < n
        if n == 2 or partnerships or R.gift_three_players == "eldest_only":
            gift = [side[eldest]]
        else:
            gift = [x for x in dict.fromkeys(side[(eldest + i) % n] for i in range(n)) if x != side[dealer]]
        must_run = False
        if R.gift_cannot_win and totals is not None:
            t = list(totals)
            if turnup % 13 == RJ:
                t[side[dealer]] += 1
            must_run = any(t[g] + 1 >= target for g in gift)
        if not must_run and u() < ctx.seats[dealer].policy.give_probability(masks[dealer], t0):
            beg = "take_one"
        else:
            beg = "run"
            pos = dealt.next_pos
            while True:
                cards, tu, pos = af_run(deck, pos, n, eldest)
                if tu is None:
                    bunched = True
                    break
                runs.append((cards, tu))
                dead |= 1 << tu
                if tu // 13 != t0:
                    trump = tu // 13
                    break
    r = len(runs)
    rule = R.after_run
    if r == 0 or rule == "discard_to_six" or (rule == "keep_if_nine_else_discard" and r >= 2):
        size = 6
    else:
        size = 6 + 3 * r
    discards: list[list[int]] | None = None
    holdings = list(masks)
    if r and not bunched:
        discards = []
        for s in range(n):
            held = list(hands[s])
            for cards, _ in runs:
                held += cards[s]
            keep = set(af_keep_order(held, trump)[:size])
            ds = [c for c in held if c not in keep]
            discards.append(ds)
            holdings[s] = sum(1 << c for c in keep)
        if size > 6 and all(not d for d in discards):
            discards = None
    return AFDeal(hands, turnup, beg, runs, discards, bunched, trump, holdings, size, dead)
