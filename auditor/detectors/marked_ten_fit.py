"""The numeric kernels of `marked_ten`'s finalize, in numba, so that it stays linear and fast at a million deals.

`marked_ten.finalize` fits, per target and per fold of players, the holder model (binned counts), the sum of the
log likelihood ratios of each candidate seat's earlier plays, and a conditional logit (Newton's method); then it
runs a saddlepoint tail per player and test. In plain numpy each of these built several temporaries of the size of
the whole input per step (the logit: a dozen per Newton step), searched sorted keys for every candidate row and
fold, and grouped with `np.maximum.at`; at a million deals that was ~90 s. Here each is one pass over rows that
are already grouped (a decision's candidate rows are contiguous, a deal's decisions and plays too):

- `seat_llr_sums`: per deal, walk its plays in play order beside its decisions, keeping a running LLR sum per seat
  (`play_ranges`: which plays come before each decision, once per target); a candidate row reads its seat's sum at
  the decision (no sort, no search);
- `clogit_pass`: the gradient and Hessian of the conditional logit's log likelihood over the decisions in use,
  group by group (max, exp, weighted means, centred outer products); `clogit_probs`: the fitted probabilities;
- `cgf`: the cumulant generating function of a sum of independent blocks and its first two derivatives, for the
  saddlepoint tail (`marked_ten.saddlepoint_sf`), summed without cancellation near the mean; `group_max`: each
  block's largest value (`np.maximum.at`, without its per-element cost).

The arithmetic is the numpy code's (`marked_ten` keeps the formulas in its docstrings); only the order of
additions differs, so results agree to rounding (tests/test_marked_ten.py pins them).
"""

from __future__ import annotations

import math

import numba
import numpy as np

ASIDE_SLOT = 15  # a candidate row of the cards aside reads this seat's sum: no plays, 0 (as the numpy key did)


@numba.njit(cache=True)
def play_ranges(p_off, p_order, d_src, d_order):
    """Per decision t, the plays of its deal made since the deal's previous decision and before t: plays
    lo[t]:hi[t], and whether t is its deal's first decision (`first`).

    Plays: grouped by the deal's index in the counts (`p_off[d]:p_off[d + 1]`), in play order within a deal.
    Decisions: a deal's decisions contiguous and in play order (`d_src`: the deal's index in the counts)."""
    lo = np.empty(len(d_src), np.int64)
    hi = np.empty(len(d_src), np.int64)
    first = np.empty(len(d_src), np.bool_)
    cur = -1
    ptr = 0
    end = 0
    for t in range(len(d_src)):
        d = d_src[t]
        first[t] = d != cur
        if d != cur:
            cur = d
            ptr = p_off[d]
            end = p_off[d + 1]
        lo[t] = ptr
        o = d_order[t]
        while ptr < end and p_order[ptr] < o:
            ptr += 1
        hi[t] = ptr
    return lo, hi, first


@numba.njit(cache=True)
def seat_llr_sums(llr, lo, hi, first, p_seat, p_cell, c_start, c_end, c_seat, clip, out):
    """Into `out`, per candidate row: the sum of `llr[cell]` over the row's seat's plays earlier in the deal than
    its decision (`play_ranges`), clipped to +-`clip`; a row's seat -1 (the cards aside) sums nothing."""
    acc = np.zeros(ASIDE_SLOT + 1)
    for t in range(len(lo)):
        if first[t]:
            acc[:] = 0.0
        for p in range(lo[t], hi[t]):
            acc[p_seat[p]] += llr[p_cell[p]]
        for r in range(c_start[t], c_end[t]):
            j = c_seat[r]
            out[r] = min(max(acc[j if j >= 0 else ASIDE_SLOT], -clip), clip)
    return out


