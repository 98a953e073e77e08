"""Reliability probes: the real server attacked as a hostile client would, figures as JSON.

`python -m experiments.probes --json [--quick | --tiny]`; `docs/probes.md` has the figures.
"""
