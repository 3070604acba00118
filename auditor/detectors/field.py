"""Field comparison: a player's score among the players most like him.

As chess fair-play screening compares a player with others of his strength, each player's Z is placed among the
players with similar exposure (deals scored) and similar results (mean share of the points of the deals he
played): his `percentile` among his `neighbours` nearest players in (log exposure, results), both standardised.
This serves a club of 60 as well as a room of thousands.

With at least `EMPIRICAL_MIN` players the report adds Efron's empirical null: the centre of the field's Z
distribution is fitted (central matching: a normal fitted to the middle half, location = median, scale =
interquartile range / 1.349) and each player's Z is also read against it (`p_empirical`). A field whose centre is
shifted or widened (a null that is wrong for everyone: unmodelled skill, a common misspecification) shows it
here. With fewer players the centre cannot be estimated well enough and is not reported.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from ..stats.family import rank_value

EMPIRICAL_MIN = 200
NEIGHBOURS = 20


def empirical_null(z: np.ndarray) -> tuple[float, float]:
    """Central matching: (location, scale) of a normal fitted to the middle half of the Z values."""
    q25, q50, q75 = np.percentile(z, [25, 50, 75])
    scale = (q75 - q25) / 1.349
    return float(q50), float(scale if scale > 0 else 1.0)


def field_compare(z: dict[str, float], exposure: dict[str, int], results: dict[str, float],
                  neighbours: int = NEIGHBOURS, empirical_min: int = EMPIRICAL_MIN) -> dict[str, dict]:
    """Per player: his percentile among similar players, and with >= `empirical_min` players the empirical null."""
    names = sorted(z)
    m = len(names)
    out: dict[str, dict] = {}
    if m == 0:
        return out
    Z = np.array([z[n] for n in names], dtype=float)
    ex = np.log(np.array([max(exposure.get(n, 1), 1) for n in names], dtype=float))
    rs = np.array([results.get(n, 0.0) for n in names], dtype=float)

    def standard(v: np.ndarray) -> np.ndarray:
        sd = v.std()
        return (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)

    # ranks and neighbours decided on values to RANK_DIGITS digits (`rank_value`: the last bits of sums over the
    # parts of a large input do not choose a player's neighbours or break a tie)
    coords = _ranked(np.column_stack([standard(ex), standard(rs)]))
    Zr = _ranked(Z)
    k = min(neighbours, m - 1)
    emp = None
    if m >= empirical_min:
        emp = empirical_null(Z)
    for i, n in enumerate(names):
        entry: dict = {"field_players": m}
        if k >= 1:
            dist = np.sqrt(((coords - coords[i]) ** 2).sum(1))
            dist[i] = np.inf
            near = np.argsort(dist, kind="stable")[:k]
            below = float(np.sum(Zr[near] < Zr[i]) + 0.5 * np.sum(Zr[near] == Zr[i]))
            entry["neighbours"] = int(k)
            entry["percentile"] = 100.0 * below / k
            entry["neighbour_median_z"] = float(np.median(Z[near]))
        entry["percentile_all"] = 100.0 * float(np.sum(Zr < Zr[i]) + 0.5 * (np.sum(Zr == Zr[i]) - 1)) / max(m - 1, 1)
        if emp is not None:
            mu, sd = emp
            entry["empirical_null"] = {"location": mu, "scale": sd}
            entry["p_empirical"] = float(ndtr(-(Z[i] - mu) / sd))
        else:
            entry["empirical_null"] = None
        out[n] = entry
    return out


def _ranked(v: np.ndarray) -> np.ndarray:
    """Every value to RANK_DIGITS significant digits (`stats.family.rank_value`; NaN stays NaN)."""
    flat = [rank_value(x, missing=float("nan")) for x in np.asarray(v, float).ravel().tolist()]
    return np.array(flat, float).reshape(np.shape(v))
