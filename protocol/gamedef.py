"""ACPC game definitions (``GAMEDEF ... END GAMEDEF``) parsed into an immutable :class:`Game`.

The syntax is the reference server's ``readGame()``: one key per line, case-insensitive, optional
``=`` before the numbers, ``#`` comments, parsing stops at ``END GAMEDEF``. Unlike the C parser,
which silently ignores what it does not recognise, every problem here (an unknown or misspelled
key, a missing required key, counts that disagree with ``numRounds``/``numPlayers``, a deck too
small for the cards dealt) is a :class:`GamedefError` naming the file, the line and the key.

>>> game = load_game("leduc")
>>> game.name, game.num_rounds, game.raise_size, game.big_blind
('leduc.limit.2p', 2, (2, 4), 2)
>>> from protocol.cards import cards_to_str
>>> cards_to_str(game.deck)
'QhQsKhKsAhAs'
>>> parse_gamedef("numPlayers = 2\\nnumRound = 1\\n", source="bad.game")
Traceback (most recent call last):
...
protocol.gamedef.GamedefError: bad.game:2: unknown key 'numRound' (known keys: blind, end gamedef, firstPlayer, gamedef, limit, maxRaises, noLimit, numBoardCards, numHoleCards, numPlayers, numRanks, numRounds, numSuits, raiseSize, stack)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from protocol.cards import deck
from protocol.errors import ProtocolError

#: Stack used when the gamedef gives none (the reference server's INT32_MAX).
UNLIMITED_STACK = 2**31 - 1
#: ``maxRaises`` default in the reference server: no practical limit.
UNLIMITED_RAISES = 255
MAX_ROUNDS = 4
#: Longest number accepted (a stack of 2**63 has 19 digits); longer is a typo, named as such.
MAX_NUMBER_DIGITS = 19
MAX_PLAYERS = 10

#: Short names accepted wherever a game is named, mapped to the shipped file stems.
GAME_ALIASES = {
    "kuhn": "kuhn.limit.2p",
    "leduc": "leduc.limit.2p",
    "fhp": "fhp.limit.2p.reverse_blinds",
    "holdem": "holdem.limit.2p.reverse_blinds",
    "hulh": "holdem.limit.2p.reverse_blinds",
}

_KEY_NAMES = {
    "gamedef": "gamedef",
    "end gamedef": "end gamedef",
    "limit": "limit",
    "nolimit": "noLimit",
    "numplayers": "numPlayers",
    "numrounds": "numRounds",
    "stack": "stack",
    "blind": "blind",
    "raisesize": "raiseSize",
    "firstplayer": "firstPlayer",
    "maxraises": "maxRaises",
    "numsuits": "numSuits",
    "numranks": "numRanks",
    "numholecards": "numHoleCards",
    "numboardcards": "numBoardCards",
}
_FLAG_KEYS = {"gamedef", "end gamedef", "limit", "nolimit"}
_LINE = re.compile(r"^(end\s+gamedef|[a-z]+)\s*(.*)$", re.IGNORECASE)


class GamedefError(ProtocolError, ValueError):
    """A game definition that cannot be used; the message names file, line and key."""


@dataclass(frozen=True)
class Game:
    """One ACPC game. Per-position tuples are indexed by position, per-round tuples by round.

    ``first_player`` is stored 0-based (the file is 1-based).
    """

    name: str
    betting_type: str
    num_players: int
    num_rounds: int
    stack: tuple[int, ...]
    blind: tuple[int, ...]
    raise_size: tuple[int, ...]
    first_player: tuple[int, ...]
    max_raises: tuple[int, ...]
    num_suits: int
    num_ranks: int
    num_hole_cards: int
    num_board_cards: tuple[int, ...]

    @property
    def is_limit(self) -> bool:
        return self.betting_type == "limit"

    @cached_property
    def deck(self) -> tuple[int, ...]:
        """Card codes of this game's deck (top ranks, last suits)."""
        return deck(self.num_ranks, self.num_suits)

    @property
    def big_blind(self) -> int:
        """The chip unit of mbb/g: the largest blind, or for equal antes the first raise size."""
        if len(set(self.blind)) == 1 and self.raise_size:
            return self.raise_size[0]
        return max(self.blind)

    def board_cards_through(self, round_index: int) -> int:
        """Number of board cards visible once round ``round_index`` has started."""
        return sum(self.num_board_cards[: round_index + 1])

    @property
    def total_board_cards(self) -> int:
        return sum(self.num_board_cards)

    def to_text(self) -> str:
        """The gamedef text in the reference server's field order (parses back to ``self``)."""
        lines = ["GAMEDEF", "limit" if self.is_limit else "nolimit"]
        lines.append(f"numPlayers = {self.num_players}")
        lines.append(f"numRounds = {self.num_rounds}")
        if any(s != UNLIMITED_STACK for s in self.stack):
            lines.append("stack = " + " ".join(map(str, self.stack)))
        lines.append("blind = " + " ".join(map(str, self.blind)))
        if self.is_limit:
            lines.append("raiseSize = " + " ".join(map(str, self.raise_size)))
        lines.append("firstPlayer = " + " ".join(str(p + 1) for p in self.first_player))
        if any(m != UNLIMITED_RAISES for m in self.max_raises):
            lines.append("maxRaises = " + " ".join(map(str, self.max_raises)))
        lines.append(f"numSuits = {self.num_suits}")
        lines.append(f"numRanks = {self.num_ranks}")
        lines.append(f"numHoleCards = {self.num_hole_cards}")
        lines.append("numBoardCards = " + " ".join(map(str, self.num_board_cards)))
        lines.append("END GAMEDEF")
        return "\n".join(lines) + "\n"


