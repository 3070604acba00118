"""The detectors `auditor audit` runs, in order. To add one: write a class with `name`, `count`, `merge`,
`finalize` (see `base.py`) whose constructor takes `fdr` and `details`, and add one line to `DETECTORS`."""

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


def make_detectors(fdr: float = 0.05, details: bool = True, only: list[str] | None = None) -> list[Detector]:
    names = list(DETECTORS) if not only else only
    return [DETECTORS[n](fdr=fdr, details=details) for n in names]
