"""The answers behind the public self-check's stored outputs, as code: for each check that
grades a function the chapters do not show, its reference and the wrong answer of each known
mistake, by the keys the check's module asks :mod:`transformer_lab.selfcheck.checks.answers` for.

The hidden checks call these on fresh inputs; ``stored`` calls them on the public inputs and
writes their outputs for the student edition."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from transformer_lab_instructor import references, week20

# --------------------------------------------------------------------------- causal_padding_mask


def _future(padding: torch.Tensor, diagonal: int = 1) -> torch.Tensor:
    length = padding.shape[1]
    return (
        torch.ones(length, length, dtype=torch.bool)
        .triu(diagonal=diagonal)[None]
        .expand(padding.shape[0], -1, -1)
    )


def _keys(padding: torch.Tensor) -> torch.Tensor:
    return padding[:, None, :].expand(-1, padding.shape[1], -1)


def _queries(padding: torch.Tensor) -> torch.Tensor:
    return padding[:, :, None].expand(-1, -1, padding.shape[1])


MASKS: dict[str, Callable[..., object]] = {
    "reference": references.causal_padding_mask,
    "padding_ignored": lambda p: _future(p),
    "causal_missing": lambda p: _keys(p),
    "blocked_diagonal": lambda p: _future(p, diagonal=0) | _keys(p),
    "causal_off_by_one": lambda p: _future(p, diagonal=2) | _keys(p),
    "causal_transposed": lambda p: _future(p).transpose(1, 2) | _keys(p),
    "inverted_mask": lambda p: ~references.causal_padding_mask(p),
    "padding_inverted": lambda p: _future(p) | ~_keys(p),
    "padding_on_queries": lambda p: _future(p) | _queries(p),
    "padding_on_both_axes": lambda p: _future(p) | _keys(p) | _queries(p),
    "combined_with_and": lambda p: _future(p) & _keys(p),
}

# --------------------------------------------------------------------------- multi_head_attention


def computed(
    x,
    padding,
    mha,
    *,
    heads: int | None = None,
    scale: str = "head",
    split: str = "transpose",
    merge: str = "transpose",
    mask: str = "before",
    dim: int = -1,
    in_bias: bool = True,
    out_bias: bool = True,
    out_proj: bool = True,
    order: str = "qkv",
    out_weight: str = "transposed",
) -> torch.Tensor:
    """Multi-head attention by hand with each step switchable to a typical mistake (in float64).

    The defaults compute the right answer (the private reference, written another way)."""
    x = x.double()
    batch, length, width = x.shape
    heads = heads or mha.num_heads
    head_width = width // heads
    w_in, b_in = mha.in_proj_weight.double(), mha.in_proj_bias.double()
    chunks = dict(zip(order, (x @ w_in.T + (b_in if in_bias else 0)).chunk(3, dim=-1)))
    q, k, v = chunks["q"], chunks["k"], chunks["v"]

    def split_heads(t):
        if split == "transpose":
            return t.reshape(batch, length, heads, head_width).transpose(1, 2)
        return t.reshape(batch, heads, length, head_width)

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    divisor = {"head": math.sqrt(head_width), "model": math.sqrt(width), "none": 1.0}[scale]
    scores = q @ k.transpose(-2, -1) / divisor
    keys = padding[:, None, None, :].expand_as(scores)
    if mask == "tiled":  # padding.repeat(H, 1) against heads folded as b·H + h
        tiled = padding.repeat(heads, 1)  # row n is example n % B
        keys = tiled.reshape(batch, heads, 1, length).expand_as(scores)
        mask = "before"
    if mask in ("before", "before_finite"):
        scores = scores.masked_fill(keys, float("-inf") if mask == "before" else -1e9)
    elif mask == "inverted":
        scores = scores.masked_fill(~keys, float("-inf"))
    elif mask == "queries":
        scores = scores.masked_fill(
            padding[:, None, :, None].expand_as(scores), float("-inf")
        )
    weights = torch.softmax(scores, dim=dim)
    if mask == "after":
        weights = weights.masked_fill(keys, 0.0)
    mixed = weights @ v
    if merge == "transpose":
        merged = mixed.transpose(1, 2).reshape(batch, length, width)
    else:
        merged = mixed.reshape(batch, length, width)
    if not out_proj:
        return merged
    w_out = mha.out_proj.weight.double()
    return merged @ (w_out.T if out_weight == "transposed" else w_out) + (
        mha.out_proj.bias.double() if out_bias else 0
    )


MULTIHEAD: dict[str, Callable[..., object]] = {
    "reference": lambda x, padding, mha: references.multi_head_attention(x, padding, mha)[
        0
    ],
    "weights": lambda x, padding, mha: references.multi_head_attention(x, padding, mha)[1],
    "no_output_projection": partial(computed, out_proj=False),
    "heads_split_without_transpose": partial(computed, split="reshape"),
    "heads_merged_without_transpose": partial(computed, merge="reshape"),
    "scaled_by_model_width": partial(computed, scale="model"),
    "no_scaling": partial(computed, scale="none"),
    "single_head": partial(computed, heads=1),
    "mask_ignored": partial(computed, mask="none"),
    "inverted_mask": partial(computed, mask="inverted"),
    "padding_tiled_by_example": partial(computed, mask="tiled"),
    "mask_after_softmax": partial(computed, mask="after"),
    "mask_on_queries": partial(computed, mask="queries"),
    "softmax_over_queries": partial(computed, dim=-2),
    "softmax_over_queries:finite": partial(computed, dim=-2, mask="before_finite"),
    "softmax_over_heads": partial(computed, dim=1),
    "softmax_over_heads:finite": partial(computed, dim=1, mask="before_finite"),
    **{
        f"qkv_order:{order}": partial(computed, order=order)
        for order in ("kqv", "qvk", "vkq", "kvq", "vqk")
    },
    "out_proj_not_transposed": partial(computed, out_weight="plain"),
    "in_proj_bias_ignored": partial(computed, in_bias=False),
    "out_proj_bias_ignored": partial(computed, out_bias=False),
    "biases_ignored": partial(computed, in_bias=False, out_bias=False),
    "residual_inside_attention": lambda x, padding, mha: (
        computed(x, padding, mha) + x.double()
    ),
    "no_output_projection+in_proj_bias_ignored": partial(
        computed, out_proj=False, in_bias=False
    ),
}

ANSWERS: dict[str, dict[str, Callable[..., object]]] = {
    "causal_padding_mask": MASKS,
    "multi_head_attention": MULTIHEAD,
    **week20.ANSWERS,
}
