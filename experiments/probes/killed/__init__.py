"""Probes that SIGKILL a process mid-work: an import, a server while it writes notes."""
