"""The describe and page stages: a ranked page's rows as results (`results.py`), and what a
result needs to fill its snippet and matched terms later (`details.py`)."""
