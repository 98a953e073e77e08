"""Quotes checked against an item's text: the match itself (quotes), the one normalisation with
offsets back to the original (folding), and the bounded nearest passage (nearest)."""
