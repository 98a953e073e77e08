"""What is wrong, said plainly: a damaged SQLite database found (`integrity`), explained
(`failures`) and read for repair (`salvage`); why a file could not be imported (`unreadable`)."""
