"""Replay: the reference engine (per card, the spec), the batch engine (numpy, fast), and game chaining."""
