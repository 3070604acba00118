"""`shuffle_residue` and `trick_stack`: per dealer, how much of the previous deal's tricks survives his shuffle,
compared with the other dealers of his table (or, at tables with fewer than four dealers, of the club's tables of
the same kind).

For consecutive deals at a table (the previous deal with the same `pack` id, the same pack of cards, and its tricks
logged), two per-deal statistics, each as an excess over its exact perfect-shuffle expectation:

- `shuffle_residue`: adjacent positions of the new deck holding two cards of one trick of the previous deal. The
  deck is the logged `deck`, else the one the hands imply (`hands` in the order received, dealt by the rules;
  undealt positions are unknown and skipped). Barely shuffled tricks stay together and, dealt one card at a time,
  go to consecutive seats. Perfect-shuffle expectation: pairs × Σ_t k_t(k_t − 1) / (P(P − 1)).
- `trick_stack`: pairs of cards of one previous trick that are both in the dealer's own hand (a dealer who puts the
  richest trick he just saw into his hand). Expectation: Σ_t C(k_t, 2) · h(h − 1) / (P(P − 1)), h his hand size.

The perfect-shuffle line is only a reference: no person shuffles like a random number generator, and people differ
(two riffles leave far more than four). So the null is "he shuffles like a typical member of his table": within each
stratum the other dealers' mean excesses give a random-effects predictive distribution (DerSimonian–Laird: mean μ,
between-dealer variance τ², within-dealer variance σ² pooled over the peers' deals), his mean excess is scored
z = (m − μ) / sqrt(τ² + σ²/n + Var μ), converted through Student's t with (peers − 1) degrees of freedom to a normal
score, and the strata are combined with Stouffer weights √n. One-sided (more residue than his peers); the p-value
is the larger of that score's normal tail and the Poisson tail of his count at its expected value (`skew_safe_p`:
short hands make the counts small and skewed). The p-value
is approximate and calibrated by simulation (`auditor calibrate`); a sloppy honest shuffler inside the peers' range
is not flagged, a dealer well outside it is. A dealer alone at his tables has no peers and is not tested.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Sequence

import numba
import numpy as np
from scipy import stats as _st

from ..cards import cards_of
from ..columns import AuditColumns, result_order
from ..columns import (
    deck_of as _deck_of,  # the dealt order of the pack, as the audit's columns hold it
)
from ..columns import parsed_tricks as _tricks_of
from ..facts import DealingFacts, config
from ..rules import layout
from ..stats import exact
from ..stats.family import TestResult
from .base import MIN_DETECTABLE_POWER, timeline
from .spec import TestSpec

MIN_PEERS = 3  # peers a dealer needs; a table with more dealers than this is its own stratum for centring


def skew_safe_p(z: float, observed: float, expected: float) -> float:
    """The one-sided p-value: the larger of the normal tail of the predictive score z and the Poisson tail of the
    observed count at its expected value. A dealer's total is a sum of small counts (pairs of one trick), strongly
    skewed where hands are short (All Fours: two-card tricks, six-card hands); there the normal score alone was far
    too small in the tail (an honest dealer with 12 pairs where 3.3 were expected read p = 6e-6, Poisson 1e-4), and
    honest clubs of two-player tables were accused. Where dealers shuffle by hand the counts are overdispersed and
    the normal score, with the peers' spread, is the larger one."""
    p = float(_st.norm.sf(z))
    if expected > 0 and observed > expected:
        p = max(p, float(_st.poisson.sf(math.ceil(observed - 1e-9) - 1, expected)))
    return p


def residue(deck: list[int], tricks: list[list[int]], pack_size: int) -> tuple[int, float, int]:
    """(observed residue, perfect-shuffle expectation, residue if the gathered tricks were only cut)."""
    trick_of = {}
    for i, t in enumerate(tricks):
        for c in t:
            trick_of[c] = i
    obs = 0
    pairs = 0
    for a, b in zip(deck, deck[1:], strict=False):
        if a < 0 or b < 0:
            continue
        pairs += 1
        ta, tb = trick_of.get(a), trick_of.get(b)
        if ta is not None and ta == tb:
            obs += 1
    same = sum(len(t) * (len(t) - 1) for t in tricks)
    exp_ = pairs * same / (pack_size * (pack_size - 1))
    return obs, exp_, sum(len(t) - 1 for t in tricks)


