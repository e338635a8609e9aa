"""The seeds' troubleshooting as advice from evidence (issue 34): one pure module per diagnosis
(oom, nccl, loader, gpuhealth), judged by the job's supervisor while nobody looks (watch.py) and
journaled as one `advice` event per kind: {kind, why, evidence, remedies}. Standard library only."""
