"""What a simulated season is made of: tables, players, skills, cheaters, and the output switches.

A `SeasonSpec` is plain data. `club_season_spec()` builds the demo season (mixed games, ~60 players, planted
cheaters). Validation (`SeasonSpec.check()`) raises `UsageError` with a message that names the bad part.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import UsageError
from ..rules import resolve

SKILLS = ("novice", "club", "strong", "reader")
CHEAT_KINDS = ("jack_stacker", "turnup_jack", "marked_ten", "colluder", "revoker", "bad_shuffler", "partner_stacker",
               "cutter_stacker", "af_own_jack")
DEALING_CHEATS = ("jack_stacker", "turnup_jack", "bad_shuffler", "partner_stacker", "cutter_stacker", "af_own_jack")
SIDE_SHAPES = ("pairs", "teams")
GATE_NEAR = 10  # a score-gated marked-Ten player is active within this many points of the target (Scotch Whist)
GATE_BEHIND = 10  # ... or when his side trails the leading other side by this many points or more


def gate_points(points: int, game: str, target: int) -> int:
    """A Scotch Whist gate distance in the points of `game`: as it is for Scotch Whist (target 41); All Fours
    scales it to its target (10 of 41 is 2 of 7, 3 of 10 or 11), at least 1."""
    if game == "scotch_whist":
        return points
    return max(1, round(points * target / 41))


def score_gate(totals: list[int] | None, side: int, game: str, target: int) -> bool:
    """A score-gated marked-Ten player's gate for one deal: `totals` are the sides' game scores before the deal
    (None or empty: the game's first deal, every side at 0), `side` his side. True when target - his score <=
    GATE_NEAR or (the best other side's score) - his score >= GATE_BEHIND (both in `gate_points`)."""
    t = list(totals) if totals else []
    mine = t[side] if side < len(t) else 0
    others = [x for i, x in enumerate(t) if i != side] or [0]
    if target - mine <= gate_points(GATE_NEAR, game, target):
        return True
    return max(others) - mine >= gate_points(GATE_BEHIND, game, target)


def partnerships(n: int, shape: str | None) -> list[list[int]] | None:
    """Partnership seats for a table of `n`: "pairs" (partners opposite: 4 → two pairs, 6 → three pairs,
    8 → four pairs), "teams" (two sides on alternate seats), None (every player for himself)."""
    if shape is None or shape == "none":
        return None
    if shape == "pairs":
        if n % 2:
            raise UsageError(f"a table of {n} cannot sit in pairs")
        h = n // 2
        return [[i, i + h] for i in range(h)]
    if shape == "teams":
        if n % 2:
            raise UsageError(f"a table of {n} cannot sit in two alternate teams")
        return [list(range(0, n, 2)), list(range(1, n, 2))]
    raise UsageError(f"unknown partnership shape {shape!r} (pairs, teams or none)")


@dataclass(frozen=True)
class TableSpec:
    """One table: its game, rules, size and seating. `sides`: partnerships as lists of seats (None: individual);
    `packs`: pack ids the table alternates deal by deal (empty: no `pack` field); `human_shuffle`: its dealers
    riffle the gathered tricks (Gilbert–Shannon–Reeds riffles and a cut) instead of shuffling perfectly."""

    name: str
    n: int
    game: str = "scotch_whist"
    rules: str = "foster"
    options: dict = field(default_factory=dict, hash=False)
    sides: tuple | list | None = None
    packs: tuple = ()
    human_shuffle: bool = False

    def ruleset(self):
        try:
            return resolve(self.game, self.rules, dict(self.options))
        except KeyError as e:
            raise UsageError(f"table {self.name!r}: unknown game, preset or option {e.args[0]!r}") from None
        except ValueError as e:
            raise UsageError(f"table {self.name!r}: bad option value {e.args[0]!r}") from None

    def check(self) -> None:
        R = self.ruleset()
        if not R.min_players <= self.n <= R.max_players:
            raise UsageError(f"table {self.name!r}: {self.game} {self.rules} is for {R.min_players} to "
                             f"{R.max_players} players, not {self.n}")
        if self.sides is not None:
            seats = sorted(s for side in self.sides for s in side)
            if seats != list(range(self.n)) or any(not side for side in self.sides):
                raise UsageError(f"table {self.name!r}: sides {self.sides!r} do not partition seats 0..{self.n - 1}")


@dataclass(frozen=True)
class CheaterSpec:
    """A planted cheat. `q`: its strength (the fraction of the cheater's deals or decisions it acts on).
    `partner`: the accomplice of a `colluder`, the confederate cutter of a `cutter_stacker`.

    Dealing cheats (each acts on a fraction q of its chances, the deck otherwise a uniform shuffle or the table's
    human shuffle): `jack_stacker` deals himself the Jack of the suit turned up; `turnup_jack` (All Fours) turns up
    a Jack; `bad_shuffler` see `mode`; `partner_stacker` (partnership tables: his deals there) puts the Jack of
    trumps into a partner's hand (a random partner when his side has several), never the turn-up: the Jack swaps
    places with a random card of that partner's hand, and a Jack turned up is first swapped with another trump
    outside the partner's hand; `cutter_stacker` (his deals at tables of 3 or more whose cutter, the seat to the
    dealer's right, is `partner`) stacks as `jack_stacker` does; `af_own_jack` (All Fours: his deals) puts the Jack
    of the first turn-up's suit into his own dealt hand (a swap with a random card of it; a turned-up Jack is left
    alone and the deal is not counted as acted on). `mode`: `bad_shuffler` "weak" (one riffle, no cut) or "stack"
    (the richest trick of the previous deal into his own hand); `marked_ten` None (every deal) or "score": he uses
    his knowledge only on the deals where the score makes it worth it (`score_gate`: before the deal his side is
    within `GATE_NEAR` points of the game target, or trails the leading other side by `GATE_BEHIND` points or more;
    All Fours scales both to its target) and plays honestly on the others."""

    player: str
    kind: str
    q: float
    partner: str | None = None
    mode: str | None = None


@dataclass
class SeasonSpec:
    """A club season. `players`: the members' names, or a count (names are generated), or 0 for exactly as many
    as the tables seat. Skills not given in `skills` are drawn from `skill_mix`."""

    tables: list[TableSpec]
    n_deals: int = 1000
    players: list[str] | int = 0
    skills: dict[str, str] = field(default_factory=dict)
    skill_mix: dict[str, float] = field(default_factory=lambda: {"novice": 0.2, "club": 0.45, "strong": 0.25,
                                                                 "reader": 0.1})
    cheaters: list[CheaterSpec] = field(default_factory=list)
    deck: bool = True
    time: bool = True
    recorded: bool = True
    log_decisions: bool = False
    revoke_rate: float = 1 / 300  # accidental revokes per opportunity
    revoke_rates: dict[str, float] = field(default_factory=dict)  # clumsy members' own accidental rates
    claim_rate: float = 0.5  # chance the adversaries notice and claim a revoke
    score_error_rate: float = 0.0  # planted wrong `recorded.points` (one side off by one), listed in the key
    season: str = "sim"  # game_id prefix
    fixed_seats: bool = False  # True: no rotation, the members sit in list order at the tables every game
    start: str = "2026-01-05T19:30:00Z"

    def check(self) -> None:
        if not self.tables:
            raise UsageError("a season needs at least one table")
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise UsageError(f"table names repeat: {names}")
        for t in self.tables:
            t.check()
        if self.n_deals < 1:
            raise UsageError(f"the number of deals must be at least 1, got {self.n_deals}")
        seats = sum(t.n for t in self.tables)
        members = self.member_names()
        if len(members) < seats:
            raise UsageError(f"{len(members)} players cannot fill {seats} seats")
        for p, s in self.skills.items():
            if s not in SKILLS:
                raise UsageError(f"player {p!r}: unknown skill {s!r} ({', '.join(SKILLS)})")
        for s in self.skill_mix:
            if s not in SKILLS:
                raise UsageError(f"unknown skill {s!r} in skill_mix ({', '.join(SKILLS)})")
        for r, what in ((self.revoke_rate, "revoke_rate"), (self.claim_rate, "claim_rate"),
                        (self.score_error_rate, "score_error_rate")):
            if not 0 <= r <= 1:
                raise UsageError(f"{what} must be in [0, 1], got {r}")
        for p, r in self.revoke_rates.items():
            if p not in members:
                raise UsageError(f"revoke_rates: {p!r} is not a member of the club")
            if not 0 <= r <= 1:
                raise UsageError(f"revoke_rates[{p!r}] must be in [0, 1], got {r}")
        seen: set[str] = set()
        for c in self.cheaters:
            if c.kind not in CHEAT_KINDS:
                raise UsageError(f"unknown cheat {c.kind!r} ({', '.join(CHEAT_KINDS)})")
            if c.player not in members:
                raise UsageError(f"cheater {c.player!r} is not a member of the club")
            if c.player in seen:
                raise UsageError(f"player {c.player!r} has two cheats; give each cheater one")
            seen.add(c.player)
            if not 0 <= c.q <= 1:
                raise UsageError(f"cheater {c.player!r}: q must be in [0, 1], got {c.q}")
            if c.kind == "colluder":
                if c.partner is None or c.partner not in members or c.partner == c.player:
                    raise UsageError(f"colluder {c.player!r} needs a partner who is another club member")
                if not any(t.sides is None and t.n >= 3 for t in self.tables):
                    raise UsageError("colluders need a table of 3 or more with individual play")
            if c.kind == "marked_ten" and c.mode not in (None, "score"):
                raise UsageError(f"marked_ten mode must be 'score' or none, got {c.mode!r}")
            if c.kind == "partner_stacker" and not any(
                    self._partner_seats(c.player, t) for t in self.tables):
                raise UsageError(f"partner_stacker {c.player!r} never sits at a partnership table with a partner")
            if c.kind == "cutter_stacker":
                if c.partner is None or c.partner not in members or c.partner == c.player:
                    raise UsageError(f"cutter_stacker {c.player!r} needs a confederate (partner) who is another "
                                     "club member")
                if not self._can_cut_for(c.player, c.partner):
                    raise UsageError(f"cutter_stacker {c.player!r}: {c.partner!r} never cuts for him (a table of 3 "
                                     "or more with the confederate on the dealer's right)")
            if c.kind == "af_own_jack" and not any(t.game == "all_fours" for t in self.tables):
                raise UsageError("af_own_jack is an All Fours cheat; the season has no All Fours table")
            if c.kind == "bad_shuffler" and (c.mode or "weak") not in ("weak", "stack"):
                raise UsageError(f"bad_shuffler mode must be 'weak' or 'stack', got {c.mode!r}")
            if c.kind == "turnup_jack" and not any(t.game == "all_fours" for t in self.tables):
                raise UsageError("turnup_jack is an All Fours cheat; the season has no All Fours table")

    def fixed_seating(self) -> list[list[str]]:
        """With `fixed_seats`: the members in list order, table by table."""
        it = iter(self.member_names())
        return [[next(it) for _ in range(t.n)] for t in self.tables]

    def _partner_seats(self, player: str, t: TableSpec) -> bool:
        """Whether `player` can sit at table `t` with a partner (a side of two or more)."""
        if t.sides is None or not any(len(side) > 1 for side in t.sides):
            return False
        if not self.fixed_seats:
            return True
        row = self.fixed_seating()[self.tables.index(t)]
        if player not in row:
            return False
        seat = row.index(player)
        return any(seat in side and len(side) > 1 for side in t.sides)

    def _can_cut_for(self, dealer: str, cutter: str) -> bool:
        """Whether `cutter` can sit on `dealer`'s right (the default cutter's seat) at a table of 3 or more."""
        if not self.fixed_seats:
            return any(t.n >= 3 for t in self.tables)
        for t, row in zip(self.tables, self.fixed_seating(), strict=True):
            if t.n >= 3 and dealer in row and cutter in row and \
                    row.index(cutter) == (row.index(dealer) - 1) % t.n:
                return True
        return False

    def member_names(self) -> list[str]:
        if isinstance(self.players, list):
            return list(self.players)
        count = self.players or sum(t.n for t in self.tables)
        return player_names(count)

    def to_json(self) -> dict:
        d = asdict(self)
        d["tables"] = [asdict(t) | {"sides": [list(s) for s in t.sides] if t.sides else None,
                                    "packs": list(t.packs)} for t in self.tables]
        d["cheaters"] = [asdict(c) for c in self.cheaters]
        return d


_NAMES = (
    "ada", "ben", "cora", "dan", "eve", "finn", "gwen", "hal", "iris", "jack", "kate", "leo", "mia", "ned", "olga",
    "pat", "quin", "rosa", "sam", "tess", "ugo", "vera", "walt", "xena", "yuri", "zoe", "abe", "bea", "cal", "dot",
    "eli", "fay", "gus", "hope", "ivan", "jo", "kit", "lou", "max", "nell", "otto", "peg", "ray", "sue", "ted",
    "una", "vic", "wyn", "amos", "bess", "cyd", "dora", "ezra", "flo", "gil", "hugo", "ida", "jem", "kay", "lars",
    "meg", "nat", "oz", "pia", "rex", "sol", "tom", "val", "will", "yves",
)


def player_names(count: int) -> list[str]:
    if count <= len(_NAMES):
        return list(_NAMES[:count])
    return list(_NAMES) + [f"p{i:03d}" for i in range(len(_NAMES), count)]


def club_season_spec(n_deals: int = 20000, *, deck: bool = True, time: bool = True, recorded: bool = True,
                     packs: bool = True, log_decisions: bool = False) -> SeasonSpec:
    """The demo season: Scotch Whist at tables of 4 (pairs), 5 and 6, All Fours pairs and threes, about 60
    players, and one planted cheater of each kind."""
    two = ("red", "blue")
    tables = [
        TableSpec("sw4-a", 4, sides=partnerships(4, "pairs"), packs=two if packs else (), human_shuffle=True),
        TableSpec("sw4-b", 4, sides=partnerships(4, "pairs"), packs=two if packs else ()),
        TableSpec("sw4-c", 4, sides=partnerships(4, "pairs")),
        TableSpec("sw5-a", 5, human_shuffle=True),
        TableSpec("sw5-b", 5),
        TableSpec("sw6-pairs", 6, sides=partnerships(6, "pairs"), human_shuffle=True),
        TableSpec("sw6-open", 6),
        TableSpec("af4-a", 4, game="all_fours", sides=partnerships(4, "pairs"), packs=two if packs else ()),
        TableSpec("af4-b", 4, game="all_fours", sides=partnerships(4, "pairs"), human_shuffle=True),
        TableSpec("af4-c", 4, game="all_fours", sides=partnerships(4, "pairs")),
        TableSpec("af3", 3, game="all_fours"),
        TableSpec("af2", 2, game="all_fours"),
    ]
    players = player_names(60)
    cheaters = [
        CheaterSpec("kate", "jack_stacker", 0.5),
        CheaterSpec("otto", "turnup_jack", 0.4),
        CheaterSpec("walt", "marked_ten", 1.0),
        CheaterSpec("rosa", "colluder", 0.8, partner="gus"),
        CheaterSpec("gus", "colluder", 0.8, partner="rosa"),
        CheaterSpec("ray", "revoker", 0.1),
        CheaterSpec("lou", "bad_shuffler", 0.5, mode="stack"),
    ]
    skills = {"walt": "strong", "ray": "club", "tess": "reader", "max": "reader", "ida": "reader"}
    return SeasonSpec(tables=tables, n_deals=n_deals, players=players, skills=skills, cheaters=cheaters, deck=deck,
                      time=time, recorded=recorded, log_decisions=log_decisions, season="club")
