"""Thread-pool sizes that a piece of work may change and must give back.

numba's and torch's pools are process-wide: a board match or an AIVAT pass inside a training run
(its strength signal) or beside a multi-thread solve narrows them for its own kernels, and
left narrowed, the rest of that run would slow down without a word.
"""

from __future__ import annotations

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
