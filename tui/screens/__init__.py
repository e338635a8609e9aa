"""gpudeck's screens: the deck (fleet + jobs), a job, its full log, and the modals."""
