"""Option types the commands share, typed once so every command takes the same range.

A seed reaches numpy's generators (``default_rng([seed, hand])`` refuses a negative one with a
traceback) and the ACPC dealer (a 32-bit seed), so ``--seed`` is ``0 .. 2**32 - 1`` in every
command; counts are at least 1. A value outside its range is the project's one-line
:class:`~bot.errors.ConfigError` naming the option (``error: --seed -1: must be 0 to
4,294,967,295``), raised while click reads the options: before anything runs or any folder is
made.
"""

from __future__ import annotations

from typing import Any

import click

from bot.errors import ConfigError


class WholeNumber(click.ParamType):
    """An integer in ``[low, high]`` (``high`` None: no upper bound)."""

    name = "integer"

    def __init__(self, low: int, high: int | None = None) -> None:
        self.low, self.high = low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        flag = (param.opts[0] if param is not None and param.opts else "value") if not isinstance(
            param, click.Argument) else param.human_readable_name
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                raise ConfigError(f"{flag} {value!r}: not a whole number") from None
        if self.high is None and number < self.low:
            raise ConfigError(f"{flag} {number}: must be at least {self.low}")
        if self.high is not None and not self.low <= number <= self.high:
            raise ConfigError(f"{flag} {number}: must be {self.low} to {self.high:,}")
        return number


#: ``--seed`` of every command (the dealer's positional SEED too).
SEED = WholeNumber(0, 2**32 - 1)
#: Counts that must be at least one: iterations, traversals, hands, workers.
POSITIVE = WholeNumber(1)
#: Counts where 0 has a meaning (threads: all cores; evaluation interval: automatic).
NON_NEGATIVE = WholeNumber(0)
