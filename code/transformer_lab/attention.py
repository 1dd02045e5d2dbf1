"""Scaled dot-product attention written out by hand, and the soft join it generalises.

Shapes use B for the batch, Lq for queries, Lk for keys (= values), D for the query/key width
and Dv for the value width. Masks follow PyTorch's convention: **True means ignore**.
"""

import math
from collections.abc import Iterator

import torch

from transformer_lab.validation import (
    describe,
    require_bool,
    require_finite,
    require_float_tensor,
    require_int,
    require_mask,
    require_nonzero_size,
    require_number,
    require_padding,
    require_rank,
    require_size,
    require_some_key,
    require_texts,
)


def mix_values(scores: torch.Tensor, v: torch.Tensor, ignore: torch.Tensor | None = None):
    """Softmax ``scores`` over keys and return the weighted mix of ``v``.

    scores (B, Lq, Lk), v (B, Lk, Dv), ignore broadcastable to (B, Lq, Lk) with True = ignore.
    Returns output (B, Lq, Dv) and weights (B, Lq, Lk). The mask is applied with -inf *before*
    the softmax, so ignored keys get exactly zero weight and the rest still sum to one. An ignored
    key's value is left out of the mix, not multiplied by 0, so a NaN or inf there (padding)
    cannot reach the output.
    """
    check_mix_inputs(scores, v, ignore)
    if ignore is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    ignore = ignore.expand_as(scores)
    require_some_key(ignore)
    weights = torch.softmax(scores.masked_fill(ignore, float("-inf")), dim=-1)
    if torch.isfinite(v).all():
        return weights @ v, weights
    # 0 × NaN is NaN: give each query a copy of v with the keys it ignores replaced by 0.
    readable = torch.where(ignore[..., None], 0.0, v[:, None])  # (B, Lq, Lk, Dv)
    return (weights[..., None] * readable).sum(dim=-2), weights


def check_mix_inputs(scores, v, ignore=None) -> None:
    """Raise a clear ``TypeError``/``ValueError`` for bad ``mix_values`` inputs."""
    require_float_tensor("scores", scores)
    require_rank("scores", scores, ("B", "Lq", "Lk"))
    require_float_tensor("v", v, scores.dtype, "the dtype of scores")
    require_rank("v", v, ("B", "Lk", "Dv"))
    require_size(
        "v", v, 0, scores.shape[0], f"the batch size of scores {describe(scores.shape)}"
    )
    require_size(
        "v",
        v,
        1,
        scores.shape[2],
        f"one value per key, and scores has Lk={scores.shape[2]} keys",
    )
    require_nonzero_size("scores", scores, 2, "keys to read")
    if ignore is not None:
        require_mask("ignore", ignore, scores.shape, "the scores' shape (B, Lq, Lk)")


def causal_mask(length: int) -> torch.Tensor:
    """Decoder mask of shape (length, length): True above the diagonal, i.e. 'the future'."""
    length = require_int("length", length, minimum=1)
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
    ``causal=True`` also hides later keys from each query (needs Lq == Lk). Padding hides keys
    only: the output rows of padded *queries* are computed like any other (callers drop them).
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
    require_scores_fit(scores, ignore, q, k)
    return mix_values(scores, v, ignore)


def require_scores_fit(
    scores: torch.Tensor, ignore: torch.Tensor | None, q: torch.Tensor, k: torch.Tensor
) -> None:
    """Raise when a score the softmax reads, q·k / √D of shape (B, Lq, Lk), overflowed to ±inf.

    Finite inputs can still overflow (values near 1e20 in float32): the softmax would turn the
    infinities into NaN weights with no word of why."""
    bad = ~torch.isfinite(scores)
    if ignore is not None:
        bad = bad & ~ignore
    if bad.any():
        largest = max(q.abs().max().item(), k.abs().max().item())
        raise ValueError(
            f"the scores q @ k.T / sqrt(D) overflow {scores.dtype} (largest input "
            f"{largest:.1e}); scale q and k down"
        )


def check_attention_inputs(q, k, v, padding=None, causal: bool = False) -> None:
    """Raise a ``ValueError``/``TypeError`` naming expected and received shapes and dtypes."""
    for name, tensor, dims in (
        ("q", q, ("B", "Lq", "D")),
        ("k", k, ("B", "Lk", "D")),
        ("v", v, ("B", "Lk", "Dv")),
    ):
        if name == "q":
            require_float_tensor(name, tensor)
        else:
            require_float_tensor(name, tensor, q.dtype, "the dtype of q")
        require_rank(name, tensor, dims)
    require_size("k", k, 0, q.shape[0], f"the batch size of q {describe(q.shape)}")
    require_size("v", v, 0, q.shape[0], f"the batch size of q {describe(q.shape)}")
    require_size(
        "k", k, 2, q.shape[2], f"keys are compared with queries of width D={q.shape[2]}"
    )
    require_size(
        "v", v, 1, k.shape[1], f"one value per key, and k has Lk={k.shape[1]} keys"
    )
    require_nonzero_size("k", k, 1, "keys to read")
    require_nonzero_size("q", q, 2, "width D to compare queries and keys with")
    hidden_keys = None
    if padding is not None:
        require_padding(padding, q.shape[0], k.shape[1])
        hidden_keys = padding[:, :, None]  # padded keys' rows are never read
    require_finite("q", q)
    require_finite("k", k, skip=hidden_keys)
    require_finite("v", v, skip=hidden_keys)
    if require_bool("causal", causal) and q.shape[1] != k.shape[1]:
        raise ValueError(
            f"a causal mask needs as many queries as keys, got Lq={q.shape[1]} and Lk={k.shape[1]}"
        )


