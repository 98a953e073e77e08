"""The bench split by source: the score fits and their signals (`calibration`, `signals`)."""
