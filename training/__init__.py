"""Producing policies: tabular CFR family, Deep CFR, SD-CFR, NFSP, card abstraction, run directories."""
