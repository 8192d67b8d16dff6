"""ACPC ``.log`` files: the reference dealer's record of a match, written and parsed exactly.

Format (what the reference ACPC ``dealer.c`` writes)::

    # name/game/hands/seed <matchName> <gameDefFile> <hands> <seed>
    #--t_response <ms>
    #--t_hand <ms>
    #--t_per_hand <ms>
    STATE:<hand>:<betting>:<holes pos0>|<holes pos1>/<board r1>/...:<v0>|<v1>:<namePos0>|<namePos1>
    ...
    SCORE:<total seat1>|<total seat2>:<name1>|<name2>

Hole cards are shown for every position (folders too), the board up to the round the hand
reached, values and names in *position* order; the SCORE line is in *seat* order and written as
``%.6f`` with trailing zeros (and a trailing ``.``) removed. Our dealer, ``pokerbot match --log``
and the TUI's ``pokerbot play`` all write through :class:`MatchLogWriter`; ``pokerbot report``
reads any log (ours or the reference dealer's) with :func:`read_match_log`.

>>> line = "STATE:1:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c:-110|110:Bob|Alice"
>>> record = parse_state_line(line)
>>> record.hand_number, record.betting, record.values, record.names
(1, 'cc/cc/rrrrc/rc', (-110, 110), ('Bob', 'Alice'))
>>> format_state_line(record) == line
True
>>> format_number(2.5), format_number(-105.0), format_number(0)
('2.5', '-105', '0')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TextIO

from protocol.cards import CardError, cards_from_str, cards_to_str
from protocol.errors import ProtocolError
from protocol.files import output_error
from protocol.matchstate import MAX_HAND_DIGITS
from protocol.state import State

Number = int | float


class MatchLogError(ProtocolError, ValueError):
    """A log line that is not in the ACPC ``.log`` format; the message names file and line."""


@dataclass(frozen=True)
class HandRecord:
    """One finished hand as a log line states it; every tuple is in position order."""

    hand_number: int
    betting: str
    hole_cards: tuple[tuple[int, ...], ...]
    board: tuple[tuple[int, ...], ...]
    values: tuple[Number, ...]
    names: tuple[str, ...]

    def value_of(self, name: str) -> Number:
        """The chips ``name`` won in this hand (raises KeyError if it did not play)."""
        if name not in self.names:
            raise KeyError(name)
        return self.values[self.names.index(name)]


@dataclass(frozen=True)
class MatchHeader:
    """The four ``#`` header lines."""

    match_name: str
    gamedef_file: str
    hands: int
    seed: int
    t_response: int = 600000
    t_hand: int = 600000
    t_per_hand: int = 7000

    def lines(self) -> list[str]:
        return [
            f"# name/game/hands/seed {self.match_name} {self.gamedef_file} {self.hands} {self.seed}",
            f"#--t_response {self.t_response}",
            f"#--t_hand {self.t_hand}",
            f"#--t_per_hand {self.t_per_hand}",
        ]


@dataclass
class MatchLog:
    """A parsed log: the (last) header, every hand in file order, the SCORE line if present."""

    header: MatchHeader | None = None
    hands: list[HandRecord] = field(default_factory=list)
    score: tuple[tuple[Number, ...], tuple[str, ...]] | None = None
    torn_line: int | None = None  # number of a last line cut off without its newline (dropped)

    @property
    def player_names(self) -> list[str]:
        """Names in order of first appearance (seat order for a rotating dealer log)."""
        if self.score is not None:
            return list(self.score[1])
        seen: list[str] = []
        for hand in self.hands:
            seen += [n for n in hand.names if n not in seen]
        return seen


