"""The merge of the sources' answers into one page: calibrated lists merged, threads and duplicates
folded, the session's seen items hidden or down-ranked (`merge`), at most N hits an item (`diversity`)."""
