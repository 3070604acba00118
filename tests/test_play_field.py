"""Field comparison: percentiles among similar players; Efron's empirical null only with >= 200 players."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.detectors.field import EMPIRICAL_MIN, empirical_null, field_compare


def _field(m: int, seed: int = 0, shift: float = 0.0, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    names = [f"p{i:03d}" for i in range(m)]
    z = dict(zip(names, (shift + scale * rng.normal(size=m)).tolist(), strict=True))
    exposure = dict(zip(names, rng.integers(50, 500, size=m).tolist(), strict=True))
    results = dict(zip(names, rng.uniform(0.3, 0.7, size=m).tolist(), strict=True))
    return z, exposure, results


def test_club_of_60_gets_percentiles_but_no_empirical_null():
    z, ex, rs = _field(60)
    out = field_compare(z, ex, rs)
    assert set(out) == set(z)
    top = max(z, key=z.get)
    bottom = min(z, key=z.get)
    assert out[top]["percentile"] == 100.0 and out[top]["percentile_all"] == 100.0
    assert out[bottom]["percentile"] == 0.0
    assert all(e["neighbours"] == 20 and e["empirical_null"] is None for e in out.values())
    assert all(0.0 <= e["percentile"] <= 100.0 for e in out.values())


def test_neighbours_are_players_of_similar_exposure_and_results():
    names = [f"p{i}" for i in range(40)]
    z = {n: float(i % 2) for i, n in enumerate(names)}
    # two groups far apart in exposure: the low-exposure group all has z = 5
    ex = {n: (20 if i < 20 else 2000) for i, n in enumerate(names)}
    for i in range(20):
        z[names[i]] = 5.0
    z[names[0]] = 4.0  # the lowest of his own group, though above everyone else
    rs = {n: 0.5 for n in names}
    out = field_compare(z, ex, rs, neighbours=10)
    assert out[names[0]]["percentile"] == 0.0  # compared with his own group
    assert out[names[0]]["percentile_all"] > 45.0


@pytest.mark.parametrize("shift,scale", [(0.0, 1.0), (0.5, 1.3)])
def test_empirical_null_recovers_the_centre_with_many_players(shift, scale):
    z, ex, rs = _field(2000, seed=3, shift=shift, scale=scale)
    mu, sd = empirical_null(np.array(list(z.values())))
    assert mu == pytest.approx(shift, abs=0.08)
    assert sd == pytest.approx(scale, rel=0.08)
    out = field_compare(z, ex, rs)
    e = next(iter(out.values()))
    assert e["empirical_null"]["location"] == pytest.approx(mu)
    # read against its own centre, a shifted field's p-values are uniform again
    p = np.array([v["p_empirical"] for v in out.values()])
    assert abs(np.mean(p <= 0.05) - 0.05) < 0.02


def test_threshold_is_200_players():
    z, ex, rs = _field(EMPIRICAL_MIN - 1)
    assert next(iter(field_compare(z, ex, rs).values()))["empirical_null"] is None
    z, ex, rs = _field(EMPIRICAL_MIN)
    assert next(iter(field_compare(z, ex, rs).values()))["empirical_null"] is not None


def test_tiny_fields_do_not_break():
    assert field_compare({}, {}, {}) == {}
    out = field_compare({"a": 1.0}, {"a": 10}, {"a": 0.5})
    assert "percentile" not in out["a"] and out["a"]["field_players"] == 1


def test_values_equal_but_for_their_last_bits_are_ties() -> None:
    """Ranks and neighbours are decided on values to RANK_DIGITS digits (issue 15, a tenth session): a sum over the
    parts of an input differs in its last bits with the partition, which must not move a percentile."""
    import numpy as np

    from auditor.detectors.field import field_compare
    from auditor.stats.family import rank_value

    assert rank_value(0.1 + 0.2) == rank_value(0.3) and rank_value(1.0) != rank_value(1.0 + 1e-8)
    assert rank_value(None) == 1.0 and rank_value(float("nan"), missing=2.0) == 2.0
    z = {f"p{i}": float(v) for i, v in enumerate(np.linspace(-2, 2, 30))}
    ex = {n: 100 + 3 * i for i, n in enumerate(z)}
    rs = {n: 0.4 + 0.01 * i for i, n in enumerate(z)}
    base = field_compare(z, ex, rs)
    z2 = dict(z, p0=z["p1"], p2=z["p1"])  # three equal z: ties
    nudged = dict(z2, p2=float(np.nextafter(z2["p1"], 9)), p0=float(np.nextafter(z2["p1"], -9)))
    rs_n = dict(rs, p5=float(np.nextafter(rs["p5"], 9)))
    a, b = field_compare(z2, ex, rs), field_compare(nudged, ex, rs_n)
    assert a == b  # the last bits decide nothing
    assert a["p0"]["percentile_all"] == a["p1"]["percentile_all"] == a["p2"]["percentile_all"]
    assert base["p0"]["percentile_all"] == 0.0 and base["p29"]["percentile_all"] == 100.0