@numba.njit(cache=True)
def holder_counts(p_deal, p_seat, p_cell, p_holds, seat_player, max_seats, fold_of, n_folds, n_cells):
    """The holder model's counts per fold of the playing seat's player: [fold, holds the card (0/1), cell]."""
    cnt = np.zeros((n_folds, 2, n_cells), np.int64)
    for i in range(len(p_deal)):
        f = fold_of[seat_player[p_deal[i] * max_seats + p_seat[i]]] if n_folds > 1 else 0
        cnt[f, 1 if p_holds[i] == 1 else 0, p_cell[i]] += 1
    return cnt


@numba.njit(cache=True)
def clogit_pass(beta, X, chosen, c_start, c_end, hess):
    """Over the groups t (rows `c_start[t]:c_end[t]` of X, one of them `chosen`): the score of the conditional
    logit's log likelihood, sum of (x_chosen - E_p x), and (if `hess`) the information, sum of
    E_p (x - E_p x)(x - E_p x)^T, with p the softmax of x beta within the group."""
    k = X.shape[1]
    grad = np.zeros(k)
    H = np.zeros((k, k))
    width = 1
    for t in range(len(c_start)):
        width = max(width, c_end[t] - c_start[t])
    e = np.empty(width)
    xbar = np.empty(k)
    xc = np.empty(k)
    for t in range(len(c_start)):
        a, b = c_start[t], c_end[t]
        m = -np.inf
        for r in range(a, b):
            v = 0.0
            for j in range(k):
                v += X[r, j] * beta[j]
            e[r - a] = v
            m = max(m, v)
        z = 0.0
        xbar[:] = 0.0
        xc[:] = 0.0
        for r in range(a, b):
            q = np.exp(e[r - a] - m)
            e[r - a] = q
            z += q
            for j in range(k):
                xbar[j] += q * X[r, j]
                if chosen[r]:
                    xc[j] += X[r, j]
        for j in range(k):
            xbar[j] /= z
            grad[j] += xc[j] - xbar[j]
        if hess:
            for r in range(a, b):
                p = e[r - a] / z
                for i in range(k):
                    pi = p * (X[r, i] - xbar[i])
                    for j in range(i, k):
                        H[i, j] += pi * (X[r, j] - xbar[j])
    for i in range(k):
        for j in range(i):
            H[i, j] = H[j, i]
    return grad, H


@numba.njit(cache=True)
def chosen_rows(c_start, c_end, chosen):
    """Per decision, its chosen row (the last if several; -1 if none)."""
    out = np.full(len(c_start), -1, np.int64)
    for t in range(len(c_start)):
        for r in range(c_start[t], c_end[t]):
            if chosen[r]:
                out[t] = r
    return out


