"""auditor: replay, test and report on Scotch Whist and All Fours deal logs (deal-log/1)."""

__version__ = "0.1.0"
