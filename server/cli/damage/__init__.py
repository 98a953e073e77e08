"""`knowledge-mcp repair` (`repair`) and the damage findings `doctor` reports (`repair.find_damage`)."""
