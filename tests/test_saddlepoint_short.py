"""The marked-Ten tail on short sums (issue 11: a lumpy sum of 14 deals far below its mean read as p = 0, a strong
flag on an honest member of a simulated club). Short sums are now summed exactly; below the mean p >= 1/2."""

import itertools

import numpy as np

from auditor.detectors.marked_ten import saddlepoint_sf


def _random_blocks(rng, nb):
    V, P, G = [], [], []
    for b in range(nb):
        k = int(rng.integers(2, 4))
        V += list(rng.normal(size=k))
        P += list(rng.dirichlet(np.ones(k)))
        G += [b] * k
    return np.array(V), np.array(P), np.array(G, dtype=np.int64)


def _enumerate(V, P, G, nb):
    blocks = [[(V[i], P[i]) for i in range(len(V)) if G[i] == b] for b in range(nb)]
    out: dict[float, float] = {}
    for combo in itertools.product(*blocks):
        s = sum(c[0] for c in combo)
        out[s] = out.get(s, 0.0) + float(np.prod([c[1] for c in combo]))
    return out


def test_short_sums_are_exact_at_every_atom():
    rng = np.random.default_rng(0)
    for _ in range(150):
        nb = int(rng.integers(1, 7))
        V, P, G = _random_blocks(rng, nb)
        dist = _enumerate(V, P, G, nb)
        xs = np.array(sorted(dist))
        ps = np.array([dist[x] for x in xs])
        for t in xs:
            want = ps[xs >= t - 1e-12].sum()
            assert abs(saddlepoint_sf(float(t), V, P, G, nb) - want) <= 1e-9 + 1e-9 * want


def test_below_the_mean_is_never_evidence():
    """Long sums (saddlepoint path): a total below its null mean gets p >= 1/2, however lumpy the blocks."""
    rng = np.random.default_rng(1)
    for _ in range(40):
        nb = int(rng.integers(20, 60))
        V, P, G = _random_blocks(rng, nb)
        mean = float(sum((V[G == b] * P[G == b]).sum() for b in range(nb)))
        lo = float(sum(V[G == b].min() for b in range(nb)))
        for frac in (0.05, 0.5, 0.95, 0.999):
            t = mean - frac * (mean - lo)
            assert saddlepoint_sf(t, V, P, G, nb) >= 0.5
