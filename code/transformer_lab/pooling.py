"""Pooling a padded set of token vectors into one vector per example."""

import torch

from transformer_lab.shapes import require_padding, require_rank, require_tensor


def masked_mean(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Average the real (unpadded) token vectors of each example.

    x (B, L, D), padding (B, L) bool with True = padding. Returns (B, D). Padded positions are
    left out of both the sum and the count, so padding neither dilutes nor pollutes the mean.
    Every example must have at least one real token.
    """
    require_tensor("x", x)
    require_rank("x", x, ("B", "L", "D"))
    require_padding(padding, x.shape[0], x.shape[1])
    keep = (~padding).unsqueeze(-1).to(x.dtype)  # (B, L, 1)
    counts = keep.sum(dim=1)  # (B, 1)
    if (counts == 0).any():
        example = int((counts[:, 0] == 0).nonzero()[0])
        raise ValueError(f"example {example} is all padding: its mean would be 0/0")
    return (x * keep).sum(dim=1) / counts
