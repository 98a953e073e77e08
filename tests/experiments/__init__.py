"""Tests of the experiments (not installed; run from the clone root)."""
