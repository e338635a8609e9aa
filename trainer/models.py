"""Models: a tiny CNN for tests and smoke runs, and the ResNet family.

The built-in ResNets use torchvision's parameter names, so torchvision checkpoints load with
`--pretrained`; torchvision's own definitions are used when it imports.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class TinyCNN(nn.Module):
    def __init__(self, num_classes: int) -> None:
        super().__init__()

        def block(cin: int, cout: int, stride: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)
            )

        self.features = nn.Sequential(block(3, 16, 1), block(16, 32, 2), block(32, 64, 2))
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc(self.features(x).mean((2, 3)))
        return out


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out: torch.Tensor = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)) + idt)
        return out


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        # The stride sits on the 3x3 conv, as in torchvision's ResNet v1.5.
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, width * 4, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out: torch.Tensor = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.relu(self.bn3(self.conv3(out)) + idt)
        return out


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module | None:
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    layer1: nn.Sequential  # set in __init__, under torchvision's names
    layer2: nn.Sequential
    layer3: nn.Sequential
    layer4: nn.Sequential

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], num_classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (n, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            blocks = []
            for j in range(n):
                blocks.append(block(cin, width, 2 if (j == 0 and i > 0) else 1))
                cin = width * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        out: torch.Tensor = self.fc(torch.flatten(self.avgpool(x), 1))
        return out


class _KeepBatchNormStats:
    """Around the backward's recomputation of a block: its BatchNorm layers compute the same batch
    statistics as in the forward, but their running statistics (and batch count) stay as the forward
    left them. Snapshot and restore rather than switching the update off, so the recomputation runs
    the very kernels of the forward and reproduces its activations bit for bit; the restore also runs
    when the recomputation stops early (torch.utils.checkpoint's early stop raises through here)."""

    def __init__(self, block: nn.Module) -> None:
        self.bns = [
            m
            for m in block.modules()
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats
        ]
        self.saved: list[tuple[torch.Tensor, ...]] = []

    def __enter__(self) -> None:
        self.saved = [tuple(t.clone() for t in _running_stats(m)) for m in self.bns]

    def __exit__(self, *_exc: object) -> None:
        with torch.no_grad():
            for m, saved in zip(self.bns, self.saved, strict=True):
                for t, value in zip(_running_stats(m), saved, strict=True):
                    t.copy_(value)
        self.saved = []


def _running_stats(bn: nn.modules.batchnorm._BatchNorm) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(running mean, running var, batch count) of a layer that tracks running statistics."""
    mean, var, count = bn.running_mean, bn.running_var, bn.num_batches_tracked
    assert mean is not None and var is not None and count is not None  # track_running_stats: all three exist
    return mean, var, count


class Checkpointed(nn.Module):
    """Recomputes the wrapped block's activations in backward (activation checkpointing).

    The recomputation leaves BatchNorm running statistics alone: they are updated once per forward,
    as without checkpointing. Without autograd (validation, export) the block simply runs.
    """

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor
        if not torch.is_grad_enabled():
            out = self.inner(x)
        elif torch.compiler.is_compiling():
            # Under torch.compile the recomputation is part of the compiled backward graph, which
            # recomputes activations only: buffer updates happen once, in the forward. (Dynamo also
            # does not trace a custom context_fn.)
            out = checkpoint(self.inner, x, use_reentrant=False)
        else:
            out = checkpoint(
                self.inner,
                x,
                use_reentrant=False,
                context_fn=lambda: (contextlib.nullcontext(), _KeepBatchNormStats(self.inner)),
            )
        return out


def _torchvision_resnet(name: str, num_classes: int) -> nn.Module | None:
    try:
        import torchvision.models as tvm  # optional; a wheel that does not match torch fails on import
    except Exception:
        return None
    model: nn.Module = getattr(tvm, name)(weights=None, num_classes=num_classes)  # resnet18, resnet50
    return model


def build_model(name: str, num_classes: int, activation_checkpointing: bool = False) -> nn.Module:
    if name == "tiny":
        model: nn.Module = TinyCNN(num_classes)
        blocks = ["features"]
    else:
        model = _torchvision_resnet(name, num_classes) or (
            ResNet(BasicBlock, [2, 2, 2, 2], num_classes)
            if name == "resnet18"
            else ResNet(Bottleneck, [3, 4, 6, 3], num_classes)
        )
        blocks = ["layer1", "layer2", "layer3", "layer4"]
    if activation_checkpointing:
        # Wrap each stage's blocks; state_dict names gain ".inner", which load_weights strips/adds.
        for stage in blocks:
            seq = getattr(model, stage)
            for i, blk in enumerate(seq):
                seq[i] = Checkpointed(blk)
    return model


def plain_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict under the names of the unwrapped model (no DDP/compile/checkpoint prefixes)."""
    raw = model.state_dict()
    out = {}
    for k, v in raw.items():
        for prefix in ("module.", "_orig_mod."):
            k = k.replace(prefix, "")
        out[k.replace(".inner.", ".")] = v
    return out


def load_plain_state_dict(model: nn.Module, state: dict[str, torch.Tensor], strict: bool = True) -> None:
    """Load names as written by plain_state_dict into `model`, whatever wrappers it has."""
    target = {}
    plain = plain_state_dict(model)
    for (k_wrapped, _), k_plain in zip(model.state_dict().items(), plain, strict=True):
        if k_plain in state:
            target[k_wrapped] = state[k_plain]
    missing = set(plain) - set(state)
    if strict and missing:
        raise KeyError(f"checkpoint lacks {len(missing)} tensors, e.g. {sorted(missing)[:3]}")
    model.load_state_dict(target, strict=strict)
