"""The error types the CLI shows as one line (no traceback); defined in :mod:`protocol.errors`,
the bottom layer, so that every package raises the same root."""

from protocol.errors import ConfigError, CorruptFileError, PokerbotError, UnsupportedGameError

__all__ = ["AgentNotFound", "ConfigError", "CorruptFileError", "PokerbotError", "UnsupportedGameError"]


class AgentNotFound(PokerbotError, LookupError):
    """No agent by that name or path; the message says what exists and how to build more (here,
    below :mod:`bot.registry`, so the modules whose loaders it registers raise it too)."""
