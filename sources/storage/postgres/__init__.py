"""PostgreSQL storage: the pooled connection (`pool`) and versioned migrations (`migrations`)."""
