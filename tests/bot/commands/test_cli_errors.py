"""The CLI's one error root: user errors (``PokerbotError``) print one line and exit 2; anything
else is a bug and keeps its traceback."""

import sys

import click
import pytest
from click.testing import CliRunner

from bot import cli
from bot.errors import ConfigError, PokerbotError
from protocol.acpc_client import ACPCConnectionError, ACPCProtocolError
from protocol.cards import CardError
from protocol.gamedef import GamedefError
from protocol.match_log import MatchLogError
from protocol.matchstate import MatchStateError

#: The command ``pokerbot boom`` resolves to (set by the ``boom`` fixture).
_BOOM: click.Command | None = None


@pytest.fixture
def boom(monkeypatch):
    """Register a command ``boom`` that raises the error the test passes."""
    monkeypatch.setitem(cli.COMMANDS, "boom", f"{__name__}:_BOOM")

    def arm(error: BaseException) -> None:
        @click.command()
        def command() -> None:
            raise error

        monkeypatch.setattr(sys.modules[__name__], "_BOOM", command)

    return arm


def test_user_error_prints_one_line(boom):
    boom(ConfigError("--game 'hodlem': unknown game"))
    result = CliRunner().invoke(cli.main, ["boom"])
    assert result.exit_code == 2
    assert result.output == "error: --game 'hodlem': unknown game\n"
    assert isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("bug", [KeyError("x"), IndexError("list index out of range"), ValueError("bug"),
                                 OSError("bug")])
def test_a_bug_keeps_its_traceback(boom, bug):
    boom(bug)
    result = CliRunner().invoke(cli.main, ["boom"])
    assert result.exception is bug  # not turned into "error: ..." and exit 2
    assert "error:" not in result.output


def test_every_user_facing_error_class_has_the_one_root():
    from bot.abstraction.tables import AbstractionMissing
    from bot.agents.encoding import EncodingError
    from bot.agents.tabular import PolicyFileError
    from bot.registry import AgentNotFound, PolicyNotFound
    from bot.shipped import ShippedBotError
    from protocol.dealer import DealerSocketError
    from protocol.state import IllegalActionError

    for error in (ACPCConnectionError, ACPCProtocolError, CardError, GamedefError, MatchLogError, MatchStateError,
                  IllegalActionError, DealerSocketError, AbstractionMissing, PolicyNotFound, EncodingError,
                  AgentNotFound, ShippedBotError, PolicyFileError):
        assert issubclass(error, PokerbotError), error
    # the mix-ins callers catch stay
    assert issubclass(ACPCConnectionError, OSError) and issubclass(GamedefError, ValueError)
    assert issubclass(AgentNotFound, LookupError)


def test_an_unwritable_output_path_is_one_line(tmp_path) -> None:
    """Once the CLI stopped catching every OSError, writing a user's path had to say so itself."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(cli.main, ["match", "--game", "kuhn", "--agent", "call", "--opponent", "raise",
                                           "--hands", "2", "--log", str(blocker / "x.log")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("error: ") and str(blocker / "x.log") in result.output