def stack_pairs(hand: list[int], tricks: list[list[int]], pack_size: int) -> tuple[int, float, int]:
    """(pairs of one previous trick in the hand, perfect-shuffle expectation, pairs if the richest-size trick were
    placed whole in the hand)."""
    mine = set(hand)
    obs = 0
    same = 0
    for t in tricks:
        k = sum(1 for c in t if c in mine)
        obs += k * (k - 1) // 2
        same += len(t) * (len(t) - 1) // 2
    h = len(hand)
    exp_ = same * h * (h - 1) / (pack_size * (pack_size - 1))
    kmax = min(h, max((len(t) for t in tricks), default=0))
    return obs, exp_, kmax * (kmax - 1) // 2


STATS = ("residue", "stack")


def count_results(results: Sequence[Any]) -> dict:
    """{table: {"key", "dealer", "label", "residue_obs", "residue_exp", "residue_max", "stack_obs", ...}} over
    the deals that follow a logged deal at the same table (same pack id, same pack)."""
    by_table: dict[str, list] = {}
    for r in results:
        by_table.setdefault(r.deal.table, []).append(r)
    out = {}
    for table, rs in by_table.items():
        rs.sort(key=result_order)  # the canonical order of deals (`AuditColumns.order`)
        last: dict[Any, Any] = {}
        rows = []
        for r in rs:
            d = r.deal
            if not d.ruleset.min_players <= d.n <= d.ruleset.max_players:
                continue  # no layout: the deal neither counts nor is anyone's previous deal
            cfg = config(d.ruleset, d.n)
            L = layout(d.ruleset, d.n, d.dealer)
            prev = last.get(d.pack)
            last[d.pack] = (r, cfg)
            if prev is None:
                continue
            pr, pcfg = prev
            if pcfg.pack != cfg.pack:
                continue
            tricks = _tricks_of(pr.deal)
            if tricks is None:
                continue
            deck = _deck_of(d, L)
            res = residue(deck, tricks, cfg.pack_size) if deck is not None else (np.nan, np.nan, np.nan)
            hand = [c for c in _cards(r.hands[d.dealer])] if r.hands is not None else None
            stk = stack_pairs(hand, tricks, cfg.pack_size) if hand else (np.nan, np.nan, np.nan)
            rows.append((result_order(r), d.players[d.dealer], cfg.label, *res, *stk))
        if rows:
            cols = list(zip(*rows, strict=False))
            out[table] = {"key": np.array(cols[0], np.int64), "dealer": np.array(cols[1], dtype=object),
                          "label": np.array(cols[2], dtype=object)}
            for j, name in enumerate(("residue_obs", "residue_exp", "residue_max", "stack_obs", "stack_exp",
                                      "stack_max")):
                out[table][name] = np.array(cols[3 + j], dtype=float)
    return out


# ---------------------------------------------------------------- the same rows from the audit columns


