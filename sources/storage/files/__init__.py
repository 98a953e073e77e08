"""Files read and walked on behalf of a user: opened once and checked as opened (opening), and
the folders an import walks (walking)."""
