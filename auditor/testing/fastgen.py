"""Random legal Scotch Whist deals in bulk (numpy), for the benchmark: a million deals in seconds.

Same model as `generate`: a uniformly shuffled pack dealt one card at a time from the eldest hand, the turn-up the
dealer's last card, every card chosen uniformly among the legal ones, trick winners by the rules (`auditor.legal`,
looked up in tables built from its functions). Scores are
counted here with their own code (honours to the side winning them, cards over the number dealt) and the winner
of a count-out by `auditor.replay.chain.sw_countout`, so the batch engine that later replays these deals is
checked, not copied; the benchmark also replays a sample of the games with the reference engine.

Only the one-hand deals of 4 to 8 players under `foster` with the standard pack (4, 6 and 8 players, or 5 and 7
with the spade six removed) are generated here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..cards import CARD_STR
from ..dealog import Deal
from ..legal import legal_suits, trick_key
from ..replay.chain import sw_countout
from ..replay.reference import SW_STEPS, DealResult
from ..rules import layout, resolve

HONOUR = {8: (10, "ten"), 12: (4, "ace"), 11: (3, "king"), 10: (2, "queen"), 9: (11, "jack")}
_GAME = "scotch_whist"  # foster: void_rule trump_or_discard
# the play's rules as tables over arrays: the suits a hand may play [lead, trump, suits held (4 bits)] and each
# card's order in a trick [trump, lead, card]
_LEGAL_SUITS = np.array([[[legal_suits(_GAME, h, lead, trump) for h in range(16)] for trump in range(4)]
                         for lead in range(4)], np.int64)
_TRICK_KEY = np.array([[[trick_key(_GAME, c, lead, trump) for c in range(52)] for lead in range(4)]
                       for trump in range(4)], np.int64)


@dataclass
class Batch:
    """`N` deals as arrays (absolute seats)."""

    game_no: np.ndarray  # int64 game number
    deal_no: np.ndarray  # int64
    dealer: np.ndarray  # int64
    deck: np.ndarray  # uint8 [N, D]
    hands: np.ndarray  # uint8 [N, n, H] in the order received
    tricks: np.ndarray  # uint8 [N, T, n] in play order
    turn_up: np.ndarray  # uint8
    points: np.ndarray  # int64 [N, S]
    totals: np.ndarray  # int64 [N, S]
    winner: np.ndarray  # int64, -1 none (only on the last deal of a game)


def _play(rng: np.random.Generator, rel_hands: np.ndarray, trump: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Uniform random legal play. Returns (tricks [N, T, n] cards, seats [N, T, n] relative, winners [N, T])."""
    N, _, H = rel_hands.shape
    T = H
    suit = (rel_hands // 13).astype(np.int64)
    tr = trump.astype(np.int64)
    played = np.zeros((N, n, H), bool)
    tricks = np.zeros((N, T, n), np.uint8)
    seats = np.zeros((N, T, n), np.int8)
    winners = np.zeros((N, T), np.int8)
    leader = np.zeros(N, np.int64)
    ar = np.arange(N)
    for k in range(T):
        lead = np.zeros(N, np.int64)
        for p in range(n):
            s = (leader + p) % n
            avail = ~played[ar, s]  # [N, H]
            if p == 0:
                legal = avail
            else:
                held = np.bitwise_or.reduce(np.where(avail, 1 << suit[ar, s], 0), axis=1)
                ok = _LEGAL_SUITS[lead, tr, held]
                legal = avail & (((ok[:, None] >> suit[ar, s]) & 1) == 1)
            u = rng.random((N, H))
            u[~legal] = -1.0
            j = u.argmax(1)
            played[ar, s, j] = True
            c = rel_hands[ar, s, j]
            tricks[:, k, p] = c
            seats[:, k, p] = s
            if p == 0:
                lead = suit[ar, s, j]
        key = _TRICK_KEY[tr[:, None], lead[:, None], tricks[:, k, :]]
        pos = key.argmax(1)
        w = seats[ar, k, pos].astype(np.int64)
        winners[:, k] = w
        leader = w
    return tricks, seats, winners


def deal_batch(rng: np.random.Generator, N: int, n: int, dealer: np.ndarray, side_of: np.ndarray):
    """N deals of an n-player one-hand Scotch Whist game: (deck, hands abs, tricks, turn_up, steps [N, 6, S])."""
    R = resolve("scotch_whist", "foster")
    L0 = layout(R, n, n - 1)
    pack = np.array([c for c in range(52) if (L0.pack >> c) & 1], np.uint8)
    D = len(pack)
    H = D // n
    deck = rng.permuted(np.broadcast_to(pack, (N, D)).copy(), axis=1)
    rel = deck.reshape(N, H, n).transpose(0, 2, 1)  # card k -> relative seat k % n, slot k // n
    turn_up = deck[:, D - 1]
    trump = (turn_up // 13).astype(np.int8)
    tricks, seats, winners = _play(rng, rel, trump, n)
    eldest = (dealer + 1) % n
    rot = (eldest[:, None] + np.arange(n)) % n  # relative seat o is absolute seat rot[:, o]
    hands = np.empty_like(rel)
    hands[np.arange(N)[:, None], rot] = rel
    S = int(side_of.max()) + 1
    side_rel = side_of[rot]  # [N, n]
    wside = np.take_along_axis(side_rel, winners.astype(np.int64), 1)  # [N, T]
    steps = np.zeros((N, 6, S), np.int64)  # ten, cards, ace, king, queen, jack
    order = {"ten": 0, "cards": 1, "ace": 2, "king": 3, "queen": 4, "jack": 5}
    istr = (tricks // 13) == trump[:, None, None]
    rk = tricks % 13
    for r, (val, name) in HONOUR.items():
        has = (istr & (rk == r)).any(2)  # [N, T]
        for sd in range(S):
            steps[:, order[name], sd] += val * (has & (wside == sd)).sum(1)
    base = np.bincount(side_of, minlength=S) * H
    for sd in range(S):
        won = (wside == sd).sum(1) * n
        steps[:, 1, sd] = np.maximum(won - base[sd], 0)
    return deck, hands, tricks, turn_up, steps


def bench_games(rng: np.random.Generator, n_deals: int, n: int = 4, sides=((0, 2), (1, 3)),
                concurrent: int = 50000) -> Iterator[Batch]:
    """Whole games (deal 1 until a side reaches 41) until `n_deals` deals; yields rounds of deals."""
    R = resolve("scotch_whist", "foster")
    side_of = np.zeros(n, np.int64)
    if sides:
        for i, s in enumerate(sides):
            for x in s:
                side_of[x] = i
    else:
        side_of = np.arange(n)
    S = int(side_of.max()) + 1
    # the count-out of a deal where several sides pass 41 is chain.sw_countout's: a deal of these sides to count
    count_deal = Deal(source="", file_index=0, line=0, game="scotch_whist", rules="foster", options={}, table="",
                      game_id="", deal_no=1, players=[f"p{i}" for i in range(n)], dealer=0, turn_up="", ruleset=R,
                      sides=[list(s) for s in sides] if sides else None)
    assert count_deal.n_sides == S
    made = 0
    next_game = 0
    G = min(concurrent, n_deals)
    game_no = np.arange(G)
    next_game = G
    deal_no = np.ones(G, np.int64)
    dealer = rng.integers(0, n, G)
    totals = np.zeros((G, S), np.int64)
    while made < n_deals:
        G = len(game_no)
        if G == 0:
            break
        take = min(G, n_deals - made)
        if take < G:
            game_no, deal_no, dealer, totals = game_no[:take], deal_no[:take], dealer[:take], totals[:take]
            G = take
        deck, hands, tricks, turn_up, steps = deal_batch(rng, G, n, dealer, side_of)
        pts = steps.sum(1)
        after = totals + pts
        reached = after >= 41
        ends = reached.any(1)
        winner = np.where(ends, reached.argmax(1), -1)
        multi = np.flatnonzero(reached.sum(1) > 1)
        for i in multi.tolist():
            full = {"penalty": [0] * S}
            for j, name in enumerate(("ten", "cards", "ace", "king", "queen", "jack")):
                full[name] = [int(x) for x in steps[i, j]]
            res = DealResult(count_deal)
            res.sw_steps = {k: full[k] for k in SW_STEPS}
            _, w, _ = sw_countout(res, [int(x) for x in totals[i]])
            winner[i] = -1 if w is None else w
        yield Batch(game_no=game_no.copy(), deal_no=deal_no.copy(), dealer=dealer.copy(), deck=deck, hands=hands,
                    tricks=tricks, turn_up=turn_up, points=pts, totals=after, winner=np.where(ends, winner, -1))
        made += G
        # games that go on, and new games in place of the ended ones
        go = ~ends
        k_new = int(ends.sum())
        game_no = np.concatenate([game_no[go], np.arange(next_game, next_game + k_new)])
        next_game += k_new
        deal_no = np.concatenate([deal_no[go] + 1, np.ones(k_new, np.int64)])
        dealer = np.concatenate([(dealer[go] + 1) % n, rng.integers(0, n, k_new)])
        totals = np.concatenate([after[go], np.zeros((k_new, S), np.int64)])


_Q = [f'"{s}"'.encode() for s in CARD_STR]


def jsonl_lines(b: Batch, n: int, sides=((0, 2), (1, 3)), players=None, table: str = "bench") -> list[bytes]:
    """Canonical deal-log/1 lines for a batch."""
    players = players or [f"p{i}" for i in range(n)]
    head = (b'{"format":"deal-log/1","game":"scotch_whist","rules":"foster","table":"' + table.encode() +
            b'","game_id":"')
    pl = b'"players":[' + b",".join(f'"{p}"'.encode() for p in players) + b"],"
    sd = (b'"sides":[' + b",".join(b"[" + b",".join(str(x).encode() for x in s) + b"]" for s in sides) + b"],") \
        if sides else b""
    Q = _Q
    out = []
    N = len(b.game_no)
    decks = b.deck.tolist()
    hands = b.hands.tolist()
    tricks = b.tricks.tolist()
    for i in range(N):
        deck = b",".join([Q[c] for c in decks[i]])
        hs = b",".join([b"[" + b",".join([Q[c] for c in h]) + b"]" for h in hands[i]])
        ts = b",".join([b"[" + b",".join([Q[c] for c in t]) + b"]" for t in tricks[i]])
        rec = (b'"recorded":{"points":[' + b",".join(str(int(x)).encode() for x in b.points[i]) +
               b'],"totals":[' + b",".join(str(int(x)).encode() for x in b.totals[i]) + b"]")
        if b.winner[i] >= 0:
            rec += b',"winner":' + str(int(b.winner[i])).encode()
        out.append(head + f"bench-{int(b.game_no[i])}".encode() + b'","deal_no":' + str(int(b.deal_no[i])).encode()
                   + b"," + pl + sd + b'"dealer":' + str(int(b.dealer[i])).encode() + b',"deck":[' + deck
                   + b'],"hands":[' + hs + b'],"turn_up":' + Q[int(b.turn_up[i])] + b',"tricks":[' + ts + b"],"
                   + rec + b"}}")
    return out
