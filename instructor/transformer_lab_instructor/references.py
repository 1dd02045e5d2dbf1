"""Private references for the two stretch exercises (the package has no public version of them).

They are the answers, so no chapter shows them; the self-check compares students' code with them,
and the tests check them against PyTorch (``nn.MultiheadAttention``) and against a loop.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def causal_padding_mask(padding: torch.Tensor) -> torch.Tensor:
    """padding (B, L) bool, True = padding -> (B, L, L) bool, True = query i must not read key j.

    Key j is hidden from query i when it lies in the future (j > i) or is padding."""
    length = padding.shape[1]
    future = torch.ones(length, length, dtype=torch.bool, device=padding.device).triu(
        diagonal=1
    )
    return future[None, :, :] | padding[:, None, :]


def multi_head_attention(
    x: torch.Tensor, padding: torch.Tensor, mha: nn.MultiheadAttention
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention with the weights of ``mha`` (batch_first, with biases), computed by hand.

    x (B, L, D), padding (B, L) bool with True = ignore that key. Returns the output (B, L, D) and
    every head's attention weights (B, H, L, L), equal to ``mha(x, x, x,
    key_padding_mask=padding, average_attn_weights=False)`` in evaluation mode."""
    batch, length, width = x.shape
    heads = mha.num_heads
    head_width = width // heads
    q, k, v = nn.functional.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def split(t: torch.Tensor) -> torch.Tensor:  # (B, L, D) -> (B, H, L, D/H)
        return t.reshape(batch, length, heads, head_width).transpose(1, 2)

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_width)
    scores = scores.masked_fill(padding[:, None, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (B, H, L, L)
    merged = (weights @ v).transpose(1, 2).reshape(batch, length, width)
    return nn.functional.linear(merged, mha.out_proj.weight, mha.out_proj.bias), weights
