"""`serve`: the ops a client calls over stdin/stdout (PROTOCOL.md), the job table behind them, and
the journal streams pushed back."""
