"""Query expansion from a glossary: `file` reads and writes the YAML, `expand` adds synonyms."""
