"""The audit's columns (`auditor.columns.AuditColumns`) straight from the batch kernel, a chunk at a time.

Rows the kernel replayed take their fields from the chunk's columns and the kernel's arrays (`replay_chunk(...,
detail="cols")`): hands, trump, plays and winners per group of (rules, player count), turned from seats relative
to the eldest hand to the log's seats. Rows left to the reference engine come through `columns.from_results`.
`tests/test_columns.py` checks both ways give the same columns on every deal.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..cards import CARD_STR
from ..columns import MAX_SEATS, NOCARD, AuditColumns, blank, from_results, set_canonical_order, time_keys
from ..replay.reference import DealResult
from ..rules import layout
from .cols import Chunk, DictColumn, Registry, uniq
from .kernel import ChunkResult

_CARD_OBJ = np.array(CARD_STR, dtype=object)  # a card's string by its code (a code past the cards: IndexError)


class Interner:
    """Strings to ids in first-seen order, shared across the chunks of one run."""

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = {}
        self.names: list[Any] = []

    def get(self, v: Hashable) -> int:
        i = self.ids.get(v)
        if i is None:
            i = self.ids[v] = len(self.names)
            self.names.append(v)
        return i

    def many(self, vals: Sequence[Hashable]) -> np.ndarray:
        get = self.ids.get
        out = np.fromiter((get(v, -1) for v in vals), np.int64, len(vals))
        miss = np.flatnonzero(out < 0)
        for j in miss.tolist():
            out[j] = self.get(vals[j])
        return out


class ColumnsBuilder:
    """Collects the columns of every chunk of a run; `finish()` gives them in input order, each row's `order` its
    rank in the canonical order of the whole run (`columns.canonical_order`)."""

    def __init__(self, reg: Registry) -> None:
        self.reg = reg
        self.tables, self.games, self.players, self.packs = Interner(), Interner(), Interner(), Interner()
        self.parts: list[AuditColumns] = []
        self._lu_table = np.zeros((0, MAX_SEATS), np.int32)

    def _lineup_table(self) -> np.ndarray:
        """[line-ups, MAX_SEATS] player ids of every line-up the registry knows (grown as new ones come)."""
        lus = self.reg.lineups
        have = len(self._lu_table)
        if have < len(lus):
            fresh = lus[have:]
            lens = np.fromiter(map(len, fresh), np.int64, len(fresh))
            ids = self.players.many([p for names in fresh for p in names])
            new = np.full((len(fresh), MAX_SEATS), -1, np.int32)
            rows = np.repeat(np.arange(len(fresh)), lens)
            seats = np.arange(len(ids)) - np.repeat(np.cumsum(lens) - lens, lens)
            new[rows, seats] = ids
            self._lu_table = np.concatenate([self._lu_table, new])
        return self._lu_table

    def add(self, ch: Chunk, out: ChunkResult, handled: np.ndarray, ref_results: dict[int, DealResult]) -> None:
        kr = np.flatnonzero(handled)
        if kr.size:
            self.parts.append(self._kernel_part(ch, out, kr))
        if ref_results:
            rp = from_results([ref_results[i] for i in sorted(ref_results)])
            # in the builder's string ids, so that every part shares one list per kind (concat keeps the ids)
            for key, col, inter in (("tables", "table", self.tables), ("game_ids", "game", self.games),
                                    ("packs", "pack", self.packs), ("players", "seat_player", self.players)):
                names = getattr(rp, key)
                m = np.append(inter.many(names) if names else np.zeros(0, np.int64), -1)
                rp.arrays[col] = m[rp.arrays[col]].astype(rp.arrays[col].dtype)
                setattr(rp, key, inter.names)
            self.parts.append(rp)

    def finish(self) -> AuditColumns:
        allc = AuditColumns.concat(self.parts)
        self.parts = []
        allc.paths = list(self.reg.paths)
        key = (allc.file_index.astype(np.int64) << 32) | allc.line
        order = np.argsort(key, kind="stable")  # rows in input order
        if len(order) and (order != np.arange(len(order))).any():
            allc = reorder(allc, order)
        set_canonical_order(allc)  # as `replay_records` orders the results of the same input
        return allc

    # ------------------------------------------------------------ kernel rows
    def _kernel_part(self, ch: Chunk, out: ChunkResult, kr: np.ndarray) -> AuditColumns:
        reg = self.reg
        D = len(kr)
        pos = np.full(ch.n, -1, np.int64)
        pos[kr] = np.arange(D)
        P = max([sum(g[7]) for g in out.cols] + [1])
        T = max([len(g[7]) for g in out.cols] + [1])
        S = max(1, out.points.shape[1])
        a = blank(D, {"P": P, "T": T, "S": S})
        c = AuditColumns(tables=self.tables.names, game_ids=self.games.names, players=self.players.names,
                         packs=self.packs.names, rulesets=reg.rulesets, arrays=a)
        a["file_index"][:] = ch.fi if ch.fis is None else ch.fis[kr]
        a["line"][:] = ch.line[kr]
        tabs = ch.table if ch.table is not None else [""] * ch.n
        if isinstance(tabs, DictColumn):
            a["table"][:] = np.append(self.tables.many(tabs.values), -1)[tabs.codes[kr]]
        else:
            a["table"][:] = self.tables.many(tabs if D == ch.n else [tabs[i] for i in kr.tolist()])
        gcodes = ch.gid[kr]
        ucodes, inv = np.unique(gcodes, return_inverse=True)
        gv = ch.gid_vals
        gnames = [gv[int(x)] if isinstance(gv, list) else gv[int(x)].as_py() for x in ucodes]
        a["game"][:] = self.games.many(gnames)[inv]
        a["deal_no"][:] = ch.deal_no[kr]
        if ch.time is not None:
            a["time"][:] = time_keys(ch.time if D == ch.n else [ch.time[i] for i in kr.tolist()])
        if isinstance(ch.pack, DictColumn):
            if ch.pack.values:
                a["pack"][:] = np.append(self.packs.many(ch.pack.values), -1)[ch.pack.codes[kr]]
        elif ch.pack is not None:
            packs = [ch.pack[i] for i in kr.tolist()]
            has = np.fromiter((p is not None for p in packs), bool, D)
            if has.any():
                hp = np.flatnonzero(has)
                a["pack"][hp] = self.packs.many([packs[j] for j in hp.tolist()])
        a["rset"][:] = ch.rset[kr]
        n = ch.nplayers[kr].astype(np.int64)
        a["n"][:] = n
        dealer = ch.dealer[kr].astype(np.int64)
        a["dealer"][:] = dealer
        cut = ch.cutter[kr].astype(np.int64)
        a["cutter"][:] = np.where(cut < 0, (dealer - 1) % np.maximum(n, 1), cut)
        # sides and line-ups: once per distinct value
        sd = ch.sides[kr].astype(np.int64)
        combo = sd * 16 + n
        for cval in uniq(combo).tolist():
            m = combo == cval
            sid, k = cval // 16, cval % 16
            so = np.full(MAX_SEATS, -1, np.int8)
            so[:k] = reg.side_of_row(int(sid), int(k))
            a["side_of"][m] = so
            a["n_sides"][m] = reg.n_sides(int(sid), int(k))
        a["seat_player"][:] = self._lineup_table()[ch.lineup[kr]]
        tu, sh = ch.turn_up[kr].astype(np.int16), ch.shown[kr].astype(np.int16)
        a["turn_up"][:] = np.where(tu == NOCARD, -1, tu)
        a["shown"][:] = np.where(sh == NOCARD, -1, sh)
        a["rec_hands"][:] = ch.hands.has[kr]
        a["has_hands"][:] = True
        # the kernel's arrays, group by group
        for rows, eldest, masks, trump, cards, seats, winners, sizes, gn in out.cols:
            p = pos[rows]
            keep = p >= 0  # rows the kernel dropped afterwards went to the reference engine
            if not keep.all():
                rows, eldest, masks, trump = rows[keep], eldest[keep], masks[:, keep], trump[keep]
                cards, seats, winners = cards[:, :, keep], seats[:, :, keep], winners[:, keep]
                p = p[keep]
            if not len(p):
                continue
            el = eldest.astype(np.int64)
            a["trump"][p] = trump
            for s in range(gn):
                a["hands"][p, s] = masks[(s - el) % gn, np.arange(len(p))]
            j = 0
            for k, sz in enumerate(sizes):
                for q in range(sz):
                    a["play_card"][p, j] = cards[k, q]
                    a["play_seat"][p, j] = (seats[k, q].astype(np.int64) + el) % gn
                    a["play_trick"][p, j] = k
                    j += 1
            a["n_plays"][p] = j
            a["winners"][p, :len(sizes)] = ((winners.T.astype(np.int64) + el[:, None]) % gn)
            a["n_winners"][p] = len(sizes)
        # revokes
        rv = [(int(pos[r]), k, s) for r in sorted(out.revokes) if pos[r] >= 0 for k, s in out.revokes[r]]
        if rv:
            c.rev_row = np.array([x[0] for x in rv], np.int64)
            c.rev_trick = np.array([x[1] for x in rv], np.int16)
            c.rev_seat = np.array([x[2] for x in rv], np.int8)
        # not_in_hand stays False: a deal with a card not in hand is the reference engine's (fallback not_in_hand)
        # points as DealResult.points: Scotch Whist the sum of the steps, All Fours one per event
        sc = out.scored[kr]
        a["scored"][:] = sc
        af = ch.game[kr] == 1
        sw_pts = out.steps[kr].sum(axis=1)
        ev = out.events[kr]
        af_pts = np.zeros((D, S), np.int64)
        for s in range(S):
            af_pts[:, s] = (ev == s).sum(1)
        pts = np.where(af[:, None], af_pts, sw_pts)
        a["points"][:] = np.where(sc[:, None], pts, 0)
        self._decks(ch, kr, a)
        self._runs(ch, kr, c)
        # rows not played (bunched All Fours deals) may still carry tricks: keep them as logged
        for j in np.flatnonzero((a["n_plays"] == 0) & ch.tricks.has[kr]).tolist():
            i = int(kr[j])
            data = ch.tricks.data[ch.tricks.off[i]:ch.tricks.off[i + 1]].tolist()
            lens = ch.trick_lens.data[ch.trick_lens.off[i]:ch.trick_lens.off[i + 1]].tolist()
            tricks, q = [], 0
            for ln in lens:
                tricks.append(data[q:q + ln])
                q += ln
            c.log_tricks[j] = tricks or None
        return c

    def _decks(self, ch: Chunk, kr: np.ndarray, a: dict[str, np.ndarray]) -> None:
        """`deck`: the logged deck, else the order the recorded hands imply (columns.deck_of)."""
        reg = self.reg
        key = ch.rset[kr].astype(np.int64) * 16 + ch.nplayers[kr]
        for kv in uniq(key).tolist():
            m = np.flatnonzero(key == kv)
            rows = kr[m]
            R, n = reg.rulesets[int(kv // 16)], int(kv % 16)
            L0 = layout(R, n, n - 1)
            Dl = L0.deck_len
            hasd = ch.deck.has[rows]
            lens = ch.deck.lens()[rows]
            full = hasd & (lens == Dl)
            if full.any():
                f = rows[full]
                idx = ch.deck.off[f][:, None] + np.arange(Dl)
                a["deck"][m[full], :Dl] = ch.deck.data[idx]
                a["deck_len"][m[full]] = Dl
            rest = ~hasd & ch.hands.has[rows]
            if not L0.deck_checkable or not rest.any():
                continue
            r = rows[rest]
            mm = m[rest]
            eldest = (ch.dealer[r].astype(np.int64) + 1) % n
            sizes_rel = np.asarray(L0.hand_sizes, np.int64)
            rel_of_abs = (np.arange(n)[None, :] - eldest[:, None]) % n
            size_abs = sizes_rel[rel_of_abs]  # [N, n]
            start_abs = np.zeros_like(size_abs)
            np.cumsum(size_abs[:, :-1], axis=1, out=start_abs[:, 1:])
            deck = np.full((len(r), Dl), NOCARD, np.uint8)
            base = ch.hands.off[r]
            for k in range(Dl):
                sr, slot = L0.deal_seat[k], L0.deal_slot[k]
                if sr is None:
                    continue
                sa = (sr + eldest) % n
                deck[:, k] = ch.hands.data[base + start_abs[np.arange(len(r)), sa] + slot]
            ti = L0.turnup_index
            deck[:, ti] = np.where(deck[:, ti] == NOCARD, ch.turn_up[r], deck[:, ti])
            a["deck"][mm, :Dl] = deck
            a["deck_len"][mm] = Dl

    def _runs(self, ch: Chunk, kr: np.ndarray, c: AuditColumns) -> None:
        """All Fours runs as `Deal.runs` holds them (canonical card strings: the columns hold no other)."""
        lens = ch.runs.lens()[kr]
        js = np.flatnonzero(lens > 0)
        if not js.size:
            return
        rows = kr[js]
        # every run card of these rows as its string, in one gather (issue 15, speed: a numpy scalar per card took
        # 0.18 s for 200,000 deals of the 1M season, this 0.06 s, the garbage collector's passes aside)
        starts = ch.runs.off[rows].astype(np.int64)
        sizes = lens[js].astype(np.int64)
        at = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        strs = _CARD_OBJ[ch.runs.data[at]].tolist()
        k = 0
        for j, n, size in zip(js.tolist(), ch.nplayers[rows].tolist(), sizes.tolist(), strict=True):
            w = 3 * n + 1
            runs = []
            for r0 in range(k, k + size, w):
                runs.append({"cards": [strs[r0 + 3 * s:r0 + 3 * s + 3] for s in range(n)], "turn_up": strs[r0 + 3 * n]})
            c.runs[j] = runs
            k += size


def reorder(c: AuditColumns, order: np.ndarray) -> AuditColumns:
    """Rows permuted by `order` (row j of the result is row order[j])."""
    inv = np.empty(len(order), np.int64)
    inv[order] = np.arange(len(order))
    new_row = inv[c.rev_row]
    o = np.argsort(new_row, kind="stable")
    return AuditColumns(
        paths=c.paths, tables=c.tables, game_ids=c.game_ids, players=c.players, packs=c.packs,
        rulesets=c.rulesets, arrays={k: v[order] for k, v in c.arrays.items()},
        rev_row=new_row[o], rev_trick=c.rev_trick[o], rev_seat=c.rev_seat[o],
        log_tricks={int(inv[r]): v for r, v in c.log_tricks.items()},
        runs={int(inv[r]): v for r, v in c.runs.items()},
        source_of={int(inv[r]): v for r, v in c.source_of.items()})
