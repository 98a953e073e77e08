"""Text helpers every source uses: dates, front matter, named fields and snippets. Pure: no I/O."""