def soft_join(
    query_keys: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Join every query to every row of a table, weighted by similarity.

    query_keys (Lq, D), keys (Lk, D), values (Lk, Dv). Scores are dot products divided by
    ``temperature`` (a positive, finite number); as the temperature goes to 0 the weights become
    one-hot on the most similar key, which for exact matches is the hard join. Each row of scores
    is shifted so its largest entry is 0 *before* the division, so any positive temperature, even
    1e-40, gives finite weights: below the point where exp underflows the result is that
    zero-temperature limit, with the weight split evenly between keys tied for the top score.
    Returns (Lq, Dv) and (Lq, Lk).
    """
    temperature = require_number("temperature", temperature, above=0)
    for name, tensor, dims in (
        ("query_keys", query_keys, ("Lq", "D")),
        ("keys", keys, ("Lk", "D")),
        ("values", values, ("Lk", "Dv")),
    ):
        if name == "query_keys":
            require_float_tensor(name, tensor)
        else:
            require_float_tensor(name, tensor, query_keys.dtype, "the dtype of query_keys")
        require_rank(name, tensor, dims)
        require_finite(name, tensor)
    require_size(
        "keys", keys, 1, query_keys.shape[1], "keys and query keys must have the same width"
    )
    require_size("values", values, 0, keys.shape[0], "one row of values per key")
    require_nonzero_size("keys", keys, 0, "rows to join")
    require_nonzero_size("keys", keys, 1, "width D to compare with")
    scores = query_keys @ keys.T  # (Lq, Lk)
    if not torch.isfinite(scores).all():
        raise ValueError(
            f"the scores query_keys @ keys.T overflow {scores.dtype} (largest input "
            f"{max(query_keys.abs().max().item(), keys.abs().max().item()):.1e}); scale the inputs down"
        )
    shifted = scores - scores.amax(
        dim=1, keepdim=True
    )  # <= 0, exactly 0 at each row's best key
    scaled = torch.where(
        shifted == 0, 0.0, shifted / temperature
    )  # no 0/0 even if τ rounds to 0
    output, weights = mix_values(scaled[None], values[None])
    return output[0], weights[0]


def random_scores_by_width(
    widths: list[int], n_keys: int = 16, trials: int = 200, seed: int = 0
) -> Iterator[tuple[int, torch.Tensor]]:
    """The √D experiment's draws: per width D, raw scores q·kᵀ of shape (trials, 1, n_keys).

    q (trials, 1, D) and k (trials, n_keys, D) are drawn from N(0, 1) by one generator seeded
    with ``seed``, widths in order, so every user of the same arguments sees the same draws.
    """
    widths = [require_int("each width", width, minimum=1) for width in widths]
    n_keys = require_int("n_keys", n_keys, minimum=1)
    trials = require_int("trials", trials, minimum=1)
    generator = torch.Generator().manual_seed(require_int("seed", seed))
    for width in widths:
        q = torch.randn(trials, 1, width, generator=generator)
        k = torch.randn(trials, n_keys, width, generator=generator)
        yield width, q @ k.transpose(-2, -1)


def max_weight_by_width(
    widths: list[int], n_keys: int = 16, trials: int = 200, seed: int = 0
) -> dict[str, list[float]]:
    """The √D experiment: average largest softmax weight for random q, k ~ N(0, 1).

    For each width D draws ``trials`` queries against ``n_keys`` keys
    (``random_scores_by_width``) and reports the mean of the largest weight per query, with and
    without dividing the scores by √D (1/n_keys = uniform, 1.0 = the softmax has saturated into
    a hard max).
    """
    result: dict[str, list[float]] = {
        "width": [],
        "unscaled": [],
        "scaled": [],
        "score_std": [],
    }
    for width, scores in random_scores_by_width(widths, n_keys, trials, seed):
        result["width"].append(width)
        result["unscaled"].append(torch.softmax(scores, -1).amax(-1).mean().item())
        result["scaled"].append(
            torch.softmax(scores / math.sqrt(width), -1).amax(-1).mean().item()
        )
        result["score_std"].append(scores.std().item())
    return result


def toy_inputs(n_tokens: int, d_model: int = 4, seed: int = 0):
    """The toy's random numbers, drawn from ``seed``: embeddings E (n_tokens, d_model), then the
    query, key and value matrices W_q, W_k, W_v (d_model, d_model) each, in that order."""
    n_tokens = require_int("n_tokens", n_tokens, minimum=1)
    d_model = require_int("d_model", d_model, minimum=1)
    generator = torch.Generator().manual_seed(require_int("seed", seed))
    embeddings = torch.randn(n_tokens, d_model, generator=generator)
    w_q, w_k, w_v = (torch.randn(d_model, d_model, generator=generator) for _ in range(3))
    return embeddings, w_q, w_k, w_v


def toy_self_attention(tokens: list[str], d_model: int = 4, seed: int = 0):
    """The login/failed/again toy: random embeddings and projections, seeded (``toy_inputs``).

    Returns the token embeddings E (L, d_model) and the self-attention weights (L, L) computed as
    softmax((E Wq)(E Wk)ᵀ / √d_model). Nothing here is trained: the weights are random.
    """
    tokens = require_texts("tokens", tokens)
    embeddings, w_q, w_k, w_v = toy_inputs(len(tokens), d_model, seed)
    x = embeddings[None]
    _, weights = attention(x @ w_q, x @ w_k, x @ w_v)
    return embeddings, weights[0]
