"""The write tools measured: `python -m experiments.writes.latency`."""
