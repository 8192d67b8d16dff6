"""The error types the CLI shows as one line (no traceback); defined in :mod:`protocol.errors`,
the bottom layer, so that every package raises the same root."""

from protocol.errors import ConfigError, CorruptFileError, PokerbotError, UnsupportedGameError

__all__ = ["ConfigError", "CorruptFileError", "PokerbotError", "UnsupportedGameError"]
