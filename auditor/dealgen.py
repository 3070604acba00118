"""Dealing-only seasons: fast, vectorised generators of shuffled and dealt packs with known cheaters, for testing and
calibrating the dealing-fairness tests without simulating the play.

A club of `n_players` rotates over tables of `table_size`: each session the players are seated at random (the
`n_players mod table_size` who sit out rotate), and every table plays one round in which each seated player deals
once (All Fours: a thrown-in deal is dealt again by the same dealer). Honest dealing is a uniform shuffle
(`numpy.random.Generator.permuted`); cheats act on the shuffled deck, so the deck still deals exactly the hands:

- `jack_stacker` (or any `rank` with `stacker`): in a fraction q of his deals the dealer moves the trump card of that
  rank from wherever it lies into his own hand (swapping it with one of his other cards). With `partner` set he
  does it only when that player cut (a stack survives only a friendly cut).
- `turnup_jack` (All Fours): in a fraction q of his deals the dealer turns up a Jack (a random Jack is swapped into
  the turn-up position) unless one is there already.
- `partner_stacker` (Scotch Whist, a season with `sides`): in a fraction q of his deals the dealer moves the Jack of
  trumps into the hand of one of his partners (a random one), swapping it with one of that partner's cards, unless a
  partner holds it already (a Jack turned up stays: moving it would change trumps).
- `cutter_stacker`: `stacker` of the Jack with `partner` the confederate: only on the deals that player cut.
- `af_own_jack` (All Fours): in a fraction q of his deals the dealer moves the Jack of the suit he will turn up into
  his own six dealt cards (no deal when the turn-up is that Jack).

`season(...)` returns the ground truth, the `DealingFacts` the detectors read (built directly, without a replay),
and can write the deals as canonical deal-log/1 records (hands-only, optionally with `deck`), whose replay gives the
same facts. The simulator (`auditor.simulate`) is the place for play; this module is for dealing studies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cards import CARD_STR, N_CARDS, RJ, cards_of, rank_of, suit_of
from .dealing import deal as deal_from_deck
from .facts import MAX_SEATS, NOWHERE, DealingFacts, config, jack_p
from .legal import legal_mask, trick_winner
from .rules import Rules, layout, resolve


@dataclass(frozen=True)
class Cheat:
    kind: str  # one of CHEAT_KINDS
    q: float
    rank: int = RJ
    partner: str | None = None  # stack only when this player cut

    def __post_init__(self) -> None:
        if self.kind not in CHEAT_KINDS:
            raise ValueError(f"unknown cheat kind {self.kind!r}; one of {CHEAT_KINDS}")

    @staticmethod
    def jack_stacker(q: float, partner: str | None = None) -> "Cheat":
        return Cheat("stacker", q, RJ, partner)

    @staticmethod
    def partner_stacker(q: float) -> "Cheat":
        return Cheat("partner_stacker", q, RJ)

    @staticmethod
    def cutter_stacker(q: float, confederate: str) -> "Cheat":
        return Cheat("cutter_stacker", q, RJ, confederate)

    @staticmethod
    def af_own_jack(q: float) -> "Cheat":
        return Cheat("af_own_jack", q, RJ)


CHEAT_KINDS = ("stacker", "turnup_jack", "partner_stacker", "cutter_stacker", "af_own_jack", "honest")
STACKING = ("stacker", "cutter_stacker", "af_own_jack")  # the trump card of `rank` into the dealer's own hand
SIDES = {"pairs_opposite": {4: [[0, 2], [1, 3]], 6: [[0, 3], [1, 4], [2, 5]], 8: [[0, 4], [1, 5], [2, 6], [3, 7]]},
         "alternate": {4: [[0, 2], [1, 3]], 6: [[0, 2, 4], [1, 3, 5]], 8: [[0, 2, 4, 6], [1, 3, 5, 7]]}}


@dataclass
class Season:
    rules: Rules
    table_size: int
    players: list[str]
    cheats: dict[str, Cheat]
    decks: np.ndarray  # [D, deck_len] int8: the pack after shuffle (and cheat), top card first
    dealer: np.ndarray  # [D] int32 player index
    seats: np.ndarray  # [D, table_size] int32 player index by absolute seat
    dealer_seat: np.ndarray  # [D]
    table: np.ndarray  # [D] int32 table index
    game: np.ndarray  # [D] int32 game index (a table's session)
    deal_no: np.ndarray  # [D]
    af: list[dict | None] = field(default_factory=list)  # All Fours begging per deal
    stacked: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # [D] bool: the cheat acted on this deal
    sides: list[list[int]] | None = None  # partnerships as lists of absolute seats (the log's `sides`)

    def side_of_seat(self) -> np.ndarray:
        """[table_size] the side of each absolute seat (each seat its own side without `sides`)."""
        side = np.arange(self.table_size)
        for k, grp in enumerate(self.sides or []):
            side[list(grp)] = k + self.table_size  # out of the seat range: no clash with a lone seat
        return side

    def side_rel(self) -> np.ndarray:
        """[D, MAX_SEATS] the side of each seat relative to the dealer (-1 past the table), as
        `detectors.partner_jack.sides_from_table` reads it off the replayed table."""
        n = self.table_size
        out = np.full((len(self), MAX_SEATS), -1, np.int64)
        side = self.side_of_seat()
        for rel in range(n):
            out[:, rel] = side[(self.dealer_seat + rel) % n]
        return out

    @property
    def key(self) -> dict:
        return {name: {"kind": c.kind, "q": c.q, "rank": CARD_STR[c.rank][0], "partner": c.partner}
                for name, c in self.cheats.items()}

    def __len__(self) -> int:
        return len(self.dealer)

    # ------------------------------------------------------------ facts, directly
    def facts(self) -> DealingFacts:
        rules, n = self.rules, self.table_size
        cfg = config(rules, n)
        D = len(self)
        idx = np.arange(D)
        holder = np.full((D, N_CARDS), NOWHERE, dtype=np.int8)
        hand_pos = [(k, c if c < MAX_SEATS else cfg.turnup_owner) for k, c in enumerate(cfg.slot_class)
                    if c < MAX_SEATS or (k == cfg.turnup_index and cfg.turnup_owner is not None)]
        pos = np.array([k for k, _ in hand_pos], dtype=np.int64)
        rel_of_pos = np.array([r for _, r in hand_pos], dtype=np.int8)
        holder[idx[:, None], self.decks[:, pos].astype(np.int64)] = rel_of_pos[None, :]
        sp = np.full((D, MAX_SEATS), -1, dtype=np.int32)
        for rel in range(n):
            sp[:, rel] = self.seats[idx, (self.dealer_seat + rel) % n]
        af = rules.game == "all_fours"
        turnup = self.decks[:, cfg.turnup_index].astype(np.int8)
        if af:
            # first turn-up: exact null given the six cards each already dealt
            jacks = np.array([s * 13 + RJ for s in range(4)])
            in_hands = (holder[:, jacks] != NOWHERE).sum(axis=1)
            p1 = (4 - in_hands) / (N_CARDS - 6 * n)
            ev_d = [idx]
            ev_j = [(turnup.astype(np.int64) % 13 == RJ).astype(np.int8)]
            ev_p = [p1]
            ev_r = [np.zeros(D, np.int8)]
            extra_d, extra_j, extra_p, extra_r = [], [], [], []
            for i, b in enumerate(self.af):
                if not b or not b["runs"]:
                    continue
                seen = 0
                for c in self.decks[i, :cfg.turnup_index + 1].tolist():
                    seen |= 1 << int(c)
                for j, (cards, rt) in enumerate(b["runs"], 1):
                    for h in cards:
                        for c in h:
                            seen |= 1 << c
                    extra_d.append(i)
                    extra_j.append(int(rank_of(rt) == RJ))
                    extra_p.append(jack_p(seen))
                    extra_r.append(j)
                    seen |= 1 << rt
            tu_deal = np.concatenate(ev_d + [np.array(extra_d, dtype=np.int64)])
            tu_jack = np.concatenate(ev_j + [np.array(extra_j, dtype=np.int8)])
            tu_p = np.concatenate(ev_p + [np.array(extra_p, dtype=float)])
            tu_run = np.concatenate(ev_r + [np.array(extra_r, dtype=np.int8)])
            o = np.lexsort((tu_run, tu_deal))
            tu_deal, tu_jack, tu_p, tu_run = tu_deal[o], tu_jack[o], tu_p[o], tu_run[o]
        out = DealingFacts(
            players=list(self.players), configs=[cfg], tables=[f"t{t}" for t in range(int(self.table.max()) + 1)],
            order=idx.astype(np.int64) + 1, table=self.table.astype(np.int32), cfg=np.zeros(D, np.int32),
            n=np.full(D, n, np.int8), seat_player=sp, cutter_rel=np.full(D, n - 1, np.int8), turnup=turnup,
            holder=holder, result_index=np.full(D, -1, np.int64), hands_known=np.ones(D, bool),
        )
        if af:
            out.tu_deal, out.tu_jack, out.tu_p, out.tu_run = tu_deal, tu_jack, tu_p, tu_run
        return out

    # ------------------------------------------------------------ deal-log/1 records
    def records(self, with_deck: bool = False, table_prefix: str = "t", game_prefix: str | None = None):
        """Canonical deal-log/1 records in order (line i+1 of a file holds deal i). Game ids are
        `game_prefix` (default: the game's first two letters and the table prefix) + "g" + number."""
        rules, n = self.rules, self.table_size
        gp = game_prefix if game_prefix is not None else rules.game[:2] + table_prefix
        for i in range(len(self)):
            dealer_seat = int(self.dealer_seat[i])
            L = layout(rules, n, dealer_seat)
            deck = [int(c) for c in self.decks[i]]
            dealt = deal_from_deck(L, deck)
            rec = {"format": "deal-log/1", "game": rules.game, "rules": rules.preset,
                   "table": f"{table_prefix}{int(self.table[i])}", "game_id": f"{gp}g{int(self.game[i])}",
                   "deal_no": int(self.deal_no[i]),
                   "players": [self.players[int(p)] for p in self.seats[i]], "dealer": dealer_seat}
            if self.sides:
                rec["sides"] = [list(g) for g in self.sides]
            if with_deck:
                rec["deck"] = [CARD_STR[c] for c in deck]
            rec["hands"] = [[CARD_STR[c] for c in h] for h in dealt.hands]
            rec["turn_up"] = CARD_STR[dealt.turn_up]
            if rules.game == "all_fours":
                b = self.af[i]
                if b and b["beg"] != "stand":
                    rec["beg"] = b["beg"]
                if b and b["runs"]:
                    rec["runs"] = [{"cards": [[CARD_STR[c] for c in h] for h in cards], "turn_up": CARD_STR[rt]}
                                   for cards, rt in b["runs"]]
                    if not b["bunched"]:
                        k = 3 * len(b["runs"])
                        held = [dealt.hands[s] + [x for cards, _ in b["runs"] for x in cards[s]] for s in range(n)]
                        rec["discards"] = [[CARD_STR[c] for c in held[s][:k]] for s in range(n)]
                if b and b["bunched"]:
                    rec["bunched"] = True
            yield rec


def _seatings(n_players: int, table_size: int, deals_each: int, rng: np.random.Generator):
    """Per session: a list of tables, each a list of player indexes by seat."""
    tables = n_players // table_size
    if tables == 0:
        raise ValueError(f"{n_players} players cannot fill a table of {table_size}")
    out_per = n_players - tables * table_size
    playing = n_players - out_per
    # each session every seated player deals once; sessions so that each player deals deals_each times on average
    sessions = int(round(deals_each * n_players / playing))
    for s in range(sessions):
        sit_out = {(s * out_per + j) % n_players for j in range(out_per)}
        here = np.array([p for p in range(n_players) if p not in sit_out])
        here = rng.permutation(here)
        yield [list(here[t * table_size:(t + 1) * table_size]) for t in range(tables)]


def season(rules: Rules | str, table_size: int, n_players: int, deals_each: int, rng: np.random.Generator,
           cheats: dict[str, Cheat] | None = None, names: list[str] | None = None,
           beg_prob: float = 0.35, run_prob: float = 0.5, sides: str | list[list[int]] | None = None) -> Season:
    """A dealing-only club season (see the module docstring). `rules` is a `Rules` or "game/preset". `sides`:
    partnerships by absolute seat, or a name of `SIDES` ("pairs_opposite", "alternate")."""
    if isinstance(rules, str):
        game, preset = rules.split("/")
        rules = resolve(game, preset)
    n = table_size
    names = names or [f"p{i:03d}" for i in range(n_players)]
    cheats = dict(cheats or {})
    pidx = {p: i for i, p in enumerate(names)}
    cfg = config(rules, n)
    pack = np.array(cards_of(cfg.pack), dtype=np.int8)
    tab_l: list[np.ndarray] = []  # one table's seating per game (a table's session)
    first_l: list[int] = []  # its first dealer's seat
    tno_l: list[int] = []  # its table number
    for tables in _seatings(n_players, n, deals_each, rng):
        for t, seat_players in enumerate(tables):
            first_l.append(int(rng.integers(n)))  # drawn table by table, between the sessions' seatings
            tab_l.append(np.asarray(seat_players, dtype=np.int32))
            tno_l.append(t)
    G = len(tab_l)
    D = G * n
    seats = np.repeat(np.array(tab_l, dtype=np.int32).reshape(G, n), n, axis=0)
    k = np.tile(np.arange(n), G)
    dealer_seat = ((np.repeat(np.array(first_l, dtype=np.int64), n) + k) % n).astype(np.int64)
    table_l = np.repeat(np.array(tno_l, dtype=np.int32), n)
    game_l = np.repeat(np.arange(G, dtype=np.int32), n)
    dno_l = (k + 1).astype(np.int32)
    decks = rng.permuted(np.tile(pack, (D, 1)), axis=1)
    if isinstance(sides, str):
        if n not in SIDES[sides]:
            raise ValueError(f"no {sides!r} partnerships at {n} players")
        sides = SIDES[sides][n]
    s = Season(rules, n, names, cheats, decks, seats[np.arange(D), dealer_seat], seats, dealer_seat,
               np.array(table_l, np.int32), np.array(game_l, np.int32), np.array(dno_l, np.int32),
               sides=[list(g) for g in sides] if sides else None)
    s.stacked = np.zeros(D, bool)
    _apply_cheats(s, cfg, pidx, rng)
    if rules.game == "all_fours":
        _af_begging(s, rng, beg_prob, run_prob)
    return s


def _apply_cheats(s: Season, cfg, pidx: dict[str, int], rng: np.random.Generator) -> None:
    n = s.table_size
    rel_pos = [np.array([k for k, c in enumerate(cfg.slot_class) if c == r], dtype=np.int64) for r in range(n)]
    side = s.side_of_seat()
    for name, ch in s.cheats.items():
        if ch.kind == "honest" or name not in pidx:
            continue
        if ch.kind == "af_own_jack" and cfg.game != "all_fours":
            raise ValueError("af_own_jack is an All Fours cheat")
        if ch.kind == "partner_stacker" and cfg.game != "scotch_whist":
            raise ValueError("partner_stacker is a Scotch Whist cheat")
        rows = np.nonzero(s.dealer == pidx[name])[0]
        if ch.partner is not None:
            cut_seat = (s.dealer_seat[rows] - 1) % n
            rows = rows[s.seats[rows, cut_seat] == pidx[ch.partner]]
        act = rows[rng.random(len(rows)) < ch.q]
        for i in act:
            deck = s.decks[i]
            if ch.kind in STACKING or ch.kind == "partner_stacker":
                trump = int(deck[cfg.turnup_index]) // 13
                card = trump * 13 + ch.rank
                where = np.nonzero(deck == card)[0]
                if not len(where):
                    continue  # the card is not in this pack
                k = int(where[0])
                if ch.kind == "partner_stacker":
                    d = int(s.dealer_seat[i])
                    targets = [r for r in range(1, n) if side[(d + r) % n] == side[d]]
                    if not targets:
                        continue  # no partner at this table
                else:
                    targets = [0]
                owned = {int(x) for r in targets for x in rel_pos[r]}
                if k in owned or (k == cfg.turnup_index and cfg.turnup_owner in targets):
                    s.stacked[i] = True
                    continue
                if k == cfg.turnup_index:
                    continue  # moving the turn-up would change trumps
                r = targets[0] if len(targets) == 1 else targets[int(rng.integers(len(targets)))]
                j = int(rng.choice(rel_pos[r]))
                deck[k], deck[j] = deck[j], deck[k]
                s.stacked[i] = True
            elif ch.kind == "turnup_jack":
                if int(deck[cfg.turnup_index]) % 13 == RJ:
                    s.stacked[i] = True
                    continue
                jack = int(rng.integers(4)) * 13 + RJ
                k = int(np.nonzero(deck == jack)[0][0])
                deck[k], deck[cfg.turnup_index] = deck[cfg.turnup_index], deck[k]
                s.stacked[i] = True
            else:
                raise ValueError(f"unknown cheat kind {ch.kind!r}")


def _af_begging(s: Season, rng: np.random.Generator, beg_prob: float, run_prob: float) -> None:
    """All Fours begging as a dealing-only model: the eldest begs with `beg_prob`; the dealer runs the cards with
    `run_prob` (else gives one); runs go on while the original suit turns; an exhausted pack is thrown in and the
    same dealer deals again (an extra deal)."""
    n = s.table_size
    cfg = config(s.rules, n)
    out: list[dict | None] = [None] * len(s)
    redeal: list[int] = []
    for i in range(len(s)):
        if rng.random() >= beg_prob:
            out[i] = {"beg": "stand", "runs": [], "bunched": False}
            continue
        if rng.random() >= run_prob:
            out[i] = {"beg": "take_one", "runs": [], "bunched": False}
            continue
        deck = s.decks[i].tolist()
        first_suit = suit_of(deck[cfg.turnup_index])
        pos = cfg.turnup_index + 1
        eldest = (int(s.dealer_seat[i]) + 1) % n
        runs: list[tuple[list[list[int]], int]] = []
        bunched = False
        while True:
            if pos + 3 * n + 1 > len(deck):
                bunched = True
                break
            cards: list[list[int]] = [[] for _ in range(n)]
            for off in range(n):
                seat = (eldest + off) % n
                cards[seat] = deck[pos:pos + 3]
                pos += 3
            rt = deck[pos]
            pos += 1
            runs.append((cards, rt))
            if suit_of(rt) != first_suit:
                break
        out[i] = {"beg": "run", "runs": runs, "bunched": bunched}
        if bunched:
            redeal.append(i)
    s.af = out
    if redeal:  # the same dealer deals again: an extra deal right after the thrown-in one
        _insert_redeals(s, redeal, rng, cfg)


def _insert_redeals(s: Season, rows: list[int], rng: np.random.Generator, cfg) -> None:
    pack = np.array(cards_of(cfg.pack), dtype=np.int8)
    order: list[tuple[int, int]] = [(i, 0) for i in range(len(s))] + [(i, 1) for i in rows]
    order.sort()
    new_decks = rng.permuted(np.tile(pack, (len(rows), 1)), axis=1)
    extra = {i: k for k, i in enumerate(rows)}
    src = np.array([i for i, _ in order])
    is_new = np.array([e for _, e in order], bool)
    decks = s.decks[src].copy()
    for pos in np.nonzero(is_new)[0]:
        decks[pos] = new_decks[extra[int(src[pos])]]
    # deal numbers: within a game, renumber in order
    game = s.game[src]
    deal_no = np.zeros(len(src), np.int32)
    last, k = None, 0
    for p, gm in enumerate(game):
        k = k + 1 if gm == last else 1
        last = gm
        deal_no[p] = k
    af = [s.af[int(i)] if not e else {"beg": "stand", "runs": [], "bunched": False} for i, e in order]
    s.decks, s.dealer, s.seats = decks, s.dealer[src], s.seats[src]
    s.dealer_seat, s.table, s.game, s.deal_no = s.dealer_seat[src], s.table[src], game, deal_no
    s.stacked = np.where(is_new, False, s.stacked[src])
    s.af = af


# ---------------------------------------------------------------- a table's consecutive deals, with play


def riffle(deck: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Gilbert–Shannon–Reeds riffle: a binomial cut, then each position takes the next card of a packet chosen
    with probability proportional to the cards left in it."""
    m = len(deck)
    k = int(rng.binomial(m, 0.5))
    top, bottom = list(deck[:k]), list(deck[k:])
    out = []
    i = j = 0
    while i < len(top) or j < len(bottom):
        a, b = len(top) - i, len(bottom) - j
        if rng.random() * (a + b) < a:
            out.append(top[i])
            i += 1
        else:
            out.append(bottom[j])
            j += 1
    return np.array(out, dtype=deck.dtype)


def human_shuffle(gathered: np.ndarray, riffles: int, rng: np.random.Generator, cut: bool = True) -> np.ndarray:
    """`riffles` GSR riffles of the gathered cards, then a cut near the middle (a person, not a generator)."""
    deck = np.asarray(gathered)
    for _ in range(riffles):
        deck = riffle(deck, rng)
    if cut:
        m = len(deck)
        k = int(min(max(round(m / 2 + rng.standard_normal() * m / 8), 4), m - 4))
        deck = np.concatenate([deck[k:], deck[:k]])
    return deck


def table_sequence(rules: Rules | str, players: list[str], deals: int, rng: np.random.Generator,
                   riffles: dict[str, int | None] | None = None, table: str = "t0", with_deck: bool = True):
    """Consecutive Scotch Whist deals at one table (4 to 8 players, one set), played with random legal cards, each
    pack being the previous deal's tricks gathered in play order and shuffled by the dealer: `riffles[player]`
    GSR riffles and a cut (None or absent: a perfect shuffle; 0: only a cut). Yields deal-log/1 records, each deal
    its own game (the scores are not the point here)."""
    if isinstance(rules, str):
        game, preset = rules.split("/")
        rules = resolve(game, preset)
    n = len(players)
    riffles = riffles or {}
    cfg = config(rules, n)
    gathered = np.array(cards_of(cfg.pack), dtype=np.int64)
    dealer = 0
    for i in range(deals):
        who = players[dealer]
        r = riffles.get(who)
        deck = rng.permutation(gathered) if r is None else human_shuffle(gathered, r, rng)
        L = layout(rules, n, dealer)
        dealt = deal_from_deck(L, [int(c) for c in deck])
        trump = dealt.turn_up // 13
        hold = [sum(1 << c for c in h) for h in dealt.hands]
        leader = L.eldest
        tricks = []
        for _k in range(L.n_tricks):
            t: list[int] = []
            for off in range(n):
                s = (leader + off) % n
                lead = t[0] // 13 if t else None
                m = legal_mask(rules.game, hold[s], lead, trump)
                choices = cards_of(m)
                c = choices[int(rng.integers(len(choices)))]
                hold[s] &= ~(1 << c)
                t.append(c)
            tricks.append(t)
            leader = (leader + trick_winner(rules.game, t, trump)) % n
        rec = {"format": "deal-log/1", "game": rules.game, "rules": rules.preset, "table": table,
               "game_id": f"{table}-g{i}", "deal_no": 1, "players": list(players), "dealer": dealer}
        if with_deck:
            rec["deck"] = [CARD_STR[int(c)] for c in deck]
        rec["hands"] = [[CARD_STR[c] for c in h] for h in dealt.hands]
        rec["turn_up"] = CARD_STR[dealt.turn_up]
        rec["tricks"] = [[CARD_STR[c] for c in t] for t in tricks]
        yield rec
        gathered = np.array([c for t in tricks for c in t], dtype=np.int64)
        dealer = (dealer + 1) % n
