"""One-off measurements and harnesses run from a clone (`python -m experiments.…`); not installed."""
