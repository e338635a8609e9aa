"""What gpudeck knows, out where people look: Prometheus' /metrics and TensorBoard event files."""
