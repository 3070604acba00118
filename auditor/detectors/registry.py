"""The detectors `auditor audit` runs, in order, and their shares of the audit's error budget.

To add a test: write one module with its `TestSpec` and a detector class (`spec`, `count`, `merge`, `finalize`; see
`base.Detector`) whose constructor takes `fdr` and `details`; add one line to `REGISTRY` below, with its share (take
the share it needs from the others: they sum to 1); and add its calibration test (see CONTRIBUTING.md). The
report, `investigate` and the scheduler read everything else from the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from .af_dealer_jack import AFDealerJack
from .base import Detector, DetectorClass
from .collusion import Collusion
from .deal_uniformity import DealerCutter, DealUniformity
from .dealer_jack import DealerJack
from .marked_ten import MarkedTen
from .partner_jack import PartnerJack
from .revoke_pattern import RevokePattern
from .shuffle_residue import ShuffleResidue, TrickStack
from .spec import TestSpec
from .turnup_jack import TurnupJack


@dataclass(frozen=True)
class Registered:
    """One test of the audit: its detector class and its share of the error budget."""

    detector: DetectorClass
    share: float

    @property
    def spec(self) -> TestSpec:
        return self.detector.spec


# Each test's share of the audit's error budget, fixed in advance (docs/decisions.md, "One error budget"): the
# audit flags over every test together (`auditor.stats.family.apply_audit`), and a lone result of test t is flagged
# at p <= level x share_t / (tests of t) (shares renormalised over the tests present). The shares follow where
# power is needed: the exact Jack tests and the marked-Ten test guard the cheats a club fears most and must catch
# a lone cheater in a few hundred deals; the pair tests have thousands of subjects and most of them little data.
# The order is the order of the document's tests.
REGISTRY: tuple[Registered, ...] = (
    Registered(DealerJack, 0.20),
    Registered(PartnerJack, 0.05),
    Registered(TurnupJack, 0.10),
    Registered(AFDealerJack, 0.05),
    Registered(DealUniformity, 0.05),
    Registered(DealerCutter, 0.05),
    Registered(ShuffleResidue, 0.05),
    Registered(TrickStack, 0.05),
    Registered(MarkedTen, 0.20),
    Registered(Collusion, 0.10),
    Registered(RevokePattern, 0.10),
)

DETECTORS: dict[str, DetectorClass] = {r.spec.name: r.detector for r in REGISTRY}  # name -> class(fdr=..., details=...)
SHARES: dict[str, float] = {r.spec.name: r.share for r in REGISTRY}
SPECS: dict[str, TestSpec] = {r.spec.name: r.spec for r in REGISTRY}
assert abs(sum(SHARES.values()) - 1.0) < 1e-12, "the shares of the error budget must sum to 1"


def make_detectors(fdr: float = 0.05, details: bool = True, only: list[str] | None = None,
                   audit_wide: bool = True) -> list[Detector]:
    """The detectors, each given its part of the audit's error budget as its `fdr` (level x share): what its
    Monte-Carlo caps and its "smallest cheat it could have revealed" are sized for. `audit_wide=False`: each
    detector at the whole `fdr` (a study of one test alone)."""
    names = list(DETECTORS) if not only else only
    return [DETECTORS[n](fdr=fdr * (SHARES.get(n, 1.0) if audit_wide else 1.0), details=details) for n in names]
