"""Scaled dot-product attention written out by hand, and the soft join it generalises.

Shapes use B for the batch, Lq for queries, Lk for keys (= values), D for the query/key width
and Dv for the value width. Masks follow PyTorch's convention: **True means ignore**.
"""

import math

import torch

from transformer_lab.shapes import describe, require_padding, require_rank, require_size, require_tensor


def mix_values(scores: torch.Tensor, v: torch.Tensor, ignore: torch.Tensor | None = None):
    """Softmax ``scores`` over keys and return the weighted mix of ``v``.

    scores (B, Lq, Lk), v (B, Lk, Dv), ignore broadcastable to (B, Lq, Lk) with True = ignore.
    Returns output (B, Lq, Dv) and weights (B, Lq, Lk). The mask is applied with -inf *before*
    the softmax, so ignored keys get exactly zero weight and the rest still sum to one.
    """
    if ignore is not None:
        all_ignored = ignore.expand_as(scores).all(dim=-1)
        if all_ignored.any():
            batch, query = (int(i) for i in all_ignored.nonzero()[0].tolist())
            raise ValueError(
                f"example {batch}, query {query}: every key is masked, so softmax would divide "
                "0 by 0 and return NaN; give every query at least one key it may read"
            )
        scores = scores.masked_fill(ignore, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_mask(length: int) -> torch.Tensor:
    """Decoder mask of shape (length, length): True above the diagonal, i.e. 'the future'."""
    return torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    padding: torch.Tensor | None = None,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, one head: softmax(q kᵀ / √D) v.

    q (B, Lq, D), k (B, Lk, D), v (B, Lk, Dv), padding (B, Lk) bool with True = ignore that key.
    ``causal=True`` also hides later keys from each query (needs Lq == Lk).
    Returns output (B, Lq, Dv) and weights (B, Lq, Lk); each row of weights sums to 1.
    """
    check_attention_inputs(q, k, v, padding, causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    ignore = None
    if padding is not None:
        ignore = padding[:, None, :]
    if causal:
        future = causal_mask(k.shape[1])[None]
        ignore = future if ignore is None else ignore | future
    return mix_values(scores, v, ignore)


def check_attention_inputs(q, k, v, padding=None, causal: bool = False) -> None:
    """Raise a ``ValueError`` that names expected and received shapes for bad attention inputs."""
    for name, tensor, dims in (("q", q, ("B", "Lq", "D")), ("k", k, ("B", "Lk", "D")), ("v", v, ("B", "Lk", "Dv"))):
        require_tensor(name, tensor)
        require_rank(name, tensor, dims)
    require_size("k", k, 0, q.shape[0], f"the batch size of q {describe(q.shape)}")
    require_size("v", v, 0, q.shape[0], f"the batch size of q {describe(q.shape)}")
    require_size("k", k, 2, q.shape[2], f"keys are compared with queries of width D={q.shape[2]}")
    require_size("v", v, 1, k.shape[1], f"one value per key, and k has Lk={k.shape[1]} keys")
    if padding is not None:
        require_padding(padding, q.shape[0], k.shape[1])
    if causal and q.shape[1] != k.shape[1]:
        raise ValueError(
            f"a causal mask needs as many queries as keys, got Lq={q.shape[1]} and Lk={k.shape[1]}"
        )


def soft_join(
    query_keys: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Join every query to every row of a table, weighted by similarity.

    query_keys (Lq, D), keys (Lk, D), values (Lk, Dv). Scores are dot products divided by
    ``temperature``; as the temperature goes to 0 the weights become one-hot on the most
    similar key, which for exact matches is the hard join. Returns (Lq, Dv) and (Lq, Lk).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    for name, tensor, dims in (("query_keys", query_keys, ("Lq", "D")), ("keys", keys, ("Lk", "D")), ("values", values, ("Lk", "Dv"))):
        require_tensor(name, tensor)
        require_rank(name, tensor, dims)
    require_size("keys", keys, 1, query_keys.shape[1], "keys and query keys must have the same width")
    require_size("values", values, 0, keys.shape[0], "one row of values per key")
    scores = query_keys @ keys.T / temperature
    output, weights = mix_values(scores[None], values[None])
    return output[0], weights[0]


def max_weight_by_width(
    widths: list[int], n_keys: int = 16, trials: int = 200, seed: int = 0
) -> dict[str, list[float]]:
    """The √D experiment: average largest softmax weight for random q, k ~ N(0, 1).

    For each width D draws ``trials`` queries against ``n_keys`` keys and reports the mean of the
    largest weight per query, with and without dividing the scores by √D (1/n_keys = uniform,
    1.0 = the softmax has saturated into a hard max).
    """
    generator = torch.Generator().manual_seed(seed)
    result: dict[str, list[float]] = {"width": [], "unscaled": [], "scaled": [], "score_std": []}
    for width in widths:
        q = torch.randn(trials, 1, width, generator=generator)
        k = torch.randn(trials, n_keys, width, generator=generator)
        scores = q @ k.transpose(-2, -1)
        result["width"].append(width)
        result["unscaled"].append(torch.softmax(scores, -1).amax(-1).mean().item())
        result["scaled"].append(torch.softmax(scores / math.sqrt(width), -1).amax(-1).mean().item())
        result["score_std"].append(scores.std().item())
    return result


def toy_inputs(n_tokens: int, width: int = 4, seed: int = 0):
    """The toy's random numbers, drawn from ``seed``: embeddings E (n_tokens, width), then the
    query, key and value matrices W_q, W_k, W_v (width, width) each, in that order."""
    generator = torch.Generator().manual_seed(seed)
    embeddings = torch.randn(n_tokens, width, generator=generator)
    w_q, w_k, w_v = (torch.randn(width, width, generator=generator) for _ in range(3))
    return embeddings, w_q, w_k, w_v


def toy_self_attention(tokens: list[str], width: int = 4, seed: int = 0):
    """The login/failed/again toy: random embeddings and projections, seeded (``toy_inputs``).

    Returns the token embeddings E (L, width) and the self-attention weights (L, L) computed as
    softmax((E Wq)(E Wk)ᵀ / √width). Nothing here is trained: the weights are random.
    """
    embeddings, w_q, w_k, w_v = toy_inputs(len(tokens), width, seed)
    x = embeddings[None]
    _, weights = attention(x @ w_q, x @ w_k, x @ w_v)
    return embeddings, weights[0]
