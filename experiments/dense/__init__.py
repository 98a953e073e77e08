"""Hybrid search alone at several corpus sizes (`hybrid_sizes`)."""
