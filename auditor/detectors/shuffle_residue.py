"""`shuffle_residue`: per dealer, how much of the previous deal's tricks survives his shuffle, compared with the
other dealers of his table (or, at tables with fewer than three dealers, of the club's tables of the same kind).

For consecutive deals at a table (the previous deal with the same `pack` id, the same pack of cards, and its tricks
logged), the residue of a deal is the number of adjacent positions of the new deck holding two cards that were in
the same trick of the previous deal. The deck is the logged `deck`, else the one the hands imply (`hands` in the
order received, dealt by the rules; cards not dealt are unknown and their positions are skipped). Gathered tricks
that are barely shuffled leave whole tricks adjacent, and dealt one card at a time they go to consecutive seats.

Under a perfect shuffle every adjacent pair of positions is a uniform ordered pair of distinct cards, so the
expected residue is exact: pairs × sum over tricks of k(k-1) / (P(P-1)). That is only the reference line: no person
shuffles like a random number generator. The test is a stratified permutation test: within each stratum (table)
the deals' excess residues (observed − perfect-shuffle expectation) are exchangeable among its dealers under the
null "he shuffles like his peers"; the statistic is the dealer's total excess, its one-sided p-value by sequential
Monte Carlo (Besag & Clifford). A dealer alone at his tables has no peers and is not tested.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy import stats as _st

from ..cards import parse_card
from ..facts import config
from ..rules import layout
from ..stats import exact
from ..stats.family import TestResult
from .base import MIN_DETECTABLE_POWER, subject_rng, timeline
from .deal_uniformity import sequential_mc_pvalue

MIN_PEERS = 3  # dealers a table needs to be its own stratum


def _deck_of(deal, L) -> list[int] | None:
    """The dealt order of the pack: the logged deck, else the one the hands (in order received) imply; -1 where
    unknown. None when neither gives it."""
    if deal.deck is not None:
        cards = [parse_card(x) for x in deal.deck]
        if any(c is None for c in cards) or len(cards) != L.deck_len:
            return None
        return cards
    if deal.hands is None or not L.deck_checkable:
        return None
    hands = [[parse_card(x) for x in h] for h in deal.hands]
    if any(c is None for h in hands for c in h):
        return None
    out = [-1] * L.deck_len
    for k, (seat, slot) in enumerate(zip(L.deal_seat, L.deal_slot)):
        if seat is not None:
            if slot >= len(hands[seat]):
                return None
            out[k] = hands[seat][slot]
    tu = parse_card(deal.turn_up)
    if tu is not None and out[L.turnup_index] == -1:
        out[L.turnup_index] = tu
    return out


def _tricks_of(deal) -> list[list[int]] | None:
    if not deal.tricks:
        return None
    out = []
    for t in deal.tricks:
        cs = [parse_card(x) for x in t]
        if any(c is None for c in cs):
            return None
        out.append(cs)
    return out


def residue(deck: list[int], tricks: list[list[int]], pack_size: int) -> tuple[int, float, int]:
    """(observed residue, perfect-shuffle expectation, residue if the gathered tricks were only cut)."""
    trick_of = {}
    for i, t in enumerate(tricks):
        for c in t:
            trick_of[c] = i
    obs = 0
    pairs = 0
    for a, b in zip(deck, deck[1:]):
        if a < 0 or b < 0:
            continue
        pairs += 1
        ta, tb = trick_of.get(a), trick_of.get(b)
        if ta is not None and ta == tb:
            obs += 1
    same = sum(len(t) * (len(t) - 1) for t in tricks)
    exp_ = pairs * same / (pack_size * (pack_size - 1))
    return obs, exp_, sum(len(t) - 1 for t in tricks)


def count_results(results: Sequence[Any]) -> dict:
    """{table: {"key", "dealer", "obs", "exp", "max", "label"}} over the deals that follow a logged deal."""
    by_table: dict[str, list] = {}
    for r in results:
        by_table.setdefault(r.deal.table, []).append(r)
    out = {}
    for table, rs in by_table.items():
        rs.sort(key=lambda r: (r.deal.file_index, r.deal.line))
        last: dict[Any, Any] = {}
        rows = []
        for r in rs:
            d = r.deal
            try:
                cfg = config(d.ruleset, d.n)
                L = layout(d.ruleset, d.n, d.dealer)
            except Exception:
                continue
            prev = last.get(d.pack)
            last[d.pack] = (r, cfg)
            if prev is None:
                continue
            pr, pcfg = prev
            if pcfg.pack != cfg.pack:
                continue
            tricks = _tricks_of(pr.deal)
            deck = _deck_of(d, L)
            if tricks is None or deck is None:
                continue
            obs, exp_, mx = residue(deck, tricks, cfg.pack_size)
            rows.append(((d.file_index << 32) | (d.line or 0), d.players[d.dealer], obs, exp_, mx, cfg.label))
        if rows:
            out[table] = {"key": np.array([x[0] for x in rows], np.int64),
                          "dealer": np.array([x[1] for x in rows], dtype=object),
                          "obs": np.array([x[2] for x in rows], float), "exp": np.array([x[3] for x in rows]),
                          "max": np.array([x[4] for x in rows], float),
                          "label": np.array([x[5] for x in rows], dtype=object)}
    return out


def _strata(counts: dict) -> list[dict]:
    """Tables with at least MIN_PEERS dealers are their own stratum; the others pool by configuration."""
    strata = []
    pooled: dict[str, list[dict]] = {}
    for table in sorted(counts):
        c = counts[table]
        if len(set(c["dealer"].tolist())) >= MIN_PEERS:
            strata.append({"name": table, **c})
        else:
            for lab in sorted(set(c["label"].tolist())):
                m = c["label"] == lab
                pooled.setdefault(lab, []).append({k: v[m] for k, v in c.items()})
    for lab, parts in sorted(pooled.items()):
        merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        o = np.argsort(merged["key"], kind="stable")
        strata.append({"name": f"club:{lab}", **{k: v[o] for k, v in merged.items()}})
    return strata


class ShuffleResidue:
    name = "shuffle_residue"

    def __init__(self, fdr: float = 0.05, details: bool = True, mc_max: int = 20000):
        self.fdr = fdr
        self.details = details
        self.mc_max = mc_max

    def count(self, results: Sequence[Any], rng: np.random.Generator | None = None, facts: Any = None) -> dict:
        return count_results(results)

    def merge(self, parts: Sequence[dict]) -> dict:
        out: dict[str, dict] = {}
        for part in parts:
            for table, c in part.items():
                if table in out:  # the same table in two partitions: concatenate in input order
                    merged = {k: np.concatenate([out[table][k], c[k]]) for k in c}
                    o = np.argsort(merged["key"], kind="stable")
                    out[table] = {k: v[o] for k, v in merged.items()}
                else:
                    out[table] = c
        return out

    def finalize(self, counts: dict, rng: np.random.Generator) -> list[TestResult]:
        strata = _strata(counts)
        for st in strata:
            st["x"] = st["obs"] - st["exp"]
        dealers = sorted({d for st in strata for d in st["dealer"].tolist()})
        testable = []
        for d in dealers:
            if any((st["dealer"] == d).any() and (st["dealer"] != d).any() for st in strata):
                testable.append(d)
        base = int(rng.integers(2**63 - 1))
        level = exact.per_test_level(self.fdr, len(testable))
        out = []
        for d in testable:
            parts = [(st, st["dealer"] == d) for st in strata if (st["dealer"] == d).any() and
                     (st["dealer"] != d).any()]
            stat = float(sum(st["x"][m].sum() for st, m in parts))

            def simulate(B, g, parts=parts):
                tot = np.zeros(B)
                for st, m in parts:
                    x = st["x"]
                    k = int(m.sum())
                    keys = g.random((B, len(x)))
                    pick = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < len(x) else None
                    tot += x[pick].sum(axis=1) if pick is not None else x.sum()
                return tot

            p, draws = sequential_mc_pvalue(stat, simulate, subject_rng(rng, base, d), cap=self.mc_max)
            n = int(sum(m.sum() for _, m in parts))
            obs_total = float(sum(st["obs"][m].sum() for st, m in parts))
            # peers' expectation: each of his deals at the stratum's mean excess over the perfect-shuffle line
            peer_exp = float(sum((st["exp"][m] + st["x"][~m].mean()).sum() for st, m in parts))
            perfect = float(sum(st["exp"][m].sum() for st, m in parts))
            null_mean = float(sum(m.sum() * st["x"].mean() for st, m in parts))
            null_var = float(sum(_perm_var(st["x"], int(m.sum())) for st, m in parts))
            z = (stat - null_mean) / np.sqrt(null_var) if null_var > 0 else 0.0
            controls: dict[str, Any] = {}
            detail: dict[str, Any] = {"mc_draws": draws}
            if self.details:
                controls = {"perfect_shuffle": {"n": n, "observed": obs_total, "expected": round(perfect, 4),
                                                "note": "reference line only: people do not shuffle perfectly"},
                            "peers": {"strata": [st["name"] for st, _ in parts],
                                      "deals": int(sum((~m).sum() for _, m in parts)),
                                      "mean_residue": round(float(np.mean(np.concatenate(
                                          [st["obs"][~m] for st, m in parts]))), 4)}}
                keys = np.concatenate([st["key"][m] for st, m in parts])
                got = np.concatenate([st["obs"][m] for st, m in parts])
                pe = np.concatenate([st["exp"][m] + st["x"][~m].mean() for st, m in parts])
                o = np.argsort(keys, kind="stable")
                detail["timeline"] = timeline(got[o], pe[o])
                detail["null_rate"] = round(peer_exp / n, 6) if n else None
                detail["unit"] = "adjacent cards from one trick of the previous deal"
                detail["min_detectable"] = _min_detectable(parts, level)
                detail["min_detectable_level"] = level
                detail["min_detectable_method"] = (
                    "approximate (normal): the smallest fraction q of his deals left unshuffled (the gathered "
                    f"tricks only cut) that the test at the FDR-equivalent per-test level finds with power "
                    f"{MIN_DETECTABLE_POWER}")
            out.append(TestResult(
                test=self.name, subject=d, n=n, observed=obs_total, expected=peer_exp, statistic=float(z),
                pvalue=p, method="stratified permutation test against the other dealers of his table, sequential "
                                 "Monte-Carlo p-value (Besag-Clifford), one-sided",
                controls=controls, detail=detail))
        return out


def _perm_var(x: np.ndarray, k: int) -> float:
    """Variance of the sum of k values drawn without replacement from x."""
    N = len(x)
    if N < 2 or k == 0:
        return 0.0
    return k * x.var(ddof=1) * (N - k) / N


def _min_detectable(parts, level: float) -> float | None:
    n = sum(int(m.sum()) for _, m in parts)
    if n == 0:
        return None
    gain = float(sum((st["max"][m] - st["exp"][m] - st["x"][~m].mean()).sum() for st, m in parts)) / n
    sd = np.sqrt(sum(_perm_var(st["x"], int(m.sum())) for st, m in parts))
    if gain <= 0 or sd <= 0:
        return None
    za, zb = _st.norm.isf(level), _st.norm.isf(1 - MIN_DETECTABLE_POWER)
    q = (za - zb) * sd / (n * gain)  # zb is negative: power 0.8 needs the mean shift (za + |zb|) sd
    return round(float(q), 4) if q <= 1 else None
