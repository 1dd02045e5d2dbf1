"""The synthetic set task of chapters 2–3: is the value at the largest key positive?

Each example is a padded set of tokens; a token is a (key, value) pair of standard-normal numbers.
Sets hold between 3 and ``max_tokens`` real tokens; the rest of the row is padding (zeros, marked
True in the padding mask). The label is 1 when the value paired with the largest real key is
positive, which happens for half of the sets in expectation.
"""

import torch

from transformer_lab.validation import (
    require_int,
    require_padding,
    require_rank,
    require_size,
    require_tensor,
)

MIN_TOKENS = 3


def make_sets(
    n: int, seed: int, max_tokens: int = 8
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw ``n`` padded sets with their labels, reproducibly from ``seed``.

    Returns x (n, max_tokens, 2) with columns (key, value) and zeros at padding,
    padding (n, max_tokens) bool with True = padding, and y (n,) float labels in {0., 1.}.
    """
    n = require_int("n", n, minimum=1)
    max_tokens = require_int("max_tokens", max_tokens, minimum=MIN_TOKENS)
    generator = torch.Generator().manual_seed(require_int("seed", seed))
    x = torch.randn(n, max_tokens, 2, generator=generator)
    lengths = torch.randint(MIN_TOKENS, max_tokens + 1, (n,), generator=generator)
    padding = torch.arange(max_tokens)[None, :] >= lengths[:, None]
    y = largest_key_rule(x, padding)
    x = x.masked_fill(padding[:, :, None], 0.0)
    return x, padding, y


def check_sets(x: torch.Tensor, padding: torch.Tensor) -> None:
    """Raise unless x is (B, L, 2) and padding a (B, L) boolean mask with a real token per set."""
    require_tensor("x", x)
    require_rank("x", x, ("B", "L", "2"))
    require_size("x", x, 2, 2, "each token is a (key, value) pair")
    require_padding(padding, x.shape[0], x.shape[1])
    if padding.all(dim=1).any():
        example = int(padding.all(dim=1).nonzero()[0])
        raise ValueError(f"example {example} is all padding: it has no largest key")


def largest_key_index(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Position (B,) of the largest real key in each set; padded positions never win."""
    check_sets(x, padding)
    return x[:, :, 0].masked_fill(padding, float("-inf")).argmax(dim=1)


def largest_key_value(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """The value (B,) paired with the largest real key of each set.

    Its sign is the label, so it works as a logit: ``accuracy(largest_key_value(x, p), y)``.
    """
    winner = largest_key_index(x, padding)
    return x[torch.arange(x.shape[0]), winner, 1]


def largest_key_rule(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """The handcrafted solution: 1. if the value at the largest real key is positive, else 0.

    x (B, L, 2), padding (B, L) with True = padding. Returns (B,) float predictions.
    """
    return (largest_key_value(x, padding) > 0).float()
