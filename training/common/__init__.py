"""Pieces more than one training family shares: the reservoir memories (``reservoir``; Deep CFR
and NFSP) and the compiled numba fits of the value and policy networks (``fused_network``)."""
