"""Fan-out search and routed get across sources (knowledge_search / knowledge_get)."""
