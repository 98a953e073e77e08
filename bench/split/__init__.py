"""`eval --split-sources`: a BEIR corpus split across the five sources, and the merge it measures."""
