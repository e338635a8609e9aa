"""One module per CLI command; each exposes `add_parser(sub)` and `run(args, session) -> int`."""
