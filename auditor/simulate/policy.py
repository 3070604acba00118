"""Honest players: stochastic card-play policies that use only what the player may know.

A player sees his own hand, every card played so far, the voids others have shown, the turn-up (and who holds
it while it is live), the trick in progress, partnerships and the score. `Public` holds that table-wide
knowledge for one deal and `View` is one seat's window on it (its hand, its beliefs). A `Policy` maps a view and
the legal cards to a probability for each legal card:

    policy.probabilities(view, legal) -> np.ndarray of 52, 0 off `legal`, summing to 1

How a policy plays (both games): every legal card gets an expected-points score and the policy samples from
softmax(score / temperature). The score of a card is what the player expects his side to gain in this trick:
 - the trick's worth (Scotch Whist: the honours in it and about half a point per card for cards-over; All Fours:
   the Jack of trumps and the Game pips in it) goes to whoever keeps it; a card that wins now keeps it unless a
   later opponent beats it (a risk estimated from the unseen cards, the hand sizes and the voids shown); an honour
   played to a trick the side loses is lost (this is what protects the own Ten), and one played to a trick the side
   keeps is weighed against keeping it in hand, where only stronger unseen cards held by opponents threaten it;
 - a trump that beats the key card (the Ten of trumps in Scotch Whist, the Jack in All Fours) earns the chance that
   a later opponent must drop it (hunting with high trumps) or that a later partner can safely drop it on the
   winner (saving honours for a partner's winning trick);
 - spending a high card costs its future trick-taking value, so cheap winners and low discards are preferred;
 - leading a trump that is not the boss while a partner may hold the key is penalised (keep off trumps).

Every skill level also slips: on a share of his decisions with a choice (novice 4%, club 2%, strong and reader 1%)
a player plays a uniformly random legal card instead (`Skill.mistake`; mixed into `Policy.weights`, so the season
still draws one uniform per decision). At individual-play tables this is what makes honest players give counting
cards to another player's winning trick now and then, the null the `collusion` test is calibrated against.

Skill levels differ in temperature, memory and inference:
 - "novice": remembers only the trump honours played; ignores voids; temperature 1.5;
 - "club": remembers the trumps played and the last trick; uses voids; temperature 0.8;
 - "strong": remembers every card; estimates the chance an opponent is void (ruffs); temperature 0.4;
 - "reader": a strong player who also keeps a soft belief on where the key card is, from how others played: a
   player who did not drop it on his partner's sure winner when he could have probably lacks it (likelihood
   0.2), a player who shows out of trumps lacks it. Temperature 0.35.

All Fours begging: the eldest stands with probability sigmoid((strength − 1.4)/τ) and the dealer gives one with
probability sigmoid((strength − 1.8)/τ) on his own hand (he must run when the gift would put a side out); on random
hands that is about 57% standing and 46% giving. Discards keep the six best cards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..cards import N_CARDS, RJ, R10, SUIT_MASK
from ..legal import beats, legal_mask, shown_voids
from ..rules import AF_PIPS, SW_HONOURS, trump_strength

SW_LAM_CARD = 0.5  # a card won in a trick, towards cards-over (Scotch Whist)
AF_LAM_PIP = 0.07  # one Game pip (All Fours); the Jack of trumps is one point
AF_LAM_CARD = 0.02
AF_STAND_AT = 1.4  # the eldest stands on about 57% of random hands, the dealer gives on about 46%
AF_GIVE_AT = 1.8
AF_TEMP_SCALE = 0.12  # All Fours scores are in points of 7, Scotch Whist's in points of 41 and larger


@dataclass(frozen=True)
class Skill:
    name: str
    temp: float
    memory: str  # "honours" | "trumps" | "all"
    voids: bool
    ruff_est: bool
    infer: bool
    beg_tau: float
    mistake: float = 0.0  # share of decisions with a choice on which he plays a uniformly random legal card


SKILL = {
    "novice": Skill("novice", 1.5, "honours", False, False, False, 0.8, 0.04),
    "club": Skill("club", 0.8, "trumps", True, False, False, 0.5, 0.02),
    "strong": Skill("strong", 0.4, "all", True, True, False, 0.3, 0.01),
    "reader": Skill("reader", 0.35, "all", True, True, True, 0.3, 0.01),
}


class Tables:
    """Per game and trump suit: each card's worth in a trick, spending cost, the stronger cards of its suit (`hi`)
    and every card that takes a trick from it (`beaten_by`: those and, for a plain card, every trump), from
    `legal.beats`."""

    __slots__ = ("game", "trump", "hv", "spend", "hi", "beaten_by", "key", "key_val", "trump_mask", "honour_mask",
                 "lam_card", "trump_order", "worth_mask")

    def __init__(self, game: str, trump: int):
        sw = game == "scotch_whist"
        self.game, self.trump = game, trump
        hv = [0.0] * N_CARDS
        spend = [0.0] * N_CARDS
        strength = [0] * N_CARDS
        for c in range(N_CARDS):
            s, r = divmod(c, 13)
            st = trump_strength(game, r) if s == trump else r
            strength[c] = st
            if sw:
                if s == trump:
                    hv[c] = float(SW_HONOURS.get(r, 0))
                spend[c] = (2.5 * (st / 13) ** 2 + 0.3) if s == trump else (1.8 * (r / 12) ** 2)
            else:
                hv[c] = AF_LAM_PIP * AF_PIPS.get(r, 0) + (1.0 if (s == trump and r == RJ) else 0.0)
                spend[c] = (0.1 + 0.5 * (r / 12) ** 2) if s == trump else (0.25 * (r / 12) ** 2)
        hi = [0] * N_CARDS
        beaten_by = [0] * N_CARDS
        for c in range(N_CARDS):
            for d in range(N_CARDS):
                if beats(game, d, c, trump):
                    beaten_by[c] |= 1 << d
                    if d // 13 == c // 13:
                        hi[c] |= 1 << d
        self.hv, self.spend, self.hi, self.beaten_by = hv, spend, hi, beaten_by
        self.worth_mask = sum(1 << c for c in range(N_CARDS) if hv[c] > 0)
        self.trump_mask = SUIT_MASK[trump]
        self.trump_order = sorted(range(13 * trump, 13 * trump + 13), key=lambda c: -strength[c])
        if sw:
            self.key = trump * 13 + R10
            self.key_val = 10.0
            self.honour_mask = sum(1 << (trump * 13 + r) for r in SW_HONOURS)
            self.lam_card = SW_LAM_CARD
        else:
            self.key = trump * 13 + RJ
            self.key_val = 1.0 + AF_LAM_PIP
            self.honour_mask = (1 << self.key) | sum(1 << (s * 13 + R10) for s in range(4))
            self.lam_card = AF_LAM_CARD


_OTHERS = [[tuple((me + i) % n for i in range(1, n)) for me in range(n)] for n in range(9)]


@lru_cache(maxsize=16)
def tables(game: str, trump: int) -> Tables:
    return Tables(game, trump)


class Public:
    """What everyone at the table knows during one deal. The engine keeps it up to date; policies only read it.

    `sizes[s]`: cards seat s holds now (in the set being played); `voids[s]`: 4-bit mask of suits seat s has shown
    out of; `dead`: cards seen and out of play (a shown card, All Fours turn-ups); `turnup_live`: the Scotch Whist
    turn-up is still in its owner's hand (everyone knows where it is); `order`/`pos`: the seats of the trick in
    play order and the position to play; `win_seat`/`win_card`: the trick's current winner; `trick_hv`: the worth
    of the cards in the trick so far."""

    __slots__ = ("game", "n", "trump", "tab", "pack", "side_of", "dealer", "eldest", "turnup", "turnup_owner",
                 "turnup_live", "dead", "played", "trick_mask", "prev_trick_mask", "trick_hv", "lead_suit", "order",
                 "pos", "win_seat", "win_card", "voids", "sizes", "trick_no", "n_tricks", "trick_size", "totals",
                 "target")

    def __init__(self, game: str, n: int, trump: int, pack: int, side_of: list[int], dealer: int,
                 turnup: int, turnup_owner: int | None, sizes: list[int], n_tricks: int, totals=None, target=0):
        self.game, self.n, self.trump = game, n, trump
        self.tab = tables(game, trump)
        self.pack, self.side_of, self.dealer = pack, side_of, dealer
        self.eldest = (dealer + 1) % n
        self.turnup = turnup
        self.turnup_owner = -1 if turnup_owner is None else turnup_owner
        self.turnup_live = turnup_owner is not None
        self.dead = 0
        self.played = 0
        self.trick_mask = 0
        self.prev_trick_mask = 0
        self.trick_hv = 0.0
        self.lead_suit: int | None = None
        self.order: list[int] = []
        self.pos = 0
        self.win_seat = -1
        self.win_card = -1
        self.voids = [0] * n
        self.sizes = sizes
        self.trick_no = 0
        self.n_tricks = n_tricks
        self.trick_size = n
        self.totals = totals
        self.target = target

    def beats(self, c: int, w: int) -> bool:
        """Card c beats the trick's current winner w (`legal.beats`)."""
        return bool((self.tab.beaten_by[w] >> c) & 1)


