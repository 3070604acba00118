"""The numeric kernels of `marked_ten`'s finalize, in numba.

- `cgf`: the cumulant generating function of a sum of independent blocks and its first two derivatives, for the
  saddlepoint tail (`marked_ten.saddlepoint_sf`), summed without cancellation near the mean;
- `group_max`: each block's largest value (`np.maximum.at`, without its per-element cost).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def group_max(V, grp, nb):
    """Per block, the largest of its rows' V (-inf for a block without rows): `np.maximum.at`."""
    mx = np.full(nb, -np.inf)
    for i in range(len(V)):
        if V[i] > mx[grp[i]]:
            mx[grp[i]] = V[i]
    return mx


@numba.njit(cache=True)
def _exp_m1_m(a):
    """e^a - 1 - a without cancellation for small a (the series), for |a| <= 1."""
    if abs(a) >= 0.2:
        return math.expm1(a) - a
    r = 1.0
    for k in range(14, 2, -1):
        r = 1.0 + a * r / k
    return 0.5 * a * a * r


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
            z[b] += P[i] * _exp_m1_m(a)
            m1[b] += P[i] * math.expm1(a) * v
            m2[b] += P[i] * math.exp(a) * v * v
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
