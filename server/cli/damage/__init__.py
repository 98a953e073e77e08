"""`knowledge-mcp repair` (`repair`) and the damage `doctor` reports (`findings.doctor_finding`)."""
