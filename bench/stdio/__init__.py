"""End to end over stdio: `knowledge_search` against the protocol's floor (`calls`)."""
