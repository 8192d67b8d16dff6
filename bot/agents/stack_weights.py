"""How an SD-CFR stack weighs its entries: iteration t's policy counts ``t^e`` in the average.

Linear CFR (Brown & Sandholm, AAAI 2019) gives iteration t the weight t, and so does
Steinberger's SD-CFR average (2019); DCFR's average weighting (the same paper) is ``t^2``. Any
weighting of the iterates is an average strategy of the same run, so the exponent is free to
choose: its cost is nothing, and later iterates, fitted on more data, are often the better ones
(``docs/algorithms/sd-cfr.md`` has the measured curves). Kept free of torch so the command line
can name the bounds without loading it.
"""

from __future__ import annotations

#: Largest exponent allowed: with the longest stack a bundle may hold (100,000 entries) the
#: heaviest weight is 1e20, so float32 numerators of weight x reach cannot overflow.
MAX_AVERAGE_EXPONENT = 4.0


def stack_weight(iteration: int, exponent: float) -> int | float:
    """The weight of the stack entry of ``iteration`` (1 for sigma^1): ``iteration^exponent``,
    an int for the linear weights (so their bundles read as they always did)."""
    return iteration if exponent == 1.0 else float(iteration) ** exponent
