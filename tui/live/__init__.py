"""The live bridge between agents and the app, without Textual: host links that do the blocking
IO, an inbox that carries their results to the app thread, backoff and log decoding."""