@numba.njit(cache=True)
def _residue_rows_kernel(cur, prev, pack_size, deck, deck_len, hands, has_hands, dealer, play_card, play_trick,
                         n_plays, log_slot, log_ptr, log_card, log_trick, log_ntricks):  # pragma: no cover - numba
    """`residue` and `stack_pairs` of each (deal, previous deal of its pack): out[j] = residue obs, exp, max, stack
    obs, exp, max (NaN where the deck, or the dealer's hand, is unknown). The previous deal's tricks are its plays
    grouped by trick, or (log_slot >= 0) the recorded tricks of the log_* arrays."""
    m = len(cur)
    out = np.full((m, 6), np.nan)
    trick_of = np.empty(52, np.int64)
    sizes = np.zeros(64, np.int64)
    held = np.zeros(64, np.int64)
    for j in range(m):
        i, q, P = cur[j], prev[j], pack_size[j]
        ls = log_slot[q]
        if ls >= 0:
            a, b, ntr = log_ptr[ls], log_ptr[ls + 1], log_ntricks[ls]
        else:
            a, b, ntr = 0, n_plays[q], 0
            for t in range(b):
                ntr = max(ntr, play_trick[q, t] + 1)
        if ntr > len(sizes):
            sizes = np.zeros(2 * ntr, np.int64)
            held = np.zeros(2 * ntr, np.int64)
        trick_of[:] = -1
        sizes[:ntr] = 0
        held[:ntr] = 0
        hand = np.uint64(0)
        if has_hands[i]:
            hand = hands[i, dealer[i]]
        for t in range(a, b):
            if ls >= 0:
                c, k = log_card[t], log_trick[t]
            else:
                c, k = play_card[q, t], play_trick[q, t]
            if k > trick_of[c]:  # a card in two tricks belongs to the later one (a dict filled in trick order)
                trick_of[c] = k
            sizes[k] += 1
            if (hand >> np.uint64(c)) & np.uint64(1):
                held[k] += 1
        same2 = 0
        same1 = 0
        total = 0
        longest = 0
        for k in range(ntr):
            s = sizes[k]
            same2 += s * (s - 1)
            same1 += s * (s - 1) // 2
            total += s
            longest = max(longest, s)
        if deck_len[i] >= 0:
            pairs = 0
            obs = 0
            for p in range(deck_len[i] - 1):
                x, y = deck[i, p], deck[i, p + 1]
                if x == 255 or y == 255:
                    continue
                pairs += 1
                if trick_of[x] >= 0 and trick_of[x] == trick_of[y]:
                    obs += 1
            out[j, 0] = obs
            out[j, 1] = pairs * same2 / (P * (P - 1))
            out[j, 2] = total - ntr
        if hand != np.uint64(0):
            obs = 0
            for k in range(ntr):
                obs += held[k] * (held[k] - 1) // 2
            h = 0
            x = hand
            while x:
                x &= x - np.uint64(1)
                h += 1
            kmax = min(h, longest)
            out[j, 3] = obs
            out[j, 4] = same1 * h * (h - 1) / (P * (P - 1))
            out[j, 5] = kmax * (kmax - 1) // 2
    return out


_LAST: list[tuple[weakref.ref[AuditColumns], dict]] = []  # the rows of the last table counted (both tests read them)


def rows_of(table: AuditColumns) -> dict:
    """`count_table(table)`, counted once for the two residue tests of one audit."""
    if _LAST and _LAST[0][0]() is table:
        return _LAST[0][1]
    rows = count_table(table)
    _LAST[:] = [(weakref.ref(table), rows)]
    return rows


