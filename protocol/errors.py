"""The root of every error the protocol layer raises for bad outside input.

Protocol modules cannot import ``bot`` (``bot`` builds on them), so their errors share this
root instead: a malformed MATCHSTATE line, gamedef, card, log line or illegal action is a
:class:`ProtocolError` (and a ``ValueError``, which callers already expect), a failed network a
:class:`ProtocolError` and an ``OSError``. The CLI prints either as one line, like
``bot.errors.PokerbotError``; the fuzz tests (``tests/test_fuzz_*.py``) check that no input to a
parser raises anything else.
"""


class ProtocolError(Exception):
    """Bad outside input to the protocol layer; the message names what and where."""
