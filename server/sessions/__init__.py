"""Sessions (DESIGN §8): the per-user store, which session a request belongs to, the session tools."""