class View:
    """One seat's window on the deal: its hand, an extra friendly seat (a colluder's accomplice, else -1) and its
    soft belief on where the key card lies (readers; None otherwise)."""

    __slots__ = ("pub", "seat", "hand", "ally", "belief")

    def __init__(self, pub: Public, seat: int, hand: int, ally: int = -1, belief: list[float] | None = None):
        self.pub, self.seat, self.hand, self.ally, self.belief = pub, seat, hand, ally, belief


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def softmax(scores: list[float], temp: float) -> list[float]:
    m = max(scores)
    ws = [math.exp((x - m) / temp) for x in scores]
    z = sum(ws)
    return [w / z for w in ws]


class Policy:
    """An honest player of one skill level."""

    def __init__(self, skill: str = "club"):
        self.sk = SKILL[skill]
        self.skill = skill
        self._temp_sw = 1.0 / self.sk.temp  # inverse temperatures
        self._temp_af = 1.0 / (self.sk.temp * AF_TEMP_SCALE)

    # ------------------------------------------------------------------ card play

    def probabilities(self, view: View, legal) -> np.ndarray:
        """Probability of each card (index = card code): 0 off the legal cards, summing to 1."""
        cards = _as_cards(legal)
        out = np.zeros(N_CARDS)
        if not cards:
            raise ValueError("no legal card to play")
        for c, p in zip(cards, self.weights(view, cards), strict=True):
            out[c] = p
        return out

    def weights(self, view: View, legal: list[int]) -> list[float]:
        """Probabilities aligned with `legal` (a list of card codes): with probability `Skill.mistake` a uniformly
        random legal card (a slip: the wrong card pulled, a count lost), else softmax(score / temperature)."""
        if len(legal) == 1:
            return [1.0]
        sc = self.scores(view, legal)
        t = self._temp_sw if view.pub.game == "scotch_whist" else self._temp_af
        m = max(sc)
        ws = [math.exp((x - m) * t) for x in sc]
        eps = self.sk.mistake
        z = sum(ws) / (1.0 - eps)
        floor = eps / len(legal)
        return [w / z + floor for w in ws]

    def scores(self, v: View, legal: list[int]) -> list[float]:
        sk = self.sk
        pub = v.pub
        tab = pub.tab
        me, n, trump = v.seat, pub.n, pub.trump
        hv, spend, hi = tab.hv, tab.spend, tab.hi
        lm = 0
        any_worth = False
        for c in legal:
            lm |= 1 << c
        if lm & tab.worth_mask:
            any_worth = True
        lead = pub.lead_suit
        tmask = tab.trump_mask
        if lead is not None and not any_worth:
            wc = pub.win_card
            if not lm & tab.beaten_by[wc]:
                # no legal card can take the trick and none is worth points: every card's score is the same
                # trick outcome minus its spending cost (softmax ignores the common part)
                return [-spend[c] for c in legal]
        sw = pub.game == "scotch_whist"
        played = pub.played
        mem = sk.memory
        if mem == "honours":
            played &= tab.honour_mask | pub.trick_mask
        elif mem == "trumps":
            played &= tmask | tab.honour_mask | pub.trick_mask | pub.prev_trick_mask
        unseen = pub.pack & ~played & ~v.hand & ~pub.dead
        owner = pub.turnup_owner if pub.turnup_live else -1
        if owner >= 0 and owner != me:
            unseen &= ~(1 << pub.turnup)
        U = unseen.bit_count()
        sizes = pub.sizes
        side = pub.side_of
        my = side[me]
        ally = v.ally
        others = _OTHERS[n][me]
        # f[o]: the share of the unseen cards seat o holds; opps: opponents still to play in this trick
        f = [0.0] * n
        if U:
            for o in others:
                x = sizes[o] - (1 if o == owner else 0)
                if x > 0:
                    f[o] = x / U
        later: Sequence[int]
        if lead is None:
            later = others
        else:
            later = pub.order[pub.pos + 1:]
            if me in later:  # the Russian 5-player eldest's second card
                later = [o for o in later if o != me]
        opps = [o for o in later if side[o] != my and o != ally]
        voids = pub.voids if sk.voids else None
        # ---- where the key card (Ten of trumps / Jack of trumps) may be; only needed when a legal card beats it
        # (hunting, feeding) or a trump may be led (keeping off trumps for a partner who may hold it)
        key = tab.key
        key_hi = hi[key]
        key_val = tab.key_val
        pk: list[float] | None = None
        if lm & key_hi or (lead is None and lm & tmask):
            if owner >= 0 and owner != me and pub.turnup == key:
                pk = [0.0] * n
                pk[owner] = 1.0
            elif unseen >> key & 1:
                bw = v.belief if sk.infer else None
                if bw is None:
                    pk = list(f)
                    if voids:
                        for o in others:
                            if voids[o] >> trump & 1:
                                pk[o] = 0.0
                else:
                    pk = [0.0] * n
                    z = float(U)
                    for o in others:
                        x = sizes[o] - (1 if o == owner else 0)
                        if x > 0:
                            w = bw[o] * x
                            z += w - x
                            pk[o] = w
                    if z > 0:
                        for o in others:
                            pk[o] /= z
        # ---- risk that a card winning the trick now is beaten by a later opponent: per suit su, a card with k
        # stronger unseen cards survives with probability g**k * R (g: no later opponent holds a given stronger
        # card; R: none ruffs). Scotch Whist over-trumps of a plain lead are computed card by card.
        t_unseen = (unseen & tmask).bit_count()
        xs = [(unseen >> (13 * su) & 0x1FFF).bit_count() for su in range(4)] if sk.ruff_est else None
        per_suit: dict = {}

        def suit_terms(su: int) -> tuple[float, float]:
            g = 1.0
            R = 1.0
            for o in opps:
                fo = f[o]
                if fo <= 0.0:
                    continue
                vo = voids[o] if voids else 0
                if su == trump:
                    if not vo >> trump & 1:
                        g *= 1.0 - fo
                    continue
                void_s = vo >> su & 1
                if not void_s:
                    g *= 1.0 - fo
                if t_unseen and not (vo >> trump & 1):
                    pt = 1.0 - (1.0 - fo) ** t_unseen
                    if sw:
                        pr = pt if void_s else (pt * (1.0 - fo) ** xs[su] if xs is not None else 0.0)
                    else:
                        pr = pt * (1.0 if void_s else 0.5)
                    R *= 1.0 - pr
            e = per_suit[su] = (g, R)
            return e

        def overtrump(k: int, trick_suit: int) -> float:
            keep = 1.0
            if k:
                for o in opps:  # over-trumping needs a void in the suit led
                    fo = f[o]
                    vo = voids[o] if voids else 0
                    if fo <= 0.0 or vo >> trump & 1:
                        continue
                    if vo >> trick_suit & 1:
                        pv = 1.0
                    elif xs is not None:
                        pv = (1.0 - fo) ** xs[trick_suit]
                    else:
                        pv = 0.3
                    keep *= 1.0 - pv * (1.0 - (1.0 - fo) ** k)
            return 1.0 - keep

        def keygain(c: int, trick_suit: int, pk: list[float]) -> float:
            # a later opponent forced to drop the key under c, or a later partner dropping it on c
            g = 0.0
            for o in later:
                p = pk[o]
                if p <= 0.0:
                    continue
                if side[o] == my or o == ally:
                    g += p * (0.8 if (trick_suit == trump or (voids and voids[o] >> trick_suit & 1)) else 0.1)
                elif trick_suit == trump:
                    g += p * 0.3
            return g * key_val

        # an own honour h: played to a trick the side keeps it banks h; kept in hand it is worth h * (1 - lose_p),
        # lose_p = half the chance that an opponent holds a stronger unseen card
        gopp = 1.0
        if any_worth:
            for o in others:
                if side[o] != my and o != ally:
                    gopp *= 1.0 - f[o]
        half_t = 0 if sw else t_unseen // 2

        out = []
        if lead is None:
            P0 = tab.lam_card * pub.trick_size
            pp = 0.0
            if pk is not None:
                for o in others:
                    if side[o] == my or o == ally:
                        pp += pk[o]
            for c in legal:
                su = c // 13
                k = (hi[c] & unseen).bit_count()
                e = per_suit.get(su) or suit_terms(su)
                r = 1.0 - (e[0] ** k if k else 1.0) * e[1]
                g = (1.0 - 2.0 * r) * P0 - spend[c]
                if pk is not None and key_hi >> c & 1:
                    g += (1.0 - r) * keygain(c, su, pk)
                h = hv[c]
                if h:
                    kk = k + (half_t if su != trump else 0)
                    g += h * ((0.5 * (1.0 - gopp ** kk) if kk else 0.0) - 2.0 * r)
                if su == trump and pp and c != key and r > 0.0:
                    g -= pp * key_val * 0.25
                out.append(g)
            return out
        wc, ws = pub.win_card, pub.win_seat
        P = tab.lam_card * pub.trick_size + pub.trick_hv
        wfriend = side[ws] == my or ws == ally
        whi = hi[wc]
        w_trump = wc // 13 == trump
        if wfriend:
            wsu = wc // 13
            kw = (whi & unseen).bit_count()
            if sw and wsu == trump and lead != trump:
                rw = overtrump(kw, lead)
            else:
                e = per_suit.get(wsu) or suit_terms(wsu)
                rw = 1.0 - (e[0] ** kw if kw else 1.0) * e[1]
        else:
            rw = 1.0
        for c in legal:
            h = hv[c]
            su = c // 13
            if (whi >> c & 1) or (not w_trump and su == trump):
                k = (hi[c] & unseen).bit_count()
                if sw and su == trump and lead != trump:
                    r = overtrump(k, lead)
                else:
                    e = per_suit.get(su) or suit_terms(su)
                    r = 1.0 - (e[0] ** k if k else 1.0) * e[1]
                g = (1.0 - 2.0 * r) * P
                if pk is not None and key_hi >> c & 1:
                    g += (1.0 - r) * keygain(c, lead, pk)
            else:
                r = rw
                g = (1.0 - 2.0 * r) * P
            if h:
                kk = (hi[c] & unseen).bit_count() + (half_t if su != trump else 0)
                g += h * ((0.5 * (1.0 - gopp ** kk) if kk else 0.0) - 2.0 * r)
            out.append(g - spend[c])
        return out

    # ------------------------------------------------------------------ All Fours begging and discards

    def stand_probability(self, hand: int, trump: int) -> float:
        """Eldest hand: the chance he stands (accepts the turn-up's suit) rather than begs."""
        return _sigmoid((af_strength(hand, trump) - AF_STAND_AT) / self.sk.beg_tau)

    def give_probability(self, hand: int, trump: int) -> float:
        """Dealer, after a beg: the chance he gives one rather than runs the cards."""
        return _sigmoid((af_strength(hand, trump) - AF_GIVE_AT) / self.sk.beg_tau)


