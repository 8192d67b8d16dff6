"""The project's one error root (re-exported as :class:`bot.errors.PokerbotError`).

It lives in ``protocol`` because that is the bottom layer: the rules engine, gamedef parser,
MATCHSTATE parser and network client raise it too, and ``protocol`` imports nothing above it.
Every error a user can cause (a bad option, file, protocol line or corrupt checkpoint) is a
subclass, mixing in ``ValueError``/``OSError``/``LookupError`` where callers catch those; the CLI
prints exactly these as one line, so anything else (a ``KeyError`` from a bug) keeps its
traceback. The fuzz tests (``tests/protocol/test_fuzz_parsers.py``) check that no input to a parser raises
anything else.
"""

from __future__ import annotations


class PokerbotError(Exception):
    """A problem with what the user asked for: bad option, bad file, missing artefact."""


class ProtocolError(PokerbotError):
    """Bad outside input to the protocol layer (a malformed MATCHSTATE line, gamedef, card, log
    line, illegal action, or a failed connection); the message names what and where."""


class ConfigError(PokerbotError, ValueError):
    """An option, config key or value that is not valid (the message names it)."""


class UnsupportedGameError(PokerbotError, ValueError):
    """A game this command or algorithm cannot handle (too large, not heads-up, not limit)."""


class CorruptFileError(PokerbotError, ValueError):
    """A file pokerbot wrote that is damaged: truncated, bit-flipped, wrong format number."""
