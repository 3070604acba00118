"""`auditor replay` from paths to the JSON document without a Python object per deal.

Each input file is read in chunks (JSONL lines parsed with orjson straight into columns; Parquet row groups
as columns); each chunk goes through the batch kernel, and only small per-deal arrays (points, recorded
numbers, dealer, deal number, game) are kept for the game chain, so memory grows by tens of bytes per deal
whatever the size of the deals. Records the kernel does not handle are replayed by the reference engine; games
the array chain does not handle go through `chain_games`. The document is the one `replay_records(...).to_json()`
gives for the same input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, overload

import numpy as np

from ..dealog import (
    Deal,
    validate,
)
from ..findings import Finding
from ..replay.chain import GameSummary, chain_games
from ..replay.reference import SW_STEPS, DealResult, replay_deal
from ..replay.result import Replay, bad_record_finding
from .arrow import Arrow, boolean, i32, i64, lit, lstr, to_numpy
from .audit_cols import ColumnsBuilder
from .chain import COLLISION, ChainOut, DealArrays, chain_arrays
from .cols import GAMES, Chunk, Registry, row_to_obj, uniq
from .kernel import AF_LABELS, FALLBACK_REASONS, ChunkResult, replay_chunk
from .read import KeepAll, iter_chunks

# ---------------------------------------------------------------- replay


_ACC_KEYS = ("fi", "line", "gid", "chunk", "deal_no", "dealer", "n", "ns", "game", "rset", "lineup", "sides", "bunched",
             "scored", "simple", "points", "steps", "events", "elabel", "gift", "tj", "rp", "rp_has", "rt",
             "rt_has", "rw", "rec_has")


@dataclass
class _Acc:
    """Per valid deal arrays, chunk by chunk."""

    # per key, the chunks' arrays (None: a chunk without such a column, the All Fours ones)
    parts: dict[str, list[np.ndarray | None]] = field(default_factory=lambda: {k: [] for k in _ACC_KEYS})
    results: dict[int, DealResult] = field(default_factory=dict)  # global deal index -> reference-replayed deal
    revokes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # global deal index -> revokes
    # carrying a penalty (kernel)
    gid_vals: list[Arrow] = field(default_factory=list)  # per chunk: its game ids (Arrow large_string)
    slow_gid: list[tuple[int, str]] = field(default_factory=list)  # (global deal index, game id) of reference deals
    n: int = 0
    # file index, line and global game-id code of every deal, set by _chain once the parts are concatenated
    fi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    line: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


class GameList(Sequence[GameSummary]):
    """`games_summary` in order: games chained by arrays (built on demand) and games chained by `chain_games`."""

    def __init__(self, order: np.ndarray, co: ChainOut, complex_map: dict[int, GameSummary], ids: Arrow):
        self.order = order  # gid codes in output order
        self.co = co
        self.complex = complex_map  # gid -> GameSummary
        self.ids = ids  # game id of each code (Arrow large_string array; None when there are no games)
        pos = np.full(int(order.max()) + 1 if len(order) else 0, -1, np.int64)
        pos[co.game_gid] = np.arange(len(co.game_gid))
        self.sidx = pos[order] if len(order) else np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.order)

    def _one(self, i: int) -> GameSummary:
        j = int(self.sidx[i])
        if j < 0:
            return self.complex[int(self.order[i])]
        co = self.co
        k = int(co.game_ns[j])
        return GameSummary(self.ids[int(co.game_gid[j])].as_py(), deals=int(co.game_deals[j]),
                           totals=[int(x) for x in co.game_totals[j, :k]],
                           winner=int(co.game_winner[j]) if co.game_winner[j] >= 0 else None,
                           ended_by="points" if co.game_ended[j] else None)

    @overload
    def __getitem__(self, key: int) -> GameSummary: ...

    @overload
    def __getitem__(self, key: slice) -> list[GameSummary]: ...

    def __getitem__(self, key: int | slice) -> GameSummary | list[GameSummary]:
        if isinstance(key, slice):
            return [self._one(i) for i in range(*key.indices(len(self)))]
        if key < 0:
            key += len(self)
        if not 0 <= key < len(self):
            raise IndexError(key)
        return self._one(key)

    def __iter__(self) -> Iterator[GameSummary]:
        for i in range(len(self)):
            yield self._one(i)

    def json_entries(self) -> bytes:
        return self.json_buffer().to_pybytes()

    def json_buffer(self) -> Arrow:
        """Every game as `json.dumps(..., indent=2)` writes it inside the document (4 spaces deep), joined by ",\n"
        (a pyarrow Buffer)."""
        import orjson
        import pyarrow as pa
        import pyarrow.compute as pc

        co = self.co
        Gs = len(co.game_gid)
        parts = []
        if Gs:
            LS = pa.large_string()
            ids = self.ids.take(i64(co.game_gid))
            ids_json = pc.binary_join_element_wise(lit('"'), ids, lit('"'), lit(""))
            unsafe = pc.match_substring_regex(ids, r'["\\\x00-\x1f]')
            if pc.any(unsafe).as_py():
                where = np.flatnonzero(to_numpy(unsafe, bool, False))
                fixed = ids_json.to_pylist()
                for w in where.tolist():
                    fixed[w] = orjson.dumps(ids[w].as_py()).decode()
                ids_json = lstr(fixed)
            deals = pc.cast(i64(co.game_deals), LS)
            ns = co.game_ns.astype(np.int64)
            live = np.arange(co.game_totals.shape[1])[None, :] < ns[:, None]
            vals = pc.cast(i64(co.game_totals[live]), LS)
            off = np.zeros(Gs + 1, np.int32)
            np.cumsum(ns, out=off[1:])
            totals = pc.binary_join(pa.ListArray.from_arrays(i32(off), vals), lit(",\n        "))
            win = co.game_winner.astype(np.int64)
            winner = pc.if_else(boolean(win >= 0), pc.cast(i64(win), LS), lit("null"))
            ended = pc.if_else(boolean(co.game_ended), lit('"points"'), lit("null"))
            parts.append(pc.binary_join_element_wise(
                lit(',\n    {\n      "game_id": '), ids_json, lit(',\n      "deals": '), deals,
                lit(',\n      "totals": [\n        '), totals, lit('\n      ],\n      "winner": '), winner,
                lit(',\n      "ended_by": '), ended, lit(',\n      "loser": null\n    }'), lit("")))
        cidx = np.flatnonzero(self.sidx < 0)
        if cidx.size:
            texts = []
            for i in cidx.tolist():
                t = orjson.dumps(self.complex[int(self.order[i])].to_json(), option=orjson.OPT_INDENT_2).decode()
                texts.append(",\n    " + t.replace("\n", "\n    "))
            parts.append(lstr(texts))
        allv = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
        perm = np.where(self.sidx >= 0, self.sidx, 0)
        perm[cidx] = Gs + np.arange(cidx.size)
        if not (perm == np.arange(len(perm))).all():
            allv = allv.take(i64(perm))
        # every entry starts with ",\n": the data buffer is the whole list once the first two bytes are cut
        offs = np.frombuffer(allv.buffers()[1], np.int64, count=len(allv) + 1, offset=allv.offset * 8)
        return allv.buffers()[2].slice(int(offs[0]) + 2, int(offs[-1] - offs[0]) - 2)


def replay_paths(paths: list[str], progress: Callable[[int], None] | None = None, table: bool = False,
                 chunks: Callable[[list[str], Registry], Iterator[Chunk]] | None = None) -> Replay:
    """Replay every file. `table`: also build the table of every replayed deal (`Replay.table`, the
    detectors' input). `chunks`: a function (paths, registry) -> chunks to read instead of the files (the
    audit's selection)."""
    reg = Registry()
    cb = ColumnsBuilder(reg) if table else None
    columns = table
    acc = _Acc()
    deal_findings: list[tuple[int, int, int, Finding]] = []  # (fi, line, seq, Finding)
    n_read = 0
    reasons: Counter[str] = Counter()
    kernel_deals = 0
    seq = 0
    keep: KeepAll = "meta" if columns else False  # the audit needs table, time and pack per row
    source = chunks(paths, reg) if chunks is not None else iter_chunks(paths, reg, keep_all=keep)
    for ch in source:
        n_read += ch.n
        if progress is not None:
            progress(n_read)
        out = replay_chunk(ch, reg, detail="cols" if columns else False)
        handled = (ch.status == 0) & out.handled
        kernel_deals += int(handled.sum())
        # findings of the kernel, in play order
        for row, _k, _p, f in sorted(out.findings, key=lambda x: (x[0], x[1], x[2])):
            seq += 1
            deal_findings.append((ch.fi_at(row), int(ch.line[row]), seq, f))
        # rows for the reference engine
        ref_rows = np.flatnonzero(~handled).tolist()
        ref_results: dict[int, DealResult] = {}
        for i in ref_rows:
            if ch.status[i] == 2:
                rec = ch.slow[i]
                seq += 1
                deal_findings.append((ch.fi_at(i), rec.line or 0, seq, bad_record_finding(rec)))
                continue
            if ch.status[i] == 1:  # a valid record the columns cannot hold: its Deal is in the slow rows
                d = ch.slow[i].deal
                assert d is not None, "a valid slow row holds its Deal"
                reasons["record"] += 1
            else:
                reasons[FALLBACK_REASONS[out.reason[i]]] += 1
                d = validate(row_to_obj(ch, i, reg), ch.source(i), ch.fi_at(i), int(ch.line[i]))
            res = replay_deal(d)
            ref_results[i] = res
            for f in res.findings:
                seq += 1
                deal_findings.append((ch.fi_at(i), d.line or 0, seq, f))
        _accumulate(acc, ch, out, handled, ref_results, reg)
        if cb is not None:
            cb.add(ch, out, handled, ref_results)
    doc_findings, summaries = _chain(acc, reg)
    for i, f in doc_findings:
        seq += 1
        deal_findings.append((int(acc.fi[i]), int(acc.line[i]), seq, f))
    deal_findings.sort(key=lambda x: (x[0], x[1], x[2]))
    games = int(np.count_nonzero(np.bincount(acc.gid))) if acc.n else 0
    stats = {"engine": "batch", "records": n_read, "deals": acc.n, "kernel": kernel_deals,
             "fallback": sum(reasons.values()), "fallback_reasons": dict(sorted(reasons.items()))}
    return Replay(deals=n_read, games=games, findings=[f for *_, f in deal_findings], games_summary=summaries,
                  stats=stats, table=cb.finish() if cb is not None else None)


def _accumulate(acc: _Acc, ch: Chunk, out: ChunkResult, handled: np.ndarray, ref_results: dict[int, DealResult],
                reg: Registry) -> None:
    """Append the valid deals of a chunk (kernel rows from arrays, reference rows from their DealResult), in
    compact types: a few dozen bytes per deal."""
    import pyarrow as pa

    valid = ch.status != 2
    rows = np.flatnonzero(valid)
    if not rows.size:
        return
    S = max([out.S] + [r.deal.n_sides for r in ref_results.values()])
    k = len(rows)
    all_rows = k == ch.n

    def take(a: np.ndarray) -> np.ndarray:
        return a.copy() if all_rows else a[rows]

    fi = np.full(k, ch.fi, np.int32) if ch.fis is None else ch.fis[rows].astype(np.int32)
    line = take(ch.line)
    gid = take(ch.gid).astype(np.int32)  # chunk-local for now
    chunk_no = np.full(k, len(acc.gid_vals), np.int32)
    deal_no = take(ch.deal_no)
    dealer = take(ch.dealer).astype(np.int8)
    n = take(ch.nplayers)
    rset = take(ch.rset).astype(np.int16)
    lineup = take(ch.lineup)
    sides = take(ch.sides).astype(np.int16)
    game = take(ch.game)
    bunched = take(ch.bunched)
    scored = out.scored[rows]
    if out.S == S:
        points = out.points[rows]
        steps = out.steps[rows]
    else:
        points = np.zeros((k, S), np.int32)
        points[:, :out.S] = out.points[rows]
        steps = np.zeros((k, 7, S), np.int16)
        steps[:, :, :out.S] = out.steps[rows]
    has_af = bool((game == 1).any())  # All Fours event columns are kept only for chunks that have such deals
    events = out.events[rows] if has_af else None
    elabel = out.elabel[rows] if has_af else None
    gift = out.gift[rows] if has_af else None
    tj = out.tj[rows]
    penal = out.penal[rows] > 0
    Sr = ch.rp.shape[1]
    if Sr == S:
        rp, rt = take(ch.rp), take(ch.rt)
    else:
        rp = np.zeros((k, S), np.int32)
        rt = np.zeros((k, S), np.int32)
        rp[:, :Sr] = ch.rp[rows]
        rt[:, :Sr] = ch.rt[rows]
    rp_has = take(ch.rp_has)
    rt_has = take(ch.rt_has)
    rw = take(ch.rw).astype(np.int8)
    rec_has = take(ch.rec_has)
    hand = handled[rows]
    simple = hand & (scored | (bunched & (game == 1))) & ~penal
    ns = _ns_vec(sides.astype(np.int64), n.astype(np.int64), reg)
    base = acc.n
    for j in np.flatnonzero(hand & penal).tolist():
        acc.revokes[base + j] = out.penalties[int(rows[j])]
    for j in np.flatnonzero(~hand).tolist():
        r = int(rows[j])
        res = ref_results[r]
        d: Deal = res.deal
        acc.results[base + j] = res
        gid[j] = -1
        acc.slow_gid.append((base + j, d.game_id))
        deal_no[j] = d.deal_no if d.deal_no < 2 ** 62 else 2 ** 62
        dealer[j] = d.dealer
        n[j] = d.n
        ns[j] = d.n_sides
        line[j] = d.line or 0
        rset[j] = reg.ruleset_id(d.game, d.rules, d.options)
        lineup[j] = -1
        sides[j] = -1
        game[j] = 0 if d.game == "scotch_whist" else 1
        bunched[j] = d.bunched
        scored[j] = res.scored
        rec = d.recorded or {}
        rp_has[j] = rec.get("points") is not None
        rt_has[j] = rec.get("totals") is not None
        rec_has[j] = d.recorded is not None
        big = any(abs(x) >= 2 ** 31 for key in ("points", "totals") for x in rec.get(key) or [])
        rp[j] = 0
        rt[j] = 0
        if rp_has[j] and not big:
            rp[j, :d.n_sides] = rec["points"]
        if rt_has[j] and not big:
            rt[j, :d.n_sides] = rec["totals"]
        rw[j] = rec.get("winner", -1) if rec.get("winner") is not None else -1
        ok = (res.scored or (d.bunched and d.game == "all_fours")) and not res.penalty_revokes and \
            not res.af_capped_sides and not big and d.deal_no < 2 ** 62
        simple[j] = ok
        if res.scored and ok:
            pts = res.points
            assert pts is not None  # a scored deal has its points
            points[j, :] = 0
            points[j, :len(pts)] = pts
            if res.sw_steps is not None:
                for si, name in enumerate(SW_STEPS):
                    steps[j, si, :len(pts)] = res.sw_steps[name]
            if res.af_events is not None:
                if events is None or elabel is None or gift is None:  # all three None, or none
                    events = np.full((k, 16), -1, np.int8)
                    elabel = np.full((k, 16), -1, np.int8)
                    gift = np.full((k, 3), -1, np.int8)
                events[j, :] = -1
                for e, (sd, _lab) in enumerate(res.af_events[:16]):
                    events[j, e] = sd
                simple[j] = ok and len(res.af_events) <= 16
                gift[j, :] = -1
                for c, gs in enumerate(res.gift_sides[:3]):
                    gift[j, c] = gs
                tj[j] = sum(1 for _s, lab in res.af_events if lab == "turned_jack")
    vals = ch.gid_vals if ch.gid_vals is not None else []
    acc.gid_vals.append(lstr(vals) if isinstance(vals, list) else vals.cast(pa.large_string()))
    P = acc.parts
    for key, val in (("fi", fi), ("line", line), ("gid", gid), ("chunk", chunk_no), ("deal_no", deal_no),
                     ("dealer", dealer), ("n", n), ("ns", ns.astype(np.int8)), ("game", game), ("rset", rset),
                     ("lineup", lineup), ("sides", sides), ("bunched", bunched), ("scored", scored),
                     ("simple", simple), ("points", points), ("steps", steps), ("events", events),
                     ("elabel", elabel), ("gift", gift), ("tj", tj), ("rp", rp), ("rp_has", rp_has), ("rt", rt),
                     ("rt_has", rt_has), ("rw", rw), ("rec_has", rec_has)):
        P[key].append(val)
    acc.n += k


def _ns_vec(sides: np.ndarray, n: np.ndarray, reg: Registry) -> np.ndarray:
    key = sides * 16 + n
    uniq_, inv = uniq(key, return_inverse=True)
    vals = np.array([reg.n_sides(int(u // 16), int(u % 16)) for u in uniq_], np.int64)
    return vals[inv]


def _unify_game_ids(acc: _Acc, arr: dict[str, np.ndarray]) -> tuple[np.ndarray, Arrow]:
    """Global game-id codes for every deal (chunk-local codes and reference deals' ids, unified by Arrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    base = np.zeros(len(acc.gid_vals) + 1, np.int64)
    np.cumsum([len(v) for v in acc.gid_vals], out=base[1:])
    slow_idx = np.array([i for i, _ in acc.slow_gid], np.int64)
    allv = pa.concat_arrays(acc.gid_vals + [lstr([g for _, g in acc.slow_gid])])
    enc = pc.dictionary_encode(allv)
    codes = to_numpy(enc.indices, np.int64, -1)
    local = arr["gid"]
    g = np.where(local >= 0, codes[np.where(local >= 0, base[arr["chunk"]] + local, 0)], -1)
    if slow_idx.size:
        g[slow_idx] = codes[base[-1] + np.arange(slow_idx.size)]
    return g, enc.dictionary


def _cat(parts: list[np.ndarray | None], S: int | None, lens: list[int],
         fill: tuple[int, int] | None = None) -> np.ndarray:
    """Concatenate per-chunk arrays (padding the sides axis to S; None parts, `lens[i]` rows, as `fill` = (width,
    value))."""
    out = []
    for i, p in enumerate(parts):
        if p is None:
            if fill is None:
                raise ValueError("a chunk without this column, and no fill for it")
            p = np.full((lens[i], fill[0]), fill[1], np.int8)
        elif S is not None and p.shape[-1] < S:
            pad = [(0, 0)] * (p.ndim - 1) + [(0, S - p.shape[-1])]
            p = np.pad(p, pad)
        out.append(p)
    return np.concatenate(out) if out else np.zeros(0)


def _chain(acc: _Acc, reg: Registry) -> tuple[list[tuple[int, Finding]], GameList]:
    if acc.n == 0:
        z = np.zeros(0, np.int64)
        co = ChainOut(z, z, np.zeros((0, 1), np.int64), z, z, np.zeros(0, bool), [], z)
        return [], GameList(z, co, {}, None)
    P = acc.parts
    acc.parts = {}
    S = max(p.shape[-1] for p in P["points"] if p is not None)  # (never None, as "fi")
    lens = [len(x) for x in P["fi"] if x is not None]
    fills = {"events": (16, -1), "elabel": (16, -1), "gift": (3, -1)}
    arr: dict[str, np.ndarray] = {}
    for k in list(P):  # concatenate column by column, dropping the chunk parts as we go
        arr[k] = _cat(P.pop(k), S if k in ("points", "steps", "rp", "rt") else None, lens, fills.get(k))
    for k in ("dealer", "n", "ns"):
        arr[k] = arr[k].astype(np.int64)
    arr["gid"], ids = _unify_game_ids(acc, arr)
    acc.fi, acc.line, acc.gid = arr["fi"], arr["line"], arr["gid"]
    rs = arr["rset"]
    uniq_ = uniq(rs)
    tgt = np.zeros(len(reg.rulesets), np.int64)
    coll = np.zeros(len(reg.rulesets), np.int8)
    gcw = np.zeros(len(reg.rulesets), bool)
    fl0 = np.zeros(len(reg.rulesets), bool)
    unsafe = np.zeros(len(reg.rulesets), bool)
    for u in uniq_.tolist():
        R = reg.rulesets[u]
        if R.game == "scotch_whist":
            fl0[u] = R.negative_scores == "floor_zero"
            unsafe[u] = fl0[u] and R.cards_under == "negative"  # totals floored deal by deal: chain_games
        tgt[u] = R.target
        coll[u] = COLLISION.index(R.countout_cards_collision) if R.game == "scotch_whist" else 0
        gcw[u] = bool(R.gift_cannot_win) if R.game == "all_fours" else False
    # the dealer's side (gift check)
    dealer_side = np.zeros(acc.n, np.int64)
    sd = arr["sides"]
    has_sd = sd >= 0
    dealer_side[~has_sd] = arr["dealer"][~has_sd]
    if has_sd.any():
        for s in uniq(sd[has_sd]).tolist():
            m = sd == s
            dealer_side[m] = reg.side_of[s][arr["dealer"][m]]
    for i, res in acc.results.items():
        dealer_side[i] = res.deal.side_of[res.deal.dealer]
    A = DealArrays(gid=arr["gid"], deal_no=arr["deal_no"], dealer=arr["dealer"], n=arr["n"], ns=arr["ns"],
                   game=arr["game"], target=tgt[rs], collision=coll[rs], gift_cannot_win=gcw[rs], floor0=fl0[rs],
                   bunched=arr["bunched"], scored=arr["scored"], simple=arr["simple"] & ~unsafe[rs],
                   points=arr["points"],
                   steps=arr["steps"], events=arr["events"], gift=arr["gift"], tj=arr["tj"],
                   dealer_side=dealer_side, rp=arr["rp"], rp_has=arr["rp_has"], rt=arr["rt"],
                   rt_has=arr["rt_has"], rw=arr["rw"])

    def info(i: int) -> tuple[str, str, list[str]]:
        res = acc.results.get(i)
        if res is not None:
            d = res.deal
            return d.game_id, d.source, d.players
        return (ids[int(arr["gid"][i])].as_py(), f"{reg.paths[int(arr['fi'][i])]}:{int(arr['line'][i])}",
                reg.lineups[int(arr["lineup"][i])])

    co = chain_arrays(A, info)
    findings = list(co.findings)
    # games for chain_games
    summaries: dict[int, GameSummary] = {}
    if co.complex_gids.size:
        want = np.isin(arr["gid"], co.complex_gids)
        idx = np.flatnonzero(want)
        results = [acc.results.get(int(i)) or _light_result(int(i), arr, acc, reg, ids) for i in idx]
        sums, outcomes = chain_games(results)
        code_of = {ids[int(c)].as_py(): int(c) for c in co.complex_gids}
        for g in sums:
            summaries[code_of[g.game_id]] = g
        for j, oc in outcomes.items():
            for f in oc.findings:
                findings.append((int(idx[j]), f))
    # order of first appearance among valid deals
    first = np.full(int(arr["gid"].max()) + 1, acc.n, np.int64)
    np.minimum.at(first, arr["gid"], np.arange(acc.n))
    present = np.flatnonzero(first < acc.n)
    order = present[np.argsort(first[present], kind="stable")]
    return findings, GameList(order, co, summaries, ids)


def _light_result(i: int, arr: dict[str, np.ndarray], acc: _Acc, reg: Registry, ids: Arrow) -> DealResult:
    """A DealResult for `chain_games` from the arrays of a kernel-replayed deal."""
    rs = int(arr["rset"][i])
    game_code, preset, options = reg.rs_info[rs]
    R = reg.rulesets[rs]
    sd = int(arr["sides"][i])
    ns = int(arr["ns"][i])
    rec: dict[str, Any] = {}
    if arr["rec_has"][i] or arr["rp_has"][i] or arr["rt_has"][i]:
        if arr["rp_has"][i]:
            rec["points"] = [int(x) for x in arr["rp"][i, :ns]]
        if arr["rt_has"][i]:
            rec["totals"] = [int(x) for x in arr["rt"][i, :ns]]
        if arr["rw"][i] >= 0:
            rec["winner"] = int(arr["rw"][i])
    d = Deal(source=f"{reg.paths[int(arr['fi'][i])]}:{int(arr['line'][i])}", file_index=int(arr["fi"][i]),
             line=int(arr["line"][i]), game=GAMES[game_code], rules=preset, options=dict(options), table="",
             game_id=ids[int(arr["gid"][i])].as_py(), deal_no=int(arr["deal_no"][i]),
             players=list(reg.lineups[int(arr["lineup"][i])]), dealer=int(arr["dealer"][i]), turn_up="",
             ruleset=R, sides=[list(s) for s in reg.sides[sd]] if sd >= 0 else None,
             bunched=bool(arr["bunched"][i]), recorded=rec if arr["rec_has"][i] else None)
    r = DealResult(d)
    r.cards_ok = True
    if not arr["scored"][i]:
        return r
    r.scored = True
    if game_code == 0:
        r.sw_steps = {name: [int(x) for x in arr["steps"][i, j, :ns]] for j, name in enumerate(SW_STEPS)}
        if i in acc.revokes:  # its penalty revokes: claimed, or any when no claim is needed
            r.penalty_revokes = list(acc.revokes[i])
    else:
        r.af_events = [(int(s), AF_LABELS[int(lb)]) for s, lb in zip(arr["events"][i], arr["elabel"][i], strict=True)
                       if s >= 0]
        r.gift_sides = [int(g) for g in arr["gift"][i] if g >= 0]
    return r
