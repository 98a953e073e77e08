"""Studies of the PostgreSQL item store: SciFact parity, ranking plans, partitions, tool latency."""
