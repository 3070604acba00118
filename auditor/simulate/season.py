"""A club season: players rotate across tables, each table plays whole games, every deal becomes a deal-log/1
record. The ground truth (skills, cheats and when they acted, planted revokes) goes to `Simulation.key`.

Scores: each record is replayed with the reference engine (`replay_deal`) and chained with `chain_games`, so the
`recorded` points, totals and winner are the engine's own; the same replay ends the game (41 / 7, a claimed
revoke under `lose_game`). A replay finding other than the planted revokes is a simulator bug and raises.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..cards import CARD_STR, RJ, cards_of
from ..dealing import deal as _deal
from ..dealog import FORMAT, Deal
from ..errors import AuditorError
from ..replay.chain import chain_games
from ..replay.reference import DealResult, replay_deal
from ..rules import AF_PIPS, SW_HONOURS, Rules, layout
from . import shuffle
from .play import Ctx, RevokeClock, SeatInfo, Uniforms, af_deal, play_tricks, sw_holdings
from .policy import Policy
from .io import write_simulation
from .spec import DEALING_CHEATS, SKILLS, CheaterSpec, SeasonSpec, TableSpec, player_names, score_gate

KEY_FORMAT = "sim-key/1"


class SimulationError(AuditorError):
    """The simulator produced a deal the replay does not accept as planted (a bug, never a user error)."""


@dataclass
class Simulation:
    records: list[dict]
    key: dict
    decisions: list[dict] | None = None
    spec: SeasonSpec | None = None

    def write(self, out: str, fmt: str | None = None, key_path: str | None = None,
              decisions_path: str | None = None) -> int:
        """Write the log (format from `fmt`, else from the name: .parquet or JSON Lines), the key, the decisions."""
        return write_simulation(self, out, fmt, key_path, decisions_path)


@dataclass
class _Table:
    spec: TableSpec
    index: int
    rules: Rules
    side_of: list[int]
    sides: list[list[int]] | None
    games: int = 0
    deals: int = 0
    gathered: dict = field(default_factory=dict)  # pack id -> (gathered deck, tricks of the last deal)


def _seed_info(rng: np.random.Generator):
    ss = getattr(rng.bit_generator, "seed_seq", None)
    if ss is None:
        return None
    ent = ss.entropy
    if not ss.spawn_key and isinstance(ent, int):
        return ent
    return {"entropy": ent if isinstance(ent, int) else [int(x) for x in ent], "spawn_key": list(ss.spawn_key)}


def _parse_time(s: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


def _fmt_time(t: _dt.datetime) -> str:
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def _next_session(t: _dt.datetime, start: _dt.datetime) -> _dt.datetime:
    """The next club night (Mondays and Thursdays at the start's time of day) after `t`."""
    d = t.date() + _dt.timedelta(days=1)
    while d.weekday() not in (0, 3):
        d += _dt.timedelta(days=1)
    return _dt.datetime.combine(d, start.timetz())


class _Season:
    def __init__(self, spec: SeasonSpec, rng: np.random.Generator, seed):
        spec.check()
        self.spec = spec
        self.rng = rng
        self.u = Uniforms(rng)
        self.seed = seed
        self.clock = RevokeClock(spec.revoke_rate, self.u)
        self._last_totals: list[int] | None = None  # the replay's totals after the last deal of the game in play
        members = spec.member_names()
        self.members = members
        mix = [(s, float(spec.skill_mix.get(s, 0.0))) for s in SKILLS]
        tot = sum(w for _, w in mix) or 1.0
        self.skill: dict[str, str] = {}
        self.riffles: dict[str, int] = {}
        for name in members:
            x = self.u() * tot
            acc = 0.0
            pick = "club"
            for s, w in mix:
                acc += w
                if x < acc:
                    pick = s
                    break
            self.skill[name] = spec.skills.get(name, pick)
            self.riffles[name] = 2 + int(self.u() * 3)
        self.policies = {s: Policy(s) for s in SKILLS}
        self.cheat = {c.player: c for c in spec.cheaters}
        self.cheat_events: dict[str, list] = {c.player: [] for c in spec.cheaters}
        self.cheat_chances: dict[str, int] = {c.player: 0 for c in spec.cheaters}
        self.cheat_acts: dict[str, int] = {}
        self.gate_played: dict[str, int] = {}  # score-gated cheaters: deals played
        self.gate_active: dict[str, list] = {}  # ... and the deals their gate was open
        self.revokes: list[dict] = []
        self.score_errors: list[dict] = []
        self.tables = []
        for i, t in enumerate(spec.tables):
            sides = [list(s) for s in t.sides] if t.sides else None
            side_of = list(range(t.n))
            if sides:
                for si, ss in enumerate(sides):
                    for seat in ss:
                        side_of[seat] = si
            self.tables.append(_Table(t, i, t.ruleset(), side_of, sides))
        self.decisions: list | None = [] if spec.log_decisions else None
        self.start = _parse_time(spec.start)
        self.layout_slots: dict = {}

    # ------------------------------------------------------------------ seating

    def seat_round(self) -> list[list[str]]:
        """Who sits where this round: a random draw of the members; colluders sit together at an individual
        table."""
        u = self.u
        if self.spec.fixed_seats:
            it = iter(self.members)
            return [[next(it) for _ in range(t.spec.n)] for t in self.tables]
        order = [self.members[i] for i in self.rng.permutation(len(self.members)).tolist()]
        seating: list[list[str | None]] = [[None] * t.spec.n for t in self.tables]
        placed: set[str] = set()
        for c in self.spec.cheaters:
            if c.kind != "colluder" or c.partner is None or c.player in placed or c.partner in placed:
                continue
            options = [t for t in self.tables if t.spec.sides is None and t.spec.n >= 3
                       and sum(x is None for x in seating[t.index]) >= 2]
            if not options:
                continue
            t = options[min(int(u() * len(options)), len(options) - 1)]
            free = [i for i, x in enumerate(seating[t.index]) if x is None]
            a = free.pop(min(int(u() * len(free)), len(free) - 1))
            b = free.pop(min(int(u() * len(free)), len(free) - 1))
            seating[t.index][a] = c.player
            seating[t.index][b] = c.partner
            placed |= {c.player, c.partner}
        rest = iter(p for p in order if p not in placed)
        for t in self.tables:
            row = seating[t.index]
            for i in range(len(row)):
                if row[i] is None:
                    row[i] = next(rest)
        return seating  # type: ignore[return-value]

    # ------------------------------------------------------------------ the deck

    def _slots(self, L, seat: int) -> list[int]:
        key = (id(L), seat)
        s = self.layout_slots.get(key)
        if s is None:
            s = [k for k, x in enumerate(L.deal_seat) if x == seat]
            self.layout_slots[key] = (s, L)  # keep L alive so its id stays unique
            return s
        return s[0]

    def make_deck(self, table: _Table, pack_key, L, dealer_name: str, gid: str, deal_no: int,
                  names: list[str] | None = None) -> list[int]:
        u, rng = self.u, self.rng
        prev = table.gathered.get(pack_key)
        cards = cards_of(L.pack)
        if table.spec.human_shuffle and prev is not None:
            deck = shuffle.human(prev[0], self.riffles[dealer_name], rng)
        else:
            deck = shuffle.perfect(cards, rng)
        ch = self.cheat.get(dealer_name)
        if ch is None:
            return deck
        kind = ch.kind
        if kind in ("partner_stacker", "cutter_stacker", "af_own_jack"):
            return self._new_dealing_cheat(ch, table, deck, L, dealer_name, names, gid, deal_no)
        if kind in ("jack_stacker", "turnup_jack", "bad_shuffler"):
            if kind == "turnup_jack" and table.spec.game != "all_fours":
                return deck
            if kind == "bad_shuffler" and prev is None:
                return deck
            self.cheat_chances[dealer_name] += 1
            if u() >= ch.q:
                return deck
            self.cheat_events[dealer_name].append({"game_id": gid, "deal_no": deal_no})
            if kind == "jack_stacker":
                deck = self._stack_jack(deck, L)
            elif kind == "turnup_jack":
                deck = self._turn_jack(deck, L)
            elif prev is None:  # (a bad shuffler with no previous deal returned above)
                return deck
            elif (ch.mode or "weak") == "weak":
                deck = shuffle.human(prev[0], 1, rng, do_cut=False)
            else:
                deck = self._stack_trick(deck, prev, table, L)
        return deck

    def _new_dealing_cheat(self, ch: CheaterSpec, table: _Table, deck: list[int], L, dealer_name: str,
                           names: list[str] | None, gid: str, deal_no: int) -> list[int]:
        """`partner_stacker`, `cutter_stacker`, `af_own_jack` (`CheaterSpec`): count the chance, act with
        probability q, list the deal in the key."""
        kind = ch.kind
        n = table.spec.n
        event: dict = {"game_id": gid, "deal_no": deal_no}
        if kind == "partner_stacker":
            sides = table.sides
            if not sides:
                return deck
            mine = next(side for side in sides if L.dealer in side)
            partners = [x for x in mine if x != L.dealer]
            if not partners:
                return deck
        elif kind == "cutter_stacker":
            if n < 3 or names is None or names[(L.dealer - 1) % n] != ch.partner:
                return deck
        elif table.spec.game != "all_fours":  # af_own_jack
            return deck
        self.cheat_chances[dealer_name] += 1
        if self.u() >= ch.q:
            return deck
        if kind == "partner_stacker":
            mate = partners[min(int(self.u() * len(partners)), len(partners) - 1)]
            if names is not None:
                event["partner"] = names[mate]
            deck = self._stack_jack(deck, L, mate)
        elif kind == "cutter_stacker":
            deck = self._stack_jack(deck, L)
        else:
            ti = L.turnup_index
            if deck[ti] % 13 == RJ:  # the turn-up is the Jack: the deal is left alone
                return deck
            deck = self._stack_jack(deck, L)
        self.cheat_events[dealer_name].append(event)
        return deck

    def _stack_jack(self, deck: list[int], L, seat: int | None = None) -> list[int]:
        """Rearrange the deck so that the dealer (or `seat`) is dealt the Jack of the suit that will be turned up,
        never as the turn-up itself: a turned-up Jack that is not `seat`'s own card (All Fours; Scotch Whist when
        `seat` is not the dealer) first swaps with another trump outside the seat's hand."""
        deck = list(deck)
        ti = L.turnup_index
        slots = self._slots(L, L.dealer if seat is None else seat)
        trump = deck[ti] // 13
        jack = trump * 13 + RJ
        pos = deck.index(jack)
        if pos in slots:
            return deck
        u = self.u
        if pos == ti:  # All Fours: the Jack itself would be turned; turn another trump instead
            others = [k for k, c in enumerate(deck) if c // 13 == trump and k != ti and k not in slots]
            k = others[min(int(u() * len(others)), len(others) - 1)]
            deck[ti], deck[k] = deck[k], deck[ti]
            pos = k
        free = [k for k in slots if k != ti]
        k = free[min(int(u() * len(free)), len(free) - 1)]
        deck[pos], deck[k] = deck[k], deck[pos]
        return deck

    def _turn_jack(self, deck: list[int], L) -> list[int]:
        deck = list(deck)
        ti = L.turnup_index
        if deck[ti] % 13 == RJ:
            return deck
        jacks = [k for k, c in enumerate(deck) if c % 13 == RJ]
        k = jacks[min(int(self.u() * len(jacks)), len(jacks) - 1)]
        deck[ti], deck[k] = deck[k], deck[ti]
        return deck

    def _stack_trick(self, deck: list[int], prev, table: _Table, L) -> list[int]:
        """The richest trick of the previous deal goes, as gathered, into the dealer's own hand; the rest of the
        pack is shuffled as he usually does."""
        gathered, tricks, trump = prev
        game = table.spec.game

        def worth(t: list[int]) -> float:
            if game == "scotch_whist":
                return sum(SW_HONOURS.get(c % 13, 0) for c in t if c // 13 == trump) + 0.1 * sum(c % 13 for c in t)
            return sum(AF_PIPS.get(c % 13, 0) for c in t)

        if not tricks:
            return deck
        best = max(tricks, key=worth)
        slots = [k for k in self._slots(L, L.dealer) if k != L.turnup_index]
        take = best[:len(slots)]
        rest = [c for c in deck if c not in set(take)]
        out: list[int | None] = [None] * len(deck)
        u = self.u
        free = list(slots)
        for c in take:
            k = free.pop(min(int(u() * len(free)), len(free) - 1))
            out[k] = c
        it = iter(rest)
        return [c if c is not None else next(it) for c in out]

    # ------------------------------------------------------------------ one game

    def play_game(self, table: _Table, names: list[str], t0: _dt.datetime) -> tuple[list[dict], _dt.datetime]:
        spec, ts = self.spec, table.spec
        u = self.u
        n = ts.n
        R = table.rules
        game = ts.game
        sw = game == "scotch_whist"
        table.games += 1
        gid = f"{spec.season}/{ts.name}/{table.games}"
        seats = []
        for name in names:
            ch = self.cheat.get(name)
            ally = -1
            if ch is not None and ch.kind == "colluder" and ch.partner in names and ts.sides is None:
                ally = names.index(ch.partner)
            seats.append(SeatInfo(name, self.policies[self.skill[name]], ch, ally, spec.revoke_rates.get(name)))
        ctx = Ctx(game, R, seats, table.side_of, u, spec.revoke_rate, spec.claim_rate, gid, 0, self.decisions)
        ctx.cheat_acts = self.cheat_acts
        ctx.clock = self.clock
        keep_gathered = ts.human_shuffle or any(c.kind == "bad_shuffler" for c in self.cheat.values())
        dealer = min(int(u() * n), n - 1)
        results: list[DealResult] = []
        records = []
        t = t0
        deal_no = 0
        table_totals = None  # the table's own running totals (differ from the replay's after a planted error)
        while True:
            deal_no += 1
            ctx.deal_no = deal_no
            ctx.revokes = []
            L = layout(R, n, dealer)
            packs = ts.packs
            pack_id = packs[table.deals % len(packs)] if packs else None
            table.deals += 1
            deck = self.make_deck(table, pack_id, L, names[dealer], gid, deal_no, names)
            rec: dict = {"format": FORMAT, "game": game, "rules": ts.rules}
            if ts.options:
                rec["options"] = dict(ts.options)
            rec["table"] = ts.name
            rec["game_id"] = gid
            rec["deal_no"] = deal_no
            if spec.time:
                rec["time"] = _fmt_time(t)
            rec["players"] = list(names)
            if table.sides:
                rec["sides"] = [list(s) for s in table.sides]
            rec["dealer"] = dealer
            if pack_id is not None:
                rec["pack"] = pack_id
            if spec.deck:
                rec["deck"] = [CARD_STR[c] for c in deck]
            before = self._last_totals if results else None
            gated = [s for s, si in enumerate(seats) if si.cheat is not None and si.cheat.kind == "marked_ten"
                     and si.cheat.mode == "score"]
            if gated:
                closed = set()
                for gs in gated:
                    name = names[gs]
                    self.gate_played[name] = self.gate_played.get(name, 0) + 1
                    if score_gate(before, table.side_of[gs], game, R.target):
                        self.gate_active.setdefault(name, []).append({"game_id": gid, "deal_no": deal_no})
                    else:
                        closed.add(gs)
                ctx.gate_off = frozenset(closed)
            elif ctx.gate_off:
                ctx.gate_off = frozenset()
            if sw:
                dealt = _deal(L, deck)
                trump = dealt.turn_up // 13
                rec["hands"] = [[CARD_STR[c] for c in h] for h in dealt.hands]
                rec["turn_up"] = CARD_STR[dealt.turn_up]
                dead = 0
                if dealt.shown is not None:
                    rec["shown"] = CARD_STR[dealt.shown]
                    dead = 1 << dealt.shown
                tricks = play_tricks(ctx, L, sw_holdings(L, dealt.hands), trump, dealt.turn_up, L.turnup_owner,
                                     dead, L.tricks_per_set)
                bunched = False
            else:
                target = R.target
                af = af_deal(ctx, L, deck, before if before is not None else [0] * (max(table.side_of) + 1), target)
                trump = af.trump
                rec["hands"] = [[CARD_STR[c] for c in h] for h in af.hands]
                rec["turn_up"] = CARD_STR[af.turnup]
                rec["beg"] = af.beg
                if af.runs:
                    rec["runs"] = [{"cards": [[CARD_STR[c] for c in cs] for cs in cards], "turn_up": CARD_STR[tu]}
                                   for cards, tu in af.runs]
                if af.discards is not None:
                    rec["discards"] = [[CARD_STR[c] for c in d] for d in af.discards]
                bunched = af.bunched
                if bunched:
                    tricks = []
                else:
                    ctx.holds = [h for h in af.holdings]
                    tricks = play_tricks(ctx, L, [[h] for h in af.holdings], trump, af.turnup, None, af.dead,
                                         (af.hand_size,))
            if not bunched:
                rec["tricks"] = [[CARD_STR[c] for c in tr] for tr in tricks]
            claims = []
            for trick_no, seat, kind, card in ctx.revokes:
                claimed = u() < spec.claim_rate
                if claimed:
                    claims.append({"revoke": seat, "trick": trick_no})
                self.revokes.append({"game_id": gid, "deal_no": deal_no, "trick": trick_no, "seat": seat,
                                     "player": names[seat], "kind": kind, "card": CARD_STR[card],
                                     "claimed": claimed})
            if claims:
                rec["claims"] = claims
            if bunched:
                rec["bunched"] = True
            # ---- score with the replay engine and chain the game so far
            deal = _as_deal(rec, R, f"{gid}#{deal_no}")
            res = replay_deal(deal)
            expected = {(tn, s) for tn, s, _, _ in ctx.revokes}
            bad = [f for f in res.findings if not (f.code == "revoke" and (f.trick, f.seat) in expected)]
            if bad or len(res.findings) != len(expected):
                raise SimulationError(f"simulated deal {gid} #{deal_no} replays with findings "
                                      f"{[(f.code, f.message) for f in res.findings]}")
            results.append(res)
            summaries, outcomes = chain_games(results)
            out = outcomes[len(results) - 1]
            if out.findings:
                raise SimulationError(f"simulated deal {gid} #{deal_no} chains with findings "
                                      f"{[(f.code, f.message) for f in out.findings]}")
            self._last_totals = out.totals_after
            ends = out.ends_game
            winner = summaries[0].winner
            if spec.recorded:
                if out.counted is None:
                    raise SimulationError(f"simulated deal {gid} #{deal_no}: the chain counted no points")
                points = list(out.counted)
                if table_totals is None:
                    table_totals = [0] * len(points)
                if spec.score_error_rate and u() < spec.score_error_rate:
                    side = min(int(u() * len(points)), len(points) - 1)
                    points[side] += 1
                    self.score_errors.append({"game_id": gid, "deal_no": deal_no, "side": side,
                                              "points": list(points), "replay_points": list(out.counted)})
                table_totals = [a + b for a, b in zip(table_totals, points, strict=True)]
                recd: dict[str, Any] = {"points": points, "totals": list(table_totals)}
                if ends and winner is not None:
                    recd["winner"] = winner
                rec["recorded"] = recd
            records.append(rec)
            # ---- the gathered cards, for the next human shuffle with this pack
            if keep_gathered:
                played = [c for tr in tricks for c in tr]
                if not played:  # a bunched deal: the hands are thrown together
                    played = [c for h in rec_hands_codes(rec) for c in h]
                seen = set(played)
                gathered = played + [c for c in deck if c not in seen]
                table.gathered[pack_id] = (gathered, tricks, trump)
            n_cards = sum(len(tr) for tr in tricks)
            t = t + _dt.timedelta(seconds=60 + 6 * n_cards + int(u() * 90))
            if ends:
                break
            if not bunched:
                dealer = (dealer + 1) % n
            if deal_no > 1000:
                raise SimulationError(f"game {gid} does not end")
        return records, t

    # ------------------------------------------------------------------ the season

    def run(self) -> Simulation:
        spec = self.spec
        records: list[dict] = []
        t = self.start
        night = t.date()
        while len(records) < spec.n_deals:
            seating = self.seat_round()
            batch: list[tuple[str, int, int, dict]] = []
            end = t
            count = len(records)
            for table in self.tables:
                if count >= spec.n_deals:
                    break
                recs, t_end = self.play_game(table, seating[table.index], t)
                count += len(recs)
                end = max(end, t_end)
                for r in recs:
                    batch.append((r.get("time", ""), table.index, r["deal_no"], r))
            batch.sort(key=lambda x: (x[0], x[1], x[2]))
            records += [b[3] for b in batch]
            t = end + _dt.timedelta(minutes=5)
            if t.hour >= 23 or t.date() != night:  # the club closes at 23:00: on to the next club night
                t = _next_session(_dt.datetime.combine(night, self.start.timetz()), self.start)
                night = t.date()
        return Simulation(records, self.make_key(records), self.decisions, spec)

    def make_key(self, records: list[dict]) -> dict:
        spec = self.spec
        cheaters = []
        for c in spec.cheaters:
            entry = {"player": c.player, "kind": c.kind, "q": c.q, "skill": self.skill[c.player]}
            if c.partner is not None:
                entry["partner"] = c.partner
            if c.mode is not None:
                entry["mode"] = c.mode
            if c.kind in DEALING_CHEATS:
                entry["deals_dealt"] = self.cheat_chances[c.player]
                entry["acted"] = self.cheat_events[c.player]
            else:
                entry["decisions_changed"] = self.cheat_acts.get(c.player, 0)
            if c.kind == "marked_ten" and c.mode == "score":
                active = self.gate_active.get(c.player, [])
                entry["deals_played"] = self.gate_played.get(c.player, 0)
                entry["active_deals"] = len(active)
                entry["active"] = active
            if c.kind == "revoker":
                entry["revokes"] = [r for r in self.revokes if r["player"] == c.player and r["kind"] == "deliberate"]
            cheaters.append(entry)
        tables = {t.spec.name: {"game": t.spec.game, "rules": t.spec.rules, "options": dict(t.spec.options),
                                "n": t.spec.n, "sides": t.sides, "packs": list(t.spec.packs),
                                "human_shuffle": t.spec.human_shuffle, "games": t.games, "deals": t.deals}
                  for t in self.tables}
        players = {name: {"skill": self.skill[name], "riffles": self.riffles[name]} for name in self.members}
        for name, rate in spec.revoke_rates.items():
            players[name]["revoke_rate"] = rate
        return {
            "format": KEY_FORMAT, "seed": self.seed, "deals": len(records),
            "games": sum(t.games for t in self.tables), "cheaters": cheaters, "players": players, "tables": tables,
            "revokes": self.revokes, "score_errors": self.score_errors, "spec": spec.to_json(),
        }


def _as_deal(rec: dict, ruleset, source: str) -> Deal:
    """The record as the reader's `Deal`, without re-validating a record the simulator itself built (the tests
    check every simulated record against `dealog.validate`)."""
    g = rec.get
    return Deal(source=source, file_index=0, line=rec["deal_no"], game=rec["game"], rules=rec["rules"],
                options=g("options") or {}, table=rec["table"], game_id=rec["game_id"], deal_no=rec["deal_no"],
                players=rec["players"], dealer=rec["dealer"], turn_up=rec["turn_up"], ruleset=ruleset,
                time=g("time"), sides=g("sides"), pack=g("pack"), deck=g("deck"), hands=g("hands"),
                shown=g("shown"), beg=g("beg"), runs=g("runs"), discards=g("discards"), tricks=g("tricks"),
                claims=g("claims"), bunched=bool(g("bunched", False)))


_CODE_OF = {name: code for code, name in enumerate(CARD_STR)}


def rec_hands_codes(rec: dict) -> list[list[int]]:
    """The hands of a record the simulator wrote (canonical card strings) as card codes."""
    return [[_CODE_OF[x] for x in h] for h in rec.get("hands", [])]


def simulate_season(spec: SeasonSpec, rng: np.random.Generator | None = None, *, seed=None) -> Simulation:
    """Simulate a season. Randomness only from `rng` (or `numpy.random.default_rng(seed)`); the key records the
    seed (`seed`, else the Generator's own seed when it was made from an int)."""
    if rng is None:
        rng = np.random.default_rng(seed)
    info = seed if seed is not None else _seed_info(rng)
    return _Season(spec, rng, info).run()


def simulate_dealing(table: TableSpec, n_deals: int, rng: np.random.Generator,
                     cheater: CheaterSpec | None = None) -> dict:
    """Deal only, no play: `n_deals` deals at one table, the deal passing to the left from seat 0, shuffled as the
    season shuffles (perfectly; there are no gathered tricks to riffle). A cheater, if given, sits at seat 0 (his
    `player` name is ignored; his `partner`, if any, sits at the last seat, on his right: his cutter). Returns numpy arrays: `dealer`, `jack_offset` (seat holding the Jack of the
    turn-up's suit, counted from the dealer; -1 when no hand holds it), `turnup_jack` (the turn-up is a Jack),
    `acted` (the cheater's trick was used on that deal)."""
    names = player_names(table.n)
    cheaters = []
    if cheater is not None:
        # a confederate (a cutter_stacker's partner) sits on the cheater's right, so he cuts for him
        partner = names[table.n - 1] if cheater.partner is not None else None
        cheaters = [replace(cheater, player=names[0], partner=partner)]
    spec = SeasonSpec(tables=[table], n_deals=n_deals, players=names, cheaters=cheaters)
    season = _Season(spec, rng, None)
    tab = season.tables[0]
    R = tab.rules
    n = table.n
    dealer_a = np.empty(n_deals, dtype=np.int8)
    jack_a = np.empty(n_deals, dtype=np.int8)
    tj_a = np.zeros(n_deals, dtype=bool)
    acted_a = np.zeros(n_deals, dtype=bool)
    events = season.cheat_events.get(names[0], [])
    for i in range(n_deals):
        dealer = i % n
        L = layout(R, n, dealer)
        before = len(events)
        deck = season.make_deck(tab, None, L, names[dealer], "dealing", i + 1, names)
        acted_a[i] = len(events) > before
        dealt = _deal(L, deck)
        tu = dealt.turn_up
        jack = (tu // 13) * 13 + RJ
        off = -1
        for s, h in enumerate(dealt.hands):
            if jack in h:
                off = (s - dealer) % n
                break
        dealer_a[i] = dealer
        jack_a[i] = off
        tj_a[i] = tu % 13 == RJ
    return {"dealer": dealer_a, "jack_offset": jack_a, "turnup_jack": tj_a, "acted": acted_a}