def count_table(cols: AuditColumns) -> dict:
    """`count_results(results)` from the table (`auditor.columns.from_results(results)`, or the batch pipeline's):
    the previous deal of each deal's pack at its table found by sorting, the residues counted by a numba kernel."""
    D = len(cols)
    n = cols.n.astype(np.int64)
    gkey = cols.rset.astype(np.int64) * 256 + (n + 128)
    gkeys, ginv = np.unique(gkey, return_inverse=True)
    ginv = ginv.reshape(-1)
    g_ok = np.zeros(len(gkeys), bool)
    g_pack = np.zeros(len(gkeys), np.int64)
    g_size = np.zeros(len(gkeys), np.int64)
    labels: list[str] = []
    g_label = np.zeros(len(gkeys), np.int64)
    for g, k in enumerate(gkeys.tolist()):
        rules, n = cols.rulesets[k >> 8], (k & 0xFF) - 128
        if not rules.min_players <= n <= rules.max_players:
            continue  # no layout: the deal neither counts nor is anyone's previous deal
        cfg = config(rules, n)
        g_ok[g] = True
        g_pack[g], g_size[g] = cfg.pack, cfg.pack_size
        g_label[g] = len(labels)
        labels.append(cfg.label)
    rows = np.flatnonzero(g_ok[ginv])
    # each deal's previous deal of the same pack id at its table, in the canonical order (table, time, game, deal)
    table, pack, order = cols.table[rows], cols.pack[rows], cols.order[rows]
    o = np.lexsort((rows, order, pack, table))
    s = rows[o]
    same = np.zeros(len(s), bool)
    same[1:] = (table[o][1:] == table[o][:-1]) & (pack[o][1:] == pack[o][:-1])
    cur, prev = s[1:][same[1:]], s[:-1][same[1:]]
    keep = g_pack[ginv[cur]] == g_pack[ginv[prev]]
    # the previous deal's tricks: its plays grouped by trick, or the recorded tricks where they differ
    log_slot = np.full(D, -1, np.int64)
    has_tricks = cols.n_plays > 0
    lp: list[int] = [0]
    lc: list[int] = []
    lt: list[int] = []
    ln: list[int] = []
    for r in sorted(cols.log_tricks):
        tr = cols.log_tricks[r]
        has_tricks[r] = tr is not None
        if tr is None:
            continue
        log_slot[r] = len(ln)
        for k, trick in enumerate(tr):
            lc += trick
            lt += [k] * len(trick)
        lp.append(len(lc))
        ln.append(len(tr))
    keep &= has_tricks[prev]
    cur, prev = cur[keep], prev[keep]
    # the rows of each table in the canonical order
    o = np.lexsort((cur, cols.order[cur], cols.table[cur]))
    cur, prev = cur[o], prev[o]
    vals = _residue_rows_kernel(
        cur, prev, g_size[ginv[cur]], cols.deck, cols.deck_len.astype(np.int64), cols.hands, cols.has_hands,
        cols.dealer.astype(np.int64), cols.play_card, cols.play_trick.astype(np.int64),
        cols.n_plays.astype(np.int64), log_slot, np.asarray(lp, np.int64), np.asarray(lc, np.uint8),
        np.asarray(lt, np.int64), np.asarray(ln, np.int64))
    names = np.array(cols.players + [""], dtype=object)
    dealer = names[cols.seat_player[cur, cols.dealer[cur].astype(np.int64)]]
    label = np.array(labels + [""], dtype=object)[g_label[ginv[cur]]]
    key = cols.order[cur].astype(np.int64)
    tab = cols.table[cur]
    out: dict[str, dict[str, np.ndarray]] = {}
    if not len(cur):
        return out
    starts = np.flatnonzero(np.r_[True, tab[1:] != tab[:-1]])
    ends = np.r_[starts[1:], len(cur)]
    spans = {int(tab[a]): (a, b) for a, b in zip(starts, ends, strict=False)}
    first_row = np.full(len(cols.tables), D, np.int64)  # tables in order of first appearance in the input
    np.minimum.at(first_row, cols.table.astype(np.int64), np.arange(D))
    for t in sorted(spans, key=lambda t: first_row[t]):
        a, b = spans[t]
        c = {"key": key[a:b], "dealer": dealer[a:b], "label": label[a:b]}
        for j, name in enumerate(("residue_obs", "residue_exp", "residue_max", "stack_obs", "stack_exp",
                                  "stack_max")):
            c[name] = vals[a:b, j].copy()
        out[cols.tables[t]] = c
    return out


def _cards(mask: int) -> list[int]:

    return cards_of(mask)


def _strata(counts: dict, stat: str) -> list[dict]:
    """Tables with more than MIN_PEERS dealers are their own stratum; the others pool by configuration."""
    strata = []
    pooled: dict[str, list[dict]] = {}
    for table in sorted(counts):
        c = counts[table]
        ok = ~np.isnan(c[f"{stat}_obs"])
        c = {k: v[ok] for k, v in c.items()}
        if not len(c["key"]):
            continue
        if len(set(c["dealer"].tolist())) > MIN_PEERS:
            strata.append({"name": table, **c})
        else:
            for lab in sorted(set(c["label"].tolist())):
                m = c["label"] == lab
                pooled.setdefault(lab, []).append({k: v[m] for k, v in c.items()})
    for lab, parts in sorted(pooled.items()):
        merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        o = np.argsort(merged["key"], kind="stable")
        strata.append({"name": f"club:{lab}", **{k: v[o] for k, v in merged.items()}})
    for st in strata:
        st["x"] = st[f"{stat}_obs"] - st[f"{stat}_exp"]
    return strata


def _people(strata: list[dict]) -> dict:
    """Deal-level excesses standardised within their stratum (table or pooled configuration), then summarised per
    person: a person's shuffling is his own, the same at every table, so people are the units compared."""
    ys, names, keys = [], [], []
    for st in strata:
        x = st["x"]
        sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
        ys.append((x - x.mean()) / (sd if sd > 1e-9 else 1.0))
        names.append(st["dealer"].astype(str))
        keys.append(st["key"])
    y = np.concatenate(ys) if ys else np.zeros(0)
    who = np.concatenate(names) if names else np.zeros(0, dtype=str)
    uniq, inv = np.unique(who, return_inverse=True)
    n = np.bincount(inv, minlength=len(uniq)).astype(float)
    mean = np.bincount(inv, weights=y, minlength=len(uniq)) / np.maximum(n, 1)
    ss = np.bincount(inv, weights=(y - mean[inv]) ** 2, minlength=len(uniq))
    return {"names": list(uniq), "index": {k: i for i, k in enumerate(uniq)}, "n": n, "mean": mean, "ss": ss}


