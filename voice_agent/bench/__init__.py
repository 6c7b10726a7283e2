"""Benchmarks: real runs that print figures and write machine-readable results. Not tests."""
