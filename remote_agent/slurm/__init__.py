"""Slurm clusters as hosts (issue 30): the login node's agent submits a job's allocation (sbatch),
one supervisor per node runs inside it (srun, one task per node) and journals to the shared agent
dir, and the login node's agent serves those journals and reads the job's state from Slurm.

Everything here talks to Slurm through its command-line tools' text output: in 22.05 `squeue --json`
ignores its filters and `sacct --json` reports wrong exit codes. stdlib only, Python 3.8.
"""