def af_strength(hand: int, trump: int) -> float:
    """An All Fours hand's worth with `trump` as trumps: trumps, the chance of High, Jack and Low, Game cards."""
    tr = (hand >> (13 * trump)) & 0x1FFF
    cnt = tr.bit_count()
    top = tr.bit_length() - 1
    s = 0.8 * cnt
    if top >= 10:
        s += 1.0
    elif top >= RJ:
        s += 0.5
    if tr >> RJ & 1:
        s += 0.6
    if tr & 0b11:
        s += 0.4
    for su in range(4):
        if hand >> (13 * su + R10) & 1:
            s += 0.15
        if hand >> (13 * su + 12) & 1:
            s += 0.1
    return s


def af_keep_order(cards: list[int], trump: int) -> list[int]:
    """Cards from the most to the least worth keeping after a run (trumps first, then Game cards)."""

    def worth(c: int) -> float:
        s, r = divmod(c, 13)
        if s == trump:
            return 5.0 + r / 12 + (1.0 if r == RJ else 0.0) + (0.5 if r <= 1 else 0.0)
        return 0.15 * AF_PIPS.get(r, 0) + r / 24

    return sorted(cards, key=lambda c: (-worth(c), c))


def _as_cards(legal) -> list[int]:
    if isinstance(legal, (int, np.integer)):
        m = int(legal)
        out = []
        while m:
            low = m & -m
            out.append(low.bit_length() - 1)
            m ^= low
        return out
    return [int(c) for c in legal]


