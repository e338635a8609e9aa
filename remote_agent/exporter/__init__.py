"""The Prometheus text format of a host's GPUs and jobs: the agent's own /metrics (opt-in per host)
and the client's `gpudeck export prometheus` share it. Standard library only (the agent's rule)."""
