"""GPU requests: which of a host's GPUs a job node gets (assign.py) and who holds the others (holders.py)."""
