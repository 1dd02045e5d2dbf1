"""Pooling a padded set of token vectors into one vector per example."""

import torch

from transformer_lab.validation import (
    require_finite,
    require_float_tensor,
    require_padding,
    require_rank,
)


def masked_mean(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Average the real (unpadded) token vectors of each example.

    x (B, L, D), padding (B, L) bool with True = padding. Returns (B, D). Padded positions are
    left out of both the sum and the count, so padding neither dilutes nor pollutes the mean:
    they are replaced by 0 before the sum (not multiplied by 0), so even a NaN or inf there
    cannot reach the result. Every example must have at least one real token, and a real
    token's NaN or inf is refused with its position (it would make that mean NaN).
    """
    require_float_tensor("x", x)
    require_rank("x", x, ("B", "L", "D"))
    require_padding(padding, x.shape[0], x.shape[1])
    require_finite(
        "x", x, skip=padding.unsqueeze(-1)
    )  # a NaN at a real token is a bug upstream
    counts = (~padding).sum(dim=1, keepdim=True).to(x.dtype)  # (B, 1)
    if (counts == 0).any():
        example = int((counts[:, 0] == 0).nonzero()[0])
        raise ValueError(f"example {example} is all padding: its mean would be 0/0")
    real = x.masked_fill(padding.unsqueeze(-1), 0.0)  # (B, L, D), padded rows exactly 0
    return real.sum(dim=1) / counts
