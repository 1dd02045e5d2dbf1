"""Input checks shared by the package: wrong shapes fail with a sentence, not a deep traceback."""

from collections.abc import Sequence

import torch


def describe(shape: Sequence[int | str]) -> str:
    """Format a shape as ``(B, L, D)`` or ``(2, 3, 4)``."""
    return "(" + ", ".join(str(size) for size in shape) + ")"


def require_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a tensor, else raise ``TypeError`` naming the argument."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def require_rank(name: str, tensor: torch.Tensor, expected: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``tensor`` has ``len(expected)`` dimensions.

    ``expected`` names the dimensions, e.g. ``("B", "Lq", "D")``, so the message can say what
    each axis should have been.
    """
    if tensor.dim() != len(expected):
        raise ValueError(
            f"{name} should have shape {describe(expected)} ({len(expected)} dimensions), "
            f"got {describe(tensor.shape)} ({tensor.dim()} dimensions)"
        )


def require_size(name: str, tensor: torch.Tensor, axis: int, size: int, meaning: str) -> None:
    """Raise ``ValueError`` unless ``tensor.shape[axis] == size``; ``meaning`` explains why."""
    if tensor.shape[axis] != size:
        raise ValueError(
            f"{name} has shape {describe(tensor.shape)} but its dimension {axis} should be "
            f"{size} ({meaning})"
        )


def require_padding(padding: torch.Tensor, batch: int, length: int, name: str = "padding") -> None:
    """Check a key-padding mask: boolean, shape ``(batch, length)``, True meaning 'ignore'."""
    require_tensor(name, padding)
    if padding.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = ignore this position), got dtype {padding.dtype}"
        )
    if tuple(padding.shape) != (batch, length):
        raise ValueError(
            f"{name} should have shape {describe((batch, length))} (batch, positions), "
            f"got {describe(padding.shape)}"
        )
