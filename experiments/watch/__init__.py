"""`serve --watch` measured (python -m experiments.watch.latency)."""
