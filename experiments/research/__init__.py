"""Measuring the research tools: verify_quote on a long item, a session's export, schema sizes."""