def format_number(value: Number) -> str:
    """``%.6f`` without trailing zeros or a trailing point, as the reference dealer prints."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _parse_number(text: str) -> Number:
    number = float(text)
    return int(number) if number.is_integer() else number


def format_state_line(record: HandRecord) -> str:
    cards = "|".join(cards_to_str(h) for h in record.hole_cards)
    cards += "".join("/" + cards_to_str(b) for b in record.board)
    return state_line(
        record.hand_number, record.betting, cards, record.values, "|".join(record.names)
    )


def state_line(
    hand_number: int, betting: str, cards: str, values: tuple[Number, ...], names: str
) -> str:
    """A ``STATE:`` line from its fields, the cards and names already as the line shows them
    (the dealer has them as text; :func:`format_state_line` formats a record)."""
    values_text = "|".join(format_number(v) for v in values)
    return f"STATE:{hand_number}:{betting}:{cards}:{values_text}:{names}"


def parse_state_line(line: str) -> HandRecord:
    """Parse one ``STATE:`` line (no line ending)."""
    parts = line.split(":")
    if len(parts) != 6 or parts[0] != "STATE":
        raise MatchLogError(f"not a STATE line: {line[:120]!r}")
    _, hand_text, betting, cards_text, values_text, names_text = parts
    if not hand_text.isdigit() or len(hand_text) > MAX_HAND_DIGITS:
        raise MatchLogError(f"bad hand number {hand_text[:40]!r}")
    groups = cards_text.split("/")
    try:
        holes = tuple(cards_from_str(h) for h in groups[0].split("|"))
        board = tuple(cards_from_str(b) for b in groups[1:])
        values = tuple(_parse_number(v) for v in values_text.split("|"))
    except (CardError, ValueError) as error:
        raise MatchLogError(f"bad cards or values in {line[:120]!r}: {error}") from None
    names = tuple(names_text.split("|"))
    if not (len(holes) == len(values) == len(names)):
        raise MatchLogError(f"players disagree between cards, values and names in {line[:120]!r}")
    return HandRecord(int(hand_text), betting, holes, board, values, names)


def format_score_line(totals_by_seat: tuple[Number, ...], names_by_seat: tuple[str, ...]) -> str:
    totals = "|".join(format_number(t) for t in totals_by_seat)
    return f"SCORE:{totals}:{'|'.join(names_by_seat)}"


def parse_score_line(line: str) -> tuple[tuple[Number, ...], tuple[str, ...]]:
    parts = line.split(":")
    if len(parts) != 3 or parts[0] != "SCORE":
        raise MatchLogError(f"not a SCORE line: {line[:120]!r}")
    try:
        totals = tuple(_parse_number(v) for v in parts[1].split("|"))
    except ValueError:
        raise MatchLogError(f"bad totals in {line[:120]!r}") from None
    return totals, tuple(parts[2].split("|"))


def _parse_header(line: str) -> MatchHeader | None:
    words = line.split()
    if len(words) == 6 and words[1] == "name/game/hands/seed":
        try:
            return MatchHeader(words[2], words[3], int(words[4]), int(words[5]))
        except ValueError:
            raise MatchLogError(f"bad header {line!r}") from None
    return None


def record_of(state: State, hand_number: int, names_by_position: tuple[str, ...]) -> HandRecord:
    """The log record of a finished hand played on the rules engine (all cards known)."""
    game = state.game
    assert state.hole_cards is not None and state.is_finished
    visible = state.visible_board()
    board = tuple(
        tuple(visible[game.board_cards_through(r - 1) : game.board_cards_through(r)])
        for r in range(1, state.round + 1)
    )
    return HandRecord(
        hand_number,
        state.betting_string(),
        state.hole_cards,
        board,
        state.payoffs(),
        names_by_position,
    )


def read_match_log(path: str | os.PathLike[str]) -> MatchLog:
    """Parse a ``.log`` file. Lines other than headers, STATE and SCORE (e.g. from ``-a``
    appends' comments) are skipped only if they start with ``#``; anything else is an error.

    Every writer ends each line with a newline, so a last line without one was cut off (a
    dealer killed mid-write, a full disk): it is dropped and its number kept in ``torn_line``,
    even if it happens to parse (its numbers may be cut short); the complete hands before it
    stand."""
    log = MatchLog()
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError as error:
        raise MatchLogError(f"{path}: cannot read: {error.strerror or error}") from None
    with handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith("\n"):
                log.torn_line = number
                break
            line = raw.rstrip("\r\n")
            try:
                if not line:
                    continue
                if line.startswith("#"):
                    log.header = _parse_header(line) or log.header
                elif line.startswith("STATE:"):
                    log.hands.append(parse_state_line(line))
                elif line.startswith("SCORE:"):
                    log.score = parse_score_line(line)
                else:
                    raise MatchLogError(f"unexpected line {line[:80]!r}")
            except MatchLogError as error:
                raise MatchLogError(f"{path}:{number}: {error}") from None
    return log


class MatchLogWriter:
    """Writes a log as the reference dealer does: header first, one flushed line per finished
    hand (so an aborted match keeps every completed hand), SCORE last.

    >>> import io
    >>> out = io.StringIO()
    >>> writer = MatchLogWriter(out, MatchHeader("m", "leduc.limit.2p.game", 1, 0))
    >>> writer.write_score((2, -2), ("a", "b"))
    >>> out.getvalue().splitlines()[-1]
    'SCORE:2|-2:a|b'
    """

    def __init__(self, stream: TextIO, header: MatchHeader | None = None) -> None:
        self.stream = stream
        if header is not None:
            self._write(header.lines())

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], header: MatchHeader, append: bool = False
    ) -> MatchLogWriter:
        """Open ``path`` for writing; its folder must exist (a typo in a path must not create
        folders wherever it points). A path that cannot be written is a one-line
        :class:`~protocol.files.OutputPathError` naming it."""
        try:
            return cls(open(path, "a" if append else "w", encoding="utf-8"), header)
        except OSError as error:
            raise output_error(path, error) from None

    def _write(self, lines: list[str]) -> None:
        self.stream.write("".join(line + "\n" for line in lines))
        self.stream.flush()

    def write_hand(self, record: HandRecord) -> None:
        self.write_state_line(format_state_line(record))

    def write_state_line(self, line: str) -> None:
        """Write one ``STATE:`` line already formatted (:func:`state_line`)."""
        self._write([line])

    def write_score(
        self, totals_by_seat: tuple[Number, ...], names_by_seat: tuple[str, ...]
    ) -> None:
        self._write([format_score_line(totals_by_seat, names_by_seat)])

    def close(self) -> None:
        self.stream.close()
