"""The session's ACPC ``.log``: written through :mod:`protocol.match_log` as the reference dealer
writes it (header, one flushed STATE line per finished hand, SCORE in seat order), so
``pokerbot report`` reads a person's session like any match.

Each finished hand is appended at once, so a crash keeps every finished hand; quitting rewrites
the file atomically (temp file + rename) with the header's hand count equal to the hands played
and the SCORE line.
"""

from __future__ import annotations

import os
from pathlib import Path

from protocol.match_log import MatchHeader, MatchLogWriter
from tui.session import BOT, HUMAN, HandResult, TableSession


class SessionLog:
    """Created on the first finished hand (no empty files)."""

    def __init__(self, path: Path, session: TableSession) -> None:
        self.path = Path(path)
        self.session = session
        self._writer: MatchLogWriter | None = None

    def _header(self, hands: int) -> MatchHeader:
        session = self.session
        return MatchHeader(self.path.stem, f"{session.game.name}.game", hands, session.seed)

    def write_hand(self, result: HandResult) -> None:
        if self._writer is None:
            self._writer = MatchLogWriter.open(self.path, self._header(self.session.hands or 0))
        self._writer.write_hand(result.record)

    def close(self) -> Path | None:
        """Rewrite the whole log with SCORE (seat 1 = the person); None if no hand finished."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        session = self.session
        if not session.results:
            return None
        temporary = self.path.with_name(self.path.name + ".tmp")
        writer = MatchLogWriter.open(temporary, self._header(len(session.results)))
        for result in session.results:
            writer.write_hand(result.record)
        total = session.human_total
        writer.write_score((total, -total), (session.names[HUMAN], session.names[BOT]))
        os.fsync(writer.stream.fileno())
        writer.close()
        os.replace(temporary, self.path)
        return self.path