def _predictive_z(people: dict, d: str) -> tuple[float, dict] | None:
    """Random-effects predictive score of person d against everyone else (None with fewer than MIN_PEERS)."""
    i = people["index"].get(d)
    if i is None or len(people["names"]) - 1 < MIN_PEERS:
        return None
    keep = np.ones(len(people["names"]), bool)
    keep[i] = False
    means, ns = people["mean"][keep], people["n"][keep]
    k = len(means)
    dof = ns.sum() - k
    sigma2 = max(float(people["ss"][keep].sum() / dof) if dof > 0 else 1.0, 1e-9)
    v = sigma2 / ns
    w = 1 / v
    mu_fe = float((w * means).sum() / w.sum())
    q = float((w * (means - mu_fe) ** 2).sum())
    denom = float(w.sum() - (w ** 2).sum() / w.sum())
    tau2 = max(0.0, (q - (k - 1)) / denom) if denom > 0 else 0.0
    W = 1 / (v + tau2)
    mu = float((W * means).sum() / W.sum())
    var_mu = float(1 / W.sum())
    n = int(people["n"][i])
    m = float(people["mean"][i])
    t = (m - mu) / np.sqrt(tau2 + sigma2 / n + var_mu)
    z = float(_st.norm.isf(_st.t.sf(t, df=k - 1)))
    return z, {"peers": k, "mean_excess_sd_units": round(m, 4), "peers_mean": round(mu, 4),
               "between_people_sd": round(float(np.sqrt(tau2)), 4), "within_sd": round(float(np.sqrt(sigma2)), 4),
               "t": round(float(t), 3)}


RESIDUE_SPEC = TestSpec(
    name='shuffle_residue',
    title='Tricks that survive the shuffle',
    what="Whether the cards of the previous deal's tricks stay together through a dealer's shuffle more than they "
         'do for the other dealers of the same table or club.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='left tricks together',
    cheat='a share of unshuffled deals',
    honest='the other dealers',
    subject='dealer',
    chart='evidence',
    section=5,
    cost=3,
    sentence="{subject}'s deals kept {obs} pairs of cards from the previous deal's tricks side by side over the "
             '{n} deals they dealt; the other dealers of the same tables would keep about {exp}; {pq}.',
)


