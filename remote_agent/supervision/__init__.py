"""Running one job (`run`): its spec, its detached supervisor, its process tree, stopping it, and the
rules enforced while nobody watches (budget, idle stop)."""