def parse_gamedef(text: str, source: str = "<gamedef>", name: str | None = None) -> Game:
    """Parse gamedef text; ``source`` names the file in error messages."""
    values: dict[str, tuple[list[int], int]] = {}
    betting_type = "limit"
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        key = re.sub(r"\s+", " ", match.group(1).lower()) if match else ""
        if key not in _KEY_NAMES:
            word = match.group(1) if match else line.split()[0]
            known = ", ".join(sorted(_KEY_NAMES.values(), key=str.lower))
            raise GamedefError(f"{source}:{line_number}: unknown key {word!r} (known keys: {known})")
        assert match is not None  # every known key came from a match
        rest = match.group(2).strip()
        if key == "end gamedef":
            break
        if key in _FLAG_KEYS:
            if rest:
                raise GamedefError(f"{source}:{line_number}: key {_KEY_NAMES[key]!r} takes no value")
            if key in ("limit", "nolimit"):
                betting_type = key
            continue
        numbers = rest.lstrip("=").replace("=", " ").split()
        try:
            if any(len(n) > MAX_NUMBER_DIGITS for n in numbers):
                raise ValueError
            parsed = [int(n) for n in numbers]
        except ValueError:
            raise GamedefError(
                f"{source}:{line_number}: key {_KEY_NAMES[key]!r} needs whole numbers of at most "
                f"{MAX_NUMBER_DIGITS} digits, got {rest[:60]!r}"
            ) from None
        if not parsed:
            raise GamedefError(f"{source}:{line_number}: key {_KEY_NAMES[key]!r} has no value")
        if key in values:
            raise GamedefError(
                f"{source}:{line_number}: key {_KEY_NAMES[key]!r} given twice "
                f"(first on line {values[key][1]})"
            )
        values[key] = (parsed, line_number)
    return _build_game(values, betting_type, source, name or _stem(source))


def _stem(source: str) -> str:
    base = Path(source).name
    return base[: -len(".game")] if base.endswith(".game") else base


