"""bench/gpu_check.py's parts: what only a machine with an NVIDIA GPU can check (see that script).

The driving process stays torch-free (fast to say "no GPU"); everything that touches CUDA runs in a
child process (`torch_side.py`, the trainer, agent jobs) that the part's time limit can kill.
"""
