"""The rerank stage measured: `python -m experiments.rerank.latency`."""