def _build_game(
    values: dict[str, tuple[list[int], int]], betting_type: str, source: str, name: str
) -> Game:
    def where(key: str) -> str:
        return f"{source}:{values[key][1]}" if key in values else source

    def single(key: str, low: int, high: int) -> int:
        if key not in values:
            raise GamedefError(f"{source}: missing required key {_KEY_NAMES[key]!r}")
        numbers = values[key][0]
        if len(numbers) != 1 or not low <= numbers[0] <= high:
            raise GamedefError(
                f"{where(key)}: key {_KEY_NAMES[key]!r} must be one number in {low}..{high}, got {numbers}"
            )
        return numbers[0]

    def per(key: str, count: int, what: str, default: int | None = None) -> tuple[int, ...]:
        if key not in values:
            if default is None:
                raise GamedefError(f"{source}: missing required key {_KEY_NAMES[key]!r}")
            return (default,) * count
        numbers = values[key][0]
        if len(numbers) != count:
            raise GamedefError(
                f"{where(key)}: key {_KEY_NAMES[key]!r} has {len(numbers)} values but {what} is {count}"
            )
        if any(n < 0 for n in numbers):
            raise GamedefError(f"{where(key)}: key {_KEY_NAMES[key]!r} has a negative value")
        return tuple(numbers)

    num_players = single("numplayers", 2, MAX_PLAYERS)
    num_rounds = single("numrounds", 1, MAX_ROUNDS)
    blind = per("blind", num_players, "numPlayers")
    stack = per("stack", num_players, "numPlayers", UNLIMITED_STACK)
    is_limit = betting_type == "limit"
    raise_size = per("raisesize", num_rounds, "numRounds") if is_limit else ()
    if is_limit and any(r <= 0 for r in raise_size):
        raise GamedefError(f"{where('raisesize')}: key 'raiseSize' values must be positive")
    first_player = per("firstplayer", num_rounds, "numRounds", 1)
    if any(not 1 <= p <= num_players for p in first_player):
        raise GamedefError(
            f"{where('firstplayer')}: key 'firstPlayer' values must be in 1..{num_players}"
        )
    max_raises = per("maxraises", num_rounds, "numRounds", UNLIMITED_RAISES)
    num_suits = single("numsuits", 1, 4)
    num_ranks = single("numranks", 1, 13)
    num_hole_cards = single("numholecards", 1, 3)
    num_board_cards = per("numboardcards", num_rounds, "numRounds")
    for position, (b, s) in enumerate(zip(blind, stack, strict=True)):
        if b > s:
            raise GamedefError(
                f"{where('blind')}: key 'blind' of position {position} ({b}) exceeds its stack ({s})"
            )
    dealt = num_players * num_hole_cards + sum(num_board_cards)
    if dealt > num_suits * num_ranks:
        raise GamedefError(
            f"{where('numboardcards')}: impossible deck: {dealt} cards dealt "
            f"({num_players} players x {num_hole_cards} hole + {sum(num_board_cards)} board) "
            f"from {num_suits * num_ranks} cards (numSuits x numRanks)"
        )
    return Game(
        name=name,
        betting_type=betting_type,
        num_players=num_players,
        num_rounds=num_rounds,
        stack=stack,
        blind=blind,
        raise_size=raise_size,
        first_player=tuple(p - 1 for p in first_player),
        max_raises=max_raises,
        num_suits=num_suits,
        num_ranks=num_ranks,
        num_hole_cards=num_hole_cards,
        num_board_cards=num_board_cards,
    )


def shipped_game_names() -> list[str]:
    """File stems of the game definitions shipped in ``protocol/games``."""
    folder = resources.files("protocol") / "games"
    return sorted(p.name[: -len(".game")] for p in folder.iterdir() if p.name.endswith(".game"))


def load_game(name_or_path: str) -> Game:
    """A shipped game by short name (``leduc``) or file stem, or a gamedef file by path.

    Raises :class:`GamedefError` with the known names when nothing matches.
    """
    stem = GAME_ALIASES.get(name_or_path.lower(), name_or_path)
    stem = stem[: -len(".game")] if stem.endswith(".game") else stem
    if stem in shipped_game_names():
        text = (resources.files("protocol") / "games" / f"{stem}.game").read_text()
        return parse_gamedef(text, source=f"{stem}.game", name=stem)
    path = Path(name_or_path)
    if path.is_file():
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise GamedefError(f"{path}: cannot read gamedef: {error}") from None
        return parse_gamedef(text, source=str(path))
    known = ", ".join(list(GAME_ALIASES) + shipped_game_names())
    raise GamedefError(f"unknown game {name_or_path!r}: not a file and not one of {known}")
