"""Device selection: cuda, mps or cpu (automatic by default)."""

from __future__ import annotations

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def available_devices() -> list[str]:
    """The devices present, in the order "auto" prefers them: cuda, mps, cpu."""
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    return [name for name, present in (("cuda", torch.cuda.is_available()), ("mps", mps), ("cpu", True)) if present]


def pick_device(name: str = "auto") -> torch.device:
    """"auto" picks cuda, then mps, then cpu; an unknown or absent device is a ValueError."""
    if name not in DEVICE_CHOICES:
        raise ValueError(f"device={name!r} is unknown: choose one of {DEVICE_CHOICES}")
    if name == "auto":
        return torch.device(available_devices()[0])
    if name not in available_devices():
        raise ValueError(f"device={name!r} is not available on this machine; available: {available_devices()}")
    return torch.device(name)

