"""Seeded club seasons with honest and cheating players, written as deal-log/1 (see `season.py`)."""

from .policy import SKILL, Policy, Public, View
from .season import Simulation, SimulationError, simulate_dealing, simulate_season
from .spec import CHEAT_KINDS, SKILLS, CheaterSpec, SeasonSpec, TableSpec, club_season_spec, partnerships

__all__ = [
    "CHEAT_KINDS", "SKILL", "SKILLS", "CheaterSpec", "Policy", "Public", "SeasonSpec", "Simulation",
    "SimulationError", "TableSpec", "View", "club_season_spec", "partnerships", "simulate_dealing", "simulate_season",
]
