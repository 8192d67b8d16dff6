"""Thread-pool sizes that a piece of work may change and must give back.

numba's and torch's pools are process-wide: a board match or an AIVAT pass inside a training run
(its strength signal) or beside a multi-thread solve narrows them for its own kernels, and
left narrowed, the rest of that run would slow down without a word.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numba


@contextmanager
def thread_counts_kept() -> Iterator[None]:
    """Put numba's and (when it is loaded) torch's thread counts back on exit, however the body
    ends. torch is read from ``sys.modules``, so an abstraction-only caller never imports it."""
    numba_threads = numba.get_num_threads()
    torch = sys.modules.get("torch")
    torch_threads = None if torch is None else torch.get_num_threads()
    try:
        yield
    finally:
        numba.set_num_threads(numba_threads)
        if torch_threads is not None:
            torch.set_num_threads(torch_threads)  # type: ignore[union-attr]


def use_threads(threads: int) -> None:
    """Size numba's pool and torch's to ``threads`` (0: every core; numba's count capped by its
    launch-time maximum) for the rest of the process. For commands that share the
    machine with a run, e.g. ``exploit --follow`` on the core a one-thread trainer leaves free.
    torch is imported here because its pool must be sized before the work that uses it starts."""
    import torch

    wanted = threads or os.cpu_count() or 1
    numba.set_num_threads(min(wanted, numba.config.NUMBA_NUM_THREADS))
    torch.set_num_threads(wanted)