# ---------------------------------------------------------------------- the reader's belief


def sure_winner(pub: Public, seat: int) -> bool:
    """From the table's knowledge: seat's partner is winning the trick and nobody after `seat` can beat it."""
    ws = pub.win_seat
    side = pub.side_of
    if ws < 0 or side[ws] != side[seat] or ws == seat:
        return False
    later = pub.order[pub.pos + 1:]
    if all(side[o] == side[seat] for o in later):
        return True
    wc = pub.win_card
    stronger_out = pub.tab.hi[wc] & ~pub.played & ~pub.trick_mask
    if stronger_out:
        return False
    return wc // 13 == pub.trump


def observe(pub: Public, beliefs: dict[int, list[float]], seat: int, card: int) -> None:
    """Update every reader's belief on the key card after `seat` plays `card` (called before the card joins
    `pub`)."""
    key = pub.tab.key
    if card == key:
        return
    lead = pub.lead_suit
    if lead is None:
        return
    trump = pub.trump
    suit = card // 13
    # what the play shows under the follow-suit rule (a reader does not use must_trump_if_able's inference): out
    # of trumps (a trump lead not followed), and whether the key card, had he held it, was his to play
    shows_void_trumps = bool((shown_voids(pub.game, suit, lead, trump) >> trump) & 1)
    key_playable = bool((legal_mask(pub.game, (1 << card) | (1 << key), lead, trump) >> key) & 1)
    unfed = key_playable and sure_winner(pub, seat)
    if not (shows_void_trumps or unfed):
        return
    for r, bw in beliefs.items():
        if r == seat:
            continue
        if shows_void_trumps:
            bw[seat] = 0.0
        elif unfed:
            bw[seat] *= 0.2
