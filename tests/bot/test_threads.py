"""thread_counts_kept gives numba's and torch's pool sizes back, also when the body raises."""

import numba
import pytest
import torch

from bot.threads import thread_counts_kept


def test_pool_sizes_come_back_after_an_error() -> None:
    before = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    torch.set_num_threads(3)
    try:
        with pytest.raises(RuntimeError, match="inside"), thread_counts_kept():
            numba.set_num_threads(1)
            torch.set_num_threads(1)
            raise RuntimeError("inside")
        assert (numba.get_num_threads(), torch.get_num_threads()) == (numba.config.NUMBA_NUM_THREADS, 3)
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])
