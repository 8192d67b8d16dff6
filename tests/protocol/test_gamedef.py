"""Game definitions: shipped files, the parser's errors, round trips."""

import dataclasses
import re
from pathlib import Path

import pytest

from protocol.gamedef import GamedefError, load_game, parse_gamedef, shipped_game_names

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "acpc_gamedefs.txt"


def test_shipped_games_are_the_four_research_games():
    assert shipped_game_names() == [
        "fhp.limit.2p.reverse_blinds",
        "holdem.limit.2p.reverse_blinds",
        "kuhn.limit.2p",
        "leduc.limit.2p",
    ]


def test_holdem_file_is_exact_acpc_text():
    game = load_game("holdem")
    assert game.blind == (10, 5)
    assert game.raise_size == (10, 10, 20, 20)
    assert game.first_player == (1, 0, 0, 0)
    assert game.max_raises == (3, 4, 4, 4)
    assert game.big_blind == 10
    text = (Path(__file__).resolve().parents[2] / "protocol/games/holdem.limit.2p.reverse_blinds.game").read_text()
    assert text.count("\n") == 13


def test_shipped_texts_match_the_reference_texts():
    """Each shipped file is exactly its reference text (tests/data/acpc_gamedefs.txt names
    the sources: the ACPC server's HULH file, the public Leduc file, our FHP and Kuhn)."""
    blocks = re.split(r"^=== (\S+)\n", REFERENCE.read_text(), flags=re.M)[1:]
    reference = dict(zip(blocks[::2], blocks[1::2], strict=True))
    assert sorted(reference) == shipped_game_names()
    for stem, text in reference.items():
        assert (Path(__file__).resolve().parents[2] / f"protocol/games/{stem}.game").read_text() == text, stem
        assert dataclasses.replace(parse_gamedef(text), name=stem) == load_game(stem)


@pytest.mark.parametrize("name", ["kuhn", "leduc", "fhp", "holdem"])
def test_to_text_round_trips(name):
    game = load_game(name)
    assert parse_gamedef(game.to_text(), name=game.name) == game


def test_big_blind_convention():
    assert load_game("leduc").big_blind == 2
    assert load_game("kuhn").big_blind == 1
    assert load_game("fhp").big_blind == 100


def test_keys_are_case_insensitive_and_equals_optional():
    text = "gamedef\nLIMIT\nNUMPLAYERS=2\nnumRounds 1\nblind = 1 1\nraisesize=1\nnumsuits 1\nnumranks = 3\nnumholecards = 1\nnumboardcards = 0\n# comment\nend gamedef\ngarbage after end\n"
    game = parse_gamedef(text)
    assert game.num_players == 2 and game.max_raises == (255,) and game.first_player == (0,)


@pytest.mark.parametrize(
    "text, message",
    [
        ("numPlayers = 2\nnumRound = 1\n", "x.game:2: unknown key 'numRound'"),
        ("numPlayers = 2\n", "missing required key 'numRounds'"),
        (
            "numPlayers = 2\nnumRounds = 2\nblind = 1 1\nraiseSize = 2\nnumSuits = 2\nnumRanks = 3\nnumHoleCards = 1\nnumBoardCards = 0 1\n",
            "x.game:4: key 'raiseSize' has 1 values but numRounds is 2",
        ),
        (
            "numPlayers = 2\nnumRounds = 1\nblind = 1 1\nraiseSize = 1\nnumSuits = 1\nnumRanks = 2\nnumHoleCards = 1\nnumBoardCards = 1\n",
            "impossible deck: 3 cards dealt",
        ),
        ("numPlayers = two\n", "x.game:1: key 'numPlayers' needs whole numbers"),
        ("numPlayers = 2\nnumPlayers = 2\n", "x.game:2: key 'numPlayers' given twice"),
        (
            "numPlayers = 2\nnumRounds = 1\nblind = 1 1\nraiseSize = 1\nfirstPlayer = 3\nnumSuits = 1\nnumRanks = 3\nnumHoleCards = 1\nnumBoardCards = 0\n",
            "'firstPlayer' values must be in 1..2",
        ),
    ],
)
def test_errors_name_file_line_and_key(text, message):
    with pytest.raises(GamedefError, match=None) as info:
        parse_gamedef(text, source="x.game")
    assert message in str(info.value)


def test_unknown_game_name_lists_known_ones():
    with pytest.raises(GamedefError, match="unknown game 'chess'.*leduc"):
        load_game("chess")


def test_gamedef_from_path(tmp_path):
    path = tmp_path / "mine.game"
    path.write_text(load_game("kuhn").to_text())
    assert load_game(str(path)).name == "mine"
