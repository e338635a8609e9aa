"""The Prometheus text exposition format (0.0.4) of a Snapshot.

GPU series carry the names and labels of NVIDIA's DCGM exporter (its default counters), so Grafana
dashboards built for it work unchanged; job series live under `gpudeck_`. No job label is named
`job`: Prometheus renames a target's `job` label to `exported_job` on scrape (FACTS.md).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, List, Optional, Tuple

from .snapshot import Gpu, JobPoint, Snapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (name, help as dcgm-exporter's default-counters.csv words it, how to read it off a Gpu)
GPU_SERIES: Tuple[Tuple[str, str, Callable[[Gpu], Optional[float]]], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.util),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", lambda g: g.mem_used_mib),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", lambda g: _free(g)),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temp_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
)

# (name, type, help, value): every job series has the labels job_id, job_name, host (+ their own)
JOB_SERIES: Tuple[Tuple[str, str, str, Callable[[JobPoint], Optional[float]]], ...] = (
    ("gpudeck_job_loss", "gauge", "The job's latest training loss.", lambda j: j.loss),
    ("gpudeck_job_step", "gauge", "The job's latest step.", lambda j: j.step),
    (
        "gpudeck_job_samples_per_second",
        "gauge",
        "The job's latest throughput (samples per second).",
        lambda j: j.samples_per_second,
    ),
    ("gpudeck_job_learning_rate", "gauge", "The job's latest learning rate.", lambda j: j.lr),
    (
        "gpudeck_job_gpu_seconds_total",
        "counter",
        "GPU-seconds the job has held (run time times its GPUs, summed over its nodes).",
        lambda j: j.gpu_seconds,
    ),
)


def _free(gpu: Gpu) -> Optional[float]:
    if gpu.mem_total_mib is None or gpu.mem_used_mib is None:
        return None
    return max(0.0, gpu.mem_total_mib - gpu.mem_used_mib)


def escape_label(value: str) -> str:
    """A label value as the format asks: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def value_text(value: float) -> str:
    value = float(value)  # an int from a caller reads the same
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def labels_text(pairs: Iterable[Tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs) + "}"


def _family(out: List[str], name: str, kind: str, help_text: str, samples: List[str]) -> None:
    """HELP and TYPE, then the samples; a family with no sample is left out (no empty families)."""
    if samples:
        out.append(f"# HELP {name} {escape_help(help_text)}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(samples)


def render(snapshot: Snapshot) -> str:
    out: List[str] = []
    _family(
        out,
        "gpudeck_host_up",
        "gauge",
        "1 when the host's agent answered this scrape, 0 when it did not.",
        [f"gpudeck_host_up{labels_text([('host', h.name)])} {int(h.up)}" for h in snapshot.hosts],
    )
    gpu_labels = [
        (
            gpu,
            labels_text(
                [
                    ("gpu", str(gpu.index)),
                    ("UUID", gpu.uuid),
                    ("device", f"nvidia{gpu.index}"),
                    ("modelName", gpu.model),
                    ("Hostname", host.name),
                ]
            ),
        )
        for host in snapshot.hosts
        for gpu in host.gpus
    ]
    for name, help_text, read_gpu in GPU_SERIES:
        samples = []
        for gpu, labels in gpu_labels:
            value = read_gpu(gpu)
            if value is not None:
                samples.append(f"{name}{labels} {value_text(value)}")
        _family(out, name, "gauge", help_text, samples)
    job_labels = [
        (job, [("job_id", job.id), ("job_name", job.name), ("host", job.host)]) for job in snapshot.jobs
    ]
    plain = {job.id: labels_text(pairs) for job, pairs in job_labels}
    for name, kind, help_text, read_job in JOB_SERIES:
        samples = []
        for job in snapshot.jobs:
            value = read_job(job)
            if value is not None:
                samples.append(f"{name}{plain[job.id]} {value_text(value)}")
        _family(out, name, kind, help_text, samples)
    _family(
        out,
        "gpudeck_job_cost_total",
        "counter",
        "What the job has cost so far, in its host's currency (price per hour times its run time).",
        [
            f"gpudeck_job_cost_total{labels_text([*pairs, ('currency', job.currency)])} {value_text(job.cost)}"
            for job, pairs in job_labels
            if job.cost is not None
        ],
    )
    _family(
        out,
        "gpudeck_job_state",
        "gauge",
        "1 for the job's current state (the state label); one series per job.",
        [f"gpudeck_job_state{labels_text([*pairs, ('state', job.state)])} 1" for job, pairs in job_labels],
    )
    out.append("")
    return "\n".join(out)
