"""Cost: prices (catalog, host settings, provider APIs), billing arithmetic, counters, the ledger.

No Textual here: the TUI reads these counters from a worker and renders them.
"""
