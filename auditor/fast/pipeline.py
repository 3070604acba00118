"""`auditor replay` from paths to the JSON document without a Python object per deal.

Each input file is read in chunks (JSONL lines parsed with orjson straight into columns; Parquet row groups
as columns); each chunk goes through the batch kernel, and only small per-deal arrays (points, recorded
numbers, dealer, deal number, game) are kept for the game chain, so memory grows by tens of bytes per deal
whatever the size of the deals. Records the kernel does not handle are replayed by the reference engine; games
the array chain does not handle go through `chain_games`. The document is the one `replay_records(...).to_json()`
gives for the same input.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from ..dealog import Deal, Record, _parse_line, record_from_obj, validate
from ..errors import InputError
from ..findings import Finding
from .cols import Chunk, ChunkBuilder, Registry, row_to_obj

CHUNK_ROWS = 32768


# ---------------------------------------------------------------- reading


def iter_chunks(paths: list[str], reg: Registry, keep_all: bool = False, rows: int = CHUNK_ROWS,
                raw_lines: bool = False) -> Iterator[Chunk]:
    """Every record of every file as chunks, in order. A file that cannot be read gives a chunk with one bad row
    (line None as 0), as `dealog.read_records` does."""
    for fi, path in enumerate(paths):
        path = str(path)
        reg.paths.append(path)
        if path.endswith(".parquet"):
            from ..parquet import iter_parquet_chunks

            yield from iter_parquet_chunks(path, fi, reg, keep_all=keep_all, rows=rows)
            continue
        yield from _jsonl_chunks(path, fi, reg, keep_all, rows, raw_lines)


def _jsonl_chunks(path: str, fi: int, reg: Registry, keep_all: bool, rows: int, raw_lines: bool):
    import orjson

    loads = orjson.loads
    b = ChunkBuilder(reg, fi, path, keep_all)
    raws: list[bytes] = []
    lineno = 0
    try:
        if os.path.isdir(path):
            raise InputError("is a directory, not a log file", path)
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            raise InputError("no such file", path) from None
        except OSError as e:
            raise InputError(f"cannot open: {e.strerror}", path) from None
        with f:
            head = f.read(2)
            f.seek(0)
            stream = gzip.GzipFile(fileobj=f) if head == b"\x1f\x8b" else f
            for lineno, raw in enumerate(stream, 1):
                if not raw.strip():
                    continue
                try:
                    obj = loads(raw)
                except Exception:
                    for rec in _parse_line(raw, path, fi, lineno, loads):
                        _add_slow(b, rec, reg)
                        if raw_lines:
                            b.raw_line[b.rows - 1] = raw
                    obj = None
                else:
                    if not b.add_obj(obj, lineno):
                        _add_slow(b, record_from_obj(obj, f"{path}:{lineno}", fi, lineno), reg)
                        if raw_lines:
                            b.raw_line[b.rows - 1] = raw
                if b.rows >= rows:
                    yield b.finish()
                    b = ChunkBuilder(reg, fi, path, keep_all)
    except InputError as e:
        _add_slow(b, Record(source=path, file_index=fi, line=None, error=str(e).removeprefix(f"{path}: ")), reg)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        msg = f"unreadable after line {lineno}: {e}"
        _add_slow(b, Record(source=f"{path}:{lineno + 1}", file_index=fi, line=lineno + 1, error=msg), reg)
    if b.rows:
        yield b.finish()


def _add_slow(b: ChunkBuilder, rec: Record, reg: Registry) -> None:
    if rec.deal is not None:
        reg.game_id(rec.deal.game_id)
    b.add_record(rec)


# ---------------------------------------------------------------- replay


@dataclass
class _Acc:
    """Per valid deal arrays, chunk by chunk."""

    parts: dict = field(default_factory=lambda: {k: [] for k in _ACC_KEYS})
    results: dict = field(default_factory=dict)  # global deal index -> DealResult (reference-replayed deals)
    revokes: dict = field(default_factory=dict)  # global deal index -> revokes carrying a penalty (kernel)
    n: int = 0


_ACC_KEYS = ("fi", "line", "gid", "deal_no", "dealer", "n", "ns", "game", "rset", "lineup", "sides", "bunched",
             "scored", "simple", "points", "steps", "events", "elabel", "gift", "tj", "rp", "rp_has", "rt",
             "rt_has", "rw", "rec_has")


@dataclass
class Replayed:
    """What `replay_paths` found: enough for the JSON document and the terminal summary."""

    deals: int
    games: int
    findings: list[Finding]
    games_summary: list  # GameSummary-like objects with to_json()
    stats: dict

    def to_json(self) -> dict:
        return {"deals": self.deals, "games": self.games, "findings": [f.to_json() for f in self.findings],
                "games_summary": [g.to_json() for g in self.games_summary]}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out


def replay_paths(paths: list[str], progress: Callable[[int], None] | None = None) -> Replayed:
    from ..replay.reference import replay_deal
    from .kernel import FALLBACK_REASONS, replay_chunk

    reg = Registry()
    acc = _Acc()
    deal_findings: list[tuple] = []  # (fi, line, seq, Finding)
    n_read = 0
    reasons: Counter = Counter()
    kernel_deals = 0
    seq = 0
    for ch in iter_chunks(paths, reg):
        n_read += ch.n
        if progress is not None:
            progress(n_read)
        out = replay_chunk(ch, reg)
        handled = (ch.status == 0) & out.handled
        kernel_deals += int(handled.sum())
        # findings of the kernel, in play order
        for row, k, p, f in sorted(out.findings, key=lambda x: (x[0], x[1], x[2])):
            seq += 1
            deal_findings.append((ch.fi, int(ch.line[row]), seq, f))
        # rows for the reference engine
        ref_rows = np.flatnonzero(~handled).tolist()
        ref_results: dict[int, object] = {}
        for i in ref_rows:
            if ch.status[i] == 2:
                from ..replay.run import bad_record_finding

                rec = ch.slow[i]
                seq += 1
                deal_findings.append((ch.fi, rec.line or 0, seq, bad_record_finding(rec)))
                continue
            if ch.status[i] == 1:
                d = ch.slow[i].deal
                reasons["record"] += 1
            else:
                reasons[FALLBACK_REASONS[out.reason[i]]] += 1
                d = validate(row_to_obj(ch, i, reg), ch.source(i), ch.fi, int(ch.line[i]))
            res = replay_deal(d)
            ref_results[i] = res
            for f in res.findings:
                seq += 1
                deal_findings.append((ch.fi, d.line or 0, seq, f))
        _accumulate(acc, ch, out, handled, ref_results, reg)
    doc_findings, summaries = _chain(acc, reg)
    for j, (i, f) in enumerate(doc_findings):
        seq += 1
        deal_findings.append((int(acc.fi[i]), int(acc.line[i]), seq, f))
    deal_findings.sort(key=lambda x: (x[0], x[1], x[2]))
    games = len(np.unique(acc.gid)) if acc.n else 0
    stats = {"engine": "batch", "records": n_read, "deals": acc.n, "kernel": kernel_deals,
             "fallback": sum(reasons.values()), "fallback_reasons": dict(sorted(reasons.items()))}
    return Replayed(deals=n_read, games=games, findings=[f for *_, f in deal_findings], games_summary=summaries,
                    stats=stats)


def _accumulate(acc: _Acc, ch: Chunk, out, handled: np.ndarray, ref_results: dict, reg: Registry) -> None:
    """Append the valid deals of a chunk (kernel rows from arrays, reference rows from their DealResult)."""
    from ..replay.reference import SW_STEPS

    valid = ch.status != 2
    rows = np.flatnonzero(valid)
    if not rows.size:
        return
    S = max([out.S] + [r.deal.n_sides for r in ref_results.values()])
    k = len(rows)
    P = acc.parts
    # column rows: from the chunk; slow rows: from their Deal
    fi = np.full(k, ch.fi, np.int64)
    line = ch.line[rows].astype(np.int64)
    gid = ch.gid[rows].copy()
    deal_no = ch.deal_no[rows].copy()
    dealer = ch.dealer[rows].astype(np.int64)
    n = ch.nplayers[rows].astype(np.int64)
    rset = ch.rset[rows].astype(np.int64)
    lineup = ch.lineup[rows].astype(np.int64)
    sides = ch.sides[rows].astype(np.int64)
    game = ch.game[rows].copy()
    bunched = ch.bunched[rows].copy()
    scored = out.scored[rows].copy()
    points = np.zeros((k, S), np.int64)
    points[:, :out.S] = out.points[rows]
    steps = np.zeros((k, 7, S), np.int64)
    steps[:, :, :out.S] = out.steps[rows]
    events = out.events[rows].copy()
    elabel = out.elabel[rows].copy()
    gift = out.gift[rows].copy()
    tj = out.tj[rows].astype(np.int64)
    penal = out.penal[rows] > 0
    Sr = ch.rp.shape[1]
    rp = np.zeros((k, S), np.int64)
    rt = np.zeros((k, S), np.int64)
    rp[:, :Sr] = ch.rp[rows]
    rt[:, :Sr] = ch.rt[rows]
    rp_has = ch.rp_has[rows].copy()
    rt_has = ch.rt_has[rows].copy()
    rw = ch.rw[rows].astype(np.int64)
    rec_has = ch.rec_has[rows].copy()
    simple = (handled[rows] & (scored | (bunched & (game == 1))) & ~penal)
    base = acc.n
    for j, r in enumerate(rows.tolist()):
        if handled[r]:
            if penal[j]:
                acc.revokes[base + j] = sorted(out.revokes.get(r, []))
            continue
        res = ref_results[r]
        d: Deal = res.deal
        acc.results[base + j] = res
        gid[j] = reg.game_id(d.game_id)
        deal_no[j] = d.deal_no if d.deal_no < 2 ** 62 else 2 ** 62
        dealer[j] = d.dealer
        n[j] = d.n
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
        big = any(abs(x) >= 2 ** 62 for key in ("points", "totals") for x in rec.get(key) or [])
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
            points[j, :] = 0
            points[j, :len(pts)] = pts
            if res.sw_steps is not None:
                for si, name in enumerate(SW_STEPS):
                    steps[j, si, :len(pts)] = res.sw_steps[name]
            if res.af_events is not None:
                events[j, :] = -1
                for e, (s, _lab) in enumerate(res.af_events[:16]):
                    events[j, e] = s
                simple[j] = ok and len(res.af_events) <= 16
                gift[j, :] = -1
                for c, gs in enumerate(res.gift_sides[:3]):
                    gift[j, c] = gs
                tj[j] = sum(1 for _s, lab in res.af_events if lab == "turned_jack")
    ns = np.array([reg.n_sides(int(sd), int(nn)) if sd >= 0 else int(nn) for sd, nn in zip(sides, n)], np.int64) \
        if k < 64 else _ns_vec(sides, n, reg)
    for j, r in enumerate(rows.tolist()):
        if not handled[r]:
            ns[j] = ref_results[r].deal.n_sides
    for key, val in (("fi", fi), ("line", line), ("gid", gid), ("deal_no", deal_no), ("dealer", dealer), ("n", n),
                     ("ns", ns), ("game", game), ("rset", rset), ("lineup", lineup), ("sides", sides),
                     ("bunched", bunched), ("scored", scored), ("simple", simple), ("points", points),
                     ("steps", steps), ("events", events), ("elabel", elabel), ("gift", gift), ("tj", tj),
                     ("rp", rp), ("rp_has", rp_has), ("rt", rt), ("rt_has", rt_has), ("rw", rw),
                     ("rec_has", rec_has)):
        P[key].append(val)
    acc.n += k


def _ns_vec(sides: np.ndarray, n: np.ndarray, reg: Registry) -> np.ndarray:
    key = sides * 16 + n
    uniq, inv = np.unique(key, return_inverse=True)
    vals = np.array([reg.n_sides(int(u // 16), int(u % 16)) for u in uniq], np.int64)
    return vals[inv]


def _cat(parts: list[np.ndarray], S: int | None = None) -> np.ndarray:
    if S is not None:
        out = []
        for p in parts:
            if p.shape[-1] < S:
                pad = [(0, 0)] * (p.ndim - 1) + [(0, S - p.shape[-1])]
                p = np.pad(p, pad)
            out.append(p)
        parts = out
    return np.concatenate(parts) if parts else np.zeros(0)


def _chain(acc: _Acc, reg: Registry):
    from ..replay.chain import GameSummary
    from .chain import COLLISION, DealArrays, chain_arrays

    if acc.n == 0:
        return [], []
    P = acc.parts
    S = max(p.shape[-1] for p in P["points"])
    arr = {k: _cat(v, S if k in ("points", "steps", "rp", "rt") else None) for k, v in P.items()}
    for k in ("fi", "line", "gid", "deal_no", "rset", "lineup", "sides", "n", "ns", "dealer"):
        arr[k] = arr[k].astype(np.int64)
    acc.fi, acc.line, acc.gid = arr["fi"], arr["line"], arr["gid"]
    rs = arr["rset"]
    uniq = np.unique(rs)
    tgt = np.zeros(len(reg.rulesets), np.int64)
    coll = np.zeros(len(reg.rulesets), np.int8)
    gcw = np.zeros(len(reg.rulesets), bool)
    fl0 = np.zeros(len(reg.rulesets), bool)
    unsafe = np.zeros(len(reg.rulesets), bool)
    for u in uniq.tolist():
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
        for s in np.unique(sd[has_sd]).tolist():
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

    def info(i: int):
        res = acc.results.get(i)
        if res is not None:
            d = res.deal
            return d.game_id, d.source, d.players
        return (reg.game_ids[int(arr["gid"][i])], f"{reg.paths[int(arr['fi'][i])]}:{int(arr['line'][i])}",
                reg.lineups[int(arr["lineup"][i])])

    co = chain_arrays(A, info)
    findings = list(co.findings)
    # games for chain_games
    summaries: dict[int, object] = {}
    if co.complex_gids.size:
        from ..replay.chain import chain_games

        want = np.isin(arr["gid"], co.complex_gids)
        idx = np.flatnonzero(want)
        results = [acc.results.get(int(i)) or _light_result(int(i), arr, acc, reg) for i in idx]
        sums, outcomes = chain_games(results)
        for g in sums:
            summaries[reg.gid[g.game_id]] = g
        for j, oc in outcomes.items():
            for f in oc.findings:
                findings.append((int(idx[j]), f))
    # simple games
    for g in range(len(co.game_gid)):
        gi = int(co.game_gid[g])
        k = int(co.game_ns[g])
        summaries[gi] = GameSummary(reg.game_ids[gi], deals=int(co.game_deals[g]),
                                    totals=[int(x) for x in co.game_totals[g, :k]],
                                    winner=int(co.game_winner[g]) if co.game_winner[g] >= 0 else None,
                                    ended_by="points" if co.game_ended[g] else None)
    # order of first appearance among valid deals
    uniq, first = np.unique(arr["gid"], return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    return findings, [summaries[int(g)] for g in order]


def _light_result(i: int, arr: dict, acc: _Acc, reg: Registry):
    """A DealResult for `chain_games` from the arrays of a kernel-replayed deal."""
    from ..replay.reference import SW_STEPS, DealResult
    from .cols import GAMES
    from .kernel import AF_LABELS

    rs = int(arr["rset"][i])
    game_code, preset, options = reg.rs_info[rs]
    R = reg.rulesets[rs]
    sd = int(arr["sides"][i])
    ns = int(arr["ns"][i])
    rec: dict = {}
    if arr["rec_has"][i] or arr["rp_has"][i] or arr["rt_has"][i]:
        if arr["rp_has"][i]:
            rec["points"] = [int(x) for x in arr["rp"][i, :ns]]
        if arr["rt_has"][i]:
            rec["totals"] = [int(x) for x in arr["rt"][i, :ns]]
        if arr["rw"][i] >= 0:
            rec["winner"] = int(arr["rw"][i])
    d = Deal(source=f"{reg.paths[int(arr['fi'][i])]}:{int(arr['line'][i])}", file_index=int(arr["fi"][i]),
             line=int(arr["line"][i]), game=GAMES[game_code], rules=preset, options=dict(options), table="",
             game_id=reg.game_ids[int(arr["gid"][i])], deal_no=int(arr["deal_no"][i]),
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
        if i in acc.revokes and not R.revoke_requires_claim:
            r.penalty_revokes = list(acc.revokes[i])
    else:
        r.af_events = [(int(s), AF_LABELS[int(lb)]) for s, lb in zip(arr["events"][i], arr["elabel"][i]) if s >= 0]
        r.gift_sides = [int(g) for g in arr["gift"][i] if g >= 0]
    return r