@numba.njit(cache=True)
def clogit_pass5(beta, x0, s, code, c_pos, c_start, c_end, use, hess):
    """`clogit_pass` over the decisions t with `use[t]`, for the posterior's design x = (x0, s, bit 0 of code,
    bit 1, bit 2) (`marked_ten._design`), written out for its five columns and two-valued flags; the chosen row of
    decision t is c_pos[t] (`chosen_rows`). A decision with one place, the true one, has nothing to learn from
    (p = 1) and is skipped. The information is summed in the same pass as the weights, as E_p x x^T - E_p x E_p x^T
    per decision (it only steers the steps: their fixed point is the score's zero)."""
    b0, b1 = beta[0], beta[1]
    cb = np.zeros(8)
    for c in range(8):
        cb[c] = beta[2] * (c & 1) + beta[3] * ((c >> 1) & 1) + beta[4] * ((c >> 2) & 1)
    g = np.zeros(5)
    H = np.zeros((5, 5))
    width = 1
    for t in range(len(c_start)):
        width = max(width, c_end[t] - c_start[t])
    e = np.empty(width)
    for t in range(len(c_start)):
        if not use[t]:
            continue
        a, b = c_start[t], c_end[t]
        if b - a == 1 and c_pos[t] == a:
            continue
        m = -np.inf
        for r in range(a, b):
            v = b0 * x0[r] + b1 * s[r] + cb[code[r]]
            e[r - a] = v
            m = max(m, v)
        z = 0.0
        m0 = m1 = m2 = m3 = m4 = 0.0
        q00 = q01 = q11 = q02 = q03 = q04 = q12 = q13 = q14 = q23 = q24 = q34 = 0.0
        for r in range(a, b):
            q = np.exp(e[r - a] - m)
            z += q
            u = x0[r]
            v = s[r]
            qu = q * u
            qv = q * v
            m0 += qu
            m1 += qv
            if hess:
                q00 += qu * u
                q01 += qu * v
                q11 += qv * v
            c = code[r]
            if c != 0:
                if c & 1:
                    m2 += q
                    if hess:
                        q02 += qu
                        q12 += qv
                        if c & 2:
                            q23 += q
                        if c & 4:
                            q24 += q
                if c & 2:
                    m3 += q
                    if hess:
                        q03 += qu
                        q13 += qv
                        if c & 4:
                            q34 += q
                if c & 4:
                    m4 += q
                    if hess:
                        q04 += qu
                        q14 += qv
        iz = 1.0 / z
        m0 *= iz
        m1 *= iz
        m2 *= iz
        m3 *= iz
        m4 *= iz
        r = c_pos[t]
        if r >= 0:
            c = code[r]
            g[0] += x0[r] - m0
            g[1] += s[r] - m1
            g[2] += (c & 1) - m2
            g[3] += ((c >> 1) & 1) - m3
            g[4] += ((c >> 2) & 1) - m4
        else:
            g[0] -= m0
            g[1] -= m1
            g[2] -= m2
            g[3] -= m3
            g[4] -= m4
        if hess:
            H[0, 0] += q00 * iz - m0 * m0
            H[0, 1] += q01 * iz - m0 * m1
            H[1, 1] += q11 * iz - m1 * m1
            H[0, 2] += q02 * iz - m0 * m2
            H[0, 3] += q03 * iz - m0 * m3
            H[0, 4] += q04 * iz - m0 * m4
            H[1, 2] += q12 * iz - m1 * m2
            H[1, 3] += q13 * iz - m1 * m3
            H[1, 4] += q14 * iz - m1 * m4
            H[2, 2] += m2 - m2 * m2
            H[3, 3] += m3 - m3 * m3
            H[4, 4] += m4 - m4 * m4
            H[2, 3] += q23 * iz - m2 * m3
            H[2, 4] += q24 * iz - m2 * m4
            H[3, 4] += q34 * iz - m3 * m4
    for i in range(5):
        for j in range(i):
            H[i, j] = H[j, i]
    return g, H


@numba.njit(cache=True)
def clogit_probs5(beta, x0, s, code, c_start, c_end, use, out):
    """Into `out`, for the rows of the decisions with `use[t]`: the softmax of x beta within the decision (the
    design of `clogit_pass5`)."""
    b0, b1 = beta[0], beta[1]
    cb = np.zeros(8)
    for c in range(8):
        cb[c] = beta[2] * (c & 1) + beta[3] * ((c >> 1) & 1) + beta[4] * ((c >> 2) & 1)
    for t in range(len(c_start)):
        if not use[t]:
            continue
        a, b = c_start[t], c_end[t]
        m = -np.inf
        for r in range(a, b):
            v = b0 * x0[r] + b1 * s[r] + cb[code[r]]
            out[r] = v
            m = max(m, v)
        z = 0.0
        for r in range(a, b):
            q = np.exp(out[r] - m)
            out[r] = q
            z += q
        for r in range(a, b):
            out[r] /= z


