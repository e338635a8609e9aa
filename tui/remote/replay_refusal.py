"""What a replay says to an action it cannot take: here, apart from the replay, so the session can
name it without importing the replay (its folding code) on every CLI start."""

READ_ONLY = "read-only replay: {op} does nothing while a recording plays (gpudeck --replay)"
