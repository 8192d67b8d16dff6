"""How a dealer reads a client's line on that client's turn, as the reference ``dealer`` of the
ACPC server (``project_acpc_server``, ``dealer.c``) does: the echoed state must be the one the
dealer waits on, and the action letter after it must be legal, or the reference dealer's
warning says what was wrong and what it did instead (an illegal or missing action becomes a
call; anything else is skipped while the dealer keeps waiting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol.matchstate import MatchState, MatchStateError, parse_matchstate

_REPLY = re.compile(r"^(MATCHSTATE:\d+:\d+:[^:]*:(?:[2-9TJQKA][cdhs]|[|/])*)(.*)$", re.DOTALL)
#: What a reply's action letter means (the reference dealer accepts either case and ``k``/``b``).
ACTION_LETTERS = {
    "f": "f",
    "F": "f",
    "c": "c",
    "C": "c",
    "k": "c",
    "K": "c",
    "r": "r",
    "R": "r",
    "b": "r",
    "B": "r",
}


@dataclass(frozen=True)
class Reply:
    """How the dealer reads one line on a player's turn: an action (possibly changed to a call),
    or None to keep waiting; ``warning`` is the reference dealer's WARNING text, if any."""

    action: str | None
    warning: str | None = None


def parse_reply(line: str, expected: MatchState, legal: tuple[str, ...]) -> Reply:
    """Judge a client's line against the state the dealer waits on (§3, §4).

    >>> from protocol.matchstate import parse_matchstate
    >>> waiting = parse_matchstate("MATCHSTATE:0:1:c:9h6s|")
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|:r", waiting, ("c", "r"))
    Reply(action='r', warning=None)
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|\\r:r", waiting, ("c", "r")).warning
    'bad action format in response, changed to call'
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|:f", waiting, ("c", "r"))
    Reply(action='c', warning='invalid action, changed to call')
    >>> parse_reply("MATCHSTATE:0:0::9h6s|:c", waiting, ("c", "r"))
    Reply(action=None, warning='ignoring un-requested response')
    """
    match = _REPLY.match(line)
    if match is None:
        return Reply(None, "bad state format in response")
    try:
        echoed = parse_matchstate(match.group(1))
    except MatchStateError:
        return Reply(None, "bad state format in response")
    if (
        echoed.position != expected.position
        or echoed.hand_number != expected.hand_number
        or echoed.betting != expected.betting
        or len(echoed.hole_cards) <= expected.position
        or echoed.own_hole_cards != expected.own_hole_cards
        or echoed.board != expected.board
    ):
        return Reply(None, "ignoring un-requested response")
    rest = match.group(2)
    if not rest.startswith(":"):
        return Reply("c", "bad action format in response, changed to call")
    return _judge_action(rest[1:2], legal)


def judge_reply(line: str, expected: str, legal: tuple[str, ...]) -> Reply:
    """:func:`parse_reply` against the exact text the dealer sent: a reply that echoes it
    verbatim and then ``:`` (what every correct client sends) is judged without parsing, since
    it parses to the same state; anything else takes the full path.

    >>> judge_reply("MATCHSTATE:0:1:c:9h6s|:r", "MATCHSTATE:0:1:c:9h6s|", ("c", "r"))
    Reply(action='r', warning=None)
    """
    size = len(expected)
    if line.startswith(expected) and line[size : size + 1] == ":":
        return _judge_action(line[size + 1 : size + 2], legal)
    return parse_reply(line, parse_matchstate(expected), legal)


def _judge_action(letter: str, legal: tuple[str, ...]) -> Reply:
    action = ACTION_LETTERS.get(letter)
    if action is None or action not in legal:
        return Reply("c", "invalid action, changed to call")
    return Reply(action)
