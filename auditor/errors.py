"""One exception hierarchy. Messages quote the bad input and say where it is (file:line, game, deal, trick, seat)."""

from __future__ import annotations


class AuditorError(Exception):
    """Base of every error the auditor raises on purpose."""


class InputError(AuditorError):
    """An input file cannot be opened, decoded or parsed."""

    def __init__(self, message: str, source: str | None = None):
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


class RecordError(InputError):
    """A record breaks the deal-log/1 schema (becomes a `bad_record` finding, never a traceback)."""


class RulesError(AuditorError):
    """An unknown game, preset, option name or option value."""


class UsageError(AuditorError):
    """The command line asks for something that cannot be done (exit code 2)."""


class NoInputError(AuditorError):
    """No input file could be read at all (exit code 3)."""
