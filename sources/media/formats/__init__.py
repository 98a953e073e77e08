"""The media file formats: each parser reads one kind of file into ParsedItems (documents, web
pages, PDFs, DOCX/EPUB packages, emails, transcripts) and the summary they share."""
