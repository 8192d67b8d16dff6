"""Fuzzing the parsers that take outside input (hypothesis): MATCHSTATE lines (and what the
client derives from them), a dealer's judgement of replies, gamedefs, match logs and tabular
policy files. Whatever the bytes, the only exception allowed is the project's own error type:
:class:`protocol.errors.ProtocolError` in the protocol layer, ``bot.errors.PokerbotError`` in
``bot``. Inputs are drawn both from raw text and from the grammar's own alphabet and keywords,
so that the examples reach deep into each parser rather than failing on the first character."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.agents.tabular import load_policy
from bot.errors import PokerbotError
from protocol.acpc_client import HandTracker, interpret
from protocol.cards import RANKS, SUITS
from protocol.errors import ProtocolError
from protocol.gamedef import load_game, parse_gamedef
from protocol.match_log import read_match_log
from protocol.matchstate import parse_matchstate
from protocol.replies import judge_reply, parse_reply

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GAMES = [load_game(name) for name in ("kuhn", "leduc", "holdem")]

CARD = st.sampled_from([rank + suit for rank in RANKS for suit in SUITS])
VALID_CARDS = st.lists(CARD, max_size=3).map("".join)
CARD_TEXT = st.one_of(  # mostly real cards, so that lines get past the parser into the checks
    VALID_CARDS, VALID_CARDS, VALID_CARDS, st.text(alphabet="23456789TJQKAcdhsx", max_size=14)
)
NUMBER = st.one_of(st.integers(0, 12).map(str), st.text(alphabet="0123456789-", max_size=30))
LIMIT_BETTING = st.text(alphabet="cr/", max_size=12)
BETTING = st.one_of(LIMIT_BETTING, LIMIT_BETTING, st.text(alphabet="fcr/0123456789", max_size=24))


@st.composite
def matchstate_lines(draw) -> str:
    """Lines shaped like MATCHSTATE (five fields, cards split by | and /), with any content."""
    holes = draw(st.lists(CARD_TEXT, min_size=2, max_size=2) | st.lists(CARD_TEXT, max_size=4))
    board = draw(st.lists(CARD_TEXT, min_size=0, max_size=4))
    cards = "|".join(holes) + "".join("/" + b for b in board)
    position = draw(st.sampled_from(["0", "1"]) | st.sampled_from(["0", "1"]) | NUMBER)
    hand = draw(st.integers(0, 99).map(str) | NUMBER)
    fields = ["MATCHSTATE", position, hand, draw(BETTING), cards]
    if draw(st.integers(0, 4)) == 0:
        fields.insert(draw(st.integers(0, 5)), draw(st.text(max_size=8)))
    return ":".join(fields)


REAL_LINES = [
    "MATCHSTATE:0:1:c:9h6s|",
    "MATCHSTATE:0:1:cc/cc/rrrrc/:9h6s|/5s3s8h/9d/5c",
    "MATCHSTATE:1:0:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c",
    "MATCHSTATE:1:7:rc/:|Qs/Ks",
    "MATCHSTATE:0:3:rrc/crrc:Kh|As/Ks",
    "MATCHSTATE:0:0:cr:Ks|",
    "MATCHSTATE:1:0:crc:Qs|Ks",
]
MUTATION_ALPHABET = "MATCHSTE:0123456789|/cfr23456789TJQKAdhsx\r "


@st.composite
def mutated_lines(draw) -> str:
    """A real dealer line with a few characters replaced, deleted or inserted: the inputs most
    likely to slip past the parser and reach the card and betting checks."""
    line = list(draw(st.sampled_from(REAL_LINES)))
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, len(line)))
        change = draw(st.sampled_from(["replace", "delete", "insert"]))
        letter = draw(st.sampled_from(MUTATION_ALPHABET))
        if change == "insert" or where == len(line):
            line.insert(where, letter)
        elif change == "delete":
            del line[where]
        else:
            line[where] = letter
    return "".join(line)


LINES = st.one_of(mutated_lines(), mutated_lines(), matchstate_lines(), st.text(max_size=200))


@FUZZ
@given(LINES, st.sampled_from(GAMES))
def test_matchstate_parse_and_interpret_raise_only_protocol_errors(line: str, game) -> None:
    try:
        parse_matchstate(line)
        interpret(line, game)
    except ProtocolError:
        pass


@FUZZ
@given(
    st.lists(st.one_of(mutated_lines(), matchstate_lines()), min_size=2, max_size=6),
    st.sampled_from(GAMES),
)
def test_a_client_sequence_of_lines_raises_only_protocol_errors(lines, game) -> None:
    """The incremental replay (one tracker across lines) holds up as well as a fresh one."""
    tracker = HandTracker(game)
    for line in lines:
        try:
            interpret(line, game, tracker)
        except ProtocolError:
            pass


@FUZZ
@given(LINES, st.text(max_size=12))
def test_dealer_judges_any_reply_without_raising(echo: str, tail: str) -> None:
    """The dealer never fails on what a client sends: every line is an action or a warning."""
    expected = "MATCHSTATE:0:1:c:9h6s|"
    for line in (echo + tail, expected + tail, expected + ":" + tail):
        reply = judge_reply(line, expected, ("c", "r"))
        assert reply.action in (None, "c", "r")


GAMEDEF_WORDS = [
    "GAMEDEF", "END GAMEDEF", "limit", "nolimit", "numPlayers", "numRounds", "stack", "blind",
    "raiseSize", "firstPlayer", "maxRaises", "numSuits", "numRanks", "numHoleCards",
    "numBoardCards", "#", "=", "numround",
]  # fmt: skip


@st.composite
def gamedef_texts(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 14))):
        word = draw(st.sampled_from(GAMEDEF_WORDS))
        numbers = draw(st.lists(NUMBER, max_size=5))
        lines.append(" ".join([word, *draw(st.sampled_from([[], ["="]])), *numbers]))
    return "\n".join(lines)


@FUZZ
@given(st.one_of(gamedef_texts(), st.text(max_size=300)))
def test_gamedef_parser_raises_only_protocol_errors(text: str) -> None:
    try:
        game = parse_gamedef(text, source="fuzz.game")
    except ProtocolError:
        return
    assert parse_gamedef(game.to_text(), source="again.game", name=game.name) == game


STATE_LINE = st.builds(
    lambda n, b, cards, values, names: f"STATE:{n}:{b}:{cards}:{values}:{names}",
    NUMBER,
    BETTING,
    st.builds(lambda h, b: "|".join(h) + "".join("/" + x for x in b), st.lists(CARD_TEXT, max_size=3), st.lists(CARD_TEXT, max_size=3)),
    st.lists(st.one_of(NUMBER, st.floats().map(str)), max_size=3).map("|".join),
    st.lists(st.text(alphabet="ab|", max_size=3), max_size=3).map("|".join),
)  # fmt: skip
LOG_LINE = st.one_of(
    STATE_LINE,
    st.builds(lambda v, n: f"SCORE:{v}:{n}", st.text(alphabet="0123456789.-|e", max_size=12), st.text(max_size=6)),
    st.builds(lambda n, h, s: f"# name/game/hands/seed m leduc {h} {s}" + n, st.text(max_size=3), NUMBER, NUMBER),
    st.text(max_size=60),
)  # fmt: skip


@FUZZ
@given(st.lists(LOG_LINE, max_size=8), st.booleans(), st.binary(max_size=40))
def test_match_log_reader_raises_only_protocol_errors(lines, torn: bool, noise: bytes) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + (b"" if torn else b"\n") + noise
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.log"
        path.write_bytes(data)
        try:
            read_match_log(path)
        except ProtocolError:
            pass


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def policy_documents(draw) -> str:
    """Policy-file-shaped JSON: the right top-level keys with fuzzed values, or anything."""
    document = {
        "game": draw(st.sampled_from(["kuhn.limit.2p", "leduc.limit.2p", "nosuch", 3])),
        "format": draw(st.sampled_from([1, 2, True, "1"])),
        "policy": draw(
            st.dictionaries(
                st.sampled_from(["K|", "Q|r", "J|c", "Kh||r", "x"]),
                st.dictionaries(st.sampled_from("fcrx"), st.one_of(st.floats(), st.integers(), st.text(max_size=2)), max_size=3)
                | JSON_VALUES,
                max_size=4,
            )
        ),
    }  # fmt: skip
    if draw(st.booleans()):
        document["meta"] = draw(JSON_VALUES)
    text = json.dumps(document) if draw(st.booleans()) else json.dumps(draw(JSON_VALUES))
    cut = draw(st.integers(0, len(text)))
    return text if draw(st.booleans()) else text[:cut]


@FUZZ
@given(st.one_of(policy_documents(), st.text(max_size=100)))
def test_policy_loader_raises_only_pokerbot_errors(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_policy(path)
        except PokerbotError:
            pass


def test_policy_nested_deeper_than_the_json_parser_recurses(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"policy": ' + "[" * 100_000 + "]" * 100_000 + "}")
    try:
        load_policy(path)
    except PokerbotError as error:
        assert str(error) == f"{path}: JSON nested too deeply to be a policy file"
    else:
        raise AssertionError("a 100,000-deep document loaded")


@FUZZ
@given(LINES, st.text(alphabet=":cfrkbCFRKB \r", max_size=4), st.sampled_from(REAL_LINES))
def test_dealer_fast_path_judges_exactly_as_the_full_parse(line: str, tail: str, expected: str):
    """``judge_reply`` (verbatim echo checked without parsing) agrees with ``parse_reply``."""
    view = parse_matchstate(expected)
    for reply in (line + tail, expected + tail, expected + ":" + tail):
        assert judge_reply(reply, expected, ("c", "r")) == parse_reply(reply, view, ("c", "r"))
