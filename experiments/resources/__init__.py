"""Measurements of the resources and prompts hosts attach (`caps`: resources/read under its cap)."""
