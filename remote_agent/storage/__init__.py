"""The agent dir on disk: where things live, owner-only files, JSON lines, the journal, following files."""