def newton(info, beta0: np.ndarray, start: np.ndarray, ridge: float, iters: int) -> tuple[np.ndarray, bool]:
    """Newton's method for a log likelihood with a ridge towards `beta0`, from `start`: `info(beta, hess)` gives
    the score and (if `hess`) the information. Each step solves (H + ridge I) step = score - ridge (beta - beta0);
    the steps stop once the largest change is below 1e-7 (at most `iters` steps), as `marked_ten.fit_clogit`
    always did. Returns (beta, whether the steps stopped so).

    The information is recomputed while beta has moved more than 1e-3 since it was last computed, else reused (a
    score alone costs a pass less): the fixed point is the same, and the last step, below 1e-7, errs by the
    information's relative change over at most 1e-3 of beta, so its error stays far below 1e-9 (plain Newton
    ends within about C * (1e-7)^2)."""
    beta = np.asarray(start, float).copy()
    k = len(beta)
    H: np.ndarray | None = None
    moved = 0.0
    for _ in range(iters):
        if H is None or moved > 1e-3:
            g, h = info(beta, True)
            H = h + ridge * np.eye(k)
            moved = 0.0
        else:
            g, _ = info(beta, False)
        step = np.linalg.solve(H, g - ridge * (beta - beta0))
        beta = beta + step
        size = float(np.max(np.abs(step)))
        if not math.isfinite(size):
            return beta, False
        moved += size
        if size < 1e-7:
            return beta, True
    return beta, False


@numba.njit(cache=True)
def group_max(V, grp, nb):
    """Per block, the largest of its rows' V (-inf for a block without rows): `np.maximum.at`."""
    mx = np.full(nb, -np.inf)
    for i in range(len(V)):
        if V[i] > mx[grp[i]]:
            mx[grp[i]] = V[i]
    return mx


SERIES_BELOW = 0.05  # |a| below which e^a - 1 - a is summed as its series (to a^9 / 9!: relative error < 3e-17)
_INV = np.array([0.0] + [1.0 / k for k in range(1, 10)])


@numba.njit(cache=True)
def _exp_m1_m(a):
    """(e^a - 1 - a, e^a - 1) without cancellation, for |a| <= 1: below `SERIES_BELOW` from the series (and no
    call of a transcendental function: the common case near the mean), above it from expm1 (the cancellation
    loses at most a factor 2 / a = 40)."""
    if abs(a) >= SERIES_BELOW:
        em1 = math.expm1(a)
        return em1 - a, em1
    r = 1.0
    for k in range(9, 2, -1):
        r = 1.0 + a * r * _INV[k]
    f = 0.5 * a * a * r
    return f, a + f


@numba.njit(cache=True)
def cgf(s, V, P, grp, nb, vlo, vhi, lin):
    """(K(s), K'(s), K''(s)) of the sum over blocks of X_b, X_b = V[row] with probability P[row] for the rows of
    block b (P summing to 1 per block; `vlo`, `vhi`: each block's least and largest V; `lin`: sum P V per block).

    Meant for centred values (each block's mean subtracted): near the mean K(s) = O(s^2) and the saddlepoint tail
    divides by its small square roots. A block with |s V| <= 1 is summed as 1 + s sum P V + sum P (e^(sV) - 1 - sV)
    (positive terms: K_b = log1p of an accurate small number); a block with larger values as m + log sum P e^(sV - m),
    m the largest s V (no overflow)."""
    z = np.zeros(nb)
    m1 = np.zeros(nb)
    m2 = np.zeros(nb)
    mx = np.zeros(nb)
    series = np.zeros(nb, np.bool_)
    for b in range(nb):
        series[b] = abs(s) * max(abs(vlo[b]), abs(vhi[b])) <= 1.0
        mx[b] = s * vhi[b] if s >= 0 else s * vlo[b]
    for i in range(len(V)):
        b = grp[i]
        v = V[i]
        a = s * v
        if series[b]:
            f, em1 = _exp_m1_m(a)
            z[b] += P[i] * f
            m1[b] += P[i] * em1 * v
            m2[b] += P[i] * (1.0 + em1) * v * v
        else:
            e = P[i] * math.exp(a - mx[b])
            z[b] += e
            m1[b] += e * v
            m2[b] += e * v * v
    K = 0.0
    k1 = 0.0
    k2 = 0.0
    for b in range(nb):
        if series[b]:
            zb = 1.0 + s * lin[b] + z[b]
            K += math.log1p(s * lin[b] + z[b])
            a1 = (lin[b] + m1[b]) / zb
        else:
            zb = z[b]
            K += math.log(zb) + mx[b]
            a1 = m1[b] / zb
        k1 += a1
        k2 += max(m2[b] / zb - a1 * a1, 0.0)
    return K, k1, k2




