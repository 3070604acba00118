"""Detectors: one module per test, one interface (see base.py)."""
