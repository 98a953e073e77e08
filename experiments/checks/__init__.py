"""Ranking checks on a real folder of mixed files (`runner`): `python -m experiments.checks`."""
