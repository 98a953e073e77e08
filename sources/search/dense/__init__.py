"""Dense (semantic) retrieval: sentence embeddings of the chunks, stored beside them, searched
exactly with numpy and fused with bm25 (`docs/architecture.md`, "A search, stage by stage")."""
