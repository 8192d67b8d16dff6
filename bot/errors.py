"""The error type the CLI shows as one line (no traceback)."""


class PokerbotError(Exception):
    """A problem with what the user asked for: bad option, bad file, missing artefact."""