class ShuffleResidue:
    spec = RESIDUE_SPEC
    name = "shuffle_residue"
    stat = "residue"
    unit = "adjacent cards from one trick of the previous deal"
    cheat = "leaves the gathered tricks unshuffled (only cut)"

    def __init__(self, fdr: float = 0.05, details: bool = True):
        self.fdr = fdr
        self.details = details

    def count(self, table: AuditColumns, rng: np.random.Generator | None = None,
              facts: DealingFacts | None = None) -> dict:
        """The per-deal residue rows of the table (`count_table`; the oracle is `count_results` over the deals).
        Both residue tests read the same rows: the rows of the last table counted are kept for the other."""
        return rows_of(table)

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

    def finalize(self, counts: dict, rng: np.random.Generator | None = None) -> list[TestResult]:
        strata = _strata(counts, self.stat)
        people = _people(strata)
        # each stratum's dealers as codes, once (comparing an object array of names per dealer is quadratic)
        codes = []
        for st in strata:
            names, inv = np.unique(st["dealer"], return_inverse=True)
            codes.append(({str(x): j for j, x in enumerate(names.tolist())}, inv.reshape(-1)))
        scored = {}
        for d in people["names"]:
            r = _predictive_z(people, d)
            if r is not None and any(d in cmap and len(cmap) > 1 for cmap, _ in codes):
                scored[d] = r
        level = exact.per_test_level(self.fdr, len(scored))
        out = []
        for d, (z, info) in scored.items():
            sel = [(st, inv == cmap[d]) for st, (cmap, inv) in zip(strata, codes, strict=False) if d in cmap]
            n = int(sum(m.sum() for _, m in sel))
            obs_total = float(sum(st[f"{self.stat}_obs"][m].sum() for st, m in sel))
            peer_x = {st["name"]: (float(st["x"][~m].mean()) if (~m).any() else 0.0) for st, m in sel}
            expected = float(sum((st[f"{self.stat}_exp"][m] + peer_x[st["name"]]).sum() for st, m in sel))
            p = skew_safe_p(z, obs_total, expected)
            perfect = float(sum(st[f"{self.stat}_exp"][m].sum() for st, m in sel))
            controls: dict[str, Any] = {}
            detail: dict[str, Any] = {}
            if self.details:
                controls = {"perfect_shuffle": {"n": n, "observed": obs_total, "expected": round(perfect, 4),
                                                "note": "reference line only: people do not shuffle perfectly"},
                            "peers": info,
                            "tables": [{"stratum": st["name"], "deals": int(m.sum()),
                                        "mean": round(float(st[f"{self.stat}_obs"][m].mean()), 4),
                                        "others_mean": round(float(st[f"{self.stat}_obs"][~m].mean()), 4)
                                        if (~m).any() else None} for st, m in sel]}
                keys = np.concatenate([st["key"][m] for st, m in sel])
                got = np.concatenate([st[f"{self.stat}_obs"][m] for st, m in sel])
                pe = np.concatenate([st[f"{self.stat}_exp"][m] + peer_x[st["name"]] for st, m in sel])
                o = np.argsort(keys, kind="stable")
                detail["timeline"] = timeline(got[o], pe[o])
                detail["null_rate"] = round(expected / n, 6) if n else None
                detail["unit"] = self.unit
                detail["min_detectable"] = self._min_detectable(sel, info, level)
                detail["min_detectable_level"] = level
                detail["min_detectable_method"] = (
                    f"approximate (normal): the smallest fraction q of his deals in which he {self.cheat} that the "
                    f"test at the FDR-equivalent per-test level finds with power {MIN_DETECTABLE_POWER}")
            out.append(TestResult(
                test=self.name, subject=d, n=n, observed=obs_total, expected=expected, statistic=z, pvalue=p,
                method="random-effects predictive test against the other dealers (deal excesses standardised per "
                       "table, DerSimonian-Laird between people, Student t), one-sided; approximate, calibrated by "
                       "simulation",
                controls=controls, detail=detail))
        return out

    def _min_detectable(self, sel, info: dict, level: float) -> float | None:
        """Normal approximation: a cheat adds q·(max − expected − peers' excess) per deal, in stratum sd units."""
        n = sum(int(m.sum()) for _, m in sel)
        gain = 0.0
        for st, m in sel:
            sd = float(st["x"].std(ddof=1)) if len(st["x"]) > 1 else 1.0
            g = (st[f"{self.stat}_max"][m] - st[f"{self.stat}_exp"][m]).mean() - st["x"][~m].mean() \
                if (~m).any() else 0.0
            gain += float(g) / max(sd, 1e-9) * int(m.sum())
        gain /= max(n, 1)
        spread = np.sqrt(info["between_people_sd"] ** 2 + info["within_sd"] ** 2 / max(n, 1))
        if gain <= 0 or spread <= 0:
            return None
        need = _st.norm.isf(level) + _st.norm.isf(1 - MIN_DETECTABLE_POWER)
        q = need * spread / gain
        return round(float(q), 4) if q <= 1 else None


STACK_SPEC = TestSpec(
    name='trick_stack',
    title="Dealers who deal themselves the previous deal's tricks",
    what="How many pairs of cards from one trick of the previous deal end up together in the dealer's own hand, "
         'against the other dealers of the same tables: a dealer who puts a rich trick back into his own hand '
         'while gathering the cards leaves this trace.',
    unit='deals they dealt',
    unit_short='deals dealt',
    event='held cards of one previous trick',
    cheat='a share of stacked deals',
    honest='the other dealers',
    subject='dealer',
    chart='evidence',
    section=4,
    cost=3,
    sentence="{subject}'s own hand held {obs} pairs of cards from one trick of the previous deal over the {n} "
             'deals they dealt; the other dealers of the same tables would hold about {exp}; {pq}.',
)


class TrickStack(ShuffleResidue):
    spec = STACK_SPEC
    name = "trick_stack"
    stat = "stack"
    unit = "pairs of cards of one previous trick in the dealer's own hand"
    cheat = "puts a whole trick of the previous deal into his own hand"
