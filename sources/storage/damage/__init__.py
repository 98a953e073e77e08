"""A damaged SQLite database found (`integrity`), explained (`failures`) and read for repair (`salvage`)."""