@numba.njit(cache=True)
def decision_blocks(sel, c_start, c_end, w, c_g, c_true, P):
    """The randomisation blocks of decisions `sel` (`marked_ten.TargetScores.blocks`): block k is decision
    sel[k], its values w * g over the places the card may be, places of equal g merged (their probabilities added,
    true if one of them is): the same distribution in fewer rows (a lead's two opponents, a follow's seats already
    played). Returns (block of each row, value, probability, truth)."""
    n = 0
    for k in range(len(sel)):
        n += c_end[sel[k]] - c_start[sel[k]]
    grp = np.empty(n, np.int64)
    V = np.empty(n)
    Pm = np.empty(n)
    tr = np.empty(n, np.int64)
    gs = np.empty(16, np.int64)
    m = 0
    for k in range(len(sel)):
        t = sel[k]
        first = m
        for r in range(c_start[t], c_end[t]):
            g = c_g[r]
            j = first
            while j < m and gs[j - first] != g:
                j += 1
            if j == m:
                gs[m - first] = g
                grp[m] = k
                V[m] = w[t] * g
                Pm[m] = P[r]
                tr[m] = 1 if c_true[r] else 0
                m += 1
            else:
                Pm[j] += P[r]
                if c_true[r]:
                    tr[j] = 1
    return grp[:m], V[:m], Pm[:m], tr[:m]


@numba.njit(cache=True)
def decision_sums(c_start, c_end, c_u, c_g, c_true, p_soft):
    """Per decision, over its candidate rows: the hard-fact posterior of each row (unknown cards over their sum),
    E g under the soft and the hard posterior, g at the true place, and the variance of g under each posterior."""
    n_dec = len(c_start)
    p_hard = np.empty(len(c_u))
    G_soft = np.zeros(n_dec)
    G_hard = np.zeros(n_dec)
    gtrue = np.zeros(n_dec)
    dev_soft = np.zeros(n_dec)
    dev_hard = np.zeros(n_dec)
    for t in range(n_dec):
        a, b = c_start[t], c_end[t]
        tot = 0.0
        for r in range(a, b):
            tot += c_u[r]
        tot = max(tot, 1e-300)
        for r in range(a, b):
            p_hard[r] = c_u[r] / tot
            G_soft[t] += p_soft[r] * c_g[r]
            G_hard[t] += p_hard[r] * c_g[r]
            gtrue[t] += c_g[r] * c_true[r]
        for r in range(a, b):
            dev_soft[t] += p_soft[r] * (c_g[r] - G_soft[t]) ** 2
            dev_hard[t] += p_hard[r] * (c_g[r] - G_hard[t]) ** 2
    return p_hard, G_soft, G_hard, gtrue, dev_soft, dev_hard


@numba.njit(cache=True)
def design(c_u, c_nv, c_seat, log_u):
    """The posterior's design but the LLR sum: log unknown cards (`log_u[u]`, u >= 1) and the code of the flags
    (1: one plain void shown, 2: two or more, 4: aside)."""
    x0 = np.empty(len(c_u))
    code = np.empty(len(c_u), np.int8)
    for r in range(len(c_u)):
        x0[r] = log_u[max(c_u[r], 1)]
        code[r] = (1 if c_nv[r] == 1 else 0) | (2 if c_nv[r] >= 2 else 0) | (4 if c_seat[r] < 0 else 0)
    return x0, code


@numba.njit(cache=True)
def segment_rows(off, which):
    """The rows of segments `which` one after the other (segment k: rows off[k]:off[k + 1]), and for each the
    place of its segment in `which`."""
    n = 0
    for k in range(len(which)):
        n += off[which[k] + 1] - off[which[k]]
    rows = np.empty(n, np.int64)
    seg = np.empty(n, np.int64)
    m = 0
    for k in range(len(which)):
        for r in range(off[which[k]], off[which[k] + 1]):
            rows[m] = r
            seg[m] = k
            m += 1
    return rows, seg
