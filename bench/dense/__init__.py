"""Measuring the dense stage: the fusion's fit under cross-validation, and its speed."""
