"""The detectors `auditor audit` runs, in order, and their shares of the audit's error budget. To add one: write a
class with `name`, `count`, `merge`, `finalize` (see `base.py`) whose constructor takes `fdr` and `details`, add one
line to `DETECTORS` and one to `SHARES` (and take the shares it needs from the others: they sum to 1)."""

from __future__ import annotations

from typing import Callable

from .base import Detector


def _dealer_jack(**kw) -> Detector:
    from .dealer_jack import DealerJack

    return DealerJack(**kw)


def _turnup_jack(**kw) -> Detector:
    from .turnup_jack import TurnupJack

    return TurnupJack(**kw)


def _deal_uniformity(**kw) -> Detector:
    from .deal_uniformity import DealUniformity

    return DealUniformity(**kw)


def _dealer_cutter(**kw) -> Detector:
    from .deal_uniformity import DealerCutter

    return DealerCutter(**kw)


def _shuffle_residue(**kw) -> Detector:
    from .shuffle_residue import ShuffleResidue

    return ShuffleResidue(**kw)


def _trick_stack(**kw) -> Detector:
    from .shuffle_residue import TrickStack

    return TrickStack(**kw)


# name -> factory(fdr=..., details=...)
DETECTORS: dict[str, Callable[..., Detector]] = {
    "dealer_jack": _dealer_jack,
    "turnup_jack": _turnup_jack,
    "deal_uniformity": _deal_uniformity,
    "dealer_cutter": _dealer_cutter,
    "shuffle_residue": _shuffle_residue,
    "trick_stack": _trick_stack,
    "marked_ten": lambda **kw: __import__("auditor.detectors.marked_ten", fromlist=["x"]).MarkedTen(**kw),
    "collusion": lambda **kw: __import__("auditor.detectors.collusion", fromlist=["x"]).Collusion(**kw),
    "revoke_pattern": lambda **kw: __import__("auditor.detectors.revoke_pattern", fromlist=["x"]).RevokePattern(**kw),
}


# Each test's share of the audit's error budget, fixed in advance (docs/decisions.md, "One error budget"): the
# audit flags over every test together (`auditor.stats.family.apply_audit`), and a lone result of test t is flagged
# at p <= level x share_t / (tests of t) (shares renormalised over the tests present). The shares follow where
# power is needed: the exact Jack tests and the marked-Ten test guard the cheats a club fears most and must catch
# a lone cheater in a few hundred deals; the pair tests have thousands of subjects and most of them little data.
SHARES: dict[str, float] = {
    "dealer_jack": 0.25,
    "turnup_jack": 0.10,
    "deal_uniformity": 0.10,
    "dealer_cutter": 0.05,
    "shuffle_residue": 0.05,
    "trick_stack": 0.05,
    "marked_ten": 0.20,
    "collusion": 0.10,
    "revoke_pattern": 0.10,
}


def make_detectors(fdr: float = 0.05, details: bool = True, only: list[str] | None = None,
                   audit_wide: bool = True) -> list[Detector]:
    """The detectors, each given its part of the audit's error budget as its `fdr` (level x share): what its
    Monte-Carlo caps and its "smallest cheat it could have revealed" are sized for. `audit_wide=False`: each
    detector at the whole `fdr` (a study of one test alone)."""
    names = list(DETECTORS) if not only else only
    return [DETECTORS[n](fdr=fdr * (SHARES.get(n, 1.0) if audit_wide else 1.0), details=details) for n in names]
