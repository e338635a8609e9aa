"""What `--help` says besides the options: a description and examples for every verb.

Kept apart from the verbs' modules so one table holds every example (a test holds the table to
the parser: every verb has a description line and examples, every option a help text).
"""

from __future__ import annotations

import argparse

# "verb" or "verb action" → example command lines, each run as shown.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "gpudeck run --name resnet -- python -m trainer --steps 300",
        "gpudeck run --host gpu1 --setup 'source ~/venv/bin/activate' --idle-stop 30m@10% -- python train.py",
        "gpudeck run --nodes 2 --host gpu1,gpu2 --master-addr 10.0.0.5 -- python train.py",
        "gpudeck run --host gpu1 --sync -- python train.py",
        "gpudeck run --host gpu1 --image nvcr.io/nvidia/pytorch:24.05-py3 --mount /data:/data:ro -- python train.py",
        "gpudeck run --host cluster --nodes 2 --gpus-per-node 4 --time 2:00:00 -- python train.py",
        "gpudeck run --host gpu1 --gpus 2:A100 -- python train.py",
        "gpudeck run --pool gpu1,gpu2 --gpus 1 --queue --priority 5 -- python train.py",
    ),
    "queue": ("gpudeck queue", "gpudeck queue --json"),
    "forward": ("gpudeck forward train 6006", "gpudeck forward train 8888:18888 --node 1"),
    "ssh": ("gpudeck ssh train", "gpudeck ssh train --node 1 -- nvidia-smi", "gpudeck ssh gpu1"),
    "sync": ("gpudeck sync --host gpu1", "gpudeck sync ~/proj --host gpu1,gpu2 --json"),
    "gc": ("gpudeck gc", "gpudeck gc --host gpu1 --keep-days 1"),
    "watch": ("gpudeck watch ~/runs/exp1/train.log", "gpudeck watch --host gpu1 --pid 4242 /data/run.log"),
    "ps": ("gpudeck ps", "gpudeck ps --all --json"),
    "export": ("gpudeck export prometheus", "gpudeck export tensorboard resnet runs/resnet"),
    "export prometheus": (
        "gpudeck export prometheus --listen 127.0.0.1:9400",
        "gpudeck export prometheus --once | grep gpudeck_job_loss",
    ),
    "export tensorboard": (
        "gpudeck export tensorboard resnet runs/resnet && tensorboard --logdir runs",
        "gpudeck export tensorboard --follow --chain resnet runs/resnet",
    ),
    "inspect": ("gpudeck inspect resnet", "gpudeck inspect 20261129-2140 --json"),
    "logs": ("gpudeck logs resnet", "gpudeck logs -f resnet"),
    "pull": (
        "gpudeck pull resnet checkpoints",
        "gpudeck pull --node 1 resnet runs/exp1/model.onnx ~/exports",
    ),
    "metrics": ("gpudeck metrics -f resnet", "gpudeck metrics --json --chain resnet"),
    "stop": ("gpudeck stop resnet", "gpudeck stop --grace 10 --json 20261129-214028-f15bf7"),
    "kill": ("gpudeck kill resnet",),
    "dump": ("gpudeck dump resnet", "gpudeck dump resnet --node 1", "gpudeck dump resnet --show"),
    "restart": ("gpudeck restart resnet",),
    "rm": (
        "gpudeck rm resnet",
        "gpudeck ps --all --json | jq -r '.[] | select(.state==\"exited\") | .id' | xargs -n1 gpudeck rm",
    ),
    "autostop": ("gpudeck autostop pause resnet", "gpudeck autostop resume resnet"),
    "scale": ("gpudeck scale resnet +1", "gpudeck scale resnet 4 --host gpu3,gpu4"),
    "hosts": ("gpudeck hosts", "gpudeck hosts --json"),
    "hosts add": (
        "gpudeck hosts add gpu1 ubuntu@gpu1.example.com:22",
        "gpudeck hosts add a100 my-ssh-alias --yes",
        "gpudeck hosts add cluster me@login.example.edu --slurm --partition gpu",
    ),
    "hosts rm": ("gpudeck hosts rm gpu1",),
    "hosts check": ("gpudeck hosts check gpu1", "gpudeck hosts --json check gpu1"),
    "hosts show": ("gpudeck hosts show cluster", "gpudeck hosts --json show cluster"),
    "hosts set": (
        "gpudeck hosts set gpu1 price_per_hour=2.5 currency=USD",
        "gpudeck hosts set local idle_stop=30m@10%",
        "gpudeck hosts set gpu1 market=",
    ),
    "hosts resolve": (
        "gpudeck hosts resolve gpu1",
        "diff <(gpudeck hosts resolve myalias) <(ssh -G myalias)",
    ),
    "hosts trust": ("gpudeck hosts trust gpu1", "gpudeck hosts trust gpu1 --yes"),
    "hosts disconnect": ("gpudeck hosts disconnect gpu1", "gpudeck hosts disconnect --json"),
    "cost": ("gpudeck cost", "gpudeck cost --since 7d --json"),
    "prices": ("gpudeck prices", "gpudeck prices --json"),
    "policy": ("gpudeck policy eval", "gpudeck policy run --interval 60"),
    "policy eval": ("gpudeck policy eval", "gpudeck policy eval --at 2026-12-07T10:00+08:00 --json"),
    "policy run": ("gpudeck policy run", "gpudeck policy run --once"),
    "cloud": ("gpudeck cloud ls", "gpudeck cloud idle --below 5% --for 1h"),
    "cloud ls": ("gpudeck cloud ls", "gpudeck cloud ls --provider aws --json"),
    "cloud idle": ("gpudeck cloud idle", "gpudeck cloud idle --below 10% --for 2h --json"),
    "cloud stop": ("gpudeck cloud stop i-0abc123",),
    "cloud start": ("gpudeck cloud start i-0abc123",),
    "cloud terminate": ("gpudeck cloud terminate i-0abc123",),
    "cloud enforce": ("gpudeck cloud enforce --dry-run", "gpudeck cloud enforce"),
    "cloud launch": ("gpudeck cloud launch --provider aws --type g5.xlarge --image ami-0abc --key mykey",),
    "help": ("gpudeck help", "gpudeck help run"),
    "completion": (
        "gpudeck completion bash > ~/.local/share/bash-completion/completions/gpudeck",
        "gpudeck completion zsh > ~/.zfunc/_gpudeck",
        "gpudeck completion fish > ~/.config/fish/completions/gpudeck.fish",
    ),
}


class Formatter(argparse.HelpFormatter):
    """Descriptions wrapped as usual; the examples kept line by line, as they are typed."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:") or "\n\nexamples:\n" in text:
            head, _, examples = text.partition("examples:\n")
            filled = super()._fill_text(head, width, indent) + "\n\n" if head.strip() else ""
            return f"{filled}{indent}examples:\n{examples}"
        return super()._fill_text(text, width, indent)


def decorate(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Every verb under `parser`: its one-line help as the description where it has none, and its
    examples as the epilog (kept as written)."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            verb = f"{path} {name}".strip()
            if not sub.description and helps.get(name):
                text = str(helps[name])
                sub.description = text[0].upper() + text[1:] + "."
            examples = EXAMPLES.get(verb)
            if examples:
                sub.formatter_class = Formatter
                said = "\n".join(f"  $ {line}" for line in examples)
                sub.epilog = f"{sub.epilog}\n\n" if sub.epilog else ""
                sub.epilog += f"examples:\n{said}"
            decorate(sub, verb)
