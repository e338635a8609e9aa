"""What the host says about itself: GPUs through NVML, CPU/RAM/identity through /proc."""
